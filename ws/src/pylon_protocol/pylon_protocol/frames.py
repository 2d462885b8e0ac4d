"""Frame names and Unity to ROS conversions, as pure functions on tuples.

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
``q v q*``. Matrices are tuples of three row tuples. Inputs may be any sized iterable of
real numbers (lists, tuples, numpy arrays); outputs are tuples of floats. Invalid input
(wrong length, non-numbers, non-finite values, a zero quaternion) raises ProtocolError.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import math
import numbers

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
MIN_QUATERNION_NORM = 1e-9


def _number(value: object, field: str) -> float:
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
    return quat_normalize((-z, x, -y, w))


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


# Quaternions


def quat_normalize(q: Sequence[float]) -> Quat:
    """Return ``q`` with unit norm; raise ProtocolError if its norm is below 1e-9."""
    x, y, z, w = quat(q)
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if not math.isfinite(n) or n < MIN_QUATERNION_NORM:
        raise ProtocolError('bad_quaternion', 'quaternion norm is below 1e-9', 'quaternion')
    return (x / n, y / n, z / n, w / n)


def quat_conjugate(q: Sequence[float]) -> Quat:
    """Return the conjugate (the inverse of a unit quaternion)."""
    x, y, z, w = quat(q)
    return (-x, -y, -z, w)


def quat_multiply(a: Sequence[float], b: Sequence[float]) -> Quat:
    """Return the Hamilton product ``a * b`` (apply ``b`` first, then ``a``)."""
    ax, ay, az, aw = quat(a, 'a')
    bx, by, bz, bw = quat(b, 'b')
    return (
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    )


def quat_rotate(q: Sequence[float], v: Sequence[float]) -> Vec3:
    """Rotate the 3-vector ``v`` by the (normalised) quaternion ``q``."""
    x, y, z, w = quat_normalize(q)
    vx, vy, vz = vec3(v)
    # v' = v + 2w (u x v) + 2 u x (u x v), u = (x, y, z)
    tx = 2.0 * (y * vz - z * vy)
    ty = 2.0 * (z * vx - x * vz)
    tz = 2.0 * (x * vy - y * vx)
    return (
        vx + w * tx + (y * tz - z * ty),
        vy + w * ty + (z * tx - x * tz),
        vz + w * tz + (x * ty - y * tx),
    )


def quat_to_matrix(q: Sequence[float]) -> Mat3:
    """Return the rotation matrix of the (normalised) quaternion ``q``."""
    x, y, z, w = quat_normalize(q)
    return (
        (1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
        (2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
        (2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)),
    )


def _matrix(m: object) -> Mat3:
    rows = _items(m, 'matrix')
    if len(rows) != 3:
        raise ProtocolError('bad_field', 'expected a 3x3 matrix', 'matrix')
    return (vec3(rows[0], 'matrix'), vec3(rows[1], 'matrix'), vec3(rows[2], 'matrix'))


def quat_from_matrix(m: Sequence[Sequence[float]]) -> Quat:
    """
    Return the unit quaternion (``w >= 0``) of a rotation matrix.

    The matrix is assumed orthonormal with determinant +1; small numerical errors are
    absorbed by the final normalisation.
    """
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = _matrix(m)
    trace = m00 + m11 + m22
    if trace > 0.0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = ((m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s, 0.25 * s)
    elif m00 >= m11 and m00 >= m22:
        s = 2.0 * math.sqrt(max(1.0 + m00 - m11 - m22, 0.0)) or 1.0
        q = (0.25 * s, (m01 + m10) / s, (m02 + m20) / s, (m21 - m12) / s)
    elif m11 >= m22:
        s = 2.0 * math.sqrt(max(1.0 + m11 - m00 - m22, 0.0)) or 1.0
        q = ((m01 + m10) / s, 0.25 * s, (m12 + m21) / s, (m02 - m20) / s)
    else:
        s = 2.0 * math.sqrt(max(1.0 + m22 - m00 - m11, 0.0)) or 1.0
        q = ((m02 + m20) / s, (m12 + m21) / s, 0.25 * s, (m10 - m01) / s)
    x, y, z, w = quat_normalize(q)
    return (-x, -y, -z, -w) if w < 0.0 else (x, y, z, w)


def quat_from_axis_angle(axis: Sequence[float], angle: float) -> Quat:
    """Return the rotation by ``angle`` radians (right-hand rule) about ``axis``."""
    ax = vec3(axis, 'axis')
    n = math.sqrt(ax[0] ** 2 + ax[1] ** 2 + ax[2] ** 2)
    if n < MIN_QUATERNION_NORM:
        raise ProtocolError('bad_field', 'rotation axis has zero length', 'axis')
    half = 0.5 * _number(angle, 'angle')
    s = math.sin(half) / n
    return (ax[0] * s, ax[1] * s, ax[2] * s, math.cos(half))


def quat_from_rpy(roll: float, pitch: float, yaw: float) -> Quat:
    """Return the quaternion (x, y, z, w) of fixed-axis roll, pitch, yaw (rad), as URDF."""
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return (sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy, cr * cp * cy + sr * sp * sy)


def angular_velocity_from_quaternions(
    q0: Sequence[float], q1: Sequence[float], dt: float, *, body: bool = False
) -> Vec3:
    """
    Return the constant angular velocity turning orientation ``q0`` into ``q1`` in ``dt``.

    Orientations map body vectors into the reference frame. The result is expressed in
    the reference frame (``q1 = exp(w dt / 2) q0``) or, with ``body=True``, in the body
    frame (``q1 = q0 exp(w dt / 2)``). The shorter of the two equivalent rotations is used.
    """
    step = _number(dt, 'dt')
    if step <= 0.0:
        raise ProtocolError('bad_field', 'dt must be positive', 'dt')
    a, b = quat_normalize(q0), quat_normalize(q1)
    if body:
        dx, dy, dz, dw = quat_multiply(quat_conjugate(a), b)
    else:
        dx, dy, dz, dw = quat_multiply(b, quat_conjugate(a))
    if dw < 0.0:
        dx, dy, dz, dw = -dx, -dy, -dz, -dw
    sin_half = math.sqrt(dx * dx + dy * dy + dz * dz)
    if sin_half < 1e-12:
        factor = 2.0 / step
    else:
        factor = 2.0 * math.atan2(sin_half, dw) / (sin_half * step)
    return (dx * factor, dy * factor, dz * factor)


def sensor_to_optical(rotation: Sequence[float]) -> Quat:
    """Return the optical-frame orientation for a ``ros_sensor`` orientation."""
    return quat_normalize(quat_multiply(quat_normalize(rotation), CAMERA_OPTICAL_ROTATION))


def matrix_determinant(m: Sequence[Sequence[float]]) -> float:
    """Return the determinant of a 3x3 matrix."""
    (a, b, c), (d, e, f), (g, h, i) = _matrix(m)
    return a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)


def matrix_multiply(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> Mat3:
    """Return the 3x3 matrix product ``a b``."""
    ma, mb = _matrix(a), _matrix(b)
    return tuple(  # type: ignore[return-value]
        tuple(sum(ma[r][k] * mb[k][c] for k in range(3)) for c in range(3)) for r in range(3)
    )


def matrix_transpose(m: Sequence[Sequence[float]]) -> Mat3:
    """Return the transpose of a 3x3 matrix."""
    rows = _matrix(m)
    return tuple(tuple(rows[r][c] for r in range(3)) for c in range(3))  # type: ignore
