"""``kart_localizer``: the kart's pose and speed in ``map`` from its own sensors, as a node.

The logic is ``localizer.Localizer`` (an EKF; its docstring gives the model and the noise).
This node feeds it, each input at the time it is received on this node's clock (ROS time;
``use_sim_time`` works); on game time (``use_sim_time``) the stamps of the fixes and the
gyro's readings are on that clock too, and the filter allows for their age (a fix carried
forward over it, ``Localizer.on_fix``; the heading turned at the previous rate meanwhile
corrected, ``Localizer.on_yaw_rate``): a busy machine delivers them late, by 4x more game
time than wall time in a game at 4x real time; the largest |age| seen is
``input_age_max_ms`` in the diagnostics:

- ``/sensing/gnss/nav_sat_fix`` (``sensor_msgs/NavSatFix``): latitude, longitude, altitude
  to ``map`` with the track's ``Track.map_from_geodetic``; the fix's covariance
  (``position_covariance``, ENU m²; ``gnss_sigma`` when its type is UNKNOWN); a status < 0
  is refused;
- ``/sensing/imu/imu_raw`` (``sensor_msgs/Imu``, ``imu_link`` aligned with base_link):
  ``angular_velocity.z``, the yaw rate;
- ``/vehicle/status/velocity_status`` (``VelocityReport``): ``longitudinal_velocity``.

All three are read Best Effort (``qos.SENSOR_READER``). The filter starts at the track's
grid slot ``grid_slot``, and starts there again on the competition's ``/set_initial_pose``
(``std_srvs/Trigger``, what its orchestrator calls before it asks for AUTONOMOUS): the
grid slot's pose, at rest, with the initial uncertainty; ``success`` true, the pose in
``message``. Every ``publish_period_sec`` of ROS time it
publishes ``/localization/kinematic_state`` (``nav_msgs/Odometry``: frame ``map``, child
``base_link``, pose in map, twist in base_link, covariances from the filter) and, with
``publish_tf``, ``map -> base_link`` on ``/tf``. Refused inputs are logged and counted
(diagnostics on ``/diagnostics``). It never reads ground truth.
"""

from __future__ import annotations

import math

from autoware_auto_vehicle_msgs.msg import VelocityReport
from geometry_msgs.msg import TransformStamped
from nav_msgs.msg import Odometry
from pylon_common import diagnostics, node_main, qos, topics
from pylon_common.parameters import declare, Parameter
from pylon_common.stamps import to_seconds
from pylon_protocol import frames
from pylon_track import load_track
from rclpy.node import Node
from sensor_msgs.msg import Imu, NavSatFix
from std_srvs.srv import Trigger
from tf2_msgs.msg import TFMessage

from pylon_kart import localizer
from pylon_kart.kart_limits import MAP

N = localizer.Noise()
PARAMETERS: tuple[Parameter, ...] = (
    Parameter('track', 'kart', "the track (pylon_track name or YAML path): map's origin, "
              'the grid'),
    Parameter('grid_slot', 0, 'the starting grid slot: the initial pose', 0, 63),
    Parameter('publish_period_sec', 0.02, 's (ROS time) between two kinematic states',
              0.005, 1.0),
    Parameter('publish_tf', True, 'also publish map -> base_link on /tf'),
    Parameter('gnss_sigma', N.gnss_sigma, 'm, a fix whose covariance type is UNKNOWN',
              0.01, 100.0),
    Parameter('gnss_gate', N.gnss_gate,
              'squared Mahalanobis distance beyond which a fix is an outlier (chi^2, 2 dof)',
              1.0, 1000.0),
    Parameter('speed_sigma', N.speed_sigma, "m/s, the velocity report's noise", 0.001, 10.0),
    Parameter('gyro_noise', N.gyro_noise, "rad/sqrt(s), the heading's process noise",
              0.0001, 1.0),
    Parameter('acceleration_noise', N.acceleration_noise,
              "m/s/sqrt(s), the speed's process noise", 0.01, 50.0),
    Parameter('position_walk', N.position_walk, "m/sqrt(s), the position's process noise",
              0.0, 10.0),
)


class LocalizerNode(Node):
    """kart_localizer's ROS plumbing."""

    def __init__(self) -> None:
        """Load the track (ValueError if unusable); start at the grid slot; wire the topics."""
        super().__init__(topics.KART_LOCALIZER)
        p = declare(self, PARAMETERS)
        self.track = load_track(p['track'])
        try:
            x, y, yaw = self.track.grid_pose(p['grid_slot'])
        except IndexError as exc:
            raise ValueError(f'grid_slot: {exc}') from None
        self.noise = localizer.Noise(
            position_walk=p['position_walk'], gyro_noise=p['gyro_noise'],
            acceleration_noise=p['acceleration_noise'], speed_sigma=p['speed_sigma'],
            gnss_sigma=p['gnss_sigma'], gnss_gate=p['gnss_gate'])
        self.start_pose = (x, y, yaw)
        self.filter = localizer.Localizer(localizer.initial(x, y, yaw, self.noise),
                                          noise=self.noise)
        self.initial_pose_srv = self.create_service(
            Trigger, topics.name('stack/set_initial_pose'), self._on_set_initial_pose)
        self.received = {'gnss': 0, 'imu': 0, 'velocity': 0}
        self.game_time = bool(self.get_parameter('use_sim_time').value)
        self.age_max = 0.0                  # s, the largest |age| of a fix or gyro reading
        self.published = 0
        self.initial_poses_set = 0
        reader = qos.qos_profile(qos.SENSOR_READER)
        self.subs = [
            self.create_subscription(NavSatFix, topics.name('stack/gnss'), self._on_fix,
                                     reader),
            self.create_subscription(Imu, topics.name('stack/imu'), self._on_imu, reader),
            self.create_subscription(VelocityReport, topics.name('kart/velocity_status'),
                                     self._on_velocity, reader)]
        self.odom_pub = self.create_publisher(Odometry, topics.name('stack/kinematic_state'),
                                              topics.qos('stack/kinematic_state'))
        self.tf_pub = self.create_publisher(TFMessage, topics.name('tf'), topics.qos('tf')) \
            if p['publish_tf'] else None
        self.diagnostics = diagnostics.NodeDiagnostics(self, p['track'], self._report)
        self.timer = self.create_timer(p['publish_period_sec'], self._publish)
        self.get_logger().info(f'start: grid slot {p["grid_slot"]} of {self.track.name} '
                               f'({x:.2f}, {y:.2f}) m, {math.degrees(yaw):.1f} deg')

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _refused(self, what: str, reason: str) -> None:
        if reason:
            self.get_logger().warning(f'{what} refused: {reason}', throttle_duration_sec=2.0)

    def _on_set_initial_pose(self, request: Trigger.Request,
                             response: Trigger.Response) -> Trigger.Response:
        x, y, yaw = self.start_pose
        self.filter.restart(self._now(), localizer.initial(x, y, yaw, self.noise))
        self.initial_poses_set += 1
        response.success = True
        response.message = f'initial pose: ({x:.2f}, {y:.2f}) m, {math.degrees(yaw):.1f} deg'
        self.get_logger().info(response.message)
        return response

    def _on_fix(self, msg: NavSatFix) -> None:
        self.received['gnss'] += 1
        x, y, _ = self.track.map_from_geodetic(msg.latitude, msg.longitude, msg.altitude)
        cov = msg.position_covariance if msg.position_covariance_type != \
            NavSatFix.COVARIANCE_TYPE_UNKNOWN else [0.0] * 9
        now = self._now()
        age = self._age(now, msg.header.stamp)
        self._refused('GNSS fix', self.filter.on_fix(
            now, (x, y), localizer.fix_covariance(cov, self.noise), msg.status.status, age))

    def _on_imu(self, msg: Imu) -> None:
        self.received['imu'] += 1
        now = self._now()
        self._refused('IMU', self.filter.on_yaw_rate(now, msg.angular_velocity.z,
                                                     self._age(now, msg.header.stamp)))

    def _age(self, now: float, stamp) -> float:
        """Return how long before ``now`` a measurement stamped ``stamp`` was taken.

        On game time the stamps are on this node's clock: the age is the delivery's delay
        (0 off game time, or without a stamp); the largest |age| is in the diagnostics.
        """
        t = to_seconds(stamp)
        age = now - t if self.game_time and t > 0.0 else 0.0
        self.age_max = max(self.age_max, abs(age))
        return age

    def _on_velocity(self, msg: VelocityReport) -> None:
        self.received['velocity'] += 1
        self._refused('velocity', self.filter.on_speed(self._now(),
                                                       msg.longitudinal_velocity))

    def _publish(self) -> None:
        self.filter.advance(self._now())
        b = self.filter.belief
        x, y, yaw, v, bias = (float(c) for c in b.mean)
        odom = Odometry(child_frame_id=frames.BASE_LINK)
        odom.header.stamp, odom.header.frame_id = self.get_clock().now().to_msg(), MAP
        pose = odom.pose.pose
        pose.position.x, pose.position.y = x, y
        pose.orientation.z, pose.orientation.w = math.sin(0.5 * yaw), math.cos(0.5 * yaw)
        odom.twist.twist.linear.x = v
        odom.twist.twist.angular.z = self.filter.yaw_rate - bias
        odom.pose.covariance, odom.twist.covariance = localizer.odometry_covariances(
            b, self.noise)
        self.odom_pub.publish(odom)
        self.published += 1
        if self.tf_pub is not None:
            tf = TransformStamped(header=odom.header, child_frame_id=odom.child_frame_id)
            tf.transform.translation.x, tf.transform.translation.y = x, y
            tf.transform.rotation = pose.orientation
            self.tf_pub.publish(TFMessage(transforms=[tf]))

    def _report(self) -> diagnostics.Report:
        b = self.filter.belief
        values = {**{f'received_{k}': n for k, n in self.received.items()},
                  **{f'refused_{k}': n for k, n in sorted(self.filter.counts.items())},
                  'published': self.published, 'initial_poses_set': self.initial_poses_set,
                  'input_age_max_ms': round(1e3 * self.age_max, 1),
                  'position_sigma_m': round(math.sqrt(max(b.cov[0, 0], b.cov[1, 1])), 3),
                  'yaw_sigma_deg': round(math.degrees(math.sqrt(b.cov[2, 2])), 2),
                  'yaw_rate_bias': round(float(b.mean[4]), 4)}
        if not self.received['gnss']:
            return diagnostics.Report(diagnostics.WARN, 'no GNSS fix yet: dead reckoning '
                                      'from the grid slot', values)
        return diagnostics.Report(diagnostics.OK, 'localizing', values)


def main() -> int:
    """Entry point of ``kart_localizer``."""
    return node_main.run(LocalizerNode)
