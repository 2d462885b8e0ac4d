"""Two vehicles in one world, each in its own ROS domain: isolation, the start, reset, faults.

One mission for the module (the launch plan's processes, ``conftest.mission_stack``): the
simulator serving the rendezvous scenario's chaser and target, ``sim_manager`` (start mode
``sync``) and the referee in the management domain, each vehicle's ``udp_bridge`` in its
own domain. Test nodes play the vehicles' controllers (``Pilot``: a lease and wrenches) in
their domains and look at the management domain. No controller is in the loop, so the
simulator runs at ``RATE`` x real time. Each test brings the shared mission where it needs
it (``held``: every vehicle Ready, not started; ``started``: running) and may leave it
anywhere: the ``stack`` fixture starts again a vehicle stack a test ended, so the tests
pass alone and in any order.
"""

import itertools
import json
import signal

from geometry_msgs.msg import PoseStamped, TwistStamped
from nav_msgs.msg import Odometry
from pylon_common import mission, topics
from pylon_interfaces.msg import ControlAuthorityCommand as A
from pylon_interfaces.msg import VesselLifecycle
from pylon_protocol import packets
from pylon_testing.pilot import LATCHED, Pilot
from pylon_testing.recorder import TopicRecorder
import pytest
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Imu
from std_msgs.msg import Bool, Empty, Float32MultiArray, String

pytestmark = pytest.mark.integration

CHASER = '6c1a2b3c4d5e6f708192a3b4c5d6e7f8'
TARGET = '7d2b3c4d5e6f708192a3b4c5d6e7f809'
VESSELS = (CHASER, TARGET)
LEASES = itertools.count(1)
RATE = 3.0                      # the simulator's --rate: game seconds per wall second
COUNTDOWN_SEC = 3.0             # the manager's countdown_sec (its default)
WINDOW_SEC = 1.0                # the status's time scale is measured over the last second
# how far a status message's publication stamp may lie from the manager's clock reading
# for that status, on a busy machine (the same callback reads the clock, then publishes)
STAMP_SLACK_SEC = 0.05
# every status array kept (10 a second), also while the test process looks elsewhere
STATUS_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)


@pytest.fixture(scope='module')
def mission_stack_of_module(mission_stack):
    return mission_stack(2, 'rendezvous', start_mode='sync', rate=RATE)


@pytest.fixture
def stack(mission_stack_of_module):
    """Return the module's mission, every process running (a test may have ended one)."""
    mission_stack_of_module.revive()
    return mission_stack_of_module


def management_view(node) -> TopicRecorder:
    """Record the management domain: the states, the ranking, both vehicles' ground truth."""
    view = TopicRecorder(node)
    for key in ('admin/state', 'admin/ranking', 'admin/mission'):
        view.add(key, topics.name(key), String, topics.qos(key, reader=True))
    for k in (1, 2):
        view.add(f'pose_{k}', mission.ground_truth_topic(k, 'ground_truth/pose'), PoseStamped,
                 qos_profile_sensor_data)
        view.add(f'twist_{k}', mission.ground_truth_topic(k, 'ground_truth/twist_body'),
                 TwistStamped, qos_profile_sensor_data)
        view.add(f'state_{k}', topics.name('admin/vehicle_state', id=str(k)), String,
                 topics.qos('admin/vehicle_state', reader=True))
    view.start = node.create_publisher(Bool, topics.name('admin/start'),
                                       topics.qos('admin/start'))
    view.reset = node.create_publisher(Empty, topics.name('admin/reset'),
                                       topics.qos('admin/reset'))
    # a request published before the manager's subscription matched would be lost: discovery
    # of a new node takes longer on a busy machine
    view.until(lambda: view.start.get_subscription_count() > 0 and
               view.reset.get_subscription_count() > 0, 'the manager subscribed to start/reset')
    return view


def vehicle_view(node) -> Pilot:
    """Return a vehicle's controller stand-in: lease and wrenches, its state and status."""
    pilot = Pilot(node)
    # a fresh lease (its sequence starts at 1) of a higher priority: it takes over the last
    pilot.priority = next(LEASES)
    pilot.lease_id = f'lease-{pilot.priority}'
    # (the topic's own depth is 1: a reader that keeps one loses the states said 0.1 s
    # apart on the way back after a reset whenever this process looks away that long)
    pilot.add('state', topics.name('awsim/state'), String, LATCHED)
    pilot.add('status', topics.name('awsim/status'), Float32MultiArray, STATUS_QOS)
    pilot.add('imu', topics.name('imu'), Imu, qos_profile_sensor_data)
    return pilot


def names_in(node, needed: set[str]) -> set[str]:
    """Wait until the domain's graph shows every name of ``needed``; return every name."""
    view = TopicRecorder(node)
    found: set[str] = set()

    def seen() -> bool:
        found.update(name for name, _ in node.get_topic_names_and_types())
        return needed <= found
    view.until(seen, f'{sorted(needed - found)} in the graph')
    return found


def hold_lease(pilot: Pilot, vessel: str) -> None:
    """Take (or renew) the test controller's lease for 10 s; wait until it is owned."""
    since = pilot.mark()
    msg = A(action=A.ACTION_ACQUIRE, vessel_id=vessel, controller_id='ctl',
            lease_id=pilot.lease_id, priority=pilot.priority, lease_duration_sec=10.0,
            suppress_sas=True,
            sequence=pilot.next_sequence('ctl', pilot.lease_id))
    pilot.authority_pub.publish(msg)
    pilot.answer(since, lambda m: m.controller_id == 'ctl' and m.reason in (
        'lease_acquired', 'lease_renewed'), 'the lease held')


def state_is(view, key: str, value: str, since=None) -> None:
    view.wait_for(key, lambda m: m.data == value, since, f'{key} {value}')


def description(view) -> dict:
    return json.loads(view.last('admin/mission').data)


def held(stack, view: TopicRecorder) -> None:
    """Bring the mission to Ready, not started (a reset if it is anywhere else).

    ``view`` (``management_view``) reads the mission description: the management state and
    each vehicle's. No lease is needed: the vehicles' bridges make them Ready.
    """
    def waiting(m) -> bool:
        d = json.loads(m.data)
        return d['state'] == mission.READY and d['started_ut'] is None and all(
            v['state'] == mission.VEHICLE_READY for v in d['vehicles'])
    view.wait_for('admin/mission', what='the mission description')
    if not waiting(view.last('admin/mission')):
        since = view.mark()
        if description(view)['state'] != mission.PLAY_START:
            view.reset.publish(Empty())
        view.wait_for('admin/mission', waiting, since, 'the mission Ready, not started')


def started(stack, view: TopicRecorder) -> None:
    """Bring the mission to Start (Ready, then the start) unless it is there."""
    view.wait_for('admin/state', what='the management state')
    if view.last('admin/state').data == mission.START:
        return
    held(stack, view)
    since = view.mark()
    view.start.publish(Bool(data=True))
    state_is(view, 'admin/state', mission.START, since)


def time_scale_misfits(stream: list[tuple[float, float, float]],
                       slack: float = STAMP_SLACK_SEC) -> tuple[int, list[str]]:
    """Check each time scale against the game time that passed in its window; return misfits.

    ``stream``: (publication stamp, elapsed game time, time scale) of consecutive status
    arrays. The manager takes a sample (its clock, the UT) whenever a new reply of the
    simulator came, and publishes the game seconds between its oldest sample of the last
    ``WINDOW_SEC`` and the newest over the wall seconds between them. A message whose
    elapsed time changed brought a new sample; its window began at a message no younger
    than every new sample younger than ``WINDOW_SEC`` (those surely are in it), and no
    older than ``WINDOW_SEC``, each age known to ``2 x slack``. The time scale must be the
    game time since one of those over such a span. A message whose window may hold
    less than half a second of samples (after a silence of the simulator) is not judged.
    Return how many were judged and a line for each that fit no window.
    """
    judged, misfits = 0, []
    for i, (stamp, elapsed, scale) in enumerate(stream):
        if i == 0 or elapsed == stream[i - 1][1] or \
                stamp - stream[0][0] < WINDOW_SEC + 2 * slack:
            continue
        news = [k for k in range(1, i) if stream[k][1] != stream[k - 1][1]
                and stamp - stream[k][0] < WINDOW_SEC - 2 * slack]
        if not news or stamp - stream[news[0]][0] < WINDOW_SEC / 2:
            continue
        judged += 1
        spans = []
        for start_stamp, start_elapsed, _ in stream[:news[0] + 1]:
            age = stamp - start_stamp
            if age > WINDOW_SEC + 2 * slack:
                continue
            advance = elapsed - start_elapsed
            low = advance / min(age + 2 * slack, WINDOW_SEC) - 1e-3
            high = advance / (age - 2 * slack) + 1e-3
            spans.append((low, high))
            if low <= scale <= high:
                break
        else:
            misfits.append(f'{scale:.3f} at elapsed {elapsed:.2f} s, outside '
                           + ', '.join(f'[{lo:.3f}, {hi:.3f}]' for lo, hi in spans))
    return judged, misfits


def test_each_domain_carries_its_own_topics_and_no_other(stack, ros_node_in):
    chaser = names_in(ros_node_in(stack.domain(1)), {
        '/ksp_vessel/imu/data_raw', '/ksp_vessel/lifecycle', '/awsim/state', '/awsim/status'})
    target = names_in(ros_node_in(stack.domain(2)), {
        '/ksp_vessel/imu/data_raw', '/awsim/state', '/awsim/status'})
    for names in (chaser, target):           # no ground truth, nothing of the management
        assert not [n for n in names if 'ground_truth' in n or n.startswith(
            ('/d1/', '/d2/', '/admin'))], names
        assert '/ksp_vessel/control/snapshot' not in names     # ground truth too
    # the management domain: the interface's names, each vehicle's ground truth under its
    # prefix, its state and status mirrored
    management = names_in(ros_node_in(stack.base), {
        '/admin/awsim/state', '/admin/awsim/mission', '/admin/awsim/ranking',
        '/d1/awsim/ground_truth/vehicle/pose', '/d2/awsim/ground_truth/vehicle/pose',
        '/d1/awsim/ground_truth/localization/kinematic_state',
        '/d2/awsim/ground_truth/localization/kinematic_state',
        '/d1/awsim/ground_truth/nearby_vessels', '/d2/awsim/ground_truth/flight',
        '/d1/awsim/ground_truth/control/snapshot',
        '/d1/awsim/state', '/d1/awsim/status', '/d2/awsim/state', '/d2/awsim/status'})
    assert not [n for n in management if n.startswith(('/ksp_vessel', '/pylon/', '/awsim/'))
                or n.endswith('ground_truth/pose')], management
    # the odometry is the vehicle's truth: the pose in the world frame, the twist in the body
    view = TopicRecorder(ros_node_in(stack.base))
    view.add('odom', mission.ground_truth_topic(1, 'ground_truth/kinematic_state'), Odometry,
             qos_profile_sensor_data)
    odom = view.wait_for('odom', what="vehicle 1's kinematic state")
    assert odom.child_frame_id == 'base_link' and odom.header.frame_id


def test_start_only_in_ready_a_countdown_then_commands_act(stack, ros_node_in):
    view = management_view(ros_node_in(stack.base))
    held(stack, view)
    chaser, target = (vehicle_view(ros_node_in(stack.domain(k))) for k in (1, 2))
    state_is(chaser, 'state', mission.VEHICLE_READY)
    # vehicle 2's bridge goes away: it is not Ready (Grounded), the mission PlayStart
    stack.processes['udp_bridge_2'].stop()
    gone = view.mark()
    state_is(view, 'admin/state', mission.PLAY_START, gone)
    state_is(target, 'state', mission.GROUNDED)
    state_is(view, 'state_2', mission.GROUNDED)            # mirrored in the management domain
    # a wrench before the start does nothing and says why
    chaser.ready()
    hold_lease(chaser, CHASER)
    since = chaser.mark()
    chaser.wrench(torque_z=2000.0, vessel=CHASER, lease=chaser.lease_id)
    refused = chaser.wait_for('feedback', since=since, what='the wrench answered')
    assert not refused.accepted and refused.reason == packets.SIMULATION_HELD
    twists = view.wait_stamp_span('twist_1', 1.0, view.mark())
    assert max(abs(t.twist.angular.z) for t in twists) < 1e-9
    # a start before every vehicle is Ready: refused, logged and counted; nothing changes
    view.start.publish(Bool(data=True))
    stack.processes['sim_manager'].wait_for_output(
        'start refused \\(\\d+ so far\\): vehicle\\(s\\) 2 not Ready')
    assert view.last('admin/state').data == mission.PLAY_START
    assert description(view)['countdown_from_ut'] is None
    # its bridge back: Ready again, without any lease of the target's
    ready = view.mark()
    stack.revive('udp_bridge_2')
    state_is(view, 'admin/state', mission.READY, ready)
    assert not [v for v in description(view)['vehicles'] if v['key'] == 'target'][0][
        'lease_owned']
    hold_lease(chaser, CHASER)              # fresh: the countdown takes 1 s of wall time
    view.start.publish(Bool(data=True))
    state_is(view, 'admin/state', mission.WAIT_START, ready)
    state_is(view, 'admin/state', mission.START, ready)
    state_is(chaser, 'state', mission.VEHICLE_START)
    state_is(target, 'state', mission.VEHICLE_START)
    # the countdown was COUNTDOWN_SEC of game time: from the accepted request to the start
    # the simulator says (it starts at the first status of the manager after it, 0.1 s of
    # wall time apart, RATE x that of game time, more on a busy machine)
    run = json.loads(view.wait_for('admin/mission', lambda m: json.loads(m.data)[
        'started_ut'] is not None, ready, 'the start in the description').data)
    assert COUNTDOWN_SEC <= run['started_ut'] - run['countdown_from_ut'] < COUNTDOWN_SEC + 3.0
    since, begun = chaser.mark(), view.mark()
    for _ in range(3):
        chaser.wrench(torque_z=2000.0, vessel=CHASER, lease=chaser.lease_id, timeout=1.0)
    accepted = chaser.wait_for('feedback', lambda m: m.accepted, since, 'an accepted wrench')
    assert accepted.reason in ('accepted', 'slew_rate_limit')
    view.wait_for('twist_1', lambda t: t.twist.angular.z > 1e-4, begun, 'the chaser turning')
    # the target did not: every sample of it since the start, up to three after that
    view.wait_count('twist_2', 3, view.mark())
    assert max(abs(t.twist.angular.z) for t in view.messages('twist_2', begun)) < 1e-9


def test_each_vehicle_gets_its_status_by_the_index_table(stack, ros_node_in):
    started(stack, management_view(ros_node_in(stack.base)))
    chaser = vehicle_view(ros_node_in(stack.domain(1)))
    index = mission.STATUS_INDEX
    elapsed = index['elapsed_sec']
    first = chaser.wait_for('status', what='a status array')
    later = chaser.wait_for('status', lambda m: m.data[elapsed] >= first.data[elapsed] + 2.0,
                            what='2 s more of elapsed time')
    values = list(later.data)
    assert len(values) == len(mission.STATUS_FIELDS)
    # the interface's seven: the session counts down; the rendezvous's documented values
    assert values[index['sessionTime']] == pytest.approx(900.0 - values[elapsed], abs=1e-3)
    assert values[index['thisLapTime']] == pytest.approx(values[elapsed], abs=1e-3)
    assert [values[index[name]] for name in ('lapCount', 'section', 'boostRemaining',
                                             'isBoosting')] == [0.0] * 4
    # the time scale is the game time that passed over the manager's last wall second
    # (about RATE while the simulator keeps up; it swings while a stalled simulator catches
    # up): each is checked against the elapsed times and publication stamps of its window
    def judge() -> tuple[int, list[str]]:
        return time_scale_misfits([(t, m.data[elapsed], m.data[index['timeScale']])
                                   for t, m in zip(chaser.sent['status'], chaser.got['status'])])
    chaser.until(lambda: judge()[0] >= 20, '20 time scales to judge')
    judged, misfits = judge()
    assert len(misfits) <= judged // 4, misfits
    assert values[index['propellant_left_kg']] > 200.0 and values[index['completed']] == 0.0
    assert values[index['task_progress']] == 0.0         # 200 m away: no hold
    # the management domain mirrors it
    mirror = TopicRecorder(ros_node_in(stack.base))
    mirror.add('status', topics.name('admin/vehicle_status', id='1'), Float32MultiArray,
               STATUS_QOS)
    mirrored = mirror.wait_for('status', lambda m: m.data[elapsed] > values[elapsed],
                               what='the mirrored status')
    assert len(mirrored.data) == len(mission.STATUS_FIELDS)


def test_a_vehicle_stack_killed_leaves_the_other_flying(stack, ros_node_in):
    view = management_view(ros_node_in(stack.base))
    started(stack, view)
    chaser = vehicle_view(ros_node_in(stack.domain(1)))
    stack.processes['udp_bridge_2'].popen.send_signal(signal.SIGKILL)
    since = chaser.mark()
    chaser.wait_stamp_span('imu', 2.0, since)                # vehicle 1 goes on
    chaser.ready()
    hold_lease(chaser, CHASER)
    spin = view.wait_for('twist_1', since=view.mark()).twist.angular.z
    chaser.wrench(torque_z=-2000.0, vessel=CHASER, lease=chaser.lease_id,
                  timeout=1.0)
    view.wait_for('twist_1', lambda t: t.twist.angular.z < spin - 1e-3, view.mark(),
                  'the chaser answering a new wrench')
    assert view.last('admin/state').data == mission.START    # the mission goes on


def test_reset_returns_the_vessels_and_drops_the_leases(stack, ros_node_in):
    view = management_view(ros_node_in(stack.base))
    started(stack, view)
    chaser = vehicle_view(ros_node_in(stack.domain(1)))
    before_reset = json.loads(view.wait_for('admin/mission', lambda m: json.loads(m.data)[
        'started_ut'] is not None, what='the mission started').data)
    # a fresh lease just before the reset: an older one (10 s, 3.3 s of wall time at RATE)
    # may have run out since, and what ends it must be the reset
    chaser.ready()
    hold_lease(chaser, CHASER)
    # its state reader matched (it has the state in force): else it learns only the newest
    # state said, the latched Ready, and none of the states on the way
    chaser.wait_for('state', what="the chaser's state before the reset")
    since, before = chaser.mark(), view.mark()
    view.reset.publish(Empty())
    # back through the vehicle's states, in order, to Ready: its bridge follows the new
    # session by itself
    # (the state before the reset may come first: latched, or said again every second;
    # a Ready said before the reset took effect is not the one awaited)
    def ready_again() -> bool:
        said = [m.data for m in chaser.messages('state', since)]
        return mission.SPAWNED in said and \
            mission.VEHICLE_READY in said[said.index(mission.SPAWNED):]
    chaser.until(ready_again, 'the chaser Spawned, then Ready again')
    said = [m.data for m in chaser.messages('state', since)]
    back = said.index(mission.SPAWNED)
    assert said[back:back + 3] == [mission.SPAWNED, mission.GROUNDED, mission.VEHICLE_READY]
    chaser.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE, since,
                    'a new session')
    gone = chaser.wait_for('authority', lambda m: m.state == 0, since, 'the lease gone')
    assert gone.reason in ('runtime_session_changed', 'unowned')
    reset = json.loads(view.wait_for('admin/mission', lambda m: json.loads(m.data)[
        'started_ut'] is None, before, 'the mission held again').data)
    assert reset['elapsed'] == 0.0 and reset['ut'] < before_reset['ut']
    state_is(view, 'admin/state', mission.READY, before)
