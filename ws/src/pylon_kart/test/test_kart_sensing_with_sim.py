"""The kart's sensors at the competition's names: pylon_sim -> udp_bridge remapped, no relay.

One simulator + bridge for the module: the ``kart`` scenario with its LiDAR (1080 rays,
30 m, 40 Hz), GNSS antenna and AHRS, the camera at 1 Hz (the simulator stays cheap); the
bridge started with ``pylon_kart.sensing.bridge_arguments()`` (ROS remaps of its own
topics and ``imu_frame_id:=imu_link``). The test node reads what a team's stack reads.
"""

import math

from pylon_common import topics
from pylon_kart import sensing
from pylon_testing.recorder import stamp_of, TopicRecorder
from pylon_testing.scenarios import write_scenario
import pytest
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image, Imu, LaserScan, NavSatFix, NavSatStatus
from tf2_msgs.msg import TFMessage
import yaml

pytestmark = pytest.mark.integration

TYPES = {'imu': Imu, 'gnss': NavSatFix, 'lidar_2d': LaserScan, 'camera': Image,
         'camera_info': CameraInfo}


@pytest.fixture(scope='module')
def stack(module_sim_stack, tmp_path_factory):
    """Return the module's simulator and bridge: the kart (camera at 1 Hz), remapped bridge."""
    directory = tmp_path_factory.mktemp('scenario')
    shipped = yaml.safe_load(open(write_scenario(directory, 'kart', lean=False)))
    parts = shipped['vessels'][0]['parts']
    for part in parts:
        for module in part.get('modules', []):
            if module['kind'] == 'camera':
                module['rate_hz'] = 1
    scenario = write_scenario(directory, 'kart', lean=False, changes={'kart': {'parts': parts}})
    return module_sim_stack(scenario, bridge_args=sensing.bridge_arguments())


@pytest.fixture
def ros_node(shared_ros_node):
    """Return the module's test node (``shared_ros_node``), in the shared stack's domain."""
    return shared_ros_node


def recorder(node) -> TopicRecorder:
    """Record every remapped topic (competition names) and every bridge name it replaces."""
    rec = TopicRecorder(node)
    for row in sensing.REMAPS:
        rec.add(row.key, row.competition, TYPES[row.key], qos_profile_sensor_data)
        rec.add(f'old/{row.key}', row.bridge_name(), TYPES[row.key], qos_profile_sensor_data)
    rec.add('tf_static', topics.name('tf_static'), TFMessage,
            topics.qos('tf_static', reader=True))
    return rec


def test_every_sensor_arrives_at_the_competitions_name_and_frame(session, ros_node):
    rec = recorder(ros_node)
    scans = rec.wait_count('lidar_2d', 20)
    for scan in scans:
        assert len(scan.ranges) == 1080 and scan.range_max == 30.0
        finite = [r for r in scan.ranges if math.isfinite(r)]
        assert finite and all(scan.range_min <= r <= 30.0 for r in finite)
    assert scan.angle_max - scan.angle_min == pytest.approx(math.radians(270), abs=0.01)
    fix = rec.wait_count('gnss', 3)[-1]
    assert fix.header.frame_id == sensing.GNSS_FRAME == 'gnss_link'
    assert fix.status.status == NavSatStatus.STATUS_FIX
    imu = rec.wait_count('imu', 10)[-1]
    assert imu.header.frame_id == sensing.IMU_FRAME == 'imu_link'
    q = imu.orientation
    assert math.hypot(q.x, q.y, q.z, q.w) == pytest.approx(1.0, abs=1e-6)
    assert imu.orientation_covariance[0] > 0.0            # an AHRS's, not "no orientation"
    # on the grid facing east, level: base_link's orientation in ENU is about the identity
    assert abs(q.w) > 0.99
    image, info = rec.wait_count('camera', 1)[-1], rec.wait_count('camera_info', 1)[-1]
    assert (image.width, image.height, info.width, info.height) == (320, 240, 320, 240)
    assert info.k[0] > 0.0 and info.k[8] == 1.0 and len(info.d) == 5
    static = rec.wait_for('tf_static', lambda m: {'imu_link', 'gnss_link'} <= {
        t.child_frame_id for t in m.transforms}, what='imu_link and gnss_link on /tf_static')
    imu_tf, = [t for t in static.transforms if t.child_frame_id == 'imu_link']
    assert imu_tf.header.frame_id == 'base_link' and imu_tf.transform.rotation.w == 1.0
    gnss_tf, = [t for t in static.transforms if t.child_frame_id == 'gnss_link']
    assert gnss_tf.header.frame_id == 'pylon_4b415254_link_0007'   # the antenna part's link
    # no relay: one publisher (the bridge) on each competition name, none on the old ones,
    # and the old names carried nothing
    for row in sensing.REMAPS:
        assert ros_node.count_publishers(row.competition) == 1, row.competition
        assert ros_node.count_publishers(row.bridge_name()) == 0, row.bridge_name()
        assert rec.messages(f'old/{row.key}') == [], row.bridge_name()


def test_a_scan_leaves_the_bridge_once_on_the_remapped_name(session, ros_node):
    # remapping renames the bridge's own publisher: the one publisher of the scan is the
    # bridge node (no relay, no second hop), and it keeps the LiDAR's 40 Hz of game time
    publishers = ros_node.get_publishers_info_by_topic('/sensing/lidar/scan')
    assert [(p.node_namespace, p.node_name) for p in publishers] == [('/', 'udp_bridge')]
    rec = TopicRecorder(ros_node).add('scan', '/sensing/lidar/scan', LaserScan,
                                      qos_profile_sensor_data)
    scans = rec.wait_count('scan', 81)
    stamps = [stamp_of(m) for m in scans]
    assert (stamps[-1] - stamps[0]) / 80 == pytest.approx(0.025, rel=0.02)
