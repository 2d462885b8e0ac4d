"""The mod's final judge of who controls the active vessel: leases, sequences, e-stop.

``ControlAuthority`` holds no I/O and reads no clock: every call gets ``now``, seconds on
the simulator's monotonic wall clock (leases run on wall time, also while the game is
paused). Commands are the decoded JSON payloads with their wire field names.

Rules
-----
Identity and ordering
  Every formal command names ``vesselId``, ``controllerId``, ``leaseId`` and
  ``sequence``. ``vesselId`` must be the active vessel (compared without regard to
  case; with no active vessel nothing matches): ``active_vessel_mismatch``. The two ids
  must be non-blank strings of at most 64 characters and ``sequence`` a positive int64,
  else ``invalid_lease``. One counter per ``(controllerId, leaseId)`` covers *all* formal
  commands of that identity, authority commands and every other kind alike: a sequence
  not above the last accepted one is ``stale_sequence`` and changes nothing. Only
  accepted commands advance the counter, so a refused command may be retried with the
  same number. At most ``max_identities`` counters are kept, the least recently used
  evicted first; the current owner and the issuer of a latched stop are never evicted.
  The mod keeps one counter per stream (``authority``, ``attitude`` for body wrench and
  flight inputs, ``batch``, ``actuator:<type>:<name>``, ...); here they all share the
  identity's counter, which is stricter and so accepts only what the mod accepts.

Lease
  ``acquire`` needs ``leaseDurationSeconds`` in 0.1–10 s and an integer ``priority``
  (int32, 0 when omitted) and ``suppressSas`` a bool when given, else ``invalid_lease``.
  It succeeds on a free vessel (``lease_acquired``); by the owning identity it is a
  renewal (``lease_renewed``; priority and SAS choice stay as acquired); by another
  identity only with a strictly higher priority, which preempts the owner
  (``lease_acquired``); otherwise ``authority_held_by_higher_or_equal_priority``.
  ``renew`` (same duration rule) and ``release`` are for the owner only
  (``lease_not_owned``); renewal sets the end of the lease to ``now`` plus the duration.
  A ``pylon_control_batch`` accepted by ``check`` may renew the lease
  (``renew_in_batch``: same duration rule, its ``suppressSas`` applied with it).
  A lease ends at ``acquired/renewed + duration`` (owned while ``now`` is before that):
  ``expire`` reports ``lease_expired`` once. A vessel switch or a runtime-session change
  ends the lease (``active_vessel_changed`` / ``runtime_session_changed``); the sequence
  counters survive both, so an old datagram stays stale.

SAS
  A lease acquired with ``suppressSas`` keeps SAS off for its whole life and gives it back
  when the lease ends (release, expiry, preemption by a lease without it, switch, session
  change). Single commands never toggle it. A latched stop also keeps SAS off.

Emergency stop
  ``emergency_stop`` may come from any valid identity, owner or not, naming the active
  vessel with a fresh sequence. It latches state 2: the lease is gone, SAS is off and the
  simulator zeroes the wrench and every override while ``emergency_stop`` is true. A
  second stop while latched is accepted, but the latch stays with the first issuer. Only
  the issuing identity can clear it (``clear_emergency_stop``, fresh sequence, naming the
  vessel active at that moment): ``emergency_stop_cleared``, state 0. Another identity
  gets ``emergency_stop_owner_mismatch``; with nothing latched ``emergency_stop_not_active``.
  While latched, acquire, renew and release and every other formal command are refused
  with ``emergency_stop``. Neither a vessel switch nor a session change clears it.

Other
  An action that is not one of the five (trimmed, lower case) is
  ``unsupported_authority_action``. Accepted non-authority commands answer
  ``command_accepted``. In the state payload, ``controllerId``/``leaseId`` name the owner,
  or while latched the stop's issuer; ``lastSequence`` is that identity's last accepted
  sequence (0 when there is none).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
import math

from pylon_protocol.packets import MAX_LEASE_SEC, MIN_LEASE_SEC
from pylon_protocol.schema import INT64_MAX

UNOWNED, OWNED, EMERGENCY_STOP = 0, 1, 2

ACQUIRE, RENEW, RELEASE = 'acquire', 'renew', 'release'
STOP, CLEAR_STOP = 'emergency_stop', 'clear_emergency_stop'
ACTIONS = (ACQUIRE, RENEW, RELEASE, STOP, CLEAR_STOP)

MAX_ID_CHARS = 64
INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1
MAX_IDENTITIES = 1024

Identity = tuple[str, str]


@dataclass(frozen=True)
class Decision:
    """The outcome of one command: accepted or not, and the reason string sent back."""

    accepted: bool
    reason: str


@dataclass(frozen=True)
class Lease:
    """The lease in force: its identity, priority, end time and SAS choice."""

    controller_id: str
    lease_id: str
    priority: int
    expires_at: float
    suppress_sas: bool

    @property
    def identity(self) -> Identity:
        """Return ``(controller_id, lease_id)``."""
        return self.controller_id, self.lease_id


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _identity_of(cmd: Mapping) -> Identity | None:
    """Return the command's ``(controllerId, leaseId)`` when both are usable, else None."""
    ids = (cmd.get('controllerId'), cmd.get('leaseId'))
    for value in ids:
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_ID_CHARS:
            return None
    return ids


def _sequence_of(cmd: Mapping) -> int | None:
    value = cmd.get('sequence')
    if _is_int(value) and 0 < value <= INT64_MAX:
        return value
    return None


def _duration_of(cmd: Mapping) -> float | None:
    value = cmd.get('leaseDurationSeconds')
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    if not math.isfinite(value) or not MIN_LEASE_SEC <= value <= MAX_LEASE_SEC:
        return None
    return value


def _vessel_matches(cmd: Mapping, active_vessel_id: str) -> bool:
    named = cmd.get('vesselId')
    return (isinstance(named, str) and bool(active_vessel_id)
            and named.casefold() == active_vessel_id.casefold())


class ControlAuthority:
    """Ownership of the active vessel's control as the mod decides it."""

    def __init__(self, *, max_identities: int = MAX_IDENTITIES) -> None:
        """Start unowned, with no emergency stop and no sequence remembered."""
        if max_identities < 1:
            raise ValueError('max_identities must be at least 1')
        self.max_identities = max_identities
        self.lease: Lease | None = None
        self.stop_issuer: Identity | None = None
        self._sequences: OrderedDict[Identity, int] = OrderedDict()
        self._expiry_unreported = False

    # -- views ----------------------------------------------------------------------------
    @property
    def owned(self) -> bool:
        """Return whether a lease is held (expiry is applied by ``expire``/commands)."""
        return self.lease is not None

    @property
    def owner(self) -> Identity | None:
        """Return the owner's ``(controller_id, lease_id)``, or None."""
        return self.lease.identity if self.lease is not None else None

    @property
    def emergency_stop(self) -> bool:
        """Return whether an emergency stop is latched (all outputs must be zero)."""
        return self.stop_issuer is not None

    @property
    def sas_suppressed(self) -> bool:
        """Return whether SAS is held off: by a latched stop or a ``suppressSas`` lease."""
        return self.emergency_stop or (self.lease is not None and self.lease.suppress_sas)

    def last_sequence(self, identity: Identity) -> int:
        """Return the last accepted sequence of ``identity`` (0 when none is known)."""
        return self._sequences.get(identity, 0)

    def remaining(self, now: float) -> float:
        """Return the seconds left on the lease at ``now`` (0 when unowned)."""
        if self.lease is None:
            return 0.0
        return max(0.0, self.lease.expires_at - now)

    # -- commands -------------------------------------------------------------------------
    def command(self, cmd: Mapping, active_vessel_id: str, now: float) -> Decision:
        """Apply a decoded ``pylon_control_authority_command`` payload; return the outcome.

        Checks run in this order: action, vessel, identity and sequence form, lease fields
        (acquire/renew), sequence freshness, then the action's own rule. Only an accepted
        command changes anything (its sequence included).
        """
        action = cmd.get('action')
        action = action.strip().lower() if isinstance(action, str) else None
        if action not in ACTIONS:
            return Decision(False, 'unsupported_authority_action')
        if not _vessel_matches(cmd, active_vessel_id):
            return Decision(False, 'active_vessel_mismatch')
        identity, sequence = _identity_of(cmd), _sequence_of(cmd)
        if identity is None or sequence is None:
            return Decision(False, 'invalid_lease')
        duration = priority = suppress = None
        if action in (ACQUIRE, RENEW):
            duration = _duration_of(cmd)
            if duration is None:
                return Decision(False, 'invalid_lease')
        if action == ACQUIRE:
            priority = cmd.get('priority', 0)
            suppress = cmd.get('suppressSas', False)
            if not _is_int(priority) or not INT32_MIN <= priority <= INT32_MAX \
                    or not isinstance(suppress, bool):
                return Decision(False, 'invalid_lease')
        if sequence <= self.last_sequence(identity):
            return Decision(False, 'stale_sequence')
        self._expire_due(now)
        if action == STOP:
            decision = self._stop(identity)
        elif action == CLEAR_STOP:
            decision = self._clear_stop(identity)
        elif self.emergency_stop:
            decision = Decision(False, 'emergency_stop')
        elif action == ACQUIRE:
            decision = self._acquire(identity, priority, duration, suppress, now)
        elif action == RENEW:
            decision = self._renew(identity, duration, now)
        else:
            decision = self._release(identity)
        if decision.accepted:
            self._record(identity, sequence)
        return decision

    def check(self, cmd: Mapping, active_vessel_id: str, now: float) -> Decision:
        """Judge a formal non-authority command (wrench, actuator, motor, docking, ...).

        Accepted (``command_accepted``, its sequence recorded) only when it names the
        active vessel, has a valid identity, no emergency stop is latched, the identity
        owns the lease at ``now`` and the sequence is fresh.
        """
        if not _vessel_matches(cmd, active_vessel_id):
            return Decision(False, 'active_vessel_mismatch')
        identity, sequence = _identity_of(cmd), _sequence_of(cmd)
        if identity is None or sequence is None:
            return Decision(False, 'invalid_lease')
        if self.emergency_stop:
            return Decision(False, 'emergency_stop')
        self._expire_due(now)
        if self.owner != identity:
            return Decision(False, 'lease_not_owned')
        if sequence <= self.last_sequence(identity):
            return Decision(False, 'stale_sequence')
        self._record(identity, sequence)
        return Decision(True, 'command_accepted')

    def renew_in_batch(self, cmd: Mapping, now: float) -> Decision:
        """Renew the lease for a ``pylon_control_batch`` that ``check`` has accepted.

        The batch's own sequence (stream ``batch``) was checked and recorded by ``check``;
        the renewal takes ``leaseDurationSeconds`` (0.1–10 s) from ``now`` and sets SAS
        suppression to the batch's ``suppressSas``.
        """
        identity, duration = _identity_of(cmd), _duration_of(cmd)
        suppress = cmd.get('suppressSas', False)
        if identity is None or duration is None or not isinstance(suppress, bool):
            return Decision(False, 'invalid_lease')
        if self.emergency_stop:
            return Decision(False, 'emergency_stop')
        self._expire_due(now)
        if self.owner != identity:
            return Decision(False, 'lease_not_owned')
        self.lease = Lease(identity[0], identity[1], self.lease.priority, now + duration,
                           suppress)
        return Decision(True, 'lease_renewed')

    # -- events ---------------------------------------------------------------------------
    def expire(self, now: float) -> str | None:
        """End a lease whose time ran out; return ``'lease_expired'`` once, else None."""
        self._expire_due(now)
        if self._expiry_unreported:
            self._expiry_unreported = False
            return 'lease_expired'
        return None

    def vessel_changed(self, now: float) -> str | None:
        """Release the lease after a switch; ``'active_vessel_changed'`` if one was held."""
        return 'active_vessel_changed' if self._drop_lease() else None

    def session_changed(self, now: float) -> str | None:
        """Release the lease after a runtime reset; ``'runtime_session_changed'`` if held."""
        return 'runtime_session_changed' if self._drop_lease() else None

    def state(self, vessel_id: str, vessel_name: str, now: float, reason: str) -> dict:
        """Return the ``pylon_control_authority_state`` payload (wire names) at ``now``."""
        lease = self.lease
        if lease is not None and now >= lease.expires_at:
            lease = None                          # ran out; ``expire`` will report it
        if self.stop_issuer is not None:
            state, identity, priority = EMERGENCY_STOP, self.stop_issuer, 0
        elif lease is not None:
            state, identity, priority = OWNED, lease.identity, lease.priority
        else:
            state, identity, priority = UNOWNED, None, 0
        return {
            'vesselId': vessel_id,
            'vessel': vessel_name,
            'state': state,
            'controllerId': identity[0] if identity else '',
            'leaseId': identity[1] if identity else '',
            'priority': priority,
            'leaseRemainingSeconds': self.remaining(now) if state == OWNED else 0.0,
            'sasSuppressed': state == EMERGENCY_STOP or (lease is not None
                                                         and lease.suppress_sas),
            'emergencyStop': state == EMERGENCY_STOP,
            'lastSequence': self.last_sequence(identity) if identity else 0,
            'reason': reason,
        }

    # -- actions --------------------------------------------------------------------------
    def _acquire(self, identity: Identity, priority: int, duration: float, suppress: bool,
                 now: float) -> Decision:
        lease = self.lease
        if lease is not None and lease.identity == identity:
            return self._renew(identity, duration, now)
        if lease is not None and priority <= lease.priority:
            return Decision(False, 'authority_held_by_higher_or_equal_priority')
        self.lease = Lease(identity[0], identity[1], priority, now + duration, suppress)
        self._expiry_unreported = False
        return Decision(True, 'lease_acquired')

    def _renew(self, identity: Identity, duration: float, now: float) -> Decision:
        if self.owner != identity:
            return Decision(False, 'lease_not_owned')
        self.lease = Lease(identity[0], identity[1], self.lease.priority, now + duration,
                           self.lease.suppress_sas)
        return Decision(True, 'lease_renewed')

    def _release(self, identity: Identity) -> Decision:
        if self.owner != identity:
            return Decision(False, 'lease_not_owned')
        self.lease = None
        return Decision(True, 'lease_released')

    def _stop(self, identity: Identity) -> Decision:
        if self.stop_issuer is None:
            self.stop_issuer = identity
        self.lease = None
        self._expiry_unreported = False
        return Decision(True, 'emergency_stop')

    def _clear_stop(self, identity: Identity) -> Decision:
        if self.stop_issuer is None:
            return Decision(False, 'emergency_stop_not_active')
        if self.stop_issuer != identity:
            return Decision(False, 'emergency_stop_owner_mismatch')
        self.stop_issuer = None
        return Decision(True, 'emergency_stop_cleared')

    # -- bookkeeping ----------------------------------------------------------------------
    def _expire_due(self, now: float) -> None:
        if self.lease is not None and now >= self.lease.expires_at:
            self.lease = None
            self._expiry_unreported = True

    def _drop_lease(self) -> bool:
        held = self.lease is not None
        self.lease = None
        self._expiry_unreported = False
        return held

    def _record(self, identity: Identity, sequence: int) -> None:
        self._sequences[identity] = sequence
        self._sequences.move_to_end(identity)
        protected = {self.owner, self.stop_issuer, identity}
        while len(self._sequences) > self.max_identities:
            victim = next((key for key in self._sequences if key not in protected), None)
            if victim is None:
                break
            del self._sequences[victim]
