"""The KSP side's last safety filter on body-wrench commands (the mod's ControlSafety).

Every accepted body wrench passes ``step(state, limits, force, torque, body_rate, dt)``
before allocation, once per physics step; it returns the filtered wrench and the reasons
that changed it, in this order:

1. ``magnitude_limit``: force and torque are scaled down (direction kept) to at most
   ``max_force_n`` and ``max_torque_nm``.
2. ``angular_speed_limit``: while the body rate ``|ω|`` exceeds
   ``max_angular_speed_rad_sec``, the torque component along ``ω̂`` that would speed the
   rotation up (``τ·ω > 0``) is removed. Braking torque (``τ·ω < 0``) and the components
   perpendicular to ``ω`` are kept, so the controller can always slow the vessel down.
3. ``slew_rate_limit``: the output moves from the previous output by at most
   ``max_force_slew_n_per_sec × dt`` (and the torque likewise), as a vector step.
   A command to zero also ramps down: an owner's explicit zero is a normal command. Loss
   of the command (timeout, lease end, emergency stop) does not come here: the caller
   cuts the output at once with ``reset``.
4. ``continuous_actuation_limit``: time with a non-zero output accumulates; beyond
   ``max_continuous_actuation_sec`` the output is zero until the command has been exactly
   zero (all six components 0.0) for ``continuous_reset_idle_sec``, which resets the count.

The limits come from a ``ControlSafety.cfg`` file in KSP's ConfigNode syntax::

    PYLON_CONTROL_SAFETY
    {
        maxForceN = 250000      // N
        ...
    }

Missing keys keep their defaults; unknown keys and bad values are errors naming the key
and line.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
import math
from pathlib import Path
import re

import numpy as np

NODE_NAME = 'PYLON_CONTROL_SAFETY'
REASONS = ('magnitude_limit', 'angular_speed_limit', 'slew_rate_limit',
           'continuous_actuation_limit')

# cfg key -> SafetyLimits field
CFG_KEYS = {
    'maxForceN': 'max_force_n',
    'maxTorqueNm': 'max_torque_nm',
    'maxAngularSpeedRadSec': 'max_angular_speed_rad_sec',
    'maxForceSlewNPerSec': 'max_force_slew_n_per_sec',
    'maxTorqueSlewNmPerSec': 'max_torque_slew_nm_per_sec',
    'maxContinuousActuationSec': 'max_continuous_actuation_sec',
    'continuousResetIdleSec': 'continuous_reset_idle_sec',
}


@dataclass(frozen=True)
class SafetyLimits:
    """The limits of the filter; the defaults are the mod's."""

    max_force_n: float = 250000.0
    max_torque_nm: float = 100000.0
    max_angular_speed_rad_sec: float = 0.35
    max_force_slew_n_per_sec: float = 50000.0
    max_torque_slew_nm_per_sec: float = 10000.0
    max_continuous_actuation_sec: float = 30.0
    continuous_reset_idle_sec: float = 0.5


def _zeros() -> np.ndarray:
    return np.zeros(3)


@dataclass(frozen=True)
class SafetyState:
    """What the filter remembers between steps."""

    force: np.ndarray = field(default_factory=_zeros)    # last output, N, base_link
    torque: np.ndarray = field(default_factory=_zeros)   # last output, N·m
    active_sec: float = 0.0     # continuous non-zero output so far
    idle_sec: float = 0.0       # continuous exactly-zero command so far
    tripped: bool = False       # continuous limit reached; waiting for the idle reset


@dataclass(frozen=True)
class SafetyResult:
    """The filtered wrench, the new state and why the wrench was changed."""

    state: SafetyState
    force: np.ndarray
    torque: np.ndarray
    reasons: tuple[str, ...]


def zero_state() -> SafetyState:
    """Return the state with no output and no history."""
    return SafetyState()


def reset(state: SafetyState) -> SafetyState:
    """Return the state after the output was cut at once (timeout, lease end, e-stop).

    The continuous-actuation count is kept: cutting the output is not an idle period.
    """
    return replace(state, force=_zeros(), torque=_zeros())


def _clip_norm(vector: np.ndarray, limit: float) -> tuple[np.ndarray, bool]:
    size = float(np.linalg.norm(vector))
    if size > limit:
        return vector * (limit / size), True
    return vector, False


def step(state: SafetyState, limits: SafetyLimits, force, torque, body_rate,
         dt: float) -> SafetyResult:
    """Filter one commanded wrench for one physics step of ``dt`` seconds.

    ``force`` (N) and ``torque`` (N·m) are in base_link, ``body_rate`` the vessel's
    angular velocity (rad/s, base_link). Raise ValueError for non-finite input.
    """
    f = np.array(force, dtype=float)
    t = np.array(torque, dtype=float)
    w = np.array(body_rate, dtype=float)
    if not (np.all(np.isfinite(f)) and np.all(np.isfinite(t)) and np.all(np.isfinite(w))
            and math.isfinite(dt)) or dt < 0.0:
        raise ValueError('the safety filter needs finite force, torque, body rate and dt >= 0')
    reasons: list[str] = []
    commanded_zero = not (np.any(f) or np.any(t))

    f, clipped_f = _clip_norm(f, limits.max_force_n)
    t, clipped_t = _clip_norm(t, limits.max_torque_nm)
    if clipped_f or clipped_t:
        reasons.append('magnitude_limit')

    rate = float(np.linalg.norm(w))
    if rate > limits.max_angular_speed_rad_sec:
        axis = w / rate
        along = float(t @ axis)
        if along > 0.0:
            t = t - along * axis
            reasons.append('angular_speed_limit')

    max_df = limits.max_force_slew_n_per_sec * dt
    max_dt = limits.max_torque_slew_nm_per_sec * dt
    df, slewed_f = _clip_norm(f - state.force, max_df)
    dtq, slewed_t = _clip_norm(t - state.torque, max_dt)
    if slewed_f or slewed_t:
        reasons.append('slew_rate_limit')
        f = state.force + df
        t = state.torque + dtq

    idle_sec = state.idle_sec + dt if commanded_zero else 0.0
    active_sec, tripped = state.active_sec, state.tripped
    if idle_sec >= limits.continuous_reset_idle_sec - 1e-12 and commanded_zero:
        active_sec, tripped = 0.0, False
    if tripped:
        f, t = _zeros(), _zeros()
    elif np.any(f) or np.any(t):
        active_sec += dt
        if active_sec > limits.max_continuous_actuation_sec + 1e-12:
            tripped = True
            f, t = _zeros(), _zeros()
    if tripped:
        reasons = [r for r in reasons if r != 'slew_rate_limit']
        reasons.append('continuous_actuation_limit')
    new_state = SafetyState(force=f, torque=t, active_sec=active_sec, idle_sec=idle_sec,
                            tripped=tripped)
    return SafetyResult(new_state, f.copy(), t.copy(), tuple(reasons))


_LINE = re.compile(r'^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$')


def load_limits(path: str | Path) -> SafetyLimits:
    """Read a ControlSafety.cfg file; raise ValueError naming the key and line."""
    path = Path(path)
    text = path.read_text(encoding='utf-8')
    values: dict[str, float] = {}
    depth = 0
    seen_node = False
    pending_name = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split('//', 1)[0].strip()
        if not line:
            continue
        where = f'{path}:{number}'
        if line == '{':
            if pending_name != NODE_NAME or depth:
                raise ValueError(f'{where}: expected {NODE_NAME} {{ ... }}')
            depth, seen_node, pending_name = 1, True, None
            continue
        if line == '}':
            if not depth:
                raise ValueError(f'{where}: unexpected }}')
            depth = 0
            continue
        if not depth:
            name = line.rstrip('{').strip()
            if name != NODE_NAME:
                raise ValueError(f'{where}: expected the node {NODE_NAME}, got {name!r}')
            if line.endswith('{'):
                depth, seen_node = 1, True
            else:
                pending_name = name
            continue
        match = _LINE.match(line)
        if not match:
            raise ValueError(f'{where}: expected key = value, got {line!r}')
        key, value = match.groups()
        if key not in CFG_KEYS:
            raise ValueError(f'{where}: unknown key {key!r}; known: {", ".join(CFG_KEYS)}')
        try:
            number_value = float(value)
        except ValueError:
            raise ValueError(f'{where}: {key} must be a number, got {value!r}') from None
        if not math.isfinite(number_value) or number_value <= 0.0:
            raise ValueError(f'{where}: {key} must be a finite number > 0, got {value}')
        values[CFG_KEYS[key]] = number_value
    if depth or not seen_node:
        raise ValueError(f'{path}: expected one complete {NODE_NAME} {{ ... }} node')
    return SafetyLimits(**values)
