"""Check the generated pylon_interfaces messages against the INTERFACES.md table."""

import re

from pylon_interfaces import msg
import pytest

Field = tuple[str, str]

IDENTITY: list[Field] = [
    ('header', 'std_msgs/Header'),
    ('vessel_id', 'string'),
    ('controller_id', 'string'),
    ('lease_id', 'string'),
    ('sequence', 'uint64'),
]


def typed(msg_type: str, *names: str) -> list[Field]:
    """Return fields that share one .msg type, in the given order."""
    return [(name, msg_type) for name in names]


HEADER = typed('std_msgs/Header', 'header')
WRENCH = 'geometry_msgs/Wrench'
POINT = 'geometry_msgs/Point'
QUATERNION = 'geometry_msgs/Quaternion'
VECTOR3 = 'geometry_msgs/Vector3'
RUNTIME_IDENTITY: list[Field] = [
    ('vessel_id', 'string'), ('runtime_instance', 'string'), ('runtime_epoch', 'string'),
    ('runtime_generation', 'uint64'), ('observation_sequence', 'uint64'),
]

# name -> (ordered fields in .msg spelling, constants)
MESSAGES: dict[str, tuple[list[Field], dict[str, int]]] = {
    'VesselLifecycle': (
        HEADER + typed('uint8', 'state')
        + typed('string', 'vessel_id', 'vessel_name', 'runtime_instance', 'runtime_epoch')
        + typed('uint64', 'runtime_generation', 'generation', 'origin_sequence')
        + typed('string', 'world_frame', 'body_frame') + typed('bool', 'model_ready')
        + typed('string', 'model_id', 'reason'),
        {'STATE_UNAVAILABLE': 0, 'STATE_ACTIVE': 1, 'STATE_CHANGED': 2, 'STATE_STALE': 3},
    ),
    'ControlAuthorityCommand': (
        HEADER + typed('uint8', 'action')
        + typed('string', 'vessel_id', 'controller_id', 'lease_id') + typed('int32', 'priority')
        + typed('float64', 'lease_duration_sec') + typed('bool', 'suppress_sas')
        + typed('uint64', 'sequence'),
        {'ACTION_ACQUIRE': 1, 'ACTION_RENEW': 2, 'ACTION_RELEASE': 3,
         'ACTION_EMERGENCY_STOP': 4, 'ACTION_CLEAR_EMERGENCY_STOP': 5},
    ),
    'ControlAuthorityState': (
        HEADER + typed('uint8', 'state') + typed('uint64', 'generation')
        + typed('string', 'vessel_id', 'vessel_name', 'controller_id', 'lease_id')
        + typed('int32', 'priority') + typed('float64', 'lease_remaining_sec')
        + typed('bool', 'sas_suppressed', 'emergency_stop') + typed('uint64', 'last_sequence')
        + typed('string', 'reason'),
        {'STATE_PLAYER': 0, 'STATE_PYLON': 1, 'STATE_UNOWNED': 0, 'STATE_OWNED': 1,
         'STATE_EMERGENCY_STOP': 2},
    ),
    'BodyWrenchCommand': (
        IDENTITY + typed(WRENCH, 'wrench') + typed('float64', 'timeout_sec'),
        {},
    ),
    'WrenchFeedback': (
        IDENTITY + typed('bool', 'accepted') + typed('string', 'reason')
        + typed(WRENCH, 'requested', 'allocated', 'achieved', 'allocation_residual',
                'tracking_residual')
        + typed('float64', 'saturation_ratio', 'tracking_error_ratio')
        + typed('bool', 'saturated') + typed('string', 'achieved_quality'),
        {},
    ),
    'ControlSetpoint': (
        HEADER + typed('uint8', 'mode') + typed(POINT, 'position')
        + typed(QUATERNION, 'orientation') + typed(VECTOR3, 'linear_velocity', 'angular_velocity'),
        {'MODE_IDLE': 0, 'MODE_DETUMBLE': 1, 'MODE_ATTITUDE_HOLD': 2, 'MODE_SIX_DOF': 3},
    ),
    'NearbyVessels': (
        HEADER + typed('string', 'observer_vessel_id') + typed('uint64', 'origin_sequence')
        + typed(POINT, 'observer_position') + typed(VECTOR3, 'observer_linear_velocity')
        + typed('pylon_interfaces/NearbyVessel[]', 'vessels'),
        {},
    ),
    'NearbyVessel': (
        typed('string', 'vessel_id', 'vessel_name') + typed('bool', 'is_debris')
        + typed(POINT, 'position') + typed(VECTOR3, 'linear_velocity'),
        {},
    ),
    'StarTrackerState': (
        HEADER + typed('string', 'vessel_id', 'sensor_id', 'session_id')
        + typed('uint64', 'sequence') + typed('float64', 'universal_time')
        + typed('string', 'measured_frame_id') + typed('bool', 'valid')
        + typed('string', 'reason') + typed(QUATERNION, 'orientation')
        + typed('float64[9]', 'orientation_covariance') + typed('float64', 'angular_rate_deg_sec'),
        {},
    ),
    'MotorCommand': (
        IDENTITY + typed('string', 'id') + typed('uint8', 'mode') + typed('bool', 'enabled')
        + typed('float64', 'position', 'velocity', 'effort', 'timeout_sec'),
        {'MODE_POSITION': 0, 'MODE_VELOCITY': 1, 'MODE_EFFORT': 2},
    ),
    'MotorState': (
        HEADER + typed('string', 'id', 'name', 'motor_type') + typed('bool', 'enabled')
        + typed('uint8', 'mode')
        + typed('float64', 'position', 'velocity', 'effort', 'target', 'current')
        + typed('bool', 'powered', 'locked', 'command_active'),
        {},
    ),
    'WheelCommand': (
        IDENTITY + typed('string', 'id') + typed('bool', 'enabled')
        + typed('float64', 'target_angular_velocity', 'steering_angle', 'max_drive_torque',
                'timeout_sec', 'brake'),
        {},
    ),
    'WheelState': (
        HEADER + typed('string', 'id', 'name') + typed('bool', 'enabled', 'grounded')
        + typed('float64', 'angular_position', 'angular_velocity', 'steering_angle',
                'drive_torque', 'brake_torque', 'slip', 'max_drive_torque')
        + typed('string', 'vessel_id') + typed('uint32', 'wheel_count')
        + typed('float64', 'radius') + typed(POINT, 'position')
        + typed('float64', 'rolling_sign', 'steering_sign') + typed('bool', 'steering_enabled')
        + typed('float64', 'max_steering_angle') + typed(POINT, 'body_min', 'body_max'),
        {},
    ),
    'EngineCommand': (
        IDENTITY + typed('string', 'id') + typed('bool', 'enabled')
        + typed('float64', 'target_thrust', 'timeout_sec') + typed('bool', 'has_gimbal_command')
        + typed('float64', 'gimbal_pitch', 'gimbal_yaw', 'gimbal_roll'),
        {},
    ),
    'EngineState': (
        HEADER + typed('string', 'runtime_instance') + typed('uint64', 'runtime_generation')
        + typed('string', 'runtime_epoch') + typed('uint64', 'observation_sequence')
        + typed('string', 'vessel_id') + typed('float64', 'universal_time')
        + typed('string', 'role', 'id', 'name')
        + typed('bool', 'enabled', 'operational', 'flameout')
        + typed('float64', 'throttle', 'thrust', 'max_thrust')
        + typed('bool', 'command_active', 'gimbal_available', 'gimbal_command_active')
        + typed('float64', 'gimbal_pitch', 'gimbal_yaw', 'gimbal_roll'),
        {},
    ),
    'RcsCommand': (
        IDENTITY + typed('string', 'id') + typed('bool', 'enabled')
        + typed('float64', 'thrust_limit', 'timeout_sec'),
        {},
    ),
    'RcsState': (
        HEADER + typed('string', 'id', 'name') + typed('bool', 'enabled', 'active', 'flameout')
        + typed('float64', 'thrust', 'max_thrust', 'thrust_limit')
        + typed('bool', 'command_active'),
        {},
    ),
    'SeparationCommand': (
        IDENTITY + typed('string', 'id') + typed('bool', 'separate')
        + typed('string', 'operation_id', 'original_runtime_instance', 'original_runtime_epoch',
                'original_vessel_id'),
        {},
    ),
    'SeparationState': (
        HEADER + typed('string', 'runtime_instance') + typed('uint64', 'runtime_generation')
        + typed('string', 'runtime_epoch') + typed('uint64', 'observation_sequence')
        + typed('string', 'vessel_id') + typed('float64', 'universal_time')
        + typed('string', 'role', 'id', 'name', 'mechanism')
        + typed('bool', 'available', 'separated'),
        {},
    ),
    'DockingPortState': (
        HEADER + typed('string', 'name') + typed('uint64', 'part_flight_id')
        + typed('uint32', 'module_index') + typed('string', 'node_type', 'state')
        + typed('bool', 'docked', 'acquiring', 'releasable', 'camera_active')
        + typed('string', 'partner_name') + typed('uint64', 'partner_part_flight_id'),
        {},
    ),
    'DockingPortCommand': (
        HEADER + typed('uint8', 'action') + typed('uint64', 'sequence')
        + typed('string', 'vessel_id', 'controller_id', 'lease_id'),
        {'ACTION_SELECT_CAMERA': 1, 'ACTION_STOP_CAMERA': 2, 'ACTION_RELEASE': 3},
    ),
    'FlightState': (
        HEADER + typed('string', 'runtime_instance') + typed('uint64', 'runtime_generation')
        + typed('string', 'runtime_epoch') + typed('uint64', 'observation_sequence')
        + typed('string', 'vessel_id', 'body_name')
        + typed('float64', 'universal_time', 'altitude_asl', 'altitude_agl', 'latitude',
                'longitude', 'mass', 'liquid_fuel', 'oxidizer', 'electric_charge', 'gravity',
                'body_radius', 'gravitational_parameter', 'atmosphere_depth', 'apoapsis',
                'periapsis', 'time_to_apoapsis', 'vertical_speed', 'horizontal_speed',
                'dynamic_pressure')
        + typed('bool', 'landed', 'splashed')
        + typed(VECTOR3, 'up_body', 'east_body', 'north_body', 'surface_velocity_body',
                'orbital_velocity_body', 'angular_velocity_body')
        + typed('bool', 'applied_input_valid', 'flight_command_active')
        + typed('uint64', 'applied_input_sequence')
        + typed('float64', 'applied_input_age', 'applied_pitch', 'applied_yaw', 'applied_roll')
        + typed('bool', 'input_at_limit'),
        {},
    ),
    'SimulatorState': (
        HEADER + typed('string', 'vessel_id', 'runtime_instance', 'runtime_epoch')
        + typed('uint64', 'runtime_generation', 'observation_sequence') + typed('uint8', 'state')
        + typed('bool', 'communication_alive', 'paused', 'packed', 'physics_warp',
                'control_available', 'simulation_advancing')
        + typed('float64', 'universal_time', 'realtime_since_startup', 'warp_rate',
                'seconds_since_progress', 'heartbeat_age_sec'),
        {'STATE_INITIALIZING': 0, 'STATE_ADVANCING': 1, 'STATE_PAUSED': 2, 'STATE_STALLED': 3,
         'STATE_UNAVAILABLE': 4, 'STATE_STALE': 5},
    ),
    'FlightControlCommand': (
        IDENTITY + typed('float64', 'pitch', 'yaw', 'roll') + typed('bool', 'landing_gear')
        + typed('float64', 'timeout_sec'),
        {},
    ),
    'ControlBatch': (
        IDENTITY + typed('bool', 'renew_lease') + typed('float64', 'lease_duration_sec')
        + typed('bool', 'suppress_sas', 'has_flight')
        + typed('pylon_interfaces/FlightControlCommand', 'flight')
        + typed('pylon_interfaces/EngineCommand[<=16]', 'engines')
        + typed('bool', 'has_separation')
        + typed('pylon_interfaces/SeparationCommand', 'separation'),
        {},
    ),
    'ControlSnapshot': (
        HEADER + typed('pylon_interfaces/FlightState', 'flight')
        + typed('pylon_interfaces/EngineState[]', 'engines')
        + typed('pylon_interfaces/SeparationState[]', 'separations'),
        {},
    ),
    'VehicleHealth': (
        HEADER + RUNTIME_IDENTITY
        + typed('float64', 'universal_time', 'electric_charge', 'electric_capacity',
                'net_charge_rate_estimate') + typed('bool', 'net_charge_rate_valid')
        + typed('float64', 'rate_sample_interval_sec', 'generation_rate')
        + typed('bool', 'generation_rate_valid') + typed('float64', 'consumption_rate')
        + typed('bool', 'consumption_rate_valid'),
        {},
    ),
    'PartThermalState': (
        HEADER + RUNTIME_IDENTITY + typed('float64', 'universal_time')
        + typed('uint32', 'part_flight_id', 'part_persistent_id') + typed('string', 'part_name')
        + typed('float64', 'temperature', 'max_temperature', 'skin_temperature',
                'max_skin_temperature') + typed('bool', 'shielded_from_airstream')
        + typed('float64', 'electric_charge', 'electric_capacity'),
        {},
    ),
    'SeparationResult': (
        HEADER + typed('string', 'operation_id', 'original_runtime_instance',
                       'original_runtime_epoch', 'original_vessel_id')
        + typed('uint64', 'original_runtime_generation') + typed('string', 'id', 'controller_id')
        + typed('uint64', 'sequence') + typed('bool', 'completed', 'success', 'retained')
        + typed('string', 'reason', 'result_runtime_epoch')
        + typed('uint64', 'result_runtime_generation') + typed('string', 'active_vessel_id')
        + typed('string[]', 'resulting_vessel_ids') + typed('float64', 'retention_remaining_sec'),
        {},
    ),
}

NAMES = sorted(MESSAGES)

PRIMITIVE_SPELLING = {'bool': 'boolean', 'float64': 'double', 'float32': 'float'}

ARRAY_RE = re.compile(r'^(?P<base>[^\[\]]+)\[(?P<bound><=)?(?P<size>\d*)\]$')

SAMPLES: dict[str, object] = {
    'bool': True,
    'string': 'pylon',
    'uint8': 255,
    'uint32': 2 ** 32 - 1,
    'uint64': 2 ** 64 - 1,
    'int32': -2 ** 31,
    'float64': 0.1,
}


def rosidl_spelling(msg_type: str) -> str:
    """Map a .msg type string to the spelling of get_fields_and_field_types()."""
    match = ARRAY_RE.match(msg_type)
    if match is None:
        return PRIMITIVE_SPELLING.get(msg_type, msg_type)
    base = rosidl_spelling(match['base'])
    size = match['size']
    if match['bound']:
        return f'sequence<{base}, {size}>'
    if size:
        return f'{base}[{size}]'
    return f'sequence<{base}>'


def message_class(name: str) -> type:
    """Return the generated message class called name."""
    return getattr(msg, name)


def declared_constants(cls: type) -> dict[str, int]:
    """Return the public upper-case integer attributes of a message class."""
    found = {}
    for attr in dir(cls):
        if attr.startswith('_') or not attr.isupper():
            continue
        value = getattr(cls, attr)
        if isinstance(value, int):
            found[attr] = value
    return found


def sample_value(msg_type: str) -> object:
    """Return a non-default value for a .msg type, or None to keep the default."""
    if msg_type in SAMPLES:
        return SAMPLES[msg_type]
    if msg_type == 'float64[9]':
        return [float(i) - 4.5 for i in range(9)]
    if msg_type == 'pylon_interfaces/NearbyVessel[]':
        return [msg.NearbyVessel(vessel_id='a', is_debris=True), msg.NearbyVessel()]
    return None


def round_trip(message: object) -> object:
    """Serialize and deserialize a message with rclpy's CDR serializer."""
    from rclpy.serialization import deserialize_message, serialize_message

    return deserialize_message(serialize_message(message), type(message))


def test_table_lists_29_messages_without_duplicate_fields() -> None:
    """Check the table itself: 29 messages, field names unique in each."""
    assert len(MESSAGES) == 29
    for name, (fields, _) in MESSAGES.items():
        field_names = [field for field, _ in fields]
        assert len(field_names) == len(set(field_names)), name


@pytest.mark.parametrize('msg_type, expected', [
    ('bool', 'boolean'),
    ('float64', 'double'),
    ('float32', 'float'),
    ('uint64', 'uint64'),
    ('string', 'string'),
    ('std_msgs/Header', 'std_msgs/Header'),
    ('float64[9]', 'double[9]'),
    ('pylon_interfaces/NearbyVessel[]', 'sequence<pylon_interfaces/NearbyVessel>'),
])
def test_rosidl_spelling(msg_type: str, expected: str) -> None:
    """Check the .msg to rosidl Python type-string mapping."""
    assert rosidl_spelling(msg_type) == expected


def test_package_exports_exactly_the_table() -> None:
    """Check pylon_interfaces.msg exports every table message and no other class."""
    exported = {
        attr for attr in dir(msg)
        if attr[:1].isupper() and isinstance(getattr(msg, attr), type)
    }
    assert exported == set(MESSAGES)


@pytest.mark.parametrize('name', NAMES, ids=NAMES)
def test_fields_in_order(name: str) -> None:
    """Check field names and types, in declaration order."""
    fields, _ = MESSAGES[name]
    expected = [(field, rosidl_spelling(msg_type)) for field, msg_type in fields]
    actual = list(message_class(name).get_fields_and_field_types().items())
    assert actual == expected


@pytest.mark.parametrize('name', NAMES, ids=NAMES)
def test_constants(name: str) -> None:
    """Check every constant's value and that the class declares no others."""
    cls = message_class(name)
    _, constants = MESSAGES[name]
    for constant, value in constants.items():
        assert getattr(cls, constant) == value, constant
    assert declared_constants(cls) == constants


@pytest.mark.parametrize('name', NAMES, ids=NAMES)
def test_default_message_round_trips(name: str) -> None:
    """Check a default-constructed message survives CDR serialization unchanged."""
    message = message_class(name)()
    assert message == round_trip(message)


@pytest.mark.parametrize('name', NAMES, ids=NAMES)
def test_populated_message_round_trips(name: str) -> None:
    """Check a message with non-default, extreme-width values survives serialization."""
    message = message_class(name)()
    fields, _ = MESSAGES[name]
    for field, msg_type in fields:
        value = sample_value(msg_type)
        if value is not None:
            setattr(message, field, value)
    if hasattr(message, 'header'):
        message.header.frame_id = 'base_link'
        message.header.stamp.sec = 7
    assert message != message_class(name)()
    assert message == round_trip(message)


def test_get_separation_result_service() -> None:
    """Check the service's request and response fields, in order."""
    from pylon_interfaces.srv import GetSeparationResult
    request = GetSeparationResult.Request.get_fields_and_field_types()
    response = GetSeparationResult.Response.get_fields_and_field_types()
    assert list(request.items()) == [
        ('operation_id', 'string'), ('original_runtime_instance', 'string'),
        ('original_runtime_epoch', 'string'), ('original_vessel_id', 'string')]
    assert list(response.items()) == [
        ('found', 'boolean'), ('query_sent', 'boolean'), ('reason', 'string'),
        ('result', 'pylon_interfaces/SeparationResult')]
