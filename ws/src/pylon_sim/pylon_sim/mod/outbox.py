"""The mod's send path: build, check and encode a state packet, then send it or hold it.

A frame's datagrams are held while the frame runs and sent together, in the order they were
built, when it ends (``Outbox.sending``); outside a frame each goes at once. A packet whose
datagram would pass its size limit is not sent (counted by type in ``Stats.oversize``), as
the mod omits it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
import contextlib
from dataclasses import dataclass
import logging
import socket
import time

from pylon_protocol import packets
from pylon_protocol.envelope import Envelope

LOG = logging.getLogger('pylon_sim')

MAX_DATAGRAM_BYTES = 65000
LOG_THROTTLE_SEC = 5.0

#: ``Outbox.emit``: ``(type name, payload[, max_bytes])`` -> the packet sent, or None
Emit = Callable[..., 'dict | None']


@dataclass
class Stats:
    """Counters the status line and the benchmark read."""

    frames: int = 0
    lockstep_lapses: int = 0      # waits for a controller that ran out (``Simulator.hold``)
    idle_updates: int = 0         # looks during lock-step waits: Unity frames without physics

    @property
    def frame_count(self) -> int:
        """Return Unity's ``Time.frameCount`` (``observationSequence``): every frame.

        The frames with a physics step and the looks between them while a lock-step waits
        (Unity renders on while no physics step runs): it rises with each, so the
        heartbeats sent during a wait are newer than the last frame's, as the receiver
        requires.
        """
        return self.frames + self.idle_updates

    def __post_init__(self) -> None:
        self.sent = Counter()
        self.sent_bytes = Counter()
        self.encode_seconds = Counter()
        self.commands = Counter()
        self.command_rejected = Counter()
        self.dropped_oversize = 0
        self.oversize = Counter()       # packets not sent for their size, by type


class Throttle:
    """Log a message of one kind at most once per ``LOG_THROTTLE_SEC`` of wall time."""

    def __init__(self) -> None:
        """Let every kind log at once."""
        self._times: dict[str, float] = defaultdict(lambda: -1e9)

    def log(self, key: str, message: str, level: int = logging.WARNING) -> None:
        """Log ``message`` unless one of kind ``key`` went out less than the period ago."""
        now = time.monotonic()
        if now - self._times[key] >= LOG_THROTTLE_SEC:
            self._times[key] = now
            LOG.log(level, message)


class UdpSender:
    """Send datagrams to one address; a datagram UDP cannot send is lost (and logged)."""

    def __init__(self, addr: tuple[str, int], throttle: Throttle) -> None:
        """Open the socket."""
        self.addr = addr
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._throttle = throttle

    def __call__(self, data: bytes) -> None:
        """Send one datagram."""
        try:
            self.sock.sendto(data, self.addr)
        except OSError as exc:   # nobody listening, or a full buffer: UDP loses it
            self._throttle.log('send', f'state datagram not sent: {exc}')


class Outbox:
    """Build, validate, encode and send the state packets of one game, in order."""

    def __init__(self, send: Callable[[bytes], None], envelope: Callable[[], Envelope],
                 stats: Stats, throttle: Throttle, check_packets: bool = True) -> None:
        """Send through ``send``, each packet in the runtime envelope ``envelope()`` returns.

        ``check_packets`` validates every packet against the protocol's schema
        (``packets.build_state``); without it the packet is assembled unchecked
        (``packets.assemble_state``), as the mod sends it.
        """
        self.send = send
        self._envelope = envelope
        self.stats = stats
        self._throttle = throttle
        self._build = packets.build_state if check_packets else packets.assemble_state
        self._held: list[bytes] | None = None   # a frame's datagrams, sent as it ends

    def emit(self, type_name: str, payload: dict,
             max_bytes: int = MAX_DATAGRAM_BYTES) -> dict | None:
        """Build, validate, encode and send one state packet; return it (None if too big)."""
        start = time.perf_counter()
        packet = self._build(type_name, self._envelope(), **payload)
        data = packets.encode_built_state(packet)
        self.stats.encode_seconds[type_name] += time.perf_counter() - start
        if len(data) > max_bytes:
            self.stats.dropped_oversize += 1
            self.stats.oversize[type_name] += 1
            self._throttle.log('oversize', f'{type_name} of {len(data)} B not sent')
            return None
        self.stats.sent[type_name] += 1
        self.stats.sent_bytes[type_name] += len(data)
        if self._held is None:
            self.send(data)
        else:
            self._held.append(data)
        return packet

    @contextlib.contextmanager
    def sending(self) -> Iterator[None]:
        """Hold the packets emitted inside, and send them (in order) when it ends."""
        self.hold()
        try:
            yield
        finally:
            self.release()

    def hold(self) -> None:
        """Hold every packet emitted from now on (a frame's), until ``release``."""
        self._held = []

    def release(self) -> None:
        """Send the held packets in the order they were emitted; send at once from now on."""
        held, self._held = self._held, None
        for data in held or ():
            self.send(data)
