"""Two vehicles in one world, each in its own ROS domain: isolation, the start, reset, faults.

One mission for the module (the launch plan's processes, ``conftest.mission_stack``): the
simulator serving the rendezvous scenario's chaser and target, ``sim_manager`` and the
referee in the management domain, each vehicle's ``udp_bridge`` in its own domain. Test
nodes play the vehicles' controllers (``Pilot``: a lease and wrenches) in their domains and
look at the management domain. The tests run in order: the held mission first, then the
start, a fault, the reset.
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
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Imu
from std_msgs.msg import Bool, Empty, Float32MultiArray, String

pytestmark = pytest.mark.integration

CHASER = '6c1a2b3c4d5e6f708192a3b4c5d6e7f8'
TARGET = '7d2b3c4d5e6f708192a3b4c5d6e7f809'
LEASES = itertools.count(1)


@pytest.fixture(scope='module')
def stack(mission_stack):
    return mission_stack(2, 'rendezvous', autostart=False)


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
    pilot.add('status', topics.name('sim/status'), Float32MultiArray,
              topics.qos('sim/status', reader=True))
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


def state_is(view, key: str, value: str) -> None:
    view.wait_for(key, lambda m: m.data == value, what=f'{key} {value}')


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
    state_is(view, 'admin/state', mission.READY)
    view.start.publish(Bool(data=True))
    state_is(view, 'admin/state', mission.START)
    state_is(chaser, 'state', mission.VEHICLE_START)
    state_is(target, 'state', mission.VEHICLE_START)
    since = chaser.mark()
    for _ in range(3):
        chaser.wrench(torque_z=2000.0, vessel=CHASER, lease=chaser.lease_id, timeout=1.0)
    accepted = chaser.wait_for('feedback', lambda m: m.accepted, since, 'an accepted wrench')
    assert accepted.reason in ('accepted', 'slew_rate_limit')
    view.wait_for('twist_1', lambda t: t.twist.angular.z > 1e-4, what='the chaser turning')
    assert abs(view.last('twist_2').twist.angular.z) < 1e-9          # the target did not


def test_each_vehicle_gets_its_status_by_the_index_table(stack, ros_node_in):
    chaser = vehicle_view(ros_node_in(stack.domain(1)))
    first = chaser.wait_for('status', what='a status array')
    later = chaser.wait_for('status', lambda m: m.data[1] >= first.data[1] + 2.0,
                            what='2 s more of elapsed time')
    index = mission.STATUS_INDEX
    values = list(later.data)
    assert len(values) == len(mission.STATUS_FIELDS)
    assert values[index['time_left_sec']] == pytest.approx(900.0 - values[index['elapsed_sec']],
                                                           abs=1e-3)
    # game seconds per wall second over the last second: about 1 at --rate 1, but a stalled
    # simulator catching up on a busy machine swings it; filled in and moving is what counts
    assert 0.0 < values[index['time_scale']] < 100.0
    assert values[index['propellant_left_kg']] > 200.0 and values[index['completed']] == 0.0
    assert values[index['task_progress']] == 0.0         # 200 m away: no hold


def test_a_vehicle_stack_killed_leaves_the_other_flying(stack, ros_node_in):
    chaser = vehicle_view(ros_node_in(stack.domain(1)))
    view = management_view(ros_node_in(stack.base))
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
    chaser = vehicle_view(ros_node_in(stack.domain(1)))
    description = json.loads(view.wait_for('admin/mission').data)
    assert description['started_ut'] is not None
    since = chaser.mark()
    view.reset.publish(Empty())
    state_is(view, 'admin/state', mission.WAIT_START)
    state_is(chaser, 'state', mission.SPAWNED)
    chaser.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE, since,
                    'a new session')
    gone = chaser.wait_for('authority', lambda m: m.state == 0, since, 'the lease gone')
    assert gone.reason in ('runtime_session_changed', 'unowned')
    reset = json.loads(view.wait_for('admin/mission', lambda m: json.loads(m.data)[
        'started_ut'] is None, what='the mission held again').data)
    assert reset['elapsed'] == 0.0 and reset['ut'] < description['ut']
