"""Pure arming logic of setpoint_controller: which setpoint is in force, if any.

Rules (seed 001: targets are discarded on authority loss, missing input and a generation
change; after that only a new MODE_IDLE re-arms, and later setpoints are accepted again):

* Start disarmed (``started``): the first setpoint that counts is a MODE_IDLE, so a
  controller that starts (or restarts) while someone streams a slew does not fly it on
  its own. ``disarm(reason)`` drops the active setpoint; the law then runs MODE_IDLE
  (exact zeros) until a MODE_IDLE setpoint arrives.
* Disarm on: setpoint older than ``setpoint_timeout_sec`` (0 disables it), state estimate
  older than ``input_timeout_sec`` while a non-IDLE setpoint is active (a new setpoint
  gets ``input_timeout_sec`` of grace from its acceptance), generation change, authority loss.
* A bad setpoint (non-finite number, ``|‖q‖ - 1| > 1e-3``, unknown mode) is refused with a
  reason; the setpoint in force stays.
* While disarmed, anything but MODE_IDLE is refused with ``not_armed_send_idle``.
* ``serial`` changes only when the accepted setpoint differs from the one in force (a
  stream of identical setpoints keeps the SIX_DOF origin and the target clock).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math

from pylon_vehicle_control.control_law import MODE_IDLE, MODES, Setpoint

QUATERNION_TOLERANCE = 1e-3
STARTED = 'started'          # the disarm reason of a controller that has not seen MODE_IDLE


def validate_setpoint(mode: int, position: Sequence[float], orientation: Sequence[float],
                      linear_velocity: Sequence[float],
                      angular_velocity: Sequence[float]) -> tuple[Setpoint | None, str]:
    """Return ``(Setpoint, '')`` or ``(None, reason)`` for ControlSetpoint fields."""
    if mode not in MODES:
        return None, f'unknown_mode:{mode}'
    values = [*position, *orientation, *linear_velocity, *angular_velocity]
    try:
        numbers = [float(v) for v in values]
    except (TypeError, ValueError):
        return None, 'not_a_number'
    if len(numbers) != 13:
        return None, 'wrong_size'
    if not all(math.isfinite(v) for v in numbers):
        return None, 'non_finite'
    norm = math.sqrt(sum(v * v for v in numbers[3:7]))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        return None, f'non_unit_quaternion:{norm:.6g}'
    q = tuple(v / norm for v in numbers[3:7])
    return Setpoint(int(mode), tuple(numbers[0:3]), q, tuple(numbers[7:10]),
                    tuple(numbers[10:13])), ''


@dataclass(frozen=True)
class Decision:
    """The answer to one setpoint."""

    accepted: bool
    reason: str


class Supervisor:
    """Armed / disarmed state, the setpoint in force and its timeouts."""

    def __init__(self, setpoint_timeout_sec: float = 1.0,
                 input_timeout_sec: float = 0.5) -> None:
        """Start disarmed with no setpoint (the law runs MODE_IDLE until a MODE_IDLE)."""
        self.setpoint_timeout_sec = float(setpoint_timeout_sec)
        self.input_timeout_sec = float(input_timeout_sec)
        self.armed = False
        self.disarm_reason = STARTED
        self.setpoint: Setpoint | None = None
        self.serial = 0
        self._setpoint_time: float | None = None
        self._input_time: float | None = None
        self._armed_time: float | None = None
        self._generation: int | None = None

    # -- inputs -----------------------------------------------------------------------------
    def on_setpoint(self, setpoint: Setpoint | None, now: float,
                    reason: str = '') -> Decision:
        """Take a validated setpoint (None plus ``reason``: refused by validation)."""
        if setpoint is None:
            return Decision(False, reason or 'invalid_setpoint')
        if not self.armed:
            if setpoint.mode != MODE_IDLE:
                return Decision(False, 'not_armed_send_idle')
            self.armed = True
            self.disarm_reason = ''
        if setpoint != self.setpoint:
            self.serial += 1
            self.setpoint = setpoint
            self._armed_time = now
        self._setpoint_time = now
        return Decision(True, 'accepted')

    def on_input(self, now: float) -> None:
        """Note that a state estimate arrived at ``now``."""
        self._input_time = now

    def on_generation(self, generation: int) -> bool:
        """Take the lifecycle generation; disarm and return True when it changed."""
        generation = int(generation)
        changed = self._generation is not None and generation != self._generation
        self._generation = generation
        if changed:
            self.disarm('generation_changed')
        return changed

    def on_authority_lost(self, reason: str = 'authority_lost') -> None:
        """Discard the target after the lease was lost."""
        self.disarm(reason)

    def disarm(self, reason: str) -> None:
        """Drop the setpoint in force; only MODE_IDLE re-arms."""
        if self.armed or self.setpoint is not None:
            self.disarm_reason = reason
        self.armed = False
        self.setpoint = None
        self.serial += 1
        self._setpoint_time = None
        self._armed_time = None

    # -- output -----------------------------------------------------------------------------
    def active(self, now: float) -> tuple[Setpoint, int]:
        """Apply the timeouts at ``now``; return the setpoint to run and its serial.

        MODE_IDLE (a default ``Setpoint()``) when disarmed or without a setpoint.
        """
        sp = self.setpoint
        if sp is not None and self.setpoint_timeout_sec > 0.0 and \
                now - self._setpoint_time > self.setpoint_timeout_sec:
            self.disarm('setpoint_timeout')
        elif sp is not None and sp.mode != MODE_IDLE:
            since = max(t for t in (self._input_time, self._armed_time) if t is not None)
            if now - since > self.input_timeout_sec:
                self.disarm('input_stale')
        if self.setpoint is None:
            return Setpoint(), self.serial
        return self.setpoint, self.serial
