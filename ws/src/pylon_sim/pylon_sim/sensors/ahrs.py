"""An AHRS (attitude and heading reference system): our extension of the game.

KSP's IMU (``pylon_imu``) gives rates and specific force but no orientation, and the PyLoN
mod sends no attitude a vehicle could measure; the simulator models an AHRS so that an IMU
message can carry an ``orientation`` as a real one's does (REP 145). A part module
``{kind: ahrs, index: N, ...}`` carries it; this module is its model (pure functions:
``attitude_truth`` reads the simulator's state, ``measure`` adds the noise, ``payload``
writes the packet), and ``ahrs_loop.AhrsLoop`` puts it in the loop (rate on the simulator
clock, the on/off switch, only the active vessel's sensors).

- What: the orientation of ``base_link`` (the vessel frame: its axes, whatever part the
  module is on) in the local East-North-Up frame of the body point below the vessel's
  centre of mass (REP 103: ENU; a vector in base_link turned by it is in ENU), body-fixed
  (turning with the body).
- Noise: a small rotation ``e`` about the ENU axes applied to the truth,
  ``measured = exp(e) * truth``: ``e_east``, ``e_north`` (the tilt, i.e. roll and pitch)
  white Gaussian of ``roll_pitch_sigma`` (rad); ``e_up`` (the heading) the yaw bias plus
  white Gaussian of ``yaw_sigma`` (rad). The yaw bias starts at 0 and walks: each sample
  adds a Gaussian step of ``yaw_bias_walk * sqrt(dt)`` (rad, ``dt`` the simulator seconds
  since the sensor's previous sample). Four standard normals per sample, from the generator
  handed in (``AhrsLoop``: one per sensor, seeded from the simulator's seed).
- Covariance sent (rad^2, about East, North, Up): ``(roll_pitch_sigma^2,
  roll_pitch_sigma^2, yaw_sigma^2 + yaw_bias_walk^2 * t)`` with ``t`` the simulator seconds
  since the sensor's first sample: the bias's own variance is in it.

Settings (scenario keys, snake case; ``Settings`` holds the defaults, ``LIMITS`` the allowed
numbers; a scenario is refused at load with the key named):

| key | default | allowed | meaning |
|---|---|---|---|
| ``rate_hz`` | 50 | 10-100 | samples per second of simulator clock |
| ``roll_pitch_sigma`` | 0.0035 | 0-1 | rad (0.2 deg), 1-sigma tilt about East, North |
| ``yaw_sigma`` | 0.0087 | 0-1 | rad (0.5 deg), 1-sigma white heading error |
| ``yaw_bias_walk`` | 0.0005 | 0-0.1 | rad/sqrt(s), heading bias walk (5 mrad in 100 s) |
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
import math
from typing import Protocol

import numpy as np
from pylon_protocol import packets, rotations

from pylon_sim.game.bodies import Body, body_fixed_rotation, enu_rotation, geodetic_from_fixed
from pylon_sim.game.physics import RigidState
from pylon_sim.sensors.module_settings import check_keys, check_number, Limits

KIND = 'ahrs'
PACKET = 'pylon_ahrs'
_RATES = packets.SEND_RATE_RANGES_HZ[PACKET]


@dataclass(frozen=True)
class Settings:
    """The settings of one AHRS (the module's, defaults filled in; see the table)."""

    rate_hz: float = packets.SEND_RATES_HZ[PACKET]
    roll_pitch_sigma: float = 0.0035    # rad, 1-sigma tilt about East and North (0.2 deg)
    yaw_sigma: float = 0.0087           # rad, 1-sigma white heading error (0.5 deg)
    yaw_bias_walk: float = 0.0005       # rad/sqrt(s), the heading bias's random walk

    @classmethod
    def from_module(cls, values: Mapping[str, object]) -> Settings:
        """Return the settings of a module's ``values``; ``SettingError`` names a bad key."""
        check_keys(values, LIMITS)
        defaults = {f.name: f.default for f in fields(cls)}
        return cls(**{key: check_number(key, values.get(key, defaults[key]), LIMITS[key])
                      for key in LIMITS})


#: The allowed values of each setting: (low, high, low excluded).
LIMITS: Mapping[str, Limits] = {
    'rate_hz': (_RATES[0], _RATES[1], False),
    'roll_pitch_sigma': (0.0, 1.0, False),
    'yaw_sigma': (0.0, 1.0, False),
    'yaw_bias_walk': (0.0, 0.1, False),
}


@dataclass(frozen=True)
class Drift:
    """The heading bias (rad, about Up) and the seconds the sensor has run (its variance)."""

    bias: float = 0.0
    elapsed: float = 0.0


@dataclass(frozen=True)
class Sample:
    """One measurement: the orientation ``[x, y, z, w]`` and its ENU variances (rad^2)."""

    orientation: tuple[float, float, float, float]
    covariance: tuple[float, float, float]
    drift: Drift                    # after this sample


class Vessel(Protocol):
    """What ``attitude_truth`` reads of a vessel (a ``world.SimVessel``)."""

    body: Body
    state: RigidState


def attitude_truth(vessel: Vessel, ut: float) -> np.ndarray:
    """Return base_link's orientation in the ENU below the centre of mass at ``ut``, [x,y,z,w]."""
    body, state = vessel.body, vessel.state
    to_fixed = body_fixed_rotation(body, ut)
    lat, lon, _ = geodetic_from_fixed(body, to_fixed @ state.position)
    matrix = enu_rotation(lat, lon) @ to_fixed @ rotations.to_matrix(state.attitude)
    return rotations.from_matrix(matrix)


def measure(truth: np.ndarray, drift: Drift, dt: float, rng: np.random.Generator,
            settings: Settings) -> Sample:
    """Return one measurement of ``truth`` ``dt`` simulator seconds after the previous one.

    Draws four standard normals from ``rng``: the tilt about East and North, the heading's
    white error, the bias's step (see the module docstring).
    """
    east, north, heading, step = rng.standard_normal(4)
    bias = drift.bias + float(step) * settings.yaw_bias_walk * math.sqrt(max(dt, 0.0))
    elapsed = drift.elapsed + max(dt, 0.0)
    error = (float(east) * settings.roll_pitch_sigma, float(north) * settings.roll_pitch_sigma,
             bias + float(heading) * settings.yaw_sigma)
    measured = rotations.normalize(rotations.multiply(rotations.from_rotvec(error), truth))
    tilt = settings.roll_pitch_sigma ** 2
    yaw = settings.yaw_sigma ** 2 + settings.yaw_bias_walk ** 2 * elapsed
    return Sample(tuple(float(v) for v in measured), (tilt, tilt, yaw), Drift(bias, elapsed))


def payload(sample: Sample, ut: float, settings: Settings, *, vessel_id: str, sensor_id: str,
            part_flight_id: int, session_id: str, sequence: int) -> dict:
    """Return the ``pylon_ahrs`` payload (camelCase, no envelope) of one measurement."""
    return {
        'vesselId': vessel_id, 'sensorId': sensor_id, 'partFlightId': part_flight_id,
        'sessionId': session_id, 'sequence': sequence, 'universalTime': float(ut),
        'rateHz': settings.rate_hz, 'orientation': list(sample.orientation),
        'orientationCovariance': list(sample.covariance),
    }
