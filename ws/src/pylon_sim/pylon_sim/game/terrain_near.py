"""``SiteTerrain``'s ray cast for rays from one point with a culling oracle (pure numpy).

``terrain.SiteTerrain.intersect`` casts any rays: it sets every ray against every crater's
bounding sphere and every boulder, which costs (rays x features) before a single march
step. A sensor whose rays all start at one point often knows cheaply which of its rays can
enter a sphere (a camera: the pixels a sphere's image covers, ``render._Screen.pixels``).
``intersect_near`` is the same cast, with the same rules and the same march
(``terrain.march_relief``), on only the rays such a ``near(center, radius)`` oracle returns
for each crater's bounding sphere and each boulder: what it finds is what ``intersect``
finds on those rays (a test compares the two); the oracle must return every ray whose line
enters the sphere ahead of the origin (it may return more).

The relief's march ends its rays' tails faster (``TAIL_STEP``): a ray that has marched
``TAIL_AFTER`` steps moves at least ``TAIL_STEP`` times its distance per step (instead of
``terrain.MIN_STEP``); a crossing it skips is a dip of at most ``(1 + 1.01 L) TAIL_STEP t / 2``
at range t: 3.8 mm per metre for L = 1.5, under a pixel (4.4 mrad) of a 320 x 240 camera
of 60 deg.
"""

from __future__ import annotations

from collections.abc import Callable
import math

import numpy as np

from pylon_sim.game import raycast
from pylon_sim.game.terrain import BISECTIONS, MAX_MARCH, MIN_STEP, SiteTerrain

Near = Callable[[np.ndarray, float], np.ndarray]
"""``near(center, radius)``: the indices of the rays that may enter that sphere."""

TAIL_AFTER = 8
"""March steps after which a ray's smallest step grows with its range (``TAIL_STEP``)."""

TAIL_STEP = 0.003
"""A tail ray's smallest step, as a fraction of its range (3 mm per metre)."""


def _interval(o: np.ndarray, d: np.ndarray, center: np.ndarray, radius: float,
              ) -> tuple[np.ndarray, np.ndarray]:
    """Return the interval of unit rays from one point ``o`` inside a sphere (lo > hi: none)."""
    return raycast.sphere_interval(np.asarray(o - center), d, radius)


def _pairs(terrain: SiteTerrain, o: np.ndarray, d: np.ndarray, radius: float,
           max_range: float, near: Near) -> tuple[np.ndarray, ...]:
    """Return the (ray, crater) pairs to march: rays, craters, start, stop, floor.

    As ``SiteTerrain._relief_hits``: each ray's stretch inside a crater's bounding sphere,
    the relief's shell ``R + min_h .. R + max_h`` and ``max_range``.
    """
    rays, craters, starts, stops = [], [], [], []
    for k, center in enumerate(terrain._k_centers):
        idx = near(center, float(terrain._k_reach[k]))
        if idx.size == 0:
            continue
        lo, hi = _interval(o, d[idx], center, float(terrain._k_reach[k]))
        keep = lo <= hi
        rays.append(idx[keep])
        craters.append(np.full(int(keep.sum()), k))
        starts.append(lo[keep])
        stops.append(hi[keep])
    if not rays:
        return (np.zeros(0, dtype=int),) * 2 + (np.zeros(0),) * 3
    ray, crater = np.concatenate(rays), np.concatenate(craters)
    start, stop = np.concatenate(starts), np.concatenate(stops)
    shell_lo, shell_hi = raycast.sphere_interval(o, d[ray], radius + terrain.max_height)
    inner_lo, _ = raycast.sphere_interval(o, d[ray], radius + terrain.min_height)
    inner = np.where(inner_lo > 0.0, inner_lo, np.inf)
    start = np.maximum(start, np.maximum(shell_lo, 0.0))
    stop = np.minimum(np.minimum(stop, np.minimum(shell_hi, max_range)), inner)
    keep = start < stop
    return ray[keep], crater[keep], start[keep], stop[keep], stop[keep] >= inner[keep]


def march_tail(gap, start: np.ndarray, stop: np.ndarray, slope: np.ndarray,
               floor: np.ndarray) -> np.ndarray:
    """Return ``terrain.march_relief``'s first crossings, the smallest step growing in the tail.

    The same march (a step of ``gap / (max(0, -c) + 1.01 L)``, at least ``MIN_STEP``;
    bisection of a crossing; the inner sphere ends a ray), except that after
    ``TAIL_AFTER`` steps the smallest step is ``max(MIN_STEP, TAIL_STEP t)``.
    """
    n = len(start)
    found = np.full(n, np.inf)
    t = start.copy()
    g, climb = gap(np.arange(n), t)
    found[g <= 0.0] = t[g <= 0.0]
    lo, hi = np.zeros(n), np.full(n, -1.0)
    todo = np.flatnonzero(g > 0.0)
    for step_count in range(MAX_MARCH):
        if todo.size == 0:
            break
        rate = np.maximum(-climb[todo], 0.0) + 1.01 * slope[todo]
        least = MIN_STEP if step_count < TAIL_AFTER else np.maximum(MIN_STEP,
                                                                    TAIL_STEP * t[todo])
        step = np.maximum(g[todo] / np.maximum(rate, 1e-9), least)
        t_new = np.minimum(t[todo] + step, stop[todo])
        g_new, climb_new = gap(todo, t_new)
        crossed = (g_new <= 0.0) | (floor[todo] & (t_new >= stop[todo]))
        lo[todo[crossed]], hi[todo[crossed]] = t[todo[crossed]], t_new[crossed]
        t[todo], g[todo], climb[todo] = t_new, g_new, climb_new
        todo = todo[~crossed & (t_new < stop[todo])]
    idx = np.flatnonzero(hi >= 0.0)
    a, b = lo[idx], hi[idx]
    for _ in range(BISECTIONS if idx.size else 0):
        mid = 0.5 * (a + b)
        below = gap(idx, mid)[0] <= 0.0
        a, b = np.where(below, a, mid), np.where(below, mid, b)
    found[idx] = b
    return found


def _relief(terrain: SiteTerrain, o: np.ndarray, d: np.ndarray, bare: np.ndarray,
            radius: float, max_range: float, near: Near) -> tuple[np.ndarray, np.ndarray]:
    """Return the ranges with the height field's hits, and which rays hit the field."""
    marched = np.zeros(len(d), dtype=bool)
    if not len(terrain.craters):
        return bare, marched
    ray, crater, start, stop, floor = _pairs(terrain, o, d, radius, max_range, near)
    if ray.size == 0:
        return bare, marched
    live, ray = np.unique(ray, return_inverse=True)
    origin = np.broadcast_to(o, (live.size, 3))
    groups = terrain._k_groups[crater]
    found = np.full(live.size, np.inf)
    np.minimum.at(found, ray, march_tail(
        lambda i, t: terrain._gap(origin[ray[i]], d[live[ray[i]]], t, groups[i]),
        start, stop, terrain._k_slope[crater], floor))
    inside = np.zeros(live.size, dtype=bool)
    inside[ray[(bare[live[ray]] >= start) & (bare[live[ray]] <= stop)]] = True
    t = bare.copy()
    t[live] = np.minimum(found, np.where(inside, np.inf, bare[live]))
    marched[live] = np.isfinite(found) & (found == t[live])
    return t, marched


def _boulders(terrain: SiteTerrain, o: np.ndarray, d: np.ndarray, t: np.ndarray,
              max_range: float, near: Near) -> tuple[np.ndarray, np.ndarray]:
    """Take the boulders' exact hits where nearer; return ranges and boulder (-1: none)."""
    t = t.copy()
    which = np.full(len(d), -1)
    for j, center in enumerate(terrain.boulder_centers):
        r = float(terrain._b_radius[j])
        idx = near(center, r)
        if idx.size == 0:
            continue
        lo, hi = _interval(o, d[idx], center, r)
        first = np.where(lo > 0.0, lo, np.where(hi > 0.0, hi, np.inf))
        first = np.where(lo <= hi, first, np.inf)
        take = (first < t[idx]) & (first <= max_range)
        t[idx[take]] = first[take]
        which[idx[take]] = j
    return t, which


def intersect_near(terrain: SiteTerrain, o: np.ndarray, d: np.ndarray, radius: float,
                   max_range: float, near: Near, want_normals: bool = True,
                   ) -> tuple[np.ndarray, np.ndarray | None]:
    """Return ``terrain.intersect``'s hits (m, inf: none) and normals of rays from one point.

    ``o`` (3,) is the rays' origin relative to the body's centre and ``d`` (N, 3) unit
    directions, both in the terrain's (body-fixed) frame; ``near(center, radius)`` (that
    frame, relative to the body's centre) returns the indices of the rays that may enter
    a sphere. Normals are unit, in the terrain's frame (None unless wanted).
    """
    o = np.asarray(o, dtype=float).reshape(3)
    limit = float(max_range) if max_range is not None else math.inf
    t = raycast.sphere_first_hit(o, d, radius)
    t, marched = _relief(terrain, o, d, t, radius, limit, near)
    t, which = _boulders(terrain, o, d, t, limit, near)
    if not want_normals:
        return t, None
    return t, terrain._normals(np.broadcast_to(o, d.shape), d, t, which, marched)
