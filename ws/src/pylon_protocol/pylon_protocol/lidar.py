"""LiDAR ray layouts: the direction of every ray of a ``pylon_lidar_scan``, in ray order.

A scan's ``layout`` names how its ``ranges`` map to directions in the ``ros_sensor`` frame
(+X the look direction, +Y left, +Z up). The simulator casts its rays
along these directions and the bridge turns ranges back into a LaserScan or points with
them, so both use this module.

- ``vertical-major`` (2D LiDAR): ray ``i`` of ``N`` lies in the sensor's X-Y plane at
  ``-fov/2 + fov * i / N`` for a full circle (``fov >= 359.9°``, no duplicate ray at
  ±180°), else at ``-fov/2 + fov * i / (N - 1)``, counter-clockwise about +Z.
- ``fibonacci-hemisphere`` (3D LiDAR): ray ``i`` of ``N`` is ``(f, -cos(a) r, sin(a) r)``
  with ``f = (i + 0.5) / N``, ``r = sqrt(1 - f²)`` and ``a = 2.3999632 i`` (the mod's
  golden angle), the hemisphere in front of the sensor; a single ray is ``(1, 0, 0)``.
"""

from __future__ import annotations

import math

import numpy as np

LAYOUT_2D = 'vertical-major'
LAYOUT_3D = 'fibonacci-hemisphere'
GOLDEN_ANGLE_RAD = 2.3999632
"""Angle increment of the Fibonacci hemisphere layout, exactly as the mod uses it."""
FULL_CIRCLE_DEG = 359.9
"""A 2D field of view at least this wide is a full circle: its N rays span fov / N each."""


def is_full_circle(horizontal_fov_deg: float) -> bool:
    """Tell whether a 2D LiDAR's field of view counts as a full circle."""
    return float(horizontal_fov_deg) >= FULL_CIRCLE_DEG


def angle_increment_2d(count: int, horizontal_fov_deg: float) -> float:
    """Return the angle (rad) between neighbouring rays of a ``vertical-major`` scan.

    ``fov / N`` for a full circle, else ``fov / (N - 1)``; a scan of no ray, or a single
    ray of a partial field of view, has no increment (0).
    """
    fov = math.radians(float(horizontal_fov_deg))
    if is_full_circle(horizontal_fov_deg):
        return fov / count if count > 0 else 0.0
    return fov / (count - 1) if count > 1 else 0.0


def lidar_2d_angles(horizontal_count: int, horizontal_fov_deg: float) -> np.ndarray:
    """
    Return the 2D LiDAR ray angles (rad, counter-clockwise about +Z from +X).

    Ray i: ``-FOV/2 + FOV*i/N`` for FOV >= 359.9 deg (no duplicate ray at +-180),
    otherwise ``-FOV/2 + FOV*i/(N-1)``; a single ray with FOV < 359.9 deg (0/0 in that
    formula) points straight ahead (angle 0), a simulator choice.
    """
    n = int(horizontal_count)
    if n < 1:
        raise ValueError('horizontal_count must be >= 1')
    fov = math.radians(float(horizontal_fov_deg))
    i = np.arange(n, dtype=float)
    if is_full_circle(horizontal_fov_deg):
        return -fov / 2.0 + fov * i / n
    if n == 1:
        return np.zeros(1)
    return -fov / 2.0 + fov * i / (n - 1)


def vertical_major_directions(
    horizontal_count: int,
    horizontal_fov_deg: float,
    vertical_count: int = 1,
    vertical_fov_deg: float = 0.0,
) -> np.ndarray:
    """
    Return (N, 3) unit ray directions of the ``vertical-major`` layout in ``ros_sensor``.

    The 2D LiDAR has ``vertical_count == 1``: ray i points at ``lidar_2d_angles`` i in the
    sensor's X-Y plane, ``(cos a, sin a, 0)``. For more rows (a simulator extension the
    protocol does not define) the row index is the major (outer) index,
    ``i = row * horizontal_count + column``, rows spread over ``vertical_fov_deg`` from
    bottom to top with the same end-point rule as ``-FOV/2 + FOV*j/(M-1)``.
    """
    az = lidar_2d_angles(horizontal_count, horizontal_fov_deg)
    m = int(vertical_count)
    if m < 1:
        raise ValueError('vertical_count must be >= 1')
    if m == 1:
        el = np.zeros(1)
    else:
        vfov = math.radians(float(vertical_fov_deg))
        el = -vfov / 2.0 + vfov * np.arange(m) / (m - 1)
    el_g, az_g = np.meshgrid(el, az, indexing='ij')
    el_g, az_g = el_g.ravel(), az_g.ravel()
    return np.stack([np.cos(el_g) * np.cos(az_g), np.cos(el_g) * np.sin(az_g),
                     np.sin(el_g)], axis=1)


def fibonacci_hemisphere_directions(n: int) -> np.ndarray:
    """
    Return (n, 3) unit directions of the 3D LiDAR ``fibonacci-hemisphere`` layout.

    For i in 0..n-1: ``f = (i + 0.5)/n``, ``r = sqrt(1 - f^2)``, ``a = i * 2.3999632`` and
    the direction is ``(f, -cos(a) r, sin(a) r)`` in ``ros_sensor`` (the hemisphere in
    front of the sensor, +X); n = 1 gives ``(1, 0, 0)`` and n = 0 no rays.
    """
    n = int(n)
    if n < 0:
        raise ValueError('n must be >= 0')
    if n == 1:
        return np.array([[1.0, 0.0, 0.0]])
    i = np.arange(n, dtype=float)
    f = (i + 0.5) / n
    r = np.sqrt(1.0 - f * f)
    a = i * GOLDEN_ANGLE_RAD
    return np.stack([f, -np.cos(a) * r, np.sin(a) * r], axis=1)
