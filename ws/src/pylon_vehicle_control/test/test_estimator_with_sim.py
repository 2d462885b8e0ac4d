"""attitude_estimator in the loop: pylon_sim -> udp_bridge -> estimator, judged on truth."""

import time

from geometry_msgs.msg import PoseStamped, Vector3Stamped
from nav_msgs.msg import Odometry
import numpy as np
from pylon_testing.wait import spin_until
from pylon_vehicle_control import evaluation
import pytest
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sim_stack import start, subscriptions_of

pytestmark = pytest.mark.integration

RELIABLE = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


def seconds(stamp):
    return stamp.sec + stamp.nanosec * 1e-9


def test_estimator_tracks_the_true_attitude_and_reads_no_ground_truth(
        ros_process, free_udp_port, ros_node):
    start(ros_process, free_udp_port)
    ros_process(['attitude_estimator'], name='estimator')
    got = {'odom': [], 'pose': [], 'frame': []}
    subs = [
        ros_node.create_subscription(Odometry, '/pylon_estimator/odometry', got['odom'].append,
                                     RELIABLE),
        ros_node.create_subscription(PoseStamped, '/ksp_vessel/ground_truth/pose',
                                     got['pose'].append, qos_profile_sensor_data),
        ros_node.create_subscription(Vector3Stamped,
                                     '/ksp_vessel/ground_truth/frame_angular_velocity',
                                     got['frame'].append, RELIABLE)]
    spin_until(ros_node, lambda: len(got['odom']) > 30, 30.0, what='odometry from the estimator')
    first = got['odom'][0]
    assert first.header.frame_id == 'pylon_estimate_inertial'
    assert first.child_frame_id == 'pylon_estimate_base_link'
    # the running graph: the estimator subscribes to no ground-truth topic
    node_name, wanted = 'attitude_estimator', '/ksp_vessel/imu/data_raw'
    spin_until(ros_node, lambda: wanted in subscriptions_of(ros_node, node_name), 10.0,
               what=f'{node_name} in the graph')
    names = subscriptions_of(ros_node, 'attitude_estimator')
    assert '/ksp_vessel/imu/data_raw' in names
    assert not any('ground_truth' in n for n in names), names
    start_count = len(got['odom'])
    deadline = time.monotonic() + 12.0
    spin_until(ros_node, lambda: time.monotonic() > deadline, 20.0, what='12 s of data')
    odom = got['odom'][start_count:]
    assert len(odom) > 12 * 20             # at the IMU's 30 Hz
    est_t = [seconds(m.header.stamp) for m in odom]
    est_q = [[m.pose.pose.orientation.x, m.pose.pose.orientation.y,
              m.pose.pose.orientation.z, m.pose.pose.orientation.w] for m in odom]
    pose = sorted(got['pose'], key=lambda m: seconds(m.header.stamp))
    truth_t = [seconds(m.header.stamp) for m in pose]
    truth_q = [[m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z,
                m.pose.orientation.w] for m in pose]
    frame_t = [seconds(m.header.stamp) for m in got['frame']]
    frame_w = [[m.vector.x, m.vector.y, m.vector.z] for m in got['frame']]
    result = evaluation.evaluate_attitude(est_t, est_q, truth_t, truth_q, frame_t, frame_w,
                                          tolerance=0.005, n_align=100)
    assert len(result.times) > 200
    rms = np.sqrt(np.mean(result.body_error_arcsec ** 2, axis=0))
    assert np.all(rms < 30.0), rms
    for sub in subs:
        ros_node.destroy_subscription(sub)
