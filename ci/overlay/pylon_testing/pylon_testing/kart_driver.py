"""A team's stack at its smallest, for the tests: ask for AUTONOMOUS, then accelerate.

``kart_driver [ACCELERATION]`` speaks only the competition's interface in its domain: it
publishes ``/awsim/control_mode_request_topic`` ``true`` until ``/vehicle/status/control_mode``
reports AUTONOMOUS, then ``control_cmd`` with ``ACCELERATION`` (m/s², default 1.0) and a
straight wheel every ``COMMAND_PERIOD_SEC``. It logs one line a second of what it sees:
``imu N mode M speed V`` (IMU messages so far on ``/sensing/imu/imu_raw``, the control
mode, the ``velocity_status`` speed), so that a test started it on another host (a network
namespace) can wait for its lines. Ends on SIGINT or SIGTERM.
"""

from __future__ import annotations

import sys

from pylon_common import node_main, topics

COMMAND_PERIOD_SEC = 0.05
REPORT_EVERY = 20


def make_node(acceleration: float):
    """Create the driver's node: the mode request, the command, what it reads, a timer."""
    from autoware_auto_control_msgs.msg import AckermannControlCommand
    from autoware_auto_vehicle_msgs.msg import ControlModeReport, VelocityReport
    import rclpy
    from sensor_msgs.msg import Imu
    from std_msgs.msg import Bool

    node = rclpy.create_node('kart_driver')
    seen = {'imu': 0, 'mode': ControlModeReport.NO_COMMAND, 'speed': 0.0, 'ticks': 0}

    def publisher(msg_type, key):
        return node.create_publisher(msg_type, topics.name(key), topics.qos(key))

    def subscription(msg_type, key, callback):
        node.create_subscription(msg_type, topics.name(key), callback,
                                 topics.qos(key, reader=True))

    request = publisher(Bool, 'kart/control_mode_request_topic')
    command = publisher(AckermannControlCommand, 'kart/control_cmd')
    node.create_subscription(Imu, topics.name('stack/imu'),
                             lambda m: seen.update(imu=seen['imu'] + 1),
                             topics.qos('stack/imu', reader=True))
    subscription(ControlModeReport, 'kart/control_mode', lambda m: seen.update(mode=m.mode))
    subscription(VelocityReport, 'kart/velocity_status',
                 lambda m: seen.update(speed=m.longitudinal_velocity))

    def on_timer() -> None:
        seen['ticks'] += 1
        if seen['mode'] != ControlModeReport.AUTONOMOUS:
            request.publish(Bool(data=True))
        else:
            msg = AckermannControlCommand()
            msg.stamp = node.get_clock().now().to_msg()
            msg.longitudinal.acceleration = acceleration
            command.publish(msg)
        if seen['ticks'] % REPORT_EVERY == 0:
            node.get_logger().info(
                f"imu {seen['imu']} mode {seen['mode']} speed {seen['speed']:.3f}")

    node.create_timer(COMMAND_PERIOD_SEC, on_timer)
    return node


def main() -> int:
    """Entry point: ``kart_driver [ACCELERATION]``."""
    words = [a for a in sys.argv[1:] if not a.startswith('-')][:1]
    acceleration = float(words[0]) if words else 1.0
    return node_main.run(lambda: make_node(acceleration))


if __name__ == '__main__':
    sys.exit(main())
