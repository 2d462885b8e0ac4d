"""The star tracker sensor model: validity reasons from geometry, reacquisition and noise.

The vessel is at 700 km above Kerbin on +X of KCI, the sun far away on +Y. The tracker is
mounted as in the orbit scenario (part rolled 180 deg, so its optical axis, part -Z, is
base_link +Z). With the identity attitude it looks north (+Z), a clear sky.
"""

from dataclasses import replace
import math
import random

import numpy as np
from pylon_protocol import rotations
from pylon_protocol.packets import STAR_TRACKER
from pylon_sim.game import ksp_view, raycast
from pylon_sim.game.bodies import KERBIN, KERBOL, MUN
from pylon_sim.game.vessel import Shape
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.sensors import star_tracker as st
import pytest

VESSEL = 'ab' * 16
R = KERBIN.radius
POS = np.array([R + 700_000.0, 0.0, 0.0])
SUN = np.array([0.0, 1.36e10, 0.0])
ARCSEC = math.pi / 180 / 3600
DT = 0.2


def orbit_tracker_part():
    sat = load_scenario('orbit').vessel('sat').spec
    return next(p for p in sat.parts if p.modules_of('star_tracker'))


def config(**changes) -> st.StarTrackerConfig:
    base = st.StarTrackerConfig(sensor_id='star_tracker_test', part_persistent_id=77,
                                mount_position=(-0.3, 0.0, 0.6),
                                mount_rotation=(1.0, 0.0, 0.0, 0.0))
    return replace(base, **changes)


def look(direction) -> np.ndarray:
    """Return a base_link -> inertial attitude that points base_link +Z along direction."""
    z = np.asarray(direction, dtype=float)
    z = z / np.linalg.norm(z)
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return rotations.from_matrix(np.column_stack([x, y, z]))


def off_axis(axis, towards, angle_deg):
    """Return the unit vector ``angle_deg`` from ``axis`` rotated towards ``towards``."""
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    t = np.asarray(towards, float)
    t = t - (t @ a) * a
    t /= np.linalg.norm(t)
    ang = math.radians(angle_deg)
    return math.cos(ang) * a + math.sin(ang) * t


def kerbin():
    return st.BodyDisc('Kerbin', np.zeros(3), KERBIN.radius, KERBIN.atmosphere_depth)


def sun_disc(position=SUN):
    return st.BodyDisc('Sun', position, KERBOL.radius, KERBOL.atmosphere_depth)


def inputs(ut, **changes) -> st.Inputs:
    base = st.Inputs(ut=ut, attitude=look([0, 0, 1]), position=POS, sun_position=SUN,
                     body_rate=np.zeros(3), sun_radius=KERBOL.radius,
                     bodies=(kerbin(), sun_disc()), electric_charge=100.0,
                     vessel_id=VESSEL)
    return replace(base, **changes)


def housing(vessel_id: str) -> raycast.Primitive:
    """Return a box (part 77) that contains the aperture: part z = -0.293 m."""
    rot = rotations.to_matrix(look([0, 0, 1]))
    aperture = POS + rot @ (np.array([-0.3, 0.0, 0.6]) + [0.0, 0.0, 0.293])
    centre = aperture - rot @ [0.0, 0.0, 0.1]
    return raycast.Primitive('box', (0.22, 0.19, 0.293), centre, rot, owner=(vessel_id, 77))


class Run:
    """A tracker stepped at 5 Hz."""

    def __init__(self, cfg=None, seed=1):
        self.cfg = cfg or config()
        self.state = st.initial_state(random.Random(seed))
        self.rng = np.random.default_rng(seed)
        self.ut = 100.0

    def sample(self, dt=DT, **changes):
        self.ut += dt
        self.state, out = st.step(self.cfg, self.state, inputs(self.ut, **changes), dt,
                                  self.rng)
        if out is not None:
            STAR_TRACKER(out)     # every sample is a valid packet
        return out

    def for_seconds(self, seconds, **changes):
        return [self.sample(**changes) for _ in range(round(seconds / DT))]


def reasons(samples):
    return [s['reason'] for s in samples]


def assert_reacquires(run: Run):
    """Clear conditions: acquiring for 2 s of simulation time, then tracking."""
    first = run.sample()
    assert first['reason'] == 'acquiring' and first['orientation'] is None
    during = run.for_seconds(1.8)            # 0.2 .. 1.8 s after the first clear sample
    assert set(reasons(during)) == {'acquiring'}
    now = run.sample()                       # 2.0 s
    assert now['reason'] == 'tracking' and now['valid'] is True
    assert len(now['orientation']) == 4


def test_a_clear_sky_needs_two_seconds_then_tracks():
    run = Run()
    assert_reacquires(run)
    later = run.for_seconds(1.0)
    assert set(reasons(later)) == {'tracking'}
    assert later[-1]['sensorId'] == 'star_tracker_test'
    assert later[-1]['sequence'] == later[-2]['sequence'] + 1
    assert later[-1]['noiseStdRad'] == pytest.approx(20 * ARCSEC)


EXCLUSIONS = {
    # axis 1 deg from the sun's centre
    'sun': ('sun_exclusion', {'attitude': look(off_axis(SUN - POS, [0, 0, 1], 1.0))}),
    # 35.9 deg from the sun's centre: inside its 1.1 deg disc + 35 deg
    'sun_edge': ('sun_exclusion', {'attitude': look(off_axis(SUN - POS, [0, 0, 1], 35.9))}),
    # the sun hidden behind Kerbin still excludes
    'sun_eclipsed': ('sun_exclusion', {
        'sun_position': np.array([-1.36e10, 0.0, 0.0]),
        'bodies': (kerbin(), sun_disc(np.array([-1.36e10, 0.0, 0.0]))),
        'attitude': look([-1.0, 0.0, 0.0])}),
    # Kerbin's limb: disc radius + 10 deg half FOV + 5 deg margin, 1 deg inside
    'kerbin_limb': ('body_in_fov', {'attitude': look(off_axis(
        -POS, [0, 0, 1], math.degrees(math.asin(R / np.linalg.norm(POS))) + 15.0 - 1.0))}),
    'mun': ('body_in_fov', {'bodies': (kerbin(), sun_disc(), st.BodyDisc(
        'Mun', POS + np.array([0.0, 0.0, 5.0e6]), MUN.radius))}),
    'box_ahead': ('occluded', {'occluders': (raycast.Primitive(
        'box', (5.0, 5.0, 5.0), POS + np.array([0.0, 0.0, 100.0]), owner=('cd' * 16, 1)),)}),
    # a thin pole 9.5 deg off the axis, 50 m away: only outer-ring rays can see it
    'pole_at_fov_edge': ('occluded', {'occluders': (raycast.Primitive(
        'cylinder', (0.5, 40.0), POS + 50.0 * off_axis([0, 0, 1], [1, 0, 0], 9.5)
        + np.array([0.0, 0.0, 0.6]), rotations.to_matrix(
            (0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4))),
        owner=('cd' * 16, 2)),)}),
    'ball_ahead': ('occluded', {'occluders': (raycast.Primitive(
        'sphere', (2.0,), POS + np.array([0.0, 0.0, 1500.0])),)}),
    'spin': ('slew_rate_exceeded', {'body_rate': np.radians([0.0, 2.1, 0.0])}),
    'atmosphere_day': ('atmosphere', {'position': np.array([R + 50_000.0, 0.0, 0.0]),
                                          'attitude': look([1.0, 0.0, 0.0])}),
    'atmosphere_night': ('atmosphere', {
        'position': np.array([R + 50_000.0, 0.0, 0.0]), 'attitude': look([1.0, 0.0, 0.0]),
        'sun_position': np.array([-1.36e10, 0.0, 0.0]),
        'bodies': (kerbin(), sun_disc(np.array([-1.36e10, 0.0, 0.0])))}),
    'power_cut': ('no_power', {'electric_charge': 0.0}),
    'power_short': ('no_power', {'electric_charge': 0.005}),
    'switched_off': ('disabled', {'enabled': False}),
    'packed': ('packed', {'packed': True}),
    'invalid_time': ('invalid_time', {'time_valid': False}),
    'no_attitude': ('sensor_unavailable', {'attitude': np.full(4, np.nan)}),
    'sensor_unavailable': ('sensor_unavailable', {'sensor_available': False}),
}


@pytest.mark.parametrize('name', sorted(EXCLUSIONS))
def test_each_invalid_condition_then_reacquisition(name):
    reason, changes = EXCLUSIONS[name]
    run = Run()
    run.for_seconds(3.0)
    assert run.sample()['reason'] == 'tracking'
    bad = run.for_seconds(1.0, **changes)
    assert set(reasons(bad)) == {reason}
    for s in bad:
        assert s['valid'] is False and s['orientation'] is None
    assert_reacquires(run)


NEAR_MISSES = {
    'sun_outside_exclusion': {'attitude': look(off_axis(SUN - POS, [0, 0, 1], 36.5))},
    'kerbin_limb_clear': {'attitude': look(off_axis(
        -POS, [0, 0, 1], math.degrees(math.asin(R / np.linalg.norm(POS))) + 15.0 + 1.0))},
    'box_beyond_2km': {'occluders': (raycast.Primitive(
        'box', (50.0, 50.0, 5.0), POS + np.array([0.0, 0.0, 2100.0])),)},
    'box_outside_fov': {'occluders': (raycast.Primitive(
        'box', (5.0, 5.0, 5.0), POS + 100.0 * off_axis([0, 0, 1], [1, 0, 0], 15.0)),)},
    # the tracker's own housing around the aperture is not an obstacle
    'own_part': {'occluders': (housing(VESSEL),)},
    'spin_below_limit': {'body_rate': np.radians([1.9, 0.0, 0.0])},
    'above_atmosphere': {'position': np.array([R + 71_000.0, 0.0, 0.0]),
                             'attitude': look(off_axis([1.0, 0.0, 0.0], [0, 0, 1], 30.0))},
}


@pytest.mark.parametrize('name', sorted(NEAR_MISSES))
def test_near_misses_keep_tracking(name):
    run = Run()
    samples = run.for_seconds(3.0, **NEAR_MISSES[name])
    assert samples[-1]['reason'] == 'tracking'


def test_a_housing_of_another_vessel_around_the_aperture_occludes():
    assert Run().sample(occluders=(housing('cd' * 16),))['reason'] == 'occluded'


class Wall(raycast.Terrain):
    """A wall of terrain 1 km high north of 500 m (z > 500 m on the sphere)."""

    min_height, max_height = 0.0, 1000.0

    def height(self, up):
        return np.where(up[:, 2] * R > 500.0, 1000.0, 0.0)


def test_terrain_height_occludes_near_the_ground():
    landed = np.array([R + 10.0, 0.0, 0.0])
    clear = {'position': landed, 'bodies': (),
             'attitude': look(off_axis([1, 0, 0], [0, 0, 1], 45))}
    surface = st.Surface(np.zeros(3), R)
    samples = Run().for_seconds(3.0, surface=surface, **clear)
    assert samples[-1]['reason'] == 'tracking'
    wall = Run().sample(surface=replace(surface, terrain=Wall()), **clear)
    assert wall['reason'] == 'occluded'
    # looking below the horizon hits the smooth sphere
    down = Run().sample(surface=surface, position=landed, bodies=(),
                        attitude=look(off_axis([1, 0, 0], [0, 0, 1], 95)))
    assert down['reason'] == 'occluded'


def test_the_rate_is_measured_from_successive_attitudes_when_not_given():
    run = Run()
    first = run.sample(body_rate=None)
    assert first['reason'] == 'slew_rate_exceeded'        # rate not measured yet
    rate = math.radians(1.0)                                # 1 deg/s about base_link X

    def turned():
        angle = rate * (run.ut + DT - 100.0)
        return rotations.multiply(look([0, 0, 1]), [math.sin(angle / 2), 0, 0,
                                                    math.cos(angle / 2)])
    samples = [run.sample(body_rate=None, attitude=turned()) for _ in range(15)]
    assert samples[-1]['reason'] == 'tracking'
    assert samples[-1]['angularRateDegSec'] == pytest.approx(1.0, rel=1e-6)
    rate = math.radians(3.0)
    fast = [run.sample(body_rate=None, attitude=turned()) for _ in range(3)]
    assert fast[-1]['reason'] == 'slew_rate_exceeded'
    assert fast[-1]['angularRateDegSec'] == pytest.approx(3.0, rel=1e-6)


def test_ut_revert_and_long_gaps_restart_acquisition():
    run = Run()
    run.for_seconds(3.0)
    assert run.sample()['reason'] == 'tracking'
    assert run.sample(dt=-50.0)['reason'] == 'acquiring'   # revert
    run.for_seconds(2.0)
    assert run.sample()['reason'] == 'tracking'
    assert run.sample(dt=2.5)['reason'] == 'acquiring'     # gap over 2 s
    assert_reacquires_after = run.for_seconds(2.0)
    assert assert_reacquires_after[-1]['reason'] == 'tracking'
    run.state, out = st.step(run.cfg, run.state, inputs(math.nan), DT, run.rng)
    assert out['reason'] == 'invalid_time'
    assert STAR_TRACKER(out)['universalTime'] == run.ut     # the last good UT


def test_no_sample_while_paused_and_inactive_is_sent():
    run = Run()
    run.for_seconds(1.0)
    state = run.state
    assert run.sample(dt=0.0) is None
    assert run.state == state
    gone = run.sample(active=False)
    assert gone['reason'] == 'inactive' and gone['orientation'] is None


def test_electric_charge_is_drawn_while_on():
    run = Run()
    run.sample()
    assert run.state.ec_drawn == pytest.approx(0.05 * DT)
    run.for_seconds(1.8)
    assert run.state.ec_total == pytest.approx(0.05 * 2.0)
    run.sample(enabled=False)
    assert run.state.ec_drawn == 0.0


def test_orientation_is_base_link_to_kerbol_inertial():
    # kerbol_inertial from the Unity world: (u . right, u . forward, u . up)
    w = np.array([0.3, -0.7, 0.2])
    u = np.array(ksp_view.to_unity(w))
    assert st.KERBOL_FROM_KCI @ w == pytest.approx([u[0], u[2], u[1]])
    assert np.linalg.det(st.KERBOL_FROM_KCI) == pytest.approx(1.0)
    direction = np.array([0.2, 0.5, 0.8])
    run = Run()
    samples = run.for_seconds(3.0, attitude=look(direction))
    q = np.array(samples[-1]['orientation'])
    # base_link +Z (the optical axis) in kerbol_inertial, and base_link +X
    expected = st.KERBOL_FROM_KCI @ (direction / np.linalg.norm(direction))
    assert rotations.to_matrix(q) @ [0, 0, 1] == pytest.approx(expected, abs=1e-3)
    x_axis = st.KERBOL_FROM_KCI @ rotations.to_matrix(look(direction)) @ [1, 0, 0]
    assert rotations.to_matrix(q) @ [1, 0, 0] == pytest.approx(x_axis, abs=1e-3)


def test_noise_is_20_arcsec_per_body_axis_with_no_bias():
    cfg = config()
    state = st.initial_state(random.Random(3))
    rng = np.random.default_rng(7)
    attitude = look([0.1, 0.3, 0.9])
    truth = rotations.multiply(rotations.from_matrix(st.KERBOL_FROM_KCI), attitude)
    errors = []
    ut = 10.0
    for _ in range(6000):
        ut += DT
        state, out = st.step(cfg, state, inputs(ut, attitude=attitude), DT, rng)
        if out['reason'] != 'tracking':
            continue
        q = np.array(out['orientation'])
        d = rotations.multiply(rotations.conjugate(truth), q)
        d = d if d[3] >= 0 else -d
        errors.append(2.0 * d[:3])      # small-angle rotation vector in base_link axes
    errors = np.array(errors) / ARCSEC
    assert len(errors) >= 5000
    assert errors.std(axis=0) == pytest.approx([20.0] * 3, rel=0.05)
    assert np.all(np.abs(errors.mean(axis=0)) < 1.0)
    # independent axes
    corr = np.corrcoef(errors.T)
    assert np.all(np.abs(corr[np.triu_indices(3, 1)]) < 0.05)


def test_same_seed_same_noise():
    a, b = Run(seed=5), Run(seed=5)
    sa = a.for_seconds(3.0)
    sb = b.for_seconds(3.0)
    assert sa == sb


# -- configuration -------------------------------------------------------------------------


def test_config_from_the_orbit_scenario_part():
    part = orbit_tracker_part()
    cfg = st.StarTrackerConfig.from_part(part)
    assert cfg.sensor_id == 'star_tracker_main'
    assert cfg.field_of_view_deg == 20.0 and cfg.sun_exclusion_deg == 35.0
    assert cfg.body_limb_margin_deg == 5.0 and cfg.max_angular_rate_deg == 2.0
    assert cfg.acquisition_seconds == 2.0 and cfg.noise_arcsec == 20.0
    assert cfg.electric_charge_per_second == 0.05 and cfg.sample_rate_hz == 5.0
    assert cfg.boresight_vessel == pytest.approx([0.0, 0.0, 1.0], abs=1e-9)
    assert cfg.part_persistent_id == part.persistent_id
    assert part.shape == Shape('box', st.PART_SIZE) and part.dry_mass == st.PART_MASS


def test_settings_are_clamped_and_ids_generated():
    part = orbit_tracker_part()
    module = replace(part.modules_of('star_tracker')[0],
                     settings={'fieldOfViewDegrees': 90.0, 'sample_rate_hz': 50})
    cfg = st.StarTrackerConfig.from_part(part, module, random.Random(4))
    assert cfg.field_of_view_deg == 60.0 and cfg.sample_rate_hz == 20.0
    assert cfg.sensor_id.startswith('star_tracker_') and len(cfg.sensor_id) == 21
    assert st.default_sensor_id(None, random.Random(4)) == cfg.sensor_id
    assert st.default_sensor_id('My Tracker!') == 'my_tracker'


# -- rays ------------------------------------------------------------------------------------


def test_fov_rays_are_17_within_the_half_fov():
    axis = np.array([0.0, 0.6, 0.8])
    rays = st.fov_rays(axis, math.radians(10.0))
    assert rays.shape == (17, 3)
    angles = np.degrees(np.arccos(np.clip(rays @ axis, -1, 1)))
    assert sorted(np.round(angles, 6)) == [0.0] + [5.0] * 8 + [10.0] * 8
    assert np.linalg.norm(rays, axis=1) == pytest.approx(np.ones(17))
