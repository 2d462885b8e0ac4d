"""Child processes that end with their parent, even when the parent is killed.

A process started with ``preexec_fn=die_with_parent`` asks the Linux kernel to send it
SIGKILL when the thread that started it dies (``PR_SET_PDEATHSIG``). A graceful stop
(SIGINT to each child's process group) still comes first wherever the parent can give
it; this is the floor for when it cannot (``kill -9`` of a demo or of a test run), so that
no simulator, bridge or node lives on holding its UDP ports and ROS domain.
"""

from __future__ import annotations

import ctypes
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask the kernel to SIGKILL this process when its parent dies (``preexec_fn``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
