"""pylon_sim's own cost with one kart: CPU per game second, standing and driving.

The ``kart`` scenario as ``bench_kart_stack`` runs it: one kart on four wheels, its 2D
LiDAR (1080 rays, 40 Hz), GNSS receiver and AHRS, no camera; and with every sensor (the
phases ending in ``_camera``: its 320x240 camera at 5 Hz too). No ROS: the bench is the
simulator's only client.

- ``realtime_standing``, ``realtime_driving``: the real ``pylon_sim --rate 1`` process;
  its CPU (``/proc``) over ``REALTIME_WINDOW`` s of its clock after ``REALTIME_WARMUP``,
  as percent of one core (``core_percent_at_rate_1``, target < 25). Its datagrams go to a
  bound socket nobody reads; driving, the bench sends the commands below every 20 ms of
  wall time.
- ``standing``, ``driving``: the simulator in this process, lock-stepped (rate 0) on one
  core (pinned) for ``SECONDS`` of game time, as ``pylon_sim`` runs (packets assembled
  unchecked, encoded and sent to a bound socket nobody reads, commands from a real UDP
  command socket): CPU seconds per game second (``cpu_s_per_game_s``, target <= 0.18:
  5 x real time with room for the lock-step's waits), the real-time factor on the CPU and
  the wall clock, CPU ms per frame, and the shares of the CPU spent in physics
  (``World.step``), LiDAR and GNSS sampling (``Sensing.cost``) and building and encoding
  packets (``Stats.encode_seconds``).

Driving, a lease client sends, as ``kart_interface`` does, a command to each of the four
wheels every frame (50 Hz: the rear wheels driven toward ``DRIVE_WHEEL_RATE``, the front
ones steered ``DRIVE_STEERING``: a circle of about 5 m radius at about 5.4 m/s) and renews
its lease every 0.5 s. A frame at ``--rate 1`` costs more than a lock-stepped one on this
machine (a process that sleeps between frames runs slower after each sleep: pylon_sim
README, LiDAR and cameras), so the two figures differ by more than the pacing.

``python bench/bench_sim_kart.py [realtime_standing,realtime_driving,standing,driving]``
runs some phases; prints one JSON object.
"""

from __future__ import annotations

from collections.abc import Callable
import json
import os
from pathlib import Path
import socket
import sys
import tempfile
import time

import numpy as np
from pylon_protocol import packets, wire
from pylon_protocol.envelope import Envelope
from pylon_protocol.threads import limit_threads
from pylon_sim.game import rover, wheels
from pylon_sim.loop.admin import request
from pylon_sim.loop.runtime import Simulator
from pylon_sim.loop.scenario import load_scenario
from pylon_testing.bench import BenchError, BenchSession, cpu_seconds
from pylon_testing.fuzz import live_session
from pylon_testing.scenarios import write_scenario
import yaml

SECONDS = 30.0
REALTIME_WARMUP = 3.0          # game s of the real process before its window
REALTIME_WINDOW = 20.0         # game s
WARMUP = 1.0                   # game s before the window (the first packets, the settling)
DRIVE_WHEEL_RATE = 40.0        # rad/s of the rear wheels (5.6 m/s on 0.14 m wheels)
DRIVE_STEERING = 0.2           # rad of the front wheels
LEASE_RENEW = 0.5              # game s
TARGET_CORE_PERCENT = 25.0
TARGET_CPU_S_PER_GAME_S = 0.18


def _pin() -> None:
    """Keep this process on one core (the lock-stepped phases)."""
    if hasattr(os, 'sched_setaffinity'):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})


def scenario_path(folder: Path, camera: bool = False) -> str:
    """Write the kart scenario, without its camera unless ``camera``; return its path."""
    path = write_scenario(folder, 'kart', lean=False)
    if not camera:
        data = yaml.safe_load(Path(path).read_text(encoding='utf-8'))
        for vessel in data['vessels']:
            vessel['parts'] = [p for p in vessel['parts'] if p['name'] != 'pylonCamera']
        Path(path).write_text(yaml.safe_dump(data), encoding='utf-8')
    return path


class Driver:
    """A lease client over UDP: a command to every wheel each frame, the lease renewed.

    ``envelope()`` is the runtime envelope to address, ``clock()`` the time (s) the lease
    renewal goes by.
    """

    def __init__(self, address: tuple[str, int], envelope: Callable[[], Envelope],
                 clock: Callable[[], float], path: str) -> None:
        """Send to the simulator's command socket at ``address``, for the scenario at ``path``."""
        self.address, self.envelope, self.clock = address, envelope, clock
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        kart = load_scenario(path).vessels[0].spec
        self.vessel_id = kart.vessel_id
        self.wheels = [name for name, _, _ in wheels.wheel_modules(kart)]
        self.sequence = 0
        self.renewed_at: float | None = None

    def _send(self, type_name: str, **fields) -> None:
        self.sequence += 1
        packet = packets.build_command(
            type_name, self.envelope(), vesselId=self.vessel_id,
            controllerId='bench', leaseId='bench-lease', sequence=self.sequence, **fields)
        self.sock.sendto(wire.encode_command(packet), self.address)

    def __call__(self) -> None:
        """Send this frame's commands (before the frame that reads them)."""
        clock = self.clock()
        if self.renewed_at is None or clock - self.renewed_at >= LEASE_RENEW - 1e-9:
            self._send('pylon_control_authority_command',
                       action='acquire' if self.renewed_at is None else 'renew',
                       priority=0, leaseDurationSeconds=2.0)
            self.renewed_at = clock
        for k, name in enumerate(self.wheels):
            self._send('pylon_actuator_command', actuatorType='wheel', name=name,
                       enabled=True, timeoutSeconds=0.5, brake=0.0,
                       targetAngularVelocity=DRIVE_WHEEL_RATE if k >= 2 else 0.0,
                       steeringAngle=DRIVE_STEERING if k < 2 else 0.0, maxDriveTorque=0.0)

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()


class Timed:
    """Wrap a callable; add its process CPU time to ``seconds``."""

    def __init__(self, call) -> None:
        """Time ``call``."""
        self.call, self.seconds = call, 0.0

    def __call__(self, *args, **kwargs):
        """Call it."""
        start = time.process_time()
        try:
            return self.call(*args, **kwargs)
        finally:
            self.seconds += time.process_time() - start


def phase(path: str, driving: bool) -> dict:
    """Run the kart for ``SECONDS`` of game time lock-stepped; return its cost."""
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(('127.0.0.1', 0))
    commands = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    commands.bind(('127.0.0.1', 0))
    commands.setblocking(False)
    sim = Simulator(load_scenario(path, seed=1), state_addr=receiver.getsockname(),
                    command_sock=commands, seed=1, check_packets=False)
    drive = Driver(commands.getsockname(), lambda: sim.envelope, lambda: sim.clock,
                   path) if driving else None
    physics = sim.world.step = Timed(sim.world.step)

    def frames(seconds: float) -> None:
        end = sim.clock + seconds
        while sim.clock < end - 1e-9:
            if drive is not None:
                drive()
            sim.frame()
    frames(WARMUP)
    physics.seconds = 0.0
    sensing0 = sum(sim.sensing.cost.values())
    encode0 = sum(sim.stats.encode_seconds.values())
    frames0 = sim.stats.frames
    cpu0, wall0 = time.process_time(), time.perf_counter()
    frames(SECONDS)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    count = sim.stats.frames - frames0
    kart = sim.world.active
    speed = float(np.linalg.norm(rover.kinematics(kart.state, kart.body, kart.state.ut).velocity))
    shares = {'physics': physics.seconds / cpu,
              'sensing': (sum(sim.sensing.cost.values()) - sensing0) / cpu,
              'build_encode': (sum(sim.stats.encode_seconds.values()) - encode0) / cpu}
    shares['rest'] = 1.0 - sum(shares.values())
    for sock in (receiver,) + ((drive.sock,) if drive else ()):
        sock.close()
    sim.close()
    per_game_s = cpu / SECONDS
    return {
        'game_seconds': SECONDS, 'frames': count,
        'cpu_s_per_game_s': round(per_game_s, 4),
        'real_time_factor_cpu': round(SECONDS / cpu, 2),
        'real_time_factor_wall': round(SECONDS / wall, 2),
        'frame_cpu_ms': round(cpu / count * 1e3, 3),
        'share_of_cpu': {k: round(v, 3) for k, v in shares.items()},
        'kart_ground_speed_mps': round(speed, 2),
        'pass': per_game_s <= TARGET_CPU_S_PER_GAME_S,
    }


def realtime(path: str, driving: bool) -> dict:
    """Run ``pylon_sim --rate 1`` on the kart; return its CPU per game second over the window.

    Its state datagrams go to a bound socket nobody reads; driving, the bench sends the
    wheel commands every 20 ms of wall time.
    """
    with BenchSession('sim_kart') as session:
        admin, state, command = (session.take_port() for _ in range(3))
        process = session.group.start(
            ['pylon_sim', '--scenario', path, '--rate', '1', '--admin-port', str(admin),
             '--state-port', str(state), '--command-port', str(command),
             '--duration', str(REALTIME_WARMUP + REALTIME_WINDOW + 10.0)], name='pylon_sim')
        receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        receiver.bind(('127.0.0.1', state))
        try:
            clock = _until_clock(admin, session, 0.0)
            envelope = live_session(admin)
            drive = Driver(('127.0.0.1', command), lambda: envelope, time.monotonic, path) \
                if driving else None
            clock0 = cpu0 = None
            while clock < (REALTIME_WARMUP + REALTIME_WINDOW if clock0 is None
                           else clock0 + REALTIME_WINDOW):
                for _ in range(25):          # 0.5 s between the clock's readings
                    if drive is not None:
                        drive()
                    time.sleep(0.02)
                session.group.check()
                clock = float(request(admin, {'cmd': 'status'})['clock'])
                if clock0 is None and clock >= REALTIME_WARMUP:
                    clock0, cpu0 = clock, cpu_seconds(process.pid)
            cpu = cpu_seconds(process.pid) - cpu0
        finally:
            receiver.close()
            session.group.stop_all()
    percent = 100.0 * cpu / (clock - clock0)
    return {'game_seconds': round(clock - clock0, 2), 'cpu_seconds': round(cpu, 3),
            'core_percent_at_rate_1': round(percent, 1),
            'pass': percent < TARGET_CORE_PERCENT}


def _until_clock(admin: int, session: BenchSession, at_least: float) -> float:
    """Wait until the simulator answers its admin port with a clock past ``at_least``."""
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline:
        session.group.check()
        try:
            clock = float(request(admin, {'cmd': 'status'}, timeout=1.0)['clock'])
        except TimeoutError:                 # not started yet
            continue
        if clock >= at_least:
            return clock
        time.sleep(0.1)
    raise BenchError('the simulator did not start')


def main() -> None:
    """Run the phases asked for (both by default) and print one JSON object."""
    limit_threads()
    phases = sys.argv[1].split(',') if len(sys.argv) > 1 else [
        'realtime_standing', 'realtime_driving', 'standing', 'driving',
        'realtime_driving_camera', 'driving_camera']
    result: dict = {'benchmark': 'sim_kart',
                    'scenario': 'kart (LiDAR 2D, GNSS, AHRS; _camera: and the camera)',
                    'target_core_percent_at_rate_1': TARGET_CORE_PERCENT,
                    'target_cpu_s_per_game_s': TARGET_CPU_S_PER_GAME_S}
    with tempfile.TemporaryDirectory() as folder:
        paths = {False: scenario_path(Path(folder)),
                 True: scenario_path(Path(folder), camera=True)}
        for name in phases:
            if name.startswith('realtime_'):
                result[name] = realtime(paths[name.endswith('_camera')],
                                        driving='driving' in name)
        _pin()
        for name in phases:
            if not name.startswith('realtime_'):
                result[name] = phase(paths[name.endswith('_camera')], driving='driving' in name)
    print(json.dumps(result))


if __name__ == '__main__':
    main()
