"""The mod's measurements from the simulator's truth: IMU, ground truth, nearby vessels.

Checks are against physics, not against the code's own formulas: specific force against
gravity and the centrifugal term, rates against successive ground-truth quaternions.
"""

from dataclasses import replace
import math

import numpy as np
from pylon_protocol import rotations
from pylon_sim.game import ksp_view
from pylon_sim.game.bodies import body_fixed_rotation, KERBIN
from pylon_sim.game.world import World
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.mod import telemetry
import pytest


def world_of(name: str, **vessel_changes) -> World:
    world = World(load_scenario(name, seed=1))
    for key, changes in vessel_changes.items():
        vessel = world.vessels[key]
        vessel.state = replace(vessel.state, **changes)
    return world


def sample(world: World, anchor: telemetry.GroundTruthAnchor) -> tuple[dict, dict, bool]:
    view = ksp_view.observe(world.active, world.ut)
    return (telemetry.imu(view), telemetry.ground_truth(anchor, view, world.active, world.ut),
            view.rotating)


def run(world: World, seconds: float, every: float = 1 / 30):
    """Yield (ut, imu, ground truth, rotating frame) every ``every`` s of UT for ``seconds``."""
    anchor = telemetry.GroundTruthAnchor()
    anchor.reset(world.active, world.ut)
    steps_per_sample = max(1, round(every / world.physics_step))
    for _ in range(int(seconds / every)):
        for _ in range(steps_per_sample):
            world.step()
        yield world.ut, *sample(world, anchor)


def test_free_fall_specific_force_is_zero():
    world = world_of('orbit')
    for _, imu, _, _ in run(world, 5.0):
        assert np.linalg.norm(imu['linearAcceleration']) < 1e-3


def test_rocket_on_the_pad_feels_gravity_minus_centrifugal_along_its_nose():
    world = world_of('launchpad')
    vessel = world.active
    r = np.linalg.norm(vessel.state.position)
    omega = KERBIN.angular_velocity
    # analytic specific force in the inertial frame, then in base_link
    for _, imu, _, _ in run(world, 2.0):
        state = world.active.state
        radial = state.position / np.linalg.norm(state.position)
        horizontal = state.position.copy()
        horizontal[2] = 0.0
        accel = -omega ** 2 * horizontal                      # turning with the planet
        expected_inertial = accel + KERBIN.gm / r ** 2 * radial
        expected = rotations.to_matrix(state.attitude).T @ expected_inertial
        assert np.allclose(imu['linearAcceleration'], expected, atol=0.01)
        # about 9.76 m/s^2, along the nose (+X), which points to the sky
        assert imu['linearAcceleration'][0] == pytest.approx(9.757, abs=0.01)
        assert abs(imu['linearAcceleration'][2]) < 0.01


def test_rover_standing_level_feels_plus_g_on_z():
    world = world_of('surface')
    for _, imu, _, _ in run(world, 1.0):
        assert imu['linearAcceleration'][2] == pytest.approx(9.807 - 0.051, abs=0.01)
        assert np.linalg.norm(imu['linearAcceleration'][:2]) < 0.01


def check_rates_against_quaternions(samples):
    previous = None
    for ut, imu, gt, _ in samples:
        q = np.array(gt['rotation'])
        if previous is not None:
            put, pimu, pgt, pq = previous
            dt = ut - put
            # q_enu<-body(t2) = dq (ENU frame) * q(t1): ENU-frame rate, relative to the planet
            fd_enu = rotations.angular_velocity_from_quaternions(pq, q, dt)
            reported_enu = 0.5 * (np.array(gt['angularVelocity'])
                                  + np.array(pgt['angularVelocity']))
            assert np.allclose(fd_enu, reported_enu, atol=1e-6)
            # inertial rate in base_link = relative rate + the planet's spin
            body_from_enu = rotations.to_matrix(q).T
            inertial_body = body_from_enu @ (fd_enu + np.array(gt['frameAngularVelocity']))
            reported_imu = 0.5 * (np.array(imu['angularVelocity'])
                                  + np.array(pimu['angularVelocity']))
            prev_body_from_enu = rotations.to_matrix(pq).T
            prev_inertial = prev_body_from_enu @ (fd_enu + np.array(pgt['frameAngularVelocity']))
            assert np.allclose(0.5 * (inertial_body + prev_inertial), reported_imu, atol=1e-6)
            # ground truth body rate is the ENU rate in body axes
            assert np.allclose(body_from_enu @ np.array(gt['angularVelocity']),
                               gt['angularVelocityBody'], atol=1e-12)
        previous = (ut, imu, gt, q)


def test_rates_match_successive_quaternions_in_orbit_tumbling():
    world = world_of('orbit', sat={'body_rate': np.array([0.03, -0.02, 0.05])})
    check_rates_against_quaternions(run(world, 10.0))


def test_rates_match_successive_quaternions_on_the_ground():
    check_rates_against_quaternions(run(world_of('surface'), 3.0))


def test_crossing_the_rotating_frame_altitude_is_invisible():
    world = World(load_scenario('orbit', seed=1))
    threshold = world.active.body.rotating_frame_altitude
    # put the satellite on an orbit that climbs through the threshold within seconds
    from pylon_sim.game import kepler
    a = KERBIN.radius + 100_000.0
    e = 0.02
    p = a * (1 - e * e)
    r_cross = KERBIN.radius + threshold - 300.0
    nu = math.degrees(math.acos((p / r_cross - 1) / e))
    position, velocity = kepler.state_from_elements(KERBIN, a, e, 0, 0, 0, nu)
    vessel = world.active
    vessel.state = replace(vessel.state, position=position, velocity=velocity,
                           body_rate=np.array([0.01, 0.0, 0.02]))
    samples = list(run(world, 20.0))
    assert {rotating for *_, rotating in samples} == {True, False}
    check_rates_against_quaternions(samples)
    for (_, imu0, gt0, _), (_, imu1, gt1, _) in zip(samples, samples[1:]):
        assert np.linalg.norm(np.subtract(imu1['angularVelocity'],
                                          imu0['angularVelocity'])) < 1e-5
        assert np.linalg.norm(np.subtract(gt1['angularVelocity'],
                                          gt0['angularVelocity'])) < 1e-5
        assert np.linalg.norm(np.subtract(gt1['linearVelocity'],
                                          gt0['linearVelocity'])) < 0.5


def test_altitude_agl_over_the_terrain_is_the_centre_of_mass_height_above_it():
    world = World(load_scenario('surface'))
    for _ in range(10):
        world.step()
    rover, t = world.active, world.terrain_of('Kerbin')
    radius = KERBIN.radius
    to_fixed = body_fixed_rotation(KERBIN, world.ut)

    def agl_at(fixed):
        rover.state = replace(rover.state, position=to_fixed.T @ fixed)
        state = telemetry.flight_state(world, ksp_view.observe(rover, world.ut), 1)
        return state['altitudeAgl'], state['altitudeAsl']

    # resting on its wheels on the flat ground about the site: AGL = ASL = the CoM height
    fixed = to_fixed @ rover.state.position
    agl, asl = agl_at(fixed)
    assert agl == pytest.approx(np.linalg.norm(fixed) - radius, abs=1e-6)
    assert agl == pytest.approx(asl, abs=1e-6)
    assert agl == pytest.approx(rover.state.rest_altitude, abs=0.01)
    # 2 m above the floor of a crater: the ground is the crater's bowl, below sea level
    crater = t.craters[0]
    up = t.up_of(np.array([[crater.east, crater.north]]))[0]
    floor = float(t.field(np.array([[crater.east, crater.north]]))[0][0])
    assert floor < -1.0
    agl, asl = agl_at(up * (radius + floor + 2.0))
    assert agl == pytest.approx(2.0, abs=1e-6) and asl == pytest.approx(floor + 2.0, abs=1e-6)
    # 1.5 m above the top of the placed boulder 8 m east of the rover
    boulder = t.boulders[-1]
    centre = t.boulder_centers[-1]
    top = centre + boulder.radius * centre / np.linalg.norm(centre)
    agl, _ = agl_at(top + 1.5 * centre / np.linalg.norm(centre))
    assert (boulder.east, boulder.radius) == (8.0, 1.0)
    assert agl == pytest.approx(1.5, abs=1e-6)
