"""``DEMO_VEHICLES=N make demo``: a mission of N vehicles natively, from the same plan.

Starts ``pylon_components.mission_plan`` (the launch file's ``vehicles:=N`` starts the same):
the simulator serving every vehicle, ``sim_manager`` and ``referee`` in the management
domain ``DEMO_DOMAIN_BASE`` (default 0), and each vehicle's stack (bridge, estimator,
controller and, for a chaser, ``rendezvous_chaser``) in domain base + k. The management
starts the mission by itself (start mode ``count``: every vehicle Ready and its controller
holding the lease, then a 3 s countdown of game time); the referee scores it and,
when the mission ends (every chaser completed, or time is up), writes ``results.json``
into the log directory and stops: the demo then stops everything and prints the result.
With ``DEMO_SECONDS=S`` it stops after S seconds at the latest and prints the ranking so
far. Every second a status line shows the management state and, per vehicle, its state,
distance to the target, relative speed and hold (from the ranking, ground truth seen in
the management domain only). Exit status 0 unless a process died or nothing came up.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import signal
import sys
import time

from pylon_common import mission, topics

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pylon_components as pc  # noqa: E402

RESULTS = 'results.json'
STATUS_PERIOD_SEC = 1.0


def plan(vehicles: int, overlays=(), scenario: str = '', ports=None,
         domain_base: int = mission.DEFAULT_DOMAIN_BASE, log_dir: Path | None = None,
         record: str = '', sim_rate: float = 1.0, use_sim_time: bool | None = None) -> list:
    """Return the demo's processes: the mission plan in count mode, with an end.

    ``ports``: the first vehicle's state, command and admin ports, and optionally the
    management port. ``record`` (``DEMO_RECORD``): a recorder in every domain, each with a
    file of its own (``pylon_components.mission_record_path``). ``sim_rate`` (``DEMO_RATE``)
    and ``use_sim_time`` (``DEMO_USE_SIM_TIME``): game time (``pylon_components.plan``).
    """
    extra = {} if ports is None or len(ports) < 4 else {'management_port': ports[3]}
    return pc.mission_plan(vehicles, scenario=scenario, overlays=overlays,
                           domain_base=domain_base,
                           ports=None if ports is None else ports[:3], start_mode='count',
                           exit_on_finish=True,
                           results_path=str(log_dir / RESULTS) if log_dir else '',
                           record_output=record, sim_rate=sim_rate,
                           use_sim_time=use_sim_time, **extra)


class Watcher:
    """The demo's node in the management domain: state and ranking in."""

    def __init__(self, domain: int) -> None:
        """Create a context on ``domain`` and subscribe to the management topics."""
        import rclpy
        from rclpy.context import Context
        from std_msgs.msg import String
        self.rclpy, self.context = rclpy, Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node('pylon_mission_demo', context=self.context)
        from rclpy.executors import SingleThreadedExecutor
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.state = ''
        self.ranking: dict = {}
        self.started: float | None = None

        def on_state(msg):
            if msg.data == mission.START and self.started is None:
                self.started = time.monotonic()
            self.state = msg.data

        def on_ranking(msg):
            self.ranking = json.loads(msg.data)
        self.subs = [self.node.create_subscription(String, topics.name(key), callback,
                                                   topics.qos(key, reader=True))
                     for key, callback in (('admin/state', on_state),
                                           ('admin/ranking', on_ranking))]

    def spin(self, seconds: float) -> None:
        """Process callbacks for ``seconds``."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=max(0.0, end - time.monotonic()))

    def close(self) -> None:
        """Destroy the node and its context."""
        self.node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)


def status_line(watcher: Watcher) -> str:
    """Return one line: the management state and every scored vehicle's progress."""
    parts = [f'mission {watcher.state or "waiting":<9}']
    for entry in watcher.ranking.get('vehicles', ()):
        if not entry['scored']:
            continue
        distance = entry['distance_m']
        speed = entry['relative_speed_mps']
        where = (f'{distance:7.1f} m {speed:5.2f} m/s' if distance is not None
                 else '      -            ')
        done = 'done' if entry['completed'] else f"hold {entry['hold_sec']:4.1f} s"
        parts.append(f"{entry['name']}: {where} {done}")
    return ' | '.join(parts)


def run(vehicles: int, seconds: float | None, overlays: list[str], scenario: str, ports,
        domain_base: int, log_dir: Path, processes, record: str = '',
        sim_rate: float = 1.0, use_sim_time: bool | None = None) -> int:
    """Start the mission, watch it, stop it; print the referee's result; return the status.

    ``processes`` is a ``native_demo.Processes`` (start, dead, stop); ``record``,
    ``sim_rate``, ``use_sim_time``: see ``plan``.
    """
    planned = plan(vehicles, overlays, scenario, ports, domain_base, log_dir, record,
                   sim_rate, use_sim_time)
    domains = [str(mission.vehicle_domain(domain_base, k)) for k in range(1, vehicles + 1)]
    print(f'demo: logs in {log_dir}; management domain {domain_base}, vehicles in '
          f'{", ".join(domains)}', flush=True)
    start(planned, processes)
    watcher = Watcher(domain_base)
    stopping: list[bool] = []
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    started = last = time.monotonic()
    status, ended = 0, False
    try:
        while not stopping:
            if seconds is not None and time.monotonic() - started >= seconds:
                break
            dead = processes.dead()
            if 'referee' in dead and watcher.state in mission.FINAL_STATES:
                ended = True
                break
            if dead:
                print(f'\ndemo: {", ".join(dead)} exited; see {log_dir}', flush=True)
                status = 1
                break
            watcher.spin(0.2)
            if time.monotonic() - last >= STATUS_PERIOD_SEC:
                last = time.monotonic()
                print(status_line(watcher), flush=True)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        ranking = _result(log_dir, watcher)
        watcher.close()
        processes.stop()
    if status == 0 and not watcher.state:
        status = 1                              # the management never said anything
    print(f'\ndemo result ({"mission ended" if ended else "stopped before the end"}, '
          f'{watcher.state or "no state"}): {json.dumps(ranking)}', flush=True)
    files = [dict(p.parameters)['output'] for p in planned if p.component == 'record']
    if files:
        print(f'demo: recorded {", ".join(files)} (plot vehicle 1: ci/env.sh pylon_plot '
              f'{files[1]})', flush=True)
    return status


def start(planned: list, processes) -> None:
    """Start every planned process in its domain, each logged as ``<executable>[_<k>]``."""
    for proc in planned:
        cmd = pc.command_line(proc)
        print(f'demo: starting {" ".join(cmd)}'
              + (f' (ROS_DOMAIN_ID={proc.domain})' if proc.domain is not None else ''),
              flush=True)
        name = proc.executable if proc.vehicle is None else f'{proc.executable}_{proc.vehicle}'
        processes.start(name, cmd, proc.domain)


def _result(log_dir: Path, watcher: Watcher) -> dict:
    """Return the referee's results file, else the last ranking seen."""
    path = log_dir / RESULTS
    try:
        return json.loads(path.read_text(encoding='utf-8'))
    except (OSError, ValueError):
        return watcher.ranking


def vehicles_from_env() -> int | None:
    """Return ``DEMO_VEHICLES`` as a count (None: the single-vessel demo)."""
    text = os.environ.get('DEMO_VEHICLES', '').strip()
    if not text:
        return None
    count = int(text)
    if count < 1:
        raise ValueError(f'DEMO_VEHICLES must be at least 1, got {count}')
    return count
