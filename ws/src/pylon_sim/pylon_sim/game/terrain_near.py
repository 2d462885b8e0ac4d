"""``SiteTerrain``'s ray cast for rays from one point with a culling oracle (pure numpy).

``terrain.SiteTerrain.intersect`` casts any rays: it sets every ray against every crater's
bounding sphere and every boulder, which costs (rays x features) before a single march
step. A sensor whose rays all start at one point often knows cheaply which of its rays can
enter a sphere (a camera: the pixels a sphere's image covers, ``render._Screen.pixels``).
``intersect_near`` is the same cast, with the same rules, on only the rays such a
``near(center, radius)`` oracle returns for each crater's bounding sphere and each
boulder: what it finds is what ``intersect`` finds on those rays (a test compares the
two); the oracle must return every ray whose line enters the sphere ahead of the origin
(it may return more). The rays may be given in any frame (``to_fixed`` turns it into the
terrain's): the terrain's few points and axes are turned, not the rays, and the hits'
normals come back in the rays' frame.

The relief is marched with ``terrain_march.march_samples`` (the march of
``terrain.march_relief``, several samples a call), whose smallest steps grow with range
after ``TAIL_AFTER`` steps: a crossing it skips is a dip of at most
``(1 + 1.01 L) TAIL_STEP t / 2`` at range t: 3.8 mm per metre for L = 1.5, under a pixel
(4.4 mrad) of a 320 x 240 camera of 60 deg.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
import math

import numpy as np

from pylon_sim.game import raycast
from pylon_sim.game.terrain import gnomonic, SiteTerrain
from pylon_sim.game.terrain_march import CraterRays, march_samples, TAIL_AFTER, TAIL_STEP

__all__ = ['TAIL_AFTER', 'TAIL_STEP', 'Near', 'intersect_near']

Near = Callable[[np.ndarray, float], np.ndarray]
"""``near(center, radius)``: the indices of the rays that may enter that sphere."""


@dataclass(frozen=True)
class _View:
    """The terrain's points and axes in the rays' frame (from the body's centre)."""

    craters: np.ndarray          # (K, 3) crater bounding spheres' centres
    boulders: np.ndarray         # (B, 3) boulder centres
    enu: np.ndarray              # (3, 3) the site's East, North, Up as rows

    @classmethod
    def of(cls, terrain: SiteTerrain, to_fixed: np.ndarray | None) -> _View:
        """Turn the terrain's points and axes into the frame ``to_fixed`` maps from."""
        turn = np.eye(3) if to_fixed is None else np.asarray(to_fixed, dtype=float)
        return cls(terrain._k_centers @ turn, terrain.boulder_centers @ turn,
                   terrain.enu @ turn)


SHELL_MARGIN = 1e-3
"""m added to a crater's bounds of the field (``_crater_bounds``): the bare sphere's hits
lie strictly inside its shell."""


def _crater_bounds(terrain: SiteTerrain) -> tuple[np.ndarray, np.ndarray]:
    """Return bounds (m) of the field inside each crater's bounding sphere: lowest, highest.

    There the field is the sum of its neighbours' profiles (``_k_groups``), each between
    ``-depth`` and ``rim``: a ray above ``R + sum(rim)`` over a small crater far from the
    others' rims is not marched there (the terrain's ``max_h`` bounds every crater's).
    """
    groups = terrain._k_groups
    low = np.maximum(-terrain._p_depth[groups].sum(axis=1), terrain.min_height)
    high = np.minimum(terrain._p_rim[groups].sum(axis=1), terrain.max_height)
    return low - SHELL_MARGIN, high + SHELL_MARGIN


def _pairs(terrain: SiteTerrain, view: _View, o: np.ndarray, d: np.ndarray, radius: float,
           max_range: float, near: Near) -> tuple[np.ndarray, ...]:
    """Return the (ray, crater) pairs to march: rays, craters, start, stop, floor.

    As ``SiteTerrain._relief_hits``: each ray's stretch inside a crater's bounding sphere,
    the relief's shell there (``_crater_bounds``, within the terrain's ``R + min_h .. R +
    max_h``) and ``max_range``.
    """
    rays, craters, starts, stops = [], [], [], []
    for k, center in enumerate(view.craters):
        reach = float(terrain._k_reach[k])
        idx = near(center, reach)
        if idx.size == 0:
            continue
        lo, hi = raycast.sphere_interval(o - center, d[idx], reach)
        keep = lo <= hi
        rays.append(idx[keep])
        craters.append(np.full(int(keep.sum()), k))
        starts.append(lo[keep])
        stops.append(hi[keep])
    if not rays:
        return (np.zeros(0, dtype=int),) * 2 + (np.zeros(0),) * 3
    ray, crater = np.concatenate(rays), np.concatenate(craters)
    start, stop = np.concatenate(starts), np.concatenate(stops)
    low, high = _crater_bounds(terrain)
    shell_lo, shell_hi = raycast.sphere_interval(o, d[ray], radius + high[crater])
    inner_lo, _ = raycast.sphere_interval(o, d[ray], radius + low[crater])
    inner = np.where(inner_lo > 0.0, inner_lo, np.inf)
    start = np.maximum(start, np.maximum(shell_lo, 0.0))
    stop = np.minimum(np.minimum(stop, np.minimum(shell_hi, max_range)), inner)
    keep = start < stop
    return ray[keep], crater[keep], start[keep], stop[keep], stop[keep] >= inner[keep]


def _relief(terrain: SiteTerrain, view: _View, o: np.ndarray, d: np.ndarray,
            bare: np.ndarray, radius: float, max_range: float, near: Near,
            ) -> tuple[np.ndarray, np.ndarray]:
    """Return the ranges with the height field's hits, and each ray's field crater (-1).

    The crater is the one of the pair whose march found the ray's hit (its neighbours
    make the field there); -1 where the ray's hit is not on the field.
    """
    field = np.full(len(d), -1)
    if not len(terrain.craters):
        return bare, field
    ray, crater, start, stop, floor = _pairs(terrain, view, o, d, radius, max_range, near)
    if ray.size == 0:
        return bare, field
    inside = np.zeros(len(d), dtype=bool)
    inside[ray[(bare[ray] >= start) & (bare[ray] <= stop)]] = True
    # a ray whose bare-sphere hit lies outside every crater's stretch ends there
    keep = inside[ray] | (start <= bare[ray])
    ray, crater, start, stop, floor = ray[keep], crater[keep], start[keep], stop[keep], \
        floor[keep]
    if ray.size == 0:
        return bare, field
    live, ray = np.unique(ray, return_inverse=True)
    rays = CraterRays(terrain, o, d[live[ray]], crater, view.enu)
    pair_found = march_samples(rays.gap, start, stop, terrain._k_slope[crater], floor)
    found = np.full(live.size, np.inf)
    np.minimum.at(found, ray, pair_found)
    inside = inside[live]
    t = bare.copy()
    t[live] = np.minimum(found, np.where(inside, np.inf, bare[live]))
    won = np.isfinite(pair_found) & (pair_found == t[live[ray]])
    field[live[ray[won]]] = crater[won]
    return t, field


def _boulders(terrain: SiteTerrain, view: _View, o: np.ndarray, d: np.ndarray,
              t: np.ndarray, max_range: float, near: Near) -> tuple[np.ndarray, np.ndarray]:
    """Take the boulders' exact hits where nearer; return ranges and boulder (-1: none)."""
    t = t.copy()
    which = np.full(len(d), -1)
    for j, center in enumerate(view.boulders):
        r = float(terrain._b_radius[j])
        idx = near(center, r)
        if idx.size == 0:
            continue
        first = raycast.sphere_first_hit(o - center, d[idx], r)
        take = (first < t[idx]) & (first <= max_range)
        t[idx[take]] = first[take]
        which[idx[take]] = j
    return t, which


def _field_normals(terrain: SiteTerrain, view: _View, p: np.ndarray,
                   crater: np.ndarray) -> np.ndarray:
    """Return the field's unit normals at points ``p`` (N, 3) on craters' fields.

    ``SiteTerrain.field_normal`` summing only each point's crater's neighbours (the
    others' slopes are zero there): ``up - dh/de E - dh/dn N``.
    """
    up = p / np.linalg.norm(p, axis=1, keepdims=True)
    en, _ = gnomonic(view.enu, terrain.body_radius, p)
    groups = terrain._k_groups[crater]
    rel = en[:, None, :] - terrain._p_en[groups]
    rho = np.sqrt(np.einsum('nkj,nkj->nk', rel, rel))
    a, depth, rim = terrain._p_radius[groups], terrain._p_depth[groups], \
        terrain._p_rim[groups]
    s = rho / a
    x = np.clip(s - 1.0, 0.0, 1.0)
    slope = np.where(s <= 1.0, 2.0 * (depth + rim) * s, -rim * 6.0 * x * (1.0 - x)) / a
    with np.errstate(invalid='ignore', divide='ignore'):
        radial = np.where(rho[..., None] > 0.0, rel / rho[..., None], 0.0)
    grad = np.einsum('nk,nkj->nj', slope, radial)
    normal = up - grad @ view.enu[:2]
    return normal / np.linalg.norm(normal, axis=1, keepdims=True)


def _normals(terrain: SiteTerrain, view: _View, o: np.ndarray, d: np.ndarray,
             t: np.ndarray, which: np.ndarray, field: np.ndarray, radius: float,
             ) -> np.ndarray:
    """Return the unit normals at the hits: a boulder's, the field's, else the sphere's.

    A bare-sphere hit ``p`` (``|p| = radius``) has the normal ``p / radius``; misses get 0.
    """
    hit = np.isfinite(t)
    normals = np.where(hit, t, 0.0)[:, None] * d
    normals += o
    normals *= 1.0 / radius
    normals[~hit] = 0.0
    on_boulder = np.flatnonzero(which >= 0)
    if on_boulder.size:
        out = o + t[on_boulder, None] * d[on_boulder] - view.boulders[which[on_boulder]]
        normals[on_boulder] = out / np.linalg.norm(out, axis=1, keepdims=True)
    on_field = np.flatnonzero((field >= 0) & (which < 0) & hit)
    if on_field.size:
        p = o + t[on_field, None] * d[on_field]
        normals[on_field] = _field_normals(terrain, view, p, field[on_field])
    return normals


def _sphere_hits(o: np.ndarray, d: np.ndarray, radius: float) -> np.ndarray:
    """Return the first hits of unit rays from one point on the body's sphere (inf: none).

    ``raycast.sphere_first_hit`` for an origin outside the sphere: the near root
    ``c / (-b + sqrt(b^2 - c))`` of rays heading towards it (``b = o . d < 0``).
    """
    r0 = float(np.linalg.norm(o))
    if r0 <= radius:
        return raycast.sphere_first_hit(o, d, radius)
    c = (r0 - radius) * (r0 + radius)
    b = d @ o
    disc = b * b - c
    ok = np.flatnonzero((disc >= 0.0) & (b < 0.0))
    t = np.full(len(d), np.inf)
    t[ok] = c / (np.sqrt(disc[ok]) - b[ok])
    return t


def intersect_near(terrain: SiteTerrain, o: np.ndarray, d: np.ndarray, radius: float,
                   max_range: float, near: Near, want_normals: bool = True,
                   to_fixed: np.ndarray | None = None,
                   ) -> tuple[np.ndarray, np.ndarray | None]:
    """Return ``terrain.intersect``'s hits (m, inf: none) and normals of rays from one point.

    ``o`` (3,) is the rays' origin relative to the body's centre and ``d`` (N, 3) unit
    directions, both in one frame: the terrain's (body-fixed) one, or any frame that
    ``to_fixed`` (3, 3) turns into it (``v_fixed = to_fixed @ v``). ``near(center,
    radius)`` (a centre in the rays' frame, relative to the body's centre) returns the
    indices of the rays that may enter a sphere. Normals are unit, in the rays' frame
    (None unless wanted).
    """
    o = np.asarray(o, dtype=float).reshape(3)
    view = _View.of(terrain, to_fixed)
    limit = float(max_range) if max_range is not None else math.inf
    t = _sphere_hits(o, d, radius)
    t, field = _relief(terrain, view, o, d, t, radius, limit, near)
    t, which = _boulders(terrain, view, o, d, t, limit, near)
    if not want_normals:
        return t, None
    return t, _normals(terrain, view, o, d, t, which, field, radius)

