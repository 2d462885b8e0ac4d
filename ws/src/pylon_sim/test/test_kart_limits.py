"""The kart's measured limits (``drive_limits``) against what its physics allows.

The same manoeuvres as ``bench/bench_kart.py``, shortened where a bound does not need the
whole run; every bound is derived here from the kart's own parameters.
"""

import math

import numpy as np
from pylon_sim.game import drive_limits
from pylon_sim.loop.scenario import load_scenario
import pytest

RIG = drive_limits.Rig(load_scenario('kart'))
P = RIG.params
MU = float(P.friction[0])
G = RIG.g
EFFECTIVE_MASS = RIG.mass + float(np.sum(P.inertia / P.radius ** 2))


def test_top_speed_is_where_the_torque_curve_meets_rolling_resistance():
    result = drive_limits.top_speed(RIG, seconds=5.0, start=15.0)
    # n T (1 - v / v_max) / r = C_rr m g
    drive = float(np.sum(P.max_torque)) / P.radius[0]
    expected = P.max_speed[0] * (1.0 - P.rolling[0] * RIG.mass * G / drive)
    assert result['top_speed_mps'] == pytest.approx(expected, rel=0.02)
    assert 14.0 <= result['top_speed_mps'] <= 17.0


def test_standing_start_within_the_motor_and_the_grip():
    result = drive_limits.standing_start(RIG)
    drive = float(np.sum(P.max_torque)) / P.radius[0]
    rolling = P.rolling[0] * RIG.mass * G
    # the motor's force at standstill and at 1.5 m/s (past the first 0.25 s)
    motor = (drive - rolling) / EFFECTIVE_MASS
    later = (drive * (1.0 - 1.5 / P.max_speed[0]) - rolling) / EFFECTIVE_MASS
    assert later <= result['max_accel_mps2'] <= 1.02 * motor
    assert result['max_accel_mps2'] < MU * G
    assert 4.0 <= result['max_accel_mps2'] <= 5.0
    # 0 -> 10 m/s: dv/dt = (F (1 - v / v_max) - R) / m_eff, integrated
    v_max, force = P.max_speed[0], drive
    v_end = v_max * (1.0 - rolling / force)
    expected = EFFECTIVE_MASS * v_max / force * math.log(v_end / (v_end - 10.0))
    assert result['time_0_to_10_s'] == pytest.approx(expected, rel=0.05)


def test_braking_is_bounded_by_the_friction():
    result = drive_limits.braking(RIG)
    assert 0.85 * MU * G <= result['brake_decel_mps2'] <= (MU + P.rolling[0]) * G
    assert result['brake_distance_m'] == pytest.approx(
        10.0 ** 2 / (2 * result['brake_decel_mps2']), rel=0.1)


def test_full_lock_turns_on_the_ackermann_radius():
    result = drive_limits.full_lock_radius(RIG, seconds=5.0)
    geometric = RIG.wheelbase / math.tan(math.radians(25.0)) + RIG.track / 2
    assert result['full_lock_geometric_m'] == pytest.approx(geometric)
    assert result['full_lock_radius_m'] == pytest.approx(geometric, rel=0.15)
    assert result['full_lock_inner_deg'] == 25.0 and result['full_lock_outer_deg'] < 25.0


def test_lateral_grip_reaches_but_does_not_pass_the_friction():
    result = drive_limits.lateral_grip(RIG, ramp=1.0, start=8.0)
    assert 0.8 * MU * G <= result['max_lateral_accel_mps2'] <= 1.02 * MU * G
    radius = result['grip_circle_radius_m']
    assert result['max_lateral_speed_mps'] <= 1.1 * math.sqrt(MU * G * radius * 1.25)
