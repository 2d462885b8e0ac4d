"""Pure lease client of seed 001: lifecycle -> acquire -> confirm -> renew -> release.

No ROS and no clock: every call gets ``now`` (seconds, monotonic) and returns what to do.

Flow
  1. Wait for a lifecycle ``STATE_ACTIVE`` / ``STATE_CHANGED`` with a non-empty vessel_id.
  2. Send ``ACTION_ACQUIRE`` (``tick`` returns it), resent every ``retry_sec`` until an
     authority state ``STATE_OWNED`` names *our* controller_id *and* lease_id (and the
     vessel) -- the lease is then owned.
  3. Renew every ``lease_duration_sec / 4`` while owned. The lease counts as owned until
     ``t_send + lease_duration_sec`` of the last acquire/renew the KSP side confirmed (an
     OWNED state whose ``last_sequence`` is at least that command's sequence; without
     ``last_sequence`` the newest one sent is taken as confirmed).
  4. ``shutdown`` returns ``ACTION_RELEASE`` when the lease is held (if it cannot be sent
     the lease simply expires on the KSP side).

Sequence: one strictly increasing counter per ``(controller_id, lease_id)``, starting at 1
for every new lease_id. ``next_sequence()`` hands out the next number and must be used for
*all* formal commands of the lease (acquire, renew, release, BodyWrenchCommand, typed
actuator commands), because the KSP side keeps one counter for all of them.

Loss and re-acquisition
  The lease is lost when the authority state names another owner (or none, or an
  emergency stop) for our vessel, when it runs out without a confirmed renewal, when the
  vessel_id changes, or when the lifecycle goes UNAVAILABLE / STALE. Every loss is an
  event (``lost:<reason>``); the client then acquires again with a NEW lease_id (fresh
  counter from 1). A new lease_id keeps the identity unique: answers and transient-local
  states of the old lease can never be taken for the new one, and a sequence counter the
  KSP side may still hold for the old identity cannot make the new commands stale.
  A lifecycle generation change while the same vessel stays active keeps the lease (the
  KSP side does not end it) but is reported as ``generation_changed`` so the supervisor
  discards its targets.

Clocks
  ``now`` is whatever clock the caller keeps: the steady clock, or game time (ROS time on
  ``/clock``). On game time two things differ, because the KSP side times its leases by
  the game computer's wall clock, which runs on while the game is paused:

  - ``acquire_on_tick``: an acquisition after a loss (or for a new vessel) goes out with
    the next ``tick`` rather than at once, so while game time stands still (ticks stop)
    the client does not acquire a lease it could never renew, only to lose it again.
  - ``tick(now, wall)``: a tick more than the lease after the previous one on the wall
    clock (the steady clock, given beside game time) finds the lease run out on the KSP
    side, even though game time says it still runs (``lapse``: lost as ``clock_stopped``,
    acquired again at once). This holds as long as the KSP side's clock does not run
    slower than the wall clock: KSP itself, and pylon_sim at ``--rate`` 1 or more.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
import itertools
import uuid

from pylon_interfaces.msg import ControlAuthorityCommand, ControlAuthorityState, VesselLifecycle

LIFECYCLE_UNAVAILABLE = VesselLifecycle.STATE_UNAVAILABLE
LIFECYCLE_ACTIVE = VesselLifecycle.STATE_ACTIVE
LIFECYCLE_CHANGED = VesselLifecycle.STATE_CHANGED
LIFECYCLE_STALE = VesselLifecycle.STATE_STALE
AUTHORITY_UNOWNED = ControlAuthorityState.STATE_UNOWNED
AUTHORITY_OWNED = ControlAuthorityState.STATE_OWNED
AUTHORITY_EMERGENCY_STOP = ControlAuthorityState.STATE_EMERGENCY_STOP
ACTION_ACQUIRE = ControlAuthorityCommand.ACTION_ACQUIRE
ACTION_RENEW = ControlAuthorityCommand.ACTION_RENEW
ACTION_RELEASE = ControlAuthorityCommand.ACTION_RELEASE

# client phases
WAITING = 'waiting_for_vessel'
ACQUIRING = 'acquiring'
OWNED = 'owned'
RELEASED = 'released'

MAX_ID_CHARS = 64


@dataclass(frozen=True)
class LeaseCommand:
    """One ControlAuthorityCommand to publish (fields as in the message)."""

    action: int
    vessel_id: str
    controller_id: str
    lease_id: str
    priority: int
    lease_duration_sec: float
    suppress_sas: bool
    sequence: int

    def message(self) -> ControlAuthorityCommand:
        """Return the ControlAuthorityCommand to publish."""
        return ControlAuthorityCommand(
            action=self.action, vessel_id=self.vessel_id, controller_id=self.controller_id,
            lease_id=self.lease_id, priority=self.priority,
            lease_duration_sec=self.lease_duration_sec, suppress_sas=self.suppress_sas,
            sequence=self.sequence)


@dataclass
class LeaseUpdate:
    """What one call produced: commands to send and events (``acquired``, ``lost:...``)."""

    commands: list[LeaseCommand] = field(default_factory=list)
    events: list[str] = field(default_factory=list)


def default_lease_id(controller_id: str) -> str:
    """Return a fresh unique lease_id (at most 64 characters)."""
    return f'{controller_id[:31]}-{uuid.uuid4().hex}'


def _same(a: str, b: str) -> bool:
    return a.casefold() == b.casefold()


class LeaseClient:
    """Lease state machine of one controller over the active vessel."""

    def __init__(self, controller_id: str, *, priority: int = 0,
                 lease_duration_sec: float = 1.0, suppress_sas: bool = True,
                 retry_sec: float | None = None,
                 lease_id_factory: Callable[[str], str] = default_lease_id,
                 acquire_on_tick: bool = False) -> None:
        """Start waiting for a vessel; ``retry_sec`` defaults to lease_duration_sec / 2.

        ``acquire_on_tick``: (re)acquire with the next ``tick``, not at once (game time).
        """
        if not controller_id.strip() or len(controller_id) > MAX_ID_CHARS:
            raise ValueError('controller_id must be 1 to 64 characters, not blank')
        if not 0.1 <= lease_duration_sec <= 10.0:
            raise ValueError('lease_duration_sec must be in 0.1..10 s')
        self.controller_id = controller_id
        self.priority = int(priority)
        self.lease_duration_sec = float(lease_duration_sec)
        self.suppress_sas = bool(suppress_sas)
        self.renew_period_sec = self.lease_duration_sec / 4.0
        self.retry_sec = self.lease_duration_sec / 2.0 if retry_sec is None else retry_sec
        self._new_lease_id = lease_id_factory
        self.acquire_on_tick = bool(acquire_on_tick)
        self.phase = WAITING
        self.vessel_id = ''
        self.generation: int | None = None
        self.lease_id = ''
        self._counter = itertools.count(1)
        self._last_sequence = 0
        self._last_send: float | None = None
        self._expires_at = 0.0
        self._last_wall: float | None = None
        self._renewed_wall: float | None = None    # wall clock of the last renewal (``tick``)
        self._sent: list[tuple[int, float]] = []   # (sequence, send time) of acquire/renew
        self.last_reason = ''

    # -- views ------------------------------------------------------------------------------
    def owns(self, now: float) -> bool:
        """Return whether the lease is confirmed and not run out at ``now``."""
        return self.phase == OWNED and now < self._expires_at

    @property
    def identity(self) -> tuple[str, str]:
        """Return ``(controller_id, lease_id)`` of the current lease ('' lease_id: none)."""
        return self.controller_id, self.lease_id

    def next_sequence(self) -> int:
        """Return the next sequence of the current lease (for every formal command)."""
        if not self.lease_id:
            raise RuntimeError('no lease_id yet: wait for a vessel first')
        self._last_sequence = next(self._counter)
        return self._last_sequence

    @property
    def last_sequence(self) -> int:
        """Return the last sequence handed out for the current lease (0: none yet)."""
        return self._last_sequence

    # -- inputs -----------------------------------------------------------------------------
    def on_lifecycle(self, state: int, vessel_id: str, generation: int,
                     now: float) -> LeaseUpdate:
        """Take a VesselLifecycle (state, vessel_id, generation)."""
        update = LeaseUpdate()
        if self.phase == RELEASED:
            return update
        active = state in (LIFECYCLE_ACTIVE, LIFECYCLE_CHANGED) and bool(vessel_id)
        if not active:
            if self.phase != WAITING:
                self._lose(update, 'vessel_unavailable', WAITING)
            self.vessel_id = ''
            self.generation = int(generation)
            return update
        if self.vessel_id and not _same(vessel_id, self.vessel_id):
            if self.phase != WAITING:
                self._lose(update, 'vessel_changed', WAITING)
        elif self.generation is not None and int(generation) != self.generation \
                and self.phase == OWNED:
            update.events.append('generation_changed')
        self.vessel_id = vessel_id
        self.generation = int(generation)
        if self.phase == WAITING:
            self._start_acquire(update, now)
        return update

    def on_authority(self, state: int, controller_id: str, lease_id: str, vessel_id: str,
                     reason: str, now: float,
                     last_sequence: int | None = None) -> LeaseUpdate:
        """Take a ControlAuthorityState (state, owner ids, vessel_id, reason)."""
        update = LeaseUpdate()
        self.last_reason = reason
        if self.phase in (WAITING, RELEASED) or not self.lease_id:
            return update
        if vessel_id and self.vessel_id and not _same(vessel_id, self.vessel_id):
            return update                       # about another vessel
        ours = (state == AUTHORITY_OWNED and controller_id == self.controller_id
                and lease_id == self.lease_id)
        if ours:
            confirmed = [t for s, t in self._sent
                         if last_sequence is None or s <= last_sequence]
            if confirmed:
                self._expires_at = max(self._expires_at,
                                       max(confirmed) + self.lease_duration_sec)
                self._sent = [(s, t) for s, t in self._sent if t > max(confirmed)]
            if self.phase == ACQUIRING and now < self._expires_at:
                self.phase = OWNED
                update.events.append('acquired')
            return update
        if self.phase == OWNED:
            why = 'emergency_stop' if state == AUTHORITY_EMERGENCY_STOP else (
                reason or 'authority_lost')
            self._lose(update, why, ACQUIRING)
            self._start_acquire(update, now)
        return update

    def tick(self, now: float, wall: float | None = None) -> LeaseUpdate:
        """Send what is due at ``now``: acquire retries, renewals; notice a run-out lease.

        ``wall`` (steady clock, s), when ``now`` is game time: a tick more than
        ``lease_duration_sec`` of wall time after the previous one finds the lease run out
        on the KSP side (``lapse``, reason ``clock_stopped``), whatever game time says; and
        a renewal is due after ``lease_duration_sec / 4`` of game time or of wall time,
        whichever comes first, since the KSP side times the lease on its wall clock (a game
        running slower than real time, e.g. lock-stepped to a stack a busy machine slows
        down, would otherwise renew too late).
        """
        previous, self._last_wall = self._last_wall, wall
        if wall is not None and previous is not None and \
                wall - previous > self.lease_duration_sec:
            update = self.lapse(now, 'clock_stopped')
            if update.events:
                return update
        update = LeaseUpdate()
        if self.phase == OWNED and now >= self._expires_at:
            self._lose(update, 'lease_expired', ACQUIRING)
            self._start_acquire(update, now, at_once=True)
            return update
        if self.phase == OWNED and self._renewed_wall is None:
            self._renewed_wall = wall           # the lease's first owned tick: the reference
        if self.phase == ACQUIRING and self._due(now, self.retry_sec):
            update.commands.append(self._command(ACTION_ACQUIRE, now))
        elif self.phase == OWNED and (self._due(now, self.renew_period_sec) or
                                      self._due_on_wall(wall)):
            update.commands.append(self._command(ACTION_RENEW, now))
            self._renewed_wall = wall
        return update

    def lapse(self, now: float, reason: str) -> LeaseUpdate:
        """Lose an owned lease that ran out by a clock the client does not keep; re-acquire.

        For a caller on game time that saw the wall clock run on for longer than the lease
        while game time stood still (a paused game): the KSP side has ended the lease.
        Nothing happens unless the lease is owned.
        """
        update = LeaseUpdate()
        if self.phase == OWNED:
            self._lose(update, reason, ACQUIRING)
            self._start_acquire(update, now, at_once=True)
        return update

    def shutdown(self, now: float) -> LeaseUpdate:
        """Stop for good; return ACTION_RELEASE when a lease is (or may be) held."""
        update = LeaseUpdate()
        if self.phase in (OWNED, ACQUIRING) and self.vessel_id and self.lease_id:
            update.commands.append(self._command(ACTION_RELEASE, now))
        if self.phase != RELEASED:
            update.events.append('released')
        self.phase = RELEASED
        return update

    # -- pieces -----------------------------------------------------------------------------
    def _due(self, now: float, period: float) -> bool:
        return self._last_send is None or now - self._last_send >= period - 1e-9

    def _due_on_wall(self, wall: float | None) -> bool:
        """Tell whether a renewal is due on the wall clock (none without one)."""
        return wall is not None and self._renewed_wall is not None and \
            wall - self._renewed_wall >= self.renew_period_sec - 1e-9

    def _start_acquire(self, update: LeaseUpdate, now: float, at_once: bool = False) -> None:
        """Start acquiring a new lease: the ACQUIRE now, or with the next tick."""
        self.lease_id = self._new_lease_id(self.controller_id)
        if not self.lease_id or len(self.lease_id) > MAX_ID_CHARS:
            raise ValueError(f'lease_id must be 1 to 64 characters: {self.lease_id!r}')
        self._counter = itertools.count(1)
        self._last_sequence = 0
        self._sent = []
        self._expires_at = 0.0
        self._renewed_wall = None
        self.phase = ACQUIRING
        if at_once or not self.acquire_on_tick:
            update.commands.append(self._command(ACTION_ACQUIRE, now))
        else:
            self._last_send = None             # due at the next tick

    def _lose(self, update: LeaseUpdate, reason: str, phase: str) -> None:
        if self.phase == OWNED:
            update.events.append(f'lost:{reason}')
        self.phase = phase
        self._expires_at = 0.0
        self._sent = []
        if phase == WAITING:
            self.lease_id = ''

    def _command(self, action: int, now: float) -> LeaseCommand:
        sequence = self.next_sequence()
        if action in (ACTION_ACQUIRE, ACTION_RENEW):
            self._sent.append((sequence, now))
            self._last_send = now
        return LeaseCommand(action, self.vessel_id, self.controller_id, self.lease_id,
                            self.priority, self.lease_duration_sec, self.suppress_sas,
                            sequence)
