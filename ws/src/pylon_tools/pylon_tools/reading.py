"""Read a recording (rosbag2's MCAP, ours or ``ros2 bag record``'s) into decoded messages.

``read_recording(path, topics)`` decodes the messages of the named topics with
mcap-ros2-support's decoder, which knows nothing but the definitions the file carries, so
no ROS install is needed. A complete file is read through its summary in log-time order;
a file without one (a recorder killed with SIGKILL) is read from the start, in file
order, up to its last complete record (``Recording.complete`` is False then).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
import re
import struct
from typing import Any

SEPARATOR = '\n' + '=' * 80 + '\n'
_CONSTANT = re.compile(r'^\s*[\w/]+\s+([A-Z][A-Z0-9_]*)\s*=\s*(-?\d+)\s*(#.*)?$')


class RecordingError(ValueError):
    """A file that is not a readable recording, or lacks what was asked of it."""


@dataclass
class Recording:
    """The decoded messages of some topics of a recording.

    ``messages[topic]`` is a list of ``(log_time_ns, message)`` in log-time order;
    ``types`` and ``schemas`` give every topic's type and its definition (of the topics
    read; of every channel when the file has a summary); ``start_ns`` is the first log
    time of the file (or of what was read).
    """

    path: Path
    messages: dict[str, list[tuple[int, Any]]] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    schemas: dict[str, str] = field(default_factory=dict)
    complete: bool = True
    start_ns: int = 0

    def of(self, topic: str) -> list[tuple[int, Any]]:
        """Return the messages of ``topic`` (empty when it was not recorded)."""
        return self.messages.get(topic, [])

    def seconds(self, log_time_ns: int) -> float:
        """Return a log time as seconds since the start of the recording."""
        return (log_time_ns - self.start_ns) * 1e-9


def constants(definition: str) -> dict[str, int]:
    """Return the integer constants of a message's own definition (``uint8 MODE_IDLE=0``)."""
    own = definition.split(SEPARATOR, 1)[0]
    found = {}
    for line in own.splitlines():
        match = _CONSTANT.match(line)
        if match:
            found[match.group(1)] = int(match.group(2))
    return found


def value_names(definition: str, prefix: str) -> dict[int, str]:
    """Return ``{value: name}`` of the constants starting with ``prefix`` (first name wins)."""
    names: dict[int, str] = {}
    for name, value in constants(definition).items():
        if name.startswith(prefix):
            names.setdefault(value, name[len(prefix):])
    return names


def _open_reader(stream: Any, path: Path) -> tuple[Any, Any]:
    """Return (reader, summary or None) of an MCAP stream; RecordingError if it is not one."""
    from mcap.exceptions import McapError
    from mcap.reader import make_reader, NonSeekingReader
    from mcap_ros2.decoder import DecoderFactory
    factories = [DecoderFactory()]
    try:
        reader = make_reader(stream, decoder_factories=factories)
        header = reader.get_header()
    except (McapError, ValueError, EOFError, struct.error) as exc:
        raise RecordingError(f'{path} is not an MCAP file ({exc or "too short"})') from None
    if header.profile not in ('ros2', ''):
        raise RecordingError(f'{path} is an MCAP file of profile {header.profile!r}, not ros2')
    try:
        summary = reader.get_summary()
    except (McapError, ValueError, EOFError, struct.error):
        summary = None
    if summary is None or summary.statistics is None:
        stream.seek(0)
        return NonSeekingReader(stream, decoder_factories=factories), None
    return reader, summary


def read_recording(path: str | Path, topics: Iterable[str]) -> Recording:
    """Return the decoded messages of ``topics`` in the recording at ``path``.

    RecordingError when the file cannot be opened or is not an MCAP file of ROS 2 messages.
    """
    from mcap.exceptions import McapError
    path = Path(path)
    wanted = sorted(set(topics))
    try:
        stream = open(path, 'rb')
    except OSError as exc:
        raise RecordingError(f'{path}: {exc.strerror}') from None
    with stream:
        reader, summary = _open_reader(stream, path)
        recording = Recording(path, complete=summary is not None)
        if summary is not None:
            recording.start_ns = summary.statistics.message_start_time
            for channel in summary.channels.values():
                schema = summary.schemas.get(channel.schema_id)
                recording.types[channel.topic] = schema.name if schema else ''
        messages = reader.iter_decoded_messages(wanted, log_time_order=summary is not None)
        try:
            for schema, channel, message, decoded in messages:
                recording.messages.setdefault(channel.topic, []).append(
                    (message.log_time, decoded))
                recording.types[channel.topic] = schema.name
                recording.schemas.setdefault(channel.topic, schema.data.decode())
        except (McapError, struct.error):
            if summary is not None:
                raise RecordingError(f'{path}: damaged recording') from None
    if summary is None:
        for found in recording.messages.values():
            found.sort(key=lambda pair: pair[0])
        firsts = [found[0][0] for found in recording.messages.values() if found]
        recording.start_ns = min(firsts, default=0)
    return recording


def plain(message: Any) -> Any:
    """Return a message (rclpy's or a decoded one) as plain data: dicts, lists, numbers.

    Messages become ``{field: value}``, arrays and sequences lists, so a message received
    live and the same message decoded from a recording compare equal.
    """
    if hasattr(message, 'get_fields_and_field_types'):
        return {name: plain(getattr(message, name))
                for name in message.get_fields_and_field_types()}
    if hasattr(message, '_full_text'):           # mcap_ros2's decoded message: its fields
        return {name: plain(getattr(message, name)) for name in type(message).__slots__}
    if isinstance(message, bytes | bytearray):
        return list(message)
    if isinstance(message, str):
        return message
    if hasattr(message, '__len__') and hasattr(message, '__iter__'):
        return [plain(item) for item in message]
    if hasattr(message, 'item'):                  # numpy scalars
        return message.item()
    return message
