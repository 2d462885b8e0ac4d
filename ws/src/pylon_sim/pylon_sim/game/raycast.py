"""The simulator's one ray-casting kernel, vectorised (pure numpy, no ROS).

All positions and directions passed to ``cast`` are in ONE right-handed Cartesian frame of
the caller's choice (the simulator's world/inertial frame), metres. Directions need not be
unit length; they are normalised here, and ranges are metres along the unit direction.

What a ray can hit:

* the planet: a sphere of ``sphere_radius`` about ``sphere_center``, optionally displaced by
  a ``Terrain`` (``heightfield``); ``sphere_radius=None`` (or 0) disables it;
* ``Primitive`` shapes (sphere, oriented box, cylinder; ``shapes``) of vessels' parts, of
  bodies or of anything else. A primitive whose ``owner`` is in ``exclude`` is ignored
  (the sensor's own part).

The rules (``shapes``): a ray that starts inside a closed shape (a primitive, the bare
planet sphere, a boulder) hits it where it leaves; a hit nearer than ``HIT_EPS`` is the
ray's own start and does not count; a ray whose component across a slab or a cylinder's
axis is below ``PARALLEL`` is parallel to it. A ray that starts below a height field is
blocked where it starts (``heightfield``).

Terrain model: without a ``Terrain`` (``terrain=None``) the planet is the bare sphere of
the body radius, which is what the tests check analytically; see ``heightfield``.

Every sensor casts through ``cast``/``cast_full``: the LiDARs (``lidar_scan``), the
cameras (``render``), the star tracker's occlusion test (``star_tracker``) and the
environment's sunlight test. Rays against many spheres at once (``sphere_pairs``,
``sphere_hits``; ``spheres_in_reach`` leaves out those a sensor cannot reach within its
range) are the terrain's boulders and craters (``terrain``).
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass
import math

import numpy as np

from pylon_sim.game.heightfield import SmoothTerrain, Terrain
from pylon_sim.game.shapes import (
    HIT_EPS,
    PARALLEL,
    Primitive,
    primitive_hits,
    sphere_first_hit,
    sphere_interval,
    vessel_primitives,
)

__all__ = ['HIT_EPS', 'PARALLEL', 'Hits', 'Primitive', 'SmoothTerrain', 'Terrain', 'cast',
           'cast_full', 'primitive_hits', 'sphere_first_hit', 'sphere_interval',
           'vessel_primitives']


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


def _planet(hits: Hits, o: np.ndarray, d: np.ndarray, center: Sequence[float],
            radius: float, terrain: Terrain | None, limit: float,
            want_normals: bool) -> None:
    """Take the planet's hits (its bare sphere, or the terrain) into ``hits``."""
    rel = o - np.asarray(center, dtype=float).reshape(3)
    if terrain is None:
        t = sphere_first_hit(rel, d, float(radius), HIT_EPS)
        surface = None
    else:
        rel = np.broadcast_to(rel, d.shape)   # the terrain marches each ray on its own
        t, surface = terrain.cast(rel, d, float(radius), limit, want_normals)
    take = t < hits.ranges
    hits.ranges = np.where(take, t, hits.ranges)
    hits.what[take] = -2
    if want_normals and take.any() and surface is None:
        p = (rel if rel.ndim == 1 else rel[take]) + t[take, None] * d[take]
        hits.normals[take] = p / np.linalg.norm(p, axis=1, keepdims=True)
    elif want_normals and take.any():
        hits.normals[take] = surface[take]


def _primitives(hits: Hits, o: np.ndarray, d: np.ndarray, primitives: Sequence[Primitive],
                exclude: Collection[Hashable], limit: float, want_normals: bool) -> None:
    """Take the primitives' hits into ``hits``, culled by bounding spheres."""
    excluded = set(exclude)
    groups: dict[Hashable, list[int]] = {}
    for k, prim in enumerate(primitives):
        if prim.owner is not None and prim.owner in excluded:
            continue
        groups.setdefault(_group_key(prim.owner), []).append(k)
    best = hits.ranges
    everything = np.arange(len(d))
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
            hits.what[sel] = k
            if want_normals:
                hits.normals[sel] = nrm[take]


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
    hits = Hits(np.full(n, np.inf), np.full(n, -1, dtype=int), np.zeros((n, 3)))
    limit = float(max_range) if max_range is not None else math.inf
    if sphere_radius and sphere_center is not None:
        _planet(hits, o, d, sphere_center, sphere_radius, terrain, limit, want_normals)
    _primitives(hits, o, d, primitives, exclude, limit, want_normals)
    miss = hits.ranges > limit
    hits.ranges[miss] = np.inf
    hits.what[miss] = -1
    hits.normals[miss] = 0.0
    return hits


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


def spheres_in_reach(o: np.ndarray, centers: np.ndarray, radii: np.ndarray,
                     max_range: float) -> np.ndarray:
    """Return the indices of the K spheres rays from ``o`` (N, 3) may meet within range.

    Rays sharing one origin (a sensor's) cannot meet a sphere whose nearest point is
    farther than ``max_range``: their hits there would be dropped as beyond the range.
    Rays from several origins keep every sphere.
    """
    if not len(o) or not np.all(o == o[0]):
        return np.arange(len(centers))
    gap = centers - o[0]
    return np.flatnonzero(np.sqrt((gap * gap).sum(axis=1)) - radii <= max_range)


def sphere_pairs(o: np.ndarray, d: np.ndarray, centers: np.ndarray, radii: np.ndarray,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return ``ray, sphere, lo, hi``: the intervals of unit rays inside K spheres.

    Only the (ray, sphere) pairs whose lines meet the sphere are returned. Keep ``o`` and
    ``centers`` small (about a nearby point): the squares are subtracted. Rays sharing one
    origin (a sensor's) take one product per pair to be sorted out.
    """
    if len(o) and np.all(o == o[0]):
        rel = centers - o[0]
        along = d @ rel.T                                            # -(o - c) . d
        reach = np.einsum('ij,ij->i', rel, rel) - radii ** 2
        ray, sphere = np.nonzero(along * along >= reach[None, :])
        b = -along[ray, sphere]
        disc = b * b - reach[sphere]
    else:
        b_all = np.einsum('ij,ij->i', o, d)[:, None] - d @ centers.T     # (o - c) . d
        c_all = (np.einsum('ij,ij->i', o, o)[:, None] - 2.0 * (o @ centers.T)
                 + (np.einsum('ij,ij->i', centers, centers) - radii ** 2)[None, :])
        ray, sphere = np.nonzero(b_all * b_all >= c_all)
        b = b_all[ray, sphere]
        disc = b * b - c_all[ray, sphere]
    root = np.sqrt(np.maximum(disc, 0.0))
    return ray, sphere, -b - root, -b + root


def sphere_hits(o: np.ndarray, d: np.ndarray, centers: np.ndarray, radii: np.ndarray,
                ) -> tuple[np.ndarray, np.ndarray]:
    """Return each unit ray's first positive hit on K spheres (inf: none) and which one.

    A ray starting inside a sphere gets its exit, as ``raycast`` does for primitives.
    """
    ray, sphere, lo, hi = sphere_pairs(o, d, centers, radii)
    t = np.where(lo > 0.0, lo, np.where(hi > 0.0, hi, np.inf))
    first = np.full(len(o), np.inf)
    which = np.full(len(o), -1)
    order = np.lexsort((t, ray))                   # by ray, nearest first
    keep = order[np.r_[True, ray[order][1:] != ray[order][:-1]]] if ray.size else order
    keep = keep[np.isfinite(t[keep])]
    first[ray[keep]], which[ray[keep]] = t[keep], sphere[keep]
    return first, which
