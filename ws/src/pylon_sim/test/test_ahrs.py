"""The AHRS (our extension): its noise model, drift, truth and loop.

The pure model first (``ahrs.measure`` on a given truth, ``ahrs.attitude_truth`` on a
hand-made vessel), then the sensor in the simulator on the surface scenario's rover, whose
orientation the ground truth gives.
"""

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from pylon_protocol import rotations
from pylon_sim.game.bodies import KERBIN
from pylon_sim.loop.scenario import load_scenario, ScenarioError
from pylon_sim.sensors import ahrs
from pylon_sim.sensors.gnss_loop import noise_for
import pytest
import yaml

R = KERBIN.radius
TRUTH = rotations.from_rpy(0.1, -0.05, 1.2)     # base_link in ENU: a tilted kart heading NNE


def errors(samples, truth=TRUTH) -> np.ndarray:
    """Return each sample's error rotation about East, North, Up (rad): measured * truth^-1."""
    inverse = rotations.conjugate(truth)
    return np.array([rotations.to_rotvec(rotations.multiply(s.orientation, inverse))
                     for s in samples])


def run(settings, n, dt=0.02, seed=11):
    rng, drift, out = np.random.default_rng(seed), ahrs.Drift(), []
    for i in range(n):
        sample = ahrs.measure(TRUTH, drift, 0.0 if i == 0 else dt, rng, settings)
        drift = sample.drift
        out.append(sample)
    return out


def test_defaults_are_the_stated_numbers():
    assert ahrs.Settings() == ahrs.Settings(rate_hz=50.0, roll_pitch_sigma=0.0035,
                                            yaw_sigma=0.0087, yaw_bias_walk=0.0005)
    assert ahrs.Settings.from_module({}) == ahrs.Settings()


def test_white_noise_has_zero_mean_and_the_set_sigmas_about_enu_axes():
    settings, n = ahrs.Settings(yaw_bias_walk=0.0), 3000
    e = errors(run(settings, n))
    sigma = np.array([0.0035, 0.0035, 0.0087])
    assert np.all(np.abs(e.mean(axis=0)) < 3 * sigma / math.sqrt(n)), e.mean(axis=0)
    assert np.all(np.abs(e.std(axis=0) / sigma - 1.0) < 0.06), e.std(axis=0)
    assert np.all(np.abs(np.corrcoef(e.T) - np.eye(3)) < 0.1)
    for axis in range(3):                  # white: no correlation from one sample to the next
        assert abs(np.corrcoef(e[:-1, axis], e[1:, axis])[0, 1]) < 0.1
    assert all(abs(np.linalg.norm(s.orientation) - 1.0) < 1e-12 for s in run(settings, 5))


def test_without_noise_the_measurement_is_the_truth():
    quiet = ahrs.Settings(roll_pitch_sigma=0.0, yaw_sigma=0.0, yaw_bias_walk=0.0)
    for sample in run(quiet, 3):
        assert rotations.angle_between(sample.orientation, TRUTH) < 1e-12
        assert sample.covariance == (0.0, 0.0, 0.0)


def test_the_yaw_bias_walks_as_sqrt_time_and_the_covariance_says_so():
    # 300 sensors for 100 s at 1 Hz: the heading bias's spread is walk * sqrt(100 s); the
    # tilt keeps none; the reported yaw variance is sigma^2 + walk^2 t
    walk, n, dt, count = 0.0005, 100, 1.0, 300
    settings = ahrs.Settings(roll_pitch_sigma=0.0, yaw_sigma=0.0, yaw_bias_walk=walk)
    last = [run(settings, n + 1, dt, seed)[-1] for seed in range(count)]
    biases = np.array([s.drift.bias for s in last])
    spread = walk * math.sqrt(n * dt)                       # 0.005 rad after 100 s
    assert abs(biases.mean()) < 3 * spread / math.sqrt(count)
    assert biases.std() == pytest.approx(spread, rel=0.12)
    assert errors(last)[:, 2] == pytest.approx(biases, abs=1e-12)
    assert last[0].drift.elapsed == pytest.approx(100.0)
    assert last[0].covariance == pytest.approx((0.0, 0.0, walk ** 2 * 100.0), rel=1e-9)
    # consecutive biases move by walk * sqrt(dt): a random walk, not white
    e = errors(run(settings, 200, dt))[:, 2]
    assert np.diff(e).std() == pytest.approx(walk * math.sqrt(dt), rel=0.15)


def test_a_seed_gives_the_same_samples_and_each_sensor_its_own_stream():
    def samples(seed, sensor):
        rng, drift, out = noise_for(seed, sensor), ahrs.Drift(), []
        for _ in range(5):
            s = ahrs.measure(TRUTH, drift, 0.02, rng, ahrs.Settings())
            drift = s.drift
            out.append(s)
        return out
    assert samples(4, 'ahrs') == samples(4, 'ahrs')
    assert samples(4, 'ahrs') != samples(5, 'ahrs') != samples(4, 'ahrs_2')


def test_the_truth_is_base_link_in_the_enu_below_the_vessel():
    # at UT 0 Kerbin's fixed frame is the inertial one; at latitude 0, longitude 90 East is
    # -X, North +Z, Up +Y. base_link +X along inertial +Z (north), +Y along +X (west), +Z
    # along +Y (up): level, heading north, so in ENU a quarter turn about Up
    to_inertial = rotations.from_matrix(np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0],
                                                  [1.0, 0.0, 0.0]]))
    vessel = SimpleNamespace(body=KERBIN, state=SimpleNamespace(
        position=np.array([0.0, R + 5.0, 0.0]), attitude=to_inertial))
    truth = ahrs.attitude_truth(vessel, 0.0)
    level_north = rotations.from_axis_angle((0.0, 0.0, 1.0), math.pi / 2)
    assert rotations.angle_between(truth, level_north) < 1e-12


# -- settings at load ------------------------------------------------------------------------

def _with(tmp_path, **settings) -> str:
    data = yaml.safe_load(Path(load_scenario('surface').path).read_text())
    data['vessels'][0]['parts'][0]['modules'].append({'kind': 'ahrs', 'index': 1, **settings})
    path = tmp_path / 'ahrs.yaml'
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize('settings, key, what', [
    ({'rate_hz': 5}, 'rate_hz', 'must be within [10, 100]'),
    ({'roll_pitch_sigma': -0.1}, 'roll_pitch_sigma', 'must be within [0, 1]'),
    ({'yaw_sigma': 'low'}, 'yaw_sigma', 'must be a finite number'),
    ({'yaw_bias_walk': 0.2}, 'yaw_bias_walk', 'must be within [0, 0.1]'),
    ({'frame_id': 'imu_link'}, 'frame_id', 'unknown setting'),
])
def test_settings_are_checked_at_load(tmp_path, settings, key, what):
    with pytest.raises(ScenarioError) as info:
        load_scenario(_with(tmp_path, **settings))
    assert f': vessels[0].parts[0].modules[1].{key}: ' in str(info.value), str(info.value)
    assert what in str(info.value)


# -- in the simulator: the rover standing on the surface scenario -----------------------------

def test_the_rover_measures_its_ground_truth_orientation_before_each_imu_sample(harness):
    h = harness('surface', modules={'rover': {'roverBody.v2': [
        {'kind': 'ahrs', 'index': 1, 'sensor_id': 'ahrs', 'roll_pitch_sigma': 0.0,
         'yaw_sigma': 0.0, 'yaw_bias_walk': 0.0}]}})
    h.run(1.0)
    samples = h.of('pylon_ahrs')
    assert [s['sequence'] for s in samples] == list(range(1, len(samples) + 1))
    times = [s['universalTime'] for s in samples]
    assert (len(times) - 1) / (times[-1] - times[0]) == pytest.approx(50.0, rel=0.02)
    assert (samples[-1]['partFlightId'], samples[-1]['vesselId']) == (8700001, h.vessel_id)
    # the rover stands at the ground truth's ENU origin: its truth is the ground truth's
    truth = {gt['universalTime']: gt['rotation'] for gt in h.of('pylon_ground_truth')}
    matched = [(s['orientation'], truth[s['universalTime']]) for s in samples
               if s['universalTime'] in truth]
    assert len(matched) >= 20
    assert max(rotations.angle_between(a, b) for a, b in matched) < 1e-6
    # in a frame the AHRS goes before the IMU: the bridge has the IMU's own orientation
    order = [(p['type'], p['universalTime']) for p in h.capture.packets
             if p['type'] in ('pylon_ahrs', 'pylon_imu')]
    for i, (kind, ut) in enumerate(order):
        if kind == 'pylon_imu':
            assert ('pylon_ahrs', ut) in order[:i]
