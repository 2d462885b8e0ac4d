"""Vectorised ray casting for the simulated LiDARs and cameras (pure numpy, no ROS).

All positions and directions passed to ``cast`` are in ONE right-handed Cartesian frame of
the caller's choice (the simulator's world/inertial frame), metres. Directions need not be
unit length; they are normalised here, and ranges are metres along the unit direction.

What a ray can hit:

* the planet: a sphere of ``sphere_radius`` about ``sphere_center``, optionally displaced by
  a ``Terrain`` (see below); ``sphere_radius=None`` (or 0) disables it;
* ``Primitive`` shapes (sphere, oriented box, cylinder) of vessels' parts. A primitive whose
  ``owner`` is in ``exclude`` is ignored (the sensor's own part).

Terrain model: without a ``Terrain`` (``terrain=None``) the planet is the bare sphere of
the body radius, which is what the tests check analytically. A ``Terrain`` gives a height
``h(u)`` in metres above the sphere as a function of the unit up vector ``u`` in its own
frame (``Terrain.in_frame(rotation)`` views it from the ray frame, e.g. a body-fixed
terrain from the inertial frame at one UT), and the surface is
``|p - c| = R + h((p - c)/|p - c|)``; ``Terrain.intersect`` casts at it (by default marched
inside the shell ``R + min_h .. R + max_h`` and refined by bisection; a terrain with
features of its own, ``terrain.SiteTerrain``, overrides it). ``SmoothTerrain`` is a sum of
a few low-order spherical waves in latitude/longitude with a fixed amplitude bound.

Ray patterns are the protocol's layouts (``pylon_protocol.lidar``) in the ``ros_sensor``
frame (+X look direction, +Y left, +Z up): ``vertical_major_directions`` for the 2D LiDAR
and ``fibonacci_hemisphere_directions`` for the 3D LiDAR. ``lidar_scan_fields`` builds the
payload fields of ``pylon_lidar_scan`` (keys exactly as the packet schema).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
import copy
from dataclasses import dataclass, field
import math

import numpy as np
from pylon_protocol import rotations
from pylon_protocol.lidar import LAYOUT_2D, LAYOUT_3D
from pylon_protocol.packets import ROS_SENSOR

NO_HIT_VALUE = -1.0
"""Default ``ranges`` entry of a ray without a return (the mod's ``noHitValue``)."""

_EPS = 1e-9
_SHAPES = ('sphere', 'box', 'cylinder')


# -- primitives -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Primitive:
    """
    One primitive shape placed in the ray frame.

    ``kind``/``size`` as ``vessel.Shape``: ``box`` size (x, y, z) full edge lengths;
    ``cylinder`` size (radius, length) with its axis along the shape's local +X;
    ``sphere`` size (radius,). ``center`` is the shape centre (m) and ``rotation`` the
    3x3 matrix turning shape-local vectors into the ray frame (columns = local axes).
    ``owner`` identifies the part, e.g. ``(vessel_id, part_flight_id)``; ``color`` is the
    renderer's albedo (RGB 0..1).
    """

    kind: str
    size: tuple[float, ...]
    center: np.ndarray
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    owner: Hashable = None
    color: tuple[float, float, float] = (0.75, 0.75, 0.72)

    def __post_init__(self) -> None:
        if self.kind not in _SHAPES:
            raise ValueError(f'unknown primitive kind {self.kind!r}')
        object.__setattr__(self, 'center', np.asarray(self.center, dtype=float).reshape(3))
        object.__setattr__(self, 'rotation', np.asarray(self.rotation, dtype=float).reshape(3, 3))
        object.__setattr__(self, 'size', tuple(float(s) for s in self.size))

    @property
    def bounding_radius(self) -> float:
        """Return the radius of a sphere about ``center`` enclosing the shape."""
        if self.kind == 'sphere':
            return self.size[0]
        if self.kind == 'box':
            return 0.5 * math.sqrt(sum(s * s for s in self.size))
        r, length = self.size
        return math.hypot(r, 0.5 * length)


def vessel_primitives(
    parts: Iterable,
    position: Sequence[float],
    rotation: Sequence[float] | np.ndarray,
    vessel_key: Hashable = None,
    color: tuple[float, float, float] = (0.75, 0.75, 0.72),
) -> list[Primitive]:
    """
    Place the shapes of a vessel's parts in the ray frame.

    ``parts`` are ``vessel.Part`` objects (``shape``, ``position`` and ``rotation`` in the
    vessel frame, ``flight_id``). ``position`` is the world position of the vessel frame's
    origin and ``rotation`` the vessel->world rotation (quaternion x, y, z, w or a 3x3
    matrix). Each primitive's ``owner`` is ``(vessel_key, part.flight_id)``.
    """
    rot = np.asarray(rotation, dtype=float)
    rot = rotations.to_matrix(rot) if rot.shape == (4,) else rot.reshape(3, 3)
    origin = np.asarray(position, dtype=float).reshape(3)
    out = []
    for part in parts:
        part_rot = rot @ rotations.to_matrix(part.rotation)
        center = origin + rot @ np.asarray(part.position, dtype=float)
        out.append(Primitive(part.shape.kind, tuple(part.shape.size), center, part_rot,
                             (vessel_key, part.flight_id), color))
    return out


# -- intersection kernels ---------------------------------------------------------------------

def _slab(o: np.ndarray, d: np.ndarray, half: float) -> tuple[np.ndarray, np.ndarray]:
    """Return the parameter interval of rays inside ``|o + t d| <= half`` (one axis)."""
    with np.errstate(divide='ignore', invalid='ignore'):
        inv = 1.0 / d
        t0 = (-half - o) * inv
        t1 = (half - o) * inv
    lo = np.minimum(t0, t1)
    hi = np.maximum(t0, t1)
    parallel = np.abs(d) < 1e-15
    inside = np.abs(o) <= half
    lo = np.where(parallel, np.where(inside, -np.inf, np.inf), lo)
    hi = np.where(parallel, np.where(inside, np.inf, -np.inf), hi)
    return lo, hi


def _sphere_interval(
    o: np.ndarray, d: np.ndarray, radius: float
) -> tuple[np.ndarray, np.ndarray]:
    """Return the interval of unit rays ``o + t d`` inside a sphere at the origin.

    ``o`` is (N, 3), or (3,) when every ray starts at one point (a sensor: one product).
    """
    if o.ndim == 1:
        b = d @ o
        c = float(o @ o) - radius * radius
    else:
        b = np.einsum('ij,ij->i', o, d)
        c = np.einsum('ij,ij->i', o, o) - radius * radius
    disc = b * b - c
    ok = disc >= 0.0
    root = np.sqrt(np.where(ok, disc, 0.0))
    # Numerically stable roots: q = -(b + sign(b) root); t0 = q, t1 = c / q.
    q = -(b + np.copysign(root, b))
    with np.errstate(divide='ignore', invalid='ignore'):
        ta = q
        tb = np.where(q != 0.0, c / q, 0.0)
    lo = np.where(ok, np.minimum(ta, tb), np.inf)
    hi = np.where(ok, np.maximum(ta, tb), -np.inf)
    return lo, hi


def primitive_hits(
    prim: Primitive, o: np.ndarray, d: np.ndarray, want_normals: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    """Return the nearest positive hit distance (inf if none) and the outward normals.

    ``o`` is (N, 3), or (3,) for rays that all start at one point; ``d`` (N, 3) unit
    directions. A ray starting inside the shape hits it where it leaves. The normals
    (None unless ``want_normals``) face the ray's origin side.
    """
    n = len(d)
    local_o = (o - prim.center) @ prim.rotation
    if local_o.ndim == 1:
        local_o = np.broadcast_to(local_o, (n, 3))
    local_d = d @ prim.rotation
    axis = np.zeros(n, dtype=int)
    if prim.kind == 'sphere':
        lo, hi = _sphere_interval(local_o, local_d, prim.size[0])
    elif prim.kind == 'box':
        lo = np.full(n, -np.inf)
        hi = np.full(n, np.inf)
        for k in range(3):
            a, b = _slab(local_o[:, k], local_d[:, k], 0.5 * prim.size[k])
            axis = np.where(a > lo, k, axis)
            lo = np.maximum(lo, a)
            hi = np.minimum(hi, b)
    else:
        radius, length = prim.size
        lo, hi = _slab(local_o[:, 0], local_d[:, 0], 0.5 * length)
        o2 = local_o.copy()
        d2 = local_d.copy()
        o2[:, 0] = 0.0
        d2[:, 0] = 0.0
        dd = np.einsum('ij,ij->i', d2, d2)
        b = np.einsum('ij,ij->i', o2, d2)
        c = np.einsum('ij,ij->i', o2, o2) - radius * radius
        disc = b * b - dd * c
        along = dd < 1e-18
        ok = (disc >= 0.0) & ~along
        root = np.sqrt(np.where(ok, disc, 0.0))
        safe = np.where(along, 1.0, dd)
        r0 = np.where(ok, (-b - root) / safe, np.inf)
        r1 = np.where(ok, (-b + root) / safe, -np.inf)
        r0 = np.where(along, np.where(c <= 0.0, -np.inf, np.inf), r0)
        r1 = np.where(along, np.where(c <= 0.0, np.inf, -np.inf), r1)
        axis = np.where(r0 > lo, 1, 0)   # 1 = side wall, 0 = end cap
        lo = np.maximum(lo, r0)
        hi = np.minimum(hi, r1)
    hit = (lo <= hi) & (hi > _EPS)
    entering = lo > _EPS
    t = np.where(hit, np.where(entering, lo, hi), np.inf)
    if not want_normals:
        return t, None
    p = local_o + np.where(np.isfinite(t), t, 0.0)[:, None] * local_d
    if prim.kind == 'sphere':
        normal = p
    elif prim.kind == 'box':
        normal = np.zeros_like(p)
        rows = np.arange(n)
        normal[rows, axis] = np.sign(p[rows, axis])
    else:
        side = p.copy()
        side[:, 0] = 0.0
        cap = np.zeros_like(p)
        cap[:, 0] = np.sign(p[:, 0])
        normal = np.where((axis == 1)[:, None], side, cap)
    length = np.linalg.norm(normal, axis=1, keepdims=True)
    normal = normal / np.where(length > 0.0, length, 1.0)
    # Seen from inside (exit hit), the visible face points back towards the ray.
    normal = np.where(entering[:, None], normal, -normal)
    return t, normal @ prim.rotation.T


# -- terrain --------------------------------------------------------------------------------

class Terrain:
    """
    A height field over the sphere: ``height(u)`` m for unit up vectors ``u`` (N, 3).

    A terrain lives in a frame of its own (e.g. fixed to the body); ``frame_rotation`` is
    the 3x3 rotation from the ray frame into it (None: the ray frame itself), see
    ``in_frame``. ``intersect`` is the ray cast in the terrain's frame; a terrain with
    features of its own (boulders, a local patch) overrides it.
    """

    min_height = 0.0
    max_height = 0.0
    frame_rotation: np.ndarray | None = None

    @property
    def top_height(self) -> float:
        """Return the height above the sphere no part of the surface reaches past, m.

        ``max_height`` bounds the height field; a terrain with features above it
        (boulders) raises this bound, which a caller culling rays by a bounding sphere
        must use.
        """
        return self.max_height

    def height(self, up: np.ndarray) -> np.ndarray:
        """Return the terrain height above the sphere, m (override)."""
        return np.zeros(len(up))

    def intersect(self, o: np.ndarray, d: np.ndarray, radius: float, max_range: float,
                  want_normals: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Return the hit distance (inf: none) and unit normal of unit rays, terrain frame.

        ``o`` is relative to the planet's centre; normals are None unless wanted. By
        default the shell is marched (``_terrain_hits``) and the normal is the sphere's
        (the slope is not shaded).
        """
        t = _terrain_hits(o, d, radius, self, max_range)
        if not want_normals:
            return t, None
        p = o + np.where(np.isfinite(t), t, 0.0)[:, None] * d
        return t, p / np.maximum(np.linalg.norm(p, axis=1, keepdims=True), 1e-12)

    def in_frame(self, rotation: np.ndarray) -> Terrain:
        """Return this terrain seen from a ray frame; ``rotation`` turns ray -> terrain."""
        view = copy.copy(self)
        view.frame_rotation = np.asarray(rotation, dtype=float).reshape(3, 3)
        return view


def sphere_interval(o: np.ndarray, d: np.ndarray, radius: float,
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Return the interval ``lo, hi`` of unit rays ``o + t d`` inside a sphere at the origin.

    ``lo > hi`` (inf, -inf) for a ray that misses it.
    """
    return _sphere_interval(o, d, radius)


def sphere_first_hit(o: np.ndarray, d: np.ndarray, radius: float,
                     min_distance: float = 0.0) -> np.ndarray:
    """Return the first hit of unit rays on a sphere at the origin, inf for none.

    Only hits farther than ``min_distance`` count; a ray from inside gets its exit.
    """
    lo, hi = _sphere_interval(o, d, radius)
    t = np.where(lo > min_distance, lo, np.where(hi > min_distance, hi, np.inf))
    return np.where(lo <= hi, t, np.inf)


def _terrain_cast(terrain: Terrain, rel: np.ndarray, d: np.ndarray, radius: float,
                  max_range: float, want_normals: bool) -> tuple[np.ndarray, np.ndarray]:
    """Cast ray-frame rays (``rel`` from the planet centre) at a terrain in its frame."""
    rot = terrain.frame_rotation
    if rot is None:
        return terrain.intersect(rel, d, radius, max_range, want_normals)
    t, normals = terrain.intersect(rel @ rot.T, d @ rot.T, radius, max_range, want_normals)
    return t, (normals @ rot if normals is not None else None)


class SmoothTerrain(Terrain):
    """
    Deterministic smooth hills: a sum of low-order waves in latitude and longitude.

    ``h = amplitude * mean_k(cos(a_k lat) * cos(b_k lon + q_k) * cos(lat))`` with integer
    orders ``a_k`` (even), ``b_k`` and phases ``q_k`` drawn from ``seed``; the ``cos(lat)``
    factor makes it continuous at the poles, integer ``b_k`` at the date line;
    ``|h| <= amplitude``. Latitude/longitude are taken from the unit vector in
    the caller's frame (z = north pole, longitude 0 along +x).
    """

    def __init__(self, amplitude: float = 500.0, seed: int = 0, waves: int = 4) -> None:
        rng = np.random.default_rng(seed)
        self.amplitude = float(amplitude)
        self.lat_orders = 2 * rng.integers(1, 6, size=waves)      # even: h(pole) unique
        self.lon_orders = rng.integers(1, 8, size=waves)
        self.phases = rng.uniform(0.0, 2.0 * math.pi, size=(waves, 1))
        self.min_height = -abs(self.amplitude)
        self.max_height = abs(self.amplitude)

    def height(self, up: np.ndarray) -> np.ndarray:
        """Return the terrain height above the sphere, m."""
        up = np.asarray(up, dtype=float)
        lat = np.arcsin(np.clip(up[:, 2], -1.0, 1.0))
        lon = np.arctan2(up[:, 1], up[:, 0])
        waves = (np.cos(self.lat_orders[:, None] * lat[None, :])
                 * np.cos(self.lon_orders[:, None] * lon[None, :] + self.phases)
                 * np.cos(lat)[None, :])  # fades longitude terms out at the poles
        return self.amplitude * waves.mean(axis=0)


def _terrain_hits(
    o: np.ndarray, d: np.ndarray, radius: float, terrain: Terrain, max_range: float,
    steps: int = 48, refine: int = 24,
) -> np.ndarray:
    """March unit rays (origin at the planet centre) through the terrain shell."""
    n = len(o)
    t_out = np.full(n, np.inf)
    outer_lo, outer_hi = _sphere_interval(o, d, radius + terrain.max_height)
    inner_lo, _ = _sphere_interval(o, d, max(radius + terrain.min_height, 0.0))
    start = np.maximum(outer_lo, 0.0)
    stop = np.minimum(np.minimum(outer_hi, max_range),
                      np.where(inner_lo > 0.0, inner_lo, np.inf))
    live = np.flatnonzero(start < stop)
    if live.size == 0:
        return t_out
    o, d, start, stop = o[live], d[live], start[live], stop[live]

    def gap(t: np.ndarray) -> np.ndarray:
        p = o + t[:, None] * d
        r = np.linalg.norm(p, axis=1)
        return r - radius - terrain.height(p / r[:, None])

    prev_t = start
    prev_g = gap(prev_t)
    found = np.full(len(live), np.inf)
    lo_t = np.zeros(len(live))
    hi_t = np.zeros(len(live))
    already = prev_g <= 0.0
    found[already] = prev_t[already]
    todo = ~already
    for k in range(1, steps + 1):
        t = start + (stop - start) * (k / steps)
        g = gap(t)
        cross = todo & (g <= 0.0)
        lo_t[cross] = prev_t[cross]
        hi_t[cross] = t[cross]
        todo &= ~cross
        prev_t, prev_g = t, g
    bracketed = np.isfinite(hi_t) & (hi_t > lo_t)
    idx = np.flatnonzero(bracketed & ~already)
    a, b = lo_t[idx], hi_t[idx]
    for _ in range(refine):
        if idx.size == 0:
            break
        mid = 0.5 * (a + b)
        p = o[idx] + mid[:, None] * d[idx]
        r = np.linalg.norm(p, axis=1)
        below = r - radius - terrain.height(p / r[:, None]) <= 0.0
        b = np.where(below, mid, b)
        a = np.where(below, a, mid)
    found[idx] = b
    t_out[live] = found
    return t_out


# -- casting ----------------------------------------------------------------------------------

@dataclass
class Hits:
    """Per-ray results of ``cast_full``: distance, what was hit and the surface normal."""

    ranges: np.ndarray      # (N,) m, inf for no hit
    what: np.ndarray        # (N,) int: -1 nothing, -2 planet, k >= 0 primitive index
    normals: np.ndarray     # (N, 3) unit outward normals in the ray frame (0 for misses)


def _unit(directions: np.ndarray) -> np.ndarray:
    d = np.asarray(directions, dtype=float).reshape(-1, 3)
    length = np.linalg.norm(d, axis=1, keepdims=True)
    if np.any(length < 1e-15):
        raise ValueError('zero-length ray direction')
    return d / length


def _group_key(owner: Hashable) -> Hashable:
    """Return the vessel part of an owner ``(vessel, part)``; other owners group alone."""
    return owner[0] if isinstance(owner, tuple) and owner else owner


def _near(
    o: np.ndarray, d: np.ndarray, idx: np.ndarray, center: np.ndarray, radius: float,
    best: np.ndarray, limit: float,
) -> np.ndarray:
    """Return the rays of ``idx`` that may enter a sphere before their current best hit.

    ``o`` is (N, 3), or (3,) for rays that all start at one point.
    """
    if o.ndim == 1:
        rel = o - center
        b = d[idx] @ rel
        c = float(rel @ rel)
    else:
        rel = o[idx] - center
        b = np.einsum('ij,ij->i', rel, d[idx])
        c = np.einsum('ij,ij->i', rel, rel)
    r2 = radius * radius
    near = ((b * b - c + r2) >= 0.0) & ((b <= 0.0) | (c <= r2))
    near &= np.maximum(-b - radius, 0.0) < np.minimum(best[idx], limit)
    return idx[near]


def cast_full(
    origins: np.ndarray,
    directions: np.ndarray,
    max_range: float,
    primitives: Sequence[Primitive] = (),
    sphere_center: Sequence[float] | None = None,
    sphere_radius: float | None = None,
    terrain: Terrain | None = None,
    exclude: Collection[Hashable] = (),
    want_normals: bool = True,
) -> Hits:
    """Cast rays like ``cast`` and also report what each ray hit and the surface normal."""
    d = _unit(directions)
    o = np.asarray(origins, dtype=float).reshape(-1, 3)
    # one origin for every ray (a sensor) stays (3,): products instead of per-ray copies
    o = o[0] if len(o) == 1 else np.broadcast_to(o, d.shape)
    n = len(d)
    best = np.full(n, np.inf)
    what = np.full(n, -1, dtype=int)
    normals = np.zeros((n, 3))
    limit = float(max_range) if max_range is not None else math.inf

    if sphere_radius and sphere_center is not None:
        center = np.asarray(sphere_center, dtype=float).reshape(3)
        rel = o - center
        if terrain is None:
            t = sphere_first_hit(rel, d, float(sphere_radius), _EPS)
            surface = None
        else:
            rel = np.broadcast_to(rel, d.shape)   # the terrain marches each ray on its own
            t, surface = _terrain_cast(terrain, rel, d, float(sphere_radius), limit,
                                       want_normals)
        take = t < best
        best = np.where(take, t, best)
        what[take] = -2
        if want_normals and take.any() and surface is None:
            p = (rel if rel.ndim == 1 else rel[take]) + t[take, None] * d[take]
            normals[take] = p / np.linalg.norm(p, axis=1, keepdims=True)
        elif want_normals and take.any():
            normals[take] = surface[take]

    excluded = set(exclude)
    groups: dict[Hashable, list[int]] = {}
    for k, prim in enumerate(primitives):
        if prim.owner is not None and prim.owner in excluded:
            continue
        groups.setdefault(_group_key(prim.owner), []).append(k)
    everything = np.arange(n)
    for members in groups.values():
        # Cheap bounding-sphere rejection: first for the whole vessel, then per shape.
        centers = np.array([primitives[k].center for k in members])
        middle = centers.mean(axis=0)
        reach = max(float(np.linalg.norm(primitives[k].center - middle))
                    + primitives[k].bounding_radius for k in members)
        group_rays = _near(o, d, everything, middle, reach, best, limit)
        if group_rays.size == 0:
            continue
        for k in members:
            prim = primitives[k]
            idx = group_rays
            if len(members) > 1:
                idx = _near(o, d, group_rays, prim.center, prim.bounding_radius, best, limit)
            if idx.size == 0:
                continue
            t, nrm = primitive_hits(prim, o if o.ndim == 1 else o[idx], d[idx], want_normals)
            take = t < best[idx]
            sel = idx[take]
            best[sel] = t[take]
            what[sel] = k
            if want_normals:
                normals[sel] = nrm[take]

    miss = best > limit
    best[miss] = np.inf
    what[miss] = -1
    normals[miss] = 0.0
    return Hits(best, what, normals)


def cast(
    origins: np.ndarray,
    directions: np.ndarray,
    max_range: float,
    primitives: Sequence[Primitive] = (),
    sphere_center: Sequence[float] | None = None,
    sphere_radius: float | None = None,
    terrain: Terrain | None = None,
    exclude: Collection[Hashable] = (),
) -> np.ndarray:
    """
    Return the distance (m) along each ray to the first surface, ``inf`` for no hit.

    ``origins`` (N, 3) or (3,) and ``directions`` (N, 3) are in one frame (m); directions
    are normalised. A hit farther than ``max_range`` counts as no hit. ``primitives`` whose
    ``owner`` is in ``exclude`` are skipped. The planet is the sphere (``sphere_center``,
    ``sphere_radius``), displaced by ``terrain`` if given. A ray starting inside a shape
    returns the exit distance.
    """
    return cast_full(origins, directions, max_range, primitives, sphere_center,
                     sphere_radius, terrain, exclude, want_normals=False).ranges


# -- LiDAR ray counts ---------------------------------------------------------------------------

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
