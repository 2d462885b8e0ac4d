"""ROS time stamps and seconds, both ways, rounded to the nanosecond a stamp holds."""

from __future__ import annotations

from typing import Any

from builtin_interfaces.msg import Time


def to_nanoseconds(seconds: float) -> int:
    """Return ``seconds`` (>= 0) in whole nanoseconds, as a message stamp holds it."""
    return max(0, round(seconds * 1e9))


def to_time(seconds: float) -> Time:
    """Return ``seconds`` (>= 0) as a ``builtin_interfaces/Time``, rounded to 1 ns."""
    total = to_nanoseconds(seconds)
    return Time(sec=total // 1_000_000_000, nanosec=total % 1_000_000_000)


def to_seconds(stamp: Any) -> float:
    """Return a ``builtin_interfaces/Time`` (or a message's header stamp) in seconds."""
    stamp = getattr(getattr(stamp, 'header', stamp), 'stamp', stamp)
    return stamp.sec + stamp.nanosec * 1e-9
