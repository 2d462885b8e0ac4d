"""Valid payloads of every packet type (and every actuator kind), shared by the tests.

``STATE_SAMPLES`` and ``COMMAND_SAMPLES`` map a case name (the type, with ``/<kind>`` for
actuator variants) to ``(type_name, fields)``; the fields are fresh on every call of
``state_sample``/``command_sample`` so tests may mutate them.
"""

from __future__ import annotations

import base64
import copy
import hashlib

from pylon_protocol import packets
from pylon_protocol.envelope import Envelope

VESSEL_ID = '5f3c2a1b9d8e4f7a6b5c4d3e2f1a0b9c'
OTHER_VESSEL_ID = '0a1b2c3d4e5f60718293a4b5c6d7e8f9'
ENVELOPE = Envelope(runtime_instance='c0ffee00c0ffee00c0ffee00c0ffee00', runtime_generation=3,
                    runtime_epoch='e90c4e90c4e90c4e90c4e90c4e90c4e9',
                    runtime_vessel_id=VESSEL_ID)
IDENTITY = {'vesselId': VESSEL_ID, 'controllerId': 'planner', 'leaseId': 'lease-1',
            'sequence': 7}
OPERATION = {'operationId': 'op-42', 'operationInstance': ENVELOPE.runtime_instance,
             'operationEpoch': ENVELOPE.runtime_epoch, 'operationVesselId': VESSEL_ID}
FRAME = bytes(range(256)) * 3        # 768 bytes: one 16x16 rgb8 frame in one chunk
MODEL = b'\x1f\x8b' + bytes(100)
UT = 12345.5
ZERO_WRENCH = {'force': [0.0, 0.0, 0.0], 'torque': [0.0, 0.0, 0.0]}

_FLIGHT = {
    'vesselId': VESSEL_ID, 'observationSequence': 900, 'bodyName': 'Kerbin',
    'universalTime': UT, 'altitudeAsl': 75.2, 'altitudeAgl': 1.5, 'latitude': -0.097,
    'longitude': -74.557, 'mass': 5230.0, 'liquidFuel': 360.0, 'oxidizer': 440.0,
    'electricCharge': 150.0, 'gravity': 9.81, 'bodyRadius': 600000.0,
    'gravitationalParameter': 3.5316e12, 'atmosphereDepth': 70000.0, 'apoapsis': 80.0,
    'periapsis': -599000.0, 'timeToApoapsis': 0.0, 'verticalSpeed': 0.0,
    'horizontalSpeed': 0.0, 'dynamicPressure': 0.0, 'landed': True, 'splashed': False,
    'appliedInputValid': False, 'flightCommandActive': False, 'inputAtLimit': False,
    'appliedInputSequence': 0, 'appliedInputAge': 0.0, 'appliedPitch': 0.0,
    'appliedYaw': 0.0, 'appliedRoll': 0.0,
    'upBody': [0.0, 0.0, 1.0], 'eastBody': [0.0, 1.0, 0.0], 'northBody': [1.0, 0.0, 0.0],
    'surfaceVelocityBody': [0.0, 0.0, 0.0], 'orbitalVelocityBody': [174.5, 0.0, 0.0],
    'angularVelocityBody': [0.0, 0.0, 0.0],
}
_ACTUATOR_COMMON = {'vesselId': VESSEL_ID, 'observationSequence': 900, 'role': '',
                    'vessel': 'Rover', 'partFlightId': 4001, 'persistentId': 3001,
                    'universalTime': UT}
_ENGINE_STATE = {
    'actuatorType': 'engine', **_ACTUATOR_COMMON, 'name': 'engine_3001_0', 'enabled': True,
    'operational': True, 'flameout': False, 'throttle': 0.5, 'thrust': 1e5,
    'maxThrust': 2e5, 'commandActive': True, 'gimbalAvailable': True,
    'gimbalCommandActive': False, 'gimbalPitch': 0.0, 'gimbalYaw': 0.0, 'gimbalRoll': 0.0}
_SEPARATION_STATE = {'actuatorType': 'separation', **_ACTUATOR_COMMON,
                     'name': 'decoupler_3002_0', 'mechanism': 'decoupler', 'available': True,
                     'separated': False}
_ENGINE_COMMAND = {'actuatorType': 'engine', 'name': 'engine_3001_0', **IDENTITY,
                   'enabled': True, 'timeoutSeconds': 0.5, 'targetThrust': 5e4,
                   'hasGimbalCommand': True, 'gimbalPitch': 0.2, 'gimbalYaw': -0.1,
                   'gimbalRoll': 0.0}
_FLIGHT_COMMAND = {**IDENTITY, 'landingGear': True, 'timeoutSeconds': 0.5, 'pitch': 0.1,
                   'yaw': -0.2, 'roll': 1.0}
_SEPARATION_COMMAND = {'actuatorType': 'separation', 'name': 'decoupler_3002_0', **IDENTITY,
                       'enabled': True, 'timeoutSeconds': 0.5, 'separate': True, **OPERATION}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode('ascii')


STATE_SAMPLES: dict[str, tuple[str, dict]] = {
    'pylon_session': ('pylon_session', {
        'vesselId': VESSEL_ID, 'vesselName': 'Rover', 'available': True, 'universalTime': UT,
        'observationSequence': 900, 'realtimeSinceStartup': 42.25, 'paused': False,
        'packed': False, 'warpRate': 1.0, 'physicsWarp': False}),
    'pylon_imu': ('pylon_imu', {
        'vesselId': VESSEL_ID, 'universalTime': UT, 'angularVelocity': [0.0, 0.0, 7.3e-5],
        'linearAcceleration': [0.0, 0.0, 9.81]}),
    'pylon_ground_truth': ('pylon_ground_truth', {
        'vesselId': VESSEL_ID, 'vessel': 'Rover', 'originSequence': 1, 'universalTime': UT,
        'position': [1.0, 2.0, 0.5], 'rotation': [0.0, 0.0, 0.0, 1.0],
        'linearVelocity': [0.1, 0.0, 0.0], 'angularVelocity': [0.0, 0.0, 0.0],
        'linearVelocityBody': [0.1, 0.0, 0.0], 'angularVelocityBody': [0.0, 0.0, 0.0],
        'frameAngularVelocity': [0.0, 2.9e-4, 0.0], 'linearAcceleration': [0.0, 0.0, 0.0],
        'angularAcceleration': [0.0, 0.0, 0.0]}),
    'pylon_nearby_vessels': ('pylon_nearby_vessels', {
        'vesselId': VESSEL_ID, 'originSequence': 1, 'universalTime': UT,
        'position': [1.0, 2.0, 0.5], 'linearVelocity': [0.1, 0.0, 0.0],
        'vessels': [{'vesselId': OTHER_VESSEL_ID, 'vessel': 'Debris', 'isDebris': True,
                     'position': [40.0, -3.0, 0.2], 'linearVelocity': [0.0, 0.0, 0.0]}]}),
    'pylon_flight_state': ('pylon_flight_state', _FLIGHT),
    'pylon_actuator_manifest': ('pylon_actuator_manifest', {
        'vesselId': VESSEL_ID, 'actuators': [
            {'actuatorType': 'wheel', 'name': 'wheel_3000_0'},
            {'actuatorType': 'engine', 'name': 'engine_3001_0'},
            {'actuatorType': 'separation', 'name': 'decoupler_3002_0'},
            {'actuatorType': 'motor', 'name': 'arm_hinge'}]}),
    'pylon_actuator_state/wheel': ('pylon_actuator_state', {
        'actuatorType': 'wheel', **_ACTUATOR_COMMON, 'name': 'wheel_3000_0', 'enabled': True,
        'wheelCount': 1, 'radius': 0.3, 'position': [1.0, 0.8, -0.5], 'rollingSign': 1,
        'steeringSign': -1, 'steeringEnabled': True, 'maxSteeringAngle': 0.5,
        'bodyMin': [-2.0, -1.0, -0.8], 'bodyMax': [2.0, 1.0, 0.8], 'grounded': True,
        'angularPosition': 1.2, 'angularVelocity': 3.0, 'steeringAngle': 0.1,
        'driveTorque': 12.0, 'brakeTorque': 0.0, 'slip': 0.01, 'maxDriveTorque': 30.0,
        'commandActive': True}),
    'pylon_actuator_state/engine': ('pylon_actuator_state', _ENGINE_STATE),
    'pylon_actuator_state/rcs': ('pylon_actuator_state', {
        'actuatorType': 'rcs', **_ACTUATOR_COMMON, 'name': 'rcs_3003_0', 'enabled': True,
        'active': False, 'flameout': False, 'thrust': 0.0, 'maxThrust': 4000.0,
        'thrustLimit': 1000.0, 'commandActive': False}),
    'pylon_actuator_state/separation': ('pylon_actuator_state', _SEPARATION_STATE),
    'pylon_actuator_state/motor': ('pylon_actuator_state', {
        'actuatorType': 'motor', **_ACTUATOR_COMMON, 'name': 'arm_hinge'}),
    'pylon_motor_state': ('pylon_motor_state', {
        'name': 'arm_hinge', 'jointType': 'revolute', 'vessel': 'Rover', 'partFlightId': 4005,
        'universalTime': UT, 'position': 0.5, 'velocity': 0.0, 'effort': 1.5, 'current': 0.2,
        'target': 0.5, 'powered': True, 'engaged': True, 'locked': False,
        'commandMode': 'position', 'commandActive': True}),
    'pylon_lidar_scan': ('pylon_lidar_scan', {
        'mode': '2D', 'sensorId': 'lidar_2d_1a2b3c4d', 'vessel': 'Rover', 'partFlightId': 4006,
        'universalTime': UT, 'rayCount': 4, 'horizontalCount': 4, 'verticalCount': 1,
        'hemisphereDensity': 0.0, 'horizontalFovDeg': 360.0, 'verticalFovDeg': 0.0,
        'scanRateHz': 10.0, 'maxDistance': 100.0, 'layout': 'vertical-major',
        'coordinateFrame': 'ros_sensor', 'hitCount': 2, 'origin': [0.0, 0.0, 0.0],
        'framePosition': [0.0, 0.0, 0.3], 'frameRotation': [0.0, 0.0, 0.0, 1.0],
        'ranges': [5.0, -1.0, 7.5, -1.0], 'hitMask': [1, 0, 1, 0],
        'points': [5.0, 0.0, 0.0, None, None, None, -7.5, 0.0, 0.0, None, None, None],
        'directions': [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, -1.0, 0.0, 0.0, 0.0, -1.0, 0.0]}),
    'pylon_lidar_inactive': ('pylon_lidar_inactive', {
        'mode': '3D', 'sensorId': 'lidar_3d_1a2b3c4d', 'vessel': 'Rover',
        'partFlightId': 4006}),
    'pylon_camera_frame_chunk': ('pylon_camera_frame_chunk', {
        'source': 'rgb_camera', 'sessionId': 'ab' * 16, 'sequence': 1, 'chunkIndex': 0,
        'chunkCount': 1, 'frameBytes': len(FRAME), 'sha256': hashlib.sha256(FRAME).hexdigest(),
        'sensorId': 'camera_0badf00d', 'vessel': 'Rover', 'partFlightId': 4007,
        'universalTime': UT, 'width': 16, 'height': 16, 'step': 48, 'encoding': 'rgb8',
        'verticalFovDeg': 60.0, 'coordinateFrame': 'ros_sensor',
        'framePosition': [0.5, 0.0, 0.2], 'frameRotation': [0.0, 0.0, 0.0, 1.0],
        'data': _b64(FRAME)}),
    'pylon_camera_inactive': ('pylon_camera_inactive', {
        'source': 'docking_port', 'sensorId': 'docking_port_3008_0', 'partFlightId': 4008}),
    'pylon_star_tracker': ('pylon_star_tracker', {
        'vesselId': VESSEL_ID, 'sensorId': 'star_tracker_00c0ffee', 'sessionId': 'cd' * 16,
        'sequence': 12, 'universalTime': UT, 'referenceFrame': 'kerbol_inertial',
        'measuredFrame': 'base_link', 'valid': True, 'reason': 'tracking',
        'angularRateDegSec': 0.01, 'noiseStdRad': 9.7e-5,
        'orientation': [0.0, 0.0, 0.7071068, 0.7071068]}),
    'pylon_vessel_urdf_chunk': ('pylon_vessel_urdf_chunk', {
        'sessionId': 'ef' * 16, 'modelId': '12' * 32, 'chunkIndex': 0, 'chunkCount': 1,
        'encoding': 'gzip+base64', 'sha256': hashlib.sha256(MODEL).hexdigest(),
        'expiresAfterSec': 6.0, 'sentAtUt': UT, 'data': _b64(MODEL)}),
    'pylon_vessel_urdf_clear': ('pylon_vessel_urdf_clear', {'sessionId': 'ef' * 16}),
    'pylon_docking_port_manifest': ('pylon_docking_port_manifest', {
        'ports': [{'name': 'docking_port_3008_0', 'partFlightId': 4008, 'moduleIndex': 0},
                  {'name': 'docking_port_3009_1', 'partFlightId': 4009, 'moduleIndex': 1}]}),
    'pylon_docking_port_state': ('pylon_docking_port_state', {
        'name': 'docking_port_3008_0', 'partFlightId': 4008, 'moduleIndex': 0,
        'nodeType': 'size1', 'state': 'Ready', 'docked': False, 'acquiring': False,
        'releasable': False, 'cameraActive': True, 'partnerName': '',
        'partnerPartFlightId': 0}),
    'pylon_control_authority_state': ('pylon_control_authority_state', {
        'vesselId': VESSEL_ID, 'vessel': 'Rover', 'state': 1, 'controllerId': 'planner',
        'leaseId': 'lease-1', 'priority': 10, 'leaseRemainingSeconds': 1.5,
        'sasSuppressed': True, 'emergencyStop': False, 'lastSequence': 7,
        'reason': 'lease_acquired'}),
    'pylon_wrench_status': ('pylon_wrench_status', {
        'vesselId': VESSEL_ID, 'controllerId': 'planner', 'leaseId': 'lease-1', 'sequence': 7,
        'accepted': True, 'reason': 'magnitude_limit,slew_rate_limit',
        'requested': {'force': [1000.0, 0.0, 0.0], 'torque': [0.0, 0.0, 10.0]},
        'allocated': {'force': [800.0, 0.0, 0.0], 'torque': [0.0, 0.0, 10.0]},
        'achieved': {'force': [750.0, 0.0, 0.0], 'torque': [0.0, 0.0, 0.0]},
        'allocationResidual': {'force': [200.0, 0.0, 0.0], 'torque': [0.0, 0.0, 0.0]},
        'trackingResidual': {'force': [250.0, 0.0, 0.0], 'torque': [0.0, 0.0, 10.0]},
        'saturationRatio': 0.2, 'trackingErrorRatio': 0.26, 'saturated': True,
        'achievedQuality': packets.ACHIEVED_QUALITY}),
    'pylon_control_snapshot': ('pylon_control_snapshot', {
        'vesselId': VESSEL_ID, 'observationSequence': 900,
        'flight': {'type': 'pylon_flight_state', 'version': 1, **_FLIGHT},
        'engines': [{'type': 'pylon_actuator_state', 'version': 1, **_ENGINE_STATE}],
        'separations': [{'type': 'pylon_actuator_state', 'version': 1,
                         **_SEPARATION_STATE}]}),
    'pylon_vehicle_health': ('pylon_vehicle_health', {
        'vesselId': VESSEL_ID, 'observationSequence': 900, 'universalTime': UT,
        'electricCharge': 120.0, 'electricCapacity': 150.0}),
    'pylon_part_thermal_state': ('pylon_part_thermal_state', {
        'vesselId': VESSEL_ID, 'observationSequence': 900, 'universalTime': UT,
        'electricCharge': 0.0, 'electricCapacity': 0.0, 'partFlightId': 4001,
        'partPersistentId': 3001, 'partName': 'liquidEngine2', 'temperature': 300.0,
        'maxTemperature': 2000.0, 'skinTemperature': 295.0, 'maxSkinTemperature': 2400.0,
        'shieldedFromAirstream': False}),
    'pylon_separation_result': ('pylon_separation_result', {
        **OPERATION, 'originalGeneration': 3, 'name': 'decoupler_3002_0',
        'controllerId': 'planner', 'sequence': 7, 'completed': True, 'success': True,
        'retained': True, 'reason': 'separated', 'resultEpoch': 'f' * 32,
        'resultGeneration': 4, 'activeVesselId': VESSEL_ID,
        'resultingVesselIds': [VESSEL_ID, OTHER_VESSEL_ID],
        'retentionRemainingSeconds': 600.0}),
    'pylon_relative_nav': ('pylon_relative_nav', {
        'vesselId': VESSEL_ID, 'sensorId': 'relative_nav_main', 'partFlightId': 4009,
        'universalTime': UT, 'maxRange': 2000.0, 'rateHz': 10.0, 'positionSigmaBase': 0.05,
        'rangeSigmaFraction': 0.001, 'velocitySigma': 0.005, 'coordinateFrame': 'base_link',
        'targets': [{'vesselId': OTHER_VESSEL_ID, 'vesselName': 'Target Station',
                     'isDebris': False, 'range': 150.0, 'position': [120.0, 90.0, 0.0],
                     'velocity': [0.0, -0.17, 0.0]}]}),
    'pylon_gnss': ('pylon_gnss', {
        'vesselId': VESSEL_ID, 'sensorId': 'gnss', 'partFlightId': 4010,
        'sessionId': 'c' * 32, 'sequence': 12, 'universalTime': UT, 'rateHz': 10.0,
        'frameId': 'gnss_link', 'bodyName': 'Kerbin', 'status': 'fix', 'latitude': -0.0486,
        'longitude': -74.7247, 'altitude': 0.6, 'positionCovariance': [0.04, 0.04, 0.16]}),
    'pylon_ahrs': ('pylon_ahrs', {
        'vesselId': VESSEL_ID, 'sensorId': 'ahrs', 'partFlightId': 4011,
        'sessionId': 'd' * 32, 'sequence': 7, 'universalTime': UT, 'rateHz': 50.0,
        'orientation': [0.0, 0.0, 0.38268343236508984, 0.9238795325112867],
        'orientationCovariance': [1.2e-5, 1.2e-5, 7.6e-5]}),
}

COMMAND_SAMPLES: dict[str, tuple[str, dict]] = {
    'pylon_control_authority_command': ('pylon_control_authority_command', {
        'action': 'acquire', **IDENTITY, 'priority': 10, 'leaseDurationSeconds': 2.0,
        'suppressSas': True}),
    'pylon_body_wrench_command': ('pylon_body_wrench_command', {
        'frame': 'base_link', **IDENTITY, 'force': [1000.0, 0.0, 0.0],
        'torque': [0.0, 0.0, 10.0], 'timeoutSeconds': 0.5}),
    'pylon_actuator_command/wheel': ('pylon_actuator_command', {
        'actuatorType': 'wheel', 'name': 'wheel_3000_0', **IDENTITY, 'enabled': True,
        'timeoutSeconds': 0.5, 'targetAngularVelocity': 3.0, 'steeringAngle': 0.1,
        'maxDriveTorque': 0.0, 'brake': 0.0}),
    'pylon_actuator_command/engine': ('pylon_actuator_command', _ENGINE_COMMAND),
    'pylon_actuator_command/rcs': ('pylon_actuator_command', {
        'actuatorType': 'rcs', 'name': 'rcs_3003_0', **IDENTITY, 'enabled': True,
        'timeoutSeconds': 0.5, 'thrustLimit': 500.0}),
    'pylon_actuator_command/separation': ('pylon_actuator_command', _SEPARATION_COMMAND),
    'pylon_motor_command': ('pylon_motor_command', {
        'name': 'arm_hinge', **IDENTITY, 'partFlightId': 0, 'mode': 'velocity',
        'hasEnabled': True, 'enabled': True, 'hasPosition': False, 'position': 0.0,
        'hasVelocity': True, 'velocity': 0.3, 'hasEffort': False, 'effort': 0.0,
        'timeoutSeconds': 0.5}),
    'pylon_docking_port_command': ('pylon_docking_port_command', {
        'name': 'docking_port_3008_0', 'action': 1, **IDENTITY}),
    'pylon_flight_control_command': ('pylon_flight_control_command', _FLIGHT_COMMAND),
    'pylon_control_batch': ('pylon_control_batch', {
        **IDENTITY, 'renewLease': True, 'leaseDurationSeconds': 2.0, 'suppressSas': True,
        'hasFlight': True, 'hasSeparation': True,
        'engineJson': [packets.build_batch_member('pylon_actuator_command',
                                                  **_ENGINE_COMMAND)],
        'flightJson': packets.build_batch_member('pylon_flight_control_command',
                                                 **_FLIGHT_COMMAND),
        'separationJson': packets.build_batch_member('pylon_actuator_command',
                                                     **_SEPARATION_COMMAND)}),
    'pylon_separation_query': ('pylon_separation_query', dict(OPERATION)),
}


def state_sample(case: str) -> tuple[str, dict]:
    """Return ``(type_name, fields)`` of a state sample, as a deep copy."""
    type_name, fields = STATE_SAMPLES[case]
    return type_name, copy.deepcopy(fields)


def command_sample(case: str) -> tuple[str, dict]:
    """Return ``(type_name, fields)`` of a command sample, as a deep copy."""
    type_name, fields = COMMAND_SAMPLES[case]
    return type_name, copy.deepcopy(fields)


def state_packet(case: str, **changes) -> dict:
    """Return a built (validated) state packet of a sample, with some fields changed."""
    type_name, fields = state_sample(case)
    fields.update(changes)
    return packets.build_state(type_name, ENVELOPE, **fields)


def command_packet(case: str, **changes) -> dict:
    """Return a built (validated) command of a sample, with some fields changed."""
    type_name, fields = command_sample(case)
    fields.update(changes)
    return packets.build_command(type_name, ENVELOPE, **fields)
