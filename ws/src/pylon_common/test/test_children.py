"""A child started with ``die_with_parent`` ends when its parent is killed (SIGKILL)."""

import os
from pathlib import Path
import signal
import subprocess
import sys
import time

PARENT = """
import subprocess, sys, time
from pylon_common.children import die_with_parent
child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],
                         preexec_fn=die_with_parent if sys.argv[1] == 'yes' else None,
                         start_new_session=True)
print(child.pid, flush=True)
time.sleep(60)
"""
WAIT_SEC = 10.0


def alive(pid: int) -> bool:
    """Tell whether ``pid`` runs (a zombie counts as ended)."""
    try:
        state = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != 'Z'


def orphan_after_kill(die: bool) -> bool:
    """Kill a parent of one child with SIGKILL; return whether the child outlived it."""
    parent = subprocess.Popen([sys.executable, '-c', PARENT, 'yes' if die else 'no'],
                              stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    try:
        assert alive(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=WAIT_SEC)
        # the kernel sent its signal as the parent exited: the child is going or stays
        deadline = time.monotonic() + WAIT_SEC
        while die and alive(child) and time.monotonic() < deadline:
            time.sleep(0.01)
        return alive(child)
    finally:
        if alive(child):
            os.kill(child, signal.SIGKILL)


def test_a_child_that_asked_ends_with_its_killed_parent():
    assert not orphan_after_kill(die=True)


def test_without_it_the_child_lives_on():
    """The control: the same child without the request outlives the parent."""
    assert orphan_after_kill(die=False)
