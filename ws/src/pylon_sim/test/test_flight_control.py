"""Stock flight inputs: lease-checked, torque of the documented sign, timeouts, record."""

import math

import numpy as np
from pylon_sim.game.world import World
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.mod.vehicle_manager import VehicleManager
import pytest

DT = 0.02
VID = '5a7e1f0c3b2d4e6f8a9b0c1d2e3f4a5b'       # the orbit scenario's sat
WHEEL = 5000.0                                 # N·m per axis, its reaction wheel


@pytest.fixture
def vessel():
    return World(load_scenario('orbit')).active


def identity(sequence, controller='ctl', lease='l1'):
    return {'vesselId': VID, 'controllerId': controller, 'leaseId': lease, 'sequence': sequence}


def owned(vessel, now=0.0) -> VehicleManager:
    control = VehicleManager()
    [(_, state)] = control.command({'type': 'pylon_control_authority_command',
                                    'action': 'acquire', **identity(1), 'priority': 0,
                                    'leaseDurationSeconds': 5.0, 'suppressSas': False},
                                   vessel, now)
    assert state['reason'] == 'lease_acquired'
    return control


def flight(sequence, pitch=0.0, yaw=0.0, roll=0.0, timeout=0.5, gear=False, **who):
    return {'type': 'pylon_flight_control_command', **identity(sequence, **who),
            'landingGear': gear, 'timeoutSeconds': timeout,
            'pitch': pitch, 'yaw': yaw, 'roll': roll}


def wrench(sequence, torque=(0.0, 0.0, 40.0)):
    return {'type': 'pylon_body_wrench_command', 'frame': 'base_link', **identity(sequence),
            'force': [0.0, 0.0, 0.0], 'torque': list(torque), 'timeoutSeconds': 0.5}


# base_link torque axis and sign of a positive stock input: +X = roll +, +Y = pitch -,
# +Z = yaw -
AXES = {'roll': (0, 1.0), 'pitch': (1, -1.0), 'yaw': (2, -1.0)}


@pytest.mark.parametrize('name', sorted(AXES))
@pytest.mark.parametrize('value', [1.0, -1.0, 0.5])
def test_each_input_turns_the_vessel_about_its_axis_with_the_documented_sign(vessel, name,
                                                                           value):
    control = owned(vessel)
    assert control.command(flight(2, **{name: value}), vessel, 0.0) == []
    _, torque, out = control.tick(vessel, DT, DT)
    axis, sign = AXES[name]
    assert out == []                                         # no wrench status
    assert math.copysign(1.0, torque[axis]) == math.copysign(1.0, sign * value)
    # the reaction wheel's share is exactly input × its torque; the RCS adds more
    assert control.wheel_torque[axis] == pytest.approx(sign * value * WHEEL)
    assert abs(torque[axis]) > abs(value) * WHEEL
    others = [abs(torque[i]) for i in range(3) if i != axis]
    assert max(others) < 0.05 * abs(torque[axis])


def test_torque_is_input_times_the_available_torque(vessel):
    full, half = owned(vessel), owned(vessel)
    full.command(flight(2, yaw=1.0), vessel, 0.0)
    half.command(flight(2, yaw=0.5), vessel, 0.0)
    _, torque_full, _ = full.tick(vessel, DT, DT)
    _, torque_half, _ = half.tick(vessel, DT, DT)
    assert torque_half == pytest.approx(0.5 * torque_full, rel=1e-3, abs=1e-2)
    assert full.rcs_thrust and sum(full.rcs_thrust.values()) > 0.0      # RCS helps


def test_inputs_stop_at_the_timeout_and_the_gear_stays(vessel):
    control = owned(vessel)
    control.command(flight(2, pitch=1.0, timeout=0.1, gear=True), vessel, 0.0)
    for now in (0.02, 0.04, 0.06, 0.08):
        _, torque, _ = control.tick(vessel, now, DT)
        assert torque[1] < -WHEEL
    _, torque, _ = control.tick(vessel, 0.1, DT)          # the timeout is reached
    assert not np.any(torque) and control.flight.command is None
    assert control.flight.gear[VID] is True
    fields = control.flight_fields(0.3)
    assert fields['appliedInputValid'] and not fields['flightCommandActive']
    assert fields['appliedPitch'] == 1.0 and fields['inputAtLimit']
    assert fields['appliedInputAge'] == pytest.approx(0.3 - 0.08)


def test_a_flight_command_and_a_wrench_cancel_each_other(vessel):
    control = owned(vessel)
    control.command(wrench(2), vessel, 0.0)
    control.command(flight(3, roll=1.0), vessel, 0.0)
    assert control.wrench is None
    _, torque, out = control.tick(vessel, DT, DT)
    assert out == [] and torque[0] > WHEEL
    control.command(wrench(4), vessel, DT)
    assert control.flight.command is None
    _, torque, out = control.tick(vessel, 2 * DT, DT)
    assert [p['reason'] for _, p in out] == ['accepted']


def test_refused_flight_commands_are_answered_and_counted(vessel):
    control = VehicleManager()
    [(kind, state)] = control.command(flight(2, roll=1.0), vessel, 0.0)
    assert kind == 'pylon_control_authority_state' and state['reason'] == 'lease_not_owned'
    control = owned(vessel)
    control.command(flight(5, roll=1.0), vessel, 0.0)
    [(_, state)] = control.command(flight(5, roll=-1.0), vessel, 0.0)
    assert state['reason'] == 'stale_sequence'
    assert control.flight.command.roll == 1.0                  # the refused one changed nothing
    [(_, state)] = control.command(flight(6, roll=1.0, controller='other'), vessel, 0.0)
    assert state['reason'] == 'lease_not_owned'
    assert control.refused == {('pylon_flight_control_command', 'stale_sequence'): 1,
                               ('pylon_flight_control_command', 'lease_not_owned'): 1}


def test_lease_loss_and_emergency_stop_clear_the_inputs(vessel):
    control = owned(vessel)
    control.command(flight(2, roll=1.0, timeout=1.0), vessel, 0.0)
    control.command({'type': 'pylon_control_authority_command', 'action': 'emergency_stop',
                     **identity(3)}, vessel, 0.0)
    _, torque, _ = control.tick(vessel, DT, DT)
    assert not np.any(torque) and control.flight.command is None
    control = owned(vessel)
    control.command(flight(2, roll=1.0, timeout=1.0), vessel, 4.9)
    _, torque, _ = control.tick(vessel, 5.0, DT)                # the 5 s lease ran out
    assert not np.any(torque) and not control.flight_fields(5.0)['flightCommandActive']


def applied(h) -> dict:
    return h.of('pylon_flight_state')[-1]


def test_flight_state_reports_the_applied_inputs(harness):
    h = harness()
    h.run(0.2)
    assert not applied(h)['appliedInputValid']
    h.acquire()
    h.send('pylon_flight_control_command', landingGear=False, timeoutSeconds=0.5,
           pitch=0.25, yaw=-1.0, roll=0.0, **h.identity())
    sequence = h.sequence
    h.run(0.2)
    state = applied(h)
    assert state['appliedInputValid'] and state['flightCommandActive']
    assert (state['appliedPitch'], state['appliedYaw'], state['appliedRoll']) == (
        0.25, -1.0, 0.0)
    assert state['appliedInputSequence'] == sequence and state['inputAtLimit']
    assert 0.0 <= state['appliedInputAge'] <= 0.021
    h.run(0.5)                                                  # past the timeout
    state = applied(h)
    assert state['appliedInputValid'] and not state['flightCommandActive']
    assert state['appliedInputAge'] > 0.15
    # the body turned the documented way: yaw -1 is +Z rotation
    assert h.sim.world.active.state.body_rate[2] > 0.0
    h.sim.admin({'cmd': 'switch', 'vessel': 'target'})           # a new runtime session
    h.run(0.1)
    assert not applied(h)['appliedInputValid']


def test_bad_flight_commands_are_rejected_whole_and_counted(harness):
    h = harness()
    h.acquire()
    good = {'type': 'pylon_flight_control_command', 'version': 1, 'landingGear': False,
            'timeoutSeconds': 0.5, 'pitch': 0.0, 'yaw': 0.0, 'roll': 0.5}
    for change in ({'timeoutSeconds': 2.0}, {'timeoutSeconds': 0.01}, {'roll': math.nan},
                   {'roll': 1.5}, {'roll': '1'}, {'landingGear': 1}, {'sequence': 0}):
        h.send_raw({**good, **h.identity(), **change})
    h.frames(1)
    assert h.sim.control.flight.command is None
    assert dict(h.sim.stats.command_rejected) == {'out_of_range': 4, 'non_finite': 1,
                                                  'bad_type': 2}
