"""The AHRS sensors in the loop: their schedule, switch, session, drift and noise streams.

A sensor samples at its ``rate_hz`` on the simulator clock while its vessel is the active
one (the model is ``ahrs``: ``attitude_truth``, ``measure``, ``payload``). It draws no
ElectricCharge. Each sensor has a generator of its own, seeded from the simulator's seed
and its sensor id (``gnss_loop.noise_for``), so adding one changes no other sensor's noise
and a seed gives the same samples; it keeps its heading drift (``ahrs.Drift``) from sample
to sample; its ``sessionId`` is made when the simulator creates it, and its ``sequence``
counts its samples from 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import time

import numpy as np

from pylon_sim.game.vessel import Part
from pylon_sim.sensors import ahrs
from pylon_sim.sensors.sensor_loop import SensorLoop


@dataclass
class Unit:
    """An AHRS of a vessel: its settings, noise, drift, session and next sample."""

    sensor_id: str
    vessel_key: str
    part: Part
    settings: ahrs.Settings
    session_id: str                 # 32 hex
    noise: np.random.Generator
    drift: ahrs.Drift = field(default_factory=ahrs.Drift)
    next: float = 0.0               # simulator clock of its next sample (s)
    last: float | None = None       # simulator clock of its last sample (s)
    sequence: int = 0               # of its last sample
    enabled: bool = True


class AhrsLoop(SensorLoop):
    """The AHRS sensors of the world's vessels (``units``: ``Unit``)."""

    def samples(self, clock: float, ut: float) -> list[dict]:
        """Return the ``pylon_ahrs`` payloads due at ``clock`` (simulator seconds).

        Only the active vessel's sensors that are switched on sample, each at its
        ``rate_hz`` on the simulator clock (``sensor_loop.next_sample``); the drift's step
        covers the clock since the sensor's previous sample.
        """
        active = self.world.active
        out: list[dict] = []
        for unit in self.due(clock):
            start = time.process_time()
            dt = 0.0 if unit.last is None else clock - unit.last
            sample = ahrs.measure(ahrs.attitude_truth(active, ut), unit.drift, dt, unit.noise,
                                  unit.settings)
            unit.drift, unit.last = sample.drift, clock
            unit.sequence += 1
            out.append(ahrs.payload(
                sample, ut, unit.settings, vessel_id=active.vessel_id,
                sensor_id=unit.sensor_id, part_flight_id=unit.part.flight_id,
                session_id=unit.session_id, sequence=unit.sequence))
            self.stats.count(ahrs.KIND, start)
        return out
