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
"""

from __future__ import annotations

import base64
import binascii
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
import hashlib
import math
import numbers

from pylon_protocol.errors import ProtocolError
from pylon_protocol.frames import quat, quat_normalize, sensor_to_optical, vec3
from pylon_protocol.names import HEX32_RE, HEX64_RE

CHUNK_TYPE = 'pylon_camera_frame_chunk'
ENCODING = 'rgb8'
COORDINATE_FRAME = 'ros_sensor'
SOURCES = ('rgb_camera', 'docking_port')
DEFAULT_SOURCE = 'rgb_camera'

# Sender settings and their clamps.
DEFAULT_CHUNK_BYTES = 12000
MIN_CHUNK_BYTES = 512
MAX_CHUNK_BYTES = 36000
DEFAULT_MAX_CHUNKS = 512
MAX_MAX_CHUNKS = 1024
DEFAULT_MAX_FRAME_BYTES = 4_194_304
DEFAULT_VERTICAL_FOV_DEG = 60.0
MIN_VERTICAL_FOV_DEG = 20.0
MAX_VERTICAL_FOV_DEG = 120.0

# Receiver limits.
MAX_CHUNK_COUNT = 1024
MAX_DECODED_CHUNK_BYTES = 65536
MAX_DATA_CHARS = 4 * ((MAX_DECODED_CHUNK_BYTES + 2) // 3)
MAX_FRAME_BYTES = 4 * 1024 * 1024
MAX_DIMENSION = 4096
MAX_STEP = 65536
MAX_SEQUENCE = 2**63 - 1
MAX_PART_FLIGHT_ID = 2**64 - 1
MAX_SENSOR_ID_CHARS = 1024
MAX_VESSEL_CHARS = 1024
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


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value: object) -> bool:
    return _is_number(value) and math.isfinite(value)


def _bad(detail: str, field: str) -> ProtocolError:
    return ProtocolError('bad_chunk', detail, field)


def _int_field(
    chunk: Mapping, field: str, low: int, high: int, default: int | None = None
) -> int:
    value = chunk.get(field, default)
    if not _is_int(value) or not low <= value <= high:
        raise _bad(f'expected an integer {low}..{high}', field)
    return value


def _numbers(value: object, size: int, field: str) -> tuple[float, ...]:
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)) or len(value) != size:
        raise _bad(f'expected {size} numbers', field)
    if not all(_finite(v) for v in value):
        raise _bad('expected finite numbers', field)
    return tuple(float(v) for v in value)


def _sender_int(value: object) -> object:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return value


def decode_base64_strict(data: object, field: str = 'data', max_chars: int | None = None) -> bytes:
    """
    Decode standard, padded, canonical base64 or raise ProtocolError(``bad_chunk``).

    Whitespace, the URL-safe alphabet, missing padding and non-zero pad bits are all
    rejected. ``max_chars`` bounds the text length before anything is decoded.
    """
    if not isinstance(data, str):
        raise _bad('expected a base64 string', field)
    if max_chars is not None and len(data) > max_chars:
        raise _bad(f'longer than {max_chars} characters', field)
    if len(data) % 4:
        raise _bad('base64 length is not a multiple of 4', field)
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as error:
        raise _bad(f'invalid base64 ({error})', field) from None
    if base64.b64encode(raw).decode('ascii') != data:
        raise _bad('non-canonical base64', field)
    return raw


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
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise ProtocolError('bad_frame', 'raw must be bytes', 'raw')
    data = bytes(raw)
    width, height = _sender_int(width), _sender_int(height)
    sequence, part_flight_id = _sender_int(sequence), _sender_int(part_flight_id)
    if not _is_int(width) or not 1 <= width <= MAX_DIMENSION:
        raise ProtocolError('bad_frame', 'width must be 1..4096', 'width')
    if not _is_int(height) or not 1 <= height <= MAX_DIMENSION:
        raise ProtocolError('bad_frame', 'height must be 1..4096', 'height')
    step = width * 3
    frame_bytes = step * height
    if len(data) != frame_bytes:
        raise ProtocolError('bad_frame', f'expected {frame_bytes} bytes, got {len(data)}', 'raw')
    if not _is_int(max_frame_bytes) or frame_bytes > min(max_frame_bytes, MAX_FRAME_BYTES):
        raise ProtocolError('frame_too_large', 'frame exceeds the frame size limit', 'raw')
    if not isinstance(session_id, str) or not HEX32_RE.fullmatch(session_id):
        raise ProtocolError('bad_frame', 'expected 32 lowercase hex digits', 'sessionId')
    if not _is_int(sequence) or not 1 <= sequence <= MAX_SEQUENCE:
        raise ProtocolError('bad_frame', 'expected 1..2^63-1', 'sequence')
    if not isinstance(sensor_id, str) or not sensor_id.strip():
        raise ProtocolError('bad_frame', 'expected a non-blank string', 'sensorId')
    if source not in SOURCES:
        raise ProtocolError('bad_frame', f'expected one of {SOURCES}', 'source')
    if not _is_int(part_flight_id) or not 0 <= part_flight_id <= MAX_PART_FLIGHT_ID:
        raise ProtocolError('bad_frame', 'expected 0..2^64-1', 'partFlightId')
    position = vec3(frame_position, 'framePosition')
    rotation = quat(frame_rotation, 'frameRotation')
    quat_normalize(rotation)
    if not _finite(universal_time):
        raise ProtocolError('bad_frame', 'expected a finite number', 'universalTime')
    fov = float(vertical_fov_deg) if _finite(vertical_fov_deg) else DEFAULT_VERTICAL_FOV_DEG
    fov = _clamp(fov, MIN_VERTICAL_FOV_DEG, MAX_VERTICAL_FOV_DEG)
    if not _is_int(chunk_bytes) or not _is_int(max_chunks):
        raise ProtocolError('bad_limit', 'chunk_bytes and max_chunks must be integers')
    piece = int(_clamp(chunk_bytes, MIN_CHUNK_BYTES, MAX_CHUNK_BYTES))
    limit = int(_clamp(max_chunks, 1, MAX_MAX_CHUNKS))
    count = (frame_bytes + piece - 1) // piece
    if count > limit:
        raise ProtocolError('too_many_chunks', f'{count} chunks exceed {limit}', 'chunkCount')

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
            encoding=ENCODING,
            verticalFovDeg=fov,
            coordinateFrame=COORDINATE_FRAME,
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


def _parse_chunk(chunk: Mapping[str, object]) -> _Chunk:
    """Validate one chunk's fields against the receiver limits and decode its data."""
    if not isinstance(chunk, Mapping):
        raise _bad('expected a JSON object', '')
    count = _int_field(chunk, 'chunkCount', 1, MAX_CHUNK_COUNT)
    index = _int_field(chunk, 'chunkIndex', 0, MAX_CHUNK_COUNT - 1)
    if index >= count:
        raise _bad('chunkIndex must be below chunkCount', 'chunkIndex')
    frame_bytes = _int_field(chunk, 'frameBytes', 1, MAX_FRAME_BYTES)
    width = _int_field(chunk, 'width', 1, MAX_DIMENSION)
    height = _int_field(chunk, 'height', 1, MAX_DIMENSION)
    step = _int_field(chunk, 'step', 1, MAX_STEP)
    if step != width * 3 or frame_bytes != step * height:
        raise _bad('rgb8 needs step == width*3 and frameBytes == step*height', 'step')
    sequence = _int_field(chunk, 'sequence', 1, MAX_SEQUENCE)
    part = _int_field(chunk, 'partFlightId', 0, MAX_PART_FLIGHT_ID, 0)
    session = chunk.get('sessionId')
    if not isinstance(session, str) or not HEX32_RE.fullmatch(session):
        raise _bad('expected 32 lowercase hex digits', 'sessionId')
    digest = chunk.get('sha256')
    if not isinstance(digest, str) or not HEX64_RE.fullmatch(digest):
        raise _bad('expected 64 lowercase hex digits', 'sha256')
    if chunk.get('encoding') != ENCODING:
        raise _bad('only rgb8 is supported', 'encoding')
    fov = chunk.get('verticalFovDeg')
    if not _finite(fov) or not 0.0 < fov < 180.0:
        raise _bad('expected a number in (0, 180)', 'verticalFovDeg')
    position = _numbers(chunk.get('framePosition'), 3, 'framePosition')
    rotation = _numbers(chunk.get('frameRotation'), 4, 'frameRotation')
    try:
        quat_normalize(rotation)
    except ProtocolError:
        raise _bad('quaternion norm is below 1e-9', 'frameRotation') from None
    source = chunk.get('source')
    if source is None or source == '':
        source = DEFAULT_SOURCE
    if source not in SOURCES:
        raise _bad(f'expected one of {SOURCES}', 'source')
    sensor = chunk.get('sensorId')
    if not isinstance(sensor, str) or not sensor.strip() or len(sensor) > MAX_SENSOR_ID_CHARS:
        raise _bad('expected a non-blank string', 'sensorId')
    ut = chunk.get('universalTime')
    if not _finite(ut):
        raise _bad('expected a finite number', 'universalTime')
    vessel = chunk.get('vessel', '')
    if not isinstance(vessel, str) or len(vessel) > MAX_VESSEL_CHARS:
        raise _bad('expected a string', 'vessel')
    frame = chunk.get('coordinateFrame', COORDINATE_FRAME)
    if not isinstance(frame, str) or len(frame) > MAX_VESSEL_CHARS:
        raise _bad('expected a string', 'coordinateFrame')
    data = decode_base64_strict(chunk.get('data'), 'data', MAX_DATA_CHARS)
    if not 1 <= len(data) <= MAX_DECODED_CHUNK_BYTES:
        raise _bad('decoded chunk must be 1..65536 bytes', 'data')
    meta = (
        count, frame_bytes, digest, vessel, float(ut), width, height, step,
        float(fov), frame, position, rotation,
    )
    return _Chunk((session, sequence, part, source, sensor), meta, index, count, frame_bytes,
                  float(ut), data)


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
        """Add one chunk received at monotonic time ``now``."""
        self.expire(now)
        try:
            part = _parse_chunk(chunk)
        except ProtocolError:
            self.drops['bad_chunk'] += 1
            raise
        key = part.key
        session, sequence, part_id, source, sensor = key
        stream = (source, sensor, part_id)
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
            encoding=ENCODING,
            vertical_fov_deg=fov,
            frame_position=position,
            frame_rotation=quat_normalize(rotation),
            vessel=vessel,
            sha256=digest,
            data=raw,
        )
