"""The management of a mission without ROS: the simulator's status in; states, reports out.

``Management.step(status, ranking, wall, sessions)`` takes the latest reply of the
simulator's management port (``pylon_protocol.management``: the phase, UT, the task and
every vehicle), the referee's latest ranking and the runtime session each vehicle's bridge
says is ACTIVE, and returns a ``Report``: the management state
(``pylon_common.mission.ADMIN_STATES``), each vehicle's state and status array, the
mission description the referee reads, and the requests to send to the simulator.
``start()`` and ``reset()`` answer the management topics. The rules:

- **SelectMode** until the simulator answered (no mission loaded yet); then
  **PlayStart** until every vehicle is Ready; then **Ready**. A vehicle is Spawned (its
  vessel exists), Grounded (settled: the simulator's ``settled``, for a vessel in orbit
  its physics loaded) and Ready (Grounded, and its bridge reports ACTIVE the runtime
  session the simulator has now: a controller can take control). Whether a controller
  holds the lease does not matter for Ready.
- ``start()`` is accepted in Ready only: **WaitStart**, a countdown of ``countdown_sec``
  of game time; then ``start`` goes to the simulator, and **Start** once it runs. A start
  in any other state is refused, logged and counted (``refused``); nothing changes.
- ``start_mode``: ``sync`` waits for ``start()``; ``count`` starts by itself once every
  vehicle is Ready and either every vehicle's stack took control (its lease is owned) or
  ``control_timeout_sec`` of game time passed since they all were Ready (then without
  the ones that did not); once per run. If the vehicles are not all Ready within
  ``ready_timeout_sec`` (wall) of the run's beginning (the simulator's first answer, or a
  reset), count gives up: Terminate.
- While it runs: **LapComplete** once a first scored vehicle completed its task while
  others have not (the mission goes on); **FinishAll** when every scored vehicle
  completed; **Finish** when the task's time limit passes first (FinishAll if they all
  completed by then). At Finish or FinishAll the simulator is asked to ``finish``
  (commands refused again, nothing keeps acting).
- **A race** (the status carries ``race``: the simulator runs it, ``pylon_track.race``):
  every vehicle is scored, and the simulator's race is the authority: a vehicle completed
  when its ``race`` says ``finished`` (the lap target), FinishAll when every kart has,
  Finish when the race is over without that (its session time ran out). The ranking from
  the referee is not needed for it. The status array's race fields come from each
  vehicle's ``race`` (``mission.STATUS_FIELDS``' fourth column), its rank from
  ``judge.rank`` over every kart's record. ``command(k, data)`` takes vehicle k's
  ``/awsim/cmd``: index 0 is its boost command, forwarded as the simulator's ``boost``
  request when it changed (an unchanged value cannot make the rising edge that fires a
  boost); an empty array, a value that is not finite, or a mission without a race is
  dropped and counted (``commands``); nothing is sent. ``boost_answered`` counts what
  the simulator made of each request (fired, or refused by reason).
- ``reset()`` asks the simulator to reset (every vessel back, new sessions, no lease) and
  forgets the run (its end, the countdown, count's start): PlayStart again until every
  vehicle is Ready. A UT that goes backwards (a reset from elsewhere) does the same.
- **Terminate** when the simulator stops answering for ``sim_timeout_sec`` after it had
  answered, when count gave up, or when the node shuts down (``terminate()``). It is final.

Times: ``wall`` is the node's monotonic clock (silence of the simulator, the time scale,
``ready_timeout_sec``); mission time (the countdown, the control timeout, elapsed, the
limit) is game time from the simulator.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
import math

from pylon_common import mission

from pylon_mission import judge

TIME_SCALE_WINDOW_SEC = 1.0
SYNC = 'sync'
COUNT = 'count'
START_MODES = (SYNC, COUNT)

Session = tuple[str, int, str]
"""A runtime session: (instance, generation, epoch)."""

RACE_OVER = 'over'
"""The race's phase once it is over (``pylon_track.race.OVER``, as the simulator reports it)."""
COMMAND_COUNTS = ('forwarded', 'unchanged', 'empty', 'not_finite', 'no_race')
"""What became of the ``/awsim/cmd`` messages (``Management.commands``): forwarded to the
simulator, not sent because the value did not change, or dropped: an empty array, a value
that is not a finite number, a mission without a race (or no answer of the simulator yet)."""
DROPPED = {'empty': 'an empty array', 'not_finite': 'index 0 is not a finite number',
           'no_race': 'the mission has no race'}


@dataclass
class Report:
    """What one step says: states, status arrays, mission description, requests, log lines."""

    state: str
    vehicle_states: list[str] = field(default_factory=list)
    status_arrays: list[list[float]] = field(default_factory=list)
    mission: dict = field(default_factory=dict)
    requests: list[dict] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    respawned: bool = False      # UT went back (a reset): every vehicle from Spawned
    collided: list[bool] = field(default_factory=list)   # a collision began since the last


class Management:
    """The management state machine of one mission."""

    def __init__(self, *, start_mode: str = SYNC, countdown_sec: float = 3.0,
                 control_timeout_sec: float = 30.0, sim_timeout_sec: float = 3.0,
                 ready_timeout_sec: float = 120.0) -> None:
        """Start waiting for the simulator (SelectMode)."""
        if start_mode not in START_MODES:
            raise ValueError(f'start_mode {start_mode!r} is not one of {", ".join(START_MODES)}')
        self.start_mode = start_mode
        self.countdown_sec = countdown_sec
        self.control_timeout_sec = control_timeout_sec
        self.sim_timeout_sec = sim_timeout_sec
        self.ready_timeout_sec = ready_timeout_sec
        self.state = mission.SELECT_MODE
        self.refused = 0                      # start requests refused, ever
        self.commands: Counter = Counter(dict.fromkeys(COMMAND_COUNTS, 0))
        self.boosts: Counter = Counter()      # what the simulator made of them, by outcome
        self.first_heard: float | None = None
        self.heard: float | None = None
        self.last_ut: float | None = None
        self.samples: list[tuple[float, float]] = []    # (wall, ut) of the last second
        self.status: dict | None = None
        self.ready: list[bool] = []           # each vehicle Ready at the last step
        self.respawned = False                # a reset since the last report
        self._pending: list[dict] = []
        self._log: list[str] = []
        self._forget_run()

    def _forget_run(self) -> None:
        """Forget what belongs to one run: its end, countdown, count's start."""
        self.ended: str | None = None         # FINISH or FINISH_ALL once over, until reset
        self.countdown_from: float | None = None   # UT the start was accepted at
        self.start_sent = False
        self.counted = False                  # count mode started this run
        self.all_ready_ut: float | None = None     # UT every vehicle was Ready since
        self.run_since: float | None = None        # wall time this run began (ready timeout)
        self.boost_command: dict[int, float] = {}  # the value last forwarded, per vehicle
        self.collisions: dict[int, int] = {}       # each kart's collisions at the last step

    # -- requests from the management topics ----------------------------------------------------
    def start(self) -> bool:
        """Ask for the start; return whether it was accepted (else logged why, counted)."""
        if self.state == mission.READY:
            self._begin_countdown('start requested')
            return True
        if self.state == mission.SELECT_MODE:
            why = 'the simulator has not answered yet'
        elif self.state == mission.PLAY_START:
            waiting = [str(k) for k, ready in enumerate(self.ready, start=1) if not ready]
            why = f'vehicle(s) {", ".join(waiting)} not Ready'
        elif self.state == mission.WAIT_START:
            why = 'the countdown to the start runs already'
        else:
            why = f'the mission is {self.state} (reset it first)'
        self.refused += 1
        self._log.append(f'start refused ({self.refused} so far): {why}')
        return False

    def _begin_countdown(self, why: str) -> None:
        self.countdown_from = self.status['ut']
        self.state = mission.WAIT_START
        self._log.append(f'{why}: WaitStart, the start in {self.countdown_sec:g} s of game '
                         'time')

    def reset(self) -> None:
        """Ask the simulator to reset; forget the last run."""
        if self.state == mission.TERMINATE:
            self._log.append('reset refused: the management terminated')
            return
        self._pending.append({'cmd': 'reset'})
        self._forget_run()                    # (respawned: once its UT goes back)
        if self.status is not None:
            self.state = mission.PLAY_START

    def command(self, vehicle: int, data: Sequence[float]) -> str:
        """Take vehicle ``vehicle``'s ``/awsim/cmd``; return why it was dropped ('' taken).

        Index 0 is the boost command: a new value is queued as the simulator's ``boost``
        request (sent at the next step); the same value as the last one forwarded is not
        sent (a reset forgets it). Dropped and counted, nothing sent: an empty array, an
        index 0 that is not a finite number, a mission without a race. Other indices are
        ignored.
        """
        if not data:
            reason = 'empty'
        elif not math.isfinite(data[0]):
            reason = 'not_finite'
        elif self.status is None or 'race' not in self.status:
            reason = 'no_race'
        else:
            value = float(data[0])
            if self.boost_command.get(vehicle) == value:
                self.commands['unchanged'] += 1
                return ''
            self.boost_command[vehicle] = value
            self.commands['forwarded'] += 1
            self._pending.append({'cmd': 'boost', 'vehicle': vehicle, 'value': value})
            return ''
        self.commands[reason] += 1
        return DROPPED[reason]

    def dropped(self) -> int:
        """Return how many ``/awsim/cmd`` messages were dropped (bad input, no race)."""
        return sum(self.commands[name] for name in DROPPED)

    def boost_answered(self, answer: dict) -> None:
        """Take the simulator's answer to a ``boost`` request: count it, log what it did."""
        outcome, vehicle = answer.get('outcome'), answer.get('vehicle')
        if outcome is None or outcome == 'ignored':       # no rising edge: nothing to say
            return
        self.boosts[outcome] += 1
        if outcome == 'fired':
            self._log.append(f'vehicle {vehicle} boost fired')
        else:
            self._log.append(f'vehicle {vehicle} boost refused: {outcome} '
                             f'({self.boosts_refused()} refused so far)')

    def boosts_refused(self) -> int:
        """Return how many boosts the simulator refused (none left, boosting, ...)."""
        return sum(n for outcome, n in self.boosts.items() if outcome != 'fired')

    def take_log(self) -> list[str]:
        """Return the lines logged since the last step (why a request was refused)."""
        lines, self._log = self._log, []
        return lines

    def terminate(self) -> Report:
        """Say Terminate (final): the node shuts down."""
        self.state = mission.TERMINATE
        return Report(self.state, log=['terminate'])

    # -- one step ---------------------------------------------------------------------------
    def step(self, status: dict | None, ranking: dict | None, wall: float,
             sessions: Sequence[Session | None] = ()) -> Report:
        """Take the simulator's latest status (None: no new reply), the ranking, the sessions.

        ``sessions[k - 1]``: the runtime session vehicle k's bridge reports ACTIVE (None:
        none, or no bridge).
        """
        if self.state == mission.TERMINATE:
            return Report(self.state)
        if status is not None:
            self._heard(status, wall)
        elif self.heard is not None and wall - self.heard >= self.sim_timeout_sec:
            self.state = mission.TERMINATE
            return Report(self.state, log=[f'the simulator has not answered for '
                                           f'{self.sim_timeout_sec:g} s: terminate'])
        report = Report(self.state, requests=self._pending, log=self._log)
        self._pending, self._log = [], []
        if self.status is None:
            return report
        vehicles = self.status['vehicles']
        sessions = list(sessions) + [None] * (len(vehicles) - len(sessions))
        if 'race' in self.status:             # the simulator's race is the authority
            ranking = None
            completed = {v['vehicle']: bool(v['race']['finished']) for v in vehicles}
            places = _race_places(vehicles)
        else:
            ranking = _current(ranking, self.status)
            completed = _completed(ranking)
            places = {k: int(e.get('rank') or 0) for k, e in _ranked(ranking).items()}
        self.ready = [_settled(v) and _linked(v, s) for v, s in zip(vehicles, sessions)]
        report.state = self.state = self._next_state(completed, wall, report)
        report.vehicle_states = [self._vehicle_state(v, s, completed)
                                 for v, s in zip(vehicles, sessions)]
        report.status_arrays = [self._status_array(v, ranking, places) for v in vehicles]
        report.collided = [self._collided(v) for v in vehicles]
        report.mission = self._description(report.vehicle_states)
        report.log += self._log
        self._log = []
        report.respawned, self.respawned = self.respawned, False
        return report

    def _heard(self, status: dict, wall: float) -> None:
        if self.last_ut is not None and status['ut'] < self.last_ut - 1e-6:
            self._forget_run()                # UT went back: a reset (ours or anyone's)
            self.respawned = True
            self.samples.clear()
        self.status, self.heard, self.last_ut = status, wall, status['ut']
        if self.first_heard is None:
            self.first_heard = wall
        self.samples.append((wall, status['ut']))
        while self.samples and wall - self.samples[0][0] > TIME_SCALE_WINDOW_SEC:
            self.samples.pop(0)

    def _next_state(self, completed: dict[int, bool], wall: float, report: Report) -> str:
        status = self.status
        if status['phase'] == 'running':
            return self._running(completed, report)
        if self.ended is not None:
            return self.ended
        if self.countdown_from is not None:
            if not self.start_sent and \
                    status['ut'] >= self.countdown_from + self.countdown_sec:
                self.start_sent = True
                report.requests.append({'cmd': 'start'})
            return mission.WAIT_START
        if self.run_since is None:
            self.run_since = wall
        if not all(self.ready):
            self.all_ready_ut = None
            if self.start_mode == COUNT and wall - self.run_since >= self.ready_timeout_sec:
                report.log.append(f'vehicle(s) {", ".join(self._not_ready())} not Ready after '
                                  f'{self.ready_timeout_sec:g} s: terminate')
                return mission.TERMINATE
            return mission.PLAY_START
        if self.all_ready_ut is None:
            self.all_ready_ut = status['ut']
        if self.start_mode == COUNT and not self.counted:
            return self._count(report)
        return mission.READY

    def _count(self, report: Report) -> str:
        """Count mode, every vehicle Ready: start once they took control, or at the timeout."""
        status = self.status
        idle = [str(v['vehicle']) for v in status['vehicles'] if not v['lease_owned']]
        waited = status['ut'] - self.all_ready_ut
        if idle and waited < self.control_timeout_sec:
            return mission.READY
        self.counted = True
        self._begin_countdown(
            'count: every vehicle Ready and in control' if not idle else
            f'count: vehicle(s) {", ".join(idle)} took no control within '
            f'{self.control_timeout_sec:g} s of game time: starting without')
        return self._next_state({}, 0.0, report)      # the countdown may be 0

    def _running(self, completed: dict[int, bool], report: Report) -> str:
        status = self.status
        task, race = status.get('task'), status.get('race')
        everyone = bool(completed) and all(completed.values())
        if race is not None:                  # over without every kart: time ran out
            late = race['phase'] == RACE_OVER
        else:
            late = task is not None and status['elapsed'] >= task['time_limit_sec']
        if everyone or late:
            self.ended = mission.FINISH_ALL if everyone else mission.FINISH
            report.requests.append({'cmd': 'finish'})
            report.log.append(f'{self.ended}: ' + ('every vehicle completed its task'
                                                   if everyone else 'time is up'))
            return self.ended
        return mission.LAP_COMPLETE if any(completed.values()) else mission.START

    def _not_ready(self) -> list[str]:
        return [str(k) for k, ready in enumerate(self.ready, start=1) if not ready]

    def _vehicle_state(self, vehicle: dict, session: Session | None,
                       completed: dict[int, bool]) -> str:
        if self.state in mission.FINAL_STATES or completed.get(vehicle['vehicle']):
            return mission.VEHICLE_FINISH
        if self.status['phase'] == 'running':
            return mission.VEHICLE_START
        if not _settled(vehicle):
            return mission.SPAWNED
        return mission.VEHICLE_READY if _linked(vehicle, session) else mission.GROUNDED

    def _status_array(self, vehicle: dict, ranking: dict | None,
                      places: dict[int, int]) -> list[float]:
        """Return the vehicle's status array (``mission.STATUS_FIELDS``: a race's or not)."""
        values = {'timeScale': self.time_scale(), 'rank': places.get(vehicle['vehicle'], 0),
                  'propellant_left_kg': vehicle['propellant_kg'],
                  'propellant_used_kg': vehicle['propellant_used_kg']}
        race = vehicle.get('race')
        values.update(race_values(race, self.status['race']) if race is not None else
                      task_values(vehicle, ranking, self.status))
        return [float(values[name]) for name in mission.STATUS_NAMES]

    def _collided(self, vehicle: dict) -> bool:
        """Tell whether a collision of the vehicle began since the last step (a race's)."""
        count = int((vehicle.get('race') or {}).get('collisions', 0))
        before = self.collisions.get(vehicle['vehicle'], 0)
        self.collisions[vehicle['vehicle']] = count
        return count > before

    def time_scale(self) -> float:
        """Return game seconds per wall second over the last second (0 before two samples)."""
        if len(self.samples) < 2 or self.samples[-1][0] <= self.samples[0][0]:
            return 0.0
        (w0, u0), (w1, u1) = self.samples[0], self.samples[-1]
        return (u1 - u0) / (w1 - w0)

    def _description(self, states: list[str]) -> dict:
        """Return what the mission topic says: the task, the vehicles, the clock."""
        status = self.status
        return {
            'state': self.state, 'phase': status['phase'], 'ut': status['ut'],
            'started_ut': status['started_ut'], 'elapsed': status['elapsed'],
            'start_mode': self.start_mode, 'countdown_from_ut': self.countdown_from,
            'task': status.get('task'),
            **({'race': status['race']} if 'race' in status else {}),
            'vehicles': [{key: v[key] for key in ('vehicle', 'key', 'vessel_id', 'name',
                                                  'lease_owned', 'propellant_kg',
                                                  'propellant_used_kg', 'race') if key in v}
                         | {'state': state} for v, state in zip(status['vehicles'], states)],
        }


def race_values(race: dict, whole: dict) -> dict:
    """Return a kart's values of the status array from its ``race`` (the simulator's).

    ``whole`` is the simulator's race (its rules and clock).
    """
    rules = whole['rules']
    ends, finish = race.get('lapEnds') or (), race.get('finishTime')
    penalties = race.get('penalties') or {}
    return {
        **{name: race[name] for name in mission.RACE_FIELDS},
        'elapsed_sec': whole['elapsed'],
        'task_progress': min(1.0, race['lapCount'] / rules['laps']),
        'score': rules['time_limit_sec'] - finish if finish is not None else 0.0,
        'completed': race['finished'],
        'penalty_count': penalties.get('count', 0),
        'penalty_active': bool(penalties.get('active')),
        'best_lap_sec': race.get('bestLap') or 0.0,
        'last_lap_end_sec': ends[-1] if ends else 0.0,
        'collision_count': race.get('collisions', 0),
    }


def task_values(vehicle: dict, ranking: dict | None, status: dict) -> dict:
    """Return a vehicle's values of the status array without a race (the rendezvous's)."""
    task = status.get('task')
    limit = task['time_limit_sec'] if task is not None else None
    scored = _ranked(ranking).get(vehicle['vehicle'], {})
    done = bool(scored.get('completed'))
    return {
        'sessionTime': mission.NO_LIMIT if limit is None else
        max(0.0, limit - status['elapsed']),
        'lapCount': 1.0 if done else 0.0,
        'thisLapTime': float(scored.get('completion_time_sec') or 0.0) if done else
        status['elapsed'],
        'section': 0.0, 'boostRemaining': 0.0, 'isBoosting': 0.0,
        'elapsed_sec': status['elapsed'],
        'task_progress': float(scored.get('progress', 0.0)),
        'score': float(scored.get('score', 0.0)),
        'completed': done,
        'penalty_count': 0.0, 'penalty_active': 0.0, 'best_lap_sec': 0.0,
        'last_lap_end_sec': 0.0, 'collision_count': 0.0,
    }


def _settled(vehicle: dict) -> bool:
    """Tell whether the simulator says the vehicle's vessel is settled (Grounded)."""
    return bool(vehicle.get('settled', vehicle.get('available')))


def _linked(vehicle: dict, session: Session | None) -> bool:
    """Tell whether the bridge's ACTIVE session is the one the simulator has now."""
    current = vehicle.get('session')
    return session is not None and current is not None and tuple(current) == tuple(session)


def _current(ranking: dict | None, status: dict) -> dict | None:
    """Return the ranking if it scores the run the simulator is in (None: an older one)."""
    if ranking is None or ranking.get('started_ut') != status['started_ut']:
        return None
    return ranking


def _ranked(ranking: dict | None) -> dict[int, dict]:
    """Return the ranking's entries by vehicle number."""
    return {entry['vehicle']: entry for entry in (ranking or {}).get('vehicles', ())}


def _race_places(vehicles: Sequence[dict]) -> dict[int, int]:
    """Return each kart's place in the judge's ranking of the simulator's race now."""
    ranked = judge.rank(judge.record(v) for v in vehicles)
    return {r.vehicle: place for place, r in enumerate(ranked, start=1)}


def _completed(ranking: dict | None) -> dict[int, bool]:
    """Return whether each scored vehicle of the ranking completed its task."""
    return {k: bool(entry.get('completed')) for k, entry in _ranked(ranking).items()
            if entry.get('scored')}
