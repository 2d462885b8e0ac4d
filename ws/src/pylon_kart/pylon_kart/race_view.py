"""The organisers' view of a race, pure: karts on the course from ground truth, standings.

In the management domain (domain 0) every kart's ground truth arrives under its
``/d<N>/awsim/ground_truth`` (``pylon_common.mission``): ``localization/kinematic_state``
(``nav_msgs/Odometry``) has the pose in the bridge's ``pylon_ground_truth_enu`` frame, an
East-North-Up frame whose origin is where that kart stood when its runtime session began
(the simulator's ground-truth anchor: its grid slot, at the start and after every reset).
Every kart has its own such frame; ``GroundTruthFrame`` takes one into the track's ``map``
(``pylon_track``: ENU at the track's origin) exactly, through the body-fixed frame: the
anchor's position is the grid slot's point of ``map`` (its height, the kart's centre of
mass above the ground, is left out: ``z`` is then the height above the slot's centre of
mass, about -0.14 m on the ground), its axes are the ENU axes there (a few 1e-5 rad from
the track origin's at the kart circuit's size).

``Standings`` ranks the karts from the status arrays the management mirrors into domain 0
(``/d<N>/awsim/status``, ``pylon_common.mission.STATUS_FIELDS``): laps first, then the
earlier crossing of the line that completed the last lap (the race time, ``elapsed_sec`` -
``thisLapTime`` right after the crossing), then the vehicle number, as the judge ranks;
each lap's time is the difference of two crossings (the finishing lap's to a status period,
0.1 s: after the finish ``thisLapTime`` stays 0, so its crossing is the first status that
counts it). It is what the demo prints when no
judge's result is there, and what the live view labels the karts with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
import math

import numpy as np
from pylon_common import mission
from pylon_track import Track

KART_COLOURS = ((0.95, 0.26, 0.21), (0.13, 0.59, 0.95), (0.30, 0.69, 0.31),
                (1.00, 0.76, 0.03), (0.61, 0.15, 0.69), (0.00, 0.74, 0.83))
"""The colour (r, g, b) of kart k: ``KART_COLOURS[(k - 1) % 6]`` (red, blue, green, amber...)."""
LINE_GAP_SEC = 0.5
"""s: two crossings of the line closer than this are one (the float32 status's rounding)."""
KART_SIZE = (1.4, 0.8, 0.4)
"""m: the box a kart is drawn as (the chassis' length and width, a driver's height)."""


def parse_slots(text: str, vehicles: int) -> tuple[int, ...]:
    """Return each vehicle's grid slot from a comma list ('': vehicle k on slot k - 1).

    ValueError unless there is one slot per vehicle, each a whole number >= 0, none twice.
    """
    if not text.strip():
        return tuple(range(vehicles))
    try:
        slots = tuple(int(item) for item in text.split(','))
    except ValueError:
        raise ValueError(f'grid_slots must be a comma list of whole numbers, not {text!r}') \
            from None
    if len(slots) != vehicles or min(slots) < 0 or len(set(slots)) != len(slots):
        raise ValueError(f'grid_slots {text!r}: one distinct slot >= 0 per vehicle '
                         f'({vehicles})')
    return slots


def yaw_of(x: float, y: float, z: float, w: float) -> float:
    """Return the yaw (rad, about z) of a quaternion (x, y, z, w)."""
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


class GroundTruthFrame:
    """One kart's ground-truth ENU frame (anchored at its grid slot) in the track's map."""

    def __init__(self, track: Track, slot: int) -> None:
        """Anchor at grid slot ``slot`` of ``track`` (IndexError for a slot it lacks)."""
        x, y, _ = track.grid_pose(slot)
        self.track = track
        self.anchor = track.fixed_from_map([x, y, 0.0])
        up = self.anchor / np.linalg.norm(self.anchor)
        east = np.cross([0.0, 0.0, 1.0], up)
        east /= np.linalg.norm(east)
        north = np.cross(up, east)
        self.axes = np.stack([east, north, up])          # rows: the anchor's E, N, U
        # map axes of the anchor's E, N, U: columns of the rotation map <- anchor ENU
        origin = track.map_from_fixed(self.anchor)
        self.rotation = np.stack([track.map_from_fixed(self.anchor + axis) - origin
                                  for axis in self.axes], axis=1)

    def to_map(self, position: Sequence[float], yaw: float) -> tuple[float, float, float,
                                                                     float]:
        """Return (x, y, z, yaw) in map of a ground-truth position (m) and yaw (rad, ENU)."""
        fixed = self.anchor + np.asarray(position, dtype=float) @ self.axes
        x, y, z = self.track.map_from_fixed(fixed)
        turn = math.atan2(self.rotation[1, 0], self.rotation[0, 0])
        return float(x), float(y), float(z), math.atan2(math.sin(yaw + turn),
                                                        math.cos(yaw + turn))


@dataclass
class KartRecord:
    """One kart as the mirrored status tells it (times in s of race time)."""

    vehicle: int
    laps: int = 0
    lap_time: float = 0.0                 # s into the lap in progress
    section: int = 0
    boosts_left: int = 0
    boosting: bool = False
    crossings: list[float] = field(default_factory=list)    # race time of each line crossing
    lap_times: list[float] = field(default_factory=list)
    samples: int = 0
    laps_at_line: int = 0                 # laps counted at the last crossing

    @property
    def last_line(self) -> float | None:
        """Return the race time of the crossing that completed the last lap (None: no lap)."""
        return self.crossings[-1] if self.laps and self.crossings else None

    @property
    def best_lap(self) -> float | None:
        """Return the fastest lap seen (None: no lap yet)."""
        return min(self.lap_times) if self.lap_times else None


class Standings:
    """The karts' laps and lap times from their status arrays, ranked as the judge ranks."""

    INDEX = mission.STATUS_INDEX

    def __init__(self, vehicles: int) -> None:
        """Start with every kart on the grid."""
        self.karts = {k: KartRecord(k) for k in range(1, vehicles + 1)}

    def update(self, vehicle: int, values: Sequence[float]) -> None:
        """Take one status array of ``vehicle``; a short or non-finite one is ignored."""
        kart = self.karts.get(vehicle)
        index = self.INDEX
        if kart is None or len(values) <= index['elapsed_sec'] or \
                not all(math.isfinite(v) for v in values[:index['elapsed_sec'] + 1]):
            return
        laps = int(values[index['lapCount']])
        lap_time = float(values[index['thisLapTime']])
        elapsed = float(values[index['elapsed_sec']])
        if laps < kart.laps:                       # a reset: back on the grid
            self.karts[vehicle] = kart = KartRecord(vehicle)
        # the line's crossing: race time less the time into the lap; at the finish the
        # lap time is 0 from then on, so the crossing is this sample's (a status late)
        finished = laps > kart.laps and lap_time <= 0.0
        if lap_time > 0.0 or finished:
            crossing = elapsed - lap_time
            if not kart.crossings or crossing > kart.crossings[-1] + LINE_GAP_SEC:
                if kart.crossings and laps > kart.laps_at_line:
                    kart.lap_times.append(crossing - kart.crossings[-1])
                kart.crossings.append(crossing)
                kart.laps_at_line = laps
        kart.laps = laps
        kart.lap_time = lap_time
        kart.section = int(values[index['section']])
        kart.boosts_left = int(values[index['boostRemaining']])
        kart.boosting = values[index['isBoosting']] >= 0.5
        kart.samples += 1

    def ranked(self) -> list[KartRecord]:
        """Return the karts in ranking order: laps, then the last lap's line, then number."""
        return sorted(self.karts.values(), key=lambda k: (
            -k.laps, k.last_line if k.last_line is not None else math.inf, k.vehicle))

    def table(self) -> list[dict]:
        """Return the ranking as JSON-ready rows (times rounded to 0.01 s)."""
        def rounded(value):
            return None if value is None else round(value, 2)
        return [{'rank': position, 'vehicle': k.vehicle, 'laps': k.laps,
                 'lap_times_sec': [round(t, 2) for t in k.lap_times],
                 'best_lap_sec': rounded(k.best_lap), 'last_line_sec': rounded(k.last_line),
                 'section': k.section, 'boosts_left': k.boosts_left,
                 'statuses_seen': k.samples}
                for position, k in enumerate(self.ranked(), start=1)]

    def positions(self) -> Mapping[int, int]:
        """Return each vehicle's place (1: leading)."""
        return {k.vehicle: position for position, k in enumerate(self.ranked(), start=1)}


def label(kart: KartRecord, position: int) -> str:
    """Return a kart's label in the view: place, number, laps, lap time, boosts."""
    boost = ' BOOST' if kart.boosting else ''
    return (f'P{position} #{kart.vehicle} lap {kart.laps} '
            f'{kart.lap_time:5.1f}s b{kart.boosts_left}{boost}')
