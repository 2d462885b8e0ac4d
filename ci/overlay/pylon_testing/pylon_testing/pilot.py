"""A test node that flies the vessel through udp_bridge: lease, commands, and the answers.

``Pilot`` is a ``TopicRecorder`` of the control topics (authority state, wrench feedback,
lifecycle, body rates from ground truth, bridge diagnostics) with publishers for the
authority, wrench and separation commands, and one strictly increasing sequence per
controller and lease, as the seed's rule asks. ``acquire`` and ``send_authority`` return
the answer or the point after which to look for it.
"""

from __future__ import annotations

import itertools
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import TwistStamped
from pylon_common import topics
from pylon_interfaces.msg import (
    BodyWrenchCommand,
    ControlAuthorityCommand,
    ControlAuthorityState,
    SeparationCommand,
    VesselLifecycle,
    WrenchFeedback,
)
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from pylon_testing.node_status import values_of
from pylon_testing.recorder import Mark, TopicRecorder

SAT = '5a7e1f0c3b2d4e6f8a9b0c1d2e3f4a5b'
TARGET = '0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e'
COMMAND = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
# depth 10 on the reading side: no state change is lost between two spins
LATCHED = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
# a Best Effort stream read deep: a test process that falls behind for seconds on a busy
# machine still finds every sample the bridge sent (the sensor-data profile keeps 5)
STREAM = QoSProfile(depth=200, reliability=ReliabilityPolicy.BEST_EFFORT)
A = ControlAuthorityCommand


class Pilot(TopicRecorder):
    """A test node's view of the control topics, with helpers to command the vessel."""

    def __init__(self, node: Node, prefix: str = topics.DEFAULT_TOPIC_PREFIX) -> None:
        """Subscribe to the control topics under ``prefix``; create the command publishers."""
        super().__init__(node)
        self.prefix = prefix
        for name, key, msg_type, qos in (
                ('authority', 'control/authority/state', ControlAuthorityState, LATCHED),
                ('feedback', 'control/wrench_feedback', WrenchFeedback, COMMAND),
                ('life', 'lifecycle', VesselLifecycle, LATCHED),
                ('twist', 'ground_truth/twist_body', TwistStamped, STREAM),
                ('diag', 'diagnostics', DiagnosticArray, COMMAND)):
            self.add(name, topics.name(key, prefix), msg_type, qos)
        self.authority_pub = node.create_publisher(
            ControlAuthorityCommand, topics.name('control/authority/command', prefix), COMMAND)
        self.wrench_pub = node.create_publisher(
            BodyWrenchCommand, topics.name('control/wrench_command', prefix), COMMAND)
        self.separation_pub = node.create_publisher(
            SeparationCommand, topics.name('actuators/separation/command', prefix), COMMAND)
        self.sequences: dict[tuple[str, str], itertools.count] = {}

    def ready(self) -> VesselLifecycle:
        """Wait for the bridge's command subscriptions and an ACTIVE vessel; return it."""
        self.until(lambda: all(p.get_subscription_count() > 0 for p in (
            self.authority_pub, self.wrench_pub, self.separation_pub)), 'bridge subscriptions')
        return self.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE,
                             what='an ACTIVE vessel')

    def next_sequence(self, controller: str, lease: str) -> int:
        """Return the next sequence number of ``controller``'s ``lease``."""
        counter = self.sequences.setdefault((controller, lease), itertools.count(1))
        return next(counter)

    def answer(self, since: Mark, predicate: Any, what: str) -> ControlAuthorityState:
        """Return the first authority state after ``since`` that ``predicate`` accepts."""
        return self.wait_for('authority', predicate, since, what)

    def wrench(self, torque_z: float = 0.0, force_x: float = 0.0, controller: str = 'ctl',
               lease: str = 'lease-1', vessel: str = SAT, timeout: float = 0.5,
               sequence: int | None = None) -> BodyWrenchCommand:
        """Publish one BodyWrenchCommand (the next sequence unless given); return it."""
        msg = BodyWrenchCommand(vessel_id=vessel, controller_id=controller, lease_id=lease,
                                sequence=sequence or self.next_sequence(controller, lease),
                                timeout_sec=timeout)
        msg.wrench.torque.z, msg.wrench.force.x = torque_z, force_x
        self.wrench_pub.publish(msg)
        return msg

    def diagnostics(self, name: str, message: DiagnosticArray | None = None) -> dict:
        """Return the values of status ``name`` in ``message`` (default: the newest)."""
        message = message or self.last('diag')
        for status in message.status:
            if status.name == name:
                return values_of(status)
        raise KeyError(name)


def acquire(pilot: Pilot, expect: str = 'lease_acquired',
            **kwargs: Any) -> tuple[ControlAuthorityState, ControlAuthorityCommand]:
    """Send an acquire; return the answer: the owner's state with ``expect`` as reason.

    The mod repeats its last state at 10 Hz, so an answer is recognised by what it must
    say: the new owner for a success, the refusal reason with another owner otherwise.
    """
    since = pilot.mark()
    msg = A(action=A.ACTION_ACQUIRE, vessel_id=kwargs.get('vessel', SAT),
            controller_id=kwargs.get('controller', 'ctl'), lease_id=kwargs.get('lease', 'lease-1'),
            priority=kwargs.get('priority', 0), lease_duration_sec=kwargs.get('duration', 5.0),
            suppress_sas=kwargs.get('suppress_sas', True))
    msg.sequence = pilot.next_sequence(msg.controller_id, msg.lease_id)
    pilot.authority_pub.publish(msg)
    if expect == 'lease_acquired':
        return pilot.answer(since, lambda m: m.reason == expect and
                            m.controller_id == msg.controller_id,
                            f'{msg.controller_id} owning the lease'), msg
    return pilot.answer(since, lambda m: m.reason == expect, f'{expect}'), msg


def send_authority(pilot: Pilot, action: int, controller: str, lease: str,
                   sequence: int | None = None, vessel: str = SAT, **kwargs: Any) -> Mark:
    """Publish an authority command; return the point after which its answer comes."""
    since = pilot.mark()
    msg = A(action=action, vessel_id=vessel, controller_id=controller, lease_id=lease,
            lease_duration_sec=kwargs.get('duration', 5.0),
            suppress_sas=kwargs.get('suppress_sas', False),
            priority=kwargs.get('priority', 0),
            sequence=sequence if sequence is not None else pilot.next_sequence(controller, lease))
    pilot.authority_pub.publish(msg)
    return since
