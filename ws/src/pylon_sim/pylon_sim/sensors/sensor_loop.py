"""What every sampled sensor kind shares in the loop: its units, switch, re-homing, schedule.

A unit (a GNSS receiver, an AHRS, a relative-navigation sensor) is a dataclass with at
least ``sensor_id``, ``vessel_key``, ``part``, ``settings`` (with ``rate_hz``), ``next``
(the simulator clock of its next sample) and ``enabled``. ``SensorLoop`` holds a kind's
units; a kind's loop adds what its samples are (``samples``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pylon_sim.game.world import World
from pylon_sim.sensors.sensor_stats import SensorStats


def next_sample(scheduled: float, clock: float, rate_hz: float) -> float:
    """Return the clock of the sample after one taken at ``clock`` (due at ``scheduled``).

    The rate holds on the simulator clock; a unit that fell behind (or was off) starts
    again from ``clock``: no burst.
    """
    period = 1.0 / rate_hz
    after = scheduled + period
    return after if after > clock else clock + period


class SensorLoop:
    """The units of one sensor kind on the world's vessels."""

    def __init__(self, world: World, stats: SensorStats) -> None:
        """Sample the vessels of ``world``; count the cost in ``stats``."""
        self.world = world
        self.stats = stats
        self.units: list[Any] = []

    def set_enabled(self, sensor_id: str, enabled: bool) -> bool:
        """Switch the units called ``sensor_id`` on or off; say if there is one."""
        found = False
        for unit in self.units:
            if unit.sensor_id == sensor_id:
                unit.enabled, found = enabled, True
        return found

    def follow(self, holders: dict) -> None:
        """Re-home every unit to the vessel holding its part (see ``Sensing``)."""
        for unit in self.units:
            vessel, part = holders[unit.part.persistent_id or unit.part.flight_id]
            unit.vessel_key, unit.part = vessel.key, part

    def due(self, clock: float) -> Iterator[Any]:
        """Yield the active vessel's switched-on units due at ``clock``; advance their schedule."""
        active = self.world.active.key
        for unit in self.units:
            if unit.vessel_key != active or not unit.enabled or clock + 1e-9 < unit.next:
                continue
            unit.next = next_sample(unit.next, clock, unit.settings.rate_hz)
            yield unit
