"""A parameter file that sets a renamed or removed parameter stops the node at start.

One line names what to use instead (not silence).
"""

import pytest

pytestmark = pytest.mark.integration


@pytest.mark.parametrize('node, parameter, value, instead', [
    ('setpoint_controller', 'setpoint_topic', '/my/setpoint', 'remap'),
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
