"""A mission of 1, 2 and 4 vehicles at real time on this machine: pace, jitter, CPU, memory.

Each phase starts what ``pylon_components.mission_plan`` plans (the launch file's
``vehicles:=N`` and ``DEMO_VEHICLES=N make demo`` start the same): ``pylon_sim --rate 1``
serving N vehicles, ``sim_manager`` (start mode count) and ``referee`` in a management domain,
and each vehicle's ``udp_bridge``, ``attitude_estimator``, ``setpoint_controller`` and,
for a chaser, ``rendezvous_chaser`` in a domain of its own; the chasers fly. Once the
mission has started and ``WARMUP_SECONDS`` passed, it measures over ``WINDOW_SECONDS`` of
wall time:

- the simulator's pace: its clock (and UT) advanced per wall second, from its management
  port (1.0: it keeps real time; below: it falls behind);
- each controller's command-period jitter p99 (its diagnostics, over its last 200
  periods), from a bench node in each vehicle's domain;
- every process's CPU (``/proc``: percent of one core) and, at the end, its RSS; summed by
  kind (simulator, management, bridges, estimators, controllers, chasers) and in total.

1 vehicle is the rendezvous scenario with only its chaser a vehicle (the target a plain
vessel), 2 the rendezvous scenario, 4 ``rendezvous4``. Targets: pace >= 0.99, every
jitter p99 < 10 ms. ``python bench/bench_mission.py [1,2,4]`` runs some counts. Prints one
JSON object on its last line.
"""

from __future__ import annotations

from collections import defaultdict
import json
from pathlib import Path
import socket
import sys
import time

from pylon_common import mission, topics
from pylon_protocol import management
from pylon_testing.bench import (
    BenchError,
    BenchNode,
    BenchSession,
    cpu_seconds,
    growth_vs_one,
    number,
    run,
    status_kb,
)
from pylon_testing.isolation import claim_domain_block, claim_udp_port_series
from pylon_testing.plan import load_components
from pylon_testing.scenarios import write_scenario
from std_msgs.msg import String
import yaml

pc = load_components(Path(__file__).resolve().parents[1])

WARMUP_SECONDS = 10.0
WINDOW_SECONDS = 30.0
START_TIMEOUT_SEC = 120.0
TARGET_PACE = 0.99
TARGET_JITTER_P99_MS = 10.0
KINDS = {'pylon_sim': 'simulator', 'sim_manager': 'management', 'referee': 'management',
         'udp_bridge': 'bridges', 'attitude_estimator': 'estimators',
         'setpoint_controller': 'controllers', 'rendezvous_chaser': 'chasers'}


def scenario_for(vehicles: int, folder: Path) -> str:
    """Return the scenario of a mission of ``vehicles`` vehicles (1: a copy of rendezvous)."""
    if vehicles in pc.MISSION_SCENARIOS:
        return pc.MISSION_SCENARIOS[vehicles]
    if vehicles != 1:
        raise BenchError(f'no scenario for {vehicles} vehicles')
    path = Path(write_scenario(folder, 'rendezvous', lean=False))
    data = yaml.safe_load(path.read_text(encoding='utf-8'))
    data['vehicles'] = ['chaser']
    path.write_text(yaml.safe_dump(data), encoding='utf-8')
    return str(path)


def management_status(port: int) -> dict:
    """Ask the simulator's management port for its status."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(5.0)
        sock.sendto(json.dumps({'cmd': 'status'}).encode(), ('127.0.0.1', port))
        return json.loads(sock.recv(65535))


def start(session: BenchSession, vehicles: int) -> tuple[list, int, int]:
    """Start the mission; return (process names and pids, management port, domain base)."""
    base, claims = claim_domain_block(vehicles + 1)
    session.claims.extend(claims)
    ports = []
    for _ in range(2):
        first, taken = claim_udp_port_series(vehicles, management.PORT_STRIDE)
        session.claims.extend(taken)
        ports.append(first)
    manager_port = session.take_port()
    planned = pc.mission_plan(vehicles, scenario=scenario_for(vehicles, session.log_dir),
                              domain_base=base, ports=(*ports, 0),
                              management_port=manager_port, start_mode='count')
    started = []
    for proc in planned:
        name = proc.executable if proc.vehicle is None else f'{proc.executable}_{proc.vehicle}'
        env = None if proc.domain is None else {'ROS_DOMAIN_ID': str(proc.domain)}
        started.append((proc.executable, session.group.start(pc.command_line(proc), name=name,
                                                             env=env)))
    return started, manager_port, base


def measure_count(session: BenchSession, vehicles: int) -> dict:
    """Run one mission of ``vehicles`` vehicles and measure it."""
    started, manager_port, base = start(session, vehicles)
    watchers = [BenchNode(f'bench_mission_{k}', mission.vehicle_domain(base, k))
                for k in range(1, vehicles + 1)]
    admin = BenchNode('bench_mission_admin', base)
    try:
        state = admin.recorder().add('state', topics.name('admin/state'), String,
                                     topics.qos('admin/state', reader=True))
        diags = [w.recorder().add('diag', topics.resolved('controller/diagnostics',
                                                          topics.SETPOINT_CONTROLLER),
                                  topics.message_class('controller/diagnostics'),
                                  topics.qos('controller/diagnostics', reader=True))
                 for w in watchers]
        state.until(lambda: bool(state.messages('state', predicate=lambda m: m.data ==
                                                mission.START)),
                    'the mission starting', START_TIMEOUT_SEC)
        admin.spin_for(WARMUP_SECONDS, session.group.check)
        first, cpu0, wall0 = management_status(manager_port), _cpu(started), time.monotonic()
        admin.spin_for(WINDOW_SECONDS, session.group.check)
        for w in watchers:
            w.spin_for(0.2)
        last, cpu1, wall1 = management_status(manager_port), _cpu(started), time.monotonic()
        jitter = [_jitter(recorder) for recorder in diags]
        rss = [status_kb(process.pid, 'VmRSS') for _, process in started]
    finally:
        for node in (*watchers, admin):
            node.close()
        session.group.stop_all()
    wall = wall1 - wall0
    cpu = defaultdict(float)
    for (executable, _), used in zip(started, (b - a for a, b in zip(cpu0, cpu1))):
        cpu[KINDS[executable]] += used / wall * 100.0
    pace = (last['clock'] - first['clock']) / wall
    return {
        'vehicles': vehicles, 'window_seconds': round(wall, 2),
        'pace': round(pace, 4), 'ut_per_wall_second': round((last['ut'] - first['ut']) / wall, 4),
        'jitter_p99_ms': jitter, 'jitter_p99_ms_max': max(jitter),
        'cpu_percent_of_one_core': {kind: round(value, 1) for kind, value in cpu.items()},
        'cpu_percent_total': round(sum(cpu.values()), 1),
        'rss_mb_total': round(sum(rss) / 1024, 1),
        'processes': len(started),
        'pass': pace >= TARGET_PACE and max(jitter) < TARGET_JITTER_P99_MS,
    }


def _cpu(started: list) -> list[float]:
    return [cpu_seconds(process.pid) for _, process in started]


def _jitter(recorder) -> float:
    """Return the controller's newest command-period jitter p99 (ms)."""
    for message in reversed(recorder.messages('diag')):
        value = number({kv.key: kv.value for kv in message.status[0].values},
                       'period_jitter_p99_ms')
        if value is not None:
            return value
    raise BenchError('a controller reported no command-period jitter')


def main() -> int:
    """Measure each vehicle count; print the JSON."""
    counts = [int(c) for c in sys.argv[1].split(',')] if len(sys.argv) > 1 else [1, 2, 4]

    def measure(session: BenchSession) -> dict:
        out: dict = {'benchmark': 'mission', 'targets': {
            'pace': TARGET_PACE, 'jitter_p99_ms': TARGET_JITTER_P99_MS}, 'counts': {}}
        for count in counts:
            out['counts'][str(count)] = measure_count(session, count)
        growth = growth_vs_one(out['counts'])
        if growth is not None:
            out['cpu_growth_vs_one_vehicle'] = growth
        return out
    return run('mission', measure)


if __name__ == '__main__':
    sys.exit(main())
