"""The mod's runtime session and its time, as the bridge follows them.

Heartbeats (``pylon_session``) open, refresh and replace the session (PROTOCOL.md §1.4, the
rules live in ``pylon_protocol.session.SessionTracker``); every other datagram must match
it. KSP universal time maps to ROS time with one fixed offset per session
(``MappedTime`` over ``pylon_protocol.session.UtClock``), set by the session's first sample
and never re-based in flight, so sample intervals keep KSP's physics intervals; a new
session starts no earlier than the last stamp of the old one (``latest_stamp``, also what
``/clock`` publishes). ``paused`` is the last heartbeat's pause flag: no new measurement is
published while it is set.

A ``SessionTime`` may stamp on another one's ``MappedTime`` (the ground-truth core of
``--ground-truth-domain`` on the bridge core's): both follow the same heartbeats, the owner
resets the mapping on a session change, and every stamp is the one a single core gives.
"""

from __future__ import annotations

from typing import Any

from pylon_protocol.errors import ProtocolError
from pylon_protocol.session import SessionTracker, UtClock

MAX_STAMP_SEC = float(2**31)
"""The first second a ``builtin_interfaces/Time`` cannot hold (its ``sec`` is an int32)."""


class MappedTime:
    """KSP time -> ROS time, one offset per session, and the newest stamp given out."""

    def __init__(self) -> None:
        """Start with no offset and no stamp."""
        self.clock = UtClock()
        self.latest_stamp: float | None = None

    def stamp(self, ut: Any, ros_now: float) -> float:
        """Return the ROS time of KSP time ``ut`` (``ros_now`` when there is none).

        Raise ProtocolError (``out_of_range``) when the mapped time is not one a message
        stamp can hold (a UT of 1e308 in a datagram of the session): such a stamp would
        fail the publish, and as the newest stamp it would start the next session there.
        """
        stamp = self.clock.stamp(ut, ros_now)
        if not 0.0 <= stamp < MAX_STAMP_SEC:
            raise ProtocolError('out_of_range', f'universalTime {ut!r} maps to {stamp:g} s, '
                                'beyond a ROS time stamp', 'universalTime')
        if ut is not None and (self.latest_stamp is None or stamp > self.latest_stamp):
            self.latest_stamp = stamp
        return stamp

    def reset(self) -> None:
        """Forget the offset; the next sample sets it, no earlier than the newest stamp."""
        self.clock.reset(floor=self.latest_stamp)


class SessionTime:
    """The runtime session, the UT -> ROS clock (``mapped.stamp``), and whether it is paused."""

    def __init__(self, mapped: MappedTime | None = None) -> None:
        """Start with no session; stamp on ``mapped`` (owned by another) if given."""
        self.tracker = SessionTracker()
        self.owns_mapping = mapped is None
        self.mapped = MappedTime() if mapped is None else mapped
        self.paused = False

    @property
    def latest_stamp(self) -> float | None:
        """Return the newest UT-mapped stamp given out."""
        return self.mapped.latest_stamp

    def heartbeat(self, packet: dict, now: float) -> Any:
        """Apply a heartbeat (``SessionTracker.observe_heartbeat``); note the pause flag.

        Raise ProtocolError for a malformed heartbeat; the result says whether it was
        accepted and whether the session changed.
        """
        result = self.tracker.observe_heartbeat(packet, now)
        if result.accepted:
            self.paused = bool(packet.get('paused', False))
        return result

    def admit(self, packet: dict, while_unavailable: bool = False) -> None:
        """Raise ProtocolError unless ``packet`` belongs to the current session."""
        self.tracker.admit(packet, while_unavailable=while_unavailable)

    def expire(self, now: float, timeout: float) -> bool:
        """Return whether the session just timed out (no heartbeat for ``timeout``)."""
        return self.tracker.expire(now, timeout)

    def new_session(self) -> None:
        """Forget the clock's offset: the next sample of the new session sets it.

        The new session's time starts no earlier than the newest stamp of the old one, so
        stamps (and ``/clock``) never go backwards, not even after a revert. A borrowed
        mapping is left to its owner, which saw the same session change first.
        """
        if self.owns_mapping:
            self.mapped.reset()

    def command_envelope(self, now: float, timeout: float) -> dict:
        """Return the envelope of a command for the current, fresh session (ProtocolError)."""
        return self.tracker.command_envelope(now, timeout)
