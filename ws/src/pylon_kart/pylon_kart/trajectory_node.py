"""``trajectory_publisher``: the reference trajectory on the competition's topic.

Reads a trajectory CSV (``trajectory.read_csv``; default: the one shipped for the ``kart``
track) once, and publishes it as ``autoware_auto_planning_msgs/Trajectory`` (frame
``map``) on ``/planning/scenario_planning/trajectory`` at once and every ``period_sec`` of
ROS time (``use_sim_time`` works). The publisher is latched (``topics.STACK_TOPICS``): a
late joiner that asks for Transient Local gets it at once, and the competition's Best
Effort readers match it too; the republishing reaches Volatile readers that start later.
A file that cannot be used stops the node at start (exit status 2, the reason printed).
"""

from __future__ import annotations

import math

from autoware_auto_planning_msgs.msg import Trajectory as TrajectoryMsg
from autoware_auto_planning_msgs.msg import TrajectoryPoint
import numpy as np
from pylon_common import node_main, topics
from pylon_common.parameters import declare, Parameter
from rclpy.node import Node

from pylon_kart import trajectory
from pylon_kart.kart_limits import MAP

PARAMETERS: tuple[Parameter, ...] = (
    Parameter('trajectory_csv', '',
              "path of the competition's trajectory CSV (map frame); '' = the one shipped "
              'for the kart track'),
    Parameter('period_sec', 1.0, 's (ROS time) between two publications', 0.05, 60.0),
)


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
        self.get_logger().info(f'{len(self.msg.points)} points from {path}')
        self.publish()
        self.timer = self.create_timer(p['period_sec'], self.publish)

    def publish(self) -> None:
        """Publish the trajectory stamped now."""
        self.msg.header.stamp = self.get_clock().now().to_msg()
        self.pub.publish(self.msg)


def main() -> int:
    """Entry point of ``trajectory_publisher``."""
    return node_main.run(TrajectoryPublisherNode)
