"""Wait for conditions on a ROS graph with a timeout, spinning an executor (never sleep)."""

from __future__ import annotations

from collections.abc import Callable
import time
from typing import Any

from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile

SPIN_PERIOD_SEC = 0.05
LOOK_PERIOD_SEC = 0.25
"""Wall s between two evaluations of an expensive condition (``throttled``)."""


def throttled(condition: Callable[[], bool], period: float = LOOK_PERIOD_SEC
              ) -> Callable[[], bool]:
    """Return ``condition`` evaluated at most every ``period`` s of wall time (else False).

    A wait evaluates its condition after every callback it spins; one that reads a file or
    goes over every message received costs more than a callback, and on a busy machine
    the node then falls behind its subscriptions (their queues overflow, samples are lost,
    a mark lands on a backlog). Throttled, the spinning keeps up in between.
    """
    due = [0.0]

    def look() -> bool:
        now = time.monotonic()
        if now < due[0]:
            return False
        due[0] = now + period
        return condition()
    return look


def spin_until(node: Node, condition: Callable[[], bool], timeout: float,
               executor: Executor | None = None, what: str = 'condition') -> None:
    """Spin ``node`` (or ``executor``) until ``condition()``; TimeoutError after ``timeout``."""
    own = executor is None
    if own:
        executor = SingleThreadedExecutor(context=node.context)
        executor.add_node(node)
    try:
        deadline = time.monotonic() + timeout
        while not condition():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f'{what} did not hold within {timeout} s')
            executor.spin_once(timeout_sec=min(SPIN_PERIOD_SEC, remaining))
    finally:
        if own:
            executor.remove_node(node)
            executor.shutdown(timeout_sec=0)


def wait_for_messages(node: Node, msg_type: type, topic: str, qos: QoSProfile | int,
                      count: int = 1, timeout: float = 10.0,
                      predicate: Callable[[Any], bool] | None = None,
                      executor: Executor | None = None) -> list[Any]:
    """Subscribe to ``topic`` with ``qos`` and return the first ``count`` matching messages.

    The subscription exists only for the wait. Messages for which ``predicate`` is false
    are not counted. Raises TimeoutError naming the topic and how many arrived.
    """
    received: list[Any] = []

    def on_message(message: Any) -> None:
        if predicate is None or predicate(message):
            received.append(message)

    subscription = node.create_subscription(msg_type, topic, on_message, qos)
    try:
        spin_until(node, lambda: len(received) >= count, timeout, executor,
                   what=f'{count} message(s) on {topic} (got {len(received)})')
    except TimeoutError as exc:
        raise TimeoutError(
            f'only {len(received)} of {count} message(s) on {topic} within {timeout} s') from exc
    finally:
        node.destroy_subscription(subscription)
    return received[:count]


def subscriptions_of(node: Node, name: str, namespace: str = '/') -> set[str]:
    """Return the topics node ``name`` of the graph subscribes to (empty until discovered)."""
    try:
        return {topic for topic, _ in node.get_subscriber_names_and_types_by_node(name,
                                                                                    namespace)}
    except Exception:      # rclpy raises NodeNameNonExistentError before discovery
        return set()
