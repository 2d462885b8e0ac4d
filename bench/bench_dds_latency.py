"""DDS round trip between two processes of the native environment (Fast DDS, localhost).

The parent publishes VesselLifecycle pings (Reliable, Volatile); a child process echoes
them back; the parent records round-trip times. A second measure is the time a late
Transient Local subscriber takes to receive a latched message. Prints one JSON object.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

from pylon_interfaces.msg import VesselLifecycle
from pylon_testing.isolation import claim_domain_id
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

PINGS = 500
PING_PERIOD_SEC = 0.005
RELIABLE = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)


def make_node(name: str) -> tuple:
    """Create a node in a context of its own, with an executor."""
    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node(name, context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    return context, node, executor


def echo() -> None:
    """Child: echo /bench/ping to /bench/pong and publish one latched message."""
    context, node, executor = make_node('bench_echo')
    pong = node.create_publisher(VesselLifecycle, '/bench/pong', RELIABLE)
    node.create_subscription(VesselLifecycle, '/bench/ping', pong.publish, RELIABLE)
    latched = node.create_publisher(VesselLifecycle, '/bench/latched', LATCHED)
    latched.publish(VesselLifecycle(vessel_id='latched'))
    print('ready', flush=True)
    try:
        while context.ok():
            executor.spin_once(timeout_sec=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        rclpy.try_shutdown(context=context)


def spin_until(executor, condition, timeout: float) -> bool:
    """Spin until ``condition()``; return False after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        executor.spin_once(timeout_sec=0.01)
    return True


def main() -> None:
    """Parent: start the echo, measure, print JSON."""
    domain_id, claim = claim_domain_id()
    env = {**os.environ, 'ROS_DOMAIN_ID': str(domain_id),
           'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}
    os.environ.update(env)
    child = subprocess.Popen([sys.executable, __file__, 'echo'], env=env,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == 'ready'
        context, node, executor = make_node('bench_ping')
        got_latched: list[float] = []
        t_join = time.monotonic()
        node.create_subscription(VesselLifecycle, '/bench/latched',
                                 lambda _: got_latched.append(time.monotonic()), LATCHED)
        if not spin_until(executor, lambda: got_latched, 30.0):
            raise RuntimeError('latched message never arrived')
        late_join_ms = (got_latched[0] - t_join) * 1e3

        sent: dict[int, float] = {}
        rtts: list[float] = []
        node.create_subscription(
            VesselLifecycle, '/bench/pong',
            lambda m: rtts.append(time.monotonic() - sent[m.origin_sequence]), RELIABLE)
        ping = node.create_publisher(VesselLifecycle, '/bench/ping', RELIABLE)
        if not spin_until(executor, lambda: ping.get_subscription_count() > 0, 30.0):
            raise RuntimeError('echo never matched')
        warmup = 20
        for seq in range(PINGS + warmup):
            sent[seq] = time.monotonic()
            ping.publish(VesselLifecycle(origin_sequence=seq))
            spin_until(executor, lambda s=seq: len(rtts) > s, PING_PERIOD_SEC * 200)
        spin_until(executor, lambda: len(rtts) >= PINGS + warmup, 5.0)
        samples = sorted(r * 1e3 for r in rtts[warmup:])
        quantile = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))]  # noqa: E731
        print(json.dumps({
            'benchmark': 'dds_latency',
            'rmw': os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp'),
            'message': 'pylon_interfaces/msg/VesselLifecycle',
            'pings': PINGS, 'received': len(samples),
            'round_trip_ms': {'mean': round(statistics.fmean(samples), 3),
                              'p50': round(quantile(0.5), 3), 'p90': round(quantile(0.9), 3),
                              'p99': round(quantile(0.99), 3), 'max': round(samples[-1], 3)},
            'late_join_transient_local_ms': round(late_join_ms, 1),
        }))
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    finally:
        child.terminate()
        child.wait(timeout=10)
        claim.release()


if __name__ == '__main__':
    echo() if sys.argv[1:] == ['echo'] else main()
