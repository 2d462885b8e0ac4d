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

from collections.abc import Callable, Collection, Hashable, Sequence
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


class _Screen:
    """The camera's fixed geometry: pixel rays in ``ros_sensor`` and the pinhole numbers.

    ``pixels(center, radius)`` returns the pixels whose rays reach a sphere given in the
    camera frame: the rectangle its bounds project to (``_axis_range``), then the exact
    ray-sphere test on the constant per-pixel directions, so a shape costs what it
    covers on the image.
    """

    def __init__(self, width: int, height: int, vertical_fov_deg: float) -> None:
        self.width, self.height = width, height
        self.directions = pixel_directions(width, height, vertical_fov_deg)
        self.focal = height / (2.0 * math.tan(math.radians(vertical_fov_deg) / 2.0))
        self.cx, self.cy = (width - 1) / 2.0, (height - 1) / 2.0

    def _corner_rect(self, corners: np.ndarray) -> tuple[int, int, int, int] | None:
        """Return the pixel rectangle of a convex body's corners all in front of the camera."""
        x = corners[:, 0]
        u = self.cx - self.focal * corners[:, 1] / x
        v = self.cy - self.focal * corners[:, 2] / x
        return (max(math.floor(u.min()) - 1, 0), min(math.ceil(u.max()) + 1, self.width - 1),
                max(math.floor(v.min()) - 1, 0), min(math.ceil(v.max()) + 1, self.height - 1))

    def pixels(self, center: np.ndarray, radius: float,
               corners: np.ndarray | None = None) -> np.ndarray:
        """Return the indices of the pixels whose rays enter a camera-frame sphere.

        ``corners`` (8, 3), the camera-frame corners of a box the shape fits in, narrow
        the search: a shape wholly behind the camera has no pixels, one wholly in front
        only those of its corners' projected rectangle.
        """
        x, y, z = (float(c) for c in center)
        if x + radius <= 0.0 or (corners is not None and corners[:, 0].max() <= 0.0):
            return np.empty(0, dtype=np.intp)
        if corners is not None and corners[:, 0].min() > 1e-6:
            u0, u1, v0, v1 = self._corner_rect(corners)
        else:
            u0, u1 = _axis_range(x, y, radius, self.focal, self.cx, self.width)
            v0, v1 = _axis_range(x, z, radius, self.focal, self.cy, self.height)
        if u0 > u1 or v0 > v1:
            return np.empty(0, dtype=np.intp)
        rows = np.arange(v0, v1 + 1)[:, None] * self.width
        idx = (rows + np.arange(u0, u1 + 1)[None, :]).ravel()
        c = float(center @ center)
        r2 = radius * radius
        if c <= r2:
            return idx
        b = self.directions[idx] @ center
        return idx[(b > 0.0) & (b * b - c + r2 >= 0.0)]


@lru_cache(maxsize=8)
def _screen(width: int, height: int, vertical_fov_deg: float) -> _Screen:
    return _Screen(width, height, vertical_fov_deg)


def _planet_hits(screen: _Screen, o: np.ndarray, rot: np.ndarray, max_range: float,
                 planet_center, planet_radius, terrain) -> raycast.Hits:
    """Cast the planet's pixels (its bounding sphere's) with ``raycast.cast_full``."""
    n = len(screen.directions)
    hits = raycast.Hits(np.full(n, np.inf), np.full(n, -1, dtype=int), np.zeros((n, 3)))
    if not planet_radius or planet_center is None:
        return hits
    center = np.asarray(planet_center, dtype=float).reshape(3)
    reach = float(planet_radius) + (terrain.max_height if terrain is not None else 0.0)
    idx = screen.pixels(rot.T @ (center - o), reach)
    if idx.size:
        sub = raycast.cast_full(o, screen.directions[idx] @ rot.T, max_range, (), center,
                                planet_radius, terrain)
        hits.ranges[idx], hits.what[idx] = sub.ranges, sub.what
        hits.normals[idx] = sub.normals @ rot          # world -> camera frame
    return hits


_CORNERS = np.array([[x, y, z] for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)])


def _half_extents(prim: raycast.Primitive) -> np.ndarray:
    """Return the half sizes of the box (shape axes) a box or cylinder fills."""
    if prim.kind == 'box':
        return 0.5 * np.asarray(prim.size)
    radius, length = prim.size
    return np.array([0.5 * length, radius, radius])


def _screen_hits(screen: _Screen, o: np.ndarray, rot: np.ndarray, max_range: float,
                primitives: Sequence[raycast.Primitive], planet_center, planet_radius,
                terrain, exclude: Collection[Hashable]) -> raycast.Hits:
    """Return what each pixel's ray hits first; ranges along it, normals in the camera frame.

    The same answer as ``raycast.cast_full`` on every pixel ray, found with the work a
    frame needs: the planet only on the pixels of its disc, each shape (nearest first)
    only on the pixels its bounding sphere covers and that nothing nearer hit, in the
    camera frame where the pixel directions are constant, the hit distance first and
    the normal only for the pixels the shape wins.
    """
    hits = _planet_hits(screen, o, rot, max_range, planet_center, planet_radius, terrain)
    best, what, normals = hits.ranges, hits.what, hits.normals
    excluded = set(exclude)
    origin = np.zeros(3)
    placed = []
    for k, prim in enumerate(primitives):
        if prim.owner is not None and prim.owner in excluded:
            continue
        center = rot.T @ (prim.center - o)
        placed.append((float(center @ center), k, center, prim))
    candidates = []
    for _, k, center, prim in sorted(placed, key=lambda item: item[0]):
        radius = prim.bounding_radius
        turn = rot.T @ prim.rotation
        corners = None if prim.kind == 'sphere' else \
            center + (_CORNERS * _half_extents(prim)) @ turn.T
        idx = screen.pixels(center, radius, corners)
        if idx.size == 0:
            continue
        idx = idx[np.maximum(screen.directions[idx] @ center - radius, 0.0) < best[idx]]
        if idx.size == 0:
            continue
        local = raycast.Primitive(prim.kind, prim.size, center, turn)
        t, _ = raycast.primitive_hits(local, origin, screen.directions[idx], False)
        take = (t < best[idx]) & (t <= max_range)
        best[idx[take]] = t[take]
        what[idx[take]] = k
        candidates.append((k, idx[take], local))
    for k, idx, local in candidates:
        won = idx[what[idx] == k]
        if won.size:
            _, normals[won] = raycast.primitive_hits(local, origin, screen.directions[won],
                                                     True)
    return hits


def pixel_hits(
    camera_position: Sequence[float],
    camera_rotation: Sequence[float] | np.ndarray,
    *,
    width: int = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
    vertical_fov_deg: float = DEFAULT_VERTICAL_FOV_DEG,
    primitives: Sequence[raycast.Primitive] = (),
    exclude: Collection[Hashable] = (),
    planet_center: Sequence[float] | None = None,
    planet_radius: float | None = None,
    terrain: raycast.Terrain | None = None,
    max_range: float = 1e12,
) -> raycast.Hits:
    """Return what the ray of each pixel (row-major from top-left) hits, as ``render`` sees it.

    Arguments as ``render``. Ranges are metres along the pixel rays, ``what`` as
    ``raycast.Hits`` and the normals are in the camera's ``ros_sensor`` frame.
    """
    screen = _screen(int(width), int(height), float(vertical_fov_deg))
    return _screen_hits(screen, np.asarray(camera_position, dtype=float).reshape(3),
                        _rotation(camera_rotation), max_range, primitives, planet_center,
                        planet_radius, terrain, exclude)


def _rotation(rotation: Sequence[float] | np.ndarray) -> np.ndarray:
    rot = np.asarray(rotation, dtype=float)
    return rotations.to_matrix(rot) if rot.shape == (4,) else rot.reshape(3, 3)


def shade(hits: raycast.Hits, directions: np.ndarray, sun_direction: np.ndarray, *,
          colors: Sequence[Sequence[float]] = (), planet_center: np.ndarray | None = None,
          planet_radius: float | None = None, atmosphere_depth: float = 0.0,
          planet_color: Sequence[float] = PLANET_COLOR,
          sun_angular_radius: float = SUN_ANGULAR_RADIUS, pixel_angle: float = 0.0,
          max_range: float = 1e12,
          near: Callable[[np.ndarray, float], np.ndarray] | None = None) -> np.ndarray:
    """Return the (N, 3) linear colours of rays from one point given what they hit.

    Any frame centred on the camera: ``directions`` (N, 3) unit rays, ``sun_direction``
    a unit vector, ``planet_center`` relative to the camera, ``hits`` from those rays
    (``colors[k]`` is primitive k's albedo). ``near(center, radius)``, when given, returns
    the rays that can reach a sphere (``_Screen.pixels``), so the limb glow and the sun
    disc are only evaluated there; without it every ray is.
    """
    def reach(center: np.ndarray, radius: float) -> np.ndarray:
        return np.arange(len(directions)) if near is None else near(center, radius)

    rgb = np.zeros((len(directions), 3))
    rgb[:] = SKY_COLOR
    planet = np.flatnonzero(hits.what == -2)
    lit = np.clip(hits.normals[planet] @ sun_direction, 0.0, 1.0)
    rgb[planet] = np.asarray(planet_color, dtype=float) * (AMBIENT + (1 - AMBIENT)
                                                            * lit[:, None])
    idx = np.flatnonzero(hits.what >= 0)
    if idx.size:
        diffuse = np.clip(hits.normals[idx] @ sun_direction, 0.0, 1.0)
        if planet_radius and planet_center is not None:
            points = hits.ranges[idx, None] * directions[idx] + 1e-3 * hits.normals[idx]
            shadow = raycast.cast(points, np.broadcast_to(sun_direction, points.shape),
                                  max_range, (), planet_center, planet_radius)
            diffuse = np.where(np.isfinite(shadow), 0.0, diffuse)
        albedo = np.asarray(colors, dtype=float).reshape(-1, 3)[hits.what[idx]]
        rgb[idx] = albedo * (2 * AMBIENT + (1 - 2 * AMBIENT) * diffuse[:, None])
    if atmosphere_depth > 0.0 and planet_radius and planet_center is not None:
        idx = reach(planet_center, planet_radius + atmosphere_depth)
        idx = idx[hits.what[idx] == -1]
        t = directions[idx] @ planet_center
        closest = np.maximum(t, 0.0)[:, None] * directions[idx] - planet_center
        rho = np.linalg.norm(closest, axis=1)
        depth = float(atmosphere_depth)
        band = (rho >= planet_radius) & (rho < planet_radius + depth)
        strength = np.where(band, (1.0 - (rho - planet_radius) / depth) ** 2, 0.0)
        light = np.clip((closest / rho[:, None]) @ sun_direction + 0.2, 0.0, 1.0)
        rgb[idx] += np.outer(strength * light, ATMOSPHERE_COLOR) * 0.8
    # Sun disc, at least ~1.5 px across in radius so that it never vanishes.
    radius = max(float(sun_angular_radius), 1.5 * pixel_angle)
    idx = reach(sun_direction, math.sin(min(radius, math.pi / 2)))
    idx = idx[hits.what[idx] == -1]
    rgb[idx[directions[idx] @ sun_direction >= math.cos(radius)]] = SUN_COLOR
    return rgb


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
    (the camera's own part). ``atmosphere_depth`` > 0 draws a limb glow. ``terrain``
    displaces the planet's surface (``raycast.cast_full``).
    """
    width, height = int(width), int(height)
    screen = _screen(width, height, float(vertical_fov_deg))
    rot = _rotation(camera_rotation)
    o = np.asarray(camera_position, dtype=float).reshape(3)
    sun = np.asarray(sun_direction, dtype=float).reshape(3)
    sun = rot.T @ (sun / np.linalg.norm(sun))
    hits = _screen_hits(screen, o, rot, max_range, primitives, planet_center, planet_radius,
                        terrain, exclude)
    center = None
    if planet_radius and planet_center is not None:
        center = rot.T @ (np.asarray(planet_center, dtype=float).reshape(3) - o)
    rgb = shade(hits, screen.directions, sun, colors=[p.color for p in primitives],
                planet_center=center, planet_radius=planet_radius,
                atmosphere_depth=atmosphere_depth, planet_color=planet_color,
                sun_angular_radius=sun_angular_radius,
                pixel_angle=math.radians(vertical_fov_deg) / height, max_range=max_range,
                near=screen.pixels)
    image = np.clip(rgb * 255.0 + 0.5, 0.0, 255.0).astype(np.uint8)
    return np.ascontiguousarray(image.reshape(height, width, 3))


def to_rgb8_bytes(image: np.ndarray) -> bytes:
    """Return the packed ``rgb8`` bytes (row 0 on top, ``step = width*3``) of an image."""
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError('expected a uint8 (height, width, 3) image')
    return np.ascontiguousarray(image).tobytes()
