"""``pure_pursuit``: the competition's reference controller for the kart, as a node.

The logic is ``pure_pursuit.control``. This node subscribes to the kinematic state
(``/localization/kinematic_state``, ``nav_msgs/Odometry``: pose in ``map``, twist in
``base_link``) and the trajectory (``/planning/scenario_planning/trajectory``), both Best
Effort (``qos.SENSOR_READER``: any publisher matches), and publishes
``/control/command/control_cmd`` every ``control_period_sec`` of ROS time (``use_sim_time``
works), Reliable (``qos.COMMAND``: it reaches the interface's Best Effort reader and
Reliable ones such as ``ros2 topic echo``, as the competition's does). It sends nothing
until it has a trajectory and a fresh state: a state received more than
``state_timeout_sec`` ago (on this node's clock) stops the commands, and the kart's
interface then brakes the kart to a stop by its own timeout. The first state after a step
that found the state stale gets its command at once, not at the next step: on game time the
next step may never come, when the game, lock-stepped on this node's commands through the
interface, stands still waiting for one. A trajectory or a state with a
non-finite number is refused, logged and counted (diagnostics), and the last good one
stays.
"""

from __future__ import annotations

import math

from autoware_auto_control_msgs.msg import AckermannControlCommand
from autoware_auto_planning_msgs.msg import Trajectory as TrajectoryMsg
from nav_msgs.msg import Odometry
from pylon_common import diagnostics, node_main, qos, topics
from pylon_common.parameters import declare, Parameter
from rclpy.node import Node

from pylon_kart import pure_pursuit, trajectory
from pylon_kart.trajectory_node import trajectory_from_message, yaw_of

D = pure_pursuit.PursuitParams()
PARAMETERS: tuple[Parameter, ...] = (
    Parameter('wheelbase', D.wheelbase, 'm, front axle to rear axle', 0.1, 10.0),
    Parameter('rear_offset', D.rear_offset,
              "m, base_link (the centre of mass) to the rear axle: the kart scenario's",
              -5.0, 5.0),
    Parameter('min_lookahead', D.min_lookahead, 'm, the shortest lookahead', 0.1, 50.0),
    Parameter('lookahead_gain', D.lookahead_gain, 's, lookahead per m/s of speed', 0.0, 10.0),
    Parameter('steering_gain', D.steering_gain,
              "times the pure-pursuit angle (the competition's simulation: 1.5; README)",
              0.1, 5.0),
    Parameter('max_steering_tire_angle', D.max_steering,
              "rad, the steering is clamped to it (the kart's interface refuses more)",
              0.01, 1.0),
    Parameter('speed_gain', D.speed_gain, '1/s, acceleration per m/s of speed error',
              0.0, 10.0),
    Parameter('max_acceleration', D.max_acceleration, 'm/s^2, |acceleration| cap', 0.1, 10.0),
    Parameter('control_period_sec', 0.01, 's (ROS time) between two commands', 0.001, 0.5),
    Parameter('state_timeout_sec', 0.2,
              's, no command when the newest kinematic state is older', 0.01, 5.0),
)


class PurePursuitNode(Node):
    """pure_pursuit's ROS plumbing."""

    def __init__(self) -> None:
        """Declare ``PARAMETERS``; subscribe; start the control timer (ROS time)."""
        super().__init__(topics.PURE_PURSUIT)
        p = declare(self, PARAMETERS)
        self.params = pure_pursuit.PursuitParams(
            p['wheelbase'], p['rear_offset'], p['min_lookahead'], p['lookahead_gain'],
            p['steering_gain'], p['max_steering_tire_angle'], p['speed_gain'],
            p['max_acceleration'])
        self.timeout = p['state_timeout_sec']
        self.traj: trajectory.Trajectory | None = None
        self.xy = None
        self.state: pure_pursuit.KartState | None = None
        self.state_time: float | None = None
        self.last: pure_pursuit.Command | None = None
        self.starved = False                     # the last step found the state stale
        self.counts = {'commands': 0, 'clamped': 0, 'stale': 0, 'refused_state': 0,
                       'refused_trajectory': 0}
        reader = qos.qos_profile(qos.SENSOR_READER)
        self.subs = [
            self.create_subscription(Odometry, topics.name('stack/kinematic_state'),
                                     self._on_state, reader),
            self.create_subscription(TrajectoryMsg, topics.name('stack/trajectory'),
                                     self._on_trajectory, reader)]
        self.pub = self.create_publisher(AckermannControlCommand,
                                         topics.name('kart/control_cmd'),
                                         qos.qos_profile(qos.COMMAND))
        self.diagnostics = diagnostics.NodeDiagnostics(self, 'kart', self._report)
        self.timer = self.create_timer(p['control_period_sec'], self._tick)

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _refuse(self, what: str, why: str) -> None:
        self.counts[f'refused_{what}'] += 1
        self.get_logger().warning(f'{what} refused: {why}', throttle_duration_sec=2.0)

    def _on_trajectory(self, msg: TrajectoryMsg) -> None:
        try:
            traj = trajectory_from_message(msg)
        except trajectory.TrajectoryError as exc:
            self._refuse('trajectory', str(exc))
            return
        if self.traj is None:
            self.get_logger().info(f'trajectory of {len(traj)} points')
        self.traj, self.xy = traj, traj.xy

    def _on_state(self, msg: Odometry) -> None:
        pose = msg.pose.pose
        state = pure_pursuit.KartState(pose.position.x, pose.position.y,
                                       yaw_of(pose.orientation), msg.twist.twist.linear.x)
        if not all(math.isfinite(v) for v in (state.x, state.y, state.yaw, state.speed)):
            self._refuse('state', 'a non-finite number')
            return
        self.state, self.state_time = state, self._now()
        if self.starved:                    # the last step had no fresh state: command now
            self._tick()

    def _tick(self) -> None:
        if self.traj is None or self.state is None:
            return
        self.starved = self._now() - self.state_time > self.timeout
        if self.starved:
            self.counts['stale'] += 1
            return
        cmd = self.last = pure_pursuit.control(self.traj, self.state, self.params, self.xy)
        msg = AckermannControlCommand()
        msg.stamp = self.get_clock().now().to_msg()
        msg.lateral.stamp = msg.longitudinal.stamp = msg.stamp
        msg.lateral.steering_tire_angle = float(cmd.steering)
        msg.longitudinal.acceleration = float(cmd.acceleration)
        msg.longitudinal.speed = float(cmd.target_speed)
        self.pub.publish(msg)
        self.counts['commands'] += 1
        self.counts['clamped'] += cmd.clamped

    def _report(self) -> diagnostics.Report:
        values = {**self.counts, 'trajectory_points': len(self.traj) if self.traj else 0}
        if self.last is not None:
            values.update(steering=round(self.last.steering, 4),
                          acceleration=round(self.last.acceleration, 3),
                          target_speed=round(self.last.target_speed, 2),
                          nearest=self.last.nearest)
        if self.traj is None or self.state is None:
            return diagnostics.Report(diagnostics.WARN, 'waiting for the trajectory and the '
                                      'kinematic state', values)
        if self._now() - self.state_time > self.timeout:
            return diagnostics.Report(diagnostics.WARN, 'kinematic state stale: no command',
                                      values)
        return diagnostics.Report(diagnostics.OK, 'driving', values)


def main() -> int:
    """Entry point of ``pure_pursuit``."""
    return node_main.run(PurePursuitNode)
