"""Command routing of the mod's vehicle manager: one decoded command in, its answers out.

``CommandRouter.command(packet, vessel, now, session)`` takes one decoded command datagram
(already past the runtime-session check), has the authority check it, hands what it
accepts to the vehicle manager (``Manager``: what is in force) and returns the state
packets it answers with: every authority command gets a ``pylon_control_authority_state``
with the outcome as ``reason``; a refused body wrench a ``pylon_wrench_status`` with
``accepted`` false; a refused actuator, flight or batch command an authority state carrying
the failure reason (every refusal is counted in ``refused`` by command type and reason); a
separation operation or query a ``pylon_separation_result`` (``separation_journal``; a
separator that fired gets its result from ``separated`` once the simulator has split the
vessel, in the session after the split).

A ``pylon_control_batch`` is checked once (its sequence, stream ``batch``) and then applied
in one go before the next physics step: optional lease renewal (answered
``lease_renewed``), flight inputs, engines in array order, separation last. While a
mission holds its vehicles every command but authority ones and queries is refused
(``simulation_held``).
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol

from pylon_protocol import packets
from pylon_protocol.envelope import Envelope

from pylon_sim.game.world import SimVessel
from pylon_sim.mod.authority import ControlAuthority, Decision
from pylon_sim.mod.separation_journal import operation_of, refusal, SeparationJournal
from pylon_sim.mod.typed_actuators import TypedActuators
from pylon_sim.mod.typed_common import ACCEPTED

Packet = tuple[str, dict]
HELD = packets.SIMULATION_HELD    # the refusal of a command while the mission holds
WRENCH = 'pylon_body_wrench_command'
ACTUATOR = 'pylon_actuator_command'
SEPARATION_RESULT = 'pylon_separation_result'
#: a separator's typed outcome -> the operation's result reason
SEPARATION_OUTCOMES = {ACCEPTED: 'pending', 'already_separated': 'actuator_unavailable',
                       'nothing_beyond': 'nothing_beyond',
                       'unknown_actuator': 'actuator_not_found',
                       'actuator_kind_mismatch': 'actuator_not_found'}


class Manager(Protocol):
    """What the router needs of the vehicle manager: what is in force, and its answers."""

    authority: ControlAuthority
    held: bool

    def paced(self, now: float) -> None:
        """Note the owner's accepted wrench or typed command (it paces a lock-step)."""

    def typed(self, vessel: SimVessel) -> TypedActuators:
        """Return the typed actuator state of a vessel."""

    def authority_state(self, vessel: SimVessel, now: float, reason: str,
                        event: bool = True) -> Packet:
        """Return the authority state packet with ``reason``."""

    def end_commands(self) -> None:
        """End every command in force and every typed override."""

    def accept_wrench(self, packet: dict, now: float) -> None:
        """Put an accepted body wrench in force."""

    def accept_flight(self, packet: dict, vessel: SimVessel, now: float) -> None:
        """Put accepted stock flight inputs in force."""

    def refused_wrench(self, packet: dict, reason: str, vessel: SimVessel) -> Packet:
        """Return the ``pylon_wrench_status`` refusing a body wrench."""


def separates(packet: dict | None) -> bool:
    """Return whether a command fires a separator (a separation operation)."""
    return (packet is not None and packet.get('actuatorType') == 'separation'
            and packet.get('separate') is True)


def refused_operation(separation: dict | None, session: Envelope | None,
                      reason: str) -> list[Packet]:
    """Return the result refusing a separation operation (none for a plain command)."""
    operation = (operation_of(separation, session)
                 if separation is not None and session is not None else None)
    return [] if operation is None else [(SEPARATION_RESULT, refusal(operation, reason))]


class CommandRouter:
    """Checks each command, hands what is accepted on and answers; counts every refusal."""

    def __init__(self, manager: Manager) -> None:
        """Route for ``manager``; no refusal yet, an empty separation journal."""
        self.manager = manager
        self.refused: Counter = Counter()           # (command type, reason) of every refusal
        self.journal = SeparationJournal()          # separation operations and results
        self.authority_command_at: float | None = None  # clock of the last authority command

    @property
    def authority(self) -> ControlAuthority:
        """Return the manager's control authority (it checks every command)."""
        return self.manager.authority

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
        if self.manager.held:
            return self._held(packet, vessel, now, session)
        if kind == 'pylon_control_batch':
            return self._batch(packet, vessel, now, session)
        if separates(packet):
            return self._separation(packet, vessel, now, session)
        decision = self.authority.check(packet, vessel.vessel_id, now)
        if not decision.accepted:
            if kind == WRENCH:
                self.refused[(kind, decision.reason)] += 1
                return [self.manager.refused_wrench(packet, decision.reason, vessel)]
            return self._refused(kind, decision.reason, vessel, now)
        if kind == WRENCH:
            self.manager.accept_wrench(packet, now)
            return []
        if kind == 'pylon_flight_control_command':
            self.manager.accept_flight(packet, vessel, now)
            return []
        typed = self.manager.typed(vessel)
        if kind == 'pylon_docking_port_command':
            return self._typed_answer(kind, typed.docking(packet, now), vessel, now)
        result = typed.command(packet, now)
        if result == ACCEPTED:
            self.manager.paced(now)         # a typed command paces lockstep like a wrench
        return self._typed_answer(kind, result, vessel, now)

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
        if kind == WRENCH:
            return [self.manager.refused_wrench(packet, reason, vessel)]
        out = [self.manager.authority_state(vessel, now, reason, event=reason != HELD)]
        separation = (packets.batch_members(packet)['separation']
                      if kind == 'pylon_control_batch' else
                      packet if separates(packet) else None)
        return out + refused_operation(separation, session, reason)

    def _authority_command(self, packet: dict, vessel: SimVessel, now: float) -> list[Packet]:
        self.authority_command_at = now
        before = self.authority.owner
        decision = self.authority.command(packet, vessel.vessel_id, now)
        # what is in force is the owner's: it ends with the lease, released, run out, cut
        # by an emergency stop or preempted by another owner
        if self.authority.emergency_stop or not self.authority.owned \
                or self.authority.owner != before:
            self.manager.end_commands()
        return [self.manager.authority_state(vessel, now, decision.reason)]

    def _refused(self, kind: str, reason: str, vessel: SimVessel, now: float) -> list[Packet]:
        """Count a refused command and answer it with an authority state."""
        self.refused[(kind, reason)] += 1
        return [self.manager.authority_state(vessel, now, reason)]

    def _typed_result(self, kind: str, result: str) -> str:
        if result != ACCEPTED:
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
        return [self.manager.authority_state(vessel, now, result, event=False)]

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
            return (self._refused(kind, decision.reason, vessel, now)
                    + refused_operation(separation, session, decision.reason))
        out: list[Packet] = []
        if packet['renewLease']:
            renewal = self.authority.renew_in_batch(packet, now)
            out.append(self.manager.authority_state(vessel, now, renewal.reason))
        if members['flight'] is not None:
            self.manager.accept_flight(members['flight'], vessel, now)
        typed = self.manager.typed(vessel)
        for engine in members['engines']:
            out += self._typed_answer(ACTUATOR, typed.command(engine, now), vessel, now)
        if separation is not None:
            out += self._separation(separation, vessel, now, session, decision)
        return out

    def _separation(self, packet: dict, vessel: SimVessel, now: float,
                    session: Envelope | None, decision: Decision | None = None
                    ) -> list[Packet]:
        """Carry out a separation operation once and answer with its result (journal)."""
        operation = operation_of(packet, session) if session is not None else None
        entry = self.journal.lookup(operation.key, now) if operation is not None else None
        if entry is not None:
            if entry.operation.fingerprint != operation.fingerprint:
                self.refused[(ACTUATOR, 'operation_id_conflict')] += 1
                return [(SEPARATION_RESULT, refusal(operation, 'operation_id_conflict'))]
            return [(SEPARATION_RESULT, self.journal.result(entry, now))]
        decision = decision or self.authority.check(packet, vessel.vessel_id, now)
        if not decision.accepted:
            return (self._refused(ACTUATOR, decision.reason, vessel, now)
                    + refused_operation(packet, session, decision.reason))
        if operation is None:
            self._typed_result(ACTUATOR, self.manager.typed(vessel).command(packet, now))
            return []
        entry = self.journal.begin(operation, now)
        if entry is None:
            self.refused[(ACTUATOR, 'result_journal_full')] += 1
            return [(SEPARATION_RESULT, refusal(operation, 'result_journal_full'))]
        outcome = self._typed_result(ACTUATOR, self.manager.typed(vessel).command(packet, now))
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
