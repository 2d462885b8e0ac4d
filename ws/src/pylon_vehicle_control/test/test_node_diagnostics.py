"""The estimator, evaluator and chaser each say how they are on /diagnostics.

Each starts alone (no bridge: nothing to estimate, compare or chase) and is waited for on
``/diagnostics``: its status named after it, the vessel's topic prefix as its hardware id,
and the level its situation gives.
"""

from pylon_common import diagnostics, topics
from pylon_testing.node_status import node_status
import pytest

pytestmark = pytest.mark.integration


@pytest.mark.parametrize('node, level, message', [
    (topics.ATTITUDE_ESTIMATOR, diagnostics.WARN, 'no estimate yet'),
    (topics.ATTITUDE_EVALUATOR, diagnostics.WARN, 'waiting for the estimate and ground truth'),
    (topics.RENDEZVOUS_CHASER, diagnostics.OK, 'idle'),
])
def test_the_node_reports_on_diagnostics(ros_process, ros_node, tmp_path, node, level,
                                         message):
    args = ['--ros-args', '-p', f'output_dir:={tmp_path}'] \
        if node == topics.ATTITUDE_EVALUATOR else []
    ros_process([node, *args], name=node)
    status = node_status(ros_node, node)
    assert (status.level, status.hardware_id) == (level, topics.DEFAULT_TOPIC_PREFIX)
    assert status.message.startswith(message)
    assert {kv.key for kv in status.values}            # with its values
