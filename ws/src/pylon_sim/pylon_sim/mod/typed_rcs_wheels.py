"""Typed RCS and wheel commands: overrides of a module's stock settings until a timeout.

RCS (module ``rcs``)
    ``enabled`` and ``thrustLimit`` (N per nozzle; limiter = thrustLimit / thruster_power,
    clamped to 0..1, so the limit ends up within 0..thruster_power) hold until the timeout,
    then the module's stock enable and limit return. Settings: ``thruster_power`` N per
    nozzle, the nozzle layout (``rcs_geometry.rcs_layout``; its length is the nozzle
    count), ``enabled`` (default true), ``thrust_limit_fraction`` (stock limiter 0..1,
    default 1).

Wheels (module ``wheel``)
    ``enabled`` (motor), ``targetAngularVelocity`` rad/s, ``steeringAngle`` rad (clamped to
    the steering range, 0 for a fixed wheel), ``maxDriveTorque`` N·m (0 keeps the stock
    torque), ``brake`` 0–1 hold until the timeout, then the stock settings return (motor
    idle, straight, brakes off). Non-finite fields, a negative torque or a brake outside
    0–1 are refused (``invalid_command``). ``inputs`` hands the settings to the physics
    (``wheels``, ``rover``), which drives the wheel only while a command is in force; the
    wheel state fields (grounded, spin, torques, slip) come from there. Settings:
    ``max_drive_torque``, ``steerable``, ``max_steering_angle_deg`` (the others and every
    default: ``wheels.SETTINGS``).

Settings are read by ``vessel.flag_setting`` / ``number_setting`` (a wrong type is the
default).
"""

from __future__ import annotations

import math

from pylon_sim.game import wheels
from pylon_sim.game.rcs_geometry import nozzle_count
from pylon_sim.mod.typed_common import (
    ACCEPTED,
    clamp,
    command_flag,
    command_number,
    InvalidCommandError,
    Override,
    OverrideTable,
)

STOCK_DRIVE_TORQUE = wheels.SETTINGS['max_drive_torque'][0]   # N·m, a wheel's default


class Rcs(OverrideTable):
    """The RCS modules of one vessel."""

    def power(self, name: str) -> float:
        """Return a module's thrust per nozzle at full limit, N."""
        return max(0.0, self.actuators[name].module.number('thruster_power', 0.0))

    def command(self, name: str, packet: dict, sequence: int, expires: float) -> str:
        """Override a module's enable and thrust limit until ``expires``."""
        enabled = command_flag(packet, 'enabled', True)
        power = self.power(name)
        limit = command_number(packet, 'thrustLimit')
        fraction = clamp(limit / power, 0.0, 1.0) if power > 0.0 else 0.0
        self.held[name] = Override(sequence, expires,
                                   {'enabled': enabled, 'thrust_limit': power * fraction})
        return ACCEPTED

    def stock(self, name: str) -> dict:
        """Return a module's own ``{'enabled', 'thrust_limit'}`` (N per nozzle)."""
        module = self.actuators[name].module
        fraction = clamp(module.number('thrust_limit_fraction', 1.0), 0.0, 1.0)
        return {'enabled': module.flag('enabled', True),
                'thrust_limit': self.power(name) * fraction}

    def fields(self, name: str) -> dict:
        """Return a module's state fields."""
        settings = self.current(name)
        nozzles = nozzle_count(self.actuators[name].module.settings)
        return {'enabled': settings['enabled'],
                'active': settings['enabled'] and settings['thrust_limit'] > 0.0,
                'thrustLimit': settings['thrust_limit'],
                'maxThrust': self.power(name) * nozzles,
                'commandActive': self.held[name] is not None}


class Wheels(OverrideTable):
    """The rover wheels of one vessel."""

    def _stock_torque(self, name: str) -> float:
        return max(0.0, self.actuators[name].module.number('max_drive_torque',
                                                           STOCK_DRIVE_TORQUE))

    def command(self, name: str, packet: dict, sequence: int, expires: float) -> str:
        """Override a wheel's motor, steering, torque and brake until ``expires``."""
        module = self.actuators[name].module
        enabled = command_flag(packet, 'enabled', True)
        omega = command_number(packet, 'targetAngularVelocity')
        steering = command_number(packet, 'steeringAngle')
        torque = command_number(packet, 'maxDriveTorque')
        brake = command_number(packet, 'brake')
        if torque < 0.0 or not 0.0 <= brake <= 1.0:
            raise InvalidCommandError('range')
        steer_max = (math.radians(module.number('max_steering_angle_deg', 0.0))
                     if module.flag('steerable', False) else 0.0)
        self.held[name] = Override(sequence, expires, {
            'enabled': enabled, 'target_angular_velocity': omega,
            'steering_angle': clamp(steering, -steer_max, steer_max),
            'max_drive_torque': torque if torque > 0.0 else self._stock_torque(name),
            'brake': brake})
        return ACCEPTED

    def stock(self, name: str) -> dict:
        """Return a wheel's stock drive settings: motor idle, straight, brakes off."""
        return {'enabled': True, 'target_angular_velocity': 0.0, 'steering_angle': 0.0,
                'brake': 0.0, 'max_drive_torque': self._stock_torque(name)}

    def inputs(self) -> dict[str, dict]:
        """Return ``settings`` with ``commanded`` (a command in force) for the physics."""
        return {name: {**values, 'commanded': self.held[name] is not None}
                for name, values in self.settings().items()}

    def fields(self, name: str) -> dict:
        """Return a wheel's state fields (the physics adds what the wheel does)."""
        settings = self.current(name)
        return {'enabled': settings['enabled'],
                'steeringAngle': settings['steering_angle'],
                'maxDriveTorque': settings['max_drive_torque'],
                'commandActive': self.held[name] is not None}
