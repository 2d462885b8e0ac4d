"""A minimal lease client for the tests: acquire, then torque +Z at 20 Hz until killed.

Usage: ``python wrench_client.py VESSEL_ID``. Prints ``commanding`` once it owns the lease.
"""

import itertools
import sys

from pylon_interfaces.msg import BodyWrenchCommand, ControlAuthorityCommand, ControlAuthorityState
import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

COMMAND = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)


def main() -> None:
    """Acquire a lease and command until the process is ended."""
    vessel = sys.argv[1]
    rclpy.init()
    node = rclpy.create_node('wrench_client')
    sequence = itertools.count(1)
    owned = []
    authority = node.create_publisher(ControlAuthorityCommand,
                                      '/ksp_vessel/control/authority/command', COMMAND)
    wrench = node.create_publisher(BodyWrenchCommand, '/ksp_vessel/control/wrench_command',
                                   COMMAND)

    def on_state(msg: ControlAuthorityState) -> None:
        if msg.controller_id == 'client' and msg.state == ControlAuthorityState.STATE_OWNED \
                and not owned:
            owned.append(True)
            print('commanding', flush=True)

    node.create_subscription(ControlAuthorityState, '/ksp_vessel/control/authority/state',
                             on_state, LATCHED)
    ticks = itertools.count()

    def on_timer() -> None:
        tick = next(ticks)
        if authority.get_subscription_count() == 0 or wrench.get_subscription_count() == 0:
            return
        if not owned or tick % 5 == 0:
            action = ControlAuthorityCommand.ACTION_RENEW if owned else \
                ControlAuthorityCommand.ACTION_ACQUIRE
            authority.publish(ControlAuthorityCommand(
                action=action, vessel_id=vessel, controller_id='client', lease_id='kill-me',
                lease_duration_sec=5.0, sequence=next(sequence)))
        if owned:
            msg = BodyWrenchCommand(vessel_id=vessel, controller_id='client',
                                    lease_id='kill-me', sequence=next(sequence), timeout_sec=0.5)
            msg.wrench.torque.z = 30.0
            wrench.publish(msg)

    node.create_timer(0.05, on_timer)
    rclpy.spin(node)


if __name__ == '__main__':
    main()
