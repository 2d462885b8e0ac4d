"""Two processes over real DDS: a latched VesselLifecycle reaches a subscriber that joins late.

The one check of DDS's Transient Local delivery (the middleware's own tests cover the rest),
made with what our nodes use: the subscriber reads the contract's lifecycle topic with the
contract's reader profile (``pylon_common.topics``), so a contract that made the lifecycle
Volatile, or a reader profile that did not match the latched writer, fails here.
"""

import json

from pylon_common import topics
from pylon_interfaces.msg import VesselLifecycle
from pylon_testing.wait import wait_for_messages
import pytest

pytestmark = pytest.mark.integration

TOPIC = topics.name('lifecycle')
READER = topics.qos('lifecycle', reader=True)


def test_late_subscriber_receives_transient_local_lifecycle(ros_process, ros_node):
    fields = {
        'state': VesselLifecycle.STATE_ACTIVE, 'vessel_id': 'b6f1c2d4-0001',
        'vessel_name': 'Harness Probe', 'runtime_generation': 7, 'generation': 3,
        'origin_sequence': 12, 'world_frame': 'pylon_ground_truth_enu',
        'body_frame': 'base_link', 'model_ready': True, 'model_id': 'model-abc',
        'reason': 'vessel_switch', 'header': {'frame_id': 'pylon_ground_truth_enu'},
    }
    publisher = ros_process(
        ['latched_publisher', TOPIC, 'pylon_interfaces/msg/VesselLifecycle', json.dumps(fields)])
    # The message is published before this process subscribes: only durability delivers it.
    publisher.wait_for_output(f'published {TOPIC}', timeout=20.0)

    [received] = wait_for_messages(ros_node, VesselLifecycle, TOPIC, READER, timeout=20.0)

    assert received.state == VesselLifecycle.STATE_ACTIVE
    assert received.vessel_id == 'b6f1c2d4-0001'
    assert received.vessel_name == 'Harness Probe'
    assert (received.runtime_generation, received.generation, received.origin_sequence) == (
        7, 3, 12)
    assert received.model_ready and received.model_id == 'model-abc'
    assert received.header.frame_id == 'pylon_ground_truth_enu'
    assert publisher.returncode is None


def test_wait_for_messages_times_out_on_a_silent_topic(ros_node):
    with pytest.raises(TimeoutError, match=r'only 0 of 1 message\(s\) on /nobody/publishes'):
        wait_for_messages(ros_node, VesselLifecycle, '/nobody/publishes', READER,
                          timeout=0.3)
