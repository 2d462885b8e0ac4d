"""What the real mod writes that a strict JSON reader might not expect, as literal bytes."""

import math

from pylon_protocol import packets, wire
from pylon_protocol.envelope import Envelope
from pylon_protocol.errors import ProtocolError
import pytest

VID = '5f3c2a1b9d8e4f7a6b5c4d3e2f1a0b9c'
ENV = ('"runtimeInstance":"c0ffee00c0ffee00c0ffee00c0ffee00","runtimeGeneration":3,'
       f'"runtimeEpoch":"e90c4e90c4e90c4e90c4e90c4e90c4e9","runtimeVesselId":"{VID}"')
ENVELOPE = Envelope('c0ffee00' * 4, 3, 'e90c4e90' * 4, VID)


def datagram(body: str) -> bytes:
    return ('{' + ENV + ',' + body + '}').encode()


def reason_of(data: bytes) -> tuple[str, str]:
    with pytest.raises(ProtocolError) as info:
        packets.decode_state(data)
    return info.value.reason, info.value.field


IMU_R = datagram(f'"type":"pylon_imu","version":1,"vesselId":"{VID}","universalTime":12345,'
                 '"angularVelocity":[1E-05,-0,1.5E+16],"linearAcceleration":[0,0,9.81]')

WHEEL = datagram(
    f'"type":"pylon_actuator_state","version":1,"actuatorType":"wheel","vesselId":"{VID}",'
    '"observationSequence":812,"role":"","name":"wheel_3000_0","vessel":"Rover \\"One\\"",'
    '"partFlightId":4001,"persistentId":3000,"universalTime":1.5E+16,"enabled":true,'
    f'"vesselId":"{VID}","wheelCount":1,"radius":0.3,"position":[1,0.8,-0.5],'
    '"rollingSign":-1,"steeringSign":0,"steeringEnabled":false,"maxSteeringAngle":0,'
    '"bodyMin":[-2,-1,-0.8],"bodyMax":[2,1,0.8],"grounded":true,"angularPosition":-0,'
    '"angularVelocity":3,"steeringAngle":0,"driveTorque":12,"brakeTorque":0,"slip":1E-05,'
    '"maxDriveTorque":30,"commandActive":false')


def test_csharp_round_trip_numbers_are_read_as_numbers():
    imu = packets.decode_state(IMU_R)
    assert imu['angularVelocity'] == [1e-05, 0.0, 1.5e16]
    assert imu['universalTime'] == 12345.0 and type(imu['universalTime']) is float
    assert all(type(v) is float for v in imu['linearAcceleration'])


def test_integral_doubles_written_as_ints_pass_number_fields():
    wheel = packets.decode_state(WHEEL)
    assert wheel['maxSteeringAngle'] == 0.0 and type(wheel['maxSteeringAngle']) is float
    assert wheel['position'] == [1.0, 0.8, -0.5]
    assert wheel['slip'] == 1e-05


def test_duplicate_keys_keep_the_last_value():
    wheel = packets.decode_state(WHEEL)
    assert wheel['vesselId'] == VID
    assert wheel['vessel'] == 'Rover "One"'
    other = WHEEL.replace(f'"vesselId":"{VID}","wheelCount"'.encode(),
                          b'"vesselId":"00000000000000000000000000000000","wheelCount"')
    assert packets.decode_state(other)['vesselId'] == '0' * 32


def test_docking_camera_chunk_with_sensor_id_twice():
    data = datagram(
        '"type":"pylon_camera_frame_chunk","version":1,"source":"docking_port",'
        '"sensorId":"ignored","sessionId":"' + 'ab' * 16 + '","sequence":9,"chunkIndex":0,'
        '"chunkCount":1,"frameBytes":3,"sha256":"' + 'cd' * 32 + '",'
        '"sensorId":"docking_port_3008_0","partFlightId":4008,"universalTime":100,"width":1,'
        '"height":1,"step":3,"encoding":"rgb8","verticalFovDeg":60,'
        '"coordinateFrame":"ros_sensor","framePosition":[0,0,0],"frameRotation":[0,0,0,1],'
        '"data":"AAEC"')
    chunk = packets.decode_state(data)
    assert chunk['sensorId'] == 'docking_port_3008_0'
    assert 'vessel' not in chunk      # docking chunks have no vessel name


def test_nan_tokens_pass_the_decoder_and_are_judged_per_field():
    bad = IMU_R.replace(b'[0,0,9.81]', b'[0,NaN,9.81]')
    assert math.isnan(wire.decode_json(bad)['linearAcceleration'][1])
    assert reason_of(bad) == ('non_finite', 'linearAcceleration[1]')
    assert reason_of(IMU_R.replace(b'12345', b'-Infinity')) == ('non_finite', 'universalTime')
    assert reason_of(IMU_R.replace(b'12345', b'1E+400')) == ('non_finite', 'universalTime')
    extra = IMU_R.replace(b'"universalTime"', b'"debug":NaN,"universalTime"')
    assert math.isnan(packets.decode_state(extra)['debug'])


def test_lidar_ranges_may_hold_non_finite_values_and_misses_are_null():
    data = datagram(
        '"type":"pylon_lidar_scan","version":1,"mode":"2d","sensorId":"lidar_2d_1a2b3c4d",'
        '"vessel":"Rover","partFlightId":4006,"universalTime":12,"rayCount":3,'
        '"horizontalCount":3,"verticalCount":1,"hemisphereDensity":0,"horizontalFovDeg":360,'
        '"verticalFovDeg":0,"scanRateHz":10,"maxDistance":100,"layout":"vertical-major",'
        '"coordinateFrame":"ros_sensor","hitCount":1,"origin":[0,0,0],'
        '"framePosition":[0,0,0.3],"frameRotation":[0,0,0,1],"ranges":[5,NaN,Infinity],'
        '"hitMask":[1,0,0],"points":[5,0,0,null,null,null,null,null,null]')
    scan = packets.decode_state(data)
    assert scan['mode'] == '2D'
    assert scan['ranges'][0] == 5.0 and math.isnan(scan['ranges'][1])
    assert scan['points'][3:] == [None] * 6


def test_older_mod_without_newer_fields_is_accepted():
    heartbeat = datagram(f'"type":"pylon_session","version":1,"vesselId":"{VID}",'
                         '"vesselName":"Rover","available":true,"universalTime":0')
    session = packets.decode_state(heartbeat)
    assert 'observationSequence' not in session and 'paused' not in session
    older_wheel = WHEEL.replace(f'"vesselId":"{VID}",'.encode(), b'').replace(
        b'"observationSequence":812,"role":"",', b'')
    wheel = packets.decode_state(older_wheel)
    assert 'vesselId' not in wheel and 'role' not in wheel
    flight = dict.fromkeys(packets.FLIGHT_SCALARS, 1.0)
    flight.update({name: [0, 0, 1] for name in packets.FLIGHT_VECTORS})
    flight.update(vesselId=VID, bodyName='Kerbin', landed=False, splashed=False)
    packet = packets.build_state('pylon_flight_state', ENVELOPE, **flight)
    assert 'appliedPitch' not in packet and 'observationSequence' not in packet


def test_newer_optional_fields_are_checked_when_present():
    heartbeat = datagram(f'"type":"pylon_session","version":1,"vesselId":"{VID}",'
                         '"vesselName":"Rover","available":true,"universalTime":0,'
                         '"observationSequence":5,"realtimeSinceStartup":3.5,"paused":"no",'
                         '"packed":false,"warpRate":1,"physicsWarp":false')
    assert reason_of(heartbeat) == ('bad_type', 'paused')
    assert packets.decode_state(heartbeat.replace(b'"no"', b'false'))['warpRate'] == 1.0


def test_unknown_fields_are_kept_unchanged():
    data = IMU_R.replace(b'"universalTime"',
                         b'"future":{"nested":[1,"x",null]},"role":"probe","universalTime"')
    imu = packets.decode_state(data)
    assert imu['future'] == {'nested': [1, 'x', None]} and imu['role'] == 'probe'


def test_unknown_pylon_types_and_old_ksp_types():
    unknown = datagram('"type":"pylon_thermal_camera","version":1,"pixels":[1,2]')
    assert reason_of(unknown) == ('unknown_type', 'type')
    old = datagram('"type":"ksp_imu","version":1')
    assert reason_of(old) == ('bad_packet_type', 'type')


def test_integer_fields_refuse_doubles():
    assert reason_of(WHEEL.replace(b'"wheelCount":1', b'"wheelCount":1.0')) == \
        ('bad_type', 'wheelCount')
    assert reason_of(IMU_R.replace(b'"runtimeGeneration":3', b'"runtimeGeneration":3E+00')) \
        == ('bad_type', 'runtimeGeneration')
    assert packets.decode_state(IMU_R.replace(b'"runtimeGeneration":3',
                                              b'"runtimeGeneration":-0'))['runtimeGeneration'] \
        == 0


def test_mod_string_escapes_decode():
    data = WHEEL.replace(b'"role":""', b'"role":"a\\\\b\\nc\\rd\\u0009e"')
    assert packets.decode_state(data)['role'] == 'a\\b\nc\rd\te'


def test_encode_state_output_reads_back_like_mod_output():
    wheel = packets.decode_state(WHEEL)
    again = wire.encode_state(wheel)
    assert b'"position":[1,0.8,-0.5]' in again and b'"slip":1E-05' in again
    assert b'"universalTime":1.5E+16' in again and b'"angularPosition":0' in again
    assert wire.encode_state({'v': -0.0}) == b'{"v":-0}'
    assert packets.decode_state(again) == wheel
