"""Rover wheels on the ground: suspension, tyre, motor, brake and steering, vectorised.

Pure functions over numpy arrays (one row per wheel module); no I/O, no clock. The rigid
body that carries the wheels is ``rover``'s business: ``step`` takes the vessel's pose and
velocity relative to the ground (body-fixed frame) and returns the wheels' new state with
the force each wheel puts on the vessel.

Geometry
    A wheel's part position (minus the centre of mass) is its hub when the suspension sits
    at its rest compression ``suspension_target`` × ``suspension_travel``; the suspension
    moves the hub along the vessel's down axis (base_link −Z). The hub at full extension is
    the point asked of the ground: with ``c`` its clearance along the ground normal ``n``
    and ``cos φ = n · up``, the suspension is compressed by ``x = (r − c) / cos φ``; the
    wheel is grounded while ``x > 0`` (and ``cos φ > MIN_COS_TILT``).

Suspension (KSP's ModuleWheelSuspension with its automatic spring)
    A spring-damper along the vessel's up axis: ``F = k x + c ẋ`` (never pulling), with
    ``k`` set from the weight the wheel carries at rest (``sprung_masses``: the split of the
    vessel's mass with no moment about its centre of mass) so that it rests at the target
    compression, ``k = m_i g / (target × travel)`` (g: the local gravity less the
    planet's centrifugal part, ``World.wheel_params``), and ``c = damper_ratio × 2 √(k m_i)``;
    beyond the travel a bump stop ``BUMP_STIFFNESS`` × k; the force is capped at ``MAX_LOAD``
    × the resting load (a wheel meeting a boulder's flank deep inside it pushes hard, not
    explosively). The normal load is ``N = F cos φ``.

Tyre (friction-limited, with relaxation; stiction at rest)
    The slip velocity of the contact point is ``u = (v_x − ω r, v_y)`` in the ground plane
    (``x`` along the wheel's heading, ``y`` to its left). A tangential deflection ``d``
    follows ``ḋ = u − |v_x| d / σ`` (σ = ``RELAXATION_LENGTH``) and is kept within
    ``d_peak = PEAK_SLIP × σ``; the force is ``F = −μ N (d / d_peak + τ u / d_peak)``
    (τ = ``TYRE_DAMPING_TIME``) within the friction circle ``|F| ≤ μ N``. Rolling at a
    steady slip ratio κ this is ``F = μ N κ / PEAK_SLIP``: linear up to the peak slip, then
    saturated at ``μ N`` (sliding); at rest ``d`` is a spring, so a vessel that needs less
    than ``μ N`` stands still instead of creeping (PhysX's sticky tyre at low speed).

Wheel spin
    ``I ω̇ = T_drive − r F_x − T_resist``, ``I = ½ wheel_mass r²``. The resisting torque
    (brake ``brake × brake_torque`` plus rolling resistance ``C_rr N r``) is Coulomb-like:
    it stops the wheel and then holds it, never reversing it. A vessel therefore rolls on
    a slope when ``tan θ > C_rr`` (unbraked) and the brake holds up to ``brake_torque``.

Motor (ModuleWheelMotor)
    Only under a command in force with ``enabled`` and while the vessel holds
    ElectricCharge: the torque drives the spin toward ``targetAngularVelocity``,
    ``T = T_avail × clip((ω_target − ω) / band, −1, 1)``, with ``T_avail`` =
    min(commanded ``maxDriveTorque``, the module's ``max_drive_torque``) × the torque curve
    ``1 − |ω| r / max_speed`` (full torque at standstill, none at the wheel's max speed;
    full torque when braking against the spin). ElectricCharge: ``electric_charge_per_second``
    × |T| / ``max_drive_torque`` (``power.rover_wheel_draw_rate``).
    The band is ``DRIVE_BAND``, or wider for a light wheel: at least the spin error that
    one sub-step of full torque removes, ``T_limit h / I``. The explicit step of the spin
    is then stable and does not overshoot: a kart's wheel (5 kg, 0.14 m, 56 N·m:
    ``I`` = 0.049 kg·m², 4.6 rad/s in a 4 ms sub-step) would otherwise swing between full
    drive and full braking every sub-step and give a fraction of its torque.

Drive modifier (ours: the one hook a race acts through, ``Drive``)
    Per vessel (``SimVessel.drive``, ``NORMAL`` unless a race sets it): the motors' torque
    limit times ``torque_gain`` and their torque curve's ``max_speed`` times
    ``speed_gain`` (a boost); a ``speed_cap`` (m/s of rim speed, a penalty) clips every
    motor's target spin to ``± speed_cap / r`` and, above the cap, applies each wheel's
    brake in proportion to the excess, fully at ``CAP_BRAKE_BAND`` over it (whatever is
    commanded, a coasting vessel included; the larger of that and the commanded brake).
    ``NORMAL`` changes nothing.

Steering (ModuleWheelSteering)
    A steerable wheel's heading turns by the commanded angle (already clamped to
    ±``max_steering_angle_deg``) about the vessel's up axis, at once; a fixed wheel keeps 0.

Every setting, its default and its source are in ``SETTINGS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
import math
from typing import Protocol

import numpy as np
from pylon_protocol import names

from pylon_sim.game.vessel import Module, Part, VesselSpec

WHEEL = 'wheel'

#: Module settings of a ``wheel`` module: name -> (default, meaning). KSP's RoveMax Model
#: S2 (the KSP wiki's wheel table: 12 m/s motor speed, 0.34 kN·m brake, 1 EC/s) where the
#: game has a figure; ours where it does not.
SETTINGS: dict[str, tuple[float, str]] = {
    'radius': (0.3, 'm, wheel radius'),
    'max_drive_torque': (150.0, 'N·m, motor torque at standstill (the stock torque)'),
    'max_speed': (12.0, 'm/s, rim speed where the torque curve reaches 0 (KSP: S2)'),
    'brake_torque': (340.0, 'N·m at brake 1 (KSP: S2, 0.34 kN·m)'),
    'max_steering_angle_deg': (0.0, 'deg, steering limit of a steerable wheel'),
    'suspension_travel': (0.1, 'm, suspension travel'),
    'suspension_target': (0.5, 'rest compression as a fraction of the travel'),
    'damper_ratio': (1.0, 'suspension damping relative to critical'),
    'friction': (1.0, 'tyre friction coefficient μ (KSP friction multiplier 1)'),
    'rolling_resistance': (0.05, 'rolling resistance coefficient C_rr (ours)'),
    'wheel_mass': (40.0, 'kg of the spinning wheel, I = ½ m r²'),
    'electric_charge_per_second': (1.0, 'EC/s at full drive torque (KSP: S2)'),
}
PEAK_SLIP = 0.1                 # slip ratio (and tan of slip angle) of full friction
RELAXATION_LENGTH = 0.3         # m, tyre relaxation length σ
TYRE_DAMPING_TIME = 0.005       # s, tyre damping τ relative to its stiffness
BUMP_STIFFNESS = 10.0           # bump stop stiffness beyond the travel, × k
MAX_LOAD = 12.0                 # suspension force limit, × the wheel's resting load
DRIVE_BAND = 1.0                # rad/s of spin error for full motor torque
SLIP_SPEED_FLOOR = 0.5          # m/s, below this the reported slip is relative to it
MIN_COS_TILT = 0.2              # the ground must face the suspension within ~78°
CAP_BRAKE_BAND = 2.0            # m/s of rim speed above a speed cap for full brake
UP = np.array([0.0, 0.0, 1.0])


_NEXT = np.array([1, 2, 0])         # cross: the components after each one, cyclically
_AFTER = np.array([2, 0, 1])


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return ``a × b`` over the last axis (broadcasting; np.cross is slow on small arrays).

    Each component is ``a_j b_k - a_k b_j`` as ``np.cross`` computes it (the same rounding);
    two 3-vectors go through Python floats, the cheapest for one vector.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape == b.shape == (3,):
        (ax, ay, az), (bx, by, bz) = a.tolist(), b.tolist()
        return np.array([ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx])
    return a[..., _NEXT] * b[..., _AFTER] - a[..., _AFTER] * b[..., _NEXT]


class Ground(Protocol):
    """The surface under points given in the body-fixed frame."""

    def ground(self, points_fixed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return each point's clearance (m, along the normal; < 0 below) and unit normal."""


@dataclass(frozen=True)
class SphereGround:
    """The bare sphere of a body: clearance = |p| − radius, normal = p / |p|."""

    radius: float

    def ground(self, points_fixed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the clearance above and the outward normal of the sphere."""
        points = np.asarray(points_fixed, dtype=float)
        distance = np.sqrt((points * points).sum(axis=1))
        return distance - self.radius, points / distance[:, None]


@dataclass(frozen=True)
class TangentPlanes:
    """A ground's tangent plane under each of N points: the ground for points moving a little.

    ``rover`` asks the real ground once per physics step and these planes in its sub-steps
    (a wheel moves a few cm in 20 ms); row i answers for the i-th point.
    """

    foot: np.ndarray           # (N,3) m, body-fixed: the ground below each point
    normal: np.ndarray         # (N,3) unit

    @classmethod
    def under(cls, ground: Ground, points: np.ndarray) -> TangentPlanes:
        """Return the planes of ``ground`` under ``points`` (body-fixed)."""
        clearance, normal = ground.ground(points)
        return cls(points - normal * clearance[:, None], normal)

    def ground(self, points_fixed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return each point's height above its plane and the plane's normal."""
        return ((points_fixed - self.foot) * self.normal).sum(axis=1), self.normal


@dataclass(frozen=True)
class Params:
    """The wheels of one vessel, one row per wheel module (vessel frame at its mass)."""

    names: tuple[str, ...]
    hub: np.ndarray            # (N,3) m, base_link, hub at rest compression
    radius: np.ndarray
    max_torque: np.ndarray     # N·m
    max_speed: np.ndarray      # m/s
    brake_torque: np.ndarray   # N·m
    steer_max: np.ndarray      # rad (0: fixed wheel)
    travel: np.ndarray         # m
    extension: np.ndarray      # m, hub at rest -> hub at full extension
    stiffness: np.ndarray      # N/m
    damping: np.ndarray        # N s/m
    friction: np.ndarray
    rolling: np.ndarray
    inertia: np.ndarray        # kg m²
    ec_rate: np.ndarray        # EC/s at full torque

    @property
    def count(self) -> int:
        """Return the number of wheels."""
        return len(self.names)

    @cached_property
    def probe_offsets(self) -> np.ndarray:
        """Return the hubs at full extension (N,3) m, base_link (``probe_points``)."""
        return self.hub - self.extension[:, None] * UP

    @cached_property
    def bump_stiffness(self) -> np.ndarray:
        """Return the bump stops' stiffness (N/m)."""
        return BUMP_STIFFNESS * self.stiffness

    @cached_property
    def max_load(self) -> np.ndarray:
        """Return the suspension force limit (N)."""
        return MAX_LOAD * self.stiffness * self.extension


def _value(module: Module, key: str) -> float:
    """Return a wheel setting by the settings rule (``Module.number``), at least 0."""
    return max(0.0, module.number(key, float(SETTINGS[key][0])))


def suspension(module: Module) -> tuple[float, float, float]:
    """Return a wheel module's radius, suspension travel and rest compression (m), as used.

    At rest the hub is at the part's position, its spring compressed by the rest
    compression; the tyre can start ``travel - rest`` below the ground before the bump stop.
    """
    travel = max(_value(module, 'suspension_travel'), 0.005)
    target = min(max(_value(module, 'suspension_target'), 0.05), 0.95)
    return max(_value(module, 'radius'), 0.01), travel, target * travel


def wheel_modules(spec: VesselSpec) -> list[tuple[str, Part, Module]]:
    """Return ``(actuator id, part, module)`` of every wheel module, in part order."""
    return [(names.actuator_name(WHEEL, part.persistent_id, part.flight_id, module.module_index),
             part, module) for part in spec.parts for module in part.modules_of(WHEEL)]


def sprung_masses(hub: np.ndarray, mass: float) -> np.ndarray:
    """Return the mass each wheel carries at rest: the least-norm split with no moment.

    Σ m_i = mass and Σ m_i (x_i, y_i) = 0 about the centre of mass (as PhysX's sprung
    masses), each at least 1 % of an equal share (a centre of mass outside the wheels).
    """
    hub = np.asarray(hub, dtype=float)
    system = np.vstack([np.ones(len(hub)), hub[:, 0], hub[:, 1]])
    split = np.linalg.lstsq(system, np.array([mass, 0.0, 0.0]), rcond=None)[0]
    return np.maximum(split, 0.01 * mass / len(hub))


def params(spec: VesselSpec, com: np.ndarray, mass: float, gravity: float) -> Params | None:
    """Return the wheels' parameters for the vessel's mass and centre of mass, or None."""
    found = wheel_modules(spec)
    if not found:
        return None
    col = {key: np.array([_value(m, key) for _, _, m in found]) for key in SETTINGS}
    col['max_speed'] = np.maximum(col['max_speed'], 0.01)
    col['radius'], col['suspension_travel'], rest = np.array(
        [suspension(m) for _, _, m in found], dtype=float).T
    hub = np.array([p.position for _, p, _ in found], dtype=float) - np.asarray(com)
    share = sprung_masses(hub, mass)
    stiffness = share * gravity / rest
    steer = np.array([math.radians(_value(m, 'max_steering_angle_deg'))
                      if m.flag('steerable', False) else 0.0 for _, _, m in found])
    return Params(
        names=tuple(name for name, _, _ in found),
        hub=hub,
        radius=col['radius'], max_torque=col['max_drive_torque'], max_speed=col['max_speed'],
        brake_torque=col['brake_torque'], steer_max=steer, travel=col['suspension_travel'],
        extension=rest, stiffness=stiffness,
        damping=col['damper_ratio'] * 2.0 * np.sqrt(stiffness * share),
        friction=col['friction'], rolling=col['rolling_resistance'],
        inertia=np.maximum(0.5 * col['wheel_mass'] * col['radius'] ** 2, 1e-3),
        ec_rate=col['electric_charge_per_second'])


@dataclass(frozen=True)
class Drive:
    """A modifier of a vessel's wheel motors and brakes (module docstring, Drive modifier)."""

    torque_gain: float = 1.0         # x every motor's torque limit
    speed_gain: float = 1.0          # x every motor's max_speed (the torque curve's end)
    speed_cap: float = math.inf      # m/s of rim speed; inf: none


NORMAL = Drive()
"""The stock wheels: no gain, no cap."""


@dataclass(frozen=True)
class Commands:
    """What the wheels are told for one step (arrays of the wheel count)."""

    drive: np.ndarray          # bool: a command with the motor enabled is in force
    target: np.ndarray         # rad/s
    steering: np.ndarray       # rad, within the steering range
    max_torque: np.ndarray     # N·m, commanded torque limit
    brake: np.ndarray          # 0..1
    modifier: Drive = NORMAL   # the vessel's drive modifier (a race's boost or penalty)

    @cached_property
    def heading(self) -> np.ndarray:
        """Return each wheel's heading (N,3) in base_link: its steering about the up axis."""
        return np.column_stack([np.cos(self.steering), np.sin(self.steering),
                                np.zeros_like(self.steering)])

    @classmethod
    def idle(cls, count: int) -> Commands:
        """Return the stock state: no drive, straight, brakes off."""
        zero = np.zeros(count)
        return cls(np.zeros(count, dtype=bool), zero, zero, zero, zero)

    @classmethod
    def of(cls, p: Params, settings: Mapping[str, Mapping], powered: bool,
           modifier: Drive = NORMAL) -> Commands:
        """Return the commands from ``TypedActuators.wheel_inputs`` (stock when absent).

        ``modifier``: the vessel's drive modifier (``SimVessel.drive``).
        """
        rows = [settings.get(name, {}) for name in p.names]

        def column(key: str) -> np.ndarray:
            return np.array([float(row.get(key, 0.0)) for row in rows])
        drive = np.array([bool(row.get('commanded')) and bool(row.get('enabled', True))
                          for row in rows]) & bool(powered)
        return cls(drive, column('target_angular_velocity'),
                   np.clip(column('steering_angle'), -p.steer_max, p.steer_max),
                   column('max_drive_torque'), np.clip(column('brake'), 0.0, 1.0), modifier)


@dataclass(frozen=True)
class State:
    """The wheels' state after a step, with what they report and what they exert."""

    names: tuple[str, ...]             # wheel actuator ids (``Params.names``)
    angle: np.ndarray                  # rad, 0..2π
    omega: np.ndarray                  # rad/s, spin (positive rolls forward)
    deflection: np.ndarray             # (N,2) m, tyre deflection (x, y)
    grounded: np.ndarray = None        # bool
    steering: np.ndarray = None        # rad
    drive_torque: np.ndarray = None    # N·m
    brake_torque: np.ndarray = None    # N·m
    slip: np.ndarray = None            # combined slip |u| / max(|v|, |ω r|, floor)
    load: np.ndarray = None            # N, normal load
    force: np.ndarray = None           # (N,3) N on the vessel, body-fixed
    arm: np.ndarray = None             # (N,3) m, contact point - centre of mass, fixed

    @classmethod
    def initial(cls, names: tuple[str, ...]) -> State:
        """Return wheels at rest, not yet on the ground."""
        count = len(names)
        zero = np.zeros(count)
        return cls(tuple(names), zero, zero, np.zeros((count, 2)), np.zeros(count, dtype=bool),
                   zero, zero, zero, zero, zero, np.zeros((count, 3)), np.zeros((count, 3)))

    def fields(self, name: str) -> dict:
        """Return the ``pylon_actuator_state`` fields of one wheel (KeyError if unknown)."""
        if name not in self.names:
            raise KeyError(name)
        index = self.names.index(name)
        return {'grounded': bool(self.grounded[index]),
                'angularPosition': float(self.angle[index]),
                'angularVelocity': float(self.omega[index]),
                'steeringAngle': float(self.steering[index]),
                'driveTorque': float(self.drive_torque[index]),
                'brakeTorque': float(self.brake_torque[index]),
                'slip': float(self.slip[index])}


@dataclass(frozen=True)
class Kinematics:
    """The vessel relative to the ground, body-fixed frame, at one instant."""

    position: np.ndarray       # m, centre of mass
    velocity: np.ndarray       # m/s, relative to the ground
    rotation: np.ndarray       # 3x3, base_link -> body-fixed
    rate: np.ndarray           # rad/s, relative to the ground, body-fixed axes


@dataclass(frozen=True)
class Inputs:
    """Everything one wheel step needs."""

    params: Params
    commands: Commands
    kinematics: Kinematics
    ground: Ground


def probe_points(p: Params, k: Kinematics) -> np.ndarray:
    """Return the hubs at full extension (body-fixed): the points asked of the ground."""
    return k.position + p.probe_offsets @ k.rotation.T


def _suspension(p: Params, k: Kinematics, ground: Ground):
    """Return compression, its rate, cos φ, normals, contact arms and contact velocities."""
    points = probe_points(p, k)
    clearance, normal = ground.ground(points)
    up = k.rotation[:, 2]
    cos = normal @ up
    tilted = cos > MIN_COS_TILT
    safe_cos = np.where(tilted, cos, 1.0)
    compression = np.where(tilted, (p.radius - clearance) / safe_cos, -1.0)
    hub_velocity = k.velocity + cross(k.rate, points - k.position)
    rate = -(hub_velocity * normal).sum(axis=1) / safe_cos
    arm = points - k.position - normal * clearance[:, None]
    contact_velocity = k.velocity + cross(k.rate, arm)
    return compression, rate, safe_cos, normal, arm, contact_velocity


def _load(p: Params, compression: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """Return the suspension force along the vessel's up axis (never pulling, capped)."""
    inside = np.minimum(compression, p.travel)
    bump = np.maximum(compression - p.travel, 0.0)
    force = p.stiffness * inside + p.bump_stiffness * bump + p.damping * rate
    return np.where(compression > 0.0, _clip(force, 0.0, p.max_load), 0.0)


def _axes(c: Commands, rotation: np.ndarray, normal: np.ndarray):
    """Return each wheel's heading and left axes in the ground plane (body-fixed)."""
    heading = c.heading @ rotation.T
    along = heading - (heading * normal).sum(axis=1)[:, None] * normal
    along /= np.maximum(_norm(along), 1e-9)[:, None]
    return along, cross(normal, along)


def _norm(rows: np.ndarray) -> np.ndarray:
    """Return the length of each row (``np.linalg.norm(rows, axis=1)``'s sum, without its cost)."""
    return np.sqrt((rows * rows).sum(axis=1))


def _clip(values: np.ndarray, low, high) -> np.ndarray:
    """Return ``np.clip(values, low, high)`` (the same numbers, without its dispatch cost)."""
    return np.minimum(np.maximum(values, low), high)


def torque_curve(p: Params, omega: np.ndarray, speed_gain: float = 1.0) -> np.ndarray:
    """Return the share of its torque a motor gives with the spin: ``1 − |ω| r / top``.

    ``top`` is ``max_speed`` times ``speed_gain`` (a drive modifier's: a race's boost).
    """
    return _clip(1.0 - np.abs(omega) * p.radius / (p.max_speed * speed_gain), 0.0, 1.0)


def _motor(p: Params, c: Commands, omega: np.ndarray, dt: float) -> np.ndarray:
    """Return the drive torque: toward the target spin within the torque curve.

    The drive modifier scales the torque limit and the curve's end, and clips the target
    to its speed cap.
    """
    modifier = c.modifier
    limit = np.minimum(np.where(c.max_torque > 0.0, c.max_torque, p.max_torque), p.max_torque)
    target = c.target
    if modifier is not NORMAL:
        limit = limit * modifier.torque_gain
        reach = modifier.speed_cap / p.radius
        target = _clip(target, -reach, reach)
    band = np.maximum(DRIVE_BAND, limit * dt / p.inertia)     # stable for a light wheel
    demand = _clip((target - omega) / band, -1.0, 1.0)
    curve = torque_curve(p, omega, 1.0 if modifier is NORMAL else modifier.speed_gain)
    with_spin = demand * omega > 0.0
    torque = limit * demand * np.where(with_spin, curve, 1.0)
    return np.where(c.drive, torque, 0.0)


def _brake(p: Params, c: Commands, omega: np.ndarray) -> np.ndarray:
    """Return each wheel's brake (0..1): the commanded, or more above a speed cap."""
    cap = c.modifier.speed_cap
    if not math.isfinite(cap):
        return c.brake
    return np.maximum(c.brake, _clip((np.abs(omega) * p.radius - cap) / CAP_BRAKE_BAND,
                                     0.0, 1.0))


def _spin(p: Params, omega: np.ndarray, drive: np.ndarray, fx: np.ndarray,
          resist: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Return the new spin and the resisting torque used (Coulomb: stops, then holds)."""
    free = omega + dt * (drive - p.radius * fx) / p.inertia
    reach = resist * dt / p.inertia
    held = np.abs(free) <= reach
    new = np.where(held, 0.0, free - np.sign(free) * reach)
    used = np.where(held, np.abs(free) * p.inertia / dt, resist)
    return new, used


def step(state: State, inputs: Inputs, dt: float) -> State:
    """Advance the wheels by ``dt`` (a sub-step, a few ms) on the given vessel motion.

    Returns the new state; its ``force`` (body-fixed, N, at ``arm`` from the centre of
    mass) is what each wheel exerts on the vessel during the step.
    """
    p, c, k = inputs.params, inputs.commands, inputs.kinematics
    compression, rate, cos, normal, arm, velocity = _suspension(p, k, inputs.ground)
    suspension = _load(p, compression, rate)
    grounded = suspension > 0.0
    load = suspension * cos
    along, left = _axes(c, k.rotation, normal)
    vx = (velocity * along).sum(axis=1)
    vy = (velocity * left).sum(axis=1)
    slip = np.column_stack([vx - state.omega * p.radius, vy])
    peak = PEAK_SLIP * RELAXATION_LENGTH
    deflection = (state.deflection + dt * slip) / (1.0 + dt * np.abs(vx) / RELAXATION_LENGTH
                                                   )[:, None]
    size = _norm(deflection)
    deflection *= np.minimum(1.0, peak / np.maximum(size, 1e-12))[:, None]
    deflection[~grounded] = 0.0
    limit = p.friction * load
    tyre = -(limit / peak)[:, None] * (deflection + TYRE_DAMPING_TIME * slip)
    magnitude = _norm(tyre)
    tyre *= np.minimum(1.0, limit / np.maximum(magnitude, 1e-12))[:, None]
    drive = _motor(p, c, state.omega, dt)
    brake = _brake(p, c, state.omega) * p.brake_torque
    rolling = p.rolling * load * p.radius
    omega, used = _spin(p, state.omega, drive, tyre[:, 0], brake + rolling, dt)
    total = brake + rolling
    force = (suspension[:, None] * k.rotation[:, 2] + tyre[:, 0:1] * along
             + tyre[:, 1:2] * left)
    speed = np.maximum(np.maximum(np.hypot(vx, vy), np.abs(state.omega) * p.radius),
                       SLIP_SPEED_FLOOR)
    return replace(
        state, angle=np.mod(state.angle + dt * omega, 2.0 * math.pi), omega=omega,
        deflection=deflection, grounded=grounded, steering=c.steering, drive_torque=drive,
        brake_torque=np.where(total > 0.0, used * brake / np.where(total > 0.0, total, 1.0),
                              0.0),
        slip=np.where(grounded, _norm(slip) / speed, 0.0), load=load,
        force=force, arm=arm)
