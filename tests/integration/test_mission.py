"""Two vehicles in one world, each in its own ROS domain: isolation, the start, reset, faults.

One mission for the module (the launch plan's processes, ``conftest.mission_stack``): the
simulator serving the rendezvous scenario's chaser and target, ``sim_manager`` and the
referee in the management domain, each vehicle's ``udp_bridge`` in its own domain. Test
nodes play the vehicles' controllers (``Pilot``: a lease and wrenches) in their domains and
look at the management domain. No controller is in the loop, so the simulator runs at
``RATE`` x real time. Each test brings the shared mission where it needs it (``held``:
waiting for the start, no vehicle Ready; ``started``: running) and may leave it anywhere:
the ``stack`` fixture starts again a vehicle stack a test killed, so the tests pass alone
and in any order.
"""

import itertools
import json
import signal

from geometry_msgs.msg import PoseStamped, TwistStamped
from pylon_common import mission, topics
from pylon_interfaces.msg import ControlAuthorityCommand as A
from pylon_interfaces.msg import VesselLifecycle
from pylon_protocol import packets
from pylon_testing.pilot import Pilot
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
WINDOW_SEC = 1.0                # the status's time scale is measured over the last second
# how far a status message's publication stamp may lie from the manager's clock reading
# for that status, on a busy machine (the same callback reads the clock, then publishes)
STAMP_SLACK_SEC = 0.05
# every status array kept (10 a second), also while the test process looks elsewhere
STATUS_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)


@pytest.fixture(scope='module')
def mission_stack_of_module(mission_stack):
    return mission_stack(2, 'rendezvous', autostart=False, rate=RATE)


@pytest.fixture
def stack(mission_stack_of_module):
    """Return the module's mission, every process running (a test may have killed one)."""
    mission_stack_of_module.revive()
    return mission_stack_of_module


def management_view(node) -> TopicRecorder:
    """Record the management domain: the state, the ranking, both vehicles' ground truth."""
    view = TopicRecorder(node)
    for key in ('admin/state', 'admin/ranking', 'admin/mission'):
        view.add(key, topics.name(key), String, topics.qos(key, reader=True))
    for k in (1, 2):
        prefix = mission.vehicle_prefix(k)
        view.add(f'pose_{k}', topics.name('ground_truth/pose', prefix), PoseStamped,
                 qos_profile_sensor_data)
        view.add(f'twist_{k}', topics.name('ground_truth/twist_body', prefix), TwistStamped,
                 qos_profile_sensor_data)
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
    pilot.add('state', topics.name('sim/state'), String, topics.qos('sim/state', reader=True))
    pilot.add('status', topics.name('sim/status'), Float32MultiArray, STATUS_QOS)
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


def held(stack, ros_node_in, view: TopicRecorder) -> None:
    """Bring the mission to WaitStart, every vehicle Spawned (a reset if not there).

    ``view`` (``management_view``) reads the mission description: the management state and
    each vehicle's.
    """
    def spawned(m) -> bool:
        description = json.loads(m.data)
        return description['state'] == mission.WAIT_START and description[
            'started_ut'] is None and all(v['state'] == mission.SPAWNED
                                          for v in description['vehicles'])
    view.wait_for('admin/mission', what='the mission description')
    if not spawned(view.last('admin/mission')):
        since = view.mark()
        view.reset.publish(Empty())
        view.wait_for('admin/mission', spawned, since, 'the mission held, no vehicle Ready')


def started(stack, ros_node_in, view: TopicRecorder) -> None:
    """Bring the mission to Start (both vehicles Ready, then the start) unless it is there."""
    view.wait_for('admin/state', what='the management state')
    if view.last('admin/state').data == mission.START:
        return
    held(stack, ros_node_in, view)
    since = view.mark()
    for k, vessel in enumerate(VESSELS, start=1):
        pilot = vehicle_view(ros_node_in(stack.domain(k)))
        pilot.ready()
        hold_lease(pilot, vessel)
    state_is(view, 'admin/state', mission.READY, since)
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
        '/ksp_vessel/imu/data_raw', '/ksp_vessel/lifecycle', '/pylon/sim/state',
        '/pylon/sim/status'})
    assert not [n for n in chaser if 'ground_truth' in n or n.startswith(
        ('/vehicle_', '/admin'))], chaser
    assert '/ksp_vessel/control/snapshot' not in chaser      # ground truth too
    management = names_in(ros_node_in(stack.base), {
        '/admin/pylon/state', '/admin/pylon/mission', '/admin/pylon/ranking',
        '/vehicle_1/ground_truth/pose', '/vehicle_2/ground_truth/pose',
        '/vehicle_1/ground_truth/nearby_vessels', '/vehicle_2/ground_truth/flight',
        '/vehicle_1/control/snapshot'})
    assert not [n for n in management if n.startswith(('/ksp_vessel', '/pylon/'))], management
    target = names_in(ros_node_in(stack.domain(2)), {'/ksp_vessel/imu/data_raw'})
    assert not [n for n in target if 'ground_truth' in n or '/vehicle_' in n], target


def test_commands_act_only_after_the_start_of_every_ready_vehicle(stack, ros_node_in):
    view = management_view(ros_node_in(stack.base))
    held(stack, ros_node_in, view)
    ready = view.mark()                     # what came before may hold an older Ready
    chaser, target = (vehicle_view(ros_node_in(stack.domain(k))) for k in (1, 2))
    state_is(view, 'admin/state', mission.WAIT_START)
    state_is(chaser, 'state', mission.SPAWNED)
    chaser.ready()
    hold_lease(chaser, CHASER)
    state_is(chaser, 'state', mission.VEHICLE_READY)
    # a wrench before the start does nothing and says why
    since = chaser.mark()
    chaser.wrench(torque_z=2000.0, vessel=CHASER, lease=chaser.lease_id)
    refused = chaser.wait_for('feedback', since=since, what='the wrench answered')
    assert not refused.accepted and refused.reason == packets.SIMULATION_HELD
    twists = view.wait_stamp_span('twist_1', 1.0, view.mark())
    assert max(abs(t.twist.angular.z) for t in twists) < 1e-9
    # start before every vehicle is Ready: refused, logged, nothing changes
    view.start.publish(Bool(data=True))
    stack.processes['sim_manager'].wait_for_output('start refused: vehicle\\(s\\) 2 not Ready')
    assert view.last('admin/state').data == mission.WAIT_START
    target.ready()
    hold_lease(target, TARGET)
    hold_lease(chaser, CHASER)              # both leases in force at once
    state_is(view, 'admin/state', mission.READY, ready)
    view.start.publish(Bool(data=True))
    state_is(view, 'admin/state', mission.START, ready)
    state_is(chaser, 'state', mission.VEHICLE_START)
    state_is(target, 'state', mission.VEHICLE_START)
    since, started = chaser.mark(), view.mark()
    for _ in range(3):
        chaser.wrench(torque_z=2000.0, vessel=CHASER, lease=chaser.lease_id, timeout=1.0)
    accepted = chaser.wait_for('feedback', lambda m: m.accepted, since, 'an accepted wrench')
    assert accepted.reason in ('accepted', 'slew_rate_limit')
    view.wait_for('twist_1', lambda t: t.twist.angular.z > 1e-4, started,
                  'the chaser turning')
    # the target did not: every sample of it since the start, up to three after that
    view.wait_count('twist_2', 3, view.mark())
    assert max(abs(t.twist.angular.z) for t in view.messages('twist_2', started)) < 1e-9


def test_each_vehicle_gets_its_status_by_the_index_table(stack, ros_node_in):
    started(stack, ros_node_in, management_view(ros_node_in(stack.base)))
    chaser = vehicle_view(ros_node_in(stack.domain(1)))
    index = mission.STATUS_INDEX
    first = chaser.wait_for('status', what='a status array')
    later = chaser.wait_for('status', lambda m: m.data[1] >= first.data[1] + 2.0,
                            what='2 s more of elapsed time')
    values = list(later.data)
    assert len(values) == len(mission.STATUS_FIELDS)
    assert values[index['time_left_sec']] == pytest.approx(900.0 - values[index['elapsed_sec']],
                                                           abs=1e-3)
    # the time scale is the game time that passed over the manager's last wall second
    # (about RATE while the simulator keeps up; it swings while a stalled simulator catches
    # up): each is checked against the elapsed times and publication stamps of its window
    def judge() -> tuple[int, list[str]]:
        return time_scale_misfits([(t, m.data[index['elapsed_sec']], m.data[index['time_scale']])
                                   for t, m in zip(chaser.sent['status'], chaser.got['status'])])
    chaser.until(lambda: judge()[0] >= 20, '20 time scales to judge')
    judged, misfits = judge()
    assert len(misfits) <= judged // 4, misfits
    assert values[index['propellant_left_kg']] > 200.0 and values[index['completed']] == 0.0
    assert values[index['task_progress']] == 0.0         # 200 m away: no hold


def test_a_vehicle_stack_killed_leaves_the_other_flying(stack, ros_node_in):
    view = management_view(ros_node_in(stack.base))
    started(stack, ros_node_in, view)
    chaser = vehicle_view(ros_node_in(stack.domain(1)))
    stack.processes['udp_bridge_2'].popen.send_signal(signal.SIGKILL)
    since = chaser.mark()
    chaser.wait_stamp_span('imu', 2.0, since)                # vehicle 1 goes on
    hold_lease(chaser, CHASER)
    spin = view.wait_for('twist_1', since=view.mark()).twist.angular.z
    chaser.wrench(torque_z=-2000.0, vessel=CHASER, lease=chaser.lease_id,
                  timeout=1.0)
    view.wait_for('twist_1', lambda t: t.twist.angular.z < spin - 1e-3, view.mark(),
                  'the chaser answering a new wrench')
    assert view.last('admin/state').data == mission.START    # the mission goes on


def test_reset_returns_the_vessels_and_drops_the_leases(stack, ros_node_in):
    view = management_view(ros_node_in(stack.base))
    started(stack, ros_node_in, view)
    chaser = vehicle_view(ros_node_in(stack.domain(1)))
    description = json.loads(view.wait_for('admin/mission', lambda m: json.loads(m.data)[
        'started_ut'] is not None, what='the mission started').data)
    # a fresh lease just before the reset: the one the start took (10 s, 3.3 s of wall time
    # at RATE) may have run out since, and what ends it must be the reset
    chaser.ready()
    hold_lease(chaser, CHASER)
    since, before = chaser.mark(), view.mark()
    view.reset.publish(Empty())
    state_is(view, 'admin/state', mission.WAIT_START, before)
    state_is(chaser, 'state', mission.SPAWNED)
    chaser.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE, since,
                    'a new session')
    gone = chaser.wait_for('authority', lambda m: m.state == 0, since, 'the lease gone')
    assert gone.reason in ('runtime_session_changed', 'unowned')
    reset = json.loads(view.wait_for('admin/mission', lambda m: json.loads(m.data)[
        'started_ut'] is None, before, 'the mission held again').data)
    assert reset['elapsed'] == 0.0 and reset['ut'] < description['ut']
