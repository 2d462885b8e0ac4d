"""Tests of the pure setpoint control law, including closed-loop rigid-body runs."""

import math

import numpy as np
from pylon_protocol import rotations
from pylon_sim.game.vessel import mass_properties
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.mod import safety
from pylon_vehicle_control import control_law as cl
from pylon_vehicle_control.control_law import (
    ControlInputs,
    ControlParams,
    Feedback,
    Setpoint,
    SetpointControlLaw,
)
import pytest

DT = 0.05
SUBSTEPS = 5   # physics at 0.01 s, the KSP safety filter applied at every physics step


def sat_mass_properties():
    vessel = load_scenario('orbit').vessel('sat')
    return mass_properties(vessel.spec, vessel.spec.initial_resources())


class RigidBody:
    """Torque-driven rigid body with the KSP-side safety filter in front of it."""

    def __init__(self, inertia, mass, q, omega, torque_limit):
        self.inertia = np.asarray(inertia, dtype=float)
        self.inertia_inv = np.linalg.inv(self.inertia)
        self.mass = mass
        self.q = np.asarray(q, dtype=float)
        self.omega = np.asarray(omega, dtype=float)
        self.position = np.zeros(3)
        self.velocity = np.zeros(3)
        self.torque_limit = torque_limit
        self.force_limit = 1e9
        self.safety_state = safety.zero_state()
        self.limits = safety.SafetyLimits()
        self.reasons = set()

    def advance(self, force, torque, dt):
        h = dt / SUBSTEPS
        for _ in range(SUBSTEPS):
            result = safety.step(self.safety_state, self.limits, force, torque, self.omega, h)
            self.safety_state = result.state
            self.reasons.update(result.reasons)
            tau = cl._clip_norm(result.torque, self.torque_limit)   # actuator limit
            f = cl._clip_norm(result.force, self.force_limit)
            wdot = self.inertia_inv @ (tau - np.cross(self.omega, self.inertia @ self.omega))
            self.omega = self.omega + wdot * h
            self.q = rotations.normalize(
                rotations.multiply(self.q, rotations.from_rotvec(self.omega * h)))
            accel = rotations.to_matrix(self.q) @ f / self.mass
            self.velocity = self.velocity + accel * h
            self.position = self.position + self.velocity * h


def inputs_for(body, setpoint, serial=1, available=None, feedback=None):
    return ControlInputs(setpoint=setpoint, setpoint_serial=serial, orientation=tuple(body.q),
                         body_rate=tuple(body.omega), position=tuple(body.position),
                         velocity=tuple(body.velocity), inertia=body.inertia,
                         mass=body.mass, available_torque_nm=available,
                         feedback=feedback)


def run(law, body, setpoint, seconds, available=None, record=None):
    state = law.initial_state()
    outputs = []
    for _ in range(int(round(seconds / DT))):
        state, out = law.step(state, inputs_for(body, setpoint, available=available), DT)
        outputs.append(out)
        if record is not None:
            record(body, out)
        body.advance(out.force, out.torque, DT)
    return state, outputs


@pytest.mark.parametrize(('axis', 'torque_limit'), [
    ((0.0, 0.0, 1.0), 200.0),      # yaw, slow actuator: visible acceleration phases
    ((1.0, 0.0, 0.0), 5000.0),     # roll on the smallest inertia, the stabilizer's torque
    ((1.0, -2.0, 0.5), 60.0),      # skew axis, weak actuator
])
def test_attitude_hold_90_deg_slew(axis, torque_limit):
    mp = sat_mass_properties()
    law = SetpointControlLaw()
    w_max = math.radians(law.params.attitude_hold_rate_limit_deg_s)
    target = rotations.from_axis_angle(axis, math.radians(90.0))
    body = RigidBody(mp.inertia, mp.mass, (0.0, 0.0, 0.0, 1.0), np.zeros(3), torque_limit)
    unit = np.asarray(axis) / np.linalg.norm(axis)
    alpha = torque_limit / float(np.linalg.norm(mp.inertia @ unit))
    t_min = math.radians(90.0) / w_max + w_max / alpha
    errors, rates = [], []

    def record(b, _out):
        errors.append(math.degrees(np.linalg.norm(cl.attitude_error(b.q, target))))
        rates.append(float(np.linalg.norm(b.omega)))

    setpoint = Setpoint(mode=cl.MODE_ATTITUDE_HOLD, orientation=tuple(target))
    run(law, body, setpoint, 1.2 * t_min + 20.0, available=torque_limit, record=record)
    errors = np.array(errors)
    times = np.arange(len(errors)) * DT
    # settled: never above 0.1 deg after some time, and that time is within 1.2 t_min
    above = np.nonzero(errors >= 0.1)[0]
    settle = times[above[-1] + 1] if above.size else 0.0
    assert settle <= 1.2 * t_min, (settle, t_min)
    # overshoot: the error never grows back after passing its minimum by more than 0.5 deg
    # (measured as the rotation beyond the target along the slew axis)
    first_min = int(np.argmax(errors < 0.5))
    assert first_min > 0
    assert max(errors[first_min:]) < 0.5
    assert max(rates) <= 1.05 * w_max, (max(rates), w_max)
    assert 'continuous_actuation_limit' not in body.reasons
    assert 'angular_speed_limit' not in body.reasons
    assert 'magnitude_limit' not in body.reasons


def test_attitude_hold_overshoot_along_axis():
    """The rotation never passes the target along the slew axis by 0.5 deg or more."""
    mp = sat_mass_properties()
    law = SetpointControlLaw()
    target = rotations.from_axis_angle((0, 0, 1), math.radians(90.0))
    body = RigidBody(mp.inertia, mp.mass, (0.0, 0.0, 0.0, 1.0), np.zeros(3), 5000.0)
    beyond = []

    def record(b, _out):
        # signed error about +Z: negative means past the target
        beyond.append(math.degrees(cl.attitude_error(b.q, target)[2]))

    setpoint = Setpoint(mode=cl.MODE_ATTITUDE_HOLD, orientation=tuple(target))
    run(law, body, setpoint, 90.0, available=5000.0, record=record)
    assert min(beyond) > -0.5
    assert abs(beyond[-1]) < 0.1


def test_detumble_from_0_3_rad_s():
    mp = sat_mass_properties()
    law = SetpointControlLaw()
    omega0 = 0.3 * np.array([0.6, -0.48, 0.64]) / np.linalg.norm([0.6, -0.48, 0.64])
    body = RigidBody(mp.inertia, mp.mass, (0.0, 0.0, 0.0, 1.0), omega0, 300.0)
    outputs = []

    def record(b, out):
        outputs.append(out)
        # torque only, and never speeding the rotation up
        assert not np.any(out.force)
        assert float(out.torque @ b.omega) <= 1e-9

    _, _ = run(law, body, Setpoint(mode=cl.MODE_DETUMBLE), 60.0, available=300.0,
               record=record)
    assert np.linalg.norm(body.omega) < 0.001
    assert outputs[-1].is_zero
    assert 'continuous_actuation_limit' not in body.reasons


def test_long_hold_gives_exact_zeros_and_never_trips():
    mp = sat_mass_properties()
    law = SetpointControlLaw()
    q0 = rotations.from_axis_angle((0.2, 1.0, 0.0), 0.3)
    target = rotations.from_axis_angle((0.2, 1.0, 0.0), 0.3 + math.radians(0.5))
    body = RigidBody(mp.inertia, mp.mass, q0, np.zeros(3), 500.0)
    setpoint = Setpoint(mode=cl.MODE_ATTITUDE_HOLD, orientation=tuple(target))
    errors = []
    _, outputs = run(law, body, setpoint, 180.0, available=500.0, record=lambda b, _o:
                     errors.append(math.degrees(np.linalg.norm(cl.attitude_error(b.q,
                                                                                 target)))))
    tail = outputs[-2400:]          # the last 120 s
    zeros = [o.is_zero for o in tail]
    assert sum(zeros) > 0.8 * len(tail)
    for o in tail:
        if o.deadband:             # exact zeros, bit for bit
            assert o.force.tolist() == [0.0, 0.0, 0.0]
            assert o.torque.tolist() == [0.0, 0.0, 0.0]
    assert max(errors[-2400:]) < 0.1
    # the longest stretch of non-zero output is far below the KSP 30 s
    longest = run_length = 0
    for zero in zeros:
        run_length = 0 if zero else run_length + 1
        longest = max(longest, run_length)
    assert longest * DT < 5.0
    assert 'continuous_actuation_limit' not in body.reasons


def test_hold_at_target_is_exact_zero():
    law = SetpointControlLaw()
    q = rotations.from_axis_angle((1, 2, 3), 1.0)
    inp = ControlInputs(Setpoint(mode=cl.MODE_ATTITUDE_HOLD, orientation=tuple(q)), 1,
                        tuple(q), (0.0, 0.0, 0.0), inertia=np.eye(3) * 500)
    state = law.initial_state()
    for _ in range(2000):
        state, out = law.step(state, inp, DT)
        assert out.deadband and out.is_zero
    assert state.active_sec == 0.0


def test_noisy_hold_never_trips_the_ksp_continuous_limit():
    mp = sat_mass_properties()
    law = SetpointControlLaw()
    rng = np.random.default_rng(3)
    q0 = rotations.from_axis_angle((0.0, 0.0, 1.0), 0.2)
    body = RigidBody(mp.inertia, mp.mass, q0, np.zeros(3), 500.0)
    setpoint = Setpoint(mode=cl.MODE_ATTITUDE_HOLD, orientation=tuple(q0))
    state = law.initial_state()
    forced = 0
    for _ in range(int(100.0 / DT)):
        noisy = body.omega + rng.normal(0.0, 2e-4, 3)      # gyro noise above the deadband
        inp = ControlInputs(setpoint, 1, tuple(body.q), tuple(noisy), inertia=body.inertia,
                            available_torque_nm=500.0)
        state, out = law.step(state, inp, DT)
        forced += out.forced_idle
        body.advance(out.force, out.torque, DT)
    assert forced >= 12            # at least one forced idle of 0.6 s (12 steps)
    assert 'continuous_actuation_limit' not in body.reasons
    assert math.degrees(np.linalg.norm(cl.attitude_error(body.q, q0))) < 0.1


def test_idle_is_exact_zero_at_once():
    law = SetpointControlLaw()
    state = law.initial_state()
    busy = Setpoint(mode=cl.MODE_DETUMBLE)
    inp = ControlInputs(busy, 1, (0, 0, 0, 1), (0.1, 0.0, 0.0), inertia=np.eye(3) * 100)
    state, out = law.step(state, inp, DT)
    assert not out.is_zero
    inp = ControlInputs(Setpoint(mode=cl.MODE_IDLE), 2, (0, 0, 0, 1), (0.1, 0.0, 0.0))
    state, out = law.step(state, inp, DT)
    assert out.is_zero and out.torque.tolist() == [0.0, 0.0, 0.0]
    assert state.torque.tolist() == [0.0, 0.0, 0.0]


def test_limits_and_slew_stay_inside_control_safety():
    params = ControlParams.from_values({})
    limits = safety.SafetyLimits()
    assert params.max_force_n < limits.max_force_n
    assert params.max_torque_nm < limits.max_torque_nm
    assert params.max_force_slew_n_s < limits.max_force_slew_n_per_sec
    assert params.max_torque_slew_nm_s < limits.max_torque_slew_nm_per_sec
    assert params.max_angular_speed_rad_s < limits.max_angular_speed_rad_sec
    law = SetpointControlLaw()
    state = law.initial_state()
    big = np.eye(3) * 1e7
    inp = ControlInputs(Setpoint(mode=cl.MODE_DETUMBLE), 1, (0, 0, 0, 1), (0.2, 0.1, 0.0),
                        inertia=big)
    previous = np.zeros(3)
    for _ in range(400):
        state, out = law.step(state, inp, DT)
        assert np.linalg.norm(out.torque) <= params.max_torque_nm + 1e-6
        assert np.linalg.norm(out.torque - previous) <= params.max_torque_slew_nm_s * DT + 1e-6
        previous = out.torque
    assert np.linalg.norm(previous) == pytest.approx(params.max_torque_nm)


def test_accelerating_torque_removed_above_rate_limit():
    law = SetpointControlLaw()
    # spinning about +Z faster than the attitude rate limit, target further along +Z
    target = rotations.from_axis_angle((0, 0, 1), math.radians(60.0))
    inp = ControlInputs(Setpoint(mode=cl.MODE_ATTITUDE_HOLD, orientation=tuple(target)), 1,
                        (0, 0, 0, 1), (0.0, 0.0, 0.1), inertia=np.eye(3) * 100)
    state = law.initial_state()
    for _ in range(10):
        state, out = law.step(state, inp, DT)
        assert float(out.torque @ np.array([0.0, 0.0, 1.0])) <= 0.0   # braking only
    assert out.torque[2] < 0.0


def test_saturation_lowers_the_request_without_windup():
    law = SetpointControlLaw()
    state = law.initial_state()
    sp = Setpoint(mode=cl.MODE_DETUMBLE)
    inp = ControlInputs(sp, 1, (0, 0, 0, 1), (0.3, 0.0, 0.0), inertia=np.eye(3) * 1000)
    for _ in range(40):
        state, out = law.step(state, inp, DT)
    unsaturated = float(np.linalg.norm(out.torque))
    assert unsaturated > 100.0 and not out.saturation_limited
    fb = Feedback(saturated=True, saturation_ratio=0.75,
                  requested_torque=tuple(out.torque),
                  allocated_torque=tuple(out.torque * 0.25))
    state, out = law.step(state, ControlInputs(sp, 1, (0, 0, 0, 1), (0.3, 0.0, 0.0),
                                                inertia=np.eye(3) * 1000, feedback=fb), DT)
    assert out.saturation_limited
    assert state.torque_cap == pytest.approx(0.25 * unsaturated)
    # the ramp down is slew limited, then it stays at the cap (no wind-up)
    for _ in range(40):
        state, out = law.step(state, inp, DT)
    assert float(np.linalg.norm(out.torque)) < 0.4 * unsaturated
    # with a floor: a feedback of zero allocation leaves floor * request
    fb0 = Feedback(saturated=True, saturation_ratio=1.0, requested_torque=(1000.0, 0, 0),
                   allocated_torque=(0.0, 0.0, 0.0))
    state2, _ = law.step(law.initial_state(), ControlInputs(
        sp, 1, (0, 0, 0, 1), (0.3, 0.0, 0.0), inertia=np.eye(3) * 1000, feedback=fb0), DT)
    assert state2.torque_cap == pytest.approx(law.params.saturation_scale_floor * 1000.0)
    # the cap recovers over time without saturation
    for _ in range(800):
        state, out = law.step(state, inp, DT)
    assert state.torque_cap is None and not out.saturation_limited


def test_six_dof_moves_to_the_relative_position():
    mp = sat_mass_properties()
    law = SetpointControlLaw()
    q0 = rotations.from_axis_angle((0, 0, 1), math.radians(30.0))
    body = RigidBody(mp.inertia, mp.mass, q0, np.zeros(3), 500.0)
    body.force_limit = 2000.0
    setpoint = Setpoint(mode=cl.MODE_SIX_DOF, position=(2.0, -1.0, 0.5),
                        orientation=tuple(q0))
    state = law.initial_state()
    for _ in range(int(60.0 / DT)):
        state, out = law.step(state, ControlInputs(
            setpoint, 7, tuple(body.q), tuple(body.omega), tuple(body.position),
            tuple(body.velocity), body.inertia, body.mass, 500.0, 2000.0), DT)
        assert np.linalg.norm(body.velocity) < 1.05 * law.params.velocity_limit_m_s
        body.advance(out.force, out.torque, DT)
    np.testing.assert_allclose(body.position, [2.0, -1.0, 0.5], atol=0.05)
    assert math.degrees(np.linalg.norm(cl.attitude_error(body.q, q0))) < 0.1


def test_step_rejects_bad_dt_and_mode():
    law = SetpointControlLaw()
    inp = ControlInputs(Setpoint(mode=9), 1, (0, 0, 0, 1), (0, 0, 0))
    with pytest.raises(ValueError):
        law.step(law.initial_state(), inp, DT)
    with pytest.raises(ValueError):
        law.step(law.initial_state(), inp, 0.0)


def test_attitude_error_is_shortest_way():
    a = rotations.from_axis_angle((0, 0, 1), math.radians(170.0))
    b = rotations.from_axis_angle((0, 0, 1), math.radians(-170.0))
    err = cl.attitude_error(a, b)
    np.testing.assert_allclose(err, [0.0, 0.0, math.radians(20.0)], atol=1e-9)
    err = cl.attitude_error(a, -b)      # the sign of a quaternion does not matter
    np.testing.assert_allclose(err, [0.0, 0.0, math.radians(20.0)], atol=1e-9)
