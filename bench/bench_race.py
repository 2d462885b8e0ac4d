"""The race of 1, 2 and 4 karts at real time on this machine: pace, jitter, CPU, memory, laps.

Each count runs what ``DEMO_SCENARIO=race make demo`` runs (``race_demo.plan``, the launch
file's ``scenario:=race``): ``pylon_sim --rate 1`` serving N karts of ``race`` with every
sensor (IMU with its AHRS, GNSS, the 1080-point LiDAR at 40 Hz, the camera at 5 Hz),
``sim_manager`` (count), the referee (the race's judge), ``race_view`` and
``pylon_viewer`` in a management domain, and kart
k's ``udp_bridge``, ``kart_interface``, ``kart_localizer``, ``trajectory_publisher`` and
``pure_pursuit`` in a domain of its own; the bench plays each kart's orchestrator
(``kart_demo.KartPilot``, as the demo does). Once the race has started and
``WARMUP_SECONDS`` passed, it measures over ``WINDOW_SECONDS`` of wall time:

- the simulator's **pace**: its clock advanced per wall second, from its management port
  (1.0 keeps real time), and UT per wall second; its CPU seconds per game second (what
  real time would take of a core);
- each kart's **``control_cmd`` period jitter** (``pure_pursuit``, a 0.01 s timer on game
  time, which fires once per 0.02 s step of ``/clock``): p99 of |period - median period|
  from the messages' header stamps (game time), and the same from their receipt times
  here (wall), with the median and the longest period;
- every process's **CPU** (``/proc``, percent of one core; by kind and in total, this
  bench's own process as ``bench`` apart) and **RSS** at the end; how busy the whole
  machine was (``/proc/stat``: percent of all its cores, whatever ran);
- the race so far from the mirrored statuses (``race_view.Standings``): laps, lap times.

``sim_alone`` runs the simulator alone with the four karts and every sensor, the race
started on its management port (the karts stand on the grid: no stack drives them), for
its own CPU and pace. Targets (the race issue): pace >= 0.98, every jitter p99 < 10 ms,
the simulator alone <= 60 % of a core. ``python bench/bench_race.py [1,2,4[,alone]]`` runs
some phases; prints one JSON object on its last line.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
import json
import os
from pathlib import Path
import socket
import sys
import time

from autoware_auto_control_msgs.msg import AckermannControlCommand
from pylon_common import mission, topics
from pylon_kart.pure_pursuit_node import PARAMETERS as PURE_PURSUIT_PARAMETERS
from pylon_kart.race_view import Standings
from pylon_protocol import management
from pylon_testing.bench import (
    BenchError,
    BenchNode,
    BenchSession,
    cpu_seconds,
    growth_vs_one,
    percentile,
    run,
    status_kb,
)
from pylon_testing.isolation import claim_domain_block, claim_udp_port_series
from pylon_testing.plan import load_components, load_launch_module
from std_msgs.msg import Float32MultiArray, String

ROOT = Path(__file__).resolve().parents[1]
pc = load_components(ROOT)
race_demo = load_launch_module(ROOT, 'race_demo')
kart_demo = load_launch_module(ROOT, 'kart_demo')

WARMUP_SECONDS = 10.0
WINDOW_SECONDS = 60.0
ALONE_SECONDS = 30.0
START_TIMEOUT_SEC = 180.0
TARGET_PACE = 0.98
TARGET_JITTER_P99_MS = 10.0
TARGET_SIM_ALONE_PERCENT = 60.0
PERIOD_SEC = next(p.default for p in PURE_PURSUIT_PARAMETERS if p.name == 'control_period_sec')
KINDS = {'pylon_sim': 'simulator', 'sim_manager': 'management', 'referee': 'referee',
         'race_view': 'race_view',
         'pylon_viewer': 'viewer', 'udp_bridge': 'bridges', 'kart_interface': 'interfaces',
         'kart_localizer': 'localizers', 'trajectory_publisher': 'trajectory_publishers',
         'pure_pursuit': 'pure_pursuits'}


def management_request(port: int, request: dict) -> dict:
    """Send one request to the simulator's management port; return its reply."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(5.0)
        sock.sendto(json.dumps(request).encode(), ('127.0.0.1', port))
        return json.loads(sock.recv(1 << 20))


def claim(session: BenchSession, karts: int, domains: bool = True
          ) -> tuple[int, tuple[int, int], int]:
    """Claim a domain block and the karts' ports; return (base, (state, command), mgmt)."""
    base = 0
    if domains:
        base, claims = claim_domain_block(karts + 1)
        session.claims.extend(claims)
    ports = []
    for _ in range(2):
        first, taken = claim_udp_port_series(karts, management.PORT_STRIDE)
        session.claims.extend(taken)
        ports.append(first)
    return base, (ports[0], ports[1]), session.take_port()


def start(session: BenchSession, karts: int) -> tuple[list, int, int]:
    """Start the race demo's plan; return (started (kind, process), management port, base)."""
    base, ports, manager_port = claim(session, karts)
    planned = race_demo.plan(karts, domain_base=base, ports=(*ports, 0, manager_port))
    viewer_port = session.take_port()
    started = []
    for proc in planned:
        if proc.component == 'viewer':
            proc = replace(proc, parameters=(*proc.parameters, ('port', viewer_port)))
        name = proc.executable if proc.vehicle is None else f'{proc.executable}_{proc.vehicle}'
        env = None if proc.domain is None else {'ROS_DOMAIN_ID': str(proc.domain)}
        started.append((KINDS[proc.executable], session.group.start(
            pc.command_line(proc), name=name, env=env)))
    return started, manager_port, base


class Commands:
    """Kart k's ``control_cmd`` in its domain: header stamps and receipt times."""

    def __init__(self, k: int, base: int) -> None:
        """Subscribe in kart k's domain (Best Effort, as the interface reads it)."""
        self.node = BenchNode(f'bench_race_commands_{k}', mission.vehicle_domain(base, k))
        self.stamps: list[float] = []
        self.received: list[float] = []
        self.recording = False
        self.node.node.create_subscription(
            AckermannControlCommand, topics.name('kart/control_cmd'), self._on_command,
            topics.qos('kart/control_cmd', reader=True))

    def _on_command(self, msg) -> None:
        if self.recording:
            self.stamps.append(msg.stamp.sec + 1e-9 * msg.stamp.nanosec)
            self.received.append(time.monotonic())

    def jitter(self) -> dict:
        """Return the period (median) and its jitter p99 (ms), from stamps and receipts.

        The jitter is |period - median period|: on game time the 0.01 s timer fires once
        per step of ``/clock`` (the simulator's 0.02 s physics step), so the period is the
        step; ``period_ms_nominal`` is the configured one.
        """
        out = {'commands': len(self.stamps), 'period_ms_nominal': round(1e3 * PERIOD_SEC, 2)}
        for name, times in (('stamps', self.stamps), ('receipt', self.received)):
            periods = [b - a for a, b in zip(times, times[1:])]
            if not periods:
                raise BenchError('a kart published no control_cmd in the window')
            median = percentile(periods, 0.5)
            out[f'{name}_period_ms_median'] = round(1e3 * median, 2)
            out[f'{name}_jitter_p99_ms'] = round(
                1e3 * percentile([abs(p - median) for p in periods], 0.99), 2)
            out[f'{name}_period_ms_max'] = round(1e3 * max(periods), 2)
        return out


def measure_count(session: BenchSession, karts: int) -> dict:
    """Run a race of ``karts`` karts and measure it."""
    started, manager_port, base = start(session, karts)
    admin = BenchNode('bench_race_admin', base)
    commands = [Commands(k, base) for k in range(1, karts + 1)]
    pilots = [kart_demo.KartPilot(mission.vehicle_domain(base, k), f'bench_race_pilot_{k}',
                                  race_demo.ENGAGE_STATES, estimate=False)
              for k in range(1, karts + 1)]
    standings = Standings(karts)
    try:
        recorder = admin.recorder().add('state', topics.name('admin/state'), String,
                                        topics.qos('admin/state', reader=True))
        for k in range(1, karts + 1):
            admin.node.create_subscription(
                Float32MultiArray, topics.name('admin/vehicle_status', id=str(k)),
                lambda msg, k=k: standings.update(k, msg.data),
                topics.qos('admin/vehicle_status', reader=True))
        for node in (*pilots, *(c.node for c in commands)):
            _spin_thread(node)

        def started_race() -> bool:
            session.group.check()
            for pilot in pilots:
                pilot.engage()
            return bool(recorder.messages('state', predicate=lambda m: m.data == mission.START))
        recorder.until(started_race, 'the race starting', START_TIMEOUT_SEC)
        admin.spin_for(WARMUP_SECONDS, session.group.check)
        for c in commands:
            c.recording = True
        first = management_request(manager_port, {'cmd': 'status'})
        cpu0, own0, wall0, machine0 = _cpu(started), _own_cpu(), time.monotonic(), _machine()
        admin.spin_for(WINDOW_SECONDS, session.group.check)
        last = management_request(manager_port, {'cmd': 'status'})
        cpu1, own1, wall1, machine1 = _cpu(started), _own_cpu(), time.monotonic(), _machine()
        for c in commands:
            c.recording = False
        rss = [status_kb(process.pid, 'VmRSS') for _, process in started]
        modes = [p.mode_name() for p in pilots]
    finally:
        for node in (*pilots, admin, *(c.node for c in commands)):
            node.close()
        session.group.stop_all()
    wall = wall1 - wall0
    cpu: dict[str, float] = defaultdict(float)
    for (kind, _), used in zip(started, (b - a for a, b in zip(cpu0, cpu1))):
        cpu[kind] += used / wall * 100.0
    cpu['bench'] = (own1 - own0) / wall * 100.0
    pace = (last['clock'] - first['clock']) / wall
    jitter = [c.jitter() for c in commands]
    worst = max(j['stamps_jitter_p99_ms'] for j in jitter)
    return {
        'karts': karts, 'window_seconds': round(wall, 2), 'pace': round(pace, 4),
        'simulator_cpu_seconds_per_game_second': round(cpu['simulator'] / 100.0 / pace, 3),
        'ut_per_wall_second': round((last['ut'] - first['ut']) / wall, 4),
        'control_cmd': jitter, 'jitter_p99_ms_max': worst, 'modes': modes,
        'cpu_percent_of_one_core': {kind: round(value, 1) for kind, value in cpu.items()},
        'cpu_percent_total': round(sum(cpu.values()), 1),
        'machine_busy_percent': round(100.0 * (machine1[0] - machine0[0])
                                      / (machine1[1] - machine0[1]), 1),
        'rss_mb_total': round(sum(rss) / 1024, 1), 'processes': len(started),
        'race_elapsed_sec': round(last['elapsed'], 1), 'standings': standings.table(),
        'pass': pace >= TARGET_PACE and worst < TARGET_JITTER_P99_MS,
    }


def measure_alone(session: BenchSession, karts: int = 4) -> dict:
    """Run the simulator alone with the race's karts (every sensor); the race started."""
    _, ports, manager_port = claim(session, karts, domains=False)
    (sim,) = [p for p in pc.mission_plan(karts, scenario='race', ports=(*ports, 0),
                                         management_port=manager_port) if p.node is None]
    process = session.group.start(pc.command_line(sim), name='pylon_sim_alone')
    try:
        deadline = time.monotonic() + START_TIMEOUT_SEC
        while True:
            session.group.check()
            try:
                management_request(manager_port, {'cmd': 'start'})
                break
            except (OSError, ValueError):
                if time.monotonic() > deadline:
                    raise BenchError('the simulator never answered') from None
                time.sleep(0.5)
        time.sleep(WARMUP_SECONDS)
        first, cpu0, wall0 = management_request(manager_port, {'cmd': 'status'}), \
            cpu_seconds(process.pid), time.monotonic()
        time.sleep(ALONE_SECONDS)
        last, cpu1, wall1 = management_request(manager_port, {'cmd': 'status'}), \
            cpu_seconds(process.pid), time.monotonic()
        rss = status_kb(process.pid, 'VmRSS')
    finally:
        session.group.stop_all()
    wall = wall1 - wall0
    percent = (cpu1 - cpu0) / wall * 100.0
    return {'karts': karts, 'window_seconds': round(wall, 2),
            'pace': round((last['clock'] - first['clock']) / wall, 4),
            'cpu_percent_of_one_core': round(percent, 1), 'rss_mb': round(rss / 1024, 1),
            'phase': last.get('race', {}).get('phase'),
            'pass': percent <= TARGET_SIM_ALONE_PERCENT}


def _spin_thread(node) -> None:
    """Spin a ``BenchNode`` (or a ``KartPilot``) in a thread of its own until it closes."""
    if isinstance(node, kart_demo.KartPilot):
        node.spin_in_thread()
        return
    import threading

    from rclpy.executors import ExternalShutdownException

    def spin() -> None:
        try:
            node.executor.spin()
        except ExternalShutdownException:
            pass
    threading.Thread(target=spin, daemon=True).start()


def _cpu(started: list) -> list[float]:
    return [cpu_seconds(process.pid) for _, process in started]


def _machine() -> tuple[float, float]:
    """Return the machine's (busy, total) CPU seconds over every core (``/proc/stat``)."""
    fields = [float(v) for v in Path('/proc/stat').read_text().split('\n', 1)[0].split()[1:]]
    idle = fields[3] + fields[4]                       # idle, iowait
    hz = os.sysconf('SC_CLK_TCK')
    return (sum(fields) - idle) / hz, sum(fields) / hz


def _own_cpu() -> float:
    times = os.times()
    return times.user + times.system


def main() -> int:
    """Measure each phase; print the JSON."""
    phases = sys.argv[1].split(',') if len(sys.argv) > 1 else ['1', '2', '4', 'alone']

    def measure(session: BenchSession) -> dict:
        out: dict = {'benchmark': 'race', 'targets': {
            'pace': TARGET_PACE, 'jitter_p99_ms': TARGET_JITTER_P99_MS,
            'sim_alone_percent_of_one_core': TARGET_SIM_ALONE_PERCENT}, 'counts': {}}
        for phase in phases:
            if phase == 'alone':
                out['sim_alone'] = measure_alone(session)
            else:
                out['counts'][phase] = measure_count(session, int(phase))
        growth = growth_vs_one(out['counts'])
        if growth is not None:
            out['cpu_growth_vs_one_kart'] = growth
        return out
    return run('race', measure)


if __name__ == '__main__':
    sys.exit(main())
