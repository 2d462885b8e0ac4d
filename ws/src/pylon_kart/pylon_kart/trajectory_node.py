"""``trajectory_publisher``: the reference trajectory on the competition's topic.

Reads a trajectory CSV (``trajectory.read_csv``; default: the one shipped for the ``kart``
track) once, and publishes it as ``autoware_auto_planning_msgs/Trajectory`` (frame
``map``) on ``/planning/scenario_planning/trajectory`` at once and every ``period_sec`` of
ROS time (``use_sim_time`` works). The publisher is latched (``topics.STACK_TOPICS``): a
late joiner that asks for Transient Local gets it at once, and the competition's Best
Effort readers match it too; the republishing reaches Volatile readers that start later.
A file that cannot be used stops the node at start (exit status 2, the reason printed).

For viewers (RViz and Foxglove cannot draw the Autoware type) it publishes with it, on the
same latched QoS: the trajectory's poses as ``nav_msgs/Path`` on
``/planning/scenario_planning/trajectory/path``, and the course of ``track`` (its edges,
centreline and start line, ``course.course_lines``) as ``visualization_msgs/MarkerArray``
line strips in ``map`` on ``/planning/course_markers`` (``track:=''``: no course).
"""

from __future__ import annotations

import math

from autoware_auto_planning_msgs.msg import Trajectory as TrajectoryMsg
from autoware_auto_planning_msgs.msg import TrajectoryPoint
from geometry_msgs.msg import Point, PoseStamped
from nav_msgs.msg import Path
import numpy as np
from pylon_common import node_main, topics
from pylon_common.parameters import declare, Parameter
from pylon_track import load_track
from rclpy.node import Node
from visualization_msgs.msg import Marker, MarkerArray

from pylon_kart import trajectory
from pylon_kart.course import course_lines
from pylon_kart.kart_limits import MAP

PARAMETERS: tuple[Parameter, ...] = (
    Parameter('trajectory_csv', '',
              "path of the competition's trajectory CSV (map frame); '' = the one shipped "
              'for the kart track'),
    Parameter('period_sec', 1.0, 's (ROS time) between two publications', 0.05, 60.0),
    Parameter('track', 'kart',
              "the course drawn on /planning/course_markers (pylon_track name or YAML path); "
              "'' = none"),
)

COURSE_STYLE = {                      # line width (m), colour (r, g, b, a)
    'left_edge': (0.15, (1.0, 1.0, 1.0, 1.0)),
    'right_edge': (0.15, (1.0, 1.0, 1.0, 1.0)),
    'centreline': (0.05, (1.0, 0.85, 0.0, 0.8)),
    'start_line': (0.3, (1.0, 0.1, 0.1, 1.0)),
}
"""How each line of the course is drawn."""


def yaw_of(q) -> float:
    """Return the ENU yaw (rad) of a ``geometry_msgs/Quaternion``."""
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


def trajectory_message(traj: trajectory.Trajectory) -> TrajectoryMsg:
    """Return the message of a trajectory (poses in map, speeds m/s; no header stamp)."""
    msg = TrajectoryMsg()
    msg.header.frame_id = MAP
    for x, y, z, yaw, v in zip(traj.x, traj.y, traj.z, traj.yaw, traj.speed):
        point = TrajectoryPoint(longitudinal_velocity_mps=float(v))
        point.pose.position.x, point.pose.position.y = float(x), float(y)
        point.pose.position.z = float(z)
        point.pose.orientation.z = math.sin(0.5 * yaw)
        point.pose.orientation.w = math.cos(0.5 * yaw)
        msg.points.append(point)
    return msg


def trajectory_from_message(msg: TrajectoryMsg) -> trajectory.Trajectory:
    """Return the trajectory of a message; ``TrajectoryError`` if < 3 points or not finite."""
    rows = [(p.pose.position.x, p.pose.position.y, p.pose.position.z,
             yaw_of(p.pose.orientation), p.longitudinal_velocity_mps) for p in msg.points]
    a = np.array(rows, dtype=float).reshape(-1, 5)
    if len(a) < 3 or not np.all(np.isfinite(a)):
        raise trajectory.TrajectoryError(f'a trajectory of {len(a)} points, needs 3 or more '
                                         'with finite numbers')
    return trajectory.Trajectory(a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4])


def path_message(msg: TrajectoryMsg) -> Path:
    """Return the poses of a trajectory message as a ``nav_msgs/Path`` (same frame and stamp)."""
    path = Path(header=msg.header)
    path.poses = [PoseStamped(header=msg.header, pose=point.pose) for point in msg.points]
    return path


def course_message(lines: dict[str, np.ndarray]) -> MarkerArray:
    """Return the course's lines (m, map) as line strips in ``map``, one marker each.

    Namespace ``course``, ids in ``COURSE_STYLE``'s order; no stamp (a viewer draws a
    zero stamp with the newest transform).
    """
    out = MarkerArray()
    for index, (name, (width, rgba)) in enumerate(COURSE_STYLE.items()):
        marker = Marker(ns='course', id=index, type=Marker.LINE_STRIP, action=Marker.ADD)
        marker.header.frame_id = MAP
        marker.pose.orientation.w = 1.0
        marker.scale.x = width
        marker.color.r, marker.color.g, marker.color.b, marker.color.a = rgba
        marker.points = [Point(x=float(x), y=float(y)) for x, y in lines[name]]
        out.markers.append(marker)
    return out


class TrajectoryPublisherNode(Node):
    """trajectory_publisher's ROS plumbing."""

    def __init__(self) -> None:
        """Read the CSV (ValueError naming the file and line if unusable); start publishing."""
        super().__init__(topics.TRAJECTORY_PUBLISHER)
        p = declare(self, PARAMETERS)
        path = p['trajectory_csv'] or trajectory.shipped_path('kart')
        self.msg = trajectory_message(trajectory.read_csv(path))
        key = 'stack/trajectory'
        self.pub = self.create_publisher(TrajectoryMsg, topics.name(key), topics.qos(key))
        self.path_pub = self.create_publisher(Path, topics.name('stack/trajectory_path'),
                                              topics.qos('stack/trajectory_path'))
        self.course = (course_message(course_lines(load_track(p['track'])))
                       if p['track'] else None)
        self.course_pub = self.create_publisher(MarkerArray, topics.name('stack/course_markers'),
                                                topics.qos('stack/course_markers'))
        self.get_logger().info(f'{len(self.msg.points)} points from {path}'
                               + (f'; the course of {p["track"]}' if self.course else ''))
        self.publish()
        self.timer = self.create_timer(p['period_sec'], self.publish)

    def publish(self) -> None:
        """Publish the trajectory stamped now, its path and the course."""
        self.msg.header.stamp = self.get_clock().now().to_msg()
        self.pub.publish(self.msg)
        self.path_pub.publish(path_message(self.msg))
        if self.course is not None:
            self.course_pub.publish(self.course)


def main() -> int:
    """Entry point of ``trajectory_publisher``."""
    return node_main.run(TrajectoryPublisherNode)
