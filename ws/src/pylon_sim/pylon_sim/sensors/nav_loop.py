"""The relative-navigation sensors in the loop: their schedule, switch and power draw.

A relative-navigation sensor samples at its ``rate_hz`` on the simulator clock (the model is
``relative_nav.measure``), drawing its ElectricCharge over the UT between its samples;
without that charge, or switched off, it takes none.
"""

from __future__ import annotations

from dataclasses import dataclass
import time

import numpy as np

from pylon_sim.game.power import draw_electric_charge, electric_charge, EMPTY
from pylon_sim.game.vessel import Part
from pylon_sim.game.world import SimVessel, World
from pylon_sim.sensors import relative_nav
from pylon_sim.sensors.sensor_loop import SensorLoop
from pylon_sim.sensors.sensor_stats import SensorStats

#: s of UT: a gap between two samples of a relative-navigation sensor longer than this (the
#: vessel was packed, or not the active one) draws no ElectricCharge: it was not running.
NAV_DRAW_GAP_SEC = 2.0


@dataclass
class Navigator:
    """A relative-navigation sensor of a vessel: its settings, switch and next sample."""

    sensor_id: str
    vessel_key: str
    part: Part
    settings: relative_nav.Settings
    next: float = 0.0
    last_ut: float | None = None    # UT of its last sample (its ElectricCharge draw)
    enabled: bool = True


def nav_powered(vessel: SimVessel, rate: float, seconds: float) -> bool:
    """Draw ``rate`` EC/s over ``seconds`` (what there is of it); tell if it was there.

    The star tracker's rule: a sensor that draws anything needs some charge to run, even
    for its first sample (nothing to draw yet).
    """
    need = rate * seconds
    available = max(0.0, electric_charge(vessel))
    draw_electric_charge(vessel, min(need, available))
    return available >= need * (1.0 - 1e-9) and (available > EMPTY or rate == 0.0)


class NavLoop(SensorLoop):
    """The relative-navigation sensors of the world's vessels (``units``: ``Navigator``)."""

    def __init__(self, world: World, stats: SensorStats, noise: np.random.Generator) -> None:
        """Sample the vessels of ``world`` with ``noise``; count the cost in ``stats``."""
        super().__init__(world, stats)
        self.noise = noise

    def samples(self, clock: float, ut: float) -> list[dict]:
        """Return the ``pylon_relative_nav`` payloads due at ``clock`` (simulator seconds).

        Only the active vessel's sensors sample, each at its ``rate_hz`` on the simulator
        clock (``relative_nav.measure``: every other unpacked vessel on the same body in
        range). A sensor switched off (``set_enabled``) takes no sample and draws nothing;
        one whose vessel lacks the ElectricCharge of ``electric_charge_rate`` over the UT
        since its last sample takes none (``skipped``, reason ``no_power``). The runtime
        calls this only while the vessel is available and the game not paused.
        """
        active = self.world.active
        out: list[dict] = []
        for nav in self.units:
            if nav.vessel_key != active.key or not nav.enabled:
                nav.last_ut = None               # not running: nothing to draw for it
        for nav in self.due(clock):
            start = time.process_time()
            gap = 0.0 if nav.last_ut is None else ut - nav.last_ut
            nav.last_ut = ut
            if not nav_powered(active, nav.settings.electric_charge_rate,
                               gap if 0.0 < gap <= NAV_DRAW_GAP_SEC else 0.0):
                self.stats.skipped[relative_nav.KIND, 'no_power'] += 1
                continue
            others = [v for v in self.world.vessels.values() if v is not active
                      and v.body is active.body and not self.world.is_packed(v)]
            out.append(relative_nav.measure(
                active, others, ut, nav.settings, self.noise, sensor_id=nav.sensor_id,
                part_flight_id=nav.part.flight_id))
            self.stats.count(relative_nav.KIND, start)
        return out
