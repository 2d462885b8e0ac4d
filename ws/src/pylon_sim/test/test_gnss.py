"""The GNSS receiver (our extension): its noise model, fix rule, conversions and loop.

The pure model first (``gnss.measure`` on a given truth, ``gnss.offset_position``,
``gnss.antenna_truth`` on a hand-made vessel), then the receiver in the simulator on the
surface scenario's rover, whose standing place the scenario gives.
"""

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from pylon_protocol import packets, rotations
from pylon_sim.game.bodies import KERBIN, MUN
from pylon_sim.loop.scenario import load_scenario, ScenarioError
from pylon_sim.sensors import gnss
from pylon_sim.sensors.gnss_loop import noise_for
import pytest
import yaml

R = KERBIN.radius
TRUTH = gnss.Truth('Kerbin', R, 12.5, -74.7, 120.0)
SENSOR = 'gnss'


def enu_error(fix: gnss.Fix, truth: gnss.Truth) -> np.ndarray:
    """Return a fix's error in metres East, North, Up at the truth (the inverse conversion)."""
    radius = truth.body_radius + truth.altitude
    north = math.radians(fix.latitude - truth.latitude) * radius
    east = math.radians(fix.longitude - truth.longitude) * radius \
        * math.cos(math.radians(truth.latitude))
    return np.array([east, north, fix.altitude - truth.altitude])


def test_noise_is_white_gaussian_with_the_set_sigmas_per_enu_axis():
    settings = gnss.Settings()
    assert (settings.horizontal_sigma, settings.vertical_sigma) == (0.2, 0.4)
    rng, n = np.random.default_rng(11), 2000
    errors = np.array([enu_error(gnss.measure(TRUTH, rng, settings), TRUTH) for _ in range(n)])
    sigma = np.array([0.2, 0.2, 0.4])
    assert np.all(np.abs(errors.mean(axis=0)) < 3 * sigma / math.sqrt(n)), errors.mean(axis=0)
    assert np.all(np.abs(errors.std(axis=0) / sigma - 1.0) < 0.1), errors.std(axis=0)
    # independent axes, and white: no correlation between axes nor from one fix to the next
    assert np.all(np.abs(np.corrcoef(errors.T) - np.eye(3)) < 0.1)
    for axis in range(3):
        assert abs(np.corrcoef(errors[:-1, axis], errors[1:, axis])[0, 1]) < 0.1


def test_a_fix_below_the_limit_none_above_and_the_covariance_either_way():
    settings = gnss.Settings(horizontal_sigma=0.3, vertical_sigma=0.5)
    rng = np.random.default_rng(1)
    below = gnss.measure(gnss.Truth('Kerbin', R, 0.0, 0.0, 69_999.0), rng, settings)
    above = gnss.measure(gnss.Truth('Kerbin', R, 0.0, 0.0, 70_000.0), rng, settings)
    assert below.status == packets.GNSS_FIX and below.altitude is not None
    assert above == gnss.Fix(packets.GNSS_NO_FIX, None, None, None, (0.09, 0.09, 0.25))
    assert below.covariance == pytest.approx((0.09, 0.09, 0.25), rel=1e-12)
    low = gnss.Settings(max_altitude_m=100.0)
    assert gnss.measure(TRUTH, rng, low).status == packets.GNSS_NO_FIX      # 120 m


def test_metres_to_degrees_exact_at_the_equator_and_at_60_degrees():
    degree = math.degrees(1.0 / (R + 50.0))     # 1 m along the sphere through the antenna
    equator = gnss.Truth('Kerbin', R, 0.0, 10.0, 50.0)
    assert gnss.offset_position(equator, 3.0, -2.0, 1.5) == pytest.approx(
        (-2.0 * degree, 10.0 + 3.0 * degree, 51.5), rel=1e-14, abs=1e-15)
    sixty = gnss.Truth('Kerbin', R, 60.0, -20.0, 50.0)   # cos 60 deg = 1/2: east counts twice
    lat, lon, alt = gnss.offset_position(sixty, 3.0, 2.0, 0.0)
    assert lat == pytest.approx(60.0 + 2.0 * degree, rel=1e-15)
    assert lon == pytest.approx(-20.0 + 6.0 * degree, rel=1e-13)
    assert alt == 50.0
    # across the antimeridian and over a pole the values stay in range
    assert gnss.offset_position(gnss.Truth('Mun', MUN.radius, 0.0, 180.0, 0.0), 1.0, 0.0,
                                0.0)[1] < -179.99
    lat, lon, _ = gnss.offset_position(gnss.Truth('Kerbin', R, 90.0, 0.0, 0.0), 0.0, 1.0, 0.0)
    assert lat < 90.0 and lon == pytest.approx(-180.0)


def test_the_antenna_is_the_part_origin_carried_by_the_attitude():
    # at UT 0 Kerbin's fixed frame is the inertial one; the vessel's base_link +X points
    # north (a quarter turn about -Y takes +X to +Z) and the part sits 10 m along it
    vessel = SimpleNamespace(
        body=KERBIN, mass=SimpleNamespace(com=(1.0, 0.0, 0.0)),
        state=SimpleNamespace(position=np.array([R + 100.0, 0.0, 0.0]),
                              attitude=rotations.from_axis_angle((0.0, -1.0, 0.0),
                                                                 math.pi / 2)))
    part = SimpleNamespace(position=(11.0, 0.0, 0.0))
    truth = gnss.antenna_truth(vessel, part, 0.0)
    assert truth.body_name == 'Kerbin' and truth.body_radius == R
    assert truth.latitude == pytest.approx(math.degrees(math.atan2(10.0, R + 100.0)), rel=1e-12)
    assert truth.longitude == pytest.approx(0.0, abs=1e-12)
    assert truth.altitude == pytest.approx(math.hypot(R + 100.0, 10.0) - R, abs=1e-9)


def test_a_seed_gives_the_same_fixes_and_each_receiver_its_own_stream():
    def fixes(seed, sensor):
        rng = noise_for(seed, sensor)
        return [gnss.measure(TRUTH, rng, gnss.Settings()) for _ in range(5)]
    assert fixes(4, SENSOR) == fixes(4, SENSOR)
    assert fixes(4, SENSOR) != fixes(5, SENSOR) and fixes(4, SENSOR) != fixes(4, 'gnss_aft')


# -- settings at load ------------------------------------------------------------------------

def _with(tmp_path, **settings) -> str:
    data = yaml.safe_load(Path(load_scenario('surface').path).read_text())
    data['vessels'][0]['parts'][0]['modules'].append({'kind': 'gnss', 'index': 1, **settings})
    path = tmp_path / 'gnss.yaml'
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize('settings, key, what', [
    ({'rate_hz': 25}, 'rate_hz', 'must be within [1, 20]'),
    ({'horizontal_sigma': -0.1}, 'horizontal_sigma', 'must be within [0, inf]'),
    ({'vertical_sigma': 'low'}, 'vertical_sigma', 'must be a finite number'),
    ({'max_altitude_m': 0}, 'max_altitude_m', 'must be within (0, inf]'),
    ({'frame_id': 'GNSS link'}, 'frame_id', 'must be "" or match'),
    ({'frame_id': 3}, 'frame_id', 'must be "" or match'),
    ({'sigma': 1}, 'sigma', 'unknown setting'),
])
def test_settings_are_checked_at_load(tmp_path, settings, key, what):
    with pytest.raises(ScenarioError) as info:
        load_scenario(_with(tmp_path, **settings))
    assert f': vessels[0].parts[0].modules[1].{key}: ' in str(info.value), str(info.value)
    assert what in str(info.value)


def test_defaults_and_generated_id(tmp_path):
    assert gnss.Settings.from_module({}) == gnss.Settings(
        rate_hz=10.0, horizontal_sigma=0.2, vertical_sigma=0.4, max_altitude_m=70_000.0,
        frame_id='')
    [module] = load_scenario(_with(tmp_path, frame_id='gnss_link')).vessel(
        'rover').spec.parts[0].modules_of('gnss')
    assert module.get('sensor_id').startswith('gnss_')
    assert gnss.Settings.from_module(module.settings).frame_id == 'gnss_link'


# -- in the simulator: the rover standing on the surface scenario -----------------------------

def rover(**settings) -> dict:
    """Return ``write_scenario``'s ``modules``: a receiver on the rover's body (root part)."""
    return {'rover': {'roverBody.v2': [{'kind': 'gnss', 'index': 1, 'sensor_id': SENSOR,
                                        **settings}]}}


def test_the_rover_receives_its_standing_place_at_the_rate(harness):
    h = harness('surface', modules=rover(horizontal_sigma=0.0, vertical_sigma=0.0,
                                         frame_id='gnss_link'))
    h.run(2.0)
    fixes = h.of('pylon_gnss')
    assert [f['sequence'] for f in fixes] == list(range(1, len(fixes) + 1))
    assert len({f['sessionId'] for f in fixes}) == 1
    times = [f['universalTime'] for f in fixes]
    assert (len(times) - 1) / (times[-1] - times[0]) == pytest.approx(10.0, rel=0.02)
    last = fixes[-1]
    assert (last['status'], last['bodyName'], last['frameId']) == ('fix', 'Kerbin', 'gnss_link')
    assert (last['partFlightId'], last['vesselId']) == (8700001, h.vessel_id)
    assert last['positionCovariance'] == [0.0, 0.0, 0.0]
    # the scenario stands the centre of mass at (-0.0486, -74.7247), 0.444 m up; the
    # antenna, the root part's origin, is within a metre of it (m per degree: R pi / 180)
    metre = math.degrees(1.0 / R)
    assert abs(last['latitude'] + 0.0486) < metre and abs(last['longitude'] + 74.7247) < metre
    assert abs(last['altitude'] - 0.44413) < 1.0
    com = np.asarray(h.sim.world.active.mass.com)         # the lever arm: level, east ahead
    assert last['altitude'] == pytest.approx(0.44413 - com[2], abs=0.02)
