"""``pylon_recorder``: every topic of the graph (or a chosen few) into a rosbag2-compatible MCAP.

Every ``discovery_period_sec`` it asks the graph for its topics and subscribes to each new
one that has a publisher (hidden topics, ``/_...``, only when named in ``topics``), as they
come; a topic that goes away keeps its channel and is recorded again when it comes back.
The subscription takes the bytes as they arrive (``raw=True``: no deserialisation) and
its QoS is adapted to the publishers' offers as rosbag2 adapts it (Reliable only when every
publisher is Reliable, Transient Local only when every one is, so a latched topic's last
value is recorded and Best Effort publishers are received); a later publisher the
subscription cannot match makes it subscribe again, adapted to all of them. The offers are
recorded in the channel's ``offered_qos_profiles`` (``pylon_tools.recorder``).

A topic whose type has no installed definition (or no Python type support) is skipped
with one log line per topic; the rest is recorded. On SIGINT or SIGTERM the file is
finished (summary, bag metadata); after SIGKILL it is readable up to the last chunk
written, at most ``flush_period_sec`` (or ``chunk_size_bytes``) before the kill. Its
status goes on ``/diagnostics`` every second (``pylon_common.diagnostics``, hardware id the
file): messages and topics recorded, topics skipped (WARN while there are any).
"""

from __future__ import annotations

from datetime import datetime
import importlib
import time
from typing import Any

from pylon_common import diagnostics, node_main, topics
from pylon_common.parameters import declare, Parameter
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from pylon_tools import definitions
from pylon_tools.recorder import (
    compatible,
    COMPRESSIONS,
    header_stamp_ns,
    hidden,
    Offer,
    output_path,
    Recording,
    RELIABLE,
    requested,
    starts_with_header,
    TRANSIENT_LOCAL,
)

PARAMETERS: tuple[Parameter, ...] = (
    Parameter('output', '', "the recording's file (.mcap is added when missing; an existing "
                            "file is refused); '': pylon_<date>_<time>.mcap in the working "
                            'directory'),
    Parameter('topics', '', "comma list of the topics to record; '': every topic of the graph, "
                            'as they come'),
    Parameter('discovery_period_sec', 1.0, 's, how often the graph is asked for new topics and '
                                           'publishers', 0.05, 60.0),
    Parameter('flush_period_sec', 1.0, 's, the open chunk is written at least this often: what '
                                       'a SIGKILL can lose at most', 0.05, 60.0),
    Parameter('chunk_size_bytes', 1 << 20, 'a chunk is written once it holds this many bytes '
                                           '(uncompressed)', 1024, 1 << 30),
    Parameter('compression', 'lz4', f'chunk compression: {", ".join(COMPRESSIONS)} (zstd needs '
                                    'the zstandard package)'),
    Parameter('depth', 100, 'queue depth (keep last) of each subscription', 1, 10000),
)


def offer_of(profile: Any) -> Offer:
    """Return the ``Offer`` of an rclpy ``QoSProfile`` reported by the graph."""
    return Offer(reliability=profile.reliability.name.lower(),
                 durability=profile.durability.name.lower(),
                 history=profile.history.name.lower(), depth=int(profile.depth),
                 deadline_ns=profile.deadline.nanoseconds,
                 lifespan_ns=profile.lifespan.nanoseconds,
                 liveliness=profile.liveliness.name.lower(),
                 liveliness_lease_duration_ns=profile.liveliness_lease_duration.nanoseconds,
                 avoid_ros_namespace_conventions=bool(profile.avoid_ros_namespace_conventions))


def message_type(type_name: str) -> type:
    """Import the Python class of ``pkg/msg/Type`` (its type support); LookupError if absent."""
    package, kind, name = type_name.split('/')
    try:
        return getattr(importlib.import_module(f'{package}.{kind}'), name)
    except (ImportError, AttributeError) as exc:
        raise LookupError(f'no Python type support for {type_name}: {exc}') from exc


class Recorder(Node):
    """Subscribe to the graph's topics as they come and write what arrives to a Recording."""

    def __init__(self) -> None:
        """Declare the parameters, open the file, look at the graph once and start polling."""
        super().__init__(topics.PYLON_RECORDER)
        self.params = p = declare(self, PARAMETERS)
        self.wanted = {t.strip() for t in p['topics'].split(',') if t.strip()}
        path = output_path(p['output'], datetime.now().strftime('%Y%m%d_%H%M%S'))
        self.recording = Recording(path, chunk_size=p['chunk_size_bytes'],
                                   compression=p['compression']).open()
        self.subscribed: dict[str, Any] = {}
        self.asked: dict[str, tuple[str, str]] = {}
        self.skipped: dict[str, str] = {}
        self.get_logger().info(f'recording to {path.resolve()}'
                               + (f' ({len(self.wanted)} topics)' if self.wanted
                                  else ' (every topic)'))
        self.discover()
        self.discovery_timer = self.create_timer(p['discovery_period_sec'], self.discover)
        self.flush_timer = self.create_timer(p['flush_period_sec'], self.recording.flush)
        self.diagnostics = diagnostics.NodeDiagnostics(self, str(path.resolve()), self._report)

    def _report(self) -> diagnostics.Report:
        values = {'messages': self.recording.message_count,
                  'topics': len(self.recording.channels), 'skipped': len(self.skipped)}
        message = (f'recording {values["messages"]} messages on {values["topics"]} topics')
        if self.skipped:
            return diagnostics.Report(diagnostics.WARN, f'{message}; not recording '
                                      f'{", ".join(sorted(self.skipped))}', values)
        return diagnostics.Report(diagnostics.OK, message, values)

    def discover(self) -> None:
        """Subscribe to new topics; re-subscribe where a new publisher does not match."""
        for name, types in self.get_topic_names_and_types():
            if name in self.skipped or (self.wanted and name not in self.wanted) or \
                    (not self.wanted and hidden(name)):
                continue
            if len(types) != 1 or '/msg/' not in types[0]:
                self._skip(name, f'{len(types)} types ({", ".join(types)}), not one message '
                                 'type')
                continue
            publishers = self.get_publishers_info_by_topic(name)
            offers = [offer_of(info.qos_profile) for info in publishers]
            if not offers:
                continue                      # subscribers only: wait for a publisher
            if name not in self.subscribed:
                hashes = {str(info.topic_type_hash) for info in publishers}
                self._record(name, types[0], offers, hashes.pop() if len(hashes) == 1 else '')
            elif not all(compatible(self.asked[name], o) for o in offers):
                self._subscribe(name, types[0], offers)

    def _record(self, name: str, type_name: str, offers: list[Offer], type_hash: str) -> None:
        """Register the topic's channel and subscribe, or skip it (logged once)."""
        try:
            definition = definitions.definition(type_name)
            message_type(type_name)
        except LookupError as exc:          # DefinitionError is a LookupError
            self._skip(name, str(exc))
            return
        self.recording.add_topic(name, type_name, definition, offers, type_hash)
        self._subscribe(name, type_name, offers)

    def _subscribe(self, name: str, type_name: str, offers: list[Offer]) -> None:
        """(Re)subscribe with the QoS adapted to ``offers``."""
        reliability, durability = self.asked[name] = requested(offers)
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=self.params['depth'],
                         reliability=ReliabilityPolicy.RELIABLE if reliability == RELIABLE
                         else ReliabilityPolicy.BEST_EFFORT,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL
                         if durability == TRANSIENT_LOCAL else DurabilityPolicy.VOLATILE)
        old = self.subscribed.pop(name, None)
        if old is not None:
            self.destroy_subscription(old)
        self.get_logger().info(f'{name}: {"subscribing again" if old else "subscribed"} as '
                               f'{reliability}/{durability} for {len(offers)} publishers')
        stamped = starts_with_header(definitions.definition(type_name), type_name)
        self.subscribed[name] = self.create_subscription(
            message_type(type_name), name, self._writer(name, stamped), qos, raw=True)

    def _writer(self, name: str, stamped: bool):
        clock, write = self.get_clock(), self.recording.write

        def on_message(data: bytes) -> None:
            now = clock.now().nanoseconds
            stamp = header_stamp_ns(data) if stamped else 0
            write(name, data, now, stamp or now)
        return on_message

    def _skip(self, name: str, reason: str) -> None:
        self.skipped[name] = reason
        self.get_logger().warning(f'not recording {name}: {reason}')

    def finish(self) -> None:
        """Write the bag metadata and the summary: the file is complete."""
        started = time.monotonic()
        self.recording.flush()
        self.recording.close()
        self.get_logger().info(
            f'wrote {self.recording.message_count} messages on '
            f'{len(self.recording.channels)} topics to {self.recording.path} '
            f'(closed in {time.monotonic() - started:.2f} s)')
        unseen = sorted(self.wanted - set(self.recording.channels) - set(self.skipped))
        if unseen:
            self.get_logger().warning(f'never saw a publisher of {", ".join(unseen)}')


def main() -> int:
    """Entry point of ``pylon_recorder``."""
    return node_main.run(Recorder, Recorder.finish)
