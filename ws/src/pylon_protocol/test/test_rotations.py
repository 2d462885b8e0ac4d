"""Tests of the quaternion module: identities, round trips and agreement with scipy."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
from pylon_protocol import rotations as rot
from pylon_testing.properties import examples
import pytest

FAST = settings(max_examples=examples(150), deadline=None)

unit = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
quaternions = st.tuples(unit, unit, unit, unit).filter(
    lambda q: math.sqrt(sum(c * c for c in q)) > 0.1)
coord = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)
vectors = st.tuples(coord, coord, coord)
angle = st.floats(min_value=-math.pi, max_value=math.pi, allow_nan=False)
# rotation vectors up to (almost) pi, so the log map returns them unchanged
rotvecs = st.tuples(unit, unit, unit).map(
    lambda v: np.asarray(v) * (3.1 / max(1.0, math.sqrt(3.0))))


def same_rotation(a, b, atol=1e-12):
    a, b = np.asarray(a), np.asarray(b)
    return np.allclose(a, b, atol=atol) or np.allclose(a, -b, atol=atol)


# -- identities ------------------------------------------------------------------------------


@FAST
@given(quaternions)
def test_times_conjugate_is_identity(q):
    n = rot.normalize(q)
    np.testing.assert_allclose(rot.multiply(n, rot.conjugate(n)), [0, 0, 0, 1], atol=1e-15)
    np.testing.assert_allclose(rot.multiply(rot.conjugate(n), n), [0, 0, 0, 1], atol=1e-15)


@FAST
@given(quaternions)
def test_normalize_is_unit_and_idempotent(q):
    n = rot.normalize(q)
    assert np.linalg.norm(n) == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose(rot.normalize(n), n, atol=1e-16)
    assert np.sign(n[3]) == np.sign(q[3])           # normalize keeps the sign
    c = rot.canonical(q)
    assert c[3] >= 0.0 and same_rotation(c, n)


@FAST
@given(quaternions)
def test_matrix_is_orthonormal_with_determinant_one(q):
    m = rot.to_matrix(q)
    assert m.shape == (3, 3) and m.dtype == np.float64
    np.testing.assert_allclose(m @ m.T, np.eye(3), atol=1e-14)
    assert np.linalg.det(m) == pytest.approx(1.0, abs=1e-14)


@FAST
@given(quaternions, quaternions, vectors)
def test_multiply_composes_rotations(a, b, v):
    lhs = rot.rotate(rot.multiply(a, b), v)
    rhs = rot.rotate(a, rot.rotate(b, v))
    np.testing.assert_allclose(lhs, rhs, atol=1e-9 * max(1.0, np.abs(v).max()))


@FAST
@given(quaternions, vectors)
def test_rotate_is_q_v_q_conjugate_and_the_matrix(q, v):
    n = rot.normalize(q)
    qv = rot.multiply(rot.multiply(n, np.append(v, 0.0)), rot.conjugate(n))
    scale = max(1.0, np.abs(v).max())
    np.testing.assert_allclose(rot.rotate(q, v), qv[:3], atol=1e-12 * scale)
    np.testing.assert_allclose(rot.to_matrix(q) @ v, rot.rotate(q, v), atol=1e-12 * scale)
    np.testing.assert_allclose(rot.rotate(rot.conjugate(n), rot.rotate(n, v)), v,
                               atol=1e-12 * scale)


@pytest.mark.parametrize('turn', [0.0, 0.5, math.pi / 2, math.pi, -2.0])
def test_axis_angle_turns_right_handed(turn):
    q = rot.from_axis_angle((0, 0, 2), turn)          # the axis need not be unit
    np.testing.assert_allclose(rot.rotate(q, (1, 0, 0)), (math.cos(turn), math.sin(turn), 0),
                               atol=1e-15)
    np.testing.assert_allclose(rot.from_rotvec([0, 0, turn]), q, atol=1e-15)


def test_rpy_is_fixed_axis_roll_then_pitch_then_yaw():
    roll, pitch, yaw = 0.3, -0.7, 1.9
    expected = rot.multiply(rot.from_axis_angle((0, 0, 1), yaw),
                            rot.multiply(rot.from_axis_angle((0, 1, 0), pitch),
                                         rot.from_axis_angle((1, 0, 0), roll)))
    np.testing.assert_allclose(rot.from_rpy(roll, pitch, yaw), expected, atol=1e-15)
    np.testing.assert_allclose(rot.from_rpy(0, 0, 0), [0, 0, 0, 1])


def test_skew_is_the_cross_product():
    u, v = np.array([0.3, -1.2, 2.0]), np.array([-0.4, 0.9, 0.1])
    np.testing.assert_allclose(rot.skew(u) @ v, np.cross(u, v), atol=1e-15)
    np.testing.assert_allclose(rot.skew(u), -rot.skew(u).T)


# -- round trips -----------------------------------------------------------------------------


@FAST
@given(quaternions)
def test_matrix_round_trip(q):
    back = rot.from_matrix(rot.to_matrix(q))
    assert back[3] >= 0.0
    assert same_rotation(back, rot.normalize(q), 1e-12)


@pytest.mark.parametrize('q', [(1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1),
                               (1, 1, 0, 0), (0, 1, 1, 0), (1, 0, 1, 0), (1, -1, 1, 1e-3)])
def test_matrix_round_trip_in_every_branch(q):
    assert same_rotation(rot.from_matrix(rot.to_matrix(q)), rot.normalize(q), 1e-15)


@FAST
@given(rotvecs)
def test_rotvec_round_trip(v):
    q = rot.from_rotvec(v)
    assert np.linalg.norm(q) == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose(rot.to_rotvec(q), v, atol=1e-12)
    np.testing.assert_allclose(rot.to_rotvec(-q), v, atol=1e-12)   # either sign



@pytest.mark.parametrize('v', [(1e300, 0.0, 0.0), (1e200, -1e200, 1e200), (1e307, 1e307, 1e307)])
def test_a_huge_finite_rotation_vector_gives_a_unit_quaternion(v):
    # found by the fuzz bench: a ground truth with an angular velocity of 1e308 rad/s,
    # extrapolated for /tf, squared past the largest float and math.sin(inf) raised
    q = rot.from_rotvec(v)
    assert np.all(np.isfinite(q)) and np.linalg.norm(q) == pytest.approx(1.0)

@FAST
@given(quaternions)
def test_to_rotvec_takes_the_shorter_way(q):
    v = rot.to_rotvec(q)
    assert np.linalg.norm(v) <= math.pi + 1e-12
    assert same_rotation(rot.from_rotvec(v), rot.normalize(q), 1e-12)


@FAST
@given(st.floats(-3.1, 3.1), st.floats(-1.55, 1.55), st.floats(-3.1, 3.1))
def test_rpy_matrix_round_trip(roll, pitch, yaw):
    m = rot.to_matrix(rot.from_rpy(roll, pitch, yaw))
    # URDF: R = Rz(yaw) Ry(pitch) Rx(roll); the angles come back away from gimbal lock
    assert math.atan2(m[2, 1], m[2, 2]) == pytest.approx(roll, abs=1e-9)
    assert -math.asin(m[2, 0]) == pytest.approx(pitch, abs=1e-9)
    assert math.atan2(m[1, 0], m[0, 0]) == pytest.approx(yaw, abs=1e-9)


@pytest.mark.parametrize('size', [0.0, 1e-300, 1e-20, 1e-12, 1e-9, 1e-8, 1e-7, 1e-4])
def test_small_angle_exponential_map_is_accurate(size):
    direction = np.array([0.48, -0.6, 0.64])
    v = size * direction
    q = rot.from_rotvec(v)
    # exact values: sin(a/2) ~ a/2 - a^3/48 and cos(a/2) ~ 1 - a^2/8 at these sizes
    np.testing.assert_allclose(q[:3], v * (0.5 - size * size / 48.0), rtol=1e-15, atol=0)
    assert q[3] == pytest.approx(1.0 - size * size / 8.0, rel=1e-15)
    assert np.linalg.norm(q) == pytest.approx(1.0, abs=1e-16)
    np.testing.assert_allclose(rot.to_rotvec(q), v, rtol=1e-14, atol=0)


@FAST
@given(quaternions, quaternions)
def test_angle_between_and_slerp(a, b):
    na, nb = rot.normalize(a), rot.normalize(b)
    delta = rot.to_rotvec(rot.multiply(rot.conjugate(na), nb))
    assert rot.angle_between(a, b) == pytest.approx(np.linalg.norm(delta), abs=1e-12)
    assert rot.angle_between(a, b) == pytest.approx(rot.angle_between(b, a), abs=1e-12)
    assert rot.angle_between(a, -np.asarray(a)) == pytest.approx(0.0, abs=1e-7)
    assert same_rotation(rot.slerp(a, b, 0.0), na)
    assert same_rotation(rot.slerp(a, b, 1.0), nb, 1e-12)
    half = rot.slerp(a, b, 0.5)
    assert rot.angle_between(a, half) == pytest.approx(0.5 * rot.angle_between(a, b),
                                                       abs=1e-12)
    assert rot.angle_between(half, b) == pytest.approx(0.5 * rot.angle_between(a, b),
                                                       abs=1e-12)


@FAST
@given(st.tuples(unit, unit, unit).filter(lambda w: np.linalg.norm(w) > 1e-6), quaternions,
       st.floats(min_value=0.01, max_value=1.0), st.booleans())
def test_angular_velocity_round_trip(omega, q, dt, body):
    q0 = rot.normalize(q)
    step = rot.from_rotvec(np.asarray(omega) * dt)
    q1 = rot.multiply(q0, step) if body else rot.multiply(step, q0)
    np.testing.assert_allclose(rot.angular_velocity_from_quaternions(q0, q1, dt, body=body),
                               omega, atol=1e-9)


def test_angular_velocity_shortest_path_and_identity():
    q0 = (0.0, 0.0, 0.0, 1.0)
    assert rot.angular_velocity_from_quaternions(q0, q0, 0.1).tolist() == [0.0, 0.0, 0.0]
    negated = (0.0, 0.0, 0.0, -1.0)  # the same orientation, the other sign
    assert rot.angular_velocity_from_quaternions(q0, negated, 0.1).tolist() == [0, 0, 0]


# -- inputs and errors -----------------------------------------------------------------------


def test_accepts_sequences_and_arrays_and_returns_float64():
    for q in ([0, 0, 0, 2], (0.0, 0.0, 0.0, 2.0), np.array([0, 0, 0, 2]),
              np.array([0, 0, 0, 2], dtype=np.float32)):
        out = rot.normalize(q)
        assert isinstance(out, np.ndarray) and out.dtype == np.float64
        assert out.tolist() == [0.0, 0.0, 0.0, 1.0]
    q = np.array([0.1, 0.2, 0.3, 0.9])
    rot.normalize(q)
    assert q.tolist() == [0.1, 0.2, 0.3, 0.9]           # inputs are never modified


@pytest.mark.parametrize(
    ('call', 'args'),
    [
        (rot.normalize, ((0, 0, 0, 0),)),
        (rot.normalize, ((0, 0, 0, 1e-12),)),
        (rot.normalize, ((0, 0, math.nan, 1),)),
        (rot.normalize, ((0, 0, math.inf, 1),)),
        (rot.normalize, ((0, 0, 1),)),
        (rot.normalize, ('abcd',)),
        (rot.normalize, (np.zeros((1, 4)),)),
        (rot.canonical, ((0, 0, 0, 0),)),
        (rot.to_matrix, ((0, 0, 0, 0),)),
        (rot.rotate, ((0, 0, 0, 0), (1, 0, 0))),
        (rot.rotate, ((0, 0, 0, 1), (1, 0))),
        (rot.multiply, ((0, 0, 0, 1), (0, 0, math.nan, 1))),
        (rot.conjugate, ((0, 0, 1),)),
        (rot.to_rotvec, ((0, 0, 0, 0),)),
        (rot.from_rotvec, ((0, math.inf, 0),)),
        (rot.from_axis_angle, ((0, 0, 0), 1.0)),
        (rot.from_axis_angle, ((0, 0, 1), math.nan)),
        (rot.from_rpy, (0.0, math.nan, 0.0)),
        (rot.from_matrix, (((1, 0), (0, 1)),)),
        (rot.from_matrix, ([[1, 0, 0], [0, 1, 0], [0, 0, math.nan]],)),
        (rot.angle_between, ((0, 0, 0, 1), (0, 0, 0, 0))),
        (rot.slerp, ((0, 0, 0, 1), (0, 0, 0, 0), 0.5)),
        (rot.skew, ((1, 2),)),
        (rot.angular_velocity_from_quaternions, ((0, 0, 0, 1), (0, 0, 0, 1), 0.0)),
    ],
)
def test_bad_input_raises_value_error(call, args):
    with pytest.raises(ValueError):
        call(*args)


# -- agreement with scipy --------------------------------------------------------------------


@pytest.fixture(scope='module')
def rotation_cls():
    return pytest.importorskip('scipy.spatial.transform').Rotation


@FAST
@given(q=quaternions, v=vectors)
def test_agrees_with_scipy_rotation(rotation_cls, q, v):
    ref = rotation_cls.from_quat(q)                     # scipy: (x, y, z, w), scalar last
    np.testing.assert_allclose(rot.to_matrix(q), ref.as_matrix(), atol=1e-13)
    np.testing.assert_allclose(rot.rotate(q, v), ref.apply(v),
                               atol=1e-12 * max(1.0, np.abs(v).max()))
    rotvec, ref_rotvec = rot.to_rotvec(q), ref.as_rotvec()
    if np.linalg.norm(ref_rotvec) < math.pi - 1e-6:
        np.testing.assert_allclose(rotvec, ref_rotvec, atol=1e-9)
    else:                               # a half turn: v and -v are the same rotation
        assert np.allclose(rotvec, ref_rotvec, atol=1e-6) or np.allclose(rotvec, -ref_rotvec,
                                                                          atol=1e-6)
    assert same_rotation(rot.from_matrix(ref.as_matrix()), ref.as_quat(), 1e-12)
    assert same_rotation(rot.from_rotvec(ref.as_rotvec()), ref.as_quat(), 1e-12)


@FAST
@given(a=quaternions, b=quaternions)
def test_product_and_angle_agree_with_scipy(rotation_cls, a, b):
    ra, rb = rotation_cls.from_quat(a), rotation_cls.from_quat(b)
    assert same_rotation(rot.multiply(rot.normalize(a), rot.normalize(b)),
                         (ra * rb).as_quat(), 1e-12)      # scipy: ra * rb applies rb first
    assert rot.angle_between(a, b) == pytest.approx((ra.inv() * rb).magnitude(), abs=1e-7)


@FAST
@given(roll=angle, pitch=angle, yaw=angle, axis=vectors.filter(lambda v: np.linalg.norm(v) > 1),
       turn=angle)
def test_rpy_and_axis_angle_agree_with_scipy(rotation_cls, roll, pitch, yaw, axis, turn):
    # URDF rpy is extrinsic (fixed-axis) x-y-z: scipy's lower-case 'xyz'
    ref = rotation_cls.from_euler('xyz', [roll, pitch, yaw])
    assert same_rotation(rot.from_rpy(roll, pitch, yaw), ref.as_quat(), 1e-12)
    unit_axis = np.asarray(axis) / np.linalg.norm(axis)
    ref = rotation_cls.from_rotvec(unit_axis * turn)
    assert same_rotation(rot.from_axis_angle(axis, turn), ref.as_quat(), 1e-12)


def test_slerp_agrees_with_scipy(rotation_cls):
    from scipy.spatial.transform import Slerp
    rng = np.random.default_rng(7)
    for _ in range(50):
        a, b = rng.normal(size=4), rng.normal(size=4)
        ref = Slerp([0.0, 1.0], rotation_cls.from_quat([a, b]))
        for f in (0.0, 0.25, 0.5, 0.9, 1.0):
            assert same_rotation(rot.slerp(a, b, f), ref([f]).as_quat()[0], 1e-12)
