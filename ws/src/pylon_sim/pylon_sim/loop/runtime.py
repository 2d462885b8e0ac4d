"""The simulator's frame loop: KSP with the PyLoN mod as one game, and the pace it runs at.

``Simulator`` is the game the entry point, missions and tests drive; its parts each do one
job: the runtime session and its resets (``lifecycle``), the send path and a frame's held
datagrams (``outbox``), a frame's packets in their order (``frame_packets``), the mod's
state packets and their rates (``reports``), the command port (``commands``), the
vessels' splits and joins (``topology_changes``), the admin requests (``admin_requests``)
and the wait for a lock-stepped controller (``lockstep``).

Time model. One loop iteration is one game frame and one physics step
(``physics_step``, 0.02 s of simulator clock). Everything the mod times by the wall clock
(send rates, lease durations, command timeouts, acquisition windows) runs on the
simulator's own clock; UT advances with physics (``physics_step`` x warp per frame, not
at all while paused). ``pace`` (``--rate``) keeps the clock at most ``rate`` times real
time: it sleeps while ahead, and after slow frames runs the next ones back to back until
it has caught up (it never skips a frame, so a machine too slow for ``rate`` runs
slower). ``rate`` 1 is real time; ``rate`` 0 runs frames back to back (as fast as
possible) for simulator-only tests and benchmarks. ROS nodes in the loop faster than real
time run on its game time (``use_sim_time``); a controller among them can hold the clock
back with ``lockstep_lead`` (``--lockstep-lead``, ``Simulator.hold``: no frame runs until
its next body wrench, at most ``LOCKSTEP_WAIT_WALL_SEC`` of wall time, the wall-kept
packets going on meanwhile, and the wait does not count against the pace), so a late
controller delays the game instead of steering it from the past.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
import ipaddress
import logging
import random
import socket
import time
from typing import Protocol

import numpy as np
from pylon_protocol import packets
from pylon_protocol.envelope import Envelope
from pylon_protocol.session import RuntimeSession

from pylon_sim.game import environment
from pylon_sim.game.save import Scenario
from pylon_sim.game.world import World, WorldView
from pylon_sim.loop import admin, admin_requests
from pylon_sim.loop.frame_packets import FramePackets
from pylon_sim.loop.lockstep import Lockstep
from pylon_sim.loop.topology_changes import TopologyChanges
from pylon_sim.mod.commands import CommandIntake
from pylon_sim.mod.lifecycle import Lifecycle
from pylon_sim.mod.outbox import Outbox, Stats, Throttle, UdpSender
from pylon_sim.mod.reports import ModelSender, Moment, Reports
from pylon_sim.mod.safety import SafetyLimits
from pylon_sim.mod.vehicle_manager import VehicleManager
from pylon_sim.sensors.sensing import Sensing

LOG = logging.getLogger('pylon_sim')

STATUS_PERIOD_WALL = 5.0
LOCKSTEP_WAIT_WALL_SEC = 1.0   # s of wall time a lock-stepped game waits for a wrench


class Simulator:
    """KSP plus the PyLoN mod: a world, its runtime session and the mod's packets.

    The game's frame loop and its face to the entry point, missions and tests; each job is
    one of its parts (see the module docstring). A restart (``restart``) makes the parts of
    a KSP process afresh: the control, the sensors, the producers, the topology changes
    and the runtime session.
    """

    def __init__(self, scenario: Scenario, *, send: Callable[[bytes], None] | None = None,
                 state_addr: tuple[str, int] = ('127.0.0.1', packets.STATE_PORT),
                 command_sock: socket.socket | None = None,
                 admin_sock: socket.socket | None = None, seed: int = 0,
                 allow_remote_model: bool = False, limits: SafetyLimits | None = None,
                 servo_joints: bool = False, check_packets: bool = True,
                 world: WorldView | None = None,
                 environment_state: dict[str, environment.Pending] | None = None,
                 instance_seed: int | None = None,
                 lockstep_lead: float | None = None,
                 lockstep_wait: float | None = None,
                 wall: Callable[[], float] | None = None) -> None:
        """Set up the world; ``send`` defaults to UDP datagrams to ``state_addr``.

        ``instance_seed`` seeds the runtime session's GUIDs apart from ``seed`` (``main``
        gives each process a random one). ``check_packets`` validates every packet against
        the protocol's schema before it is sent (``packets.build_state``); without it the
        packet is assembled unchecked (``packets.assemble_state``), as the mod sends, and
        the receiver's validation is the only one: about a tenth of a frame's CPU.

        Alone, the simulator owns its world. One of several games in a shared world
        (``mission.Mission``) gets its ``world`` view and the world's ``environment_state``
        (power and heat, per vessel); its admin then refuses what acts on the whole world
        (pause, resume, warp, revert, quit), which the mission's management port takes.

        ``lockstep_lead`` (game s, None: off) holds the clock for the lease owner's
        controller, at most ``lockstep_wait`` s of wall time a frame (None:
        ``LOCKSTEP_WAIT_WALL_SEC``): see ``hold``.

        ``wall`` (``time.monotonic`` in ``pylon_sim``) is the wall clock the mod keeps its
        heartbeat, model refresh and slow reports on (``reports.WALL_KEPT``): a game slower
        than real time still sends them once per period of it. None: the simulator clock only,
        so that a run in process sends the same packets whatever the machine's speed.
        """
        self.scenario = scenario
        self.world = world if world is not None else World(scenario)
        self.owns_world = world is None
        self.rng = random.Random(seed)
        # the runtime session's GUIDs: from the seed, unless the process gives a seed of its
        # own (``pylon_sim`` does: every KSP start has a new runtimeInstance, whatever the
        # scenario's seed, or a bridge would take a restarted game for the old one)
        self.session_rng = self.rng if instance_seed is None else random.Random(instance_seed)
        self.state_addr = state_addr
        self.throttle = Throttle()
        self._udp = None
        if send is None:
            self._udp = send = UdpSender(state_addr, self.throttle)
        self.command_sock = command_sock
        self.admin_sock = admin_sock
        self.model_allowed = allow_remote_model or _is_loopback(state_addr[0])
        self.stats = Stats()
        self.intake = CommandIntake(self.stats, self.throttle)
        self.outbox = Outbox(send, lambda: self.envelope, self.stats, self.throttle,
                             check_packets)
        # power and heat since their last update, per vessel
        self.environment = environment_state if environment_state is not None else {}
        self.clock = 0.0
        self.paused = False
        self.held = False            # commands refused until the mission starts (mission.py)
        self._answers: list = []     # a frame's answers, from its start to its end
        self._separated: list = []   # a frame's splits, from its start to its end
        self.heartbeat_enabled = True
        self.stop_requested = False
        self.limits = limits or SafetyLimits()
        self.servo_joints = servo_joints     # the proxy-model extension (see proxy_model)
        self.lockstep_lead = lockstep_lead
        self.lockstep_wait = lockstep_wait
        self.lockstep = Lockstep(self.stats, self.throttle)
        self.wall = wall
        self.restart()

    # -- process and session ------------------------------------------------------------
    def restart(self) -> None:
        """Begin as a freshly started KSP process (new runtime instance)."""
        runtime = RuntimeSession(rng=self.session_rng)
        model = ModelSender(self._new_id, self.model_allowed, self.servo_joints)
        self.control = VehicleManager(self.limits)
        self.control.set_held(self.held)
        self.sensing = Sensing(self.world, self.rng.getrandbits(32), self.session_rng)
        emit = self.outbox.emit
        self.reports = Reports(self.world, self.control, emit, model)
        self.topology = TopologyChanges(self.world, self.control, self.sensing, emit,
                                        self._new_id, self.environment)
        self.lifecycle = Lifecycle(runtime, self.world, self.control, self.reports)
        self.packets = FramePackets(self.world, self.control, self.sensing, self.reports,
                                    self.lifecycle, emit)
        self._observe(first=True)

    def _new_id(self) -> str:
        return f'{self.rng.getrandbits(128):032x}'

    @property
    def runtime(self) -> RuntimeSession:
        """Return the mod's runtime session (of this KSP process)."""
        return self.lifecycle.runtime

    @property
    def envelope(self) -> Envelope:
        """Return the current runtime envelope."""
        return self.lifecycle.envelope

    @property
    def model_session(self) -> str:
        """Return the proxy model's current producer session."""
        return self.reports.model.session

    @property
    def available(self) -> bool:
        """Tell the mod's availability: in flight, an active vessel, not packed."""
        return not self.world.is_packed(self.world.active)

    def _moment(self) -> Moment:
        return Moment(self.clock, self.stats.frame_count, self.available, self.paused,
                      self.wall() if self.wall is not None else None)

    def observe(self) -> bool:
        """Let the runtime session look at the game now (after a change from outside)."""
        return self._observe()

    def _observe(self, first: bool = False) -> bool:
        return self.lifecycle.observe(self._moment(), self.heartbeat_enabled, first)

    # -- one frame ---------------------------------------------------------------------
    def frame(self) -> None:
        """Run one game frame: commands, physics, runtime session, then its packets at once.

        The frame's packets are built as it runs and sent together when it ends (in the
        order they were built), so that the receiver is not woken while the simulator still
        has the frame's work to do on a shared core.
        """
        with self.outbox.sending():
            acting = self.begin_frame()
            if not self.paused:
                advance(self.world, self.environment, [acting] if acting else [])
            self.end_frame()

    def begin_sending(self) -> None:
        """Hold every packet emitted from now on (a frame's), until ``end_sending``."""
        self.outbox.hold()

    def end_sending(self) -> None:
        """Send the held packets in the order they were emitted; send at once from now on."""
        self.outbox.release()

    def begin_frame(self) -> Acting | None:
        """Start a frame: commands, admin, splits and control; return what acts in physics.

        None when nothing of this game acts (paused, or the vessel is not available).
        """
        self.stats.frames += 1
        self.clock += self.world.physics_step
        self.drain_commands()
        self.drain_admin()
        self._separated = []
        vessel = self.world.active
        if self.paused or not self.available:
            self._answers = self.control.expire(vessel, self.clock)
            return None
        self._separated = self.topology.separate(self.stats.frames)
        self.topology.undock()
        vessel = self.world.active
        force, torque, self._answers = self.control.tick(
            vessel, self.clock, self.world.frame_step)
        return Acting(vessel.key, force, torque, self.control.typed(vessel).wheel_inputs(),
                      self.control)

    def end_frame(self) -> None:
        """End a frame after the physics step: docking, the runtime session, the packets.

        The packets: the frame's answers, then every packet due (``FramePackets``).
        """
        if not self.paused and self.available:
            self.topology.dock()
        self._observe()
        if self.available:
            self.packets.answers(self._answers, self._separated, self.clock)
        self._answers, self._separated = [], []
        self.packets.due(self._moment(), self.heartbeat_enabled)

    # -- commands and admin -------------------------------------------------------------
    def drain_commands(self) -> None:
        """Read at most ``commands.MAX_COMMANDS_PER_FRAME`` command datagrams; handle each."""
        self.intake.drain(self.command_sock, self.handle_command)

    def handle_command(self, data: bytes) -> None:
        """Decode, validate and check one command datagram, apply it and send the answers.

        What is dropped is counted by reason in ``stats.command_rejected``
        (``commands.CommandIntake``).
        """
        command = self.intake.accept(data, self.runtime if self.available else None)
        if command is None:
            return
        for type_name, payload in self.control.command(command, self.world.active, self.clock,
                                                       self.envelope):
            self.outbox.emit(type_name, payload)

    def drain_admin(self) -> None:
        """Apply admin requests (JSON over UDP) and answer each one."""
        admin.serve(self.admin_sock, self.admin)

    def admin(self, request: dict) -> dict:
        """Carry out one admin request (``admin_requests.HANDLERS``); return the reply fields."""
        admin_requests.carry_out(self, request)
        return self.status()

    def world_reset(self) -> None:
        """Follow the world back to the scenario's start (a revert).

        The runtime session resets at the next observation, since UT went backwards.
        """
        self.control.forget_vessels()      # every actuator as the scenario has it
        self.topology.reset()
        self.sensing.follow_parts(self.world.ut)     # parts back where the scenario has them

    def set_held(self, held: bool) -> None:
        """Refuse (``held``) or act on commands again; holding drops what is in force."""
        self.held = held
        self.control.set_held(held)

    def status(self) -> dict:
        """Return the simulator's state as a JSON-ready dict."""
        fields = self.runtime.envelope()
        return {
            'ut': self.world.ut, 'clock': self.clock, 'frames': self.stats.frames,
            'active': self.world.active_key, 'vessel_id': self.world.active.vessel_id,
            'available': self.available, 'paused': self.paused,
            'warp': [self.world.warp_rate, self.world.warp_mode],
            'heartbeat': self.heartbeat_enabled, **fields,
            'sent': dict(self.stats.sent), 'commands': dict(self.stats.commands),
            'command_rejected': dict(self.stats.command_rejected),
            'lockstep_lapses': self.stats.lockstep_lapses,
            'control': self.control.status(),
            # process CPU s spent sampling each sensor kind (its cost follows what is in
            # view: the camera's planet pixels); the soak subtracts it from the CPU it judges
            'sensing_cpu_s': {kind: round(s, 4) for kind, s in self.sensing.cost.items()},
        }

    # -- loop -----------------------------------------------------------------------------
    def hold(self) -> float:
        """Wait for a late controller before the next frame; return the wall seconds waited.

        With ``lockstep_lead`` the clock runs at most that many game seconds past the last
        body wrench or typed actuator command accepted from the lease owner: then the
        simulator reads commands (answering them) and sends the wall-kept packets, but runs
        no frame until the next one comes, at most ``lockstep_wait`` (default
        ``LOCKSTEP_WAIT_WALL_SEC``) of wall time; after that the game runs free (leases and
        command timeouts run out as in KSP) until its next wrench. Paused, unavailable or
        unowned games never wait.
        """
        if not self._behind():
            return 0.0
        limit = LOCKSTEP_WAIT_WALL_SEC if self.lockstep_wait is None else self.lockstep_wait
        return self.lockstep.wait(self.command_sock, limit, self._behind,
                                  self._between_frames, self.control.paced_at)

    def _between_frames(self) -> None:
        """Read commands (answering them), send the wall-kept packets due (a wait)."""
        with self.outbox.sending():
            self.drain_commands()
            if self.wall is not None:            # a Unity frame without a physics step
                self.stats.idle_updates += 1
                self.packets.wall_kept(self._moment(), self.heartbeat_enabled)

    def _behind(self) -> bool:
        """Tell whether the lease owner's last wrench is ``lockstep_lead`` or more ago."""
        return self.lockstep.behind(
            self.lockstep_lead, self.clock, self.control,
            self.command_sock is not None and not self.paused and self.available)

    def run(self, rate: float = 1.0, duration: float | None = None) -> None:
        """Run frames until ``duration`` simulator seconds passed or a stop is requested."""
        pace(self, rate, duration)

    def log_status(self) -> None:
        """Log one line of status."""
        LOG.info('UT %.2f clock %.1f s | %s %s | gen %d | %s%s| sent %d, commands %d, '
                 'rejected %d', self.world.ut, self.clock, self.world.active_key,
                 'available' if self.available else 'unavailable',
                 self.runtime.generation, 'paused ' if self.paused else '',
                 f'warp x{self.world.warp_rate:g} {self.world.warp_mode} '
                 if self.world.warp_rate > 1 else '',
                 sum(self.stats.sent.values()), sum(self.stats.commands.values()),
                 sum(self.stats.command_rejected.values()))

    def close(self) -> None:
        """Close the sockets the simulator opened."""
        for sock in (self._udp.sock if self._udp else None, self.command_sock,
                     self.admin_sock):
            if sock is not None:
                sock.close()


class Paced(Protocol):
    """What ``pace`` runs: a frame loop on a simulator clock (a game, or a mission)."""

    clock: float
    stop_requested: bool

    def frame(self) -> None:
        """Run one frame (advances ``clock`` by one physics step)."""

    def hold(self) -> float:
        """Wait before the next frame if it must; return the wall seconds waited."""

    def log_status(self) -> None:
        """Log one line of status."""


def pace(loop: Paced, rate: float, duration: float | None) -> None:
    """Run ``loop``'s frames at ``rate`` x real time (0: back to back) until the end.

    The end is ``duration`` s of its clock, or its ``stop_requested``. A status line goes
    out every ``STATUS_PERIOD_WALL`` s of wall time.
    """
    wall_start = time.monotonic()
    clock_start = loop.clock
    next_status = wall_start + STATUS_PERIOD_WALL
    while not loop.stop_requested:
        if duration is not None and loop.clock - clock_start >= duration - 1e-9:
            break
        wall_start += loop.hold()      # the pace goes on from where the wait ended
        loop.frame()
        now = time.monotonic()
        if now >= next_status:
            next_status = now + STATUS_PERIOD_WALL
            loop.log_status()
        if rate > 0:
            delay = wall_start + (loop.clock - clock_start) / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)


@dataclass(frozen=True)
class Acting:
    """What one game's control applies to its active vessel in a physics step."""

    key: str                     # the vessel
    force: np.ndarray            # N, base_link
    torque: np.ndarray           # N·m, base_link
    wheels: dict                 # ``TypedActuators.wheel_inputs``
    control: VehicleManager      # its wheel torque and engine thrust heat and draw power


def advance(world: World, pending: dict[str, environment.Pending],
            acting: list[Acting]) -> float:
    """Advance physics by one step of UT, and every vessel's power and heat each 0.1 s.

    ``pending`` holds each vessel's power and heat since its last update (one per world);
    a vessel under control this step uses its game's wheel torque and engine thrust.
    Return the step's length (s of UT).
    """
    dt = world.step({a.key: (a.force, a.torque) for a in acting},
                    {a.key: a.wheels for a in acting})
    controls = {a.key: a.control for a in acting}
    for vessel in world.vessels.values():
        control = controls.get(vessel.key)
        slot = pending.setdefault(vessel.key, environment.Pending())
        if slot.add(dt, control.wheel_torque if control else environment.ZERO,
                    control.engine_thrust if control else None, vessel.wheel_draw):
            slot.flush(vessel, world.ut)
    return dt


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == 'localhost'
