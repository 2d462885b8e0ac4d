"""The race's judge without ROS: each kart's record in, a ranking and the result files out.

The simulator counts laps, sections, boosts, penalties and collisions (its race, reported
per vehicle on the management port and carried by the management's mission description);
the judge ranks the karts and writes what the competition's simulator writes when a race
ends (Finish or FinishAll):

- ``d<N>-result-details.json`` for vehicle N: its rank, laps, each lap's time and section
  times, its best lap, total time, collisions, penalties, boosts used and the race's event
  counts (``details``);
- ``result-summary.json``: the race's end, the lap target, the time limit and the ranking
  (``summary``).

``record(vehicle)`` makes a kart's ``KartRecord`` from its entry of the mission description
(its ``race``: the simulator's, ``pylon_track.race``'s ``kart_status``): ``lapTimes``,
``sectionTimes``, ``lapEnds`` (the race time of each counted lap's end: the last one is
``total_time``), ``finished``, ``boostsUsed``, ``penalties.count`` (track-limit penalties),
``events`` and ``collisionLog`` (each collision the kart began: its race time ``at``, game
time ``ut``, the other party ``with``, approach ``speed`` and ``impulse``).

Ranking (``rank``): more laps first; among equal laps, the earlier end of the last
completed lap (the race time at which it crossed the line: who got there first); karts with
no completed lap by their vehicle number. Two karts on the same laps at the same time
share no place: the lower vehicle number goes first (documented tie rule).

``RaceJudge`` follows the mission description: ``ranking()`` is what the referee publishes
(JSON), ``due()`` says once per race end (Finish or FinishAll) that the files are to be
written; any other state in between (a reset, a new start) arms it again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
import json
import math
from pathlib import Path

from pylon_common import mission

SUMMARY_FILE = 'result-summary.json'
ENDS = (mission.FINISH, mission.FINISH_ALL)
"""The management states at which a race's results are written."""


def details_file(vehicle: int) -> str:
    """Return the name of vehicle ``vehicle``'s details file (``d<N>-result-details.json``)."""
    return f'd{vehicle}-result-details.json'


@dataclass(frozen=True)
class KartRecord:
    """One kart's race as the simulator counted it (times in s of race time)."""

    vehicle: int
    name: str
    lap_times: tuple[float, ...] = ()
    section_times: tuple[tuple[float, ...], ...] = ()   # per completed lap, in order
    collisions: tuple[dict, ...] = ()    # the simulator's collision log of the kart
    penalties: int = 0               # track-limit penalties (exits off the track)
    boosts_used: int = 0
    finished: bool = False           # reached the lap target
    total_time: float | None = None  # race time at the end of its last completed lap
    events: dict = field(default_factory=dict)    # the race's counts (invalid laps, ...)

    @property
    def laps(self) -> int:
        """Return the laps completed."""
        return len(self.lap_times)

    @property
    def best_lap(self) -> float | None:
        """Return the fastest completed lap (None: no lap)."""
        return min(self.lap_times) if self.lap_times else None


def is_race(description: dict) -> bool:
    """Tell whether a mission description is a race's (its task's kind)."""
    return (description.get('task') or {}).get('kind') == 'race'


def record(vehicle: dict) -> KartRecord:
    """Return the record of a vehicle of the mission description (or the management status).

    ``vehicle`` has ``vehicle``, ``name`` and ``race`` (the simulator's race of that kart).
    """
    race = vehicle['race']
    ends = race.get('lapEnds') or ()
    return KartRecord(
        vehicle['vehicle'], vehicle.get('name', ''),
        lap_times=tuple(float(t) for t in race.get('lapTimes', ())),
        section_times=tuple(tuple(float(t) for t in lap)
                            for lap in race.get('sectionTimes', ())),
        collisions=tuple(race.get('collisionLog') or ()),
        penalties=int((race.get('penalties') or {}).get('count', 0)),
        boosts_used=int(race.get('boostsUsed', 0)), finished=bool(race.get('finished')),
        total_time=float(ends[-1]) if ends else None, events=dict(race.get('events') or {}))


def rank(records: Iterable[KartRecord]) -> list[KartRecord]:
    """Return the records in ranking order (laps, then the time of the last lap's end)."""
    return sorted(records, key=lambda r: (-r.laps, r.total_time if r.laps and r.total_time
                                          is not None else math.inf,
                                          r.vehicle))


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def details(record: KartRecord, position: int) -> dict:
    """Return vehicle ``record``'s details file (JSON-ready)."""
    return {
        'vehicle': record.vehicle, 'name': record.name, 'rank': position,
        'laps': record.laps, 'finished': record.finished,
        'lap_times_sec': [_round(t) for t in record.lap_times],
        'section_times_sec': [[_round(t) for t in lap] for lap in record.section_times],
        'best_lap_sec': _round(record.best_lap), 'total_time_sec': _round(record.total_time),
        'collisions': list(record.collisions), 'collision_count': len(record.collisions),
        'penalty_count': record.penalties, 'boosts_used': record.boosts_used,
        'events': dict(record.events),
    }


def standings(records: Sequence[KartRecord]) -> list[dict]:
    """Return the ranking's entries, first place first (rank, vehicle, laps, times)."""
    return [{'rank': position, 'vehicle': r.vehicle, 'name': r.name, 'laps': r.laps,
             'total_time_sec': _round(r.total_time), 'best_lap_sec': _round(r.best_lap),
             'finished': r.finished}
            for position, r in enumerate(rank(records), start=1)]


def summary(records: Sequence[KartRecord], end: str, lap_target: int,
            time_limit_sec: float) -> dict:
    """Return the summary file (JSON-ready): the race's end and the ranking."""
    return {'end': end, 'lap_target': lap_target, 'time_limit_sec': time_limit_sec,
            'ranking': standings(records)}


def write(folder: Path, records: Sequence[KartRecord], end: str, lap_target: int,
          time_limit_sec: float) -> list[Path]:
    """Write every kart's details file and the summary into ``folder``; return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for position, record in enumerate(rank(records), start=1):
        path = folder / details_file(record.vehicle)
        path.write_text(json.dumps(details(record, position), indent=2) + '\n',
                        encoding='utf-8')
        paths.append(path)
    path = folder / SUMMARY_FILE
    path.write_text(json.dumps(summary(records, end, lap_target, time_limit_sec), indent=2)
                    + '\n', encoding='utf-8')
    return [*paths, path]


class RaceJudge:
    """The judge of a race over the management's mission description (module docstring)."""

    def __init__(self) -> None:
        """Start with no mission, armed."""
        self.description: dict = {}
        self.armed = True

    def mission(self, description: dict) -> None:
        """Take the management's mission description (a race's); a state not over arms."""
        self.description = description
        if description.get('state') not in ENDS:
            self.armed = True

    def records(self) -> list[KartRecord]:
        """Return every kart's record now (the vehicles that have a race)."""
        return [record(v) for v in self.description.get('vehicles', ()) if 'race' in v]

    @property
    def rules(self) -> dict:
        """Return the task (the race's rules: ``laps``, ``time_limit_sec``, ...)."""
        return self.description.get('task') or {}

    def ranking(self) -> dict:
        """Return the ranking (JSON-ready): the state, the race, every kart by place.

        ``vehicles`` is ``details`` of every kart, first place first, each with its
        ``key``, ``scored`` (every kart) and ``completed`` (the lap target reached), as
        the rendezvous's ranking says them.
        """
        keys = {v['vehicle']: v.get('key', '') for v in self.description.get('vehicles', ())}
        entries = [details(r, position) | {'key': keys.get(r.vehicle, ''), 'scored': True,
                                           'completed': r.finished}
                   for position, r in enumerate(rank(self.records()), start=1)]
        state = self.description.get('state', '')
        return {'kind': 'race', 'task': self.description.get('task'), 'state': state,
                'started_ut': self.description.get('started_ut'),
                'end': state if state in ENDS else None,
                'lap_target': self.rules.get('laps'),
                'time_limit_sec': self.rules.get('time_limit_sec'),
                'vehicles': entries,
                'all_completed': bool(entries) and all(e['finished'] for e in entries)}

    def due(self) -> str | None:
        """Return the race's end (Finish, FinishAll) once when the files are to be written."""
        state = self.description.get('state')
        if state in ENDS and self.armed and self.description.get('started_ut') is not None:
            self.armed = False
            return state
        return None

    def write(self, folder: Path, end: str) -> list[Path]:
        """Write the result files of the race now into ``folder``; return their paths."""
        return write(folder, self.records(), end, int(self.rules.get('laps', 0)),
                     float(self.rules.get('time_limit_sec', 0.0)))
