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
from dataclasses import dataclass
from functools import lru_cache
import math

import numpy as np
from pylon_protocol import rotations

from pylon_sim.game import raycast, terrain_near
from pylon_sim.game.terrain import SiteTerrain

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
        self.footprints: dict[Hashable, list[_Footprint]] = {}

    def footprint(self, prim: raycast.Primitive, center: np.ndarray,
                  turn: np.ndarray) -> _Footprint:
        """Return the image of a shape at a camera-frame pose, reusing an earlier frame's.

        A shape that holds still in the camera frame (a part of the camera's own vessel)
        is cast once: a pose within ``FOOTPRINT_TOLERANCE`` m (and 1e-9 in rotation) of a
        recent one of the same shape reuses its pixels, distances and normals.
        """
        key = (prim.owner, prim.kind, prim.size)
        recent = self.footprints.setdefault(key, [])
        for known in recent:
            if np.abs(known.center - center).max() <= FOOTPRINT_TOLERANCE \
                    and np.abs(known.turn - turn).max() <= 1e-9:
                return known
        if len(self.footprints) > MAX_FOOTPRINTS:
            self.footprints = {key: recent}
        made = _Footprint.cast(self, prim, center, turn)
        recent.insert(0, made)
        del recent[RECENT_POSES:]
        return made

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
                 planet_center, planet_radius, terrain, reference: bool = False,
                 ) -> raycast.Hits:
    """Cast the planet's pixels (its bounding sphere's).

    A ``SiteTerrain`` is cast with ``terrain_near.intersect_near`` on the whole screen in
    the camera frame, each crater and boulder only on the pixels its sphere covers
    (``_Screen.pixels``); anything else, or everything when ``reference``, with
    ``raycast.cast_full`` on every pixel of the planet's disc.
    """
    n = len(screen.directions)
    if not planet_radius or planet_center is None:
        return raycast.Hits(np.full(n, np.inf), np.full(n, -1, dtype=int), np.zeros((n, 3)))
    center = np.asarray(planet_center, dtype=float).reshape(3)
    if isinstance(terrain, SiteTerrain) and not reference:
        return _site_hits(screen, o - center, rot, float(planet_radius), terrain, max_range)
    hits = raycast.Hits(np.full(n, np.inf), np.full(n, -1, dtype=int), np.zeros((n, 3)))
    reach = float(planet_radius) + (terrain.top_height if terrain is not None else 0.0)
    idx = screen.pixels(rot.T @ (center - o), reach)
    if idx.size:
        sub = raycast.cast_full(o, screen.directions[idx] @ rot.T, max_range, (), center,
                                planet_radius, terrain)
        hits.ranges[idx], hits.what[idx] = sub.ranges, sub.what
        hits.normals[idx] = sub.normals @ rot          # world -> camera frame
    return hits


def _site_hits(screen: _Screen, rel: np.ndarray, rot: np.ndarray, radius: float,
               terrain: SiteTerrain, max_range: float) -> raycast.Hits:
    """Return what each pixel hits of a site's planet: ranges, what (-2, -1), normals.

    ``rel`` is the camera's world position from the planet's centre. The rays are cast in
    the camera frame, where the pixel directions are constant: the terrain's features and
    axes are turned into it (``terrain_near``), not the rays; normals in that frame.
    """
    fixed = terrain.frame_rotation if terrain.frame_rotation is not None else np.eye(3)
    origin = rot.T @ rel                                 # camera from the centre, camera frame

    def near(center: np.ndarray, reach: float) -> np.ndarray:
        return screen.pixels(center - origin, reach)

    t, normals = terrain_near.intersect_near(terrain, origin, screen.directions, radius,
                                             max_range, near, to_fixed=fixed @ rot)
    miss = ~(t <= max_range)
    t[miss] = np.inf
    if max_range < np.inf:
        normals[miss] = 0.0
    return raycast.Hits(t, np.where(miss, -1, -2), normals)


FOOTPRINT_TOLERANCE = 1e-6
"""m: a shape this close to a pose cast in an earlier frame reuses that frame's image."""
MAX_FOOTPRINTS = 1024
SMALL_FOOTPRINT = 4096
"""Pixels up to which a shape's distances and normals come from one kernel call."""
RECENT_POSES = 4


@dataclass(frozen=True)
class _Footprint:
    """A shape's image at one camera-frame pose.

    The pixels whose rays hit it, each one's hit distance and the outward normal there
    (camera frame).
    """

    center: np.ndarray
    turn: np.ndarray
    pixels: np.ndarray
    ranges: np.ndarray
    normals: np.ndarray

    @classmethod
    def cast(cls, screen: _Screen, prim: raycast.Primitive, center: np.ndarray,
             turn: np.ndarray) -> _Footprint:
        """Cast a shape posed in the camera frame on the pixels its bounds project to."""
        corners = None if prim.kind == 'sphere' else \
            center + (_CORNERS * _half_extents(prim)) @ turn.T
        idx = screen.pixels(center, prim.bounding_radius, corners)
        local = raycast.Primitive(prim.kind, prim.size, center, turn)
        if idx.size <= SMALL_FOOTPRINT:    # a few misses' normals cost less than a 2nd call
            ranges, normals = raycast.primitive_hits(local, np.zeros(3),
                                                     screen.directions[idx], True)
            hit = np.flatnonzero(np.isfinite(ranges))
            return cls(center, turn, idx[hit], ranges[hit], normals[hit])
        ranges, _ = raycast.primitive_hits(local, np.zeros(3), screen.directions[idx], False)
        hit = np.flatnonzero(np.isfinite(ranges))
        _, normals = raycast.primitive_hits(local, np.zeros(3), screen.directions[idx[hit]],
                                            True)
        return cls(center, turn, idx[hit], ranges[hit], normals)


_CORNERS = np.array([[x, y, z] for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)])


def _half_extents(prim: raycast.Primitive) -> np.ndarray:
    """Return the half sizes of the box (shape axes) a box or cylinder fills."""
    if prim.kind == 'box':
        return 0.5 * np.asarray(prim.size)
    radius, length = prim.size
    return np.array([0.5 * length, radius, radius])


def _screen_hits(screen: _Screen, o: np.ndarray, rot: np.ndarray, max_range: float,
                primitives: Sequence[raycast.Primitive], planet_center, planet_radius,
                terrain, exclude: Collection[Hashable], reference: bool = False,
                ) -> raycast.Hits:
    """Return what each pixel's ray hits first; ranges along it, normals in the camera frame.

    The same answer as ``raycast.cast_full`` on every pixel ray, found with the work a
    frame needs: the planet only on the pixels of its disc, each shape only on the pixels
    its bounds project to, in the camera frame where the pixel directions are constant,
    and a shape that holds still in that frame not again (``_Screen.footprint``); then
    the nearest hit of each pixel wins.
    """
    hits = _planet_hits(screen, o, rot, max_range, planet_center, planet_radius, terrain,
                        reference)
    best, what, normals = hits.ranges, hits.what, hits.normals
    excluded = set(exclude)
    placed = []
    for k, prim in enumerate(primitives):
        if prim.owner is not None and prim.owner in excluded:
            continue
        center = rot.T @ (prim.center - o)
        placed.append((float(center @ center), k, center, prim))
    drawn = []
    for _, k, center, prim in sorted(placed, key=lambda item: item[0]):
        image = screen.footprint(prim, center, rot.T @ prim.rotation)
        idx = image.pixels
        take = (image.ranges < best[idx]) & (image.ranges <= max_range)
        best[idx[take]] = image.ranges[take]
        what[idx[take]] = k
        drawn.append((k, np.flatnonzero(take), image))
    for k, nearer, image in drawn:
        won = nearer[what[image.pixels[nearer]] == k]
        normals[image.pixels[won]] = image.normals[won]
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
    reference: bool = False,
) -> raycast.Hits:
    """Return what the ray of each pixel (row-major from top-left) hits, as ``render`` sees it.

    Arguments as ``render``. Ranges are metres along the pixel rays, ``what`` as
    ``raycast.Hits`` and the normals are in the camera's ``ros_sensor`` frame.
    """
    screen = _screen(int(width), int(height), float(vertical_fov_deg))
    return _screen_hits(screen, np.asarray(camera_position, dtype=float).reshape(3),
                        _rotation(camera_rotation), max_range, primitives, planet_center,
                        planet_radius, terrain, exclude, reference)


def _rotation(rotation: Sequence[float] | np.ndarray) -> np.ndarray:
    rot = np.asarray(rotation, dtype=float)
    return rotations.to_matrix(rot) if rot.shape == (4,) else rot.reshape(3, 3)


def sunlight(center: np.ndarray, radius: float, planet_center: np.ndarray,
             planet_radius: float, sun_direction: np.ndarray) -> float:
    """Tell whether a sphere is wholly in sunlight (1), wholly in the planet's shadow (0).

    The shadow is the planet's cylinder along the (parallel) sunlight; nan when the
    sphere reaches across its edge, so each of its pixels must be tested.
    """
    rel = np.asarray(center, dtype=float) - planet_center
    along = float(rel @ sun_direction)
    across = float(np.linalg.norm(rel - along * sun_direction))
    if along >= radius or across >= planet_radius + radius:
        return 1.0
    if along <= -radius and across <= planet_radius - radius:
        return 0.0
    return math.nan


def _vessel_colors(hits: raycast.Hits, idx: np.ndarray, directions: np.ndarray,
                   sun_direction: np.ndarray, colors, planet_center, planet_radius,
                   sunlit, max_range: float) -> np.ndarray:
    """Return the Lambert colours of the vessel pixels ``idx``, dark in the planet's shadow."""
    what = hits.what[idx]
    diffuse = np.clip(hits.normals[idx] @ sun_direction, 0.0, 1.0)
    if planet_radius and planet_center is not None:
        light = np.full(len(idx), math.nan) if sunlit is None else \
            np.asarray(sunlit, dtype=float)[what]
        test = np.flatnonzero(np.isnan(light))
        if test.size:
            k = idx[test]
            points = hits.ranges[k, None] * directions[k] + 1e-3 * hits.normals[k]
            shadow = raycast.cast(points, np.broadcast_to(sun_direction, points.shape),
                                  max_range, (), planet_center, planet_radius)
            light[test] = np.where(np.isfinite(shadow), 0.0, 1.0)
        diffuse = diffuse * light
    albedo = np.asarray(colors, dtype=float).reshape(-1, 3)[what]
    return albedo * (2 * AMBIENT + (1 - 2 * AMBIENT) * diffuse[:, None])


def _glow(directions: np.ndarray, planet_center: np.ndarray, planet_radius: float,
          depth: float, sun_direction: np.ndarray) -> np.ndarray:
    """Return the limb glow (N, 3) of sky rays passing through the atmosphere's shell.

    A ray's closest point to the planet centre is at ``max(t, 0)`` along it,
    ``t = d . c``; ``rho`` is its distance from the centre, found from two products per
    ray (no per-ray vectors).
    """
    t = np.maximum(directions @ planet_center, 0.0)
    along_sun = directions @ sun_direction
    c2 = float(planet_center @ planet_center)
    rho = np.sqrt(np.maximum(c2 - t * t, 0.0))
    band = (rho >= planet_radius) & (rho < planet_radius + depth)
    strength = np.where(band, (1.0 - (rho - planet_radius) / depth) ** 2, 0.0)
    up_sun = (t * along_sun - float(planet_center @ sun_direction)) / np.where(rho > 0, rho, 1)
    light = np.clip(up_sun + 0.2, 0.0, 1.0)
    return np.outer(strength * light, ATMOSPHERE_COLOR) * 0.8


def shade(hits: raycast.Hits, directions: np.ndarray, sun_direction: np.ndarray, *,
          colors: Sequence[Sequence[float]] = (), planet_center: np.ndarray | None = None,
          planet_radius: float | None = None, atmosphere_depth: float = 0.0,
          planet_color: Sequence[float] = PLANET_COLOR,
          sun_angular_radius: float = SUN_ANGULAR_RADIUS, pixel_angle: float = 0.0,
          max_range: float = 1e12, sunlit: Sequence[float] | None = None,
          near: Callable[[np.ndarray, float], np.ndarray] | None = None) -> np.ndarray:
    """Return the (N, 3) linear colours (float32) of rays from one point given what they hit.

    Any frame centred on the camera: ``directions`` (N, 3) unit rays, ``sun_direction``
    a unit vector, ``planet_center`` relative to the camera, ``hits`` from those rays
    (``colors[k]`` is primitive k's albedo). ``sunlit[k]`` (``sunlight``: 1, 0 or nan)
    spares the per-pixel shadow ray of a primitive wholly in or out of the planet's
    shadow; without it every vessel pixel casts one. ``near(center, radius)``, when
    given, returns the rays that can reach a sphere (``_Screen.pixels``), so the limb glow
    and the sun disc are only evaluated there; without it every ray is.
    """
    def reach(center: np.ndarray, radius: float) -> np.ndarray:
        return np.arange(len(directions)) if near is None else near(center, radius)

    rgb = np.empty((len(directions), 3), dtype=np.float32)   # 8-bit output: float32 is exact
    planet = hits.what == -2
    level = hits.normals @ sun_direction                       # one pass over every pixel
    np.clip(level, 0.0, 1.0, out=level)
    level *= 1 - AMBIENT
    level += AMBIENT
    level[~planet] = 0.0
    np.multiply(level[:, None], np.asarray(planet_color, dtype=float), out=rgb,
                casting='same_kind')
    if any(SKY_COLOR):
        rgb[~planet] = SKY_COLOR
    idx = np.flatnonzero(hits.what >= 0)
    if idx.size:
        rgb[idx] = _vessel_colors(hits, idx, directions, sun_direction, colors,
                                  planet_center, planet_radius, sunlit, max_range)
    if atmosphere_depth > 0.0 and planet_radius and planet_center is not None:
        idx = reach(planet_center, planet_radius + atmosphere_depth)
        idx = idx[hits.what[idx] == -1]
        rgb[idx] += _glow(directions[idx], planet_center, planet_radius,
                          float(atmosphere_depth), sun_direction)
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
    reference: bool = False,
) -> np.ndarray:
    """
    Render one frame; return a C-contiguous uint8 array (height, width, 3), row 0 on top.

    ``camera_position`` (m) and ``camera_rotation`` (``ros_sensor`` -> world, quaternion
    x, y, z, w or 3x3; compose ``part_to_world * frameRotation``) are in the same world
    frame as the primitives and the planet. ``sun_direction`` points from the camera
    towards the sun (world, any length). ``exclude`` holds owners of primitives to skip
    (the camera's own part). ``atmosphere_depth`` > 0 draws a limb glow. ``terrain``
    displaces the planet's surface: a ``terrain.SiteTerrain`` is cast per crater and
    boulder on the pixels each one covers (``terrain_near``); ``reference`` casts every
    planet pixel with ``raycast.cast_full`` instead (the same surfaces; the tests compare
    the two).
    """
    width, height = int(width), int(height)
    screen = _screen(width, height, float(vertical_fov_deg))
    rot = _rotation(camera_rotation)
    o = np.asarray(camera_position, dtype=float).reshape(3)
    sun = np.asarray(sun_direction, dtype=float).reshape(3)
    sun = rot.T @ (sun / np.linalg.norm(sun))
    hits = _screen_hits(screen, o, rot, max_range, primitives, planet_center, planet_radius,
                        terrain, exclude, reference)
    center, sunlit = None, None
    if planet_radius and planet_center is not None:
        world_center = np.asarray(planet_center, dtype=float).reshape(3)
        center = rot.T @ (world_center - o)
        seen = set(hits.what[hits.what >= 0].tolist())
        sun_world = rot @ sun
        sunlit = [sunlight(p.center, p.bounding_radius, world_center, planet_radius,
                           sun_world) if k in seen else 1.0
                  for k, p in enumerate(primitives)]
    rgb = shade(hits, screen.directions, sun, colors=[p.color for p in primitives],
                planet_center=center, planet_radius=planet_radius,
                atmosphere_depth=atmosphere_depth, planet_color=planet_color,
                sun_angular_radius=sun_angular_radius,
                pixel_angle=math.radians(vertical_fov_deg) / height, max_range=max_range,
                sunlit=sunlit, near=screen.pixels)
    rgb *= 255.0
    rgb += 0.5
    image = np.minimum(rgb, 255.0, out=rgb).astype(np.uint8)     # colours are never negative
    return image.reshape(height, width, 3)


def to_rgb8_bytes(image: np.ndarray) -> bytes:
    """Return the packed ``rgb8`` bytes (row 0 on top, ``step = width*3``) of an image."""
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError('expected a uint8 (height, width, 3) image')
    return np.ascontiguousarray(image).tobytes()
