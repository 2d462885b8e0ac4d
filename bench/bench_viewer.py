"""pylon_viewer: its CPU with one client subscribed to everything, and the latency it adds.

``pylon_sim --rate 1`` flies the orbit scenario with its camera at 640x480 (a copy of the
scenario; every other sensor at its shipped rate), ``udp_bridge`` publishes it, and
``pylon_viewer`` serves the graph (``pylon_testing.bench``: a domain and ports of its
own). The bench is the client (``pylon_testing.foxglove_client``, a real protocol client)
and also a direct rclpy subscriber of the IMU, in the same process.

1. **idle**: the viewer's CPU (``utime + stime`` from ``/proc``, % of one core) over
   ``SECONDS`` with no client connected: the graph poll and nothing else.
2. **everything**: one client subscribed to every channel; after ``WARMUP_SEC`` the
   viewer's CPU over ``SECONDS``, and what the client received per channel (messages/s,
   MB/s).
3. **latency** (same window): each IMU sample received both directly and through the
   viewer (matched by stamp); the client's receipt minus the direct subscriber's (the
   extra time the viewer's path takes: its raw subscription, the SDK, the WebSocket),
   and the client's receipt minus the viewer's log time (its own receipt, on the same
   wall clock): p50, p99, max.

Prints one JSON object on the last line of stdout.
"""

from __future__ import annotations

import os
from pathlib import Path
import sys
import time

from pylon_common import topics
from pylon_testing.bench import BenchError, BenchNode, BenchSession, cpu_seconds, percentile, run
from pylon_testing.foxglove_client import FoxgloveClient
from pylon_testing.scenarios import write_scenario
from pylon_testing.stack import start_stack
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import Imu
import yaml

SECONDS = 20.0
WARMUP_SEC = 3.0
CAMERA_WIDTH, CAMERA_HEIGHT = 640, 480
IMU = topics.name('imu')
IMAGE = topics.name('camera', id='camera_front')
START_TIMEOUT_SEC = 60.0


def scenario_with_big_camera(directory: Path) -> str:
    """Write the orbit scenario with every sensor and its camera at 640x480; return the path."""
    path = Path(write_scenario(directory, 'orbit', lean=False))
    data = yaml.safe_load(path.read_text(encoding='utf-8'))
    cameras = [module for vessel in data['vessels'] for part in vessel['parts']
               for module in part.get('modules') or () if module['kind'] == 'camera']
    if not cameras:
        raise BenchError('the orbit scenario has no camera')
    for module in cameras:
        module.update(width=CAMERA_WIDTH, height=CAMERA_HEIGHT)
    path.write_text(yaml.safe_dump(data), encoding='utf-8')
    return str(path)


def cpu_percent(bench: BenchNode, pid: int, seconds: float, every) -> float:
    """Return the CPU of ``pid`` over ``seconds`` of spinning, in % of one core."""
    t0, c0 = time.monotonic(), cpu_seconds(pid)
    bench.spin_for(seconds, every)
    return round(100.0 * (cpu_seconds(pid) - c0) / (time.monotonic() - t0), 1)


def _stats(values: list[float]) -> dict:
    if not values:
        return {'count': 0}
    return {'count': len(values), 'p50_ms': round(percentile(values, 0.5) * 1e3, 2),
            'p99_ms': round(percentile(values, 0.99) * 1e3, 2),
            'max_ms': round(max(values) * 1e3, 2)}


def received(client: FoxgloveClient, subscriptions: dict[int, str], start: float,
             end: float) -> dict:
    """Return per topic the messages/s and MB/s the client received in [start, end]."""
    span = end - start
    out = {}
    for subscription, topic in sorted(subscriptions.items(), key=lambda item: item[1]):
        inside = [r for r in client.received[subscription] if start <= r.received <= end]
        if inside:
            out[topic] = {'msgs_per_s': round(len(inside) / span, 2),
                          'mb_per_s': round(sum(r.size for r in inside) / span / 1e6, 3)}
    return out


def imu_latency(client: FoxgloveClient, subscription: int, direct: dict, start: float,
                end: float) -> dict:
    """Return the IMU latencies through the viewer against the direct subscriber."""
    extra, leg = [], []
    for item in client.received[subscription]:
        if not start <= item.received <= end:
            continue
        stamp = deserialize_message(item.payload, Imu).header.stamp
        seen = direct.get((stamp.sec, stamp.nanosec))
        if seen is not None:
            extra.append(item.received - seen)
        leg.append((item.received_ns - item.log_time_ns) * 1e-9)
    return {'through_viewer_minus_direct': _stats(extra),
            'viewer_receipt_to_client': _stats(leg)}


def start(session: BenchSession) -> tuple:
    """Start simulator, bridge and viewer; return the viewer process and its address."""
    scenario = scenario_with_big_camera(session.log_dir)
    start_stack(session.group.start, session.take_port, scenario, sim_args=['--rate', '1'],
                check_packets=False)
    viewer = session.group.start(['pylon_viewer', '--ros-args', '-p', 'port:=0'],
                                 name='viewer')
    found = viewer.wait_for_output(r'live view on (ws://\S+)', timeout=START_TIMEOUT_SEC)
    argv = Path(f'/proc/{viewer.pid}/cmdline').read_bytes().split(b'\0')
    if b'python' not in Path(argv[0].decode()).name.encode():
        raise BenchError(f'pid {viewer.pid} is not the Python process of pylon_viewer')
    return viewer, found.group(1)


def measure(session: BenchSession) -> dict:
    """Run the phases; return the benchmark's JSON object."""
    viewer, url = start(session)
    check = session.group.check
    with BenchNode('bench_viewer') as bench:
        direct: dict = {}
        bench.node.create_subscription(
            Imu, IMU, lambda m: direct.setdefault((m.header.stamp.sec, m.header.stamp.nanosec),
                                                  time.monotonic()),
            topics.qos('imu', reader=True))
        with FoxgloveClient(url) as probe:          # the stack is up: the channels came
            probe.until(lambda: probe.channel(IMAGE) and probe.channel(IMU),
                        'the camera and the IMU advertised', START_TIMEOUT_SEC, check)
        idle = cpu_percent(bench, viewer.pid, SECONDS, check)
        with FoxgloveClient(url) as client:
            client.until(lambda: client.channel(IMAGE) and client.channel(IMU),
                         'the channels advertised', START_TIMEOUT_SEC, check)
            subscriptions = {client.subscribe(c['id'], keep=c['topic'] == IMU): c['topic']
                             for c in list(client.channels.values())}
            bench.spin_for(WARMUP_SEC, check)
            t0 = time.monotonic()
            busy = cpu_percent(bench, viewer.pid, SECONDS, check)
            t1 = time.monotonic()
            imu_subscription = next(s for s, t in subscriptions.items() if t == IMU)
            latency = imu_latency(client, imu_subscription, direct, t0, t1)
            streams = received(client, subscriptions, t0, t1)
    return {'benchmark': 'viewer', 'cpus': os.cpu_count(),
            'loadavg_1min_at_end': round(os.getloadavg()[0], 2),
            'camera': f'{CAMERA_WIDTH}x{CAMERA_HEIGHT}', 'window_seconds': SECONDS,
            'viewer_cpu_percent_of_one_core': {'idle_no_client': idle,
                                               'one_client_every_channel': busy},
            'channels_subscribed': len(subscriptions),
            'client_received_total': {
                'msgs_per_s': round(sum(s['msgs_per_s'] for s in streams.values()), 1),
                'mb_per_s': round(sum(s['mb_per_s'] for s in streams.values()), 2)},
            'imu_latency': latency, 'per_topic': streams,
            'runtime_seconds': session.runtime_seconds()}


def main() -> int:
    """Measure and print one JSON object."""
    return run('bench_viewer', measure)


if __name__ == '__main__':
    sys.exit(main())
