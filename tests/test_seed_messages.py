"""The AI Challenge's message packages, as a team's stack is built with them.

Every type's fields (name and IDL type, in order) and constants are read back through rosidl's
Python introspection of the built packages and compared with the interface as the competition
publishes it: a renamed field, a float64 where the stack has float32 or a missing constant
changes the DDS type and nothing would match. One message also goes through DDS and back.
"""

import importlib

from builtin_interfaces.msg import Time
from pylon_testing.wait import spin_until
import pytest

TIME, HEADER = 'builtin_interfaces/Time', 'std_msgs/Header'
GEARS = {'NONE': 0, 'NEUTRAL': 1, 'DRIVE': 2,
         **{f'DRIVE_{i}': i + 1 for i in range(2, 19)},
         'REVERSE': 20, 'REVERSE_2': 21, 'PARK': 22, 'LOW': 23, 'LOW_2': 24}
MODES = {'NO_COMMAND': 0, 'AUTONOMOUS': 1, 'AUTONOMOUS_STEER_ONLY': 2,
         'AUTONOMOUS_VELOCITY_ONLY': 3, 'MANUAL': 4}

#: type -> (fields in order, constants); IDL ``float`` is float32, ``double`` float64
SHEET = {
    'autoware_auto_control_msgs/msg/AckermannControlCommand': (
        [('stamp', TIME),
         ('lateral', 'autoware_auto_control_msgs/AckermannLateralCommand'),
         ('longitudinal', 'autoware_auto_control_msgs/LongitudinalCommand')], {}),
    'autoware_auto_control_msgs/msg/AckermannLateralCommand': (
        [('stamp', TIME), ('steering_tire_angle', 'float'),
         ('steering_tire_rotation_rate', 'float')], {}),
    'autoware_auto_control_msgs/msg/LongitudinalCommand': (
        [('stamp', TIME), ('speed', 'float'), ('acceleration', 'float'), ('jerk', 'float')],
        {}),
    'autoware_auto_vehicle_msgs/msg/VelocityReport': (
        [('header', HEADER), ('longitudinal_velocity', 'float'),
         ('lateral_velocity', 'float'), ('heading_rate', 'float')], {}),
    'autoware_auto_vehicle_msgs/msg/SteeringReport': (
        [('stamp', TIME), ('steering_tire_angle', 'float')], {}),
    'autoware_auto_vehicle_msgs/msg/GearCommand': (
        [('stamp', TIME), ('command', 'uint8')], GEARS),
    'autoware_auto_vehicle_msgs/msg/GearReport': (
        [('stamp', TIME), ('report', 'uint8')], GEARS),
    'autoware_auto_vehicle_msgs/msg/ControlModeReport': (
        [('stamp', TIME), ('mode', 'uint8')],
        {**MODES, 'DISENGAGED': 5, 'NOT_READY': 6}),
    'autoware_auto_vehicle_msgs/srv/ControlModeCommand.Request': (
        [('stamp', TIME), ('mode', 'uint8')], MODES),
    'autoware_auto_vehicle_msgs/srv/ControlModeCommand.Response': (
        [('success', 'boolean')], {}),
    'autoware_auto_planning_msgs/msg/Trajectory': (
        [('header', HEADER),
         ('points', 'sequence<autoware_auto_planning_msgs/TrajectoryPoint, 10000>')], {}),
    'autoware_auto_planning_msgs/msg/TrajectoryPoint': (
        [('time_from_start', 'builtin_interfaces/Duration'), ('pose', 'geometry_msgs/Pose'),
         ('longitudinal_velocity_mps', 'float'), ('lateral_velocity_mps', 'float'),
         ('acceleration_mps2', 'float'), ('heading_rate_rps', 'float'),
         ('front_wheel_angle_rad', 'float'), ('rear_wheel_angle_rad', 'float')], {}),
    'tier4_vehicle_msgs/msg/ActuationCommand': (
        [('accel_cmd', 'double'), ('brake_cmd', 'double'), ('steer_cmd', 'double')], {}),
    'tier4_vehicle_msgs/msg/ActuationCommandStamped': (
        [('header', HEADER), ('actuation', 'tier4_vehicle_msgs/ActuationCommand')], {}),
    'tier4_vehicle_msgs/msg/ActuationStatus': (
        [('accel_status', 'double'), ('brake_status', 'double'), ('steer_status', 'double')],
        {}),
    'tier4_vehicle_msgs/msg/ActuationStatusStamped': (
        [('header', HEADER), ('status', 'tier4_vehicle_msgs/ActuationStatus')], {}),
}


def _load(name: str) -> type:
    """Import the class of ``package/kind/Type`` (``Type.Request`` for a service's half)."""
    package, kind, type_name = name.split('/')
    type_name, _, half = type_name.partition('.')
    cls = getattr(importlib.import_module(f'{package}.{kind}'), type_name)
    return getattr(cls, half) if half else cls


def _constants(cls: type) -> dict[str, int]:
    """Return the constants rosidl generated for ``cls`` (its metaclass keeps them)."""
    meta = type(cls)
    return dict(getattr(meta, f'_{meta.__name__}__constants'))


@pytest.mark.parametrize('name', sorted(SHEET))
def test_each_type_has_exactly_the_sheets_fields_types_and_constants(name):
    fields, constants = SHEET[name]
    cls = _load(name)
    assert list(cls.get_fields_and_field_types().items()) == fields
    assert _constants(cls) == constants
    for constant, value in constants.items():
        assert getattr(cls, constant) == value


def test_the_four_packages_hold_no_other_type():
    listed = {}
    for name in SHEET:
        package, kind, type_name = name.split('/')
        listed.setdefault(f'{package}.{kind}', set()).add(type_name.partition('.')[0])
    for module, names in listed.items():
        # a service module also holds the generated Type_Request / _Response / _Event
        built = {n for n in dir(importlib.import_module(module))
                 if n[:1].isupper() and '_' not in n}
        assert built == names, module


def test_a_control_command_crosses_dds_with_its_float32_values(ros_node):
    from autoware_auto_control_msgs.msg import AckermannControlCommand
    got = []
    ros_node.create_subscription(AckermannControlCommand, '/control/command/control_cmd',
                                 got.append, 10)
    publisher = ros_node.create_publisher(AckermannControlCommand,
                                          '/control/command/control_cmd', 10)
    sent = AckermannControlCommand(stamp=Time(sec=12, nanosec=5))
    sent.lateral.steering_tire_angle = 0.1
    sent.longitudinal.acceleration = -2.5
    spin_until(ros_node, lambda: publisher.get_subscription_count() == 1, 30,
               what='the subscription matched')
    publisher.publish(sent)
    spin_until(ros_node, lambda: bool(got), 30, what='the command arrived')
    assert got[0].stamp == sent.stamp
    assert got[0].longitudinal.acceleration == -2.5
    assert got[0].lateral.steering_tire_angle == pytest.approx(0.1, abs=1e-7)  # float32
    assert got[0].lateral.steering_tire_angle != 0.1                           # not float64
    topic_type = ros_node.get_publishers_info_by_topic('/control/command/control_cmd')
    assert {info.topic_type for info in topic_type} == {
        'autoware_auto_control_msgs/msg/AckermannControlCommand'}
