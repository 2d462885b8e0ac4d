"""attitude_estimator in the loop: pylon_sim -> udp_bridge -> estimator, judged on truth.

No controller is in the loop, so the game runs at four times real time (``RATE``): every
time the test judges is a message stamp (KSP time). No LiDAR or camera: it reads neither.
"""

from geometry_msgs.msg import PoseStamped, Vector3Stamped
from nav_msgs.msg import Odometry
import numpy as np
from pylon_testing.pilot import STREAM
from pylon_testing.recorder import stamp_of, TopicRecorder
from pylon_testing.wait import subscriptions_of
from pylon_vehicle_control import evaluation
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy

pytestmark = pytest.mark.integration

# read deep: at 4x real time 100 samples are under a second of a stalled test process
RELIABLE = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
RATE = 4


def test_estimator_tracks_the_true_attitude_and_reads_no_ground_truth(
        sim_stack, ros_process, ros_node, lean_scenario):
    sim_stack(lean_scenario(), sim_args=['--rate', str(RATE)])
    ros_process(['attitude_estimator'], name='estimator')
    rec = TopicRecorder(ros_node)
    rec.add('odom', '/pylon_estimator/odometry', Odometry, RELIABLE)
    rec.add('pose', '/ksp_vessel/ground_truth/pose', PoseStamped, STREAM)
    rec.add('frame', '/ksp_vessel/ground_truth/frame_angular_velocity', Vector3Stamped,
            RELIABLE)
    first = rec.wait_count('odom', 31)[0]
    assert first.header.frame_id == 'pylon_estimate_inertial'
    assert first.child_frame_id == 'pylon_estimate_base_link'
    # the running graph: the estimator subscribes to no ground-truth topic
    node_name, wanted = 'attitude_estimator', '/ksp_vessel/imu/data_raw'
    rec.until(lambda: wanted in subscriptions_of(ros_node, node_name),
              f'{node_name} in the graph')
    names = subscriptions_of(ros_node, 'attitude_estimator')
    assert '/ksp_vessel/imu/data_raw' in names
    assert not any('ground_truth' in n for n in names), names
    # 12 s of KSP time, and as long as it takes a busy test process to hold over 200
    # estimates with a truth pose within 5 ms (the Best Effort poses may be lost on the way)
    since = rec.mark()
    odom = rec.wait_stamp_span('odom', 12.0, since)
    assert len(odom) > 12 * 20             # at the IMU's 30 Hz

    def paired() -> int:
        truth = sorted(stamp_of(m) for m in rec.got['pose'])
        return len(evaluation.synchronise([stamp_of(m) for m in rec.messages('odom', since)],
                                          truth, 0.005))
    rec.until(lambda: paired() > 200, 'over 200 estimates paired with a truth pose')
    odom = rec.messages('odom', since)
    est_t = [stamp_of(m) for m in odom]
    est_q = [[m.pose.pose.orientation.x, m.pose.pose.orientation.y,
              m.pose.pose.orientation.z, m.pose.pose.orientation.w] for m in odom]
    pose = sorted(rec.got['pose'], key=stamp_of)
    truth_t = [stamp_of(m) for m in pose]
    truth_q = [[m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z,
                m.pose.orientation.w] for m in pose]
    frame_t = [stamp_of(m) for m in rec.got['frame']]
    frame_w = [[m.vector.x, m.vector.y, m.vector.z] for m in rec.got['frame']]
    result = evaluation.evaluate_attitude(est_t, est_q, truth_t, truth_q, frame_t, frame_w,
                                          tolerance=0.005, n_align=100)
    assert len(result.times) > 200
    rms = np.sqrt(np.mean(result.body_error_arcsec ** 2, axis=0))
    assert np.all(rms < 30.0), rms
    rec.close()
