"""A relative-navigation sensor (rendezvous radar, RF ranging): our extension of the game.

The PyLoN mod has no such part and never sends ``pylon_relative_nav``; the simulator
models one so that a chaser can fly to a target on its own vessel's topics alone (a 3D
LiDAR of 1 024 rays does not resolve a 2 m target at 200 m). A part module
``{kind: relative_nav, index: N, ...}`` carries it; this module is its model, and
``nav_loop.NavLoop`` (for ``sensing.Sensing``) puts it in the loop (rate on the simulator
clock, power, the on/off switch, only the active vessel's sensors).

- What it sees: the vessels it is handed (``NavLoop`` hands it every other vessel on the
  observer's body that is not packed) within ``max_range_m`` of the observer, centre of
  mass to centre of mass; omnidirectional (no field of view), no occlusion (RF). At most
  ``packets.MAX_RELATIVE_NAV_TARGETS`` (32, the nearby vessels' cap), the nearest by true
  distance; the list goes out sorted by the measured range.
- What it measures, per target: the target's centre of mass relative to the observer's
  (m) and the difference of the two centres of mass' inertial velocities (m/s; not the
  derivative of the position in a rotating frame), both in the observer's ``base_link``
  axes, the IMU's body axes. No lever arm: the part's place on the vessel does not matter.
- Noise: independent Gaussian per axis from the generator it is handed (the simulator's,
  seeded by ``--seed``): sigma = ``position_noise_m + range_noise_fraction * range`` (m,
  the true range) for the position, ``velocity_noise_mps`` for the velocity; the reported
  ``range`` is the norm of the reported (noisy) position.

Settings (scenario keys, snake case; ``Settings`` holds the defaults, ``LIMITS`` the
allowed values; a scenario is refused at load with the key named): ``max_range_m`` 2000
(at most 2500, ``vessel.LOADED_RANGE_M``: KSP does not load a vessel farther away),
``rate_hz`` 10 (1-20), ``position_noise_m`` 0.05, ``range_noise_fraction`` 0.001,
``velocity_noise_mps`` 0.005, ``electric_charge_rate`` 0.05 EC/s while on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
import math
from typing import Protocol

import numpy as np
from pylon_protocol import packets, rotations

from pylon_sim.game.physics import RigidState
from pylon_sim.game.vessel import LOADED_RANGE_M, VesselSpec
from pylon_sim.sensors.module_settings import check_keys, check_number, Limits, SettingError

__all__ = ['KIND', 'LIMITS', 'measure', 'PACKET', 'SettingError', 'Settings', 'Vessel']

KIND = 'relative_nav'
PACKET = 'pylon_relative_nav'
_RATES = packets.SEND_RATE_RANGES_HZ[PACKET]


@dataclass(frozen=True)
class Settings:
    """The settings of one sensor (the module's, defaults filled in)."""

    max_range_m: float = 2000.0
    rate_hz: float = packets.SEND_RATES_HZ[PACKET]
    position_noise_m: float = 0.05          # 1-sigma per axis at zero range
    range_noise_fraction: float = 0.001     # sigma added per metre of range
    velocity_noise_mps: float = 0.005       # 1-sigma per axis
    electric_charge_rate: float = 0.05      # EC/s while switched on

    def position_sigma(self, distance: np.ndarray | float) -> np.ndarray | float:
        """Return the position noise, 1-sigma per axis (m), at ``distance`` m."""
        return self.position_noise_m + self.range_noise_fraction * distance

    @classmethod
    def from_module(cls, values: Mapping[str, object]) -> Settings:
        """Return the settings of a module's ``values``; ``SettingError`` names a bad key.

        ``sensor_id`` is the sensor's, not a setting, and is let through; any other key
        not in ``LIMITS`` is refused (a misspelt setting would silently keep its default).
        """
        check_keys(values, LIMITS)
        defaults = {f.name: f.default for f in fields(cls)}
        return cls(**{key: check_number(key, values.get(key, defaults[key]), LIMITS[key])
                      for key in LIMITS})


#: The allowed values of each setting: (low, high, low excluded).
LIMITS: Mapping[str, Limits] = {
    'max_range_m': (0.0, LOADED_RANGE_M, True),
    'rate_hz': (_RATES[0], _RATES[1], False),
    'position_noise_m': (0.0, math.inf, False),
    'range_noise_fraction': (0.0, 1.0, False),
    'velocity_noise_mps': (0.0, math.inf, False),
    'electric_charge_rate': (0.0, math.inf, False),
}


class Vessel(Protocol):
    """What the model reads of a vessel (a ``world.SimVessel``)."""

    spec: VesselSpec
    state: RigidState

    @property
    def vessel_id(self) -> str:
        """Return the KSP vessel id (32 hex)."""


def measure(observer: Vessel, targets: Iterable[Vessel], ut: float, settings: Settings,
            rng: np.random.Generator, *, sensor_id: str, part_flight_id: int) -> dict:
    """Return one sample: the ``pylon_relative_nav`` payload (camelCase, no envelope).

    ``observer`` and ``targets`` are the vessels' truth at ``ut`` (KCI centre of mass,
    inertial velocity, ``attitude`` base_link -> KCI); see the module's docstring for what
    is seen and measured. One draw of six standard normals per target, in the order the
    targets are seen (nearest first), so a seed gives the same samples.
    """
    state = observer.state
    seen = []
    for target in targets:
        if target is observer:
            continue
        offset = target.state.position - state.position
        distance = float(np.linalg.norm(offset))
        if distance <= settings.max_range_m:
            seen.append((distance, target, offset, target.state.velocity - state.velocity))
    seen.sort(key=lambda item: item[0])
    seen = seen[:packets.MAX_RELATIVE_NAV_TARGETS]
    listed = []
    if seen:
        to_body = rotations.to_matrix(state.attitude)     # base_link -> KCI; rows @ it: R^T
        distances = np.array([item[0] for item in seen])
        noise = rng.standard_normal((len(seen), 6))
        position = np.array([item[2] for item in seen]) @ to_body \
            + noise[:, :3] * settings.position_sigma(distances)[:, None]
        velocity = np.array([item[3] for item in seen]) @ to_body \
            + noise[:, 3:] * settings.velocity_noise_mps
        for (_, target, _, _), p, v in zip(seen, position.tolist(), velocity.tolist()):
            listed.append({
                'vesselId': target.vessel_id,
                'vesselName': target.spec.name[:packets.MAX_VESSEL_NAME_CHARS],
                'isDebris': target.spec.is_debris, 'range': math.hypot(*p),
                'position': p, 'velocity': v})
        listed.sort(key=lambda entry: entry['range'])
    return {
        'vesselId': observer.vessel_id, 'sensorId': sensor_id, 'partFlightId': part_flight_id,
        'universalTime': float(ut), 'maxRange': settings.max_range_m,
        'rateHz': settings.rate_hz, 'positionSigmaBase': settings.position_noise_m,
        'rangeSigmaFraction': settings.range_noise_fraction,
        'velocitySigma': settings.velocity_noise_mps, 'coordinateFrame': packets.BASE_LINK,
        'targets': listed,
    }
