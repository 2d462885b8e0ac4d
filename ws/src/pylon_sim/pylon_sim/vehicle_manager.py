"""The mod's vehicle manager for the active vessel: authority, body wrench, safety, allocation.

``VehicleManager`` is what the mod's vehicle manager decides, frame by frame:

- ``command(packet, vessel, now, session)`` takes one decoded command datagram (already
  past the runtime-session check) and returns the state packets it answers with: every
  authority command gets a ``pylon_control_authority_state`` with the outcome as
  ``reason``; a refused body wrench a ``pylon_wrench_status`` with ``accepted`` false; a
  refused actuator, flight or batch command an authority state carrying the failure
  reason (every refusal is counted in ``refused`` by command type and reason); a
  separation operation or query a ``pylon_separation_result`` (``separation_journal``;
  a separator that fired gets its result from ``separated`` once the simulator has split
  the vessel, in the session after the split).
- Stream ``attitude``: a body wrench and a flight command (``flight_control``) cancel each
  other, the newer accepted one acts. A ``pylon_control_batch`` is checked once (its
  sequence, stream ``batch``) and then applied in one go before the next physics step:
  optional lease renewal (answered ``lease_renewed``), flight inputs, engines in array
  order, separation last.
- ``tick(vessel, now, dt)`` runs once per physics step: lease expiry, wrench and flight
  timeouts, emergency stop, then the safety filter (``safety``) and the allocation
  (``allocation``) of the current wrench, or the stock flight inputs. It returns the force
  and torque acting on the vessel (base_link: the modelled RCS nozzle and engine thrust
  plus the reaction-wheel torque) and the packets to send: a ``pylon_wrench_status`` after
  each tick that allocated an accepted wrench. Reaction wheels give no torque while the
  vessel holds no ElectricCharge; ``wheel_torque`` is what they gave (for their draw).

``achieved`` in the wrench status is rebuilt from the engine and RCS thrust of the
*previous* physics tick, as the mod does (reaction wheels excluded). Times (``now``) are
the simulator's wall clock; leases, timeouts and slew limits run on it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from pylon_protocol import names, packets
from pylon_protocol.envelope import Envelope

from pylon_sim import allocation, safety
from pylon_sim.authority import ControlAuthority, Decision
from pylon_sim.flight_control import FlightControl, stock_input_wrench
from pylon_sim.safety import SafetyLimits
from pylon_sim.separation_journal import operation_of, refusal, SeparationJournal
from pylon_sim.typed_actuators import ACCEPTED, clamp_timeout, TypedActuators
from pylon_sim.vessel import mass_properties, RESOURCE_DENSITY
from pylon_sim.world import SimVessel

ZERO = np.zeros(3)
Packet = tuple[str, dict]
HELD = packets.SIMULATION_HELD    # the refusal of a command while the mission holds
SEPARATION_RESULT = 'pylon_separation_result'
#: a separator's typed outcome -> the operation's result reason
SEPARATION_OUTCOMES = {ACCEPTED: 'pending', 'already_separated': 'actuator_unavailable',
                       'nothing_beyond': 'nothing_beyond',
                       'unknown_actuator': 'actuator_not_found',
                       'actuator_kind_mismatch': 'actuator_not_found'}


G0 = 9.80665                       # m/s², KSP's standard gravity for Isp
SAS_TIME_CONSTANT_SEC = 1.0        # the stock SAS damps body rates with this time constant
EMPTY = 1e-9
# propellant units an engine burns, in KSP's mixture (LiquidFuel : Oxidizer = 0.9 : 1.1)
LIQUID_MIXTURE = (('LiquidFuel', 0.9), ('Oxidizer', 1.1))


def _draw(vessel: SimVessel, resource: str, units: float) -> None:
    """Take ``units`` of a resource from the vessel's parts, first part first."""
    for key in sorted(k for k in vessel.resources if k[1] == resource):
        if units <= 0.0:
            return
        taken = min(vessel.resources[key], units)
        vessel.resources[key] -= taken
        units -= taken


def burn(vessel: SimVessel, engine_thrust: dict[str, float], rcs_thrust: dict[str, float],
         dt: float) -> bool:
    """Consume the propellant of one physics step; return whether any was burned.

    Mass flow = thrust / (Isp × g0) for each engine (LiquidFuel and Oxidizer in KSP's
    mixture; SolidFuel for a throttle-locked engine) and each RCS module (MonoPropellant),
    drawn from any part that holds it (full crossfeed). The vessel's mass properties
    follow, so the centre of mass moves as the tanks drain.
    """
    if not engine_thrust and not rcs_thrust:
        return False
    flows: dict[str, float] = {}
    for part in vessel.spec.parts:
        for module in part.modules:
            if module.kind not in ('engine', 'rcs'):
                continue
            ident = names.actuator_name(module.kind, part.persistent_id, part.flight_id,
                                        module.module_index)
            thrust = (engine_thrust if module.kind == 'engine' else rcs_thrust).get(ident, 0.0)
            isp = float(module.get('isp', 0.0) or 0.0)
            if thrust <= 0.0 or isp <= 0.0:
                continue
            kilograms = thrust / (isp * G0) * dt
            if module.kind == 'rcs':
                mixture = (('MonoPropellant', 1.0),)
            elif module.get('throttle_locked'):
                mixture = (('SolidFuel', 1.0),)
            else:
                mixture = LIQUID_MIXTURE
            total = sum(share for _, share in mixture)
            for resource, share in mixture:
                density = RESOURCE_DENSITY[resource]
                flows[resource] = flows.get(resource, 0.0) + \
                    kilograms * share / total / density
    for resource, units in flows.items():
        _draw(vessel, resource, units)
    if flows:
        vessel.mass = mass_properties(vessel.spec, vessel.resources)
    return bool(flows)


def _module_thrust(nozzles: list[allocation.Nozzle], thrust) -> dict[str, float]:
    """Return the thrust (N) of each RCS module, summed over its nozzles."""
    out: dict[str, float] = {}
    for nozzle, value in zip(nozzles, thrust):
        out[nozzle.module] = out.get(nozzle.module, 0.0) + float(value)
    return out


def wire_wrench(force, torque) -> dict:
    """Return a wrench as the wire writes it."""
    return {'force': [float(v) for v in force], 'torque': [float(v) for v in torque]}


@dataclass
class WrenchCommand:
    """The accepted body wrench in force until its timeout."""

    identity: dict
    force: np.ndarray
    torque: np.ndarray
    expires: float


class VehicleManager:
    """Authority, the body wrench, the safety filter and the allocation of one game."""

    def __init__(self, limits: SafetyLimits | None = None) -> None:
        """Start unowned, with no command and zero outputs."""
        self.limits = limits or SafetyLimits()
        self.authority = ControlAuthority()
        self.safety = safety.zero_state()
        self.wrench: WrenchCommand | None = None
        self.measured = (ZERO, ZERO)          # engine + RCS wrench of the last tick
        self.applied = (ZERO, ZERO)           # everything acting now, wheels included
        self.last_allocation: allocation.Allocation | None = None
        self.last_reason = 'unowned'          # outcome of the last authority event
        self._allocator_key = None
        self._allocator_cache: allocation.Allocator | None = None
        self._engines: list[allocation.Engine] = []     # every engine, with the allocator
        self._ids: tuple = (None, ([], []))             # (spec, (engine ids, wheel ids))
        self.typed_by_vessel: dict[str, TypedActuators] = {}
        self.typed_refused: Counter = Counter()     # typed commands the vessel refused
        self.refused: Counter = Counter()           # (command type, reason) of every refusal
        self.flight = FlightControl()               # stock flight inputs and gear
        self.journal = SeparationJournal()          # separation operations and results
        self.wheel_torque = ZERO                    # N·m the reaction wheels gave, last tick
        self.rcs_thrust: dict[str, float] = {}      # N per RCS module, last tick
        self.engine_thrust: dict[str, float] = {}   # N per engine, last tick
        self.sas_torque = ZERO                      # N·m, the stock SAS's, last tick
        self.wrench_received_at: float | None = None   # clock of the last accepted wrench
        # clock of the last fail-safe stop: a tick with neither a wrench nor flight inputs in
        # force after one that applied a wrench (what acts stays: stock engines, the SAS)
        self.zeroed_at: float | None = None
        self.authority_command_at: float | None = None  # clock of the last authority command
        self.held = False     # a mission not started (or finished): every command refused
        self.unbacked_steps = 0               # steps that pushed without backing (``_audit``)
        self.unbacked_at: float | None = None   # clock of the first such step
        self.pushed_at: float | None = None       # clock of the last step that pushed
        self.pushing_since: float | None = None   # first step of the pushing run (None: quiet)
        self.pushed_steps = 0                     # steps that pushed (``_audit``)
        self.commanded_steps = 0                  # steps with a command in force

    # -- commands -------------------------------------------------------------------------
    def command(self, packet: dict, vessel: SimVessel, now: float,
                session: Envelope | None = None) -> list[Packet]:
        """Apply one command; return the state packets that answer it.

        ``session`` is the runtime envelope current now; separation operations need it
        (without it a separation is a plain typed command and gets no result).
        """
        kind = packet['type']
        if kind == 'pylon_control_authority_command':
            return self._authority_command(packet, vessel, now)
        if kind == 'pylon_separation_query':
            return [(SEPARATION_RESULT, self.journal.query(packet, now))]
        if self.held:
            return self._held(packet, vessel, now, session)
        if kind == 'pylon_control_batch':
            return self._batch(packet, vessel, now, session)
        if packet.get('actuatorType') == 'separation' and packet.get('separate') is True:
            return self._separation(packet, vessel, now, session)
        decision = self.authority.check(packet, vessel.vessel_id, now)
        if not decision.accepted:
            if kind == 'pylon_body_wrench_command':
                self.refused[(kind, decision.reason)] += 1
                return [self._status(packet, False, decision.reason, vessel)]
            return self._refused(kind, decision.reason, vessel, now)
        if kind == 'pylon_body_wrench_command':
            self._accept_wrench(packet, now)
            return []
        if kind == 'pylon_flight_control_command':
            self._accept_flight(packet, vessel, now)
            return []
        typed = self.typed(vessel)
        if kind == 'pylon_docking_port_command':
            return self._typed_answer(kind, typed.docking(packet, now), vessel, now)
        return self._typed_answer(kind, typed.command(packet, now), vessel, now)

    def set_held(self, held: bool) -> None:
        """Refuse every command but authority ones and queries (``held``), or act again.

        A mission holds its vehicles until it starts and after it ends; holding ends every
        command in force and every typed override at once (leases stay).
        """
        self.held = held
        if held:
            self._drop_commands()
            self._release_overrides()

    def _held(self, packet: dict, vessel: SimVessel, now: float,
              session: Envelope | None) -> list[Packet]:
        """Refuse a command while held: ``simulation_held``, unless the lease refuses first.

        The authority still checks it (its sequence counts); the answer is the one a refusal
        of that command gets: a wrench status, or an authority state for the command only,
        and a separation operation's result.
        """
        kind = packet['type']
        decision = self.authority.check(packet, vessel.vessel_id, now)
        reason = HELD if decision.accepted else decision.reason
        self.refused[(kind, reason)] += 1
        if kind == 'pylon_body_wrench_command':
            return [self._status(packet, False, reason, vessel)]
        out = [self.authority_state(vessel, now, reason, event=reason != HELD)]
        separation = (packets.batch_members(packet)['separation']
                      if kind == 'pylon_control_batch' else
                      packet if packet.get('actuatorType') == 'separation'
                      and packet.get('separate') is True else None)
        operation = (operation_of(separation, session)
                     if separation is not None and session is not None else None)
        if operation is not None:
            out.append((SEPARATION_RESULT, refusal(operation, reason)))
        return out

    def _authority_command(self, packet: dict, vessel: SimVessel, now: float) -> list[Packet]:
        self.authority_command_at = now
        before = self.authority.owner
        decision = self.authority.command(packet, vessel.vessel_id, now)
        # what is in force is the owner's: it ends with the lease, released, run out, cut
        # by an emergency stop or preempted by another owner
        if self.authority.emergency_stop or not self.authority.owned \
                or self.authority.owner != before:
            self._drop_commands()
            self._release_overrides()
        return [self.authority_state(vessel, now, decision.reason)]

    def _accept_wrench(self, packet: dict, now: float) -> None:
        """Hold an accepted body wrench; it cancels a flight command (stream attitude)."""
        self.flight.clear()
        self.wrench = WrenchCommand(
            identity={k: packet[k] for k in ('vesselId', 'controllerId', 'leaseId',
                                             'sequence')},
            force=np.array(packet['force'], dtype=float),
            torque=np.array(packet['torque'], dtype=float),
            expires=now + clamp_timeout(packet.get('timeoutSeconds')))
        self.wrench_received_at = now

    def _accept_flight(self, packet: dict, vessel: SimVessel, now: float) -> None:
        """Hold accepted stock inputs; they cancel a body wrench (stream attitude)."""
        self.wrench = None
        self.flight.accept(packet, vessel.vessel_id, now)

    def _refused(self, kind: str, reason: str, vessel: SimVessel, now: float) -> list[Packet]:
        """Count a refused command and answer it with an authority state."""
        self.refused[(kind, reason)] += 1
        return [self.authority_state(vessel, now, reason)]

    def _typed_result(self, kind: str, result: str) -> str:
        if result != ACCEPTED:
            self.typed_refused[result] += 1
            self.refused[(kind, result)] += 1
        return result

    def _typed_answer(self, kind: str, result: str, vessel: SimVessel,
                      now: float) -> list[Packet]:
        """Answer a typed command the vessel refused with an authority state (counted).

        The reason is the vessel's (``unknown_actuator``, ``invalid_command``, ...: one of
        ``packets.TYPED_REFUSAL_REASONS``); it is not remembered as the last authority event.
        An accepted command gets no answer.
        """
        if self._typed_result(kind, result) == ACCEPTED:
            return []
        return [self.authority_state(vessel, now, result, event=False)]

    def _batch(self, packet: dict, vessel: SimVessel, now: float,
               session: Envelope | None) -> list[Packet]:
        """Apply a ``pylon_control_batch`` in one go: renewal, flight, engines, separation.

        The members were checked with the batch on decoding (a bad one drops the whole
        batch there); the batch's sequence is checked once, on stream ``batch``, and the
        members are applied as their single commands would be, in the mod's order.
        """
        kind = packet['type']
        members = packets.batch_members(packet)
        separation = members['separation']
        decision = self.authority.check(packet, vessel.vessel_id, now)
        if not decision.accepted:
            out = self._refused(kind, decision.reason, vessel, now)
            operation = (operation_of(separation, session)
                         if separation is not None and session is not None else None)
            if operation is not None:
                out.append((SEPARATION_RESULT, refusal(operation, decision.reason)))
            return out
        out: list[Packet] = []
        if packet['renewLease']:
            renewal = self.authority.renew_in_batch(packet, now)
            out.append(self.authority_state(vessel, now, renewal.reason))
        if members['flight'] is not None:
            self._accept_flight(members['flight'], vessel, now)
        typed = self.typed(vessel)
        for engine in members['engines']:
            out += self._typed_answer('pylon_actuator_command', typed.command(engine, now),
                                      vessel, now)
        if separation is not None:
            out += self._separation(separation, vessel, now, session, decision)
        return out

    def _separation(self, packet: dict, vessel: SimVessel, now: float,
                    session: Envelope | None, decision: Decision | None = None
                    ) -> list[Packet]:
        """Carry out a separation operation once and answer with its result (journal)."""
        kind = 'pylon_actuator_command'
        operation = operation_of(packet, session) if session is not None else None
        entry = self.journal.lookup(operation.key, now) if operation is not None else None
        if entry is not None:
            if entry.operation.fingerprint != operation.fingerprint:
                self.refused[(kind, 'operation_id_conflict')] += 1
                return [(SEPARATION_RESULT, refusal(operation, 'operation_id_conflict'))]
            return [(SEPARATION_RESULT, self.journal.result(entry, now))]
        decision = decision or self.authority.check(packet, vessel.vessel_id, now)
        if not decision.accepted:
            out = self._refused(kind, decision.reason, vessel, now)
            if operation is not None:
                out.append((SEPARATION_RESULT, refusal(operation, decision.reason)))
            return out
        if operation is None:
            self._typed_result(kind, self.typed(vessel).command(packet, now))
            return []
        entry = self.journal.begin(operation, now)
        if entry is None:
            self.refused[(kind, 'result_journal_full')] += 1
            return [(SEPARATION_RESULT, refusal(operation, 'result_journal_full'))]
        outcome = self._typed_result(kind, self.typed(vessel).command(packet, now))
        if outcome == ACCEPTED:       # fired: the result follows the split (``separated``)
            return []
        self.journal.complete(entry, False,
                              SEPARATION_OUTCOMES.get(outcome, 'separation_exception'),
                              session, now)
        return [(SEPARATION_RESULT, self.journal.result(entry, now))]

    def separated(self, name: str, resulting: list[str], session: Envelope,
                  now: float) -> list[Packet]:
        """Complete the operations on a separator whose split took effect; return results.

        ``session`` is the runtime session after the split's reset; ``resulting`` the
        vessels that own the original parts now (the active one first).
        """
        out = []
        for entry in self.journal.pending(name):
            self.journal.complete(entry, True, 'separated', session, now, resulting)
            out.append((SEPARATION_RESULT, self.journal.result(entry, now)))
        return out

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

    def _drop_commands(self) -> None:
        self.wrench = None
        self.flight.clear()

    def _release_overrides(self) -> None:
        """End every typed override (lease gone, emergency stop, vessel switch)."""
        for typed in self.typed_by_vessel.values():
            typed.release_all()

    # -- events ---------------------------------------------------------------------------
    def vessel_changed(self, vessel: SimVessel, now: float) -> list[Packet]:
        """End the lease when another vessel is active (an emergency stop stays latched)."""
        self._drop_commands()
        self._release_overrides()
        self.flight.new_session()
        self.safety = safety.zero_state()
        reason = self.authority.vessel_changed(now)
        return [self.authority_state(vessel, now, reason or 'active_vessel_changed')]

    def session_changed(self, vessel: SimVessel, now: float) -> list[Packet]:
        """End the lease after a runtime reset of the same vessel."""
        self._drop_commands()
        self._release_overrides()
        self.flight.new_session()
        self.safety = safety.zero_state()
        reason = self.authority.session_changed(now)
        return [self.authority_state(vessel, now, reason or 'runtime_session_changed')]

    # -- physics tick ---------------------------------------------------------------------
    def expire(self, vessel: SimVessel, now: float) -> list[Packet]:
        """End a lease whose time ran out (also while paused: leases run on wall time).

        A flight command whose timeout is up ends here too.
        """
        self.flight.expire(now)
        self.wheel_torque = ZERO
        expired = self.authority.expire(now)
        if not expired:
            return []
        self._drop_commands()
        self._release_overrides()
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
            self._drop_commands()
            self._release_overrides()
        typed = self.typed(vessel)
        typed.tick(now, dt, vessel.spec.resource_totals(vessel.resources))
        allocator, engines = self._allocator(vessel, typed)
        fixed = self._typed_engines(typed, engines)
        self.sas_torque = self._sas(vessel, allocator)
        if self.wrench is None:
            self._tick_without_wrench(allocator, fixed, now, dt)
        else:
            out.append(self._tick_wrench(vessel, allocator, fixed, dt))
        self._audit(typed, fixed, now)
        burn(vessel, self.engine_thrust, self.rcs_thrust, dt)
        return self.applied[0], self.applied[1], out

    def _audit(self, typed: TypedActuators, fixed: tuple, now: float) -> None:
        """Count a physics step that pushes without a live lease and a command in force.

        The invariant every fault must keep: a command in force (a body wrench, stock
        flight inputs or a typed override) has a live lease, no emergency stop, and has not
        timed out; with none in force, nothing commanded acts (the engine wrench is only
        what no command decides: stock and throttle-locked engines; the reaction wheels
        give only the SAS's torque). ``unbacked_steps`` must stay 0; the control law above
        keeps it so, this checks it independently of how.

        It also counts the steps with a command in force (``commanded_steps``, zeros
        included), and notes each step that pushed (a commanded output acted: the engine
        and RCS wrench beyond what no command decides, or the reaction wheels beyond the
        SAS): ``pushed_steps``, ``pushed_at`` (the last such step) and ``pushing_since``
        (the first of the steps pushing up to now; None once a step did not). A paused or
        unavailable frame runs no step: it pushes nothing and changes none of them.
        """
        quiet = (np.array_equal(self.measured[0], fixed[0])
                 and np.array_equal(self.measured[1], fixed[1])
                 and np.array_equal(self.wheel_torque, self.sas_torque))
        if quiet:
            self.pushing_since = None
        else:
            self.pushed_steps += 1
            self.pushed_at = now
            self.pushing_since = now if self.pushing_since is None else self.pushing_since
        flight = self.flight.command
        wrench = self.wrench is not None
        in_force = wrench or (flight is not None and now < flight.expires) or typed.overriding()
        if in_force:
            self.commanded_steps += 1
            lease = self.authority.lease
            backed = (lease is not None and now < lease.expires_at
                      and not self.authority.emergency_stop
                      and (not wrench or now < self.wrench.expires))
        else:
            backed = quiet
        if not backed:
            self.unbacked_steps += 1
            self.unbacked_at = self.unbacked_at if self.unbacked_at is not None else now

    def _tick_without_wrench(self, allocator: allocation.Allocator, fixed: tuple,
                             now: float, dt: float) -> None:
        """Act without a body wrench: typed engines, SAS and the stock flight inputs.

        With neither a wrench nor a flight command in force (none yet, timed out, lease
        gone, emergency stop) the commanded output stops at once, without a slew ramp:
        the fail-safe path.
        """
        force, torque, self.engine_thrust = fixed
        self.safety = safety.idle(self.safety, self.limits, dt)
        flight = self.flight.write(now)
        wheel = ZERO
        self.rcs_thrust = {}
        if flight is None:
            if np.any(self.applied[0]) or np.any(self.applied[1]):
                self.zeroed_at = now
            self.last_allocation = None
        else:
            stock = stock_input_wrench(flight.pitch, flight.yaw, flight.roll, allocator)
            force, torque = force + stock.force, torque + stock.torque - stock.wheel_torque
            wheel = stock.wheel_torque
            self.rcs_thrust = _module_thrust(allocator.nozzles, stock.nozzle_thrust)
            self.last_allocation = None
        self.measured = (force, torque)
        self.wheel_torque = wheel + self.sas_torque
        self.applied = (force, torque + self.wheel_torque)

    def _tick_wrench(self, vessel: SimVessel, allocator: allocation.Allocator, fixed: tuple,
                     dt: float) -> Packet:
        """Act on the body wrench in force: safety filter, allocation; return its status."""
        command = self.wrench
        fixed_force, fixed_torque, fixed_thrust = fixed
        result = safety.step(self.safety, self.limits, command.force, command.torque,
                             vessel.state.body_rate, dt)
        self.safety = result.state
        alloc = allocator.solve(result.force, result.torque)
        thrust = np.array([e.max_thrust for e in allocator.engines]) * alloc.engine_throttle
        force, torque = allocation.wrench_of(allocator.nozzles, alloc.nozzle_thrust,
                                             allocator.engines, thrust)
        measured = (force + fixed_force, torque + fixed_torque)
        achieved, self.measured = self.measured, measured
        self.wheel_torque = alloc.wheel_torque + self.sas_torque
        self.applied = (measured[0], measured[1] + self.wheel_torque)
        self.last_allocation = alloc
        self.engine_thrust = {**{e.id: float(t) for e, t in zip(allocator.engines, thrust)
                                 if t > 0.0}, **fixed_thrust}
        self.rcs_thrust = _module_thrust(allocator.nozzles, alloc.nozzle_thrust)
        reason = ','.join(result.reasons) or 'accepted'
        return self._status(command.identity, True, reason, vessel, command=command,
                            allocated=(alloc.force, alloc.torque), achieved=achieved)

    def _sas(self, vessel: SimVessel, allocator: allocation.Allocator) -> np.ndarray:
        """Return the torque of the stock SAS (zero while off or suppressed).

        It is on when the player's switch is on and no lease or emergency stop suppresses
        it, and damps the body rate with the reaction wheels: ``-I ω / τ`` with τ =
        ``SAS_TIME_CONSTANT_SEC``, each axis within the wheels' capacity.
        """
        if not vessel.sas or self.authority.sas_suppressed:
            return ZERO
        capacity = sum(wheel.max_torque for wheel in allocator.wheels)
        wanted = -(vessel.mass.inertia @ vessel.state.body_rate) / SAS_TIME_CONSTANT_SEC
        return np.clip(wanted, -capacity, capacity)

    def _typed_engines(self, typed: TypedActuators, engines: list[allocation.Engine]
                       ) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
        """Return the force, torque and thrust of the engines a typed override drives.

        Each acts through its gimbal at the gimbal's current inputs, about the engine's own
        mounting axes (``allocation.engine_wrench``, ``allocation.gimbal_direction``): the
        same geometry the allocation uses.
        """
        force, torque = np.zeros(3), np.zeros(3)
        thrust = typed.engine_thrust()
        gimbals = typed.engine_gimbal()
        for engine in engines:
            value = thrust.get(engine.id, 0.0)
            if value <= 0.0:
                continue
            f, t = allocation.engine_wrench(engine, value,
                                            gimbals.get(engine.id, (0.0, 0.0, 0.0)))
            force += f
            torque += t
        return force, torque, {k: v for k, v in thrust.items() if v > 0.0}

    def _allocator(self, vessel: SimVessel, typed: TypedActuators
                   ) -> tuple[allocation.Allocator, list[allocation.Engine]]:
        """Return the allocator of the current geometry and settings, and every engine.

        Every engine's geometry comes along because typed overrides drive some. Typed RCS
        settings apply; engines a typed override drives are left out of the allocation.
        Rebuilt only when the vessel, its centre of mass (to 1 cm) or those settings
        change.
        """
        settings = {name: dict(values) for name, values in typed.rcs_settings().items()}
        totals = vessel.spec.resource_totals(vessel.resources)
        monopropellant = totals.get('MonoPropellant', 0.0) > EMPTY
        for values in settings.values():
            values['has_propellant'] = monopropellant
        allocatable = typed.allocatable_engines()
        engine_ids, wheel_ids = self._actuator_ids(vessel)
        for engine in engine_ids:
            if engine not in allocatable:
                settings[engine] = {'operational': False}
        if totals.get('ElectricCharge', 0.0) <= EMPTY:     # wheels need ElectricCharge
            for wheel in wheel_ids:
                settings[wheel] = {'enabled': False}
        key = (vessel.vessel_id, tuple(np.round(vessel.mass.com, 2)),
               repr(sorted((k, sorted(v.items())) for k, v in settings.items())))
        if self._allocator_key != key:
            nozzles, engines, wheels = allocation.geometry(vessel.spec, vessel.mass.com,
                                                           settings)
            self._allocator_cache = allocation.Allocator(
                nozzles, engines, wheels, force_scale=self.limits.max_force_n,
                torque_scale=self.limits.max_torque_nm)
            self._allocator_key = key
            self._engines = engines     # where every engine sits (thrust 0 if not allocatable)
        return self._allocator_cache, self._engines

    def _actuator_ids(self, vessel: SimVessel) -> tuple[list[str], list[str]]:
        """Return the ids of a vessel's engines and reaction wheels (kept per spec)."""
        spec, ids = self._ids
        if spec is not vessel.spec:
            _, engines, wheels = allocation.geometry(vessel.spec, vessel.mass.com)
            ids = ([e.id for e in engines], [w.id for w in wheels])
            self._ids = (vessel.spec, ids)
        return ids

    def actuator_fields(self, vessel: SimVessel, actuator_id: str) -> dict:
        """Return the state fields the control decides for one actuator (merge them)."""
        typed = self.typed(vessel)
        try:
            fields = typed.state_fields(actuator_id)
        except KeyError:
            return {}
        if vessel.wheel_state is not None and actuator_id in vessel.wheel_state.names:
            fields.update(vessel.wheel_state.fields(actuator_id))   # what the wheel does
        if actuator_id in self.engine_thrust or actuator_id.startswith('engine_'):
            thrust = self.engine_thrust.get(actuator_id, 0.0)
            fields.setdefault('thrust', float(thrust))
            maximum = fields.get('maxThrust') or 0.0
            fields.setdefault('throttle', min(1.0, thrust / maximum) if maximum > 0 else 0.0)
        if actuator_id in self.rcs_thrust:
            fields['thrust'] = float(self.rcs_thrust[actuator_id])
        return fields

    def status(self) -> dict:
        """Return the control state for the admin status (JSON-ready)."""
        owner = self.authority.owner
        return {
            'owner': list(owner) if owner else None,
            'emergency_stop': self.authority.emergency_stop,
            'sas_suppressed': self.authority.sas_suppressed,
            'sas_torque': [float(v) for v in self.sas_torque],
            'applied_force': [float(v) for v in self.applied[0]],
            'applied_torque': [float(v) for v in self.applied[1]],
            'wrench_received_at': self.wrench_received_at, 'zeroed_at': self.zeroed_at,
            'authority_command_at': self.authority_command_at,
            'wheel_torque': [float(v) for v in self.wheel_torque],
            'unbacked_steps': self.unbacked_steps, 'unbacked_at': self.unbacked_at,
            'pushed_steps': self.pushed_steps, 'pushed_at': self.pushed_at,
            'pushing_since': self.pushing_since, 'commanded_steps': self.commanded_steps,
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
