"""Typed servo commands (module ``servo``, ``pylon_motor_command``).

A servo needs ElectricCharge: while the vessel holds none it does not move and reports
``powered`` false (no draw is modelled). Modes ``position`` (move toward the clamped target
at the servo's speed), ``velocity`` (move at the clamped velocity) and ``effort`` (a simple
rate model: speed = max speed × effort / max effort). Positions stay within
``lower``..``upper``. ``enabled`` false holds the servo where it is. On timeout or
``release_all`` the servo holds its position and the command is no longer active. A
``partFlightId`` > 0 must match.

Settings (``vessel.number_setting``: a wrong type is the default): ``lower``/``upper``
(rad | m), ``velocity`` (max speed, default 1), ``effort`` (max effort), ``position``
(initial, default 0).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
import math

from pylon_sim.game.parts import Actuator
from pylon_sim.mod.typed_common import (
    ACCEPTED,
    clamp,
    command_flag,
    command_number,
    InvalidCommandError,
    Override,
)

MOTOR_MODES = ('position', 'velocity', 'effort')


@dataclass
class Servo:
    """One servo's motion and the command it follows."""

    actuator: Actuator
    lower: float
    upper: float
    max_speed: float
    max_effort: float
    position: float
    velocity: float = 0.0
    target: float = 0.0
    mode: str = 'position'
    command: Override | None = None

    def hold(self) -> None:
        """End the command: the servo stops where it is."""
        self.command = None
        self.velocity = 0.0
        self.target = self.position

    def speed(self, value: float) -> float:
        """Return the speed a velocity or effort command asks for."""
        if self.mode == 'velocity':
            return clamp(value, -self.max_speed, self.max_speed)
        if self.max_effort > 0.0:
            return self.max_speed * clamp(value / self.max_effort, -1.0, 1.0)
        return math.copysign(self.max_speed, value) if value else 0.0


def _servo(actuator: Actuator) -> Servo:
    module = actuator.module
    lower = module.number('lower', -math.inf)
    upper = module.number('upper', math.inf)
    start = clamp(module.number('position', 0.0), lower, upper)
    return Servo(actuator, lower, upper, max(0.0, module.number('velocity', 1.0)),
                 max(0.0, module.number('effort', 0.0)), start, target=start)


class Servos:
    """The servos of one vessel and whether the vessel powers them."""

    def __init__(self, actuators: list[Actuator]) -> None:
        self.servos = {a.name: _servo(a) for a in actuators}
        self.powered = True              # the vessel holds ElectricCharge (servos move)

    def command(self, name: str, packet: dict, sequence: int, expires: float) -> str:
        """Apply a motor command (module docstring); return ``command_accepted`` or why not."""
        servo = self.servos[name]
        flight_id = packet.get('partFlightId', 0)
        if not isinstance(flight_id, int) or isinstance(flight_id, bool) or flight_id < 0:
            raise InvalidCommandError('partFlightId')
        if flight_id and flight_id != servo.actuator.part.flight_id:
            return 'unknown_actuator'
        mode = packet.get('mode')
        if mode not in MOTOR_MODES:
            raise InvalidCommandError('mode')
        enabled = (command_flag(packet, 'enabled', True)
                   if command_flag(packet, 'hasEnabled', False) else True)
        value = 0.0
        if enabled:
            if not command_flag(packet, f'has{mode.capitalize()}', False):
                raise InvalidCommandError(mode)
            value = command_number(packet, mode)
        servo.mode = mode
        servo.command = Override(sequence, expires, {'enabled': enabled, 'value': value})
        if enabled and mode == 'position':
            servo.target = clamp(value, servo.lower, servo.upper)
        else:
            servo.target = servo.position
        return ACCEPTED

    def tick(self, now: float, dt: float, powered: bool) -> None:
        """Move the servos over ``dt`` (if ``powered``), then end the commands due at ``now``."""
        self.powered = powered
        for servo in self.servos.values():
            self._move(servo, dt)
        self.expire(now)

    def _move(self, servo: Servo, dt: float) -> None:
        command = servo.command
        if command is None or not command.values['enabled'] or dt <= 0.0 or not self.powered:
            servo.velocity = 0.0
            return
        if servo.mode == 'position':
            step = clamp(servo.target - servo.position, -servo.max_speed * dt,
                         servo.max_speed * dt)
        else:
            step = servo.speed(command.values['value']) * dt
        new = clamp(servo.position + step, servo.lower, servo.upper)
        servo.velocity = (new - servo.position) / dt
        servo.position = new
        if servo.mode != 'position':
            servo.target = new

    def expire(self, now: float) -> None:
        """End the commands whose time is up at ``now``."""
        for servo in self.servos.values():
            if servo.command is not None and now >= servo.command.expires:
                servo.hold()

    def release(self) -> None:
        """End every command: each servo holds its position."""
        for servo in self.servos.values():
            servo.hold()

    def overriding(self) -> bool:
        """Tell whether any servo command is in force."""
        return any(s.command is not None for s in self.servos.values())

    def sequence(self, name: str) -> int | None:
        """Return the sequence of the command in force on a servo, if any."""
        command = self.servos[name].command
        return None if command is None else command.sequence

    def carry_from(self, old: Servos) -> None:
        """Take the motion and commands of the servos still here from ``old``."""
        for name, servo in old.servos.items():
            if name in self.servos:
                self.servos[name] = replace(servo, actuator=self.servos[name].actuator)
        self.powered = old.powered

    def positions(self) -> dict[str, float]:
        """Return each servo's position (rad | m)."""
        return {name: servo.position for name, servo in self.servos.items()}

    def fields(self, name: str) -> dict:
        """Return a servo's ``pylon_motor_state`` fields."""
        servo = self.servos[name]
        command = servo.command
        effort = command.values['value'] if (
            command is not None and servo.mode == 'effort' and command.values['enabled']) else 0.0
        return {'position': servo.position, 'velocity': servo.velocity, 'effort': effort,
                'target': servo.target, 'commandMode': servo.mode,
                'engaged': command is None or command.values['enabled'],
                'commandActive': command is not None, 'powered': self.powered}
