"""The harness keeps its promises: isolation, logs on failure, and no process left behind."""

import os
from pathlib import Path
import signal
import subprocess
import sys
import textwrap

from pylon_testing.isolation import Claim, claim_domain_id, claim_udp_port
from pylon_testing.processes import group_alive
import pytest

ROOT = Path(__file__).resolve().parents[4]

INNER_TEST = textwrap.dedent("""
    import os
    import sys

    def test_starts_a_process_then_fails(ros_process, tmp_path):
        child = ros_process(
            [sys.executable, '-c',
             'import time; print("child says hello", flush=True); time.sleep(600)'],
            name='sleeper')
        child.wait_for_output('child says hello')
        with open(os.environ['PIDFILE'], 'w') as out:
            out.write(str(child.pid))
        if os.environ.get('KILL_SELF'):
            os.kill(os.getpid(), 9)
        assert False, 'this inner test fails on purpose'
""")


def run_inner_pytest(tmp_path: Path, kill_self: bool) -> tuple[subprocess.CompletedProcess, int]:
    test_file = tmp_path / 'test_inner.py'
    test_file.write_text(INNER_TEST)
    pidfile = tmp_path / 'pid'
    env = {**os.environ, 'PIDFILE': str(pidfile)}
    if kill_self:
        env['KILL_SELF'] = '1'
    result = subprocess.run(
        [sys.executable, '-m', 'pytest', '-p', 'pylon_testing.plugin', '-p', 'no:cacheprovider',
         '--rootdir', str(tmp_path), '-c', os.devnull, str(test_file)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    return result, int(pidfile.read_text())


def wait_until_gone(pgid: int, timeout: float = 10.0) -> bool:
    """PDEATHSIG is delivered asynchronously; give the kernel a moment to finish the kill."""
    import time
    deadline = time.monotonic() + timeout
    while group_alive(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_failing_test_shows_process_log_and_ends_the_process(tmp_path):
    result, pid = run_inner_pytest(tmp_path, kill_self=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'this inner test fails on purpose' in result.stdout
    assert 'process sleeper (running)' in result.stdout
    assert 'child says hello' in result.stdout
    assert not group_alive(pid)


def test_killed_test_session_leaves_no_process(tmp_path):
    result, pid = run_inner_pytest(tmp_path, kill_self=True)
    assert result.returncode == -signal.SIGKILL
    assert wait_until_gone(pid), f'process group {pid} outlived the killed session'


def test_domain_and_port_claims_are_exclusive():
    domain_id, claim = claim_domain_id()
    try:
        with pytest.raises(BlockingIOError):
            Claim(f'domain-{domain_id}')
        other_id, other = claim_domain_id()
        assert other_id != domain_id
        other.release()
    finally:
        claim.release()
    Claim(f'domain-{domain_id}').release()  # free again once released
    port, port_claim = claim_udp_port()
    try:
        assert 1024 <= port <= 65535
        with pytest.raises(BlockingIOError):
            Claim(f'udp-{port}')
    finally:
        port_claim.release()


def test_session_environment_is_isolated(ros_domain_id):
    assert os.environ['ROS_DOMAIN_ID'] == str(ros_domain_id)
    assert os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
    assert 'ROS_LOCALHOST_ONLY' not in os.environ


def test_free_udp_ports_differ(free_udp_port):
    ports = {free_udp_port() for _ in range(5)}
    assert len(ports) == 5


def test_root_is_the_repository():
    assert (ROOT / 'ci' / 'setup.sh').is_file()
