"""``attitude_estimator``: the demo MEKF (``estimator.py``) as a ROS node.

Inputs (names from the topic contract under ``topic_prefix``): the IMU
(``sensor_msgs/Imu``, inertial body rate and specific force), the ``StarTrackerState`` of
the tracker ``star_tracker_id`` (only valid samples that are fresh by their stamp are
used) and the vessel lifecycle (a generation change resets the filter). It never reads
ground truth. Parameters: ``estimator_params.PARAMETERS``. Output: ``nav_msgs/Odometry``
on ``pylon_estimator/odometry`` on each IMU sample once the attitude is known:
``header.frame_id`` = ``odom_frame_id`` (``pylon_estimate_inertial``: kerbol_inertial axes,
origin where dead reckoning started), ``child_frame_id`` = ``base_frame_id``
(``pylon_estimate_base_link``); pose = dead-reckoned position and the attitude with its
covariance (body axes, rad²), twist = body rate and velocity in the child frame. With
``publish_tf`` the same pose goes on ``/tf`` between those two frames of its own, never as
a second parent of ``base_link`` and never linking ``kerbol_inertial`` to the ENU frame.
It keeps no clock of its own: every time it uses is a message stamp (game time), so it
works the same with ``use_sim_time`` on or off, at any simulator rate. Its status goes on
``/diagnostics`` every second (``pylon_common.diagnostics``; WARN until it has an estimate).
"""

from __future__ import annotations

from geometry_msgs.msg import TransformStamped
from nav_msgs.msg import Odometry
import numpy as np
from pylon_common import diagnostics, node_main, topics
from pylon_common.parameters import declare
from pylon_common.stamps import to_seconds
from pylon_interfaces.msg import StarTrackerState, VesselLifecycle
from pylon_protocol import rotations
from rclpy.node import Node
from sensor_msgs.msg import Imu
from tf2_msgs.msg import TFMessage

from pylon_vehicle_control import estimator, estimator_params


def odometry(out: estimator.EstimatorOutput, stamp, odom_frame: str,
             base_frame: str) -> Odometry:
    """Return the Odometry of an initialised estimate."""
    msg = Odometry()
    msg.header.stamp = stamp
    msg.header.frame_id = odom_frame
    msg.child_frame_id = base_frame
    q = out.quaternion
    msg.pose.pose.orientation.x, msg.pose.pose.orientation.y = float(q[0]), float(q[1])
    msg.pose.pose.orientation.z, msg.pose.pose.orientation.w = float(q[2]), float(q[3])
    cov = np.full((6, 6), 0.0)
    cov[3:, 3:] = out.attitude_covariance
    position = out.position if out.position is not None else np.zeros(3)
    velocity = out.velocity if out.velocity is not None else np.zeros(3)
    if out.position is None:
        cov[0, 0] = cov[1, 1] = cov[2, 2] = -1.0        # no position estimate yet
    msg.pose.covariance = [float(v) for v in cov.ravel()]
    p = msg.pose.pose.position
    p.x, p.y, p.z = (float(v) for v in position)
    body_velocity = rotations.rotate(rotations.conjugate(q), velocity)
    t = msg.twist.twist
    t.linear.x, t.linear.y, t.linear.z = (float(v) for v in body_velocity)
    t.angular.x, t.angular.y, t.angular.z = (float(v) for v in out.angular_velocity)
    return msg


class EstimatorNode(Node):
    """The estimator's ROS plumbing."""

    def __init__(self) -> None:
        """Declare the parameters of ``estimator_params.PARAMETERS``; wire the topics."""
        super().__init__(topics.ATTITUDE_ESTIMATOR)
        self.params = p = declare(self, estimator_params.PARAMETERS, estimator_params.RETIRED)
        self.filter = estimator.AttitudeEstimator(p)
        self.generation: int | None = None
        self.published = 0                  # odometry messages
        prefix = p['topic_prefix']
        self.diagnostics = diagnostics.NodeDiagnostics(self, prefix, self._report)
        self.odom_pub = self.create_publisher(Odometry, topics.name('odometry'),
                                              topics.qos('odometry'))
        self.tf_pub = self.create_publisher(TFMessage, topics.name('tf'), topics.qos('tf')) \
            if p['publish_tf'] else None
        tracker = topics.name('star_tracker/state', prefix, id=p['star_tracker_id'])
        self.subs = [
            self.create_subscription(Imu, topics.name('imu', prefix), self._on_imu,
                                     topics.qos('imu', reader=True)),
            self.create_subscription(StarTrackerState, tracker, self._on_tracker,
                                     topics.qos('star_tracker/state', reader=True)),
            self.create_subscription(VesselLifecycle, topics.name('lifecycle', prefix),
                                     self._on_lifecycle, topics.qos('lifecycle', reader=True))]

    def _report(self) -> diagnostics.Report:
        values = {'odometry_published': self.published, 'generation': self.generation,
                  'star_tracker_id': self.params['star_tracker_id']}
        if self.published:
            return diagnostics.Report(diagnostics.OK, 'estimating', values)
        return diagnostics.Report(diagnostics.WARN, 'no estimate yet: waiting for the IMU and '
                                  'a valid star tracker sample', values)

    def _on_lifecycle(self, msg: VesselLifecycle) -> None:
        if self.generation is not None and msg.generation != self.generation:
            self.filter.reset()
            self.get_logger().info(f'generation {self.generation} -> {msg.generation}: reset')
        self.generation = msg.generation

    def _on_tracker(self, msg: StarTrackerState) -> None:
        q = msg.orientation
        result = self.filter.add_star_tracker(
            to_seconds(msg.header.stamp), (q.x, q.y, q.z, q.w), list(msg.orientation_covariance),
            msg.valid, msg.reason)
        if result.status in ('gated', 'reinitialized'):
            self.get_logger().warning(f'star tracker sample {result.status}',
                                      throttle_duration_sec=5.0)

    def _on_imu(self, msg: Imu) -> None:
        w, a = msg.angular_velocity, msg.linear_acceleration
        if not self.filter.add_imu(to_seconds(msg.header.stamp), (w.x, w.y, w.z),
                                   (a.x, a.y, a.z)):
            return
        out = self.filter.output()
        if not out.initialized:
            return
        odom = odometry(out, msg.header.stamp, self.params['odom_frame_id'],
                        self.params['base_frame_id'])
        self.odom_pub.publish(odom)
        self.published += 1
        if self.tf_pub is not None:
            tf = TransformStamped(header=odom.header, child_frame_id=odom.child_frame_id)
            p = odom.pose.pose.position
            tf.transform.translation.x, tf.transform.translation.y = p.x, p.y
            tf.transform.translation.z = p.z
            tf.transform.rotation = odom.pose.pose.orientation
            self.tf_pub.publish(TFMessage(transforms=[tf]))


def main() -> int:
    """Entry point of ``attitude_estimator``."""
    return node_main.run(EstimatorNode)
