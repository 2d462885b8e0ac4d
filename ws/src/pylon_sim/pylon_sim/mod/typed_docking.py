"""Docking ports as the mod keeps them (module ``docking_port``, ``pylon_docking_port_command``).

Action 1 selects this port's camera; one docking camera streams at a time, so selecting
another port stops the first. Action 2 stops this port's camera (a no-op if it was not
selected). Action 3 undocks a docked port (``not_docked`` otherwise): the port goes to
``Disengage`` and ``take_released`` hands it to the simulator, which splits the vessel
there. ``state`` is the port's ``docking`` state, which the simulator advances
(``set_port_state``, ``set_docked``).

Settings: ``node_type``, ``docked`` (default false; ``vessel.flag_setting``),
``partner_name``, ``partner_part_flight_id``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pylon_protocol import names

from pylon_sim.game.docking import ACQUIRE, DISENGAGE, DOCKER, READY
from pylon_sim.game.vessel import VesselSpec

SELECT_CAMERA, STOP_CAMERA, RELEASE = 1, 2, 3
ACTIONS = (SELECT_CAMERA, STOP_CAMERA, RELEASE)


@dataclass
class Port:
    """One docking port."""

    part_flight_id: int
    module_index: int
    node_type: str
    docked: bool
    partner_name: str
    partner_part_flight_id: int
    state: str = READY

    def part_from_partner(self) -> None:
        """Forget the partner: the port is free."""
        self.docked, self.partner_name, self.partner_part_flight_id = False, '', 0


class DockingPorts:
    """The docking ports of one vessel, which were undocked by command, and the camera."""

    def __init__(self, spec: VesselSpec) -> None:
        self.ports: dict[str, Port] = {}
        self.undocked: set[str] = set()
        self.released: list[tuple[str, int]] = []   # (port, partner part) to undock
        self.camera: str | None = None
        for part in spec.parts:
            for module in part.modules_of('docking_port'):
                name = names.docking_port_name(part.persistent_id or part.flight_id,
                                               module.module_index)
                docked = module.flag('docked', False)
                self.ports[name] = Port(
                    part.flight_id, module.module_index,
                    str(module.get('node_type', 'unknown')) or 'unknown', docked,
                    str(module.get('partner_name', '')),
                    int(module.get('partner_part_flight_id', 0) or 0),
                    DOCKER if docked else READY)

    def act(self, name: str, action: int) -> bool:
        """Carry out one of ``ACTIONS`` on a known port; False: a release of a free port."""
        if action == SELECT_CAMERA:
            self.camera = name
        elif action == STOP_CAMERA:
            if self.camera == name:
                self.camera = None
        else:
            port = self.ports[name]
            if not port.docked:
                return False
            self.released.append((name, port.partner_part_flight_id))
            port.part_from_partner()
            port.state = DISENGAGE
            self.undocked.add(name)
        return True

    def set_docked(self, name: str, partner_name: str, partner_part_flight_id: int,
                   state: str) -> None:
        """Record that a port has docked (the simulator's docking event)."""
        port = self.ports[name]
        port.docked, port.partner_name = True, partner_name
        port.partner_part_flight_id = partner_part_flight_id
        port.state = state
        self.undocked.discard(name)

    def take_released(self) -> list[tuple[str, int]]:
        """Return the ports released since the last call, with their partner part (once)."""
        released, self.released = self.released, []
        return released

    def carry_from(self, old: DockingPorts) -> None:
        """Keep the state of the ports still here, and the camera if its port is."""
        for name in self.ports:
            if name in old.ports:
                self.ports[name] = replace(old.ports[name])
        self.undocked |= {n for n in old.undocked if n in self.ports}
        if old.camera in self.ports:
            self.camera = old.camera

    def fields(self, name: str) -> dict:
        """Return the ``pylon_docking_port_state`` fields of a port (KeyError if unknown)."""
        port = self.ports[name]
        return {'name': name, 'partFlightId': port.part_flight_id,
                'moduleIndex': port.module_index, 'nodeType': port.node_type,
                'state': port.state, 'docked': port.docked,
                'acquiring': port.state == ACQUIRE, 'releasable': port.docked,
                'cameraActive': self.camera == name, 'partnerName': port.partner_name,
                'partnerPartFlightId': port.partner_part_flight_id}
