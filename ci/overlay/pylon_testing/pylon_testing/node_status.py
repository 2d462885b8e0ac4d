"""A node's status on ``/diagnostics``, as the diagnostic aggregator would see it.

``node_status(ros_node, name)`` waits (a condition, with the recorder's timeout) for the
first ``DiagnosticStatus`` named ``name`` on ``/diagnostics`` (and, given ``holds``, whose
values, as a ``{key: value}`` dict of strings, satisfy it) and returns it; the tests of each
node family start their nodes and check its name, hardware id and level.
"""

from __future__ import annotations

from collections.abc import Callable

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from pylon_common import topics

from pylon_testing.recorder import TopicRecorder


def values_of(status: DiagnosticStatus) -> dict[str, str]:
    """Return a status's values as a dict."""
    return {v.key: v.value for v in status.values}


def node_status(ros_node: object, name: str,
                holds: Callable[[dict[str, str]], bool] | None = None,
                what: str = '') -> DiagnosticStatus:
    """Return the first status named ``name`` (whose values satisfy ``holds``) that comes."""
    key = topics.ROS_DIAGNOSTICS
    rec = TopicRecorder(ros_node).add('diag', topics.name(key), DiagnosticArray,
                                      topics.qos(key, reader=True))

    def wanted(status: DiagnosticStatus) -> bool:
        return status.name == name and (holds is None or holds(values_of(status)))
    try:
        message = rec.wait_for('diag', lambda m: any(wanted(s) for s in m.status),
                               what=what or f"{name}'s status on /diagnostics")
        return next(s for s in message.status if wanted(s))
    finally:
        rec.close()
