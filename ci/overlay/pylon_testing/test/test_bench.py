"""The benchmarks' harness: one JSON line or one reason, /proc sampling, summaries."""

import json
import os
from pathlib import Path
import socket
import subprocess
import sys
import textwrap

from pylon_testing import bench
import pytest

TINY_BENCH = textwrap.dedent("""
    import sys

    from pylon_testing.bench import BenchNode, run, wait_for_line

    CHILD = 'import sys; print("ready", flush=True); print("{\\\\"n\\\\": 7}", flush=True)'

    def measure(session):
        port = session.take_port()
        child = session.group.start([sys.executable, '-c', CHILD], name='child', pipes=True)
        every = None
        if sys.argv[1:] == ['fail']:
            dead = session.group.start([sys.executable, '-c', 'print("oops"); exit(4)'],
                                       name='dead')
            dead.wait(timeout=30.0)
            every = dead.check
        with BenchNode('tiny_bench') as node:
            wait_for_line(node, child, '^ready$', 30.0, every)
            line = wait_for_line(node, child, '^{', 30.0)
        return {'benchmark': 'tiny', 'port': port, 'child': line,
                'log_dir': str(session.log_dir)}

    sys.exit(run('tiny', measure))
""")


def run_tiny_bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    script = tmp_path / 'tiny_bench.py'
    script.write_text(TINY_BENCH)
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, 'PYTHONUNBUFFERED': '1'})


def test_run_prints_one_json_line_and_cleans_up(tmp_path):
    result = run_tiny_bench(tmp_path)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out['benchmark'] == 'tiny' and json.loads(out['child']) == {'n': 7}
    assert 1024 <= out['port'] <= 65535
    assert not Path(out['log_dir']).exists()


def test_run_reports_a_dead_process_and_keeps_the_logs(tmp_path):
    result = run_tiny_bench(tmp_path, 'fail')
    assert result.returncode == 1 and result.stdout == ''
    assert 'tiny: dead exited with 4' in result.stderr and 'oops' in result.stderr
    log_dir = Path(result.stderr.split('process logs in ')[1].strip())
    assert (log_dir / 'dead.log').read_text().strip() == 'oops'
    for path in sorted(log_dir.rglob('*'), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    log_dir.rmdir()


def test_proc_sampling_of_this_process():
    assert bench.cpu_seconds(os.getpid()) > 0.0
    assert bench.status_kb(os.getpid(), 'VmRSS') > 0
    assert bench.cmdline(os.getpid())[0] == sys.executable or 'python' in \
        bench.cmdline(os.getpid())[0]
    with pytest.raises(bench.BenchError):
        bench.status_kb(os.getpid(), 'NoSuchField')


def test_udp_socket_state_sees_a_queued_datagram():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        receiver.bind(('127.0.0.1', 0))
        port = receiver.getsockname()[1]
        assert bench.udp_socket_state(port) == (0, 0)
        sender.sendto(b'x' * 100, ('127.0.0.1', port))
        queued, drops = bench.udp_socket_state(port)
        assert queued > 0 and drops == 0
    assert bench.udp_socket_state(port) is None


def test_summaries():
    values = [float(v) for v in range(1, 101)]
    assert bench.percentile(values, 0.5) == 51.0
    assert bench.percentile(values, 0.99) == 100.0 and bench.percentile([3.0], 0.99) == 3.0
    assert bench.number({'a': '1.5', 'b': 'x'}, 'a') == 1.5
    assert bench.number({'b': 'x'}, 'b') is None and bench.number({}, 'a') is None
    report = {bench.DATAGRAMS_STATUS: {'received': '9', 'accepted': '7', 'dropped.bad': '2',
                                       'received.pylon_imu': '9'}}
    assert bench.drop_counters(report) == {'received': 9, 'accepted': 7, 'dropped.bad': 2}
