"""RViz's configuration against the running stack.

Every topic it shows is published with the type its display expects, and its Fixed Frame
``pylon_root`` is on ``/tf_static``.
"""

from pathlib import Path

from pylon_testing.recorder import DEFAULT_TIMEOUT_SEC
from pylon_testing.wait import spin_until
import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from tf2_msgs.msg import TFMessage
import yaml

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
TYPES = {'rviz_default_plugins/PointCloud2': 'sensor_msgs/msg/PointCloud2',
         'rviz_default_plugins/LaserScan': 'sensor_msgs/msg/LaserScan',
         'rviz_default_plugins/Image': 'sensor_msgs/msg/Image',
         'rviz_default_plugins/MarkerArray': 'visualization_msgs/msg/MarkerArray',
         'rviz_default_plugins/RobotModel': 'std_msgs/msg/String'}
TF_STATIC = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL)


def displays():
    config = yaml.safe_load((ROOT / 'rviz' / 'pylon.rviz').read_text())
    out = {}
    for display in config['Visualization Manager']['Displays']:
        for key in ('Topic', 'Description Topic'):
            if isinstance(display.get(key), dict):
                out[display[key]['Value']] = TYPES[display['Class']]
    return config['Visualization Manager']['Global Options']['Fixed Frame'], out


def test_every_rviz_topic_and_the_fixed_frame_exist(sim_stack, ros_process, ros_node):
    fixed_frame, wanted = displays()
    assert len(wanted) >= 5
    # the orbit sat has the 3D LiDAR and the camera, the surface rover the 2D LiDAR: a
    # second stack (bridge node renamed) flies the rover in the same graph
    sim_stack('orbit', bridge_args=('--ros-args', '-r', '__node:=bridge_orbit'))
    ros_process(['nearby_markers'], name='nearby_markers')
    statics = []
    sub = ros_node.create_subscription(TFMessage, '/tf_static', statics.append, TF_STATIC)
    orbit = {t: ty for t, ty in wanted.items() if 'lidar_2d' not in t}

    def published(topics):
        graph = dict(ros_node.get_topic_names_and_types())
        return all(ty in graph.get(t, []) and ros_node.count_publishers(t)
                   for t, ty in topics.items())
    spin_until(ros_node, lambda: published(orbit), DEFAULT_TIMEOUT_SEC,
               what=f'the orbit topics {orbit}')
    spin_until(ros_node, lambda: any(t.child_frame_id == fixed_frame
                                     for m in statics for t in m.transforms), DEFAULT_TIMEOUT_SEC,
               what=f'{fixed_frame} on /tf_static')
    surface = {t: ty for t, ty in wanted.items() if 'lidar_2d' in t}
    sim_stack('surface', bridge_args=('--ros-args', '-r', '__node:=bridge_surface'))
    spin_until(ros_node, lambda: published(surface), DEFAULT_TIMEOUT_SEC,
               what=f'the surface topics {surface}')
    ros_node.destroy_subscription(sub)
