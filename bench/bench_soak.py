"""A soak: ``make demo`` flying slews for 30 minutes; no growth, no lease loss, no topic gap.

Runs ``launch/native_demo.py --slew-every SLEW_EVERY_SEC`` (the demo's processes from the
launch plan: ``pylon_sim``, ``udp_bridge``, ``attitude_estimator``, ``setpoint_controller``,
``pylon_viewer``, and the demo's own node; a 30 degree slew back and forth every minute of
KSP time) with ``DEMO_SECONDS`` of wall time, on claimed UDP ports and a claimed port for
the live view. Every ``SAMPLE_SEC`` it samples, from ``/proc``, the RSS and the CPU time
of every process of the demo's tree. Per process, over the samples after ``WARMUP_SEC``
(a quarter of a shorter run): the RSS slope (MB per hour, ``scipy.stats.linregress``, with
its standard error), first, last and max RSS, the mean CPU (percent of one core) and its
slope (percentage points per hour), and the RSS once a minute. For ``pylon_sim`` also the
CPU less what its sensors cost (``sensing_cpu_s`` of its admin ``status``), and that is the
slope judged: the camera renders Kerbin only on the pixels the planet covers, so its cost
follows the orbit (about 6 s of CPU per minute more while the planet fills the view, from
minute 17 to 32 of the 1958 s orbit), a rise a 30-minute run cannot tell from growth. From
the demo's summary: the slews flown and settled and the longest settling (KSP s), lease
losses, and the largest gap between consecutive stamps (KSP s) of the IMU and of the
estimate the demo received.

Pass: every process's RSS slope below ``RSS_SLOPE_MB_H`` and CPU slope below
``CPU_SLOPE_PCT_H``; no lease loss, no process exited; every slew settled but the one in
flight at the end; both stamp gaps below ``MAX_STAMP_GAP_S``. Why these bounds: see the
constants. Not a test: it takes ``DEMO_SECONDS`` + about 20 s; other load on the machine
changes the CPU figures, not the trends it judges (the demo's phases and gaps are on KSP
time; the machine's load average is reported beside). ``python bench/bench_soak.py
[SECONDS]`` (default 1800). Prints one JSON object on its last line; ``python bench/run.py
soak`` writes it to ``bench/results/soak.json``. The demo's logs are kept (``logs``) when
it fails.
"""

from __future__ import annotations

from collections import defaultdict
import json
import math
import os
from pathlib import Path
import shutil
import signal
import sys
import tempfile
import time

from pylon_sim.loop import admin
from pylon_testing.bench import BenchError, BenchSession, cmdline, cpu_seconds, run, status_kb
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / 'launch' / 'native_demo.py'
DEMO_SECONDS = 1800.0
SLEW_EVERY_SEC = 60.0
"""KSP s between slew starts: a 30 degree slew at the controller's 1.5 deg/s limit takes
about 25 s to settle, so each slew is followed by a hold of about half a minute."""
SAMPLE_SEC = 5.0
WARMUP_SEC = 120.0
"""Not judged: discovery, the first slews, the allocator's arenas and the viewer's caches
filling up all grow RSS once in the first minutes."""
RSS_SLOPE_MB_H = 10.0
"""Per process. The IMU arrives at 30 Hz through every node: a leak of 93 bytes per IMU
message (less than any Python object kept per message) would be 10 MB/h; so would a leak
of 170 kB per slew. The soak's 28 judged minutes see 4.7 MB of such growth, above the
noise of RSS sampled every 5 s (the allocator returns memory in steps of pages)."""
CPU_SLOPE_PCT_H = 5.0
"""Per process, percentage points of one core per hour: work that grows with the time
run (a list scanned every period, a timer added per slew) shows as a rising CPU."""
MAX_STAMP_GAP_S = 0.5
"""KSP s between consecutive stamps the demo node received: the IMU's period is 1/30 s
and the estimate follows it; a gap of 0.5 s is 15 samples lost in a row (a stalled
simulator does not count: its clock stops too)."""
SUMMARY = 'demo summary: '
STOP_GRACE_SEC = 60.0         # after DEMO_SECONDS: the demo stops its processes and sums up


def process_tree(root: int) -> dict[int, str]:
    """Return ``root`` and its descendants (pid -> name: the executable or script)."""
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            text = Path(f'/proc/{entry}/stat').read_text()
        except OSError:
            continue
        children[int(text[text.rindex(')') + 2:].split()[1])].append(int(entry))
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        try:
            out[pid] = process_name(cmdline(pid))
        except OSError:
            continue
        todo += children.get(pid, [])
    return out


def process_name(argv: list[str]) -> str:
    """Return a process's name: its script's (a Python console script) or executable's."""
    first = Path(argv[0]).name
    if first.startswith('python') and len(argv) > 1 and argv[1]:
        return Path(argv[1]).stem
    return first


class Samples:
    """RSS and CPU time of every process of a tree, sampled on the wall clock."""

    def __init__(self, root: int, admin_port: int | None = None) -> None:
        """Sample the tree under ``root`` (``pylon_sim``'s sensor cost from ``admin_port``)."""
        self.root = root
        self.admin_port = admin_port
        self.t0 = time.monotonic()
        self.series: dict[str, list[tuple]] = defaultdict(list)
        self.pids: dict[str, set[int]] = defaultdict(set)
        self.load: list[float] = []         # the machine's 1-minute load average

    def sample(self) -> None:
        """Take one sample of every process (t s, RSS MB, CPU s)."""
        now = time.monotonic() - self.t0
        self.load.append(float(Path('/proc/loadavg').read_text().split()[0]))
        for pid, name in process_tree(self.root).items():
            try:
                rss, cpu = status_kb(pid, 'VmRSS') / 1024.0, cpu_seconds(pid)
            except (OSError, BenchError, ValueError):     # exited, or a zombie
                continue
            self.pids[name].add(pid)
            sensing = self._sensing_cpu() if name == 'pylon_sim' else None
            self.series[name].append((now, rss, cpu) if sensing is None else
                                     (now, rss, cpu, sensing))

    def _sensing_cpu(self) -> float | None:
        """Return the CPU s ``pylon_sim`` spent sampling its sensors, None unanswered."""
        if self.admin_port is None:
            return None
        try:
            reply = admin.request(self.admin_port, {'cmd': 'status'}, timeout=1.0)
            return float(sum(reply['sensing_cpu_s'].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None


def trends(series: list[tuple], warmup: float) -> dict:
    """Return one process's figures: RSS and CPU after ``warmup`` (s) and their slopes.

    Samples with a fourth entry (``pylon_sim``'s sensor CPU, s) also give the CPU less the
    sensors' (``cpu_less_sensing_*``), over the consecutive pairs that both have one.
    """
    judged = [s for s in series if s[0] >= warmup]
    if len(judged) < 3:
        raise BenchError(f'only {len(judged)} samples after the warm-up')
    hours = [t / 3600.0 for t, *_ in judged]
    rss = [r for _, r, *_ in judged]
    fit = stats.linregress(hours, rss)
    mid = [(a[0] + b[0]) / 2 / 3600.0 for a, b in zip(judged, judged[1:])]
    cpu = [(b[2] - a[2]) / (b[0] - a[0]) * 100.0 for a, b in zip(judged, judged[1:])]
    cpu_fit = stats.linregress(mid, cpu)
    minutes = {}
    for t, r, *_ in series:
        minutes.setdefault(int(t // 60), r)
    def finite(value: float) -> float | None:      # a flat series has no standard error
        return None if math.isnan(value) else round(value, 2)
    net = [((a[0] + b[0]) / 2 / 3600.0,
            ((b[2] - a[2]) - (b[3] - a[3])) / (b[0] - a[0]) * 100.0)
           for a, b in zip(judged, judged[1:]) if len(a) > 3 and len(b) > 3]
    extra = {}
    if len(net) >= 3:
        net_fit = stats.linregress([t for t, _ in net], [c for _, c in net])
        extra = {'cpu_less_sensing_percent_mean': round(sum(c for _, c in net) / len(net), 1),
                 'cpu_less_sensing_slope_pct_h': round(net_fit.slope, 2),
                 'cpu_less_sensing_slope_stderr_pct_h': finite(net_fit.stderr)}
    return {
        'samples': len(judged),
        'rss_mb': {'first': round(rss[0], 1), 'last': round(rss[-1], 1),
                   'max': round(max(s[1] for s in series), 1)},
        'rss_slope_mb_h': round(fit.slope, 2), 'rss_slope_stderr_mb_h': finite(fit.stderr),
        'cpu_percent_mean': round(sum(cpu) / len(cpu), 1),
        'cpu_slope_pct_h': round(cpu_fit.slope, 2),
        'cpu_slope_stderr_pct_h': finite(cpu_fit.stderr),
        'rss_mb_per_minute': [round(r, 1) for r in minutes.values()],
        **extra,
    }


def demo_summary(log: str) -> dict:
    """Return the demo's summary line as a dict."""
    for line in reversed(log.splitlines()):
        if line.startswith(SUMMARY):
            return json.loads(line[len(SUMMARY):])
    raise BenchError('the demo printed no summary')


def measure(session: BenchSession, seconds: float) -> dict:
    """Run the demo for ``seconds`` while sampling its processes; return the figures."""
    numbers = [session.take_port() for _ in range(3)]     # state, command, admin
    ports = ','.join(str(n) for n in numbers)
    viewer_port = session.take_port()       # a number no other session was given, for TCP
    logs = Path(tempfile.mkdtemp(prefix='pylon-soak-demo-'))      # kept when it fails
    demo = session.group.start(
        [sys.executable, str(DEMO), '--ports', ports, '--slew-every', f'{SLEW_EVERY_SEC:g}'],
        name='native_demo', env={'DEMO_SECONDS': f'{seconds:g}',
                                 'DEMO_LOG_DIR': str(logs),
                                 'DEMO_VIEWER_PORT': str(viewer_port)})
    samples = Samples(demo.pid, admin_port=numbers[2])
    seen: dict[int, str] = {}
    try:
        while time.monotonic() - samples.t0 < seconds and demo.returncode is None:
            seen.update(process_tree(demo.pid))
            samples.sample()
            time.sleep(max(0.0, SAMPLE_SEC - (time.monotonic() - samples.t0) % SAMPLE_SEC))
        demo.wait(STOP_GRACE_SEC)
    finally:
        _end_left_over(seen)
    (logs / 'native_demo.log').write_text(demo.log())
    summary = demo_summary(demo.log())
    if demo.returncode != 0:
        raise BenchError(f'the demo exited with {demo.returncode}: {summary}')
    warmup = min(WARMUP_SEC, seconds / 4)
    processes = {name: trends(series, warmup) for name, series in sorted(samples.series.items())}
    for name, figures in processes.items():
        figures['pids'] = len(samples.pids[name])
    summary.pop('logs', None)
    unsettled = summary['slews'] - summary['slews_settled']
    gaps = summary['max_stamp_gap_s']
    checks = {
        'rss_slope': all(p['rss_slope_mb_h'] < RSS_SLOPE_MB_H for p in processes.values()),
        'cpu_slope': all(judged_cpu_slope(p) < CPU_SLOPE_PCT_H for p in processes.values()),
        'no_lease_loss': summary['lease_losses'] == 0,
        'no_process_exited': summary['processes_exited'] == [] and
        all(len(pids) == 1 for pids in samples.pids.values()),
        'slews_settled': summary['slews'] >= 2 and unsettled <= 1,
        'no_topic_gap': max(gaps.values()) < MAX_STAMP_GAP_S,
    }
    passed = all(checks.values())
    if passed:
        shutil.rmtree(logs, ignore_errors=True)
    return {
        'benchmark': 'soak', 'seconds': seconds, 'slew_every_s': SLEW_EVERY_SEC,
        'sample_s': SAMPLE_SEC, 'warmup_s': warmup,
        'bounds': {'rss_slope_mb_h': RSS_SLOPE_MB_H, 'cpu_slope_pct_h': CPU_SLOPE_PCT_H,
                   'max_stamp_gap_s': MAX_STAMP_GAP_S},
        'processes': processes,
        'rss_slope_mb_h_max': max(p['rss_slope_mb_h'] for p in processes.values()),
        'cpu_slope_pct_h_max': max(p['cpu_slope_pct_h'] for p in processes.values()),
        'judged_cpu_slope_pct_h_max': max(judged_cpu_slope(p) for p in processes.values()),
        'load_average_1min': {'mean': round(sum(samples.load) / len(samples.load), 2),
                              'max': max(samples.load), 'cores': os.cpu_count()},
        'demo': summary, 'checks': checks, 'pass': passed,
        'logs': None if passed else str(logs),
        'runtime_s': session.runtime_seconds(),
    }


def judged_cpu_slope(figures: dict) -> float:
    """Return the CPU slope judged: net of the sensors' cost where the process reports it."""
    return figures.get('cpu_less_sensing_slope_pct_h', figures['cpu_slope_pct_h'])


def _end_left_over(seen: dict[int, str]) -> None:
    """SIGKILL what the demo started and left running (it stops them itself when it ends)."""
    for pid, name in seen.items():
        try:
            if process_name(cmdline(pid)) == name:
                os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def main(argv: list[str]) -> int:
    """Run the soak: ``[SECONDS]``."""
    seconds = float(argv[0]) if argv else DEMO_SECONDS
    return run('soak', lambda session: measure(session, seconds))


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
