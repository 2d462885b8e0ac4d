"""The race's judge without ROS: each kart's record in, a ranking and the result files out.

The simulator counts laps, sections, boosts, penalties and collisions (its race, reported
per vehicle on the management port); the judge ranks the karts and writes what the
competition's simulator writes when a race ends (Finish or FinishAll):

- ``d<N>-result-details.json`` for vehicle N: its laps, each lap's time and section times,
  its best lap, total time, collisions, penalties and boosts used;
- ``result-summary.json``: the ranking and the race's end.

Ranking (``rank``): more laps first; among equal laps, the earlier finish of the last
completed lap (the race time at which it crossed the line: who got there first); karts with
no completed lap by their vehicle number. Two karts on the same laps at the same time
share no place: the lower vehicle number goes first (documented tie rule).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
import json
import math
from pathlib import Path

SUMMARY_FILE = 'result-summary.json'


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
    collisions: tuple[dict, ...] = ()
    penalties: tuple[dict, ...] = ()
    boosts_used: int = 0
    finished: bool = False           # reached the lap target
    total_time: float | None = None  # race time at the end of its last completed lap

    @property
    def laps(self) -> int:
        """Return the laps completed."""
        return len(self.lap_times)

    @property
    def best_lap(self) -> float | None:
        """Return the fastest completed lap (None: no lap)."""
        return min(self.lap_times) if self.lap_times else None


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
        'penalties': list(record.penalties), 'penalty_count': len(record.penalties),
        'boosts_used': record.boosts_used,
    }


def summary(records: Sequence[KartRecord], end: str, lap_target: int,
            time_limit_sec: float) -> dict:
    """Return the summary file (JSON-ready): the race's end and the ranking."""
    return {
        'end': end, 'lap_target': lap_target, 'time_limit_sec': time_limit_sec,
        'ranking': [{'rank': position, 'vehicle': r.vehicle, 'name': r.name, 'laps': r.laps,
                     'total_time_sec': _round(r.total_time), 'best_lap_sec': _round(r.best_lap),
                     'finished': r.finished}
                    for position, r in enumerate(rank(records), start=1)],
    }


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
