"""Tests for frame names, Unity to ROS conversions and quaternion helpers."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from pylon_protocol import frames as fr
from pylon_protocol.errors import ProtocolError
import pytest

FAST = settings(derandomize=True, max_examples=120, deadline=None)
TOL = 1e-9

coord = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)
vectors = st.tuples(coord, coord, coord)
small = st.floats(min_value=-1.5, max_value=1.5, allow_nan=False)
unit = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
quaternions = st.tuples(unit, unit, unit, unit).filter(
    lambda q: math.sqrt(sum(c * c for c in q)) > 0.1
)


def close(a, b, tol=TOL):
    scale_ = max(1.0, *(abs(x) for x in a), *(abs(x) for x in b))
    return len(a) == len(b) and all(abs(x - y) <= tol * scale_ for x, y in zip(a, b, strict=True))


def same_rotation(a, b, tol=1e-9):
    return close(a, b, tol) or close(a, tuple(-x for x in b), tol)


def polar_matrix():
    cols = [fr.unity_to_ros_polar(e) for e in ((1, 0, 0), (0, 1, 0), (0, 0, 1))]
    return tuple(tuple(cols[c][r] for c in range(3)) for r in range(3))


def test_frame_names():
    assert fr.BASE_LINK == 'base_link'
    assert fr.GROUND_TRUTH_ENU == 'pylon_ground_truth_enu'
    assert fr.KERBOL_INERTIAL == 'kerbol_inertial'
    assert fr.ROS_SENSOR == 'ros_sensor'
    assert fr.CAMERA_OPTICAL_ROTATION == (-0.5, 0.5, -0.5, 0.5)


@pytest.mark.parametrize(
    ('unity', 'ros'),
    [((1, 0, 0), (0, -1, 0)),  # right -> -left
     ((0, 1, 0), (0, 0, 1)),  # up -> up
     ((0, 0, 1), (1, 0, 0)),  # forward -> +X
     ((1, 2, 3), (3, -1, 2))],
)
def test_polar_examples(unity, ros):
    assert fr.unity_to_ros_polar(unity) == ros


@pytest.mark.parametrize(('unity', 'ros'), [((1, 2, 3), (-3, 1, -2)), ((0, 1, 0), (0, 0, -1))])
def test_axial_examples(unity, ros):
    assert fr.unity_to_ros_axial(unity) == ros


def test_polar_map_is_orthogonal_handedness_change():
    m = polar_matrix()
    assert m == fr.UNITY_TO_ROS_POLAR
    ident = fr.matrix_multiply(m, fr.matrix_transpose(m))
    assert close(sum(ident, ()), (1, 0, 0, 0, 1, 0, 0, 0, 1))
    # Relabelling a left-handed basis as a right-handed one has determinant -1;
    # combined with the axial sign flip the mapping of rotations is proper (+1).
    assert fr.matrix_determinant(m) == pytest.approx(-1.0)
    neg = tuple(tuple(-x for x in row) for row in m)
    assert fr.matrix_determinant(neg) == pytest.approx(1.0)


@FAST
@given(vectors)
def test_axial_is_negated_polar(v):
    p, a = fr.unity_to_ros_polar(v), fr.unity_to_ros_axial(v)
    assert a == tuple(-x for x in p)
    assert fr.norm(p) == pytest.approx(fr.norm(v))


@FAST
@given(vectors, vectors)
def test_cross_product_of_polars_converts_as_axial(a, b):
    # Torque = r x F computed in Unity components converts with the axial rule.
    lhs = fr.cross(fr.unity_to_ros_polar(a), fr.unity_to_ros_polar(b))
    rhs = fr.unity_to_ros_axial(fr.cross(a, b))
    assert close(lhs, rhs, 1e-9)


@FAST
@given(quaternions, vectors)
def test_rotation_commutes_with_conversion(q, v):
    rotated_then_converted = fr.unity_to_ros_polar(fr.quat_rotate(q, v))
    converted = fr.quat_rotate(fr.unity_to_ros_quaternion(q), fr.unity_to_ros_polar(v))
    assert close(rotated_then_converted, converted, 1e-9)


@FAST
@given(quaternions)
def test_converted_rotation_matrix_is_proper_and_conjugated(q):
    m = fr.UNITY_TO_ROS_POLAR
    expected = fr.matrix_multiply(fr.matrix_multiply(m, fr.quat_to_matrix(q)),
                                  fr.matrix_transpose(m))
    got = fr.quat_to_matrix(fr.unity_to_ros_quaternion(q))
    assert close(sum(got, ()), sum(expected, ()), 1e-9)
    assert fr.matrix_determinant(got) == pytest.approx(1.0)


@FAST
@given(quaternions)
def test_converted_quaternion_is_normalised(q):
    assert fr.norm(fr.unity_to_ros_quaternion(q)) == pytest.approx(1.0)


def test_unity_quaternion_example():
    # 90 degrees about Unity up (y): in ROS that is about -z (a left-handed turn).
    q = fr.quat_from_axis_angle((0, 1, 0), math.pi / 2)
    ros = fr.unity_to_ros_quaternion(q)
    assert close(ros, (0, 0, -math.sin(math.pi / 4), math.cos(math.pi / 4)))
    assert close(fr.unity_to_ros_quaternion((0, 0, 0, 2)), (0, 0, 0, 1))


def test_vessel_angular_velocity_to_body():
    assert fr.vessel_angular_velocity_to_body((1, 2, 3)) == (-2, 1, 3)


@FAST
@given(vectors)
def test_vessel_angular_velocity_matches_world_axial_with_identity_reference(v):
    up, right, forward = (0, 1, 0), (1, 0, 0), (0, 0, 1)
    assert fr.vessel_angular_velocity_to_body(v) == pytest.approx(
        fr.world_to_base_link_axial(v, up, right, forward)
    )


@FAST
@given(quaternions, vectors)
def test_world_to_base_link_with_rotated_reference(q, local):
    up = fr.quat_rotate(q, (0, 1, 0))
    right = fr.quat_rotate(q, (1, 0, 0))
    forward = fr.quat_rotate(q, (0, 0, 1))
    world = fr.quat_rotate(q, local)
    body = fr.world_to_base_link_polar(world, up, right, forward)
    assert close(body, (local[1], -local[0], -local[2]), 1e-9)
    axial = fr.world_to_base_link_axial(world, up, right, forward)
    assert close(axial, tuple(-x for x in body), 1e-12)


def test_base_link_axes_are_right_handed():
    # base_link X = up, Y = -right, Z = -forward, as Unity vectors; converting them to
    # ROS axes must give a right-handed triad.
    x = fr.unity_to_ros_polar((0, 1, 0))
    y = fr.unity_to_ros_polar((-1, 0, 0))
    z = fr.unity_to_ros_polar((0, 0, -1))
    assert close(fr.cross(x, y), z)


# Quaternion helpers


@FAST
@given(quaternions, quaternions, vectors)
def test_multiply_composes_rotations(a, b, v):
    lhs = fr.quat_rotate(fr.quat_multiply(a, b), v)
    a_n, b_n = fr.quat_normalize(a), fr.quat_normalize(b)
    rhs = fr.quat_rotate(a_n, fr.quat_rotate(b_n, v))
    assert close(lhs, rhs, 1e-9)


@FAST
@given(quaternions, vectors)
def test_conjugate_inverts(q, v):
    n = fr.quat_normalize(q)
    assert close(fr.quat_rotate(fr.quat_conjugate(n), fr.quat_rotate(n, v)), v, 1e-9)


@FAST
@given(quaternions)
def test_matrix_round_trip(q):
    n = fr.quat_normalize(q)
    back = fr.quat_from_matrix(fr.quat_to_matrix(n))
    assert same_rotation(back, n, 1e-9)
    assert back[3] >= 0.0


@FAST
@given(quaternions, vectors)
def test_matrix_rotates_like_quaternion(q, v):
    m = fr.quat_to_matrix(q)
    mv = tuple(sum(m[r][c] * v[c] for c in range(3)) for r in range(3))
    assert close(mv, fr.quat_rotate(q, v), 1e-9)


@pytest.mark.parametrize('angle', [0.0, 0.5, math.pi / 2, math.pi, -2.0])
def test_axis_angle(angle):
    q = fr.quat_from_axis_angle((0, 0, 2), angle)
    assert close(fr.quat_rotate(q, (1, 0, 0)), (math.cos(angle), math.sin(angle), 0.0))


@FAST
@given(st.tuples(small, small, small).filter(lambda w: fr.norm(w) > 1e-6), quaternions,
       st.floats(min_value=0.01, max_value=1.0), st.booleans())
def test_angular_velocity_round_trip(omega, q, dt, body):
    q0 = fr.quat_normalize(q)
    step = fr.quat_from_axis_angle(omega, fr.norm(omega) * dt)
    q1 = fr.quat_multiply(q0, step) if body else fr.quat_multiply(step, q0)
    got = fr.angular_velocity_from_quaternions(q0, q1, dt, body=body)
    assert close(got, omega, 1e-6)


def test_angular_velocity_shortest_path_and_identity():
    q0 = (0.0, 0.0, 0.0, 1.0)
    assert fr.angular_velocity_from_quaternions(q0, q0, 0.1) == (0.0, 0.0, 0.0)
    negated = (0.0, 0.0, 0.0, -1.0)  # same orientation, other sign
    assert fr.angular_velocity_from_quaternions(q0, negated, 0.1) == (0.0, 0.0, 0.0)


def test_optical_rotation_axes():
    optical = fr.sensor_to_optical(fr.IDENTITY_QUATERNION)
    assert close(fr.quat_rotate(optical, (0, 0, 1)), (1, 0, 0))  # optical z = look (+X)
    assert close(fr.quat_rotate(optical, (1, 0, 0)), (0, -1, 0))  # optical x = right
    assert close(fr.quat_rotate(optical, (0, 1, 0)), (0, 0, -1))  # optical y = down


@pytest.mark.parametrize(
    ('call', 'args'),
    [
        (fr.quat_normalize, ((0, 0, 0, 0),)),
        (fr.quat_normalize, ((0, 0, 0, 1e-12),)),
        (fr.quat_normalize, ((0, 0, math.nan, 1),)),
        (fr.unity_to_ros_polar, ((1, 2),)),
        (fr.unity_to_ros_polar, ((1, 2, 'x'),)),
        (fr.unity_to_ros_polar, ((1, 2, True),)),
        (fr.unity_to_ros_polar, ('abc',)),
        (fr.unity_to_ros_polar, (None,)),
        (fr.unity_to_ros_axial, ((1, math.inf, 0),)),
        (fr.unity_to_ros_quaternion, ((0, 0, 0, 0),)),
        (fr.quat_from_axis_angle, ((0, 0, 0), 1.0)),
        (fr.angular_velocity_from_quaternions, ((0, 0, 0, 1), (0, 0, 0, 1), 0.0)),
        (fr.quat_from_matrix, (((1, 0), (0, 1)),)),
    ],
)
def test_bad_input_raises_protocol_error(call, args):
    with pytest.raises(ProtocolError):
        call(*args)


def test_accepts_sized_iterables_of_reals():
    class Array:
        """A minimal array-like (sized, iterable, not a Sequence)."""

        def __init__(self, *values):
            self.values = values

        def __len__(self):
            return len(self.values)

        def __iter__(self):
            return iter(self.values)

    assert fr.unity_to_ros_polar(Array(1, 2, 3)) == (3.0, -1.0, 2.0)
    assert fr.quat_normalize(Array(0, 0, 0, 2)) == (0.0, 0.0, 0.0, 1.0)
    assert fr.norm(Array(3, 4)) == 5.0
    with pytest.raises(ProtocolError):
        fr.unity_to_ros_polar({'x': 1, 'y': 2, 'z': 3})
    with pytest.raises(ProtocolError):
        fr.norm(range(100))
