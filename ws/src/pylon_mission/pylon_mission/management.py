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

from collections.abc import Sequence
from dataclasses import dataclass, field

from pylon_common import mission

TIME_SCALE_WINDOW_SEC = 1.0
SYNC = 'sync'
COUNT = 'count'
START_MODES = (SYNC, COUNT)

Session = tuple[str, int, str]
"""A runtime session: (instance, generation, epoch)."""


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
        ranking = _current(ranking, self.status)
        completed = _completed(ranking)
        self.ready = [_settled(v) and _linked(v, s) for v, s in zip(vehicles, sessions)]
        report.state = self.state = self._next_state(completed, wall, report)
        report.vehicle_states = [self._vehicle_state(v, s, completed)
                                 for v, s in zip(vehicles, sessions)]
        report.status_arrays = [self._status_array(v, ranking) for v in vehicles]
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
        task = status.get('task')
        everyone = bool(completed) and all(completed.values())
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

    def _status_array(self, vehicle: dict, ranking: dict | None) -> list[float]:
        status = self.status
        task = status.get('task')
        limit = task['time_limit_sec'] if task is not None else None
        scored = _ranked(ranking).get(vehicle['vehicle'], {})
        done = bool(scored.get('completed'))
        race = vehicle.get('race') or {}
        rendezvous = {
            'lapCount': 1.0 if done else 0.0,
            'thisLapTime': float(scored.get('completion_time_sec') or 0.0) if done else
            status['elapsed'],
            'section': 0.0, 'boostRemaining': 0.0, 'isBoosting': 0.0}
        values = {
            'sessionTime': mission.NO_LIMIT if limit is None else
            max(0.0, limit - status['elapsed']),
            **{name: race.get(name, rendezvous[name]) for name in mission.RACE_FIELDS},
            'timeScale': self.time_scale(),
            'elapsed_sec': status['elapsed'],
            'task_progress': float(scored.get('progress', 0.0)),
            'score': float(scored.get('score', 0.0)),
            'propellant_left_kg': vehicle['propellant_kg'],
            'propellant_used_kg': vehicle['propellant_used_kg'],
            'completed': 1.0 if done else 0.0,
        }
        return [float(values[name]) for name, _, _ in mission.STATUS_FIELDS]

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
            'vehicles': [{key: v[key] for key in ('vehicle', 'key', 'vessel_id', 'name',
                                                  'lease_owned', 'propellant_kg',
                                                  'propellant_used_kg')}
                         | {'state': state} for v, state in zip(status['vehicles'], states)],
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


def _completed(ranking: dict | None) -> dict[int, bool]:
    """Return whether each scored vehicle of the ranking completed its task."""
    return {k: bool(entry.get('completed')) for k, entry in _ranked(ranking).items()
            if entry.get('scored')}
