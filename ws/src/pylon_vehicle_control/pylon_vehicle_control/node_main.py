"""The entry point shared by this package's nodes: spin until SIGINT or SIGTERM, then clean up.

rclpy's own signal handlers would shut the context down at once; here the signals only stop
the spin, so ``on_exit(node)`` still runs with a live context (the controller releases its
lease, the evaluator writes its files) before the node is destroyed.
"""

from __future__ import annotations

from collections.abc import Callable
import signal
import sys

from pylon_protocol.threads import limit_threads
import rclpy
from rclpy.signals import SignalHandlerOptions


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def run(node_type: Callable, on_exit: Callable | None = None) -> int:
    """Create ``node_type()``, spin it, call ``on_exit(node)`` on the way out; return 0."""
    limit_threads()
    rclpy.init(args=sys.argv, signal_handler_options=SignalHandlerOptions.NO)
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    node = node_type()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if on_exit is not None:
            on_exit(node)
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
