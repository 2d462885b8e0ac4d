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
   Only the part along ``ω̂`` goes: a torque at an angle to ``ω`` keeps its perpendicular
   part, which turns the rotation axis without raising ``|ω|``. The rate is the one measured
   at this step; a torque that is perpendicular up to rounding (``τ·ω̂`` within 1e-12 of
   ``|τ|``) is left alone and not reported.
3. ``slew_rate_limit``: the output moves from the previous output by at most
   ``max_force_slew_n_per_sec × dt`` (and the torque likewise), as a vector step.
   A command to zero also ramps down: an owner's explicit zero is an ordinary set-point,
   and a step to zero jolts the vessel as much as a step up (the ramp is at most
   ``max_force_n / max_force_slew_n_per_sec`` = 5 s with the defaults). The fail-safe cuts
   happen at once instead: a tripped continuous limit (rule 4) here, and the loss of the
   command (timeout, lease end, emergency stop) in the caller, which uses ``reset`` or
   ``zero_state`` and does not step the filter.
4. ``continuous_actuation_limit``: time with a non-zero output accumulates; beyond
   ``max_continuous_actuation_sec`` the output is zero until the command has been exactly
   zero (all six components 0.0) for ``continuous_reset_idle_sec``, which resets the count.
   The trip cuts at once (no ramp). A zero command held that long also resets the count
   when the limit has not tripped. Time comparisons allow ``TIME_TOLERANCE_SEC`` for the
   rounding of summed steps, so 30 s of 0.02 s steps is exactly 1500 steps.

Inputs must be finite 3-vectors (and ``dt`` finite and >= 0); anything else raises
ValueError: the caller rejects such commands before they get here.

The limits come from a ``ControlSafety.cfg`` file in KSP's ConfigNode syntax::

    PYLON_CONTROL_SAFETY
    {
        maxForceN = 250000      // N
        ...
    }

Braces may also share a line with the name or the keys (``NAME { key = 1 }``), as in
KSP. ``//`` starts a comment. Missing keys keep their defaults; unknown or repeated keys,
values that are not finite numbers > 0, a second node or anything else are errors naming
the file, line and key.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
import math
from pathlib import Path
import re

import numpy as np

NODE_NAME = 'PYLON_CONTROL_SAFETY'
TIME_TOLERANCE_SEC = 1e-9
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


def idle(state: SafetyState, limits: SafetyLimits, dt: float) -> SafetyState:
    """Return the state after a step with no command in force: output cut, time idle.

    No command counts as a zero command for the continuous-actuation reset, so a
    controller that stops commanding for ``continuous_reset_idle_sec`` clears the count.
    """
    state = replace(reset(state), idle_sec=state.idle_sec + dt)
    if state.idle_sec >= limits.continuous_reset_idle_sec - TIME_TOLERANCE_SEC:
        state = replace(state, active_sec=0.0, tripped=False)
    return state


def _clip_norm(vector: np.ndarray, limit: float) -> tuple[np.ndarray, bool]:
    size = float(np.linalg.norm(vector))
    if size > limit:
        return vector * (limit / size), True
    return vector, False


def _vector(name: str, value) -> np.ndarray:
    try:
        vector = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f'{name} must be three numbers, got {value!r}') from None
    if vector.shape != (3,):
        raise ValueError(f'{name} must be three numbers, got shape {vector.shape}')
    if not np.all(np.isfinite(vector)):
        raise ValueError(f'{name} must be finite, got {vector.tolist()}')
    return vector


def step(state: SafetyState, limits: SafetyLimits, force, torque, body_rate,
         dt: float) -> SafetyResult:
    """Filter one commanded wrench for one physics step of ``dt`` seconds.

    ``force`` (N) and ``torque`` (N·m) are in base_link, ``body_rate`` the vessel's
    angular velocity (rad/s, base_link). Raise ValueError for non-finite input.
    """
    f = _vector('force', force)
    t = _vector('torque', torque)
    w = _vector('body_rate', body_rate)
    try:
        dt = float(dt)
    except (TypeError, ValueError):
        raise ValueError(f'dt must be a number, got {dt!r}') from None
    if not math.isfinite(dt) or dt < 0.0:
        raise ValueError(f'dt must be finite and >= 0, got {dt}')
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
        # rounding alone (a torque perpendicular to ω) is not an accelerating component
        if along > 1e-12 * float(np.linalg.norm(t)):
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
    if commanded_zero and idle_sec >= limits.continuous_reset_idle_sec - TIME_TOLERANCE_SEC:
        active_sec, tripped = 0.0, False
    if tripped:
        f, t = _zeros(), _zeros()
    elif np.any(f) or np.any(t):
        active_sec += dt
        if active_sec > limits.max_continuous_actuation_sec + TIME_TOLERANCE_SEC:
            tripped = True
            f, t = _zeros(), _zeros()
    if tripped:
        reasons = [r for r in reasons if r != 'slew_rate_limit']
        reasons.append('continuous_actuation_limit')
    new_state = SafetyState(force=f, torque=t, active_sec=active_sec, idle_sec=idle_sec,
                            tripped=tripped)
    return SafetyResult(new_state, f.copy(), t.copy(), tuple(reasons))


_LINE = re.compile(r'^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)$')


def _tokens(text: str):
    """Yield (line number, token): braces alone, other text stripped, comments gone."""
    for number, raw in enumerate(text.splitlines(), start=1):
        for piece in re.split(r'([{}])', raw.split('//', 1)[0]):
            piece = piece.strip()
            if piece:
                yield number, piece


def load_limits(path: str | Path) -> SafetyLimits:
    """Read a ControlSafety.cfg file; raise ValueError naming the key and line."""
    path = Path(path)
    text = path.read_text(encoding='utf-8-sig')
    values: dict[str, float] = {}
    given_on: dict[str, int] = {}
    inside = False
    seen_node = False
    pending = False      # the node's name was read, its '{' not yet
    for number, token in _tokens(text):
        where = f'{path}:{number}'
        if token == '{':
            if inside or not pending:
                raise ValueError(f'{where}: expected {NODE_NAME} {{ ... }}')
            inside, seen_node, pending = True, True, False
        elif pending:
            raise ValueError(f'{where}: expected {{ after {NODE_NAME}, got {token!r}')
        elif token == '}':
            if not inside:
                raise ValueError(f'{where}: unexpected }}')
            inside = False
        elif not inside:
            if token != NODE_NAME:
                raise ValueError(f'{where}: expected the node {NODE_NAME}, got {token!r}')
            if seen_node:
                raise ValueError(f'{where}: a second {NODE_NAME} node; give one only')
            pending = True
        else:
            key, value = _key_value(where, token)
            if key in given_on:
                raise ValueError(f'{where}: {key} given twice (first on line {given_on[key]})')
            given_on[key] = number
            values[CFG_KEYS[key]] = value
    if inside or pending or not seen_node:
        raise ValueError(f'{path}: expected one complete {NODE_NAME} {{ ... }} node')
    return SafetyLimits(**values)


def _key_value(where: str, token: str) -> tuple[str, float]:
    match = _LINE.match(token)
    if not match:
        raise ValueError(f'{where}: expected key = value, got {token!r}')
    key, value = match.groups()
    if key not in CFG_KEYS:
        raise ValueError(f'{where}: unknown key {key!r}; known: {", ".join(CFG_KEYS)}')
    try:
        if '_' in value:            # Python's float() takes 1_000; KSP does not
            raise ValueError(value)
        number = float(value)
    except ValueError:
        raise ValueError(f'{where}: {key} must be a number, got {value!r}') from None
    if not math.isfinite(number) or number <= 0.0:
        raise ValueError(f'{where}: {key} must be a finite number > 0, got {value}')
    return key, number
