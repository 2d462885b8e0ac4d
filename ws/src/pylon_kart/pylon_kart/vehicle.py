"""The kart's vehicle interface as plain logic: commands, gears, control mode, timeout (pure).

No ROS and no clock: every call gets ``now`` (s, the caller's clock: game time under
``use_sim_time``) and returns what to do. ``KartInterface`` keeps

- the command in force: the newest valid ``control_cmd`` (steering_tire_angle, acceleration)
  or ``actuation_cmd`` (accel, brake, steer); a command older than ``command_timeout``
  gives way to a stop (``stop_deceleration`` to standstill, then the brakes hold);
- the gear (starts in DRIVE: the competition's stacks never send a gear), with the rules
  of ``shift``;
- the requested control mode (AUTONOMOUS or MANUAL; starts MANUAL) and the report
  (``report_mode``).

A refused input (non-finite number, steering beyond the kart's limit, acceleration beyond
``max_acceleration``, accel or brake outside 0–1, an unknown gear, a mode outside the
enum) is counted under its reason and changes nothing: the command in force (or the stop
after it) stays.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
import math

from autoware_auto_vehicle_msgs.msg import ControlModeReport, GearCommand

from pylon_kart import actuation, longitudinal
from pylon_kart.geometry import Geometry

GEARS = {GearCommand.NEUTRAL: longitudinal.NEUTRAL, GearCommand.DRIVE: longitudinal.DRIVE,
         GearCommand.REVERSE: longitudinal.REVERSE, GearCommand.PARK: longitudinal.PARK}
"""The gears the kart has (the competition's four), by GearCommand / GearReport value."""
GEAR_VALUES = {name: value for value, name in GEARS.items()}

AUTONOMOUS = ControlModeReport.AUTONOMOUS
MANUAL = ControlModeReport.MANUAL
NOT_READY = ControlModeReport.NOT_READY


def shift(current: str, requested: int, speed: float, park_speed: float) -> tuple[str, str]:
    """Return ``(gear, reason)``: the gear after a GearCommand; reason '' if it was taken.

    Rules (as the competition's simulator has them): DRIVE and REVERSE need NEUTRAL
    between them; PARK only below ``park_speed`` (m/s); NONE (0) changes nothing; any other
    value is not a gear of the kart.
    """
    if requested == GearCommand.NONE:
        return current, ''
    if requested not in GEARS:
        return current, f'unknown_gear:{requested}'
    target = GEARS[requested]
    if {current, target} == {longitudinal.DRIVE, longitudinal.REVERSE}:
        return current, f'{current}_to_{target}_needs_neutral'
    if target == longitudinal.PARK and current != longitudinal.PARK and \
            abs(speed) >= park_speed:
        return current, f'park_while_moving:{speed:.2f}m/s'
    return target, ''


def longitudinal_params(geometry: Geometry, mass: float, full_brake_deceleration: float,
                        max_speed: float) -> longitudinal.Params:
    """Return the longitudinal model of a kart of ``mass`` (kg) on its wheels.

    The motors' deceleration is their full torque at the rim over the mass:
    ``Σ T_i / r_i / m`` over the driven wheels (what they give against the spin).
    """
    force = sum(w.max_drive_torque / w.radius for w in geometry.driven)
    return longitudinal.Params(force / mass, full_brake_deceleration, max_speed)


@dataclass(frozen=True)
class Limits:
    """What the interface accepts and how it stops."""

    command_timeout: float = 0.5         # s
    max_acceleration: float = 10.0       # m/s², |acceleration| accepted
    stop_deceleration: float = 3.0       # m/s², the stop after a command timeout
    park_speed: float = 0.3              # m/s
    lockstep_command_age: float = 0.0    # s, 0: every step sends (``KartInterface.sends``)


@dataclass(frozen=True)
class Command:
    """The command in force: from ``control_cmd`` or from ``actuation_cmd``."""

    at: float                            # s, when it arrived
    steering: float                      # rad, the kart's steering_tire_angle
    acceleration: float = 0.0            # m/s² (control_cmd)
    accel: float | None = None           # 0..1 (actuation_cmd; None: a control_cmd)
    brake: float = 0.0                   # 0..1 (actuation_cmd)


@dataclass(frozen=True)
class Output:
    """One control step: the steering angle and the drive, and why."""

    steering: float                      # rad, the kart's angle
    drive: longitudinal.Drive
    source: str                          # control, actuation, timeout


def _finite(*values: float) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


class KartInterface:
    """The vehicle interface's state: the command in force, the gear, the mode."""

    def __init__(self, limits: Limits, params: longitudinal.Params) -> None:
        """Start in DRIVE and MANUAL with no command."""
        self.limits, self.params = limits, params
        self.gear = longitudinal.DRIVE
        self.requested = MANUAL
        self.command: Command | None = None
        self.u_ref = 0.0
        self.sign = 0                     # the sign of the last step's acceleration
        self.refusals: Counter[str] = Counter()
        self.last_refusal = ''

    def refuse(self, reason: str) -> str:
        """Count a refusal under its reason (the part before a colon); return the reason."""
        self.refusals[reason.split(':')[0]] += 1
        self.last_refusal = reason
        return reason

    # -- inputs -----------------------------------------------------------------------------
    def on_control(self, steering: float, acceleration: float, now: float,
                   geometry: Geometry | None) -> str:
        """Take a control_cmd; return '' or the reason it was refused."""
        if not _finite(steering, acceleration):
            return self.refuse('non_finite')
        reason = self._check_steering(steering, geometry)
        if reason:
            return self.refuse(reason)
        if abs(acceleration) > self.limits.max_acceleration:
            return self.refuse(f'acceleration_out_of_range:{acceleration:.3g}')
        self.command = Command(now, steering, acceleration)
        return ''

    def on_actuation(self, accel: float, brake: float, steer: float, now: float,
                     geometry: Geometry | None) -> str:
        """Take an actuation_cmd; return '' or the reason it was refused."""
        if not _finite(accel, brake, steer):
            return self.refuse('non_finite')
        if not (0.0 <= accel <= 1.0 and 0.0 <= brake <= 1.0):
            return self.refuse(f'actuation_out_of_range:accel={accel:.3g},brake={brake:.3g}')
        reason = self._check_steering(steer, geometry)
        if reason:
            return self.refuse(reason)
        self.command = Command(now, steer, accel=accel, brake=brake)
        return ''

    def on_gear(self, requested: int, speed: float) -> str:
        """Take a gear_cmd at the measured speed; return '' or why it was refused."""
        self.gear, reason = shift(self.gear, requested, speed, self.limits.park_speed)
        return self.refuse(reason) if reason else ''

    def request_mode(self, mode: int) -> str:
        """Take a mode request (AUTONOMOUS or MANUAL); return '' or why it was refused."""
        if mode not in (AUTONOMOUS, MANUAL):
            return self.refuse(f'unsupported_mode:{mode}')
        if mode != self.requested:
            self.command = None           # a new engagement starts from a stop, not old input
        self.requested = mode
        return ''

    def _check_steering(self, steering: float, geometry: Geometry | None) -> str:
        if geometry is None:
            return 'no_wheels_yet'
        limit = geometry.max_steering_tire_angle
        if abs(steering) > limit + 1e-6:
            return f'steering_out_of_range:{steering:.4f}>{limit:.4f}rad'
        return ''

    # -- outputs ----------------------------------------------------------------------------
    def report_mode(self, ready: bool, engaged: bool) -> int:
        """Return the ControlModeReport mode: NOT_READY, AUTONOMOUS or MANUAL.

        ``ready``: the vessel's session is ACTIVE and its wheels are known; ``engaged``:
        the lease is owned (commands act).
        """
        if not ready:
            return NOT_READY
        return AUTONOMOUS if self.requested == AUTONOMOUS and engaged else MANUAL

    def timed_out(self, now: float) -> bool:
        """Tell whether no command is in force (none yet, or the last one too old)."""
        return self.command is None or now - self.command.at > self.limits.command_timeout

    def sends(self, now: float) -> bool:
        """Tell whether a control step at ``now`` sends its wheel orders to the game.

        Every step does, unless ``lockstep_command_age`` > 0 (a game lock-stepped on the
        wheel commands, ``pylon_sim --lockstep-lead``, that should wait for the stack as
        well): then only a step while the command in force is at most that old, or once it
        has timed out (the stop is this interface's own). A stack that falls behind then
        holds the game within its lead instead of driving it on an old command.
        """
        age = self.limits.lockstep_command_age
        if age <= 0.0 or self.timed_out(now):
            return True
        return now - self.command.at <= age + 1e-9

    def step(self, now: float, speed: float, dt: float) -> Output:
        """Return the steering and drive for a control step at the measured ``speed``."""
        command = self.command
        if self.timed_out(now):
            steering = command.steering if command is not None else 0.0
            self.u_ref, drive = self._longitudinal(-self.limits.stop_deceleration, speed, dt)
            return Output(steering, drive, 'timeout')
        if command.accel is not None:
            self.u_ref = max(0.0, longitudinal.DIRECTION[self.gear] * speed)
            return Output(command.steering, longitudinal.actuation(
                command.accel, command.brake, self.gear, self.params), 'actuation')
        self.u_ref, drive = self._longitudinal(command.acceleration, speed, dt)
        return Output(command.steering, drive, 'control')

    def control(self, now: float, geometry: Geometry, measured: actuation.Measurement,
                dt: float) -> tuple[Output, list[actuation.WheelOrder]]:
        """Return a control step (``step`` at the measured speed) and every wheel's order."""
        output = self.step(now, measured.longitudinal_velocity, dt)
        return output, actuation.wheel_orders(geometry, output.steering, output.drive)

    def _longitudinal(self, acceleration: float, speed: float, dt: float):
        """Step the longitudinal model, telling it when the command's sign turned."""
        sign = (acceleration > 0.0) - (acceleration < 0.0)
        turned, self.sign = sign != self.sign, sign
        return longitudinal.step(self.u_ref, acceleration, speed, self.gear, self.params, dt,
                                 turned)

    def engage(self, speed: float) -> None:
        """Start an engagement from the measured speed (the reference follows the kart)."""
        self.u_ref = max(0.0, longitudinal.DIRECTION[self.gear] * speed)
