"""End to end: a BodyWrenchCommand's publish to its WrenchFeedback's receipt.

pylon_sim (orbit, real time) and udp_bridge run as processes (``pylon_testing.bench``, the
harness of the tests); this process acquires a lease, publishes wrench commands at 20 Hz
(renewing the lease every 0.25 s) for ``SECONDS`` and records, per sequence, the time
from its publish to the first feedback that answers it. The path: DDS → bridge
(validation, envelope, UDP) → simulator (authority, safety filter, allocation at its next
physics step, 50 Hz) → UDP → bridge → DDS. Prints one JSON object with p50/p99/max in ms.
"""

from __future__ import annotations

import statistics
import sys
import time

from pylon_common import topics
from pylon_testing.bench import (
    BenchError,
    BenchNode,
    BenchSession,
    percentile,
    run,
    START_TIMEOUT_SEC,
)
from pylon_testing.pilot import SAT
from pylon_testing.stack import start_stack

SECONDS = 15.0
PERIOD_SEC = 0.05
RENEW_PERIOD_SEC = 0.25
ACQUIRE_RETRY_SEC = 0.5
SETTLE_SEC = 1.0
CONTROLLER_ID = 'bench'
LEASE_ID = 'bench-lease'
LEASE_DURATION_SEC = 1.0
COMMAND_TIMEOUT_SEC = 0.5
TORQUE_Z_NM = 20.0


class WrenchClient:
    """A lease holder that commands wrenches and times the feedback that answers each one."""

    def __init__(self, bench: BenchNode) -> None:
        """Create the authority and wrench publishers and the state and feedback readers."""
        from pylon_interfaces.msg import (
            BodyWrenchCommand,
            ControlAuthorityCommand,
            ControlAuthorityState,
        )
        self.bench = bench
        self.Authority, self.Wrench = ControlAuthorityCommand, BodyWrenchCommand
        self.OWNED = ControlAuthorityState.STATE_OWNED
        self.sent: dict[int, float] = {}
        self.answered: dict[int, float] = {}
        self.refused: list[str] = []
        self.owned = False
        self.sequence = 0
        node = bench.node
        self.subscriptions = [
            node.create_subscription(
                topics.message_class(key), topics.name(key), callback,
                topics.qos(key, reader=True))
            for key, callback in (('control/wrench_feedback', self._on_feedback),
                                  ('control/authority/state', self._on_state))]
        self.authority = node.create_publisher(
            ControlAuthorityCommand, topics.name('control/authority/command'),
            topics.qos('control/authority/command'))
        self.wrench = node.create_publisher(
            BodyWrenchCommand, topics.name('control/wrench_command'),
            topics.qos('control/wrench_command'))

    def _on_feedback(self, msg) -> None:
        now = time.perf_counter()
        if msg.controller_id == CONTROLLER_ID and msg.sequence in self.sent \
                and msg.sequence not in self.answered:
            self.answered[msg.sequence] = now
            if not msg.accepted:
                self.refused.append(msg.reason)

    def _on_state(self, msg) -> None:
        if msg.controller_id == CONTROLLER_ID and msg.state == self.OWNED:
            self.owned = True

    def command_authority(self, action: int) -> None:
        """Publish an authority command with the next sequence number."""
        self.sequence += 1
        self.authority.publish(self.Authority(
            action=action, vessel_id=SAT, controller_id=CONTROLLER_ID, lease_id=LEASE_ID,
            lease_duration_sec=LEASE_DURATION_SEC, sequence=self.sequence))

    def acquire(self) -> None:
        """Ask for the lease every 0.5 s once the bridge listens, until it is granted."""
        next_try = [0.0]

        def granted() -> bool:
            listening = self.authority.get_subscription_count() and \
                self.wrench.get_subscription_count()
            if not self.owned and listening and time.monotonic() >= next_try[0]:
                self.command_authority(self.Authority.ACTION_ACQUIRE)
                next_try[0] = time.monotonic() + ACQUIRE_RETRY_SEC
            return self.owned
        if not self.bench.spin_until(granted, START_TIMEOUT_SEC):
            raise BenchError('never got the lease')

    def command(self, seconds: float) -> None:
        """Send a wrench every PERIOD_SEC and renew every RENEW_PERIOD_SEC for ``seconds``."""
        start = time.monotonic()
        next_send = next_renew = start
        while time.monotonic() - start < seconds:
            now = time.monotonic()
            if now >= next_renew:
                self.command_authority(self.Authority.ACTION_RENEW)
                next_renew += RENEW_PERIOD_SEC
            if now >= next_send:
                self.sequence += 1
                msg = self.Wrench(vessel_id=SAT, controller_id=CONTROLLER_ID,
                                  lease_id=LEASE_ID, sequence=self.sequence,
                                  timeout_sec=COMMAND_TIMEOUT_SEC)
                msg.wrench.torque.z = TORQUE_Z_NM
                self.sent[self.sequence] = time.perf_counter()
                self.wrench.publish(msg)
                next_send += PERIOD_SEC
            self.bench.executor.spin_once(
                timeout_sec=max(0.0, min(next_send, next_renew) - now))

    def latencies_ms(self) -> list[float]:
        """Return the publish-to-feedback time of every answered command (ms)."""
        return [(self.answered[s] - t) * 1e3 for s, t in self.sent.items()
                if s in self.answered]


def measure(session: BenchSession) -> dict:
    """Start the stack, acquire, command, collect the latencies; return the JSON object."""
    start_stack(session.group.start, session.take_port, check_packets=False)
    with BenchNode('bench_wrench') as bench:
        client = WrenchClient(bench)
        client.acquire()
        client.command(SECONDS)
        bench.spin_for(SETTLE_SEC, session.group.check)
        client.command_authority(client.Authority.ACTION_RELEASE)
    latencies = client.latencies_ms()
    if not latencies:
        raise BenchError('no feedback')
    return {
        'benchmark': 'wrench_end_to_end', 'scenario': 'orbit', 'period_sec': PERIOD_SEC,
        'commands': len(client.sent), 'answered': len(latencies),
        'refused': sorted(set(client.refused)),
        'latency_ms': {'p50': round(percentile(latencies, 0.5), 3),
                       'p99': round(percentile(latencies, 0.99), 3),
                       'max': round(max(latencies), 3),
                       'mean': round(statistics.fmean(latencies), 3)},
        'physics_step_ms': 20.0,
    }


def main() -> int:
    """Run the benchmark; print one JSON object."""
    return run('bench_wrench', measure)


if __name__ == '__main__':
    sys.exit(main())
