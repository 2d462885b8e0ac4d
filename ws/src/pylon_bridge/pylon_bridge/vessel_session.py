"""The vessel's session as ROS sees it (``VesselLifecycle``): state, generations, model.

Not a ROS managed-node lifecycle: this is the seed's vessel lifecycle, the identity and
frames of the vessel the bridge serves. Rules (plain class, no rclpy node):

- ``generation`` (ROS side) goes up by one on every change of the runtime identity the
  bridge accepts: the first session, a vessel switch, a UT rewind (revert/quickload),
  recovery after a session timeout, a restarted KSP, and every other runtime reset of
  the mod (pack/unpack or on-rails warp, SOI change, topology change by staging or
  docking, a discontinuous relocation). Each is a new runtime epoch of the mod, after
  which its ground-truth origin, its vessel model and any lease no longer hold.
- ``state``: ``CHANGED`` is published with every new generation (``reason`` says why);
  ``ACTIVE`` follows with the next heartbeat of that session (``session_current``: the
  lifecycle comes from the heartbeat, independent of the sensors) or the first
  measurement of the generation if that comes first (ground truth, or the IMU with
  ground truth disabled; ``measuring``); ``UNAVAILABLE`` while the mod says no vessel is
  available (not in flight, no active vessel, or packed) and before any session;
  ``STALE`` after ``--topic-timeout-sec`` without a heartbeat.
- ``origin_sequence`` counts the ground-truth ENU origins seen: it goes up when a new
  generation starts and when the mod moves its origin within one (its ``originSequence``).
- ``model_ready``/``model_id``: a validated model of the current vessel is complete;
  cleared at once when the vessel changes or the model is withdrawn.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from builtin_interfaces.msg import Time
from pylon_common.stamps import to_time
from pylon_interfaces.msg import VesselLifecycle
from std_msgs.msg import String

from pylon_bridge.actions import Publish

UNAVAILABLE = VesselLifecycle.STATE_UNAVAILABLE
ACTIVE = VesselLifecycle.STATE_ACTIVE
CHANGED = VesselLifecycle.STATE_CHANGED
STALE = VesselLifecycle.STATE_STALE
STATE_NAMES = {UNAVAILABLE: 'UNAVAILABLE', ACTIVE: 'ACTIVE', CHANGED: 'CHANGED', STALE: 'STALE'}

REASON_BRIDGE_STARTED = 'bridge_started'
REASON_SESSION_STARTED = 'session_started'
REASON_VESSEL_CHANGED = 'vessel_changed'
REASON_TIME_REWIND = 'time_rewind'
REASON_SESSION_RECOVERED = 'session_recovered'
REASON_RUNTIME_RESTARTED = 'runtime_restarted'
REASON_RUNTIME_RESET = 'runtime_reset'
REASON_VESSEL_UNAVAILABLE = 'vessel_unavailable'
REASON_SESSION_TIMEOUT = 'session_timeout'
REASON_MEASURING = 'measuring'
REASON_SESSION_CURRENT = 'session_current'
REASON_MODEL_READY = 'model_ready'
REASON_MODEL_CLEARED = 'model_cleared'
REASONS = (REASON_BRIDGE_STARTED, REASON_SESSION_STARTED, REASON_VESSEL_CHANGED,
           REASON_TIME_REWIND, REASON_SESSION_RECOVERED, REASON_RUNTIME_RESTARTED,
           REASON_RUNTIME_RESET, REASON_VESSEL_UNAVAILABLE, REASON_SESSION_TIMEOUT,
           REASON_MEASURING, REASON_SESSION_CURRENT, REASON_MODEL_READY,
           REASON_MODEL_CLEARED)


@dataclass(frozen=True)
class VesselSessionState:
    """Everything a VesselLifecycle message carries, except the header."""

    state: int = UNAVAILABLE
    vessel_id: str = ''
    vessel_name: str = ''
    runtime_instance: str = ''
    runtime_epoch: str = ''
    runtime_generation: int = 0
    generation: int = 0
    origin_sequence: int = 0
    world_frame: str = ''
    body_frame: str = 'base_link'
    model_ready: bool = False
    model_id: str = ''
    reason: str = REASON_BRIDGE_STARTED


class VesselSession:
    """Tracks the vessel session; every method returns the new state if it changed, else None."""

    def __init__(self, world_frame: str) -> None:
        """Start UNAVAILABLE; ``world_frame`` is '' when ground truth is disabled."""
        self.current = VesselSessionState(world_frame=world_frame)
        self._mod_origin: int | None = None
        self._measured = False
        self._last_ut: float | None = None

    def _set(self, **changes) -> VesselSessionState | None:
        new = replace(self.current, **changes)
        if new == self.current:
            return None
        self.current = new
        return new

    def session(self, key, vessel_name: str, available: bool, ut: float, changed: bool,
                reopened: bool) -> VesselSessionState | None:
        """Apply an accepted heartbeat of runtime ``key`` (a pylon_protocol SessionKey)."""
        previous = self.current
        if not available:
            self._measured = False
            return self._set(state=UNAVAILABLE, reason=REASON_VESSEL_UNAVAILABLE,
                             vessel_id=key.vessel_id, vessel_name=vessel_name,
                             runtime_instance=key.instance, runtime_epoch=key.epoch,
                             runtime_generation=key.generation, model_ready=False,
                             model_id='')
        if changed or previous.state in (UNAVAILABLE, STALE):
            reason = self._why(key, ut, reopened)
            self._measured = False
            self._mod_origin = None
            self._last_ut = ut
            return self._set(state=CHANGED, reason=reason, vessel_id=key.vessel_id,
                             vessel_name=vessel_name, runtime_instance=key.instance,
                             runtime_epoch=key.epoch, runtime_generation=key.generation,
                             generation=previous.generation + 1,
                             origin_sequence=previous.origin_sequence + 1,
                             model_ready=False, model_id='')
        self.note_ut(ut)
        if previous.state == CHANGED:         # the session's next heartbeat: it is current
            self._measured = True
            return self._set(state=ACTIVE, reason=REASON_SESSION_CURRENT,
                             vessel_name=vessel_name)
        return self._set(vessel_name=vessel_name)

    def _why(self, key, ut: float, reopened: bool) -> str:
        previous = self.current
        if previous.generation == 0:
            return REASON_SESSION_STARTED
        if reopened or previous.state == STALE:
            return REASON_SESSION_RECOVERED
        if previous.runtime_instance and key.instance != previous.runtime_instance:
            return REASON_RUNTIME_RESTARTED
        if key.vessel_id != previous.vessel_id:
            return REASON_VESSEL_CHANGED
        if self._last_ut is not None and ut < self._last_ut:
            return REASON_TIME_REWIND
        return REASON_RUNTIME_RESET

    def note_ut(self, ut: float) -> None:
        """Note the UT of an accepted measurement.

        A rewind is then seen even when the last heartbeat before it was older than the
        measurements that followed it.
        """
        if self._last_ut is None or ut > self._last_ut:
            self._last_ut = ut

    def measured(self) -> VesselSessionState | None:
        """Note the first measurement of the generation: CHANGED becomes ACTIVE."""
        if self._measured or self.current.state != CHANGED:
            return None
        self._measured = True
        return self._set(state=ACTIVE, reason=REASON_MEASURING)

    def mod_origin(self, origin_sequence: int) -> VesselSessionState | None:
        """Note the mod's ground-truth ``originSequence``; a new one is a new origin."""
        if self._mod_origin is None:
            self._mod_origin = origin_sequence
            return None
        if origin_sequence == self._mod_origin:
            return None
        self._mod_origin = origin_sequence
        return self._set(origin_sequence=self.current.origin_sequence + 1)

    def model(self, model_id: str) -> VesselSessionState | None:
        """Note a complete model of the current vessel ('' when withdrawn)."""
        reason = REASON_MODEL_READY if model_id else REASON_MODEL_CLEARED
        if model_id == self.current.model_id and bool(model_id) == self.current.model_ready:
            return None
        return self._set(model_ready=bool(model_id), model_id=model_id, reason=reason)

    def stale(self) -> VesselSessionState | None:
        """Note a session timeout."""
        if self.current.state == STALE:
            return None
        self._measured = False
        return self._set(state=STALE, reason=REASON_SESSION_TIMEOUT, model_ready=False,
                         model_id='')


def lifecycle_message(state: VesselSessionState, stamp: Time) -> VesselLifecycle:
    """Return the ``VesselLifecycle`` message of ``state``, stamped ``stamp``."""
    msg = VesselLifecycle(**asdict(state))
    msg.header.stamp = stamp
    msg.header.frame_id = state.world_frame
    return msg


def status_text(state: VesselSessionState) -> str:
    """Return the bridge status line of ``state`` (``/pylon/status``)."""
    vessel = f'{state.vessel_name or "-"} ({state.vessel_id or "-"})'
    return (f'{STATE_NAMES[state.state].lower()}: {vessel} generation {state.generation}, '
            f'{state.reason}')


def changed(state: VesselSessionState | None, ros_now: float, status: bool = False) -> list:
    """Return the actions of a changed state: the lifecycle (and the status line if asked).

    ``state`` None (nothing changed) gives no action.
    """
    if state is None:
        return []
    out = [Publish('lifecycle', lifecycle_message(state, to_time(ros_now)))]
    if status:
        out.append(Publish('status', String(data=status_text(state))))
    return out
