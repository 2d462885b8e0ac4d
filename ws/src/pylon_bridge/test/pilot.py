"""A test node that flies the vessel through udp_bridge: lease, commands, answers."""

import itertools
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import TwistStamped
from pylon_interfaces.msg import (
    BodyWrenchCommand,
    ControlAuthorityCommand,
    ControlAuthorityState,
    SeparationCommand,
    VesselLifecycle,
    WrenchFeedback,
)
from pylon_testing.wait import spin_until
from rclpy.qos import DurabilityPolicy, qos_profile_sensor_data, QoSProfile, ReliabilityPolicy

SAT = '5a7e1f0c3b2d4e6f8a9b0c1d2e3f4a5b'
TARGET = '0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e'
COMMAND = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
A = ControlAuthorityCommand


class Pilot:
    """A test node's view of the control topics, with helpers to command the vessel."""

    def __init__(self, node):
        self.node = node
        self.got = {'authority': [], 'feedback': [], 'life': [], 'twist': [], 'diag': []}
        self.subs = [
            node.create_subscription(ControlAuthorityState, '/ksp_vessel/control/authority/state',
                                     self._keep('authority'), LATCHED),
            node.create_subscription(WrenchFeedback, '/ksp_vessel/control/wrench_feedback',
                                     self._keep('feedback'), COMMAND),
            node.create_subscription(VesselLifecycle, '/ksp_vessel/lifecycle',
                                     self._keep('life'), LATCHED),
            node.create_subscription(TwistStamped, '/ksp_vessel/ground_truth/twist_body',
                                     self._keep('twist'), qos_profile_sensor_data),
            node.create_subscription(DiagnosticArray, '/pylon/diagnostics', self._keep('diag'),
                                     COMMAND)]
        self.authority_pub = node.create_publisher(
            ControlAuthorityCommand, '/ksp_vessel/control/authority/command', COMMAND)
        self.wrench_pub = node.create_publisher(
            BodyWrenchCommand, '/ksp_vessel/control/wrench_command', COMMAND)
        self.separation_pub = node.create_publisher(
            SeparationCommand, '/ksp_vessel/actuators/separation/command', COMMAND)
        self.sequences = {}

    def _keep(self, name):
        return lambda msg: self.got[name].append((time.monotonic(), msg))

    def until(self, condition, what, timeout=15.0):
        spin_until(self.node, condition, timeout, what=what)

    def spin_for(self, seconds):
        deadline = time.monotonic() + seconds
        self.until(lambda: time.monotonic() >= deadline, f'{seconds} s', timeout=seconds + 5.0)

    def wait_for(self, name, predicate, since, what, timeout=15.0):
        found = []

        def check():
            found[:] = [m for t, m in self.got[name] if t >= since and predicate(m)]
            return bool(found)
        self.until(check, what, timeout)
        return found[0]

    def ready(self):
        self.until(lambda: all(p.get_subscription_count() > 0 for p in (
            self.authority_pub, self.wrench_pub, self.separation_pub)), 'bridge subscriptions')
        return self.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE, 0.0,
                             'an ACTIVE vessel', timeout=20.0)

    def next_sequence(self, controller, lease):
        counter = self.sequences.setdefault((controller, lease), itertools.count(1))
        return next(counter)

    def answer(self, since, predicate, what):
        return self.wait_for('authority', predicate, since, what)

    def wrench(self, torque_z=0.0, force_x=0.0, controller='ctl', lease='lease-1', vessel=SAT,
               timeout=0.5, sequence=None):
        msg = BodyWrenchCommand(vessel_id=vessel, controller_id=controller, lease_id=lease,
                                sequence=sequence or self.next_sequence(controller, lease),
                                timeout_sec=timeout)
        msg.wrench.torque.z, msg.wrench.force.x = torque_z, force_x
        self.wrench_pub.publish(msg)
        return msg


def start(ros_process, free_udp_port, scenario='orbit', sim_args=(), bridge_args=()):
    state_port, command_port, admin_port = free_udp_port(), free_udp_port(), free_udp_port()
    ros_process(['udp_bridge', '--host', '127.0.0.1', '--port', str(state_port),
                 '--command-port', str(command_port), *bridge_args], name='bridge')
    ros_process(['pylon_sim', '--scenario', scenario, '--state-port', str(state_port),
                 '--command-port', str(command_port), '--admin-port', str(admin_port),
                 *sim_args], name='sim')
    return admin_port


def acquire(pilot, expect='lease_acquired', **kwargs):
    """Send an acquire; return the answer: the owner's state with ``expect`` as reason.

    The mod repeats its last state at 10 Hz, so an answer is recognised by what it must
    say: the new owner for a success, the refusal reason with another owner otherwise.
    """
    since = time.monotonic()
    msg = A(action=A.ACTION_ACQUIRE, vessel_id=kwargs.get('vessel', SAT),
            controller_id=kwargs.get('controller', 'ctl'), lease_id=kwargs.get('lease', 'lease-1'),
            priority=kwargs.get('priority', 0), lease_duration_sec=kwargs.get('duration', 1.0),
            suppress_sas=kwargs.get('suppress_sas', True))
    msg.sequence = pilot.next_sequence(msg.controller_id, msg.lease_id)
    pilot.authority_pub.publish(msg)
    if expect == 'lease_acquired':
        return pilot.answer(since, lambda m: m.reason == expect and
                            m.controller_id == msg.controller_id,
                            f'{msg.controller_id} owning the lease'), msg
    return pilot.answer(since, lambda m: m.reason == expect, f'{expect}'), msg


def send_authority(pilot, action, controller, lease, sequence=None, vessel=SAT, **kwargs):
    since = time.monotonic()
    msg = A(action=action, vessel_id=vessel, controller_id=controller, lease_id=lease,
            lease_duration_sec=kwargs.get('duration', 1.0),
            suppress_sas=kwargs.get('suppress_sas', False),
            priority=kwargs.get('priority', 0),
            sequence=sequence if sequence is not None else pilot.next_sequence(controller, lease))
    pilot.authority_pub.publish(msg)
    return since
