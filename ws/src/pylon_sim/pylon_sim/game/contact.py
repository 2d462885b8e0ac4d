"""Contacts of rigid bodies: their parts' boxes, each other and static spheres (pure numpy).

Pure functions, no clock and no I/O; one frame for everything (``World`` uses the body-fixed
frame of its central body, where boulders and landed vessels stand still).

Shapes
    A vessel collides as its parts (``hull``): each part's shape as the box holding it (a
    box is itself; a cylinder the box around it, 2 r × 2 r × length; a sphere its cube),
    in the part's axes, fixed to the vessel. A kart is its chassis box (1.4 × 0.8 × 0.2 m),
    its four wheels (0.28 × 0.12 × 0.28 m each, sticking out 0.16 m beside the chassis),
    its LiDAR, camera and GNSS antenna. A static sphere (a boulder) is itself.

Detection (``contacts``)
    Broad phase by bounding spheres (a vessel's holds all its boxes; a boulder's is
    itself), then box against box by their bounds along one vessel's axes (against a
    boulder: by spheres), each with ``MARGIN``; then the narrow phase of ``box_contact``:
    the separating-axis test of two boxes (or the box's point nearest a sphere's centre)
    gives a normal, a depth and one point where the contact acts. Two vessels touching
    with several pairs of parts make several contacts. ``before`` (the bodies at the start
    of the step) lets a pair of boxes that was apart then keep the axis that separated
    it, so a box that went deep in one step is pushed back the way it came. A pair that
    passes through completely in one step is missed: the relative motion in a step must
    stay below the thinner of the two boxes along it (two karts' chassis are 1.4 m long
    and 0.8 m wide, a wheel 0.12 m wide; at two karts' top speed head-on, 16.5 m/s each, a
    0.02 s step is 0.66 m).

Resolution (``resolve``)
    Impulses at the contact points (sequential impulses: passes over the contacts, each
    contact's impulses accumulated and clamped, until a pass changes none by ``SETTLED``
    or after ``ITERATIONS``): along the normal, never pulling, to a separating speed of
    ``restitution`` × the approach speed (none below ``BOUNCE_SPEED``); Coulomb friction
    across it within ``friction`` × the normal impulse (a circular cone). Each impulse
    acts with opposite signs on the two bodies at the contact point, through their masses
    and inertia tensors (a static body or sphere: infinite mass), so the pair's linear
    momentum, and its angular momentum about any point, are unchanged by it. Then a
    positional correction: contacts still deeper than ``SLOP`` move their bodies apart
    along the normal, split by their inverse masses, until the depth is ``SLOP``
    (``POSITION_ITERATIONS`` Gauss-Seidel passes when one body touches several); it
    changes no velocity.

``touching`` keeps the set of pairs in contact from one step to the next (a pair starts
touching when it penetrates, and stays touching while within ``MARGIN``), so a contact that
rests, slides or chatters within a few millimetres is one contact, started once.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
import math

import numpy as np
from pylon_protocol import rotations

from pylon_sim.game.box_contact import Box, box_box, box_sphere
from pylon_sim.game.vessel import Part
from pylon_sim.game.wheels import cross

SLOP = 0.005
"""m: the depth a contact keeps after the positional correction (no body is left deeper)."""
MARGIN = 0.02
"""m: the broad phase's allowance, and how far apart a touching pair may drift and still
be the same contact."""
BOUNCE_SPEED = 0.5
"""m/s: below this approach speed a contact does not bounce (restitution 0), so bodies
pushed together come to rest against each other."""
ITERATIONS = 10
"""Most passes of the sequential impulses over every contact."""
SETTLED = 1e-6
"""N s: a pass whose impulses all change less than this ends the iterations."""
POSITION_ITERATIONS = 4
"""Passes of the positional correction over every contact."""


@dataclass(frozen=True)
class Material:
    """How a pair of surfaces collides."""

    restitution: float     # separating speed / approach speed at the contact
    friction: float        # Coulomb coefficient


VESSELS = Material(restitution=0.3, friction=0.5)
"""Vessel against vessel (a kart's bumper against another's)."""
BOULDER = Material(restitution=0.2, friction=0.8)
"""Vessel against a boulder."""


@dataclass(frozen=True)
class Hull:
    """A vessel's collision shape: one box per part, in ``base_link``.

    Row i is part i's box: its centre, its axes (the columns of ``axes[i]``, in
    ``base_link``) and its half sizes; ``centre`` and ``radius`` are a sphere holding them
    all (the broad phase), ``radii`` each box's.
    """

    centres: np.ndarray        # (n,3) m
    axes: np.ndarray           # (n,3,3)
    halves: np.ndarray         # (n,3) m

    @cached_property
    def radii(self) -> np.ndarray:
        """Return each box's half diagonal (n,), m."""
        return np.sqrt((self.halves * self.halves).sum(axis=1))

    @cached_property
    def reach(self) -> np.ndarray:
        """Return how far each box reaches along base_link's axes from its centre (n,3), m."""
        return (np.abs(self.axes) @ self.halves[:, :, None])[:, :, 0]

    @cached_property
    def centre(self) -> np.ndarray:
        """Return the centre of the sphere holding every box (base_link), m."""
        low = (self.centres - self.radii[:, None]).min(axis=0)
        high = (self.centres + self.radii[:, None]).max(axis=0)
        return 0.5 * (low + high)

    @cached_property
    def radius(self) -> float:
        """Return the radius of the sphere about ``centre`` holding every box, m."""
        return float((np.linalg.norm(self.centres - self.centre, axis=1) + self.radii).max())


def part_half_sizes(kind: str, size: Sequence[float]) -> np.ndarray:
    """Return the half sizes of the box holding a part shape, in the part's axes."""
    if kind == 'box':
        return 0.5 * np.asarray(size, dtype=float)
    if kind == 'cylinder':
        radius, length = size
        return np.array([0.5 * length, radius, radius])      # its axis along +X
    return np.full(3, float(size[0]))


def hull(parts: Iterable[Part], com: np.ndarray) -> Hull:
    """Return a vessel's collision shape: each part's box about the centre of mass ``com``."""
    parts = list(parts)
    return Hull(
        np.array([part.position for part in parts], dtype=float) - np.asarray(com, dtype=float),
        np.array([rotations.to_matrix(part.rotation) for part in parts]),
        np.array([part_half_sizes(part.shape.kind, part.shape.size) for part in parts]))


@dataclass(frozen=True)
class Body:
    """A rigid body with a hull, in the contact frame; ``mass`` inf: static."""

    key: Hashable
    hull: Hull
    position: np.ndarray       # m, centre of mass
    rotation: np.ndarray       # 3x3, base_link -> frame
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))   # m/s
    rate: np.ndarray = field(default_factory=lambda: np.zeros(3))       # rad/s, frame axes
    mass: float = math.inf     # kg
    inertia: np.ndarray | None = None    # kg m², base_link axes (None: static)

    @property
    def static(self) -> bool:
        """Tell whether nothing moves the body (infinite mass)."""
        return not math.isfinite(self.mass)

    @cached_property
    def centre(self) -> np.ndarray:
        """Return the centre of the hull's bounding sphere in the frame."""
        return self.position + self.rotation @ self.hull.centre

    @cached_property
    def box_centres(self) -> np.ndarray:
        """Return the centres of the hull's boxes in the frame (n,3)."""
        return self.position + self.hull.centres @ self.rotation.T

    def box(self, index: int) -> Box:
        """Return the hull's box ``index`` placed in the frame."""
        return Box(self.box_centres[index], self.rotation @ self.hull.axes[index],
                   self.hull.halves[index])

    @cached_property
    def inverse_mass(self) -> float:
        """Return 1 / mass (0 for a static body)."""
        return 0.0 if self.static else 1.0 / self.mass

    @cached_property
    def inverse_inertia(self) -> np.ndarray:
        """Return the inverse inertia tensor in frame axes (zero for a static body)."""
        if self.static or self.inertia is None:
            return np.zeros((3, 3))
        return self.rotation @ np.linalg.inv(self.inertia) @ self.rotation.T


@dataclass(frozen=True)
class Spheres:
    """Static spheres at rest in the frame (boulders): centres (K,3) m and radii (K,) m."""

    centres: np.ndarray
    radii: np.ndarray

    @classmethod
    def none(cls) -> Spheres:
        """Return no spheres."""
        return cls(np.zeros((0, 3)), np.zeros(0))


@dataclass(frozen=True)
class Contact:
    """A box of body ``a`` touching (or within ``MARGIN`` of) a box of ``b`` or a sphere.

    ``b`` < 0 is static sphere ``-1 - b``. A pair of bodies may have several contacts
    (one per pair of boxes).
    """

    a: int                     # index of a body
    b: int                     # index of another body, or -1 - k: sphere k
    normal: np.ndarray         # unit, from a towards b
    point: np.ndarray          # m, where the impulse acts, half way between the surfaces
    depth: float               # m, the deepest overlap along the normal (< 0: apart)
    material: Material

    @property
    def sphere(self) -> int | None:
        """Return the index of the sphere ``b`` is, or None for a body."""
        return -1 - self.b if self.b < 0 else None


@dataclass(frozen=True)
class Outcome:
    """What ``resolve`` did: the bodies after it and, per contact, its figures."""

    bodies: list[Body]
    speeds: list[float]        # m/s, approach speed at the point before (> 0)
    impulses: list[float]      # N s, normal impulse


# -- detection -----------------------------------------------------------------------------

def contacts(bodies: Sequence[Body], spheres: Spheres | None = None,
             before: Sequence[Body] | None = None, vessels: Material = VESSELS,
             boulders: Material = BOULDER) -> list[Contact]:
    """Return the contacts of the bodies' boxes with each other and with the static spheres.

    Pairs of two static bodies are skipped. ``before`` are the same bodies (same order)
    at the start of the step, for the normal of a pair that was apart then.
    """
    spheres = spheres if spheres is not None else Spheres.none()
    found: list[Contact] = []
    count = len(bodies)
    for i in range(count):
        a = bodies[i]
        for j in range(i + 1, count):
            b = bodies[j]
            if a.static and b.static:
                continue
            if float(np.linalg.norm(b.centre - a.centre)) > a.hull.radius + b.hull.radius \
                    + MARGIN:
                continue
            for p, q in zip(*_near_boxes(a, b)):
                previous = None if before is None else (before[i].box(p), before[j].box(q))
                hit = box_box(a.box(p), b.box(q), previous, MARGIN)
                if hit is not None:
                    found.append(Contact(i, j, *hit, vessels))
    if len(spheres.radii):
        for i, a in enumerate(bodies):
            if a.static:
                continue
            offset = spheres.centres - a.centre
            reach = a.hull.radius + spheres.radii + MARGIN
            near = np.flatnonzero((offset * offset).sum(axis=1) <= reach * reach)
            if not len(near):
                continue
            offset = spheres.centres[near][None, :, :] - a.box_centres[:, None, :]
            reach = a.hull.radii[:, None] + spheres.radii[near][None, :] + MARGIN
            for p, n in zip(*np.nonzero((offset * offset).sum(axis=2) <= reach * reach)):
                k = int(near[n])
                hit = box_sphere(a.box(p), spheres.centres[k], float(spheres.radii[k]),
                                 None if before is None else before[i].box(p), MARGIN)
                if hit is not None:
                    found.append(Contact(i, -1 - k, *hit, boulders))
    return found


def _near_boxes(a: Body, b: Body) -> tuple[np.ndarray, np.ndarray]:
    """Return the pairs (indices into a's and b's boxes) whose bounds meet within ``MARGIN``.

    The bounds are boxes along a's axes (a's parts' boxes are mostly along them): b's
    boxes seen in a's axes, each as the box holding it.
    """
    turn = a.rotation.T @ b.rotation                    # b's base_link -> a's
    centres = (b.box_centres - a.position) @ a.rotation   # in a's base_link
    reach_b = np.abs(np.einsum('ij,njk->nik', turn, b.hull.axes)) @ b.hull.halves[:, :, None]
    gap = (np.abs(centres[None, :, :] - a.hull.centres[:, None, :])
           - a.hull.reach[:, None, :] - reach_b[None, :, :, 0])
    return np.nonzero((gap <= MARGIN).all(axis=2))


# -- resolution ----------------------------------------------------------------------------

@dataclass
class _Point:
    """One contact point under resolution (working data)."""

    contact: int
    a: int
    b: int                     # -1: static (a sphere)
    ra: np.ndarray
    rb: np.ndarray
    normal: np.ndarray
    tangents: tuple[np.ndarray, np.ndarray]
    masses: tuple[float, float, float]    # effective masses along n, t1, t2
    target: float              # separating speed wanted along the normal
    friction: float
    normal_impulse: float = 0.0
    friction_impulse: np.ndarray = field(default_factory=lambda: np.zeros(2))


def _tangents(normal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return two unit vectors perpendicular to ``normal`` and to each other."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = cross(normal, helper)
    t1 = t1 / np.linalg.norm(t1)
    return t1, cross(normal, t1)


def resolve(bodies: Sequence[Body], found: Sequence[Contact]) -> Outcome:
    """Return the bodies after the contacts' impulses and positional correction.

    Only contacts that penetrate (depth > 0) take impulses; every one deeper than
    ``SLOP`` is corrected. Static bodies and spheres never move.
    """
    velocity = [b.velocity.astype(float) for b in bodies]
    rate = [b.rate.astype(float) for b in bodies]
    inv_mass = [b.inverse_mass for b in bodies]
    inv_inertia = [b.inverse_inertia for b in bodies]

    def point_velocity(index: int, r: np.ndarray) -> np.ndarray:
        return np.zeros(3) if index < 0 else velocity[index] + cross(rate[index], r)

    def effective(a: int, ra: np.ndarray, b: int, rb: np.ndarray, u: np.ndarray) -> float:
        k = 0.0
        for index, r in ((a, ra), (b, rb)):
            if index >= 0:
                k += inv_mass[index] + float(u @ cross(inv_inertia[index] @ cross(r, u), r))
        return 1.0 / k if k > 0.0 else 0.0

    def push(point: _Point, impulse: np.ndarray) -> None:
        """Apply ``impulse`` to b and its opposite to a at the point."""
        for index, r, sign in ((point.a, point.ra, -1.0), (point.b, point.rb, 1.0)):
            if index >= 0 and inv_mass[index] > 0.0:
                velocity[index] = velocity[index] + sign * inv_mass[index] * impulse
                rate[index] = rate[index] + sign * (inv_inertia[index] @ cross(r, impulse))

    points: list[_Point] = []
    speeds = [0.0] * len(found)
    for index, c in enumerate(found):
        b = c.b if c.b >= 0 else -1
        ra = c.point - bodies[c.a].position
        rb = c.point - bodies[b].position if b >= 0 else np.zeros(3)
        approach = float((point_velocity(b, rb) - point_velocity(c.a, ra)) @ c.normal)
        speeds[index] = max(0.0, -approach)
        if c.depth <= 0.0:
            continue
        t1, t2 = _tangents(c.normal)
        bounce = -c.material.restitution * approach if approach < -BOUNCE_SPEED else 0.0
        points.append(_Point(index, c.a, b, ra, rb, c.normal, (t1, t2),
                             (effective(c.a, ra, b, rb, c.normal),
                              effective(c.a, ra, b, rb, t1), effective(c.a, ra, b, rb, t2)),
                             bounce, c.material.friction))
    for _ in range(ITERATIONS if points else 0):
        largest = 0.0
        for p in points:
            relative = point_velocity(p.b, p.rb) - point_velocity(p.a, p.ra)
            total = max(p.normal_impulse + p.masses[0] * (p.target - float(relative @ p.normal)),
                        0.0)
            push(p, (total - p.normal_impulse) * p.normal)
            largest = max(largest, abs(total - p.normal_impulse))
            p.normal_impulse = total
            relative = point_velocity(p.b, p.rb) - point_velocity(p.a, p.ra)
            wanted = p.friction_impulse - np.array([p.masses[1] * float(relative @ p.tangents[0]),
                                                    p.masses[2] * float(relative @ p.tangents[1])])
            size = float(np.linalg.norm(wanted))
            limit = p.friction * p.normal_impulse
            if size > limit:
                wanted = wanted * (limit / size)
            change = wanted - p.friction_impulse
            push(p, change[0] * p.tangents[0] + change[1] * p.tangents[1])
            largest = max(largest, abs(change[0]), abs(change[1]))
            p.friction_impulse = wanted
        if largest < SETTLED:
            break
    impulses = [0.0] * len(found)
    for p in points:
        impulses[p.contact] = p.normal_impulse
    shift = _corrections(bodies, found, inv_mass)
    moved = [replace(body, position=body.position + shift[i], velocity=velocity[i],
                     rate=rate[i]) if inv_mass[i] > 0.0 else body
             for i, body in enumerate(bodies)]
    return Outcome(moved, speeds, impulses)


def _corrections(bodies: Sequence[Body], found: Sequence[Contact],
                 inv_mass: list[float]) -> list[np.ndarray]:
    """Return each body's shift moving every contact back to ``SLOP`` deep."""
    shift = [np.zeros(3) for _ in bodies]
    for _ in range(POSITION_ITERATIONS if found else 0):
        done = True
        for c in found:
            b = c.b if c.b >= 0 else -1
            wb = inv_mass[b] if b >= 0 else 0.0
            total = inv_mass[c.a] + wb
            moved = (shift[b] if b >= 0 else 0.0) - shift[c.a]
            excess = c.depth - float(np.dot(moved, c.normal)) - SLOP
            if excess <= 1e-9 or total <= 0.0:
                continue
            done = False
            shift[c.a] = shift[c.a] - c.normal * (excess * inv_mass[c.a] / total)
            if b >= 0:
                shift[b] = shift[b] + c.normal * (excess * wb / total)
        if done:
            break
    return shift


def touching(before: frozenset, depths: dict) -> frozenset:
    """Return the pairs in contact now, from the last step's and this step's depths.

    ``depths`` maps a pair to its deepest point (m). A pair starts touching when it
    penetrates (depth > 0) and stays touching while its depth is above ``-MARGIN``.
    """
    return frozenset(pair for pair, depth in depths.items()
                     if depth > 0.0 or (pair in before and depth > -MARGIN))
