"""Identifier conventions: sanitised names, actuator and sensor ids, hex GUID strings.

Names that end up in ROS topics or as actuator ids are sanitised identically by the mod
and by the bridge:

1. ASCII upper case becomes lower case;
2. every character outside ``[a-z0-9_]`` becomes ``_`` (non-ASCII characters always do);
3. runs of ``_`` collapse to one, leading and trailing ``_`` are stripped;
4. an empty result is replaced by the (sanitised) fallback;
5. a result starting with a digit gets a ``_`` prefix.

Vessel ids, runtime instances/epochs and module session ids are 32 lowercase hex digits
(a GUID without hyphens); SHA-256 digests are 64 lowercase hex digits.
"""

from __future__ import annotations

import hashlib
import random
import re
import uuid

from pylon_protocol.errors import ProtocolError
from pylon_protocol.schema import UINT32_MAX

HEX32_RE = re.compile(r'\A[0-9a-f]{32}\Z')
HEX64_RE = re.compile(r'\A[0-9a-f]{64}\Z')
SENSOR_ID_MAX_LENGTH = 64
SENSOR_ID_SUFFIX_HEX = 8

ACTUATOR_KINDS = ('wheel', 'engine', 'rcs')
SEPARATION_MECHANISMS = ('decoupler', 'fairing', 'launch_clamp')
SENSOR_KINDS = ('lidar_2d', 'lidar_3d', 'camera', 'star_tracker')

_INVALID_RUN = re.compile(r'[^a-z0-9_]+')
_UNDERSCORES = re.compile(r'_{2,}')


def is_hex32(value: object) -> bool:
    """Return True for a 32-digit lowercase hex string (GUID ``N`` format)."""
    return isinstance(value, str) and HEX32_RE.fullmatch(value) is not None


def is_hex64(value: object) -> bool:
    """Return True for a 64-digit lowercase hex string (SHA-256 digest)."""
    return isinstance(value, str) and HEX64_RE.fullmatch(value) is not None


def _lower_ascii(text: str) -> str:
    return ''.join(chr(ord(c) + 32) if 'A' <= c <= 'Z' else c for c in text)


def _clean(raw: str) -> str:
    text = _INVALID_RUN.sub('_', _lower_ascii(raw))
    return _UNDERSCORES.sub('_', text).strip('_')


def sanitize_name(raw: object, fallback: str, *, max_length: int | None = None) -> str:
    """
    Sanitise ``raw`` into a ``[a-z_][a-z0-9_]*`` identifier.

    ``raw`` may be any object; non-strings are treated as empty. ``max_length`` (when
    given, >= 2) truncates the cleaned text before the digit prefix is added, so the
    result never exceeds it. Raise ProtocolError(``bad_name``) when both ``raw`` and
    ``fallback`` sanitise to nothing.
    """
    if max_length is not None and (type(max_length) is not int or max_length < 2):
        raise ProtocolError('bad_limit', 'max_length must be an int >= 2', 'max_length')
    text = _clean(raw) if isinstance(raw, str) else ''
    if not text:
        text = _clean(fallback) if isinstance(fallback, str) else ''
    if not text:
        raise ProtocolError('bad_name', 'name and fallback are empty after sanitising')
    if text[0].isdigit():
        if max_length is not None:
            text = text[: max_length - 1].rstrip('_')
        return '_' + text
    if max_length is not None:
        text = text[:max_length].rstrip('_')
    return text


def legacy_operation_id(controller_id: str, lease_id: str, name: str, sequence: int) -> str:
    """Return the operation id of a separation command that gives none.

    ``"legacy-"`` + SHA-256 (hex) of controller id, lease id, the sanitised actuator name
    and the sequence, joined by newlines: the mod and the bridge compute the same one, so
    a retried command names the same operation.
    """
    text = '\n'.join((controller_id, lease_id, sanitize_name(name, 'actuator'), str(sequence)))
    return 'legacy-' + hashlib.sha256(text.encode('utf-8')).hexdigest()


def _uint32(value: object, field: str) -> int:
    if type(value) is not int or not 0 <= value <= UINT32_MAX:
        raise ProtocolError('bad_field', 'expected an integer 0..2^32-1', field)
    return value


def _module_index(value: object) -> int:
    if type(value) is not int or value < 0:
        raise ProtocolError('bad_field', 'expected an integer >= 0', 'module_index')
    return value


def actuator_name(kind: str, persistent_id: int, flight_id: int, module_index: int) -> str:
    """
    Return the default actuator id ``<kind>_<id>_<moduleIndex>``, sanitised.

    ``<id>`` is the part's persistent id, or its flight id when the persistent id is 0.
    ``kind`` is ``wheel``, ``engine``, ``rcs``, a separation mechanism, or a motor prefix.
    """
    if not isinstance(kind, str) or not _clean(kind):
        raise ProtocolError('bad_name', 'actuator kind is empty', 'kind')
    pid = _uint32(persistent_id, 'persistent_id')
    fid = _uint32(flight_id, 'flight_id')
    index = _module_index(module_index)
    return sanitize_name(f'{kind}_{pid or fid}_{index}', kind)


def docking_port_name(persistent_id: int, module_index: int) -> str:
    """Return the default docking port id ``docking_port_<persistentId>_<moduleIndex>``."""
    pid = _uint32(persistent_id, 'persistent_id')
    return f'docking_port_{pid}_{_module_index(module_index)}'


def sensor_id(raw: object, kind: str, rng: random.Random) -> str:
    """
    Return a sensor id: ``raw`` sanitised, or ``<kind>_<8 hex>`` when ``raw`` is blank.

    The result is at most 64 characters. The random suffix comes from ``rng`` so that
    callers can make it deterministic.
    """
    if isinstance(raw, str) and _clean(raw):
        return sanitize_name(raw, kind, max_length=SENSOR_ID_MAX_LENGTH)
    suffix = f'{rng.getrandbits(4 * SENSOR_ID_SUFFIX_HEX):0{SENSOR_ID_SUFFIX_HEX}x}'
    prefix_room = SENSOR_ID_MAX_LENGTH - SENSOR_ID_SUFFIX_HEX - 1
    prefix = sanitize_name(kind, 'sensor', max_length=prefix_room)
    return f'{prefix}_{suffix}'


def vessel_id_hex(value: object) -> str:
    """
    Return a GUID as 32 lowercase hex digits (``N`` format).

    Accept a ``uuid.UUID`` or any string form ``uuid.UUID`` parses (hyphens, braces,
    ``urn:uuid:`` prefix, upper case); raise ProtocolError(``bad_id``) otherwise.
    """
    if isinstance(value, uuid.UUID):
        return value.hex
    if isinstance(value, str) and len(value) <= 64:
        try:
            return uuid.UUID(value).hex
        except ValueError:
            pass
    raise ProtocolError('bad_id', 'not a GUID', 'vesselId')


def new_guid_hex(rng: random.Random) -> str:
    """Return a random version-4 GUID in ``N`` format drawn from ``rng``."""
    return uuid.UUID(int=rng.getrandbits(128), version=4).hex
