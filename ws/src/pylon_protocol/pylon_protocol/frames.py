"""Frame names, Unity to ROS conversions and wire-value checks, as pure functions on tuples.

Unity coordinates are left-handed: x right, y up, z forward. ROS coordinates are
right-handed (REP 103). The mod converts everything before sending it, so these functions
are what a stand-in for the mod uses to produce wire values, and what tests use to check
them:

* polar vectors (position, velocity, force) map ``(x, y, z) -> (z, -x, y)``. As a matrix
  this has determinant -1: it relabels a left-handed basis as a right-handed one.
* axial vectors (angular velocity, torque) pick up the handedness sign flip:
  ``(x, y, z) -> (-z, x, -y)``, so a Unity cross product of two polar vectors converts
  like an axial vector.
* rotations map ``(x, y, z, w) -> normalise(-z, x, -y, w)``: the rotation axis is an
  axial vector. Rotating then converting equals converting then rotating.

Quaternions are ``(x, y, z, w)``, Hamilton convention; ``q`` rotates a vector ``v`` as
``q v q*``. The quaternion math itself is :mod:`pylon_protocol.rotations` (numpy, raising
ValueError); this module checks wire values (``vec3``, ``quat``, ``unit_quat``) and maps
frames. Inputs may be any sized iterable of real numbers (lists, tuples, numpy arrays);
outputs are tuples of floats. Invalid input (wrong length, non-numbers, non-finite values,
a zero quaternion) raises ProtocolError.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import math
import numbers

from pylon_protocol import rotations
from pylon_protocol.errors import ProtocolError

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]
Mat3 = tuple[Vec3, Vec3, Vec3]

BASE_LINK = 'base_link'
GROUND_TRUTH_ENU = 'pylon_ground_truth_enu'
KERBOL_INERTIAL = 'kerbol_inertial'
ROS_SENSOR = 'ros_sensor'
ROOT_ALIAS = 'pylon_root'
"""Identity child of the active vessel's proxy root link, on /tf_static: a fixed frame
whose name does not change with the vessel (RViz's Fixed Frame)."""

IDENTITY_QUATERNION: Quat = (0.0, 0.0, 0.0, 1.0)
CAMERA_OPTICAL_ROTATION: Quat = (-0.5, 0.5, -0.5, 0.5)
"""Rotation from the ``ros_sensor`` frame (x look, y left, z up) to the optical frame.

Right-multiplying a sensor orientation by it gives the REP 103 optical orientation
(z look, x right, y down).
"""

UNITY_TO_ROS_POLAR: Mat3 = ((0.0, 0.0, 1.0), (-1.0, 0.0, 0.0), (0.0, 1.0, 0.0))
MIN_QUATERNION_NORM = rotations.MIN_NORM
"""The smallest norm of a usable wire quaternion (``schema.quaternion`` uses the same)."""


def _number(value: object, field: str) -> float:
    if isinstance(value, float):    # float and numpy.float64, without the numbers.Real ABC
        if math.isfinite(value):
            return float(value)
        raise ProtocolError('non_finite', 'expected a finite number', field)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ProtocolError('bad_field', 'expected a number', field)
    try:
        result = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ProtocolError('bad_field', 'expected a number', field) from None
    if not math.isfinite(result):
        raise ProtocolError('non_finite', 'expected a finite number', field)
    return result


def _items(value: object, field: str) -> tuple:
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not hasattr(value, '__len__'):
        raise ProtocolError('bad_field', 'expected an array of numbers', field)
    try:
        if len(value) > 16:
            raise ProtocolError('bad_field', 'array is too long', field)
        return tuple(value)
    except TypeError:
        raise ProtocolError('bad_field', 'expected an array of numbers', field) from None


def _vector(value: object, size: int, field: str) -> tuple[float, ...]:
    if type(value) is tuple and len(value) == size and all(
            type(item) is float and math.isfinite(item) for item in value):
        return value        # finite Python floats already (the common case): as they are
    items = _items(value, field)
    if len(items) != size:
        raise ProtocolError('bad_field', f'expected {size} numbers, got {len(items)}', field)
    return tuple(_number(item, field) for item in items)


def vec3(value: object, field: str = 'vector') -> Vec3:
    """Return ``value`` as a tuple of 3 finite floats or raise ProtocolError."""
    return _vector(value, 3, field)  # type: ignore[return-value]


def quat(value: object, field: str = 'quaternion') -> Quat:
    """Return ``value`` as a tuple of 4 finite floats (not normalised) or raise."""
    return _vector(value, 4, field)  # type: ignore[return-value]


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    """Return the dot product of two 3-vectors."""
    u, v = vec3(a, 'a'), vec3(b, 'b')
    return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]


def cross(a: Sequence[float], b: Sequence[float]) -> Vec3:
    """Return the component-formula cross product of two 3-vectors."""
    u, v = vec3(a, 'a'), vec3(b, 'b')
    return (u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0])


def scale(a: Sequence[float], factor: float) -> Vec3:
    """Return ``factor * a``."""
    u = vec3(a, 'a')
    f = _number(factor, 'factor')
    return (u[0] * f, u[1] * f, u[2] * f)


def norm(a: Sequence[float]) -> float:
    """Return the Euclidean norm of a vector of up to 16 numbers."""
    return math.sqrt(math.fsum(_number(x, 'vector') ** 2 for x in _items(a, 'vector')))


# Unity -> ROS


def unity_to_ros_polar(u: Sequence[float]) -> Vec3:
    """Convert a Unity polar vector (position, velocity, force) to ROS axes."""
    x, y, z = vec3(u, 'unity_vector')
    return (z, -x, y)


def unity_to_ros_axial(u: Sequence[float]) -> Vec3:
    """Convert a Unity axial vector (angular velocity, torque) to ROS axes."""
    x, y, z = vec3(u, 'unity_vector')
    return (-z, x, -y)


def unity_to_ros_quaternion(q: Sequence[float]) -> Quat:
    """Convert a Unity rotation ``(x, y, z, w)`` to a normalised ROS quaternion."""
    x, y, z, w = quat(q, 'unity_quaternion')
    return unit_quat((-z, x, -y, w), 'unity_quaternion')


def vessel_angular_velocity_to_body(v: Sequence[float]) -> Vec3:
    """
    Convert a vessel's angular velocity to ``base_link`` axes.

    The input is expressed in the vessel reference transform's local Unity axes
    (x right, y up = nose, z forward = belly); the output is axial in ``base_link``.
    """
    x, y, z = vec3(v, 'angular_velocity')
    return (-y, x, z)


def world_to_base_link_polar(
    w: Sequence[float], up: Sequence[float], right: Sequence[float], forward: Sequence[float]
) -> Vec3:
    """
    Express a Unity world polar vector in ``base_link``.

    ``up``, ``right`` and ``forward`` are the reference transform's axes as Unity world
    vectors: ``base_link`` +X is ``up``, +Y is ``-right``, +Z is ``-forward``.
    """
    return (dot(w, up), -dot(w, right), -dot(w, forward))


def world_to_base_link_axial(
    w: Sequence[float], up: Sequence[float], right: Sequence[float], forward: Sequence[float]
) -> Vec3:
    """Express a Unity world axial vector in ``base_link`` (the polar result negated)."""
    x, y, z = world_to_base_link_polar(w, up, right, forward)
    return (-x, -y, -z)


# Wire quaternions


def unit_quat(value: object, field: str = 'quaternion') -> Quat:
    """Return ``value`` as a unit quaternion tuple or raise ProtocolError.

    It must be 4 finite numbers with a norm of at least 1e-9 (``bad_quaternion``); the
    math is :func:`pylon_protocol.rotations.normalize`.
    """
    q = quat(value, field)
    try:
        return tuple(rotations.normalize(q).tolist())  # type: ignore[return-value]
    except ValueError:
        raise ProtocolError('bad_quaternion', 'quaternion norm is below 1e-9', field) from None


def sensor_to_optical(rotation: Sequence[float]) -> Quat:
    """Return the optical-frame orientation for a ``ros_sensor`` orientation."""
    turned = rotations.multiply(unit_quat(rotation), CAMERA_OPTICAL_ROTATION)
    return tuple(rotations.normalize(turned).tolist())  # type: ignore[return-value]
