"""pylon_sim speed: the orbit scenario lock-stepped for 120 simulated seconds.

The scenario carries every sensor kind (a star tracker, a 3D LiDAR of 1 024 rays at 10 Hz,
a 320x240 RGB camera at 5 Hz), so the figure includes ray casting and rendering; the
target is 5x real time.

Every packet is built, validated, encoded and sent to a bound local UDP socket (the kernel
queues and then drops what nobody reads, so no reader competes for the core). The process
is pinned to one core. Prints the real-time factor and the cost per packet type.
"""

from __future__ import annotations

import json
import os
import socket
import time

from pylon_sim.runtime import Simulator
from pylon_sim.scenario import load_scenario

SIM_SECONDS = 120.0


def main() -> None:
    """Run the benchmark and print one JSON object."""
    if hasattr(os, 'sched_setaffinity'):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(('127.0.0.1', 0))
    sim = Simulator(load_scenario('orbit'), state_addr=receiver.getsockname(), seed=1)
    start_cpu, start = time.process_time(), time.perf_counter()
    sim.run(rate=0.0, duration=SIM_SECONDS)
    wall = time.perf_counter() - start
    cpu = time.process_time() - start_cpu
    receiver.close()
    sim.close()
    sent = sim.stats.sent
    per_type = {
        name: {'packets': sent[name],
               'per_sim_second': round(sent[name] / SIM_SECONDS, 2),
               'mean_bytes': round(sim.stats.sent_bytes[name] / sent[name]),
               'build_encode_us': round(sim.stats.encode_seconds[name] / sent[name] * 1e6, 1)}
        for name in sorted(sent)}
    encode_total = sum(sim.stats.encode_seconds.values())
    print(json.dumps({
        'benchmark': 'sim_orbit',
        'scenario': 'orbit', 'sim_seconds': SIM_SECONDS, 'frames': sim.stats.frames,
        'wall_seconds': round(wall, 3), 'cpu_seconds': round(cpu, 3),
        'real_time_factor': round(SIM_SECONDS / wall, 2),
        'target_real_time_factor': 5.0, 'pass': SIM_SECONDS / wall >= 5.0,
        'packets': sum(sent.values()),
        'share_of_wall': {'build_encode': round(encode_total / wall, 3)},
        'per_type': per_type,
    }))


if __name__ == '__main__':
    main()
