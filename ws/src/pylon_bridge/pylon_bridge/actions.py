"""What the bridge's logic hands to the node: actions, counters and topic lifetimes.

The core and its collaborators never touch a publisher: they return ``Publish`` and
``Destroy`` actions, and the node applies them; a ``Relayed`` one is for the node in the
ground-truth ROS domain (``--ground-truth-domain``). ``Stats`` counts everything diagnostics
reports (received, accepted, dropped by reason, ignored, routed, published per topic,
commands).
``TopicLifetimes`` remembers when each topic last had data, so that a topic whose source
fell silent for ``--topic-timeout-sec`` is removed; latched state topics never are. It
also admits the ids that name topics of their own (sensors, docking ports, servos): at
most ``MAX_IDS_PER_KIND`` distinct ids of each kind in a runtime session.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from pylon_common import qos, topics
from pylon_protocol.names import sanitize_name

LATCHED_KEYS = frozenset(row.key for row in topics.BRIDGE_TOPICS
                         if row.direction == topics.PUBLISHES
                         and row.profile.durability == qos.TRANSIENT_LOCAL)
"""Topics whose messages are state (Transient Local): never removed for silence."""
KEPT_KEYS = LATCHED_KEYS | {'clock'}
"""Never removed for silence: state, and /clock (silent while the game is paused)."""

RECENT_DROPS = 32
MAX_IDS_PER_KIND = 32
"""Distinct ids of one kind (star tracker, LiDAR 2D, camera, docking port, servo, ...) a
runtime session may name; a datagram with one more is dropped (``too_many_topics``).

An id is a topic of its own (or, for a servo, a joint state entry), created on its first
sample. The ids of a session are remembered until it ends, also after their topics fell
silent and were removed: a session whose datagrams name ever new ids (a hostile or broken
sender; a vessel has a fixed set of parts) cannot make the bridge create and destroy
publishers and keep per-id state without end. The fuzz bench showed the cost: the
bridge's RSS grew with the number of distinct ids it had published.
"""


@dataclass(slots=True)
class Publish:
    """Publish ``msg`` on the topic with ``key`` (and ``topic_id`` for per-sensor topics).

    ``serialized``: the message as CDR bytes, which the node publishes instead of ``msg``;
    ``msg`` is then None when the core did not build it, and ``msg_type`` names its type
    (for the publisher the first one creates). Neither is part of the action's equality or
    repr. Slotted and not frozen: one is made per datagram, and a frozen dataclass costs
    four times as much to make; nothing changes an action after it is made.
    """

    key: str
    msg: Any
    topic_id: str = ''
    serialized: bytes | None = field(default=None, compare=False, repr=False)
    msg_type: type | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Destroy:
    """Remove the topic with ``key`` (and ``topic_id``)."""

    key: str
    topic_id: str = ''


@dataclass(frozen=True)
class Relayed:
    """Apply ``action`` (a ground-truth topic's) in the ground-truth domain, not the bridge's."""

    action: Publish | Destroy


@dataclass
class Stats:
    """Counters for diagnostics, and the latest drops for the node's throttled log."""

    received: int = 0
    accepted: int = 0
    dropped: Counter = field(default_factory=Counter)
    ignored: Counter = field(default_factory=Counter)
    routed: Counter = field(default_factory=Counter)
    published: Counter = field(default_factory=Counter)
    by_type: Counter = field(default_factory=Counter)
    commands_sent: Counter = field(default_factory=Counter)
    commands_rejected: Counter = field(default_factory=Counter)
    drop_count: int = 0
    recent_drops: deque = field(default_factory=lambda: deque(maxlen=RECENT_DROPS))

    def drop(self, reason: str, detail: str) -> list:
        """Count a rejected datagram by ``reason``; return no actions."""
        self.drop_count += 1
        self.dropped[reason] += 1
        self.recent_drops.append((reason, detail))
        return []

    def absorb(self, other: Stats) -> None:
        """Count ``other``'s drops and ignored datagrams here, and forget them there."""
        self.drop_count += other.drop_count
        self.dropped.update(other.dropped)
        self.ignored.update(other.ignored)
        self.recent_drops.extend(other.recent_drops)
        other.drop_count = 0
        for counts in (other.dropped, other.ignored, other.recent_drops):
            counts.clear()


TOPIC_ID_MAX_CHARS = 128
"""The longest id in a topic name (a docking port's name may have 128 characters)."""


def topic_segment(topic_id: str) -> str:
    """Return ``topic_id`` as one valid segment of a ROS topic name ('' stays '').

    The fuzz bench found ids no topic can hold (``port(2)``, 30 000 backslashes): creating
    their publisher raised in the receive thread.
    """
    return topic_id and sanitize_name(topic_id, 'sensor', max_length=TOPIC_ID_MAX_CHARS)


class TopicLifetimes:
    """When each (topic key, id) last had data; publishing goes through here."""

    def __init__(self, stats: Stats, max_ids: int = MAX_IDS_PER_KIND) -> None:
        """Count publications in ``stats``; admit ``max_ids`` ids of each kind a session."""
        self.stats = stats
        self.max_ids = max_ids
        self.last_seen: dict[tuple[str, str], float] = {}
        self.ids: dict[str, set[str]] = {}      # kind -> the ids the session named

    def new_session(self) -> None:
        """Forget the ids of the previous session (its topics still expire as usual)."""
        self.ids.clear()

    def admit(self, kind: str, topic_id: str, what: str) -> bool:
        """Return whether ``topic_id`` of ``kind`` may have its topic in this session.

        An id already named in the session always may; a new one while the session has
        named ``max_ids`` of that kind may not: counted as dropped (``too_many_topics``,
        ``what`` in the detail), which the node logs throttled.
        """
        known = self.ids.setdefault(kind, set())
        segment = topic_segment(topic_id)
        if segment in known:
            return True
        if len(known) >= self.max_ids:
            self.stats.drop('too_many_topics', f'{what} {segment[:40]!r}: the session already '
                            f'named {self.max_ids} {kind} ids')
            return False
        known.add(segment)
        return True

    def publish(self, key: str, msg: Any, now: float, topic_id: str = '',
                serialized: bytes | None = None, msg_type: type | None = None) -> Publish:
        """Return the action publishing ``msg`` and note the topic alive at ``now``.

        A ``topic_id`` (a sensor's or docking port's id from a datagram) names a topic: it
        is used sanitised (``topic_segment``), which the mod's ids are already.
        """
        if topic_id:
            topic_id = topic_segment(topic_id)
        self.last_seen[key, topic_id] = now
        self.stats.published[key] += 1
        return Publish(key, msg, topic_id, serialized, msg_type)

    def remove(self, keys: tuple[str, ...], topic_id: str) -> list:
        """Return the removal of each of ``keys`` (of ``topic_id``) that exists."""
        topic_id = topic_segment(topic_id)
        return [Destroy(key, topic_id) for key in keys
                if self.last_seen.pop((key, topic_id), None) is not None]

    def ids_of(self, keys: tuple[str, ...]) -> set[str]:
        """Return the ids that have a topic of one of ``keys`` now."""
        return {topic_id for key, topic_id in self.last_seen if key in keys}

    def expire(self, now: float, timeout: float) -> list:
        """Return the removal of every non-latched topic silent for more than ``timeout``."""
        out = []
        for (key, topic_id), seen in list(self.last_seen.items()):
            if key not in KEPT_KEYS and now - seen > timeout:
                del self.last_seen[key, topic_id]
                out.append(Destroy(key, topic_id))
        return out
