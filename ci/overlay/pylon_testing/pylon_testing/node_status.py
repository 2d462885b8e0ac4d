"""A node's status on ``/diagnostics``, as the diagnostic aggregator would see it.

``node_status(ros_node, name)`` waits (a condition, with the recorder's timeout) for the
first ``DiagnosticStatus`` named ``name`` on ``/diagnostics`` and returns it; the tests of
each node family start their nodes and check its name, hardware id and level.
"""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from pylon_common import topics

from pylon_testing.recorder import TopicRecorder


def node_status(ros_node: object, name: str) -> DiagnosticStatus:
    """Return the first status named ``name`` that comes on ``/diagnostics``."""
    key = topics.ROS_DIAGNOSTICS
    rec = TopicRecorder(ros_node).add('diag', topics.name(key), DiagnosticArray,
                                      topics.qos(key, reader=True))
    try:
        message = rec.wait_for('diag', lambda m: any(s.name == name for s in m.status),
                               what=f"{name}'s status on /diagnostics")
        return next(s for s in message.status if s.name == name)
    finally:
        rec.close()
