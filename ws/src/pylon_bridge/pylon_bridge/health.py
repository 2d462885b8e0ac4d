"""The vessel's power and part temperatures: ``VehicleHealth`` and ``PartThermalState``.

Not ground truth (published with ``--disable-ground-truth`` too); stamped with the UT
mapping, frame id empty (they describe the vessel, not a place).

- Power (``health/power``, 2 Hz): a sample of the same runtime identity that is not newer
  than the last (``observationSequence`` not greater, or UT lower) is skipped. The net
  charge rate is ``dEC/dUT`` between the last two samples of one identity with the same
  capacity and at least ``MIN_RATE_INTERVAL_SEC`` of UT between them; otherwise (first
  sample, pause, capacity or epoch change) it is 0 and not valid. The generation and
  consumption rates cannot be told apart from the charge delta: always 0 and not valid.
- Thermal (``health/thermal``, one message per part): a part's sample whose sequence is
  not newer than that part's last is skipped; the map is cleared on a new identity.

Skipped samples are counted as ignored in diagnostics, not logged: they are repeats.
"""

from __future__ import annotations

import math
from typing import Any

from pylon_interfaces.msg import PartThermalState, VehicleHealth

from pylon_bridge import convert
from pylon_bridge.context import Shared

MIN_RATE_INTERVAL_SEC = 1e-6


def identity(packet: dict) -> tuple[str, int, str, str]:
    """Return the runtime identity (instance, generation, epoch, vessel) of a packet."""
    return (packet['runtimeInstance'], int(packet['runtimeGeneration']),
            packet['runtimeEpoch'], packet['runtimeVesselId'])


def charge_rate(previous: dict | None, packet: dict) -> tuple[float, bool, float]:
    """Return (rate EC/s, valid, interval s) between two power samples of one vessel."""
    if previous is None or identity(previous) != identity(packet) \
            or previous['electricCapacity'] != packet['electricCapacity']:
        return 0.0, False, 0.0
    interval = packet['universalTime'] - previous['universalTime']
    if interval <= MIN_RATE_INTERVAL_SEC:
        return 0.0, False, 0.0
    rate = (packet['electricCharge'] - previous['electricCharge']) / interval
    return (rate, True, interval) if math.isfinite(rate) else (0.0, False, 0.0)


class Health:
    """Power and thermal state of the active vessel."""

    def __init__(self, shared: Shared) -> None:
        """Work on the core's shared state."""
        self.s = shared
        self.last_power: dict | None = None
        self.thermal_identity: tuple | None = None
        self.thermal_sequence: dict[int, int] = {}

    def power(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Publish ``VehicleHealth`` with the net charge rate since the last sample."""
        s = self.s
        last = self.last_power
        if last is not None and identity(last) == identity(packet) and (
                packet['observationSequence'] <= last['observationSequence']
                or packet['universalTime'] < last['universalTime']):
            s.stats.ignored['stale_vehicle_health'] += 1
            return []
        rate, valid, interval = charge_rate(last, packet)
        self.last_power = packet
        msg = convert.runtime_identity(convert.copy_fields(VehicleHealth(), packet), packet)
        msg.vessel_id = packet['runtimeVesselId']
        msg.net_charge_rate_estimate, msg.net_charge_rate_valid = rate, valid
        msg.rate_sample_interval_sec = interval
        msg.generation_rate = msg.consumption_rate = 0.0
        msg.generation_rate_valid = msg.consumption_rate_valid = False
        convert.header(msg, s.stamp(packet, ros_now), '')
        return [s.topics.publish('health/power', msg, now)]

    def thermal(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Publish one part's ``PartThermalState`` (newest of that part only)."""
        s = self.s
        if identity(packet) != self.thermal_identity:
            self.thermal_identity = identity(packet)
            self.thermal_sequence = {}
        part = packet['partFlightId']
        last = self.thermal_sequence.get(part)
        if last is not None and packet['observationSequence'] <= last:
            s.stats.ignored['stale_part_thermal_state'] += 1
            return []
        self.thermal_sequence[part] = packet['observationSequence']
        msg = convert.runtime_identity(convert.copy_fields(PartThermalState(), packet), packet)
        msg.vessel_id = packet['runtimeVesselId']
        convert.header(msg, s.stamp(packet, ros_now), '')
        return [s.topics.publish('health/thermal', msg, now)]
