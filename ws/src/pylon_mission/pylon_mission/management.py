"""The management of a mission without ROS: the simulator's status in; states, reports out.

``Management.step(status, ranking, wall)`` takes the latest reply of the simulator's
management port (``pylon_protocol.management``: the phase, UT, the task and every vehicle)
and the referee's latest ranking, and returns a ``Report``: the management state
(``pylon_common.mission.ADMIN_STATES``), each vehicle's state and status array, the
mission description the referee reads, and the requests to send to the simulator.
``start()`` and ``reset()`` answer the management topics. The rules:

- **WaitStart** until the simulator answered and every vehicle is Ready (a controller holds
  its lease while the mission is held); then **Ready**. ``start()`` is refused before
  Ready (with the vehicles that are not), and after the start (reset first).
- **Start** while the simulator runs the mission. It ends when every scored vehicle
  completed its task (the referee says so): **FinishAll**; or when the task's time limit
  passes: **FinishAll** if they all completed by then, else **Finish**. Either way the
  simulator is asked to ``finish`` (commands refused again, nothing keeps acting).
- ``reset()`` asks the simulator to reset (every vessel back, new sessions, no lease) and
  forgets the end: WaitStart again. A UT that goes backwards (a reset from elsewhere) does
  the same.
- **Terminate** when the simulator stops answering for ``sim_timeout_sec`` after it had
  answered, when ``autostart`` waited ``ready_timeout_sec`` for the vehicles in vain, or
  when the node shuts down (``terminate()``). It is final.
- ``autostart``: once Ready, ``start`` is requested once (not again after a reset).

Times: ``wall`` is the node's monotonic clock (silence of the simulator, the time scale);
mission time (elapsed, the limit) is game time from the simulator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pylon_common import mission

TIME_SCALE_WINDOW_SEC = 1.0


@dataclass
class Report:
    """What one step says: states, status arrays, mission description, requests, log lines."""

    state: str
    vehicle_states: list[str] = field(default_factory=list)
    status_arrays: list[list[float]] = field(default_factory=list)
    mission: dict = field(default_factory=dict)
    requests: list[dict] = field(default_factory=list)
    log: list[str] = field(default_factory=list)


class Management:
    """The management state machine of one mission."""

    def __init__(self, *, autostart: bool = False, sim_timeout_sec: float = 3.0,
                 ready_timeout_sec: float = 120.0) -> None:
        """Start waiting for the simulator."""
        self.autostart = autostart
        self.sim_timeout_sec = sim_timeout_sec
        self.ready_timeout_sec = ready_timeout_sec
        self.state = mission.WAIT_START
        self.ended: str | None = None         # FINISH or FINISH_ALL once over, until reset
        self.autostarted = False
        self.first_heard: float | None = None
        self.heard: float | None = None
        self.last_ut: float | None = None
        self.samples: list[tuple[float, float]] = []    # (wall, ut) of the last second
        self.status: dict | None = None
        self._pending: list[dict] = []
        self._log: list[str] = []

    # -- requests from the management topics ----------------------------------------------------
    def start(self) -> bool:
        """Ask for the start; return whether it goes to the simulator (else logged why)."""
        if self.state == mission.READY:
            self._pending.append({'cmd': 'start'})
            return True
        if self.state == mission.WAIT_START:
            waiting = [str(v['vehicle']) for v in (self.status or {}).get('vehicles', ())
                       if not v['lease_owned']]
            why = ('the simulator has not answered yet' if self.status is None else
                   f'vehicle(s) {", ".join(waiting)} not Ready')
        else:
            why = f'the mission is {self.state} (reset it first)'
        self._log.append(f'start refused: {why}')
        return False

    def reset(self) -> None:
        """Ask the simulator to reset; forget how the last run ended."""
        if self.state == mission.TERMINATE:
            self._log.append('reset refused: the management terminated')
            return
        self._pending.append({'cmd': 'reset'})
        self.ended = None

    def take_log(self) -> list[str]:
        """Return the lines logged since the last step (why a request was refused)."""
        lines, self._log = self._log, []
        return lines

    def terminate(self) -> Report:
        """Say Terminate (final): the node shuts down."""
        self.state = mission.TERMINATE
        return Report(self.state, log=['terminate'])

    # -- one step ---------------------------------------------------------------------------
    def step(self, status: dict | None, ranking: dict | None, wall: float) -> Report:
        """Take the simulator's latest status (None: no new reply) and the ranking."""
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
        ranking = _current(ranking, self.status)
        completed = _completed(ranking)
        report.state = self.state = self._next_state(completed, wall, report)
        report.vehicle_states = [self._vehicle_state(v, completed)
                                 for v in self.status['vehicles']]
        report.status_arrays = [self._status_array(v, ranking)
                                for v in self.status['vehicles']]
        report.mission = self._description(report.vehicle_states)
        return report

    def _heard(self, status: dict, wall: float) -> None:
        if self.last_ut is not None and status['ut'] < self.last_ut - 1e-6:
            self.ended = None                 # UT went back: a reset (ours or anyone's)
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
            task = status.get('task')
            everyone = bool(completed) and all(completed.values())
            late = task is not None and status['elapsed'] >= task['time_limit_sec']
            if everyone or late:
                self.ended = mission.FINISH_ALL if everyone else mission.FINISH
                report.requests.append({'cmd': 'finish'})
                report.log.append(f'{self.ended}: ' + ('every vehicle completed its task'
                                                       if everyone else 'time is up'))
                return self.ended
            return mission.START
        if self.ended is not None:
            return self.ended
        ready = all(v['lease_owned'] for v in status['vehicles'])
        if not ready:
            if self.autostart and not self.autostarted and \
                    wall - self.first_heard >= self.ready_timeout_sec:
                waiting = [str(v['vehicle']) for v in status['vehicles']
                           if not v['lease_owned']]
                report.log.append(f'vehicle(s) {", ".join(waiting)} not Ready after '
                                  f'{self.ready_timeout_sec:g} s: terminate')
                return mission.TERMINATE
            return mission.WAIT_START
        if self.autostart and not self.autostarted:
            self.autostarted = True
            report.requests.append({'cmd': 'start'})
            report.log.append('every vehicle is Ready: autostart')
        return mission.READY

    def _vehicle_state(self, vehicle: dict, completed: dict[int, bool]) -> str:
        if self.state in mission.FINAL_STATES or completed.get(vehicle['vehicle']):
            return mission.VEHICLE_FINISH
        if self.status['phase'] == 'running':
            return mission.VEHICLE_START
        return mission.VEHICLE_READY if vehicle['lease_owned'] else mission.SPAWNED

    def _status_array(self, vehicle: dict, ranking: dict | None) -> list[float]:
        status = self.status
        task = status.get('task')
        limit = task['time_limit_sec'] if task is not None else None
        scored = _ranked(ranking).get(vehicle['vehicle'], {})
        values = {
            'time_left_sec': mission.NO_LIMIT if limit is None else
            max(0.0, limit - status['elapsed']),
            'elapsed_sec': status['elapsed'],
            'time_scale': self.time_scale(),
            'task_progress': float(scored.get('progress', 0.0)),
            'score': float(scored.get('score', 0.0)),
            'propellant_left_kg': vehicle['propellant_kg'],
            'propellant_used_kg': vehicle['propellant_used_kg'],
            'completed': 1.0 if scored.get('completed') else 0.0,
        }
        return [float(values[name]) for name, _ in mission.STATUS_FIELDS]

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
            'task': status.get('task'),
            'vehicles': [{key: v[key] for key in ('vehicle', 'key', 'vessel_id', 'name',
                                                  'lease_owned', 'propellant_kg',
                                                  'propellant_used_kg')}
                         | {'state': state} for v, state in zip(status['vehicles'], states)],
        }


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
