"""Lock-step: hold a game's clock for the lease owner's controller (``--lockstep-lead``).

The clock runs at most ``lead`` game seconds past the last body wrench or typed actuator
command (a rover's wheel commands) accepted from the lease owner; then the game reads commands
(and sends their answers) but runs no frame until the next one comes, for at most a given
wall time. A controller that misses that has stopped or stalled for good: the game runs free
until its next command. While it waits, the game goes on sending what the mod keeps on wall
time (the heartbeat, the model, manifests, health: ``reports.WALL_KEPT``), as Unity's
``Update`` runs between physics steps: a wait longer than the receiver's session timeout
(3 s) must not make a live vessel's session stale.
"""

from __future__ import annotations

from collections.abc import Callable
import select
import socket
import time

from pylon_sim.mod.outbox import Stats, Throttle
from pylon_sim.mod.vehicle_manager import VehicleManager

IDLE_PERIOD = 0.05
"""s of wall time between two looks at the wall-kept packets during a wait (the fastest,
the heartbeat, is 10 Hz)."""


class Lockstep:
    """When a game is ahead of its controller, and the wait for it."""

    def __init__(self, stats: Stats, throttle: Throttle) -> None:
        """Count lapses in ``stats``; log them through ``throttle``."""
        self.stats = stats
        self._throttle = throttle
        self._lapsed: float | None = None   # the wrench after which a wait ran out

    def behind(self, lead: float | None, clock: float, control: VehicleManager,
               running: bool) -> bool:
        """Tell whether the lease owner's last wrench is ``lead`` or more ago at ``clock``.

        ``running``: the game reads commands and runs (not paused, available); a game
        without ``lead``, not running or not owned is never behind, nor one whose lease
        has sent nothing yet (a new lease: its controller may tick only on the game's
        clock, so waiting for it before its first command would stop both).
        """
        received = control.paced_at
        return (lead is not None and running and control.authority.owned
                and received is not None and received != self._lapsed
                and control.paced_by == control.authority.owner    # this lease's own
                and clock - received >= lead - 1e-9)

    def wait(self, sock: socket.socket, limit: float, behind: Callable[[], bool],
             read: Callable[[], None], waiting_for: float | None) -> float:
        """Read ``sock`` (``read``) until not ``behind()`` or ``limit`` s of wall time.

        ``read`` runs at least every ``IDLE_PERIOD`` s of the wait (it sends the wall-kept
        packets too).
        ``waiting_for`` is the wrench the game is past; a wait that runs out lets the game
        run free until a later one. Return the wall seconds waited.
        """
        start = time.monotonic()
        while (left := start + limit - time.monotonic()) > 0:
            select.select([sock], [], [], min(left, IDLE_PERIOD))
            read()
            if not behind():
                return time.monotonic() - start
        self._lapsed = waiting_for
        self.stats.lockstep_lapses += 1
        self._throttle.log('lockstep', f'lockstep: no wrench for {limit:g} s of wall time; '
                           'the game runs free until the controller sends again')
        return time.monotonic() - start
