"""VehicleManager without sockets: authority answers, wrench through filter and allocation."""

import ast
import inspect
import math

import numpy as np
from pylon_protocol import packets
from pylon_sim.game.world import World
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.mod import (
    typed_actuators,
    typed_common,
    typed_engines,
    typed_rcs_wheels,
    typed_separators,
    typed_servos,
)
from pylon_sim.mod.vehicle_manager import clamp_timeout, VehicleManager
import pytest

DT = 0.02


@pytest.fixture
def vessel():
    return World(load_scenario('orbit')).active


def identity(sequence, controller='ctl', lease='l1', vessel_id=None):
    return {'vesselId': vessel_id or '5a7e1f0c3b2d4e6f8a9b0c1d2e3f4a5b',
            'controllerId': controller, 'leaseId': lease, 'sequence': sequence}


def acquire(control, vessel, now=0.0):
    [(kind, state)] = control.command({'type': 'pylon_control_authority_command',
                                       'action': 'acquire', **identity(1), 'priority': 0,
                                       'leaseDurationSeconds': 2.0, 'suppressSas': True},
                                      vessel, now)
    assert kind == 'pylon_control_authority_state' and state['reason'] == 'lease_acquired'


def wrench(sequence, torque=(0.0, 0.0, 40.0), timeout=0.5, **who):
    return {'type': 'pylon_body_wrench_command', 'frame': 'base_link', **identity(sequence, **who),
            'force': [0.0, 0.0, 0.0], 'torque': list(torque), 'timeoutSeconds': timeout}


def test_an_accepted_wrench_acts_until_its_timeout(vessel):
    control = VehicleManager()
    acquire(control, vessel)
    assert control.command(wrench(2), vessel, 0.0) == []
    force, torque, out = control.tick(vessel, 0.02, DT)
    assert torque == pytest.approx([0.0, 0.0, 40.0], abs=1e-3)
    [(kind, status)] = out
    assert kind == 'pylon_wrench_status' and status['accepted']
    assert status['reason'] == 'accepted' and status['sequence'] == 2
    assert status['achieved']['torque'] == [0.0, 0.0, 0.0]      # the previous tick had none
    _, _, out = control.tick(vessel, 0.04, DT)
    # achieved = engine and RCS of the previous tick; the reaction wheel is excluded
    achieved, allocated = out[0][1]['achieved'], out[0][1]['allocated']
    assert allocated['torque'][2] == pytest.approx(40.0, abs=1e-3)
    assert achieved['torque'][2] == pytest.approx(torque[2] - control.last_allocation
                                                  .wheel_torque[2], abs=1e-6)
    force, torque, out = control.tick(vessel, 0.5, DT)
    assert not np.any(force) and not np.any(torque)
    assert [p['reason'] for _, p in out] == ['command_timeout']
    assert control.zeroed_at == 0.5 and control.wrench_received_at == 0.0


def test_refusals_are_answered(vessel):
    control = VehicleManager()
    [(kind, status)] = control.command(wrench(1), vessel, 0.0)
    assert kind == 'pylon_wrench_status' and not status['accepted']
    assert status['reason'] == 'lease_not_owned'
    force, torque, _ = control.tick(vessel, 0.02, DT)
    assert not np.any(force) and not np.any(torque)            # nothing moved
    acquire(control, vessel)
    [(_, status)] = control.command(wrench(1), vessel, 0.1)
    assert status['reason'] == 'stale_sequence'
    force, torque, _ = control.tick(vessel, 0.12, DT)
    assert not np.any(force) and not np.any(torque)
    engine = {'type': 'pylon_actuator_command', 'actuatorType': 'engine',
              'name': 'engine_1100004_0', **identity(5, controller='other'),
              'enabled': True, 'timeoutSeconds': 0.5, 'targetThrust': 10.0}
    [(kind, state)] = control.command(engine, vessel, 0.1)
    assert kind == 'pylon_control_authority_state' and state['reason'] == 'lease_not_owned'
    assert control.typed(vessel).state_fields('engine_1100004_0')['commandActive'] is False


def test_emergency_stop_cuts_the_output_at_once(vessel):
    control = VehicleManager()
    acquire(control, vessel)
    control.command(wrench(2), vessel, 0.0)
    control.tick(vessel, 0.02, DT)
    [(_, state)] = control.command({'type': 'pylon_control_authority_command',
                                    'action': 'emergency_stop',
                                    **identity(1, controller='ops', lease='stop')}, vessel, 0.03)
    assert state['reason'] == 'emergency_stop' and state['state'] == 2
    force, torque, _ = control.tick(vessel, 0.04, DT)
    assert not np.any(force) and not np.any(torque)


def test_lease_expiry_is_reported_and_stops_the_wrench(vessel):
    control = VehicleManager()
    acquire(control, vessel)
    control.command(wrench(2, timeout=10.0), vessel, 0.0)
    control.tick(vessel, 1.0, DT)
    force, torque, out = control.tick(vessel, 2.0, DT)
    assert [p['reason'] for _, p in out] == ['lease_expired']
    assert not np.any(torque)


def test_a_preempted_owner_s_commands_end_with_its_lease(vessel):
    control = VehicleManager()
    acquire(control, vessel)
    control.command(wrench(2, timeout=10.0), vessel, 0.0)
    engine = {'type': 'pylon_actuator_command', 'actuatorType': 'engine',
              'name': 'engine_1100004_0', **identity(3), 'enabled': True,
              'timeoutSeconds': 10.0, 'targetThrust': 30000.0}
    assert control.command(engine, vessel, 0.0) == []
    force, torque, _ = control.tick(vessel, 0.02, DT)
    assert force[0] == pytest.approx(30000.0) and torque[2] == pytest.approx(40.0, abs=1e-3)
    assert control.status()['overriding'] == [vessel.vessel_id]
    [(_, state)] = control.command({'type': 'pylon_control_authority_command',
                                    'action': 'acquire', **identity(1, 'boss', 'b'),
                                    'priority': 5, 'leaseDurationSeconds': 2.0,
                                    'suppressSas': True}, vessel, 0.03)
    assert (state['controllerId'], state['reason']) == ('boss', 'lease_acquired')
    # the wrench and the override were the first owner's: they end with its lease, not
    # with their timeouts under the new owner's
    force, torque, _ = control.tick(vessel, 0.04, DT)
    assert not np.any(force) and not np.any(torque)
    assert control.wrench is None and control.status()['overriding'] == []
    assert control.typed(vessel).state_fields('engine_1100004_0')['commandActive'] is False
    assert control.unbacked_steps == 0


def test_the_audit_counts_a_step_that_pushes_without_backing(vessel, monkeypatch):
    # the control keeps the invariant, so the audit sees nothing...
    control = VehicleManager()
    acquire(control, vessel)
    control.command(wrench(2, timeout=10.0), vessel, 0.0)
    for step in range(1, 10):
        control.tick(vessel, step * DT, DT)
    assert control.unbacked_steps == 0 and np.any(control.applied[1])
    control.tick(vessel, 2.0, DT)                        # the lease ran out: zero at once
    assert control.unbacked_steps == 0 and not np.any(control.applied[1])
    # ...and a control that forgot to drop the wrench with the lease is caught at once
    broken = VehicleManager()
    monkeypatch.setattr(broken, '_drop_commands', lambda: None)
    acquire(broken, vessel)
    broken.command(wrench(2, timeout=10.0), vessel, 0.0)
    broken.tick(vessel, 1.0, DT)
    broken.tick(vessel, 2.0, DT)
    broken.tick(vessel, 2.02, DT)
    assert broken.unbacked_steps == 2 and broken.unbacked_at == 2.0
    assert broken.status()['unbacked_steps'] == 2


def test_a_body_wrench_timeout_is_clamped_by_the_typed_commands_rule():
    # one rule for every command timeout (its cases: test_typed_actuators.test_timeout_clamp)
    assert clamp_timeout is typed_common.clamp_timeout


def test_a_gap_without_command_keeps_the_continuous_count_until_the_idle_reset(vessel):
    control = VehicleManager()
    acquire(control, vessel)
    control.command(wrench(2, timeout=0.05), vessel, 0.0)
    control.tick(vessel, 0.02, DT)
    active = control.safety.active_sec
    control.tick(vessel, 0.06, DT)                    # timed out: no command for one tick
    assert control.safety.active_sec == active > 0.0
    for step in range(25):                            # 0.5 s without a command
        control.tick(vessel, 0.08 + step * DT, DT)
    assert control.safety.active_sec == 0.0


def test_thrust_burns_propellant_and_moves_the_centre_of_mass(vessel):
    from pylon_sim.game.propellant import G0
    control = VehicleManager()
    acquire(control, vessel)
    before = vessel.spec.resource_totals(vessel.resources)
    mass_before, com_before = vessel.mass.mass, vessel.mass.com.copy()
    control.command(wrench(2, torque=(0.0, 0.0, 0.0), timeout=5.0) |
                    {'force': [2000.0, 0.0, 0.0]}, vessel, 0.0)
    expected_kg = 0.0
    for step in range(50):
        control.tick(vessel, 0.02 * (step + 1), DT)
        isp = {'engine': 345.0, 'rcs': 240.0}
        expected_kg += sum(t / (isp['engine'] * G0) * DT for t in control.engine_thrust.values())
        expected_kg += sum(t / (isp['rcs'] * G0) * DT for t in control.rcs_thrust.values())
    after = vessel.spec.resource_totals(vessel.resources)
    burned_kg = sum((before[r] - after[r]) * d for r, d in (
        ('LiquidFuel', 5.0), ('Oxidizer', 5.0), ('MonoPropellant', 4.0)))
    assert expected_kg > 0.0
    assert burned_kg == pytest.approx(expected_kg, rel=1e-9)
    assert vessel.mass.mass == pytest.approx(mass_before - burned_kg, rel=1e-9)
    assert not np.allclose(vessel.mass.com, com_before)


def test_sas_damps_the_rate_unless_a_lease_suppresses_it(vessel):
    from dataclasses import replace
    vessel.state = replace(vessel.state, body_rate=np.array([0.0, 0.0, 0.05]))
    vessel.sas = True
    control = VehicleManager()
    _, torque, _ = control.tick(vessel, 0.0, DT)
    expected = -(vessel.mass.inertia @ vessel.state.body_rate)
    assert torque == pytest.approx(expected, rel=1e-9)          # within the 5 kN·m wheel
    acquire(control, vessel)                                    # suppressSas: true
    _, torque, _ = control.tick(vessel, 0.1, DT)
    assert not np.any(torque)
    control.command({'type': 'pylon_control_authority_command', 'action': 'release',
                     **identity(2)}, vessel, 0.2)
    _, torque, _ = control.tick(vessel, 0.3, DT)
    assert torque == pytest.approx(expected, rel=1e-9)          # restored on release


CLUSTER_IDS = [f'engine_{pid}_0' for pid in (1200010, 1200011, 1200012, 1200013)]


def cluster_parts():
    """Return a probe, a tank and four gimballed 100 kN engines 0.8 m off the axis."""
    parts = [{'name': 'probe', 'persistent_id': 1200001, 'flight_id': 4200001, 'mass': 100,
              'shape': {'cylinder': [0.6, 0.3]}, 'resources': {'ElectricCharge': [10, 10]},
              'modules': [{'kind': 'command', 'index': 0}]},
             {'name': 'tank', 'persistent_id': 1200002, 'flight_id': 4200002, 'parent': 0,
              'position': [-1.5, 0, 0], 'mass': 200, 'shape': {'cylinder': [1.25, 2.0]},
              'resources': {'LiquidFuel': [900, 900], 'Oxidizer': [1100, 1100]}}]
    for i, (y, z) in enumerate(((0.8, 0), (-0.8, 0), (0, 0.8), (0, -0.8))):
        parts.append({'name': f'engine{i}', 'persistent_id': 1200010 + i,
                      'flight_id': 4200010 + i, 'parent': 1, 'position': [-3.0, y, z],
                      'mass': 300, 'shape': {'cylinder': [0.3, 0.5]},
                      'modules': [{'kind': 'engine', 'index': 0, 'max_thrust': 100000,
                                   'isp': 300, 'gimbal_range_deg': 5}]})
    return parts


def engine_command(name, sequence, roll):
    return {'type': 'pylon_actuator_command', 'actuatorType': 'engine', 'name': name,
            **identity(sequence), 'enabled': True, 'targetThrust': 100000.0,
            'hasGimbalCommand': True, 'gimbalPitch': 0.0, 'gimbalYaw': 0.0,
            'gimbalRoll': roll, 'timeoutSeconds': 0.5}


@pytest.mark.parametrize('roll', [1.0, -0.4])
def test_a_gimballed_cluster_rolls_the_vessel_as_its_geometry_says(tmp_path, roll):
    from pylon_testing.scenarios import write_scenario
    path = write_scenario(tmp_path, 'orbit', changes={'sat': {'parts': cluster_parts()}})
    cluster = World(load_scenario(path)).active
    control = VehicleManager()
    acquire(control, cluster)
    for sequence, name in enumerate(CLUSTER_IDS, start=2):
        assert control.command(engine_command(name, sequence, roll), cluster, 0.0) == []
    com = cluster.mass.com.copy()
    force, torque, _ = control.tick(cluster, 0.02, DT)
    # each thrust turns by roll x 5 deg towards its tangent: sum |r_perp| T sin(angle)
    angle = math.radians(5.0) * roll
    arms = [math.hypot(y - com[1], z - com[2]) for y, z in ((0.8, 0), (-0.8, 0), (0, 0.8),
                                                             (0, -0.8))]
    assert torque[0] == pytest.approx(sum(arms) * 1e5 * math.sin(angle), rel=1e-9)
    np.testing.assert_allclose(torque[1:], 0.0, atol=1e-6)
    np.testing.assert_allclose(force, [4e5 * math.cos(angle), 0.0, 0.0], atol=1e-6)
    fields = control.actuator_fields(cluster, CLUSTER_IDS[0])
    assert fields['gimbalRoll'] == roll and fields['thrust'] == 100000.0


def unknown_engine_command(sequence: int) -> dict:
    """Return an engine command, under the test lease, for an engine the vessel lacks."""
    return {'type': 'pylon_actuator_command', 'actuatorType': 'engine',
            'name': 'engine_999_0', **identity(sequence), 'enabled': True,
            'targetThrust': 10.0, 'timeoutSeconds': 0.5}


def test_typed_commands_for_missing_parts_or_out_of_range_are_refused_with_a_reason(vessel):
    control = VehicleManager()
    acquire(control, vessel)
    bad = unknown_engine_command(2)
    [(kind, state)] = control.command(bad, vessel, 0.1)
    assert kind == 'pylon_control_authority_state' and state['reason'] == 'unknown_actuator'
    servo = {'type': 'pylon_motor_command', 'name': 'no_such_servo', **identity(3),
             'partFlightId': 0, 'mode': 'position', 'hasEnabled': True, 'enabled': True,
             'hasPosition': True, 'position': 0.2, 'timeoutSeconds': 0.5}
    [(_, state)] = control.command(servo, vessel, 0.1)
    assert state['reason'] == 'unknown_actuator'
    wrong = {**bad, **identity(4), 'name': 'rcs_1100005_0'}     # an RCS named as an engine
    [(_, state)] = control.command(wrong, vessel, 0.1)
    assert state['reason'] == 'actuator_kind_mismatch'
    out_of_range = {**engine_command('engine_1100004_0', 5, 1.5), **identity(5)}
    [(_, state)] = control.command(out_of_range, vessel, 0.1)
    assert state['reason'] == 'invalid_command'
    assert control.refused[('pylon_actuator_command', 'invalid_command')] == 1
    assert control.refused[('pylon_actuator_command', 'unknown_actuator')] == 1
    assert control.refused[('pylon_motor_command', 'unknown_actuator')] == 1
    assert control.refused[('pylon_actuator_command', 'actuator_kind_mismatch')] == 1
    assert control.status()['refused']['pylon_actuator_command:unknown_actuator'] == 1
    force, torque, _ = control.tick(vessel, 0.12, DT)
    assert not np.any(force) and not np.any(torque)                  # nothing acts
    assert control.typed(vessel).state_fields('rcs_1100005_0')['commandActive'] is False


def test_a_typed_refusal_answers_its_command_but_is_not_the_repeated_authority_reason(vessel):
    control = VehicleManager()
    acquire(control, vessel)
    bad = unknown_engine_command(2)
    port = {'type': 'pylon_docking_port_command', 'name': 'no_such_port', 'action': 3,
            **identity(3)}
    answers = control.command(bad, vessel, 0.1) + control.command(port, vessel, 0.1)
    reasons = [state['reason'] for _, state in answers]
    assert reasons == ['unknown_actuator', 'unknown_docking_port']
    assert set(reasons) <= packets.TYPED_REFUSAL_REASONS
    for _, state in answers:        # a valid authority state, still owned
        assert packets.CONTROL_AUTHORITY_STATE(dict(state)) == state and state['state'] == 1
    assert control.last_reason == 'lease_acquired'     # the 10 Hz state keeps the event
    _, repeated = control.authority_state(vessel, 0.2, control.last_reason)
    assert repeated['reason'] == 'lease_acquired'
    control.command(wrench(4, controller='other', lease='x'), vessel, 0.3)
    assert control.last_reason == 'lease_acquired'     # a wrench refusal has its own status
    refused = control.command({**bad, **identity(5, controller='other', lease='x')},
                              vessel, 0.3)
    assert [state['reason'] for _, state in refused] == ['lease_not_owned']
    assert control.last_reason == 'lease_not_owned'    # an authority refusal is an event


def _returned_strings(function):
    """Return the string constants ``function`` returns (directly, by ``return '...'``)."""
    tree = ast.parse(inspect.getsource(function).lstrip())
    return {node.value.value for node in ast.walk(tree)
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)}


def test_every_typed_refusal_reason_is_in_the_protocol_set():
    typed = typed_actuators.TypedActuators
    handlers = (typed.command, typed.docking, *(family.command for family in (
        typed_engines.Engines, typed_rcs_wheels.Rcs, typed_rcs_wheels.Wheels,
        typed_separators.Separators, typed_servos.Servos)))
    produced = set().union(*(_returned_strings(h) for h in handlers))
    # ACCEPTED is returned by name; the vehicle manager refuses while a mission holds
    assert produced | {packets.SIMULATION_HELD} == packets.TYPED_REFUSAL_REASONS
    assert typed_common.ACCEPTED in packets.AUTHORITY_REASONS
    assert not packets.TYPED_REFUSAL_REASONS & packets.AUTHORITY_REASONS
    assert packets.AUTHORITY_STATE_REASONS == (packets.AUTHORITY_REASONS
                                               | packets.TYPED_REFUSAL_REASONS)


def test_the_clusters_roll_torque_spins_the_simulated_vessel(harness):
    h = harness('orbit', changes={'sat': {'parts': cluster_parts(),
                                          'angular_velocity': [0, 0, 0]}})
    h.frames(3)
    h.acquire()
    vessel = h.sim.world.active
    for name in CLUSTER_IDS:
        h.send('pylon_actuator_command', actuatorType='engine', name=name, enabled=True,
               targetThrust=100000.0, hasGimbalCommand=True, gimbalPitch=0.0,
               gimbalYaw=0.0, gimbalRoll=0.5, timeoutSeconds=2.0, **h.identity())
    h.frames(1)                    # the commands act from the next physics step on
    rate0, inertia0 = vessel.state.body_rate.copy(), vessel.mass.inertia[0, 0]
    h.run(0.5)
    # Euler about the principal X axis: the rate grows by torque / I_xx
    torque = 4 * 0.8 * 1e5 * math.sin(math.radians(5.0) * 0.5)
    inertia = 0.5 * (inertia0 + vessel.mass.inertia[0, 0])    # propellant burns meanwhile
    assert vessel.state.body_rate[0] - rate0[0] == pytest.approx(torque / inertia * 0.5,
                                                                 rel=2e-3)
    np.testing.assert_allclose(vessel.state.body_rate[1:], 0.0, atol=1e-9)
    assert not h.sim.control.refused
