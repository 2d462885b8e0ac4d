"""A test's lease client that drives a kart by its wheels: a held spin and steering angle.

``wheel_driver VESSEL_ID SPIN STEERING`` speaks the bridge's protocol in its domain (no
vehicle interface): it takes the vessel's lease (``controller_id`` ``wheel_driver``, a
lease id of its own: the mod's sequence counters outlive a reset, so a second driver
counting from 1 under an earlier one's identity would be stale), renewed every
``RENEW_PERIOD_SEC``, and every ``COMMAND_PERIOD_SEC`` sends each wheel a ``WheelCommand``:
the driven wheels (a drive torque) ``SPIN`` rad/s, the steered wheels
``STEERING`` rad (+ left), each with its ``rolling_sign`` and ``steering_sign`` from its
``WheelState``, a command timeout of ``COMMAND_TIMEOUT_SEC``. A kart held so drives a circle
(``pylon_testing.scenarios.ring_steering`` gives the angle that laps the tests' ring). It
logs ``lease held`` once its lease is owned and ``wheels N`` when it knows its wheels. Ends
on SIGINT or SIGTERM.
"""

from __future__ import annotations

import sys
import uuid

from pylon_common import node_main, topics

COMMAND_PERIOD_SEC = 0.05
RENEW_PERIOD_SEC = 1.0
COMMAND_TIMEOUT_SEC = 1.0
LEASE_SEC = 10.0
CONTROLLER = 'wheel_driver'


def make_node(vessel_id: str, spin: float, steering: float):
    """Create the driver's node: the lease, one wheel command per wheel every period."""
    import itertools

    from pylon_interfaces.msg import (
        ControlAuthorityCommand as A,
    )
    from pylon_interfaces.msg import (
        ControlAuthorityState,
        WheelCommand,
        WheelState,
    )
    import rclpy

    node = rclpy.create_node(CONTROLLER)
    lease = f'wheel_driver-{uuid.uuid4().hex[:16]}'
    wheels: dict[str, WheelState] = {}
    sequence = itertools.count(1)
    held = {'owned': False, 'ticks': 0}

    def publisher(msg_type, key):
        return node.create_publisher(msg_type, topics.name(key), topics.qos(key))

    authority = publisher(A, 'control/authority/command')
    command = publisher(WheelCommand, 'actuators/wheel/command')

    def on_wheel(msg: WheelState) -> None:
        if msg.vessel_id == vessel_id and msg.id not in wheels:
            wheels[msg.id] = msg
            node.get_logger().info(f'wheels {len(wheels)}')

    def on_authority(msg: ControlAuthorityState) -> None:
        owned = msg.controller_id == CONTROLLER and msg.lease_id == lease
        if owned and not held['owned']:
            node.get_logger().info('lease held')
        held['owned'] = owned

    node.create_subscription(WheelState, topics.name('actuators/wheel/state'), on_wheel,
                             topics.qos('actuators/wheel/state', reader=True))
    node.create_subscription(ControlAuthorityState, topics.name('control/authority/state'),
                             on_authority, topics.qos('control/authority/state', reader=True))

    def acquire() -> None:
        authority.publish(A(action=A.ACTION_ACQUIRE, vessel_id=vessel_id,
                            controller_id=CONTROLLER, lease_id=lease, priority=0,
                            lease_duration_sec=LEASE_SEC, suppress_sas=False,
                            sequence=next(sequence)))

    def on_timer() -> None:
        held['ticks'] += 1
        if held['ticks'] % round(RENEW_PERIOD_SEC / COMMAND_PERIOD_SEC) == 1:
            acquire()
        if not held['owned']:
            return
        for wheel in wheels.values():
            driven = wheel.max_drive_torque > 0.0
            msg = WheelCommand(
                vessel_id=vessel_id, controller_id=CONTROLLER, lease_id=lease,
                sequence=next(sequence), id=wheel.id, enabled=driven,
                target_angular_velocity=(wheel.rolling_sign or 1.0) * spin if driven else 0.0,
                steering_angle=(wheel.steering_sign or 1.0) * steering
                if wheel.steering_enabled else 0.0,
                max_drive_torque=0.0, timeout_sec=COMMAND_TIMEOUT_SEC, brake=0.0)
            msg.header.stamp = node.get_clock().now().to_msg()
            command.publish(msg)

    node.create_timer(COMMAND_PERIOD_SEC, on_timer)
    return node


def main() -> int:
    """Entry point: ``wheel_driver VESSEL_ID SPIN STEERING``."""
    from rclpy.utilities import remove_ros_args
    words = remove_ros_args(sys.argv)[1:]
    if len(words) != 3:
        print('usage: wheel_driver VESSEL_ID SPIN STEERING', file=sys.stderr)
        return 2
    vessel_id, spin, steering = words[0], float(words[1]), float(words[2])
    return node_main.run(lambda: make_node(vessel_id, spin, steering))


if __name__ == '__main__':
    sys.exit(main())
