"""The referee without ROS: ground truth in, each vehicle's task scored, a ranking out.

The task is the scenario's (``task:``, carried by the management's mission description):
a rendezvous, in which every vehicle but the target (the *scored* vehicles) must come within
``radius_m`` of the target's centre of mass at a relative speed under
``relative_speed_mps`` and stay so for ``hold_sec`` without a break, within
``time_limit_sec`` of the start.

``Referee.mission(description)`` takes the management's description (the task, the
vehicles, the start in game time, the state); ``Referee.sample(vehicle, ut, relative
position, relative velocity)`` one ground-truth sample of a scored vehicle (the target's
position and velocity relative to it, from its own ``NearbyVessels``: one sample, one
instant), at game time ``ut``. Samples before the start, or after the vehicle completed,
change nothing. The last ``BACKLOG_SEC`` of game time of samples are kept, so that a start
the referee hears of late (the description comes on its own topic) is scored from its own
game time, not from when the news came: the new start replays them. A sample in the zone
starts or extends the hold; one outside it, or a missing target, breaks it. A vehicle
completes when its hold reaches ``hold_sec``; its time is the game time from the start to
that sample.

``ranking()``: every vehicle with its ``completed``, ``completion_time_sec``, ``progress``
(the hold so far over ``hold_sec``: 0 outside the zone, 1 once completed), ``score`` (the
time limit minus the completion time, in s to spare; 0 for a vehicle that did not
complete), distance and relative speed of its last sample, propellant used, and ``rank``:
completed vehicles first by time, then by propellant used; the others by progress, then
distance. A reset (a new start, or none) starts the scoring afresh.
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass
import math

BACKLOG_SEC = 10.0
"""Game s of samples kept for a start heard of late (``Referee.mission`` replays them)."""


@dataclass
class Score:
    """One scored vehicle's task so far."""

    vehicle: int
    hold_from: float | None = None       # game time the current hold began
    hold: float = 0.0                    # s held so far
    completed_at: float | None = None    # game time of completion
    distance: float | None = None        # m, last sample
    speed: float | None = None           # m/s, last sample


class Referee:
    """Scores the task of every vehicle of one mission."""

    def __init__(self) -> None:
        """Start with no mission."""
        self.description: dict = {}
        self.scores: dict[int, Score] = {}
        self.started_ut: float | None = None
        self.backlog: dict[int, deque] = defaultdict(deque)   # (ut, position, velocity)

    @property
    def task(self) -> dict | None:
        """Return the task (None: the scenario has none)."""
        return self.description.get('task')

    def scored(self) -> list[int]:
        """Return the vehicles that have a task: every vehicle but the target."""
        task = self.task
        if task is None:
            return []
        return [v['vehicle'] for v in self.description.get('vehicles', ())
                if v['key'] != task['target']]

    def target_vessel_id(self) -> str:
        """Return the target's vessel id ('' without a task)."""
        task = self.task
        return task.get('target_vessel_id', '') if task is not None else ''

    def mission(self, description: dict) -> None:
        """Take the management's mission description; a new start resets the scores."""
        self.description = description
        started = description.get('started_ut')
        if started != self.started_ut or set(self.scores) != set(self.scored()):
            self.started_ut = started
            self.scores = {k: Score(k) for k in self.scored()}
            for vehicle, samples in self.backlog.items():
                for sample in samples:
                    self._score(vehicle, *sample)

    def sample(self, vehicle: int, ut: float, position: tuple[float, float, float] | None,
               velocity: tuple[float, float, float] | None) -> bool:
        """Take one sample of a scored vehicle (None: the target is not in sight).

        Return whether it completed the vehicle's task.
        """
        samples = self.backlog[vehicle]
        samples.append((ut, position, velocity))
        while samples[0][0] < ut - BACKLOG_SEC:
            samples.popleft()
        return self._score(vehicle, ut, position, velocity)

    def _score(self, vehicle: int, ut: float, position: tuple[float, float, float] | None,
               velocity: tuple[float, float, float] | None) -> bool:
        """Score one sample (``sample`` without keeping it)."""
        score, task = self.scores.get(vehicle), self.task
        if score is None or task is None or self.started_ut is None or \
                ut < self.started_ut or score.completed_at is not None:
            return False
        if position is None or velocity is None:
            score.hold_from, score.hold, score.distance, score.speed = None, 0.0, None, None
            return False
        score.distance, score.speed = math.hypot(*position), math.hypot(*velocity)
        if score.distance > task['radius_m'] or score.speed >= task['relative_speed_mps']:
            score.hold_from, score.hold = None, 0.0
            return False
        if score.hold_from is None:
            score.hold_from = ut
        score.hold = ut - score.hold_from
        if score.hold >= task['hold_sec'] and ut - self.started_ut <= task['time_limit_sec']:
            score.completed_at = ut
            return True
        return False

    def ranking(self) -> dict:
        """Return the ranking (JSON-ready): the task, the state and every vehicle."""
        task = self.task
        used = {v['vehicle']: v.get('propellant_used_kg', 0.0)
                for v in self.description.get('vehicles', ())}
        entries = [self._entry(v, task, used) for v in self.description.get('vehicles', ())]
        scored = [e for e in entries if e['scored']]
        scored.sort(key=lambda e: (not e['completed'], e['completion_time_sec'] or 0.0,
                                   e['propellant_used_kg'] if e['completed'] else
                                   -e['progress'], e['distance_m'] if e['distance_m']
                                   is not None else math.inf))
        for rank, entry in enumerate(scored, start=1):
            entry['rank'] = rank
        return {'task': task, 'state': self.description.get('state', ''),
                'started_ut': self.started_ut, 'vehicles': entries,
                'all_completed': bool(scored) and all(e['completed'] for e in scored)}

    def _entry(self, vehicle: dict, task: dict | None, used: dict[int, float]) -> dict:
        k = vehicle['vehicle']
        score = self.scores.get(k)
        entry = {'vehicle': k, 'key': vehicle['key'], 'name': vehicle['name'],
                 'scored': score is not None, 'rank': 0, 'completed': False,
                 'completion_time_sec': None, 'progress': 0.0, 'score': 0.0,
                 'distance_m': None, 'relative_speed_mps': None, 'hold_sec': 0.0,
                 'propellant_used_kg': used.get(k, 0.0)}
        if score is None:
            return entry
        done = score.completed_at is not None
        entry.update(completed=done, distance_m=score.distance,
                     relative_speed_mps=score.speed, hold_sec=score.hold,
                     progress=1.0 if done else min(1.0, score.hold / task['hold_sec']))
        if done:
            elapsed = score.completed_at - self.started_ut
            entry.update(completion_time_sec=elapsed,
                         score=max(0.0, task['time_limit_sec'] - elapsed))
        return entry
