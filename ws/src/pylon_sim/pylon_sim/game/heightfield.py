"""Height fields over a planet's sphere, and the ray cast that marches them (pure numpy).

A ``Terrain`` gives a height ``h(u)`` in metres above the sphere as a function of the unit
up vector ``u`` in its own frame (``Terrain.in_frame(rotation)`` views it from the ray
frame, e.g. a body-fixed terrain from the inertial frame at one UT), and the surface is
``|p - c| = R + h((p - c)/|p - c|)``; ``Terrain.intersect`` casts at it (by default marched
inside the shell ``R + min_h .. R + max_h`` and refined by bisection; a terrain with
features of its own, ``terrain.SiteTerrain``, overrides it). ``SmoothTerrain`` is a sum of
a few low-order spherical waves in latitude/longitude with a fixed amplitude bound.

The ground under a height field is solid: a ray that starts below the field is blocked
where it starts (range 0), as the march finds it under the surface at its first sample.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from pylon_sim.game.shapes import sphere_interval


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
        default the shell is marched (``march``) and the normal is the sphere's
        (the slope is not shaded).
        """
        t = march(o, d, radius, self, max_range)
        if not want_normals:
            return t, None
        p = o + np.where(np.isfinite(t), t, 0.0)[:, None] * d
        return t, p / np.maximum(np.linalg.norm(p, axis=1, keepdims=True), 1e-12)

    def in_frame(self, rotation: np.ndarray) -> Terrain:
        """Return this terrain seen from a ray frame; ``rotation`` turns ray -> terrain."""
        view = copy.copy(self)
        view.frame_rotation = np.asarray(rotation, dtype=float).reshape(3, 3)
        return view

    def cast(self, rel: np.ndarray, d: np.ndarray, radius: float, max_range: float,
             want_normals: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """Cast ray-frame rays (``rel`` from the planet centre) at the terrain in its frame.

        Return the ranges and the normals in the ray frame (None unless wanted).
        """
        rot = self.frame_rotation
        if rot is None:
            return self.intersect(rel, d, radius, max_range, want_normals)
        t, normals = self.intersect(rel @ rot.T, d @ rot.T, radius, max_range, want_normals)
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


def _shell_stretch(o: np.ndarray, d: np.ndarray, radius: float, terrain: Terrain,
                   max_range: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return where unit rays enter and leave the terrain's shell (before the inner sphere).

    Also whether they leave it through the inner sphere (the field's lowest bound: such a
    ray is on the ground there at the latest).
    """
    outer_lo, outer_hi = sphere_interval(o, d, radius + terrain.max_height)
    inner_lo, _ = sphere_interval(o, d, max(radius + terrain.min_height, 0.0))
    start = np.maximum(outer_lo, 0.0)
    floor = np.where(inner_lo > 0.0, inner_lo, np.inf)
    stop = np.minimum(np.minimum(outer_hi, max_range), floor)
    return start, stop, stop >= floor


def march(
    o: np.ndarray, d: np.ndarray, radius: float, terrain: Terrain, max_range: float,
    steps: int = 48, refine: int = 24,
) -> np.ndarray:
    """March unit rays (origin at the planet centre) through the terrain shell.

    Return the first crossing below the surface (inf: none): ``steps`` even samples over
    the ray's stretch in the shell, then ``refine`` bisections of the crossing. A ray whose
    stretch ends on the inner sphere (the field's lowest bound) is on the ground there at
    the latest, whatever the rounding of its last gap says.
    """
    n = len(o)
    t_out = np.full(n, np.inf)
    start, stop, floor = _shell_stretch(o, d, radius, terrain, max_range)
    live = np.flatnonzero(start < stop)
    if live.size == 0:
        return t_out
    o, d, start, stop, floor = o[live], d[live], start[live], stop[live], floor[live]

    def gap(t: np.ndarray, idx=slice(None)) -> np.ndarray:
        p = o[idx] + t[:, None] * d[idx]
        r = np.linalg.norm(p, axis=1)
        return r - radius - terrain.height(p / r[:, None])

    prev_t = start
    found = np.full(len(live), np.inf)
    lo_t = np.zeros(len(live))
    hi_t = np.zeros(len(live))
    already = gap(prev_t) <= 0.0
    found[already] = prev_t[already]
    todo = ~already
    for k in range(1, steps + 1):
        t = start + (stop - start) * (k / steps)
        cross = todo & ((gap(t) <= 0.0) | (floor & (k == steps)))
        lo_t[cross] = prev_t[cross]
        hi_t[cross] = t[cross]
        todo &= ~cross
        prev_t = t
    idx = np.flatnonzero(np.isfinite(hi_t) & (hi_t > lo_t) & ~already)
    a, b = lo_t[idx], hi_t[idx]
    for _ in range(refine if idx.size else 0):
        mid = 0.5 * (a + b)
        below = gap(mid, idx) <= 0.0
        b = np.where(below, mid, b)
        a = np.where(below, a, mid)
    found[idx] = b
    t_out[live] = found
    return t_out
