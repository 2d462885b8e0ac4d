"""Rover wheels on the ground: suspension, tyre, motor, brake and steering.

Pure functions (parameters and state in numpy arrays, one row per wheel module; the
arithmetic per wheel in Python floats, cheaper than numpy for a few wheels); no I/O, no
clock. The rigid body that carries the wheels is ``rover``'s business: ``step`` takes the
vessel's pose and velocity relative to the ground (body-fixed frame) and returns the
wheels' new state with the force each wheel puts on the vessel.

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

    @cached_property
    def rows(self) -> tuple[tuple[float, ...], ...]:
        """Return each wheel's settings as Python floats (``step``'s arithmetic).

        In order: radius, travel, stiffness, bump stiffness, damping, max load, friction,
        rolling resistance, inertia, max torque, max speed, brake torque.
        """
        columns = (self.radius, self.travel, self.stiffness, self.bump_stiffness,
                   self.damping, self.max_load, self.friction, self.rolling, self.inertia,
                   self.max_torque, self.max_speed, self.brake_torque)
        return tuple(zip(*(column.tolist() for column in columns)))


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
    def rows(self) -> tuple[tuple, ...]:
        """Return per wheel: drive, target, steering, max torque, brake (Python values)."""
        return tuple(zip(self.drive.tolist(), self.target.tolist(), self.steering.tolist(),
                         self.max_torque.tolist(), self.brake.tolist()))

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


def torque_curve(p: Params, omega: np.ndarray, speed_gain: float = 1.0) -> np.ndarray:
    """Return the share of its torque each motor gives with its spin (``_curve``)."""
    return np.array([_curve(w, r, top, speed_gain) for w, r, top in
                     zip(np.asarray(omega, dtype=float).reshape(-1).tolist(), p.radius.tolist(),
                         p.max_speed.tolist())])


def _curve(omega: float, radius: float, max_speed: float, speed_gain: float) -> float:
    """Return the share of its torque a motor gives with the spin: ``1 − |ω| r / top``.

    ``top`` is ``max_speed`` times ``speed_gain`` (a drive modifier's: a race's boost).
    """
    return _clip(1.0 - abs(omega) * radius / (max_speed * speed_gain), 0.0, 1.0)


def _clip(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


def _dot(a, b) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a, b) -> tuple[float, float, float]:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@dataclass(frozen=True)
class _Motion:
    """One sub-step's vessel motion as Python floats (the wheels' arithmetic is per wheel)."""

    position: tuple
    velocity: tuple
    rate: tuple
    up: tuple                  # the vessel's up axis, body-fixed
    rotation: tuple            # rows of base_link -> body-fixed

    @classmethod
    def of(cls, k: Kinematics) -> _Motion:
        rotation = k.rotation.tolist()
        return cls(tuple(k.position.tolist()), tuple(k.velocity.tolist()),
                   tuple(k.rate.tolist()), (rotation[0][2], rotation[1][2], rotation[2][2]),
                   tuple(tuple(row) for row in rotation))


def _contact(row: tuple, m: _Motion, point, clearance: float, normal) -> tuple:
    """Return one wheel's suspension force, cos φ, contact arm and contact velocity.

    The suspension: the spring-damper along the vessel's up axis from the compression and
    its rate (module docstring), never pulling, capped; 0 while not compressed.
    """
    radius, travel, stiffness, bump_stiffness, damping, max_load = row[:6]
    cos = _dot(normal, m.up)
    tilted = cos > MIN_COS_TILT
    safe_cos = cos if tilted else 1.0
    compression = (radius - clearance) / safe_cos if tilted else -1.0
    rel = (point[0] - m.position[0], point[1] - m.position[1], point[2] - m.position[2])
    spin = _cross(m.rate, rel)
    hub_velocity = (m.velocity[0] + spin[0], m.velocity[1] + spin[1], m.velocity[2] + spin[2])
    rate = -_dot(hub_velocity, normal) / safe_cos
    arm = (rel[0] - normal[0] * clearance, rel[1] - normal[1] * clearance,
           rel[2] - normal[2] * clearance)
    spin = _cross(m.rate, arm)
    velocity = (m.velocity[0] + spin[0], m.velocity[1] + spin[1], m.velocity[2] + spin[2])
    suspension = 0.0
    if compression > 0.0:
        force = (stiffness * min(compression, travel)
                 + bump_stiffness * max(compression - travel, 0.0) + damping * rate)
        suspension = _clip(force, 0.0, max_load)
    return suspension, safe_cos, arm, velocity


def _axes(steering: float, m: _Motion, normal) -> tuple[tuple, tuple]:
    """Return a wheel's heading and left axes in the ground plane (body-fixed)."""
    hx, hy = math.cos(steering), math.sin(steering)
    heading = [row[0] * hx + row[1] * hy for row in m.rotation]   # R (cos, sin, 0)
    along_n = _dot(heading, normal)
    along = [heading[j] - along_n * normal[j] for j in range(3)]
    size = max(math.sqrt(along[0] * along[0] + along[1] * along[1] + along[2] * along[2]),
               1e-9)
    along = (along[0] / size, along[1] / size, along[2] / size)
    return along, _cross(normal, along)


def _motor(row: tuple, command: tuple, modifier: Drive, omega: float, dt: float) -> float:
    """Return the drive torque: toward the target spin within the torque curve.

    The drive modifier scales the torque limit and the curve's end, and clips the target
    to its speed cap.
    """
    radius, inertia, module_torque, max_speed = row[0], row[8], row[9], row[10]
    drive, target, _, commanded_torque, _ = command
    if not drive:
        return 0.0
    limit = min(commanded_torque if commanded_torque > 0.0 else module_torque, module_torque)
    speed_gain = 1.0
    if modifier is not NORMAL:
        limit = limit * modifier.torque_gain
        reach = modifier.speed_cap / radius
        target = _clip(target, -reach, reach)
        speed_gain = modifier.speed_gain
    band = max(DRIVE_BAND, limit * dt / inertia)     # stable for a light wheel
    demand = _clip((target - omega) / band, -1.0, 1.0)
    if demand * omega > 0.0:             # with the spin: within the torque curve
        return limit * demand * _curve(omega, radius, max_speed, speed_gain)
    return limit * demand


def _brake(radius: float, brake: float, modifier: Drive, omega: float) -> float:
    """Return a wheel's brake (0..1): the commanded, or more above a speed cap."""
    cap = modifier.speed_cap
    if not math.isfinite(cap):
        return brake
    return max(brake, _clip((abs(omega) * radius - cap) / CAP_BRAKE_BAND, 0.0, 1.0))


def _spin(inertia: float, radius: float, omega: float, drive: float, fx: float,
          resist: float, dt: float) -> tuple[float, float]:
    """Return the new spin and the resisting torque used (Coulomb: stops, then holds)."""
    free = omega + dt * (drive - radius * fx) / inertia
    reach = resist * dt / inertia
    if abs(free) <= reach:
        return 0.0, abs(free) * inertia / dt
    return free - math.copysign(reach, free), resist


def _tyre(deflection, slip, vx: float, grounded: bool, limit: float, dt: float):
    """Return the tyre's new deflection and its force (x, y) within the friction circle."""
    if not grounded:
        deflection = (0.0, 0.0)
    else:
        relax = 1.0 + dt * abs(vx) / RELAXATION_LENGTH
        dx, dy = (deflection[0] + dt * slip[0]) / relax, (deflection[1] + dt * slip[1]) / relax
        scale = min(1.0, PEAK / max(math.sqrt(dx * dx + dy * dy), 1e-12))
        deflection = (dx * scale, dy * scale)
    gain = -(limit / PEAK)
    fx = gain * (deflection[0] + TYRE_DAMPING_TIME * slip[0])
    fy = gain * (deflection[1] + TYRE_DAMPING_TIME * slip[1])
    scale = min(1.0, limit / max(math.sqrt(fx * fx + fy * fy), 1e-12))
    return deflection, (fx * scale, fy * scale)


PEAK = PEAK_SLIP * RELAXATION_LENGTH
"""m, the tyre deflection of full friction."""


def step(state: State, inputs: Inputs, dt: float) -> State:
    """Advance the wheels by ``dt`` (a sub-step, a few ms) on the given vessel motion.

    Returns the new state; its ``force`` (body-fixed, N, at ``arm`` from the centre of
    mass) is what each wheel exerts on the vessel during the step. The ground is asked
    for every wheel at once; the rest is per wheel in Python floats (a vessel has a few
    wheels: numpy's cost per call would outweigh its arithmetic).
    """
    p, c = inputs.params, inputs.commands
    points = probe_points(p, inputs.kinematics)
    clearance, normal = inputs.ground.ground(points)
    m = _Motion.of(inputs.kinematics)
    modifier = c.modifier
    rows = zip(p.rows, c.rows, points.tolist(), clearance.tolist(), normal.tolist(),
               state.omega.tolist(), state.deflection.tolist(), state.angle.tolist())
    out = []
    for row, command, point, height, n, omega, deflection, angle in rows:
        radius, friction, rolling_c, inertia, brake_max = row[0], row[6], row[7], row[8], row[11]
        suspension, cos, arm, velocity = _contact(row, m, point, height, n)
        grounded = suspension > 0.0
        load = suspension * cos
        along, left = _axes(command[2], m, n)
        vx, vy = _dot(velocity, along), _dot(velocity, left)
        slip = (vx - omega * radius, vy)
        deflection, (fx, fy) = _tyre(deflection, slip, vx, grounded, friction * load, dt)
        drive = _motor(row, command, modifier, omega, dt)
        brake = _brake(radius, command[4], modifier, omega) * brake_max
        rolling = rolling_c * load * radius
        new_omega, used = _spin(inertia, radius, omega, drive, fx, brake + rolling, dt)
        total = brake + rolling
        force = tuple(suspension * m.up[j] + fx * along[j] + fy * left[j] for j in range(3))
        speed = max(math.hypot(vx, vy), abs(omega) * radius, SLIP_SPEED_FLOOR)
        out.append((
            (angle + dt * new_omega) % (2.0 * math.pi), new_omega, deflection, grounded,
            drive, used * brake / total if total > 0.0 else 0.0,
            math.sqrt(slip[0] * slip[0] + slip[1] * slip[1]) / speed if grounded else 0.0,
            load, force, arm))
    angle, omega, deflection, grounded, drive, braking, slip, load, force, arm = zip(*out)
    return replace(
        state, angle=np.array(angle), omega=np.array(omega),
        deflection=np.array(deflection), grounded=np.array(grounded), steering=c.steering,
        drive_torque=np.array(drive), brake_torque=np.array(braking), slip=np.array(slip),
        load=np.array(load), force=np.array(force), arm=np.array(arm))
