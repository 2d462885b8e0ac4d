"""The plain data a game starts from: which vessels fly where, the site, the task.

What a scenario file describes once it is read and checked (``scenario.load_scenario``
reads the YAML; a game needs only these): ``Scenario`` with its ``VesselStart`` list, each
on an ``OrbitStart`` or a ``SurfaceStart``, the bodies, the site terrain and the ``Task``
the referee scores or the ``RaceTask`` the simulator runs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from pylon_track.race import RaceRules

from pylon_sim.game.bodies import Body
from pylon_sim.game.terrain import SiteTerrain
from pylon_sim.game.vessel import VesselSpec


@dataclass(frozen=True)
class OrbitStart:
    """Start on a Keplerian orbit."""

    body: str
    altitude: float           # m, periapsis altitude
    eccentricity: float = 0.0
    inclination: float = 0.0  # deg
    lan: float = 0.0          # deg
    arg_periapsis: float = 0.0  # deg
    true_anomaly: float = 0.0   # deg
    along_track: float = 0.0    # m, added along the orbit (arc length at periapsis radius)


@dataclass(frozen=True)
class SurfaceStart:
    """Start standing on the ground."""

    body: str
    latitude: float   # deg
    longitude: float  # deg
    altitude: float   # m, centre-of-mass height above the sphere when resting
    track: str = ''           # on a race track's grid: the track (``pylon_track`` name or path)
    grid: int | None = None   # and its slot


@dataclass(frozen=True)
class VesselStart:
    """One vessel of a scenario: description, start and initial attitude."""

    key: str
    spec: VesselSpec
    start: OrbitStart | SurfaceStart
    attitude_rpy: tuple[float, float, float]   # deg, base_link w.r.t. the reference frame
    angular_velocity: tuple[float, float, float]  # rad/s, base_link, relative to reference
    packed: bool = False
    sas: bool = False                  # the player's SAS switch at the start


TASK_KINDS = ('rendezvous', 'race')
TASK_DEFAULTS = {'radius_m': 10.0, 'relative_speed_mps': 0.2, 'hold_sec': 30.0,
                 'time_limit_sec': 900.0}


@dataclass(frozen=True)
class Task:
    """What the referee scores (``task:``): each vehicle but the target reaches the target.

    Rendezvous: come within ``radius_m`` of the target vessel's centre of mass at a relative
    speed under ``relative_speed_mps`` and stay so for ``hold_sec`` without a break, within
    ``time_limit_sec`` of the start.
    """

    kind: str
    target: str                # the vessel key every other vehicle must reach
    radius_m: float = TASK_DEFAULTS['radius_m']
    relative_speed_mps: float = TASK_DEFAULTS['relative_speed_mps']
    hold_sec: float = TASK_DEFAULTS['hold_sec']
    time_limit_sec: float = TASK_DEFAULTS['time_limit_sec']

    def to_dict(self) -> dict:
        """Return the task as JSON-ready data (the management status carries it)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class RaceTask:
    """A race (``task: {kind: race}``): every vehicle is a kart on ``track``'s grid.

    ``track`` is a ``pylon_track`` name or the absolute path of a track file (what
    ``pylon_track.load_track`` takes); ``rules`` the race's (``pylon_track.race``: the
    mode's for the number of vehicles, with the task's keys over them). The simulator runs
    it (``loop.racing``). No vessel is a target: every vehicle races (``target`` '').
    """

    track: str
    rules: RaceRules
    kind: str = 'race'
    target: str = ''

    def to_dict(self) -> dict:
        """Return the task as JSON-ready data (the management status carries it)."""
        return {'kind': self.kind, 'track': self.track, **self.rules.to_dict()}


@dataclass(frozen=True)
class Scenario:
    """A scenario ready to fly.

    ``vehicles`` are the controllable vessels, each served as its own game (ports, runtime
    session, ROS domain), in vehicle order; a single-vehicle scenario has ``(active,)``.
    """

    name: str
    description: str
    path: Path
    start_ut: float
    physics_step: float
    active: str
    vessels: tuple[VesselStart, ...]
    bodies: dict[str, Body] = field(default_factory=dict)
    terrain: SiteTerrain | None = None   # the ``terrain:`` block's site (one body's)
    vehicles: tuple[str, ...] = ()
    task: Task | RaceTask | None = None

    def vessel(self, key: str) -> VesselStart:
        """Return the vessel with ``key``."""
        for vessel in self.vessels:
            if vessel.key == key:
                return vessel
        raise KeyError(key)
