"""What every family of typed actuators shares: command readers, timeouts and overrides.

A command's fields are read strictly (``command_number``, ``command_flag``): a field of the
wrong type refuses the command (``InvalidCommandError``, reported as ``invalid_command``). A
module's settings are read leniently, with one rule for every reader
(``vessel.flag_setting``, ``vessel.number_setting``).
"""

from __future__ import annotations

from dataclasses import dataclass
import math

from pylon_protocol.packets import (
    MAX_COMMAND_TIMEOUT_SEC,
    MIN_COMMAND_TIMEOUT_SEC,
    MOD_DEFAULT_COMMAND_TIMEOUT_SEC,
)

from pylon_sim.game.parts import Actuator

ACCEPTED = 'command_accepted'
EXHAUSTED = 1e-9     # a resource total at or below this is gone


class InvalidCommandError(ValueError):
    """A command field of the wrong type or out of range."""


def clamp_timeout(value: object) -> float:
    """Return a command timeout as applied: 0.05–10 s, 0.5 s if unusable."""
    if not _is_number(value) or not math.isfinite(value) or value <= 0.0:
        return MOD_DEFAULT_COMMAND_TIMEOUT_SEC
    return min(max(float(value), MIN_COMMAND_TIMEOUT_SEC), MAX_COMMAND_TIMEOUT_SEC)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def command_number(packet: dict, key: str, default: float = 0.0) -> float:
    """Return a command's number field; raise ``InvalidCommandError`` unless finite int | float."""
    value = packet.get(key, default)
    if not _is_number(value) or not math.isfinite(value):
        raise InvalidCommandError(key)
    return float(value)


def command_flag(packet: dict, key: str, default: bool) -> bool:
    """Return a command's bool field; raise ``InvalidCommandError`` unless a bool."""
    value = packet.get(key, default)
    if not isinstance(value, bool):
        raise InvalidCommandError(key)
    return value


def command_sequence(packet: dict) -> int:
    """Return a command's ``sequence``; raise ``InvalidCommandError`` unless an int."""
    sequence = packet.get('sequence', 0)
    if not isinstance(sequence, int) or isinstance(sequence, bool):
        raise InvalidCommandError('sequence')
    return sequence


def clamp(value: float, low: float, high: float) -> float:
    """Return ``value`` within ``low``..``high``."""
    return min(max(value, low), high)


@dataclass
class Override:
    """What an accepted command holds until ``expires``."""

    sequence: int
    expires: float
    values: dict


class OverrideTable:
    """Actuators of one kind that hold one override each, or none (RCS, wheels)."""

    def __init__(self, actuators: list[Actuator]) -> None:
        self.actuators = {a.name: a for a in actuators}
        self.held: dict[str, Override | None] = dict.fromkeys(self.actuators)

    def stock(self, name: str) -> dict:
        """Return an actuator's settings without a command (its module's)."""
        raise NotImplementedError

    def current(self, name: str) -> dict:
        """Return an actuator's settings now: the override's, else ``stock``."""
        override = self.held[name]
        return dict(override.values) if override is not None else self.stock(name)

    def settings(self) -> dict[str, dict]:
        """Return ``current`` of each actuator."""
        return {name: self.current(name) for name in self.held}

    def expire(self, now: float) -> None:
        """End the overrides whose time is up at ``now``."""
        for name, override in self.held.items():
            if override is not None and now >= override.expires:
                self.held[name] = None

    def release(self) -> None:
        """End every override."""
        for name in self.held:
            self.held[name] = None

    def overriding(self) -> bool:
        """Tell whether any override is in force."""
        return any(o is not None for o in self.held.values())

    def sequence(self, name: str) -> int | None:
        """Return the sequence of the override in force on ``name``, if any."""
        override = self.held.get(name)
        return None if override is None else override.sequence

    def carry_from(self, old: OverrideTable) -> None:
        """Take the overrides of the actuators still here from ``old``."""
        for name in self.held:
            if name in old.held:
                self.held[name] = old.held[name]
