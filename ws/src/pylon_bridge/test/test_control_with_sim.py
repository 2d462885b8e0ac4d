"""The control flow of a lease end to end: test node → udp_bridge → pylon_sim and back."""

import itertools
import os
from pathlib import Path
import signal
import sys
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
from pylon_sim.admin import request
from pylon_testing.wait import spin_until
import pytest
from rclpy.qos import DurabilityPolicy, qos_profile_sensor_data, QoSProfile, ReliabilityPolicy

pytestmark = pytest.mark.integration

SAT = '5a7e1f0c3b2d4e6f8a9b0c1d2e3f4a5b'
TARGET = '0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e'
COMMAND = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
A = ControlAuthorityCommand
CLIENT = Path(__file__).with_name('wrench_client.py')
PHYSICS_STEP = 0.02


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


def start(ros_process, free_udp_port):
    state_port, command_port, admin_port = free_udp_port(), free_udp_port(), free_udp_port()
    ros_process(['udp_bridge', '--host', '127.0.0.1', '--port', str(state_port),
                 '--command-port', str(command_port)], name='bridge')
    ros_process(['pylon_sim', '--scenario', 'orbit', '--state-port', str(state_port),
                 '--command-port', str(command_port), '--admin-port', str(admin_port)],
                name='sim')
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


def test_lease_flow_wrench_feedback_and_sas(ros_process, free_udp_port, ros_node):
    admin = start(ros_process, free_udp_port)
    pilot = Pilot(ros_node)
    life = pilot.ready()
    state, _ = acquire(pilot)
    assert (state.state, state.reason) == (ControlAuthorityState.STATE_OWNED, 'lease_acquired')
    assert (state.controller_id, state.lease_id, state.vessel_id) == ('ctl', 'lease-1', SAT)
    assert state.sas_suppressed and state.generation == life.generation
    # commands faster than the timeout, with renewals well inside the lease
    start_at = time.monotonic()
    next_renew = start_at
    while time.monotonic() - start_at < 1.5:
        if time.monotonic() >= next_renew:
            send_authority(pilot, A.ACTION_RENEW, 'ctl', 'lease-1', duration=1.0,
                           suppress_sas=True)
            next_renew += 0.25
        pilot.wrench(torque_z=40.0)
        pilot.spin_for(0.05)
    feedback = [m for t, m in pilot.got['feedback'] if t >= start_at]
    assert feedback and all(m.accepted for m in feedback)
    last = feedback[-1]
    assert last.requested.torque.z == 40.0
    assert last.allocated.torque.z == pytest.approx(40.0, rel=1e-4)
    assert last.saturation_ratio < 1e-4 and not last.saturated
    assert last.achieved_quality == 'propulsion_measured_previous_physics_tick_wheels_excluded'
    twist = pilot.got['twist'][-1][1].twist.angular
    assert twist.z > 1e-4                       # the vessel turns about +Z, as commanded
    status = request(admin, {'cmd': 'status'})['control']
    assert status['owner'] == ['ctl', 'lease-1'] and status['sas_suppressed']
    report = pilot.wait_for('diag', lambda m: any(
        s.name == 'pylon_bridge: wrench allocation' and s.message == 'accepted'
        for s in m.status), start_at, 'the allocation in diagnostics')
    [allocation] = [s for s in report.status if s.name == 'pylon_bridge: wrench allocation']
    values = {kv.key: kv.value for kv in allocation.values}
    assert values['controller_id'] == 'ctl' and float(values['saturation_ratio']) < 1e-4
    since = send_authority(pilot, A.ACTION_RELEASE, 'ctl', 'lease-1')
    released = pilot.answer(since, lambda m: m.reason == 'lease_released', 'release')
    assert released.state == ControlAuthorityState.STATE_UNOWNED and not released.sas_suppressed
    assert request(admin, {'cmd': 'status'})['control']['applied_torque'] == [0.0, 0.0, 0.0]


def test_preemption_equal_priority_and_stale_sequences(ros_process, free_udp_port, ros_node):
    start(ros_process, free_udp_port)
    pilot = Pilot(ros_node)
    pilot.ready()
    first, _ = acquire(pilot, controller='first', lease='a', duration=5.0)
    assert first.reason == 'lease_acquired'
    equal, _ = acquire(pilot, controller='second', lease='b', duration=5.0,
                       expect='authority_held_by_higher_or_equal_priority')
    assert equal.controller_id == 'first'
    higher, _ = acquire(pilot, controller='third', lease='c', priority=5, duration=5.0)
    assert (higher.reason, higher.controller_id, higher.priority) == ('lease_acquired',
                                                                     'third', 5)
    # the preempted controller is no longer the owner
    since = time.monotonic()
    pilot.wrench(torque_z=1.0, controller='first', lease='a')
    refused = pilot.wait_for('feedback', lambda m: m.controller_id == 'first', since, 'refusal')
    assert (refused.accepted, refused.reason) == (False, 'lease_not_owned')
    # a repeated sequence and an older one are refused
    since = time.monotonic()
    pilot.wrench(torque_z=1.0, controller='third', lease='c', sequence=10)
    pilot.wait_for('feedback', lambda m: m.sequence == 10 and m.accepted, since, 'accepted')
    for sequence in (10, 9):
        since = time.monotonic()
        pilot.wrench(torque_z=1.0, controller='third', lease='c', sequence=sequence)
        stale = pilot.wait_for('feedback', lambda m, s=sequence: m.sequence == s and
                               not m.accepted, since, f'stale {sequence}')
        assert stale.reason == 'stale_sequence'
    # the same counter covers authority commands of the identity
    since = send_authority(pilot, A.ACTION_RENEW, 'third', 'c', sequence=10, duration=5.0)
    stale = pilot.answer(since, lambda m: m.reason == 'stale_sequence', 'stale renew refused')
    assert stale.controller_id == 'third'


def test_emergency_stop_by_anyone_survives_a_switch(ros_process, free_udp_port, ros_node):
    admin = start(ros_process, free_udp_port)
    pilot = Pilot(ros_node)
    pilot.ready()
    owner, _ = acquire(pilot, controller='pilot', lease='p', duration=5.0)
    assert owner.reason == 'lease_acquired'
    since = send_authority(pilot, A.ACTION_EMERGENCY_STOP, 'safety_operator', 'stop-1')
    stopped = pilot.answer(since, lambda m: m.reason == 'emergency_stop', 'e-stop')
    assert stopped.state == ControlAuthorityState.STATE_EMERGENCY_STOP
    assert stopped.emergency_stop and stopped.sas_suppressed
    since = time.monotonic()
    pilot.wrench(torque_z=5.0, controller='pilot', lease='p')
    refused = pilot.wait_for('feedback', lambda m: m.controller_id == 'pilot', since, 'refusal')
    assert not refused.accepted
    since = send_authority(pilot, A.ACTION_CLEAR_EMERGENCY_STOP, 'someone_else', 'other')
    mismatch = pilot.answer(since, lambda m: m.reason == 'emergency_stop_owner_mismatch',
                            'clear by another identity')
    assert mismatch.emergency_stop
    assert request(admin, {'cmd': 'switch', 'vessel': 'target'})['ok']
    switched = pilot.wait_for('life', lambda m: m.vessel_id == TARGET, 0.0, 'the switch')
    assert switched.generation >= 2
    assert request(admin, {'cmd': 'status'})['control']['emergency_stop']
    since = send_authority(pilot, A.ACTION_CLEAR_EMERGENCY_STOP, 'safety_operator', 'stop-1',
                           vessel=TARGET)
    cleared = pilot.answer(since, lambda m: m.reason == 'emergency_stop_cleared', 'clear')
    assert cleared.state == ControlAuthorityState.STATE_UNOWNED and not cleared.emergency_stop


def test_separation_is_refused_without_a_lease(ros_process, free_udp_port, ros_node):
    start(ros_process, free_udp_port)
    pilot = Pilot(ros_node)
    pilot.ready()
    since = time.monotonic()
    pilot.separation_pub.publish(SeparationCommand(
        vessel_id=SAT, controller_id='rogue', lease_id='none', sequence=1,
        id='decoupler_1100003_0', separate=True, operation_id='op-1'))
    refused = pilot.answer(since, lambda m: m.reason == 'lease_not_owned', 'the refusal')
    assert refused.state == ControlAuthorityState.STATE_UNOWNED


def test_a_killed_controller_stops_the_vessel_within_its_timeout(
        ros_process, free_udp_port, ros_node):
    admin = start(ros_process, free_udp_port)
    pilot = Pilot(ros_node)
    pilot.ready()
    client = ros_process([sys.executable, str(CLIENT), SAT], name='client')
    client.wait_for_output(r'commanding', timeout=20.0)
    pilot.until(lambda: any(m.accepted for _, m in pilot.got['feedback']), 'accepted wrenches')
    pilot.until(lambda: request(admin, {'cmd': 'status'})['control']['applied_torque'][2] > 0,
                'torque applied')
    os.killpg(os.getpgid(client.pid), signal.SIGKILL)
    pilot.until(lambda: request(admin, {'cmd': 'status'})['control']['zeroed_at'] is not None,
                'the wrench zeroed', timeout=5.0)
    control = request(admin, {'cmd': 'status'})['control']
    assert control['applied_torque'] == [0.0, 0.0, 0.0]
    assert control['zeroed_at'] - control['wrench_received_at'] <= 0.5 + PHYSICS_STEP + 1e-6
