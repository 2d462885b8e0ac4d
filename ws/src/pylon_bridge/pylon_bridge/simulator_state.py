"""The game's health and progress from its heartbeats: ``SimulatorState`` and universal time.

The mod sends ``pylon_session`` at 10 Hz of wall time, also while the game is paused or the
vessel packed (on rails), so this is the one view of the game that never stops. Each
heartbeat the session tracker accepted comes here; ``SimulatorTracker.observe`` derives the
state from it (heartbeat health on the wall clock, progress on KSP UT, the stall judged on
the game's own ``realtimeSinceStartup`` so that receipt delay does not count):

- *reset*: the identity (instance, generation, epoch, vessel) changed, the last state was
  STALE, or ``paused`` changed; *progressing*: not a reset, not paused, and UT rose;
- ``state``: no vessel -> UNAVAILABLE; paused -> PAUSED; progressing -> ADVANCING; UT still
  for ``STALL_SEC`` or more of the game's wall time -> STALLED; else INITIALIZING;
- a heartbeat without ``observationSequence`` (an older mod) is skipped; one that goes
  backwards within the same identity (sequence, game wall time or UT) is not published.

``stale`` publishes STALE once when no heartbeat arrived for ``--topic-timeout-sec``; the
next heartbeat is a reset. Plain logic: the core turns the fields into messages.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pylon_common.stamps import to_time
from pylon_interfaces.msg import SimulatorState

STALL_SEC = 0.5
"""UT standing still this long (game wall time, not paused) makes the game STALLED."""


@dataclass(frozen=True)
class Observed:
    """What the last published heartbeat said, and the state derived from it."""

    identity: tuple[str, int, str, str]
    observation_sequence: int
    universal_time: float
    realtime: float
    paused: bool
    packed: bool
    physics_warp: bool
    available: bool
    warp_rate: float
    state: int
    advancing: bool
    seconds_since_progress: float
    alive: bool = True
    heartbeat_age: float = 0.0


def _identity(packet: dict) -> tuple[str, int, str, str]:
    return (packet['runtimeInstance'], int(packet['runtimeGeneration']),
            packet['runtimeEpoch'], packet['runtimeVesselId'])


class SimulatorTracker:
    """Derives ``SimulatorState`` from accepted heartbeats and their silence."""

    def __init__(self) -> None:
        """Start with nothing observed."""
        self.last: Observed | None = None
        self.last_progress = 0.0          # game wall time at the last reset or progress
        self.received_at: float | None = None   # monotonic receipt of the last heartbeat
        self.skipped = 0                  # heartbeats of an older mod (no observationSequence)
        self.backwards = 0                # heartbeats not published: older than the last

    def observe(self, packet: dict, now: float) -> Observed | None:
        """Return the state after an accepted heartbeat, or None when it is not published."""
        if 'observationSequence' not in packet:
            self.skipped += 1
            return None
        identity = _identity(packet)
        ut, realtime = float(packet['universalTime']), float(packet['realtimeSinceStartup'])
        sequence, paused = int(packet['observationSequence']), bool(packet['paused'])
        last = self.last
        if last is not None and last.alive and identity == last.identity and (
                sequence <= last.observation_sequence or realtime < last.realtime
                or ut < last.universal_time):
            self.backwards += 1
            return None
        self.received_at = now
        reset = (last is None or identity != last.identity or not last.alive
                 or paused != last.paused)
        progressing = not reset and not paused and ut > last.universal_time
        if reset or progressing or paused:
            self.last_progress = realtime
        since = max(0.0, realtime - self.last_progress)
        if not identity[3]:
            state = SimulatorState.STATE_UNAVAILABLE
        elif paused:
            state = SimulatorState.STATE_PAUSED
        elif progressing:
            state = SimulatorState.STATE_ADVANCING
        elif since >= STALL_SEC:
            state = SimulatorState.STATE_STALLED
        else:
            state = SimulatorState.STATE_INITIALIZING
        self.last = Observed(identity, sequence, ut, realtime, paused, bool(packet['packed']),
                             bool(packet['physicsWarp']), bool(packet['available']),
                             float(packet['warpRate']), state, progressing, since)
        return self.last

    def stale(self, now: float, timeout: float) -> Observed | None:
        """Return the STALE state once when the heartbeats stopped for ``timeout``."""
        last = self.last
        if last is None or not last.alive or self.received_at is None:
            return None
        age = now - self.received_at
        if age < timeout:
            return None
        self.last = replace(last, alive=False, state=SimulatorState.STATE_STALE,
                            advancing=False, heartbeat_age=age)
        return self.last


def message(observed: Observed, stamp: float) -> SimulatorState:
    """Return ``observed`` as a ``SimulatorState`` stamped ``stamp`` (bridge time)."""
    msg = SimulatorState()
    msg.header.stamp = to_time(stamp)
    msg.runtime_instance, msg.runtime_generation, msg.runtime_epoch, msg.vessel_id = \
        observed.identity
    msg.observation_sequence = observed.observation_sequence
    msg.state = observed.state
    msg.communication_alive = observed.alive
    msg.paused, msg.packed = observed.paused, observed.packed
    msg.physics_warp = observed.physics_warp
    msg.control_available = observed.available
    msg.simulation_advancing = observed.advancing
    msg.universal_time = observed.universal_time
    msg.realtime_since_startup = observed.realtime
    msg.warp_rate = observed.warp_rate
    msg.seconds_since_progress = observed.seconds_since_progress
    msg.heartbeat_age_sec = observed.heartbeat_age
    return msg
