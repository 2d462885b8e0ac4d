"""The GNSS receivers in the loop: their schedule, switch, session and noise streams.

A receiver samples at its ``rate_hz`` on the simulator clock while its vessel is the active
one (the model is ``gnss``: ``antenna_truth``, ``measure``, ``payload``). It draws no
ElectricCharge. Each receiver has a generator of its own, seeded from the simulator's
seed and its sensor id, so adding one changes no other sensor's noise and a seed gives the
same fixes; its ``sessionId`` is made when the simulator creates it, and its ``sequence``
counts its samples from 1.
"""

from __future__ import annotations

from dataclasses import dataclass
import time
import zlib

import numpy as np

from pylon_sim.game.vessel import Part
from pylon_sim.sensors import gnss
from pylon_sim.sensors.sensor_loop import SensorLoop


def noise_for(seed: int, sensor_id: str) -> np.random.Generator:
    """Return the noise generator of receiver ``sensor_id`` under the simulator's ``seed``."""
    return np.random.default_rng((seed, zlib.crc32(sensor_id.encode())))


@dataclass
class Receiver:
    """A GNSS receiver of a vessel: its settings, noise, session and next sample."""

    sensor_id: str
    vessel_key: str
    part: Part
    settings: gnss.Settings
    session_id: str                 # 32 hex
    noise: np.random.Generator
    next: float = 0.0               # simulator clock of its next sample (s)
    sequence: int = 0               # of its last sample
    enabled: bool = True


class GnssLoop(SensorLoop):
    """The GNSS receivers of the world's vessels (``units``: ``Receiver``)."""

    def samples(self, clock: float, ut: float) -> list[dict]:
        """Return the ``pylon_gnss`` payloads due at ``clock`` (simulator seconds).

        Only the active vessel's receivers that are switched on sample, each at its
        ``rate_hz`` on the simulator clock (``sensor_loop.next_sample``). The runtime
        calls this only while the vessel is available and the game not paused.
        """
        active = self.world.active
        out: list[dict] = []
        for receiver in self.due(clock):
            start = time.process_time()
            truth = gnss.antenna_truth(active, receiver.part, ut)
            receiver.sequence += 1
            out.append(gnss.payload(
                gnss.measure(truth, receiver.noise, receiver.settings), truth, ut,
                receiver.settings, vessel_id=active.vessel_id, sensor_id=receiver.sensor_id,
                part_flight_id=receiver.part.flight_id, session_id=receiver.session_id,
                sequence=receiver.sequence))
            self.stats.count(gnss.KIND, start)
        return out
