"""Start workspace executables as real processes, capture their logs, and always end them.

Every process runs in its own process group (so its children end with it) and asks the
kernel to kill it if the test process dies (``PR_SET_PDEATHSIG``), so not even a killed
pytest or benchmark leaves a node running. ``stop()`` sends SIGINT (what Ctrl-C sends a
ROS node), then SIGTERM, then SIGKILL to the whole group, each after a grace period.

``ProcessGroup`` is the one harness of the tests and the benchmarks: it starts
``RosProcess``es with a log file each (or, with ``pipes=True``, stdin and stdout as pipes
for a child that talks in lines), tells when one of them died (``check``, ``guard``) and
ends them all together (``stop_all``). The ``ros_process`` fixture is its ``start``; a
benchmark holds one through ``pylon_testing.bench.BenchSession``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
import contextlib
import itertools
import os
from pathlib import Path
import re
import select
import shutil
import signal
import subprocess
import time

from pylon_common.children import die_with_parent

SIGINT_GRACE_SEC = 5.0
SIGTERM_GRACE_SEC = 3.0
POLL_PERIOD_SEC = 0.02
LOG_TAIL_LINES = 15
READ_CHUNK_BYTES = 65536


class ProcessError(AssertionError):
    """A managed process did not do what the test waited for."""


class RosProcess:
    """One managed process and its log file (and, if piped, its stdin and stdout)."""

    def __init__(self, name: str, cmd: Sequence[str], log_path: Path,
                 env: Mapping[str, str], cwd: str | None = None, pipes: bool = False) -> None:
        """Start ``cmd`` with stdout and stderr written to ``log_path``.

        With ``pipes`` only stderr goes to the log: stdin and stdout are pipes, for a child
        that is told what to do in lines (``send_line``) and answers in lines
        (``output_lines``).
        """
        executable = shutil.which(cmd[0], path=env.get('PATH'))
        if executable is None:
            raise FileNotFoundError(
                f'{cmd[0]!r} is not on PATH; is the workspace built (make setup) '
                'and the command run through ci/env.sh?')
        self.name = name
        self.cmd = [executable, *cmd[1:]]
        self.log_path = log_path
        self._log = open(log_path, 'wb')
        self.popen = subprocess.Popen(
            self.cmd, stdin=subprocess.PIPE if pipes else subprocess.DEVNULL,
            stdout=subprocess.PIPE if pipes else self._log, stderr=self._log,
            env=dict(env), cwd=cwd, start_new_session=True, preexec_fn=die_with_parent)
        self.pid = self.popen.pid
        self.stopped = False
        self._lines: list[str] = []
        self._partial = b''

    @property
    def returncode(self) -> int | None:
        """Exit status, or None while it runs."""
        return self.popen.poll()

    def log(self) -> str:
        """Everything the process has written so far (also after it was stopped)."""
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(encoding='utf-8', errors='replace')

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """Return the last ``lines`` lines of the log."""
        return '\n'.join(self.log().strip().splitlines()[-lines:])

    def check(self) -> None:
        """Raise ``ProcessError`` with the log's tail if the process has exited."""
        status = self.returncode
        if status is not None:
            raise ProcessError(f'{self.name} exited with {status}:\n{self.log_tail()}')

    def output_lines(self) -> list[str]:
        """Return every line the (piped) process wrote to stdout so far, without blocking.

        Once the process has closed its stdout, a last line without a newline counts too.
        """
        stdout = self.popen.stdout
        while stdout is not None and not stdout.closed and \
                select.select([stdout], [], [], 0)[0]:
            chunk = os.read(stdout.fileno(), READ_CHUNK_BYTES)
            if not chunk:
                stdout.close()
                break
            self._partial += chunk
        *complete, self._partial = self._partial.split(b'\n')
        if self._partial and (stdout is None or stdout.closed):
            complete.append(self._partial)
            self._partial = b''
        self._lines += [line.decode(errors='replace') for line in complete]
        return list(self._lines)

    def send_line(self, text: str) -> None:
        """Write ``text`` and a newline to the (piped) process's stdin."""
        self.popen.stdin.write(text.encode() + b'\n')
        self.popen.stdin.flush()

    def wait_for_output(self, pattern: str, timeout: float = 10.0) -> re.Match[str]:
        """Wait until the log matches the regular expression ``pattern``; return the match."""
        regex = re.compile(pattern, re.MULTILINE)
        return self._poll(lambda: regex.search(self.log()), f'print {pattern!r}', timeout)

    def wait_for_line(self, pattern: str, timeout: float = 10.0) -> str:
        """Wait until a stdout line of the (piped) process matches ``pattern``; return it."""
        regex = re.compile(pattern)
        return self._poll(lambda: next((line for line in self.output_lines()
                                        if regex.search(line)), None),
                          f'write a line matching {pattern!r}', timeout)

    def _poll(self, find: Callable[[], object], what: str, timeout: float) -> object:
        deadline = time.monotonic() + timeout
        while True:
            exited = self.returncode is not None      # before looking: its last words count
            found = find()
            if found:
                return found
            if exited:
                raise ProcessError(f'{self.name} exited with {self.returncode} and did not '
                                   f'{what}:\n{self.log_tail()}')
            if time.monotonic() > deadline:
                raise ProcessError(f'{self.name} did not {what} within {timeout} s')
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
        for stream in (self.popen.stdin, self.popen.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):      # a pipe the child closed first
                    stream.close()
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


class ProcessGroup:
    """Processes started together, each with a log file in ``log_dir``, ended together.

    ``env`` is the environment every process starts with (default: this process's
    environment when each one starts); ``start`` adds entries of its own.
    """

    def __init__(self, log_dir: Path, env: Mapping[str, str] | None = None) -> None:
        """Start nothing yet; logs go to ``log_dir`` (which must exist)."""
        self.log_dir = Path(log_dir)
        self.env = env
        self.processes: list[RosProcess] = []
        self._newest: dict[str, RosProcess] = {}
        self._counter = itertools.count()

    def start(self, cmd: Sequence[str], name: str | None = None,
              env: Mapping[str, str] | None = None, cwd: str | None = None,
              pipes: bool = False) -> RosProcess:
        """Start ``cmd`` (an executable on PATH, or a path, and its arguments); return it.

        ``name`` (default: the executable's name) names the process in errors and its log
        file; a name already used in the group gets a number. ``pipes``: see ``RosProcess``.
        """
        wanted = name or Path(cmd[0]).name
        unique = wanted if not any(p.name == wanted for p in self.processes) \
            else f'{wanted}-{next(self._counter)}'
        base = os.environ if self.env is None else self.env
        process = RosProcess(unique, list(cmd), self.log_dir / f'{unique}.log',
                             {**base, **(env or {})}, cwd, pipes)
        self.processes.append(process)
        self._newest[wanted] = process
        return process

    def named(self, name: str) -> RosProcess:
        """Return the newest process started under ``name`` (KeyError if none was)."""
        return self._newest[name]

    def running(self) -> list[RosProcess]:
        """Return the processes not stopped yet, oldest first."""
        return [p for p in self.processes if not p.stopped]

    def check(self, *processes: RosProcess) -> None:
        """Raise ``ProcessError`` if one of ``processes`` (default: all not stopped) exited."""
        for process in processes or self.running():
            process.check()

    def guard(self, condition: Callable[[], bool],
              *processes: RosProcess) -> Callable[[], bool]:
        """Return ``condition`` that first checks ``processes`` (default: all not stopped).

        A wait on the returned condition fails at once, with the dead process's log, when
        a process it depends on exits, instead of running into its timeout.
        """
        def guarded() -> bool:
            self.check(*processes)
            return condition()
        return guarded

    def stop(self, *processes: RosProcess) -> None:
        """End ``processes`` together (SIGINT, then SIGTERM, then SIGKILL)."""
        stop_all(list(processes))

    def stop_all(self) -> None:
        """End every process of the group still running, newest first."""
        stop_all(list(reversed(self.processes)))

    def __enter__(self) -> ProcessGroup:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop_all()


def group_alive(pgid: int) -> bool:
    """Whether any process of process group ``pgid`` still exists."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
