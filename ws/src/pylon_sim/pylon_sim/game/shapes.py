"""The primitive shapes rays hit, and the exact ray/shape kernels (pure numpy, no ROS).

A ``Primitive`` is a sphere, an oriented box or a finite cylinder placed in one right-handed
Cartesian frame (metres); ``vessel_primitives`` places a vessel's part shapes in it. The
kernels here are the one rule every ray cast of the simulator follows (``raycast`` batches
them; the terrain's boulders and the star tracker's occlusion use them through it):

* **A ray that starts inside a closed shape hits it where it leaves**: the range is the exit
  distance and the normal faces back towards the ray (the inside wall is what a sensor
  there would see). A hit nearer than ``HIT_EPS`` (1 nm) is the ray's own start on a surface
  and does not count: a ray leaving a surface outwards does not hit it.
* **One parallel-ray threshold**: a unit ray whose component across a slab (a box's pair of
  faces, a cylinder's caps) or across a cylinder's axis is below ``PARALLEL`` (1e-12) is
  parallel to it: inside the slab (or tube) for its whole length when it starts inside,
  never when it starts outside; its boundary counts as inside. (At 1e-12 a ray takes
  1e12 m to cross a metre: no range the simulator casts.)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
import math

import numpy as np
from pylon_protocol import rotations

HIT_EPS = 1e-9
"""m: a hit nearer than this is the ray's own start on a surface (not a hit)."""

PARALLEL = 1e-12
"""A unit ray's component across a slab or a cylinder's axis below this: parallel to it."""

SHAPES = ('sphere', 'box', 'cylinder')


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
        if self.kind not in SHAPES:
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

    def contains(self, point: np.ndarray) -> bool:
        """Tell whether ``point`` lies inside (or on) the shape."""
        local = self.rotation.T @ (np.asarray(point, dtype=float) - self.center)
        size = self.size
        if self.kind == 'box':
            return bool(np.all(np.abs(local) <= np.asarray(size) / 2.0 + 1e-9))
        if self.kind == 'cylinder':
            return abs(local[0]) <= size[1] / 2.0 + 1e-9 and \
                math.hypot(local[1], local[2]) <= size[0] + 1e-9
        return float(np.linalg.norm(local)) <= size[0] + 1e-9


def vessel_primitives(
    parts: Iterable,
    position: Sequence[float],
    rotation: Sequence[float] | np.ndarray,
    vessel_key: Hashable = None,
    color: tuple[float, float, float] = (0.75, 0.75, 0.72),
    part_key: Callable[[object], Hashable] | None = None,
) -> list[Primitive]:
    """
    Place the shapes of a vessel's parts in the ray frame.

    ``parts`` are ``vessel.Part`` objects (``shape``, ``position`` and ``rotation`` in the
    vessel frame, ``flight_id``). ``position`` is the world position of the vessel frame's
    origin and ``rotation`` the vessel->world rotation (quaternion x, y, z, w or a 3x3
    matrix). Each primitive's ``owner`` is ``(vessel_key, part_key(part))``, the part's
    ``flight_id`` unless another ``part_key`` is given.
    """
    rot = np.asarray(rotation, dtype=float)
    rot = rotations.to_matrix(rot) if rot.shape == (4,) else rot.reshape(3, 3)
    origin = np.asarray(position, dtype=float).reshape(3)
    out = []
    for part in parts:
        part_rot = rot @ rotations.to_matrix(part.rotation)
        center = origin + rot @ np.asarray(part.position, dtype=float)
        key = part.flight_id if part_key is None else part_key(part)
        out.append(Primitive(part.shape.kind, tuple(part.shape.size), center, part_rot,
                             (vessel_key, key), color))
    return out


# -- intersection kernels ---------------------------------------------------------------------

def _slab(o: np.ndarray, d: np.ndarray, half: float) -> tuple[np.ndarray, np.ndarray]:
    """Return the parameter interval of rays inside ``|o + t d| <= half`` (one axis)."""
    parallel = np.abs(d) < PARALLEL
    with np.errstate(divide='ignore', invalid='ignore'):
        inv = 1.0 / np.where(parallel, 1.0, d)
        t0 = (-half - o) * inv
        t1 = (half - o) * inv
    inside = np.abs(o) <= half
    lo = np.where(parallel, np.where(inside, -np.inf, np.inf), np.minimum(t0, t1))
    hi = np.where(parallel, np.where(inside, np.inf, -np.inf), np.maximum(t0, t1))
    return lo, hi


def _tube(o: np.ndarray, d: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray]:
    """Return the interval of unit rays inside the infinite tube ``y^2 + z^2 <= radius^2``."""
    o2 = o.copy()
    d2 = d.copy()
    o2[:, 0] = 0.0
    d2[:, 0] = 0.0
    dd = np.einsum('ij,ij->i', d2, d2)
    b = np.einsum('ij,ij->i', o2, d2)
    c = np.einsum('ij,ij->i', o2, o2) - radius * radius
    disc = b * b - dd * c
    along = dd < PARALLEL * PARALLEL
    ok = (disc >= 0.0) & ~along
    root = np.sqrt(np.where(ok, disc, 0.0))
    safe = np.where(along, 1.0, dd)
    lo = np.where(ok, (-b - root) / safe, np.inf)
    hi = np.where(ok, (-b + root) / safe, -np.inf)
    lo = np.where(along, np.where(c <= 0.0, -np.inf, np.inf), lo)
    hi = np.where(along, np.where(c <= 0.0, np.inf, -np.inf), hi)
    return lo, hi


def sphere_interval(o: np.ndarray, d: np.ndarray, radius: float,
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Return the interval ``lo, hi`` of unit rays ``o + t d`` inside a sphere at the origin.

    ``o`` is (N, 3), or (3,) when every ray starts at one point (a sensor: one product).
    ``lo > hi`` (inf, -inf) for a ray that misses it.
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


def first_hit(lo: np.ndarray, hi: np.ndarray, min_distance: float = HIT_EPS) -> np.ndarray:
    """Return the first hit of rays inside a shape over ``lo .. hi``, inf for none.

    The module's rule: the entry if it lies ahead (beyond ``min_distance``), else the exit
    for a ray that starts inside.
    """
    t = np.where(lo > min_distance, lo, np.where(hi > min_distance, hi, np.inf))
    return np.where(lo <= hi, t, np.inf)


def sphere_first_hit(o: np.ndarray, d: np.ndarray, radius: float,
                     min_distance: float = 0.0) -> np.ndarray:
    """Return the first hit of unit rays on a sphere at the origin, inf for none.

    Only hits farther than ``min_distance`` count; a ray from inside gets its exit.
    """
    return first_hit(*sphere_interval(o, d, radius), min_distance)


def _interval(prim: Primitive, local_o: np.ndarray, local_d: np.ndarray,
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the interval of shape-local rays inside ``prim`` and the entry face's axis.

    The axis is the box's face axis (0..2) or, for a cylinder, 1 for the side wall and 0
    for an end cap.
    """
    n = len(local_d)
    axis = np.zeros(n, dtype=int)
    if prim.kind == 'sphere':
        lo, hi = sphere_interval(local_o, local_d, prim.size[0])
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
        r0, r1 = _tube(local_o, local_d, radius)
        axis = np.where(r0 > lo, 1, 0)
        lo = np.maximum(lo, r0)
        hi = np.minimum(hi, r1)
    return lo, hi, axis


def _local_normals(prim: Primitive, p: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """Return the outward unit normals at shape-local surface points ``p``."""
    if prim.kind == 'sphere':
        normal = p
    elif prim.kind == 'box':
        normal = np.zeros_like(p)
        rows = np.arange(len(p))
        normal[rows, axis] = np.sign(p[rows, axis])
    else:
        side = p.copy()
        side[:, 0] = 0.0
        cap = np.zeros_like(p)
        cap[:, 0] = np.sign(p[:, 0])
        normal = np.where((axis == 1)[:, None], side, cap)
    length = np.linalg.norm(normal, axis=1, keepdims=True)
    return normal / np.where(length > 0.0, length, 1.0)


def primitive_hits(
    prim: Primitive, o: np.ndarray, d: np.ndarray, want_normals: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    """Return the nearest hit distance (inf if none) and the normals facing the ray.

    ``o`` is (N, 3), or (3,) for rays that all start at one point; ``d`` (N, 3) unit
    directions. A ray starting inside the shape hits it where it leaves (the module's
    rule). The normals (None unless ``want_normals``) face the ray's origin side.
    """
    n = len(d)
    local_o = (o - prim.center) @ prim.rotation
    if local_o.ndim == 1:
        local_o = np.broadcast_to(local_o, (n, 3))
    local_d = d @ prim.rotation
    lo, hi, axis = _interval(prim, local_o, local_d)
    t = first_hit(lo, hi)
    if not want_normals:
        return t, None
    entering = lo > HIT_EPS
    p = local_o + np.where(np.isfinite(t), t, 0.0)[:, None] * local_d
    normal = _local_normals(prim, p, axis)
    # Seen from inside (exit hit), the visible face points back towards the ray.
    normal = np.where(entering[:, None], normal, -normal)
    return t, normal @ prim.rotation.T
