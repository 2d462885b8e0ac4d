"""The mod's vehicle manager for the active vessel: authority, body wrench, safety, allocation.

``VehicleManager`` is what the mod's vehicle manager decides, frame by frame. It keeps what
is in force (the lease, the body wrench, the stock flight inputs, the typed actuator state
of each vessel) and has collaborators with one job each:

- ``command(packet, vessel, now, session)``: ``command_router.CommandRouter`` checks one
  decoded command datagram, hands what it accepts back here and returns the state packets
  that answer it (every refusal counted in ``refused`` by command type and reason; the
  separation operations in ``journal``). Stream ``attitude``: a body wrench and a flight
  command (``flight_control``) cancel each other, the newer accepted one acts.
- ``tick(vessel, now, dt)`` runs once per physics step: lease expiry, wrench and flight
  timeouts, emergency stop, then ``actuation.Actuation`` turns what is in force into the
  force and torque on the vessel (base_link: the modelled RCS nozzle and engine thrust plus
  the reaction-wheel torque; ``engine_thrust``, ``rcs_thrust``, ``wheel_torque`` and
  ``sas_torque`` are what the actuators gave), ``push_audit.PushAudit`` checks the safety
  invariant, and the engines and RCS burn their propellant (``propellant``). It returns
  the force, the torque and the packets to send: a ``pylon_wrench_status`` after each tick
  that allocated an accepted wrench. Reaction wheels give no torque while the vessel holds
  no ElectricCharge.

``achieved`` in the wrench status is rebuilt from the engine and RCS thrust of the
*previous* physics tick, as the mod does (reaction wheels excluded). Times (``now``) are
the simulator's wall clock; leases, timeouts and slew limits run on it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pylon_protocol import packets
from pylon_protocol.envelope import Envelope

from pylon_sim.game import propellant
from pylon_sim.game.world import SimVessel
from pylon_sim.mod import allocation
from pylon_sim.mod.actuation import Actuation
from pylon_sim.mod.authority import ControlAuthority
from pylon_sim.mod.command_router import CommandRouter, Packet
from pylon_sim.mod.flight_control import FlightControl
from pylon_sim.mod.push_audit import PushAudit
from pylon_sim.mod.safety import SafetyLimits
from pylon_sim.mod.typed_actuators import TypedActuators
from pylon_sim.mod.typed_common import clamp_timeout

ZERO = np.zeros(3)


def wire_wrench(force, torque) -> dict:
    """Return a wrench as the wire writes it."""
    return {'force': [float(v) for v in force], 'torque': [float(v) for v in torque]}


def _read(path: str) -> property:
    """Return a read-only property for ``self.<collaborator>.<name>`` (``path``)."""
    owner, name = path.split('.')
    return property(lambda self: getattr(getattr(self, owner), name),
                    doc=f'``{path}``, read-only.')


@dataclass
class WrenchCommand:
    """The accepted body wrench in force until its timeout."""

    identity: dict
    force: np.ndarray
    torque: np.ndarray
    expires: float


class VehicleManager:
    """Authority, the body wrench, the safety filter and the allocation of one game."""

    # what the collaborators keep, read under the names the simulator and its tests use
    refused = _read('router.refused')                   # (command type, reason) -> count
    journal = _read('router.journal')                   # separation operations and results
    safety = _read('actuation.safety')
    applied = _read('actuation.applied')                # everything acting now
    last_allocation = _read('actuation.last_allocation')
    engine_thrust = _read('actuation.engine_thrust')    # N per engine, last tick
    rcs_thrust = _read('actuation.rcs_thrust')          # N per RCS module, last tick
    wheel_torque = _read('actuation.wheel_torque')      # N·m the reaction wheels gave
    sas_torque = _read('actuation.sas_torque')          # N·m, the stock SAS's, last tick
    zeroed_at = _read('actuation.zeroed_at')            # clock of the last fail-safe stop
    unbacked_steps = _read('audit.unbacked_steps')      # must stay 0 (``push_audit``)
    unbacked_at = _read('audit.unbacked_at')
    pushed_steps = _read('audit.pushed_steps')
    pushed_at = _read('audit.pushed_at')
    pushing_since = _read('audit.pushing_since')
    commanded_steps = _read('audit.commanded_steps')

    def __init__(self, limits: SafetyLimits | None = None) -> None:
        """Start unowned, with no command and zero outputs."""
        self.limits = limits or SafetyLimits()
        self.authority = ControlAuthority()
        self.wrench: WrenchCommand | None = None
        self.last_reason = 'unowned'          # outcome of the last authority event
        self.typed_by_vessel: dict[str, TypedActuators] = {}
        self.flight = FlightControl()               # stock flight inputs and gear
        self.wrench_received_at: float | None = None   # clock of the last accepted wrench
        # clock of the owner's last accepted body wrench or typed actuator command (lockstep)
        self.paced_at: float | None = None
        self.paced_by: tuple | None = None      # the lease identity that sent it
        self.held = False     # a mission not started (or finished): every command refused
        self.router = CommandRouter(self)
        self.actuation = Actuation(self.limits)
        self.audit = PushAudit()

    # -- commands -------------------------------------------------------------------------
    def command(self, packet: dict, vessel: SimVessel, now: float,
                session: Envelope | None = None) -> list[Packet]:
        """Apply one command; return the state packets that answer it (``command_router``).

        ``session`` is the runtime envelope current now; separation operations need it
        (without it a separation is a plain typed command and gets no result).
        """
        return self.router.command(packet, vessel, now, session)

    def set_held(self, held: bool) -> None:
        """Refuse every command but authority ones and queries (``held``), or act again.

        A mission holds its vehicles until it starts and after it ends; holding ends every
        command in force and every typed override at once (leases stay).
        """
        self.held = held
        if held:
            self.end_commands()

    def accept_wrench(self, packet: dict, now: float) -> None:
        """Hold an accepted body wrench; it cancels a flight command (stream attitude)."""
        self.flight.clear()
        self.wrench = WrenchCommand(
            identity={k: packet[k] for k in ('vesselId', 'controllerId', 'leaseId',
                                             'sequence')},
            force=np.array(packet['force'], dtype=float),
            torque=np.array(packet['torque'], dtype=float),
            expires=now + clamp_timeout(packet.get('timeoutSeconds')))
        self.wrench_received_at = now
        self.paced(now)

    def paced(self, now: float) -> None:
        """Note the lease owner's command that paces a lock-step (a wrench, a typed one)."""
        self.paced_at, self.paced_by = now, self.authority.owner

    def accept_flight(self, packet: dict, vessel: SimVessel, now: float) -> None:
        """Hold accepted stock inputs; they cancel a body wrench (stream attitude)."""
        self.wrench = None
        self.flight.accept(packet, vessel.vessel_id, now)

    def refused_wrench(self, packet: dict, reason: str, vessel: SimVessel) -> Packet:
        """Return the ``pylon_wrench_status`` refusing a body wrench with ``reason``."""
        return self._status(packet, False, reason, vessel)

    def separated(self, name: str, resulting: list[str], session: Envelope,
                  now: float) -> list[Packet]:
        """Complete the operations on a separator whose split took effect; return results.

        ``session`` is the runtime session after the split's reset; ``resulting`` the
        vessels that own the original parts now (the active one first).
        """
        return self.router.separated(name, resulting, session, now)

    def topology_changed(self, vessel: SimVessel, pieces: list[SimVessel]) -> None:
        """Follow a split of ``vessel``: each piece keeps the lasting actuator state."""
        old = self.typed(vessel)
        for piece in pieces:
            self.typed_by_vessel[piece.vessel_id] = old.carried(piece.spec)

    def typed(self, vessel: SimVessel) -> TypedActuators:
        """Return the typed actuator state of a vessel (kept per vessel)."""
        found = self.typed_by_vessel.get(vessel.vessel_id)
        if found is None:
            found = self.typed_by_vessel[vessel.vessel_id] = TypedActuators(vessel.spec)
        return found

    def authority_state(self, vessel: SimVessel, now: float, reason: str,
                        event: bool = True) -> Packet:
        """Return the authority state packet with ``reason``.

        The reason of an authority ``event`` is remembered for the 10 Hz state; a typed
        refusal (``event`` false, ``packets.TYPED_REFUSAL_REASONS``) answers its command only.
        """
        if event:
            self.last_reason = reason
        return 'pylon_control_authority_state', self.authority.state(
            vessel.vessel_id, vessel.spec.name, now, reason)

    def flight_fields(self, now: float) -> dict:
        """Return the applied-input fields of ``pylon_flight_state`` at ``now``."""
        command, lease = self.flight.command, self.authority.lease
        active = (command is not None and now < command.expires
                  and not self.authority.emergency_stop and lease is not None
                  and lease.identity == command.identity and now < lease.expires_at)
        return self.flight.fields(now, active)

    def end_commands(self) -> None:
        """End every command in force and every typed override (lease gone, stop, switch)."""
        self._drop_commands()
        for typed in self.typed_by_vessel.values():
            typed.release_all()

    def _drop_commands(self) -> None:
        self.wrench = None
        self.flight.clear()

    # -- events ---------------------------------------------------------------------------
    def vessel_changed(self, vessel: SimVessel, now: float) -> list[Packet]:
        """End the lease when another vessel is active (an emergency stop stays latched)."""
        self._restart()
        reason = self.authority.vessel_changed(now)
        return [self.authority_state(vessel, now, reason or 'active_vessel_changed')]

    def session_changed(self, vessel: SimVessel, now: float) -> list[Packet]:
        """End the lease after a runtime reset of the same vessel."""
        self._restart()
        reason = self.authority.session_changed(now)
        return [self.authority_state(vessel, now, reason or 'runtime_session_changed')]

    def _restart(self) -> None:
        """End what is in force and forget the applied inputs and the filter's history."""
        self.end_commands()
        self.flight.new_session()
        self.actuation.restart()

    # -- physics tick ---------------------------------------------------------------------
    def expire(self, vessel: SimVessel, now: float) -> list[Packet]:
        """End a lease whose time ran out (also while paused: leases run on wall time).

        A flight command whose timeout is up ends here too.
        """
        self.flight.expire(now)
        self.actuation.rest()
        expired = self.authority.expire(now)
        if not expired:
            return []
        self.end_commands()
        return [self.authority_state(vessel, now, expired)]

    def tick(self, vessel: SimVessel, now: float, dt: float
             ) -> tuple[np.ndarray, np.ndarray, list[Packet]]:
        """Run one physics step of control; return (force, torque, packets)."""
        out = self.expire(vessel, now)
        command = self.wrench
        if command is not None and now >= command.expires:
            out.append(self._status(command.identity, False, 'command_timeout', vessel,
                                    command=command))
            self.wrench = None
        if self.authority.emergency_stop:
            self.end_commands()
        typed = self.typed(vessel)
        typed.tick(now, dt, vessel.spec.resource_totals(vessel.resources))
        command = self.wrench
        flight = self.flight.write(now) if command is None else None
        wanted = None if command is None else (command.force, command.torque)
        outcome = self.actuation.step(vessel, typed, wanted, flight,
                                      self.authority.sas_suppressed, now, dt)
        if outcome is not None:
            out.append(self._status(command.identity, True, outcome.reason, vessel,
                                    command=command, allocated=outcome.allocated,
                                    achieved=outcome.achieved))
        self._audit(typed, now)
        propellant.burn(vessel, self.engine_thrust, self.rcs_thrust, dt)
        return self.applied[0], self.applied[1], out

    def _audit(self, typed: TypedActuators, now: float) -> None:
        """Count the step in the push audit (``push_audit``: the invariant it checks)."""
        flight, lease, wrench = self.flight.command, self.authority.lease, self.wrench
        in_force = (wrench is not None or (flight is not None and now < flight.expires)
                    or typed.overriding())
        live = (lease is not None and now < lease.expires_at
                and not self.authority.emergency_stop
                and (wrench is None or now < wrench.expires))
        self.audit.step(now, self.actuation.quiet(), bool(in_force), live)

    def actuator_fields(self, vessel: SimVessel, actuator_id: str) -> dict:
        """Return the state fields the control decides for one actuator (merge them)."""
        return self.actuation.fields(vessel, self.typed(vessel), actuator_id)

    def status(self) -> dict:
        """Return the control state for the admin status (JSON-ready)."""
        owner = self.authority.owner
        return {
            'owner': list(owner) if owner else None,
            'emergency_stop': self.authority.emergency_stop,
            'sas_suppressed': self.authority.sas_suppressed,
            **self.actuation.status(),
            'wrench_received_at': self.wrench_received_at,
            'authority_command_at': self.router.authority_command_at,
            **self.audit.status(),
            'overriding': sorted(vessel_id for vessel_id, typed in self.typed_by_vessel.items()
                                 if typed.overriding()),
            'refused': {f'{kind}:{reason}': count
                        for (kind, reason), count in self.refused.items()},
        }

    def _status(self, identity: dict, accepted: bool, reason: str, vessel: SimVessel, *,
                command: WrenchCommand | None = None, allocated=None, achieved=None) -> Packet:
        """Return a ``pylon_wrench_status`` (requested echoes the command)."""
        if command is not None:
            requested = (command.force, command.torque)
        else:
            requested = (np.array(identity.get('force', ZERO), dtype=float),
                         np.array(identity.get('torque', ZERO), dtype=float))
            if not (np.all(np.isfinite(requested[0])) and np.all(np.isfinite(requested[1]))):
                requested = (ZERO, ZERO)
        allocated = allocated or (ZERO, ZERO)
        achieved = achieved or (ZERO, ZERO)
        r = allocation.ratios(requested, allocated, achieved, self.limits.max_force_n,
                              self.limits.max_torque_nm)
        sequence = identity.get('sequence', 0)
        return 'pylon_wrench_status', {
            'vesselId': vessel.vessel_id, 'controllerId': identity.get('controllerId', ''),
            'leaseId': identity.get('leaseId', ''),
            'sequence': sequence if isinstance(sequence, int) and sequence >= 0 else 0,
            'accepted': accepted, 'reason': reason,
            'requested': wire_wrench(*requested), 'allocated': wire_wrench(*allocated),
            'achieved': wire_wrench(*achieved),
            'allocationResidual': wire_wrench(*r['allocationResidual']),
            'trackingResidual': wire_wrench(*r['trackingResidual']),
            'saturationRatio': float(r['saturationRatio']),
            'trackingErrorRatio': float(r['trackingErrorRatio']),
            'saturated': bool(r['saturated']),
            'achievedQuality': packets.ACHIEVED_QUALITY,
        }

    def docked(self, vessel: SimVessel, other: SimVessel) -> TypedActuators:
        """Follow ``other`` docking to ``vessel``: return the joined vessel's actuator state.

        It carries both vessels' lasting state (``TypedActuators.carried``); ``other``'s
        is dropped with the vessel.
        """
        merged = self.typed(vessel).carried(vessel.spec, self.typed(other))
        self.typed_by_vessel[vessel.vessel_id] = merged
        self.typed_by_vessel.pop(other.vessel_id, None)
        return merged

    def forget_vessels(self) -> None:
        """Drop every vessel's actuator state (a revert: each as the scenario has it)."""
        self.typed_by_vessel.clear()
