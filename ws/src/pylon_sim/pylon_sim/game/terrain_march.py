"""The relief march of ``terrain_near``: several samples a ray per vectorised step (numpy).

``terrain.march_relief`` moves every live ray one safe step per call of its gap function;
the rays a camera marches are few (hundreds) and a call's cost is mostly numpy's per-call
overhead, so a grazing ray's hundred steps cost a hundred calls. ``march_samples`` is the
same march (the same safe step, the same smallest steps, a crossing bracketed then
narrowed) taking up to ``MAX_SAMPLES`` samples of each ray in one call: sample j + 1 is
``j + 1`` first steps ahead, and it counts only while every earlier sample's own safe step
reaches the next one; a ray moves to its last sample so reached, or brackets its first
reached crossing. The bracket is narrowed to ``TOLERANCE`` by false position guarded by
bisection (``_narrow``).

``CraterRays`` is the gap along rays from one point, in any frame: per (ray, crater) pair
the ray's direction in the site's East-North-Up axes and the crater's neighbours'
profiles, so a sample costs a few products (the same field as ``SiteTerrain._gap``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pylon_sim.game.terrain import MAX_MARCH, MIN_STEP, SiteTerrain

Gap = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""``gap(idx, t)``: rays ``idx`` (n,) at ranges ``t`` (n, k): height above the field, climb."""

TAIL_AFTER = 8
"""March steps after which a ray's smallest step grows with its range (``TAIL_STEP``)."""

TAIL_STEP = 0.003
"""A tail ray's smallest step, as a fraction of its range (3 mm per metre)."""

SAMPLE_BUDGET = 512
"""Samples (rays x samples per ray) one march call evaluates at most (beyond 1 a ray)."""

MAX_SAMPLES = 32
"""Samples of one ray in one march call."""

TOLERANCE = 1e-8
"""m: a bracketed crossing is narrowed to this (``terrain.BISECTIONS`` halvings of a
step give 1e-9 .. 3e-8 m)."""

SPREAD = 0.02
"""The narrowing's two probes about the false-position point, a fraction of the bracket."""

MAX_NARROW = 40
"""Narrowing calls at most (each at least halves a bracket)."""


def _least(t: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Return the smallest step at range ``t`` after ``steps`` steps (m)."""
    return np.where(steps < TAIL_AFTER, MIN_STEP, np.maximum(MIN_STEP, TAIL_STEP * t))


def _safe_step(g: np.ndarray, climb: np.ndarray, slope: np.ndarray,
               least: np.ndarray) -> np.ndarray:
    """Return ``terrain.march_relief``'s step: ``gap / (max(0, -c) + 1.01 L)``, >= least."""
    rate = np.maximum(-climb, 0.0) + 1.01 * slope
    return np.maximum(g / np.maximum(rate, 1e-9), least)


def _advance(gap: Gap, todo: np.ndarray, t: np.ndarray, g: np.ndarray, climb: np.ndarray,
             steps: np.ndarray, stop: np.ndarray, slope: np.ndarray, floor: np.ndarray,
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Take one call's samples of rays ``todo``; return the crossing ones and their bracket.

    Moves ``t``, ``g``, ``climb`` and ``steps`` of the others to their last reached sample.
    """
    count = int(np.clip(SAMPLE_BUDGET // todo.size, 1, MAX_SAMPLES))
    j = np.arange(1, count + 1)
    first = _safe_step(g[todo], climb[todo], slope[todo],
                       _least(t[todo], steps[todo]))
    ts = np.minimum(t[todo, None] + first[:, None] * j, stop[todo, None])
    gs, cs = gap(todo, ts)
    cover = _safe_step(gs, cs, slope[todo, None], _least(ts, steps[todo, None] + j))
    reached = np.ones(ts.shape, dtype=bool)
    reached[:, 1:] = np.logical_and.accumulate(ts[:, 1:] - ts[:, :-1] <= cover[:, :-1],
                                               axis=1)
    crossed = reached & ((gs <= 0.0) | (floor[todo, None] & (ts >= stop[todo, None])))
    hit = crossed.any(axis=1)
    at = np.argmax(crossed, axis=1)
    rows = np.arange(todo.size)
    before = np.where(at > 0, ts[rows, at - 1], t[todo])
    last = np.where(hit, at, reached.sum(axis=1) - 1)
    t[todo], g[todo], climb[todo] = ts[rows, last], gs[rows, last], cs[rows, last]
    steps[todo] += last + 1
    return hit, before[hit], ts[rows, at][hit]


def _narrow(gap: Gap, idx: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return the crossings of brackets ``a .. b`` (gap > 0 at a, <= 0 at b) to ``TOLERANCE``.

    Each call samples a bracket's middle and both sides of its false-position point
    (``SPREAD`` of the bracket apart): the bracket at least halves, and shrinks to
    ``SPREAD`` of itself where the field is nearly straight across it.
    """
    ga, gb = gap(idx, a[:, None])[0][:, 0], gap(idx, b[:, None])[0][:, 0]
    rows = np.arange(idx.size)
    out = b.copy()
    todo = np.arange(idx.size)
    for _ in range(MAX_NARROW):
        todo = todo[b[todo] - a[todo] > TOLERANCE]
        if todo.size == 0:
            break
        lo, hi, g_lo, g_hi = a[todo], b[todo], ga[todo], gb[todo]
        width = hi - lo
        guess = lo + width * np.clip(g_lo / (g_lo - g_hi), SPREAD, 1.0 - SPREAD)
        xs = np.sort(np.stack([guess - 0.5 * SPREAD * width, lo + 0.5 * width,
                               guess + 0.5 * SPREAD * width], axis=1), axis=1)
        gs = gap(idx[todo], xs)[0]
        below = gs <= 0.0
        at = np.where(below.any(axis=1), np.argmax(below, axis=1), 3)
        r = rows[:todo.size]
        a[todo] = np.where(at > 0, xs[r, np.maximum(at - 1, 0)], lo)
        ga[todo] = np.where(at > 0, gs[r, np.maximum(at - 1, 0)], g_lo)
        b[todo] = np.where(at < 3, xs[r, np.minimum(at, 2)], hi)
        gb[todo] = np.where(at < 3, gs[r, np.minimum(at, 2)], g_hi)
    out[:] = b
    return out


def march_samples(gap: Gap, start: np.ndarray, stop: np.ndarray, slope: np.ndarray,
                  floor: np.ndarray) -> np.ndarray:
    """Return ``terrain.march_relief``'s first crossings (m, inf: none), several samples a call.

    The same march: a step of ``gap / (max(0, -c) + 1.01 L)`` (L = ``slope``), at least
    ``MIN_STEP`` for a ray's first ``TAIL_AFTER`` steps and ``max(MIN_STEP, TAIL_STEP t)``
    after (a skipped dip is at most ``(1 + 1.01 L) TAIL_STEP t / 2`` deep at range t);
    a ray whose ``stop`` is on the inner sphere (``floor``) has crossed there; a ray
    still marching after ``MAX_MARCH`` calls is given up.
    """
    n = len(start)
    found = np.full(n, np.inf)
    t = np.array(start, dtype=float)
    g, climb = (x[:, 0] for x in gap(np.arange(n), t[:, None]))
    found[g <= 0.0] = t[g <= 0.0]
    lo, hi = np.zeros(n), np.full(n, -1.0)
    steps = np.zeros(n, dtype=int)
    todo = np.flatnonzero(g > 0.0)
    for _ in range(MAX_MARCH):
        if todo.size == 0:
            break
        hit, a, b = _advance(gap, todo, t, g, climb, steps, stop, slope, floor)
        lo[todo[hit]], hi[todo[hit]] = a, b
        todo = todo[~hit & (t[todo] < stop[todo])]
    idx = np.flatnonzero(hi >= 0.0)
    found[idx] = _narrow(gap, idx, lo[idx], hi[idx])
    return found


class CraterRays:
    """The relief's gap along rays from one point through craters' bounding spheres.

    ``o`` (3,) is the rays' origin from the body's centre and ``d`` (P, 3) the unit
    directions of the pairs' rays, ``enu`` (3, 3) the site's East, North, Up axes as rows,
    all in one frame (any: the terrain's or a camera's); ``crater`` (P,) each pair's
    crater, whose neighbours (``SiteTerrain._k_groups``) make the field there.
    """

    def __init__(self, terrain: SiteTerrain, o: np.ndarray, d: np.ndarray,
                 crater: np.ndarray, enu: np.ndarray) -> None:
        """Precompute each pair's direction in the site's axes and its craters' profiles."""
        self.body_radius = terrain.body_radius
        self.q_o = enu @ o                                    # origin in site axes
        self.q_d = d @ enu.T                                  # (P, 3)
        self.along = d @ o                                    # o . d
        r0 = float(np.linalg.norm(o))
        self.above0 = (r0 - self.body_radius) * (r0 + self.body_radius)   # |o|^2 - R^2
        groups = terrain._k_groups[crater]
        self.east = terrain._p_en[groups, 0]
        self.north = terrain._p_en[groups, 1]
        self.inv_radius = 1.0 / terrain._p_radius[groups]
        self.depth = terrain._p_depth[groups]
        self.rim = terrain._p_rim[groups]

    def gap(self, idx: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the height above the field (m) of pairs ``idx`` at ranges ``t`` (n, k).

        And the climb rate ``d|p|/dt`` there. ``|p| - R = (|p|^2 - R^2) / (|p| + R)``
        with ``|p|^2 = |o|^2 + 2 t (o . d) + t^2``; local east, north the gnomonic
        ``R q_xy / q_z`` of ``q = q_o + t q_d`` (every crater lies on the near side).
        """
        radius = self.body_radius
        q = self.q_d[idx]
        b = self.along[idx, None]
        grow = t * (2.0 * b + t)
        r = np.sqrt(radius * radius + self.above0 + grow)
        scale = radius / (self.q_o[2] + t * q[:, 2, None])
        east = (self.q_o[0] + t * q[:, 0, None]) * scale
        north = (self.q_o[1] + t * q[:, 1, None]) * scale
        de = east[:, :, None] - self.east[idx, None, :]
        dn = north[:, :, None] - self.north[idx, None, :]
        s = np.sqrt(de * de + dn * dn) * self.inv_radius[idx, None, :]
        depth, rim = self.depth[idx, None, :], self.rim[idx, None, :]
        x = np.clip(s - 1.0, 0.0, 1.0)
        profile = np.where(s <= 1.0, (depth + rim) * s * s - depth,
                           rim * (1.0 - x * x * (3.0 - 2.0 * x)))
        height = profile.sum(axis=2)
        return (self.above0 + grow) / (r + radius) - height, (b + t) / r
