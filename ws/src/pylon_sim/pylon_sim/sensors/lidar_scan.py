"""LiDAR scans: the mod's ray patterns cast through ``raycast`` and the scan packet's fields.

Ray patterns are the protocol's layouts (``pylon_protocol.lidar``) in the ``ros_sensor``
frame (+X look direction, +Y left, +Z up): ``vertical_major_directions`` for the 2D LiDAR
and ``fibonacci_hemisphere_directions`` for the 3D LiDAR. ``scan`` casts a pattern from a
sensor pose; ``lidar_scan_fields`` builds the payload fields of ``pylon_lidar_scan`` (keys
exactly as the packet schema). Pure numpy, no ROS.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Sequence
import math

import numpy as np
from pylon_protocol import rotations
from pylon_protocol.lidar import LAYOUT_2D, LAYOUT_3D
from pylon_protocol.packets import ROS_SENSOR

from pylon_sim.game.raycast import cast, Primitive, Terrain

NO_HIT_VALUE = -1.0
"""Default ``ranges`` entry of a ray without a return (the mod's ``noHitValue``)."""


def hemisphere_ray_count(hemisphere_density: float, max_rays: int = 20000) -> int:
    """
    Return the 3D ray count for a density in rays per steradian (simulator choice).

    ``round(density * 2 pi)`` (a hemisphere is 2 pi sr), clamped to 1..``max_rays``.
    """
    if not math.isfinite(hemisphere_density) or hemisphere_density <= 0.0:
        return 1
    return int(min(max(round(hemisphere_density * 2.0 * math.pi), 1), max_rays))


def sensor_rays_world(
    directions_sensor: np.ndarray,
    sensor_position: Sequence[float],
    sensor_rotation: Sequence[float] | np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """
    Turn sensor-frame directions into world rays.

    ``sensor_position`` is the sensor origin in the world and ``sensor_rotation`` the
    sensor->world rotation (quaternion x, y, z, w or 3x3 matrix); compose it as
    ``part_to_world * frameRotation``. Returns ``(origins (N, 3), directions (N, 3))``.
    """
    rot = np.asarray(sensor_rotation, dtype=float)
    rot = rotations.to_matrix(rot) if rot.shape == (4,) else rot.reshape(3, 3)
    d = np.asarray(directions_sensor, dtype=float).reshape(-1, 3) @ rot.T
    o = np.broadcast_to(np.asarray(sensor_position, dtype=float).reshape(3), d.shape)
    return o, d


# -- packet fields ------------------------------------------------------------------------------

def _rounded(values: np.ndarray, digits: int) -> list[float]:
    """Return the values rounded to ``digits`` decimals as a list (numpy's half-to-even)."""
    return np.round(np.asarray(values, dtype=float), digits).tolist()


def lidar_scan_fields(
    *,
    mode: str,
    sensor_id: str,
    vessel: str,
    part_flight_id: int,
    universal_time: float,
    ranges: np.ndarray,
    directions: np.ndarray,
    max_distance: float,
    scan_rate_hz: float,
    frame_position: Sequence[float] = (0.0, 0.0, 0.0),
    frame_rotation: Sequence[float] = (0.0, 0.0, 0.0, 1.0),
    horizontal_fov_deg: float = 360.0,
    hemisphere_density: float = 0.0,
    include_hit_points: bool = False,
    include_directions: bool = False,
    no_hit_value: float = NO_HIT_VALUE,
    digits: int = 4,
) -> dict:
    """
    Build the payload fields of one ``pylon_lidar_scan`` (for ``packets.build_state``).

    ``mode`` is ``'2D'`` or ``'3D'``; ``ranges`` (N,) are metres along the unit sensor-frame
    ``directions`` (N, 3) (inf / nan / > ``max_distance`` = no return); the directions must
    be the layout's (``pylon_protocol.lidar``: ``vertical_major_directions`` for 2D,
    ``fibonacci_hemisphere_directions`` for 3D), in ray order. Misses are sent as
    ``no_hit_value``; ``points`` (sensor frame, ``null`` triples for misses) and
    ``directions`` are added only when asked for, flat. Values are rounded to ``digits``
    decimals to keep datagrams small.
    """
    mode = str(mode).upper()
    if mode not in ('2D', '3D'):
        raise ValueError('mode must be 2D or 3D')
    r = np.asarray(ranges, dtype=float).reshape(-1)
    d = np.asarray(directions, dtype=float).reshape(-1, 3)
    if len(r) != len(d):
        raise ValueError('ranges and directions differ in length')
    n = len(r)
    hit = np.isfinite(r) & (r >= 0.0) & (r <= float(max_distance))
    sent = np.where(hit, r, float(no_hit_value))
    if mode == '2D':
        h_count, v_count, density, h_fov, v_fov = n, 1, 0.0, float(horizontal_fov_deg), 0.0
        layout = LAYOUT_2D
    else:
        h_count, v_count, density, h_fov, v_fov = n, 1, float(hemisphere_density), 360.0, 180.0
        layout = LAYOUT_3D
    fields: dict = {
        'mode': mode,
        'sensorId': sensor_id,
        'vessel': vessel,
        'partFlightId': int(part_flight_id),
        'universalTime': float(universal_time),
        'rayCount': n,
        'horizontalCount': h_count,
        'verticalCount': v_count,
        'hemisphereDensity': density,
        'horizontalFovDeg': h_fov,
        'verticalFovDeg': v_fov,
        'scanRateHz': float(scan_rate_hz),
        'maxDistance': float(max_distance),
        'layout': layout,
        'coordinateFrame': ROS_SENSOR,
        'hitCount': int(hit.sum()),
        'origin': [0.0, 0.0, 0.0],
        'framePosition': [float(v) for v in frame_position],
        'frameRotation': [float(v) for v in frame_rotation],
        'ranges': _rounded(sent, digits),
        'hitMask': hit.astype(int).tolist(),
    }
    if include_hit_points:
        pts = d * np.where(hit, r, 0.0)[:, None]
        flat: list[float | None] = []
        for k in range(n):
            flat.extend(_rounded(pts[k], digits) if hit[k] else (None, None, None))
        fields['points'] = flat
    if include_directions:
        fields['directions'] = _rounded(d.ravel(), 6)
    return fields


def scan(
    directions_sensor: np.ndarray,
    sensor_position: Sequence[float],
    sensor_rotation: Sequence[float] | np.ndarray,
    max_range: float,
    primitives: Sequence[Primitive] = (),
    sphere_center: Sequence[float] | None = None,
    sphere_radius: float | None = None,
    terrain: Terrain | None = None,
    exclude: Collection[Hashable] = (),
    noise: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """Cast a sensor-frame ray pattern from a sensor pose; return ranges (inf = no hit)."""
    _, d = sensor_rays_world(directions_sensor, sensor_position, sensor_rotation)
    ranges = cast(sensor_position, d, max_range, primitives, sphere_center, sphere_radius,
                  terrain, exclude)
    if noise is not None:
        ranges = np.where(np.isfinite(ranges), noise(ranges), ranges)
    return ranges
