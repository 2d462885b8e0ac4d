"""``DEMO_SCENARIO=race make demo``: a race of N karts natively, from the same plan.

Starts ``pylon_components.mission_plan`` of the race (the launch file's ``vehicles:=N
scenario:=race`` starts the same): the simulator serving every kart, ``sim_manager`` and
``race_view`` (the organisers' view: the course and every kart from its ground truth) and
the live view (``pylon_viewer``, ``foxglove/race_layout.json``) in the management domain
``DEMO_DOMAIN_BASE`` (default 0), and kart k's bridge (the competition's sensor names,
``/clock``, its ground truth only into the management domain), ``kart_interface`` and
reference stack (its localizer on the kart's own grid slot) in domain base + k.
``DEMO_VEHICLES`` (1, 2 or 4, as the competition's simulator takes; default: every kart
of the scenario, 4 for ``race``) keeps the first N karts (``pylon_components.race_scenario``;
fewer than the scenario's race in the mode of that many: one kart 6 laps in 600 s, two 6
in 420 s). ``DEMO_RACE_LAPS`` and ``DEMO_RACE_TIME_LIMIT`` (s of game time) shorten it.

Then it plays the competition's tools (``AICHALLENGE`` section 4 behaviour):

- per kart, the **orchestrator** (``kart_demo.KartPilot`` in the kart's domain): waits for
  its ``/awsim/state`` to be Ready or Start (default profile, as that tool subscribes),
  calls ``/set_initial_pose`` when the localizer serves it, then publishes ``true`` on
  ``/awsim/control_mode_request_topic`` (again every 2 s while the kart is not AUTONOMOUS);
- in the management domain, with ``DEMO_START_MODE=sync``, the **state manager**: waits for
  ``/admin/awsim/state`` Ready (Reliable, Transient Local, depth 1) and sends
  ``/admin/awsim/start`` ``true`` once. In ``count`` (the default) the management starts by
  itself once every kart is Ready and AUTONOMOUS.

Every second a status line: the management state and, per kart, its control mode, laps,
time into the lap, section and boosts left (the status mirrored in the management domain).
The race ends with the management's FinishAll (every kart at the lap target) or Finish
(the session's time ran out); the referee, the race's judge, writes its files and exits, the
management exits too (as the competition's state manager stops the simulator); the demo
ends once both exited and the final ranking arrived (``END_GRACE_SEC`` after the final
state at most); ``DEMO_SECONDS`` stops it earlier. Then it prints the result (``demo result (...):
{json}``): the judge's ``result-summary.json`` (``judge``; its ``d<N>-result-details.json``
and the ranking, ``results.json``, are beside it in the log directory), the last ranking on
``/admin/awsim/ranking`` (``ranking_topic``), the standings from the mirrored statuses
(``standings``: the judge's place, laps, each lap's time, the best,
``pylon_kart.race_view.Standings``) and each kart's orchestration (``karts``: mode, wall s
to MANUAL and to AUTONOMOUS); then one line a kart in the judge's order. Exit status 0
unless a process died, the management never said anything, or a kart never drove
AUTONOMOUS.
"""

from __future__ import annotations

from dataclasses import replace
import json
import os
from pathlib import Path
import signal
import sys
import time

from pylon_common import mission, topics
from pylon_kart.race_view import Standings
from pylon_mission.judge import SUMMARY_FILE

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kart_demo  # noqa: E402
import mission_demo  # noqa: E402
import pylon_components as pc  # noqa: E402

LAYOUT = 'foxglove/race_layout.json'

ENGAGE_STATES = (mission.VEHICLE_READY, mission.VEHICLE_START)
"""The vehicle states the competition's orchestrator waits for (its default list)."""
START_MODES = ('count', 'sync')
ENDING = ('sim_manager', 'referee')
"""The processes that end with the race (``exit_on_finish``): the referee once it wrote the
judge's files, the management ``exit_delay_sec`` (2 s) after its final state."""
END_GRACE_SEC = 8.0
"""s (wall) the demo waits after the final state for ``ENDING`` to exit."""
STATUS_PERIOD_SEC = 1.0


def plan(vehicles: int, overlays=(), scenario: str = pc.RACE_SCENARIO, ports=None,
         domain_base: int = mission.DEFAULT_DOMAIN_BASE, log_dir: Path | None = None,
         record: str = '', sim_rate: float = 1.0, use_sim_time: bool | None = None,
         laps: int | None = None, time_limit_sec: float | None = None,
         start_mode: str = 'count') -> list:
    """Return the race demo's processes: the race's mission plan with the live view.

    ``ports``: the first kart's state, command and admin ports, and optionally the
    management port. The judge (the referee) writes the ranking to ``results.json`` in
    ``log_dir`` and its result files beside it. ``$DEMO_VIEWER_PORT`` sets the live view's
    port.
    """
    extra = {} if ports is None or len(ports) < 4 else {'management_port': ports[3]}
    planned = pc.mission_plan(vehicles, scenario=scenario, overlays=overlays,
                              domain_base=domain_base,
                              ports=None if ports is None else ports[:3],
                              start_mode=start_mode, exit_on_finish=True,
                              results_path=str(log_dir / mission_demo.RESULTS)
                              if log_dir else '',
                              record_output=record, sim_rate=sim_rate,
                              use_sim_time=use_sim_time, race_laps=laps,
                              race_time_limit_sec=time_limit_sec, viewers=('viewer',),
                              **extra)
    port = os.environ.get('DEMO_VIEWER_PORT')
    return [replace(p, parameters=(*p.parameters, ('port', int(port))))
            if port and p.component == 'viewer' else p for p in planned]


class RaceWatcher(mission_demo.Watcher):
    """The demo's node in the management domain: states, ranking and statuses in; start out.

    With ``sync`` it is the competition's state manager: once ``/admin/awsim/state`` says
    Ready it publishes ``/admin/awsim/start`` ``true``, once.
    """

    def __init__(self, domain: int, vehicles: int, sync: bool) -> None:
        """Subscribe to every kart's mirrored status; publish the start in sync mode."""
        from std_msgs.msg import Bool, Float32MultiArray, String
        super().__init__(domain)
        self.standings = Standings(vehicles)
        self.sync, self.start_sent, self.Bool = sync, None, Bool
        self.end = ''              # the first final state: the race's end (then Terminate)
        self.subs.append(self.node.create_subscription(
            String, topics.name('admin/state'), self._on_end,
            topics.qos('admin/state', reader=True)))
        self.subs += [self.node.create_subscription(
            Float32MultiArray, topics.name('admin/vehicle_status', id=str(k)),
            lambda msg, k=k: self.standings.update(k, msg.data),
            topics.qos('admin/vehicle_status', reader=True)) for k in range(1, vehicles + 1)]
        self.start_pub = self.node.create_publisher(Bool, topics.name('admin/start'),
                                                    topics.qos('admin/start'))

    def _on_end(self, msg) -> None:
        if not self.end and msg.data in mission.FINAL_STATES:
            self.end = msg.data

    def spin_in_thread(self) -> None:
        """Process callbacks in a thread of its own from now on, until ``close``."""
        self.thread = kart_demo.spin_in_thread(self.executor, 'race_watcher')

    def close(self) -> None:
        """Stop the spinning thread, destroy the node and its context."""
        self.executor.shutdown()
        super().close()
        self.thread.join(timeout=2.0)

    def start_if_ready(self) -> None:
        """Send the start once, in sync mode, when the management is Ready and listens."""
        if self.sync and self.start_sent is None and self.state == mission.READY and \
                self.start_pub.get_subscription_count() > 0:
            self.start_pub.publish(self.Bool(data=True))
            self.start_sent = time.monotonic()


def status_line(watcher: RaceWatcher, pilots: list) -> str:
    """Return one line: the management state and every kart's mode, laps, lap time, section."""
    parts = [f'race {watcher.state or "waiting":<10}']
    for k, pilot in enumerate(pilots, start=1):
        kart = watcher.standings.karts[k]
        parts.append(f'#{k} {pilot.mode_name():<10} {pilot.state or "-":<8} lap {kart.laps} '
                     f'{kart.lap_time:5.1f}s s{kart.section} b{kart.boosts_left}'
                     + (' BOOST' if kart.boosting else ''))
    return ' | '.join(parts)


def result(watcher: RaceWatcher, pilots: list, log_dir: Path, processes) -> dict:
    """Return the demo's result: the judge's file, the ranking topic, standings, karts."""
    judge = None
    try:
        judge = json.loads((log_dir / SUMMARY_FILE).read_text(encoding='utf-8'))
    except (OSError, ValueError):
        pass

    def rounded(value):
        return None if value is None else round(value, 2)
    return {'end': watcher.end or None, 'judge': judge,
            'ranking_topic': watcher.ranking or None,
            'standings': watcher.standings.table(),
            'karts': [{'vehicle': k, 'mode': p.mode_name(), 'state': p.state,
                       'ready_s': rounded(p.ready_s), 'autonomous_s': rounded(p.autonomous_s),
                       'requests': p.requests} for k, p in enumerate(pilots, start=1)],
            'processes_exited': processes.dead(), 'logs': str(log_dir)}


def run(vehicles: int, seconds: float | None, overlays: list[str], scenario: str, ports,
        domain_base: int, log_dir: Path, processes, record: str = '', sim_rate: float = 1.0,
        use_sim_time: bool | None = None, laps: int | None = None,
        time_limit_sec: float | None = None, start_mode: str = 'count') -> int:
    """Start the race, orchestrate it, watch it to its end; print the result; return status.

    ``processes`` is a ``native_demo.Processes`` (start, dead, stop).
    """
    if start_mode not in START_MODES:
        raise ValueError(f'DEMO_START_MODE must be one of {", ".join(START_MODES)}, '
                         f'not {start_mode!r}')
    planned = plan(vehicles, overlays, scenario, ports, domain_base, log_dir, record, sim_rate,
                   use_sim_time, laps, time_limit_sec, start_mode)
    domains = [mission.vehicle_domain(domain_base, k) for k in range(1, vehicles + 1)]
    print(f'demo: logs in {log_dir}; a race of {vehicles} kart(s), start mode {start_mode}; '
          f'management domain {domain_base}, karts in {", ".join(map(str, domains))}',
          flush=True)
    mission_demo.start(planned, processes)
    viewer = next((p for p in planned if p.component == 'viewer'), None)
    if viewer is not None:
        port = dict(viewer.parameters).get('port')
        print(f'demo: live view on {viewer_url(port)} in domain {domain_base} (Foxglove '
              f'or Lichtblick: Open connection → Foxglove WebSocket; layout: import '
              f'{LAYOUT})', flush=True)
    watcher = RaceWatcher(domain_base, vehicles, start_mode == 'sync')
    pilots = [kart_demo.KartPilot(domain, f'pylon_race_orchestrator_{k}', ENGAGE_STATES,
                                  estimate=False)
              for k, domain in enumerate(domains, start=1)]
    for node in (watcher, *pilots):
        node.spin_in_thread()
    try:
        status, ended = watch(watcher, pilots, processes, seconds, log_dir)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        outcome = result(watcher, pilots, log_dir, processes)
        for node in (watcher, *pilots):
            node.close()
        processes.stop()
    if status == 0 and (not watcher.state or any(p.autonomous_s is None for p in pilots)):
        status = 1            # the management never said anything, or a kart never drove
    print_result(outcome, ended, watcher.end or watcher.state, log_dir)
    files = [dict(p.parameters)['output'] for p in planned if p.component == 'record']
    if files:
        print(f'demo: recorded {", ".join(files)}', flush=True)
    return status


def print_result(outcome: dict, ended: bool, state: str, log_dir: Path) -> None:
    """Print the result as JSON, then one kart a line (the judge's ranking when it wrote one)."""
    print(f'\ndemo result ({"race ended" if ended else "stopped before the end"}'
          f', {state or "no state"}): {json.dumps(outcome)}', flush=True)
    laps = {row['vehicle']: row['lap_times_sec'] for row in outcome['standings']}
    rows = (outcome['judge'] or {}).get('ranking') or outcome['standings']
    for row in rows:
        laps_text = ', '.join(f'{t:.2f}' for t in laps.get(row['vehicle'], ())) or '-'
        print(f"demo: P{row['rank'] or '-'} kart {row['vehicle']}: {row['laps']} lap(s) "
              f"(lap times s: {laps_text}; best {row['best_lap_sec']})", flush=True)
    if outcome['judge'] is not None:
        print(f"demo: the judge's files: {log_dir / SUMMARY_FILE} and "
              f"d<N>-result-details.json beside it", flush=True)


def watch(watcher: RaceWatcher, pilots: list, processes, seconds: float | None,
          log_dir: Path) -> tuple[int, bool]:
    """Orchestrate and print until the race ended, ``seconds`` passed or Ctrl-C.

    Return (status, whether the race ended): status 1 when a process died on the way.
    """
    stopping: list[bool] = []
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    started = last = time.monotonic()
    ended_at = None
    while not stopping:
        now = time.monotonic()
        if seconds is not None and now - started >= seconds:
            break
        if watcher.end and ended_at is None:
            ended_at = now
        dead = processes.dead()
        # ended: once the judge and the management exited and the final ranking arrived
        if ended_at is not None and (set(ENDING) <= set(dead) and watcher.ranking.get('end')
                                     or now - ended_at >= END_GRACE_SEC):
            break
        died = [name for name in dead if ended_at is None or name not in ENDING]
        if died:
            print(f'\ndemo: {", ".join(died)} exited; see {log_dir}', flush=True)
            return 1, ended_at is not None
        for pilot in pilots:
            pilot.engage()
        watcher.start_if_ready()
        time.sleep(0.1)
        if time.monotonic() - last >= STATUS_PERIOD_SEC:
            last = time.monotonic()
            print(status_line(watcher, pilots), flush=True)
    return 0, ended_at is not None


def viewer_url(port) -> str:
    """Return the live view's address (its port, or the viewer's default)."""
    from pylon_tools import viewer
    return viewer.url(viewer.DEFAULT_ADDRESS, int(port) if port else viewer.DEFAULT_PORT)


def options_from_env() -> dict:
    """Return the race options of the environment: laps, time limit, start mode."""
    laps = os.environ.get('DEMO_RACE_LAPS', '').strip()
    limit = os.environ.get('DEMO_RACE_TIME_LIMIT', '').strip()
    return {'laps': int(laps) if laps else None,
            'time_limit_sec': float(limit) if limit else None,
            'start_mode': os.environ.get('DEMO_START_MODE', '').strip() or 'count'}
