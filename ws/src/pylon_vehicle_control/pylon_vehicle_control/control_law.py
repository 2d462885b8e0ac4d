"""Pure control law of setpoint_controller: setpoint + state estimate -> body wrench.

No ROS here: ``SetpointControlLaw.step(state, inputs, dt)`` returns ``(state, output)``
and keeps nothing between calls besides the returned ``ControlState``.

Conventions: quaternions are ROS order ``(x, y, z, w)``; ``orientation`` is the rotation
base_link -> reference frame (the setpoint's ``header.frame_id``); ``body_rate`` is in
base_link; ``position``/``velocity`` in the reference frame; the wrench is in base_link.

Modes (``ControlSetpoint.MODE_*``)
  IDLE (0): exact zero wrench at once (no ramp: the KSP side ramps its own output).
  DETUMBLE (1): torque only, ``tau = -k_d I omega`` (always braking, ``tau·omega < 0``),
    shaped by the same magnitude / slew-aware bound as the rate loop; exact zeros once
    ``|omega| < detumble_rate_deadband_rad_s``.
  ATTITUDE_HOLD (2): torque only, cascade below.
  SIX_DOF (3): the attitude cascade plus the translation loop below.

Attitude cascade
  target ``q_t(t) = q_sp ⊗ exp(omega_sp · t_acc)`` (t_acc: time since acceptance), error
  ``q_e = q^-1 ⊗ q_t`` (shortest way), rotation vector ``e`` (body axes, rad).
  Outer loop (bang-bang aware): ``omega_ref = omega_sp + ê · min(w_max, k_a |e|,
  sqrt(2 a_b |e|))`` with ``a_b = attitude_accel_fraction · tau_avail / |I ê|``, then
  ``|omega_ref| <= w_max`` (``attitude_hold_rate_limit_deg_s``).
  Inner loop: ``e_w = omega_ref - omega``; while coasting (``|omega_ref| >= w_max / 2``)
  zero torque as long as ``|e_w|`` is below ``rate_error_deadband_deg_s`` (a long slew is
  torque free between its ends), else
  ``alpha = k_w' e_w`` with ``k_w' = min(rate_gain, max_gain_dt / dt)``, its magnitude
  limited along its direction ``d`` (``c = |I d|``) by the torque ``tau_avail / c`` and by
  the slew-aware (jerk) bound ``j (-dt + sqrt(dt² + 2 |e_w| / j))``, ``j = slew_margin ·
  S_tau / c``: an acceleration held one step and then ramped down at the slew limit adds
  at most ``|e_w|`` of rate, so the rate approaches its target from below.
  ``tau = I alpha + omega × I omega``.
Translation (SIX_DOF)
  origin ``p0`` = position at acceptance; target ``p_t = p0 + p_sp + v_sp t_acc``;
  ``e_p = p_t - p``; ``v_ref = v_sp + ê_p min(v_max, k_p |e_p|, sqrt(2 a_b |e_p|))``;
  ``a = k_v' (v_ref - v)`` bounded like the rate loop (mass m, force slew);
  ``F_body = R(q)^T m a``.
Deadband (ATTITUDE_HOLD, SIX_DOF): once ``|e| < attitude_deadband`` and
  ``|omega - omega_sp| < rate_deadband`` (and, for SIX_DOF, position/velocity errors
  below theirs) the output is exact zeros until an error exceeds
  ``deadband_exit_factor`` times its threshold: a long hold is mostly exact zeros, so the
  KSP ``maxContinuousActuationSec`` count is reset by the idle periods.
Limits, applied in this order: magnitude (``min(max_*, available, saturation cap)``),
  removal of the torque component along ``omega`` that would speed up a rotation faster
  than ``max_angular_speed_rad_s`` (in the attitude modes: than the attitude rate limit),
  then the slew limit from the last commanded wrench (a target within one step is
  reached exactly, so zeros are exact).
Continuous actuation: after ``max_continuous_actuation_sec`` (below the KSP 30 s) of
  output not interrupted by ``forced_idle_sec`` of exact zeros, the law sends exact zeros
  for ``forced_idle_sec`` (above the KSP 0.5 s idle reset), so noisy estimates that never
  reach the deadband cannot trip the KSP cut. Zeros from IDLE, the deadband or a DETUMBLE
  at rest reset the count the same way once they last ``forced_idle_sec``.
Saturation: a ``Feedback`` with ``saturated`` lowers the torque (force) cap to the
  allocated magnitude, not below ``saturation_scale_floor`` times the request, when the
  allocation fell short of the request (``1 - saturation_ratio`` of it without vectors);
  the cap grows back by ``saturation_recovery_per_sec`` (relative) per second. The cap
  also lowers the braking plan. No integrators, so nothing winds up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
import math

import numpy as np
from pylon_common.parameters import resolve
from pylon_interfaces.msg import ControlSetpoint
from pylon_protocol import rotations

from pylon_vehicle_control.controller_params import LAW_PARAMETERS

MODE_IDLE = ControlSetpoint.MODE_IDLE
MODE_DETUMBLE = ControlSetpoint.MODE_DETUMBLE
MODE_ATTITUDE_HOLD = ControlSetpoint.MODE_ATTITUDE_HOLD
MODE_SIX_DOF = ControlSetpoint.MODE_SIX_DOF
MODES = (MODE_IDLE, MODE_DETUMBLE, MODE_ATTITUDE_HOLD, MODE_SIX_DOF)


def attitude_error(current: Sequence[float], target: Sequence[float]) -> np.ndarray:
    """Return the rotation vector (base_link axes, rad) taking ``current`` to ``target``.

    Both are rotations base_link -> the same reference frame.
    """
    return rotations.to_rotvec(rotations.multiply(rotations.conjugate(current), target))


# -- parameters -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ControlParams:
    """The rows of ``controller_params.LAW_PARAMETERS`` (same names, units)."""

    attitude_hold_rate_limit_deg_s: float
    attitude_gain: float
    attitude_accel_fraction: float
    rate_gain: float
    max_gain_dt: float
    detumble_gain: float
    detumble_rate_deadband_rad_s: float
    max_angular_speed_rad_s: float
    attitude_deadband_deg: float
    rate_deadband_deg_s: float
    deadband_exit_factor: float
    rate_error_deadband_deg_s: float
    position_gain: float
    velocity_gain: float
    velocity_limit_m_s: float
    translation_accel_fraction: float
    position_deadband_m: float
    velocity_deadband_m_s: float
    max_force_n: float
    max_torque_nm: float
    max_force_slew_n_s: float
    max_torque_slew_nm_s: float
    slew_margin: float
    max_continuous_actuation_sec: float
    forced_idle_sec: float
    saturation_scale_floor: float
    saturation_recovery_per_sec: float
    fallback_mass_kg: float
    fallback_inertia_kg_m2: float

    @classmethod
    def from_values(cls, values: Mapping[str, object] | None = None) -> ControlParams:
        """Build from parameter values over the table's defaults (bad values: ValueError).

        Names that are not the law's (the node's own parameters) are ignored.
        """
        names = {f.name for f in fields(cls)}
        resolved = resolve(LAW_PARAMETERS, {k: v for k, v in (values or {}).items()
                                            if k in names})
        return cls(**{name: float(resolved[name]) for name in names})


# -- inputs and outputs ---------------------------------------------------------------------
def _vec3(value: object = (0.0, 0.0, 0.0)) -> np.ndarray:
    return np.array(value, dtype=float).reshape(3)


@dataclass(frozen=True)
class Setpoint:
    """The fields of a ControlSetpoint the law uses (SI units, frames as in the message)."""

    mode: int = MODE_IDLE
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    orientation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    linear_velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    angular_velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Feedback:
    """The saturation part of a WrenchFeedback (base_link, N and N·m)."""

    saturated: bool = False
    saturation_ratio: float = 0.0
    requested_force: tuple[float, float, float] | None = None
    requested_torque: tuple[float, float, float] | None = None
    allocated_force: tuple[float, float, float] | None = None
    allocated_torque: tuple[float, float, float] | None = None


@dataclass(frozen=True)
class ControlInputs:
    """One step's inputs.

    ``setpoint_serial`` changes whenever a new (different) setpoint was accepted: the law
    then takes the current position as the SIX_DOF origin and restarts the target clock.
    ``feedback`` is a WrenchFeedback that arrived since the last step (None: none new).
    ``available_torque_nm`` / ``available_force_n``: what the actuators can give (None:
    only the parameter limits).
    """

    setpoint: Setpoint
    setpoint_serial: int
    orientation: tuple[float, float, float, float]
    body_rate: tuple[float, float, float]
    position: tuple[float, float, float] | None = None
    velocity: tuple[float, float, float] | None = None
    inertia: np.ndarray | Sequence[Sequence[float]] | None = None
    mass: float | None = None
    available_torque_nm: float | None = None
    available_force_n: float | None = None
    feedback: Feedback | None = None


@dataclass(frozen=True)
class ControlState:
    """What the law remembers between steps."""

    force: np.ndarray = field(default_factory=_vec3)     # last command, N, base_link
    torque: np.ndarray = field(default_factory=_vec3)    # last command, N·m, base_link
    setpoint_serial: int | None = None
    elapsed_sec: float = 0.0                             # since the setpoint's acceptance
    origin: np.ndarray | None = None                     # SIX_DOF origin, reference frame
    in_deadband: bool = False
    active_sec: float = 0.0        # non-zero output since the last idle of forced_idle_sec
    zero_sec: float = 0.0          # consecutive exact-zero output
    forced_idle_sec: float = 0.0                         # forced exact zeros still to send
    torque_cap: float | None = None                      # saturation cap, N·m (None: off)
    force_cap: float | None = None                       # saturation cap, N (None: off)


@dataclass(frozen=True)
class ControlOutput:
    """The wrench to send (base_link) and what shaped it."""

    force: np.ndarray
    torque: np.ndarray
    mode: int
    deadband: bool = False          # exact zeros because the hold is within its deadband
    saturation_limited: bool = False  # a saturation cap is lowering the wrench limits
    rate_limited: bool = False      # an accelerating torque component was removed
    slew_limited: bool = False
    forced_idle: bool = False       # exact zeros to reset the KSP continuous-actuation count
    attitude_error_rad: float = 0.0
    rate_command: np.ndarray = field(default_factory=_vec3)
    position_error_m: float = 0.0

    @property
    def is_zero(self) -> bool:
        """Return whether all six components are exactly 0.0."""
        return not (np.any(self.force) or np.any(self.torque))


# -- helpers ---------------------------------------------------------------------------------
def _clip_norm(v: np.ndarray, limit: float) -> np.ndarray:
    n = float(np.linalg.norm(v))
    if n > limit:
        return v * (limit / n) if n > 0.0 else v
    return v


def shaped_speed(distance: float, speed_limit: float, gain: float, accel: float) -> float:
    """Return the approach speed ``min(limit, gain d, sqrt(2 a d))`` at distance ``d``."""
    d = max(0.0, distance)
    return min(speed_limit, gain * d, math.sqrt(2.0 * max(accel, 0.0) * d))


def bounded_acceleration(error: np.ndarray, gain: float, inertia: np.ndarray,
                         effort_limit: float, slew_limit: float, dt: float) -> np.ndarray:
    """Return ``gain * error`` (an acceleration) limited by effort and slew-aware bounds.

    ``inertia`` maps acceleration to effort (torque or force). Along the acceleration's
    direction ``d`` with ``c = |inertia d|``: ``|a| <= effort_limit / c`` and
    ``|a| <= j (-dt + sqrt(dt² + 2 |error| / j))`` with ``j = slew_limit / c``, the largest
    acceleration that, held ``dt`` and then ramped to zero at the slew limit, changes the
    speed by no more than ``|error|``.
    """
    accel = gain * error
    size = float(np.linalg.norm(accel))
    if size <= 0.0:
        return np.zeros(3)
    c = float(np.linalg.norm(inertia @ (accel / size)))
    bound = effort_limit / c
    err = float(np.linalg.norm(error))
    if slew_limit > 0.0 and math.isfinite(slew_limit):
        j = slew_limit / c
        bound = min(bound, j * (-dt + math.sqrt(dt * dt + 2.0 * err / j)))
    return accel * (min(size, max(bound, 0.0)) / size)


class SetpointControlLaw:
    """The setpoint controller's wrench law; see the module text for the equations."""

    def __init__(self, params: ControlParams | Mapping[str, object] | None = None) -> None:
        """Keep the parameters (a ControlParams or values for ``from_values``)."""
        if not isinstance(params, ControlParams):
            params = ControlParams.from_values(params)
        self.params = params

    @staticmethod
    def initial_state() -> ControlState:
        """Return the state with no command and no history."""
        return ControlState()

    # -- the step ---------------------------------------------------------------------------
    def step(self, state: ControlState, inputs: ControlInputs,
             dt: float) -> tuple[ControlState, ControlOutput]:
        """Advance one control period of ``dt`` seconds; return the new state and output."""
        p = self.params
        dt = float(dt)
        if not math.isfinite(dt) or dt <= 0.0:
            raise ValueError(f'dt must be finite and > 0, got {dt}')
        sp = inputs.setpoint
        mode = int(sp.mode)
        if mode not in MODES:
            raise ValueError(f'unknown mode {mode}')
        if inputs.setpoint_serial != state.setpoint_serial:
            origin = None if inputs.position is None else _vec3(inputs.position)
            state = replace(state, setpoint_serial=inputs.setpoint_serial, elapsed_sec=0.0,
                            origin=origin, in_deadband=False)
        else:
            state = replace(state, elapsed_sec=state.elapsed_sec + dt)
            if state.origin is None and inputs.position is not None:
                state = replace(state, origin=_vec3(inputs.position))
        state = self._update_caps(state, inputs.feedback, dt)
        torque_limit = p.max_torque_nm
        if inputs.available_torque_nm is not None:
            torque_limit = min(torque_limit, max(0.0, float(inputs.available_torque_nm)))
        force_limit = p.max_force_n
        if inputs.available_force_n is not None:
            force_limit = min(force_limit, max(0.0, float(inputs.available_force_n)))
        sat_limited = False
        if state.torque_cap is not None and state.torque_cap < torque_limit:
            torque_limit, sat_limited = state.torque_cap, True
        if state.force_cap is not None and state.force_cap < force_limit:
            force_limit, sat_limited = state.force_cap, True

        if mode == MODE_IDLE:
            state, out = self._zero(state, mode, sat_limited)
        elif state.forced_idle_sec > 0.0:
            state, out = self._zero(state, mode, sat_limited, forced_idle=True)
            state = replace(state, forced_idle_sec=max(0.0, state.forced_idle_sec - dt),
                            zero_sec=state.zero_sec + dt)
            return state, out
        else:
            inertia = self._inertia(inputs.inertia)
            omega = _vec3(inputs.body_rate)
            if mode == MODE_DETUMBLE:
                state, out = self._detumble(state, omega, inertia, torque_limit, dt,
                                            sat_limited)
            else:
                state, out = self._hold(state, inputs, omega, inertia, torque_limit,
                                        force_limit, dt, sat_limited)
        return self._count_actuation(state, out, dt)

    def _count_actuation(self, state: ControlState, out: ControlOutput,
                         dt: float) -> tuple[ControlState, ControlOutput]:
        """Count consecutive non-zero output; force an idle period before the KSP limit."""
        p = self.params
        if out.is_zero:
            zero = state.zero_sec + dt
            # like the KSP count: only a long enough zero stretch resets it
            if zero >= p.forced_idle_sec - 1e-9:
                return replace(state, active_sec=0.0, zero_sec=zero), out
            return replace(state, active_sec=state.active_sec + dt, zero_sec=zero), out
        state = replace(state, zero_sec=0.0)
        active = state.active_sec + dt
        if active > p.max_continuous_actuation_sec:
            state, out = self._zero(state, out.mode, out.saturation_limited,
                                    forced_idle=True,
                                    attitude_error_rad=out.attitude_error_rad,
                                    position_error_m=out.position_error_m)
            return replace(state, active_sec=0.0, zero_sec=0.0,
                           forced_idle_sec=max(0.0, p.forced_idle_sec - dt)), out
        return replace(state, active_sec=active), out

    # -- modes ------------------------------------------------------------------------------
    def _zero(self, state: ControlState, mode: int, sat_limited: bool,
              **diagnostics) -> tuple[ControlState, ControlOutput]:
        state = replace(state, force=np.zeros(3), torque=np.zeros(3))
        return state, ControlOutput(np.zeros(3), np.zeros(3), mode,
                                    saturation_limited=sat_limited, **diagnostics)

    def _detumble(self, state, omega, inertia, torque_limit, dt, sat_limited):
        p = self.params
        if float(np.linalg.norm(omega)) < p.detumble_rate_deadband_rad_s:
            target = np.zeros(3)
        else:
            gain = min(p.detumble_gain, p.max_gain_dt / dt)
            alpha = bounded_acceleration(-omega, gain, inertia, torque_limit,
                                         p.slew_margin * p.max_torque_slew_nm_s, dt)
            target = _clip_norm(inertia @ alpha, torque_limit)
        torque, slewed = self._slew(state.torque, target, p.max_torque_slew_nm_s, dt)
        state = replace(state, force=np.zeros(3), torque=torque)
        return state, ControlOutput(np.zeros(3), torque.copy(), MODE_DETUMBLE,
                                    saturation_limited=sat_limited, slew_limited=slewed,
                                    rate_command=np.zeros(3))

    def _hold(self, state, inputs, omega, inertia, torque_limit, force_limit, dt,
              sat_limited):
        p = self.params
        sp = inputs.setpoint
        mode = int(sp.mode)
        q = rotations.normalize(inputs.orientation)
        w_sp = _vec3(sp.angular_velocity)
        target = rotations.multiply(rotations.normalize(sp.orientation),
                                    rotations.from_rotvec(w_sp * state.elapsed_sec))
        err = attitude_error(q, target)
        angle = float(np.linalg.norm(err))
        rate_err_abs = float(np.linalg.norm(omega - w_sp))

        # translation errors (SIX_DOF only)
        six = mode == MODE_SIX_DOF and inputs.position is not None \
            and inputs.velocity is not None and state.origin is not None
        pos_err = vel_err = np.zeros(3)
        v_sp = _vec3(sp.linear_velocity)
        if six:
            p_target = state.origin + _vec3(sp.position) + v_sp * state.elapsed_sec
            pos_err = p_target - _vec3(inputs.position)
            vel_err = v_sp - _vec3(inputs.velocity)
        pos_abs = float(np.linalg.norm(pos_err))
        vel_abs = float(np.linalg.norm(vel_err))

        # deadband with hysteresis
        k = p.deadband_exit_factor if state.in_deadband else 1.0
        inside = (angle < k * math.radians(p.attitude_deadband_deg)
                  and rate_err_abs < k * math.radians(p.rate_deadband_deg_s))
        if six:
            inside = inside and pos_abs < k * p.position_deadband_m \
                and vel_abs < k * p.velocity_deadband_m_s
        if inside:
            state = replace(state, in_deadband=True)
            return self._zero(state, mode, sat_limited, deadband=True,
                              attitude_error_rad=angle, position_error_m=pos_abs)
        state = replace(state, in_deadband=False)

        # outer attitude loop
        w_max = math.radians(p.attitude_hold_rate_limit_deg_s)
        omega_ref = w_sp.copy()
        if angle > 0.0:
            axis = err / angle
            c = float(np.linalg.norm(inertia @ axis))
            brake = p.attitude_accel_fraction * torque_limit / c
            omega_ref = omega_ref + axis * shaped_speed(angle, w_max, p.attitude_gain, brake)
        omega_ref = _clip_norm(omega_ref, w_max)

        # inner rate loop
        rate_err = omega_ref - omega
        coasting = float(np.linalg.norm(omega_ref)) >= 0.5 * w_max
        if coasting and float(np.linalg.norm(rate_err)) < math.radians(
                p.rate_error_deadband_deg_s):
            torque_target = np.zeros(3)
        else:
            gain = min(p.rate_gain, p.max_gain_dt / dt)
            alpha = bounded_acceleration(rate_err, gain, inertia, torque_limit,
                                         p.slew_margin * p.max_torque_slew_nm_s, dt)
            torque_target = inertia @ alpha + np.cross(omega, inertia @ omega)
            torque_target = _clip_norm(torque_target, torque_limit)
        torque_target, rate_limited = self._remove_accelerating(
            torque_target, omega, min(w_max, p.max_angular_speed_rad_s))

        force_target = self._translation(inputs, q, pos_err, pos_abs, v_sp, force_limit, dt) \
            if six else np.zeros(3)
        torque, slewed_t = self._slew(state.torque, torque_target, p.max_torque_slew_nm_s, dt)
        force, slewed_f = self._slew(state.force, force_target, p.max_force_slew_n_s, dt)
        state = replace(state, force=force, torque=torque)
        return state, ControlOutput(force.copy(), torque.copy(), mode,
                                    saturation_limited=sat_limited, rate_limited=rate_limited,
                                    slew_limited=slewed_t or slewed_f,
                                    attitude_error_rad=angle, rate_command=omega_ref,
                                    position_error_m=pos_abs)

    # -- pieces -----------------------------------------------------------------------------
    def _translation(self, inputs: ControlInputs, q: np.ndarray, pos_err: np.ndarray,
                     pos_abs: float, v_sp: np.ndarray, force_limit: float,
                     dt: float) -> np.ndarray:
        """Return the SIX_DOF force target (base_link): shaped velocity, then a rate loop."""
        p = self.params
        mass = self._mass(inputs.mass)
        v_ref = v_sp.copy()
        if pos_abs > 0.0:
            brake = p.translation_accel_fraction * force_limit / mass
            v_ref = v_ref + pos_err / pos_abs * shaped_speed(
                pos_abs, p.velocity_limit_m_s, p.position_gain, brake)
        gain = min(p.velocity_gain, p.max_gain_dt / dt)
        accel = bounded_acceleration(v_ref - _vec3(inputs.velocity), gain, mass * np.eye(3),
                                     force_limit, p.slew_margin * p.max_force_slew_n_s, dt)
        return _clip_norm(rotations.to_matrix(q).T @ (mass * accel), force_limit)

    def _inertia(self, inertia) -> np.ndarray:
        if inertia is None:
            return self.params.fallback_inertia_kg_m2 * np.eye(3)
        matrix = np.array(inertia, dtype=float).reshape(3, 3)
        if not np.all(np.isfinite(matrix)) or np.any(np.linalg.eigvalsh(
                0.5 * (matrix + matrix.T)) <= 0.0):
            raise ValueError('inertia must be a finite positive-definite 3x3 matrix')
        return matrix

    def _mass(self, mass) -> float:
        if mass is None:
            return self.params.fallback_mass_kg
        mass = float(mass)
        if not math.isfinite(mass) or mass <= 0.0:
            raise ValueError(f'mass must be finite and > 0, got {mass}')
        return mass

    @staticmethod
    def _remove_accelerating(torque: np.ndarray, omega: np.ndarray,
                             limit: float) -> tuple[np.ndarray, bool]:
        """Drop the part of ``torque`` along ``omega`` that speeds up a too fast rotation."""
        rate = float(np.linalg.norm(omega))
        if rate <= limit or rate <= 0.0:
            return torque, False
        axis = omega / rate
        along = float(torque @ axis)
        if along > 1e-12 * float(np.linalg.norm(torque)):
            return torque - along * axis, True
        return torque, False

    @staticmethod
    def _slew(previous: np.ndarray, target: np.ndarray, rate: float,
              dt: float) -> tuple[np.ndarray, bool]:
        """Move from ``previous`` toward ``target`` by at most ``rate * dt`` (vector step)."""
        delta = target - previous
        step = rate * dt
        size = float(np.linalg.norm(delta))
        if size <= step:
            return target.astype(float).copy(), False
        return previous + delta * (step / size), True

    def _update_caps(self, state: ControlState, feedback: Feedback | None,
                     dt: float) -> ControlState:
        p = self.params
        torque_cap, force_cap = state.torque_cap, state.force_cap
        growth = 1.0 + p.saturation_recovery_per_sec * dt
        if torque_cap is not None:
            torque_cap = torque_cap * growth
            torque_cap = None if torque_cap >= p.max_torque_nm else torque_cap
        if force_cap is not None:
            force_cap = force_cap * growth
            force_cap = None if force_cap >= p.max_force_n else force_cap
        if feedback is not None and feedback.saturated:
            ratio = min(1.0, max(0.0, 1.0 - float(feedback.saturation_ratio)))
            torque_cap = self._lowered(torque_cap, state.torque,
                                       feedback.requested_torque, feedback.allocated_torque,
                                       ratio)
            force_cap = self._lowered(force_cap, state.force,
                                      feedback.requested_force, feedback.allocated_force,
                                      ratio)
        return replace(state, torque_cap=torque_cap, force_cap=force_cap)

    def _lowered(self, cap, last, requested, allocated, ratio):
        """Return the cap after a saturated feedback (unchanged when this part was met)."""
        if requested is not None and allocated is not None:
            req = float(np.linalg.norm(_vec3(requested)))
            alloc = float(np.linalg.norm(_vec3(allocated)))
            if req <= 0.0 or alloc >= req * (1.0 - 1e-6):
                return cap
            new = alloc
        else:
            req = float(np.linalg.norm(last))
            if req <= 0.0:
                return cap
            new = ratio * req
        new = max(self.params.saturation_scale_floor * req, new)
        return new if cap is None else min(cap, new)
