"""The mod's journal of separation operations and their ``pylon_separation_result``.

A separation command (``pylon_actuator_command`` of ``actuatorType`` ``separation``, alone
or as a batch member) names its operation with ``operationId``, ``operationInstance``,
``operationEpoch`` and ``operationVesselId``. Empty ones are filled as the mod fills
them: the id is ``"legacy-" + sha256(controllerId, leaseId, sanitised name, sequence)``
(``names.legacy_operation_id``), the instance and epoch are the current session's, the
vessel is the command's ``vesselId``. The operation's key is those four strings.

Rules (``SeparationJournal``; times are the simulator clock, the mod's wall clock):

- a command whose key is in the journal is not carried out again: the same command
  (same actuator, controller and lease) gets the journal's result, another one
  ``operation_id_conflict`` (not retained);
- a command the authority refuses gets a result with the authority's reason
  (``lease_not_owned``, ``stale_sequence``, ``emergency_stop``, ...), completed, not
  successful and not retained, so that it may be retried under the same identity;
- a full journal (``SEPARATION_RESULT_CAPACITY`` entries, after completed results older
  than ``SEPARATION_RESULT_RETENTION_SEC`` are dropped) refuses a new operation with
  ``result_journal_full`` (not retained);
- otherwise the operation is journaled and carried out: ``actuator_not_found`` (no
  separator by that name), ``actuator_unavailable`` (already fired) and
  ``nothing_beyond`` (the separator is the root part: there is nothing to separate, and
  nothing changes) complete at once; a separator that fires leaves the operation
  ``pending`` until the simulator has split the vessel and the runtime session has reset
  for the new topology, and then completes it as ``separated`` (success) in that new
  session. A completed result is kept for ``SEPARATION_RESULT_RETENTION_SEC``.

Results go out at once, then every ``SEPARATION_RESULT_PENDING_REPEAT_SEC`` while
pending and for ``SEPARATION_RESULT_REPEAT_SEC`` after completion (``due``), always under
the current runtime envelope; ``originalGeneration`` is the generation when the command
came if the operation named the session current then, else 0. A query
(``pylon_separation_query``) gets the journal's result, or a synthesized ``completed``,
not retained ``result_not_retained`` when the key is unknown.

A successful result carries ``resultEpoch``/``resultGeneration`` of the session after the
split, ``activeVesselId`` the active vessel (the piece with the root part) and
``resultingVesselIds`` = [active vessel id, the new vessel's id], the vessels that now own
the original parts.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
import re

from pylon_protocol import names
from pylon_protocol.envelope import Envelope
from pylon_protocol.packets import (
    SEPARATION_RESULT_CAPACITY,
    SEPARATION_RESULT_PENDING_REPEAT_SEC,
    SEPARATION_RESULT_REPEAT_SEC,
    SEPARATION_RESULT_RETENTION_SEC,
)

Key = tuple[str, str, str, str]     # (instance, epoch, vessel id, operation id)
TOKEN = re.compile('[!-~]{1,128}')     # printable ASCII without blanks, as on the wire
OPERATION_FIELDS = ('operationInstance', 'operationEpoch', 'operationVesselId', 'operationId')


@dataclass(frozen=True)
class Operation:
    """A separation command's resolved operation identity and what it asks for."""

    key: Key
    name: str
    controller_id: str
    lease_id: str
    sequence: int
    generation: int                 # the session's generation if the key names it, else 0

    @property
    def fingerprint(self) -> tuple[str, str, str]:
        """Return what makes two commands the same operation: actuator, controller, lease."""
        return (self.name, self.controller_id, self.lease_id)


@dataclass
class Entry:
    """One journaled operation and its outcome."""

    operation: Operation
    completed: bool = False
    success: bool = False
    reason: str = 'pending'
    result_epoch: str = ''
    result_generation: int = 0
    active_vessel_id: str = ''
    resulting_vessel_ids: list[str] = field(default_factory=list)
    completed_at: float | None = None
    next_send: float = 0.0


def operation_of(command: dict, session: Envelope) -> Operation | None:
    """Return the operation a decoded separation command names (empty fields filled).

    None when the filled identity is not made of tokens (a ``vesselId`` with blanks): no
    result could name it.
    """
    name = command['name']
    operation_id = command.get('operationId') or names.legacy_operation_id(
        command['controllerId'], command['leaseId'], name, command['sequence'])
    key = (command.get('operationInstance') or session.runtime_instance,
           command.get('operationEpoch') or session.runtime_epoch,
           command.get('operationVesselId') or command['vesselId'], operation_id)
    if not all(TOKEN.fullmatch(part) for part in key):
        return None
    current = key[:2] == (session.runtime_instance, session.runtime_epoch)
    return Operation(key, name, command['controllerId'], command['leaseId'],
                     command['sequence'], session.runtime_generation if current else 0)


class SeparationJournal:
    """The bounded journal of separation operations (one per game process)."""

    def __init__(self, capacity: int = SEPARATION_RESULT_CAPACITY) -> None:
        """Start empty."""
        self.capacity = capacity
        self.entries: OrderedDict[Key, Entry] = OrderedDict()

    def purge(self, now: float) -> None:
        """Drop completed results whose retention has run out."""
        for key in [k for k, e in self.entries.items() if e.completed_at is not None
                    and now - e.completed_at >= SEPARATION_RESULT_RETENTION_SEC]:
            del self.entries[key]

    def lookup(self, key: Key, now: float) -> Entry | None:
        """Return the retained entry of an operation, or None."""
        self.purge(now)
        return self.entries.get(key)

    def begin(self, operation: Operation, now: float) -> Entry | None:
        """Journal a new operation as pending; None when the journal is full."""
        self.purge(now)
        if len(self.entries) >= self.capacity:
            return None
        entry = self.entries[operation.key] = Entry(operation, next_send=now)
        return entry

    def pending(self, name: str) -> list[Entry]:
        """Return the operations on separator ``name`` still waiting for their split."""
        return [e for e in self.entries.values()
                if not e.completed and e.operation.name == name]

    def complete(self, entry: Entry, success: bool, reason: str, session: Envelope,
                 now: float, resulting: list[str] | None = None) -> None:
        """Record an operation's outcome in the session current after it.

        ``resulting`` are the vessels owning the original parts after a success (by
        default the session's vessel); a failure has none.
        """
        entry.completed, entry.success, entry.reason = True, success, reason
        entry.result_epoch = session.runtime_epoch
        entry.result_generation = session.runtime_generation
        entry.active_vessel_id = session.runtime_vessel_id
        if not success:
            resulting = []
        elif resulting is None:
            resulting = [session.runtime_vessel_id]
        entry.resulting_vessel_ids = list(resulting)
        entry.completed_at = now
        entry.next_send = now + SEPARATION_RESULT_PENDING_REPEAT_SEC   # answered at once

    def result(self, entry: Entry, now: float) -> dict:
        """Return the ``pylon_separation_result`` payload of a journaled operation."""
        remaining = SEPARATION_RESULT_RETENTION_SEC
        if entry.completed_at is not None:
            remaining = max(0.0, remaining - (now - entry.completed_at))
        return _payload(entry.operation, completed=entry.completed, success=entry.success,
                        retained=True, reason=entry.reason, result_epoch=entry.result_epoch,
                        result_generation=entry.result_generation,
                        active_vessel_id=entry.active_vessel_id,
                        resulting=entry.resulting_vessel_ids, remaining=remaining)

    def due(self, now: float) -> list[dict]:
        """Return the results to repeat now (pending, or completed within the repeat time)."""
        self.purge(now)
        out = []
        for entry in self.entries.values():
            done = entry.completed_at
            if done is not None and now - done > SEPARATION_RESULT_REPEAT_SEC + 1e-9:
                continue
            if now + 1e-9 >= entry.next_send:
                entry.next_send = max(entry.next_send + SEPARATION_RESULT_PENDING_REPEAT_SEC,
                                      now)
                out.append(self.result(entry, now))
        return out

    def query(self, query: dict, now: float) -> dict:
        """Answer a decoded ``pylon_separation_query``."""
        key = tuple(query[k] for k in OPERATION_FIELDS)
        entry = self.lookup(key, now)
        if entry is not None:
            return self.result(entry, now)
        unknown = Operation(key, '', '', '', 0, 0)
        return _payload(unknown, completed=True, success=False, retained=False,
                        reason='result_not_retained')


def refusal(operation: Operation, reason: str) -> dict:
    """Return the completed, unsuccessful, non-retained result of a refused operation."""
    return _payload(operation, completed=True, success=False, retained=False, reason=reason)


def _payload(operation: Operation, *, completed: bool, success: bool, retained: bool,
             reason: str, result_epoch: str = '', result_generation: int = 0,
             active_vessel_id: str = '', resulting: list[str] | None = None,
             remaining: float = 0.0) -> dict:
    instance, epoch, vessel_id, operation_id = operation.key
    return {
        'operationId': operation_id, 'operationInstance': instance,
        'operationEpoch': epoch, 'operationVesselId': vessel_id,
        'originalGeneration': operation.generation, 'name': operation.name,
        'controllerId': operation.controller_id, 'sequence': operation.sequence,
        'completed': completed, 'success': success, 'retained': retained, 'reason': reason,
        'resultEpoch': result_epoch, 'resultGeneration': result_generation,
        'activeVesselId': active_vessel_id, 'resultingVesselIds': list(resulting or []),
        'retentionRemainingSeconds': float(remaining),
    }
