"""The mod's allocation of a (safety-filtered) body wrench to RCS, engines and reaction wheels.

Pure geometry in, allocation out; everything is in ``base_link`` (+X forward, +Y left,
+Z up, origin at the current centre of mass), forces in N, torques in N·m (ROS
right-handed, axial).

Sign conventions
----------------
- An RCS module's nozzles each have their own position and exhaust direction in part
  axes (``rcs_geometry.rcs_layout``: the module settings ``nozzles``, else
  ``thrust_directions`` at ``nozzle_arm``, else an RV-105 cross; ``use_z_axis``). The
  force on the vessel is the opposite of the exhaust, ``-R_part @ direction``
  (normalised), acting at ``R_part @ position`` from the part origin.
- An engine's exhaust leaves along the part's -X axis (its stack axis; the module setting
  ``thrust_direction`` overrides it, part axes, exhaust direction), so the force on the
  vessel is along the part's +X: the sat's engine at the -X end pushes base_link +X.
- ``Nozzle.direction`` and ``Engine.direction`` are always the force on the vessel
  (``Engine.direction`` with the gimbal neutral).

Gimbals
-------
An engine with ``gimbal_range_deg`` > 0 (``Engine.gimbal_range``, rad) tilts its thrust
about its mount's own two axes (``Engine.gimbal_axes``: the part's +Y and +Z, made
perpendicular to the thrust; the part's pitch and yaw axes), each by at most the range,
as KSP's ModuleGimbal turns its gimbal transform in the part's frame. ``gimbal_direction``
turns the inputs (pitch, yaw, roll, -1..1, already scaled by the limiter) into a tilt:

- the tilt the inputs ask for, as a rotation vector in base_link, is
  ``range × (pitch e_Y + yaw e_Z - roll r_perp / |r_perp|)``, where ``r_perp`` is the
  engine's offset from the centre of mass perpendicular to the roll axis (base_link +X),
  ``r - (r · e_X) e_X``; ``r_perp`` = 0 (an engine on the axis) gives no roll tilt. For an
  engine thrusting along +X the roll term moves the thrust by ``sin(roll × range)`` of
  itself along ``e_X × r_perp / |r_perp|``, tangential to the engine's offset, so a
  cluster's roll torque is ``sum_i |r_perp,i| T_i sin(roll × range) e_X``;
- that rotation vector ``w`` is projected on the mount's axes, ``a_k = g_k · w``, each
  clamped to ``±range``, and the thrust direction is turned by the rotation vector
  ``a_1 g_1 + a_2 g_2``: a pitch or yaw input tilts every engine the same way in vessel
  terms (as far as its mount's axes allow: a canted mount tilts about its own axes), and
  the roll term turns the thrust exactly towards the tangent.

``engine_wrench`` is the force and moment of one engine at a thrust and gimbal input; the
vehicle manager applies it, and the allocation (which never gimbals) uses the neutral
direction of the same ``Engine``.

Channels
--------
Twelve one-sided channels in [0, 1], in this order: +pitch, -pitch, +yaw, -yaw, +roll,
-roll, +x, -x, +y, -y, +z, -z. Pitch is rotation about base_link +Y, yaw about +Z, roll
about +X (a positive channel asks for a positive torque about that axis); x, y, z are
forces along +X, +Y, +Z.

KSP's RCS rule: a nozzle with force direction ``d`` at arm ``r`` from the centre of mass
answers a rotation channel with axis ``s e`` (``s = ±1``) with ``max(0, d · (s e × r/|r|))``
and a translation channel with ``max(0, d · s e)`` of its maximum thrust, only for the axes
its module enables (``enable_pitch/yaw/roll/x/y/z``). The response to a channel vector
``c`` is the superposition ``clip(sum_k c_k response_k, 0, max_thrust)``.

Solve
-----
Column ``k`` of the RCS part of the allocation matrix ``A`` is the wrench the nozzles
produce when channel ``k`` alone is at 1. Each usable engine adds one column (its force
and moment, throttle in [0, 1], never gimballed), the reaction wheels three pure-torque
columns bounded by ``±`` the sum of their per-axis torques. The solve minimises
``|| W (A x - b) ||²`` over the bounds, with
``W = diag(1/force_scale × 3, 1/torque_scale × 3)``: force and torque errors are weighed
relative to the ControlSafety magnitude limits (``maxForceN``, ``maxTorqueNm``), so an
error of one force limit costs as much as an error of one torque limit.

Limits of the linear channel model
----------------------------------
The matrix assumes the per-channel responses add. They do until a nozzle asked by several
channels at once (for example +x and +pitch both fire the +X nozzle above the centre of
mass) would pass its maximum thrust: the commanded thrust is then clipped and the nozzles
produce less than ``A x``. The plain box-bounded problem picks such channel vectors almost
always for the default sat, so the solve adds the constraint ``sum_k c_k response_ik <=
max_i`` for every nozzle fired by more than one channel, as stiff least-squares rows with
a bounded slack (``Allocator``; the solver takes box bounds only). The result is the
least-squares optimum over the channel vectors that over-command no nozzle, to about 1e-4
relative in the objective; a request the nozzles can produce is met to ~1e-9. A tiny
regularisation (1e-8, unknowns scaled to their capacity) makes the system overdetermined,
which the active-set solver needs, and breaks ties toward less actuation. The solver is
``bounded_lstsq``, an active-set method on the precomputed system (about twice as fast as
``scipy.optimize.lsq_linear``'s bvls here, and at least as close to the optimum); when it
does not converge, which the benchmark has not seen, ``lsq_linear`` solves instead.
``Allocation.force`` and ``Allocation.torque`` are always the wrench of the clipped
nozzle thrusts (plus engines and wheels), never ``A x``. KSP's own nonlinearities (its
combined, not per-channel, input vector; thrust curves with atmospheric pressure; the
minimum-thrust threshold; precision mode) are not modelled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
import math

import numpy as np
from pylon_protocol import names, rotations

from pylon_sim.game.rcs_geometry import layout_arrays
from pylon_sim.game.vessel import flag_setting, number_setting, VesselSpec
from pylon_sim.mod.box_lstsq import bounded_lstsq

CHANNELS = ('+pitch', '-pitch', '+yaw', '-yaw', '+roll', '-roll',
            '+x', '-x', '+y', '-y', '+z', '-z')
ENABLE_KEYS = ('enable_pitch', 'enable_yaw', 'enable_roll', 'enable_x', 'enable_y', 'enable_z')
# axis (base_link) of each pair of channels: pitch Y, yaw Z, roll X, x X, y Y, z Z
_AXES = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0],
                  [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
CHANNEL_AXES = np.repeat(_AXES, 2, axis=0) * np.tile([1.0, -1.0], 6)[:, None]  # 12 x 3
PENALTY = 1.0e3         # weight of the nozzle over-command rows (see Allocator)
REGULARIZATION = 1.0e-8  # tie-break towards the smallest actuation (see Allocator)
TOLERANCE = 1.0e-14      # lsq_linear's tol: its default 1e-10 stops bvls early here
METHODS = ('active-set', 'bvls', 'trf')
_TINY = 1e-12
ROLL_AXIS, PITCH_AXIS, YAW_AXIS = np.eye(3)     # base_link +X, +Y, +Z
ROLL_FULL_ARM = 0.1     # m, an engine this far off the roll axis answers roll with its full range


@dataclass(frozen=True)
class Nozzle:
    """One RCS nozzle of an active module."""

    module: str             # actuator id of its module, e.g. 'rcs_1100005_0'
    position: np.ndarray    # m, base_link (relative to the current centre of mass)
    direction: np.ndarray   # unit, base_link: the force the nozzle applies to the vessel
    max_thrust: float       # N now (power x limit; 0 when disabled or without propellant)
    enables: tuple[bool, bool, bool, bool, bool, bool] = (True,) * 6  # pitch yaw roll x y z


@dataclass(frozen=True)
class Engine:
    """An engine: where it sits, its thrust axis and its gimbal (the allocation never tilts it)."""

    id: str
    position: np.ndarray    # m, base_link (relative to the current centre of mass)
    direction: np.ndarray   # unit, base_link: the force on the vessel, gimbal neutral
    max_thrust: float       # N now; 0 when not operational
    gimbal_range: float = 0.0   # rad per gimbal axis; 0: no gimbal
    gimbal_axes: np.ndarray = field(default_factory=lambda: np.eye(3)[1:])  # 2 x 3, base_link


@dataclass(frozen=True)
class Wheel:
    """A reaction wheel: torque only, the same capacity about each axis."""

    id: str
    max_torque: float       # N·m per axis


@dataclass(frozen=True)
class Allocation:
    """The actuator commands for one wrench and the wrench they are modelled to produce."""

    channels: np.ndarray         # 12 values in [0, 1], order CHANNELS
    nozzle_thrust: np.ndarray    # N per nozzle, commanded
    engine_throttle: np.ndarray  # 0..1 per engine
    wheel_torque: np.ndarray     # N·m, base_link
    force: np.ndarray            # N, base_link: modelled nozzle + engine forces
    torque: np.ndarray           # N·m: nozzle + engine moments + wheel torque


# -- geometry ---------------------------------------------------------------------------------
def _unit(v: np.ndarray) -> np.ndarray | None:
    n = float(np.linalg.norm(v))
    return v / n if n > _TINY else None


def geometry(spec: VesselSpec, com: Sequence[float] | np.ndarray,
             settings: Mapping[str, Mapping[str, object]] | None = None,
             ) -> tuple[list[Nozzle], list[Engine], list[Wheel]]:
    """
    Return the vessel's RCS nozzles, engines and reaction wheels in base_link.

    ``spec`` gives part poses in the vessel frame (root part frame), ``com`` is the current
    centre of mass in the same frame. Module settings are read from the spec and then
    overridden per actuator id by ``settings`` (e.g. ``{'rcs_1100005_0': {'enabled':
    False}}``). Known keys: all modules ``enabled`` (default true); RCS ``thruster_power``
    (N per nozzle), ``thrust_limit`` (N per nozzle, the limit in force: the typed side's,
    the stock limiter applied), else ``thrust_limit_fraction`` (0..1, the stock limiter),
    ``has_propellant`` (default true), ``use_z_axis``, ``enable_pitch/yaw/roll/x/y/z``,
    ``nozzles``, ``thrust_directions``, ``nozzle_arm`` (``rcs_layout``); engines
    ``max_thrust``, ``thrust_limit`` (N), ``operational`` (default true),
    ``thrust_direction``, ``gimbal_range_deg``; reaction wheels ``torque`` (N·m per
    axis). A disabled RCS module keeps its nozzles with ``max_thrust`` 0; disabled engines
    and wheels do likewise.
    """
    settings = settings or {}
    com = np.asarray(com, dtype=float)
    nozzles: list[Nozzle] = []
    engines: list[Engine] = []
    wheels: list[Wheel] = []
    for part in spec.parts:
        rot = rotations.to_matrix(part.rotation)
        position = np.asarray(part.position, dtype=float) - com
        for module in part.modules:
            if module.kind not in ('rcs', 'engine', 'reaction_wheel'):
                continue
            ident = names.actuator_name(module.kind, part.persistent_id, part.flight_id,
                                        module.module_index)
            conf = {**module.settings, **settings.get(ident, {})}
            enabled = flag_setting(conf, 'enabled', True)
            if module.kind == 'rcs':
                nozzles.extend(_rcs_nozzles(ident, conf, enabled, rot, position))
            elif module.kind == 'engine':
                engines.append(_engine(ident, conf, enabled, rot, position))
            else:
                torque = max(0.0, number_setting(conf, 'torque', 0.0))
                wheels.append(Wheel(ident, torque if enabled else 0.0))
    return nozzles, engines, wheels


def _engine(ident: str, conf: Mapping[str, object], enabled: bool, rot: np.ndarray,
            position: np.ndarray) -> Engine:
    limit = max(0.0, number_setting(conf, 'max_thrust', 0.0))
    limit = min(limit, max(0.0, number_setting(conf, 'thrust_limit', limit)))
    on = enabled and flag_setting(conf, 'operational', True)
    exhaust = conf.get('thrust_direction', (-1.0, 0.0, 0.0))
    direction = _unit(-(rot @ np.asarray(exhaust, dtype=float)))
    if direction is None:
        raise ValueError(f'{ident}: thrust_direction is zero')
    # the mount's pitch axis: part +Y (+Z if the thrust runs along Y) square to the thrust
    pitch = _unit(rot[:, 1] - (rot[:, 1] @ direction) * direction)
    if pitch is None:
        pitch = _unit(rot[:, 2] - (rot[:, 2] @ direction) * direction)
    span = math.radians(max(0.0, number_setting(conf, 'gimbal_range_deg', 0.0)))
    return Engine(ident, position.copy(), direction, limit if on else 0.0, span,
                  np.array([pitch, np.cross(direction, pitch)]))


def _rcs_nozzles(ident: str, conf: Mapping[str, object], enabled: bool, rot: np.ndarray,
                 position: np.ndarray) -> list[Nozzle]:
    power = max(0.0, number_setting(conf, 'thruster_power', 0.0))
    # the stock limiter, unless the typed side gave the limit in force (limiter applied)
    stock = power * min(1.0, max(0.0, number_setting(conf, 'thrust_limit_fraction', 1.0)))
    limit = min(power, max(0.0, number_setting(conf, 'thrust_limit', stock)))
    if not enabled or not flag_setting(conf, 'has_propellant', True):
        limit = 0.0
    enables = tuple(flag_setting(conf, key, True) for key in ENABLE_KEYS)
    try:
        offsets, exhausts = layout_arrays(conf)
    except ValueError as error:
        raise ValueError(f'{ident}: {error}') from None
    offsets = offsets @ rot.T
    forces = -(exhausts @ rot.T)
    forces /= np.linalg.norm(forces, axis=1)[:, None]
    return [Nozzle(ident, position + offset, force, limit, enables)
            for offset, force in zip(offsets, forces)]


def gimbal_direction(engine: Engine, inputs: Sequence[float]) -> np.ndarray:
    """Return an engine's force direction (base_link) with its gimbal at (pitch, yaw, roll)."""
    pitch, yaw, roll = (float(v) for v in inputs)
    span = engine.gimbal_range
    if span <= 0.0 or not (pitch or yaw or roll):
        return engine.direction
    offset = engine.position - (engine.position @ ROLL_AXIS) * ROLL_AXIS          # r_perp
    radial = _unit(offset)
    wanted = span * (pitch * PITCH_AXIS + yaw * YAW_AXIS)
    if radial is not None:
        # nearer the axis than ROLL_FULL_ARM the roll tilt fades linearly to none, so an
        # engine a few millimetres off it neither rolls nor yaws the vessel on a roll input
        fade = min(1.0, float(np.linalg.norm(offset)) / ROLL_FULL_ARM)
        wanted = wanted - span * roll * fade * radial
    tilt = np.clip(engine.gimbal_axes @ wanted, -span, span)
    turn = rotations.from_rotvec(tilt @ engine.gimbal_axes)
    return rotations.to_matrix(turn) @ engine.direction


def engine_wrench(engine: Engine, thrust: float,
                  inputs: Sequence[float] = (0.0, 0.0, 0.0)) -> tuple[np.ndarray, np.ndarray]:
    """Return the force and moment about the centre of mass of one engine (N, gimbal inputs)."""
    force = float(thrust) * gimbal_direction(engine, inputs)
    return force, np.cross(engine.position, force)


# -- the linear model -------------------------------------------------------------------------
def nozzle_response(nozzles: Sequence[Nozzle]) -> np.ndarray:
    """Return the N × 12 matrix of nozzle thrust (N) per channel at 1, KSP's RCS rule."""
    if not nozzles:
        return np.zeros((0, 12))
    pos = np.array([n.position for n in nozzles], dtype=float)
    d = np.array([n.direction for n in nozzles], dtype=float)
    enables = np.array([n.enables for n in nozzles], dtype=bool)
    thrust = np.array([n.max_thrust for n in nozzles], dtype=float)
    norms = np.linalg.norm(pos, axis=1)
    arm = np.divide(pos, norms[:, None], out=np.zeros_like(pos), where=norms[:, None] > _TINY)
    # rotation channels: d . (s e x r_hat) = s e . (r_hat x d)
    rot = np.cross(arm, d) @ CHANNEL_AXES[:6].T
    lin = d @ CHANNEL_AXES[6:].T
    frac = np.maximum(np.concatenate([rot, lin], axis=1), 0.0)
    frac *= np.repeat(enables, 2, axis=1)
    return frac * thrust[:, None]


def nozzle_wrenches(nozzles: Sequence[Nozzle]) -> np.ndarray:
    """Return the 6 × N wrench (force; torque) per newton of each nozzle."""
    if not nozzles:
        return np.zeros((6, 0))
    pos = np.array([n.position for n in nozzles], dtype=float)
    d = np.array([n.direction for n in nozzles], dtype=float)
    return np.concatenate([d, np.cross(pos, d)], axis=1).T


def engine_wrenches(engines: Sequence[Engine]) -> np.ndarray:
    """Return the 6 × E wrench of each engine at full thrust."""
    if not engines:
        return np.zeros((6, 0))
    pos = np.array([e.position for e in engines], dtype=float)
    d = np.array([e.direction for e in engines], dtype=float)
    thrust = np.array([e.max_thrust for e in engines], dtype=float)[:, None]
    return (np.concatenate([d, np.cross(pos, d)], axis=1) * thrust).T


class Allocator:
    """
    The allocation problem of one geometry, with its matrices built once.

    The least-squares system it solves (``method``: ``'active-set'``, ``bounded_lstsq``,
    the default; ``'bvls'`` or ``'trf'``, ``scipy.optimize.lsq_linear``) has the six
    weighted wrench rows (scaled by one constant so the largest column has norm 1, which
    leaves the optimum unchanged) and, for every nozzle that more than one channel fires, one row
    ``PENALTY (R_i c / max_i - u_i)`` with a free variable ``u_i`` in [0, 1] (target 0):
    zero exactly when the nozzle is not over-commanded, so a request the nozzles can
    produce without clipping is met exactly and an infeasible one ends with an
    over-command of order 1/PENALTY² (clipped away).
    """

    def __init__(self, nozzles: Sequence[Nozzle], engines: Sequence[Engine],
                 wheels: Sequence[Wheel], *, force_scale: float, torque_scale: float,
                 use_engines: bool = True, method: str = 'active-set') -> None:
        if not (force_scale > 0 and torque_scale > 0):
            raise ValueError('force_scale and torque_scale must be > 0')
        if method not in METHODS:
            raise ValueError(f'method must be one of {METHODS}')
        self.nozzles, self.engines, self.wheels = list(nozzles), list(engines), list(wheels)
        self.method = method
        self.weights = np.repeat([1.0 / force_scale, 1.0 / torque_scale], 3)
        self.response = nozzle_response(self.nozzles)                 # N x 12
        self.max_thrust = np.array([n.max_thrust for n in self.nozzles], dtype=float)
        self.nozzle_wrench = nozzle_wrenches(self.nozzles)             # 6 x N
        self.engine_wrench = engine_wrenches(self.engines)             # 6 x E
        self.wheel_max = float(sum(w.max_torque for w in self.wheels))
        wheel_cols = np.vstack([np.zeros((3, 3)), np.eye(3)])
        n_eng = len(self.engines)
        # the linear model: 12 channels, E engines, 3 wheel axes
        self.matrix = np.hstack([self.nozzle_wrench @ self.response, self.engine_wrench,
                                 wheel_cols])
        self.lower = np.concatenate([np.zeros(12 + n_eng), np.full(3, -self.wheel_max)])
        self.upper = np.concatenate([np.ones(12 + n_eng), np.full(3, self.wheel_max)])
        usable = np.linalg.norm(self.matrix, axis=0) > _TINY
        usable &= self.upper > self.lower
        if not use_engines:
            usable[12:12 + n_eng] = False
        self.usable = np.flatnonzero(usable)
        # unknowns scaled to their capacity (wheel torque / wheel_max), all within [-1, 1]
        self.unit = np.maximum(np.abs(self.lower), np.abs(self.upper))[self.usable]
        weighted = self.weights[:, None] * self.matrix[:, self.usable] * self.unit
        self.row_scale = 1.0 / max(float(np.linalg.norm(weighted, axis=0).max(initial=0.0)),
                                   _TINY)
        weighted = weighted * self.row_scale
        # over-command rows for nozzles fired by more than one usable channel
        chan = self.usable[self.usable < 12]
        frac = np.zeros_like(self.response)
        on = self.max_thrust > 0
        frac[on] = self.response[on] / self.max_thrust[on, None]
        shared = np.flatnonzero((frac[:, chan] > _TINY).sum(axis=1) > 1)
        rows = np.zeros((shared.size, self.usable.size + shared.size))
        rows[:, :chan.size] = frac[np.ix_(shared, chan)]
        rows[:, self.usable.size:] = -np.eye(shared.size)
        n_var = self.usable.size + shared.size
        self.system = np.asfortranarray(np.vstack([
            np.hstack([weighted, np.zeros((6, shared.size))]), PENALTY * rows,
            REGULARIZATION * np.eye(n_var)]))
        self.bounds = (np.concatenate([self.lower[self.usable] / self.unit,
                                       np.zeros(shared.size)]),
                       np.concatenate([self.upper[self.usable] / self.unit,
                                       np.ones(shared.size)]))
        self.tail = np.zeros(shared.size + n_var)

    def _optimum(self, target: np.ndarray) -> np.ndarray:
        """Return the bounded least-squares solution of the system for ``target``."""
        if self.method == 'active-set':
            x, converged = bounded_lstsq(self.system, target, *self.bounds)
            if converged:
                return x
        # the fallback only: scipy.optimize is not loaded at import
        from scipy.optimize import lsq_linear

        method = 'trf' if self.method == 'trf' else 'bvls'
        with np.errstate(divide='ignore', invalid='ignore'):
            result = lsq_linear(self.system, target, bounds=self.bounds, method=method,
                                lsq_solver='exact', tol=TOLERANCE)
        if not np.all(np.isfinite(result.x)):   # bvls can divide by zero on a tie
            result = lsq_linear(self.system, target, bounds=self.bounds, method='trf',
                                lsq_solver='exact', tol=TOLERANCE)
        return result.x

    def channel_thrust(self, channels: Sequence[float] | np.ndarray) -> np.ndarray:
        """Return each nozzle's thrust (N) for 12 channel values in [0, 1] (KSP's RCS rule)."""
        return np.minimum(self.response @ np.asarray(channels, dtype=float), self.max_thrust)

    def solve(self, force: Sequence[float] | np.ndarray,
              torque: Sequence[float] | np.ndarray) -> Allocation:
        """Return the allocation of one wrench (N, N·m, base_link)."""
        b = np.concatenate([np.asarray(force, dtype=float), np.asarray(torque, dtype=float)])
        if b.shape != (6,) or not np.all(np.isfinite(b)):
            raise ValueError('force and torque must be finite 3-vectors')
        n_eng = len(self.engines)
        x = np.zeros(self.matrix.shape[1])
        if np.any(b) and self.usable.size:
            target = np.concatenate([self.weights * b * self.row_scale, self.tail])
            x[self.usable] = np.clip(self._optimum(target)[:self.usable.size] * self.unit,
                                     self.lower[self.usable],
                                     self.upper[self.usable])
        channels = x[:12]
        thrust = self.channel_thrust(channels)
        throttle = x[12:12 + n_eng]
        wheel = x[12 + n_eng:]
        wrench = self.nozzle_wrench @ thrust + self.engine_wrench @ throttle
        return Allocation(channels, thrust, throttle, wheel, wrench[:3].copy(),
                          wrench[3:] + wheel)


def allocate(nozzles: Sequence[Nozzle], engines: Sequence[Engine], wheels: Sequence[Wheel],
             force: Sequence[float] | np.ndarray, torque: Sequence[float] | np.ndarray, *,
             force_scale: float, torque_scale: float, use_engines: bool = True) -> Allocation:
    """
    Allocate one body wrench (N, N·m, base_link) to RCS channels, engines and wheels.

    Minimises ``|| W (A x - b) ||²`` with ``W = diag(1/force_scale, 1/torque_scale)``
    (module docstring). A zero request returns exactly zero everything; engines are left
    at zero throttle when ``use_engines`` is false.
    """
    return Allocator(nozzles, engines, wheels, force_scale=force_scale,
                     torque_scale=torque_scale, use_engines=use_engines).solve(force, torque)


# -- measured wrench and ratios ---------------------------------------------------------------
def wrench_of(nozzles: Sequence[Nozzle], nozzle_thrust: Sequence[float] | np.ndarray,
              engines: Sequence[Engine], engine_thrust: Sequence[float] | np.ndarray,
              ) -> tuple[np.ndarray, np.ndarray]:
    """Return the force and torque of measured nozzle and engine thrusts (N); no wheels."""
    w = nozzle_wrenches(nozzles) @ np.asarray(nozzle_thrust, dtype=float).reshape(-1)
    if engines:
        pos = np.array([e.position for e in engines], dtype=float)
        d = np.array([e.direction for e in engines], dtype=float)
        w = w + np.concatenate([d, np.cross(pos, d)], axis=1).T @ np.asarray(
            engine_thrust, dtype=float).reshape(-1)
    return w[:3].copy(), w[3:].copy()


def weighted_norm(force: Sequence[float] | np.ndarray, torque: Sequence[float] | np.ndarray,
                  force_scale: float, torque_scale: float) -> float:
    """Return ``sqrt(|force/force_scale|² + |torque/torque_scale|²)``.

    ``math.hypot`` scales as it sums: a finite request of 1e308 N has a finite norm, where
    the squares would overflow (and a saturation ratio of inf / inf be NaN).
    """
    f = np.asarray(force, dtype=float) / force_scale
    t = np.asarray(torque, dtype=float) / torque_scale
    return math.hypot(*f.tolist(), *t.tolist())


def ratios(requested: tuple, allocated: tuple, achieved: tuple, force_scale: float,
           torque_scale: float) -> dict:
    """
    Return the wrench-status residuals and ratios; each wrench is a (force, torque) pair.

    ``allocationResidual`` = requested - allocated, ``trackingResidual`` = requested -
    achieved; ``saturationRatio`` and ``trackingErrorRatio`` are their weighted norms over
    the weighted norm of the request (0 when the request is zero); ``saturated`` is
    ``saturationRatio > 0.1``.
    """
    req = [np.asarray(v, dtype=float) for v in requested]
    alloc_res = tuple(r - np.asarray(a, dtype=float) for r, a in zip(req, allocated))
    track_res = tuple(r - np.asarray(a, dtype=float) for r, a in zip(req, achieved))
    denom = weighted_norm(*req, force_scale, torque_scale)
    if denom > 0.0:
        saturation = weighted_norm(*alloc_res, force_scale, torque_scale) / denom
        tracking = weighted_norm(*track_res, force_scale, torque_scale) / denom
    else:
        saturation = tracking = 0.0
    return {'allocationResidual': alloc_res, 'trackingResidual': track_res,
            'saturationRatio': saturation, 'trackingErrorRatio': tracking,
            'saturated': saturation > 0.1}
