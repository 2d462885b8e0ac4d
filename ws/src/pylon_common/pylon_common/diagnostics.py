"""A node's status on ``/diagnostics``, the ROS convention, the same way for every node.

The diagnostic aggregator and ``rqt_robot_monitor`` read ``/diagnostics``
(``topics.ROS_DIAGNOSTICS``): ``diagnostic_msgs/DiagnosticArray`` messages whose statuses
each carry a name, a hardware_id and a level. ``NodeDiagnostics`` publishes one node's status
there every ``period_sec`` of steady time (also while a game clock stands still), named
after the node, with the ``hardware_id`` the node gives (what it serves: the vessel's topic
prefix, the live view's address, the recording's file), from a ``report()`` the node
keeps in its own terms: ``Report(level, message, values)``. The bridge and the setpoint
controller, which have a diagnostics topic of their own too, publish their arrays on both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType

from pylon_common import topics

OK, WARN, ERROR = DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR
PERIOD_SEC = 1.0
"""Seconds (steady) between two statuses of a node."""


@dataclass(frozen=True)
class Report:
    """What a node says of itself: a level (``OK``, ``WARN``, ``ERROR``), a line, values."""

    level: bytes                    # DiagnosticStatus's byte constants
    message: str
    values: Mapping[str, object] = field(default_factory=dict)


def status(name: str, hardware_id: str, report: Report) -> DiagnosticStatus:
    """Return the ``DiagnosticStatus`` of a report (values as strings, in their order)."""
    return DiagnosticStatus(level=report.level, name=name, message=report.message,
                            hardware_id=hardware_id,
                            values=[KeyValue(key=str(k), value=str(v))
                                    for k, v in report.values.items()])


class NodeDiagnostics:
    """Publish a node's status on ``/diagnostics`` every ``period_sec`` (steady time)."""

    def __init__(self, node, hardware_id: str, report: Callable[[], Report],
                 period_sec: float = PERIOD_SEC) -> None:
        """Create the publisher and the timer on ``node``; name the status after the node."""
        self.node, self.hardware_id, self.report = node, hardware_id, report
        key = topics.ROS_DIAGNOSTICS
        self.publisher = node.create_publisher(DiagnosticArray, topics.name(key),
                                               topics.qos(key))
        self.timer = node.create_timer(period_sec, self.publish,
                                       clock=Clock(clock_type=ClockType.STEADY_TIME))

    def publish(self) -> DiagnosticArray:
        """Publish the node's status now; return the array."""
        array = DiagnosticArray(status=[status(self.node.get_name(), self.hardware_id,
                                               self.report())])
        array.header.stamp = self.node.get_clock().now().to_msg()
        self.publisher.publish(array)
        return array
