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
  the tracker's own part is excluded;
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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
import math
import random

import numpy as np
from pylon_protocol import rotations
from pylon_protocol.frames import BASE_LINK, KERBOL_INERTIAL
from pylon_protocol.names import new_guid_hex, sensor_id

from pylon_sim.vessel import Module, Part, Shape

KIND = 'star_tracker'
ARCSEC = math.pi / (180.0 * 3600.0)

PART_MASS = 8.0                            # kg
PART_SIZE = (0.22, 0.19, 0.293)            # m, x y z
BORESIGHT_PART = np.array([0.0, 0.0, -1.0])  # optical axis in part axes
OCCLUSION_RANGE = 2000.0                   # m
RING_AZIMUTHS = 8
GAP_RESTART_SECONDS = 2.0                  # a longer gap between samples restarts acquisition
TERRAIN_STEP = 10.0                        # m between terrain samples along a ray

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


# -- occluders and rays --------------------------------------------------------------------


@dataclass(frozen=True)
class Primitive:
    """A solid box, cylinder or sphere posed in the inertial frame.

    ``size`` follows ``vessel.Shape``: box (x, y, z) full lengths, cylinder (radius,
    length) with its axis along local +X, sphere (radius,). ``rotation`` is the 3x3
    matrix local -> inertial; ``position`` the centre. ``vessel_id``/``part_id`` name the
    owner so that a sensor can leave its own part out.
    """

    kind: str
    size: tuple[float, ...]
    position: np.ndarray
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    vessel_id: str = ''
    part_id: int | None = None

    @classmethod
    def from_shape(cls, shape: Shape, position: np.ndarray, rotation: np.ndarray,
                   vessel_id: str = '', part_id: int | None = None) -> Primitive:
        """Return a primitive for a part ``Shape`` at an inertial pose."""
        return cls(shape.kind, tuple(float(v) for v in shape.size),
                   np.asarray(position, dtype=float), np.asarray(rotation, dtype=float),
                   vessel_id, part_id)


def vessel_primitives(parts: Sequence[Part], position: np.ndarray,
                      attitude: np.ndarray, com: np.ndarray | None = None,
                      vessel_id: str = '') -> list[Primitive]:
    """Return the parts' shapes in the inertial frame.

    ``position`` is the vessel's centre of mass (inertial), ``attitude`` the quaternion
    base_link -> inertial and ``com`` the centre of mass in the vessel frame.
    """
    rot = rotations.to_matrix(attitude)
    com = np.zeros(3) if com is None else np.asarray(com, dtype=float)
    out = []
    for part in parts:
        centre = np.asarray(position, dtype=float) + rot @ (np.asarray(part.position) - com)
        part_rot = rot @ rotations.to_matrix(part.rotation)
        out.append(Primitive.from_shape(part.shape, centre, part_rot, vessel_id,
                                        part.persistent_id or part.flight_id))
    return out


def _sphere_hits(o: np.ndarray, d: np.ndarray, radius: float) -> np.ndarray:
    b = np.einsum('ij,ij->i', o, d)
    c = np.einsum('ij,ij->i', o, o) - radius * radius
    disc = b * b - c
    root = np.sqrt(np.maximum(disc, 0.0))
    far = -b + root
    near = -b - root
    t = np.where(near >= 0.0, near, np.where(far >= 0.0, 0.0, np.inf))  # inside: 0
    return np.where(disc >= 0.0, t, np.inf)


def _box_hits(o: np.ndarray, d: np.ndarray, half: np.ndarray) -> np.ndarray:
    with np.errstate(divide='ignore', invalid='ignore'):
        inv = 1.0 / d
        t1 = (-half - o) * inv
        t2 = (half - o) * inv
    lo = np.minimum(t1, t2)
    hi = np.maximum(t1, t2)
    # a ray parallel to a slab: inside it -> no constraint, outside -> miss
    parallel = d == 0.0
    inside_slab = np.abs(o) <= half
    lo = np.where(parallel, np.where(inside_slab, -np.inf, np.inf), lo)
    hi = np.where(parallel, np.where(inside_slab, np.inf, -np.inf), hi)
    t_near = lo.max(axis=1)
    t_far = hi.min(axis=1)
    hit = (t_near <= t_far) & (t_far >= 0.0)
    return np.where(hit, np.maximum(t_near, 0.0), np.inf)


def _cylinder_hits(o: np.ndarray, d: np.ndarray, radius: float, length: float) -> np.ndarray:
    half = 0.5 * length
    oy, oz, dy, dz = o[:, 1], o[:, 2], d[:, 1], d[:, 2]
    a = dy * dy + dz * dz
    b = oy * dy + oz * dz
    c = oy * oy + oz * oz - radius * radius
    best = np.full(len(o), np.inf)
    inside = (c <= 0.0) & (np.abs(o[:, 0]) <= half)
    best[inside] = 0.0
    # curved side
    with np.errstate(divide='ignore', invalid='ignore'):
        disc = b * b - a * c
        root = np.sqrt(np.maximum(disc, 0.0))
        for t in ((-b - root) / a, (-b + root) / a):
            x = o[:, 0] + t * d[:, 0]
            ok = (a > 0.0) & (disc >= 0.0) & (t >= 0.0) & (np.abs(x) <= half)
            best = np.where(ok & (t < best), t, best)
        # end caps
        for cap in (-half, half):
            t = (cap - o[:, 0]) / d[:, 0]
            y = oy + t * dy
            z = oz + t * dz
            ok = (d[:, 0] != 0.0) & (t >= 0.0) & (y * y + z * z <= radius * radius)
            best = np.where(ok & (t < best), t, best)
    return best


def ray_distances(origins: np.ndarray, directions: np.ndarray, max_range: float,
                  primitives: Sequence[Primitive]) -> np.ndarray:
    """Return the distance to the first primitive along each ray, ``inf`` for none.

    ``origins`` is (3,) or (N, 3), ``directions`` (N, 3) unit vectors, both in the frame of
    the primitives' poses (m). A ray starting inside a solid hits it at distance 0. Hits
    beyond ``max_range`` are reported as ``inf``. Spheres, oriented boxes and finite
    cylinders (with caps) are exact; everything is vectorised over the rays.
    """
    d = np.atleast_2d(np.asarray(directions, dtype=float))
    o = np.broadcast_to(np.asarray(origins, dtype=float), d.shape)
    best = np.full(len(d), np.inf)
    for prim in primitives:
        rot = np.asarray(prim.rotation, dtype=float)
        lo = (o - np.asarray(prim.position, dtype=float)) @ rot   # into the local frame
        ld = d @ rot
        if prim.kind == 'sphere':
            t = _sphere_hits(lo, ld, prim.size[0])
        elif prim.kind == 'box':
            t = _box_hits(lo, ld, 0.5 * np.asarray(prim.size, dtype=float))
        elif prim.kind == 'cylinder':
            t = _cylinder_hits(lo, ld, prim.size[0], prim.size[1])
        else:
            raise ValueError(f'unknown primitive kind {prim.kind!r}')
        best = np.minimum(best, t)
    return np.where(best <= max_range, best, np.inf)


def ray_hits(origin: np.ndarray, directions: np.ndarray, max_range: float,
             primitives: Sequence[Primitive]) -> np.ndarray:
    """Return, per ray, whether it hits any primitive within ``max_range`` (bool (N,)).

    Same arguments as ``ray_distances``.
    """
    return np.isfinite(ray_distances(origin, directions, max_range, primitives))


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
class Terrain:
    """Terrain around one body: its sphere plus an optional height field.

    ``height(points)`` takes (N, 3) inertial points relative to ``center`` and returns the
    terrain height above ``radius`` in m (N,). Rays are sampled every ``TERRAIN_STEP``.
    """

    center: np.ndarray
    radius: float
    height: Callable[[np.ndarray], np.ndarray] | None = None


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
    occluders: Sequence[Primitive] = ()
    terrain: Terrain | None = None
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
    own = [p for p in inputs.occluders
           if not (p.part_id == config.part_persistent_id and p.vessel_id == inputs.vessel_id)]
    spheres = [Primitive('sphere', (b.radius,), np.asarray(b.position, dtype=float))
               for b in inputs.bodies]
    if inputs.terrain is not None:
        spheres.append(Primitive('sphere', (inputs.terrain.radius,),
                                 np.asarray(inputs.terrain.center, dtype=float)))
    if ray_hits(aperture, rays, config.occlusion_range, own + spheres).any():
        return True
    terrain = inputs.terrain
    if terrain is None or terrain.height is None:
        return False
    steps = np.arange(TERRAIN_STEP, config.occlusion_range + 0.5 * TERRAIN_STEP, TERRAIN_STEP)
    rel = aperture - np.asarray(terrain.center, dtype=float)
    points = (rel + rays[:, None, :] * steps[None, :, None]).reshape(-1, 3)
    height = np.asarray(terrain.height(points), dtype=float).reshape(-1)
    return bool(np.any(np.linalg.norm(points, axis=1) - terrain.radius < height))


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
