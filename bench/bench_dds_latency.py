"""DDS round trip between two processes of the native environment (Fast DDS, localhost).

The parent publishes VesselLifecycle pings (Reliable, Volatile); a child process echoes
them back; the parent records round-trip times. A second measure is the time a late
Transient Local subscriber takes to receive a latched message. Both processes run in a
ROS domain of their own (``pylon_testing.bench``). Prints one JSON object.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

from pylon_interfaces.msg import VesselLifecycle
from pylon_testing.bench import (
    BenchError,
    BenchNode,
    BenchSession,
    percentile,
    run,
    START_TIMEOUT_SEC,
)
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

PINGS = 500
WARMUP_PINGS = 20
PING_PERIOD_SEC = 0.005
RELIABLE = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)


def echo() -> None:
    """Child: echo /bench/ping to /bench/pong and publish one latched message."""
    with BenchNode('bench_echo') as bench:
        pong = bench.node.create_publisher(VesselLifecycle, '/bench/pong', RELIABLE)
        bench.node.create_subscription(VesselLifecycle, '/bench/ping', pong.publish, RELIABLE)
        latched = bench.node.create_publisher(VesselLifecycle, '/bench/latched', LATCHED)
        latched.publish(VesselLifecycle(vessel_id='latched'))
        print('ready', flush=True)
        try:
            while bench.context.ok():
                bench.executor.spin_once(timeout_sec=0.1)
        except KeyboardInterrupt:
            pass


def late_join_ms(bench: BenchNode) -> float:
    """Return how long a new Transient Local subscriber takes to get the latched message."""
    got: list[float] = []
    joined = time.monotonic()
    bench.node.create_subscription(VesselLifecycle, '/bench/latched',
                                   lambda _: got.append(time.monotonic()), LATCHED)
    if not bench.spin_until(lambda: got, 30.0):
        raise BenchError('latched message never arrived')
    return (got[0] - joined) * 1e3


def round_trips_ms(bench: BenchNode) -> list[float]:
    """Ping the echo PINGS times (after WARMUP_PINGS); return the round trips, sorted (ms)."""
    sent: dict[int, float] = {}
    rtts: list[float] = []
    bench.node.create_subscription(
        VesselLifecycle, '/bench/pong',
        lambda m: rtts.append(time.monotonic() - sent[m.origin_sequence]), RELIABLE)
    ping = bench.node.create_publisher(VesselLifecycle, '/bench/ping', RELIABLE)
    if not bench.spin_until(lambda: ping.get_subscription_count() > 0, 30.0):
        raise BenchError('echo never matched')
    for seq in range(PINGS + WARMUP_PINGS):
        sent[seq] = time.monotonic()
        ping.publish(VesselLifecycle(origin_sequence=seq))
        bench.spin_until(lambda s=seq: len(rtts) > s, PING_PERIOD_SEC * 200)
    bench.spin_until(lambda: len(rtts) >= PINGS + WARMUP_PINGS, 5.0)
    return sorted(r * 1e3 for r in rtts[WARMUP_PINGS:])


def measure(session: BenchSession) -> dict:
    """Start the echo, measure; return the benchmark's JSON object."""
    child = session.group.start([sys.executable, __file__, 'echo'], name='echo', pipes=True)
    child.wait_for_line('^ready$', START_TIMEOUT_SEC)
    with BenchNode('bench_ping') as bench:      # joins late: discovery is part of the figure
        late_join = late_join_ms(bench)
        samples = round_trips_ms(bench)
    return {
        'benchmark': 'dds_latency',
        'rmw': os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp'),
        'message': 'pylon_interfaces/msg/VesselLifecycle',
        'pings': PINGS, 'received': len(samples),
        'round_trip_ms': {'mean': round(statistics.fmean(samples), 3),
                          'p50': round(percentile(samples, 0.5), 3),
                          'p90': round(percentile(samples, 0.9), 3),
                          'p99': round(percentile(samples, 0.99), 3),
                          'max': round(samples[-1], 3)},
        'late_join_transient_local_ms': round(late_join, 1),
    }


def main() -> int:
    """Parent: start the echo, measure, print JSON."""
    return run('bench_dds_latency', measure)


if __name__ == '__main__':
    if sys.argv[1:] == ['echo']:
        echo()
    else:
        sys.exit(main())
