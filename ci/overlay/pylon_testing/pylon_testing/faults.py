"""A UDP relay between the simulator and the bridge that breaks the network on purpose.

``Relay(state_to, command_to)`` listens on two ports of its own: the simulator sends its
state datagrams to ``relay.state_port`` (instead of the bridge's port) and the bridge its
commands to ``relay.command_port`` (instead of the simulator's); the relay forwards each to
``state_to`` / ``command_to`` with the faults in force for that direction
(``Faults``): it drops (``loss``), duplicates (``duplicate``), delays (``delay`` plus a
uniform ``jitter``), and reorders (holds a datagram back by ``reorder_delay``, so the next
ones overtake it). ``partition(seconds)`` drops everything in both directions for that long
(of wall time: it stands for the network, which runs on the wall clock). Every decision
comes from one random generator seeded by ``seed`` in the order the datagrams arrive, so a
run is reproducible up to the timing of the processes. ``stats`` counts what happened;
``wait_for`` waits (on a condition the relay notifies, no polling) until the counts say so.

It runs in a thread of the test process; ``close()`` stops it. Nothing here is ROS.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
import heapq
import random
import select
import socket
import threading
import time

STATE = 'state'            # simulator -> bridge
COMMAND = 'command'        # bridge -> simulator
POLL_SEC = 0.01
RECEIVE_BUFFER_BYTES = 4 << 20     # as the bridge's: a burst of the simulator fits


@dataclass(frozen=True)
class Faults:
    """What the relay does to the datagrams of one direction (probabilities, seconds)."""

    loss: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0
    delay: float = 0.0
    jitter: float = 0.0
    reorder_delay: float = 0.05


NONE = Faults()


class Relay:
    """Forward the two directions between simulator and bridge, with faults."""

    def __init__(self, state_to: tuple[str, int], command_to: tuple[str, int],
                 seed: int = 0, host: str = '127.0.0.1') -> None:
        """Bind the two listening ports and start forwarding (no faults yet)."""
        self.rng = random.Random(seed)
        self.targets = {STATE: state_to, COMMAND: command_to}
        self.sockets = {}
        for direction in (STATE, COMMAND):
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER_BYTES)
            sock.bind((host, 0))
            sock.setblocking(False)
            self.sockets[direction] = sock
        self.out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.faults = {STATE: NONE, COMMAND: NONE}
        self.partitioned_until = 0.0
        self.stats: Counter = Counter()
        self._queue: list[tuple[float, int, bytes, str]] = []
        self._order = 0
        self._lock = threading.Lock()
        self._counted = threading.Condition()       # notified on every change of ``stats``
        self._running = True
        self._thread = threading.Thread(target=self._loop, name='pylon_fault_relay',
                                        daemon=True)
        self._thread.start()

    @property
    def state_port(self) -> int:
        """Return the port the simulator must send its state datagrams to."""
        return self.sockets[STATE].getsockname()[1]

    @property
    def command_port(self) -> int:
        """Return the port the bridge must send its commands to."""
        return self.sockets[COMMAND].getsockname()[1]

    def wait_for(self, predicate, timeout: float, what: str = 'the counts') -> None:
        """Wait until ``predicate(stats)`` holds; TimeoutError after ``timeout`` seconds."""
        with self._counted:
            if not self._counted.wait_for(lambda: predicate(self.stats), timeout):
                raise TimeoutError(f'{what} did not hold within {timeout} s: {dict(self.stats)}')

    def _count(self, key: str, amount: int = 1) -> None:
        with self._counted:
            self.stats[key] += amount
            self._counted.notify_all()

    def set(self, faults: Faults, direction: str | None = None) -> None:
        """Put ``faults`` in force for one direction (``STATE``, ``COMMAND``) or both."""
        with self._lock:
            for name in (direction,) if direction else (STATE, COMMAND):
                self.faults[name] = faults

    def partition(self, seconds: float) -> None:
        """Drop every datagram, both directions, for ``seconds`` from now."""
        with self._lock:
            self.partitioned_until = time.monotonic() + seconds

    @property
    def partitioned(self) -> bool:
        """Tell whether a partition is in force now."""
        return time.monotonic() < self.partitioned_until

    def heal(self) -> None:
        """End every fault and the partition."""
        with self._lock:
            self.faults = {STATE: NONE, COMMAND: NONE}
            self.partitioned_until = 0.0

    def _receive(self, direction: str, now: float) -> None:
        sock = self.sockets[direction]
        while True:
            try:
                data = sock.recv(65535)
            except OSError:
                return
            self._count(f'{direction}.received')
            with self._lock:
                self._decide(direction, data, now)

    def _decide(self, direction: str, data: bytes, now: float) -> None:
        faults, rng = self.faults[direction], self.rng
        if now < self.partitioned_until:
            self._count(f'{direction}.partitioned')
            return
        if rng.random() < faults.loss:
            self._count(f'{direction}.dropped')
            return
        copies = 2 if rng.random() < faults.duplicate else 1
        self._count(f'{direction}.duplicated', copies - 1)
        for _ in range(copies):
            wait = faults.delay + (rng.uniform(-faults.jitter, faults.jitter)
                                   if faults.jitter else 0.0)
            if rng.random() < faults.reorder:
                wait += faults.reorder_delay
                self._count(f'{direction}.held_back')
            self._order += 1
            heapq.heappush(self._queue, (now + max(0.0, wait), self._order, data, direction))

    def _send_due(self, now: float) -> None:
        with self._lock:
            due = []
            while self._queue and self._queue[0][0] <= now:
                due.append(heapq.heappop(self._queue))
        for _, _, data, direction in due:
            try:
                self.out.sendto(data, self.targets[direction])
                self._count(f'{direction}.forwarded')
            except OSError:              # nobody listening (a process is down): lost
                self._count(f'{direction}.unreachable')

    def _loop(self) -> None:
        sockets = {sock: direction for direction, sock in self.sockets.items()}
        while self._running:
            with self._lock:
                next_due = self._queue[0][0] if self._queue else None
            timeout = POLL_SEC if next_due is None else max(
                0.0, min(POLL_SEC, next_due - time.monotonic()))
            try:
                readable, _, _ = select.select(list(sockets), [], [], timeout)
            except (OSError, ValueError):
                return                                   # closed under us
            now = time.monotonic()
            for sock in readable:
                self._receive(sockets[sock], now)
            self._send_due(time.monotonic())

    def close(self) -> None:
        """Stop forwarding and close the sockets."""
        self._running = False
        self._thread.join(timeout=2.0)
        for sock in (*self.sockets.values(), self.out):
            sock.close()
