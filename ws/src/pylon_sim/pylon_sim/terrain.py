"""The relief of a landing site: seeded craters and boulders on a body's sphere (pure numpy).

The terrain is fixed to the body (the body-fixed frame of ``bodies.body_fixed_rotation``,
metres from the body's centre). It covers a *patch*: a disc of ``patch_radius`` about a site
(latitude, longitude) in the site's East-North-Up plane. A point's local coordinates are the
gnomonic projection about the site: with ``(x, y, z)`` its direction in the site's ENU axes,
``east = R x / z``, ``north = R y / z`` (R = body radius); the inverse is the unit vector of
``(east / R, north / R, 1)``. Outside the patch the surface is the bare sphere.

Heights are metres above the body's radius. The height field is the sum of the craters'
radial profiles; for a crater of rim radius ``a``, floor depth ``d`` and rim height ``k``
at distance ``rho`` from its centre, with ``s = rho / a``::

    h = -d + (d + k) s^2                    s <= 1   (parabolic bowl up to the rim crest)
    h = k (1 - (3 x^2 - 2 x^3)), x = s - 1  1 < s < 2 (smoothstep fall of the ejecta rim)
    h = 0                                   s >= 2

Every crater's outer rim (2 a) lies inside the patch, so the field meets the bare sphere
with zero slope at the patch edge. Boulders are spheres, partly buried: radius ``r``,
centre ``r (1 - 2 b)`` above the height field at the boulder's place (``b`` the buried
fraction of its diameter). The surface is the union of the height field and the boulders.

``SiteTerrain`` is a ``raycast.Terrain``: ``height(up)`` is the height field,
``ground(points)`` the clearance to the surface (boulders included) and its normal, and
``intersect`` the ray cast: boulders as exact sphere intersections, the height field by
Lipschitz marching inside the relief's shell and bounding sphere, then bisection.
"""

from __future__ import annotations

from dataclasses import dataclass
import math

import numpy as np

from pylon_sim import raycast
from pylon_sim.bodies import Body, enu_rotation

RIM_EXTENT = 2.0
"""A crater's rim falls to zero at this many rim radii from its centre."""

MIN_STEP = 0.02
"""m, the smallest step of the height-field march (sets the error bound, see README)."""

MAX_MARCH = 600
"""Steps after which a ray still marching the relief is given up (no height-field hit)."""

BISECTIONS = 24
"""Halvings of a bracketed crossing: a hit is found to MIN_STEP / 2**24 (about 1 nm)."""


@dataclass(frozen=True)
class Crater:
    """A crater at (east, north) of the site: rim radius, floor depth, rim height (m)."""

    east: float
    north: float
    radius: float
    depth: float
    rim_height: float

    @property
    def max_slope(self) -> float:
        """Return the steepest slope of the profile (at the rim crest, inside)."""
        return max(2.0 * (self.depth + self.rim_height), 1.5 * self.rim_height) / self.radius


@dataclass(frozen=True)
class Boulder:
    """A boulder at (east, north) of the site: radius (m), buried fraction of its diameter."""

    east: float
    north: float
    radius: float
    buried: float


@dataclass(frozen=True)
class TerrainSpec:
    """The scenario's ``terrain:`` block: a site, its patch and what is on it."""

    body: str
    latitude: float               # deg, the site (centre of the patch)
    longitude: float              # deg
    radius: float = 200.0         # m, patch radius
    seed: int = 0
    clear_radius: float = 0.0     # m about the site kept free of seeded craters and boulders
    crater_count: int = 0
    crater_radius: tuple[float, float] = (2.0, 10.0)
    depth_ratio: float = 0.2      # floor depth / rim radius
    rim_ratio: float = 0.04       # rim height / rim radius
    boulder_count: int = 0
    boulder_radius: tuple[float, float] = (0.2, 0.8)
    buried: float = 0.25          # buried fraction of a boulder's diameter
    craters: tuple[Crater, ...] = ()    # placed exactly (in addition to the seeded ones)
    boulders: tuple[Boulder, ...] = ()


def _seeded_place(rng: np.random.Generator, spec: TerrainSpec, reach: float,
                  ) -> tuple[float, float]:
    """Return a uniform (east, north) with ``clear + reach <= rho <= patch - reach``."""
    inner = min(spec.clear_radius + reach, spec.radius - reach)
    outer = spec.radius - reach
    rho = math.sqrt(rng.uniform(inner * inner, outer * outer))
    angle = rng.uniform(0.0, 2.0 * math.pi)
    return rho * math.cos(angle), rho * math.sin(angle)


def seeded_features(spec: TerrainSpec) -> tuple[tuple[Crater, ...], tuple[Boulder, ...]]:
    """Return the craters and boulders of a spec: the seeded ones, then the placed ones.

    Crater rim radii and boulder radii are uniform in their ranges, places uniform over
    the part of the patch where the whole feature fits outside ``clear_radius``.
    """
    rng = np.random.default_rng(spec.seed)
    craters = []
    for _ in range(spec.crater_count):
        radius = float(rng.uniform(*spec.crater_radius))
        east, north = _seeded_place(rng, spec, RIM_EXTENT * radius)
        craters.append(Crater(east, north, radius, spec.depth_ratio * radius,
                              spec.rim_ratio * radius))
    boulders = []
    for _ in range(spec.boulder_count):
        radius = float(rng.uniform(*spec.boulder_radius))
        east, north = _seeded_place(rng, spec, radius)
        boulders.append(Boulder(east, north, radius, spec.buried))
    return tuple(craters) + spec.craters, tuple(boulders) + spec.boulders


def _smoothstep(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


class SiteTerrain(raycast.Terrain):
    """Craters and boulders on a patch of a body's sphere, in the body-fixed frame."""

    def __init__(self, spec: TerrainSpec, body: Body) -> None:
        """Place the spec's features on ``body`` (seeded ones from ``spec.seed``)."""
        self.spec = spec
        self.body_radius = float(body.radius)
        self.patch_radius = float(spec.radius)
        self.enu = enu_rotation(spec.latitude, spec.longitude)   # rows: E, N, U (fixed)
        self.craters, self.boulders = seeded_features(spec)
        c = self.craters
        self._c_en = np.array([[k.east, k.north] for k in c]).reshape(-1, 2)
        self._c_radius = np.array([k.radius for k in c])
        self._c_depth = np.array([k.depth for k in c])
        self._c_rim = np.array([k.rim_height for k in c])
        self.min_height, self.max_height, self.max_slope = self._bounds()
        self._b_radius = np.array([b.radius for b in self.boulders])
        en = np.array([[b.east, b.north] for b in self.boulders]).reshape(-1, 2)
        ground = self.field(en)[0]
        up = self.up_of(en)
        lift = self._b_radius * (1.0 - 2.0 * np.array([b.buried for b in self.boulders]))
        self.boulder_centers = up * (self.body_radius + ground + lift)[:, None]
        self.site = self.enu[2] * self.body_radius
        relief = max(-self.min_height, self.max_height)
        self.relief_reach = self.patch_radius + relief + 1.0
        reach = np.linalg.norm(self.boulder_centers - self.site, axis=1) + self._b_radius
        self.boulder_reach = float(reach.max()) if len(reach) else 0.0

    def _bounds(self) -> tuple[float, float, float]:
        """Return bounds of the field (min, max) and of its slope (a Lipschitz constant).

        A point lies in the rims of a set of craters that all overlap each other, so the
        sums over the craters overlapping any one crater bound the field and its slope.
        """
        if not len(self.craters):
            return 0.0, 0.0, 0.0
        gap = np.linalg.norm(self._c_en[:, None, :] - self._c_en[None, :, :], axis=2)
        reach = RIM_EXTENT * self._c_radius
        overlap = gap < reach[:, None] + reach[None, :]
        slopes = np.array([k.max_slope for k in self.craters])
        return (-float((overlap * self._c_depth).sum(axis=1).max()),
                float((overlap * self._c_rim).sum(axis=1).max()),
                float((overlap * slopes).sum(axis=1).max()))

    # -- local coordinates ------------------------------------------------------------
    def local(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return (east, north) (N, 2) of body-fixed points or directions, and a mask.

        The mask is false for points on the far half of the body (no projection).
        """
        q = np.asarray(points, dtype=float).reshape(-1, 3) @ self.enu.T
        front = q[:, 2] > 1e-9 * np.linalg.norm(q, axis=1)
        z = np.where(front, q[:, 2], 1.0)
        en = self.body_radius * q[:, :2] / z[:, None]
        return np.where(front[:, None], en, np.inf), front

    def up_of(self, en: np.ndarray) -> np.ndarray:
        """Return the body-fixed unit up vectors (N, 3) of local (east, north) (N, 2)."""
        en = np.asarray(en, dtype=float).reshape(-1, 2)
        local = np.column_stack([en / self.body_radius, np.ones(len(en))])
        local /= np.linalg.norm(local, axis=1, keepdims=True)
        return local @ self.enu

    def field(self, en: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the height field (N,) m and its gradient (N, 2) at local (east, north)."""
        en = np.asarray(en, dtype=float).reshape(-1, 2)
        h = np.zeros(len(en))
        grad = np.zeros((len(en), 2))
        if not len(self.craters):
            return h, grad
        rel = en[:, None, :] - self._c_en[None, :, :]           # (N, K, 2)
        rho = np.sqrt(np.einsum('nkj,nkj->nk', rel, rel))
        a, d, k = self._c_radius, self._c_depth, self._c_rim
        s = rho / a
        x = np.clip(s - 1.0, 0.0, 1.0)
        bowl = s <= 1.0
        prof = np.where(bowl, -d + (d + k) * s * s, k * (1.0 - _smoothstep(x)))
        slope = np.where(bowl, 2.0 * (d + k) * s, -k * 6.0 * x * (1.0 - x)) / a
        h = prof.sum(axis=1)
        with np.errstate(invalid='ignore', divide='ignore'):
            radial = np.where(rho[..., None] > 0.0, rel / rho[..., None], 0.0)
        grad = np.einsum('nk,nkj->nj', slope, radial)
        far = ~np.isfinite(en).all(axis=1)
        h[far] = 0.0
        grad[far] = 0.0
        return h, grad

    def height(self, up: np.ndarray) -> np.ndarray:
        """Return the height field (m above the sphere) under body-fixed directions."""
        en, _ = self.local(up)
        return self.field(en)[0]

    def field_normal(self, points: np.ndarray) -> np.ndarray:
        """Return the height field's unit normals (N, 3) under body-fixed points.

        ``up - dh/de E - dh/dn N`` normalised, with the site's East and North axes (within
        patch radius / body radius of the local ones).
        """
        p = np.asarray(points, dtype=float).reshape(-1, 3)
        r = np.linalg.norm(p, axis=1)
        up = p / np.where(r > 0.0, r, 1.0)[:, None]
        normal = up - self.field(self.local(p)[0])[1] @ self.enu[:2]
        return normal / np.linalg.norm(normal, axis=1, keepdims=True)

    # -- the interface of wheels and ground truth ------------------------------------
    def ground(self, points_fixed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return each point's clearance above the surface (m, < 0 below) and its normal.

        The surface is the union of the height field and the boulders: the clearance is
        the smaller of the height above the field (along the radius) and the distance to
        the nearest boulder's sphere; the normal (unit, body-fixed) is that of the nearer
        one: the field's ``up - dh/de E - dh/dn N`` or the boulder's radial direction.
        """
        p = np.asarray(points_fixed, dtype=float).reshape(-1, 3)
        r = np.linalg.norm(p, axis=1)
        clearance = r - self.body_radius - self.height(p)
        normal = self.field_normal(p)
        if len(self.boulders):
            rel = p[:, None, :] - self.boulder_centers[None, :, :]
            dist = np.linalg.norm(rel, axis=2) - self._b_radius[None, :]
            nearest = np.argmin(dist, axis=1)
            rows = np.arange(len(p))
            closer = dist[rows, nearest] < clearance
            out = rel[rows, nearest]
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
            clearance = np.where(closer, dist[rows, nearest], clearance)
            normal = np.where(closer[:, None], out, normal)
        return clearance, normal

    # -- ray casting --------------------------------------------------------------------
    def intersect(self, o: np.ndarray, d: np.ndarray, radius: float, max_range: float,
                  want_normals: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Return the first hit (m, inf for none) and normal (None unless wanted).

        ``o`` are ray origins relative to the body's centre and ``d`` unit directions,
        both body-fixed; ``radius`` is the body's. Boulders are exact sphere hits; the
        height field is marched where a ray is inside both the relief's shell and the
        patch's bounding sphere, the bare sphere elsewhere.
        """
        t = _sphere_hit(o, d, radius)
        t = self._relief_hits(o, d, t, max_range)
        t, which = self._boulder_hits(o, d, t, max_range)
        return t, (self._normals(o, d, t, which) if want_normals else None)

    def _relief_hits(self, o: np.ndarray, d: np.ndarray, bare: np.ndarray,
                     max_range: float) -> np.ndarray:
        """Replace the bare-sphere hits of rays through the patch by height-field hits."""
        if not len(self.craters):
            return bare
        r = self.body_radius
        shell_lo, shell_hi = raycast.sphere_interval(o, d, r + self.max_height)
        inner_lo, _ = raycast.sphere_interval(o, d, r + self.min_height)
        box_lo, box_hi = raycast.sphere_interval(o - self.site, d, self.relief_reach)
        start = np.maximum(np.maximum(shell_lo, box_lo), 0.0)
        stop = np.minimum(np.minimum(shell_hi, box_hi), max_range)
        stop = np.minimum(stop, np.where(inner_lo > 0.0, inner_lo, np.inf))
        live = np.flatnonzero(start < stop)
        if live.size == 0:
            return bare
        found = self._march(o[live], d[live], start[live], stop[live])
        t = bare.copy()
        # Inside the marched stretch the surface is the field's; outside it the sphere's.
        inside = (bare[live] >= start[live]) & (bare[live] <= stop[live])
        t[live] = np.minimum(found, np.where(inside, np.inf, bare[live]))
        return t

    def _gap(self, o: np.ndarray, d: np.ndarray, t: np.ndarray) -> np.ndarray:
        p = o + t[:, None] * d
        radius = np.linalg.norm(p, axis=1)
        return radius - self.body_radius - self.height(p)

    def _march(self, o: np.ndarray, d: np.ndarray, start: np.ndarray,
               stop: np.ndarray) -> np.ndarray:
        """March rays from ``start`` to ``stop``; return the first crossing (inf: none).

        The gap to the field changes by at most ``(1 + 1.01 L)`` per metre of ray (L =
        ``max_slope``), so a step of ``gap / (1 + 1.01 L)`` cannot pass through the
        surface; steps are at least ``MIN_STEP``, and a crossing is bisected.
        """
        rate = 1.0 + 1.01 * self.max_slope
        found = np.full(len(o), np.inf)
        t = start.copy()
        g = self._gap(o, d, t)
        found[g <= 0.0] = t[g <= 0.0]
        lo, hi = np.zeros(len(o)), np.full(len(o), -1.0)
        todo = np.flatnonzero(g > 0.0)
        for _ in range(MAX_MARCH):
            if todo.size == 0:
                break
            step = np.maximum(g[todo] / rate, MIN_STEP)
            t_new = np.minimum(t[todo] + step, stop[todo])
            g_new = self._gap(o[todo], d[todo], t_new)
            crossed = g_new <= 0.0
            lo[todo[crossed]], hi[todo[crossed]] = t[todo[crossed]], t_new[crossed]
            t[todo], g[todo] = t_new, g_new
            todo = todo[~crossed & (t_new < stop[todo])]
        idx = np.flatnonzero(hi >= 0.0)
        a, b = lo[idx], hi[idx]
        for _ in range(BISECTIONS if idx.size else 0):
            mid = 0.5 * (a + b)
            below = self._gap(o[idx], d[idx], mid) <= 0.0
            a, b = np.where(below, a, mid), np.where(below, mid, b)
        found[idx] = b
        return found

    def _boulder_hits(self, o: np.ndarray, d: np.ndarray, t: np.ndarray, max_range: float,
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Take the boulders' exact hits where nearer; return ranges and boulder (-1)."""
        t = t.copy()
        which = np.full(len(o), -1)
        if len(self.boulders):
            rel = o - self.site          # about the site: small numbers, no cancellation
            lo, _ = raycast.sphere_interval(rel, d, self.boulder_reach)
            near = np.flatnonzero(np.maximum(lo, 0.0) < np.minimum(t, max_range))
            first, nearest = _sphere_hits(rel[near], d[near],
                                          self.boulder_centers - self.site, self._b_radius)
            take = first < t[near]
            t[near[take]] = first[take]
            which[near[take]] = nearest[take]
        return t, which

    def _normals(self, o: np.ndarray, d: np.ndarray, t: np.ndarray, which: np.ndarray,
                 ) -> np.ndarray:
        """Return the surface normals at the hits (the boulder ``which`` or the field)."""
        normals = np.zeros((len(o), 3))
        hit = np.flatnonzero(np.isfinite(t))
        p = o[hit] + t[hit, None] * d[hit]
        on_boulder = which[hit] >= 0
        out = p - self.boulder_centers[np.maximum(which[hit], 0)] if len(self.boulders) else p
        normals[hit] = np.where(on_boulder[:, None], out, self.field_normal(p))
        length = np.linalg.norm(normals[hit], axis=1, keepdims=True)
        normals[hit] /= np.where(length > 0.0, length, 1.0)
        return normals

    def boulder_primitives(self, to_frame: np.ndarray, center: np.ndarray,
                           ) -> list[tuple[np.ndarray, float]]:
        """Return the boulders as (centre, radius) in another frame (``to_frame`` @ fixed)."""
        centers = self.boulder_centers @ np.asarray(to_frame, dtype=float).T + center
        return [(c, float(r)) for c, r in zip(centers, self._b_radius)]


def _sphere_hit(o: np.ndarray, d: np.ndarray, radius: float) -> np.ndarray:
    """Return the first positive hit of unit rays on a sphere at the origin (inf: none)."""
    lo, hi = raycast.sphere_interval(o, d, radius)
    t = np.where(lo > 0.0, lo, np.where(hi > 0.0, hi, np.inf))
    return np.where(lo <= hi, t, np.inf)


def _sphere_hits(o: np.ndarray, d: np.ndarray, centers: np.ndarray, radii: np.ndarray,
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Return each unit ray's first positive hit on K spheres (inf: none) and which one.

    A ray starting inside a sphere gets its exit, as ``raycast`` does for primitives.
    Only the (ray, sphere) pairs whose line meets the sphere are solved.
    """
    od = np.einsum('ij,ij->i', o, d)
    b = od[:, None] - d @ centers.T                                # (o - c) . d
    c = (np.einsum('ij,ij->i', o, o)[:, None] - 2.0 * (o @ centers.T)
         + (np.einsum('ij,ij->i', centers, centers) - radii ** 2)[None, :])
    disc = b * b - c
    ray, sphere = np.nonzero(disc >= 0.0)
    first = np.full(len(o), np.inf)
    which = np.full(len(o), -1)
    if ray.size == 0:
        return first, which
    root = np.sqrt(disc[ray, sphere])
    lo, hi = -b[ray, sphere] - root, -b[ray, sphere] + root
    t = np.where(lo > 0.0, lo, np.where(hi > 0.0, hi, np.inf))
    order = np.lexsort((t, ray))           # by ray, nearest first
    keep = order[np.r_[True, ray[order][1:] != ray[order][:-1]]]
    first[ray[keep]], which[ray[keep]] = t[keep], sphere[keep]
    return first, which
