"""pylon_viewer and pylon_recorder each say how they are on /diagnostics."""

from pylon_common import diagnostics, topics
from pylon_testing.node_status import node_status
import pytest

pytestmark = pytest.mark.integration


def test_the_viewer_reports_its_address(ros_process, ros_node):
    ros_process([topics.VIEWER, '--ros-args', '-p', 'port:=0'], name='viewer')
    status = node_status(ros_node, topics.VIEWER)
    assert status.level == diagnostics.OK and status.hardware_id.startswith('ws://127.0.0.1:')
    assert not status.hardware_id.endswith(':0')             # the port it took
    assert status.message.startswith('serving') and status.hardware_id in status.message


def test_the_recorder_reports_its_file(ros_process, ros_node, tmp_path):
    path = tmp_path / 'run.mcap'
    ros_process([topics.PYLON_RECORDER, '--ros-args', '-p', f'output:={path}', '-p',
                 f'topics:={topics.name(topics.ROS_DIAGNOSTICS)}'], name='recorder')
    status = node_status(ros_node, topics.PYLON_RECORDER)
    assert (status.level, status.hardware_id) == (diagnostics.OK, str(path.resolve()))
    assert status.message.startswith('recording')
