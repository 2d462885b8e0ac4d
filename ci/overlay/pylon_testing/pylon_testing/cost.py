"""What a piece of code costs, measured in CPU time so that a busy machine does not change it.

A test that asserts "this is fast" must not fail because another process had the core:
``cpu_seconds`` times a call on this process's CPU clock (``time.process_time``: the time
the process itself ran), and every process of the workspace runs numpy on one thread, so
that clock counts the call's own work.
"""

from __future__ import annotations

from collections.abc import Callable
import time
from typing import Any


def cpu_seconds(call: Callable[[], Any], repeat: int = 1) -> float:
    """Return the least CPU time (s) ``call()`` took over ``repeat`` runs."""
    best = float('inf')
    for _ in range(repeat):
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best
