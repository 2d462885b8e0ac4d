"""udp_bridge driven by pylon_sim, both real processes, checked by a node over real DDS."""

import math

from geometry_msgs.msg import PoseStamped
from pylon_interfaces.msg import VesselLifecycle
from pylon_sim.admin import request
from pylon_testing.wait import wait_for_messages
import pytest
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    qos_profile_sensor_data,
    QoSProfile,
    ReliabilityPolicy,
)
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import String

pytestmark = pytest.mark.integration

LATCHED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                     reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)


def start(ros_process, free_udp_port, scenario='orbit', bridge_args=()):
    state_port, command_port, admin_port = free_udp_port(), free_udp_port(), free_udp_port()
    bridge = ros_process(['udp_bridge', '--host', '127.0.0.1', '--port', str(state_port),
                          '--command-port', str(command_port), *bridge_args], name='bridge')
    sim = ros_process(['pylon_sim', '--scenario', scenario, '--state-port', str(state_port),
                       '--command-port', str(command_port), '--admin-port', str(admin_port)],
                      name='sim')
    return bridge, sim, admin_port


def lifecycle_until(ros_node, predicate, timeout=20.0):
    [msg] = wait_for_messages(ros_node, VesselLifecycle, '/ksp_vessel/lifecycle', LATCHED,
                              timeout=timeout, predicate=predicate)
    return msg


def test_orbit_topics_lifecycle_and_imu(ros_process, free_udp_port, ros_node):
    _, _, admin = start(ros_process, free_udp_port)
    active = lifecycle_until(ros_node, lambda m: m.state == VesselLifecycle.STATE_ACTIVE)
    assert active.vessel_id == '5a7e1f0c3b2d4e6f8a9b0c1d2e3f4a5b'
    assert active.world_frame == 'pylon_ground_truth_enu' and active.body_frame == 'base_link'
    imus = wait_for_messages(ros_node, Imu, '/ksp_vessel/imu/data_raw', qos_profile_sensor_data,
                             count=30, timeout=10.0)
    stamps = [m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 for m in imus]
    rate = (len(stamps) - 1) / (stamps[-1] - stamps[0])
    assert 24.0 <= rate <= 36.0                       # 30 Hz within 20 %
    for msg in imus:
        assert msg.header.frame_id == 'base_link'
        assert msg.orientation_covariance[0] == -1.0
        assert list(msg.angular_velocity_covariance) == [0.0] * 9
        accel = msg.linear_acceleration
        assert math.sqrt(accel.x ** 2 + accel.y ** 2 + accel.z ** 2) < 1e-3   # free fall
    [pose] = wait_for_messages(ros_node, PoseStamped, '/ksp_vessel/ground_truth/pose',
                               qos_profile_sensor_data, timeout=10.0)
    assert pose.header.frame_id == 'pylon_ground_truth_enu'
    [description] = wait_for_messages(ros_node, String, '/ksp_vessel/robot_description',
                                      LATCHED, timeout=15.0, predicate=lambda m: m.data != '')
    assert '<robot name="pylon_5a7e1f0c_active_vessel">' in description.data
    [root] = wait_for_messages(ros_node, String, '/ksp_vessel/root_frame', LATCHED,
                               timeout=5.0, predicate=lambda m: m.data != '')
    assert root.data == 'pylon_5a7e1f0c_link_0000'
    ready = lifecycle_until(ros_node, lambda m: m.model_ready)
    assert len(ready.model_id) == 64

    # vessel switch: a new generation, the old model withdrawn at once
    generation = ready.generation
    assert request(admin, {'cmd': 'switch', 'vessel': 'target'})['ok']
    changed = lifecycle_until(ros_node, lambda m: m.generation == generation + 1)
    assert changed.state == VesselLifecycle.STATE_CHANGED and changed.reason == 'vessel_changed'
    assert changed.vessel_id == '0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e' and not changed.model_ready

    # heartbeat loss: STALE after the timeout, a new generation when it returns
    assert request(admin, {'cmd': 'heartbeat', 'enabled': False})['ok']
    stale = lifecycle_until(ros_node, lambda m: m.state == VesselLifecycle.STATE_STALE)
    assert stale.reason == 'session_timeout'
    assert request(admin, {'cmd': 'heartbeat', 'enabled': True})['ok']
    recovered = lifecycle_until(ros_node, lambda m: m.reason == 'session_recovered')
    assert recovered.generation == stale.generation + 1


def test_surface_joint_states_and_pad(ros_process, free_udp_port, ros_node):
    start(ros_process, free_udp_port, scenario='surface')
    [joints] = wait_for_messages(ros_node, JointState, '/ksp_vessel/joint_states',
                                 qos_profile_sensor_data, timeout=20.0)
    assert list(joints.name) == ['mast_hinge']
    [imu] = wait_for_messages(ros_node, Imu, '/ksp_vessel/imu/data_raw',
                              qos_profile_sensor_data, timeout=10.0)
    assert imu.linear_acceleration.z == pytest.approx(9.756, abs=0.01)


def test_disable_ground_truth_creates_no_world_topics(ros_process, free_udp_port, ros_node):
    start(ros_process, free_udp_port, bridge_args=('--disable-ground-truth',))
    active = lifecycle_until(ros_node, lambda m: m.state == VesselLifecycle.STATE_ACTIVE)
    assert active.world_frame == ''
    wait_for_messages(ros_node, Imu, '/ksp_vessel/imu/data_raw', qos_profile_sensor_data,
                      timeout=10.0)
    names = {name for name, _ in ros_node.get_topic_names_and_types()}
    assert not any(name.startswith('/ksp_vessel/ground_truth') for name in names)
