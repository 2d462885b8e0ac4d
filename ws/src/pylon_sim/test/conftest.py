"""The simulator driven as the bridge drives it: command datagrams in, state datagrams out.

``harness(...)`` returns a ``Harness``: a lock-stepped ``Simulator`` whose state datagrams
are decoded and validated as they leave (``packets.decode_state``) and whose command
socket is a queue the test fills with datagrams addressed to the current runtime session.
Scenarios can be made lean (the LiDAR and camera modules left out, their parts kept) and
changed per vessel, written to a temporary file.
"""

from __future__ import annotations

from collections import deque
import json

from pylon_protocol import packets, wire
from pylon_sim.loop import mission as missions
from pylon_sim.loop.runtime import Simulator
from pylon_sim.loop.scenario import load_scenario
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
    """A simulator, what it sent, and a way to send it commands.

    ``step`` runs one frame: the simulator's own, or (one game of a mission) the
    mission's frame of every game.
    """

    def __init__(self, sim: Simulator, port: CommandPort, capture: Capture,
                 step=None) -> None:
        self.sim, self.port, self.capture = sim, port, capture
        self.capture.sim = sim
        self.step = step or sim.frame
        self.sequence = 0
        self.controller, self.lease = 'ctl', 'lease-1'

    @classmethod
    def of_scenario(cls, path: str, seed: int = 2) -> Harness:
        """Return the harness of a simulator alone on the scenario at ``path``."""
        capture, port = Capture(), CommandPort()
        return cls(Simulator(load_scenario(path, seed=seed), send=capture, command_sock=port,
                             seed=seed), port, capture)

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
            self.step()

    def run(self, seconds: float) -> None:
        """Run frames for ``seconds`` of the simulator clock (as ``Simulator.run``)."""
        end = self.sim.clock + seconds
        while self.sim.clock < end - 1e-9:
            self.step()

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
        made.append(Harness.of_scenario(write_scenario(tmp_path, name, lean=lean,
                                                       changes=changes, modules=modules),
                                        seed))
        return made[-1]
    yield make
    for h in made:
        h.sim.close()
        # no test may leave a step that pushed without a live lease and a command in force
        assert h.sim.control.unbacked_steps == 0, h.sim.control.status()


class _Queues:
    """A ``bind`` for ``mission.build`` that hands out command queues instead of sockets."""

    def __init__(self) -> None:
        self.bound: dict[int, CommandPort] = {}

    def __call__(self, host: str, port: int) -> CommandPort:
        self.bound[port] = CommandPort()
        return self.bound[port]


@pytest.fixture
def mission():
    """Return ``make(name='rendezvous', **options) -> (Mission, [Harness per vehicle])``.

    A lock-stepped mission (vehicle 1's command port 40000, then the stride); each
    harness's frames are the mission's frames, its commands go to its own game.
    """
    made = []

    def make(name: str = 'rendezvous', **options):
        scenario = load_scenario(name, seed=2)
        captures = [Capture() for _ in scenario.vehicles]
        bind = _Queues()
        run = missions.build(scenario, missions.Ports(0, 40000, 0), bind, rate=0, seed=2,
                             senders=captures, **options)
        made.append(run)
        return run, [Harness(game, bind.bound[ports.command], capture, step=run.frame)
                     for game, ports, capture in zip(run.games, run.ports, captures)]
    yield make
    for run in made:
        run.close()
        for game in run.games:
            assert game.control.unbacked_steps == 0, game.control.status()
