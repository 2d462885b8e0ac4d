"""What the benchmarks in ``bench/`` share, so that each of them is a thin script.

- ``run(name, measure)``: the body of a benchmark's ``main``. ``measure(session)`` gets a
  ``BenchSession`` (a claimed ROS domain and UDP ports, a ``ProcessGroup``, the environment
  of ``pylon_testing.isolation.isolate``) and returns the result; ``run`` prints it as one
  JSON object on the last line of stdout, or the reason on stderr (exit status 1).
- ``BenchNode``: the benchmark's rclpy node in a context of its own, spun until a
  condition holds (``pylon_testing.wait.spin_until``) or for a time, with a
  ``TopicRecorder`` on demand.
- ``BridgeMonitor``, ``start_bridge``, ``wait_for_bridge``, ``drop_counters``: a
  ``udp_bridge`` and its diagnostics (the reports with their receipt times).
- ``wait_for_line``: wait, spinning, for a line of a piped child (the benchmarks' senders
  are their own script run in another mode, told ``go`` and answering in JSON).
- ``/proc`` sampling: ``cpu_seconds`` (utime + stime), ``status_kb`` (``VmRSS``...),
  ``cmdline``, ``udp_socket_state`` (a socket's queue and drops).
- Summaries: ``percentile`` (nearest rank), ``number`` (a diagnostics value as a float).

Benchmarks measure on the wall clock (``time.monotonic``): that is what they are for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
import json
import os
from pathlib import Path
import re
import shutil
import sys
import tempfile
import time
from typing import Any

from pylon_common import topics
from pylon_protocol.threads import limit_threads

from pylon_testing.isolation import Claim, claim_domain_id, claim_udp_port, isolate
from pylon_testing.processes import ProcessError, ProcessGroup, RosProcess
from pylon_testing.recorder import TopicRecorder
from pylon_testing.wait import spin_until

START_TIMEOUT_SEC = 30.0
"""How long a process may take to come up (a bridge to report, a child to be ready)."""

FLOOD_QUEUE_HIGH_BYTES = 1 << 20
"""A flood sender pauses while the bridge's socket has this much queued: the bridge is
never starved and the kernel never drops (``udp_socket_state``)."""

LATENCY_STATUS = 'pylon_bridge: latency'
DATAGRAMS_STATUS = 'pylon_bridge: datagrams'
TOPICS_STATUS = 'pylon_bridge: topics'
SESSION_STATUS = 'pylon_bridge: session'

Statuses = dict[str, dict[str, str]]
"""One diagnostics report: status name -> {key: value}."""


class BenchError(RuntimeError):
    """A benchmark could not measure (a process failed or never reported)."""


# -- session and main ------------------------------------------------------------------------
class BenchSession:
    """A benchmark's ROS domain, UDP ports and processes, all given back at the end."""

    def __init__(self, name: str) -> None:
        """Claim a domain id, isolate the environment, make the process group."""
        limit_threads()
        domain_id, claim = claim_domain_id()
        self.claims: list[Claim] = [claim]
        self.log_dir = Path(tempfile.mkdtemp(prefix=f'pylon-bench-{name}-'))
        isolate(domain_id, self.log_dir)
        self.group = ProcessGroup(self.log_dir)
        self.started = time.monotonic()

    def take_port(self) -> int:
        """Return a UDP port no other session on this host was given."""
        port, claim = claim_udp_port()
        self.claims.append(claim)
        return port

    def runtime_seconds(self) -> float:
        """Return the time since the session started (s, one decimal)."""
        return round(time.monotonic() - self.started, 1)

    def close(self, keep_logs: bool = False) -> None:
        """Stop every process, give the claims back, remove the logs unless ``keep_logs``."""
        self.group.stop_all()
        for claim in self.claims:
            claim.release()
        if not keep_logs:
            shutil.rmtree(self.log_dir, ignore_errors=True)

    def __enter__(self) -> BenchSession:
        return self

    def __exit__(self, exc_type: type | None, *rest: object) -> None:
        self.close(keep_logs=exc_type is not None)


def run(name: str, measure: Callable[[BenchSession], Mapping[str, Any]]) -> int:
    """Measure in a fresh session; print the result as one JSON line; return the exit status.

    A ``BenchError``, a dead process or a wait that timed out ends the benchmark with
    the reason on stderr, the processes' logs kept, and status 1.
    """
    session = BenchSession(name)
    try:
        with session:
            result = measure(session)
    except (BenchError, ProcessError, OSError) as exc:    # TimeoutError is an OSError
        print(f'{name}: {exc}\n{name}: process logs in {session.log_dir}', file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


# -- the bench node --------------------------------------------------------------------------
class BenchNode:
    """The benchmark's rclpy node, in a context of its own, with an executor to spin it."""

    def __init__(self, name: str, domain_id: int | None = None) -> None:
        """Create the context (on ``domain_id``; None: the session's), node and executor."""
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        self._rclpy = rclpy
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def recorder(self) -> TopicRecorder:
        """Return a ``TopicRecorder`` on this node, spun by this node's executor."""
        return TopicRecorder(self.node, self.executor)

    def until(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        """Spin until ``condition()`` holds; TimeoutError naming ``what`` after ``timeout``."""
        spin_until(self.node, condition, timeout, self.executor, what=what)

    def spin_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Spin until ``condition()`` holds; return False (no error) after ``timeout``."""
        try:
            self.until(condition, timeout, 'condition')
        except TimeoutError:
            return False
        return True

    def spin_for(self, seconds: float, every: Callable[[], None] | None = None) -> None:
        """Spin for ``seconds``, calling ``every()`` (which may raise) at each turn."""
        end = time.monotonic() + seconds

        def passed() -> bool:
            if every is not None:
                every()
            return time.monotonic() >= end
        self.until(passed, seconds + START_TIMEOUT_SEC, f'{seconds:g} s of spinning')

    def close(self) -> None:
        """Destroy the node and shut its context down."""
        self.executor.shutdown()
        self.node.destroy_node()
        self._rclpy.try_shutdown(context=self.context)

    def __enter__(self) -> BenchNode:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def wait_for_line(bench: BenchNode, process: RosProcess, pattern: str, timeout: float,
                  every: Callable[[], None] | None = None) -> str:
    """Spin ``bench`` until the piped ``process`` writes a line matching ``pattern``.

    ``every()`` runs at each turn (a liveness check of the processes the wait depends on);
    a process that exits without writing the line fails the wait at once.
    """
    regex = re.compile(pattern)
    found: list[str] = []

    def written() -> bool:
        if every is not None:
            every()
        exited = process.returncode is not None
        found[:] = [line for line in process.output_lines() if regex.search(line)][:1]
        if not found and exited:
            raise BenchError(f'{process.name} exited with {process.returncode} before writing '
                             f'{pattern!r}:\n{process.log_tail()}')
        return bool(found)
    bench.until(written, timeout, f'{process.name} writing {pattern!r}')
    return found[0]


# -- the bridge ------------------------------------------------------------------------------
class BridgeMonitor:
    """The bridge's diagnostics reports as the bench node receives them."""

    def __init__(self, bench: BenchNode, topic_prefix: str = topics.DEFAULT_TOPIC_PREFIX,
                 bridge_prefix: str = topics.DEFAULT_BRIDGE_PREFIX) -> None:
        """Subscribe to the bridge's diagnostics."""
        from diagnostic_msgs.msg import DiagnosticArray
        self.reports: list[tuple[float, Statuses]] = []     # (receipt time, statuses)
        self.subscription = bench.node.create_subscription(
            DiagnosticArray, topics.name('diagnostics', topic_prefix, bridge_prefix),
            self._on_report, topics.qos('diagnostics', reader=True))

    def _on_report(self, msg: Any) -> None:
        self.reports.append((time.monotonic(), {
            status.name: {kv.key: kv.value for kv in status.values} for status in msg.status}))

    def reset(self) -> None:
        """Forget the reports received so far."""
        self.reports.clear()

    def latest(self) -> Statuses:
        """Return the newest report ({} before the first)."""
        return self.reports[-1][1] if self.reports else {}

    def between(self, start: float, end: float) -> list[tuple[float, Statuses]]:
        """Return the reports received in [``start``, ``end``] (monotonic clock)."""
        return [(t, s) for t, s in self.reports if start <= t <= end]


def start_bridge(session: BenchSession, bench: BenchNode, monitor: BridgeMonitor,
                 extra: Sequence[str] = ()) -> tuple[RosProcess, int]:
    """Start a fresh ``udp_bridge`` on ports of its own; return it and its state port.

    ``extra``: arguments after the ports (e.g. ``--ros-args -r ...``). Returns once the
    bridge published diagnostics (``wait_for_bridge``).
    """
    port, command_port = session.take_port(), session.take_port()
    monitor.reset()
    bridge = session.group.start(['udp_bridge', '--host', '127.0.0.1', '--port', str(port),
                                  '--command-port', str(command_port), *extra], name='bridge')
    wait_for_bridge(bench, monitor, bridge)
    return bridge, port


def wait_for_bridge(bench: BenchNode, monitor: BridgeMonitor, bridge: RosProcess) -> None:
    """Wait for the bridge's first diagnostics; check its pid is its Python process.

    The benchmarks read the bridge's CPU and memory from ``/proc/<pid>``, so the pid
    must be the interpreter that runs it, not a wrapper.
    """
    def reported() -> bool:
        bridge.check()
        return bool(monitor.reports)
    try:
        bench.until(reported, START_TIMEOUT_SEC, 'diagnostics')
    except TimeoutError:
        raise BenchError(f'udp_bridge never published its diagnostics within '
                         f'{START_TIMEOUT_SEC:g} s:\n{bridge.log_tail()}') from None
    argv = cmdline(bridge.pid)
    if 'python' not in Path(argv[0]).name or not any('udp_bridge' in a for a in argv):
        raise BenchError(f'pid {bridge.pid} is not the Python process of udp_bridge: {argv}')


def drop_counters(statuses: Statuses) -> dict[str, int]:
    """Return the received/accepted/dropped/ignored counters of a diagnostics report."""
    values = statuses.get(DATAGRAMS_STATUS, {})
    return {key: int(value) for key, value in values.items()
            if key in ('received', 'accepted') or key.startswith(('dropped.', 'ignored.'))}


# -- /proc -----------------------------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    """Return the CPU time (utime + stime, s) process ``pid`` has used so far."""
    text = Path(f'/proc/{pid}/stat').read_text()
    fields = text[text.rindex(')') + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')  # proc(5) 14, 15


def status_kb(pid: int, key: str) -> int:
    """Return a ``kB`` field (``VmRSS``, ``VmHWM``) of ``/proc/<pid>/status``."""
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith(key + ':'):
            return int(line.split()[1])
    raise BenchError(f'{key} not in /proc/{pid}/status')


def cmdline(pid: int) -> list[str]:
    """Return the command line of ``pid``."""
    return Path(f'/proc/{pid}/cmdline').read_bytes().decode(errors='replace').split('\0')


def udp_socket_state(port: int) -> tuple[int, int] | None:
    """Return (rx_queue bytes, kernel drops) of the UDP socket bound to 127.0.0.1:``port``."""
    local = f'0100007F:{port:04X}'
    with open('/proc/net/udp') as table:
        for line in table:
            fields = line.split()
            if len(fields) > 12 and fields[1] == local:
                return int(fields[4].split(':')[1], 16), int(fields[12])
    return None


# -- summaries -------------------------------------------------------------------------------
def growth_vs_one(counts: Mapping[str, Mapping[str, Any]]) -> dict[str, float] | None:
    """Return each count's total CPU over the one-vehicle run's (None without a run of 1)."""
    cpu = {n: r['cpu_percent_total'] for n, r in counts.items()}
    if '1' not in cpu:
        return None
    return {n: round(c / cpu['1'], 2) for n, c in cpu.items()}


def percentile(values: Sequence[float], fraction: float) -> float:
    """Return the nearest-rank percentile (``fraction`` in [0, 1]) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def number(values: Mapping[str, str], key: str) -> float | None:
    """Return ``values[key]`` as a float, None if it is missing or not a number."""
    try:
        return float(values[key])
    except (KeyError, ValueError):
        return None
