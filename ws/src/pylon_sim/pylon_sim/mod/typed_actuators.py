"""Typed actuator overrides of the active vessel, as the mod keeps them on the KSP side.

A typed command names one actuator (engine, RCS module, wheel, separator, servo motor) or
one docking port. The caller has already checked the authority (lease, sequence, vessel);
``TypedActuators`` applies the accepted command and keeps its effect until the command's
timeout, a newer command for the same actuator, or ``release_all``. Nothing here does I/O
or reads a clock: ``now`` (simulator seconds) and ``dt`` are passed in.

``TypedActuators`` finds the actuators and hands each command to the family of its
actuator, which says what the command does and which module settings it reads:

* engines and their gimbals: ``typed_engines``;
* RCS modules and wheels: ``typed_rcs_wheels``;
* servos: ``typed_servos``;
* separators (decouplers, fairings, launch clamps): ``typed_separators``;
* docking ports and the docking camera: ``typed_docking``.

Timeouts
    ``timeoutSeconds`` is clamped to 0.05–10 s; zero, negative, non-finite or missing
    means 0.5 s (``clamp_timeout``). An override given at ``now`` is in force while
    ``t < now + timeout`` and ends at the first ``tick`` (or ``command``) whose time
    reaches ``now + timeout``.

Command fields and module settings
    A command field of the wrong type or out of range refuses the command
    (``invalid_command``, ``typed_common``); a module setting of the wrong type is its
    default (``vessel.flag_setting``, ``vessel.number_setting``: the allocation reads the
    same settings by the same rule). Unknown settings are ignored.

``release_all`` (lease loss, emergency stop, vessel switch) ends every override at once:
engine throttles back to their stock independent throttle and gimbals neutral at once,
RCS, wheels and servos back to stock (servos hold their position). Ignition switches,
fired separators, docking and the selected docking camera are not overrides and stay.

``carried(spec)`` (after a topology change) is a new instance for the changed vessel that
keeps the state of the actuators still in it.
"""

from __future__ import annotations

from pylon_sim.game.docking import DOCKER
from pylon_sim.game.parts import Actuator, actuators_of
from pylon_sim.game.vessel import VesselSpec
from pylon_sim.mod.typed_common import (
    ACCEPTED,
    clamp_timeout,
    command_sequence,
    EXHAUSTED,
    InvalidCommandError,
)
from pylon_sim.mod.typed_docking import ACTIONS, DockingPorts
from pylon_sim.mod.typed_engines import Engines
from pylon_sim.mod.typed_rcs_wheels import Rcs, Wheels
from pylon_sim.mod.typed_separators import Separators
from pylon_sim.mod.typed_servos import Servos


class TypedActuators:
    """The KSP-side state of the typed actuator overrides of one vessel."""

    def __init__(self, spec: VesselSpec) -> None:
        self.spec = spec
        self._actuators: dict[str, Actuator] = {a.name: a for a in actuators_of(spec)}

        def of(kind: str) -> list[Actuator]:
            return [a for a in self._actuators.values() if a.actuator_type == kind]

        self._engines = Engines(of('engine'))
        self._rcs = Rcs(of('rcs'))
        self._wheels = Wheels(of('wheel'))
        self._servos = Servos(of('motor'))
        self._separators = Separators(spec, of('separation'))
        self._ports = DockingPorts(spec)
        self._families = {'engine': self._engines, 'rcs': self._rcs, 'wheel': self._wheels,
                          'motor': self._servos, 'separation': self._separators}
        self._timed = (self._engines, self._rcs, self._wheels, self._servos)

    # ---------------------------------------------------------------- commands

    def command(self, packet: dict, now: float) -> str:
        """
        Apply an accepted ``pylon_actuator_command`` or ``pylon_motor_command``.

        ``packet`` is the decoded command with wire field names. Return
        ``command_accepted`` or the reason it was refused (``unknown_actuator``,
        ``actuator_kind_mismatch``, ``invalid_command``, ``engine_cannot_restart``,
        ``engine_cannot_shut_down``, ``throttle_locked``, ``already_separated``,
        ``nothing_beyond``); a refused command changes nothing.
        """
        self._expire(now)
        motor = packet.get('type') == 'pylon_motor_command' or (
            'actuatorType' not in packet and 'mode' in packet)
        kind = 'motor' if motor else packet.get('actuatorType')
        name = packet.get('name')
        actuator = self._actuators.get(name) if isinstance(name, str) else None
        if actuator is None:
            return 'unknown_actuator'
        if actuator.actuator_type != kind:
            return 'actuator_kind_mismatch'
        try:
            sequence = command_sequence(packet)
            expires = now + clamp_timeout(packet.get('timeoutSeconds'))
            result = self._families[kind].command(name, packet, sequence, expires)
        except InvalidCommandError:
            return 'invalid_command'
        self._engines.sync()
        return result

    def docking(self, packet: dict, now: float) -> str:
        """
        Apply an accepted ``pylon_docking_port_command``.

        Return ``command_accepted``, ``unknown_docking_port``, ``invalid_command`` or
        ``not_docked`` (release of a port that is not docked).
        """
        name = packet.get('name')
        if not isinstance(name, str) or name not in self._ports.ports:
            return 'unknown_docking_port'
        action = packet.get('action')
        if isinstance(action, bool) or action not in ACTIONS:
            return 'invalid_command'
        if not self._ports.act(name, action):
            return 'not_docked'
        return ACCEPTED

    def take_fired(self) -> list[str]:
        """Return the separators fired since the last call, in firing order (once)."""
        return self._separators.take_fired()

    def carried(self, spec: VesselSpec, *others: TypedActuators) -> TypedActuators:
        """Return the actuator state of ``spec`` (a changed vessel) for the actuators in it.

        Everything of an actuator still in ``spec`` carries over from this vessel and
        ``others`` (the vessel docked to it): switches, overrides, gimbal positions, servo
        motion, fired separators, docking; the runtime-session reset that follows a
        topology change then releases the overrides as usual.
        """
        new = TypedActuators(spec)
        for source in (*reversed(others), self):
            for family, old in zip(new._all(), source._all()):
                family.carry_from(old)
        return new

    def _all(self) -> tuple:
        return (self._engines, self._rcs, self._wheels, self._servos, self._separators,
                self._ports)

    # ---------------------------------------------------------------- docking events

    def set_docked(self, port_id: str, partner_name: str = '',
                   partner_part_flight_id: int = 0, state: str = DOCKER) -> None:
        """Record that a port has docked (the simulator's docking event)."""
        self._ports.set_docked(port_id, partner_name, partner_part_flight_id, state)

    def set_port_state(self, port_id: str, state: str) -> None:
        """Set a free port's ``docking`` state (Ready, Acquire, Disengage)."""
        self._ports.ports[port_id].state = state

    def undock_port(self, port_id: str) -> None:
        """Record that a port's partner left (undocked from the other side)."""
        self._ports.ports[port_id].part_from_partner()

    def take_released(self) -> list[tuple[str, int]]:
        """Return the ports released since the last call, with their partner part (once)."""
        return self._ports.take_released()

    # ---------------------------------------------------------------- time

    def tick(self, now: float, dt: float, resources: dict[str, float]) -> None:
        """
        Advance by ``dt`` to ``now``: servo and gimbal motion, timeouts, flameouts.

        ``resources`` are the vessel's totals by resource name. Motion over ``dt`` uses the
        commands in force before ``now``; overrides whose time is up at ``now`` then end.
        """
        dt = max(0.0, float(dt))
        self._servos.tick(now, dt, resources.get('ElectricCharge', 0.0) > EXHAUSTED)
        self._engines.tick(now, dt, resources)
        self._rcs.expire(now)
        self._wheels.expire(now)

    def _expire(self, now: float) -> None:
        for family in self._timed:
            family.expire(now)

    def overriding(self) -> bool:
        """Tell whether any command is in force: an engine, RCS, wheel or servo override."""
        return any(family.overriding() for family in self._timed)

    def release_all(self) -> None:
        """End every override at once (lease loss, emergency stop, vessel switch)."""
        for family in self._timed:
            family.release()

    # ---------------------------------------------------------------- outputs

    def independent_throttle(self, engine_id: str) -> float:
        """Return an engine's independent throttle: the override's, else the stock one."""
        return self._engines.engines[engine_id].throttle

    def engine_thrust(self) -> dict[str, float]:
        """
        Return N per engine whose thrust is decided here instead of by the allocation.

        These are the engines with a thrust override, throttle-locked engines and engines
        with a non-zero stock independent throttle; 0 while not operational.
        """
        return self._engines.thrust()

    def engine_gimbal(self) -> dict[str, tuple[float, float, float]]:
        """Return each gimballed engine's current gimbal input (pitch, yaw, roll)."""
        return self._engines.gimbal_inputs()

    def allocatable_engines(self) -> set[str]:
        """Return the engines the body-wrench allocation may throttle."""
        return self._engines.allocatable()

    def rcs_settings(self) -> dict[str, dict]:
        """Return ``{'enabled', 'thrust_limit'}`` (N per nozzle) per RCS module."""
        return self._rcs.settings()

    def wheel_settings(self) -> dict[str, dict]:
        """Return each wheel's drive settings: the override's, else stock."""
        return self._wheels.settings()

    def wheel_inputs(self) -> dict[str, dict]:
        """Return ``wheel_settings`` with ``commanded`` (a command in force) for the physics."""
        return self._wheels.inputs()

    def servo_positions(self) -> dict[str, float]:
        """Return each servo's position (rad | m)."""
        return self._servos.positions()

    def separated_ids(self) -> set[str]:
        """Return the separators that have fired."""
        return set(self._separators.separated)

    def undocked_ports(self) -> set[str]:
        """Return the docking ports released by command."""
        return set(self._ports.undocked)

    def camera_port(self) -> str | None:
        """Return the docking port whose camera streams, if any."""
        return self._ports.camera

    def override_sequence(self, actuator_id: str) -> int | None:
        """Return the sequence of the newest override in force on an actuator."""
        actuator = self._actuators.get(actuator_id)
        if actuator is None:
            return None
        return self._families[actuator.actuator_type].sequence(actuator_id)

    def state_fields(self, actuator_id: str) -> dict:
        """
        Return the wire fields to merge into an actuator's state payload.

        Engines report ``throttle`` and ``thrust`` only while their thrust is decided here
        (see ``engine_thrust``); otherwise the allocation's values stand. Raise KeyError
        for an unknown id.
        """
        kind = self._actuators[actuator_id].actuator_type
        return self._families[kind].fields(actuator_id)

    def docking_ports(self) -> list[str]:
        """Return the ids of the vessel's docking ports, in part order."""
        return list(self._ports.ports)

    def docking_fields(self, port_id: str) -> dict:
        """Return the ``pylon_docking_port_state`` fields of a port (KeyError if unknown)."""
        return self._ports.fields(port_id)
