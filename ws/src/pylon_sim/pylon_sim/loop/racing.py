"""The race a mission runs (a scenario's ``RaceTask``): ``pylon_track.race`` on the world's truth.

``Racing`` belongs to a ``mission.Mission`` whose scenario has a race task; every vehicle
is a kart on the track's grid, kart k (0-based) vehicle k + 1. Each frame of the mission:

- ``apply`` (before the physics step) sets every kart's wheel drive modifier
  (``SimVessel.drive``, ``wheels.Drive``: the one hook the race acts on the physics
  through) from the race: a boost's torque and top-speed gains, a penalty's speed cap;
- ``follow(dt)`` (after it) steps the race by the step's game time with each kart's centre
  of mass in the track's ``map`` frame (the simulator's truth), so lap and section times
  are game time, interpolated within the step; and records each collision a kart began in
  the step (``World.collisions``: the contact model's events) on that kart:
  ``collisions``, the count since the reset, and ``collisionLog``, each one's race time
  (``at``: the race's ``elapsed`` clock, 0 before the start), the other party (``with``: a
  vehicle number, ``boulder``, or another vessel's key), its approach speed (m/s) and
  normal impulse (N s).

The mission's management drives the rest: ``start`` starts the race (its session clock
from 0), ``finish`` ends it, ``reset`` puts it back on the grid (the world's reset puts
the karts on their slots: the scenario's starts); ``boost`` takes a request
``{"cmd": "boost", "vehicle": k, "value": v}`` (the rising-edge rule is the race's). A
race that is over (its time limit, or every kart finished) does not hold the mission: the
karts may drive on, nothing more is judged; the management's ``finish`` holds it.
"""

from __future__ import annotations

import logging
import math

from pylon_track import load_track
from pylon_track.race import FIRED, IGNORED, Inputs, MALFORMED, Race

from pylon_sim.game import wheels
from pylon_sim.game.bodies import body_fixed_rotation
from pylon_sim.game.save import RaceTask
from pylon_sim.game.world import World

LOG = logging.getLogger('pylon_sim')


class Racing:
    """A mission's race: the race's state, stepped on the world's truth (module docstring)."""

    def __init__(self, task: RaceTask, world: World, vehicles: tuple[str, ...]) -> None:
        """Take the race task, the shared world and the vehicles' vessel keys (kart order)."""
        self.race = Race(load_track(task.track), task.rules)
        self.world = world
        self.keys = vehicles
        self.slots = [world.scenario.vessel(key).start.grid for key in vehicles]
        self.counts: dict[str, int] = {}       # malformed requests
        self.crashes: list[list[dict]] = [[] for _ in vehicles]
        self._seen = 0                         # World.collisions taken so far
        self.reset()

    # -- the frame -------------------------------------------------------------------------
    def apply(self) -> None:
        """Set every kart's drive modifier from the race now (before the physics step)."""
        for index, key in enumerate(self.keys):
            vessel = self.world.vessels.get(key)
            if vessel is None:
                continue
            torque, speed, cap = self.race.drive(self.state, index)
            vessel.drive = wheels.NORMAL if (torque, speed, cap) == (1.0, 1.0, None) else \
                wheels.Drive(torque, speed, math.inf if cap is None else cap)

    def follow(self, dt: float) -> None:
        """Step the race by ``dt`` s of game time with every kart where it is now."""
        before = self.state
        self.state = self.race.step(self.state, [self._inputs(key) for key in self.keys], dt)
        self._log(before)
        self._record_collisions()

    def _record_collisions(self) -> None:
        """Take the collisions that began since the last call onto their karts."""
        events = self.world.collisions
        if len(events) < self._seen:           # the world was reset: its log starts again
            self._seen = 0
        for event in events[self._seen:]:
            if event.vessel not in self.keys:
                continue
            other = event.other
            entry = {'at': round(self.state.t, 6), 'ut': event.ut,
                     'with': self.keys.index(other) + 1 if other in self.keys else other,
                     'speed': round(event.speed, 4), 'impulse': round(event.impulse, 4)}
            self.crashes[self.keys.index(event.vessel)].append(entry)
            LOG.info('race: vehicle %d collided with %s at %.2f m/s',
                     self.keys.index(event.vessel) + 1, entry['with'], event.speed)
        self._seen = len(events)

    def _inputs(self, key: str) -> Inputs | None:
        """Return a kart's centre of mass in the track's map frame (None: no such vessel)."""
        vessel = self.world.vessels.get(key)
        if vessel is None:
            return None
        fixed = body_fixed_rotation(vessel.body, self.world.ut) @ vessel.state.position
        x, y, _ = self.race.track.map_from_fixed(fixed)
        return Inputs(float(x), float(y))

    def _log(self, before) -> None:
        for k, (old, new) in enumerate(zip(before.karts, self.state.karts), start=1):
            if len(new.laps) > len(old.laps):
                LOG.info('race: vehicle %d lap %d in %.3f s', k, len(new.laps), new.laps[-1].time)
            if new.penalties > old.penalties:
                LOG.info('race: vehicle %d off the track (penalty %d)', k, new.penalties)
            if new.finished_at is not None and old.finished_at is None:
                LOG.info('race: vehicle %d finished at %.3f s', k, new.finished_at)
        if self.state.phase != before.phase:
            LOG.info('race: %s at %.3f s', self.state.phase, self.state.t)

    # -- the management ----------------------------------------------------------------------
    def start(self) -> None:
        """Start the race now; ValueError unless it is on the grid (a race over needs a reset)."""
        self.state = self.race.start(self.state)

    def finish(self) -> None:
        """End the race now."""
        self.state = self.race.finish(self.state)

    def reset(self) -> None:
        """Put the race back on the grid: no laps, every boost back, no penalty."""
        self.state = self.race.initial(len(self.keys))
        self.crashes = [[] for _ in self.keys]
        self._seen = len(self.world.collisions)
        for key in self.keys:
            if key in self.world.vessels:
                self.world.vessels[key].drive = wheels.NORMAL
        self.follow(0.0)

    def boost(self, request: dict) -> dict:
        """Take a management ``boost`` request; return what became of it.

        ValueError (counted as ``malformed_request``) for a ``vehicle`` that is not one of
        the race's or a missing ``value``; a value that is not a finite number is counted
        on the kart (``malformed_boost``) and refused with ValueError too.
        """
        vehicle, value = request.get('vehicle'), request.get('value')
        if isinstance(vehicle, bool) or not isinstance(vehicle, int) \
                or not 1 <= vehicle <= len(self.keys) or 'value' not in request:
            self.counts['malformed_request'] = self.counts.get('malformed_request', 0) + 1
            raise ValueError(f'boost needs vehicle (1..{len(self.keys)}) and value, got '
                             f'vehicle={vehicle!r}, value={value!r}')
        self.state, outcome = self.race.boost(self.state, vehicle - 1, value)
        if outcome == MALFORMED:
            raise ValueError(f'boost value must be a finite number, got {value!r}')
        if outcome != IGNORED:
            LOG.info('race: vehicle %d boost %s', vehicle,
                     'fired' if outcome == FIRED else f'refused: {outcome}')
        return {'vehicle': vehicle, 'value': float(value), 'outcome': outcome,
                'fired': outcome == FIRED}

    # -- what it reports ---------------------------------------------------------------------
    def status(self) -> dict:
        """Return the race (phase, session time, rules, track) as JSON-ready data."""
        return {**self.race.status(self.state), 'requests': dict(self.counts)}

    def vehicle(self, index: int) -> dict:
        """Return kart ``index``'s (0-based) race as JSON-ready data, with its grid slot."""
        return {**self.race.kart_status(self.state, index), 'grid': self.slots[index],
                'collisions': len(self.crashes[index]),
                'collisionLog': list(self.crashes[index])}
