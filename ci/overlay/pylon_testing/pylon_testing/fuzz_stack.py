"""A live fuzz run: pylon_sim and udp_bridge as real processes, fuzz from a process of its own.

Hostile datagrams come from a sender process of their own; what a subscriber and the bridge
say about it is the result.

``BridgeFuzz(start, take_port, recorder)`` starts the simulator (``orbit`` at real time,
its valid stream to the bridge) and the bridge on ports of their own, with any process
starter of the shape ``start(cmd, name=..., pipes=...)`` (the ``ros_process`` fixture, a
benchmark's ``ProcessGroup.start``), and subscribes the recorder to the IMU, the vessel
lifecycle and the bridge's diagnostics. ``warm()`` waits for the valid stream;
``run(count, seed)`` sends ``count`` datagrams with ``python -m pylon_testing.fuzz state``
at the same port and returns the figures both the benchmark and the test report:

- the sender's datagrams by kind and their rate, the bridge's datagrams received per
  second over the same time (its diagnostics);
- the bridge's VmRSS before, at its sampled peak and after (``/proc``);
- whether the bridge and the simulator still run, and the tracebacks in their logs
  (an exception escaping a callback or the receive thread is printed there);
- the bridge's counters over the run (received, accepted, dropped by reason, ignored) and
  the kernel's drops on its socket;
- the valid stream: the longest gap between the stamps of consecutive IMU messages the
  subscriber received while the fuzz ran (KSP time through the bridge, not the wall
  clock) against the bridge's topic timeout, and every lifecycle message of the run
  (all ACTIVE, one generation), counted by state/generation/reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
import json
import re
import sys
import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from pylon_bridge import config as bridge_config
from pylon_common import topics
from pylon_interfaces.msg import VesselLifecycle
from sensor_msgs.msg import Imu

from pylon_testing.bench import number, status_kb, udp_socket_state
from pylon_testing.recorder import stamp_of, TopicRecorder
from pylon_testing.stack import SimStack, start_stack

DATAGRAMS_STATUS = 'pylon_bridge: datagrams'
TOPIC_TIMEOUT_SEC = bridge_config.defaults().topic_timeout_sec
"""The bridge's ``--topic-timeout-sec`` (the run keeps the default): the longest gap the
valid stream may have before the session would turn STALE and its topics go."""
RSS_GROWTH_LIMIT_MB = 20.0
"""The bridge's VmRSS may grow less than this over a fuzz run (before to after)."""
WARM_IMU = 30
START_TIMEOUT_SEC = 60.0
MIN_RATE_PER_SEC = 40.0
"""The slowest rate the run's timeout allows for: a liveness bound, not a throughput
figure (``bench/bench_fuzz.py`` measures that). Alone the test sends about 750 a second;
two suites side by side left the bridge under 50 a second (6 000 not sent in 120 s)."""
RSS_SAMPLE_SEC = 0.5
DRAIN_TIMEOUT_SEC = 30.0
TRACEBACK = re.compile(r'^(Traceback \(most recent call last\)|Exception in thread)',
                       re.MULTILINE)


def counters(report: DiagnosticArray | None) -> dict[str, int]:
    """Return the integer values of the bridge's datagram status in one diagnostics report."""
    for status in (report.status if report is not None else ()):
        if status.name == DATAGRAMS_STATUS:
            return {kv.key: int(kv.value) for kv in status.values if kv.value.isdigit()}
    return {}


def delta(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """Return ``after - before`` per key, without the keys that did not change."""
    return {key: value - before.get(key, 0) for key, value in sorted(after.items())
            if value != before.get(key, 0)}


def max_gap(stamps: list[float]) -> float | None:
    """Return the longest interval between consecutive stamps (None with fewer than two)."""
    return max((b - a for a, b in zip(stamps, stamps[1:])), default=None)


def tracebacks(log: str) -> list[str]:
    """Return the first lines of every traceback in a process log."""
    return [log[m.start():m.start() + 400] for m in TRACEBACK.finditer(log)]


class BridgeFuzz:
    """A simulator, a bridge and a recorder of what the bridge publishes, to be fuzzed."""

    def __init__(self, start: Callable[..., Any], take_port: Callable[[], int],
                 recorder: TopicRecorder, scenario: str = 'orbit') -> None:
        """Start the stack (the simulator unchecked, as in production) and subscribe."""
        self.processes: dict[str, Any] = {}
        self._start = start

        def keep(cmd: list[str], name: str | None = None, **kwargs: Any) -> Any:
            self.processes[name] = process = start(cmd, name=name, **kwargs)
            return process
        self.stack: SimStack = start_stack(keep, take_port, scenario, check_packets=False)
        self.bridge, self.sim = self.processes['bridge'], self.processes['sim']
        self.scenario = scenario
        self.rec = recorder
        recorder.add('imu', topics.name('imu'), Imu, topics.qos('imu', reader=True))
        recorder.add('life', topics.name('lifecycle'), VesselLifecycle,
                     topics.qos('lifecycle', reader=True))
        recorder.add('diag', topics.name('diagnostics'), DiagnosticArray,
                     topics.qos('diagnostics', reader=True))

    def check(self) -> None:
        """Raise (with the log's tail) if the bridge or the simulator exited."""
        self.bridge.check()
        self.sim.check()

    def warm(self) -> VesselLifecycle:
        """Wait for an ACTIVE vessel, ``WARM_IMU`` IMU messages and diagnostics."""
        def ready() -> bool:
            self.check()
            life = self.rec.last('life')
            return (life is not None and life.state == VesselLifecycle.STATE_ACTIVE
                    and len(self.rec.got['imu']) >= WARM_IMU and bool(self.rec.got['diag']))
        self.rec.until(ready, 'an ACTIVE vessel, its IMU and the diagnostics',
                       START_TIMEOUT_SEC)
        return self.rec.last('life')

    def run(self, count: int, seed: int) -> dict[str, Any]:
        """Send ``count`` fuzzed datagrams; return the figures of the run (module doc)."""
        life = self.warm()
        before = counters(self.rec.last('diag'))
        kernel_before = (udp_socket_state(self.stack.state_port) or (0, 0))[1]
        rss = {'before': status_kb(self.bridge.pid, 'VmRSS')}
        rss['peak'] = rss['before']
        mark = self.rec.mark()
        sender = self._start([sys.executable, '-m', 'pylon_testing.fuzz', 'state', '--port',
                              str(self.stack.state_port), '--admin-port',
                              str(self.stack.admin_port), '--count', str(count), '--seed',
                              str(seed), '--scenario', self.scenario],
                             name='fuzz_sender', pipes=True)
        done = self._wait_done(sender, count, rss)
        self._drain()
        end_mark = self.rec.mark()
        self._next_report()
        rss['after'] = status_kb(self.bridge.pid, 'VmRSS')
        after = counters(self.rec.last('diag'))
        imu = self.rec.got['imu'][mark['imu']:end_mark['imu']]
        lives = self.rec.got['life'][mark['life']:]
        seconds = done['end'] - done['start']
        gap = max_gap([stamp_of(m) for m in imu])
        return {
            'datagrams': done['sent'], 'by_kind': done['by_kind'],
            'send_errors': done['send_errors'], 'neutralised': done['neutralised'],
            'sender_pauses': done['pauses'], 'corpus_packets': done['corpus_packets'],
            'corpus_types': len(done['corpus_types']), 'seed': seed,
            'seconds': round(seconds, 2),
            'datagrams_per_s': round(done['sent'] / seconds, 1),
            'bridge': self._bridge_figures(before, after, kernel_before, seconds),
            'rss_mb': {key: round(value / 1024.0, 1) for key, value in rss.items()},
            'rss_growth_mb': round((rss['after'] - rss['before']) / 1024.0, 1),
            'imu': {'received': len(imu),
                    'max_gap_s': None if gap is None else round(gap, 3),
                    'topic_timeout_s': TOPIC_TIMEOUT_SEC},
            'lifecycle': {'generation': life.generation,
                          'messages': dict(Counter(f'{m.state}/{m.generation}/{m.reason}'
                                                   for m in lives)),
                          'all_active_same_generation': all(
                              m.state == VesselLifecycle.STATE_ACTIVE
                              and m.generation == life.generation for m in lives)},
            'running': {'bridge': self.bridge.returncode is None,
                        'sim': self.sim.returncode is None},
            'tracebacks': {name: tracebacks(p.log()) for name, p in (
                ('bridge', self.bridge), ('sim', self.sim), ('fuzz_sender', sender))},
        }

    def _wait_done(self, sender: Any, count: int, rss: dict[str, int]) -> dict[str, Any]:
        """Spin until the sender prints ``done``, sampling the bridge's VmRSS meanwhile."""
        found: list[str] = []
        sampled = [time.monotonic()]

        def finished() -> bool:
            self.check()
            if time.monotonic() - sampled[0] >= RSS_SAMPLE_SEC:
                rss['peak'] = max(rss['peak'], status_kb(self.bridge.pid, 'VmRSS'))
                sampled[0] = time.monotonic()
            found[:] = [line for line in sender.output_lines() if line.startswith('done ')]
            if not found and sender.returncode is not None:
                raise AssertionError(f'the fuzz sender exited with {sender.returncode}:\n'
                                     f'{sender.log_tail()}')
            return bool(found)
        self.rec.until(finished, f'{count} fuzzed datagrams sent',
                       START_TIMEOUT_SEC + count / MIN_RATE_PER_SEC)
        return json.loads(found[0][len('done '):])

    def _drain(self) -> None:
        """Wait until the bridge's socket queue is empty (every datagram read)."""
        def drained() -> bool:
            self.check()
            state = udp_socket_state(self.stack.state_port)
            return state is None or state[0] == 0
        self.rec.until(drained, "the bridge's socket queue drained", DRAIN_TIMEOUT_SEC)

    def _next_report(self) -> None:
        """Wait for the bridge's next two diagnostics (the second covers the drained queue)."""
        mark = self.rec.mark()
        self.rec.until(lambda: self.check() or len(self.rec.messages('diag', mark)) >= 2,
                       'two more diagnostics', START_TIMEOUT_SEC)

    def _bridge_figures(self, before: dict[str, int], after: dict[str, int],
                        kernel_before: int, seconds: float) -> dict[str, Any]:
        changed = delta(before, after)
        kernel_after = (udp_socket_state(self.stack.state_port) or (0, 0))[1]
        return {
            'received': changed.get('received', 0), 'accepted': changed.get('accepted', 0),
            'received_per_s': round(changed.get('received', 0) / seconds, 1),
            'dropped': {k[len('dropped.'):]: v for k, v in changed.items()
                        if k.startswith('dropped.')},
            'ignored': {k[len('ignored.'):]: v for k, v in changed.items()
                        if k.startswith('ignored.')},
            'kernel_drops': kernel_after - kernel_before,
        }


def passed(result: Mapping[str, Any],
           rss_growth_limit_mb: float = RSS_GROWTH_LIMIT_MB) -> dict[str, bool]:
    """Return each property of a run and whether it holds."""
    gap = result['imu']['max_gap_s']
    return {
        'bridge_and_sim_running': all(result['running'].values()),
        'no_traceback': not any(result['tracebacks'].values()),
        'rss_growth_below_limit': result['rss_growth_mb'] < rss_growth_limit_mb,
        'valid_stream_without_long_gap': gap is not None and gap < TOPIC_TIMEOUT_SEC,
        'lifecycle_active_throughout': result['lifecycle']['all_active_same_generation'],
        'every_datagram_read': result['bridge']['kernel_drops'] == 0,
    }


__all__ = ['BridgeFuzz', 'counters', 'delta', 'max_gap', 'number', 'passed',
           'RSS_GROWTH_LIMIT_MB', 'tracebacks']
