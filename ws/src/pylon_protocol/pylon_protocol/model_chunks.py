"""Vessel models in ``pylon_vessel_urdf_chunk`` datagrams: chunking and reassembly.

The sender serialises a ``pylon_active_vessel_proxy`` bundle (``pylon_protocol.bundle``)
to UTF-8, gzips it, cuts the compressed bytes into chunks and sends each base64-encoded in
a ``pylon_vessel_urdf_chunk``. ``sha256`` is the digest of all compressed bytes, ``modelId``
the digest of the URDF text (UTF-8). The whole model is re-sent every ``refreshSeconds``;
a receiver treats it as current for ``expiresAfterSec`` after the last complete reception.

The chunk fields are checked once, by the packet schema (``packets.VESSEL_URDF_CHUNK``):
``ModelAssembler.add_decoded`` takes packets ``packets.decode_state`` returned, and
``ModelAssembler.add`` runs the same schema on a bare chunk payload first.
"""

from __future__ import annotations

import base64
from collections import Counter, OrderedDict
from collections.abc import Mapping
import dataclasses
from dataclasses import dataclass
import hashlib
import ipaddress
import json
import math
import zlib

from pylon_protocol.bundle import check_bundle, encode_bundle, validate_bundle
from pylon_protocol.errors import ProtocolError
from pylon_protocol.names import HEX32_RE
from pylon_protocol.packets import (
    MAX_MODEL_CHUNKS,
    MAX_MODEL_COMPRESSED_BYTES,
    MAX_MODEL_DECOMPRESSED_BYTES,
    MOD_MAX_DATAGRAM_BYTES,
    MODEL_ENCODING,
    SEND_RATES_HZ,
    VESSEL_URDF_CHUNK,
)
from pylon_protocol.urdf import Urdf

# Sender settings and their clamps.
DEFAULT_CHUNK_BYTES = 12000
MIN_CHUNK_BYTES = 128
MAX_CHUNK_BYTES = 48000
DEFAULT_MAX_CHUNKS = 256
DATAGRAM_OVERHEAD_BYTES = 1024
DEFAULT_REFRESH_SECONDS = 1.0 / SEND_RATES_HZ['pylon_vessel_urdf_chunk']
MIN_REFRESH_SECONDS = 0.5
MAX_REFRESH_SECONDS = 30.0
MIN_EXPIRES_AFTER_SEC = 3.0

# Receiver settings (the size limits are the packet module's).
ASSEMBLY_PURGE_SECONDS = 10.0
CLEARED_TTL_SECONDS = 120.0
MAX_CLEARED_SESSIONS = 1024
MAX_ASSEMBLIES = 8

_INFLATE_PIECE = 1 << 20

DROP_REASONS = (
    'remote_source',
    'bad_chunk',
    'cleared_session',
    'metadata_mismatch',
    'conflicting_chunk',
    'compressed_too_large',
    'sha256_mismatch',
    'bad_gzip',
    'decompressed_too_large',
    'bad_bundle',
    'bundle_mismatch',
    'bad_urdf',
    'evicted',
    'purged',
)
"""Every key ``ModelAssembler.drops`` can hold."""


def _finite(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
    )


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def _check_session_id(session_id: object) -> None:
    if not isinstance(session_id, str) or not HEX32_RE.match(session_id):
        raise ProtocolError('bad_field', 'expected 32 lowercase hex digits', 'sessionId')


# -- sender ---------------------------------------------------------------------------------

def effective_chunk_bytes(chunk_bytes: int, max_datagram_bytes: int) -> int:
    """
    Return the compressed bytes per chunk the sender uses.

    ``chunk_bytes`` is clamped to 128..48000, then capped so that a chunk's base64 text
    plus 1024 bytes of other fields fits ``max_datagram_bytes``.
    """
    if type(chunk_bytes) is not int or type(max_datagram_bytes) is not int:
        raise ProtocolError('bad_limit', 'chunk_bytes and max_datagram_bytes must be ints')
    cap = (max_datagram_bytes - DATAGRAM_OVERHEAD_BYTES) * 3 // 4
    size = min(int(_clamp(chunk_bytes, MIN_CHUNK_BYTES, MAX_CHUNK_BYTES)), cap)
    if size < 1:
        raise ProtocolError('bad_limit', 'max_datagram_bytes leaves no room for data')
    return size


def expires_after_for(refresh_seconds: float) -> float:
    """Return ``expiresAfterSec`` for a refresh period (clamped to 0.5..30 s)."""
    refresh = float(refresh_seconds) if _finite(refresh_seconds) else DEFAULT_REFRESH_SECONDS
    refresh = _clamp(refresh, MIN_REFRESH_SECONDS, MAX_REFRESH_SECONDS)
    return max(MIN_EXPIRES_AFTER_SEC, refresh * 3.0)


def chunk_model(
    bundle: Mapping[str, object],
    *,
    session_id: str,
    sent_at_ut: float,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_chunks: int = DEFAULT_MAX_CHUNKS,
    max_datagram_bytes: int = MOD_MAX_DATAGRAM_BYTES,
    refresh_seconds: float = DEFAULT_REFRESH_SECONDS,
    allow_servo_joints: bool = False,
) -> list[dict]:
    """
    Compress a bundle and split it into ``pylon_vessel_urdf_chunk`` payloads.

    Payloads hold the chunk fields in wire order without ``type``, ``version`` or the
    runtime envelope. The bundle is validated first. ``max_chunks`` is clamped to 1..512;
    raise ProtocolError(``too_many_chunks``) when the model needs more (it is not sent).
    """
    validated = validate_bundle(
        bundle, session_id=session_id, allow_servo_joints=allow_servo_joints
    )
    if not _finite(sent_at_ut):
        raise ProtocolError('bad_field', 'expected a finite number', 'sentAtUt')
    if type(max_chunks) is not int:
        raise ProtocolError('bad_limit', 'max_chunks must be an int', 'max_chunks')
    piece = effective_chunk_bytes(chunk_bytes, max_datagram_bytes)
    limit = int(_clamp(max_chunks, 1, MAX_MODEL_CHUNKS))
    compressed = encode_bundle(bundle)
    count = (len(compressed) + piece - 1) // piece
    if count > limit:
        raise ProtocolError('too_many_chunks', f'{count} chunks exceed {limit}', 'chunkCount')
    digest = hashlib.sha256(compressed).hexdigest()
    expires = expires_after_for(refresh_seconds)
    return [
        {
            'sessionId': session_id,
            'modelId': validated['modelId'],
            'chunkIndex': index,
            'chunkCount': count,
            'encoding': MODEL_ENCODING,
            'sha256': digest,
            'expiresAfterSec': expires,
            'sentAtUt': float(sent_at_ut),
            'data': base64.b64encode(compressed[index * piece:(index + 1) * piece]).decode(),
        }
        for index in range(count)
    ]


def clear_payload(session_id: str) -> dict:
    """Return the ``pylon_vessel_urdf_clear`` payload for a model session."""
    _check_session_id(session_id)
    return {'sessionId': session_id}


# -- receiver -------------------------------------------------------------------------------

def is_loopback_source(address: object) -> bool:
    """
    Return True for an IPv4 loopback address or an IPv4-mapped IPv6 loopback.

    ``address`` is a host string or a socket address tuple. ``::1`` also counts as
    loopback. Anything unparsable is not loopback.
    """
    host = address[0] if isinstance(address, tuple) and address else address
    if not isinstance(host, str) or len(host) > 128:
        return False
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        mapped = ip.ipv4_mapped
        return mapped.is_loopback if mapped is not None else ip == ipaddress.IPv6Address('::1')
    return ip.is_loopback


def gunzip_bounded(data: bytes, limit: int) -> bytes:
    """
    Decompress one gzip member, never producing more than ``limit + 1`` bytes.

    Raise ProtocolError ``decompressed_too_large`` past ``limit``, ``bad_gzip`` for a
    corrupt, truncated or trailing-garbage stream.
    """
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    parts: list[bytes] = []
    total = 0
    pending = data
    try:
        while True:
            piece = inflater.decompress(pending, min(_INFLATE_PIECE, limit + 1 - total))
            total += len(piece)
            if total > limit:
                raise ProtocolError('decompressed_too_large', f'more than {limit} bytes')
            parts.append(piece)
            pending = inflater.unconsumed_tail
            if inflater.eof or (not pending and not piece):
                break
    except zlib.error as error:
        raise ProtocolError('bad_gzip', str(error)) from None
    if not inflater.eof:
        raise ProtocolError('bad_gzip', 'truncated gzip stream')
    if inflater.unused_data:
        raise ProtocolError('bad_gzip', 'data after the gzip stream')
    return b''.join(parts)


@dataclass(frozen=True)
class Model:
    """A complete, validated proxy model."""

    session_id: str
    model_id: str
    vessel_id: str
    root_frame: str
    base_to_root_position: tuple[float, float, float]
    base_to_root_rotation: tuple[float, float, float, float]
    urdf: str
    part_frames: tuple[tuple[int, str], ...]
    expires_after_sec: float
    sha256: str
    received_at: float
    structure: Urdf

    def frame_for_part(self, part_flight_id: int) -> str | None:
        """Return the link name of a part, or None."""
        for part, frame in self.part_frames:
            if part == part_flight_id:
                return frame
        return None


class _Assembly:
    __slots__ = ('count', 'sha256', 'expires', 'parts', 'size', 'touched')

    def __init__(self, count: int, sha256: str, expires: float, now: float) -> None:
        self.count = count
        self.sha256 = sha256
        self.expires = expires
        self.parts: dict[int, bytes] = {}
        self.size = 0
        self.touched = now


def _decode_bundle(raw: bytes) -> object:
    try:
        return json.loads(raw.decode('utf-8'))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ProtocolError('bad_bundle', f'not UTF-8 JSON: {type(error).__name__}') from None


class ModelAssembler:
    """
    Reassemble and validate proxy models under the receiver rules.

    ``add_decoded`` takes a ``pylon_vessel_urdf_chunk`` the packet schema has checked
    (``packets.decode_state``); ``add`` takes a bare chunk payload and checks it with the
    same schema first (a rejection counts as ``bad_chunk``). Both return a new ``Model``
    when a chunk completes one, None while incomplete, for an identical duplicate chunk,
    or when the completed model only refreshes the current one (same vessel and model id
    while still current). Every drop raises ProtocolError after being counted in
    ``drops``; purges and evictions are counted silently.

    Memory bounds: ``max_assemblies`` concurrent assemblies (least recently touched
    evicted), each at most 4 MiB compressed; ``max_cleared`` remembered cleared sessions.
    """

    def __init__(
        self,
        *,
        allow_remote: bool = False,
        allow_servo_joints: bool = False,
        purge_after: float = ASSEMBLY_PURGE_SECONDS,
        cleared_ttl: float = CLEARED_TTL_SECONDS,
        max_cleared: int = MAX_CLEARED_SESSIONS,
        max_assemblies: int = MAX_ASSEMBLIES,
        max_compressed_bytes: int = MAX_MODEL_COMPRESSED_BYTES,
        max_decompressed_bytes: int = MAX_MODEL_DECOMPRESSED_BYTES,
    ) -> None:
        for name, value in (('max_cleared', max_cleared), ('max_assemblies', max_assemblies),
                            ('max_compressed_bytes', max_compressed_bytes),
                            ('max_decompressed_bytes', max_decompressed_bytes)):
            if type(value) is not int or value < 1:
                raise ProtocolError('bad_limit', 'must be an int >= 1', name)
        self.allow_remote = bool(allow_remote)
        self.allow_servo_joints = bool(allow_servo_joints)
        self.purge_after = float(purge_after)
        self.cleared_ttl = float(cleared_ttl)
        self.max_cleared = max_cleared
        self.max_assemblies = max_assemblies
        self.max_compressed_bytes = max_compressed_bytes
        self.max_decompressed_bytes = max_decompressed_bytes
        self._assemblies: OrderedDict[tuple[str, str], _Assembly] = OrderedDict()
        self._cleared: OrderedDict[str, float] = OrderedDict()
        self._model: Model | None = None
        self.drops: Counter[str] = Counter()
        self.duplicates = 0
        self.refreshes = 0
        self.completed = 0

    @property
    def model(self) -> Model | None:
        """Return the active model (current or not), or None."""
        return self._model

    @property
    def pending_count(self) -> int:
        """Return the number of assemblies in progress."""
        return len(self._assemblies)

    def is_current(self, now: float) -> bool:
        """Return True while the active model's last reception is within its expiry."""
        model = self._model
        return model is not None and now - model.received_at < model.expires_after_sec

    def current(self, now: float) -> Model | None:
        """Return the active model while it is current, else None."""
        return self._model if self.is_current(now) else None

    def is_cleared(self, session_id: str, now: float) -> bool:
        """Return True when chunks of ``session_id`` are being ignored after a clear."""
        cleared_at = self._cleared.get(session_id)
        return cleared_at is not None and now - cleared_at <= self.cleared_ttl

    def expire(self, now: float) -> int:
        """Purge assemblies untouched for ``purge_after`` s and old clears; return purges."""
        stale = [k for k, a in self._assemblies.items() if now - a.touched > self.purge_after]
        for key in stale:
            del self._assemblies[key]
        if stale:
            self.drops['purged'] += len(stale)
        old = [s for s, t in self._cleared.items() if now - t > self.cleared_ttl]
        for session in old:
            del self._cleared[session]
        return len(stale)

    def reset(self) -> None:
        """Drop assemblies in progress and the active model (on a session change)."""
        self._assemblies.clear()
        self._model = None

    def clear(self, session_id: str, now: float) -> bool:
        """
        Apply ``pylon_vessel_urdf_clear``: ignore the session's chunks from now on.

        Return True when the active model belonged to that session and was removed.
        """
        _check_session_id(session_id)
        self.expire(now)
        self._cleared.pop(session_id, None)
        self._cleared[session_id] = now
        while len(self._cleared) > self.max_cleared:
            self._cleared.popitem(last=False)
        for key in [k for k in self._assemblies if k[0] == session_id]:
            del self._assemblies[key]
        if self._model is not None and self._model.session_id == session_id:
            self._model = None
            return True
        return False

    def _drop(
        self, reason: str, detail: str, field_name: str = '', key: tuple | None = None
    ) -> ProtocolError:
        if key is not None:
            self._assemblies.pop(key, None)
        self.drops[reason if reason in DROP_REASONS else 'bad_bundle'] += 1
        return ProtocolError(reason, detail, field_name)

    def _admit(self, now: float, source_address: object) -> None:
        self.expire(now)
        if not self.allow_remote and not is_loopback_source(source_address):
            raise self._drop('remote_source', 'models are accepted from loopback only')

    def add(self, chunk: Mapping[str, object], now: float, source_address: object) -> Model | None:
        """Check a bare chunk payload with the packet schema, then add it (``add_decoded``)."""
        self._admit(now, source_address)
        try:
            packet = VESSEL_URDF_CHUNK(chunk)
        except ProtocolError as error:
            raise self._drop('bad_chunk', f'{error.reason}: {error.detail}',
                             error.field) from None
        return self._assemble(packet, now)

    def add_decoded(self, packet: Mapping[str, object], now: float,
                    source_address: object) -> Model | None:
        """Add one schema-checked chunk received at monotonic ``now`` from ``source_address``."""
        self._admit(now, source_address)
        return self._assemble(packet, now)

    def _assemble(self, packet: Mapping[str, object], now: float) -> Model | None:
        session, model_id = packet['sessionId'], packet['modelId']
        index, count, digest = packet['chunkIndex'], packet['chunkCount'], packet['sha256']
        expires = packet['expiresAfterSec']
        data = base64.b64decode(packet['data'])
        if self.is_cleared(session, now):
            raise self._drop('cleared_session', 'model session was cleared', 'sessionId')
        key = (session, model_id)
        assembly = self._assemblies.get(key)
        if assembly is None:
            while len(self._assemblies) >= self.max_assemblies:
                self._assemblies.popitem(last=False)
                self.drops['evicted'] += 1
            assembly = _Assembly(count, digest, expires, now)
            self._assemblies[key] = assembly
        elif assembly.count != count or assembly.sha256 != digest:
            raise self._drop('metadata_mismatch', 'chunkCount or sha256 changed', '', key)
        self._assemblies.move_to_end(key)
        assembly.touched = now
        assembly.expires = expires
        held = assembly.parts.get(index)
        if held is not None:
            if held == data:
                self.duplicates += 1
                return None
            raise self._drop('conflicting_chunk', 'different data for a chunk index',
                             'chunkIndex', key)
        if assembly.size + len(data) > self.max_compressed_bytes:
            raise self._drop('compressed_too_large', 'compressed model too large', 'data', key)
        assembly.parts[index] = data
        assembly.size += len(data)
        if len(assembly.parts) < assembly.count:
            return None
        del self._assemblies[key]
        return self._complete(session, model_id, assembly, now)

    def _complete(
        self, session: str, model_id: str, assembly: _Assembly, now: float
    ) -> Model | None:
        compressed = b''.join(assembly.parts[i] for i in range(assembly.count))
        if hashlib.sha256(compressed).hexdigest() != assembly.sha256:
            raise self._drop('sha256_mismatch', 'compressed digest differs', 'sha256')
        active = self._model
        if (
            active is not None
            and self.is_current(now)
            and active.sha256 == assembly.sha256
            and active.session_id == session
            and active.model_id == model_id
        ):
            return self._refresh(active, session, assembly.expires, now)
        try:
            raw = gunzip_bounded(compressed, self.max_decompressed_bytes)
            checked, structure = check_bundle(_decode_bundle(raw), session, model_id,
                                              self.allow_servo_joints)
        except ProtocolError as error:
            raise self._drop(error.reason, error.detail, error.field) from None
        if (
            active is not None
            and self.is_current(now)
            and active.vessel_id == checked['vesselId']
            and active.model_id == model_id
        ):
            return self._refresh(active, session, assembly.expires, now)
        self.completed += 1
        self._model = Model(
            session_id=session,
            model_id=model_id,
            vessel_id=checked['vesselId'],
            root_frame=checked['rootFrame'],
            base_to_root_position=tuple(checked['baseToRootPosition']),
            base_to_root_rotation=tuple(checked['baseToRootRotation']),
            urdf=checked['urdf'],
            part_frames=tuple((p['partFlightId'], p['frame']) for p in checked['partFrames']),
            expires_after_sec=assembly.expires,
            sha256=assembly.sha256,
            received_at=now,
            structure=structure,
        )
        return self._model

    def _refresh(self, active: Model, session: str, expires: float, now: float) -> None:
        self.refreshes += 1
        self._model = dataclasses.replace(
            active, session_id=session, expires_after_sec=expires, received_at=now
        )
