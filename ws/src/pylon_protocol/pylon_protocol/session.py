"""Runtime sessions: the mod's envelope identity and the bridge's session gating.

Every state datagram from the mod starts with four envelope fields: ``runtimeInstance``
(one GUID per game process), ``runtimeGeneration`` (counts resets), ``runtimeEpoch`` (a
new GUID on every reset) and ``runtimeVesselId`` (the active vessel or ``''``).

* ``RuntimeSession`` is the mod side: it decides when a reset happens and which
  commands carry the current envelope.
* ``SessionTracker`` is the bridge side: only ``pylon_session`` heartbeats open or
  refresh a session; every other datagram is admitted only under the current, available
  session.
* ``UtClock`` maps game universal time to receiver time with one offset per session.

All times passed as ``now`` are monotonic wall-clock seconds supplied by the caller.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
import math
import random

from pylon_protocol.errors import ProtocolError
from pylon_protocol.names import new_guid_hex

ENVELOPE_FIELDS = ('runtimeInstance', 'runtimeGeneration', 'runtimeEpoch', 'runtimeVesselId')
MAX_RETIRED_INSTANCES = 64
DEFAULT_SESSION_TIMEOUT = 3.0
RELOCATION_BASE_METERS = 50.0


def _is_int(value: object) -> bool:
    return type(value) is int


def _finite(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
    )


@dataclass(frozen=True)
class SessionKey:
    """The identity a runtime envelope names."""

    instance: str
    generation: int
    epoch: str
    vessel_id: str

    @classmethod
    def from_envelope(cls, packet: Mapping[str, object]) -> SessionKey:
        """Read the four envelope fields; raise ProtocolError if any is malformed."""
        if not isinstance(packet, Mapping):
            raise ProtocolError('bad_packet', 'expected a JSON object')
        instance = packet.get('runtimeInstance')
        generation = packet.get('runtimeGeneration')
        epoch = packet.get('runtimeEpoch')
        vessel_id = packet.get('runtimeVesselId')
        if not isinstance(instance, str) or not instance:
            raise ProtocolError('bad_envelope', 'expected a non-empty string', 'runtimeInstance')
        if not _is_int(generation) or generation < 0:
            raise ProtocolError('bad_envelope', 'expected an integer >= 0', 'runtimeGeneration')
        if not isinstance(epoch, str) or not epoch:
            raise ProtocolError('bad_envelope', 'expected a non-empty string', 'runtimeEpoch')
        if not isinstance(vessel_id, str):
            raise ProtocolError('bad_envelope', 'expected a string', 'runtimeVesselId')
        return cls(instance, generation, epoch, vessel_id)

    def envelope(self) -> dict[str, object]:
        """Return the four wire fields in wire order."""
        return {
            'runtimeInstance': self.instance,
            'runtimeGeneration': self.generation,
            'runtimeEpoch': self.epoch,
            'runtimeVesselId': self.vessel_id,
        }


@dataclass(frozen=True)
class HeartbeatResult:
    """
    The outcome of one heartbeat.

    ``reason`` is one of ``opened``, ``refreshed``, ``new_instance``, ``new_generation``,
    ``availability_changed``, ``reopened`` (accepted) or ``retired_instance``,
    ``stale_generation``, ``conflicting_generation``, ``universal_time_decreased``,
    ``missing_observation_sequence``, ``stale_observation_sequence`` (ignored).
    ``session_changed`` is True when the receiver must reset its per-session state: the
    key or the ``available`` flag changed, or the session reopened after expiring.
    """

    accepted: bool
    reason: str
    session_changed: bool = False
    key: SessionKey | None = None
    available: bool = False
    previous_key: SessionKey | None = None


class SessionTracker:
    """
    Bridge-side session state machine fed by ``pylon_session`` heartbeats.

    Ordering rules for a heartbeat of the current instance: a lower generation is
    ignored; the same generation with another epoch or vessel is ignored; with the same
    key, a lower ``universalTime`` is ignored (equal is fine) and, once the key's previous
    accepted heartbeat carried ``observationSequence``, a new one must carry a strictly
    greater one. A higher generation starts a new key and restarts both histories.

    A heartbeat from another instance always wins and retires the current instance for
    good. Retired instance ids are kept in a bounded FIFO of ``max_retired`` (default 64)
    entries; the oldest is forgotten first. Instances are per game process, so a forgotten
    id coming back is not a practical concern.

    The ordering history survives expiry: a session that timed out and comes back with the
    same key must still continue its ``universalTime`` and ``observationSequence``.
    """

    def __init__(self, *, max_retired: int = MAX_RETIRED_INSTANCES) -> None:
        if not _is_int(max_retired) or max_retired < 1:
            raise ProtocolError('bad_limit', 'max_retired must be >= 1', 'max_retired')
        self._max_retired = max_retired
        self._retired: OrderedDict[str, None] = OrderedDict()
        self._key: SessionKey | None = None
        self._available = False
        self._stale = False
        self._last_heartbeat: float | None = None
        self._last_ut = 0.0
        self._last_sequence: int | None = None

    @property
    def key(self) -> SessionKey | None:
        """Return the current session key, or None before the first heartbeat."""
        return self._key

    @property
    def available(self) -> bool:
        """Return True while the session exists, reports a flight and has not expired."""
        return self._key is not None and self._available and not self._stale

    @property
    def stale(self) -> bool:
        """Return True after the session expired and before the next accepted heartbeat."""
        return self._stale

    @property
    def last_heartbeat(self) -> float | None:
        """Return the monotonic time of the last accepted heartbeat."""
        return self._last_heartbeat

    @property
    def last_universal_time(self) -> float | None:
        """Return the universal time of the last accepted heartbeat."""
        return None if self._key is None else self._last_ut

    @property
    def observation_sequence(self) -> int | None:
        """Return the last accepted ``observationSequence`` of the current key, if any."""
        return self._last_sequence

    @property
    def retired_instances(self) -> tuple[str, ...]:
        """Return the retired instance ids, oldest first."""
        return tuple(self._retired)

    def _retire(self, instance: str) -> None:
        self._retired.pop(instance, None)
        self._retired[instance] = None
        while len(self._retired) > self._max_retired:
            self._retired.popitem(last=False)

    def observe_heartbeat(self, packet: Mapping[str, object], now: float) -> HeartbeatResult:
        """
        Apply one ``pylon_session`` heartbeat received at monotonic time ``now``.

        Malformed heartbeats raise ProtocolError; heartbeats that are well formed but out
        of order are reported as ``accepted=False`` with the reason.
        """
        key = SessionKey.from_envelope(packet)
        available = packet.get('available')
        if type(available) is not bool:
            raise ProtocolError('bad_field', 'expected a JSON bool', 'available')
        ut = packet.get('universalTime')
        if not _finite(ut):
            raise ProtocolError('bad_field', 'expected a finite number', 'universalTime')
        if packet.get('vesselId') != key.vessel_id:
            raise ProtocolError(
                'vessel_id_mismatch', 'vesselId must equal runtimeVesselId', 'vesselId'
            )
        sequence = packet.get('observationSequence')
        if sequence is not None and (not _is_int(sequence) or sequence < 0):
            raise ProtocolError('bad_field', 'expected an integer >= 0', 'observationSequence')
        if not _finite(now):
            raise ProtocolError('bad_time', 'now must be finite', 'now')

        current = self._key
        reason: str
        if key.instance in self._retired:
            return self._ignored('retired_instance')
        if current is None:
            reason = 'opened'
        elif key.instance != current.instance:
            self._retire(current.instance)
            reason = 'new_instance'
        elif key.generation < current.generation:
            return self._ignored('stale_generation')
        elif key.generation > current.generation:
            reason = 'new_generation'
        elif key != current:
            return self._ignored('conflicting_generation')
        else:
            if ut < self._last_ut:
                return self._ignored('universal_time_decreased')
            if self._last_sequence is not None:
                if sequence is None:
                    return self._ignored('missing_observation_sequence')
                if sequence <= self._last_sequence:
                    return self._ignored('stale_observation_sequence')
            if self._stale:
                reason = 'reopened'
            elif available != self._available:
                reason = 'availability_changed'
            else:
                reason = 'refreshed'

        changed = reason != 'refreshed'
        self._key = key
        self._available = available
        self._stale = False
        self._last_heartbeat = float(now)
        self._last_ut = float(ut)
        self._last_sequence = sequence
        return HeartbeatResult(True, reason, changed, key, available, current)

    def _ignored(self, reason: str) -> HeartbeatResult:
        return HeartbeatResult(False, reason, False, self._key, self.available, self._key)

    def admit(self, packet: Mapping[str, object], *, while_unavailable: bool = False) -> None:
        """
        Check that a non-heartbeat datagram belongs to the current session.

        Raise ProtocolError with reason ``no_session``, ``session_unavailable``,
        ``envelope_mismatch`` or ``vessel_id_mismatch`` when it must be dropped. A packet
        without ``vesselId`` passes on its envelope alone. ``while_unavailable`` admits a
        packet of the current session while it is not available (a notice about that).
        """
        if type(packet) is not dict and not isinstance(packet, Mapping):
            raise ProtocolError('bad_packet', 'expected a JSON object')
        key = self._key
        if key is None:
            raise ProtocolError('no_session', 'no session heartbeat accepted yet')
        if not self.available and not while_unavailable:
            raise ProtocolError('session_unavailable', 'the session is not available')
        generation = packet.get('runtimeGeneration')
        if (packet.get('runtimeInstance') == key.instance and type(generation) is int
                and generation == key.generation and packet.get('runtimeEpoch') == key.epoch
                and packet.get('runtimeVesselId') == key.vessel_id
                and packet.get('vesselId', key.vessel_id) == key.vessel_id):
            return                                  # the common case, checked at once
        for field, expected in zip(ENVELOPE_FIELDS, key.envelope().values(), strict=True):
            value = packet.get(field)
            if field == 'runtimeGeneration' and not _is_int(value):
                raise ProtocolError('envelope_mismatch', 'expected an integer', field)
            if value != expected:
                raise ProtocolError('envelope_mismatch', 'differs from the session', field)
        if 'vesselId' in packet and packet['vesselId'] != key.vessel_id:
            raise ProtocolError(
                'vessel_id_mismatch', 'vesselId differs from runtimeVesselId', 'vesselId'
            )

    def expire(self, now: float, timeout: float = DEFAULT_SESSION_TIMEOUT) -> bool:
        """
        Mark the session stale when no heartbeat came for more than ``timeout`` seconds.

        Return True only on the call that makes it stale.
        """
        if self._key is None or self._stale or self._last_heartbeat is None:
            return False
        if now - self._last_heartbeat > timeout:
            self._stale = True
            return True
        return False

    def can_send_command(self, now: float, timeout: float = DEFAULT_SESSION_TIMEOUT) -> bool:
        """Return True when a key exists, is available and its heartbeat is fresh."""
        return (
            self.available
            and self._last_heartbeat is not None
            and now - self._last_heartbeat < timeout
        )

    def command_envelope(self, now: float, timeout: float = DEFAULT_SESSION_TIMEOUT) -> dict:
        """
        Return the envelope fields to append to an outgoing command.

        Raise ProtocolError(``no_fresh_session``) when ``can_send_command`` is False.
        """
        if not self.can_send_command(now, timeout) or self._key is None:
            raise ProtocolError('no_fresh_session', 'no fresh active flight session')
        return self._key.envelope()


class UtClock:
    """
    Map universal time to receiver time with one fixed offset per session.

    The first sample with a finite universal time fixes
    ``offset = receipt_time - universal_time``; every later stamp is
    ``universal_time + offset``, so receive jitter never changes sample intervals. The
    offset is never re-based; call ``reset`` on a session change. A sample without a
    usable universal time is stamped with its receipt time. ``reset(floor)`` makes the next
    session start no earlier than ``floor`` (the last stamp of the previous one), so that
    stamps never go backwards across sessions either (e.g. after a revert that follows
    time warp, when mapped time had run ahead of the receiver's clock).
    """

    def __init__(self) -> None:
        self._offset: float | None = None
        self._floor: float | None = None

    @property
    def offset(self) -> float | None:
        """Return the current offset, or None before the first mapped sample."""
        return self._offset

    def stamp(self, ut: object, receipt_time: float) -> float:
        """Return the receiver time for a sample of universal time ``ut``."""
        offset = self._offset
        if offset is not None and type(ut) is float and ut - ut == 0.0:   # finite: the rule
            return ut + offset
        if not _finite(ut):
            return float(receipt_time)
        if self._offset is None:
            start = float(receipt_time)
            if self._floor is not None:
                start = max(start, self._floor)
            self._offset = start - float(ut)
        return float(ut) + self._offset

    def reset(self, floor: float | None = None) -> None:
        """Forget the offset; the next sample fixes a new one, starting at ``floor`` or later."""
        self._offset = None
        self._floor = floor if _finite(floor) else None


def _position(value: object) -> tuple[float, float, float] | None:
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)) or len(value) != 3:
        return None
    if not all(_finite(c) for c in value):
        return None
    return (float(value[0]), float(value[1]), float(value[2]))


@dataclass(frozen=True)
class _Observation:
    vessel_id: str
    topology_hash: object
    main_body: object
    available: bool
    position: tuple[float, float, float] | None
    ut: float | None


class RuntimeSession:
    """
    Mod-side runtime identity: instance, generation and epoch.

    The instance GUID is drawn once; every reset increments the generation and draws a
    new epoch GUID. ``observe`` is called with the current game state (each heartbeat,
    before encoding telemetry and before accepting a command) and resets when any of these
    changed since the previous call: active vessel, part topology hash, main body,
    availability; or when universal time went backwards; or, while available both times,
    the body-relative position jumped more than ``50 m + 2 * max_speed * dt``.

    The first call only records the baseline (generation stays 0).
    """

    def __init__(
        self, rng: random.Random | None = None, *, relocation_base: float = RELOCATION_BASE_METERS
    ) -> None:
        self._rng = rng if rng is not None else random.SystemRandom()
        self._relocation_base = float(relocation_base)
        self.instance = new_guid_hex(self._rng)
        self.generation = 0
        self.epoch = new_guid_hex(self._rng)
        self.vessel_id = ''
        self.available = False
        self._last: _Observation | None = None

    def reset(self) -> None:
        """Start a new epoch: increment the generation and draw a new epoch GUID."""
        self.generation += 1
        self.epoch = new_guid_hex(self._rng)

    def observe(
        self,
        active_vessel_id: str | None,
        topology_hash: object,
        main_body: object,
        available: bool,
        body_relative_position: Sequence[float] | None,
        max_speed: float,
        dt: float,
        ut: float | None,
    ) -> bool:
        """
        Record the game state; reset and return True when a reset trigger fired.

        ``max_speed`` is the larger speed of this and the previous observation (m/s),
        ``dt`` the time since the previous observation (s). Non-finite positions, speeds
        or times disable the checks that need them.
        """
        now = _Observation(
            vessel_id=active_vessel_id if isinstance(active_vessel_id, str) else '',
            topology_hash=topology_hash,
            main_body=main_body,
            available=bool(available),
            position=_position(body_relative_position),
            ut=float(ut) if _finite(ut) else None,
        )
        last = self._last
        fired = last is not None and self._triggered(last, now, max_speed, dt)
        if fired:
            self.reset()
        self._last = now
        self.vessel_id = now.vessel_id
        self.available = now.available
        return fired

    def _triggered(self, last: _Observation, now: _Observation, speed: object, dt: object) -> bool:
        if (
            now.vessel_id != last.vessel_id
            or now.topology_hash != last.topology_hash
            or now.main_body != last.main_body
            or now.available != last.available
        ):
            return True
        if now.ut is not None and last.ut is not None and now.ut < last.ut:
            return True
        if now.available and now.position is not None and last.position is not None:
            speed_v = abs(float(speed)) if _finite(speed) else 0.0
            dt_v = float(dt) if _finite(dt) and dt > 0 else 0.0
            jump = math.dist(now.position, last.position)
            if jump > self._relocation_base + 2.0 * speed_v * dt_v:
                return True
        return False

    def key(self) -> SessionKey:
        """Return the current identity as a SessionKey."""
        return SessionKey(self.instance, self.generation, self.epoch, self.vessel_id)

    def envelope(self) -> dict[str, object]:
        """Return the four envelope fields, in wire order, to prepend to state packets."""
        return self.key().envelope()

    def accept_command(self, fields: Mapping[str, object]) -> bool:
        """
        Return True when a decoded command may be applied.

        It must arrive while available, carry ``version == 1``, a ``type`` starting with
        ``pylon_``, and all four envelope fields equal to the current ones (strings compared
        exactly, the generation numerically). The caller re-observes first.
        """
        if not isinstance(fields, Mapping) or not self.available:
            return False
        version = fields.get('version')
        kind = fields.get('type')
        if not _finite(version) or version != 1:
            return False
        if not isinstance(kind, str) or not kind.startswith('pylon_'):
            return False
        generation = fields.get('runtimeGeneration')
        if not _finite(generation) or generation != self.generation:
            return False
        return (
            fields.get('runtimeInstance') == self.instance
            and fields.get('runtimeEpoch') == self.epoch
            and fields.get('runtimeVesselId') == self.vessel_id
        )
