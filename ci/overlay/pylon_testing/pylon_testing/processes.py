"""Start workspace executables as real processes, capture their logs, and always end them.

Every process runs in its own process group (so its children end with it) and asks the
kernel to kill it if the test process dies (``PR_SET_PDEATHSIG``), so not even a killed
pytest leaves a node running. ``stop()`` sends SIGINT (what Ctrl-C sends a ROS node),
then SIGTERM, then SIGKILL to the whole group, each after a grace period.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import ctypes
import os
from pathlib import Path
import re
import shutil
import signal
import subprocess
import time

PR_SET_PDEATHSIG = 1
SIGINT_GRACE_SEC = 5.0
SIGTERM_GRACE_SEC = 3.0
POLL_PERIOD_SEC = 0.02


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class ProcessError(AssertionError):
    """A managed process did not do what the test waited for."""


class RosProcess:
    """One managed process and its log file."""

    def __init__(self, name: str, cmd: Sequence[str], log_path: Path,
                 env: Mapping[str, str], cwd: str | None = None) -> None:
        """Start ``cmd`` with stdout and stderr written to ``log_path``."""
        executable = shutil.which(cmd[0], path=env.get('PATH'))
        if executable is None:
            raise FileNotFoundError(
                f'{cmd[0]!r} is not on PATH; is the workspace built (make setup) '
                'and the test run through ci/env.sh?')
        self.name = name
        self.cmd = [executable, *cmd[1:]]
        self.log_path = log_path
        self._log = open(log_path, 'wb')
        self.popen = subprocess.Popen(
            self.cmd, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            env=dict(env), cwd=cwd, start_new_session=True, preexec_fn=_die_with_parent)
        self.pid = self.popen.pid
        self.stopped = False

    @property
    def returncode(self) -> int | None:
        """Exit status, or None while it runs."""
        return self.popen.poll()

    def log(self) -> str:
        """Everything the process has written so far (also after it was stopped)."""
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(encoding='utf-8', errors='replace')

    def wait_for_output(self, pattern: str, timeout: float = 10.0) -> re.Match[str]:
        """Wait until the log matches the regular expression ``pattern``; return the match."""
        regex = re.compile(pattern, re.MULTILINE)
        deadline = time.monotonic() + timeout
        while True:
            match = regex.search(self.log())
            if match:
                return match
            if self.returncode is not None:
                raise ProcessError(
                    f'{self.name} exited with {self.returncode} before printing {pattern!r}')
            if time.monotonic() > deadline:
                raise ProcessError(f'{self.name} did not print {pattern!r} within {timeout} s')
            time.sleep(POLL_PERIOD_SEC)

    def wait(self, timeout: float) -> int:
        """Wait for the process to exit by itself; return its exit status."""
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise ProcessError(f'{self.name} still runs after {timeout} s') from exc

    def stop(self) -> int:
        """End the process group: SIGINT, then SIGTERM, then SIGKILL; return the exit status."""
        stop_all([self])
        return self.popen.returncode

    def _finish(self) -> None:
        """End what the (gone) leader left in its group; close the log."""
        self._signal_group(signal.SIGKILL)
        self.popen.wait()
        self._log.close()
        self.stopped = True

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass


def stop_all(processes: Sequence[RosProcess]) -> None:
    """End several processes at once, as Ctrl-C ends a launch.

    SIGINT to all, then SIGTERM, then SIGKILL to those still running, each step waiting up
    to its grace period for all of them together.
    """
    running = [p for p in processes if not p.stopped]
    for sig, grace in ((signal.SIGINT, SIGINT_GRACE_SEC),
                       (signal.SIGTERM, SIGTERM_GRACE_SEC), (signal.SIGKILL, None)):
        alive = [p for p in running if p.popen.poll() is None]
        for process in alive:
            process._signal_group(sig)
        deadline = time.monotonic() + (grace or 0.0)
        for process in alive:
            try:
                process.popen.wait(timeout=max(0.0, deadline - time.monotonic())
                                   if grace is not None else None)
            except subprocess.TimeoutExpired:
                pass
        if all(p.popen.poll() is not None for p in running):
            break
    for process in running:
        process._finish()


def group_alive(pgid: int) -> bool:
    """Whether any process of process group ``pgid`` still exists."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
