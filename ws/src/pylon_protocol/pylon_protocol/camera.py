"""Camera frames: split a raw ``rgb8`` image into chunks and put it back together.

A frame is tightly packed ``rgb8`` (row 0 at the top, ``step = width * 3``,
``frameBytes = step * height``). The sender cuts the raw bytes into pieces, base64-encodes
each into ``data`` and repeats all frame metadata on every chunk; ``sha256`` is the digest
of the whole raw frame.

The receiver keys assemblies by ``(sessionId, sequence, partFlightId, source, sensorId)``.
Chunks may arrive in any order. An identical duplicate is ignored; a different payload at
an index already held, any metadata change, or more bytes than ``frameBytes`` discards the
frame. At most ``max_pending`` frames are assembled at once (the one started first is
evicted) and a frame expires ``timeout`` seconds after its last chunk. A complete frame
must have exactly ``frameBytes`` bytes and the announced SHA-256, and its universal time
must exceed the last delivered frame's of the same ``(source, sensorId, partFlightId)``.

The chunk fields are checked once, by the packet schema (``packets.CAMERA_FRAME_CHUNK``,
which also holds the receiver limits): ``FrameAssembler.add_decoded`` takes packets
``packets.decode_state`` returned, and ``FrameAssembler.add`` runs the same schema on a
bare chunk payload first.
"""

from __future__ import annotations

import base64
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
import hashlib
import math
import numbers

from pylon_protocol.errors import ProtocolError
from pylon_protocol.frames import quat, sensor_to_optical, unit_quat, vec3
from pylon_protocol.names import HEX32_RE
from pylon_protocol.packets import (
    CAMERA_ENCODING,
    CAMERA_FRAME_CHUNK,
    CAMERA_SOURCES,
    MAX_CAMERA_CHUNKS,
    MAX_CAMERA_DIMENSION,
    MAX_CAMERA_FRAME_BYTES,
    ROS_SENSOR,
)
from pylon_protocol.schema import INT64_MAX, UINT64_MAX

# Sender settings and their clamps.
DEFAULT_CHUNK_BYTES = 12000
MIN_CHUNK_BYTES = 512
MAX_CHUNK_BYTES = 36000
DEFAULT_MAX_CHUNKS = 512
DEFAULT_MAX_FRAME_BYTES = MAX_CAMERA_FRAME_BYTES   # the mod's default is the bridge's limit
DEFAULT_VERTICAL_FOV_DEG = 60.0
MIN_VERTICAL_FOV_DEG = 20.0
MAX_VERTICAL_FOV_DEG = 120.0

# Receiver settings (the limits of the chunk fields are the packet schema's).
DEFAULT_MAX_PENDING = 16
DEFAULT_TIMEOUT = 2.0
DEFAULT_MAX_STREAMS = 256

DROP_REASONS = (
    'bad_chunk',
    'stale_frame',
    'metadata_mismatch',
    'conflicting_chunk',
    'frame_overflow',
    'frame_size_mismatch',
    'sha256_mismatch',
    'evicted',
    'expired',
)
"""Every key ``FrameAssembler.drops`` can hold; ``duplicate_chunk`` counts separately."""


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def _is_int(value: object) -> bool:
    return type(value) is int


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _sender_int(value: object) -> object:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return value


def _bad_frame(detail: str, field: str) -> ProtocolError:
    return ProtocolError('bad_frame', detail, field)


def _check_image(raw: object, width: object, height: object, max_frame_bytes: object) -> bytes:
    """Return the raw ``rgb8`` bytes of a ``width`` x ``height`` frame the sender may send."""
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise _bad_frame('raw must be bytes', 'raw')
    data = bytes(raw)
    for name, value in (('width', width), ('height', height)):
        if not _is_int(value) or not 1 <= value <= MAX_CAMERA_DIMENSION:
            raise _bad_frame(f'{name} must be 1..{MAX_CAMERA_DIMENSION}', name)
    frame_bytes = width * 3 * height
    if len(data) != frame_bytes:
        raise _bad_frame(f'expected {frame_bytes} bytes, got {len(data)}', 'raw')
    if not _is_int(max_frame_bytes) or frame_bytes > min(max_frame_bytes,
                                                         MAX_CAMERA_FRAME_BYTES):
        raise ProtocolError('frame_too_large', 'frame exceeds the frame size limit', 'raw')
    return data


def _check_identity(session_id: object, sequence: object, sensor_id: object, source: object,
                    part_flight_id: object) -> None:
    """Check the fields that name a frame and its stream."""
    if not isinstance(session_id, str) or not HEX32_RE.fullmatch(session_id):
        raise _bad_frame('expected 32 lowercase hex digits', 'sessionId')
    if not _is_int(sequence) or not 1 <= sequence <= INT64_MAX:
        raise _bad_frame('expected 1..2^63-1', 'sequence')
    if not isinstance(sensor_id, str) or not sensor_id.strip():
        raise _bad_frame('expected a non-blank string', 'sensorId')
    if source not in CAMERA_SOURCES:
        raise _bad_frame(f'expected one of {CAMERA_SOURCES}', 'source')
    if not _is_int(part_flight_id) or not 0 <= part_flight_id <= UINT64_MAX:
        raise _bad_frame('expected 0..2^64-1', 'partFlightId')


def _pieces(frame_bytes: int, chunk_bytes: object, max_chunks: object) -> tuple[int, int]:
    """Return (bytes per chunk, chunk count) under the sender clamps."""
    if not _is_int(chunk_bytes) or not _is_int(max_chunks):
        raise ProtocolError('bad_limit', 'chunk_bytes and max_chunks must be integers')
    piece = int(_clamp(chunk_bytes, MIN_CHUNK_BYTES, MAX_CHUNK_BYTES))
    limit = int(_clamp(max_chunks, 1, MAX_CAMERA_CHUNKS))
    count = (frame_bytes + piece - 1) // piece
    if count > limit:
        raise ProtocolError('too_many_chunks', f'{count} chunks exceed {limit}', 'chunkCount')
    return piece, count


def chunk_frame(
    raw: bytes,
    *,
    width: int,
    height: int,
    session_id: str,
    sequence: int,
    sensor_id: str,
    source: str,
    part_flight_id: int,
    universal_time: float,
    vertical_fov_deg: float,
    frame_position: Sequence[float],
    frame_rotation: Sequence[float],
    vessel: str | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_chunks: int = DEFAULT_MAX_CHUNKS,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
) -> list[dict]:
    """
    Split one ``rgb8`` frame into ``pylon_camera_frame_chunk`` payloads.

    Each payload holds the chunk fields in wire order, without ``type``, ``version`` or
    the runtime envelope. Sender clamps: ``chunk_bytes`` to 512..36000, ``max_chunks`` to
    1..1024, ``vertical_fov_deg`` to 20..120 (non-finite -> 60). ``vessel`` is sent for
    ``rgb_camera`` only. Raise ProtocolError when the frame would be skipped (more chunks
    than ``max_chunks``, larger than ``max_frame_bytes``) or would violate a receiver
    limit.
    """
    width, height = _sender_int(width), _sender_int(height)
    sequence, part_flight_id = _sender_int(sequence), _sender_int(part_flight_id)
    data = _check_image(raw, width, height, max_frame_bytes)
    step = width * 3
    frame_bytes = len(data)
    _check_identity(session_id, sequence, sensor_id, source, part_flight_id)
    position = vec3(frame_position, 'framePosition')
    rotation = quat(frame_rotation, 'frameRotation')
    unit_quat(rotation)
    if not _finite(universal_time):
        raise _bad_frame('expected a finite number', 'universalTime')
    fov = float(vertical_fov_deg) if _finite(vertical_fov_deg) else DEFAULT_VERTICAL_FOV_DEG
    fov = _clamp(fov, MIN_VERTICAL_FOV_DEG, MAX_VERTICAL_FOV_DEG)
    piece, count = _pieces(frame_bytes, chunk_bytes, max_chunks)

    digest = hashlib.sha256(data).hexdigest()
    chunks = []
    for index in range(count):
        chunk: dict[str, object] = {
            'source': source,
            'sessionId': session_id,
            'sequence': sequence,
            'chunkIndex': index,
            'chunkCount': count,
            'frameBytes': frame_bytes,
            'sha256': digest,
            'sensorId': sensor_id,
        }
        if source == 'rgb_camera':
            chunk['vessel'] = vessel if isinstance(vessel, str) else ''
        chunk.update(
            partFlightId=part_flight_id,
            universalTime=float(universal_time),
            width=width,
            height=height,
            step=step,
            encoding=CAMERA_ENCODING,
            verticalFovDeg=fov,
            coordinateFrame=ROS_SENSOR,
            framePosition=list(position),
            frameRotation=list(rotation),
            data=base64.b64encode(data[index * piece:(index + 1) * piece]).decode('ascii'),
        )
        chunks.append(chunk)
    return chunks


@dataclass(frozen=True)
class Frame:
    """A complete, verified camera frame."""

    source: str
    sensor_id: str
    part_flight_id: int
    session_id: str
    sequence: int
    universal_time: float
    width: int
    height: int
    step: int
    encoding: str
    vertical_fov_deg: float
    frame_position: tuple[float, float, float]
    frame_rotation: tuple[float, float, float, float]
    vessel: str
    sha256: str
    data: bytes

    @property
    def stream(self) -> tuple[str, str, int]:
        """Return ``(source, sensorId, partFlightId)``, the key of the time-order rule."""
        return (self.source, self.sensor_id, self.part_flight_id)

    @property
    def optical_rotation(self) -> tuple[float, float, float, float]:
        """Return the REP 103 optical-frame orientation in the owning part's frame."""
        return sensor_to_optical(self.frame_rotation)


@dataclass(frozen=True)
class _Chunk:
    key: tuple[str, int, int, str, str]
    meta: tuple
    index: int
    count: int
    frame_bytes: int
    universal_time: float
    data: bytes


class _Pending:
    __slots__ = ('meta', 'parts', 'size', 'touched', 'count')

    def __init__(self, meta: tuple, count: int, now: float) -> None:
        self.meta = meta
        self.count = count
        self.parts: dict[int, bytes] = {}
        self.size = 0
        self.touched = now


def _chunk_of(packet: Mapping[str, object]) -> _Chunk:
    """Read a chunk the packet schema accepted: its frame key, metadata and data."""
    ut = float(packet['universalTime'])
    meta = (
        packet['chunkCount'], packet['frameBytes'], packet['sha256'], packet.get('vessel', ''),
        ut, packet['width'], packet['height'], packet['step'], float(packet['verticalFovDeg']),
        packet.get('coordinateFrame', ROS_SENSOR), tuple(packet['framePosition']),
        tuple(packet['frameRotation']),
    )
    key = (packet['sessionId'], packet['sequence'], packet['partFlightId'], packet['source'],
           packet['sensorId'])
    return _Chunk(key, meta, packet['chunkIndex'], packet['chunkCount'], packet['frameBytes'],
                  ut, base64.b64decode(packet['data']))


class FrameAssembler:
    """
    Reassemble camera frames from chunks under the receiver rules.

    ``add`` returns a ``Frame`` when a chunk completes one, None when more chunks are
    needed or the chunk was an identical duplicate, and raises ProtocolError (after
    counting it in ``drops``) when the chunk or its frame is dropped. Evictions and
    expiries are counted without raising. Memory is bounded by ``max_pending`` frames of
    at most 4 MiB each and ``max_streams`` remembered universal times (least recently
    delivered forgotten first).
    """

    def __init__(
        self,
        max_pending: int = DEFAULT_MAX_PENDING,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        max_streams: int = DEFAULT_MAX_STREAMS,
    ) -> None:
        if not _is_int(max_pending) or max_pending < 1:
            raise ProtocolError('bad_limit', 'max_pending must be >= 1', 'max_pending')
        if not _finite(timeout) or timeout <= 0:
            raise ProtocolError('bad_limit', 'timeout must be > 0', 'timeout')
        if not _is_int(max_streams) or max_streams < 1:
            raise ProtocolError('bad_limit', 'max_streams must be >= 1', 'max_streams')
        self.max_pending = max_pending
        self.timeout = float(timeout)
        self.max_streams = max_streams
        self._pending: OrderedDict[tuple, _Pending] = OrderedDict()
        self._last_ut: OrderedDict[tuple[str, str, int], float] = OrderedDict()
        self.drops: Counter[str] = Counter()
        self.duplicates = 0
        self.completed = 0

    @property
    def pending_count(self) -> int:
        """Return the number of frames being assembled."""
        return len(self._pending)

    def last_universal_time(
        self, source: str, sensor_id: str, part_flight_id: int
    ) -> float | None:
        """Return the universal time of the last delivered frame of a stream, or None."""
        return self._last_ut.get((source, sensor_id, part_flight_id))

    def reset(self) -> None:
        """Forget pending frames and per-stream times (on a session change)."""
        self._pending.clear()
        self._last_ut.clear()

    def expire(self, now: float) -> int:
        """Discard frames whose last chunk is older than ``timeout``; return how many."""
        old = [k for k, p in self._pending.items() if now - p.touched > self.timeout]
        for key in old:
            del self._pending[key]
        if old:
            self.drops['expired'] += len(old)
        return len(old)

    def _drop(
        self, reason: str, detail: str, field: str = '', key: tuple | None = None
    ) -> ProtocolError:
        if key is not None:
            self._pending.pop(key, None)
        self.drops[reason] += 1
        return ProtocolError(reason, detail, field)

    def _is_stale(self, stream: tuple[str, str, int], ut: float) -> bool:
        last = self._last_ut.get(stream)
        return last is not None and ut <= last

    def add(self, chunk: Mapping[str, object], now: float) -> Frame | None:
        """Check a bare chunk payload with the packet schema, then add it (``add_decoded``)."""
        self.expire(now)
        try:
            packet = CAMERA_FRAME_CHUNK(chunk)
        except ProtocolError as error:
            self.drops['bad_chunk'] += 1
            raise ProtocolError('bad_chunk', f'{error.reason}: {error.detail}',
                                error.field) from None
        return self._assemble(_chunk_of(packet), now)

    def add_decoded(self, packet: Mapping[str, object], now: float) -> Frame | None:
        """Add one chunk the packet schema accepted, received at monotonic time ``now``."""
        self.expire(now)
        return self._assemble(_chunk_of(packet), now)

    def _assemble(self, part: _Chunk, now: float) -> Frame | None:
        key = part.key
        stream = (key[3], key[4], key[2])
        if self._is_stale(stream, part.universal_time):
            raise self._drop('stale_frame', 'universalTime not after the last frame',
                             'universalTime', key)
        pending = self._pending.get(key)
        if pending is None:
            while len(self._pending) >= self.max_pending:
                self._pending.popitem(last=False)
                self.drops['evicted'] += 1
            pending = _Pending(part.meta, part.count, now)
            self._pending[key] = pending
        elif pending.meta != part.meta:
            raise self._drop('metadata_mismatch', 'frame metadata changed between chunks',
                             '', key)
        held = pending.parts.get(part.index)
        if held is not None:
            if held == part.data:
                pending.touched = now
                self.duplicates += 1
                return None
            raise self._drop('conflicting_chunk', 'different data for a chunk index',
                             'chunkIndex', key)
        if pending.size + len(part.data) > part.frame_bytes:
            raise self._drop('frame_overflow', 'more bytes than frameBytes', 'data', key)
        pending.parts[part.index] = part.data
        pending.size += len(part.data)
        pending.touched = now
        if len(pending.parts) < pending.count:
            return None
        del self._pending[key]
        return self._complete(key, stream, pending)

    def _complete(self, key: tuple, stream: tuple[str, str, int], pending: _Pending) -> Frame:
        raw = b''.join(pending.parts[i] for i in range(pending.count))
        (_, frame_bytes, digest, vessel, ut, width, height, step, fov, _frame, position,
         rotation) = pending.meta
        if len(raw) != frame_bytes:
            raise self._drop('frame_size_mismatch', f'{len(raw)} != {frame_bytes} bytes',
                             'frameBytes')
        if hashlib.sha256(raw).hexdigest() != digest:
            raise self._drop('sha256_mismatch', 'frame digest differs', 'sha256')
        if self._is_stale(stream, ut):
            raise self._drop('stale_frame', 'universalTime not after the last frame',
                             'universalTime')
        self._last_ut.pop(stream, None)
        self._last_ut[stream] = ut
        while len(self._last_ut) > self.max_streams:
            self._last_ut.popitem(last=False)
        self.completed += 1
        session, sequence, part_id, source, sensor = key
        return Frame(
            source=source,
            sensor_id=sensor,
            part_flight_id=part_id,
            session_id=session,
            sequence=sequence,
            universal_time=ut,
            width=width,
            height=height,
            step=step,
            encoding=CAMERA_ENCODING,
            vertical_fov_deg=fov,
            frame_position=position,
            frame_rotation=unit_quat(rotation),
            vessel=vessel,
            sha256=digest,
            data=raw,
        )
