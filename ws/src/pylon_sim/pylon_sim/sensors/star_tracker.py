"""The PyLoN star tracker as a pure sensor model (no ROS, no sockets).

The part (PyLoN Star Tracker, 8 kg, 22 x 19 x 29.3 cm) is mounted with its face at part
z = 0 and looks along part -Z through a circular field of view. It does not match star
images: it passes the vessel's true attitude through observation conditions and noise.

One sample (``step``) decides a ``reason`` in this order of precedence::

    inactive, invalid_time, sensor_unavailable, packed, disabled, no_power, atmosphere,
    sun_exclusion, body_in_fov, occluded, slew_rate_exceeded, acquiring, tracking

- ``sun_exclusion``: the optical axis is within the sun's disc plus the exclusion angle
  (35 deg), also while the sun is hidden behind another body;
- ``body_in_fov``: for every body (Kerbin, Mun, Sun...), the axis is within the body's
  apparent disc + half the FOV + the limb margin (5 deg); inside a body's sphere counts;
- ``occluded``: one of 17 rays (the axis plus two rings of 8 at half and full half-FOV)
  from the aperture hits a vessel primitive, a body sphere or the terrain within 2 km;
  the tracker's own part is excluded. The rays are cast by ``raycast``, the simulator's
  one kernel (a ray starting inside a shape meets it where it leaves);
- ``atmosphere``: below any body's atmosphere height, day or night;
- ``no_power``: ElectricCharge short of ``electric_charge_per_second * dt``;
- ``slew_rate_exceeded``: the optical head's inertial rate is above the limit (2 deg/s) or
  is not measured yet (no rate given and no previous head attitude);
- after every invalid sample, a UT going backwards or a gap over 2 s between samples the
  sensor needs 2 s of continuous clear samples (``acquiring``) before ``tracking``.

The output quaternion rotates ``base_link`` vectors into ``kerbol_inertial`` (the vessel
attitude calibrated to the vessel, not the part's pose), with independent small-angle
Gaussian noise of sigma = 20 arcsec about each base_link axis (covariance sigma^2 I). An
invalid sample carries ``orientation = None`` on the wire (the bridge publishes it as an
all-zero quaternion). When UT has not advanced (game paused) no sample is produced.

Frames: the simulator's inertial frame is KCI (see ``bodies``). ``kerbol_inertial`` is
Unity world projected onto ``(Planetarium.right, Planetarium.forward, Planetarium.up)``;
with Unity world ``u = (-w.y, w.z, w.x)`` for a KCI vector ``w`` (``ksp_view.to_unity``)
and Planetarium right/forward/up = Unity x/z/y, that is ``(-w.y, w.x, w.z)``: a +90 deg
turn about +Z (``KERBOL_FROM_KCI``). ``Inputs.kerbol_from_inertial`` can override it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
import math
import random

import numpy as np
from pylon_protocol import rotations
from pylon_protocol.frames import BASE_LINK, KERBOL_INERTIAL
from pylon_protocol.names import new_guid_hex, sensor_id

from pylon_sim.game import raycast
from pylon_sim.game.vessel import Module, Part

KIND = 'star_tracker'
ARCSEC = math.pi / (180.0 * 3600.0)

PART_MASS = 8.0                            # kg
PART_SIZE = (0.22, 0.19, 0.293)            # m, x y z
BORESIGHT_PART = np.array([0.0, 0.0, -1.0])  # optical axis in part axes
OCCLUSION_RANGE = 2000.0                   # m
RING_AZIMUTHS = 8
GAP_RESTART_SECONDS = 2.0                  # a longer gap between samples restarts acquisition

#: KCI -> kerbol_inertial (see the module docstring).
KERBOL_FROM_KCI = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])

# reasons, in the seed's words
TRACKING = 'tracking'
ACQUIRING = 'acquiring'
DISABLED = 'disabled'
NO_POWER = 'no_power'
ATMOSPHERE = 'atmosphere'
SUN_EXCLUSION = 'sun_exclusion'
BODY_IN_FOV = 'body_in_fov'
OCCLUDED = 'occluded'
SLEW_RATE_EXCEEDED = 'slew_rate_exceeded'
PACKED = 'packed'
SENSOR_UNAVAILABLE = 'sensor_unavailable'
INVALID_TIME = 'invalid_time'
INACTIVE = 'inactive'

# part.cfg settings: (snake_case key, cfg key, default, low, high)
_SETTINGS = (
    ('sample_rate_hz', 'sampleRateHz', 5.0, 1.0, 20.0),
    ('field_of_view_deg', 'fieldOfViewDegrees', 20.0, 5.0, 60.0),
    ('sun_exclusion_deg', 'sunExclusionDegrees', 35.0, 0.0, 180.0),
    ('body_limb_margin_deg', 'bodyLimbMarginDegrees', 5.0, 0.0, 90.0),
    ('max_angular_rate_deg', 'maxAngularRateDegrees', 2.0, 0.0, math.inf),
    ('acquisition_seconds', 'acquisitionSeconds', 2.0, 0.0, math.inf),
    ('noise_arcsec', 'noiseArcsec', 20.0, 1e-9, 3600.0 * 57.0),
    ('electric_charge_per_second', 'electricChargePerSecond', 0.05, 0.0, math.inf),
)


def default_sensor_id(raw: object = None, rng: random.Random | None = None) -> str:
    """Return the sensor id: ``raw`` sanitised, else ``star_tracker_<8 hex>`` from ``rng``."""
    return sensor_id(raw, KIND, rng if rng is not None else random.Random())


# -- configuration -------------------------------------------------------------------------


@dataclass(frozen=True)
class StarTrackerConfig:
    """Static configuration of one star tracker module."""

    sensor_id: str = 'star_tracker_main'
    part_persistent_id: int = 0
    mount_position: tuple[float, float, float] = (0.0, 0.0, 0.0)   # part origin, vessel frame
    mount_rotation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)  # part -> vessel
    aperture_offset: tuple[float, float, float] = (0.0, 0.0, -PART_SIZE[2])  # part frame, m
    sample_rate_hz: float = 5.0
    field_of_view_deg: float = 20.0        # full angle of the circular FOV
    sun_exclusion_deg: float = 35.0
    body_limb_margin_deg: float = 5.0
    max_angular_rate_deg: float = 2.0      # deg/s
    acquisition_seconds: float = 2.0
    noise_arcsec: float = 20.0             # per-axis 1 sigma
    electric_charge_per_second: float = 0.05
    occlusion_range: float = OCCLUSION_RANGE

    @property
    def noise_std_rad(self) -> float:
        """Return the per-axis 1 sigma in rad."""
        return self.noise_arcsec * ARCSEC

    @property
    def boresight_vessel(self) -> np.ndarray:
        """Return the optical axis in the vessel (= base_link) axes."""
        return rotations.to_matrix(self.mount_rotation) @ BORESIGHT_PART

    @classmethod
    def from_part(cls, part: Part, module: Module | None = None,
                  rng: random.Random | None = None) -> StarTrackerConfig:
        """Build the configuration of ``part``'s star tracker module (the first if None).

        Settings are read from the module in snake_case (``field_of_view_deg``) or as the
        part.cfg keys (``fieldOfViewDegrees``) and clamped to the seed's ranges. A missing
        ``sensor_id`` is generated as ``star_tracker_<8 hex>`` from ``rng``.
        """
        if module is None:
            modules = part.modules_of(KIND)
            if not modules:
                raise ValueError(f'part {part.name!r} has no {KIND} module')
            module = modules[0]
        values: dict[str, object] = {}
        for key, cfg_key, default, low, high in _SETTINGS:
            raw = module.get(key, module.get(cfg_key, default))
            value = float(raw) if isinstance(raw, (int, float)) and not isinstance(
                raw, bool) else default
            if not math.isfinite(value):
                value = default
            values[key] = min(high, max(low, value))
        return cls(
            sensor_id=default_sensor_id(module.get('sensor_id'), rng),
            part_persistent_id=part.persistent_id or part.flight_id,
            mount_position=tuple(float(v) for v in part.position),
            mount_rotation=tuple(float(v) for v in part.rotation),
            **values)


# -- occlusion rays ------------------------------------------------------------------------


def fov_rays(boresight: np.ndarray, half_fov: float) -> np.ndarray:
    """Return the 17 unit rays: the axis plus rings of 8 at half_fov/2 and half_fov (rad).

    The outer ring is turned by half the azimuth step against the inner one.
    """
    axis = np.asarray(boresight, dtype=float)
    axis = axis / np.linalg.norm(axis)
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = np.cross(axis, helper)
    u /= np.linalg.norm(u)
    v = np.cross(axis, u)
    rays = [axis]
    step = 2.0 * math.pi / RING_AZIMUTHS
    for cone, offset in ((0.5 * half_fov, 0.0), (half_fov, 0.5 * step)):
        for k in range(RING_AZIMUTHS):
            az = offset + k * step
            rays.append(math.cos(cone) * axis
                        + math.sin(cone) * (math.cos(az) * u + math.sin(az) * v))
    return np.array(rays)


# -- one sample ----------------------------------------------------------------------------


@dataclass(frozen=True)
class BodyDisc:
    """A celestial body as the tracker sees it: a sphere, maybe with an atmosphere."""

    name: str
    position: np.ndarray           # m, inertial
    radius: float                  # m
    atmosphere_height: float = 0.0  # m above the radius, 0 without atmosphere


@dataclass(frozen=True)
class Surface:
    """The ground of one body as the occlusion rays meet it: its sphere, maybe a terrain.

    ``terrain`` (a ``raycast.Terrain``, e.g. a ``terrain.SiteTerrain`` seen from the
    inertial frame with ``in_frame``) displaces the sphere; None: the bare sphere.
    """

    center: np.ndarray             # m, inertial
    radius: float                  # m
    terrain: raycast.Terrain | None = None


@dataclass(frozen=True)
class Inputs:
    """What the sensor sees at one sample (inertial frame = the simulator's KCI)."""

    ut: float
    attitude: np.ndarray                 # quaternion x y z w, base_link -> inertial
    position: np.ndarray                 # m, vessel centre of mass, inertial
    sun_position: np.ndarray             # m, inertial
    body_rate: np.ndarray | None = None  # rad/s, inertial rate in base_link; None: measure it
    sun_radius: float = 261_600_000.0    # m
    bodies: Sequence[BodyDisc] = ()
    occluders: Sequence[raycast.Primitive] = ()  # owners (vessel_id, part persistent id)
    surface: Surface | None = None
    com: np.ndarray | None = None        # m, centre of mass in the vessel frame
    electric_charge: float = math.inf    # ElectricCharge available to the part
    enabled: bool = True                 # the part's on/off switch
    packed: bool = False
    time_valid: bool = True
    sensor_available: bool = True
    active: bool = True                  # vessel still the active one, part alive
    vessel_id: str = '0' * 32
    kerbol_from_inertial: np.ndarray = field(default_factory=lambda: KERBOL_FROM_KCI.copy())


@dataclass(frozen=True)
class TrackerState:
    """What the sensor remembers between samples."""

    session_id: str
    sequence: int = 0                    # of the last sample produced
    last_ut: float | None = None
    clear_since: float | None = None     # UT when the current clear run started
    head_attitude: np.ndarray | None = None  # optical head, inertial, at last_ut
    head_ut: float | None = None
    reason: str = ACQUIRING
    valid: bool = False
    ec_drawn: float = 0.0                # ElectricCharge taken by the last step
    ec_total: float = 0.0                # ElectricCharge taken since creation


def initial_state(rng: random.Random | None = None) -> TrackerState:
    """Return the state of a freshly loaded module (a new ``sessionId``)."""
    return TrackerState(session_id=new_guid_hex(rng if rng is not None else random.Random()))


def _finite(v: object) -> bool:
    try:
        return bool(np.all(np.isfinite(np.asarray(v, dtype=float))))
    except (TypeError, ValueError):
        return False


def _angle(a: np.ndarray, b: np.ndarray) -> float:
    return math.atan2(float(np.linalg.norm(np.cross(a, b))), float(a @ b))


def _unit_attitude(q: object) -> np.ndarray | None:
    if q is None or not _finite(q):
        return None
    arr = np.asarray(q, dtype=float).reshape(-1)
    if arr.shape != (4,):
        return None
    n = float(np.linalg.norm(arr))
    return arr / n if n > 1e-9 else None


def _occluded(config: StarTrackerConfig, inputs: Inputs, aperture: np.ndarray,
              rays: np.ndarray) -> bool:
    """Tell whether any ray meets a surface within the occlusion range (``raycast``).

    The occluders but the tracker's own part, every body's sphere and the surface (its
    sphere and terrain) are cast at; a ray starting inside a shape meets it where it
    leaves (``shapes``).
    """
    bodies = [raycast.Primitive('sphere', (b.radius,), b.position, owner=('body', b.name))
              for b in inputs.bodies]
    surface = inputs.surface
    center, radius, terrain = ((surface.center, surface.radius, surface.terrain)
                               if surface is not None else (None, None, None))
    ranges = raycast.cast(aperture, rays, config.occlusion_range,
                          list(inputs.occluders) + bodies, center, radius, terrain,
                          exclude={(inputs.vessel_id, config.part_persistent_id)})
    return bool(np.isfinite(ranges).any())


def _blocking_reason(config: StarTrackerConfig, inputs: Inputs, head_rot: np.ndarray,
                     aperture: np.ndarray, rate_deg: float | None) -> str | None:
    for body in inputs.bodies:
        if body.atmosphere_height > 0.0:
            alt = float(np.linalg.norm(aperture - body.position)) - body.radius
            if alt < body.atmosphere_height:
                return ATMOSPHERE
    axis = head_rot @ BORESIGHT_PART
    to_sun = np.asarray(inputs.sun_position, dtype=float) - aperture
    sun_dist = float(np.linalg.norm(to_sun))
    sun_disc = math.asin(min(1.0, inputs.sun_radius / sun_dist)) if sun_dist > 0 else math.pi
    if _angle(axis, to_sun) < sun_disc + math.radians(config.sun_exclusion_deg):
        return SUN_EXCLUSION
    half_fov = math.radians(0.5 * config.field_of_view_deg)
    margin = half_fov + math.radians(config.body_limb_margin_deg)
    for body in inputs.bodies:
        to_body = np.asarray(body.position, dtype=float) - aperture
        dist = float(np.linalg.norm(to_body))
        if dist <= body.radius:
            return BODY_IN_FOV
        if _angle(axis, to_body) < math.asin(body.radius / dist) + margin:
            return BODY_IN_FOV
    if _occluded(config, inputs, aperture, fov_rays(axis, half_fov)):
        return OCCLUDED
    if rate_deg is None or rate_deg > config.max_angular_rate_deg:
        return SLEW_RATE_EXCEEDED
    return None


def _reported_ut(ut: object, state: TrackerState) -> float:
    """Return ``ut``, or the last good UT (else 0) when it is not finite."""
    if _finite(ut) and np.ndim(ut) == 0:
        return float(ut)
    return state.last_ut if state.last_ut is not None else 0.0


def _sample(config: StarTrackerConfig, state: TrackerState, inputs: Inputs, reason: str,
            rate_deg: float, orientation: list[float] | None) -> dict:
    return {
        'vesselId': inputs.vessel_id,
        'sensorId': config.sensor_id,
        'sessionId': state.session_id,
        'sequence': state.sequence,
        'universalTime': _reported_ut(inputs.ut, state),
        'referenceFrame': KERBOL_INERTIAL,
        'measuredFrame': BASE_LINK,
        'valid': reason == TRACKING,
        'reason': reason,
        'angularRateDegSec': float(rate_deg),
        'noiseStdRad': config.noise_std_rad,
        'orientation': orientation,
    }


def noisy_orientation(attitude: np.ndarray, kerbol_from_inertial: np.ndarray, sigma: float,
                      rng: np.random.Generator) -> np.ndarray:
    """Return base_link -> kerbol_inertial with a N(0, sigma^2 I) body-axis rotation error.

    The error is applied on the right (``q_true * exp(dtheta / 2)``), so ``dtheta`` is a
    small rotation about base_link axes; the result has w >= 0.
    """
    true = rotations.multiply(rotations.from_matrix(kerbol_from_inertial), attitude)
    error = rotations.from_rotvec(rng.normal(0.0, sigma, 3))
    return rotations.canonical(rotations.multiply(true, error))


def _head_rate_deg(inputs: Inputs, state: TrackerState, head: np.ndarray | None, ut: float,
                   restart: bool) -> float | None:
    """Return the optical head's rate (deg/s): given, else from the previous head attitude."""
    rate_rad: float | None = None
    if inputs.body_rate is not None and _finite(inputs.body_rate):
        rate_rad = float(np.linalg.norm(np.asarray(inputs.body_rate, dtype=float)))
    elif (head is not None and not restart and state.head_attitude is not None
          and state.head_ut is not None and ut > state.head_ut):
        rate_rad = rotations.angle_between(state.head_attitude, head) / (ut - state.head_ut)
    return None if rate_rad is None else math.degrees(rate_rad)


def _power(config: StarTrackerConfig, inputs: Inputs, dt: float) -> tuple[float, bool]:
    """Return the ElectricCharge drawn over ``dt`` and whether it covered the need.

    Drawn only while switched on and unpacked.
    """
    need = config.electric_charge_per_second * max(0.0, float(dt)) if _finite(dt) else 0.0
    if not inputs.enabled or inputs.packed:
        return 0.0, True
    charge = float(inputs.electric_charge)
    available = 0.0 if math.isnan(charge) else max(0.0, charge)
    drawn = min(need, available)
    powered = (drawn >= need * (1.0 - 1e-9)
               and (available > 0.0 or config.electric_charge_per_second == 0.0))
    return drawn, powered


def _invalid_reason(config: StarTrackerConfig, inputs: Inputs, attitude: np.ndarray | None,
                    head: np.ndarray | None, time_ok: bool, powered: bool,
                    rate_deg: float | None) -> str | None:
    """Return why this sample cannot measure (the first reason that holds), or None."""
    if not time_ok:
        return INVALID_TIME
    if (not inputs.sensor_available or head is None or not _finite(inputs.position)
            or not _finite(inputs.sun_position) or not _finite(inputs.kerbol_from_inertial)):
        return SENSOR_UNAVAILABLE
    if inputs.packed:
        return PACKED
    if not inputs.enabled:
        return DISABLED
    if not powered:
        return NO_POWER
    com = np.zeros(3) if inputs.com is None else np.asarray(inputs.com, dtype=float)
    mount = np.asarray(config.mount_rotation, dtype=float)
    local = (np.asarray(config.mount_position, dtype=float) - com
             + rotations.to_matrix(mount) @ np.asarray(config.aperture_offset, dtype=float))
    aperture = np.asarray(inputs.position, dtype=float) + rotations.to_matrix(attitude) @ local
    return _blocking_reason(config, inputs, rotations.to_matrix(head), aperture, rate_deg)


def _acquisition(config: StarTrackerConfig, state: TrackerState, reason: str | None,
                 ut: float, restart: bool) -> tuple[str, float | None]:
    """Return the reason after acquisition, and since when the sky has been clear.

    ACQUIRING until the sky was clear for ``acquisition_seconds``; the clear-since time is
    None while blocked.
    """
    if reason is not None:
        return reason, None
    clear_since = ut if restart or state.clear_since is None else state.clear_since
    held = ut - clear_since
    return (TRACKING if held >= config.acquisition_seconds - 1e-9 else ACQUIRING), clear_since


def step(config: StarTrackerConfig, state: TrackerState, inputs: Inputs, dt: float,
         rng: np.random.Generator) -> tuple[TrackerState, dict | None]:
    """Produce one sample; return the new state and the ``pylon_star_tracker`` fields.

    ``dt`` is the simulation time (s) since the previous call, used for the
    ElectricCharge draw (``ec_drawn`` in the new state, for the caller to subtract).
    The sample dict has exactly the keys of ``packets.STAR_TRACKER`` (no envelope, type or
    version). It is None, with the state unchanged, when UT has not advanced since the
    previous sample (the game is paused), except for ``inactive`` which is always sent.
    """
    ut = float(inputs.ut) if _finite(inputs.ut) else math.nan
    if not inputs.active:
        state = replace(state, sequence=state.sequence + 1, clear_since=None,
                        head_attitude=None, head_ut=None, reason=INACTIVE, valid=False,
                        ec_drawn=0.0)
        return state, _sample(config, state, inputs, INACTIVE, 0.0, None)
    time_ok = inputs.time_valid and math.isfinite(ut)
    if time_ok and state.last_ut is not None and ut == state.last_ut:
        return state, None
    restart = (not time_ok or state.last_ut is None or ut < state.last_ut
               or ut - state.last_ut > GAP_RESTART_SECONDS)
    attitude = _unit_attitude(inputs.attitude)
    head = None if attitude is None else rotations.multiply(
        attitude, np.asarray(config.mount_rotation, dtype=float))
    rate_deg = _head_rate_deg(inputs, state, head, ut, restart)
    drawn, powered = _power(config, inputs, dt)
    reason, clear_since = _acquisition(
        config, state, _invalid_reason(config, inputs, attitude, head, time_ok, powered,
                                       rate_deg), ut, restart)
    orientation = None
    if reason == TRACKING:
        q = noisy_orientation(attitude, inputs.kerbol_from_inertial, config.noise_std_rad, rng)
        orientation = [float(v) for v in q]
    new_state = replace(
        state, sequence=state.sequence + 1,
        last_ut=ut if time_ok else state.last_ut,
        clear_since=clear_since,
        head_attitude=head if time_ok else None,
        head_ut=ut if (time_ok and head is not None) else None,
        reason=reason, valid=reason == TRACKING,
        ec_drawn=drawn, ec_total=state.ec_total + drawn)
    return new_state, _sample(config, new_state, inputs, reason,
                              rate_deg if rate_deg is not None else 0.0, orientation)


class StarTracker:
    """One star tracker: its configuration and state, stepped sample by sample."""

    def __init__(self, config: StarTrackerConfig, rng: np.random.Generator,
                 session_rng: random.Random | None = None) -> None:
        """Create the sensor; ``rng`` draws the noise, ``session_rng`` the sessionId."""
        self.config = config
        self.rng = rng
        self.state = initial_state(session_rng)

    @classmethod
    def from_part(cls, part: Part, rng: np.random.Generator,
                  session_rng: random.Random | None = None) -> StarTracker:
        """Create the sensor of ``part``'s first star tracker module."""
        return cls(StarTrackerConfig.from_part(part, rng=session_rng), rng, session_rng)

    @property
    def period(self) -> float:
        """Return the sample period in s (1 / sampleRateHz)."""
        return 1.0 / self.config.sample_rate_hz

    def step(self, inputs: Inputs, dt: float) -> dict | None:
        """Advance by one sample and return its fields (None while paused)."""
        self.state, sample = step(self.config, self.state, inputs, dt, self.rng)
        return sample
