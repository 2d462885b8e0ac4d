"""A game's vessel topology changes in a frame: separation, docking and undocking.

Separators the frame's commands fired and ports they released split the active vessel
before physics (``separate``, ``undock``); after physics two free ports that meet capture
and join their vessels (``dock``). Each change alters the active vessel's parts: the runtime
session resets at the next observation, and the sensors follow the parts at once
(``Sensing.follow_parts``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pylon_sim.game import docking, environment, parts, topology
from pylon_sim.game.vessel import Part
from pylon_sim.game.world import WorldView
from pylon_sim.mod import actuators
from pylon_sim.mod.outbox import Emit
from pylon_sim.mod.vehicle_manager import VehicleManager
from pylon_sim.sensors.sensing import Sensing

DOCKING_SCAN_M = 50.0     # m between centres of mass within which ports are compared


class TopologyChanges:
    """Split and join one game's vessels as its commands and its ports make them."""

    def __init__(self, world: WorldView, control: VehicleManager, sensing: Sensing,
                 emit: Emit, new_id: Callable[[], str],
                 environment_state: dict[str, environment.Pending]) -> None:
        """Change ``world``'s vessels for ``control``; a new vessel's id from ``new_id()``."""
        self.world = world
        self.control = control
        self.sensing = sensing
        self.emit = emit
        self._new_id = new_id
        self._environment = environment_state
        self.docked_identity: dict[int, tuple] = {}    # port part -> (key, spec) it docked as

    def reset(self) -> None:
        """Forget who docked as what (the world went back to the scenario's start)."""
        self.docked_identity.clear()

    def _follow_parts(self) -> None:
        for type_name, payload in self.sensing.follow_parts(self.world.ut):
            self.emit(type_name, payload)

    def separate(self, sequence: int) -> list[tuple[str, list[str]]]:
        """Split vessels at the separators the frame's commands fired, before physics.

        A fired separator of the active vessel sends its state (separated) once more, with
        ``sequence`` as its observation, before it leaves with the parts beyond it. The
        split changes the active vessel's part topology: the runtime session resets at the
        next observation, and the operations complete in the new session. Return
        (separator, [vessels that own the original parts, the active one first]).
        """
        fired = self.control.typed(self.world.active).take_fired()
        done = []
        for name in fired:
            vessel, actuator = next(
                (v, a) for v in self.world.vessels.values()
                for a in parts.actuators_of(v.spec) if a.name == name)
            if vessel is self.world.active:     # its last state: fired, leaving the vessel
                payload = actuators.state(actuator, vessel.spec, self.world.ut, sequence,
                                          tuple(float(v) for v in vessel.mass.com))
                payload.update(self.control.actuator_fields(vessel, name))
                self.emit('pylon_actuator_state', payload)
            impulse = topology.ejection_impulse(actuator.module, self.world.frame_step)
            new_id = self._new_id()
            new = self.world.separate(vessel.key, actuator.part_index,
                                      f'{vessel.key}:{new_id[:8]}', new_id, impulse)
            self.control.topology_changed(vessel, [vessel, new])
            done.append((name, [self.world.active.vessel_id, new_id]))
        if done:
            self._follow_parts()
        return done

    def _ports(self, vessel) -> list[tuple[str, dict, Part]]:
        """Return a vessel's docking ports: id, state fields and part."""
        typed = self.control.typed(vessel)
        parts = {p.flight_id: p for p in vessel.spec.parts}
        return [(port, fields, parts[fields['partFlightId']]) for port, fields in (
            (port, typed.docking_fields(port)) for port in typed.docking_ports())]

    def dock(self) -> None:
        """Advance the port states of the active vessel and its neighbours; capture.

        Each free port of the active vessel and each free port of another vessel in flight
        nearby takes its nearest compatible partner (same ``nodeType``, the other side)
        through ``docking.next_state``; a pair that captures joins the other vessel to the
        active one (``World.dock``) between physics steps: its topology changes, so the
        runtime session resets at the next observation. Another game's active vessel (a
        vehicle of a mission) is not a partner: two vehicles do not dock with each other.
        """
        active = self.world.active
        vehicles = self.world.focus
        others = [v for v in self.world.vessels.values() if v is not active and
                  v.key not in vehicles and v.body is active.body and
                  not self.world.is_packed(v) and
                  np.linalg.norm(v.state.position - active.state.position) < DOCKING_SCAN_M]
        free = [(port, f, part) for port, f, part in self._ports(active) if not f['docked']]
        if not others and all(f['state'] == docking.READY for _, f, _ in free):
            return                                  # nothing near, nothing to change
        mine = [(port, f, docking.port_pose(active.state, active.mass, part))
                for port, f, part in free]
        theirs = [(v, port, f, docking.port_pose(v.state, v.mass, part))
                  for v in others for port, f, part in self._ports(v) if not f['docked']]
        captured = None
        for port, fields, pose in mine:
            seen = [(docking.contact(pose, p), v, o) for v, o, f, p in theirs
                    if f['nodeType'] == fields['nodeType']]
            nearest = min(seen, key=lambda item: item[0].distance, default=None)
            state = docking.next_state(fields['state'], nearest[0] if nearest else None)
            if state == docking.DOCKER and captured is None:
                captured = (port, nearest[1], nearest[2])
            else:
                self.control.typed(active).set_port_state(port, state if state !=
                                                          docking.DOCKER else docking.ACQUIRE)
        for vessel, port, fields, pose in theirs:
            seen = [docking.contact(p, pose) for _, f, p in mine
                    if f['nodeType'] == fields['nodeType']]
            state = docking.next_state(fields['state'], min(
                seen, key=lambda c: c.distance, default=None))
            self.control.typed(vessel).set_port_state(
                port, docking.ACQUIRE if state == docking.DOCKER else state)
        if captured is not None:
            self._capture(*captured)

    def _capture(self, port: str, other, other_port: str) -> None:
        """Join ``other`` to the active vessel at the two ports (both report docked)."""
        active = self.world.active
        flight_ids = [self.control.typed(v).docking_fields(p)['partFlightId']
                      for v, p in ((active, port), (other, other_port))]
        indices = [next(i for i, p in enumerate(v.spec.parts) if p.flight_id == fid)
                   for v, fid in zip((active, other), flight_ids)]
        self.docked_identity[other.spec.parts[indices[1]].persistent_id] = (other.key,
                                                                             other.spec)
        self.world.dock(active.key, other.key, indices[0], indices[1])
        self._environment.pop(other.key, None)
        merged = self.control.docked(active, other)
        merged.set_docked(port, other_port, flight_ids[1], docking.DOCKER)
        merged.set_docked(other_port, port, flight_ids[0], docking.DOCKEE)
        self._follow_parts()

    def undock(self) -> None:
        """Split the active vessel at every port released by this frame's commands.

        The part of the pair further from the root leaves with everything beyond it, as
        the vessel it was before docking (its id, key and name) when the simulator docked
        it, pushed off with ``docking.UNDOCK_EJECTION_FORCE`` for the frame's integrated step
        (``World.frame_step``, as a separator's ejection); both ports
        are then ``Disengage``.
        """
        active = self.world.active
        for port, partner_flight_id in self.control.typed(active).take_released():
            parts = active.spec.parts
            own = self.control.typed(active).docking_fields(port)['partFlightId']
            a = next(i for i, p in enumerate(parts) if p.flight_id == own)
            b = next((i for i, p in enumerate(parts) if p.flight_id == partner_flight_id), None)
            if b is None:                # docked to nothing of this vessel (scenario start)
                continue
            child = b if parts[b].parent == a else a
            key, identity = self.docked_identity.pop(parts[child].persistent_id, (None, None))
            new_id = identity.vessel_id if identity is not None else self._new_id()
            impulse = -topology.push_impulse(docking.UNDOCK_EJECTION_FORCE,
                                             self.world.frame_step)
            new = self.world.separate(active.key, child, key or f'{active.key}:{new_id[:8]}',
                                      new_id, impulse, identity)
            self.control.topology_changed(active, [active, new])
            for vessel in (active, new):
                typed = self.control.typed(vessel)
                for other in typed.docking_ports():
                    if typed.docking_fields(other)['partFlightId'] in (own, partner_flight_id):
                        typed.set_port_state(other, docking.DISENGAGE)
                        typed.undock_port(other)
            self._follow_parts()
