"""Quaternion and rotation math: the one implementation every PyLoN package uses.

Conventions
-----------
* Quaternions are ``(x, y, z, w)`` (ROS order) with the Hamilton product:
  ``multiply(a, b)`` applies ``b`` first, then ``a``.
* A unit quaternion ``q`` rotates a vector ``v`` as ``q v q*``; ``to_matrix(q) @ v`` is the
  same rotation. An attitude ``base_link -> frame`` maps base_link vectors into ``frame``.
* Rotation vectors are axis times angle (rad). ``from_rotvec`` is the exponential map
  (``[sin(|v|/2) v/|v|, cos(|v|/2)]``, exact for small angles too) and ``to_rotvec`` its
  inverse on the shorter of the two rotations (angle in ``[0, pi]``).
* Matrices are 3x3 numpy arrays of proper rotations (orthonormal, determinant +1).
* Inputs are any sequence or array of real numbers; results are new float64 numpy arrays
  (``angle_between`` returns a float). Functions that need a unit quaternion normalise
  their input. A quaternion whose norm is below ``MIN_NORM``, a non-finite number or an
  input of the wrong size raises ValueError.

Values from the wire are validated in :mod:`pylon_protocol.frames` (which raises
ProtocolError) before they come here. The functions work on one rotation at a time, on
Python floats inside (faster than numpy for four numbers), so they suit per-sample code.
"""

from __future__ import annotations

from collections.abc import Sequence
import math

import numpy as np

__all__ = [
    'MIN_NORM', 'angle_between', 'angular_velocity_from_quaternions', 'canonical', 'conjugate',
    'from_axis_angle', 'from_matrix', 'from_rotvec', 'from_rpy', 'multiply', 'normalize',
    'rotate', 'skew', 'slerp', 'to_matrix', 'to_rotvec',
]

MIN_NORM = 1e-9
"""The smallest quaternion norm (or rotation axis length) accepted."""

_SMALL_ANGLE = 1e-8
"""Below this angle (rad) the exponential map uses ``sin(a/2)/a ~ 1/2 - a^2/48``."""

_SMALL_SINE = 1e-12
"""Below this ``|sin(angle/2)|`` the log map uses ``2 (x, y, z)``."""

_Quat = tuple[float, float, float, float]


def _floats(value: object, size: int, what: str) -> list[float]:
    """Return ``value`` as ``size`` finite Python floats or raise ValueError."""
    if isinstance(value, np.ndarray):
        items = value.tolist() if value.ndim == 1 and value.dtype.kind in 'fiu' else None
    elif isinstance(value, (str, bytes)):
        items = None
    else:
        try:
            items = [float(v) for v in value]  # type: ignore[union-attr]
        except (TypeError, ValueError):
            items = None
    if items is None or len(items) != size or not all(map(math.isfinite, items)):
        raise ValueError(f'{what} must be {size} finite real numbers, got {value!r}')
    return items


def _real(value: float, what: str) -> float:
    """Return ``value`` as a finite Python float or raise ValueError."""
    try:
        result = float(value)
    except (TypeError, ValueError):
        result = math.nan
    if not math.isfinite(result):
        raise ValueError(f'{what} must be a finite real number, got {value!r}')
    return result


def _unit(q: Sequence[float]) -> _Quat:
    """Return ``q`` divided by its norm as four floats (ValueError below ``MIN_NORM``)."""
    x, y, z, w = _floats(q, 4, 'quaternion')
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if not MIN_NORM <= n < math.inf:
        raise ValueError(f'quaternion {[x, y, z, w]} has norm {n!r}, not a rotation '
                         f'(zero, below {MIN_NORM} or overflowing)')
    return x / n, y / n, z / n, w / n


def _inverse(q: _Quat) -> _Quat:
    return -q[0], -q[1], -q[2], q[3]


def _product(a: Sequence[float], b: Sequence[float]) -> _Quat:
    """Return the Hamilton product ``a b`` of two quaternions given as four floats each."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    )


def _log(x: float, y: float, z: float, w: float) -> tuple[float, float, float]:
    """Return the rotation vector of the unit quaternion ``(x, y, z, w)``, shorter way."""
    if w < 0.0:
        x, y, z, w = -x, -y, -z, -w
    s = math.sqrt(x * x + y * y + z * z)
    if s < _SMALL_SINE:
        return 2.0 * x, 2.0 * y, 2.0 * z
    k = 2.0 * math.atan2(s, w) / s
    return x * k, y * k, z * k


def normalize(q: Sequence[float]) -> np.ndarray:
    """Return ``q`` scaled to unit norm (the sign is kept)."""
    return np.array(_unit(q))


def canonical(q: Sequence[float]) -> np.ndarray:
    """Return the unit quaternion of ``q`` with ``w >= 0`` (the same rotation)."""
    x, y, z, w = _unit(q)
    return np.array([-x, -y, -z, -w] if w < 0.0 else [x, y, z, w])


def conjugate(q: Sequence[float]) -> np.ndarray:
    """Return the conjugate ``q*`` (the inverse rotation of a unit quaternion)."""
    x, y, z, w = _floats(q, 4, 'quaternion')
    return np.array([-x, -y, -z, w])


def multiply(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    """Return the Hamilton product ``a b`` (rotate by ``b`` first, then by ``a``).

    The operands are not normalised: the product of unit quaternions is a unit quaternion
    to rounding, which callers that chain many products renormalise.
    """
    return np.array(_product(_floats(a, 4, 'quaternion a'), _floats(b, 4, 'quaternion b')))


def rotate(q: Sequence[float], v: Sequence[float]) -> np.ndarray:
    """Return the 3-vector ``v`` rotated by the (normalised) quaternion ``q``."""
    x, y, z, w = _unit(q)
    vx, vy, vz = _floats(v, 3, 'vector')
    # v' = v + 2 w (u x v) + 2 u x (u x v), u = (x, y, z)
    tx = 2.0 * (y * vz - z * vy)
    ty = 2.0 * (z * vx - x * vz)
    tz = 2.0 * (x * vy - y * vx)
    return np.array([
        vx + w * tx + (y * tz - z * ty),
        vy + w * ty + (z * tx - x * tz),
        vz + w * tz + (x * ty - y * tx),
    ])


def to_matrix(q: Sequence[float]) -> np.ndarray:
    """Return the rotation matrix of the (normalised) quaternion ``q``."""
    x, y, z, w = _unit(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def from_matrix(m: Sequence[Sequence[float]]) -> np.ndarray:
    """Return the unit quaternion (``w >= 0``) of a 3x3 rotation matrix.

    The matrix is taken as orthonormal with determinant +1; small numerical errors are
    absorbed by the final normalisation.
    """
    array = np.asarray(m, dtype=float) if not isinstance(m, (str, bytes)) else None
    if array is None or array.shape != (3, 3) or not np.all(np.isfinite(array)):
        raise ValueError(f'expected a 3x3 matrix of finite numbers, got {m!r}')
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = array.tolist()
    trace = m00 + m11 + m22
    if trace > 0.0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = ((m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s, 0.25 * s)
    elif m00 > m11 and m00 > m22:
        s = 2.0 * math.sqrt(max(1.0 + m00 - m11 - m22, 0.0)) or 1.0
        q = (0.25 * s, (m01 + m10) / s, (m02 + m20) / s, (m21 - m12) / s)
    elif m11 > m22:
        s = 2.0 * math.sqrt(max(1.0 + m11 - m00 - m22, 0.0)) or 1.0
        q = ((m01 + m10) / s, 0.25 * s, (m12 + m21) / s, (m02 - m20) / s)
    else:
        s = 2.0 * math.sqrt(max(1.0 + m22 - m00 - m11, 0.0)) or 1.0
        q = ((m02 + m20) / s, (m12 + m21) / s, 0.25 * s, (m10 - m01) / s)
    return canonical(q)


def from_axis_angle(axis: Sequence[float], angle: float) -> np.ndarray:
    """Return the rotation by ``angle`` rad (right-hand rule) about ``axis`` (any length)."""
    ax, ay, az = _floats(axis, 3, 'rotation axis')
    half = 0.5 * _real(angle, 'angle')
    n = math.sqrt(ax * ax + ay * ay + az * az)
    if n < MIN_NORM:
        raise ValueError(f'rotation axis {[ax, ay, az]} has zero length')
    s = math.sin(half) / n
    return np.array([ax * s, ay * s, az * s, math.cos(half)])


def from_rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Return the rotation of fixed-axis roll, pitch, yaw (rad) as URDF defines them.

    Roll about X first, then pitch about the fixed Y, then yaw about the fixed Z:
    ``R = Rz(yaw) Ry(pitch) Rx(roll)``.
    """
    r, p, y = _real(roll, 'roll'), _real(pitch, 'pitch'), _real(yaw, 'yaw')
    cr, sr = math.cos(r / 2), math.sin(r / 2)
    cp, sp = math.cos(p / 2), math.sin(p / 2)
    cy, sy = math.cos(y / 2), math.sin(y / 2)
    return np.array([sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy,
                     cr * cp * sy - sr * sp * cy, cr * cp * cy + sr * sp * sy])


def from_rotvec(v: Sequence[float]) -> np.ndarray:
    """Return the unit quaternion of the rotation vector ``v`` (exponential map)."""
    x, y, z = _floats(v, 3, 'rotation vector')
    angle = math.hypot(x, y, z)       # no overflow: a finite 1e300 rad gives a finite angle
    if angle < _SMALL_ANGLE:
        s = 0.5 - angle * angle / 48.0    # sin(angle / 2) / angle, error below 1e-35
    else:
        s = math.sin(0.5 * angle) / angle
    return np.array([x * s, y * s, z * s, math.cos(0.5 * angle)])


def to_rotvec(q: Sequence[float]) -> np.ndarray:
    """Return the rotation vector (rad, angle in ``[0, pi]``) of the (normalised) ``q``."""
    return np.array(_log(*_unit(q)))


def angle_between(a: Sequence[float], b: Sequence[float]) -> float:
    """Return the angle (rad, in ``[0, pi]``) of the rotation taking attitude ``a`` to ``b``."""
    x, y, z, w = _product(_inverse(_unit(a)), _unit(b))
    return 2.0 * math.atan2(math.sqrt(x * x + y * y + z * z), abs(w))


def slerp(a: Sequence[float], b: Sequence[float], fraction: float) -> np.ndarray:
    """Interpolate from ``a`` (fraction 0) to ``b`` (1) along the shorter rotation.

    The result is ``a exp(fraction log(a* b))``: the rotation between them is taken in
    ``a``'s axes and scaled. ``fraction`` outside ``[0, 1]`` extrapolates.
    """
    start = _unit(a)
    f = _real(fraction, 'fraction')
    rotvec = _log(*_product(_inverse(start), _unit(b)))
    step = from_rotvec([f * c for c in rotvec]).tolist()
    return np.array(_product(start, step))


def skew(v: Sequence[float]) -> np.ndarray:
    """Return the cross-product matrix ``[v x]`` (``skew(v) @ u == cross(v, u)``)."""
    x, y, z = _floats(v, 3, 'vector')
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def angular_velocity_from_quaternions(q0: Sequence[float], q1: Sequence[float], dt: float,
                                      *, body: bool = False) -> np.ndarray:
    """Return the constant angular velocity (rad/s) turning ``q0`` into ``q1`` in ``dt`` s.

    Orientations map body vectors into the reference frame. The result is expressed in the
    reference frame (``q1 = exp(w dt) q0``) or, with ``body=True``, in the body frame
    (``q1 = q0 exp(w dt)``), ``exp`` being :func:`from_rotvec`. The shorter of the two
    equivalent rotations is used.
    """
    step = _real(dt, 'dt')
    if step <= 0.0:
        raise ValueError(f'dt must be positive, got {dt!r}')
    a, b = _unit(q0), _unit(q1)
    delta = _product(_inverse(a), b) if body else _product(b, _inverse(a))
    return np.array(_log(*delta)) / step
