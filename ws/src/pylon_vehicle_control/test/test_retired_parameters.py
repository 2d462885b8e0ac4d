"""A parameter file that sets a renamed or removed parameter stops the node at start.

One line names what to use instead (not silence). An invalid topic name does too.
"""

import pytest

pytestmark = pytest.mark.integration


@pytest.mark.parametrize('node, parameter, value, instead', [
    ('setpoint_controller', 'imu_topic', '/my/imu', 'topic_prefix'),
    ('attitude_estimator', 'star_tracker_topic', '/ksp_vessel/star_tracker/st/state',
     'star_tracker_id'),
    ('attitude_evaluator', 'estimate_topic', '/my/odometry', 'remap'),
    ('nearby_markers', 'markers_topic', '/my/markers', 'bridge_prefix'),
])
def test_a_retired_parameter_in_an_overlay_stops_the_node_naming_the_new_one(
        ros_process, tmp_path, node, parameter, value, instead):
    overlay = tmp_path / 'overlay.yaml'
    overlay.write_text(f'{node}:\n  ros__parameters:\n    {parameter}: {value}\n')
    process = ros_process([node, '--ros-args', '--params-file', str(overlay)], name=node)
    assert process.wait(timeout=60.0) == 2, process.log()
    line = process.log().strip().splitlines()[-1]
    assert line.startswith(f'{node}: parameter {parameter!r}') and 'no longer exists' in line
    assert instead in line


@pytest.mark.parametrize('value', ['/my controller/setpoint', '/my_controller/1setpoint'])
def test_an_invalid_setpoint_topic_stops_the_controller_with_exit_2(ros_process, value):
    process = ros_process(['setpoint_controller', '--ros-args', '-p',
                           f'setpoint_topic:={value}'], name='controller')
    assert process.wait(timeout=60.0) == 2, process.log()
    line = process.log().strip().splitlines()[-1]
    assert line.startswith('setpoint_controller: option setpoint_topic'), line
    assert f'{value!r} is not a valid ROS topic name' in line
