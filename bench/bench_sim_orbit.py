"""pylon_sim speed: the orbit scenario with every sensor, lock-stepped and at real time.

The scenario carries every sensor kind (a star tracker at 5 Hz, a 3D LiDAR of 1 024 rays
at 10 Hz, a 320x240 RGB camera at 5 Hz), so the figures include ray casting and rendering.

- ``lockstep``: 120 simulated seconds as fast as possible on one core (the process is
  pinned to it). Every packet is built, validated, encoded and sent to a bound local UDP
  socket (the kernel queues and then drops what nobody reads, so no reader competes for
  the core). The real-time factor (target 5) on the wall clock and on the process's CPU
  clock (what the simulator itself costs when the core is shared), the cost of each
  sensor per sample and as a share of the wall time, and the cost per packet type.
- ``realtime``: the real ``pylon_sim --rate 1`` process for 25 s; its CPU time (from
  ``/proc``) over 20 s of its clock, as a fraction of one core (target < 0.20).
- ``rover``: the real ``pylon_sim --scenario surface --rate 1`` while the bench, a lease
  client of its own over UDP, takes the lease and commands every wheel at 10 Hz; over 20 s
  of its clock, its CPU (fraction of one core) and the datagrams of each type received per
  simulator second and per instance (actuator, part) against the mod's rate
  (``SEND_RATES_HZ``, the LiDAR's ``scanRateHz``); ``below_mod_rate`` lists the types
  under 95 % of it, ``rover_speed_mps`` is the last ground-truth speed.
- ``vessels`` and ``parts``: the cost of one frame (CPU ms, lock-stepped, every sensor)
  with 1, 4 and 16 vessels (copies of the target station 150 m apart along the orbit)
  and with the target carrying 2, 50 and 200 parts (a row of boxes in the camera's view).

``python bench/bench_sim_orbit.py [lockstep,realtime,rover,vessels,parts]`` runs some
phases.
Prints one JSON object; ``baseline`` holds the figures measured before the renderer and
the loop were made cheap (the issue's), and ``*_vs_baseline`` the ratios.
"""

from __future__ import annotations

from collections import Counter, defaultdict
import copy
import json
import math
import os
from pathlib import Path
import select
import socket
import sys
import tempfile
import time

from pylon_protocol import packets, wire
from pylon_protocol.envelope import Envelope
from pylon_protocol.threads import limit_threads
from pylon_sim.loop.runtime import Simulator
from pylon_sim.loop.scenario import load_scenario
from pylon_testing import bench
from pylon_testing.processes import ProcessGroup
import yaml

SIM_SECONDS = 120.0
SWEEP_SECONDS = 10.0
REALTIME_WARMUP = 3.0
REALTIME_WINDOW = 20.0
ROVER_WINDOW = 20.0
DRIVE_PERIOD = 0.1            # s of wall time between the driver's commands
DRIVE_WHEEL_RATE = 6.0        # rad/s wanted of every wheel (1.8 m/s on 0.3 m wheels)
DRIVE_STEERING = 0.3          # rad: a circle of about 3.9 m radius, inside the scenario's
#                               clear zone (straight ahead it would meet the boulder 8 m east)
BASELINE = {'real_time_factor': 1.33, 'camera_ms_per_frame': 64.0,
            'realtime_cpu_fraction': 0.65}
SENSOR_PACKETS = {'star_tracker': ('pylon_star_tracker',),
                  'lidar_3d': ('pylon_lidar_scan',),
                  'camera': ('pylon_camera_frame_chunk',),
                  'relative_nav': ('pylon_relative_nav',)}   # where a scenario has one


def _pin() -> None:
    if hasattr(os, 'sched_setaffinity'):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})


def _run(scenario, seconds: float) -> tuple[Simulator, float, float]:
    """Run a scenario lock-stepped; return the simulator, wall and CPU seconds.

    Packets are not checked against the schema before sending, as ``pylon_sim`` runs.
    """
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(('127.0.0.1', 0))
    sim = Simulator(scenario, state_addr=receiver.getsockname(), seed=1, check_packets=False)
    start_cpu, start = time.process_time(), time.perf_counter()
    sim.run(rate=0.0, duration=seconds)
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    receiver.close()
    sim.close()
    return sim, wall, cpu


def _sensors(sim: Simulator, wall: float) -> dict:
    """Return each sensor's cost: sampling (ms per sample) and its packets' build/encode."""
    stats, sensing = sim.stats, sim.sensing
    out = {}
    for kind, count in sorted(sensing.samples.items()):
        encode = sum(stats.encode_seconds[t] for t in SENSOR_PACKETS.get(kind, ()))
        out[kind] = {
            'samples': count,
            'sample_ms': round(sensing.cost[kind] / count * 1e3, 2),
            'packets_ms_per_sample': round(encode / count * 1e3, 2),
            'share_of_wall': round((sensing.cost[kind] + encode) / wall, 3)}
    return out


def lockstep() -> dict:
    """Run the orbit scenario for 120 simulated seconds lock-stepped on one core."""
    sim, wall, cpu = _run(load_scenario('orbit'), SIM_SECONDS)
    sent = sim.stats.sent
    per_type = {
        name: {'packets': sent[name],
               'per_sim_second': round(sent[name] / SIM_SECONDS, 2),
               'mean_bytes': round(sim.stats.sent_bytes[name] / sent[name]),
               'build_encode_us': round(sim.stats.encode_seconds[name] / sent[name] * 1e6, 1)}
        for name in sorted(sent)}
    encode_total = sum(sim.stats.encode_seconds.values())
    sensing_total = sum(sim.sensing.cost.values())
    factor = SIM_SECONDS / wall
    sensors = _sensors(sim, wall)
    return {
        'sim_seconds': SIM_SECONDS, 'frames': sim.stats.frames,
        'wall_seconds': round(wall, 3), 'cpu_seconds': round(cpu, 3),
        'real_time_factor': round(factor, 2),
        'real_time_factor_cpu': round(SIM_SECONDS / cpu, 2),
        'target_real_time_factor': 5.0, 'pass': factor >= 5.0,
        'real_time_factor_vs_baseline': round(factor / BASELINE['real_time_factor'], 2),
        'camera_ms_vs_baseline': round(sensors['camera']['sample_ms']
                                       / BASELINE['camera_ms_per_frame'], 3),
        'frame_ms': round(wall / sim.stats.frames * 1e3, 3),
        'packets': sum(sent.values()),
        'sensors': sensors,
        'share_of_wall': {'sensing': round(sensing_total / wall, 3),
                          'build_encode': round(encode_total / wall, 3),
                          'rest': round(1.0 - (sensing_total + encode_total) / wall, 3)},
        'per_type': per_type,
    }


def _admin_clock(port: int) -> float | None:
    """Return the simulator's clock from its admin port, None while it does not answer."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(1.0)
        sock.sendto(json.dumps({'cmd': 'status'}).encode(), ('127.0.0.1', port))
        try:
            return float(json.loads(sock.recv(65535))['clock'])
        except TimeoutError:           # not started yet (the datagram was lost)
            return None


def _sample_clock(port: int, group: ProcessGroup, at_least: float) -> float:
    """Wait (the simulator running) until its clock passes ``at_least``; return it."""
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline:
        group.check()
        clock = _admin_clock(port)
        if clock is not None and clock >= at_least:
            return clock
        time.sleep(0.2 if clock is None else min(0.2, at_least - clock))
    raise bench.BenchError('the simulator clock did not advance')


def realtime(session: bench.BenchSession) -> dict:
    """Run ``pylon_sim --rate 1`` and return its CPU use as a fraction of one core."""
    admin, state = session.take_port(), session.take_port()
    command = session.take_port()
    process = session.group.start(
        ['pylon_sim', '--scenario', 'orbit', '--rate', '1', '--admin-port', str(admin),
         '--state-port', str(state), '--command-port', str(command),
         '--duration', str(REALTIME_WARMUP + REALTIME_WINDOW + 5.0)], name='pylon_sim')
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(('127.0.0.1', state))       # the state datagrams go somewhere real
    try:
        clock0 = _sample_clock(admin, session.group, REALTIME_WARMUP)
        cpu0 = bench.cpu_seconds(process.pid)
        clock1 = _sample_clock(admin, session.group, clock0 + REALTIME_WINDOW)
        cpu1 = bench.cpu_seconds(process.pid)
    finally:
        receiver.close()
        session.group.stop_all()
    fraction = (cpu1 - cpu0) / (clock1 - clock0)
    return {'sim_clock_seconds': round(clock1 - clock0, 2),
            'cpu_seconds': round(cpu1 - cpu0, 3), 'cpu_fraction': round(fraction, 3),
            'target_cpu_fraction': 0.20, 'pass': fraction < 0.20,
            'cpu_fraction_vs_baseline': round(fraction / BASELINE['realtime_cpu_fraction'],
                                              3)}


class _RoverDriver:
    """The bench's lease client over UDP: counts every state datagram, drives the wheels.

    It reads the simulator's state port itself (no bridge): the runtime envelope from
    ``pylon_session``, the wheels from ``pylon_actuator_manifest``; then it takes the lease
    and sends every wheel a drive command each ``DRIVE_PERIOD`` s, renewing the lease.
    """

    def __init__(self, state_port: int, command_port: int) -> None:
        """Bind the state port; commands go to ``command_port``."""
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(('127.0.0.1', state_port))
        self.sock.setblocking(False)
        self.command_addr = ('127.0.0.1', command_port)
        self.envelope: Envelope | None = None
        self.wheels: list[str] = []
        self.counts: Counter = Counter()
        self.instances: dict[str, set] = defaultdict(set)
        self.owner = False
        self.speed = 0.0
        self.lidar_hz: float | None = None
        self.sequence = 0
        self.next_drive = 0.0

    def _take(self, packet: dict) -> None:
        kind = packet['type']
        self.counts[kind] += 1
        self.instances[kind].add(packet.get('name') or packet.get('partFlightId')
                                 or packet.get('sensorId'))
        if kind == 'pylon_session':
            self.envelope = Envelope.from_packet(packet)
        elif kind == 'pylon_actuator_manifest':
            self.wheels = [a['name'] for a in packet['actuators']
                           if a['actuatorType'] == 'wheel']
        elif kind == 'pylon_control_authority_state':
            self.owner = packet['controllerId'] == 'bench' and packet['state'] == 1
        elif kind == 'pylon_ground_truth':
            self.speed = math.hypot(*packet['linearVelocity'])
        elif kind == 'pylon_lidar_scan':     # the scan rate the sensor is configured for
            self.lidar_hz = packet.get('scanRateHz')

    def _send(self, type_name: str, **fields) -> None:
        self.sequence += 1
        packet = packets.build_command(
            type_name, self.envelope, vesselId=self.envelope.runtime_vessel_id,
            controllerId='bench', leaseId='bench-lease', sequence=self.sequence, **fields)
        self.sock.sendto(wire.encode_command(packet), self.command_addr)

    def serve(self, seconds: float) -> None:
        """Read the state datagrams and drive for ``seconds`` of wall time."""
        end = time.monotonic() + seconds
        while (now := time.monotonic()) < end:
            if select.select([self.sock], [], [], min(0.02, end - now))[0]:
                while True:
                    try:
                        data = self.sock.recv(65535)
                    except BlockingIOError:
                        break
                    self._take(packets.decode_state(data))
            if self.envelope is not None and self.wheels and now >= self.next_drive:
                self.next_drive = now + DRIVE_PERIOD
                self._send('pylon_control_authority_command', action='renew' if self.owner
                           else 'acquire', priority=0, leaseDurationSeconds=2.0)
                for name in self.wheels if self.owner else ():
                    self._send('pylon_actuator_command', actuatorType='wheel', name=name,
                               enabled=True, timeoutSeconds=0.5, brake=0.0,
                               targetAngularVelocity=DRIVE_WHEEL_RATE,
                               steeringAngle=DRIVE_STEERING,
                               maxDriveTorque=0.0)


def _rover_rates(counts: Counter, instances: dict, seconds: float, lidar_hz: float) -> dict:
    """Return each type's rate per instance (per sim second) against the mod's rate."""
    out = {}
    for kind in sorted(counts):
        each = counts[kind] / seconds / max(1, len(instances[kind]))
        mod = lidar_hz if kind == 'pylon_lidar_scan' else packets.SEND_RATES_HZ.get(kind)
        out[kind] = {'per_sim_second': round(counts[kind] / seconds, 2),
                     'instances': len(instances[kind]), 'hz_each': round(each, 2),
                     'mod_hz': mod,
                     'holds': None if mod is None else bool(each >= 0.95 * mod)}
    return out


def rover(session: bench.BenchSession) -> dict:
    """Drive the surface rover under a lease at ``--rate 1``: datagram rates and the CPU."""
    admin, state, command = session.take_port(), session.take_port(), session.take_port()
    driver = _RoverDriver(state, command)
    process = session.group.start(
        ['pylon_sim', '--scenario', 'surface', '--rate', '1', '--admin-port', str(admin),
         '--state-port', str(state), '--command-port', str(command),
         '--duration', str(REALTIME_WARMUP + ROVER_WINDOW + 10.0)], name='pylon_sim')
    try:
        driver.serve(0.5)
        while (clock0 := _admin_clock(admin)) is None or clock0 < REALTIME_WARMUP:
            session.group.check()
            driver.serve(0.2)
        cpu0, start = bench.cpu_seconds(process.pid), driver.counts.copy()
        clock1 = clock0
        while clock1 < clock0 + ROVER_WINDOW:
            session.group.check()
            driver.serve(0.5)
            clock1 = _admin_clock(admin) or clock1
        cpu1, counts = bench.cpu_seconds(process.pid), driver.counts - start
    finally:
        driver.sock.close()
        session.group.stop_all()
    window = clock1 - clock0
    rates = _rover_rates(counts, driver.instances, window, driver.lidar_hz)
    held = [kind for kind, rate in rates.items() if rate['holds'] is False]
    fraction = (cpu1 - cpu0) / window
    return {'sim_clock_seconds': round(window, 2), 'cpu_seconds': round(cpu1 - cpu0, 3),
            'cpu_fraction': round(fraction, 3), 'lease_held': driver.owner,
            'rover_speed_mps': round(driver.speed, 2), 'rates': rates,
            'below_mod_rate': held, 'pass': not held and driver.owner}


def _orbit_data() -> dict:
    return yaml.safe_load(Path(load_scenario('orbit').path).read_text(encoding='utf-8'))


def _write(data: dict, folder: Path, name: str):
    path = folder / f'{name}.yaml'
    path.write_text(yaml.safe_dump(data), encoding='utf-8')
    return load_scenario(str(path))


def _with_vessels(count: int) -> dict:
    """Return the orbit scenario with ``count`` vessels: the sat and copies of the target."""
    data = _orbit_data()
    target = next(v for v in data['vessels'] if v['key'] == 'target')
    data['vessels'] = [v for v in data['vessels'] if v['key'] in ('sat', 'target')]
    for k in range(count - 2):
        twin = copy.deepcopy(target)
        twin['key'], twin['name'] = f'target_{k}', f'Target {k}'
        twin['vessel_id'] = f'{k + 1:032x}'
        twin['orbit'] = {**twin['orbit'], 'along_track': 150.0 * (k + 2)}
        data['vessels'].append(twin)
    return data if count >= 2 else {**data, 'vessels': data['vessels'][:1]}


def _with_parts(count: int) -> dict:
    """Return the orbit scenario with a target of ``count`` parts (a row of small boxes)."""
    data = _orbit_data()
    target = next(v for v in data['vessels'] if v['key'] == 'target')
    for k in range(count - len(target['parts'])):
        target['parts'].append({
            'name': 'structuralPanel1', 'title': 'Panel', 'persistent_id': 2300000 + k,
            'flight_id': 5300000 + k, 'parent': 0, 'mass': 5,
            'position': [0.0, 0.5 * (k % 20) - 5.0, 0.5 * (k // 20) + 0.6],
            'shape': {'box': [0.4, 0.4, 0.4]}})
    return data


def _sweep(build, counts) -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        for count in counts:
            scenario = _write(build(count), Path(folder), f'sweep_{count}')
            sim, wall, cpu = _run(scenario, SWEEP_SECONDS)
            out[str(count)] = {'frame_cpu_ms': round(cpu / sim.stats.frames * 1e3, 3),
                               'camera_ms': _sensors(sim, wall)['camera']['sample_ms'],
                               'lidar_ms': _sensors(sim, wall)['lidar_3d']['sample_ms']}
    return out


def main() -> None:
    """Run the phases asked for (all by default) and print one JSON object."""
    limit_threads()
    phases = sys.argv[1].split(',') if len(sys.argv) > 1 else ['lockstep', 'realtime', 'rover',
                                                                'vessels', 'parts']
    result: dict = {'benchmark': 'sim_orbit', 'scenario': 'orbit', 'baseline': BASELINE}
    if 'realtime' in phases:
        with bench.BenchSession('sim_orbit') as session:
            result['realtime'] = realtime(session)
    if 'rover' in phases:
        with bench.BenchSession('sim_orbit') as session:
            result['rover'] = rover(session)
    _pin()
    if 'lockstep' in phases:
        result.update(lockstep())
    if 'vessels' in phases:
        result['vessels'] = _sweep(_with_vessels, (1, 4, 16))
    if 'parts' in phases:
        result['parts'] = _sweep(_with_parts, (2, 50, 200))
    print(json.dumps(result))


if __name__ == '__main__':
    main()
