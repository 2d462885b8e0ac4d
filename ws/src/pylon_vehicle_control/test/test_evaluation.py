"""Evaluator helpers: attitude errors, ENU->inertial alignment, velocity transport, statistics."""

import math

import numpy as np
from pylon_protocol import rotations
from pylon_vehicle_control import evaluation as ev
from pylon_vehicle_control.estimator import ARCSEC
import pytest

KERBIN_RATE = 2.0 * math.pi / 21549.425  # rad/s, sidereal
LATITUDE = math.radians(-0.0972)


def frame_rate_enu(latitude=LATITUDE, rate=KERBIN_RATE):
    """Planet spin expressed in local ENU axes (E, N, U)."""
    return rate * np.array([0.0, math.cos(latitude), math.sin(latitude)])


class World:
    """Inertial truth and the rotating ENU frame: q_I_E(t) = q_I_E0 ⊗ exp(ω_f t)."""

    def __init__(self, rng):
        self.q_ie0 = rotations.canonical(rng.normal(size=4))
        self.omega_f = frame_rate_enu()
        self.q_ib0 = rotations.canonical(rng.normal(size=4))
        self.w_body = np.array([0.01, -0.02, 0.015])

    def q_ie(self, t):
        return rotations.multiply(self.q_ie0, rotations.from_rotvec(self.omega_f * t))

    def q_ib(self, t):
        return rotations.multiply(self.q_ib0, rotations.from_rotvec(self.w_body * t))

    def q_eb(self, t):
        return rotations.multiply(rotations.conjugate(self.q_ie(t)), self.q_ib(t))


def jitter(rng, q, sigma=20 * ARCSEC):
    """Return ``q`` turned by a random body-axis rotation of ``sigma`` rad per axis."""
    return rotations.multiply(q, rotations.from_rotvec(rng.normal(scale=sigma, size=3)))


def test_error_angles_and_body_axis_error():
    q = rotations.canonical([0.1, -0.3, 0.2, 0.9])
    d = rotations.from_rotvec([0.0, 0.0, 100 * ARCSEC])
    q_err = rotations.multiply(q, d)
    assert ev.attitude_error_arcsec(q_err, q) == pytest.approx(100.0, rel=1e-9)
    assert ev.attitude_error_deg(q_err, q) == pytest.approx(100.0 / 3600.0, rel=1e-9)
    assert ev.attitude_error_arcsec(-q_err, q) == pytest.approx(100.0, rel=1e-9)  # double cover
    np.testing.assert_allclose(ev.body_axis_error(q_err, q) / ARCSEC, [0, 0, 100], atol=1e-9)
    half_turn = rotations.from_rotvec([math.pi, 0, 0])
    assert ev.attitude_error_deg(half_turn, [0, 0, 0, 1]) == pytest.approx(180)


def test_average_quaternions_ignores_sign_and_averages_noise():
    rng = np.random.default_rng(11)
    q = rotations.canonical(rng.normal(size=4))
    samples = [jitter(rng, q) * s for s in rng.choice([-1.0, 1.0], size=400)]
    avg = ev.average_quaternions(samples)
    assert ev.attitude_error_arcsec(avg, q) < 20.0 * 3 / math.sqrt(400) * 2


def test_alignment_propagation_matches_the_rotating_frame():
    rng = np.random.default_rng(12)
    world = World(rng)
    align = ev.EnuInertialAlignment(
        ev.alignment_from_pair(world.q_ib(0.0), world.q_eb(0.0)), 0.0, world.omega_f)
    np.testing.assert_allclose(align.q, rotations.canonical(world.q_ie0), atol=1e-12)
    for k in range(1, 601):
        align.advance(k * 0.5, world.omega_f)
    assert align.stamp == pytest.approx(300.0)
    assert ev.attitude_error_arcsec(align.q, world.q_ie(300.0)) < 1e-6
    assert ev.attitude_error_arcsec(align.attitude_to_inertial(world.q_eb(300.0)),
                                    world.q_ib(300.0)) < 1e-6
    assert ev.attitude_error_arcsec(align.at(310.0), world.q_ie(310.0)) < 1e-6
    # Not carrying the frame forward is wrong by Ω t (~ 18000" after 300 s).
    assert ev.attitude_error_arcsec(world.q_ie0, world.q_ie(300.0)) > 10000.0


def test_from_pairs_averages_the_alignment_noise():
    rng = np.random.default_rng(13)
    world = World(rng)
    stamps = np.arange(50) * 0.2
    est = [jitter(rng, world.q_ib(t)) for t in stamps]
    truth = [world.q_eb(t) for t in stamps]
    one = ev.EnuInertialAlignment.from_pairs(stamps[:1], est[:1], truth[:1], world.omega_f)
    many = ev.EnuInertialAlignment.from_pairs(stamps, est, truth, world.omega_f)
    err_one = ev.attitude_error_arcsec(one.q, world.q_ie0)
    err_many = ev.attitude_error_arcsec(many.q, world.q_ie0)
    print(f'alignment error: 1 pair {err_one:.2f}", 50 pairs {err_many:.2f}"')
    assert err_many < 10.0
    assert many.stamp == 0.0


def test_evaluate_attitude_recovers_injected_errors():
    rng = np.random.default_rng(14)
    world = World(rng)
    truth_t = np.arange(0.0, 200.0, 0.05)
    frame_t = np.arange(0.0, 200.0, 1.0)
    frame_w = np.tile(world.omega_f, (len(frame_t), 1))
    est_t = np.arange(0.013, 199.0, 0.2)  # off the truth grid, within tolerance 0.02 s
    injected = np.where((est_t > 100.0)[:, None], [0.0, 60.0, 0.0], 0.0) * ARCSEC
    est_q = [rotations.multiply(world.q_ib(t), rotations.from_rotvec(e))
             for t, e in zip(est_t, injected)]
    truth_q = [world.q_eb(t) for t in truth_t]
    result = ev.evaluate_attitude(est_t, est_q, truth_t, truth_q, frame_t, frame_w,
                                  tolerance=0.02)
    assert len(result.times) == len(est_t)
    # The truth is sampled up to 13 ms away from the estimate: 13 ms × |w_body| ~ 72" of motion,
    # so compare with the injected error at the truth's instant.
    est_at_truth = [rotations.multiply(world.q_ib(t), rotations.from_rotvec(e)) for t, e in
                    zip(result.times, injected)]
    truth_inertial = [world.q_ib(t) for t in result.times]
    expected = np.array([ev.body_axis_error(a, b) for a, b in
                         zip(est_at_truth, truth_inertial)]) / ARCSEC
    np.testing.assert_allclose(result.body_error_arcsec, expected, atol=1e-3)
    late = ev.rms_statistics(result.body_error_arcsec, result.times, t_min=100.0)
    np.testing.assert_allclose(late['rms'], [0.0, 60.0, 0.0], atol=1e-3)
    # Without the frame rate the same data show a growing error of Ω t.
    still = ev.evaluate_attitude(est_t, est_q, truth_t, truth_q, frame_t, frame_w * 0.0)
    assert still.angle_arcsec[-1] > 5000.0


def test_evaluate_attitude_on_synchronised_estimate_with_noise():
    rng = np.random.default_rng(15)
    world = World(rng)
    t = np.arange(0.0, 100.0, 0.2)
    noise = rng.normal(scale=10 * ARCSEC, size=(len(t), 3))
    est_q = [rotations.multiply(world.q_ib(s), rotations.from_rotvec(e)) for s, e in zip(t, noise)]
    truth_q = [world.q_eb(s) for s in t]
    res = ev.evaluate_attitude(t, est_q, t, truth_q, t, np.tile(world.omega_f, (len(t), 1)),
                               n_align=100)
    stats = ev.rms_statistics(res.body_error_arcsec)
    print('evaluated RMS per axis (arcsec):', stats['rms'])
    assert np.all(np.abs(stats['rms'] - 10.0) < 2.0)
    empty = ev.evaluate_attitude(t, est_q, t + 0.1, truth_q, [0.0], [world.omega_f],
                                 tolerance=0.01)
    assert empty.alignment is None and len(empty.times) == 0


def test_velocity_transport():
    omega = frame_rate_enu(latitude=0.0)
    r = np.array([0.0, 0.0, 600_000.0 + 75.0])  # on the equator, planet-centred, ENU axes
    # At rest on the ground: inertial speed Ω R eastwards (174.5 m/s on Kerbin).
    v = ev.transport_velocity([0.0, 0.0, 0.0], r, omega)
    np.testing.assert_allclose(v, [-KERBIN_RATE * r[2], 0.0, 0.0] if omega[1] < 0 else
                               [KERBIN_RATE * r[2], 0.0, 0.0], rtol=1e-12)
    assert np.linalg.norm(v) == pytest.approx(174.5, abs=0.5)
    # A vessel moving uniformly in inertial space, observed from the rotating ENU frame.
    rng = np.random.default_rng(16)
    world = World(rng)
    r0 = np.array([7.0e5, -1.0e5, 2.0e5])
    v_inertial = np.array([100.0, 2200.0, -50.0])

    def r_enu(t):
        return rotations.rotate(rotations.conjugate(world.q_ie(t)), r0 + v_inertial * t)

    t, h = 40.0, 1e-3
    v_enu = (r_enu(t + h) - r_enu(t - h)) / (2 * h)
    back = ev.transport_velocity(v_enu, r_enu(t), world.omega_f, world.q_ie(t))
    np.testing.assert_allclose(back, v_inertial, atol=1e-3)
    # Without the transport term the error is |ω_f × r| (tens of m/s here).
    missing = np.linalg.norm(rotations.rotate(world.q_ie(t), v_enu) - v_inertial)
    assert missing == pytest.approx(np.linalg.norm(np.cross(world.omega_f, r_enu(t))), rel=1e-6)
    assert missing > 30.0
    disp = ev.relative_inertial_position(r_enu(t), world.q_ie(t), r_enu(0.0), world.q_ie(0.0))
    np.testing.assert_allclose(disp, v_inertial * t, atol=1e-6)


def test_synchronise_and_statistics():
    pairs = ev.synchronise([0.0, 0.1, 0.26, 0.5], [0.0, 0.09, 0.2, 0.3, 0.49], 0.015)
    assert pairs == [(0, 0), (1, 1), (3, 4)]
    assert ev.synchronise([1.0], [], 0.1) == []
    stats = ev.rms_statistics([[3.0, 0.0], [-3.0, 4.0]])
    np.testing.assert_allclose(stats['rms'], [3.0, math.sqrt(8.0)])
    np.testing.assert_allclose(stats['mean'], [0.0, 2.0])
    np.testing.assert_allclose(stats['max_abs'], [3.0, 4.0])
    assert stats['rms_norm'] == pytest.approx(math.sqrt((9 + 9 + 16) / 2))
    assert ev.rms_statistics([1.0, 2.0], times=[0.0, 1.0], t_min=0.5)['count'] == 1
    assert ev.rms_statistics([1.0], times=[0.0], t_min=0.5)['count'] == 0


def test_plot_writes_a_png_with_matplotlib(tmp_path):
    path = tmp_path / 'err.png'
    t = np.linspace(0.0, 10.0, 50)
    written = ev.plot_error_series(
        path, t, {'angle': np.abs(np.sin(t)), 'body': np.stack([t, -t, t * 0], axis=1)},
        title='test')
    assert written == path
    assert path.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert path.stat().st_size > 10_000          # axes, labels and four lines, not a blank


def test_estimator_output_evaluated_against_enu_truth():
    """End to end: the MEKF on simulated sensors, judged in the rotating ENU frame."""
    from pylon_vehicle_control.estimator import AttitudeEstimator

    rng = np.random.default_rng(17)
    world = World(rng)
    cov = list((np.eye(3) * (20 * ARCSEC) ** 2).ravel())
    filt = AttitudeEstimator()
    est_t, est_q = [], []
    for k in range(1, 2401):
        t = k * 0.05
        filt.add_imu(t, world.w_body, [0.0, 0.0, 0.0])
        if k % 4 == 0:
            q_m = jitter(rng, world.q_ib(t))
            filt.add_star_tracker(t, q_m, cov)
        if filt.initialized and t >= 20.0:
            est_t.append(t)
            est_q.append(filt.output().quaternion)
    truth_t = np.arange(0.0, 121.0, 0.05)
    res = ev.evaluate_attitude(est_t, est_q, truth_t, [world.q_eb(t) for t in truth_t],
                               [0.0], [world.omega_f], tolerance=0.01, n_align=200)
    stats = ev.rms_statistics(res.body_error_arcsec)
    print('estimator vs ENU truth RMS per axis (arcsec):', stats['rms'], stats['count'])
    assert stats['count'] == len(est_t)
    assert np.all(stats['rms'] < 30.0)
