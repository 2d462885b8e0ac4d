"""The kart on the course: the interface's latency, the simulator's cost, the stack's laps.

Every process runs in a ROS domain and on UDP ports of its own (``pylon_testing.bench``).

1. **latency** (``control_cmd`` to wheel command): pylon_sim (``kart`` with its GNSS, AHRS
   and LiDAR, no camera: see below) at ``--rate 1``, udp_bridge, ``kart_interface``
   on game time, AUTONOMOUS. The bench publishes ``control_cmd`` at 50 Hz, the steering
   stepping between two angles, and times each against the first ``WheelCommand`` of the
   front-left wheel carrying that command's Ackermann angle (both on this process's clock).
   The same run gives the simulator's CPU at real time (percent of one core, over the
   window) and the interface's.
2. **lockstep**: the same stack with the simulator at ``--rate 0`` lock-stepped to the
   interface's wheel commands (lead 0.06 s), the bench streaming a command with every
   velocity status: game seconds per wall second.
3. **laps**: the whole stack (the interface, ``kart_localizer``, ``trajectory_publisher``,
   ``pure_pursuit``) at ``--rate 1`` for ``LAPS`` laps from grid slot 0; on the simulator's
   ground truth (which the stack never reads): lap times, cross-track error RMS and
   maximum, the localizer's position error RMS and heading error RMS; and the lap time
   bound of the kart on this course from its measured limits (``pylon_sim``'s
   ``drive_limits``: top speed, standing acceleration, braking, lateral grip) through the
   stack's own speed profile on the centreline (no racing line).

The camera is left out: a camera frame over this terrain costs ~0.1-0.3 s today (pylon_sim
README), which alone would hold the simulator below real time. Prints one JSON object.
"""

from __future__ import annotations

import math
import sys
import time

from autoware_auto_control_msgs.msg import AckermannControlCommand
from autoware_auto_vehicle_msgs.msg import ControlModeReport, VelocityReport
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
import numpy as np
from pylon_common import topics
from pylon_interfaces.msg import WheelCommand
from pylon_kart import sensing
from pylon_kart.trajectory import ProfileLimits, speed_profile
from pylon_sim.game import drive_limits
from pylon_sim.loop.scenario import load_scenario
from pylon_testing.bench import BenchError, BenchNode, BenchSession, cpu_seconds, percentile, run
from pylon_testing.kart_response import kart_geometry
from pylon_testing.pilot import COMMAND, LATCHED, STREAM
from pylon_testing.recorder import stamp_of
from pylon_testing.scenarios import write_scenario
from pylon_testing.stack import start_stack
from pylon_track import load_track
from std_msgs.msg import Bool
import yaml

ON_GAME_TIME = ('--ros-args', '-p', 'use_sim_time:=true')
LATENCY_SEC = 20.0
LOCKSTEP_SEC = 15.0
LAPS = 2
STEERING = (0.1, -0.1)
TRACK = load_track('kart')
RIG = drive_limits.Rig(load_scenario('kart'))


KART = kart_geometry(RIG)
FRONT_LEFT = KART.front[0].id


def yaw_of(q) -> float:
    """Return the yaw (rad, about z, ENU) of a geometry_msgs Quaternion."""
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


def scenario(session: BenchSession) -> str:
    """Write the kart scenario without its camera; return its path."""
    data_dir = session.log_dir / 'scenario'
    data_dir.mkdir(exist_ok=True)
    path = write_scenario(data_dir, 'kart', lean=False)
    data = yaml.safe_load(open(path, encoding='utf-8').read())
    for vessel in data['vessels']:
        vessel['parts'] = [p for p in vessel['parts'] if p['name'] != 'pylonCamera']
    with open(path, 'w', encoding='utf-8') as f:
        yaml.safe_dump(data, f)
    return path


def engage(bench: BenchNode) -> None:
    """Ask for AUTONOMOUS on the mode topic once the kart is ready; wait for it."""
    rec = bench.recorder()
    rec.add('mode', topics.name('kart/control_mode'), ControlModeReport, LATCHED)
    pub = bench.node.create_publisher(Bool, topics.name('kart/control_mode_request_topic'),
                                      COMMAND)
    bench.until(lambda: rec.last('mode') is not None and rec.last('mode').mode ==
                ControlModeReport.MANUAL, 60.0, 'the kart ready')
    bench.until(lambda: pub.get_subscription_count() > 0, 10.0, 'the mode subscriber')
    pub.publish(Bool(data=True))
    bench.until(lambda: rec.last('mode').mode == ControlModeReport.AUTONOMOUS, 10.0,
                'AUTONOMOUS')


def interface_stack(session: BenchSession, sim_args) -> dict:
    """Start the simulator, the bridge (the kart's names, /clock) and kart_interface."""
    stack = start_stack(session.group.start, session.take_port, scenario(session),
                        bridge_args=('--publish-clock', *sensing.bridge_arguments()),
                        sim_args=sim_args, check_packets=False)
    processes = {p.name: p for p in session.group.processes}
    processes['kart_interface'] = session.group.start(
        ['kart_interface', *sensing.interface_arguments(), '-p', 'use_sim_time:=true'],
        name='kart_interface')
    return {'stack': stack, 'processes': processes}


def latency(session: BenchSession) -> dict:
    """Phase 1: control_cmd -> WheelCommand latency, and the CPU at real time."""
    started = interface_stack(session, ('--rate', '1'))
    with BenchNode('bench_kart_latency') as bench:
        engage(bench)
        sent: dict[float, float] = {}
        seen: list[tuple[float, float]] = []
        bench.node.create_subscription(
            WheelCommand, topics.name('actuators/wheel/command'),
            lambda m: seen.append((time.monotonic(), m.steering_angle))
            if m.id == FRONT_LEFT else None, COMMAND)
        pub = bench.node.create_publisher(AckermannControlCommand,
                                          topics.name('kart/control_cmd'), 1)
        pids = {name: p.pid for name, p in started['processes'].items()}
        cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
        wall0 = time.monotonic()
        count = [0]

        def send():
            msg = AckermannControlCommand()
            delta = STEERING[(count[0] // 10) % 2]          # a step every 0.2 s
            msg.lateral.steering_tire_angle = delta
            if count[0] % 10 == 0:
                sent[time.monotonic()] = KART.front_angles(delta)[0]
            pub.publish(msg)
            count[0] += 1
        bench.node.create_timer(0.02, send)
        bench.spin_for(LATENCY_SEC, session.group.check)
        wall = time.monotonic() - wall0
        cpu = {name: round(100.0 * (cpu_seconds(pid) - cpu0[name]) / wall, 1)
               for name, pid in pids.items()}
    latencies = []
    for at, angle in sent.items():
        hit = next((t for t, a in seen if t >= at and abs(a - angle) < 1e-4), None)
        if hit is not None:
            latencies.append((hit - at) * 1e3)
    if len(latencies) < 0.9 * len(sent):
        raise BenchError(f'only {len(latencies)} of {len(sent)} steps seen')
    session.group.stop_all()
    return {'steps': len(sent), 'seen': len(latencies),
            'latency_ms': {'p50': round(percentile(latencies, 0.5), 2),
                           'p99': round(percentile(latencies, 0.99), 2),
                           'max': round(max(latencies), 2)},
            'cpu_percent_of_a_core_at_rate_1': cpu}


def lockstep(session: BenchSession) -> dict:
    """Phase 2: the simulator as fast as the interface lets it (lock-stepped)."""
    interface_stack(session, ('--rate', '0', '--lockstep-lead', '0.06'))
    with BenchNode('bench_kart_lockstep') as bench:
        engage(bench)
        pub = bench.node.create_publisher(AckermannControlCommand,
                                          topics.name('kart/control_cmd'), 1)
        stamps: list[float] = []

        def stream(status):
            stamps.append(stamp_of(status))
            msg = AckermannControlCommand()
            msg.longitudinal.acceleration = 1.0 if len(stamps) % 400 < 200 else -1.0
            pub.publish(msg)
        bench.node.create_subscription(VelocityReport, topics.name('kart/velocity_status'),
                                       stream, 10)
        bench.spin_for(2.0, session.group.check)
        first = len(stamps)
        wall0 = time.monotonic()
        bench.spin_for(LOCKSTEP_SEC, session.group.check)
        wall = time.monotonic() - wall0
    session.group.stop_all()
    game = stamps[-1] - stamps[first]
    return {'game_sec': round(game, 2), 'wall_sec': round(wall, 2),
            'times_real_time': round(game / wall, 2)}


def lap_bound() -> dict:
    """Return the kart's measured limits and the lap time they allow on the centreline."""
    rig = RIG                                   # each manoeuvre starts from the grid
    limits = {'top_speed': drive_limits.top_speed(rig)['top_speed_mps'],
              'acceleration': drive_limits.standing_start(rig)['max_accel_mps2'],
              'deceleration': drive_limits.braking(rig)['brake_decel_mps2']}
    limits['lateral_acceleration'] = drive_limits.lateral_grip(rig)['max_lateral_accel_mps2']
    n = round(TRACK.length / 0.5)
    ds = TRACK.length / n
    s = ds * np.arange(n)
    v = speed_profile(TRACK.curvature_at(s), ds, ProfileLimits(
        spacing=ds, lateral_acceleration=limits['lateral_acceleration'],
        max_speed=limits['top_speed'], acceleration=limits['acceleration'],
        deceleration=limits['deceleration']))
    return {'kart_limits': {k: round(float(x), 3) for k, x in limits.items()},
            'lap_bound_sec': round(float(np.sum(ds / v)), 2)}


def laps(session: BenchSession) -> dict:
    """Phase 3: the reference stack's laps at real time, judged on ground truth."""
    started = interface_stack(session, ('--rate', '1'))
    for name in ('kart_localizer', 'trajectory_publisher', 'pure_pursuit'):
        started['processes'][name] = session.group.start([name, *ON_GAME_TIME], name=name)
    with BenchNode('bench_kart_laps') as bench:
        rec = bench.recorder()
        rec.add('truth', topics.name('ground_truth/pose'), PoseStamped, STREAM)
        rec.add('odom', topics.name('stack/kinematic_state'), Odometry, STREAM)
        bench.until(lambda: rec.last('truth') is not None, 30.0, 'ground truth')
        start = rec.last('truth')
        since = rec.mark()
        engage(bench)
        x0, y0, _ = TRACK.grid_pose(0)
        origin = np.array([x0, y0]) - [start.pose.position.x, start.pose.position.y]
        game_needed = LAPS * TRACK.length / 7.0 + 20.0      # below the profile's speeds
        bench.until(lambda: len(rec.messages('truth', since)) > 1 and stamp_of(
            rec.messages('truth', since)[-1]) - stamp_of(start) > game_needed,
            game_needed * 2.0 + 60.0, 'the laps')
        poses = rec.messages('truth', since)
        odoms = rec.messages('odom', since)
    session.group.stop_all()
    xy = origin + np.array([[m.pose.position.x, m.pose.position.y] for m in poses])
    where = TRACK.project(xy)
    s = np.asarray(where.s, dtype=float)
    steps = np.diff(s)
    s = np.concatenate([[s[0]], s[0] + np.cumsum(steps - TRACK.length *
                                                 np.round(steps / TRACK.length))])
    stamps = np.array([stamp_of(m) for m in poses])
    done = int((s[-1] - s[0]) // TRACK.length)
    if done < LAPS:
        raise BenchError(f'only {done} laps in {stamps[-1] - stamps[0]:.0f} game s')
    crossings = [float(np.interp(s[0] + k * TRACK.length, s, stamps)) for k in range(done + 1)]
    driving = s - s[0] > 20.0
    lateral = np.abs(np.asarray(where.lateral))[driving]
    truth = {stamp_of(m): (origin + [m.pose.position.x, m.pose.position.y],
                           m.pose.orientation) for m in poses}
    position_errors, heading_errors = [], []
    for o in odoms:
        if stamp_of(o) not in truth:
            continue
        (tx, ty), q = truth[stamp_of(o)]
        position_errors.append(math.dist((tx, ty), (o.pose.pose.position.x,
                                                    o.pose.pose.position.y)))
        error = yaw_of(o.pose.pose.orientation) - yaw_of(q)
        heading_errors.append(math.degrees(math.atan2(math.sin(error), math.cos(error))))
    return {'laps': done, 'lap_times_sec': [round(t, 2) for t in np.diff(crossings)],
            'cross_track_m': {'rms': round(float(np.sqrt(np.mean(lateral ** 2))), 3),
                              'max': round(float(lateral.max()), 3)},
            'inside_track': bool(np.all(TRACK.inside(xy))),
            'localizer': {'pairs': len(position_errors),
                          'position_rms_m': round(float(np.sqrt(np.mean(
                              np.square(position_errors)))), 3),
                          'heading_rms_deg': round(float(np.sqrt(np.mean(
                              np.square(heading_errors)))), 3)}}


def measure(session: BenchSession) -> dict:
    """Run the three phases; return the JSON object."""
    result = {'benchmark': 'kart_stack', 'track_length_m': round(TRACK.length, 2)}
    result['latency'] = latency(session)
    result['lockstep'] = lockstep(session)
    result['laps'] = laps(session)
    result.update(lap_bound())
    best = min(result['laps']['lap_times_sec'])
    result['best_lap_over_bound'] = round(best / result['lap_bound_sec'], 2)
    return result


def main() -> int:
    """Run the benchmark; print one JSON object."""
    return run('bench_kart_stack', measure)


if __name__ == '__main__':
    sys.exit(main())
