"""Replay the mod's own datagram forms (mod_datagrams.txt) into a real udp_bridge."""

import math
from pathlib import Path
import socket

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, TwistStamped
from pylon_interfaces.msg import (
    ControlAuthorityState,
    DockingPortState,
    EngineState,
    NearbyVessels,
    SeparationState,
    StarTrackerState,
    VesselLifecycle,
    WheelState,
    WrenchFeedback,
)
from pylon_protocol import packets
from pylon_testing import mod_datagrams as d
from pylon_testing.wait import spin_until
import pytest
from rclpy.qos import DurabilityPolicy, qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image, Imu, JointState, LaserScan
from std_msgs.msg import String

pytestmark = pytest.mark.integration

MOD_DATAGRAMS = Path(__file__).with_name('mod_datagrams.txt')
RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
MOD_EPOCH = 'e90c4e90c4e90c4e90c4e90c4e90c4e9'     # the runtimeEpoch of the file
BRIDGED = {'pylon_session', 'pylon_imu', 'pylon_ground_truth', 'pylon_nearby_vessels',
           'pylon_motor_state', 'pylon_vessel_urdf_chunk', 'pylon_vessel_urdf_clear',
           'pylon_control_authority_state', 'pylon_wrench_status', 'pylon_actuator_state',
           'pylon_docking_port_state', 'pylon_star_tracker', 'pylon_lidar_scan',
           'pylon_lidar_inactive', 'pylon_camera_frame_chunk', 'pylon_camera_inactive'}


def mod_datagrams():
    cases = []
    for line in MOD_DATAGRAMS.read_text(encoding='utf-8').splitlines():
        if line and not line.startswith('#'):
            case, data = line.split('\t', 1)
            cases.append((case, data.encode('utf-8')))
    return cases


def test_the_replay_file_covers_every_state_type():
    types = {case.split('/')[0] for case, _ in mod_datagrams()}
    assert types | {'pylon_vessel_urdf_chunk', 'pylon_vessel_urdf_clear'} == \
        set(packets.STATE_TYPES)
    raw = dict(mod_datagrams())
    assert raw['pylon_actuator_state/wheel'].count(b'"vesselId"') == 2
    assert raw['pylon_camera_frame_chunk'].count(b'"sensorId"') == 2
    assert b'1E-05,-0,' in raw['pylon_imu'] and b'\\"One\\"' in raw['pylon_ground_truth']


def test_mod_datagrams_reach_ros_unchanged(ros_process, free_udp_port, ros_node):
    port = free_udp_port()
    ros_process(['udp_bridge', '--host', '127.0.0.1', '--port', str(port),
                 '--diagnostics-period-sec', '0.2'], name='bridge')
    got = {}

    def keep(name):
        got[name] = []
        return lambda msg: got[name].append(msg)
    subscriptions = [     # kept referenced while the test spins
        ros_node.create_subscription(VesselLifecycle, '/ksp_vessel/lifecycle', keep('life'),
                                     LATCHED),
        ros_node.create_subscription(Imu, '/ksp_vessel/imu/data_raw', keep('imu'),
                                     qos_profile_sensor_data),
        ros_node.create_subscription(PoseStamped, '/ksp_vessel/ground_truth/pose',
                                     keep('pose'), qos_profile_sensor_data),
        ros_node.create_subscription(TwistStamped, '/ksp_vessel/ground_truth/twist_body',
                                     keep('twist_body'), qos_profile_sensor_data),
        ros_node.create_subscription(NearbyVessels, '/ksp_vessel/ground_truth/nearby_vessels',
                                     keep('nearby'), RELIABLE),
        ros_node.create_subscription(JointState, '/ksp_vessel/joint_states', keep('joints'),
                                     RELIABLE),
        ros_node.create_subscription(String, '/ksp_vessel/root_frame', keep('root'), LATCHED),
        ros_node.create_subscription(DiagnosticArray, '/pylon/diagnostics', keep('diag'),
                                     RELIABLE),
        ros_node.create_subscription(ControlAuthorityState,
                                     '/ksp_vessel/control/authority/state', keep('authority'),
                                     LATCHED),
        ros_node.create_subscription(WrenchFeedback, '/ksp_vessel/control/wrench_feedback',
                                     keep('feedback'), RELIABLE),
        ros_node.create_subscription(EngineState, '/ksp_vessel/actuators/propulsion/state',
                                     keep('engine'), qos_profile_sensor_data),
        ros_node.create_subscription(WheelState, '/ksp_vessel/actuators/wheel/state',
                                     keep('wheel'), qos_profile_sensor_data),
        ros_node.create_subscription(SeparationState, '/ksp_vessel/actuators/separation/state',
                                     keep('separation'), LATCHED),
        ros_node.create_subscription(DockingPortState,
                                     '/ksp_vessel/docking_ports/docking_port_3008_0/state',
                                     keep('dock'), RELIABLE),
        ros_node.create_subscription(
            StarTrackerState, '/ksp_vessel/star_tracker/star_tracker_00c0ffee/state',
            keep('tracker'), RELIABLE),
        ros_node.create_subscription(LaserScan, '/ksp_vessel/lidar_2d/lidar_2d_1a2b3c4d/scan',
                                     keep('scan'), qos_profile_sensor_data),
        ros_node.create_subscription(Image, '/ksp_vessel/camera/camera_0badf00d/image_raw',
                                     keep('image'), qos_profile_sensor_data),
    ]
    spin_until(ros_node, lambda: got['life'], 20.0, what='the bridge up')
    cases = mod_datagrams()
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sent = 0

        def send(data):
            nonlocal sent
            sender.sendto(data, ('127.0.0.1', port))
            sent += 1
        send(dict(cases)['pylon_session'])
        spin_until(ros_node, lambda: any(m.vessel_id == d.VESSEL for m in got['life']), 10.0,
                   what='the session opened')
        # The bridge creates a topic with its first message, which a subscriber that has
        # not matched the new publisher yet misses: the whole file goes out twice, the
        # second time 0.1 s later in UT and one frame later (the mod's own text otherwise).
        for later in (False, True):
            for case, data in cases:
                if later:
                    data = data.replace(b'12345.5', b'12345.6').replace(
                        b'"observationSequence":900', b'"observationSequence":901').replace(
                        b'"sequence":12,', b'"sequence":13,')
                if later or case != 'pylon_session':
                    send(data)
            if not later:
                spin_until(ros_node, lambda: all(ros_node.count_publishers(topic) for topic in (
                    '/ksp_vessel/imu/data_raw', '/ksp_vessel/ground_truth/pose',
                    '/ksp_vessel/actuators/propulsion/state', '/ksp_vessel/joint_states',
                    '/ksp_vessel/docking_ports/docking_port_3008_0/state')), 10.0,
                    what='the bridge publishing')
        for chunk in d.model_chunks(env=d.envelope(epoch=MOD_EPOCH)):
            send(chunk)
        bad = dict(cases)['pylon_imu'].replace(b'9.81', b'NaN').replace(b'12345.5', b'12346')
        send(bad)
        send(b'{"type":"pylon_imu","version":1.0}')
        spin_until(ros_node, lambda: got['imu'] and got['pose'] and got['nearby'] and
                   got['joints'] and got['twist_body'] and
                   got['authority'] and got['feedback'] and got['engine'] and got['wheel'] and
                   got['separation'] and got['dock'] and got['tracker'] and got['scan'] and
                   got['image'] and
                   any(m.data for m in got['root']), 10.0,
                   what='every bridged topic')

        def settled():
            if not got['diag']:
                return False
            values = {kv.key: kv.value for s in got['diag'][-1].status for kv in s.values}
            return int(values.get('received', 0)) == sent
        spin_until(ros_node, settled, 10.0, what='diagnostics counting every datagram')
    finally:
        sender.close()
    imu = got['imu'][0]
    assert (imu.angular_velocity.x, imu.angular_velocity.y, imu.angular_velocity.z) == (
        1e-05, 0.0, 7.3e-05)
    assert imu.linear_acceleration.z == 9.81 and imu.header.frame_id == 'base_link'
    assert len(got['imu']) <= 2                                  # the NaN sample dropped
    pose = got['pose'][0].pose
    assert (pose.position.x, pose.position.y, pose.position.z) == (1.0, 2.0, 0.5)
    assert got['twist_body'][0].twist.linear.x == 0.1
    nearby = got['nearby'][0]
    assert nearby.vessels[0].vessel_id == d.OTHER and nearby.vessels[0].is_debris
    assert nearby.vessels[0].vessel_name == 'Debris'
    joints = got['joints'][0]
    assert list(joints.name) == ['arm_hinge'] and list(joints.position) == [0.5]
    assert got['root'][-1].data == f'pylon_{d.VESSEL[:8]}_link_0000'
    authority = got['authority'][0]
    assert (authority.state, authority.controller_id, authority.lease_id, authority.priority,
            authority.reason) == (1, 'planner', 'lease-1', 10, 'lease_acquired')
    assert authority.sas_suppressed and authority.last_sequence == 7
    assert authority.lease_remaining_sec == 1.5 and authority.vessel_name == 'Rover'
    feedback = got['feedback'][0]
    assert feedback.header.frame_id == 'base_link' and feedback.saturated
    assert feedback.requested.force.x == 1000.0 and feedback.achieved.force.x == 750.0
    assert feedback.allocation_residual.force.x == 200.0
    assert feedback.reason == 'magnitude_limit,slew_rate_limit'
    engine = got['engine'][0]
    assert engine.id == engine.name == 'engine_3001_0' and engine.header.frame_id == 'base_link'
    assert engine.runtime_generation == 3 and engine.observation_sequence in (900, 901)
    wheel = got['wheel'][0]
    assert (wheel.position.x, wheel.position.y, wheel.position.z) == (1.0, 0.8, -0.5)
    assert wheel.wheel_count == 1 and wheel.steering_sign == -1.0 and wheel.grounded
    assert got['separation'][0].mechanism == 'decoupler'
    dock = got['dock'][0]
    assert dock.state == 'Ready' and dock.camera_active and dock.part_flight_id == 4008
    tracker = got['tracker'][0]
    assert tracker.valid and tracker.reason == 'tracking' and tracker.sequence in (12, 13)
    assert (tracker.orientation.z, tracker.orientation.w) == pytest.approx(
        (0.7071068, 0.7071068))
    assert tracker.header.frame_id == 'kerbol_inertial' and tracker.sensor_id == \
        'star_tracker_00c0ffee'
    scan = got['scan'][0]
    assert list(scan.ranges) == [5.0, math.inf, 7.5, math.inf]
    assert scan.angle_increment == pytest.approx(math.pi / 2)       # full circle: fov / N
    assert scan.header.frame_id == f'pylon_{d.VESSEL[:8]}_lidar_2d_1a2b3c4d'
    image = got['image'][0]
    assert (image.width, image.height, image.encoding) == (16, 16, 'rgb8')
    assert bytes(image.data)[:4] == bytes([0, 1, 2, 3])
    life = got['life'][-1]
    assert life.vessel_name == 'Rover' and life.model_ready
    values = {kv.key: kv.value for s in got['diag'][-1].status for kv in s.values}
    dropped = {k: v for k, v in values.items() if k.startswith('dropped.')}
    assert dropped == {'dropped.non_finite': '1', 'dropped.bad_version': '1'}, dropped
    for case, _ in cases:
        kind = case.split('/')[0]
        if kind not in BRIDGED:
            assert int(values[f'ignored.{kind}']) >= 1, kind
    for subscription in subscriptions:
        ros_node.destroy_subscription(subscription)
