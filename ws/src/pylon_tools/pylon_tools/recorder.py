"""rosbag2-compatible MCAP recordings, written as rosbag2's MCAP storage (Jazzy) writes them.

No rclpy here: ``recorder_node`` (``pylon_recorder``) wires a ROS graph to a ``Recording``.
The layout follows ``rosbag2_storage_mcap`` and ``rosbag2_cpp``'s ``SequentialWriter`` of
ROS 2 Jazzy (bag metadata version 9), so that ``ros2 bag info -s mcap`` and ``ros2 bag play
-s mcap`` read our files and ``mcap_ros2`` decodes them:

- header: profile ``ros2``; library ``pylon_recorder <version> (mcap <version>)``;
- a schema per message type: name ``pkg/msg/Type``, encoding ``ros2msg``, the complete
  definition (``pylon_tools.definitions``);
- a channel per topic: message encoding ``cdr``, metadata ``offered_qos_profiles`` (the
  publishers' QoS as rosbag2 serialises it: a YAML list, policies by rmw's names) and
  ``topic_type_hash`` (REP-2011 ``RIHS01_...``, ``''`` when unknown);
- messages: the CDR bytes as received, log time = receive time (ns), publish time = the
  header stamp for a type whose first field is a ``std_msgs/Header`` (a zero stamp, or no
  header: the receive time);
- a metadata record ``rosbag2`` with ``serialized_metadata`` (the bag's ``metadata.yaml``
  content) when the file is opened and again when it is closed, as rosbag2 writes them;
- chunks compressed with lz4 (zstd when ``zstandard`` is installed and asked for), written
  when ``chunk_size`` bytes are buffered or at ``flush()``, so an interrupted recording
  keeps everything up to its last written chunk; ``close()`` adds the summary (schemas,
  channels, statistics, chunk and metadata indexes).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
import os
from pathlib import Path
import re
import struct
from typing import Any, BinaryIO

import yaml

PROFILE = 'ros2'
SCHEMA_ENCODING = 'ros2msg'
MESSAGE_ENCODING = 'cdr'
METADATA_NAME = 'rosbag2'
METADATA_KEY = 'serialized_metadata'
QOS_KEY = 'offered_qos_profiles'
TYPE_HASH_KEY = 'topic_type_hash'
BAG_VERSION = 9                       # rosbag2_storage::BagMetadata::version in Jazzy
STORAGE_IDENTIFIER = 'mcap'
DEFAULT_DISTRO = 'jazzy'
LIBRARY = 'pylon_recorder 0.1.0'
INFINITE_NS = 2 ** 63 - 1             # RMW_DURATION_INFINITE and rosbag2's "no message yet"
COMPRESSIONS = ('lz4', 'zstd', 'none')

# rmw's names of the QoS policies (rmw_qos_*_policy_to_str), used by metadata version 9
RELIABLE, BEST_EFFORT = 'reliable', 'best_effort'
TRANSIENT_LOCAL, VOLATILE = 'transient_local', 'volatile'
_HEADER_TYPES = frozenset({'std_msgs/Header', 'std_msgs/msg/Header'})
_CDR_TIME = struct.Struct('<iI'), struct.Struct('>iI')


class RecordingError(ValueError):
    """A recording that cannot be opened as asked (file exists, unknown compression)."""


@dataclass(frozen=True)
class Offer:
    """The QoS one publisher offers, as the graph reports it and rosbag2 stores it.

    Policies are rmw's names (``reliable``, ``best_effort``, ``transient_local``,
    ``volatile``, ``keep_last``, ``unknown``, ``automatic``, ...); durations in ns, with
    ``INFINITE_NS`` for infinite. DDS discovery does not carry the history, so a remote
    publisher's is ``unknown`` with depth 0, as rosbag2 records it too.
    """

    reliability: str
    durability: str
    history: str = 'unknown'
    depth: int = 0
    deadline_ns: int = INFINITE_NS
    lifespan_ns: int = INFINITE_NS
    liveliness: str = 'automatic'
    liveliness_lease_duration_ns: int = INFINITE_NS
    avoid_ros_namespace_conventions: bool = False

    def to_yaml_node(self) -> dict[str, Any]:
        """Return the profile as rosbag2 writes it (``convert<rclcpp::QoS>``, version 9)."""
        return {'history': self.history, 'depth': self.depth,
                'reliability': self.reliability, 'durability': self.durability,
                'deadline': _duration(self.deadline_ns), 'lifespan': _duration(self.lifespan_ns),
                'liveliness': self.liveliness,
                'liveliness_lease_duration': _duration(self.liveliness_lease_duration_ns),
                'avoid_ros_namespace_conventions': self.avoid_ros_namespace_conventions}


def _duration(ns: int) -> dict[str, int]:
    return {'sec': ns // 1_000_000_000, 'nsec': ns % 1_000_000_000}


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def offers_yaml(offers: Sequence[Offer]) -> str:
    """Return a channel's ``offered_qos_profiles``: the YAML list rosbag2 serialises."""
    return _dump([offer.to_yaml_node() for offer in offers])


def requested(offers: Sequence[Offer]) -> tuple[str, str]:
    """Return the (reliability, durability) to subscribe with, as rosbag2 adapts it.

    Reliable only when every publisher offers Reliable (else Best Effort, which reaches
    all of them); Transient Local only when every publisher offers it (so a latched
    topic's last value is recorded), else Volatile.
    """
    reliable = bool(offers) and all(o.reliability == RELIABLE for o in offers)
    latched = bool(offers) and all(o.durability == TRANSIENT_LOCAL for o in offers)
    return (RELIABLE if reliable else BEST_EFFORT, TRANSIENT_LOCAL if latched else VOLATILE)


def compatible(subscription: tuple[str, str], offer: Offer) -> bool:
    """Tell whether a subscription (reliability, durability) matches a publisher's offer."""
    reliability, durability = subscription
    return not ((reliability == RELIABLE and offer.reliability != RELIABLE)
                or (durability == TRANSIENT_LOCAL and offer.durability != TRANSIENT_LOCAL))


# -- publish time from the header -----------------------------------------------------------

def _first_field_type(text: str) -> str:
    """Return the type of the first field of a ``.msg`` text ('' when it has none)."""
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        kind, *rest = line.split()
        if rest and '=' not in line:
            return kind
    return ''


def starts_with_header(definition: str, type_name: str) -> bool:
    """Tell whether a message's first field is a ``std_msgs/Header`` (its stamp leads the CDR)."""
    first = _first_field_type(definition.split('\n' + '=' * 80, 1)[0])
    if type_name.startswith('std_msgs/') and first == 'Header':
        return True
    return first in _HEADER_TYPES


def header_stamp_ns(data: bytes) -> int:
    """Return the stamp (ns) of a CDR message that starts with a ``std_msgs/Header``.

    The four bytes of encapsulation say the byte order; ``sec`` (int32) and ``nanosec``
    (uint32) follow at once. 0 when the data is too short.
    """
    if len(data) < 12:
        return 0
    sec, nanosec = _CDR_TIME[0 if data[1] & 1 else 1].unpack_from(data, 4)
    return sec * 1_000_000_000 + nanosec


# -- the file ---------------------------------------------------------------------------------

@dataclass
class Channel:
    """One recorded topic: its channel, type, offers and what was written."""

    topic: str
    type_name: str
    channel_id: int
    offers: tuple[Offer, ...]
    type_hash: str = ''
    count: int = 0


@dataclass
class _Span:
    """First and last log time (ns) and the count of the messages written."""

    start: int = INFINITE_NS
    end: int = 0
    count: int = 0

    def add(self, log_time: int) -> None:
        self.start, self.end = min(self.start, log_time), max(self.end, log_time)
        self.count += 1

    @property
    def duration(self) -> int:
        return self.end - self.start if self.count else 0


def output_path(text: str, stamp: str) -> Path:
    """Return the file a recording goes to: ``text`` (``.mcap`` added), or a dated name."""
    path = Path(text) if text else Path(f'pylon_{stamp}.mcap')
    return path if path.suffix == '.mcap' else path.with_name(path.name + '.mcap')


def _writer_compression(name: str) -> Any:
    from mcap.writer import CompressionType
    if name not in COMPRESSIONS:
        raise RecordingError(f'compression {name!r}: one of {", ".join(COMPRESSIONS)}')
    if name == 'zstd':
        try:
            import zstandard  # noqa: F401
        except ImportError:
            raise RecordingError('compression zstd needs the Python package zstandard, '
                                 'which is not installed; use lz4') from None
    return {'lz4': CompressionType.LZ4, 'zstd': CompressionType.ZSTD,
            'none': CompressionType.NONE}[name]


@dataclass
class Recording:
    """An MCAP file being written, as rosbag2 writes one (see the module's docstring).

    ``open()`` creates the file (never over an existing one), ``add_topic`` registers a
    schema (once per type) and a channel, ``write`` adds one message, ``flush`` writes the
    open chunk, ``close`` writes the bag metadata and the summary.
    """

    path: Path
    chunk_size: int = 1 << 20
    compression: str = 'lz4'
    distro: str = field(default_factory=lambda: os.environ.get('ROS_DISTRO') or DEFAULT_DISTRO)
    channels: dict[str, Channel] = field(default_factory=dict)
    _schemas: dict[str, int] = field(default_factory=dict)
    _span: _Span = field(default_factory=_Span)
    _stream: BinaryIO | None = None
    _writer: Any = None

    def open(self) -> Recording:
        """Create the file and write the header and the first bag metadata; return self."""
        from mcap import __version__ as mcap_version
        from mcap.writer import Writer
        compression = _writer_compression(self.compression)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._stream = open(self.path, 'xb')
        except FileExistsError:
            raise RecordingError(f'{self.path} exists: choose another output (a recording '
                                 'is never overwritten)') from None
        self._writer = Writer(self._stream, chunk_size=self.chunk_size, compression=compression)
        self._writer.start(profile=PROFILE, library=f'{LIBRARY} (mcap {mcap_version})')
        self._write_metadata()
        self._stream.flush()              # a readable MCAP file from the start
        return self

    def add_topic(self, topic: str, type_name: str, definition: str,
                  offers: Iterable[Offer], type_hash: str = '') -> Channel:
        """Register ``topic`` (its schema once per type) and return its channel."""
        if topic in self.channels:
            return self.channels[topic]
        if type_name not in self._schemas:
            self._schemas[type_name] = self._writer.register_schema(
                name=type_name, encoding=SCHEMA_ENCODING, data=definition.encode())
        offers = tuple(offers)
        channel_id = self._writer.register_channel(
            topic=topic, message_encoding=MESSAGE_ENCODING, schema_id=self._schemas[type_name],
            metadata={QOS_KEY: offers_yaml(offers), TYPE_HASH_KEY: type_hash})
        self.channels[topic] = Channel(topic, type_name, channel_id, offers, type_hash)
        return self.channels[topic]

    def write(self, topic: str, data: bytes, log_time: int, publish_time: int) -> None:
        """Add one message (CDR bytes) of a registered topic."""
        channel = self.channels[topic]
        self._writer.add_message(channel.channel_id, log_time=log_time, data=data,
                                 publish_time=publish_time)
        channel.count += 1
        self._span.add(log_time)

    def flush(self) -> None:
        """Write the open chunk (if it has a message) and flush the file."""
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        """Write the final bag metadata and the summary; close the file."""
        if self._writer is None:
            return
        self._write_metadata()
        self._writer.finish()
        self._stream.close()
        self._writer = None

    @property
    def message_count(self) -> int:
        """Return how many messages were written."""
        return self._span.count

    def metadata(self) -> dict[str, Any]:
        """Return the bag metadata (``rosbag2_storage::BagMetadata``, version 9) as data."""
        span, name = self._span, self.path.name
        topics = [{'topic_metadata': {
            'name': c.topic, 'type': c.type_name, 'serialization_format': MESSAGE_ENCODING,
            QOS_KEY: [o.to_yaml_node() for o in c.offers],
            'type_description_hash': c.type_hash}, 'message_count': c.count}
            for c in self.channels.values()]
        return {'version': BAG_VERSION, 'storage_identifier': STORAGE_IDENTIFIER,
                'duration': {'nanoseconds': span.duration},
                'starting_time': {'nanoseconds_since_epoch': span.start},
                'message_count': span.count, 'topics_with_message_count': topics,
                'compression_format': '', 'compression_mode': '',
                'relative_file_paths': [name],
                'files': [{'path': name,
                           'starting_time': {'nanoseconds_since_epoch': span.start},
                           'duration': {'nanoseconds': span.duration},
                           'message_count': span.count}],
                'custom_data': None, 'ros_distro': self.distro}

    def _write_metadata(self) -> None:
        self._writer.add_metadata(METADATA_NAME, {METADATA_KEY: _dump(self.metadata())})


_HIDDEN = re.compile(r'(^|/)_')


def hidden(topic: str) -> bool:
    """Tell whether a topic is hidden (a token starts with ``_``), as ``ros2 bag`` skips them."""
    return bool(_HIDDEN.search(topic))
