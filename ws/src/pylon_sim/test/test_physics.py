"""Physics truth: orbits, rotation, ground contact, two-body propagation."""

import math

import numpy as np
from pylon_protocol import rotations
from pylon_sim.game import kepler, physics
from pylon_sim.game.bodies import body_fixed_rotation, fixed_from_geodetic, KERBIN
from pylon_sim.game.physics import Inputs, RigidState
import pytest

STEP = 0.02


def circular(altitude: float) -> RigidState:
    r, v = kepler.state_from_elements(KERBIN, KERBIN.radius + altitude, 0, 0, 0, 0, 0)
    return RigidState(0.0, r, v, np.array([0.0, 0.0, 0.0, 1.0]), np.zeros(3))


def test_circular_orbit_keeps_its_radius_within_1_m_over_one_orbit():
    state = circular(100_000.0)
    a = KERBIN.radius + 100_000.0
    period = 2 * math.pi * math.sqrt(a ** 3 / KERBIN.gm)
    inputs = Inputs(1000.0, np.diag([100.0, 200.0, 300.0]))
    worst = 0.0
    for _ in range(int(round(period / STEP))):
        state, _ = physics.step(state, inputs, STEP, KERBIN)
        worst = max(worst, abs(float(np.linalg.norm(state.position)) - a))
    assert worst < 1.0
    # and it came back to where it started (one full period)
    assert np.linalg.norm(state.position - circular(100_000.0).position) < 50.0


def test_step_is_pure():
    state = circular(100_000.0)
    before = (state.position.copy(), state.velocity.copy(), state.attitude.copy())
    physics.step(state, Inputs(1000.0, np.eye(3) * 10, np.array([10.0, 0, 0])), STEP, KERBIN)
    assert all(np.array_equal(a, b) for a, b in zip(before, (state.position, state.velocity,
                                                               state.attitude)))


def test_thrust_changes_velocity_by_f_over_m():
    state = circular(100_000.0)
    inputs = Inputs(1000.0, np.eye(3) * 10, np.array([500.0, 0.0, 0.0]))
    free, _ = physics.step(state, Inputs(1000.0, np.eye(3) * 10), STEP, KERBIN)
    pushed, specific = physics.step(state, inputs, STEP, KERBIN)
    assert np.allclose(pushed.velocity - free.velocity, [0.5 * STEP, 0, 0], atol=1e-9)
    assert np.allclose(specific, [0.5, 0.0, 0.0])


def test_torque_free_asymmetric_body_conserves_angular_momentum_and_energy():
    inertia = np.diag([100.0, 200.0, 300.0])
    state = RigidState(0.0, circular(100_000).position, circular(100_000).velocity,
                       np.array([0.0, 0.0, 0.0, 1.0]), np.array([0.1, 0.02, -0.05]))
    inputs = Inputs(1000.0, inertia)

    def momentum(s):
        return rotations.to_matrix(s.attitude) @ (inertia @ s.body_rate)

    h0, e0 = momentum(state), state.body_rate @ inertia @ state.body_rate
    for _ in range(2000):
        state, _ = physics.step(state, inputs, STEP, KERBIN)
    assert np.allclose(momentum(state), h0, rtol=1e-6, atol=1e-9)
    assert state.body_rate @ inertia @ state.body_rate == pytest.approx(e0, rel=1e-7)



def test_kepler_propagation_matches_integration():
    r, v = kepler.state_from_elements(KERBIN, 800_000.0, 0.1, 30.0, 40.0, 50.0, 60.0)
    state = RigidState(0.0, r, v, np.array([0.0, 0, 0, 1]), np.zeros(3))
    for _ in range(5000):
        state, _ = physics.step(state, Inputs(1.0, np.eye(3)), STEP, KERBIN)
    p2, v2 = kepler.propagate(KERBIN, r, v, 5000 * STEP)
    assert np.linalg.norm(p2 - state.position) < 1e-3
    assert np.linalg.norm(v2 - state.velocity) < 1e-6


def landed_state(lat: float, lon: float, alt: float) -> RigidState:
    position = body_fixed_rotation(KERBIN, 0.0).T @ fixed_from_geodetic(KERBIN, lat, lon, alt)
    spin = KERBIN.spin_vector()
    return RigidState(0.0, position, np.cross(spin, position), np.array([0.0, 0, 0, 1]),
                      spin.copy(), landed=True, rest_altitude=alt)


def test_landed_vessel_turns_with_the_planet_and_feels_gravity_minus_centrifugal():
    state = landed_state(0.0, 0.0, 70.0)
    fixed0 = body_fixed_rotation(KERBIN, 0.0) @ state.position
    inputs = Inputs(1000.0, np.eye(3) * 100)
    for _ in range(500):
        state, specific = physics.step(state, inputs, STEP, KERBIN)
    fixed = body_fixed_rotation(KERBIN, state.ut) @ state.position
    assert np.linalg.norm(fixed - fixed0) < 1e-6
    r = KERBIN.radius + 70.0
    expected = KERBIN.gm / r ** 2 - KERBIN.angular_velocity ** 2 * r
    assert np.linalg.norm(specific) == pytest.approx(expected, abs=1e-6)
    assert expected == pytest.approx(9.757, abs=0.005)


def test_landed_vessel_lifts_off_when_thrust_exceeds_weight_and_lands_again():
    state = landed_state(0.0, 0.0, 70.0)
    up_body = rotations.to_matrix(state.attitude).T @ (state.position
                                                    / np.linalg.norm(state.position))
    thrust = Inputs(1000.0, np.eye(3) * 100, 20_000.0 * up_body)
    state, _ = physics.step(state, thrust, STEP, KERBIN)
    assert not state.landed
    for _ in range(50):
        state, _ = physics.step(state, thrust, STEP, KERBIN)
    assert physics.altitude(KERBIN, state.position) > 70.0
    coast = Inputs(1000.0, np.eye(3) * 100)
    for _ in range(2000):
        state, _ = physics.step(state, coast, STEP, KERBIN)
        if state.landed:
            break
    assert state.landed
    assert physics.altitude(KERBIN, state.position) == pytest.approx(70.0, abs=1e-6)
