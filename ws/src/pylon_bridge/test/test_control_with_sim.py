"""The control flow of a lease end to end: test node → udp_bridge → pylon_sim and back.

The tests on the orbit scenario share one simulator and bridge (``stack``: lean, at real
time: the test plays the controller), each from the scenario's start in a runtime session
of its own (``session``), with controller and lease ids no other test of the module uses.
The SAS tests need the sat turning at the start: each starts its stack in a ROS domain of
its own (``own_stack``), so the shared one can stay up meanwhile.
"""

import math
import os
import signal

from pylon_interfaces.msg import ControlAuthorityState, SeparationCommand
from pylon_testing.pilot import A, acquire, Pilot, SAT, send_authority, TARGET
from pylon_testing.scenarios import write_scenario
import pytest

pytestmark = pytest.mark.integration

PHYSICS_STEP = 0.02


@pytest.fixture(scope='module')
def stack(module_sim_stack, tmp_path_factory):
    """Return the module's simulator and bridge: the orbit scenario without LiDAR and camera."""
    return module_sim_stack(write_scenario(tmp_path_factory.mktemp('scenario'), 'orbit'))


@pytest.fixture
def ros_node(shared_ros_node):
    """Return the module's test node (``shared_ros_node``), in the shared stack's domain."""
    return shared_ros_node


# -- the SAS tests, each with a stack of its own (the sat turning at the start) --------

SAS_SPIN = 0.05      # rad/s about base_link +Z: the sat turns, its SAS switch off at the start


def _rate(pilot, message=None):
    w = (message or pilot.last('twist')).twist.angular
    return math.sqrt(w.x ** 2 + w.y ** 2 + w.z ** 2)


@pytest.mark.parametrize('loss', ['lease_expired', 'preempted'])
def test_sas_is_given_back_when_the_lease_ends(own_stack, lean_scenario, loss):
    stack, node = own_stack(lean_scenario(changes={'sat': {'angular_velocity': [0.0, 0.0,
                                                                                 SAS_SPIN]}}))
    pilot = Pilot(node)
    pilot.ready()
    pilot.wait_for('twist', what='the body rate')
    owned, _ = acquire(pilot, duration=3.0, suppress_sas=True)      # never renewed
    assert owned.sas_suppressed
    # the player turns SAS on: the lease holds it off, nothing damps the turn
    control = stack.admin('sas', enabled=True)['control']
    assert control['sas_suppressed'] and control['sas_torque'] == [0.0, 0.0, 0.0]
    assert _rate(pilot) == pytest.approx(SAS_SPIN, abs=1e-3)
    since = pilot.mark()
    if loss == 'preempted':
        given_back, _ = acquire(pilot, controller='boss', lease='b', priority=5,
                                duration=10.0, suppress_sas=False)
    else:
        given_back = pilot.answer(since, lambda m: m.reason == 'lease_expired',
                                  'the lease run out')
    assert not given_back.sas_suppressed and not given_back.emergency_stop
    control = stack.control()
    assert not control['sas_suppressed']
    assert control['sas_torque'][2] < 0.0 and control['unbacked_steps'] == 0  # against the turn
    # SAS damps the rate with its 1 s time constant: after 2 s of KSP time e^-2 of it is left
    damped = pilot.wait_stamp_span('twist', 2.0, pilot.after('authority', given_back))
    rates = [_rate(pilot, m) for m in damped]
    assert rates[-1] < SAS_SPIN * math.exp(-1.0), rates[-1]
    assert all(b <= a + 1e-6 for a, b in zip(rates, rates[1:]))


# -- the tests on the shared stack ---------------------------------------------------------

def test_lease_flow_wrench_feedback_and_sas(stack, session, ros_node):
    pilot = Pilot(ros_node)
    life = pilot.ready()
    # a 5 s lease: renewed after every fifth round trip, which may take seconds on a busy
    # machine (the lease runs on the simulator's wall clock)
    state, _ = acquire(pilot, duration=5.0)
    assert (state.state, state.reason) == (ControlAuthorityState.STATE_OWNED, 'lease_acquired')
    assert (state.controller_id, state.lease_id, state.vessel_id) == ('ctl', 'lease-1', SAT)
    assert state.sas_suppressed and state.generation == life.generation
    # commands faster than the timeout, with a renewal well inside the lease after every
    # fifth, for 1.5 s of the simulator's clock
    since = pilot.mark()
    flown = stack.clock_reached(1.5)
    sent = 0
    while not flown():
        if sent % 5 == 0:
            send_authority(pilot, A.ACTION_RENEW, 'ctl', 'lease-1', duration=5.0,
                           suppress_sas=True)
        mark = pilot.mark()
        msg = pilot.wrench(torque_z=40.0)
        sent += 1
        pilot.wait_for('feedback', lambda m, s=msg.sequence: m.sequence == s, mark,
                       'feedback on the wrench')
    feedback = pilot.messages('feedback', since)
    assert feedback and all(m.accepted for m in feedback)
    last = feedback[-1]
    assert last.requested.torque.z == 40.0
    assert last.allocated.torque.z == pytest.approx(40.0, rel=1e-4)
    assert last.saturation_ratio < 1e-4 and not last.saturated
    assert last.achieved_quality == 'propulsion_measured_previous_physics_tick_wheels_excluded'
    pilot.wait_for('twist', lambda m: m.twist.angular.z > 1e-4, since,
                   'the vessel turning about +Z, as commanded')
    control = stack.control()
    assert control['owner'] == ['ctl', 'lease-1'] and control['sas_suppressed']
    report = pilot.wait_for('diag', lambda m: any(
        s.name == 'pylon_bridge: wrench allocation' and s.message == 'accepted'
        for s in m.status), since, 'the allocation in diagnostics')
    values = pilot.diagnostics('pylon_bridge: wrench allocation', report)
    assert values['controller_id'] == 'ctl' and float(values['saturation_ratio']) < 1e-4
    since = send_authority(pilot, A.ACTION_RELEASE, 'ctl', 'lease-1')
    released = pilot.answer(since, lambda m: m.reason == 'lease_released', 'release')
    assert released.state == ControlAuthorityState.STATE_UNOWNED and not released.sas_suppressed
    # the release is answered before the next physics step applies it: zero by then, on
    # the simulator's clock
    pilot.until(lambda: stack.control()['applied_torque'] == [0.0, 0.0, 0.0],
                'no torque after the release')
    control = stack.control()
    assert control['zeroed_at'] - control['authority_command_at'] <= PHYSICS_STEP + 1e-6


def test_preemption_equal_priority_and_stale_sequences(session, ros_node):
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
    since = pilot.mark()
    pilot.wrench(torque_z=1.0, controller='first', lease='a')
    refused = pilot.wait_for('feedback', lambda m: m.controller_id == 'first', since, 'refusal')
    assert (refused.accepted, refused.reason) == (False, 'lease_not_owned')
    # a repeated sequence and an older one are refused
    since = pilot.mark()
    pilot.wrench(torque_z=1.0, controller='third', lease='c', sequence=10)
    pilot.wait_for('feedback', lambda m: m.sequence == 10 and m.accepted, since, 'accepted')
    for sequence in (10, 9):
        since = pilot.mark()
        pilot.wrench(torque_z=1.0, controller='third', lease='c', sequence=sequence)
        stale = pilot.wait_for('feedback', lambda m, s=sequence: m.sequence == s and
                               not m.accepted, since, f'stale {sequence}')
        assert stale.reason == 'stale_sequence'
    # the same counter covers authority commands of the identity
    since = send_authority(pilot, A.ACTION_RENEW, 'third', 'c', sequence=10, duration=5.0)
    stale = pilot.answer(since, lambda m: m.reason == 'stale_sequence', 'stale renew refused')
    assert stale.controller_id == 'third'


def test_emergency_stop_by_anyone_survives_a_switch(stack, session, ros_node):
    pilot = Pilot(ros_node)
    active = pilot.ready()
    owner, _ = acquire(pilot, controller='pilot', lease='p', duration=5.0)
    assert owner.reason == 'lease_acquired'
    since = send_authority(pilot, A.ACTION_EMERGENCY_STOP, 'safety_operator', 'stop-1')
    stopped = pilot.answer(since, lambda m: m.reason == 'emergency_stop', 'e-stop')
    assert stopped.state == ControlAuthorityState.STATE_EMERGENCY_STOP
    assert stopped.emergency_stop and stopped.sas_suppressed
    since = pilot.mark()
    pilot.wrench(torque_z=5.0, controller='pilot', lease='p')
    refused = pilot.wait_for('feedback', lambda m: m.controller_id == 'pilot', since, 'refusal')
    assert not refused.accepted
    since = send_authority(pilot, A.ACTION_CLEAR_EMERGENCY_STOP, 'someone_else', 'other')
    mismatch = pilot.answer(since, lambda m: m.reason == 'emergency_stop_owner_mismatch',
                            'clear by another identity')
    assert mismatch.emergency_stop
    stack.admin('switch', vessel='target')
    switched = pilot.wait_for('life', lambda m: m.vessel_id == TARGET, what='the switch')
    assert switched.generation > active.generation
    assert stack.control()['emergency_stop']
    since = send_authority(pilot, A.ACTION_CLEAR_EMERGENCY_STOP, 'safety_operator', 'stop-1',
                           vessel=TARGET)
    cleared = pilot.answer(since, lambda m: m.reason == 'emergency_stop_cleared', 'clear')
    assert cleared.state == ControlAuthorityState.STATE_UNOWNED and not cleared.emergency_stop


def test_separation_is_refused_without_a_lease(session, ros_node):
    pilot = Pilot(ros_node)
    pilot.ready()
    since = pilot.mark()
    pilot.separation_pub.publish(SeparationCommand(
        vessel_id=SAT, controller_id='rogue', lease_id='none', sequence=1,
        id='decoupler_1100003_0', separate=True, operation_id='op-1'))
    refused = pilot.answer(since, lambda m: m.reason == 'lease_not_owned', 'the refusal')
    assert refused.state == ControlAuthorityState.STATE_UNOWNED


def test_a_killed_controller_stops_the_vessel_within_its_timeout(stack, session, ros_process,
                                                                ros_node):
    pilot = Pilot(ros_node)
    pilot.ready()
    client = ros_process(['wrench_client', SAT], name='client')
    client.wait_for_output(r'commanding', timeout=60.0)
    pilot.wait_for('feedback', lambda m: m.accepted, what='accepted wrenches')
    pilot.until(lambda: stack.control()['applied_torque'][2] > 0, 'torque applied')
    os.killpg(os.getpgid(client.pid), signal.SIGKILL)
    # zero once the last wrench received timed out (one late before the kill on a busy
    # machine may have zeroed it for a while too: the client sent again after that)
    pilot.until(lambda: stack.control()['applied_torque'] == [0.0, 0.0, 0.0],
                'the wrench zeroed')
    control = stack.control()
    assert control['applied_torque'] == [0.0, 0.0, 0.0]
    assert control['wrench_received_at'] < control['zeroed_at']
    assert control['zeroed_at'] - control['wrench_received_at'] <= 0.5 + PHYSICS_STEP + 1e-6
