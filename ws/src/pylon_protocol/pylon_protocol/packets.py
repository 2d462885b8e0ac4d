"""Every PyLoN v1 packet type, defined once, with decode, validate and build.

State packets (mod to bridge, UDP 49010) carry the runtime envelope before ``type``;
commands (bridge to mod, UDP 49011) carry it after their payload. Each type has one schema
here, with the limits the bridge applies; ``validate_*`` returns a new dict with
normalised values (ints in number fields become floats, some quaternions are normalised,
defaults are filled in) and keeps unknown fields, since newer mods add optional ones.

Field names are the camelCase wire names. Conventions shared by many packets: ``vesselId``
is a vessel GUID as 32 lowercase hex digits; ``partFlightId`` and ``persistentId`` are KSP
part ids (uint32; uint64 where the bridge allows it); vectors are ``[x, y, z]`` and
quaternions ``[x, y, z, w]`` in ROS axes, SI units; ``universalTime`` is KSP universal time
in seconds. Actuator, motor and docking port names are sanitised ids: lowercase
``[a-z0-9_]``, no repeated, leading or trailing underscores, and a leading ``_`` before a
digit.

Ordering rules across packets (session gating, sequence numbers, chunk reassembly) are not
checked here: a packet that passes ``validate_state`` is well formed, not necessarily new.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
import json
import math
import sys
from types import MappingProxyType
from typing import Any

from pylon_protocol import envelope as _envelope
from pylon_protocol import names, wire
from pylon_protocol import schema as sc
from pylon_protocol.envelope import Envelope
from pylon_protocol.errors import ProtocolError
from pylon_protocol.schema import (
    INT64_MAX,
    optional,
    required,
    Schema,
    UINT32_MAX,
    UINT64_MAX,
    Variant,
)

# -- constants ----------------------------------------------------------------------------

STATE_PORT = 49010
COMMAND_PORT = 49011
MAX_DATAGRAM_BYTES = wire.MAX_DATAGRAM_BYTES
PROTOCOL_VERSION = wire.PROTOCOL_VERSION
#: The mod keeps a vessel model chunk and a control snapshot within this many UTF-8 bytes
#: (a snapshot that would not fit is omitted, never truncated).
MOD_MAX_DATAGRAM_BYTES = 60000

#: Default send rates of the mod per second of wall time: packets, except camera frames
#: (each split into chunks) and whole vessel models (resent every 2 s, in chunks).
SEND_RATES_HZ: Mapping[str, float] = MappingProxyType({
    'pylon_session': 10.0,
    'pylon_imu': 30.0,
    'pylon_ground_truth': 30.0,
    'pylon_nearby_vessels': 30.0,
    'pylon_flight_state': 30.0,
    'pylon_actuator_state': 30.0,
    'pylon_control_snapshot': 30.0,
    'pylon_actuator_manifest': 1.0,
    'pylon_control_authority_state': 10.0,
    'pylon_vehicle_health': 2.0,
    'pylon_part_thermal_state': 2.0,
    'pylon_docking_port_state': 10.0,
    'pylon_docking_port_manifest': 1.0,
    'pylon_motor_state': 20.0,
    'pylon_star_tracker': 5.0,
    'pylon_lidar_scan': 10.0,
    'pylon_camera_frame_chunk': 5.0,
    'pylon_vessel_urdf_chunk': 0.5,
    'pylon_separation_result': 2.0,
    'pylon_relative_nav': 10.0,          # our simulator's extension (EXTENSION_STATE_TYPES)
    'pylon_gnss': 10.0,                  # our simulator's extension (EXTENSION_STATE_TYPES)
    'pylon_ahrs': 50.0,                  # our simulator's extension (EXTENSION_STATE_TYPES)
})
#: Allowed ranges of the configurable rates above (Hz).
SEND_RATE_RANGES_HZ: Mapping[str, tuple[float, float]] = MappingProxyType({
    'pylon_motor_state': (1.0, 60.0),
    'pylon_star_tracker': (1.0, 20.0),
    'pylon_lidar_scan': (1.0, 60.0),
    'pylon_camera_frame_chunk': (1.0, 15.0),
    'pylon_relative_nav': (1.0, 20.0),
    'pylon_gnss': (1.0, 20.0),
    'pylon_ahrs': (10.0, 100.0),
})
#: State types of this workspace's simulator (``pylon_sim``) that the PyLoN mod does not
#: send: a receiver never requires them, and nothing changes for the real mod's users.
EXTENSION_STATE_TYPES = frozenset({'pylon_relative_nav', 'pylon_gnss', 'pylon_ahrs'})
#: ``timeoutSeconds`` of wrench and actuator commands; flight control and batch members
#: allow at most 1 s. Where a timeout is unusable (0, negative, not finite) the mod
#: applies 0.5 s.
MIN_COMMAND_TIMEOUT_SEC = 0.05
MAX_COMMAND_TIMEOUT_SEC = 10.0
MAX_SHORT_COMMAND_TIMEOUT_SEC = 1.0
MOD_DEFAULT_COMMAND_TIMEOUT_SEC = 0.5
#: ``leaseDurationSeconds`` of an acquire, a renew or a batch renewal.
MIN_LEASE_SEC = 0.1
MAX_LEASE_SEC = 10.0
LIDAR_FAST_RATE_HZ = 20.0          # LiDAR with streamAt20Fps
DOCKING_CAMERA_RATE_HZ = 5.0
SEPARATION_RESULT_REPEAT_SEC = 10.0  # results keep being sent this long after completion
SEPARATION_RESULT_PENDING_REPEAT_SEC = 0.5  # and at this period while pending and after
SEPARATION_RESULT_RETENTION_SEC = 600.0    # the mod keeps a completed result this long
SEPARATION_RESULT_CAPACITY = 128           # results the mod's journal (and the bridge) keep
MAX_RCS_NOZZLES = 1024                     # ``nozzleCount`` of an RCS state (our extension)

#: Authority actions; the ROS ``ACTION_*`` constant of each is its index + 1.
AUTHORITY_ACTIONS = ('acquire', 'renew', 'release', 'emergency_stop', 'clear_emergency_stop')
AUTHORITY_UNOWNED = 0
AUTHORITY_OWNED = 1
AUTHORITY_EMERGENCY_STOP = 2
AUTHORITY_REASONS = frozenset({
    'unowned', 'initializing', 'lease_acquired', 'lease_renewed', 'lease_released',
    'lease_expired', 'lease_not_owned', 'invalid_lease', 'stale_sequence', 'emergency_stop',
    'emergency_stop_cleared', 'emergency_stop_not_active', 'emergency_stop_owner_mismatch',
    'authority_held_by_higher_or_equal_priority', 'active_vessel_mismatch',
    'unsupported_authority_action', 'runtime_session_changed', 'active_vessel_changed',
    'command_accepted',
})
#: Our extension, for a mission of several vehicles (``pylon_sim``'s management): the
#: simulator refuses a command because the mission holds the vehicles (not started yet, or
#: over). A wrench status, an authority state answering that command only, or a separation
#: result may carry it; the mod never sends it.
SIMULATION_HELD = 'simulation_held'
#: Our extension: the reasons of the authority state that answers a typed command
#: (actuator, motor, docking port) the vessel refuses after the authority accepted it.
#: PROTOCOL lists the authority-state reasons as examples only; these answer one command
#: and never become the repeated state's "result of the last authority event".
TYPED_REFUSAL_REASONS = frozenset({
    'unknown_actuator', 'actuator_kind_mismatch', 'invalid_command', 'engine_cannot_restart',
    'engine_cannot_shut_down', 'throttle_locked', 'already_separated', 'nothing_beyond',
    'unknown_docking_port', 'not_docked', SIMULATION_HELD,
})
#: Every reason a ``pylon_control_authority_state`` may carry.
AUTHORITY_STATE_REASONS = AUTHORITY_REASONS | TYPED_REFUSAL_REASONS
#: Safety-filter reasons; ``pylon_wrench_status.reason`` may join several with commas.
WRENCH_FILTER_REASONS = frozenset({'magnitude_limit', 'angular_speed_limit', 'slew_rate_limit'})
WRENCH_STATUS_REASONS = WRENCH_FILTER_REASONS | frozenset({
    'accepted', 'continuous_actuation_limit', 'non_finite_command', 'command_timeout',
    'invalid_wrench', 'unsupported_wrench_frame', 'active_vessel_mismatch', 'lease_not_owned',
    'emergency_stop', 'stale_sequence', 'control_unavailable', 'unsupported_control_protocol',
    SIMULATION_HELD,
})
ACHIEVED_QUALITY = 'propulsion_measured_previous_physics_tick_wheels_excluded'
STAR_TRACKER_REASONS = frozenset({
    'tracking', 'acquiring', 'disabled', 'no_power', 'atmosphere', 'sun_exclusion',
    'body_in_fov', 'occluded', 'slew_rate_exceeded', 'packed', 'sensor_unavailable',
    'invalid_time', 'inactive',
})
#: Made by the bridge after a silent period; never valid on the wire.
STAR_TRACKER_STALE = 'stale'
SEPARATION_RESULT_REASONS = frozenset({
    'pending', 'separated', 'completion_not_observed', 'actuator_not_found',
    'actuator_unavailable', 'separation_exception', 'operation_id_conflict',
    'original_session_not_current', 'result_journal_full', 'flight_scene_ended_before_result',
    'result_not_retained', SIMULATION_HELD,
})
#: ``actuatorType`` values of state packets; commands use all but ``motor``.
ACTUATOR_TYPES = ('wheel', 'engine', 'rcs', 'motor', 'separation')
COMMAND_ACTUATOR_TYPES = ('wheel', 'engine', 'rcs', 'separation')
SEPARATION_MECHANISMS = ('decoupler', 'fairing', 'launch_clamp')
MOTOR_JOINT_TYPES = ('revolute', 'prismatic')
#: Motor command modes; the ROS mode constant of each is its index.
MOTOR_MODES = ('position', 'velocity', 'effort')
DOCKING_SELECT_CAMERA = 1
DOCKING_STOP_CAMERA = 2
DOCKING_RELEASE = 3
CAMERA_SOURCES = ('rgb_camera', 'docking_port')
LIDAR_MODES = ('2D', '3D')
KERBOL_INERTIAL = 'kerbol_inertial'
BASE_LINK = 'base_link'
ROS_SENSOR = 'ros_sensor'
CAMERA_ENCODING = 'rgb8'
MODEL_ENCODING = 'gzip+base64'

MAX_NEARBY_VESSELS = 32
MAX_RELATIVE_NAV_TARGETS = MAX_NEARBY_VESSELS   # the vessels nearby, seen by a sensor
MAX_VESSEL_NAME_CHARS = 128                      # ``vesselName`` of a relative-nav target
#: ``range`` of a relative-nav target may differ from the norm of its ``position`` by this
#: fraction of it (at least of 1 m): the two are one measurement.
RELATIVE_NAV_RANGE_TOLERANCE = 1e-6
#: ``status`` of a ``pylon_gnss`` sample (our extension): a position, or none.
GNSS_FIX = 'fix'
GNSS_NO_FIX = 'no_fix'
GNSS_STATUSES = (GNSS_FIX, GNSS_NO_FIX)
#: ``frameId`` of a ``pylon_gnss`` sample: empty (the receiver names the sensor's frame) or
#: a frame name of the sensor-id alphabet (``gnss_link``).
GNSS_FRAME_ID_PATTERN = '([a-z_][a-z0-9_]{0,63})?'
MAX_DOCKING_PORTS = 256
MAX_SNAPSHOT_ACTUATORS = 256
MAX_BATCH_ENGINES = 16
MAX_RESULTING_VESSELS = 4096
#: Receiver limits of camera frame chunks; the sender's clamps are in ``camera``.
MAX_CAMERA_CHUNKS = 1024
MAX_CAMERA_FRAME_BYTES = 4 * 1024 * 1024
MAX_CAMERA_CHUNK_BYTES = 65536          # decoded bytes of one chunk's data
MAX_CAMERA_DIMENSION = 4096             # width and height, pixels
MAX_CAMERA_STEP = 65536
MAX_CAMERA_TEXT_CHARS = 1024            # sensorId, vessel and coordinateFrame
#: Receiver limits of vessel model chunks and their reassembly; the sender's clamps are in
#: ``model_chunks``.
MAX_MODEL_CHUNKS = 512
MAX_MODEL_DATA_CHARS = 8 * 1024 * 1024
MIN_MODEL_EXPIRES_SEC = 1.0
MAX_MODEL_EXPIRES_SEC = 120.0
MAX_MODEL_COMPRESSED_BYTES = 4 * 1024 * 1024     # of one assembly
MAX_MODEL_DECOMPRESSED_BYTES = 8 * 1024 * 1024   # the bundle, and so its URDF text

# -- name sanitisation (uniqueness of ids) ------------------------------------------------

def _sanitised(name: str) -> str:
    return names.sanitize_name(name, 'unnamed')


def _check_sanitised(value: Any) -> str:
    if _sanitised(value) != value:
        raise ProtocolError('bad_value', f'{value!r:.80} is not a sanitised id')
    return value


def _unique_sanitised(items: Iterable[dict], field: str) -> None:
    sc.require_unique((_sanitised(item['name']) for item in items), field, 'name')


# -- reusable checks ----------------------------------------------------------------------

_BOOL = sc.boolean()
_NUM = sc.number()
_NON_NEG = sc.number(0.0)
_UNIT_RANGE = sc.number(-1.0, 1.0)
_INT = sc.integer(-2**63, INT64_MAX)
_INT32 = sc.integer(-2**31, 2**31 - 1)
_COUNT = sc.integer(0, 2**31 - 1)
_UINT32 = sc.integer(0, UINT32_MAX)
_UINT64 = sc.integer(0, UINT64_MAX)
_SEQUENCE = sc.integer(1, INT64_MAX)
_STR = sc.string()
_STR_128 = sc.string(max_len=128)
_STR_1_128 = sc.string(min_len=1, max_len=128)
_SENSOR_ID = sc.string(pattern='[a-z_][a-z0-9_]{0,63}')
_ID = sc.string(non_blank=True)
_HEX32_PATTERN = '[0-9a-f]{32}'    # a vessel GUID
_HEX32 = sc.string(pattern=_HEX32_PATTERN)
_HEX64 = sc.string(pattern='[0-9a-f]{64}')
_TOKEN = sc.string(pattern='[!-~]{1,128}')
_TOKEN_OR_EMPTY = sc.string(pattern='[!-~]{0,128}')
_IDENT_64 = sc.string(min_len=1, max_len=64, non_blank=True)
_VEC3 = sc.vector(3)
_QUAT = sc.quaternion()
_WRENCH = sc.wrench()
_SIGN = sc.number_choice((-1, 0, 1))
_ZERO3 = [0.0, 0.0, 0.0]


def _name_id(max_len: int) -> sc.Check:
    text = sc.string(min_len=1, max_len=max_len, non_blank=True)

    def check(value: Any) -> str:
        return _check_sanitised(text(value))
    return check


_ACTUATOR_ID = _name_id(128)


def _fields(check: sc.Check, keys: str, default: Any = sc.MISSING,
            needed: bool = True) -> dict[str, sc.Field]:
    """Declare several fields with the same check (``keys`` split on whitespace)."""
    if needed:
        return {name: required(check) for name in keys.split()}
    return {name: optional(check, default) for name in keys.split()}


def _fail(reason: str, detail: str, field: str) -> ProtocolError:
    return ProtocolError(reason, detail, field)


# -- state: session, IMU, ground truth, nearby vessels -----------------------------------

_SESSION_NEWER = ('realtimeSinceStartup', 'paused', 'packed', 'warpRate', 'physicsWarp')


def _check_session(p: dict) -> None:
    if 'runtimeVesselId' in p and p['vesselId'] != p['runtimeVesselId']:
        raise sc.inconsistent('vesselId differs from runtimeVesselId', 'vesselId')
    if 'observationSequence' in p:
        for key in _SESSION_NEWER:
            if key not in p:
                raise _fail('missing_field', 'required with observationSequence', key)
        if p['available'] and (not p['vesselId'] or p['packed']):
            raise sc.inconsistent('available needs a vesselId and packed false', 'available')


SESSION = Schema('pylon_session', {
    'vesselId': required(_STR),
    'vesselName': optional(_STR, ''),
    'available': required(_BOOL),
    'universalTime': required(_NUM),
    'observationSequence': optional(_UINT64),
    'realtimeSinceStartup': optional(_NON_NEG),
    'paused': optional(_BOOL),
    'packed': optional(_BOOL),
    'warpRate': optional(_NON_NEG),
    'physicsWarp': optional(_BOOL),
}, [_check_session])

IMU = Schema('pylon_imu', {
    'vesselId': required(_HEX32),
    'universalTime': required(_NUM),
    'angularVelocity': required(_VEC3),
    'linearAcceleration': required(_VEC3),
})


def _imu_fast_decoder():
    """Return a function decoding a plain ``pylon_imu`` datagram in one call, or None.

    The IMU is the datagram a flood is made of (the mod sends it at 30 Hz, a bridge must
    keep up with far more). With ``msgspec`` installed, one typed decode does what
    ``wire.decode_json`` + ``validate_state`` do for the datagram the mod writes: exactly
    the envelope, ``type``, ``version`` and the four ``IMU`` fields, every check of theirs
    expressed as a type or a constraint (a runtime generation beyond int64, which msgspec
    cannot bound, is left to the reference path), but for ``vesselId``'s hex digits, which
    one ``str.strip`` checks after the length (a msgspec pattern calls the regex engine,
    a third of the decode's time). It returns the same dict (values, types;
    the key order is the declaration's) or raises for anything else: any other type, an
    unknown or missing field, NaN tokens, a value the schema refuses. ``decode_state``
    then takes the reference path, which gives the result or the error. ``IMU`` stays the
    definition; the tests compare the two on the mod's quirks and on hostile variants.
    """
    try:
        import msgspec
    except ImportError:         # the reference path alone (msgspec is optional)
        return None
    from typing import Annotated, Literal
    finite = Annotated[float, msgspec.Meta(ge=-sys.float_info.max, le=sys.float_info.max)]
    vec3 = Annotated[list[finite], msgspec.Meta(min_length=3, max_length=3)]
    token = Annotated[str, msgspec.Meta(min_length=1)]
    imu = msgspec.defstruct('ImuDatagram', [
        (_envelope.INSTANCE_KEY, token),
        (_envelope.GENERATION_KEY, Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]),
        (_envelope.EPOCH_KEY, token),
        (_envelope.VESSEL_ID_KEY, str),
        ('type', Literal['pylon_imu']),
        ('version', Literal[PROTOCOL_VERSION]),
        ('vesselId', Annotated[str, msgspec.Meta(min_length=32, max_length=32)]),
        ('universalTime', finite),
        ('angularVelocity', vec3),
        ('linearAcceleration', vec3),
    ], forbid_unknown_fields=True)
    decode, asdict = msgspec.json.Decoder(imu).decode, msgspec.structs.asdict
    hex_digits = '0123456789abcdef'             # what _HEX32_PATTERN allows

    def decode_imu(data: bytes) -> dict:
        packet = asdict(decode(data))
        if packet['vesselId'].strip(hex_digits):        # a character beyond [0-9a-f]
            raise ValueError('vesselId: not 32 hexadecimal digits')
        return packet
    return decode_imu


_decode_imu = _imu_fast_decoder()

GROUND_TRUTH = Schema('pylon_ground_truth', {
    'vesselId': required(_STR),
    'vessel': optional(_STR, ''),
    'originSequence': optional(_INT, 0),
    'universalTime': optional(_NUM, 0.0),
    'position': required(_VEC3),
    'rotation': required(_QUAT),
    'linearVelocity': required(_VEC3),
    'angularVelocity': required(_VEC3),
    'linearVelocityBody': optional(_VEC3),
    'angularVelocityBody': optional(_VEC3),
    'frameAngularVelocity': optional(_VEC3),
    'linearAcceleration': required(_VEC3),
    'angularAcceleration': required(_VEC3),
})

_NEARBY_VESSEL = Schema('nearby vessel', {
    'vesselId': required(_ID),
    'vessel': optional(_STR, ''),
    'isDebris': required(_BOOL),
    'position': required(_VEC3),
    'linearVelocity': required(_VEC3),
})


def _require_others(p: dict, key: str) -> None:
    """Refuse a list of vessels (``p[key]``) that repeats one or holds the observer."""
    ids = [vessel['vesselId'] for vessel in p[key]]
    sc.require_unique(ids, key, 'vesselId')
    if p['vesselId'] in ids:
        raise sc.inconsistent(f'the observer is listed in {key}', key)


def _check_nearby(p: dict) -> None:
    _require_others(p, 'vessels')


NEARBY_VESSELS = Schema('pylon_nearby_vessels', {
    'vesselId': required(_ID),
    'originSequence': required(_INT),
    'universalTime': required(_NUM),
    'position': required(_VEC3),
    'linearVelocity': required(_VEC3),
    'vessels': required(sc.array(_NEARBY_VESSEL, max_count=MAX_NEARBY_VESSELS)),
}, [_check_nearby])

# -- state: flight, actuators, motors ------------------------------------------------------

FLIGHT_SCALARS = (
    'universalTime', 'altitudeAsl', 'altitudeAgl', 'latitude', 'longitude', 'mass',
    'liquidFuel', 'oxidizer', 'electricCharge', 'gravity', 'bodyRadius',
    'gravitationalParameter', 'atmosphereDepth', 'apoapsis', 'periapsis', 'timeToApoapsis',
    'verticalSpeed', 'horizontalSpeed', 'dynamicPressure')
FLIGHT_VECTORS = ('upBody', 'eastBody', 'northBody', 'surfaceVelocityBody',
                  'orbitalVelocityBody', 'angularVelocityBody')
_POSITIVE = sc.number(0.0, lo_open=True)

FLIGHT_STATE = Schema('pylon_flight_state', {
    'vesselId': required(_ID),
    'observationSequence': optional(_UINT64),
    'bodyName': required(_ID),
    **_fields(_NUM, ' '.join(FLIGHT_SCALARS)),
    **_fields(_POSITIVE, 'mass gravity bodyRadius'),
    **_fields(_BOOL, 'landed splashed'),
    **_fields(_BOOL, 'appliedInputValid flightCommandActive inputAtLimit', needed=False),
    'appliedInputSequence': optional(_INT),
    'appliedInputAge': optional(_NUM),
    **_fields(_UNIT_RANGE, 'appliedPitch appliedYaw appliedRoll', needed=False),
    **_fields(_VEC3, ' '.join(FLIGHT_VECTORS)),
})

_ACTUATOR_COMMON = {
    'actuatorType': required(sc.string(choices=ACTUATOR_TYPES)),
    'vesselId': optional(_STR),
    'observationSequence': optional(_UINT64),
    'role': optional(_STR),
    'name': required(_ID),
    'vessel': optional(_STR, ''),
    'partFlightId': optional(_UINT32, 0),
    'persistentId': optional(_UINT32, 0),
    'universalTime': optional(_NUM, 0.0),
}
_WHEEL_STATE = {
    'enabled': optional(_BOOL, False),
    'wheelCount': optional(sc.integer(0, 128), 0),
    'radius': optional(_NUM, 0.0),
    'position': optional(_VEC3, _ZERO3),
    'rollingSign': optional(_SIGN, 0),
    'steeringSign': optional(_SIGN, 0),
    'steeringEnabled': optional(_BOOL, False),
    'maxSteeringAngle': optional(_NUM, 0.0),
    'bodyMin': optional(_VEC3, _ZERO3),
    'bodyMax': optional(_VEC3, _ZERO3),
    'grounded': optional(_BOOL, False),
    **_fields(_NUM, 'angularPosition angularVelocity steeringAngle driveTorque brakeTorque slip '
              'maxDriveTorque', 0.0, needed=False),
    'commandActive': optional(_BOOL, False),
}
_ENGINE_BOOLS = 'enabled operational flameout commandActive gimbalAvailable gimbalCommandActive'
_ENGINE_NUMBERS = 'throttle thrust maxThrust gimbalPitch gimbalYaw gimbalRoll'
_ENGINE_STATE = {
    **_fields(_BOOL, _ENGINE_BOOLS, False, needed=False),
    **_fields(_NUM, _ENGINE_NUMBERS, 0.0, needed=False),
}
_RCS_STATE = {
    **_fields(_BOOL, 'enabled active flameout commandActive', False, needed=False),
    **_fields(_NUM, 'thrust maxThrust thrustLimit', 0.0, needed=False),
    # our extension (pylon_sim sends it, the public mod does not): nozzles of the module
    'nozzleCount': optional(sc.integer(1, MAX_RCS_NOZZLES)),
}
_SEPARATION_STATE = {
    'mechanism': required(sc.string(choices=SEPARATION_MECHANISMS)),
    **_fields(_BOOL, 'available separated', False, needed=False),
}


def _actuator_state(kind: str, fields: dict[str, sc.Field]) -> Schema:
    return Schema(f'{kind} pylon_actuator_state', {
        **_ACTUATOR_COMMON, 'actuatorType': required(sc.constant(kind)), **fields})


ACTUATOR_STATE = Variant('pylon_actuator_state', 'actuatorType', {
    'wheel': _actuator_state('wheel', _WHEEL_STATE),
    'engine': _actuator_state('engine', _ENGINE_STATE),
    'rcs': _actuator_state('rcs', _RCS_STATE),
    'separation': _actuator_state('separation', _SEPARATION_STATE),
    'motor': _actuator_state('motor', {}),
})


def _check_manifest(p: dict) -> None:
    _unique_sanitised(p['actuators'], 'actuators')


ACTUATOR_MANIFEST = Schema('pylon_actuator_manifest', {
    'vesselId': required(_STR),
    'actuators': required(sc.array(Schema('manifest entry', {
        'actuatorType': required(sc.string(choices=ACTUATOR_TYPES)),
        'name': required(_ID),
    }))),
}, [_check_manifest])

MOTOR_STATE = Schema('pylon_motor_state', {
    'name': required(_ID),
    'jointType': required(sc.string(choices=MOTOR_JOINT_TYPES)),
    'vessel': optional(_STR, ''),
    'partFlightId': optional(_UINT32, 0),
    'universalTime': optional(_NUM),
    **_fields(_NUM, 'position velocity effort target'),
    'current': optional(sc.number(0.0, clamp_lo=True), 0.0),
    **_fields(_BOOL, 'powered engaged locked commandActive', False, needed=False),
    'commandMode': optional(sc.string(choices=MOTOR_MODES)),
})

# -- state: sensors ------------------------------------------------------------------------

_LIDAR_MODE = sc.string(normalise=str.upper, choices=LIDAR_MODES)


def _check_lidar(p: dict) -> None:
    rays = p.get('rayCount')
    if rays is None:
        return
    if len(p['ranges']) > rays:
        raise sc.inconsistent(f'{len(p["ranges"])} ranges for {rays} rays', 'ranges')
    for key in ('points', 'directions'):
        if key in p and len(p[key]) > 3 * rays:
            raise sc.inconsistent(f'{len(p[key]) // 3} {key} for {rays} rays', key)


LIDAR_SCAN = Schema('pylon_lidar_scan', {
    'mode': required(_LIDAR_MODE),
    'sensorId': required(_ID),
    'vessel': optional(_STR, ''),
    'partFlightId': optional(_UINT64, 0),
    'universalTime': optional(_NUM),
    **_fields(_COUNT, 'rayCount horizontalCount verticalCount hitCount', needed=False),
    **_fields(_NUM, 'hemisphereDensity horizontalFovDeg verticalFovDeg scanRateHz',
              needed=False),
    'maxDistance': optional(_NON_NEG),
    'layout': optional(_STR),
    'coordinateFrame': optional(_STR),
    'origin': optional(_VEC3),
    'framePosition': optional(_VEC3),
    'frameRotation': optional(_QUAT),
    'ranges': required(sc.flat_array(allow_non_finite=True)),
    'hitMask': optional(sc.flat_array(allow_null=True, allow_non_finite=True)),
    'points': optional(sc.flat_array(multiple_of=3, allow_null=True)),
    'directions': optional(sc.flat_array(multiple_of=3)),
}, [_check_lidar])

LIDAR_INACTIVE = Schema('pylon_lidar_inactive', {
    'mode': required(_LIDAR_MODE),
    'sensorId': required(_ID),
    'vessel': optional(_STR, ''),
    'partFlightId': optional(_UINT64, 0),
})

_CAMERA_SOURCE = sc.string(empty_default='rgb_camera', choices=CAMERA_SOURCES)
_CAMERA_TEXT = sc.string(max_len=MAX_CAMERA_TEXT_CHARS)


def _check_camera_chunk(p: dict) -> None:
    if p['chunkIndex'] >= p['chunkCount']:
        raise sc.inconsistent('chunkIndex >= chunkCount', 'chunkIndex')
    if p['step'] != 3 * p['width']:
        raise sc.inconsistent('rgb8 step must be 3 * width', 'step')
    if p['frameBytes'] != p['step'] * p['height']:
        raise sc.inconsistent('frameBytes must be step * height', 'frameBytes')
    if sc.base64_size(p['data']) > p['frameBytes']:
        raise sc.inconsistent('chunk larger than the frame', 'data')


CAMERA_FRAME_CHUNK = Schema('pylon_camera_frame_chunk', {
    'source': optional(_CAMERA_SOURCE, 'rgb_camera'),
    'sessionId': required(_HEX32),
    'sequence': required(_SEQUENCE),
    'chunkIndex': required(sc.integer(0, MAX_CAMERA_CHUNKS - 1)),
    'chunkCount': required(sc.integer(1, MAX_CAMERA_CHUNKS)),
    'frameBytes': required(sc.integer(1, MAX_CAMERA_FRAME_BYTES)),
    'sha256': required(_HEX64),
    'sensorId': required(sc.string(max_len=MAX_CAMERA_TEXT_CHARS, non_blank=True)),
    'vessel': optional(_CAMERA_TEXT),
    'partFlightId': optional(_UINT64, 0),
    'universalTime': required(_NUM),
    'width': required(sc.integer(1, MAX_CAMERA_DIMENSION)),
    'height': required(sc.integer(1, MAX_CAMERA_DIMENSION)),
    'step': required(sc.integer(1, MAX_CAMERA_STEP)),
    'encoding': required(sc.constant(CAMERA_ENCODING)),
    'verticalFovDeg': required(sc.number(0.0, 180.0, lo_open=True, hi_open=True)),
    'coordinateFrame': optional(_CAMERA_TEXT),
    'framePosition': required(_VEC3),
    'frameRotation': required(_QUAT),
    'data': required(sc.base64_string(min_bytes=1, max_bytes=MAX_CAMERA_CHUNK_BYTES)),
}, [_check_camera_chunk])

CAMERA_INACTIVE = Schema('pylon_camera_inactive', {
    'source': optional(_CAMERA_SOURCE, 'rgb_camera'),
    'sensorId': required(_ID),
    'partFlightId': optional(_UINT64, 0),
})


def _check_star_tracker(p: dict) -> None:
    if p['valid'] != (p['reason'] == 'tracking'):
        raise sc.inconsistent('valid must be true exactly when tracking', 'valid')
    if p['valid'] != (p['orientation'] is not None):
        raise sc.inconsistent('orientation must be set exactly when valid', 'orientation')


STAR_TRACKER = Schema('pylon_star_tracker', {
    'vesselId': required(_HEX32),
    'sensorId': required(_SENSOR_ID),
    'sessionId': required(_HEX32),
    'sequence': required(sc.integer(1, UINT64_MAX)),
    'universalTime': required(_NUM),
    'referenceFrame': required(sc.constant(KERBOL_INERTIAL)),
    'measuredFrame': required(sc.constant(BASE_LINK)),
    'valid': required(_BOOL),
    'reason': required(sc.string(choices=STAR_TRACKER_REASONS)),
    'angularRateDegSec': required(_NON_NEG),
    'noiseStdRad': required(sc.number(0.0, 1.0, lo_open=True)),
    'orientation': required(sc.nullable(sc.quaternion(normalise=False, unit_tolerance=1e-3))),
}, [_check_star_tracker])

# -- state: relative navigation (our extension) -------------------------------------------


def _check_relative_nav(p: dict) -> None:
    _require_others(p, 'targets')
    previous = 0.0
    for index, target in enumerate(p['targets']):
        field = f'targets[{index}].range'
        norm = math.hypot(*target['position'])
        if abs(target['range'] - norm) > RELATIVE_NAV_RANGE_TOLERANCE * max(1.0, norm):
            raise sc.inconsistent(f'{target["range"]!r} is not |position| {norm!r}', field)
        if target['range'] < previous:
            raise sc.inconsistent('targets must come nearest first', field)
        previous = target['range']


_RELATIVE_NAV_TARGET = Schema('relative nav target', {
    'vesselId': required(_HEX32),
    'vesselName': required(sc.string(max_len=MAX_VESSEL_NAME_CHARS)),
    'isDebris': required(_BOOL),
    'range': required(_NON_NEG),
    'position': required(_VEC3),
    'velocity': required(_VEC3),
})

RELATIVE_NAV = Schema('pylon_relative_nav', {
    'vesselId': required(_HEX32),
    'sensorId': required(_SENSOR_ID),
    'partFlightId': required(_UINT32),
    'universalTime': required(_NUM),
    'maxRange': required(_POSITIVE),
    'rateHz': required(sc.number(*SEND_RATE_RANGES_HZ['pylon_relative_nav'])),
    **_fields(_NON_NEG, 'positionSigmaBase rangeSigmaFraction velocitySigma'),
    'coordinateFrame': required(sc.constant(BASE_LINK)),
    'targets': required(sc.array(_RELATIVE_NAV_TARGET, max_count=MAX_RELATIVE_NAV_TARGETS)),
}, [_check_relative_nav])
"""``pylon_relative_nav``: an extension of this workspace's simulator; the PyLoN mod does not
send it. A relative-navigation sensor (rendezvous radar, RF ranging) of the active vessel:
every other loaded, unpacked vessel on its body within ``maxRange`` (m), nearest first by
the measured ``range``, at most 32. ``position`` is the target's centre of mass relative to
the observer's (m) and ``velocity`` the difference of the two centres of mass' inertial
velocities (m/s), both in the observer's ``base_link`` axes (``coordinateFrame``); ``range``
is the norm of ``position``. The noise is Gaussian per axis: 1-sigma ``positionSigmaBase +
rangeSigmaFraction * range`` (m) for the position, ``velocitySigma`` (m/s) for the
velocity. ``rateHz`` is the sensor's sample rate (``SEND_RATE_RANGES_HZ``).
"""

# -- state: GNSS receiver (our extension) ------------------------------------------------


def _check_gnss(p: dict) -> None:
    if 'runtimeVesselId' in p and p['vesselId'] != p['runtimeVesselId']:
        raise sc.inconsistent('vesselId differs from runtimeVesselId', 'vesselId')
    fix = p['status'] == GNSS_FIX
    for key in ('latitude', 'longitude', 'altitude'):
        if (p[key] is not None) != fix:
            raise sc.inconsistent(f'{key} must be set exactly when status is {GNSS_FIX!r}', key)


GNSS = Schema('pylon_gnss', {
    'vesselId': required(_HEX32),
    'sensorId': required(_SENSOR_ID),
    'partFlightId': required(_UINT32),
    'sessionId': required(_HEX32),
    'sequence': required(_SEQUENCE),
    'universalTime': required(_NUM),
    'rateHz': required(sc.number(*SEND_RATE_RANGES_HZ['pylon_gnss'])),
    'frameId': optional(sc.string(pattern=GNSS_FRAME_ID_PATTERN), ''),
    'bodyName': required(_STR_1_128),
    'status': required(sc.string(choices=GNSS_STATUSES)),
    'latitude': required(sc.nullable(sc.number(-90.0, 90.0))),
    'longitude': required(sc.nullable(sc.number(-180.0, 180.0))),
    'altitude': required(sc.nullable(_NUM)),
    'positionCovariance': required(sc.array(_NON_NEG, min_count=3, max_count=3)),
}, [_check_gnss])
"""``pylon_gnss``: an extension of this workspace's simulator; the PyLoN mod does not send it.
A GNSS receiver of the active vessel: the antenna's (the part's origin) ``latitude`` and
``longitude`` (deg, on the sphere of ``bodyName``, the vessel's main body) and ``altitude``
(m above that sphere: KSP's altitude over sea level), noisy, while ``status`` is ``fix``;
all three null with ``no_fix``. ``positionCovariance`` is the diagonal of the noise's
covariance in the antenna's local East, North, Up (m^2). ``sessionId`` is the receiver's (a
new one each time the simulator creates it), ``sequence`` counts its samples from 1 within
it; ``frameId`` is the frame the receiver asks to be published in (empty: the receiver's
sensor frame). ``rateHz`` is the sensor's sample rate (``SEND_RATE_RANGES_HZ``).
"""

# -- state: AHRS (our extension) ----------------------------------------------------------


def _check_ahrs(p: dict) -> None:
    if 'runtimeVesselId' in p and p['vesselId'] != p['runtimeVesselId']:
        raise sc.inconsistent('vesselId differs from runtimeVesselId', 'vesselId')


AHRS = Schema('pylon_ahrs', {
    'vesselId': required(_HEX32),
    'sensorId': required(_SENSOR_ID),
    'partFlightId': required(_UINT32),
    'sessionId': required(_HEX32),
    'sequence': required(_SEQUENCE),
    'universalTime': required(_NUM),
    'rateHz': required(sc.number(*SEND_RATE_RANGES_HZ['pylon_ahrs'])),
    'orientation': required(sc.quaternion(unit_tolerance=1e-3)),
    'orientationCovariance': required(sc.array(_NON_NEG, min_count=3, max_count=3)),
}, [_check_ahrs])
"""``pylon_ahrs``: an extension of this workspace's simulator; the PyLoN mod does not send it.
An attitude and heading reference of the active vessel: ``orientation`` ``[x, y, z, w]`` is
the rotation of ``base_link`` in the local East-North-Up frame of the body point below the
vessel (REP 103/145: a vector in base_link turned by it is in ENU), measured (noisy), a unit
quaternion (norm within 1e-3 of 1, normalised here). ``orientationCovariance`` is the
diagonal of its error's covariance about the ENU axes East, North, Up (rad^2): roll and
pitch (tilt) about the horizontal axes, heading about Up. ``sessionId`` is the sensor's (a
new one each time the simulator creates it), ``sequence`` counts its samples from 1 within
it. ``rateHz`` is the sensor's sample rate (``SEND_RATE_RANGES_HZ``).
"""

# -- state: vessel model -------------------------------------------------------------------


def _check_chunk_index(p: dict) -> None:
    if p['chunkIndex'] >= p['chunkCount']:
        raise sc.inconsistent('chunkIndex >= chunkCount', 'chunkIndex')


VESSEL_URDF_CHUNK = Schema('pylon_vessel_urdf_chunk', {
    'sessionId': required(_HEX32),
    'modelId': required(_HEX64),
    'chunkIndex': required(sc.integer(0, MAX_MODEL_CHUNKS - 1)),
    'chunkCount': required(sc.integer(1, MAX_MODEL_CHUNKS)),
    'encoding': required(sc.constant(MODEL_ENCODING)),
    'sha256': required(_HEX64),
    'expiresAfterSec': required(sc.number(MIN_MODEL_EXPIRES_SEC, MAX_MODEL_EXPIRES_SEC)),
    'sentAtUt': optional(_NUM),
    'data': required(sc.base64_string(min_bytes=1, max_bytes=MAX_MODEL_DATA_CHARS // 4 * 3)),
}, [_check_chunk_index])

VESSEL_URDF_CLEAR = Schema('pylon_vessel_urdf_clear', {'sessionId': required(_HEX32)})

# -- state: docking ports ------------------------------------------------------------------


def _check_docking_manifest(p: dict) -> None:
    _unique_sanitised(p['ports'], 'ports')


DOCKING_PORT_MANIFEST = Schema('pylon_docking_port_manifest', {
    'ports': required(sc.array(Schema('docking port', {
        'name': required(_STR_1_128),
        'partFlightId': required(_UINT64),
        'moduleIndex': required(sc.integer(0, 1024)),
    }), max_count=MAX_DOCKING_PORTS)),
}, [_check_docking_manifest])

DOCKING_PORT_STATE = Schema('pylon_docking_port_state', {
    'name': required(_STR_1_128),
    'partFlightId': optional(_UINT64, 0),
    'moduleIndex': optional(sc.integer(0, 1024), 0),
    'nodeType': optional(_STR_1_128, 'unknown'),
    'state': required(_STR_1_128),
    **_fields(_BOOL, 'docked acquiring releasable cameraActive'),
    'partnerName': optional(_STR_128, ''),
    'partnerPartFlightId': optional(_UINT64, 0),
})

# -- state: control authority, wrench status, snapshot ------------------------------------


def _check_authority_state(p: dict) -> None:
    if p['emergencyStop'] != (p['state'] == AUTHORITY_EMERGENCY_STOP):
        raise sc.inconsistent('emergencyStop must be true exactly in state 2', 'emergencyStop')


CONTROL_AUTHORITY_STATE = Schema('pylon_control_authority_state', {
    'vesselId': required(_STR_128),
    'vessel': optional(_STR_128, ''),
    'state': required(sc.integer(choices=(0, 1, 2))),
    'controllerId': optional(_STR_128, ''),
    'leaseId': optional(_STR_128, ''),
    'priority': optional(_INT, 0),
    'leaseRemainingSeconds': optional(_NON_NEG, 0.0),
    'sasSuppressed': optional(_BOOL, False),
    'emergencyStop': optional(_BOOL, False),
    'lastSequence': optional(sc.integer(0, INT64_MAX), 0),
    'reason': required(_STR_128),
}, [_check_authority_state])

_RATIO = sc.number(0.0, clamp_lo=True)

WRENCH_STATUS = Schema('pylon_wrench_status', {
    'vesselId': required(_STR_128),
    'controllerId': optional(_STR_128, ''),
    'leaseId': optional(_STR_128, ''),
    'sequence': optional(_INT, 0),
    'accepted': required(_BOOL),
    'reason': required(_STR_128),
    **_fields(_WRENCH, 'requested allocated achieved allocationResidual trackingResidual'),
    'saturationRatio': required(_RATIO),
    'trackingErrorRatio': required(_RATIO),
    'saturated': required(_BOOL),
    'achievedQuality': optional(_STR_128, ''),
})


def _member_header(type_name: str) -> dict[str, sc.Field]:
    return {'type': optional(sc.constant(type_name)),
            'version': optional(sc.integer(PROTOCOL_VERSION, PROTOCOL_VERSION))}


_SNAPSHOT_FLIGHT = FLIGHT_STATE.extend('snapshot flight', {
    **_member_header('pylon_flight_state'), 'observationSequence': required(_UINT64)})
_SNAPSHOT_MEMBER = {**_member_header('pylon_actuator_state'), 'vesselId': required(_STR),
                    'observationSequence': required(_UINT64),
                    'universalTime': required(_NUM)}
_SNAPSHOT_ENGINE = ACTUATOR_STATE.schemas['engine'].extend('snapshot engine', {
    **_SNAPSHOT_MEMBER, **_fields(_BOOL, _ENGINE_BOOLS), **_fields(_NUM, _ENGINE_NUMBERS)})
_SNAPSHOT_SEPARATION = ACTUATOR_STATE.schemas['separation'].extend('snapshot separation', {
    **_SNAPSHOT_MEMBER, **_fields(_BOOL, 'available separated')})


def _check_snapshot(p: dict) -> None:
    vessel_id = p['vesselId']
    sequence = p['observationSequence']
    flight = p['flight']
    members = [('flight', flight)]
    members += [(f'engines[{i}]', member) for i, member in enumerate(p['engines'])]
    members += [(f'separations[{i}]', member) for i, member in enumerate(p['separations'])]
    for path, member in members:
        if member['vesselId'] != vessel_id:
            raise sc.inconsistent('member vesselId differs', f'{path}.vesselId')
        if member['observationSequence'] != sequence:
            raise sc.inconsistent('member observationSequence differs',
                                  f'{path}.observationSequence')
        for key in _envelope.ENVELOPE_KEYS:
            if key in member and (type(member[key]) is not type(p.get(key))
                                  or member[key] != p.get(key)):
                raise sc.inconsistent('member envelope differs', f'{path}.{key}')
        if path != 'flight' and member['universalTime'] != flight['universalTime']:
            raise sc.inconsistent('actuator universalTime differs from flight',
                                  f'{path}.universalTime')
    _unique_sanitised([member for path, member in members[1:]], 'engines')


CONTROL_SNAPSHOT = Schema('pylon_control_snapshot', {
    'vesselId': required(_STR),
    'observationSequence': required(_UINT64),
    'flight': required(_SNAPSHOT_FLIGHT),
    'engines': required(sc.array(_SNAPSHOT_ENGINE, max_count=MAX_SNAPSHOT_ACTUATORS)),
    'separations': required(sc.array(_SNAPSHOT_SEPARATION,
                                     max_count=MAX_SNAPSHOT_ACTUATORS)),
}, [_check_snapshot])

# -- state: health, thermal, separation results -------------------------------------------


def _check_health(p: dict) -> None:
    if 'runtimeVesselId' in p and p['vesselId'] != p['runtimeVesselId']:
        raise sc.inconsistent('vesselId differs from runtimeVesselId', 'vesselId')


VEHICLE_HEALTH = Schema('pylon_vehicle_health', {
    'vesselId': required(_ID),
    'observationSequence': required(_UINT64),
    'universalTime': required(_NUM),
    'electricCharge': required(_NON_NEG),
    'electricCapacity': required(_NON_NEG),
}, [_check_health])

PART_THERMAL_STATE = VEHICLE_HEALTH.extend('pylon_part_thermal_state', {
    'partFlightId': required(_UINT32),
    'partPersistentId': required(_UINT32),
    'partName': required(_ID),
    **_fields(_NON_NEG, 'temperature maxTemperature skinTemperature maxSkinTemperature'),
    'shieldedFromAirstream': required(_BOOL),
})


def _check_separation_result(p: dict) -> None:
    if p['success'] and not (p['completed'] and p['resultEpoch']):
        raise sc.inconsistent('success needs completed and a resultEpoch', 'success')
    sc.require_unique(p['resultingVesselIds'], 'resultingVesselIds', 'vessel id')


_OPERATION_IDENTITY = _fields(_TOKEN, 'operationId operationInstance operationEpoch '
                                      'operationVesselId')

SEPARATION_RESULT = Schema('pylon_separation_result', {
    **_OPERATION_IDENTITY,
    'originalGeneration': required(_UINT64),
    'name': required(_STR),
    'controllerId': required(_STR),
    'sequence': required(_INT),
    **_fields(_BOOL, 'completed success retained'),
    'reason': required(_STR_128),
    'resultEpoch': required(_STR),
    'resultGeneration': required(_UINT64),
    'activeVesselId': required(_STR),
    'resultingVesselIds': required(sc.array(_ID, max_count=MAX_RESULTING_VESSELS)),
    'retentionRemainingSeconds': required(sc.number(0.0, SEPARATION_RESULT_RETENTION_SEC)),
}, [_check_separation_result])

# -- commands ------------------------------------------------------------------------------

_IDENTITY_64 = {
    **_fields(_IDENT_64, 'vesselId controllerId leaseId'),
    'sequence': required(_SEQUENCE),
}
_IDENTITY_128 = {
    **_fields(sc.string(min_len=1, max_len=128, non_blank=True),
              'vesselId controllerId leaseId'),
    'sequence': required(_SEQUENCE),
}
_TIMEOUT = sc.number(MIN_COMMAND_TIMEOUT_SEC, MAX_COMMAND_TIMEOUT_SEC)
_SHORT_TIMEOUT = sc.number(MIN_COMMAND_TIMEOUT_SEC, MAX_SHORT_COMMAND_TIMEOUT_SEC)
_LEASE_DURATION = sc.number(MIN_LEASE_SEC, MAX_LEASE_SEC)


def _check_authority_command(p: dict) -> None:
    if p['action'] in ('acquire', 'renew'):
        if 'leaseDurationSeconds' not in p:
            raise _fail('missing_field', f'{p["action"]} needs a lease duration',
                        'leaseDurationSeconds')
        _check_lease(p)


def _check_lease(p: dict) -> None:
    try:
        _LEASE_DURATION(p['leaseDurationSeconds'])
    except ProtocolError as exc:
        raise sc.relocate(exc, 'leaseDurationSeconds') from None


CONTROL_AUTHORITY_COMMAND = Schema('pylon_control_authority_command', {
    'action': required(sc.string(normalise=lambda text: text.strip().lower(),
                                 choices=AUTHORITY_ACTIONS)),
    **_IDENTITY_64,
    'priority': optional(_INT32, 0),
    'leaseDurationSeconds': optional(_NON_NEG),
    'suppressSas': optional(_BOOL, False),
}, [_check_authority_command])

BODY_WRENCH_COMMAND = Schema('pylon_body_wrench_command', {
    'frame': required(sc.constant(BASE_LINK)),
    **_IDENTITY_64,
    'force': required(_VEC3),
    'torque': required(_VEC3),
    'timeoutSeconds': required(_TIMEOUT),
})

_ACTUATOR_COMMAND_COMMON = {
    'actuatorType': required(sc.string(choices=COMMAND_ACTUATOR_TYPES)),
    'name': required(_ACTUATOR_ID),
    **_IDENTITY_64,
    'enabled': optional(_BOOL, True),
    'timeoutSeconds': required(_TIMEOUT),
}
_ACTUATOR_COMMAND_FIELDS = {
    'wheel': {
        'targetAngularVelocity': required(_NUM),
        'steeringAngle': optional(_NUM, 0.0),
        'maxDriveTorque': optional(_NON_NEG, 0.0),
        'brake': optional(sc.number(0.0, 1.0), 0.0),
    },
    'engine': {
        'targetThrust': required(_NON_NEG),
        'hasGimbalCommand': optional(_BOOL, False),
        **_fields(_UNIT_RANGE, 'gimbalPitch gimbalYaw gimbalRoll', 0.0, needed=False),
    },
    'rcs': {'thrustLimit': required(_NON_NEG)},
    'separation': {
        'separate': required(_BOOL),
        **_fields(_TOKEN_OR_EMPTY, 'operationId operationInstance operationEpoch '
                                   'operationVesselId', needed=False),
    },
}
ACTUATOR_COMMAND = Variant('pylon_actuator_command', 'actuatorType', {
    kind: Schema(f'{kind} pylon_actuator_command', {
        **_ACTUATOR_COMMAND_COMMON, 'actuatorType': required(sc.constant(kind)), **fields})
    for kind, fields in _ACTUATOR_COMMAND_FIELDS.items()})


def _check_motor_command(p: dict) -> None:
    for mode in MOTOR_MODES:
        key = 'has' + mode.capitalize()
        wanted = p['enabled'] and p['mode'] == mode
        if p[key] != wanted:
            raise sc.inconsistent(f'{key} must be {str(wanted).lower()} for mode '
                                  f'{p["mode"]!r} and enabled {str(p["enabled"]).lower()}', key)


MOTOR_COMMAND = Schema('pylon_motor_command', {
    'name': required(_ACTUATOR_ID),
    **_IDENTITY_64,
    'partFlightId': optional(_UINT32, 0),
    'mode': required(sc.string(choices=MOTOR_MODES)),
    'hasEnabled': optional(_BOOL, False),
    'enabled': optional(_BOOL, True),
    **_fields(_BOOL, 'hasPosition hasVelocity hasEffort', False, needed=False),
    **_fields(_NUM, 'position velocity effort', 0.0, needed=False),
    'timeoutSeconds': required(_TIMEOUT),
}, [_check_motor_command])

DOCKING_PORT_COMMAND = Schema('pylon_docking_port_command', {
    'name': required(_name_id(128)),
    'action': required(sc.integer(choices=(DOCKING_SELECT_CAMERA, DOCKING_STOP_CAMERA,
                                           DOCKING_RELEASE))),
    **_IDENTITY_128,
})

FLIGHT_CONTROL_COMMAND = Schema('pylon_flight_control_command', {
    **_IDENTITY_64,
    'landingGear': required(_BOOL),
    'timeoutSeconds': required(_SHORT_TIMEOUT),
    **_fields(_UNIT_RANGE, 'pitch yaw roll'),
})

_BATCH_ENGINE = ACTUATOR_COMMAND.schemas['engine'].extend('batch engine', {
    **_member_header('pylon_actuator_command'), 'timeoutSeconds': required(_SHORT_TIMEOUT)})
_BATCH_FLIGHT = FLIGHT_CONTROL_COMMAND.extend(
    'batch flight', _member_header('pylon_flight_control_command'))
_BATCH_SEPARATION = ACTUATOR_COMMAND.schemas['separation'].extend(
    'batch separation', _member_header('pylon_actuator_command'))
_BATCH_MEMBER_SCHEMAS = {'engine': _BATCH_ENGINE, 'flight': _BATCH_FLIGHT,
                         'separation': _BATCH_SEPARATION}
_IDENTITY_KEYS = ('vesselId', 'controllerId', 'leaseId', 'sequence')


def _parse_member(text: str, member_schema: Schema, path: str) -> dict:
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _fail('bad_value', f'not JSON: {exc}', path) from None
    try:
        return member_schema(obj)
    except ProtocolError as exc:
        raise sc.relocate(exc, path) from None


def batch_members(batch: dict) -> dict[str, Any]:
    """Parse and check the JSON-string members of a ``pylon_control_batch``.

    Returns ``{'flight': dict | None, 'engines': [dict, ...], 'separation': dict | None}``
    in the order the mod applies them (flight, engines, separation). Members must repeat
    the batch's ``vesselId``, ``controllerId``, ``leaseId`` and ``sequence``; engine names
    must be unique; the separation member must have ``separate: true``.
    """
    flight = separation = None
    flags = (('hasFlight', 'flightJson', 'flight'), ('hasSeparation', 'separationJson',
                                                      'separation'))
    parsed = {}
    for flag, key, kind in flags:
        text = batch.get(key, '')
        if batch.get(flag, False):
            if not text:
                raise _fail('missing_field', f'{flag} is true', key)
            parsed[kind] = _parse_member(text, _BATCH_MEMBER_SCHEMAS[kind], key)
        elif text:
            raise sc.inconsistent(f'{key} sent while {flag} is false', key)
    flight = parsed.get('flight')
    separation = parsed.get('separation')
    engines = [_parse_member(text, _BATCH_ENGINE, f'engineJson[{i}]')
               for i, text in enumerate(batch.get('engineJson', ()))]
    members = [('flightJson', flight), ('separationJson', separation)]
    members += [(f'engineJson[{i}]', engine) for i, engine in enumerate(engines)]
    for path, member in members:
        if member is None:
            continue
        for key in _IDENTITY_KEYS:
            if member[key] != batch.get(key):
                raise sc.inconsistent(f'member {key} differs from the batch', f'{path}.{key}')
    sc.require_unique([engine['name'] for engine in engines], 'engineJson', 'engine name')
    if separation is not None and separation['separate'] is not True:
        raise _fail('bad_value', 'a batch separation must have separate true',
                    'separationJson.separate')
    return {'flight': flight, 'engines': engines, 'separation': separation}


def _check_batch(p: dict) -> None:
    if p['renewLease']:
        if 'leaseDurationSeconds' not in p:
            raise _fail('missing_field', 'renewLease needs a lease duration',
                        'leaseDurationSeconds')
        _check_lease(p)
    batch_members(p)


CONTROL_BATCH = Schema('pylon_control_batch', {
    **_IDENTITY_64,
    'renewLease': optional(_BOOL, False),
    'leaseDurationSeconds': optional(_NON_NEG),
    'suppressSas': optional(_BOOL, False),
    'hasFlight': optional(_BOOL, False),
    'hasSeparation': optional(_BOOL, False),
    'engineJson': optional(sc.array(_STR, max_count=MAX_BATCH_ENGINES), []),
    'flightJson': optional(_STR),
    'separationJson': optional(_STR),
}, [_check_batch])

SEPARATION_QUERY = Schema('pylon_separation_query', _OPERATION_IDENTITY)

# -- registry and public API ---------------------------------------------------------------

_STATE_SCHEMAS: dict[str, Schema | Variant] = {
    'pylon_session': SESSION,
    'pylon_imu': IMU,
    'pylon_ground_truth': GROUND_TRUTH,
    'pylon_nearby_vessels': NEARBY_VESSELS,
    'pylon_flight_state': FLIGHT_STATE,
    'pylon_actuator_manifest': ACTUATOR_MANIFEST,
    'pylon_actuator_state': ACTUATOR_STATE,
    'pylon_motor_state': MOTOR_STATE,
    'pylon_lidar_scan': LIDAR_SCAN,
    'pylon_lidar_inactive': LIDAR_INACTIVE,
    'pylon_camera_frame_chunk': CAMERA_FRAME_CHUNK,
    'pylon_camera_inactive': CAMERA_INACTIVE,
    'pylon_star_tracker': STAR_TRACKER,
    'pylon_vessel_urdf_chunk': VESSEL_URDF_CHUNK,
    'pylon_vessel_urdf_clear': VESSEL_URDF_CLEAR,
    'pylon_docking_port_manifest': DOCKING_PORT_MANIFEST,
    'pylon_docking_port_state': DOCKING_PORT_STATE,
    'pylon_control_authority_state': CONTROL_AUTHORITY_STATE,
    'pylon_wrench_status': WRENCH_STATUS,
    'pylon_control_snapshot': CONTROL_SNAPSHOT,
    'pylon_vehicle_health': VEHICLE_HEALTH,
    'pylon_part_thermal_state': PART_THERMAL_STATE,
    'pylon_separation_result': SEPARATION_RESULT,
    'pylon_relative_nav': RELATIVE_NAV,
    'pylon_gnss': GNSS,
    'pylon_ahrs': AHRS,
}
_COMMAND_SCHEMAS: dict[str, Schema | Variant] = {
    'pylon_control_authority_command': CONTROL_AUTHORITY_COMMAND,
    'pylon_body_wrench_command': BODY_WRENCH_COMMAND,
    'pylon_actuator_command': ACTUATOR_COMMAND,
    'pylon_motor_command': MOTOR_COMMAND,
    'pylon_docking_port_command': DOCKING_PORT_COMMAND,
    'pylon_flight_control_command': FLIGHT_CONTROL_COMMAND,
    'pylon_control_batch': CONTROL_BATCH,
    'pylon_separation_query': SEPARATION_QUERY,
}
STATE_TYPES = frozenset(_STATE_SCHEMAS)
COMMAND_TYPES = frozenset(_COMMAND_SCHEMAS)

#: Every ``ProtocolError.reason`` that decoding, validating, building or encoding raises.
REASONS = sc.FIELD_REASONS | wire.WIRE_REASONS | frozenset({'unknown_type'})

_RESERVED_KEYS = frozenset(('type', 'version', *_envelope.ENVELOPE_KEYS))


def schema_for(type_name: str) -> Schema | Variant:
    """Return the schema of a state or command type (``unknown_type`` if there is none)."""
    found = _STATE_SCHEMAS.get(type_name) or _COMMAND_SCHEMAS.get(type_name)
    if found is None:
        raise ProtocolError('unknown_type', f'{type_name!r:.80}', 'type')
    return found


def validate_state(obj: dict) -> dict:
    """Check a decoded state datagram and return the normalised copy.

    Order: header (``type``, ``version``), runtime envelope, then the type's schema. A
    well-formed packet of a ``pylon_*`` type this module does not know raises
    ``unknown_type``, which a receiver ignores silently.
    """
    if type(obj) is not dict:
        raise ProtocolError('not_object', f'a {type(obj).__name__}, not an object')
    type_name = wire.check_header(obj)
    Envelope.check_packet(obj)
    found = _STATE_SCHEMAS.get(type_name)
    if found is None:
        raise ProtocolError('unknown_type', f'{type_name:.80}', 'type')
    return found(obj)


def validate_command(obj: dict, *, require_envelope: bool = True) -> dict:
    """Check a decoded command and return the normalised copy.

    The runtime envelope is required unless ``require_envelope`` is false (a command not
    yet addressed to a session); envelope fields that are present are always checked.
    """
    if type(obj) is not dict:
        raise ProtocolError('not_object', f'a {type(obj).__name__}, not an object')
    type_name = wire.check_header(obj)
    if require_envelope or not _envelope.ENVELOPE_KEYS_SET.isdisjoint(obj):
        Envelope.check_packet(obj)
    found = _COMMAND_SCHEMAS.get(type_name)
    if found is None:
        raise ProtocolError('unknown_type', f'{type_name:.80}', 'type')
    return found(obj)


def decode_state(data: bytes, max_bytes: int = MAX_DATAGRAM_BYTES) -> dict:
    """Decode and validate one state datagram (see ``wire.decode_json``).

    A plain IMU datagram is decoded and checked in one call when msgspec is installed
    (``_imu_fast_decoder``); everything else, and whatever that call refuses, takes the
    reference path.
    """
    if _decode_imu is not None and len(data) <= max_bytes:
        try:
            return _decode_imu(data)
        except Exception:       # not a plain IMU datagram: the reference path judges
            pass
    return validate_state(wire.decode_json(data, max_bytes))


def decode_command(data: bytes, max_bytes: int = MAX_DATAGRAM_BYTES) -> dict:
    """Decode and validate one command datagram; the runtime envelope is required."""
    return validate_command(wire.decode_json(data, max_bytes))


def _check_reserved(fields: dict) -> None:
    if not _RESERVED_KEYS.isdisjoint(fields):
        key = sorted(_RESERVED_KEYS.intersection(fields))[0]
        raise ProtocolError('bad_value', 'set by the builder, not a payload field', key)


def assemble_state(type_name: str, envelope: Envelope, **fields: Any) -> dict:
    """Return a state packet in the wire's layout, unchecked: envelope, type, version, payload.

    For a sender that trusts its own builder (the simulator, as the mod does): the
    receiver validates every datagram anyway. ``build_state`` is the checked form;
    ``encode_built_state`` still refuses non-finite numbers.
    """
    if type_name not in _STATE_SCHEMAS:
        raise ProtocolError('unknown_type', f'{type_name!r:.80} is not a state type', 'type')
    _check_reserved(fields)
    return {**envelope.to_wire(), 'type': type_name, 'version': PROTOCOL_VERSION, **fields}


def build_state(type_name: str, envelope: Envelope, **fields: Any) -> dict:
    """Return a validated state packet: envelope, ``type``, ``version``, then the payload.

    ``fields`` use the wire's camelCase names. The result passes ``validate_state`` (it
    is its output), so nothing invalid can be sent.
    """
    packet = assemble_state(type_name, envelope, **fields)
    return _STATE_SCHEMAS[type_name](packet)


#: State types with a strict base64 field (``base64_string``): the sender copies it in.
BASE64_FIELDS: Mapping[str, str] = MappingProxyType({
    'pylon_camera_frame_chunk': 'data', 'pylon_vessel_urdf_chunk': 'data'})


def encode_built_state(packet: dict, max_bytes: int = MAX_DATAGRAM_BYTES) -> bytes:
    """Encode a packet ``build_state`` or ``assemble_state`` returned (``wire.encode_state``).

    The base64 data of a camera or model chunk (text of the base64 alphabet, which no JSON
    escape touches; ``wire.encode_state_with_base64`` checks it) is copied into the text
    rather than scanned by the encoder.
    """
    key = BASE64_FIELDS.get(packet.get('type'))
    if key is None:
        return wire.encode_state(packet, max_bytes)
    return wire.encode_state_with_base64(packet, key, max_bytes)


def build_command(type_name: str, envelope: Envelope | None, **fields: Any) -> dict:
    """Return a validated command: ``type``, ``version``, payload, then the envelope.

    With ``envelope=None`` the command has no envelope yet (``envelope.append`` adds it).
    """
    found = _COMMAND_SCHEMAS.get(type_name)
    if found is None:
        raise ProtocolError('unknown_type', f'{type_name!r:.80} is not a command type',
                            'type')
    _check_reserved(fields)
    packet = found({'type': type_name, 'version': PROTOCOL_VERSION, **fields})
    return packet if envelope is None else _envelope.append(packet, envelope)


def build_batch_member(type_name: str, **fields: Any) -> str:
    """Return one ``pylon_control_batch`` member as the compact JSON string it travels as.

    ``type_name`` is ``pylon_flight_control_command`` or ``pylon_actuator_command`` with
    ``actuatorType`` ``engine`` or ``separation``; the member carries ``type`` and
    ``version`` but no envelope, and is checked with the batch member rules.
    """
    _check_reserved(fields)
    if type_name == 'pylon_flight_control_command':
        member_schema = _BATCH_FLIGHT
    elif type_name == 'pylon_actuator_command' and fields.get('actuatorType') in (
            'engine', 'separation'):
        member_schema = _BATCH_MEMBER_SCHEMAS[fields['actuatorType']]
    else:
        raise ProtocolError('bad_value', f'{type_name!r:.80} with actuatorType '
                            f'{fields.get("actuatorType")!r:.40} is not a batch member', 'type')
    member = member_schema({'type': type_name, 'version': PROTOCOL_VERSION, **fields})
    return wire.encode_command(member).decode('ascii')
