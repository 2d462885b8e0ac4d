"""udp_bridge with --ground-truth-domain: a vehicle domain without ground truth, truth apart.

As a multi-vehicle stack runs it: the bridge (and the vehicle's nodes) in domain base+1,
its ground truth under ``/vehicle_1`` in domain base (management and referee). A test node
in each domain checks what that domain's graph holds and what arrives there.

One such stack serves the module (``split_stack``): the lean orbit scenario, the game at
four times real time (no controller in the loop; times judged are stamps). Each test makes
its own nodes; the one that pauses the game resumes it before it ends.
"""

import math

from geometry_msgs.msg import PoseStamped, TwistStamped
from pylon_bridge import qos as bridge_qos
from pylon_interfaces.msg import ControlSnapshot, FlightState, NearbyVessels, VesselLifecycle
from pylon_protocol import frames
from pylon_testing.recorder import stamp_of, TopicRecorder
from pylon_testing.scenarios import write_scenario
from pylon_testing.wait import spin_until
import pytest
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
)
from sensor_msgs.msg import Imu
from tf2_msgs.msg import TFMessage

pytestmark = pytest.mark.integration

SAT = '5a7e1f0c3b2d4e6f8a9b0c1d2e3f4a5b'
PREFIX = '/vehicle_1'
TIMEOUT_SEC = 60.0
KERBIN_RADIUS_M, ORBIT_ALTITUDE_M = 600000.0, 100000.0          # config/scenarios/orbit.yaml
RATE = 4


def qos(reliability, durability=DurabilityPolicy.VOLATILE, depth=200):
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=reliability,
                      durability=durability)


RELIABLE, BEST_EFFORT = qos(ReliabilityPolicy.RELIABLE), qos(ReliabilityPolicy.BEST_EFFORT)
LATCHED = qos(ReliabilityPolicy.RELIABLE, DurabilityPolicy.TRANSIENT_LOCAL, 10)
TRUTH = {   # the truth domain's topics: name, type, the QoS a subscriber of the contract uses
    'pose': (f'{PREFIX}/ground_truth/pose', PoseStamped, BEST_EFFORT),
    'twist': (f'{PREFIX}/ground_truth/twist', TwistStamped, BEST_EFFORT),
    'nearby': (f'{PREFIX}/ground_truth/nearby_vessels', NearbyVessels, RELIABLE),
    'flight': (f'{PREFIX}/ground_truth/flight', FlightState, BEST_EFFORT),
    'snapshot': (f'{PREFIX}/control/snapshot', ControlSnapshot, RELIABLE),
}
GROUND_TRUTH_NAMES = ('pose', 'twist', 'twist_body', 'acceleration', 'kinematic_state',
                      'frame_angular_velocity', 'nearby_vessels', 'flight')


@pytest.fixture(scope='module')
def split_processes(module_sim_stack, module_ros_process, module_ros_domain_block,
                    tmp_path_factory):
    """Start the simulator and a bridge in domain base+1 with its ground truth in base."""
    base = module_ros_domain_block(2)
    scenario = write_scenario(tmp_path_factory.mktemp('scenario'), 'orbit')
    stack = module_sim_stack(scenario=scenario, bridge=False, sim_args=['--rate', str(RATE)])
    module_ros_process(['udp_bridge', '--host', '127.0.0.1', '--port', str(stack.state_port),
                        '--command-port', str(stack.command_port), '--topic-timeout-sec',
                        '1.0', '--ground-truth-domain', str(base),
                        '--ground-truth-prefix', f'{PREFIX}/ground_truth',
                        '--control-snapshot-topic', f'{PREFIX}/control/snapshot'],
                       name='bridge', env={'ROS_DOMAIN_ID': str(base + 1)})
    return stack, base


@pytest.fixture
def split_stack(split_processes, ros_node_in):
    """Return the module's stack, a test node in the vehicle domain and one in the truth's."""
    stack, base = split_processes
    return stack, ros_node_in(base + 1), ros_node_in(base)


def graph(node):
    return dict(node.get_topic_names_and_types())


def test_ground_truth_only_in_its_own_domain_with_the_vehicle_stamps(split_stack):
    _, vehicle_node, truth_node = split_stack
    vehicle = TopicRecorder(vehicle_node)
    vehicle.add('imu', '/ksp_vessel/imu/data_raw', Imu, BEST_EFFORT)
    vehicle.add('life', '/ksp_vessel/lifecycle', VesselLifecycle, LATCHED)
    vehicle.add('tf', '/tf', TFMessage, qos(ReliabilityPolicy.RELIABLE, depth=100))
    truth = TopicRecorder(truth_node)
    for name, (topic, msg_type, profile) in TRUTH.items():
        truth.add(name, topic, msg_type, profile)
    active = vehicle.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE)
    assert (active.vessel_id, active.world_frame, active.body_frame) == (SAT, '', 'base_link')
    start = truth.mark()
    for name in TRUTH:
        truth.wait_count(name, 1, start)
    truth.wait_stamp_span('pose', 2.0, start)
    vehicle.wait_count('imu', 60)

    # the same UT -> ROS mapping in both domains: a pose has its frame's IMU stamp. Both
    # streams are Best Effort and each recorder spins its own domain's node in turn, so a
    # busy machine may lose some of either: read on (more of each) until 20 stamps match
    def shared():
        imu_stamps = {stamp_of(m) for m in vehicle.messages('imu')}
        return [m for m in truth.messages('pose', start) if stamp_of(m) in imu_stamps]
    for _ in range(20):
        if len(shared()) >= 20:
            break
        truth.wait_count('pose', len(truth.messages('pose', start)) + 10, start)
        vehicle.wait_count('imu', len(vehicle.messages('imu')) + 10)
    poses = truth.messages('pose', start)
    assert len(shared()) >= 20, (len(shared()), len(poses))
    # values: the pose moves as fast as the twist says, at orbital speed in ENU
    assert {m.header.frame_id for m in poses} == {frames.GROUND_TRUTH_ENU}
    first, last = poses[0], poses[-1]
    moved = math.dist(*((m.pose.position.x, m.pose.position.y, m.pose.position.z)
                        for m in (first, last)))
    speed = moved / (stamp_of(last) - stamp_of(first))
    twist = truth.last('twist').twist.linear
    assert speed == pytest.approx(math.hypot(twist.x, twist.y, twist.z), rel=0.02)
    assert 1900.0 < speed < 2300.0
    flight = truth.last('flight')
    assert flight.header.frame_id == 'base_link' and flight.vessel_id == SAT
    assert flight.body_radius == KERBIN_RADIUS_M
    assert flight.altitude_asl == pytest.approx(ORBIT_ALTITUDE_M, abs=500.0)
    snapshot = truth.last('snapshot')
    assert stamp_of(snapshot) == stamp_of(snapshot.flight)
    assert snapshot.flight.altitude_asl == pytest.approx(ORBIT_ALTITUDE_M, abs=500.0)
    nearby = truth.last('nearby')
    assert nearby.header.frame_id == frames.GROUND_TRUTH_ENU
    assert nearby.observer_vessel_id == SAT and nearby.vessels

    # the vehicle domain: its own topics, no ground truth, no truth name, no world TF
    own = ('/ksp_vessel/imu/data_raw', '/ksp_vessel/lifecycle', '/pylon/diagnostics')
    vehicle.until(lambda: set(own) <= set(graph(vehicle_node)),    # the first diagnostics
                  f'{own} in the vehicle graph')                   # come after a period
    names = graph(vehicle_node)
    for topic in own:
        assert topic in names, topic
    assert not [n for n in names if 'ground_truth' in n or n.startswith(PREFIX)
                or n.endswith('/control/snapshot')]
    assert vehicle.messages('tf') and not [
        t for m in vehicle.messages('tf') for t in m.transforms
        if frames.GROUND_TRUTH_ENU in (t.header.frame_id, t.child_frame_id)]
    # the truth domain: the relayed topics with the contract's types and QoS, nothing else
    relayed = {f'{PREFIX}/ground_truth/{suffix}' for suffix in GROUND_TRUTH_NAMES}
    truth.until(lambda: relayed <= set(graph(truth_node)), 'every relayed topic in the graph')
    names = graph(truth_node)
    for suffix in GROUND_TRUTH_NAMES:
        assert f'{PREFIX}/ground_truth/{suffix}' in names, suffix
    assert names[f'{PREFIX}/control/snapshot'] == ['pylon_interfaces/msg/ControlSnapshot']
    assert not [n for n in names if n.startswith(('/ksp_vessel', '/pylon', '/tf'))]
    assert 'vehicle_1_ground_truth' in truth_node.get_node_names()      # named by the prefix
    assert 'udp_bridge' not in truth_node.get_node_names()
    assert 'vehicle_1_ground_truth' not in vehicle_node.get_node_names()
    for key, topic in (('ground_truth/pose', TRUTH['pose'][0]),
                       ('control/snapshot', TRUTH['snapshot'][0])):
        [info] = truth_node.get_publishers_info_by_topic(topic)
        assert info.qos_profile.reliability == bridge_qos.qos_for(key).reliability, key


def test_ground_truth_topics_go_after_the_timeout_and_come_back(split_stack):
    stack, vehicle_node, truth_node = split_stack
    vehicle = TopicRecorder(vehicle_node)
    vehicle.add('life', '/ksp_vessel/lifecycle', VesselLifecycle, LATCHED)
    truth = TopicRecorder(truth_node).add('pose', TRUTH['pose'][0], PoseStamped, BEST_EFFORT)
    truth.wait_count('pose', 1)
    stack.admin('pause')            # heartbeats go on, measurements stop: topics time out
    try:
        spin_until(truth_node, lambda: truth_node.count_publishers(TRUTH['pose'][0]) == 0,
                   TIMEOUT_SEC, what='the pose topic removed in the truth domain')
        paused_at = truth.mark()
    finally:
        stack.admin('resume')       # the module's next test finds the game running
    resumed = truth.wait_count('pose', 1, paused_at)[0]
    assert stamp_of(resumed) > stamp_of(truth.messages('pose')[0])
    spin_until(truth_node, lambda: truth_node.count_publishers(TRUTH['pose'][0]) == 1,
               TIMEOUT_SEC, what='one pose publisher again')
    assert vehicle.wait_for('life').world_frame == ''
