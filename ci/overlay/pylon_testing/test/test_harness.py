"""The harness keeps its promises: isolation, logs on failure, and no process left behind."""

import os
from pathlib import Path
import signal
import socket
import subprocess
import sys
import textwrap

from pylon_testing.isolation import (
    Claim,
    claim_domain_block,
    claim_domain_id,
    claim_udp_port,
    claim_udp_port_series,
    DDS_PORT_CEILING,
    DOMAIN_IDS,
    ephemeral_range,
)
from pylon_testing.processes import group_alive, ProcessError, ProcessGroup
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


MODULE_INNER_TEST = textwrap.dedent("""
    import os
    import sys

    import pytest

    @pytest.fixture(scope='module')
    def shared(module_ros_process):
        child = module_ros_process(
            [sys.executable, '-c',
             'import time; print("shared child up", flush=True); time.sleep(600)'],
            name='shared')
        child.wait_for_output('shared child up')
        with open(os.environ['PIDFILE'], 'w') as out:
            out.write(str(child.pid))
        return child

    def test_passes(shared):
        assert shared.returncode is None

    def test_fails(shared):
        assert False, 'this inner test fails on purpose'
""")


def run_inner_pytest(tmp_path: Path, kill_self: bool,
                     source: str = INNER_TEST) -> tuple[subprocess.CompletedProcess, int]:
    test_file = tmp_path / 'test_inner.py'
    test_file.write_text(source)
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


def test_module_fixture_processes_show_in_every_failing_test_and_end_with_the_module(tmp_path):
    result, pid = run_inner_pytest(tmp_path, kill_self=False, source=MODULE_INNER_TEST)
    assert result.returncode == 1, result.stdout + result.stderr
    assert '1 failed, 1 passed' in result.stdout
    assert 'process shared (running)' in result.stdout and 'shared child up' in result.stdout
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


def test_no_port_handed_out_is_one_dds_or_a_bind_to_port_0_may_take():
    # RTPS well-known ports of domain d: 7400 + 250 d + (0, 1, 10 + 2 i, 11 + 2 i)
    highest_dds = 7400 + 250 * max(DOMAIN_IDS) + 249
    assert highest_dds < DDS_PORT_CEILING
    low, high = ephemeral_range()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(('127.0.0.1', 0))                  # where the kernel puts a port-0 bind
        assert low <= sock.getsockname()[1] <= high
    first, claims = claim_udp_port_series(4, 10)
    try:
        for port in (first + 10 * k for k in range(4)):
            assert port > highest_dds and not low <= port <= high, port
    finally:
        for claim in claims:
            claim.release()


def test_session_environment_is_isolated(ros_domain_id):
    assert os.environ['ROS_DOMAIN_ID'] == str(ros_domain_id)
    assert os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
    assert 'ROS_LOCALHOST_ONLY' not in os.environ


def test_free_udp_ports_differ(free_udp_port):
    ports = {free_udp_port() for _ in range(5)}
    assert len(ports) == 5


def test_root_is_the_repository():
    assert (ROOT / 'ci' / 'setup.sh').is_file()


TALKER = ('import sys\n'
          'print("ready", flush=True)\n'
          'print("to the log", file=sys.stderr, flush=True)\n'
          'print("got " + sys.stdin.readline().strip(), flush=True)\n'
          'print("no newline", end="", flush=True)\n')


def test_group_talks_to_a_piped_child_in_lines(tmp_path):
    with ProcessGroup(tmp_path) as group:
        child = group.start([sys.executable, '-c', TALKER], name='talker', pipes=True)
        assert child.wait_for_line('^ready$') == 'ready'
        child.send_line('go')
        assert child.wait_for_line('^got ') == 'got go'
        assert child.wait(timeout=30.0) == 0
        assert child.output_lines() == ['ready', 'got go', 'no newline']
        child.wait_for_output('to the log')            # stderr goes to the log file
        assert 'ready' not in child.log()
    assert child.stopped and group.running() == []


def test_group_names_processes_apart_and_stops_them_all(tmp_path):
    sleeper = [sys.executable, '-c', 'import time; print("up", flush=True); time.sleep(600)']
    with ProcessGroup(tmp_path) as group:
        first = group.start(sleeper, name='sleeper')
        second = group.start(sleeper, name='sleeper')
        assert (first.name, second.name) == ('sleeper', 'sleeper-0')
        assert group.named('sleeper') is second
        assert {p.log_path.name for p in group.processes} == {'sleeper.log', 'sleeper-0.log'}
        first.wait_for_output('up')
        second.wait_for_output('up')
        group.check()
        group.stop_all()
        assert group.running() == []
        assert first.returncode is not None and second.returncode is not None
        assert not group_alive(first.pid) and not group_alive(second.pid)


def test_group_check_and_guard_name_the_dead_process_and_show_its_log(tmp_path):
    dying = [sys.executable, '-c', 'import sys; print("something broke"); sys.exit(3)']
    with ProcessGroup(tmp_path, env={**os.environ, 'PYTHONUNBUFFERED': '1'}) as group:
        child = group.start(dying, name='dying')
        child.wait(timeout=30.0)
        guarded = group.guard(lambda: False)
        with pytest.raises(ProcessError, match='dying exited with 3') as info:
            guarded()
        assert 'something broke' in str(info.value)
        assert child.log_tail(lines=1) == 'something broke'
        with pytest.raises(ProcessError, match='exited with 3 and did not print'):
            child.wait_for_output('never', timeout=30.0)
        group.stop(child)
        group.check()                                  # a stopped process is not checked


BLOCK_INNER_TEST = textwrap.dedent("""
    import os
    import sys

    from pylon_testing.isolation import Claim
    from pylon_testing.processes import group_alive
    import pytest

    BASES = []

    def test_holds_a_block_while_its_process_runs(ros_domain_block, ros_process):
        base = ros_domain_block(3)
        BASES.append(base)
        child = ros_process(
            [sys.executable, '-c', 'import signal; print("up", flush=True); signal.pause()'],
            name='holder', env={'ROS_DOMAIN_ID': str(base)})
        child.wait_for_output('up')
        with open(os.environ['PIDFILE'], 'w') as out:
            out.write(str(child.pid))
        for domain_id in range(base, base + 3):
            with pytest.raises(BlockingIOError):
                Claim(f'domain-{domain_id}')

    def test_the_block_is_free_once_that_test_and_its_process_ended():
        assert not group_alive(int(open(os.environ['PIDFILE']).read()))
        for domain_id in range(BASES[0], BASES[0] + 3):
            Claim(f'domain-{domain_id}').release()
""")


def test_a_tests_domain_block_is_given_back_when_the_test_ends(tmp_path, monkeypatch):
    """Held while the test runs, free after it (two copies of the suite once ran out)."""
    monkeypatch.setenv('PYTEST_ADDOPTS', '-p no:randomly')      # the inner tests in order
    result, _ = run_inner_pytest(tmp_path, kill_self=False, source=BLOCK_INNER_TEST)
    assert result.returncode == 0, result.stdout + result.stderr
    assert '2 passed' in result.stdout


def test_a_domain_block_is_claimed_whole_and_apart_from_other_claims(ros_domain_id):
    base, claims = claim_domain_block(4)
    try:
        ids = range(base, base + 4)
        assert ros_domain_id not in ids and ids.stop - 1 <= 232
        # nobody else gets any id of the block while it is held, not even as a block
        for domain_id in ids:
            with pytest.raises(BlockingIOError):
                Claim(f'domain-{domain_id}')
        other, other_claims = claim_domain_block(4)
        assert set(range(other, other + 4)).isdisjoint(ids)
        for claim in other_claims:
            claim.release()
    finally:
        for claim in claims:
            claim.release()
    again = Claim(f'domain-{base}')        # released: free again
    again.release()
    with pytest.raises(ValueError):
        claim_domain_block(0)
