"""The simulator driven as the bridge drives it: command datagrams in, state datagrams out.

``harness(...)`` returns a ``Harness``: a lock-stepped ``Simulator`` whose state datagrams
are decoded and validated as they leave (``packets.decode_state``) and whose command
socket is a queue the test fills with datagrams addressed to the current runtime session.
Scenarios can be made lean (the LiDAR and camera modules left out, their parts kept) and
changed per vessel, written to a temporary file.
"""

from collections import deque
import json

from pylon_protocol import packets, wire
from pylon_sim.runtime import Simulator
from pylon_sim.scenario import load_scenario
from pylon_testing.scenarios import write_scenario
import pytest


class Capture:
    """Collect every state datagram, decoded and validated, with the frame it left in."""

    def __init__(self) -> None:
        self.packets: list[dict] = []
        self.frames: list[int] = []
        self.sim: Simulator | None = None

    def __call__(self, data: bytes) -> None:
        self.packets.append(packets.decode_state(data))
        self.frames.append(self.sim.stats.frames if self.sim is not None else 0)

    def of(self, type_name: str) -> list[dict]:
        return [p for p in self.packets if p['type'] == type_name]

    def clear(self) -> None:
        self.packets.clear()
        self.frames.clear()


class CommandPort:
    """A command socket stand-in: the datagrams queued by the test, then nothing."""

    def __init__(self) -> None:
        self.queue: deque[bytes] = deque()

    def recvfrom(self, size: int) -> tuple[bytes, tuple[str, int]]:
        if not self.queue:
            raise BlockingIOError
        return self.queue.popleft(), ('127.0.0.1', 0)

    def close(self) -> None:
        self.queue.clear()


class Harness:
    """A simulator, what it sent, and a way to send it commands."""

    def __init__(self, path: str, seed: int = 2) -> None:
        self.capture = Capture()
        self.port = CommandPort()
        self.sim = Simulator(load_scenario(path, seed=seed), send=self.capture,
                             command_sock=self.port, seed=seed)
        self.capture.sim = self.sim
        self.sequence = 0
        self.controller, self.lease = 'ctl', 'lease-1'

    @property
    def vessel_id(self) -> str:
        return self.sim.world.active.vessel_id

    def identity(self, **changes) -> dict:
        """Return the next command identity of this controller (fields may be changed)."""
        self.sequence += 1
        return {'vesselId': self.vessel_id, 'controllerId': self.controller,
                'leaseId': self.lease, 'sequence': self.sequence, **changes}

    def send(self, type_name: str, **fields) -> None:
        """Queue one command datagram for the current runtime session (built, validated)."""
        packet = packets.build_command(type_name, self.sim.envelope, **fields)
        self.port.queue.append(wire.encode_command(packet))

    def send_raw(self, packet: dict) -> None:
        """Queue a datagram as given, with the current envelope added (not validated)."""
        envelope = self.sim.envelope.to_wire()
        self.port.queue.append(json.dumps({**packet, **envelope}).encode())

    def acquire(self, duration: float = 10.0, suppress_sas: bool = False) -> None:
        """Take the lease now (one frame)."""
        self.send('pylon_control_authority_command', action='acquire', priority=0,
                  leaseDurationSeconds=duration, suppressSas=suppress_sas, **self.identity())
        self.frames(1)
        assert self.sim.control.authority.owner == (self.controller, self.lease)

    def frames(self, count: int = 1) -> None:
        for _ in range(count):
            self.sim.frame()

    def run(self, seconds: float) -> None:
        self.sim.run(rate=0, duration=seconds)

    def of(self, type_name: str) -> list[dict]:
        return self.capture.of(type_name)


@pytest.fixture
def harness(tmp_path):
    """Return ``make(name='orbit', lean=True, changes=None, modules=None, seed=2) -> Harness``.

    ``changes`` and ``modules`` are ``write_scenario``'s.
    """
    made = []

    def make(name: str = 'orbit', *, lean: bool = True, changes: dict | None = None,
             modules: dict | None = None, seed: int = 2) -> Harness:
        made.append(Harness(write_scenario(tmp_path, name, lean=lean, changes=changes,
                                           modules=modules), seed))
        return made[-1]
    yield make
    for h in made:
        h.sim.close()
