"""A minimal lease client for the tests: acquire, then torque +Z at 20 Hz until ended.

``wrench_client VESSEL_ID``: acquires a lease on the vessel through the bridge's authority
topic, logs ``commanding`` once it owns it, then sends a +Z torque every
``COMMAND_PERIOD_SEC`` (renewing the lease every ``RENEW_EVERY`` ticks) until SIGINT or
SIGTERM. The bridge's control test kills it with SIGKILL and checks that the simulator
zeroes the wrench once the command's timeout has passed.
"""

from __future__ import annotations

import itertools
import sys

from pylon_common import node_main, topics

COMMAND_PERIOD_SEC = 0.05
RENEW_EVERY = 5
CONTROLLER_ID = 'client'
LEASE_ID = 'kill-me'
LEASE_DURATION_SEC = 5.0
COMMAND_TIMEOUT_SEC = 0.5
TORQUE_Z_NM = 30.0


def make_node(vessel: str):
    """Create the client's node: authority and wrench publishers, the state, a timer."""
    from pylon_interfaces.msg import (
        BodyWrenchCommand,
        ControlAuthorityCommand,
        ControlAuthorityState,
    )
    import rclpy

    node = rclpy.create_node('wrench_client')
    sequence = itertools.count(1)
    ticks = itertools.count()
    owned: list[bool] = []
    authority = node.create_publisher(ControlAuthorityCommand,
                                      topics.name('control/authority/command'),
                                      topics.qos('control/authority/command'))
    wrench = node.create_publisher(BodyWrenchCommand, topics.name('control/wrench_command'),
                                   topics.qos('control/wrench_command'))

    def on_state(msg: ControlAuthorityState) -> None:
        if msg.controller_id == CONTROLLER_ID and not owned \
                and msg.state == ControlAuthorityState.STATE_OWNED:
            owned.append(True)
            node.get_logger().info('commanding')

    def on_timer() -> None:
        tick = next(ticks)
        if authority.get_subscription_count() == 0 or wrench.get_subscription_count() == 0:
            return
        if not owned or tick % RENEW_EVERY == 0:
            action = ControlAuthorityCommand.ACTION_RENEW if owned else \
                ControlAuthorityCommand.ACTION_ACQUIRE
            authority.publish(ControlAuthorityCommand(
                action=action, vessel_id=vessel, controller_id=CONTROLLER_ID,
                lease_id=LEASE_ID, lease_duration_sec=LEASE_DURATION_SEC,
                sequence=next(sequence)))
        if owned:
            msg = BodyWrenchCommand(vessel_id=vessel, controller_id=CONTROLLER_ID,
                                    lease_id=LEASE_ID, sequence=next(sequence),
                                    timeout_sec=COMMAND_TIMEOUT_SEC)
            msg.wrench.torque.z = TORQUE_Z_NM
            wrench.publish(msg)

    node.create_subscription(ControlAuthorityState, topics.name('control/authority/state'),
                             on_state, topics.qos('control/authority/state', reader=True))
    node.wrench_timer = node.create_timer(COMMAND_PERIOD_SEC, on_timer)
    return node


def main(argv: list[str] | None = None) -> int:
    """Command the vessel named on the command line until the process is ended."""
    argv = sys.argv if argv is None else argv
    if len(argv) < 2 or argv[1].startswith('-'):
        print('usage: wrench_client VESSEL_ID [--ros-args ...]', file=sys.stderr)
        return 2
    return node_main.run(lambda: make_node(argv[1]), args=argv)


if __name__ == '__main__':
    sys.exit(main())
