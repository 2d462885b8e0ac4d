"""Celestial bodies of the simulated Kerbol system and where they are at a given UT.

The simulator works in the Kerbin-centred inertial frame ``KCI``: right-handed, +Z along
Kerbin's spin axis (north), +X towards Kerbin's prime meridian at UT 0. Kerbin rotates
about +Z; the Mun and Kerbol move on circular orbits in Kerbin's equatorial plane (KSP's
Kerbin has no axial tilt and the Mun's orbit is equatorial). Only the central body's
gravity acts on a vessel, as in KSP's patched conics.
"""

from __future__ import annotations

from dataclasses import dataclass
import math

import numpy as np


@dataclass(frozen=True)
class Body:
    """A celestial body: sphere, gravity, rotation and atmosphere."""

    name: str
    radius: float                 # m
    gm: float                     # m^3/s^2
    rotation_period: float        # s, sidereal; 0 for no rotation
    atmosphere_depth: float       # m, 0 without atmosphere
    rotating_frame_altitude: float  # m, below it KSP integrates in the planet-rotating frame
    initial_rotation: float = 0.0   # rad, prime-meridian angle at UT 0

    @property
    def angular_velocity(self) -> float:
        """Return the spin rate about +Z in rad/s."""
        return 2.0 * math.pi / self.rotation_period if self.rotation_period else 0.0

    def rotation_angle(self, ut: float) -> float:
        """Return the prime-meridian angle at ``ut`` in rad."""
        return self.initial_rotation + self.angular_velocity * ut

    def spin_vector(self) -> np.ndarray:
        """Return the spin vector in the inertial frame, rad/s."""
        return np.array([0.0, 0.0, self.angular_velocity])

    def surface_gravity(self) -> float:
        """Return GM / R^2 in m/s^2."""
        return self.gm / self.radius ** 2


@dataclass(frozen=True)
class Orbit:
    """A circular equatorial orbit of one body around another."""

    semi_major_axis: float  # m
    period: float           # s
    phase_at_epoch: float   # rad, angle at UT 0


KERBIN = Body('Kerbin', radius=600_000.0, gm=3.5316e12, rotation_period=21_549.425,
              atmosphere_depth=70_000.0, rotating_frame_altitude=100_000.0)
MUN = Body('Mun', radius=200_000.0, gm=6.5138398e10, rotation_period=138_984.38,
           atmosphere_depth=0.0, rotating_frame_altitude=0.0)
KERBOL = Body('Sun', radius=261_600_000.0, gm=1.1723328e18, rotation_period=432_000.0,
              atmosphere_depth=600_000.0, rotating_frame_altitude=0.0)

KERBIN_ORBIT = Orbit(semi_major_axis=13_599_840_256.0, period=9_203_545.0, phase_at_epoch=3.14)
MUN_ORBIT = Orbit(semi_major_axis=12_000_000.0, period=138_984.38, phase_at_epoch=1.7)
KERBIN_SOI = 84_159_286.0
MUN_SOI = 2_429_559.0

BODIES = {b.name: b for b in (KERBIN, MUN, KERBOL)}


def circular_position(orbit: Orbit, ut: float) -> np.ndarray:
    """Return the position on a circular equatorial orbit at ``ut`` relative to its centre."""
    angle = orbit.phase_at_epoch + 2.0 * math.pi * ut / orbit.period
    return orbit.semi_major_axis * np.array([math.cos(angle), math.sin(angle), 0.0])


def mun_position(ut: float) -> np.ndarray:
    """Return the Mun's centre in KCI at ``ut``, m."""
    return circular_position(MUN_ORBIT, ut)


def sun_position(ut: float) -> np.ndarray:
    """Return Kerbol's centre in KCI at ``ut``, m (Kerbin orbits it, so it is opposite)."""
    return -circular_position(KERBIN_ORBIT, ut)


def body_center(name: str, ut: float) -> np.ndarray:
    """Return the centre of the body called ``name`` in KCI at ``ut``, m (Kerbin's: 0)."""
    if name == MUN.name:
        return mun_position(ut)
    if name == KERBOL.name:
        return sun_position(ut)
    return np.zeros(3)


#: The exponential atmosphere of a body with one: sea-level density and scale height.
SEA_LEVEL_AIR_DENSITY = 1.225     # kg/m^3
ATMOSPHERE_SCALE_HEIGHT = 5600.0  # m


def air_density(body: Body, alt: float) -> float:
    """Return an exponential-atmosphere density (kg/m^3), zero above the atmosphere."""
    if body.atmosphere_depth <= 0 or alt >= body.atmosphere_depth:
        return 0.0
    return SEA_LEVEL_AIR_DENSITY * math.exp(-max(0.0, alt) / ATMOSPHERE_SCALE_HEIGHT)


def body_fixed_rotation(body: Body, ut: float) -> np.ndarray:
    """Return the rotation matrix KCI -> body-fixed frame at ``ut``."""
    angle = body.rotation_angle(ut)
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])


def geodetic_from_fixed(body: Body, fixed: np.ndarray) -> tuple[float, float, float]:
    """Return latitude, longitude (deg) and altitude (m) of a body-fixed position (sphere)."""
    x, y, z = (float(v) for v in fixed)
    r = math.sqrt(x * x + y * y + z * z)
    lat = math.degrees(math.asin(max(-1.0, min(1.0, z / r)))) if r > 0 else 0.0
    lon = math.degrees(math.atan2(y, x))
    return lat, lon, r - body.radius


def fixed_from_geodetic(body: Body, lat_deg: float, lon_deg: float, alt: float) -> np.ndarray:
    """Return the body-fixed position of latitude, longitude (deg) and altitude (m)."""
    lat, lon = math.radians(lat_deg), math.radians(lon_deg)
    r = body.radius + alt
    return r * np.array([math.cos(lat) * math.cos(lon), math.cos(lat) * math.sin(lon),
                         math.sin(lat)])


def enu_rotation(lat_deg: float, lon_deg: float) -> np.ndarray:
    """Return the rotation matrix body-fixed -> East-North-Up at latitude/longitude (deg)."""
    lat, lon = math.radians(lat_deg), math.radians(lon_deg)
    sl, cl = math.sin(lat), math.cos(lat)
    so, co = math.sin(lon), math.cos(lon)
    east = [-so, co, 0.0]
    north = [-sl * co, -sl * so, cl]
    up = [cl * co, cl * so, sl]
    return np.array([east, north, up])
