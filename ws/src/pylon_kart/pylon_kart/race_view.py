"""The organisers' view of a race, pure: karts on the course from ground truth, standings.

In the management domain (domain 0) every kart's ground truth arrives under its
``/d<N>/awsim/ground_truth`` (``pylon_common.mission``): ``localization/kinematic_state``
(``nav_msgs/Odometry``) has the pose in the bridge's ``pylon_ground_truth_enu`` frame, an
East-North-Up frame whose origin is where that kart stood when its runtime session began
(the simulator's ground-truth anchor: its grid slot, at the start and after every reset).
Every kart has its own such frame; ``GroundTruthFrame`` takes one into the track's ``map``
(``pylon_track``: ENU at the track's origin) exactly, through the body-fixed frame: the
anchor's position is the grid slot's point of ``map`` at z 0 (the height of the kart's
centre of mass above the ground is left out: ``z`` is the height above where it stood on
the slot), its axes are the ENU axes there (a few 1e-5 rad from the track origin's at the
kart circuit's size).

``Standings`` keeps every kart's race from the status arrays the management mirrors into
domain 0 (``/d<N>/awsim/status``, ``pylon_common.mission.STATUS_FIELDS``): laps, the time
into the lap, section, boosts, the judge's place (``rank``) and best lap, and each lap's
time: from the race time its first crossing of the line (``elapsed_sec`` -
``thisLapTime`` on its first lap) or its previous lap's end to the end of that lap
(``last_lap_end_sec``, the race's own interpolated crossing). It is what the demo prints
beside the judge's files, and what the live view labels the karts with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
import math

import numpy as np
from pylon_common import mission
from pylon_track import Track

KART_COLOURS = ((0.95, 0.26, 0.21), (0.13, 0.59, 0.95), (0.30, 0.69, 0.31),
                (1.00, 0.76, 0.03), (0.61, 0.15, 0.69), (0.00, 0.74, 0.83))
"""The colour (r, g, b) of kart k: ``KART_COLOURS[(k - 1) % 6]`` (red, blue, green, amber...)."""
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
    rank: int = 0                         # the judge's place (0: not ranked)
    best_lap: float | None = None         # the judge's best lap
    started: float | None = None          # race time of its first crossing of the line
    lap_ends: list[float] = field(default_factory=list)     # race time each lap ended
    lap_times: list[float] = field(default_factory=list)
    samples: int = 0

    @property
    def last_line(self) -> float | None:
        """Return the race time its last counted lap ended (None: no lap yet)."""
        return self.lap_ends[-1] if self.lap_ends else None


class Standings:
    """The karts' places, laps and lap times from their status arrays."""

    INDEX = mission.STATUS_INDEX
    USED = ('lapCount', 'thisLapTime', 'section', 'boostRemaining', 'isBoosting',
            'elapsed_sec', 'rank', 'best_lap_sec', 'last_lap_end_sec')
    """The status fields it reads: a shorter array (another mission's) is ignored."""

    def __init__(self, vehicles: int) -> None:
        """Start with every kart on the grid."""
        self.karts = {k: KartRecord(k) for k in range(1, vehicles + 1)}

    def update(self, vehicle: int, values: Sequence[float]) -> None:
        """Take one status array of ``vehicle``; a short or non-finite one is ignored."""
        kart = self.karts.get(vehicle)
        value = {name: float(values[self.INDEX[name]]) for name in self.USED
                 if self.INDEX[name] < len(values)}
        if kart is None or len(value) < len(self.USED) or \
                not all(math.isfinite(v) for v in value.values()):
            return
        laps = int(value['lapCount'])
        if laps < kart.laps:                       # a reset: back on the grid
            self.karts[vehicle] = kart = KartRecord(vehicle)
        if kart.started is None and laps == 0 and value['thisLapTime'] > 0.0:
            kart.started = value['elapsed_sec'] - value['thisLapTime']
        if laps > kart.laps and value['last_lap_end_sec'] > 0.0:
            line = kart.last_line if kart.lap_ends else kart.started
            if line is not None and laps == kart.laps + 1:   # one lap since the last look
                kart.lap_times.append(value['last_lap_end_sec'] - line)
            kart.lap_ends.append(value['last_lap_end_sec'])
        kart.laps = laps
        kart.lap_time = value['thisLapTime']
        kart.section = int(value['section'])
        kart.boosts_left = int(value['boostRemaining'])
        kart.boosting = value['isBoosting'] >= 0.5
        kart.rank = int(value['rank'])
        kart.best_lap = value['best_lap_sec'] if value['best_lap_sec'] > 0.0 else None
        kart.samples += 1

    def ranked(self) -> list[KartRecord]:
        """Return the karts in the judge's order (unranked ones last, by their number)."""
        return sorted(self.karts.values(), key=lambda k: (k.rank if k.rank > 0 else math.inf,
                                                          k.vehicle))

    def table(self) -> list[dict]:
        """Return the ranking as JSON-ready rows (times rounded to 0.01 s)."""
        def rounded(value):
            return None if value is None else round(value, 2)
        return [{'rank': k.rank, 'vehicle': k.vehicle, 'laps': k.laps,
                 'lap_times_sec': [round(t, 2) for t in k.lap_times],
                 'best_lap_sec': rounded(k.best_lap), 'last_line_sec': rounded(k.last_line),
                 'first_line_sec': rounded(k.started), 'section': k.section,
                 'boosts_left': k.boosts_left, 'statuses_seen': k.samples}
                for k in self.ranked()]


def label(kart: KartRecord) -> str:
    """Return a kart's label in the view: place (the judge's), number, laps, lap time, boosts."""
    place = f'P{kart.rank}' if kart.rank > 0 else 'P-'
    boost = ' BOOST' if kart.boosting else ''
    return (f'{place} #{kart.vehicle} lap {kart.laps} '
            f'{kart.lap_time:5.1f}s b{kart.boosts_left}{boost}')
