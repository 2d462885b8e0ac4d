"""End to end: a BodyWrenchCommand's publish to its WrenchFeedback's receipt.

pylon_sim (orbit, real time) and udp_bridge run as processes; this process acquires a
lease, publishes wrench commands at 20 Hz (renewing the lease every 0.25 s) for
``SECONDS`` and records, per sequence, the time from its publish to the first feedback
that answers it. The path: DDS → bridge (validation, envelope, UDP) → simulator (authority,
safety filter, allocation at its next physics step, 50 Hz) → UDP → bridge → DDS. Prints one
JSON object with p50/p99/max in ms.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

SECONDS = 15.0
PERIOD_SEC = 0.05
START_TIMEOUT_SEC = 30.0
VESSEL = '5a7e1f0c3b2d4e6f8a9b0c1d2e3f4a5b'


def percentile(values: list[float], fraction: float) -> float:
    """Return the nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> int:
    """Run the benchmark; print one JSON object."""
    from pylon_testing.isolation import claim_domain_id, claim_udp_port
    domain, domain_claim = claim_domain_id()
    claims = [domain_claim]
    ports = []
    for _ in range(2):
        port, claim = claim_udp_port()
        ports.append(port)
        claims.append(claim)
    os.environ.update({'ROS_DOMAIN_ID': str(domain),
                       'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'})
    state_port, command_port = ports
    procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for cmd in (['udp_bridge', '--host', '127.0.0.1', '--port', str(state_port),
                          '--command-port', str(command_port)],
                         ['pylon_sim', '--scenario', 'orbit', '--state-port', str(state_port),
                          '--command-port', str(command_port)])]
    try:
        return measure()
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for claim in claims:
            claim.release()


def measure() -> int:
    """Acquire, command, collect the latencies; print the JSON."""
    from pylon_interfaces.msg import (
        BodyWrenchCommand,
        ControlAuthorityCommand,
        ControlAuthorityState,
        WrenchFeedback,
    )
    import rclpy
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    latched = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    rclpy.init()
    node = rclpy.create_node('bench_wrench')
    sent: dict[int, float] = {}
    answered: dict[int, float] = {}
    refused: list[str] = []
    owned = []

    def on_feedback(msg: WrenchFeedback) -> None:
        now = time.perf_counter()
        if msg.controller_id == 'bench' and msg.sequence in sent \
                and msg.sequence not in answered:
            answered[msg.sequence] = now
            if not msg.accepted:
                refused.append(msg.reason)

    def on_state(msg: ControlAuthorityState) -> None:
        if msg.controller_id == 'bench' and msg.state == ControlAuthorityState.STATE_OWNED:
            owned.append(True)

    node.create_subscription(WrenchFeedback, '/ksp_vessel/control/wrench_feedback',
                             on_feedback, reliable)
    node.create_subscription(ControlAuthorityState, '/ksp_vessel/control/authority/state',
                             on_state, latched)
    authority = node.create_publisher(ControlAuthorityCommand,
                                      '/ksp_vessel/control/authority/command', reliable)
    wrench = node.create_publisher(BodyWrenchCommand, '/ksp_vessel/control/wrench_command',
                                   reliable)
    sequence = 0

    def command_authority(action: int) -> None:
        nonlocal sequence
        sequence += 1
        authority.publish(ControlAuthorityCommand(
            action=action, vessel_id=VESSEL, controller_id='bench', lease_id='bench-lease',
            lease_duration_sec=1.0, sequence=sequence))

    deadline = time.monotonic() + START_TIMEOUT_SEC
    next_try = 0.0
    while not owned:
        if time.monotonic() > deadline:
            print('bench_wrench: never got the lease', file=sys.stderr)
            return 1
        if time.monotonic() >= next_try and authority.get_subscription_count() and \
                wrench.get_subscription_count():
            command_authority(ControlAuthorityCommand.ACTION_ACQUIRE)
            next_try = time.monotonic() + 0.5
        rclpy.spin_once(node, timeout_sec=0.05)
    start = time.monotonic()
    next_send = next_renew = start
    while time.monotonic() - start < SECONDS:
        now = time.monotonic()
        if now >= next_renew:
            command_authority(ControlAuthorityCommand.ACTION_RENEW)
            next_renew += 0.25
        if now >= next_send:
            sequence += 1
            msg = BodyWrenchCommand(vessel_id=VESSEL, controller_id='bench',
                                    lease_id='bench-lease', sequence=sequence, timeout_sec=0.5)
            msg.wrench.torque.z = 20.0
            sent[sequence] = time.perf_counter()
            wrench.publish(msg)
            next_send += PERIOD_SEC
        rclpy.spin_once(node, timeout_sec=max(0.0, min(next_send, next_renew) - now))
    settle = time.monotonic() + 1.0
    while time.monotonic() < settle:
        rclpy.spin_once(node, timeout_sec=0.05)
    command_authority(ControlAuthorityCommand.ACTION_RELEASE)
    node.destroy_node()
    rclpy.try_shutdown()
    latencies = [(answered[s] - t) * 1e3 for s, t in sent.items() if s in answered]
    if not latencies:
        print('bench_wrench: no feedback', file=sys.stderr)
        return 1
    print(json.dumps({
        'benchmark': 'wrench_end_to_end', 'scenario': 'orbit', 'period_sec': PERIOD_SEC,
        'commands': len(sent), 'answered': len(latencies), 'refused': sorted(set(refused)),
        'latency_ms': {'p50': round(percentile(latencies, 0.5), 3),
                       'p99': round(percentile(latencies, 0.99), 3),
                       'max': round(max(latencies), 3),
                       'mean': round(statistics.fmean(latencies), 3)},
        'physics_step_ms': 20.0,
    }))
    return 0


if __name__ == '__main__':
    sys.exit(main())
