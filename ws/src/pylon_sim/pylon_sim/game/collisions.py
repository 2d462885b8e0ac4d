"""Collisions in the world: which vessels collide, in which frame, and the events they make.

``World.step`` calls ``Collisions.step`` once all vessels have advanced; the contact model
itself is ``contact`` (pure). Who collides:

- a vessel on its wheels this step (``rover``'s path: wheel modules, near the ground, not
  packed) is a moving body;
- a landed vessel without wheels (fixed to the planet, ``physics``' landed path) is a
  static one (infinite mass): the rover is stopped by it, it does not move;
- boulders of the body's terrain are static spheres;
- every other vessel (in flight, in orbit, packed) does not collide: what happens in orbit,
  docking included, is as before. Two vessels that both carry a docking port never collide
  either (port capture needs the ports to touch, which their hull boxes would prevent).

The contact frame is the body-fixed frame of the vessels' central body at the step's end
(``bodies.body_fixed_rotation``), its origin moved to the first moving vessel (metres, not
hundreds of kilometres, in the products): boulders and landed vessels stand still there.
The velocity changes are taken back to the inertial frame; the vessel's accelerometer
(``specific_force``, the step's mean) feels the impulse as Δv / dt.

Events: a pair that starts touching (``contact.touching``) gives one ``Collision`` per vessel
in it, each naming the other party (a vessel key or ``BOULDER``), with the approach speed at
the deepest point and the normal impulse of that step. ``events`` is the log since the
world's reset; ``drain(key)`` returns a vessel's events not drained before (one reader per
vessel: its game).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np
from pylon_protocol import rotations

from pylon_sim.game import contact
from pylon_sim.game.bodies import Body, body_fixed_rotation
from pylon_sim.game.physics import RigidState
from pylon_sim.game.terrain import SiteTerrain
from pylon_sim.game.vessel import MassProperties, VesselSpec
from pylon_sim.game.wheels import cross

BOULDER = 'boulder'
"""The other party of a collision with a boulder."""


@dataclass(frozen=True)
class Collision:
    """A vessel began to touch something."""

    ut: float                  # s, the end of the step it began in
    vessel: str                # the vessel's key
    other: str                 # the other vessel's key, or ``BOULDER``
    speed: float               # m/s, relative normal (approach) speed before the impulse
    impulse: float             # N s, normal impulse of that step


class Vessel(Protocol):
    """What collisions use of a vessel (``world.SimVessel``); they change its state."""

    key: str
    spec: VesselSpec
    body: Body
    state: RigidState
    mass: MassProperties
    specific_force: np.ndarray


@dataclass
class _Member:
    """One vessel taking part in a body's contacts this step."""

    vessel: Vessel
    moving: bool
    to_fixed: np.ndarray       # inertial -> body-fixed at the step's end
    attitude: np.ndarray       # base_link -> inertial
    body: contact.Body


class _Before(Sequence):
    """The members' bodies at the start of the step, made when ``contact`` asks."""

    def __init__(self, members: list[_Member], states: dict[str, RigidState],
                 origin: np.ndarray, hulls: list[contact.Hull]) -> None:
        self._members, self._states, self._origin, self._hulls = members, states, origin, hulls
        self._made: dict[int, contact.Body] = {}

    def __len__(self) -> int:
        return len(self._members)

    def __getitem__(self, index):
        if index not in self._made:
            member = self._members[index]
            state = self._states.get(member.vessel.key, member.vessel.state)
            to_fixed = body_fixed_rotation(member.vessel.body, state.ut)
            self._made[index] = contact.Body(
                member.vessel.key, self._hulls[index], to_fixed @ state.position - self._origin,
                to_fixed @ rotations.to_matrix(state.attitude))
        return self._made[index]


class Collisions:
    """The world's contacts from step to step: touching pairs, the event log, caches."""

    def __init__(self) -> None:
        """Start with nothing touching and no events."""
        self.events: list[Collision] = []
        self._drained: dict[str, int] = {}
        self._touching: frozenset = frozenset()
        self._hulls: dict[str, tuple[object, tuple, contact.Hull]] = {}
        self._ports: dict[str, tuple[object, bool]] = {}
        self._boulders: tuple[object, np.ndarray] | None = None

    @property
    def touching(self) -> frozenset:
        """Return the pairs in contact after the last step (sets of two parties)."""
        return self._touching

    def drain(self, key: str) -> list[Collision]:
        """Return the vessel's collisions since its last drain (in order)."""
        start = self._drained.get(key, 0)
        self._drained[key] = len(self.events)
        return [event for event in self.events[start:] if event.vessel == key]

    def step(self, vessels: Iterable[Vessel], moving: set[str],
             packed: Callable[[Vessel], bool], terrain_of: Callable[[str], SiteTerrain | None],
             before: dict[str, RigidState], ut: float, dt: float) -> None:
        """Resolve the contacts after one world step ending at ``ut``; log those that began.

        ``moving`` are the keys of the vessels on their wheels in the step, ``before``
        every vessel's state at its start; ``packed`` and ``terrain_of`` are the world's.
        """
        groups: dict[str, list[Vessel]] = {}
        for vessel in vessels:
            if vessel.key in moving or (vessel.state.landed and not packed(vessel)):
                groups.setdefault(vessel.body.name, []).append(vessel)
        depths: dict[frozenset, float] = {}
        started: dict[frozenset, tuple[str, str, float, float]] = {}
        for group in groups.values():
            if any(v.key in moving for v in group):
                self._body_step(group, moving, terrain_of, before, ut, dt, depths, started)
        touching = contact.touching(self._touching, depths)
        for pair in touching - self._touching:
            a, b, speed, impulse = started[pair]
            for key, other in ((a, b), (b, a)):
                if key != BOULDER:
                    self.events.append(Collision(ut, key, other, speed, impulse))
        self._touching = touching

    def _body_step(self, vessels: list[Vessel], moving: set[str],
                   terrain_of: Callable[[str], SiteTerrain | None], before: dict, ut: float,
                   dt: float, depths: dict, started: dict) -> None:
        """Find and resolve the contacts of the vessels on one body."""
        body = vessels[0].body
        to_fixed = body_fixed_rotation(body, ut)
        spin = body.spin_vector()
        anchor = next(v for v in vessels if v.key in moving)
        origin = to_fixed @ anchor.state.position
        members = [self._member(v, v.key in moving, to_fixed, spin, origin) for v in vessels]
        bodies = [m.body for m in members]
        hulls = [b.hull for b in bodies]
        found = contact.contacts(bodies, self._spheres(terrain_of(body.name), origin),
                                 _Before(members, before, origin, hulls))
        found = [c for c in found if c.b < 0 or not (
            self._has_port(members[c.a].vessel) and self._has_port(members[c.b].vessel))]
        if not found:
            return
        if max(c.depth for c in found) > 0.0:
            outcome = contact.resolve(bodies, found)
            for member, after in zip(members, outcome.bodies):
                if member.moving and after is not member.body:
                    self._apply(member, after, dt)
            speeds, impulses = outcome.speeds, outcome.impulses
        else:
            speeds = impulses = [0.0] * len(found)
        for c, speed, impulse in zip(found, speeds, impulses):
            a = members[c.a].vessel.key
            b = BOULDER if c.b < 0 else members[c.b].vessel.key
            pair = frozenset({a, (BOULDER, c.sphere)}) if c.b < 0 else frozenset({a, b})
            depths[pair] = max(depths.get(pair, -np.inf), c.depth)
            _, _, fastest, total = started.get(pair, (a, b, 0.0, 0.0))
            started[pair] = (a, b, max(fastest, speed), total + impulse)

    def _member(self, vessel: Vessel, moving: bool, to_fixed: np.ndarray,
                spin: np.ndarray, origin: np.ndarray) -> _Member:
        """Return a vessel as a contact body in the body-fixed frame about ``origin``."""
        state = vessel.state
        attitude = rotations.to_matrix(state.attitude)
        rotation = to_fixed @ attitude
        if not moving:
            return _Member(vessel, False, to_fixed, attitude, contact.Body(
                vessel.key, self._hull(vessel), to_fixed @ state.position - origin, rotation))
        velocity = to_fixed @ (state.velocity - cross(spin, state.position))
        rate = rotation @ (state.body_rate - attitude.T @ spin)
        return _Member(vessel, True, to_fixed, attitude, contact.Body(
            vessel.key, self._hull(vessel), to_fixed @ state.position - origin, rotation,
            velocity, rate, vessel.mass.mass, vessel.mass.inertia))

    @staticmethod
    def _apply(member: _Member, after: contact.Body, dt: float) -> None:
        """Take a body's changes back to its vessel's inertial state and accelerometer."""
        vessel, old = member.vessel, member.body
        back = member.to_fixed.T
        kick = back @ (after.velocity - old.velocity)
        state = vessel.state
        vessel.state = replace(
            state, position=state.position + back @ (after.position - old.position),
            velocity=state.velocity + kick,
            body_rate=state.body_rate + old.rotation.T @ (after.rate - old.rate))
        vessel.specific_force = vessel.specific_force + member.attitude.T @ kick / dt

    def _hull(self, vessel: Vessel) -> contact.Hull:
        """Return the vessel's hull box (kept until its parts or centre of mass change)."""
        com = tuple(np.round(vessel.mass.com, 6))
        cached = self._hulls.get(vessel.key)
        if cached is None or cached[0] is not vessel.spec or cached[1] != com:
            cached = (vessel.spec, com, contact.hull(vessel.spec.parts, vessel.mass.com))
            self._hulls[vessel.key] = cached
        return cached[2]

    def _has_port(self, vessel: Vessel) -> bool:
        """Tell whether the vessel has a docking port (kept until its parts change)."""
        cached = self._ports.get(vessel.key)
        if cached is None or cached[0] is not vessel.spec:
            cached = (vessel.spec, any(part.modules_of('docking_port')
                                       for part in vessel.spec.parts))
            self._ports[vessel.key] = cached
        return cached[1]

    def _spheres(self, terrain: SiteTerrain | None, origin: np.ndarray) -> contact.Spheres:
        """Return the terrain's boulders about ``origin`` (none without a terrain)."""
        if terrain is None or not terrain.boulders:
            return contact.Spheres.none()
        if self._boulders is None or self._boulders[0] is not terrain:
            self._boulders = (terrain, np.array([b.radius for b in terrain.boulders]))
        return contact.Spheres(terrain.boulder_centers - origin, self._boulders[1])
