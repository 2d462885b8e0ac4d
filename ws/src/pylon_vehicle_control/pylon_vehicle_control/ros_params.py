"""Declare a node's ROS parameters from a parameter table (one row per parameter).

A row has ``name``, ``default`` (its Python type is the parameter's type), ``description``
and an optional range (``min``/``max`` or ``minimum``/``maximum``). Numbers get a
floating-point or integer range descriptor, so ``ros2 param describe`` shows it and a value
outside is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor


def _bound(row: Any, short: str, long: str) -> float | None:
    value = getattr(row, short, None)
    return getattr(row, long, None) if value is None else value


def declare(node, rows: Iterable[Any]) -> dict[str, Any]:
    """Declare every row as a parameter of ``node``; return the values in force."""
    values = {}
    for row in rows:
        descriptor = ParameterDescriptor(description=row.description)
        lo, hi = _bound(row, 'min', 'minimum'), _bound(row, 'max', 'maximum')
        if lo is not None and hi is not None and not isinstance(row.default, bool):
            if isinstance(row.default, int):
                descriptor.integer_range = [IntegerRange(from_value=int(lo), to_value=int(hi),
                                                         step=1)]
            elif isinstance(row.default, float):
                descriptor.floating_point_range = [FloatingPointRange(
                    from_value=float(lo), to_value=float(hi), step=0.0)]
        values[row.name] = node.declare_parameter(row.name, row.default, descriptor).value
    return values
