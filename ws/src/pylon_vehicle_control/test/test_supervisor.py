"""Tests of the pure arming logic."""

from pylon_vehicle_control.control_law import MODE_ATTITUDE_HOLD, MODE_IDLE, Setpoint
from pylon_vehicle_control.supervisor import Supervisor, validate_setpoint

Q = (0.0, 0.0, 0.0, 1.0)
Z = (0.0, 0.0, 0.0)


def sp(mode=MODE_ATTITUDE_HOLD, q=Q):
    setpoint, reason = validate_setpoint(mode, Z, q, Z, Z)
    assert setpoint is not None, reason
    return setpoint


def test_validation_reasons():
    assert validate_setpoint(7, Z, Q, Z, Z) == (None, 'unknown_mode:7')
    assert validate_setpoint(2, (float('nan'), 0, 0), Q, Z, Z) == (None, 'non_finite')
    setpoint, reason = validate_setpoint(2, Z, (0, 0, 0, 1.01), Z, Z)
    assert setpoint is None and reason.startswith('non_unit_quaternion')
    setpoint, _ = validate_setpoint(2, Z, (0, 0, 0, 1.0005), Z, Z)
    assert setpoint.orientation == (0.0, 0.0, 0.0, 1.0)


def armed(**kwargs) -> Supervisor:
    """Return a supervisor that took its first MODE_IDLE."""
    s = Supervisor(**kwargs)
    assert s.on_setpoint(sp(MODE_IDLE), 0.0).accepted and s.armed
    return s


def test_a_new_supervisor_flies_only_after_a_mode_idle():
    s = Supervisor()
    assert not s.armed and s.disarm_reason == 'started'
    decision = s.on_setpoint(sp(), 0.0)
    assert (decision.accepted, decision.reason) == (False, 'not_armed_send_idle')
    assert s.active(0.1)[0] == Setpoint()
    assert s.on_setpoint(sp(MODE_IDLE), 0.2).accepted and s.armed and s.disarm_reason == ''
    s.on_input(0.2)
    assert s.on_setpoint(sp(), 0.3).accepted
    assert s.active(0.35)[0].mode == MODE_ATTITUDE_HOLD


def test_bad_setpoint_keeps_current_behaviour():
    s = armed()
    assert s.on_setpoint(sp(), 0.0).accepted
    s.on_input(0.0)
    serial = s.serial
    bad, reason = validate_setpoint(2, Z, (0, 0, 0, 2.0), Z, Z)
    decision = s.on_setpoint(bad, 0.1, reason)
    assert not decision.accepted and decision.reason.startswith('non_unit_quaternion')
    assert s.active(0.2) == (sp(), serial)


def test_identical_setpoints_keep_the_serial():
    s = armed()
    s.on_setpoint(sp(), 0.0)
    first = s.serial
    s.on_setpoint(sp(), 0.1)
    assert s.serial == first
    s.on_setpoint(sp(q=(0.0, 0.0, 1.0, 0.0)), 0.2)
    assert s.serial != first


def test_faults_disarm_and_only_idle_rearms():
    for fault in ('setpoint', 'input', 'generation', 'authority'):
        s = armed(setpoint_timeout_sec=1.0, input_timeout_sec=0.5)
        s.on_generation(1)
        s.on_setpoint(sp(), 0.0)
        s.on_input(0.0)
        if fault == 'setpoint':
            s.on_input(1.0)
            now = 1.2
        elif fault == 'input':
            s.on_setpoint(sp(), 0.55)
            now = 0.6
        elif fault == 'generation':
            assert s.on_generation(2)
            now = 0.1
        else:
            s.on_authority_lost('lost:lease_expired')
            now = 0.1
        setpoint, _ = s.active(now)
        assert setpoint.mode == MODE_IDLE and not s.armed, fault
        assert s.disarm_reason, fault
        decision = s.on_setpoint(sp(), now + 0.01)
        assert (decision.accepted, decision.reason) == (False, 'not_armed_send_idle')
        assert s.on_setpoint(sp(MODE_IDLE), now + 0.02).accepted
        assert s.armed
        s.on_input(now + 0.02)
        assert s.on_setpoint(sp(), now + 0.03).accepted
        assert s.active(now + 0.04)[0].mode == MODE_ATTITUDE_HOLD


def test_no_input_after_arming_disarms_but_idle_does_not_need_input():
    s = Supervisor(input_timeout_sec=0.5)
    s.on_setpoint(sp(MODE_IDLE), 0.0)
    assert s.active(0.9)[0].mode == MODE_IDLE and s.armed
    s.on_setpoint(sp(), 1.0)
    assert s.active(1.4)[0].mode == MODE_ATTITUDE_HOLD
    assert s.active(1.6)[0] == Setpoint() and s.disarm_reason == 'input_stale'


def test_setpoint_timeout_zero_disables_it():
    s = Supervisor(setpoint_timeout_sec=0.0)
    s.on_setpoint(sp(MODE_IDLE), 0.0)
    assert s.armed and s.active(100.0)[0].mode == MODE_IDLE and s.armed
