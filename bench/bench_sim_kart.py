"""pylon_sim's own cost with one kart: CPU seconds per game second, standing and driving.

The ``kart`` scenario as ``bench_kart_stack`` runs it: one kart on four wheels, its 2D
LiDAR (1080 rays, 40 Hz) and a GNSS receiver on the chassis, no camera (its cost is the
renderer's, measured apart). The simulator runs in this process, lock-stepped (rate 0)
on one core (the process is pinned), as ``pylon_sim`` runs: every packet assembled
unchecked, encoded and sent to a bound local UDP socket nobody reads (the kernel queues,
then drops), commands read from a real UDP command socket.

- ``standing``: ``SECONDS`` of game time, no controller (the kart at rest on its wheels).
- ``driving``: ``SECONDS`` of game time while a lease client sends, as ``kart_interface``
  does, a command to each of the four wheels every frame (50 Hz: the rear wheels driven
  toward ``DRIVE_WHEEL_RATE``, the front ones steered ``DRIVE_STEERING``, a circle of about
  5 m radius at about 5 m/s) and renews its lease every 0.5 s.

Each phase gives the process CPU seconds per game second (``cpu_s_per_game_s``: the
fraction of one core ``pylon_sim --rate 1`` costs, ``core_percent_at_rate_1`` in percent;
target < 25 %), the real-time factor it could reach alone lock-stepped on its CPU clock
(``real_time_factor_cpu``, target >= 5, i.e. <= 0.2 CPU s per game s) and on the wall
clock, the mean CPU ms per frame, and the share of the process CPU spent in physics
(``World.step``), LiDAR and GNSS sampling (``Sensing.cost``) and building and encoding
packets (``Stats.encode_seconds``, LiDAR included).

``python bench/bench_sim_kart.py [standing,driving]`` runs some phases; prints one JSON
object.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import socket
import sys
import tempfile
import time

import numpy as np
from pylon_protocol import packets, wire
from pylon_protocol.threads import limit_threads
from pylon_sim.game import rover
from pylon_sim.loop.runtime import Simulator
from pylon_sim.loop.scenario import load_scenario
from pylon_testing.scenarios import write_scenario
import yaml

SECONDS = 30.0
WARMUP = 1.0                   # game s before the window (the first packets, the settling)
GNSS = {'kind': 'gnss', 'index': 1, 'sensor_id': 'gnss', 'frame_id': 'gnss_link'}
DRIVE_WHEEL_RATE = 40.0        # rad/s of the rear wheels (5.6 m/s on 0.14 m wheels)
DRIVE_STEERING = 0.2           # rad of the front wheels
LEASE_RENEW = 0.5              # game s
TARGET_CORE_PERCENT = 25.0
TARGET_REAL_TIME_FACTOR = 5.0


def scenario_path(folder: Path) -> str:
    """Write the kart scenario with a GNSS receiver and without its camera; return its path."""
    path = write_scenario(folder, 'kart', lean=False, modules={'kart': {'kartChassis': [GNSS]}})
    data = yaml.safe_load(Path(path).read_text(encoding='utf-8'))
    for vessel in data['vessels']:
        vessel['parts'] = [p for p in vessel['parts'] if p['name'] != 'pylonCamera']
    Path(path).write_text(yaml.safe_dump(data), encoding='utf-8')
    return path


class Driver:
    """A lease client over UDP: a command to every wheel each frame, the lease renewed."""

    def __init__(self, sim: Simulator, address: tuple[str, int]) -> None:
        """Send to the simulator's command socket at ``address``."""
        self.sim, self.address = sim, address
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.wheels = list(sim.world.wheel_params(sim.world.active).names)
        self.sequence = 0
        self.renewed_at: float | None = None

    def _send(self, type_name: str, **fields) -> None:
        self.sequence += 1
        packet = packets.build_command(
            type_name, self.sim.envelope, vesselId=self.sim.world.active.vessel_id,
            controllerId='bench', leaseId='bench-lease', sequence=self.sequence, **fields)
        self.sock.sendto(wire.encode_command(packet), self.address)

    def __call__(self) -> None:
        """Send this frame's commands (before the frame that reads them)."""
        clock = self.sim.clock
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
    drive = Driver(sim, commands.getsockname()) if driving else None
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
        'core_percent_at_rate_1': round(100.0 * per_game_s, 1),
        'real_time_factor_cpu': round(SECONDS / cpu, 2),
        'real_time_factor_wall': round(SECONDS / wall, 2),
        'frame_cpu_ms': round(cpu / count * 1e3, 3),
        'share_of_cpu': {k: round(v, 3) for k, v in shares.items()},
        'kart_ground_speed_mps': round(speed, 2),
        'pass': 100.0 * per_game_s < TARGET_CORE_PERCENT
        and SECONDS / cpu >= TARGET_REAL_TIME_FACTOR,
    }


def main() -> None:
    """Run the phases asked for (both by default) and print one JSON object."""
    limit_threads()
    if hasattr(os, 'sched_setaffinity'):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    phases = sys.argv[1].split(',') if len(sys.argv) > 1 else ['standing', 'driving']
    result: dict = {'benchmark': 'sim_kart', 'scenario': 'kart (LiDAR 2D + GNSS, no camera)',
                    'target_core_percent_at_rate_1': TARGET_CORE_PERCENT,
                    'target_real_time_factor': TARGET_REAL_TIME_FACTOR}
    with tempfile.TemporaryDirectory() as folder:
        path = scenario_path(Path(folder))
        for name in phases:
            result[name] = phase(path, driving=name == 'driving')
    print(json.dumps(result))


if __name__ == '__main__':
    main()
