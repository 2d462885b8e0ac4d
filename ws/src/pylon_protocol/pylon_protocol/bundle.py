"""The ``pylon_active_vessel_proxy`` bundle: build it, validate it, encode it.

The bundle is the JSON object a vessel model travels as: the proxy URDF
(``pylon_protocol.urdf``), its root link's pose in ``base_link`` and the map from part
flight ids to links. ``modelId`` is the SHA-256 of the URDF text (UTF-8).
``encode_bundle`` gives the gzip bytes that ``model_chunks.chunk_model`` cuts into chunks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
import gzip
import hashlib
import json
import math

from pylon_protocol.errors import ProtocolError
from pylon_protocol.frames import quat, unit_quat, vec3
from pylon_protocol.names import HEX32_RE, HEX64_RE
from pylon_protocol.schema import UINT64_MAX
from pylon_protocol.urdf import Urdf, validate_urdf

BUNDLE_TYPE = 'pylon_active_vessel_proxy'
BUNDLE_VERSION = 1
GEOMETRY_POLICY = 'primitive_proxy_only'
PERSISTENCE_POLICY = 'memory_only'


def _bad_bundle(detail: str, field_name: str = '') -> ProtocolError:
    return ProtocolError('bad_bundle', detail, field_name)


def _finite(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
    )


def _floats(value: object, size: int, field_name: str) -> list[float]:
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)) or len(value) != size:
        raise _bad_bundle(f'expected {size} numbers', field_name)
    if not all(_finite(v) for v in value):
        raise _bad_bundle('expected finite numbers', field_name)
    return [float(v) for v in value]


def model_id_for(urdf: str) -> str:
    """Return the model id of a URDF: the hex SHA-256 of its UTF-8 encoding."""
    try:
        return hashlib.sha256(urdf.encode('utf-8')).hexdigest()
    except (UnicodeEncodeError, AttributeError):
        raise _bad_bundle('URDF is not encodable as UTF-8', 'urdf') from None


def validate_bundle(
    bundle: Mapping[str, object],
    *,
    session_id: str | None = None,
    model_id: str | None = None,
    allow_servo_joints: bool = False,
) -> dict:
    """
    Validate a proxy bundle; return a normalised copy in wire order.

    ``session_id`` and ``model_id``, when given, are the chunk's and must match. The
    copy has float vectors, a normalised ``baseToRootRotation`` and ``partFrames`` as a
    list of ``{partFlightId, frame}``; unknown extra keys are dropped. Raise
    ProtocolError (``bad_bundle``, ``bundle_mismatch`` or ``bad_urdf``).
    """
    return check_bundle(bundle, session_id, model_id, allow_servo_joints)[0]


def _check_header(bundle: Mapping[str, object], session_id: str | None,
                  model_id: str | None) -> tuple[str, str, str]:
    """Check type, version, ids and policies; return (sessionId, vesselId, modelId)."""
    if bundle.get('type') != BUNDLE_TYPE:
        raise _bad_bundle(f'type must be {BUNDLE_TYPE}', 'type')
    version = bundle.get('version')
    if type(version) is not int or version != BUNDLE_VERSION:
        raise _bad_bundle('version must be the integer 1', 'version')
    sid = bundle.get('sessionId')
    if not isinstance(sid, str) or not HEX32_RE.match(sid):
        raise _bad_bundle('expected 32 lowercase hex digits', 'sessionId')
    if session_id is not None and sid != session_id:
        raise ProtocolError('bundle_mismatch', 'differs from the chunk', 'sessionId')
    vessel_id = bundle.get('vesselId')
    if not isinstance(vessel_id, str) or not HEX32_RE.match(vessel_id):
        raise _bad_bundle('expected 32 lowercase hex digits', 'vesselId')
    mid = bundle.get('modelId')
    if not isinstance(mid, str) or not HEX64_RE.match(mid):
        raise _bad_bundle('expected 64 lowercase hex digits', 'modelId')
    if model_id is not None and mid != model_id:
        raise ProtocolError('bundle_mismatch', 'differs from the chunk', 'modelId')
    if bundle.get('geometryPolicy') != GEOMETRY_POLICY:
        raise _bad_bundle(f'must be {GEOMETRY_POLICY}', 'geometryPolicy')
    if bundle.get('persistencePolicy') != PERSISTENCE_POLICY:
        raise _bad_bundle(f'must be {PERSISTENCE_POLICY}', 'persistencePolicy')
    return sid, vessel_id, mid


def _check_pose(bundle: Mapping[str, object]) -> tuple[list[float], list[float]]:
    """Return ``baseToRootPosition`` and the normalised ``baseToRootRotation``."""
    position = _floats(bundle.get('baseToRootPosition'), 3, 'baseToRootPosition')
    rotation = _floats(bundle.get('baseToRootRotation'), 4, 'baseToRootRotation')
    try:
        rotation = list(unit_quat(rotation))
    except ProtocolError:
        raise _bad_bundle('quaternion norm is below 1e-9', 'baseToRootRotation') from None
    return position, rotation


def _check_part_frames(part_frames: object, structure: Urdf) -> list[dict]:
    """Check that ``partFrames`` maps every URDF link to one part; return it normalised."""
    if not isinstance(part_frames, Sequence) or isinstance(part_frames, (str, bytes)):
        raise _bad_bundle('expected an array', 'partFrames')
    if len(part_frames) != len(structure.links):
        raise _bad_bundle('partFrames must map every link exactly once', 'partFrames')
    frames_out = []
    seen_ids: set[int] = set()
    seen_frames: set[str] = set()
    links = set(structure.links)
    for entry in part_frames:
        if not isinstance(entry, Mapping):
            raise _bad_bundle('expected objects', 'partFrames')
        part_id = entry.get('partFlightId')
        frame = entry.get('frame')
        if type(part_id) is not int or not 0 <= part_id <= UINT64_MAX:
            raise _bad_bundle('expected an integer 0..2^64-1', 'partFrames.partFlightId')
        if not isinstance(frame, str) or frame not in links:
            raise _bad_bundle('frame is not a URDF link', 'partFrames.frame')
        if frame in seen_frames or part_id in seen_ids:
            raise _bad_bundle('duplicate link or part', 'partFrames')
        seen_frames.add(frame)
        seen_ids.add(part_id)
        frames_out.append({'partFlightId': part_id, 'frame': frame})
    return frames_out


def check_bundle(
    bundle: Mapping[str, object],
    session_id: str | None,
    model_id: str | None,
    allow_servo_joints: bool,
) -> tuple[dict, Urdf]:
    """Return ``validate_bundle``'s normalised copy and the URDF's validated structure."""
    if not isinstance(bundle, Mapping):
        raise _bad_bundle('expected a JSON object')
    sid, vessel_id, mid = _check_header(bundle, session_id, model_id)
    urdf = bundle.get('urdf')
    if not isinstance(urdf, str):
        raise _bad_bundle('expected a string', 'urdf')
    if model_id_for(urdf) != mid:
        raise ProtocolError('bundle_mismatch', 'modelId is not sha256(urdf)', 'modelId')
    position, rotation = _check_pose(bundle)
    structure = validate_urdf(urdf, vessel_id=vessel_id, allow_servo_joints=allow_servo_joints)
    if bundle.get('rootFrame') != structure.root_link:
        raise ProtocolError('bundle_mismatch', 'rootFrame is not the URDF root link',
                            'rootFrame')
    frames_out = _check_part_frames(bundle.get('partFrames'), structure)
    return _wire_order(sid, vessel_id, mid, structure.root_link, position, rotation, urdf,
                       frames_out), structure


def _wire_order(session_id: str, vessel_id: str, model_id: str, root_frame: str,
                position: list[float], rotation: list[float], urdf: str,
                part_frames: list[dict]) -> dict:
    return {
        'type': BUNDLE_TYPE,
        'version': BUNDLE_VERSION,
        'sessionId': session_id,
        'vesselId': vessel_id,
        'modelId': model_id,
        'geometryPolicy': GEOMETRY_POLICY,
        'persistencePolicy': PERSISTENCE_POLICY,
        'rootFrame': root_frame,
        'baseToRootPosition': position,
        'baseToRootRotation': rotation,
        'urdf': urdf,
        'partFrames': part_frames,
    }


def build_bundle(
    *,
    session_id: str,
    vessel_id: str,
    urdf: str,
    base_to_root_position: Sequence[float],
    base_to_root_rotation: Sequence[float],
    part_frames: Mapping[int, str] | Iterable[tuple[int, str]],
    root_frame: str | None = None,
    allow_servo_joints: bool = False,
) -> dict:
    """
    Build a validated ``pylon_active_vessel_proxy`` bundle in wire order.

    ``modelId`` is computed from the URDF; ``root_frame`` defaults to the URDF root link.
    ``part_frames`` maps part flight ids to link names. The vectors are sent as given
    (the rotation is not normalised). Raise ProtocolError if the result would not be
    accepted by a receiver.
    """
    pairs = part_frames.items() if isinstance(part_frames, Mapping) else part_frames
    if root_frame is None:
        root_frame = validate_urdf(
            urdf, vessel_id=vessel_id, allow_servo_joints=allow_servo_joints
        ).root_link
    bundle = _wire_order(
        session_id, vessel_id, model_id_for(urdf), root_frame,
        list(vec3(base_to_root_position, 'baseToRootPosition')),
        list(quat(base_to_root_rotation, 'baseToRootRotation')), urdf,
        [{'partFlightId': pid, 'frame': frame} for pid, frame in pairs])
    validate_bundle(bundle, session_id=session_id, allow_servo_joints=allow_servo_joints)
    return bundle


def encode_bundle(bundle: Mapping[str, object]) -> bytes:
    """Serialise a bundle to compact UTF-8 JSON and gzip it (deterministic header)."""
    try:
        text = json.dumps(bundle, separators=(',', ':'), ensure_ascii=False, allow_nan=False)
        raw = text.encode('utf-8')
    except (TypeError, ValueError) as error:
        raise _bad_bundle(f'not serialisable: {error}') from None
    return gzip.compress(raw, mtime=0)
