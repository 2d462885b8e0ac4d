"""Tests for frame names, Unity to ROS conversions and wire quaternions."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
from pylon_protocol import frames as fr
from pylon_protocol import rotations
from pylon_protocol.errors import ProtocolError
from pylon_testing.properties import examples
import pytest

FAST = settings(max_examples=examples(120), deadline=None)
TOL = 1e-9

coord = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)
vectors = st.tuples(coord, coord, coord)
unit = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
quaternions = st.tuples(unit, unit, unit, unit).filter(
    lambda q: math.sqrt(sum(c * c for c in q)) > 0.1
)


def close(a, b, tol=TOL):
    scale_ = max(1.0, *(abs(x) for x in a), *(abs(x) for x in b))
    return len(a) == len(b) and all(abs(x - y) <= tol * scale_ for x, y in zip(a, b, strict=True))


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
    assert polar_matrix() == fr.UNITY_TO_ROS_POLAR
    m = np.array(fr.UNITY_TO_ROS_POLAR)
    assert close((m @ m.T).ravel(), (1, 0, 0, 0, 1, 0, 0, 0, 1))
    # Relabelling a left-handed basis as a right-handed one has determinant -1;
    # combined with the axial sign flip the mapping of rotations is proper (+1).
    assert np.linalg.det(m) == pytest.approx(-1.0)
    assert np.linalg.det(-m) == pytest.approx(1.0)


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
    rotated_then_converted = fr.unity_to_ros_polar(rotations.rotate(q, v))
    converted = rotations.rotate(fr.unity_to_ros_quaternion(q), fr.unity_to_ros_polar(v))
    assert close(rotated_then_converted, converted, 1e-9)


@FAST
@given(quaternions)
def test_converted_rotation_matrix_is_proper_and_conjugated(q):
    m = np.array(fr.UNITY_TO_ROS_POLAR)
    expected = m @ rotations.to_matrix(q) @ m.T
    got = rotations.to_matrix(fr.unity_to_ros_quaternion(q))
    assert close(got.ravel(), expected.ravel(), 1e-9)
    assert np.linalg.det(got) == pytest.approx(1.0)


@FAST
@given(quaternions)
def test_converted_quaternion_is_normalised(q):
    assert fr.norm(fr.unity_to_ros_quaternion(q)) == pytest.approx(1.0)


def test_unity_quaternion_example():
    # 90 degrees about Unity up (y): in ROS that is about -z (a left-handed turn).
    q = rotations.from_axis_angle((0, 1, 0), math.pi / 2)
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
    up = rotations.rotate(q, (0, 1, 0))
    right = rotations.rotate(q, (1, 0, 0))
    forward = rotations.rotate(q, (0, 0, 1))
    world = rotations.rotate(q, local)
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


# Wire quaternions


@FAST
@given(quaternions)
def test_unit_quat_is_the_normalised_tuple(q):
    got = fr.unit_quat(q)
    assert type(got) is tuple and all(type(c) is float for c in got)
    assert close(got, rotations.normalize(q), 1e-15)


def test_optical_rotation_axes():
    optical = fr.sensor_to_optical(fr.IDENTITY_QUATERNION)
    assert type(optical) is tuple
    assert close(rotations.rotate(optical, (0, 0, 1)), (1, 0, 0))  # optical z = look (+X)
    assert close(rotations.rotate(optical, (1, 0, 0)), (0, -1, 0))  # optical x = right
    assert close(rotations.rotate(optical, (0, 1, 0)), (0, 0, -1))  # optical y = down


@pytest.mark.parametrize(
    ('call', 'args'),
    [
        (fr.unit_quat, ((0, 0, 0, 0),)),
        (fr.unit_quat, ((0, 0, 0, 1e-12),)),
        (fr.unit_quat, ((0, 0, math.nan, 1),)),
        (fr.unit_quat, ((0, 0, 1),)),
        (fr.sensor_to_optical, ((0, 0, 0, 0),)),
        (fr.unity_to_ros_polar, ((1, 2),)),
        (fr.unity_to_ros_polar, ((1, 2, 'x'),)),
        (fr.unity_to_ros_polar, ((1, 2, True),)),
        (fr.unity_to_ros_polar, ('abc',)),
        (fr.unity_to_ros_polar, (None,)),
        (fr.unity_to_ros_axial, ((1, math.inf, 0),)),
        (fr.unity_to_ros_quaternion, ((0, 0, 0, 0),)),
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
    assert fr.unit_quat(Array(0, 0, 0, 2)) == (0.0, 0.0, 0.0, 1.0)
    assert fr.norm(Array(3, 4)) == 5.0
    with pytest.raises(ProtocolError):
        fr.unity_to_ros_polar({'x': 1, 'y': 2, 'z': 3})
    with pytest.raises(ProtocolError):
        fr.norm(range(100))


def test_numpy_and_python_floats_take_the_same_checks():
    # floats and numpy float64 (a float subclass) skip the numbers.Real check, not the
    # finiteness check; the result is always a plain float
    result = fr.unity_to_ros_polar((np.float64(1.5), 2.0, np.float32(-3.0)))
    assert result == (-3.0, -1.5, 2.0)
    assert all(type(v) is float for v in result)
    assert fr.dot(np.array([1.0, 2.0, 3.0]), (4.0, 5.0, 6.0)) == 32.0
    for bad in (math.nan, math.inf, np.float64('nan'), np.float64('-inf')):
        with pytest.raises(ProtocolError) as info:
            fr.unity_to_ros_polar((bad, 0.0, 0.0))
        assert info.value.reason == 'non_finite'
    with pytest.raises(ProtocolError) as info:
        fr.unity_to_ros_polar((1.0, False, 0.0))
    assert info.value.reason == 'bad_field'
