"""The reference stack drives the kart around the course: two laps, inside the track.

pylon_sim (the lean ``kart`` scenario: its GNSS and AHRS, no LiDAR or camera) -> udp_bridge
(the IMU and the fix at the competition's names, by remapping) -> kart_interface,
kart_localizer, trajectory_publisher and pure_pursuit, all on game time; the simulator at up
to ``RATE`` x real time, lock-stepped to the interface's wheel commands, which the interface
sends only on a fresh ``control_cmd`` (``lockstep_command_age_sec``): the game waits for the
controller, and the controller for the localizer (pure_pursuit stops on a state older than its
``state_timeout_sec``), so a busy machine slows the lap down, never the stack against the
game. The test plays the competition's orchestrator (it asks for AUTONOMOUS on the mode topic)
and judges on the simulator's ground truth, which no node of the stack reads: every position
inside the track, the cross-track error, the lap times on the game clock, the localizer's
error.
"""

import math
import os
import signal

from autoware_auto_vehicle_msgs.msg import ControlModeReport
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
import numpy as np
from pylon_common import topics
from pylon_kart import sensing
from pylon_kart.interface_params import lease_for_rate, LOCKSTEP_COMMAND_AGE_SEC
from pylon_testing.pilot import COMMAND, LATCHED, STREAM
from pylon_testing.recorder import stamp_of, TopicRecorder
from pylon_testing.scenarios import write_scenario
from pylon_track import load_track
from pylon_track.race import RaceRules
import pytest
from std_msgs.msg import Bool
from std_srvs.srv import Trigger

pytestmark = pytest.mark.integration

RATE = 2
"""x real time at most: the lock-step holds the game for the stack (see above), but not the
stack's delays, which grow in game time with the rate: at 4 the kart left the track in about
one run in three beside other tests (a skid out of a turn at 8 m/s, its estimate 0.3 m off),
at 2 in none of three."""
LEAD = 0.06
LOCKSTEP_WAIT = 5.0
"""Wall s a frame waits for the interface's next wheel command before the game runs free:
room for a process a busy machine stalls (pylon_sim's default is 1)."""
ON_GAME_TIME = ('--ros-args', '-p', 'use_sim_time:=true')
TRACK = load_track('kart')
ROOM = ('-p', f'lease_duration_sec:={lease_for_rate(RATE)}', '-p',
        f'lockstep_command_age_sec:={LOCKSTEP_COMMAND_AGE_SEC}')
"""As the launch file faster than real time: the wheel commands only on a control_cmd of this
game step; the lease (game time) scaled by the rate, a second of wall time, shorter than the
game's stand-still while the controller is stopped (``LOCKSTEP_WAIT``), which it must
outlive (the interface also ticks it on the wall clock)."""
LAPS = 2


@pytest.fixture(scope='module')
def stack(module_sim_stack, tmp_path_factory):
    """Return the kart's simulator and bridge, the stack's four nodes beside them."""
    scenario = write_scenario(tmp_path_factory.mktemp('scenario'), 'kart')
    return module_sim_stack(scenario, bridge_args=('--publish-clock', *sensing.bridge_arguments()),
                            sim_args=('--rate', str(RATE), '--lockstep-lead', str(LEAD),
                                      '--lockstep-wait', str(LOCKSTEP_WAIT)))


@pytest.fixture(scope='module')
def nodes(stack, module_ros_process):
    """Start the interface and the reference stack; return them by name."""
    started = {'kart_interface': module_ros_process(
        ['kart_interface', *sensing.interface_arguments(), '-p', 'use_sim_time:=true', *ROOM],
        name='kart_interface')}
    for name in ('kart_localizer', 'trajectory_publisher', 'pure_pursuit'):
        started[name] = module_ros_process([name, *ON_GAME_TIME], name=name)
    return started


def a_stalled_controller_holds_the_game(stack, rec, controller) -> int:
    """Stop ``controller`` (SIGSTOP): the game waits for it, until the wait runs out.

    Its control_cmd stops, so the interface stops sending the wheel commands the game is
    lock-stepped on (an interface that sent on every step of its own would keep the game
    running, and no wait would ever run out); then the game runs free, the interface stops
    the kart by its command timeout, and the controller, continued, drives on. The kart
    stays AUTONOMOUS from before the stall to a second of game time after it: its lease
    outlived the stand-still. Return the lock-step lapses before the stall.
    """
    before, stall = stack.status()['lockstep_lapses'], rec.mark()
    os.kill(controller.pid, signal.SIGSTOP)
    try:
        lapses = stack.lockstep_lapses_past(before, rec.until, LOCKSTEP_WAIT)
    finally:
        os.kill(controller.pid, signal.SIGCONT)
    assert lapses == before + 1
    rec.wait_stamp_span('mode', 1.0, rec.mark())    # a second of game time after the stall
    modes = {m.mode for m in rec.messages('mode', stall)}
    assert modes == {ControlModeReport.AUTONOMOUS}, sorted(modes)
    return before


def unwrap(values, period):
    """Return ``values`` (arc lengths in [0, period)) made continuous."""
    steps = np.diff(values)
    steps = steps - period * np.round(steps / period)
    return np.concatenate([[values[0]], values[0] + np.cumsum(steps)])


def set_initial_pose(rec, client) -> str:
    """Call /set_initial_pose as the competition's orchestrator does; return its message."""
    rec.until(client.service_is_ready, 'the /set_initial_pose service')
    future = client.call_async(Trigger.Request())
    rec.until(future.done, 'the answer of /set_initial_pose')
    assert future.result().success
    return future.result().message


def test_the_reference_stack_drives_two_laps_inside_the_track(stack, nodes, ros_node):
    rec = TopicRecorder(ros_node)
    rec.add('mode', topics.name('kart/control_mode'), ControlModeReport, LATCHED)
    rec.add('truth', topics.name('ground_truth/pose'), PoseStamped, STREAM)
    rec.add('odom', topics.name('stack/kinematic_state'), Odometry, STREAM)
    mode = ros_node.create_publisher(Bool, topics.name('kart/control_mode_request_topic'),
                                     COMMAND)
    rec.wait_for('mode', lambda m: m.mode == ControlModeReport.MANUAL, what='the kart ready')
    rec.wait_count('odom', 5)                      # the localizer runs
    start = rec.wait_for('truth', what='ground truth')
    rec.until(lambda: mode.get_subscription_count() > 0, 'the mode topic subscriber')
    x0, y0, _ = TRACK.grid_pose(0)
    client = ros_node.create_client(Trigger, topics.name('stack/set_initial_pose'))
    assert f'({x0:.2f}, {y0:.2f}) m' in set_initial_pose(rec, client)
    since = rec.mark()
    mode.publish(Bool(data=True))                  # as the competition's orchestrator does
    rec.wait_for('mode', lambda m: m.mode == ControlModeReport.AUTONOMOUS, since,
                 'AUTONOMOUS')
    # ground truth is East-North-Up about the kart's position when the session began (its
    # grid slot); the map's axes differ from it by 1e-4 rad here (< 1 cm over the course)
    origin = np.array([x0, y0]) - [start.pose.position.x, start.pose.position.y]

    done = {'count': 0, 'progress': 0.0, 's': None}

    def progress():
        """Return the arc length driven so far (the new poses only are projected)."""
        poses = rec.messages('truth', since)[done['count']:]
        if poses:
            xy = origin + np.array([[m.pose.position.x, m.pose.position.y] for m in poses])
            s = np.atleast_1d(TRACK.project(xy).s)
            previous = s[0] if done['s'] is None else done['s']
            done['progress'] += float(unwrap(np.concatenate([[previous], s]),
                                             TRACK.length)[-1] - previous)
            done['count'] += len(poses)
            done['s'] = s[-1]
        return done['progress']
    rec.until(lambda: progress() >= LAPS * TRACK.length, f'{LAPS} laps', timeout=300.0)
    poses = rec.messages('truth', since)
    xy = origin + np.array([[m.pose.position.x, m.pose.position.y] for m in poses])
    where = TRACK.project(xy)
    lateral = np.abs(np.asarray(where.lateral))
    assert np.all(TRACK.inside(xy))                              # never off the track
    s = unwrap(np.asarray(where.s), TRACK.length)
    stamps = np.array([stamp_of(m) for m in poses])
    laps = [float(np.interp(s[0] + k * TRACK.length, s, stamps)) for k in range(LAPS + 1)]
    lap_times = np.diff(laps)
    # the stack's own profile (10 m/s at most) bounds a lap from below
    assert np.all(lap_times > TRACK.length / 10.0), lap_times
    assert np.all(lap_times < 90.0), lap_times
    driving = s - s[0] > 20.0                                   # after the grid slot's offset
    # bounds with room for a busy machine, where the stack's commands come later in game
    # time (the simulator waits for the interface, not for the localizer and the
    # controller); the quiet machine's figures are the benchmark's (bench_kart_stack.py)
    assert float(np.sqrt(np.mean(lateral[driving] ** 2))) < 1.0
    # the whole kart on the track: its centre at least its half width (the race's off-track
    # margin, 0.5 m: a 1 m kart) inside an edge. A bound of 2.5 m here (1 m more) failed in
    # a fresh .ci/run on a loaded machine at 3.01 m, the kart still on the track
    edge = 0.5 * TRACK.width - RaceRules().off_track_margin_m
    assert float(np.max(lateral[driving])) < edge, (float(np.max(lateral[driving])), edge)
    # the localizer against the truth at the same instants (the stack never reads it)
    truth_at = {stamp_of(m): origin + [m.pose.position.x, m.pose.position.y] for m in poses}
    errors = [math.dist(truth_at[stamp_of(o)], (o.pose.pose.position.x,
                                                 o.pose.pose.position.y))
              for o in rec.messages('odom', since) if stamp_of(o) in truth_at]
    assert len(errors) > 100
    assert float(np.sqrt(np.mean(np.square(errors)))) < 0.5
    lapses = a_stalled_controller_holds_the_game(stack, rec, nodes['pure_pursuit'])
    # the initial pose set again 15 m into the third lap: the estimate starts again on the
    # grid slot, behind the kart
    rec.until(lambda: progress() >= LAPS * TRACK.length + 15.0, '15 m into lap 3')
    after = rec.mark()
    set_initial_pose(rec, client)
    rec.wait_for('odom', lambda m: math.dist((m.pose.pose.position.x, m.pose.pose.position.y),
                                             (x0, y0)) < 0.5, after,
                 'the estimate back on the grid slot')
    mode.publish(Bool(data=False))
    print(f'laps {lap_times.round(2).tolist()} s; cross-track RMS '
          f'{np.sqrt(np.mean(lateral[driving] ** 2)):.3f} m, max {lateral[driving].max():.3f} m;'
          f' localizer RMS {np.sqrt(np.mean(np.square(errors))):.3f} m ({len(errors)} pairs);'
          f' lock-step lapses {lapses}')
