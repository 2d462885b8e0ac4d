"""A GNSS receiver: our extension of the game (KSP has no satellite navigation).

The PyLoN mod has no such part and never sends ``pylon_gnss``; the simulator models one so
that a vehicle on the ground can be given a position fix as on Earth. A part module
``{kind: gnss, index: N, ...}`` carries it; this module is its model (pure functions:
``antenna_truth`` reads the simulator's state, ``measure`` adds the noise, ``payload``
writes the packet), and ``gnss_loop.GnssLoop`` puts it in the loop (rate on the simulator
clock, the on/off switch, only the active vessel's receivers).

- Where: the antenna is the part's origin (``Part.position`` in the vessel frame, carried
  by the vessel's attitude from its centre of mass), on the vessel's main body (the body
  its state is relative to).
- What: latitude and longitude (deg) on the body's sphere, and the altitude (m) above that
  sphere (radius ``Body.radius``): KSP's altitude over sea level, not over the terrain;
  body-fixed (turning with the body), as KSP's ``latitude``/``longitude``/``altitude``.
- Noise: white Gaussian, independent per axis, in the antenna's local East, North, Up (m):
  ``horizontal_sigma`` for East and North, ``vertical_sigma`` for Up, from the generator it
  is handed (``GnssLoop``: one per receiver, seeded from the simulator's seed). The metres
  become degrees on the sphere through the antenna's altitude: ``dlat = north / (R + h)``,
  ``dlon = east / ((R + h) cos lat)`` (rad); the covariance sent is the diagonal
  ``(sigma_h^2, sigma_h^2, sigma_v^2)`` (m^2, ENU).
- Fix: while the antenna is below ``max_altitude_m`` over the sphere (default 70 km,
  Kerbin's atmosphere: a receiver for the ground and the air); above it, ``no_fix`` with no
  position. The noise is drawn either way (a seed gives the same stream whatever happens).

Settings (scenario keys, snake case; ``Settings`` holds the defaults, ``LIMITS`` the allowed
numbers; a scenario is refused at load with the key named):

| key | default | allowed | meaning |
|---|---|---|---|
| ``rate_hz`` | 10 | 1-20 | samples per second of simulator clock |
| ``horizontal_sigma`` | 0.2 | >= 0 | m, 1-sigma of the East and of the North error |
| ``vertical_sigma`` | 0.4 | >= 0 | m, 1-sigma of the Up error |
| ``max_altitude_m`` | 70000 | > 0 | m over the sphere: a fix below it, none above |
| ``frame_id`` | ``""`` | see below | the frame the bridge publishes the fix in |

``frame_id`` is ``""`` (the receiver's sensor frame, which the bridge names
``pylon_<vid8>_<sensor id>``) or a name of ``packets.GNSS_FRAME_ID_PATTERN``
(``[a-z_][a-z0-9_]{0,63}``), such as ``gnss_link``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
import math
import re
from typing import Protocol

import numpy as np
from pylon_protocol import packets, rotations

from pylon_sim.game.bodies import Body, body_fixed_rotation, geodetic_from_fixed
from pylon_sim.game.physics import RigidState
from pylon_sim.game.vessel import Part
from pylon_sim.sensors.module_settings import check_keys, check_number, Limits, SettingError

KIND = 'gnss'
PACKET = 'pylon_gnss'
_RATES = packets.SEND_RATE_RANGES_HZ[PACKET]


@dataclass(frozen=True)
class Settings:
    """The settings of one receiver (the module's, defaults filled in; see the table)."""

    rate_hz: float = packets.SEND_RATES_HZ[PACKET]
    horizontal_sigma: float = 0.2       # m, 1-sigma East and North
    vertical_sigma: float = 0.4         # m, 1-sigma Up
    max_altitude_m: float = 70_000.0    # m over the body's sphere: no fix above
    frame_id: str = ''                  # '' : the receiver's sensor frame

    @property
    def covariance(self) -> tuple[float, float, float]:
        """Return the diagonal of the noise covariance in East, North, Up (m^2)."""
        h, v = self.horizontal_sigma ** 2, self.vertical_sigma ** 2
        return (h, h, v)

    @classmethod
    def from_module(cls, values: Mapping[str, object]) -> Settings:
        """Return the settings of a module's ``values``; ``SettingError`` names a bad key."""
        check_keys(values, (*LIMITS, 'frame_id'))
        defaults = {f.name: f.default for f in fields(cls)}
        frame = values.get('frame_id', '')
        if not isinstance(frame, str) or _FRAME_ID.fullmatch(frame) is None:
            raise SettingError('frame_id', f'must be "" or match '
                                           f'{packets.GNSS_FRAME_ID_PATTERN}, got {frame!r}')
        return cls(frame_id=frame, **{
            key: check_number(key, values.get(key, defaults[key]), LIMITS[key])
            for key in LIMITS})


#: The allowed values of each number setting: (low, high, low excluded).
LIMITS: Mapping[str, Limits] = {
    'rate_hz': (_RATES[0], _RATES[1], False),
    'horizontal_sigma': (0.0, math.inf, False),
    'vertical_sigma': (0.0, math.inf, False),
    'max_altitude_m': (0.0, math.inf, True),
}
_FRAME_ID = re.compile(packets.GNSS_FRAME_ID_PATTERN)


@dataclass(frozen=True)
class Truth:
    """Where the antenna is: its body and its place on the body's sphere."""

    body_name: str
    body_radius: float      # m
    latitude: float         # deg
    longitude: float        # deg, east positive, [-180, 180]
    altitude: float         # m above the body's sphere


@dataclass(frozen=True)
class Fix:
    """One measurement: ``status`` (``packets.GNSS_STATUSES``), the position when a fix."""

    status: str
    latitude: float | None          # deg
    longitude: float | None         # deg
    altitude: float | None          # m above the sphere
    covariance: tuple[float, float, float]   # m^2, East, North, Up


class Vessel(Protocol):
    """What ``antenna_truth`` reads of a vessel (a ``world.SimVessel``)."""

    body: Body
    state: RigidState
    mass: object            # ``MassProperties``: ``com`` in the vessel frame (m)


def antenna_truth(vessel: Vessel, part: Part, ut: float) -> Truth:
    """Return where the antenna (``part``'s origin) of ``vessel`` is at ``ut``."""
    state = vessel.state
    lever = np.asarray(part.position, dtype=float) - np.asarray(vessel.mass.com, dtype=float)
    inertial = state.position + rotations.to_matrix(state.attitude) @ lever
    body = vessel.body
    lat, lon, alt = geodetic_from_fixed(body, body_fixed_rotation(body, ut) @ inertial)
    return Truth(body.name, body.radius, lat, lon, alt)


def offset_position(truth: Truth, east: float, north: float, up: float,
                    ) -> tuple[float, float, float]:
    """Return latitude, longitude (deg) and altitude (m) moved by ``east, north, up`` metres.

    Metres along the sphere through the antenna (radius ``R + h``): ``north / (R + h)`` rad
    of latitude, ``east / ((R + h) cos lat)`` rad of longitude. Past a pole the latitude
    folds back (and the longitude turns half a circle); the longitude wraps into
    [-180, 180).
    """
    radius = truth.body_radius + truth.altitude
    lat = truth.latitude + math.degrees(north / radius)
    cos_lat = max(math.cos(math.radians(truth.latitude)), 1e-12)
    lon = truth.longitude + math.degrees(east / (radius * cos_lat))
    if lat > 90.0:
        lat, lon = 180.0 - lat, lon + 180.0
    elif lat < -90.0:
        lat, lon = -180.0 - lat, lon + 180.0
    if not -180.0 <= lon < 180.0:
        lon = (lon + 180.0) % 360.0 - 180.0
    return lat, lon, truth.altitude + up


def measure(truth: Truth, rng: np.random.Generator, settings: Settings) -> Fix:
    """Return one measurement of ``truth``: three standard normals drawn from ``rng``."""
    east, north, up = rng.standard_normal(3) * (
        settings.horizontal_sigma, settings.horizontal_sigma, settings.vertical_sigma)
    if truth.altitude >= settings.max_altitude_m:
        return Fix(packets.GNSS_NO_FIX, None, None, None, settings.covariance)
    lat, lon, alt = offset_position(truth, float(east), float(north), float(up))
    return Fix(packets.GNSS_FIX, lat, lon, alt, settings.covariance)


def payload(fix: Fix, truth: Truth, ut: float, settings: Settings, *, vessel_id: str,
            sensor_id: str, part_flight_id: int, session_id: str, sequence: int) -> dict:
    """Return the ``pylon_gnss`` payload (camelCase, no envelope) of one measurement."""
    return {
        'vesselId': vessel_id, 'sensorId': sensor_id, 'partFlightId': part_flight_id,
        'sessionId': session_id, 'sequence': sequence, 'universalTime': float(ut),
        'rateHz': settings.rate_hz, 'frameId': settings.frame_id, 'bodyName': truth.body_name,
        'status': fix.status, 'latitude': fix.latitude, 'longitude': fix.longitude,
        'altitude': fix.altitude, 'positionCovariance': list(fix.covariance),
    }
