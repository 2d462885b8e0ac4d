"""Record the messages of several topics in one test node, and wait on what they say.

``TopicRecorder`` keeps every message of every topic it was asked for, in arrival order. A
test asks "what came after this point" with a ``mark()`` (the number of messages of each
topic so far), never with the wall clock, so that the answer does not depend on how busy
the machine is. Times a test asserts on come from the messages themselves (``stamp_of``:
their header stamps, KSP time through the bridge) or from the simulator's clock. Each
message's publication stamp (``sent``: the publisher's clock when it wrote the message)
orders what several topics of one publisher said, however late the test took them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pylon_common.stamps import to_seconds
from rclpy.executors import Executor
from rclpy.node import Node
from rclpy.qos import QoSProfile

from pylon_testing.wait import spin_until

DEFAULT_TIMEOUT_SEC = 60.0
"""How long a wait may take before the test fails. Generous: a wait ends as soon as its
condition holds, so the timeout only bounds how long a broken run takes to fail, and a
machine running two copies of the suite must not trip it."""

Mark = Mapping[str, int]


stamp_of = to_seconds
"""Return a message's header stamp (or a ``builtin_interfaces/Time``) in seconds."""


class TopicRecorder:
    """Subscriptions of one node, each keeping what it received, and waits on them."""

    def __init__(self, node: Node, executor: Executor | None = None) -> None:
        """Record with ``node`` (spun by ``executor`` if given, else by a temporary one)."""
        self.node = node
        self.executor = executor
        self.got: dict[str, list[Any]] = {}
        self.sent: dict[str, list[float]] = {}   # publication stamps (s) beside ``got``
        self.subscriptions: list[Any] = []
        self.by_name: dict[str, Any] = {}

    def add(self, name: str, topic: str, msg_type: type, qos: QoSProfile | int,
            **kwargs: Any) -> TopicRecorder:
        """Subscribe to ``topic`` and keep its messages under ``name``; return ``self``."""
        received = self.got.setdefault(name, [])
        sent = self.sent.setdefault(name, [])

        def keep(msg: Any, info: Mapping[str, int]) -> None:
            sent.append(info['source_timestamp'] * 1e-9)
            received.append(msg)
        subscription = self.node.create_subscription(msg_type, topic, keep, qos, **kwargs)
        self.subscriptions.append(subscription)
        self.by_name[name] = subscription
        return self

    def unmatched(self, names: Iterable[str] | None = None) -> list[str]:
        """Return those of ``names`` (default: all) whose subscription matches no publisher."""
        return [name for name in (self.by_name if names is None else names)
                if not self.by_name[name].get_publisher_count()]

    def mark(self) -> dict[str, int]:
        """Return the point reached so far: how many messages each topic has given."""
        return {name: len(messages) for name, messages in self.got.items()}

    def messages(self, name: str, since: Mark | None = None,
                 predicate: Callable[[Any], bool] | None = None) -> list[Any]:
        """Return the messages of ``name`` received after ``since`` that match ``predicate``."""
        start = (since or {}).get(name, 0)
        found = self.got[name][start:]
        return found if predicate is None else [m for m in found if predicate(m)]

    def after(self, name: str, message: Any) -> dict[str, int]:
        """Return a mark just after ``message`` of ``name`` (and now for every other topic)."""
        position = next(i for i, m in enumerate(self.got[name]) if m is message)
        return {**self.mark(), name: position + 1}

    def sent_at(self, name: str, message: Any) -> float:
        """Return when ``message`` of ``name`` was published (s, the publisher's system clock).

        The DDS source timestamp: for messages of one publisher process, their order and
        the time between them however busy the machine was when this process took them.
        """
        return self.sent[name][next(i for i, m in enumerate(self.got[name]) if m is message)]

    def sent_after(self, name: str, stamp: float) -> list[Any]:
        """Return the messages of ``name`` published after ``stamp`` (``sent_at``)."""
        return [m for m, sent in zip(self.got[name], self.sent[name]) if sent > stamp]

    def last(self, name: str) -> Any:
        """Return the newest message of ``name``, or None."""
        messages = self.got[name]
        return messages[-1] if messages else None

    def until(self, condition: Callable[[], bool], what: str,
              timeout: float = DEFAULT_TIMEOUT_SEC) -> None:
        """Spin until ``condition()`` holds; TimeoutError naming ``what`` after ``timeout``."""
        spin_until(self.node, condition, timeout, self.executor, what=what)

    def wait_for(self, name: str, predicate: Callable[[Any], bool] | None = None,
                 since: Mark | None = None, what: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT_SEC) -> Any:
        """Return the first message of ``name`` after ``since`` matching ``predicate``."""
        found: list[Any] = []

        def check() -> bool:
            found[:] = self.messages(name, since, predicate)[:1]
            return bool(found)
        self.until(check, what or f'a matching message on {name}', timeout)
        return found[0]

    def wait_count(self, name: str, count: int, since: Mark | None = None,
                   timeout: float = DEFAULT_TIMEOUT_SEC) -> list[Any]:
        """Return the first ``count`` messages of ``name`` after ``since``, once they came."""
        self.until(lambda: len(self.messages(name, since)) >= count,
                   f'{count} messages on {name}', timeout)
        return self.messages(name, since)[:count]

    def wait_stamp_span(self, name: str, seconds: float, since: Mark | None = None,
                        timeout: float = DEFAULT_TIMEOUT_SEC) -> list[Any]:
        """Return the messages of ``name`` after ``since`` once their stamps span ``seconds``.

        The span is measured on the stamps (KSP time through the bridge), so it does not
        depend on how fast the machine delivers them.
        """
        def spanned() -> bool:
            found = self.messages(name, since)
            return len(found) > 1 and stamp_of(found[-1]) - stamp_of(found[0]) >= seconds
        self.until(spanned, f'{seconds:g} s of stamps on {name}', timeout)
        return self.messages(name, since)

    def close(self) -> None:
        """Destroy every subscription."""
        for subscription in self.subscriptions:
            self.node.destroy_subscription(subscription)
        self.subscriptions.clear()
        self.by_name.clear()
