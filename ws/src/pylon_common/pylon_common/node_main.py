"""The entry point every node of the workspace shares: start, spin, stop cleanly.

``run(make_node, on_exit)`` holds numpy's BLAS to one thread (``pylon_protocol.threads``),
initialises rclpy without its own signal handlers, creates the node and spins it (in
rclpy's events executor, ``make_executor``) until SIGINT or SIGTERM arrives or the node
calls ``request_stop()`` (the evaluator does when its ``duration_sec`` has passed). The
signals only end the spin, between two callbacks: no ``KeyboardInterrupt`` is raised inside
a callback, and ``on_exit(node)`` still runs with a live context (the controller releases
its lease, the evaluator writes its files, the bridge closes its sockets) before the node
is destroyed and rclpy shut down. A ``ValueError`` or ``OSError`` while the node is created
(a bad parameter, a port in use) is printed on one line and exits with status 2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import os
import signal
import sys
import threading
from typing import Any

SPIN_PERIOD_SEC = 0.1
RELEASE_GRACE_SEC = 0.3
"""s a node spins after ``release()`` on exit, so that its last messages go out."""
"""Longest time between a stop request and the end of the spin."""
EXECUTOR_ENV = 'PYLON_EXECUTOR'
"""``single``: spin in rclpy's SingleThreadedExecutor instead of its EventsExecutor."""

_stop = threading.Event()


def request_stop() -> None:
    """Ask the running node's spin to end (safe from a callback or a signal handler)."""
    _stop.set()


def stop_requested() -> bool:
    """Tell whether a stop was requested."""
    return _stop.is_set()


def _on_signal(signum: int, frame: Any) -> None:
    request_stop()


def run(make_node: Callable[[], Any], on_exit: Callable[[Any], None] | None = None,
        args: Sequence[str] | None = None) -> int:
    """Create the node, spin it until asked to stop, then clean up; return the exit status.

    ``args`` are the process arguments rclpy reads (``--ros-args ...``; default
    ``sys.argv``).
    """
    from pylon_protocol.threads import limit_threads
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.signals import SignalHandlerOptions

    limit_threads()
    _stop.clear()
    rclpy.init(args=list(sys.argv if args is None else args),
               signal_handler_options=SignalHandlerOptions.NO)
    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    node = None
    try:
        try:
            node = make_node()
        except (ValueError, OSError) as exc:
            print(f'{_program(args)}: {exc}', file=sys.stderr)
            return 2
        executor = make_executor()
        executor.add_node(node)
        while not _stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=SPIN_PERIOD_SEC)
    except ExternalShutdownException:
        pass
    finally:
        for sig in previous:
            signal.signal(sig, signal.SIG_IGN)
        if node is not None:
            if on_exit is not None:
                on_exit(node)
            node.destroy_node()
        rclpy.try_shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def release_on_exit(node: Any) -> None:
    """Call ``node.release()``, then spin ``RELEASE_GRACE_SEC`` (an ``on_exit`` for ``run``).

    For a node that holds a lease: its release (a ControlAuthorityCommand) goes out before
    the node is destroyed.
    """
    import time

    import rclpy
    if rclpy.ok():
        node.release()
        end = time.monotonic() + RELEASE_GRACE_SEC
        while time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.05)


def make_executor() -> Any:
    """Return the executor a node spins in: rclpy's events executor where it exists.

    rclpy's ``EventsExecutor`` (C++, ``rclpy.experimental``) dispatches each event as it
    comes; the ``SingleThreadedExecutor`` rebuilds a wait set in Python for every wake-up,
    which costs a 20 Hz controller with seven subscriptions most of its CPU.
    ``PYLON_EXECUTOR=single`` (or an rclpy without it) keeps the single-threaded one.
    """
    from rclpy.executors import SingleThreadedExecutor
    if os.environ.get(EXECUTOR_ENV, '') == 'single':
        return SingleThreadedExecutor()
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return SingleThreadedExecutor()
    return EventsExecutor()


def _program(args: Sequence[str] | None) -> str:
    argv = sys.argv if args is None else args
    return argv[0].rsplit('/', 1)[-1] if argv else 'node'
