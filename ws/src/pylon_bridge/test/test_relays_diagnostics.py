"""description_relay and nearby_markers each say how they are on /diagnostics."""

from pylon_common import diagnostics, topics
from pylon_testing.node_status import node_status
import pytest

pytestmark = pytest.mark.integration


@pytest.mark.parametrize('node, message', [(topics.DESCRIPTION_RELAY, 'no model yet'),
                                           (topics.NEARBY_MARKERS, '0 vessels shown')])
def test_the_relay_reports_on_diagnostics(ros_process, ros_node, node, message):
    ros_process([node], name=node)
    status = node_status(ros_node, node)
    assert (status.level, status.hardware_id, status.message) == (
        diagnostics.OK, topics.DEFAULT_TOPIC_PREFIX, message)
