"""The shared parameter rows: checks, descriptors, declare() on a real node, retired names."""

from pylon_common.parameters import (
    check,
    checked,
    declare,
    descriptor,
    file_section,
    Parameter,
    resolve,
    Retired,
    section_node,
    topic_name_problem,
)
import pytest
from rclpy.parameter import Parameter as RosParameter

ROWS = (
    Parameter('gain', 0.8, '1/s, the gain', 0.01, 10.0),
    Parameter('count', 3, 'how many', 1, 1000),
    Parameter('enabled', True, 'on or off'),
    Parameter('frame', 'base_link', 'a frame'),
    Parameter('input', '/a/b', 'a topic', topic=True),
    Parameter('period_sec', 1.0, 's', 0.0, exclusive_minimum=True),
)


@pytest.mark.parametrize('name, value, message', [
    ('gain', 20.0, r'must be 0.01–10, got 20.0'),
    ('gain', float('nan'), 'must be'),
    ('gain', True, 'expected a float'),
    ('count', 2.5, 'expected a integer'),
    ('enabled', 1, 'expected a bool'),
    ('frame', '', 'must not be empty'),
    ('input', 'a b', 'not a valid ROS topic name'),
    ('period_sec', 0.0, 'must be > 0'),
])
def test_bad_values_name_the_parameter(name, value, message):
    row = next(r for r in ROWS if r.name == name)
    with pytest.raises(ValueError, match=message):
        checked(row, value)


def test_ints_stand_for_floats_and_resolve_merges_over_defaults():
    assert checked(ROWS[0], 2) == 2.0 and isinstance(checked(ROWS[0], 2), float)
    check(ROWS[4], '~/relative')
    values = resolve(ROWS, {'count': 7})
    assert values['count'] == 7 and values['gain'] == 0.8
    with pytest.raises(ValueError, match='unknown parameter'):
        resolve(ROWS, {'gian': 1.0})


def test_descriptors_carry_description_range_and_read_only():
    gain = descriptor(ROWS[0])
    assert gain.read_only and gain.description == '1/s, the gain'
    assert (gain.floating_point_range[0].from_value,
            gain.floating_point_range[0].to_value) == (0.01, 10.0)
    count = descriptor(ROWS[1])
    assert count.integer_range[0].to_value == 1000
    assert 'a valid ROS topic name' in descriptor(ROWS[4]).additional_constraints


def test_topic_names_follow_rcl():
    assert topic_name_problem('/ksp_vessel/imu') == ''
    assert topic_name_problem('/a//b') and topic_name_problem('1a') and topic_name_problem('')


def _node(ros_node, overrides):
    from rclpy.node import Node
    return Node('parameters_under_test', context=ros_node.context,
                parameter_overrides=[RosParameter(k, value=v) for k, v in overrides.items()])


def test_declare_on_a_node(ros_node):
    node = _node(ros_node, {'gain': 2.0, 'frame': 'odom'})
    try:
        values = declare(node, ROWS)
        assert values['gain'] == 2.0 and values['frame'] == 'odom' and values['count'] == 3
        assert node.describe_parameter('gain').read_only
        result = node.set_parameters([RosParameter('gain', value=3.0)])[0]
        assert not result.successful                  # read-only: read once at start
    finally:
        node.destroy_node()


def test_a_retired_parameter_is_refused_naming_what_to_use(ros_node):
    node = _node(ros_node, {'imu_topic': '/x/imu'})
    try:
        with pytest.raises(ValueError, match="'imu_topic'.*no longer exists: use topic_prefix"):
            declare(node, ROWS, (Retired('imu_topic', 'use topic_prefix'),))
    finally:
        node.destroy_node()


def test_a_value_out_of_range_stops_the_declaration(ros_node):
    node = _node(ros_node, {'count': 0})
    try:
        with pytest.raises(ValueError, match=r'option count \(--count\)'):
            declare(node, ROWS)
    finally:
        node.destroy_node()


@pytest.mark.parametrize('key, node', [
    ('/**/setpoint_controller', 'setpoint_controller'), ('setpoint_controller',
                                                           'setpoint_controller'),
    ('/vehicle_2/udp_bridge', 'udp_bridge'), ('/**', '**'), ('/*/x', 'x')])
def test_a_file_section_names_its_node(key, node):
    assert section_node(key) == node
    assert file_section(node) == f'/**/{node}' and section_node(file_section(node)) == node
