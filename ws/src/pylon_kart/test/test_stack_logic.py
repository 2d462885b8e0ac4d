"""The reference stack's plain logic: the trajectory, pure pursuit, the localizer's EKF.

Pure pursuit drives a kinematic bicycle model (the kart's wheelbase, its steering limit, a
first-order steering lag and a command delay) around the ``kart`` track from grid slot 0;
the EKF follows a kart driving a circle, from synthetic GNSS, gyro and speed with a seed.
"""

from collections import deque
import math

import numpy as np
from pylon_kart import localizer, pure_pursuit, trajectory
from pylon_kart.kart_limits import G, KART
from pylon_track import load_track
import pytest

TRACK = load_track('kart')
SHIPPED = trajectory.read_csv(trajectory.shipped_path('kart'))


# -- the trajectory --------------------------------------------------------------------------
def test_the_shipped_file_is_what_the_tool_writes(tmp_path, capsys):
    assert trajectory.main(['--track', 'kart']) == 0
    written = capsys.readouterr().out
    assert written == trajectory.shipped_path('kart').read_text(encoding='utf-8')
    out = tmp_path / 'k.csv'
    assert trajectory.main(['--track', 'kart', '-o', str(out), '--max-speed', '5']) == 0
    assert trajectory.read_csv(out).speed.max() == pytest.approx(5.0)
    assert trajectory.main(['--track', 'nowhere']) == 2
    assert 'not found' in capsys.readouterr().err


def test_the_trajectory_is_the_centreline_every_metre():
    n = len(SHIPPED)
    assert n == round(TRACK.length)                                 # 387 points
    steps = np.hypot(*np.diff(np.vstack([SHIPPED.xy, SHIPPED.xy[:1]]), axis=0).T)
    assert steps.max() <= 1.0 + 1e-3 and steps.min() > 0.99
    where = TRACK.project(SHIPPED.xy)
    assert np.abs(where.lateral).max() < 1e-3
    yaw_error = np.angle(np.exp(1j * (SHIPPED.yaw - where.heading)))
    assert np.abs(yaw_error).max() < 1e-3
    assert (SHIPPED.x[0], SHIPPED.y[0]) == (-25.0, -37.5)           # the start line


def test_the_speed_profile_respects_the_limits():
    limits = trajectory.ProfileLimits()
    v, ds = SHIPPED.speed, TRACK.length / len(SHIPPED)
    k = np.abs(TRACK.curvature_at(TRACK.length / len(SHIPPED) * np.arange(len(SHIPPED))))
    assert np.all(v <= limits.max_speed + 1e-4)
    assert np.all(v ** 2 * k <= limits.lateral_acceleration + 1e-3)
    assert v.max() == pytest.approx(10.0) and v.min() == pytest.approx(math.sqrt(0.6 * G * 10),
                                                                       abs=1e-3)   # hairpin
    # around the loop (the last point leads to the first): v'^2 - v^2 = 2 a ds
    dv2 = np.diff(np.append(v, v[0]) ** 2) / (2 * ds)
    assert dv2.max() <= limits.acceleration + 1e-2
    assert dv2.min() >= -limits.deceleration - 1e-2
    assert dv2.min() < -0.9 * limits.deceleration             # it does brake hard at the hairpin
    assert limits.lateral_acceleration < KART.max_lateral_acceleration


@pytest.mark.parametrize('text, why', [
    ('x,y,z\n1,2,3\n', 'header'),
    ('x,y,z,x_quat,y_quat,z_quat,w_quat,speed\n0,0,0,0,0,0,1,1\n1,0,0,0,0,0,1,nan\n',
     'finite'),
    ('x,y,z,x_quat,y_quat,z_quat,w_quat,speed\n0,0,0,0,0,0,1,1\n1,0,0,0,0,0,2,1\n', 'norm'),
    ('x,y,z,x_quat,y_quat,z_quat,w_quat,speed\n0,0,0,0,0,0,1,1\n', 'at least 3'),
    ('x,y,z,x_quat,y_quat,z_quat,w_quat,speed\n0,0,0,0,0,0,1,one\n', 'line 2')])
def test_a_bad_csv_is_refused_saying_why(text, why):
    with pytest.raises(trajectory.TrajectoryError, match=why):
        trajectory.parse_csv(text)


def test_csv_round_trip_keeps_the_heading():
    again = trajectory.parse_csv(trajectory.format_csv(SHIPPED))
    assert np.abs(np.angle(np.exp(1j * (again.yaw - SHIPPED.yaw)))).max() < 1e-3
    assert np.array_equal(again.speed, SHIPPED.speed)


# -- pure pursuit ----------------------------------------------------------------------------
def drive(params: pure_pursuit.PursuitParams, lag: float, delay_steps: int, dt: float = 0.01):
    """Drive one lap from grid slot 0; return (s travelled, lateral error, clamped) per step.

    The bicycle model's reference is the rear axle; base_link is ``rear_offset`` ahead.
    The steering follows the command delayed ``delay_steps`` steps through a first-order
    lag of ``lag`` s; the acceleration is cut to the kart's.
    """
    x, y, yaw = TRACK.grid_pose(0)
    v, delta, travelled, rows = 0.0, 0.0, 0.0, []
    pending = deque([0.0] * delay_steps)
    xy = SHIPPED.xy
    while travelled < TRACK.length + 10.0:
        cmd = pure_pursuit.control(SHIPPED, pure_pursuit.KartState(x, y, yaw, v), params, xy)
        assert abs(cmd.steering) <= KART.max_steering_tire_angle
        pending.append(cmd.steering)
        delta += (pending.popleft() - delta) * min(dt / lag, 1.0)
        a = min(max(cmd.acceleration, -KART.max_deceleration), KART.max_acceleration)
        back = params.rear_offset
        rx, ry = x - back * math.cos(yaw), y - back * math.sin(yaw)
        rx, ry = rx + v * math.cos(yaw) * dt, ry + v * math.sin(yaw) * dt
        yaw += v * math.tan(delta) / KART.wheelbase * dt
        x, y = rx + back * math.cos(yaw), ry + back * math.sin(yaw)
        v = max(v + a * dt, 0.0)
        travelled += v * dt
        rows.append((travelled, TRACK.project([x, y]).lateral, cmd.clamped, v))
        assert len(rows) < 10000, 'the kart does not get round'
    return np.array(rows)


def test_pure_pursuit_follows_the_shipped_trajectory_round_the_track():
    rows = drive(pure_pursuit.PursuitParams(), lag=0.1, delay_steps=5)
    settled = rows[rows[:, 0] > 20.0]                        # the grid slot is 1.5 m aside
    cross_track = np.abs(settled[:, 1])
    print(f'pure pursuit, one lap: max cross-track {cross_track.max():.3f} m, '
          f'RMS {np.sqrt(np.mean(cross_track ** 2)):.3f} m')
    assert cross_track.max() < 1.0
    assert np.abs(rows[:, 1]).max() <= 0.5 * TRACK.width     # always on the track
    assert rows[:, 3].max() <= 10.0 + 0.1                    # the profile's top speed


def test_steering_gain_one_keeps_a_margin_that_the_competitions_one_and_a_half_has_not():
    slow = {'lag': 0.1, 'delay_steps': 15}                    # 0.25 s of steering lag
    errors = {gain: np.abs(drive(pure_pursuit.PursuitParams(steering_gain=gain), **slow)
                           [:, 1][200:]).max() for gain in (1.0, 1.5)}
    print(f'cross-track with 0.1 s lag + 0.15 s delay: {errors}')
    assert errors[1.0] < 0.5 < 1.0 < errors[1.5]


def test_pure_pursuit_rules():
    p = pure_pursuit.PursuitParams()
    x, y, yaw = TRACK.grid_pose(0)
    cmd = pure_pursuit.control(SHIPPED, pure_pursuit.KartState(x, y, yaw, 2.0), p)
    assert cmd.lookahead == 3.5 and cmd.target_speed == pytest.approx(SHIPPED.speed[-3])
    assert cmd.acceleration == 3.0                             # 1.0 x (10 - 2), capped
    assert cmd.steering < 0                                    # 1.5 m left: steer right
    fast = pure_pursuit.control(SHIPPED, pure_pursuit.KartState(x, y, yaw, 12.0), p)
    assert fast.lookahead == 6.0 and fast.acceleration == pytest.approx(-2.0)
    # past the last point the lookahead wraps to the start of the loop
    assert pure_pursuit.lookahead_index(SHIPPED.xy, len(SHIPPED) - 2, *SHIPPED.xy[-2], 3.5) \
        in (1, 2)
    # facing right across the track: atan(2 L / 3.5) = 0.54 rad left, clamped to the limit
    across = pure_pursuit.control(SHIPPED, pure_pursuit.KartState(x, y, yaw - math.pi / 2, 1.0),
                                  p)
    assert across.clamped and across.steering == p.max_steering == 0.3644


# -- the localizer ---------------------------------------------------------------------------
def circle_run(seed: int, seconds: float = 40.0, outliers=(), delay: float = 0.0,
               tell_age: bool = True):
    """Drive a circle (r 20 m, 5 m/s) with a gyro bias; return errors after 10 s and the filter.

    IMU at 100 Hz (noise 0.01 rad/s, bias 0.02 rad/s), speed at 50 Hz (0.05 m/s), GNSS at
    10 Hz (0.2 m); the filter starts 0.5 m and 3° off. ``outliers``: fix indices to spoil.
    ``delay``: each fix reaches the filter that long after it was measured (its age given
    with it unless ``tell_age`` is false).
    """
    rng = np.random.default_rng(seed)
    radius, speed, bias = 20.0, 5.0, 0.02
    omega = speed / radius
    est = localizer.Localizer(localizer.initial(radius + 0.5, 0.0, math.pi / 2 + math.radians(3)))
    pos_err, yaw_err, fix = [], [], 0
    for i in range(int(seconds * 100)):
        t = i * 0.01
        est.on_yaw_rate(t, omega + bias + rng.normal(0.0, 0.01))
        if i % 2 == 0:
            est.on_speed(t, speed + rng.normal(0.0, 0.05))
        true = (radius * math.cos(omega * t), radius * math.sin(omega * t),
                omega * t + math.pi / 2)
        if i % 10 == 0 and t >= delay:
            then = omega * (t - delay)
            z = radius * np.array([math.cos(then), math.sin(then)]) + rng.normal(0.0, 0.2, 2)
            if fix in outliers:
                z = z + outliers[fix]
            est.on_fix(t, z, np.eye(2) * 0.04, age=delay if tell_age else 0.0)
            fix += 1
        if t > 10.0:
            est.advance(t)
            m = est.belief.mean
            pos_err.append(math.hypot(m[0] - true[0], m[1] - true[1]))
            yaw_err.append(abs(math.remainder(m[2] - true[2], 2 * math.pi)))
    return np.array(pos_err), np.array(yaw_err), est


def test_the_ekf_converges_on_a_circle():
    pos_err, yaw_err, est = circle_run(seed=7)
    rms = math.sqrt(np.mean(pos_err ** 2))
    print(f'EKF on the circle: position RMS {rms:.3f} m, heading max '
          f'{math.degrees(yaw_err.max()):.2f} deg, bias {est.belief.mean[4]:.4f} rad/s')
    assert rms < 0.3
    assert math.degrees(yaw_err.max()) < 3.0
    assert est.belief.mean[4] == pytest.approx(0.02, abs=0.01)        # the gyro's bias
    assert est.belief.mean[3] == pytest.approx(5.0, abs=0.1)
    assert est.counts == {}


def test_the_ekf_rejects_outliers_and_counts_them():
    pos_err, _, est = circle_run(seed=7, seconds=20.0,
                                 outliers={150: np.array([10.0, 0.0]),
                                           160: np.array([0.0, -5.0])})
    assert est.counts == {'gnss_outlier': 2}
    assert pos_err.max() < 1.0
    belief = est.belief
    assert est.on_fix(est.t + 0.1, [math.nan, 0.0], np.eye(2)) == 'gnss_not_finite'
    assert est.on_fix(est.t + 0.1, [0.0, 0.0], np.full((2, 2), math.inf)) == 'gnss_not_finite'
    assert est.on_fix(est.t + 0.1, list(belief.mean[:2]), np.eye(2), status=-1) == \
        'gnss_no_fix'
    assert est.on_speed(est.t, math.inf) == 'speed_not_finite'
    assert est.on_yaw_rate(est.t, math.nan) == 'imu_not_finite'
    assert est.belief is belief                                       # nothing changed
    assert est.counts == {'gnss_outlier': 2, 'gnss_not_finite': 2, 'gnss_no_fix': 1,
                          'speed_not_finite': 1, 'imu_not_finite': 1}


def test_a_late_fix_is_carried_forward_over_its_age():
    """Fixes delivered 0.3 s late (a busy machine, a game at 4x): their age moves them on."""
    pos_err, yaw_err, est = circle_run(seed=7, delay=0.3)
    rms = math.sqrt(np.mean(pos_err ** 2))
    print(f'EKF, fixes 0.3 s late: position RMS {rms:.3f} m')
    assert rms < 0.3 and math.degrees(yaw_err.max()) < 3.0
    assert est.counts == {}
    # the same fixes taken as fresh ones: the estimate follows them, 1.5 m behind the kart
    pos_err, _, est = circle_run(seed=7, delay=0.3, tell_age=False)
    assert math.sqrt(np.mean(pos_err ** 2)) > 1.0
    belief, t = est.belief, est.t
    late = localizer.MAX_INPUT_AGE_SEC + 0.01
    assert est.on_fix(t, list(belief.mean[:2]), np.eye(2), age=late) == 'gnss_stale'
    assert est.on_fix(t, list(belief.mean[:2]), np.eye(2), age=-late) == 'gnss_stale'
    assert est.on_fix(t, list(belief.mean[:2]), np.eye(2), age=math.nan) == 'gnss_not_finite'
    assert est.belief is belief


def late_gyro_run(tell_age: bool):
    """Drive 10 m/s straight, then turn at 0.5 rad/s from 1 s; gyro readings 0.2 s late.

    Return the heading error (rad) and the position error (m) at 3 s (dead reckoning only).
    """
    est = localizer.Localizer(localizer.initial(0.0, 0.0, 0.0, speed=10.0))
    delay, v, w = 0.2, 10.0, 0.5
    for i in range(301):
        t = 0.01 * i
        measured = t - delay
        rate = w if measured >= 1.0 else 0.0
        est.on_yaw_rate(t, rate, age=delay if tell_age else 0.0)
    est.advance(3.0)
    yaw = w * 2.0
    true = (v * 1.0 + v / w * math.sin(yaw), v / w * (1.0 - math.cos(yaw)))
    m = est.belief.mean
    return abs(math.remainder(m[2] - yaw, 2 * math.pi)), math.dist(m[:2], true)


def test_a_late_gyro_reading_corrects_the_heading_turned_meanwhile():
    yaw_err, pos_err = late_gyro_run(tell_age=True)
    print(f'gyro 0.2 s late: heading error {yaw_err:.4f} rad, position {pos_err:.3f} m')
    assert yaw_err < 0.005 and pos_err < 0.2
    yaw_err, pos_err = late_gyro_run(tell_age=False)   # the turn starts 0.2 s late
    assert yaw_err == pytest.approx(0.1, abs=0.005) and pos_err > 1.0


def test_carried_forward_moves_a_fix_along_the_believed_arc():
    belief = localizer.initial(0.0, 0.0, 0.0, speed=10.0)
    assert localizer.carried_forward(belief, 0.0, [1.0, 2.0], 0.2) == \
        pytest.approx([3.0, 2.0])                                  # 2 m along +x
    assert localizer.carried_forward(belief, 0.0, [1.0, 2.0], 0.0) == pytest.approx([1.0, 2.0])
    assert localizer.carried_forward(belief, 0.0, [1.0, 2.0], -0.1) == \
        pytest.approx([0.0, 2.0])                                  # measured after: back
    # turning left at 1 rad/s: the chord of the last 0.2 s leaves at -0.1 rad
    turned = localizer.carried_forward(belief, 1.0, [0.0, 0.0], 0.2)
    assert turned == pytest.approx([2.0 * math.cos(-0.1), 2.0 * math.sin(-0.1)])


def test_the_ekf_believes_the_fixes_after_many_outliers_in_a_row():
    est = localizer.Localizer(localizer.initial(0.0, 0.0, 0.0))
    for i in range(localizer.REINIT_AFTER_REJECTS):
        est.on_fix(0.1 * i, [30.0, 40.0], np.eye(2) * 0.04)
    assert est.counts == {'gnss_outlier': localizer.REINIT_AFTER_REJECTS - 1,
                          'reinitialized': 1}
    assert est.belief.mean[:2] == pytest.approx([30.0, 40.0])
    assert est.on_fix(2.0, [30.1, 40.0], np.eye(2) * 0.04) == ''


def test_fix_covariance_from_navsatfix():
    c = localizer.fix_covariance([0.09, 0, 0, 0, 0.16, 0, 0, 0, 1.0])
    assert c == pytest.approx(np.diag([0.09, 0.16]))
    assert localizer.fix_covariance([0.0] * 9) == pytest.approx(np.eye(2) * 0.25)
    assert localizer.fix_covariance([math.nan] * 9) == pytest.approx(np.eye(2) * 0.25)


def test_odometry_covariances_from_the_filter():
    belief = localizer.initial(1.0, 2.0, 0.5)
    pose, twist = localizer.odometry_covariances(belief)
    assert len(pose) == len(twist) == 36
    assert (pose[0], pose[7], pose[35]) == pytest.approx((0.25, 0.25, math.radians(5) ** 2))
    assert pose[14] == pose[21] == pose[28] == localizer.UNKNOWN_VARIANCE
    assert twist[0] == pytest.approx(0.04) and twist[7] == localizer.UNKNOWN_VARIANCE
    assert twist[35] == pytest.approx(0.02 ** 2 + 0.02 ** 2)


def test_the_trajectory_message_round_trip():
    from pylon_kart.trajectory_node import trajectory_from_message, trajectory_message
    msg = trajectory_message(SHIPPED)
    assert msg.header.frame_id == 'map' and len(msg.points) == len(SHIPPED)
    again = trajectory_from_message(msg)
    assert np.allclose(again.xy, SHIPPED.xy) and np.allclose(again.speed, SHIPPED.speed,
                                                             atol=1e-5)
    assert np.allclose(np.angle(np.exp(1j * (again.yaw - SHIPPED.yaw))), 0.0, atol=1e-6)
    del msg.points[2:]
    with pytest.raises(trajectory.TrajectoryError, match='2 points'):
        trajectory_from_message(msg)
