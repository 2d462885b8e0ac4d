"""``udp_bridge`` entry point: flags first, so that ``--help`` needs no ROS at all."""

from __future__ import annotations

import sys

from pylon_common import node_main

from pylon_bridge import config


def main(argv: list[str] | None = None) -> int:
    """Parse the flags (``--help`` exits 0, a bad flag 2), then run the bridge node."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        explicit, ros_args = config.parse_cli(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    from pylon_bridge.node import UdpBridge  # loads rclpy and the ROS middleware
    return node_main.run(lambda: UdpBridge(explicit), UdpBridge.close,
                         [config.PROG, *ros_args])


if __name__ == '__main__':
    sys.exit(main())
