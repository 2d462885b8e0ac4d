"""Typed separator commands (modules ``decoupler``, ``fairing``, ``launch_clamp``).

``separate: true`` fires once and for ever (a second one is ``already_separated``); a
separator that is the vessel's root part has nothing beyond it to separate
(``nothing_beyond``, nothing changes); ``separate: false`` changes nothing. A fired
separator reports separated and not available. Splitting the vessel is the caller's
business: ``take_fired`` hands over the separators fired since the last call, once. The
impulse of the split is the module's ``ejection_force`` setting (kN, KSP's
``ejectionForce``) for the frame's integrated step (``topology.push_impulse``).
"""

from __future__ import annotations

from pylon_sim.game import topology
from pylon_sim.game.parts import Actuator
from pylon_sim.game.vessel import VesselSpec
from pylon_sim.mod.typed_common import ACCEPTED, command_flag


class Separators:
    """The separators of one vessel: which have fired."""

    def __init__(self, spec: VesselSpec, actuators: list[Actuator]) -> None:
        self.spec = spec
        self.actuators = {a.name: a for a in actuators}
        self.separated: set[str] = set()
        self.fired: list[str] = []        # fired since the last ``take_fired``

    def command(self, name: str, packet: dict, sequence: int, expires: float) -> str:
        """Fire a separator (module docstring); return ``command_accepted`` or why not."""
        if not command_flag(packet, 'separate', False):
            return ACCEPTED
        if name in self.separated:
            return 'already_separated'
        if not topology.beyond_indices(self.spec, self.actuators[name].part_index):
            return 'nothing_beyond'
        self.separated.add(name)
        self.fired.append(name)
        return ACCEPTED

    def take_fired(self) -> list[str]:
        """Return the separators fired since the last call, in firing order (once)."""
        fired, self.fired = self.fired, []
        return fired

    def sequence(self, name: str) -> None:
        """Return None: a firing is not an override."""
        return None

    def carry_from(self, old: Separators) -> None:
        """Keep the fired separators still here."""
        self.separated |= {n for n in old.separated if n in self.actuators}

    def fields(self, name: str) -> dict:
        """Return a separator's state fields."""
        fired = name in self.separated
        return {'separated': fired, 'available': not fired}
