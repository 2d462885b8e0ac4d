"""A small ray-cast RGB renderer for the simulated cameras (pure numpy, no ROS).

The image is what ``pylon_camera_frame_chunk`` carries: tightly packed ``rgb8``, row 0 at
the top, ``step = width * 3`` (no image codec; see ``to_rgb8_bytes``). The projection is
the pinhole model the bridge publishes in ``camera_info``: ``f = height / (2 tan(vfov/2))``,
``cx = (width - 1)/2``, ``cy = (height - 1)/2``, no distortion; pixel (u, v) looks along
``(1, -(u - cx)/f, -(v - cy)/f)`` in the ``ros_sensor`` frame (+X look, +Y left, +Z up),
i.e. ``(u - cx, v - cy, f)`` in the REP-103 optical frame.

The scene: black sky; the sun as a bright disc (not smaller than ~1.5 px so it is always
visible); the planet sphere (optionally the ``raycast.Terrain`` surface) with Lambert
shading from the sun direction (the night side keeps a faint ambient level) and, for
bodies with an atmosphere, a thin blue limb glow; vessel primitives Lambert-shaded in
their colour, dark when the planet hides the sun from them. Colours are linear 0..1
scaled to 0..255 (no gamma).
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Sequence
from functools import lru_cache
import math

import numpy as np
from pylon_protocol import rotations

from pylon_sim import raycast

DEFAULT_WIDTH = 320
DEFAULT_HEIGHT = 240
DEFAULT_VERTICAL_FOV_DEG = 60.0
ENCODING = 'rgb8'

SUN_ANGULAR_RADIUS = math.radians(0.55)
"""Kerbol's angular radius seen from Kerbin's orbit (261 600 km at 13 599 840 km)."""

PLANET_COLOR = (0.35, 0.55, 0.42)
ATMOSPHERE_COLOR = (0.35, 0.55, 1.0)
SUN_COLOR = (1.0, 0.98, 0.92)
SKY_COLOR = (0.0, 0.0, 0.0)
AMBIENT = 0.04


@lru_cache(maxsize=8)
def _sensor_directions(width: int, height: int, vertical_fov_deg: float) -> np.ndarray:
    f = height / (2.0 * math.tan(math.radians(vertical_fov_deg) / 2.0))
    cx, cy = (width - 1) / 2.0, (height - 1) / 2.0
    v, u = np.mgrid[0:height, 0:width].astype(float)
    d = np.stack([np.full(u.shape, f), -(u - cx), -(v - cy)], axis=-1).reshape(-1, 3)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    d.setflags(write=False)
    return d


def pixel_directions(
    width: int = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
    vertical_fov_deg: float = DEFAULT_VERTICAL_FOV_DEG,
) -> np.ndarray:
    """Return (height*width, 3) unit ray directions in ``ros_sensor``, row-major from top-left."""
    return _sensor_directions(int(width), int(height), float(vertical_fov_deg))


def project(
    direction_sensor: Sequence[float],
    width: int = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
    vertical_fov_deg: float = DEFAULT_VERTICAL_FOV_DEG,
) -> tuple[float, float] | None:
    """Return the pixel (u, v) a ``ros_sensor`` direction lands on, None if behind."""
    x, y, z = (float(c) for c in direction_sensor)
    if x <= 0.0:
        return None
    f = height / (2.0 * math.tan(math.radians(vertical_fov_deg) / 2.0))
    return ((width - 1) / 2.0 - f * y / x, (height - 1) / 2.0 - f * z / x)


def _axis_range(forward: float, side: float, radius: float, focal: float, centre: float,
                size: int) -> tuple[int, int]:
    """Return the pixel interval along one image axis that a sphere can cover.

    The sphere's projection on the plane of the optical axis and this image axis is a
    disc of ``radius`` at (``forward``, ``side``); a ray reaching the sphere has its image
    coordinate ``centre - focal * tan(angle)`` within the disc's angular span.
    """
    distance = math.hypot(forward, side)
    if distance <= radius:
        return 0, size - 1
    angle = math.atan2(side, forward)
    half = math.asin(radius / distance)
    lo, hi = angle - half, angle + half
    if hi <= -math.pi / 2 or lo >= math.pi / 2:
        return 1, 0                                   # wholly behind the image plane
    lo, hi = max(lo, -math.pi / 2 + 1e-6), min(hi, math.pi / 2 - 1e-6)
    first = math.floor(centre - focal * math.tan(hi)) - 1
    last = math.ceil(centre - focal * math.tan(lo)) + 1
    return max(first, 0), min(last, size - 1)


def _cast_screen(o, d, rot, width, height, vertical_fov_deg, max_range, primitives,
                 planet_center, planet_radius, terrain, exclude) -> raycast.Hits:
    """Cast the pixel rays, each primitive only against the pixels its bounds cover.

    The planet takes every ray; a shape takes the rectangle of pixels its bounding sphere
    can project to (``_axis_range``), so its cost follows its size on the image.
    """
    hits = raycast.cast_full(o, d, max_range, (), planet_center, planet_radius, terrain)
    best, what, normals = hits.ranges.copy(), hits.what.copy(), hits.normals.copy()
    focal = height / (2.0 * math.tan(math.radians(vertical_fov_deg) / 2.0))
    cx, cy = (width - 1) / 2.0, (height - 1) / 2.0
    excluded = set(exclude)
    for k, prim in enumerate(primitives):
        if prim.owner is not None and prim.owner in excluded:
            continue
        x, y, z = rot.T @ (prim.center - o)
        radius = prim.bounding_radius
        if x + radius <= 0.0:
            continue
        u0, u1 = _axis_range(x, y, radius, focal, cx, width)
        v0, v1 = _axis_range(x, z, radius, focal, cy, height)
        if u0 > u1 or v0 > v1:
            continue
        rows = np.arange(v0, v1 + 1)[:, None] * width
        idx = (rows + np.arange(u0, u1 + 1)[None, :]).ravel()
        sub = raycast.cast_full(o, d[idx], max_range, (prim,))
        take = sub.ranges < best[idx]
        sel = idx[take]
        best[sel] = sub.ranges[take]
        what[sel] = k
        normals[sel] = sub.normals[take]
    return raycast.Hits(best, what, normals)


def _rotation(rotation: Sequence[float] | np.ndarray) -> np.ndarray:
    rot = np.asarray(rotation, dtype=float)
    return rotations.to_matrix(rot) if rot.shape == (4,) else rot.reshape(3, 3)


def render(
    camera_position: Sequence[float],
    camera_rotation: Sequence[float] | np.ndarray,
    sun_direction: Sequence[float],
    *,
    width: int = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
    vertical_fov_deg: float = DEFAULT_VERTICAL_FOV_DEG,
    primitives: Sequence[raycast.Primitive] = (),
    exclude: Collection[Hashable] = (),
    planet_center: Sequence[float] | None = None,
    planet_radius: float | None = None,
    terrain: raycast.Terrain | None = None,
    atmosphere_depth: float = 0.0,
    planet_color: Sequence[float] = PLANET_COLOR,
    sun_angular_radius: float = SUN_ANGULAR_RADIUS,
    max_range: float = 1e12,
) -> np.ndarray:
    """
    Render one frame; return a C-contiguous uint8 array (height, width, 3), row 0 on top.

    ``camera_position`` (m) and ``camera_rotation`` (``ros_sensor`` -> world, quaternion
    x, y, z, w or 3x3; compose ``part_to_world * frameRotation``) are in the same world
    frame as the primitives and the planet. ``sun_direction`` points from the camera
    towards the sun (world, any length). ``exclude`` holds owners of primitives to skip
    (the camera's own part). ``atmosphere_depth`` > 0 draws a limb glow.
    """
    width, height = int(width), int(height)
    rot = _rotation(camera_rotation)
    sun = np.asarray(sun_direction, dtype=float).reshape(3)
    sun = sun / np.linalg.norm(sun)
    d = pixel_directions(width, height, vertical_fov_deg) @ rot.T
    o = np.asarray(camera_position, dtype=float).reshape(3)
    hits = _cast_screen(o, d, rot, width, height, vertical_fov_deg, max_range, primitives,
                        planet_center, planet_radius, terrain, exclude)
    rgb = np.zeros((len(d), 3))
    rgb[:] = SKY_COLOR

    lit = np.clip(hits.normals @ sun, 0.0, 1.0)
    planet = hits.what == -2
    if planet.any():
        rgb[planet] = np.asarray(planet_color, dtype=float) * (AMBIENT + (1 - AMBIENT)
                                                                * lit[planet, None])
    vessel = hits.what >= 0
    if vessel.any():
        idx = np.flatnonzero(vessel)
        diffuse = lit[idx]
        if planet_radius and planet_center is not None:
            points = o + hits.ranges[idx, None] * d[idx]
            points += 1e-3 * hits.normals[idx]
            shadow = raycast.cast(points, np.broadcast_to(sun, points.shape), max_range, (),
                                  planet_center, planet_radius)
            diffuse = np.where(np.isfinite(shadow), 0.0, diffuse)
        colors = np.array([primitives[k].color for k in hits.what[idx]], dtype=float)
        rgb[idx] = colors * (2 * AMBIENT + (1 - 2 * AMBIENT) * diffuse[:, None])

    sky = hits.what == -1
    if atmosphere_depth > 0.0 and planet_radius and planet_center is not None and sky.any():
        idx = np.flatnonzero(sky)
        rel = o - np.asarray(planet_center, dtype=float)
        t = -(d[idx] @ rel)
        closest = rel + np.maximum(t, 0.0)[:, None] * d[idx]
        rho = np.linalg.norm(closest, axis=1)
        depth = float(atmosphere_depth)
        band = (rho >= planet_radius) & (rho < planet_radius + depth)
        strength = np.where(band, (1.0 - (rho - planet_radius) / depth) ** 2, 0.0)
        light = np.clip((closest / rho[:, None]) @ sun + 0.2, 0.0, 1.0)
        rgb[idx] += np.outer(strength * light, ATMOSPHERE_COLOR) * 0.8

    # Sun disc, at least ~1.5 px across in radius so that it never vanishes.
    pixel = math.radians(vertical_fov_deg) / height
    radius = max(float(sun_angular_radius), 1.5 * pixel)
    disc = sky & (d @ sun >= math.cos(radius))
    rgb[disc] = SUN_COLOR

    image = np.clip(rgb * 255.0 + 0.5, 0.0, 255.0).astype(np.uint8)
    return np.ascontiguousarray(image.reshape(height, width, 3))


def to_rgb8_bytes(image: np.ndarray) -> bytes:
    """Return the packed ``rgb8`` bytes (row 0 on top, ``step = width*3``) of an image."""
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError('expected a uint8 (height, width, 3) image')
    return np.ascontiguousarray(image).tobytes()
