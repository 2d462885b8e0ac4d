"""The live view's decisions, without ROS: what to advertise, whom to serve, how, what to let in.

``pylon_viewer`` (``viewer_node``) serves the ROS graph over the Foxglove WebSocket protocol
(the ``foxglove-sdk`` server). Everything it decides is here, in plain classes a test drives
without rclpy; the node only wires the graph, the SDK and these together:

- ``Catalogue``: which (topic, type) channels to advertise and to remove as the graph
  changes, and which types could not be served (no definition installed) so they are not
  retried every poll.
- ``Interest``: which clients subscribe to which channel; a ROS subscription exists only
  while the count is above zero (the first subscriber creates it, the last one leaving
  destroys it).
- ``reader_profile``: the QoS of that ROS subscription, from what the publishers offer.
- ``Allowlist`` and ``ClientChannels``: which client channels may publish into ROS.
- ``Inbox``: the SDK's callbacks (its own threads) handed to the node's executor, with
  client data bounded so a flooding client cannot grow the queue without limit.
- ``Throttle``: at most one log line per kind of refusal per period.

The parameters of the node are ``PARAMETERS`` (``config/pylon_viewer.yaml`` lists them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
import re
import threading

from pylon_common import qos, topics
from pylon_common.parameters import Parameter, topic_name_problem

from pylon_tools import definitions

MESSAGE_ENCODING = 'cdr'
"""How every channel's messages are encoded: ROS 2 serialised data, as rclpy gives it."""
SCHEMA_ENCODING = 'ros2msg'
"""How every channel's schema is written: the complete definition (``definitions``)."""
SUBPROTOCOL = 'foxglove.sdk.v1'
"""The WebSocket subprotocol the SDK's server accepts: the Foxglove WebSocket protocol v1
under its current name (the same messages as ``foxglove.websocket.v1``, which the SDK no
longer accepts in the handshake)."""
DEFAULT_ADDRESS = '127.0.0.1'
DEFAULT_PORT = 8765
LOG_THROTTLE_SEC = 5.0
"""At most one log line per kind of refusal (and per kind of SDK warning) in this period."""
DATA_BACKLOG = 1000
"""Client messages waiting for the executor beyond this many are dropped (and counted)."""

PARAMETERS: tuple[Parameter, ...] = (
    Parameter('address', DEFAULT_ADDRESS,
              'address the WebSocket server binds (0.0.0.0: every interface; the protocol '
              'has no authentication, keep it on localhost and tunnel with ssh -L)'),
    Parameter('port', DEFAULT_PORT, 'TCP port of the WebSocket server (0: any free port, logged)',
              0, 65535),
    Parameter('client_publish', True,
              'let clients publish to the topics of client_publish_topics (false: clients '
              'may only watch; the server does not offer clientPublish)'),
    Parameter('client_publish_topics', topics.resolved('setpoint', topics.SETPOINT_CONTROLLER),
              'comma list of the topics clients may publish to, each an absolute name (its '
              'type from the topic contract) or name:pkg/msg/Type; nothing else is let in'),
    Parameter('graph_period_sec', 1.0,
              's, how often the ROS graph is read for topics that came or went', 0.1, 60.0),
)
"""Every parameter of ``pylon_viewer``."""

Key = tuple[str, str]
"""A channel: (topic, message type ``pkg/msg/Type``). A topic with two types is two channels."""


# -- channels: what the graph has ------------------------------------------------------------
@dataclass(frozen=True)
class Changes:
    """What to advertise and what to remove after one look at the graph."""

    added: tuple[Key, ...]
    removed: tuple[Key, ...]


class Catalogue:
    """The channels advertised, following the graph's topics as they come and go."""

    def __init__(self) -> None:
        """Start with nothing advertised."""
        self.advertised: set[Key] = set()
        self.unavailable: dict[Key, str] = {}     # key -> why it cannot be served

    def changes(self, graph: Iterable[tuple[str, Sequence[str]]]) -> Changes:
        """Return what changed since the last look; ``graph`` is (topic, [types]) pairs.

        A key found ``unavailable`` is not offered again while it stays in the graph; once
        it has left, it is forgotten (a later install of its package may serve it).
        """
        now = {(name, kind) for name, kinds in graph for kind in kinds}
        for gone in set(self.unavailable) - now:
            del self.unavailable[gone]
        added = tuple(sorted(now - self.advertised - set(self.unavailable)))
        removed = tuple(sorted(self.advertised - now))
        return Changes(added, removed)

    def advertise(self, key: Key) -> None:
        """Record that ``key`` is advertised."""
        self.advertised.add(key)

    def remove(self, key: Key) -> None:
        """Record that ``key`` was removed."""
        self.advertised.discard(key)

    def refuse(self, key: Key, reason: str) -> None:
        """Record that ``key`` cannot be served and why."""
        self.unavailable[key] = reason


class Interest:
    """Which clients subscribe to which channel (by channel id)."""

    def __init__(self) -> None:
        """Start with no subscriber."""
        self.clients: dict[int, set[int]] = {}

    def subscribe(self, channel: int, client: int) -> bool:
        """Record a subscription; return whether it is the channel's first."""
        subscribers = self.clients.setdefault(channel, set())
        first = not subscribers
        subscribers.add(client)
        return first

    def unsubscribe(self, channel: int, client: int) -> bool:
        """Record an unsubscription; return whether the channel has no subscriber left."""
        subscribers = self.clients.get(channel)
        if not subscribers or client not in subscribers:
            return False
        subscribers.discard(client)
        if subscribers:
            return False
        del self.clients[channel]
        return True

    def drop(self, channel: int) -> None:
        """Forget every subscription to a channel that was removed."""
        self.clients.pop(channel, None)

    def wanted(self, channel: int) -> bool:
        """Tell whether anyone subscribes to the channel."""
        return bool(self.clients.get(channel))


# -- QoS -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Offered:
    """What one publisher offers: reliability, durability (``pylon_common.qos`` words), depth."""

    reliability: str
    durability: str
    depth: int = 0


def reader_profile(offers: Sequence[Offered]) -> qos.Profile:
    """Return the QoS of the viewer's subscription to a topic with these publishers.

    Reliable when every publisher is (a Reliable reader would never match a Best Effort
    publisher, and a Best Effort reader loses what a Reliable stream would resend);
    Transient Local when every publisher is (a Transient Local reader does not match a
    Volatile publisher), so a latched topic's current value reaches a client that
    subscribes late; depth at least ``qos.READER_DEPTH`` and at least every publisher's
    (latched histories such as the separation results keep more than one message). No
    publisher yet: Reliable and Volatile, looked at again when one appears.
    """
    if not offers:
        return qos.Profile(qos.RELIABLE, qos.VOLATILE, qos.READER_DEPTH,
                           'no publisher yet: reliable, volatile')
    reliable = all(o.reliability == qos.RELIABLE for o in offers)
    latched = all(o.durability == qos.TRANSIENT_LOCAL for o in offers)
    depth = min(qos.MAX_DEPTH, max(qos.READER_DEPTH, *(o.depth for o in offers)))
    return qos.Profile(qos.RELIABLE if reliable else qos.BEST_EFFORT,
                       qos.TRANSIENT_LOCAL if latched else qos.VOLATILE, depth,
                       'matched to the publishers: '
                       f'{"every" if reliable else "not every"} one reliable, '
                       f'{"every" if latched else "not every"} one transient local')


# -- client publishing ------------------------------------------------------------------------
@dataclass(frozen=True)
class Allowed:
    """A topic clients may publish to: its message type and the QoS profile to publish with."""

    topic: str
    type: str
    profile: qos.Profile


def contract_row(name: str) -> topics.Topic | None:
    """Return the contract's row whose default name is ``name`` (``{id}`` matches one token)."""
    for row in topics.TOPICS.values():
        if row.direction == topics.SERVES:
            continue
        pattern = re.escape(row.default_name(id='{id}')).replace(r'\{id\}', '[^/]+')
        if re.fullmatch(pattern, name):
            return row
    return None


class Allowlist:
    """The topics clients may publish to, and the checks a client channel must pass."""

    def __init__(self, text: str) -> None:
        """Parse a comma list of ``/name`` (type from the contract) or ``/name:pkg/msg/Type``.

        Raise ValueError naming the entry for a name that is not absolute or not a valid
        topic name, a type that is not a message type, or a name the contract does not know
        and that gives no type.
        """
        self.topics: dict[str, Allowed] = {}
        for entry in (item.strip() for item in text.split(',')):
            if entry:
                allowed = self._entry(entry)
                self.topics[allowed.topic] = allowed

    @staticmethod
    def _entry(entry: str) -> Allowed:
        name, _, kind = (part.strip() for part in entry.partition(':'))
        problem = topic_name_problem(name) or ('' if name.startswith('/') else
                                               'must be absolute (start with /)')
        if problem:
            raise ValueError(f'client_publish_topics: {name!r}: {problem}')
        row = contract_row(name)
        if not kind and row is None:
            raise ValueError(f'client_publish_topics: {name!r} is not in the topic contract: '
                             'give its type as name:pkg/msg/Type')
        try:
            kind = definitions.canonical(kind or row.type)
        except definitions.DefinitionError as exc:
            raise ValueError(f'client_publish_topics: {entry!r}: {exc}') from None
        same = row is not None and row.type == kind
        return Allowed(name, kind, row.profile if same else qos.COMMAND)

    def refusal(self, topic: str, encoding: str, schema_name: str) -> str:
        """Return why a client channel is refused, or ``''`` when it may publish."""
        allowed = self.topics.get(topic)
        if allowed is None:
            open_ = ', '.join(self.topics) or 'none'
            return f'{topic!r} is not open to clients (client_publish_topics: {open_})'
        if encoding != MESSAGE_ENCODING:
            return f'{topic!r}: encoding {encoding!r}; only {MESSAGE_ENCODING!r} is accepted'
        try:
            kind = definitions.canonical(schema_name)
        except definitions.DefinitionError:
            kind = ''
        if kind != allowed.type:
            return f'{topic!r}: schema {schema_name!r} is not {allowed.type}'
        return ''


class ClientChannels:
    """The client channels that passed the allowlist: (client id, channel id) -> topic."""

    def __init__(self) -> None:
        """Start with none."""
        self.accepted: dict[tuple[int, int], str] = {}

    def accept(self, client: int, channel: int, topic: str) -> None:
        """Let a client channel publish to ``topic``."""
        self.accepted[(client, channel)] = topic

    def topic_of(self, client: int, channel: int) -> str | None:
        """Return the topic an accepted client channel publishes to, None if not accepted."""
        return self.accepted.get((client, channel))

    def forget(self, client: int, channel: int) -> None:
        """Forget a client channel (unadvertised, or its client left)."""
        self.accepted.pop((client, channel), None)


# -- from the SDK's threads to the executor ------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Event:
    """One thing a client did: ``kind`` is subscribe, unsubscribe, advertise, unadvertise, data."""

    kind: str
    client: int
    channel: int
    topic: str = ''
    encoding: str = ''
    schema_name: str = ''
    data: bytes = b''


class Inbox:
    """A thread-safe queue of ``Event``; data events beyond ``limit`` waiting are dropped."""

    def __init__(self, limit: int = DATA_BACKLOG) -> None:
        """Start empty."""
        self.limit = limit
        self._lock = threading.Lock()
        self._events: list[Event] = []
        self._data = 0
        self.dropped = 0

    def put(self, event: Event) -> bool:
        """Queue an event; return False when it is data and ``limit`` data events wait."""
        with self._lock:
            if event.kind == 'data':
                if self._data >= self.limit:
                    self.dropped += 1
                    return False
                self._data += 1
            self._events.append(event)
            return True

    def drain(self) -> list[Event]:
        """Return every queued event, oldest first, and empty the queue."""
        with self._lock:
            events, self._events, self._data = self._events, [], 0
        return events


class Throttle:
    """At most one line per key per ``period`` seconds, counting what was held back."""

    def __init__(self, period: float = LOG_THROTTLE_SEC) -> None:
        """Start with no key seen."""
        self.period = period
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def allow(self, key: str, now: float) -> int | None:
        """Return how many lines of ``key`` were held back since the last one, or None to hold."""
        last = self._last.get(key)
        if last is not None and now - last < self.period:
            self._held[key] = self._held.get(key, 0) + 1
            return None
        self._last[key] = now
        return self._held.pop(key, 0)


def log_key(message: str) -> str:
    """Return a message with its numbers (addresses, ports, ids) blanked: one key per kind."""
    return re.sub(r'\d+', '#', message)


def url(address: str, port: int) -> str:
    """Return the address a user opens: ``ws://address:port``."""
    host = f'[{address}]' if ':' in address else address
    return f'ws://{host}:{port}'
