"""A vessel's actuators, found in its parts: what the mod can command and how it names them.

Ids follow the mod: ``<kind>_<persistentId>_<moduleIndex>`` for wheels, engines, RCS and
separators (kind = mechanism for separators), the configured motor name for servos.
"""

from __future__ import annotations

from dataclasses import dataclass

from pylon_protocol import names

from pylon_sim.game.vessel import Module, Part, VesselSpec

SEPARATION_KINDS = ('decoupler', 'fairing', 'launch_clamp')


@dataclass(frozen=True)
class Actuator:
    """One actuator of the active vessel."""

    actuator_type: str     # wheel, engine, rcs, separation, motor
    name: str
    part: Part
    part_index: int
    module: Module


def servo_name(part, module) -> str:
    """Return a servo's motor name: its ``/ksp_vessel/joint_states`` entry."""
    raw = module.get('motor_name') or (
        f'servo_{part.persistent_id or part.flight_id}_{module.module_index}')
    return names.sanitize_name(str(raw), f'servo_{part.persistent_id}', max_length=64)


def actuators_of(spec: VesselSpec) -> list[Actuator]:
    """Return the vessel's actuators in part order."""
    found: list[Actuator] = []
    for index, part in enumerate(spec.parts):
        for module in part.modules:
            kind = module.kind
            if kind in ('wheel', 'engine', 'rcs') or kind in SEPARATION_KINDS:
                actuator_type = 'separation' if kind in SEPARATION_KINDS else kind
                name = names.actuator_name(kind, part.persistent_id, part.flight_id,
                                           module.module_index)
            elif kind == 'servo':
                actuator_type = 'motor'
                name = servo_name(part, module)
            else:
                continue
            found.append(Actuator(actuator_type, name, part, index, module))
    return found
