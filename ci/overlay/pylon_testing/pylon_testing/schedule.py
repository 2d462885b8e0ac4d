"""How the suite is split into tiers and spread over parallel workers (no ROS here).

- **Tiers.** A test that starts a process or a ROS node (it uses one of ``PROCESS_FIXTURES``,
  directly or through another fixture) is an ``integration`` test; every other test is in
  the fast tier (``make test-fast``: ``-m "not integration"``). The marker is added at
  collection, so a new test cannot land in the wrong tier by forgetting it.
- **Groups.** A module whose tests share a module-scoped process fixture runs in one
  worker (``xdist_group`` = the module): its stack is started once, as ``launch_testing``
  starts one launch per module. Every other test goes to whichever worker is free.
- **Order.** Work units are handed out in collection order, so the longest go first: a
  unit's weight is the sum of its tests' durations in ``ci/test_durations.json`` (written
  by ``make test`` into ``test-results/``; copy it there when the suite changed much), or a
  default for a test not in it. Every worker reads the same file, so all collect the same
  order, as pytest-xdist requires.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
import json
from pathlib import Path

PROCESS_FIXTURES = frozenset({
    'ros_process', 'module_ros_process', 'ros_node', 'ros_node_in', 'module_ros_node',
    'sim_stack', 'module_sim_stack'})
"""Fixtures that start a process or an rclpy node: a test using one is an integration test."""

MODULE_FIXTURES = frozenset({'module_ros_process', 'module_ros_node', 'module_sim_stack'})
"""Module-scoped process fixtures: their module's tests share one worker."""

DEFAULT_INTEGRATION_SEC = 10.0
DEFAULT_UNIT_SEC = 0.05
MIN_RECORDED_SEC = 0.5
"""Tests faster than this are left out of the durations file (the default covers them)."""


def module_of(nodeid: str) -> str:
    """Return the file part of a test id (``a/test_b.py::test_c[x]`` -> ``a/test_b.py``)."""
    return nodeid.split('::', 1)[0]


def load_durations(path: Path) -> dict[str, float]:
    """Return the recorded seconds per test id ({} when the file is missing or unreadable)."""
    try:
        data = json.loads(Path(path).read_text(encoding='utf-8'))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def weight(nodeid: str, integration: bool, durations: Mapping[str, float]) -> float:
    """Return the expected seconds of one test."""
    default = DEFAULT_INTEGRATION_SEC if integration else DEFAULT_UNIT_SEC
    return durations.get(nodeid, default)


def order(units: Iterable[tuple[str, str, float]]) -> list[str]:
    """Order test ids so that the heaviest work unit comes first, a unit's tests together.

    ``units`` are (test id, unit name, seconds); a unit keeps its tests in their own order.
    Ties keep the collection order (a stable sort), so the order is the same everywhere.
    """
    members: dict[str, list[str]] = {}
    totals: dict[str, float] = {}
    for nodeid, unit, seconds in units:
        members.setdefault(unit, []).append(nodeid)
        totals[unit] = totals.get(unit, 0.0) + seconds
    ranked = sorted(members, key=lambda unit: -totals[unit])
    return [nodeid for unit in ranked for nodeid in members[unit]]


def record(durations: Mapping[str, float]) -> dict[str, float]:
    """Return the durations worth writing down (sorted, rounded, the slow ones only)."""
    return {k: round(v, 2) for k, v in sorted(durations.items()) if v >= MIN_RECORDED_SEC}
