"""Every packet type: a valid example round trip, then the bridge's rejection rules."""

import base64
import copy
import json
import math

from pylon_protocol import envelope, packets, schema, wire
from pylon_protocol.errors import ProtocolError
from pylon_testing import packet_samples as samples
import pytest

ENVELOPE = samples.ENVELOPE
VESSEL_ID = samples.VESSEL_ID
OTHER = samples.OTHER_VESSEL_ID
DROP = object()
NAN = math.nan
INF = math.inf


# -- valid examples -------------------------------------------------------------------------

def test_samples_cover_every_type():
    assert {t for t, _ in samples.STATE_SAMPLES.values()} == packets.STATE_TYPES
    assert {t for t, _ in samples.COMMAND_SAMPLES.values()} == packets.COMMAND_TYPES
    assert len(packets.STATE_TYPES) == 26 and len(packets.COMMAND_TYPES) == 8
    kinds = {f['actuatorType'] for t, f in samples.STATE_SAMPLES.values()
             if t == 'pylon_actuator_state'}
    assert kinds == set(packets.ACTUATOR_TYPES)
    kinds = {f['actuatorType'] for t, f in samples.COMMAND_SAMPLES.values()
             if t == 'pylon_actuator_command'}
    assert kinds == set(packets.COMMAND_ACTUATOR_TYPES)


@pytest.mark.parametrize('case', sorted(samples.STATE_SAMPLES))
def test_encode_built_state_writes_the_bytes_of_encode_state(case):
    packet = samples.state_packet(case)
    data = packets.encode_built_state(packet)
    assert data == wire.encode_state(packet)
    assert packets.decode_state(data) == packet


def test_encode_built_state_copies_the_chunk_data_and_keeps_the_limit():
    assert set(packets.BASE64_FIELDS) == {'pylon_camera_frame_chunk', 'pylon_vessel_urdf_chunk'}
    chunk = samples.state_packet('pylon_camera_frame_chunk')
    data = packets.encode_built_state(chunk)
    assert f'"data":"{chunk["data"]}"'.encode() in data
    with pytest.raises(ProtocolError) as info:
        packets.encode_built_state(chunk, max_bytes=len(data) - 1)
    assert info.value.reason == 'too_large'


@pytest.mark.parametrize('case', sorted(samples.STATE_SAMPLES))
def test_state_round_trip(case):
    type_name, fields = samples.state_sample(case)
    packet = packets.build_state(type_name, ENVELOPE, **fields)
    keys = list(packet)
    assert keys[:6] == [*envelope.ENVELOPE_KEYS, 'type', 'version']
    assert packet['type'] == type_name and packet['version'] == 1
    assert set(fields) <= set(packet)
    data = wire.encode_state(packet)
    decoded = packets.decode_state(data)
    assert decoded == packet
    assert list(decoded) == keys
    assert packets.validate_state(decoded) == decoded


@pytest.mark.parametrize('case', sorted(samples.COMMAND_SAMPLES))
def test_command_round_trip(case):
    type_name, fields = samples.command_sample(case)
    packet = packets.build_command(type_name, ENVELOPE, **fields)
    keys = list(packet)
    assert keys[:2] == ['type', 'version'] and keys[-4:] == list(envelope.ENVELOPE_KEYS)
    decoded = packets.decode_command(wire.encode_command(packet))
    assert decoded == packet
    assert list(decoded) == keys


@pytest.mark.parametrize('case', sorted(samples.COMMAND_SAMPLES))
def test_command_without_envelope(case):
    type_name, fields = samples.command_sample(case)
    packet = packets.build_command(type_name, None, **fields)
    assert envelope.ENVELOPE_KEYS_SET.isdisjoint(packet)
    assert packets.validate_command(packet, require_envelope=False) == packet
    with pytest.raises(ProtocolError) as info:
        packets.decode_command(wire.encode_command(packet))
    assert info.value.reason == 'missing_field'
    assert packets.decode_command(wire.encode_command(envelope.append(packet, ENVELOPE)))


def test_validation_returns_a_new_dict_and_keeps_the_input():
    packet = samples.state_packet('pylon_ground_truth')
    raw = copy.deepcopy(packet)
    raw['rotation'] = [0, 0, 0, 2]
    raw['position'] = [1, 2, 3]
    before = copy.deepcopy(raw)
    out = packets.validate_state(raw)
    assert raw == before
    assert out['rotation'] == [0.0, 0.0, 0.0, 1.0]
    assert out['position'] == [1.0, 2.0, 3.0] and type(out['position'][0]) is float
    assert out['position'] is not raw['position']


def test_build_fills_defaults_and_normalises():
    packet = packets.build_state('pylon_actuator_state', ENVELOPE, actuatorType='wheel',
                                 name='wheel_1_0')
    assert packet['wheelCount'] == 0 and packet['position'] == [0.0, 0.0, 0.0]
    assert packet['enabled'] is False and packet['universalTime'] == 0.0
    other = packets.build_state('pylon_actuator_state', ENVELOPE, actuatorType='wheel',
                                name='wheel_2_0')
    assert packet['position'] is not other['position']
    chunk = samples.state_packet('pylon_camera_frame_chunk', source='')
    assert chunk['source'] == 'rgb_camera'
    lidar = samples.state_packet('pylon_lidar_scan', mode='3d')
    assert lidar['mode'] == '3D'
    motor = samples.state_packet('pylon_motor_state', current=-2.0)
    assert motor['current'] == 0.0
    status = samples.state_packet('pylon_wrench_status', saturationRatio=-0.1)
    assert status['saturationRatio'] == 0.0
    command = samples.command_packet('pylon_control_authority_command', action=' ReNew ')
    assert command['action'] == 'renew'
    wheel = samples.state_packet('pylon_actuator_state/wheel', rollingSign=-1.0)
    assert wheel['rollingSign'] == -1 and type(wheel['rollingSign']) is int


def test_build_rejects_reserved_and_unknown_types():
    for key in ('type', 'version', 'runtimeEpoch'):
        with pytest.raises(ProtocolError) as info:
            packets.build_state('pylon_vessel_urdf_clear', ENVELOPE, sessionId='ef' * 16,
                                **{key: 'x'})
        assert (info.value.reason, info.value.field) == ('bad_value', key)
    for call in (lambda: packets.build_state('pylon_future', ENVELOPE),
                 lambda: packets.build_state('pylon_body_wrench_command', ENVELOPE),
                 lambda: packets.build_command('pylon_imu', None)):
        with pytest.raises(ProtocolError) as info:
            call()
        assert info.value.reason == 'unknown_type'


def test_build_never_returns_an_invalid_packet():
    with pytest.raises(ProtocolError) as info:
        packets.build_state('pylon_imu', ENVELOPE, vesselId=VESSEL_ID, universalTime=NAN,
                            angularVelocity=[0, 0, 0], linearAcceleration=[0, 0, 0])
    assert info.value.reason == 'non_finite'


def test_unknown_pylon_types_are_reported_after_the_envelope():
    packet = {**ENVELOPE.to_wire(), 'type': 'pylon_future_thing', 'version': 1, 'x': 1}
    with pytest.raises(ProtocolError) as info:
        packets.decode_state(json.dumps(packet).encode())
    assert info.value.reason == 'unknown_type'
    del packet['runtimeEpoch']
    with pytest.raises(ProtocolError) as info:
        packets.decode_state(json.dumps(packet).encode())
    assert info.value.reason == 'missing_field'
    command = samples.command_packet('pylon_separation_query')
    with pytest.raises(ProtocolError) as info:   # a command is not a state packet
        packets.decode_state(wire.encode_command(command))
    assert info.value.reason == 'unknown_type'
    with pytest.raises(ProtocolError) as info:
        packets.decode_command(wire.encode_state(samples.state_packet('pylon_imu')))
    assert info.value.reason == 'unknown_type'


def test_batch_members_are_parsed_in_apply_order():
    batch = packets.decode_command(wire.encode_command(samples.command_packet(
        'pylon_control_batch')))
    members = packets.batch_members(batch)
    assert members['flight']['pitch'] == 0.1
    assert [m['name'] for m in members['engines']] == ['engine_3001_0']
    assert members['separation']['separate'] is True
    empty = samples.command_packet('pylon_control_batch', hasFlight=False, hasSeparation=False,
                                   engineJson=[], flightJson='', separationJson='')
    assert packets.batch_members(empty) == {'flight': None, 'engines': [], 'separation': None}


def test_batch_member_builder_checks_member_rules():
    with pytest.raises(ProtocolError) as info:
        packets.build_batch_member('pylon_actuator_command', actuatorType='wheel')
    assert info.value.reason == 'bad_value'
    _, engine = samples.command_sample('pylon_actuator_command/engine')
    with pytest.raises(ProtocolError) as info:
        packets.build_batch_member('pylon_actuator_command', **{**engine, 'timeoutSeconds': 2})
    assert (info.value.reason, info.value.field) == ('out_of_range', 'timeoutSeconds')


def test_constants():
    assert (packets.STATE_PORT, packets.COMMAND_PORT) == (49010, 49011)
    assert packets.MAX_DATAGRAM_BYTES == 65535
    assert packets.AUTHORITY_ACTIONS.index('acquire') + 1 == 1
    assert packets.AUTHORITY_ACTIONS.index('clear_emergency_stop') + 1 == 5
    assert packets.SEND_RATES_HZ['pylon_session'] == 10.0
    assert set(packets.SEND_RATES_HZ) <= packets.STATE_TYPES
    assert 'stale' not in packets.STAR_TRACKER_REASONS
    assert packets.WRENCH_FILTER_REASONS < packets.WRENCH_STATUS_REASONS
    assert schema.FIELD_REASONS <= packets.REASONS
    assert packets.EXTENSION_STATE_TYPES <= packets.STATE_TYPES
    assert packets.MAX_RELATIVE_NAV_TARGETS == packets.MAX_NEARBY_VESSELS == 32
    assert packets.SEND_RATE_RANGES_HZ['pylon_relative_nav'] == (1.0, 20.0)


def test_base64_is_strict_and_canonical():
    check = schema.base64_string(max_bytes=6)
    assert check('AAEC') == 'AAEC' and check('QQ==') == 'QQ==' and check('QUI=') == 'QUI='
    for bad in ('AAE', 'AAE=C', ' AAEC', 'AA==AA==', 'A-_A', 'QR==', 'QUJ=', 'ÄÄÄÄ'):
        with pytest.raises(ProtocolError) as info:
            check(bad)
        assert info.value.reason == 'bad_value'
    with pytest.raises(ProtocolError) as info:
        check('AAAA' * 3)
    assert info.value.reason == 'bad_length'
    with pytest.raises(ProtocolError) as info:
        check(5)
    assert info.value.reason == 'bad_type'


# -- rejections -----------------------------------------------------------------------------

def _steps(path: str) -> list:
    return [int(step) if step.isdigit() else step for step in path.split('.')]


def _field_of(path: str) -> str:
    out = ''
    for step in _steps(path):
        out += f'[{step}]' if isinstance(step, int) else (f'.{step}' if out else step)
    return out


def mutate(packet: dict, path: str, value) -> dict:
    """Return a deep copy with ``path`` ('a.0.b') set to value (DROP deletes it)."""
    out = copy.deepcopy(packet)
    *parents, last = _steps(path)
    target = out
    for step in parents:
        target = target[step]
    if callable(value):
        value = value(copy.deepcopy(target[last]))
    if value is DROP:
        del target[last]
    else:
        target[last] = value
    return out


def repeat(count: int):
    """Return a mutation that repeats the first element of a list ``count`` times."""
    return lambda items: [copy.deepcopy(items[0]) for _ in range(count)]


def member(case: str, **changes) -> str:
    """Return a batch member JSON string (possibly invalid) from a command sample."""
    _, fields = samples.command_sample(case)
    fields.update(changes)
    return json.dumps(fields)


def row(case, path, value, reason, field=None):
    return pytest.param(case, path, value, reason, _field_of(path) if field is None else field,
                        id=f'{case}:{path}={str(value)[:20]}')


STATE_REJECTIONS = [
    # header and envelope (rule 1)
    row('pylon_imu', 'type', 'ksp_imu', 'bad_packet_type'),
    row('pylon_imu', 'version', True, 'bad_version'),
    row('pylon_imu', 'version', 1.0, 'bad_version'),
    row('pylon_imu', 'version', 2, 'bad_version'),
    row('pylon_imu', 'version', DROP, 'bad_version'),
    row('pylon_imu', 'runtimeGeneration', -1, 'out_of_range'),
    row('pylon_imu', 'runtimeGeneration', True, 'bad_type'),
    row('pylon_imu', 'runtimeInstance', '', 'bad_value'),
    row('pylon_imu', 'runtimeEpoch', DROP, 'missing_field'),
    row('pylon_imu', 'runtimeVesselId', None, 'bad_type'),
    # heartbeat
    row('pylon_session', 'available', 1, 'bad_type'),
    row('pylon_session', 'available', DROP, 'missing_field'),
    row('pylon_session', 'universalTime', NAN, 'non_finite'),
    row('pylon_session', 'universalTime', True, 'bad_type'),
    row('pylon_session', 'vesselId', OTHER, 'inconsistent'),
    row('pylon_session', 'vesselId', DROP, 'missing_field'),
    row('pylon_session', 'observationSequence', -1, 'out_of_range'),
    row('pylon_session', 'observationSequence', 1.0, 'bad_type'),
    row('pylon_session', 'paused', DROP, 'missing_field'),
    row('pylon_session', 'physicsWarp', DROP, 'missing_field'),
    row('pylon_session', 'warpRate', -1, 'out_of_range'),
    row('pylon_session', 'realtimeSinceStartup', INF, 'non_finite'),
    row('pylon_session', 'packed', True, 'inconsistent', 'available'),
    # IMU (rule 5)
    row('pylon_imu', 'vesselId', VESSEL_ID.upper(), 'bad_value'),
    row('pylon_imu', 'vesselId', 'abc', 'bad_value'),
    row('pylon_imu', 'universalTime', INF, 'non_finite'),
    row('pylon_imu', 'universalTime', DROP, 'missing_field'),
    row('pylon_imu', 'angularVelocity', [0, 0], 'bad_length'),
    row('pylon_imu', 'angularVelocity', [0, 0, 0, 0], 'bad_length'),
    row('pylon_imu', 'angularVelocity.1', NAN, 'non_finite'),
    row('pylon_imu', 'linearAcceleration.2', '9.8', 'bad_type'),
    row('pylon_imu', 'linearAcceleration.0', True, 'bad_type'),
    row('pylon_imu', 'linearAcceleration', {'x': 1}, 'bad_type'),
    # ground truth (rule 6)
    row('pylon_ground_truth', 'rotation', [0, 0, 0, 0], 'bad_value'),
    row('pylon_ground_truth', 'rotation', [0, 0, 0, 1e-10], 'bad_value'),
    row('pylon_ground_truth', 'rotation', [0, 0, 1], 'bad_length'),
    row('pylon_ground_truth', 'rotation.3', -INF, 'non_finite'),
    row('pylon_ground_truth', 'position', DROP, 'missing_field'),
    row('pylon_ground_truth', 'angularAcceleration', DROP, 'missing_field'),
    row('pylon_ground_truth', 'linearAcceleration.0', NAN, 'non_finite'),
    row('pylon_ground_truth', 'linearVelocityBody', [1, 2], 'bad_length'),
    row('pylon_ground_truth', 'universalTime', NAN, 'non_finite'),
    # nearby vessels (rule 7)
    row('pylon_nearby_vessels', 'vesselId', '', 'bad_value'),
    row('pylon_nearby_vessels', 'vessels', repeat(33), 'too_many'),
    row('pylon_nearby_vessels', 'vessels', repeat(2), 'duplicate', 'vessels'),
    row('pylon_nearby_vessels', 'vessels.0.vesselId', VESSEL_ID, 'inconsistent', 'vessels'),
    row('pylon_nearby_vessels', 'vessels.0.vesselId', '', 'bad_value'),
    row('pylon_nearby_vessels', 'vessels.0.isDebris', 0, 'bad_type'),
    row('pylon_nearby_vessels', 'vessels.0.position.2', NAN, 'non_finite'),
    row('pylon_nearby_vessels', 'universalTime', DROP, 'missing_field'),
    row('pylon_nearby_vessels', 'originSequence', 1.5, 'bad_type'),
    # flight state (rule 8)
    row('pylon_flight_state', 'mass', 0, 'out_of_range'),
    row('pylon_flight_state', 'gravity', -9.8, 'out_of_range'),
    row('pylon_flight_state', 'bodyRadius', 0.0, 'out_of_range'),
    row('pylon_flight_state', 'landed', 'true', 'bad_type'),
    row('pylon_flight_state', 'splashed', 0, 'bad_type'),
    row('pylon_flight_state', 'bodyName', '', 'bad_value'),
    row('pylon_flight_state', 'vesselId', DROP, 'missing_field'),
    row('pylon_flight_state', 'altitudeAsl', True, 'bad_type'),
    row('pylon_flight_state', 'upBody', [0, 0, 1, 0], 'bad_length'),
    row('pylon_flight_state', 'angularVelocityBody.0', INF, 'non_finite'),
    row('pylon_flight_state', 'appliedPitch', 1.5, 'out_of_range'),
    row('pylon_flight_state', 'appliedInputValid', 1, 'bad_type'),
    *[row('pylon_flight_state', name, DROP, 'missing_field') for name in packets.FLIGHT_SCALARS],
    *[row('pylon_flight_state', name, NAN, 'non_finite') for name in packets.FLIGHT_SCALARS],
    *[row('pylon_flight_state', name, DROP, 'missing_field') for name in packets.FLIGHT_VECTORS],
    # actuator state and manifest (rule 9)
    row('pylon_actuator_state/wheel', 'actuatorType', 'thruster', 'bad_value'),
    row('pylon_actuator_state/wheel', 'actuatorType', DROP, 'missing_field'),
    row('pylon_actuator_state/wheel', 'actuatorType', 1, 'bad_type'),
    row('pylon_actuator_state/wheel', 'wheelCount', 129, 'out_of_range'),
    row('pylon_actuator_state/wheel', 'wheelCount', -1, 'out_of_range'),
    row('pylon_actuator_state/wheel', 'wheelCount', 1.0, 'bad_type'),
    row('pylon_actuator_state/wheel', 'rollingSign', 2, 'bad_value'),
    row('pylon_actuator_state/wheel', 'slip', NAN, 'non_finite'),
    row('pylon_actuator_state/wheel', 'bodyMax', [1, 2], 'bad_length'),
    row('pylon_actuator_state/wheel', 'grounded', 'yes', 'bad_type'),
    row('pylon_actuator_state/wheel', 'name', '', 'bad_value'),
    row('pylon_actuator_state/wheel', 'name', DROP, 'missing_field'),
    row('pylon_actuator_state/wheel', 'partFlightId', 2**32, 'out_of_range'),
    row('pylon_actuator_state/engine', 'thrust', NAN, 'non_finite'),
    row('pylon_actuator_state/engine', 'gimbalYaw', '0', 'bad_type'),
    row('pylon_actuator_state/engine', 'flameout', None, 'bad_type'),
    row('pylon_actuator_state/rcs', 'thrustLimit', INF, 'non_finite'),
    row('pylon_actuator_state/rcs', 'observationSequence', -5, 'out_of_range'),
    row('pylon_actuator_state/separation', 'mechanism', 'explosive_bolt', 'bad_value'),
    row('pylon_actuator_state/separation', 'mechanism', DROP, 'missing_field'),
    row('pylon_actuator_state/separation', 'separated', 1, 'bad_type'),
    row('pylon_actuator_state/motor', 'role', 5, 'bad_type'),
    row('pylon_actuator_manifest', 'actuators.0.actuatorType', 'laser', 'bad_value'),
    row('pylon_actuator_manifest', 'actuators.1.name', 'Wheel 3000 0', 'duplicate',
        'actuators'),
    row('pylon_actuator_manifest', 'actuators.1.name', '__WHEEL_3000_0', 'duplicate',
        'actuators'),
    row('pylon_actuator_manifest', 'actuators.0.name', DROP, 'missing_field'),
    row('pylon_actuator_manifest', 'actuators', {'a': 1}, 'bad_type'),
    # motor state (rule 10)
    row('pylon_motor_state', 'jointType', 'ball', 'bad_value'),
    row('pylon_motor_state', 'position', NAN, 'non_finite'),
    row('pylon_motor_state', 'velocity', INF, 'non_finite'),
    row('pylon_motor_state', 'target', DROP, 'missing_field'),
    row('pylon_motor_state', 'effort', None, 'bad_type'),
    row('pylon_motor_state', 'commandMode', 'torque', 'bad_value'),
    # LiDAR (rule 11)
    row('pylon_lidar_scan', 'mode', '4D', 'bad_value'),
    row('pylon_lidar_scan', 'mode', DROP, 'missing_field'),
    row('pylon_lidar_scan', 'sensorId', '  ', 'bad_value'),
    row('pylon_lidar_scan', 'sensorId', DROP, 'missing_field'),
    row('pylon_lidar_scan', 'ranges', [[1, 2], [3, 4]], 'bad_type', 'ranges[0]'),
    row('pylon_lidar_scan', 'ranges', [1.0] * 5, 'inconsistent'),
    row('pylon_lidar_scan', 'points', [1.0] * 4, 'bad_length'),
    row('pylon_lidar_scan', 'points', [[1.0, 2.0, 3.0]], 'bad_length'),
    row('pylon_lidar_scan', 'directions', [0.0] * 15, 'inconsistent'),
    row('pylon_lidar_scan', 'directions.0', None, 'bad_type'),
    row('pylon_lidar_scan', 'frameRotation', [0, 0, 0, 0], 'bad_value'),
    row('pylon_lidar_scan', 'rayCount', -1, 'out_of_range'),
    row('pylon_lidar_inactive', 'mode', 'xd', 'bad_value'),
    row('pylon_lidar_inactive', 'sensorId', '', 'bad_value'),
    # camera chunks (rule 4, per chunk)
    row('pylon_camera_frame_chunk', 'encoding', 'bgr8', 'bad_value'),
    row('pylon_camera_frame_chunk', 'width', 4097, 'out_of_range'),
    row('pylon_camera_frame_chunk', 'height', 0, 'out_of_range'),
    row('pylon_camera_frame_chunk', 'step', 65537, 'out_of_range'),
    row('pylon_camera_frame_chunk', 'step', 47, 'inconsistent'),
    row('pylon_camera_frame_chunk', 'frameBytes', 769, 'inconsistent'),
    row('pylon_camera_frame_chunk', 'frameBytes', 4 * 1024 * 1024 + 1, 'out_of_range'),
    row('pylon_camera_frame_chunk', 'chunkCount', 1025, 'out_of_range'),
    row('pylon_camera_frame_chunk', 'chunkCount', 0, 'out_of_range'),
    row('pylon_camera_frame_chunk', 'chunkIndex', 1024, 'out_of_range'),
    row('pylon_camera_frame_chunk', 'chunkIndex', 1, 'inconsistent'),
    row('pylon_camera_frame_chunk', 'sessionId', 'AB' * 16, 'bad_value'),
    row('pylon_camera_frame_chunk', 'sha256', 'ab' * 31, 'bad_value'),
    row('pylon_camera_frame_chunk', 'verticalFovDeg', 180, 'out_of_range'),
    row('pylon_camera_frame_chunk', 'verticalFovDeg', 0.0, 'out_of_range'),
    row('pylon_camera_frame_chunk', 'sequence', 0, 'out_of_range'),
    row('pylon_camera_frame_chunk', 'sequence', 2**63, 'out_of_range'),
    row('pylon_camera_frame_chunk', 'frameRotation', [0, 0, 0, 0], 'bad_value'),
    row('pylon_camera_frame_chunk', 'framePosition.0', NAN, 'non_finite'),
    row('pylon_camera_frame_chunk', 'source', 'thermal', 'bad_value'),
    row('pylon_camera_frame_chunk', 'sensorId', DROP, 'missing_field'),
    row('pylon_camera_frame_chunk', 'sensorId', ' ', 'bad_value'),
    row('pylon_camera_frame_chunk', 'partFlightId', 2**64, 'out_of_range'),
    row('pylon_camera_frame_chunk', 'universalTime', NAN, 'non_finite'),
    row('pylon_camera_frame_chunk', 'data', 'not base64!', 'bad_value'),
    row('pylon_camera_frame_chunk', 'data', base64.b64encode(bytes(800)).decode(), 'inconsistent',
        'data'),
    row('pylon_camera_frame_chunk', 'data', '', 'bad_length'),
    row('pylon_camera_frame_chunk', 'data', 'QUJ', 'bad_value'),
    row('pylon_camera_frame_chunk', 'data', 'QR==', 'bad_value'),
    row('pylon_camera_frame_chunk', 'sensorId', 'c' * 1025, 'bad_length'),
    row('pylon_camera_frame_chunk', 'vessel', 'v' * 1025, 'bad_length'),
    row('pylon_camera_frame_chunk', 'coordinateFrame', 'f' * 1025, 'bad_length'),
    row('pylon_camera_inactive', 'source', 'infrared', 'bad_value'),
    row('pylon_camera_inactive', 'sensorId', DROP, 'missing_field'),
    # star tracker (rule 12)
    row('pylon_star_tracker', 'sensorId', 'Star', 'bad_value'),
    row('pylon_star_tracker', 'sensorId', 'a' * 65, 'bad_value'),
    row('pylon_star_tracker', 'vesselId', 'x' * 32, 'bad_value'),
    row('pylon_star_tracker', 'sessionId', '', 'bad_value'),
    row('pylon_star_tracker', 'referenceFrame', 'j2000', 'bad_value'),
    row('pylon_star_tracker', 'measuredFrame', 'odom', 'bad_value'),
    row('pylon_star_tracker', 'reason', 'stale', 'bad_value'),
    row('pylon_star_tracker', 'reason', 'occluded', 'inconsistent', 'valid'),
    row('pylon_star_tracker', 'valid', False, 'inconsistent', 'valid'),
    row('pylon_star_tracker', 'orientation', None, 'inconsistent', 'orientation'),
    row('pylon_star_tracker', 'orientation', [0, 0, 0, 2], 'bad_value'),
    row('pylon_star_tracker', 'orientation', [0, 0, 0, 1.002], 'bad_value'),
    row('pylon_star_tracker', 'noiseStdRad', 0, 'out_of_range'),
    row('pylon_star_tracker', 'noiseStdRad', 1.5, 'out_of_range'),
    row('pylon_star_tracker', 'angularRateDegSec', -1, 'out_of_range'),
    row('pylon_star_tracker', 'sequence', 0, 'out_of_range'),
    row('pylon_star_tracker', 'sequence', 2**64, 'out_of_range'),
    row('pylon_star_tracker', 'valid', DROP, 'missing_field'),
    # vessel model chunks (rule 3, chunk fields)
    row('pylon_vessel_urdf_chunk', 'encoding', 'gzip', 'bad_value'),
    row('pylon_vessel_urdf_chunk', 'chunkCount', 513, 'out_of_range'),
    row('pylon_vessel_urdf_chunk', 'chunkIndex', 1, 'inconsistent'),
    row('pylon_vessel_urdf_chunk', 'expiresAfterSec', 0.5, 'out_of_range'),
    row('pylon_vessel_urdf_chunk', 'expiresAfterSec', 121, 'out_of_range'),
    row('pylon_vessel_urdf_chunk', 'modelId', 'ab' * 16, 'bad_value'),
    row('pylon_vessel_urdf_chunk', 'sessionId', 'g' * 32, 'bad_value'),
    row('pylon_vessel_urdf_chunk', 'data', 'QU=J', 'bad_value'),
    row('pylon_vessel_urdf_chunk', 'data', 'QUJ=', 'bad_value'),
    row('pylon_vessel_urdf_chunk', 'data', DROP, 'missing_field'),
    row('pylon_vessel_urdf_clear', 'sessionId', 'xyz', 'bad_value'),
    row('pylon_vessel_urdf_clear', 'sessionId', DROP, 'missing_field'),
    # docking ports (rule 13)
    row('pylon_docking_port_manifest', 'ports', repeat(257), 'too_many'),
    row('pylon_docking_port_manifest', 'ports.0.name', '', 'bad_length'),
    row('pylon_docking_port_manifest', 'ports.0.name', 'n' * 129, 'bad_length'),
    row('pylon_docking_port_manifest', 'ports.1.name', 'Docking Port 3008 0', 'duplicate',
        'ports'),
    row('pylon_docking_port_manifest', 'ports.0.moduleIndex', 1025, 'out_of_range'),
    row('pylon_docking_port_manifest', 'ports.0.partFlightId', -1, 'out_of_range'),
    row('pylon_docking_port_state', 'docked', 1, 'bad_type'),
    row('pylon_docking_port_state', 'cameraActive', DROP, 'missing_field'),
    row('pylon_docking_port_state', 'state', '', 'bad_length'),
    row('pylon_docking_port_state', 'nodeType', 'n' * 129, 'bad_length'),
    row('pylon_docking_port_state', 'partnerName', 'p' * 129, 'bad_length'),
    row('pylon_docking_port_state', 'partnerPartFlightId', 2**64, 'out_of_range'),
    # authority state (rule 14)
    row('pylon_control_authority_state', 'state', 3, 'bad_value'),
    row('pylon_control_authority_state', 'state', 1.0, 'bad_type'),
    row('pylon_control_authority_state', 'priority', 1.5, 'bad_type'),
    row('pylon_control_authority_state', 'lastSequence', True, 'bad_type'),
    row('pylon_control_authority_state', 'controllerId', 'c' * 129, 'bad_length'),
    row('pylon_control_authority_state', 'reason', 'r' * 129, 'bad_length'),
    row('pylon_control_authority_state', 'emergencyStop', True, 'inconsistent'),
    row('pylon_control_authority_state', 'leaseRemainingSeconds', -1, 'out_of_range'),
    row('pylon_control_authority_state', 'sasSuppressed', 'false', 'bad_type'),
    # wrench status (rule 15)
    row('pylon_wrench_status', 'requested.torque', DROP, 'missing_field'),
    row('pylon_wrench_status', 'allocated.force', [1, 2], 'bad_length'),
    row('pylon_wrench_status', 'achieved', [0, 0, 0, 0, 0, 0], 'bad_type'),
    row('pylon_wrench_status', 'trackingResidual.force.0', NAN, 'non_finite'),
    row('pylon_wrench_status', 'allocationResidual', DROP, 'missing_field'),
    row('pylon_wrench_status', 'saturationRatio', NAN, 'non_finite'),
    row('pylon_wrench_status', 'trackingErrorRatio', INF, 'non_finite'),
    row('pylon_wrench_status', 'reason', 'r' * 129, 'bad_length'),
    row('pylon_wrench_status', 'accepted', DROP, 'missing_field'),
    row('pylon_wrench_status', 'sequence', 0.5, 'bad_type'),
    # control snapshot (rule 17)
    row('pylon_control_snapshot', 'flight.vesselId', OTHER, 'inconsistent'),
    row('pylon_control_snapshot', 'engines.0.vesselId', OTHER, 'inconsistent'),
    row('pylon_control_snapshot', 'engines.0.vesselId', DROP, 'missing_field'),
    row('pylon_control_snapshot', 'separations.0.observationSequence', 901, 'inconsistent'),
    row('pylon_control_snapshot', 'flight.observationSequence', DROP, 'missing_field'),
    row('pylon_control_snapshot', 'engines.0.universalTime', 1.0, 'inconsistent'),
    row('pylon_control_snapshot', 'engines.0.flameout', DROP, 'missing_field'),
    row('pylon_control_snapshot', 'engines.0.gimbalRoll', DROP, 'missing_field'),
    row('pylon_control_snapshot', 'engines.0.throttle', NAN, 'non_finite'),
    row('pylon_control_snapshot', 'separations.0.available', DROP, 'missing_field'),
    row('pylon_control_snapshot', 'separations.0.actuatorType', 'engine', 'bad_value'),
    row('pylon_control_snapshot', 'engines.0.role', 5, 'bad_type'),
    row('pylon_control_snapshot', 'engines.0.name', '', 'bad_value'),
    row('pylon_control_snapshot', 'engines.0.runtimeEpoch', 'other', 'inconsistent'),
    row('pylon_control_snapshot', 'engines', repeat(257), 'too_many'),
    row('pylon_control_snapshot', 'engines', repeat(2), 'duplicate', 'engines'),
    row('pylon_control_snapshot', 'flight.mass', 0, 'out_of_range'),
    row('pylon_control_snapshot', 'flight.type', 'pylon_imu', 'bad_value'),
    row('pylon_control_snapshot', 'flight', DROP, 'missing_field'),
    # health and thermal (rule 16)
    row('pylon_vehicle_health', 'vesselId', OTHER, 'inconsistent'),
    row('pylon_vehicle_health', 'vesselId', '', 'bad_value'),
    row('pylon_vehicle_health', 'electricCharge', -1, 'out_of_range'),
    row('pylon_vehicle_health', 'electricCapacity', NAN, 'non_finite'),
    row('pylon_vehicle_health', 'observationSequence', 2**64, 'out_of_range'),
    row('pylon_vehicle_health', 'observationSequence', DROP, 'missing_field'),
    row('pylon_vehicle_health', 'runtimeGeneration', 2**64, 'out_of_range'),
    row('pylon_part_thermal_state', 'partFlightId', 2**32, 'out_of_range'),
    row('pylon_part_thermal_state', 'partPersistentId', -1, 'out_of_range'),
    row('pylon_part_thermal_state', 'shieldedFromAirstream', 'no', 'bad_type'),
    row('pylon_part_thermal_state', 'partName', '', 'bad_value'),
    row('pylon_part_thermal_state', 'temperature', -1, 'out_of_range'),
    row('pylon_part_thermal_state', 'maxSkinTemperature', INF, 'non_finite'),
    row('pylon_part_thermal_state', 'vesselId', OTHER, 'inconsistent'),
    # separation results (rule 18)
    row('pylon_separation_result', 'operationId', 'op 42', 'bad_value'),
    row('pylon_separation_result', 'operationId', 'o' * 129, 'bad_value'),
    row('pylon_separation_result', 'operationEpoch', '', 'bad_value'),
    row('pylon_separation_result', 'operationVesselId', 'é', 'bad_value'),
    row('pylon_separation_result', 'completed', False, 'inconsistent', 'success'),
    row('pylon_separation_result', 'resultEpoch', '', 'inconsistent', 'success'),
    row('pylon_separation_result', 'resultingVesselIds', [VESSEL_ID, VESSEL_ID], 'duplicate'),
    row('pylon_separation_result', 'resultingVesselIds.0', '', 'bad_value'),
    row('pylon_separation_result', 'resultingVesselIds', repeat(4097), 'too_many'),
    row('pylon_separation_result', 'retentionRemainingSeconds', 601, 'out_of_range'),
    row('pylon_separation_result', 'originalGeneration', -1, 'out_of_range'),
    row('pylon_separation_result', 'retained', 'yes', 'bad_type'),
    # relative navigation (our simulator's extension)
    row('pylon_relative_nav', 'vesselId', 'Vessel-1', 'bad_value'),
    row('pylon_relative_nav', 'vesselId', DROP, 'missing_field'),
    row('pylon_relative_nav', 'sensorId', 'Relative Nav', 'bad_value'),
    row('pylon_relative_nav', 'sensorId', 'r' * 65, 'bad_value'),
    row('pylon_relative_nav', 'partFlightId', 2**32, 'out_of_range'),
    row('pylon_relative_nav', 'universalTime', NAN, 'non_finite'),
    row('pylon_relative_nav', 'maxRange', 0, 'out_of_range'),
    row('pylon_relative_nav', 'maxRange', INF, 'non_finite'),
    row('pylon_relative_nav', 'rateHz', 0.5, 'out_of_range'),
    row('pylon_relative_nav', 'rateHz', 21, 'out_of_range'),
    row('pylon_relative_nav', 'positionSigmaBase', -0.1, 'out_of_range'),
    row('pylon_relative_nav', 'rangeSigmaFraction', NAN, 'non_finite'),
    row('pylon_relative_nav', 'velocitySigma', DROP, 'missing_field'),
    row('pylon_relative_nav', 'coordinateFrame', 'pylon_ground_truth_enu', 'bad_value'),
    row('pylon_relative_nav', 'targets', repeat(33), 'too_many'),
    row('pylon_relative_nav', 'targets', repeat(2), 'duplicate', 'targets'),
    row('pylon_relative_nav', 'targets.0.vesselId', VESSEL_ID, 'inconsistent', 'targets'),
    row('pylon_relative_nav', 'targets.0.vesselId', 'target', 'bad_value'),
    row('pylon_relative_nav', 'targets.0.vesselName', 'n' * 129, 'bad_length'),
    row('pylon_relative_nav', 'targets.0.isDebris', 0, 'bad_type'),
    row('pylon_relative_nav', 'targets.0.position.2', NAN, 'non_finite'),
    row('pylon_relative_nav', 'targets.0.position', [1.0, 2.0], 'bad_length'),
    row('pylon_relative_nav', 'targets.0.velocity.0', INF, 'non_finite'),
    row('pylon_relative_nav', 'targets.0.range', -1.0, 'out_of_range'),
    row('pylon_relative_nav', 'targets.0.range', 151.0, 'inconsistent'),
    # GNSS receiver (our simulator's extension)
    row('pylon_gnss', 'latitude', 90.5, 'out_of_range'),
    row('pylon_gnss', 'latitude', -91, 'out_of_range'),
    row('pylon_gnss', 'longitude', 180.5, 'out_of_range'),
    row('pylon_gnss', 'latitude', NAN, 'non_finite'),
    row('pylon_gnss', 'altitude', INF, 'non_finite'),
    row('pylon_gnss', 'universalTime', NAN, 'non_finite'),
    row('pylon_gnss', 'positionCovariance.2', -0.01, 'out_of_range'),
    row('pylon_gnss', 'positionCovariance.0', NAN, 'non_finite'),
    row('pylon_gnss', 'positionCovariance', [0.04, 0.04], 'bad_length'),
    row('pylon_gnss', 'sessionId', 'session-1', 'bad_value'),
    row('pylon_gnss', 'sessionId', DROP, 'missing_field'),
    row('pylon_gnss', 'sequence', 0, 'out_of_range'),
    row('pylon_gnss', 'vesselId', OTHER, 'inconsistent'),
    row('pylon_gnss', 'runtimeEpoch', '', 'bad_value'),
    row('pylon_gnss', 'sensorId', 'GNSS', 'bad_value'),
    row('pylon_gnss', 'rateHz', 25, 'out_of_range'),
    row('pylon_gnss', 'frameId', 'gnss link', 'bad_value'),
    row('pylon_gnss', 'bodyName', '', 'bad_length'),
    row('pylon_gnss', 'status', 'dgps', 'bad_value'),
    row('pylon_gnss', 'status', 'no_fix', 'inconsistent', 'latitude'),
    row('pylon_gnss', 'altitude', None, 'inconsistent'),
    # AHRS (our simulator's extension)
    row('pylon_ahrs', 'orientation', [0.0, 0.0, 0.0, 1.01], 'bad_value'),
    row('pylon_ahrs', 'orientation', [0.0, 0.0, 0.0, 0.0], 'bad_value'),
    row('pylon_ahrs', 'orientation', [0.0, 0.0, 1.0], 'bad_length'),
    row('pylon_ahrs', 'orientation.3', NAN, 'non_finite'),
    row('pylon_ahrs', 'orientation', DROP, 'missing_field'),
    row('pylon_ahrs', 'orientationCovariance.0', -1e-6, 'out_of_range'),
    row('pylon_ahrs', 'orientationCovariance.2', INF, 'non_finite'),
    row('pylon_ahrs', 'orientationCovariance', [1e-5, 1e-5], 'bad_length'),
    row('pylon_ahrs', 'rateHz', 5, 'out_of_range'),
    row('pylon_ahrs', 'rateHz', 101, 'out_of_range'),
    row('pylon_ahrs', 'universalTime', NAN, 'non_finite'),
    row('pylon_ahrs', 'sequence', 0, 'out_of_range'),
    row('pylon_ahrs', 'sessionId', 'session-1', 'bad_value'),
    row('pylon_ahrs', 'sensorId', 'AHRS', 'bad_value'),
    row('pylon_ahrs', 'vesselId', OTHER, 'inconsistent'),
]


def _reject(decode, validate, packet, path, value):
    """Decode the mutated packet, or validate it if it is too long for a datagram."""
    mutated = mutate(packet, path, value)
    data = json.dumps(mutated, allow_nan=True).encode()
    with pytest.raises(ProtocolError) as info:
        if len(data) <= packets.MAX_DATAGRAM_BYTES:
            decode(data)
        else:
            validate(mutated)
    return info.value


@pytest.mark.parametrize('case, path, value, reason, field', STATE_REJECTIONS)
def test_state_rejections(case, path, value, reason, field):
    error = _reject(packets.decode_state, packets.validate_state, samples.state_packet(case),
                    path, value)
    assert (error.reason, error.field) == (reason, field), str(error)
    assert error.reason in packets.REASONS


def test_relative_nav_lists_its_targets_nearest_first():
    # an extension of our simulator: the mod never sends it, so the replay file lacks it
    assert 'pylon_relative_nav' in packets.EXTENSION_STATE_TYPES
    packet = samples.state_packet('pylon_relative_nav')
    near = dict(packet['targets'][0])
    far = {**near, 'vesselId': 'ab' * 16, 'range': 1800.0, 'position': [-1800.0, 0.0, 0.0]}
    assert packets.validate_state({**packet, 'targets': [near, far]})['targets'][1] == far
    assert packets.validate_state({**packet, 'targets': []})['targets'] == []
    with pytest.raises(ProtocolError) as info:
        packets.validate_state({**packet, 'targets': [far, near]})
    assert (info.value.reason, info.value.field) == ('inconsistent', 'targets[1].range')
    # range is the norm of the position, to a millionth of it
    moved = {**near, 'range': 150.0 * (1 + 0.9e-6)}
    assert packets.validate_state({**packet, 'targets': [moved]})['targets'] == [moved]


def test_gnss_fix_has_a_position_and_no_fix_has_none():
    # an extension of our simulator: the mod never sends it
    assert 'pylon_gnss' in packets.EXTENSION_STATE_TYPES
    assert packets.SEND_RATE_RANGES_HZ['pylon_gnss'] == (1.0, 20.0)
    packet = samples.state_packet('pylon_gnss')
    fix = packets.validate_state(packet)
    assert (fix['latitude'], fix['longitude'], fix['altitude']) == (-0.0486, -74.7247, 0.6)
    assert fix['positionCovariance'] == [0.04, 0.04, 0.16]
    lost = packets.validate_state({**packet, 'status': 'no_fix', 'latitude': None,
                                   'longitude': None, 'altitude': None})
    assert lost['latitude'] is lost['longitude'] is lost['altitude'] is None
    edge = packets.validate_state({**packet, 'latitude': -90, 'longitude': 180})
    assert (edge['latitude'], edge['longitude']) == (-90.0, 180.0)
    unnamed = dict(packet)
    del unnamed['frameId']
    assert packets.validate_state(unnamed)['frameId'] == ''


def test_ahrs_orientation_is_a_unit_quaternion_normalised():
    # an extension of our simulator: the mod never sends it
    assert 'pylon_ahrs' in packets.EXTENSION_STATE_TYPES
    assert packets.SEND_RATE_RANGES_HZ['pylon_ahrs'] == (10.0, 100.0)
    packet = samples.state_packet('pylon_ahrs')
    sample = packets.validate_state({**packet, 'orientation': [0.0, 0.0, 0.0, 1.0005]})
    assert sample['orientation'] == pytest.approx([0.0, 0.0, 0.0, 1.0], abs=1e-12)
    assert sample['orientationCovariance'] == [1.2e-5, 1.2e-5, 7.6e-5]
    assert packets.decode_state(wire.encode_state(packet))['sequence'] == 7


def test_session_without_a_vessel_cannot_be_available():
    packet = samples.state_packet('pylon_session')
    packet.update(vesselId='', runtimeVesselId='')
    with pytest.raises(ProtocolError) as info:
        packets.validate_state(packet)
    assert (info.value.reason, info.value.field) == ('inconsistent', 'available')
    packet['available'] = False
    assert packets.validate_state(packet)['vesselId'] == ''


ENGINE_JSON_DUPLICATED = [member('pylon_actuator_command/engine')] * 2

COMMAND_REJECTIONS = [
    # identity, sequence (rule 19)
    row('pylon_body_wrench_command', 'controllerId', '', 'bad_length'),
    row('pylon_body_wrench_command', 'controllerId', 'c' * 65, 'bad_length'),
    row('pylon_body_wrench_command', 'leaseId', '   ', 'bad_value'),
    row('pylon_body_wrench_command', 'leaseId', DROP, 'missing_field'),
    row('pylon_body_wrench_command', 'vesselId', 5, 'bad_type'),
    row('pylon_body_wrench_command', 'sequence', 0, 'out_of_range'),
    row('pylon_body_wrench_command', 'sequence', -3, 'out_of_range'),
    row('pylon_body_wrench_command', 'sequence', 2**63, 'out_of_range'),
    row('pylon_body_wrench_command', 'sequence', 1.0, 'bad_type'),
    row('pylon_body_wrench_command', 'runtimeGeneration', -1, 'out_of_range'),
    row('pylon_body_wrench_command', 'runtimeEpoch', DROP, 'missing_field'),
    # authority
    row('pylon_control_authority_command', 'action', 'grab', 'bad_value'),
    row('pylon_control_authority_command', 'action', 1, 'bad_type'),
    row('pylon_control_authority_command', 'leaseDurationSeconds', 0.05, 'out_of_range'),
    row('pylon_control_authority_command', 'leaseDurationSeconds', 10.5, 'out_of_range'),
    row('pylon_control_authority_command', 'leaseDurationSeconds', DROP, 'missing_field'),
    row('pylon_control_authority_command', 'priority', 1.5, 'bad_type'),
    row('pylon_control_authority_command', 'priority', 2**31, 'out_of_range'),
    row('pylon_control_authority_command', 'suppressSas', 1, 'bad_type'),
    # body wrench
    row('pylon_body_wrench_command', 'frame', 'odom', 'bad_value'),
    row('pylon_body_wrench_command', 'frame', '', 'bad_value'),
    row('pylon_body_wrench_command', 'timeoutSeconds', 0.01, 'out_of_range'),
    row('pylon_body_wrench_command', 'timeoutSeconds', 11, 'out_of_range'),
    row('pylon_body_wrench_command', 'force.0', NAN, 'non_finite'),
    row('pylon_body_wrench_command', 'torque', [1, 2], 'bad_length'),
    # actuators
    row('pylon_actuator_command/wheel', 'actuatorType', 'motor', 'bad_value'),
    row('pylon_actuator_command/wheel', 'name', 'Wheel 1', 'bad_value'),
    row('pylon_actuator_command/wheel', 'name', '', 'bad_length'),
    row('pylon_actuator_command/wheel', 'brake', 1.5, 'out_of_range'),
    row('pylon_actuator_command/wheel', 'brake', -0.1, 'out_of_range'),
    row('pylon_actuator_command/wheel', 'maxDriveTorque', -1, 'out_of_range'),
    row('pylon_actuator_command/wheel', 'targetAngularVelocity', INF, 'non_finite'),
    row('pylon_actuator_command/wheel', 'timeoutSeconds', 10.01, 'out_of_range'),
    row('pylon_actuator_command/engine', 'gimbalPitch', 1.5, 'out_of_range'),
    row('pylon_actuator_command/engine', 'gimbalRoll', -1.01, 'out_of_range'),
    row('pylon_actuator_command/engine', 'targetThrust', -1, 'out_of_range'),
    row('pylon_actuator_command/engine', 'targetThrust', DROP, 'missing_field'),
    row('pylon_actuator_command/engine', 'hasGimbalCommand', 'true', 'bad_type'),
    row('pylon_actuator_command/rcs', 'thrustLimit', -5, 'out_of_range'),
    row('pylon_actuator_command/separation', 'separate', 1, 'bad_type'),
    row('pylon_actuator_command/separation', 'operationId', 'op 1', 'bad_value'),
    row('pylon_actuator_command/separation', 'operationEpoch', 'e' * 129, 'bad_value'),
    # motor
    row('pylon_motor_command', 'mode', 'torque', 'bad_value'),
    row('pylon_motor_command', 'hasPosition', True, 'inconsistent'),
    row('pylon_motor_command', 'hasVelocity', False, 'inconsistent'),
    row('pylon_motor_command', 'enabled', False, 'inconsistent', 'hasVelocity'),
    row('pylon_motor_command', 'velocity', NAN, 'non_finite'),
    row('pylon_motor_command', 'timeoutSeconds', 0, 'out_of_range'),
    row('pylon_motor_command', 'partFlightId', -1, 'out_of_range'),
    # docking
    row('pylon_docking_port_command', 'action', 4, 'bad_value'),
    row('pylon_docking_port_command', 'action', 1.0, 'bad_type'),
    row('pylon_docking_port_command', 'leaseId', 'l' * 129, 'bad_length'),
    row('pylon_docking_port_command', 'sequence', 2**63, 'out_of_range'),
    row('pylon_docking_port_command', 'name', 'Docking Port', 'bad_value'),
    # flight control
    row('pylon_flight_control_command', 'timeoutSeconds', 1.5, 'out_of_range'),
    row('pylon_flight_control_command', 'pitch', 1.01, 'out_of_range'),
    row('pylon_flight_control_command', 'roll', NAN, 'non_finite'),
    row('pylon_flight_control_command', 'landingGear', DROP, 'missing_field'),
    # control batch
    row('pylon_control_batch', 'engineJson', repeat(17), 'too_many'),
    row('pylon_control_batch', 'engineJson', ENGINE_JSON_DUPLICATED, 'duplicate', 'engineJson'),
    row('pylon_control_batch', 'engineJson.0', member('pylon_actuator_command/engine',
                                                      vesselId=OTHER),
        'inconsistent', 'engineJson[0].vesselId'),
    row('pylon_control_batch', 'engineJson.0', member('pylon_actuator_command/engine',
                                                      sequence=8),
        'inconsistent', 'engineJson[0].sequence'),
    row('pylon_control_batch', 'engineJson.0', member('pylon_actuator_command/engine',
                                                      timeoutSeconds=2.0),
        'out_of_range', 'engineJson[0].timeoutSeconds'),
    row('pylon_control_batch', 'engineJson.0', member('pylon_actuator_command/engine',
                                                      targetThrust=-1),
        'out_of_range', 'engineJson[0].targetThrust'),
    row('pylon_control_batch', 'engineJson.0', member('pylon_actuator_command/engine',
                                                      gimbalYaw=2),
        'out_of_range', 'engineJson[0].gimbalYaw'),
    row('pylon_control_batch', 'engineJson.0', member('pylon_actuator_command/engine',
                                                      name=' '),
        'bad_value', 'engineJson[0].name'),
    row('pylon_control_batch', 'engineJson.0', member('pylon_actuator_command/wheel'),
        'bad_value', 'engineJson[0].actuatorType'),
    row('pylon_control_batch', 'engineJson.0', '{"actuatorType": "engine"', 'bad_value'),
    row('pylon_control_batch', 'engineJson.0', '[1, 2]', 'bad_type'),
    row('pylon_control_batch', 'engineJson.0', {'actuatorType': 'engine'}, 'bad_type'),
    row('pylon_control_batch', 'hasFlight', False, 'inconsistent', 'flightJson'),
    row('pylon_control_batch', 'flightJson', '', 'missing_field'),
    row('pylon_control_batch', 'flightJson', DROP, 'missing_field'),
    row('pylon_control_batch', 'flightJson', member('pylon_flight_control_command',
                                                    leaseId='other'),
        'inconsistent', 'flightJson.leaseId'),
    row('pylon_control_batch', 'flightJson', member('pylon_flight_control_command',
                                                    timeoutSeconds=1.5),
        'out_of_range', 'flightJson.timeoutSeconds'),
    row('pylon_control_batch', 'separationJson', member('pylon_actuator_command/separation',
                                                        separate=False),
        'bad_value', 'separationJson.separate'),
    row('pylon_control_batch', 'separationJson', member('pylon_actuator_command/separation',
                                                        name=''),
        'bad_length', 'separationJson.name'),
    row('pylon_control_batch', 'hasSeparation', False, 'inconsistent', 'separationJson'),
    row('pylon_control_batch', 'leaseDurationSeconds', 20, 'out_of_range'),
    row('pylon_control_batch', 'leaseDurationSeconds', DROP, 'missing_field'),
    row('pylon_control_batch', 'sequence', 2**63, 'out_of_range'),
    row('pylon_control_batch', 'renewLease', 'yes', 'bad_type'),
    # separation query
    row('pylon_separation_query', 'operationEpoch', '', 'bad_value'),
    row('pylon_separation_query', 'operationId', DROP, 'missing_field'),
    row('pylon_separation_query', 'operationInstance', 'a\tb', 'bad_value'),
]


@pytest.mark.parametrize('case, path, value, reason, field', COMMAND_REJECTIONS)
def test_command_rejections(case, path, value, reason, field):
    error = _reject(packets.decode_command, packets.validate_command,
                    samples.command_packet(case), path, value)
    assert (error.reason, error.field) == (reason, field), str(error)
    assert error.reason in packets.REASONS


@pytest.mark.parametrize('action', ['release', 'emergency_stop', 'clear_emergency_stop'])
def test_authority_actions_without_a_lease_need_no_duration(action):
    packet = samples.command_packet('pylon_control_authority_command', action=action)
    del packet['leaseDurationSeconds']
    assert packets.validate_command(packet)['action'] == action


def test_batch_without_renewal_needs_no_duration():
    packet = samples.command_packet('pylon_control_batch', renewLease=False)
    del packet['leaseDurationSeconds']
    assert packets.validate_command(packet)['renewLease'] is False


def test_disabled_motor_command_has_no_mode_flags():
    packet = samples.command_packet('pylon_motor_command', enabled=False, hasVelocity=False)
    assert packets.validate_command(packet)['enabled'] is False
