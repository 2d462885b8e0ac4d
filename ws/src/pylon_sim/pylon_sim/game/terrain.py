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

Seeded features are kept out of a ``KeepOut`` band when the spec has one (a race track:
every crater to its outer rim 2 a and every boulder clear of it). Every crater's outer
rim (2 a) lies inside the patch, so the field meets the bare sphere
with zero slope at the patch edge. Boulders are spheres, partly buried: radius ``r``,
centre ``r (1 - 2 b)`` above the height field at the boulder's place (``b`` the buried
fraction of its diameter). The surface is the union of the height field and the boulders.

``SiteTerrain`` is a ``raycast.Terrain``: ``height(up)`` is the height field,
``ground(points)`` the clearance to the surface (boulders included) and its normal, and
``intersect`` the ray cast: boulders as exact sphere intersections, the height field by
Lipschitz marching where a ray is inside both the relief's shell and a crater's bounding
sphere (the field is zero elsewhere: the bare sphere is hit exactly there), then bisection.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
import math

import numpy as np

from pylon_sim.game import raycast
from pylon_sim.game.bodies import Body, enu_rotation

RIM_EXTENT = 2.0
"""A crater's rim falls to zero at this many rim radii from its centre."""

MIN_STEP = 0.02
"""m, the smallest step of the height-field march (sets the error bound, see README)."""

MAX_MARCH = 600
"""Steps after which a ray still marching the relief is given up (no height-field hit)."""

MAX_FEATURES = 300
"""Most craters, and most boulders, one terrain holds (seeded and placed): the crater
bounds pair every crater with every other (K x K arrays, 0.7 MB each at 300) and a ray
cast tests rays against every boulder's sphere (rays x boulders)."""

MAX_PLACE_TRIES = 1000
"""Places drawn for one seeded feature before it is declared not to fit beside a keep-out."""

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
class KeepOut:
    """A band of the patch kept free of seeded features: a race track and its margin.

    ``points`` is a closed polyline in the site's local (east, north) (m; the track's
    centreline), ``clearance`` the band's half-width (m, from the polyline). A feature of
    reach ``rho`` (a crater's rim extent 2a, a boulder's radius) is clear of the band when
    its centre is at least ``clearance + rho`` from the polyline.
    """

    name: str
    points: tuple[tuple[float, float], ...]
    clearance: float

    @cached_property
    def _segments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        start = np.asarray(self.points, dtype=float).reshape(-1, 2)
        delta = np.roll(start, -1, axis=0) - start
        return start, delta, np.maximum(np.einsum('ij,ij->i', delta, delta), 1e-18)

    def distance(self, east: float, north: float) -> float:
        """Return the distance (m) from local (east, north) to the closed polyline."""
        start, delta, length2 = self._segments
        rel = np.array([east, north]) - start
        along = np.clip(np.einsum('ij,ij->i', rel, delta) / length2, 0.0, 1.0)
        return float(np.sqrt(((rel - along[:, None] * delta) ** 2).sum(axis=1)).min())

    def intrusion(self, east: float, north: float, reach: float) -> float:
        """Return how far (m) a feature of ``reach`` at (east, north) comes into the band.

        Zero or less: it is clear.
        """
        return self.clearance + reach - self.distance(east, north)


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
    keep_out: KeepOut | None = None     # a band kept free of seeded features (a track)


def _seeded_place(rng: np.random.Generator, spec: TerrainSpec, reach: float,
                  ) -> tuple[float, float]:
    """Return a uniform (east, north) with ``clear + reach <= rho <= patch - reach``.

    With a keep-out, places are drawn until one is clear of its band (rejection sampling:
    uniform over what is left; without a keep-out the first draw, as before). Raise
    ValueError when ``MAX_PLACE_TRIES`` draws find none.
    """
    inner = min(spec.clear_radius + reach, spec.radius - reach)
    outer = spec.radius - reach
    for _ in range(MAX_PLACE_TRIES):
        rho = math.sqrt(rng.uniform(inner * inner, outer * outer))
        angle = rng.uniform(0.0, 2.0 * math.pi)
        east, north = rho * math.cos(angle), rho * math.sin(angle)
        if spec.keep_out is None or spec.keep_out.intrusion(east, north, reach) <= 0.0:
            return east, north
    raise ValueError(f'no place found for a feature reaching {reach:.2f} m outside the '
                     f'{spec.keep_out.name} band in {MAX_PLACE_TRIES} draws')


def seeded_features(spec: TerrainSpec) -> tuple[tuple[Crater, ...], tuple[Boulder, ...]]:
    """Return the craters and boulders of a spec: the seeded ones, then the placed ones.

    Crater rim radii and boulder radii are uniform in their ranges, places uniform over
    the part of the patch where the whole feature fits outside ``clear_radius`` and the
    keep-out band (craters to 2 a, boulders to their radius).
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


def gnomonic(enu: np.ndarray, body_radius: float, points: np.ndarray,
             ) -> tuple[np.ndarray, np.ndarray]:
    """Return a site's local (east, north) (N, 2) of body-fixed points, and a mask.

    ``enu`` is the site's rows East, North, Up (``bodies.enu_rotation``); the mask is false
    for points on the far half of the body (no projection: inf).
    """
    q = np.asarray(points, dtype=float).reshape(-1, 3) @ enu.T
    front = q[:, 2] > 1e-9 * np.linalg.norm(q, axis=1)
    z = np.where(front, q[:, 2], 1.0)
    en = body_radius * q[:, :2] / z[:, None]
    return np.where(front[:, None], en, np.inf), front


def _smoothstep(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def _normal(enu: np.ndarray, p: np.ndarray, r: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """Return the field's unit normals at points ``p`` (radii ``r``) from its gradient."""
    up = p / np.where(r > 0.0, r, 1.0)[:, None]
    normal = up - grad @ enu[:2]
    return normal / np.linalg.norm(normal, axis=1, keepdims=True)


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
        middle, half = 0.5 * (self.max_height + self.min_height), \
            0.5 * (self.max_height - self.min_height)
        self._k_centers = self.up_of(self._c_en) * (self.body_radius + middle)
        self._k_reach = np.hypot(RIM_EXTENT * self._c_radius, half) + 0.01
        self._k_slope, self._k_groups = self._local_groups()
        relief = max(-self.min_height, self.max_height)
        self.relief_reach = self.patch_radius + relief + 1.0
        reach = np.linalg.norm(self.boulder_centers - self.site, axis=1) + self._b_radius
        self.boulder_reach = float(reach.max()) if len(reach) else 0.0
        tops = np.linalg.norm(self.boulder_centers, axis=1) + self._b_radius - self.body_radius
        self._top = max(self.max_height, float(tops.max()) if len(tops) else 0.0)
        self._last_point: tuple[bytes, tuple[np.ndarray, np.ndarray]] | None = None

    @property
    def top_height(self) -> float:
        """Return the highest point of the relief above the sphere, boulders included, m."""
        return self._top

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

    def _local_groups(self) -> tuple[np.ndarray, np.ndarray]:
        """Return, per crater's bounding sphere, a slope bound and the craters reaching in.

        The craters are (K, G) indices into the padded crater arrays; index K is a crater
        of no depth or rim that pads short rows.
        """
        count = len(self.craters)
        pad = np.array([[1e12, 1e12]])
        self._p_en = np.vstack([self._c_en, pad])
        self._p_radius = np.append(self._c_radius, 1.0)
        self._p_depth = np.append(self._c_depth, 0.0)
        self._p_rim = np.append(self._c_rim, 0.0)
        if not count:
            return np.zeros(0), np.zeros((0, 1), dtype=int)
        gap = np.linalg.norm(self._c_en[:, None, :] - self._c_en[None, :, :], axis=2)
        reach = gap < self._k_reach[:, None] + RIM_EXTENT * self._c_radius[None, :]
        groups = np.full((count, int(reach.sum(axis=1).max())), count)
        for k, row in enumerate(reach):
            members = np.flatnonzero(row)
            groups[k, :members.size] = members
        return reach @ np.array([k.max_slope for k in self.craters]), groups

    def _heights(self, en: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """Return the field at local (east, north) (N, 2) from the craters ``groups`` (N, G)."""
        rel = en[:, None, :] - self._p_en[groups]
        rho = np.sqrt(np.einsum('nkj,nkj->nk', rel, rel))
        a, d, k = self._p_radius[groups], self._p_depth[groups], self._p_rim[groups]
        s = rho / a
        prof = np.where(s <= 1.0, -d + (d + k) * s * s, k * (1.0 - _smoothstep(s - 1.0)))
        h = prof.sum(axis=1)
        return np.where(np.isfinite(en).all(axis=1), h, 0.0)

    # -- local coordinates ------------------------------------------------------------
    def local(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return (east, north) (N, 2) of body-fixed points or directions, and a mask.

        The mask is false for points on the far half of the body (no projection).
        """
        return gnomonic(self.enu, self.body_radius, points)

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
        return _normal(self.enu, p, np.linalg.norm(p, axis=1),
                       self.field(self.local(p)[0])[1])

    # -- the interface of wheels and ground truth ------------------------------------
    def ground(self, points_fixed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return each point's clearance above the surface (m, < 0 below) and its normal.

        The surface is the union of the height field and the boulders: the clearance is
        the smaller of the height above the field (along the radius) and the distance to
        the nearest boulder's sphere; the normal (unit, body-fixed) is that of the nearer
        one: the field's ``up - dh/de E - dh/dn N`` or the boulder's radial direction.

        The answer for one point is kept until another point is asked: a wheeled vessel's
        step and its flight state ask for its centre of mass at the same instant.
        """
        p = np.asarray(points_fixed, dtype=float).reshape(-1, 3)
        if len(p) != 1:
            return self._ground(p)
        key = p.tobytes()
        if self._last_point is None or self._last_point[0] != key:
            self._last_point = (key, self._ground(p))
        clearance, normal = self._last_point[1]
        return clearance.copy(), normal.copy()

    def _ground(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return ``ground`` of points (N, 3), body-fixed."""
        r = np.linalg.norm(p, axis=1)
        height, grad = self.field(self.local(p)[0])        # one evaluation for both
        clearance = r - self.body_radius - height
        normal = _normal(self.enu, p, r, grad)
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
        height field is marched where a ray is inside both the relief's shell and a
        crater's bounding sphere, the bare sphere is hit elsewhere.
        """
        t = raycast.sphere_first_hit(o, d, radius)
        t, marched = self._relief_hits(o, d, t, max_range)
        t, which = self._boulder_hits(o, d, t, max_range)
        return t, (self._normals(o, d, t, which, marched) if want_normals else None)

    def _relief_hits(self, o: np.ndarray, d: np.ndarray, bare: np.ndarray,
                     max_range: float) -> tuple[np.ndarray, np.ndarray]:
        """Replace the bare-sphere hits of rays through craters by height-field hits.

        Return the ranges and which of them are on the field (not on the bare sphere).

        Outside every crater's bounding sphere (its rim disc, 2 a, through the relief's
        shell) the field is zero: there the bare sphere is the surface. Each (ray,
        crater) pair is marched only over the ray's stretch inside both that sphere and
        the shell ``R + min_h .. R + max_h``.
        """
        marched = np.zeros(len(o), dtype=bool)
        if not len(self.craters):
            return bare, marched
        r = self.body_radius
        shell_lo, shell_hi = raycast.sphere_interval(o, d, r + self.max_height)
        inner_lo, _ = raycast.sphere_interval(o, d, r + self.min_height)
        box_lo, box_hi = raycast.sphere_interval(o - self.site, d, self.relief_reach)
        first = np.maximum(np.maximum(shell_lo, box_lo), 0.0)
        last = np.minimum(np.minimum(shell_hi, box_hi), max_range)
        inner = np.where(inner_lo > 0.0, inner_lo, np.inf)
        last = np.minimum(last, inner)
        live = np.flatnonzero(first < last)
        if live.size == 0:
            return bare, marched
        rel, centers = o[live] - self.site, self._k_centers - self.site
        index = raycast.spheres_in_reach(rel, centers, self._k_reach, max_range)
        ray, crater, start, stop = raycast.sphere_pairs(rel, d[live], centers[index],
                                                        self._k_reach[index])
        crater = index[crater]
        start = np.maximum(start, first[live[ray]])
        stop = np.minimum(stop, last[live[ray]])
        keep = start < stop
        ray, crater, start, stop = ray[keep], crater[keep], start[keep], stop[keep]
        # the field never lies below the inner sphere: a ray reaching it is on the ground
        floor = stop >= inner[live[ray]]
        found = np.full(live.size, np.inf)
        groups = self._k_groups[crater]
        np.minimum.at(found, ray, march_relief(
            lambda idx, t: self._gap(o[live[ray[idx]]], d[live[ray[idx]]], t, groups[idx]),
            start, stop, self._k_slope[crater], floor))
        inside = np.zeros(live.size, dtype=bool)
        inside[ray[(bare[live[ray]] >= start) & (bare[live[ray]] <= stop)]] = True
        t = bare.copy()
        t[live] = np.minimum(found, np.where(inside, np.inf, bare[live]))
        marched[live] = np.isfinite(found) & (found == t[live])
        return t, marched

    def _gap(self, o: np.ndarray, d: np.ndarray, t: np.ndarray, groups: np.ndarray,
             ) -> tuple[np.ndarray, np.ndarray]:
        """Return the height above the field at ``o + t d`` and the ray's climb rate there.

        Only the craters ``groups`` (N, G) are summed: those reaching into the sphere.
        """
        p = o + t[:, None] * d
        radius = np.linalg.norm(p, axis=1)
        climb = np.einsum('ij,ij->i', p, d) / radius
        return radius - self.body_radius - self._heights(self.local(p)[0], groups), climb

    def _boulder_hits(self, o: np.ndarray, d: np.ndarray, t: np.ndarray, max_range: float,
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Take the boulders' exact hits where nearer; return ranges and boulder (-1)."""
        t = t.copy()
        which = np.full(len(o), -1)
        if len(self.boulders):
            rel = o - self.site          # about the site: small numbers, no cancellation
            lo, _ = raycast.sphere_interval(rel, d, self.boulder_reach)
            near = np.flatnonzero(np.maximum(lo, 0.0) < np.minimum(t, max_range))
            centers = self.boulder_centers - self.site
            index = raycast.spheres_in_reach(rel[near], centers, self._b_radius, max_range)
            first, nearest = raycast.sphere_hits(rel[near], d[near], centers[index],
                                          self._b_radius[index])
            take = first < t[near]
            t[near[take]] = first[take]
            which[near[take]] = index[nearest[take]]
        return t, which

    def _normals(self, o: np.ndarray, d: np.ndarray, t: np.ndarray, which: np.ndarray,
                 marched: np.ndarray) -> np.ndarray:
        """Return the unit surface normals at the hits.

        The boulder ``which``'s, the field's where ``marched``, else the sphere's (no
        crater reaches there).
        """
        normals = np.zeros((len(o), 3))
        hit = np.flatnonzero(np.isfinite(t))
        p = o[hit] + t[hit, None] * d[hit]
        normals[hit] = p
        field = np.flatnonzero(marched[hit] & (which[hit] < 0))
        normals[hit[field]] = self.field_normal(p[field])
        on_boulder = np.flatnonzero(which[hit] >= 0)
        normals[hit[on_boulder]] = p[on_boulder] - self.boulder_centers[which[hit[on_boulder]]]
        length = np.linalg.norm(normals[hit], axis=1, keepdims=True)
        normals[hit] /= np.where(length > 0.0, length, 1.0)
        return normals

    def boulder_primitives(self, to_frame: np.ndarray, center: np.ndarray,
                           ) -> list[tuple[np.ndarray, float]]:
        """Return the boulders as (centre, radius) in another frame (``to_frame`` @ fixed)."""
        centers = self.boulder_centers @ np.asarray(to_frame, dtype=float).T + center
        return [(c, float(r)) for c, r in zip(centers, self._b_radius)]


_sphere_hits = raycast.sphere_hits       # its name here before it moved to raycast


def march_relief(gap, start: np.ndarray, stop: np.ndarray, slope: np.ndarray,
                 floor: np.ndarray) -> np.ndarray:
    """March rays from ``start`` to ``stop``; return the first crossing (inf: none).

    ``gap(idx, t)`` returns the height above the field of rays ``idx`` at ``t`` and their
    climb rates there. The gap falls by at most ``max(0, -c) + 1.01 L`` per metre of ray
    (c = the ray's climb rate d|p|/dt at the step's start, which only grows along a
    straight line; L = ``slope``, a bound on the field's slope along the ray's stretch;
    1.01 covers the projection's stretch), so a step of gap / that rate cannot pass
    through the surface; steps are at least ``MIN_STEP``, and a crossing is bisected. A
    ray whose ``stop`` is on the inner sphere (``floor``: the field's lowest bound) has
    crossed by the time it gets there, whatever the rounding of its last gap says.
    """
    n = len(start)
    found = np.full(n, np.inf)
    t = start.copy()
    g, climb = gap(np.arange(n), t)
    found[g <= 0.0] = t[g <= 0.0]
    lo, hi = np.zeros(n), np.full(n, -1.0)
    todo = np.flatnonzero(g > 0.0)
    for _ in range(MAX_MARCH):
        if todo.size == 0:
            break
        rate = np.maximum(-climb[todo], 0.0) + 1.01 * slope[todo]
        step = np.maximum(g[todo] / np.maximum(rate, 1e-9), MIN_STEP)
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
