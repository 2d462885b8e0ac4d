"""The simulator's frame loop: physics, the mod's runtime session, send rates and sockets.

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
its next body wrench, at most ``LOCKSTEP_WAIT_WALL_SEC`` of wall time, and the wait does
not count against the pace), so a late controller delays the game instead of steering it
from the past.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
import contextlib
from dataclasses import dataclass
import ipaddress
import logging
import math
import random
import select
import socket
import time
from typing import Protocol

import numpy as np
from pylon_protocol import packets, wire
from pylon_protocol.envelope import Envelope, ENVELOPE_KEYS_SET
from pylon_protocol.errors import ProtocolError
from pylon_protocol.model_chunks import chunk_model
from pylon_protocol.session import RuntimeSession

from pylon_sim import (
    actuators,
    admin,
    docking,
    environment,
    ksp_view,
    proxy_model,
    telemetry,
    topology,
)
from pylon_sim.power import set_electric_charge
from pylon_sim.safety import SafetyLimits
from pylon_sim.scenario import Scenario
from pylon_sim.sensing import Sensing
from pylon_sim.vehicle_manager import VehicleManager
from pylon_sim.vessel import Part, part_masses
from pylon_sim.world import World, WorldView

LOG = logging.getLogger('pylon_sim')

# the mod's send periods, s of wall (simulator) clock, from the protocol's one table
_RATES = packets.SEND_RATES_HZ
SESSION_PERIOD = 1.0 / _RATES['pylon_session']
IMU_PERIOD = 1.0 / _RATES['pylon_imu']
GROUND_TRUTH_PERIOD = 1.0 / _RATES['pylon_ground_truth']
FLIGHT_STATE_PERIOD = 1.0 / _RATES['pylon_flight_state']
ACTUATOR_STATE_PERIOD = 1.0 / _RATES['pylon_actuator_state']
ACTUATOR_MANIFEST_PERIOD = 1.0 / _RATES['pylon_actuator_manifest']
MOTOR_STATE_PERIOD = 1.0 / _RATES['pylon_motor_state']
MODEL_PERIOD = 1.0 / _RATES['pylon_vessel_urdf_chunk']
AUTHORITY_PERIOD = 1.0 / _RATES['pylon_control_authority_state']
DOCKING_STATE_PERIOD = 1.0 / _RATES['pylon_docking_port_state']
DOCKING_MANIFEST_PERIOD = 1.0 / _RATES['pylon_docking_port_manifest']
SNAPSHOT_PERIOD = 1.0 / _RATES['pylon_control_snapshot']
HEALTH_PERIOD = 1.0 / _RATES['pylon_vehicle_health']
THERMAL_PERIOD = 1.0 / _RATES['pylon_part_thermal_state']
STATUS_PERIOD_WALL = 5.0
MAX_COMMANDS_PER_FRAME = 256
#: admin requests that act on the whole world (only a simulator that owns it takes them)
WORLD_REQUESTS = frozenset({'pause', 'resume', 'warp', 'revert', 'quit'})
MAX_DATAGRAM_BYTES = 65000
LOG_THROTTLE_SEC = 5.0
DOCKING_SCAN_M = 50.0     # m between centres of mass within which ports are compared
LOCKSTEP_WAIT_WALL_SEC = 1.0   # s of wall time a lock-stepped game waits for a wrench


class Schedule:
    """A periodic deadline on the simulator clock (at most one firing per frame)."""

    def __init__(self, period: float) -> None:
        """Fire first at the next check."""
        self.period = period
        self.next = 0.0

    def due(self, clock: float) -> bool:
        """Tell whether the period has elapsed at ``clock``; advance the deadline if so."""
        if clock + 1e-9 < self.next:
            return False
        self.next += self.period
        if self.next <= clock:          # fell behind: skip, do not burst
            self.next = clock + self.period
        return True

    def fire_now(self) -> None:
        """Make the next check fire."""
        self.next = 0.0

    def restart(self, clock: float) -> None:
        """Count the period from ``clock`` (the packet was just sent out of turn)."""
        self.next = clock + self.period


@dataclass
class Stats:
    """Counters the status line and the benchmark read."""

    frames: int = 0
    lockstep_lapses: int = 0      # waits for a controller that ran out (``Simulator.hold``)

    def __post_init__(self) -> None:
        self.sent = Counter()
        self.sent_bytes = Counter()
        self.encode_seconds = Counter()
        self.commands = Counter()
        self.command_rejected = Counter()
        self.dropped_oversize = 0
        self.oversize = Counter()       # packets not sent for their size, by type


class Simulator:
    """KSP plus the PyLoN mod: a world, its runtime session and the mod's packets."""

    def __init__(self, scenario: Scenario, *, send: Callable[[bytes], None] | None = None,
                 state_addr: tuple[str, int] = ('127.0.0.1', packets.STATE_PORT),
                 command_sock: socket.socket | None = None,
                 admin_sock: socket.socket | None = None, seed: int = 0,
                 allow_remote_model: bool = False, limits: SafetyLimits | None = None,
                 servo_joints: bool = False, check_packets: bool = True,
                 world: WorldView | None = None,
                 environment_state: dict[str, environment.Pending] | None = None,
                 instance_seed: int | None = None,
                 lockstep_lead: float | None = None) -> None:
        """Set up the world; ``send`` defaults to UDP datagrams to ``state_addr``.

        ``instance_seed`` seeds the runtime session's GUIDs apart from ``seed`` (``main``
        gives each process a random one). ``check_packets`` validates every packet against
        the protocol's schema before it
        is sent (``packets.build_state``); without it the packet is assembled unchecked
        (``packets.assemble_state``), as the mod sends, and the receiver's validation is
        the only one: about a tenth of a frame's CPU.

        Alone, the simulator owns its world. One of several games in a shared world
        (``mission.Mission``) gets its ``world`` view and the world's ``environment_state``
        (power and heat, per vessel); its admin then refuses what acts on the whole world
        (pause, resume, warp, revert, quit), which the mission's management port takes.

        ``lockstep_lead`` (game s, None: off) holds the clock for the lease owner's
        controller: see ``hold``.
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
        self._out = None
        if send is None:
            self._out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            send = self._send_udp
        self.send = send
        self.command_sock = command_sock
        self.admin_sock = admin_sock
        self.model_allowed = allow_remote_model or _is_loopback(state_addr[0])
        self.stats = Stats()
        # power and heat since their last update, per vessel
        self.environment = environment_state if environment_state is not None else {}
        self.clock = 0.0
        self.paused = False
        self.held = False            # commands refused until the mission starts (mission.py)
        self._answers: list = []     # a frame's answers, from its start to its end
        self._separated: list = []   # a frame's splits, from its start to its end
        self.heartbeat_enabled = True
        self.stop_requested = False
        self._outbox: list[bytes] | None = None   # a frame's datagrams, sent as it ends
        self._log_times: dict[str, float] = defaultdict(lambda: -1e9)
        self.limits = limits or SafetyLimits()
        self.servo_joints = servo_joints     # the proxy-model extension (see proxy_model)
        self._build = packets.build_state if check_packets else packets.assemble_state
        self.lockstep_lead = lockstep_lead
        self._lockstep_lapsed: float | None = None   # the wrench after which a wait ran out
        self._start_process()

    # -- process and session ------------------------------------------------------------
    def _start_process(self) -> None:
        """Begin as a freshly started KSP process (new runtime instance)."""
        self.runtime = RuntimeSession(rng=self.session_rng)
        self._envelope = self._envelope_key = None
        self._announced: Envelope | None = None   # the session the last heartbeat announced
        self.anchor = telemetry.GroundTruthAnchor()
        self.model_session = self._new_id()
        self.model_key = None
        self.docked_identity: dict[int, tuple] = {}    # port part -> (key, spec) it docked as
        self._model_chunks: tuple | None = None    # (what they were built from, chunks)
        self._actuator_list: tuple | None = None   # (spec, topology hash, actuators)
        self.imu_skip = True
        self.control = VehicleManager(self.limits)
        self.control.set_held(self.held)
        self.control_vessel = self.world.active.vessel_id
        self.sensing = Sensing(self.world, seed=self.rng.getrandbits(32))
        self.schedules = {name: Schedule(period) for name, period in (
            ('session', SESSION_PERIOD), ('imu', IMU_PERIOD), ('gt', GROUND_TRUTH_PERIOD),
            ('flight', FLIGHT_STATE_PERIOD), ('actuator', ACTUATOR_STATE_PERIOD),
            ('manifest', ACTUATOR_MANIFEST_PERIOD), ('motor', MOTOR_STATE_PERIOD),
            ('model', MODEL_PERIOD), ('authority', AUTHORITY_PERIOD),
            ('docking', DOCKING_STATE_PERIOD), ('docking_manifest', DOCKING_MANIFEST_PERIOD),
            ('snapshot', SNAPSHOT_PERIOD), ('health', HEALTH_PERIOD),
            ('thermal', THERMAL_PERIOD))}
        self._observe(first=True)

    def _new_id(self) -> str:
        return f'{self.rng.getrandbits(128):032x}'

    @property
    def available(self) -> bool:
        """Tell the mod's availability: in flight, an active vessel, not packed."""
        return not self.world.is_packed(self.world.active)

    def observe(self) -> bool:
        """Let the runtime session look at the game now (after a change from outside)."""
        return self._observe()

    def _observe(self, first: bool = False) -> bool:
        """Let the runtime session look at the game; handle a reset if it made one."""
        vessel = self.world.active
        speed = float(np.linalg.norm(vessel.state.velocity))
        relative = vessel.state.position
        reset = self.runtime.observe(
            active_vessel_id=vessel.vessel_id, topology_hash=vessel.spec.topology_hash(),
            main_body=vessel.body.name, available=self.available,
            body_relative_position=(float(relative[0]), float(relative[1]),
                                    float(relative[2])),
            max_speed=speed, dt=self.world.frame_step,
            ut=self.world.ut)
        if reset or first:
            self._on_reset(first)
        return reset

    def _on_reset(self, first: bool = False) -> None:
        """Apply what a runtime reset means for the mod's producers."""
        self.anchor.reset(self.world.active, self.world.ut)
        self.imu_skip = True
        self.schedules['manifest'].fire_now()
        self.schedules['model'].fire_now()
        vessel = self.world.active
        if first:
            return
        # the new session's heartbeat goes out before anything else of it, as the mod does
        # on a reset: the bridge drops every other packet of a session it has not seen
        if self.heartbeat_enabled:
            self._heartbeat()
            self.schedules['session'].restart(self.clock)
        if vessel.vessel_id != self.control_vessel:
            answers = self.control.vessel_changed(vessel, self.clock)
        else:
            answers = self.control.session_changed(vessel, self.clock)
        self.control_vessel = vessel.vessel_id
        if self.available:
            for type_name, payload in answers:
                self.emit(type_name, payload)

    @property
    def envelope(self) -> Envelope:
        """Return the current runtime envelope."""
        rt = self.runtime
        key = (rt.instance, rt.generation, rt.epoch, rt.vessel_id)
        if self._envelope is None or self._envelope_key != key:
            self._envelope, self._envelope_key = Envelope(*key), key
        return self._envelope

    # -- sending --------------------------------------------------------------------------
    def _send_udp(self, data: bytes) -> None:
        try:
            self._out.sendto(data, self.state_addr)
        except OSError as exc:   # nobody listening, or a full buffer: UDP loses it
            self._throttled('send', f'state datagram not sent: {exc}')

    def emit(self, type_name: str, payload: dict,
             max_bytes: int = MAX_DATAGRAM_BYTES) -> dict | None:
        """Build, validate, encode and send one state packet; return it (None if too big)."""
        start = time.perf_counter()
        packet = self._build(type_name, self.envelope, **payload)
        data = packets.encode_built_state(packet)
        self.stats.encode_seconds[type_name] += time.perf_counter() - start
        if len(data) > max_bytes:
            self.stats.dropped_oversize += 1
            self.stats.oversize[type_name] += 1
            self._throttled('oversize', f'{type_name} of {len(data)} B not sent')
            return None
        self.stats.sent[type_name] += 1
        self.stats.sent_bytes[type_name] += len(data)
        if self._outbox is None:
            self.send(data)
        else:
            self._outbox.append(data)
        return packet

    def _throttled(self, key: str, message: str, level: int = logging.WARNING) -> None:
        now = time.monotonic()
        if now - self._log_times[key] >= LOG_THROTTLE_SEC:
            self._log_times[key] = now
            LOG.log(level, message)

    # -- one frame ---------------------------------------------------------------------
    def frame(self) -> None:
        """Run one game frame: commands, physics, runtime session, then its packets at once.

        The frame's packets are built as it runs and sent together when it ends (in the
        order they were built), so that the receiver is not woken while the simulator still
        has the frame's work to do on a shared core.
        """
        with self.sending():
            acting = self.begin_frame()
            if not self.paused:
                advance(self.world, self.environment, [acting] if acting else [])
            self.end_frame()

    @contextlib.contextmanager
    def sending(self) -> Iterator[None]:
        """Hold the packets emitted inside, and send them (in order) when it ends."""
        self.begin_sending()
        try:
            yield
        finally:
            self.end_sending()

    def begin_sending(self) -> None:
        """Hold every packet emitted from now on (a frame's), until ``end_sending``."""
        self._outbox = []

    def end_sending(self) -> None:
        """Send the held packets in the order they were emitted; send at once from now on."""
        outbox, self._outbox = self._outbox, None
        for data in outbox or ():
            self.send(data)

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
        self._separated = self._separate()
        self._undock()
        vessel = self.world.active
        force, torque, self._answers = self.control.tick(
            vessel, self.clock, self.world.frame_step)
        return Acting(vessel.key, force, torque, self.control.typed(vessel).wheel_inputs(),
                      self.control)

    def end_frame(self) -> None:
        """End a frame after the physics step: docking, the runtime session, the packets."""
        if not self.paused and self.available:
            self._dock()
        self._observe()
        if self.available:
            for type_name, payload in self._answers:
                self.emit(type_name, payload)
            for name, resulting in self._separated:   # in the session the split reset to
                for type_name, payload in self.control.separated(name, resulting,
                                                                 self.envelope, self.clock):
                    self.emit(type_name, payload)
        self._answers, self._separated = [], []
        self.emit_due()

    def _separate(self) -> list[tuple[str, list[str]]]:
        """Split vessels at the separators the frame's commands fired, before physics.

        A fired separator of the active vessel sends its state (separated) once more before
        it leaves with the parts beyond it. The split changes the active vessel's part
        topology: the runtime session resets at the next observation, and the operations
        complete in the new session. Return
        (separator, [vessels that own the original parts, the active one first]).
        """
        fired = self.control.typed(self.world.active).take_fired()
        done = []
        for name in fired:
            vessel, actuator = next(
                (v, a) for v in self.world.vessels.values()
                for a in actuators.actuators_of(v.spec) if a.name == name)
            if vessel is self.world.active:     # its last state: fired, leaving the vessel
                payload = actuators.state(actuator, vessel.spec, self.world.ut,
                                          self.stats.frames,
                                          tuple(float(v) for v in vessel.mass.com))
                payload.update(self.control.actuator_fields(vessel, name))
                self.emit('pylon_actuator_state', payload)
            impulse = topology.ejection_impulse(actuator.module, self.world.frame_step)
            new_id = self._new_id()
            new = self.world.separate(vessel.key, actuator.part_index,
                                      f'{vessel.key}:{new_id[:8]}', new_id, impulse)
            self.control.topology_changed(vessel, [vessel, new])
            done.append((name, [self.world.active.vessel_id, new_id]))
        if done:
            for type_name, payload in self.sensing.follow_parts(self.world.ut):
                self.emit(type_name, payload)
        return done

    def _ports(self, vessel) -> list[tuple[str, dict, Part]]:
        """Return a vessel's docking ports: id, state fields and part."""
        typed = self.control.typed(vessel)
        parts = {p.flight_id: p for p in vessel.spec.parts}
        return [(port, fields, parts[fields['partFlightId']]) for port, fields in (
            (port, typed.docking_fields(port)) for port in typed.docking_ports())]

    def _dock(self) -> None:
        """Advance the port states of the active vessel and its neighbours; capture.

        Each free port of the active vessel and each free port of another vessel in flight
        nearby takes its nearest compatible partner (same ``nodeType``, the other side)
        through ``docking.next_state``; a pair that captures joins the other vessel to the
        active one (``World.dock``) between physics steps: its topology changes, so the
        runtime session resets at the next observation. Another game's active vessel (a
        vehicle of a mission) is not a partner: two vehicles do not dock with each other.
        """
        active = self.world.active
        vehicles = self.world.focus
        others = [v for v in self.world.vessels.values() if v is not active and
                  v.key not in vehicles and v.body is active.body and
                  not self.world.is_packed(v) and
                  np.linalg.norm(v.state.position - active.state.position) < DOCKING_SCAN_M]
        free = [(port, f, part) for port, f, part in self._ports(active) if not f['docked']]
        if not others and all(f['state'] == docking.READY for _, f, _ in free):
            return                                  # nothing near, nothing to change
        mine = [(port, f, docking.port_pose(active.state, active.mass, part))
                for port, f, part in free]
        theirs = [(v, port, f, docking.port_pose(v.state, v.mass, part))
                  for v in others for port, f, part in self._ports(v) if not f['docked']]
        captured = None
        for port, fields, pose in mine:
            seen = [(docking.contact(pose, p), v, o) for v, o, f, p in theirs
                    if f['nodeType'] == fields['nodeType']]
            nearest = min(seen, key=lambda item: item[0].distance, default=None)
            state = docking.next_state(fields['state'], nearest[0] if nearest else None)
            if state == docking.DOCKER and captured is None:
                captured = (port, nearest[1], nearest[2])
            else:
                self.control.typed(active).set_port_state(port, state if state !=
                                                          docking.DOCKER else docking.ACQUIRE)
        for vessel, port, fields, pose in theirs:
            seen = [docking.contact(p, pose) for _, f, p in mine
                    if f['nodeType'] == fields['nodeType']]
            state = docking.next_state(fields['state'], min(
                seen, key=lambda c: c.distance, default=None))
            self.control.typed(vessel).set_port_state(
                port, docking.ACQUIRE if state == docking.DOCKER else state)
        if captured is not None:
            self._capture(*captured)

    def _capture(self, port: str, other, other_port: str) -> None:
        """Join ``other`` to the active vessel at the two ports (both report docked)."""
        active = self.world.active
        flight_ids = [self.control.typed(v).docking_fields(p)['partFlightId']
                      for v, p in ((active, port), (other, other_port))]
        indices = [next(i for i, p in enumerate(v.spec.parts) if p.flight_id == fid)
                   for v, fid in zip((active, other), flight_ids)]
        self.docked_identity[other.spec.parts[indices[1]].persistent_id] = (other.key,
                                                                             other.spec)
        typed, other_typed = self.control.typed(active), self.control.typed(other)
        self.world.dock(active.key, other.key, indices[0], indices[1])
        self.environment.pop(other.key, None)
        merged = typed.carried(active.spec, other_typed)
        merged.set_docked(port, other_port, flight_ids[1], docking.DOCKER)
        merged.set_docked(other_port, port, flight_ids[0], docking.DOCKEE)
        self.control.typed_by_vessel[active.vessel_id] = merged
        self.control.typed_by_vessel.pop(other.vessel_id, None)
        for type_name, payload in self.sensing.follow_parts(self.world.ut):
            self.emit(type_name, payload)

    def _undock(self) -> None:
        """Split the active vessel at every port released by this frame's commands.

        The part of the pair further from the root leaves with everything beyond it, as
        the vessel it was before docking (its id, key and name) when the simulator docked
        it, pushed off with ``docking.UNDOCK_EJECTION_FORCE`` for the frame's integrated step
        (``World.frame_step``, as a separator's ejection); both ports
        are then ``Disengage``.
        """
        active = self.world.active
        for port, partner_flight_id in self.control.typed(active).take_released():
            parts = active.spec.parts
            own = self.control.typed(active).docking_fields(port)['partFlightId']
            a = next(i for i, p in enumerate(parts) if p.flight_id == own)
            b = next((i for i, p in enumerate(parts) if p.flight_id == partner_flight_id), None)
            if b is None:                # docked to nothing of this vessel (scenario start)
                continue
            child = b if parts[b].parent == a else a
            key, identity = self.docked_identity.pop(parts[child].persistent_id, (None, None))
            new_id = identity.vessel_id if identity is not None else self._new_id()
            impulse = -topology.push_impulse(docking.UNDOCK_EJECTION_FORCE,
                                             self.world.frame_step)
            new = self.world.separate(active.key, child, key or f'{active.key}:{new_id[:8]}',
                                      new_id, impulse, identity)
            self.control.topology_changed(active, [active, new])
            for vessel in (active, new):
                typed = self.control.typed(vessel)
                for other in typed.docking_ports():
                    if typed.docking_fields(other)['partFlightId'] in (own, partner_flight_id):
                        typed.set_port_state(other, docking.DISENGAGE)
                        typed.undock_port(other)
            for type_name, payload in self.sensing.follow_parts(self.world.ut):
                self.emit(type_name, payload)

    def emit_due(self) -> None:
        """Send every packet whose period has elapsed on the simulator clock.

        The frame's measurements (IMU, ground truth, nearby vessels) go first, as soon as
        physics produced them, so that the periodic reports of the same frame do not
        delay them at the receiver; only a runtime session's first heartbeat goes before
        them, since the bridge takes nothing of a session it has not seen.
        """
        due = {name: schedule.due(self.clock) for name, schedule in self.schedules.items()}
        heartbeat = due['session'] and self.heartbeat_enabled
        measuring = self.available and not self.paused
        if heartbeat and (not measuring or self._announced != self.envelope):
            self._heartbeat()
            heartbeat = False
        view = None
        if measuring:
            view = ksp_view.observe(self.world.active, self.world.ut)
            self._emit_motion(due, view)
        if heartbeat:
            self._heartbeat()
        if not self.paused:       # also while packed: the tracker then says ``packed``
            for sample in self.sensing.star_tracker_samples(self.clock, self.world.ut):
                self.emit('pylon_star_tracker', sample)
        if not self.available:
            return
        vessel = self.world.active
        if due['model']:
            self._send_model()
        if due['manifest']:
            self.emit('pylon_actuator_manifest', actuators.manifest(vessel.spec))
        if due['authority']:
            self.emit(*self.control.authority_state(vessel, self.clock,
                                                    self.control.last_reason))
        for result in self.control.journal.due(self.clock):
            self.emit('pylon_separation_result', result)
        if self.paused:
            return
        self._emit_control_state(due, view)
        self._emit_health(due)
        self._emit_imaging(due)

    def _emit_motion(self, due: dict, view: ksp_view.KspView) -> None:
        """Send the IMU, ground truth and nearby vessels that are due."""
        vessel, ut = self.world.active, self.world.ut
        if due['imu']:
            if self.imu_skip:
                self.imu_skip = False
            else:
                self.emit('pylon_imu', {'vesselId': vessel.vessel_id, 'universalTime': ut,
                                        **telemetry.imu(view)})
        if due['gt']:
            gt = telemetry.ground_truth(self.anchor, view, vessel, ut)
            self.emit('pylon_ground_truth', gt)
            self.emit('pylon_nearby_vessels',
                      telemetry.nearby_vessels(self.world, self.anchor, view, gt))

    def _emit_control_state(self, due: dict, view: ksp_view.KspView) -> None:
        """Send flight, actuator and motor states, and the snapshot of that frame."""
        vessel, ut, sequence = self.world.active, self.world.ut, self.stats.frames
        spec = vessel.spec
        flight = None
        states: list[dict] = []
        if due['flight']:
            flight = self.emit('pylon_flight_state', telemetry.flight_state(
                self.world, view, sequence, self.control.flight_fields(self.clock)))
        found = self._actuators(spec)
        if due['actuator']:
            com = tuple(float(v) for v in vessel.mass.com)
            for actuator in found:
                if actuator.actuator_type != 'motor':
                    payload = actuators.state(actuator, spec, ut, sequence, com)
                    payload.update(self.control.actuator_fields(vessel, actuator.name))
                    states.append(self.emit('pylon_actuator_state', payload))
        if due['snapshot'] and flight is not None and due['actuator']:
            self._send_snapshot(flight, states)
        if due['motor']:
            for actuator in found:
                if actuator.actuator_type == 'motor':
                    payload = actuators.motor_state(actuator, spec, ut)
                    payload.update(self.control.actuator_fields(vessel, actuator.name))
                    self.emit('pylon_motor_state', payload)

    def _actuators(self, spec) -> list[actuators.Actuator]:
        """Return the vessel's actuators, found again only for another vessel or topology."""
        key = spec.topology_hash()
        cached = self._actuator_list
        if cached is None or cached[0] is not spec or cached[1] != key:
            cached = self._actuator_list = (spec, key, actuators.actuators_of(spec))
        return cached[2]

    def _send_snapshot(self, flight: dict, states: list[dict]) -> None:
        """Send the frame's ``pylon_control_snapshot``: the packets just sent, unwrapped.

        Its members are the flight state and the engine and separator states sent
        individually in this frame, without their envelope; omitted when its JSON would
        pass ``MOD_MAX_DATAGRAM_BYTES``, as the mod omits it.
        """
        def member(packet: dict) -> dict:
            return {k: v for k, v in packet.items() if k not in ENVELOPE_KEYS_SET}

        kinds = {'engine': [], 'separation': []}
        for state in states:
            if state is not None and state['actuatorType'] in kinds:
                kinds[state['actuatorType']].append(member(state))
        self.emit('pylon_control_snapshot', {
            'vesselId': flight['vesselId'], 'observationSequence': flight['observationSequence'],
            'flight': member(flight), 'engines': kinds['engine'],
            'separations': kinds['separation']}, max_bytes=packets.MOD_MAX_DATAGRAM_BYTES)

    def _emit_health(self, due: dict) -> None:
        """Send the vessel's power (2 Hz) and one thermal state per part (2 Hz)."""
        vessel, ut, sequence = self.world.active, self.world.ut, self.stats.frames
        if due['health']:
            self.emit('pylon_vehicle_health', telemetry.vehicle_health(vessel, ut, sequence))
        if due['thermal']:
            for payload in telemetry.part_thermal_states(vessel, ut, sequence):
                self.emit('pylon_part_thermal_state', payload)

    def _emit_imaging(self, due: dict) -> None:
        """Send LiDAR scans, camera frames, relative-nav samples and docking-port state due."""
        vessel, ut = self.world.active, self.world.ut
        spec = vessel.spec
        typed = self.control.typed(vessel)
        port = typed.camera_port()
        docking = None
        if port is not None:
            flight_id = typed.docking_fields(port)['partFlightId']
            docking = (port, next(p for p in spec.parts if p.flight_id == flight_id))
        for type_name, payload in self.sensing.imaging_packets(self.clock, ut, docking):
            self.emit(type_name, payload)
        for payload in self.sensing.relative_nav_samples(self.clock, ut):
            self.emit('pylon_relative_nav', payload)
        ports = typed.docking_ports()
        if ports and due['docking_manifest']:
            self.emit('pylon_docking_port_manifest', {'ports': [
                {k: typed.docking_fields(port)[k] for k in ('name', 'partFlightId',
                                                             'moduleIndex')}
                for port in ports]})
        if ports and due['docking']:
            for port in ports:
                self.emit('pylon_docking_port_state', typed.docking_fields(port))

    def _heartbeat(self) -> None:
        """Send the session heartbeat; remember the runtime session it announced."""
        self.emit('pylon_session', self._session_payload())
        self._announced = self.envelope

    def _session_payload(self) -> dict:
        return telemetry.session(
            self.world, self.runtime.vessel_id,
            self.available, self.paused, self.world.is_packed(self.world.active),
            self.stats.frames, self.clock)

    def _send_model(self) -> None:
        """Send the active vessel's proxy model in chunks (loopback destinations only)."""
        if not self.model_allowed:
            return
        vessel = self.world.active
        key = (vessel.vessel_id, self.runtime.epoch, vessel.spec.topology_hash())
        if self.model_key is not None and (self.model_key[0], self.model_key[2]) != (
                key[0], key[2]):
            # another vessel became active, or its parts changed (a split): retire the old
            # model and start a new producer, as for a new vessel
            self.emit('pylon_vessel_urdf_clear', {'sessionId': self.model_session})
            self.model_session = self._new_id()
        self.model_key = key
        masses = part_masses(vessel.spec, vessel.resources)
        urdf = proxy_model.build_urdf(vessel.spec, masses, servo_joints=self.servo_joints)
        # the bundle and its compressed chunks only change with the URDF, the centre of
        # mass or the producer: built once, re-sent every 2 s with the UT of the sending
        content = (self.model_session, urdf, tuple(float(v) for v in vessel.mass.com),
                   self.servo_joints)
        if self._model_chunks is None or self._model_chunks[0] != content:
            bundle = proxy_model.build_bundle(vessel.spec, vessel.mass.com, self.model_session,
                                              urdf, servo_joints=self.servo_joints)
            self._model_chunks = (content, chunk_model(
                bundle, session_id=self.model_session, sent_at_ut=self.world.ut,
                allow_servo_joints=self.servo_joints))
        for chunk in self._model_chunks[1]:
            self.emit('pylon_vessel_urdf_chunk', {**chunk, 'sentAtUt': float(self.world.ut)})

    # -- commands and admin -------------------------------------------------------------
    def drain_commands(self) -> None:
        """Read at most 256 command datagrams and handle each one."""
        if self.command_sock is None:
            return
        for _ in range(MAX_COMMANDS_PER_FRAME):
            try:
                data, _ = self.command_sock.recvfrom(wire.MAX_DATAGRAM_BYTES)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                self._throttled('recv', f'command socket: {exc}')
                return
            self.handle_command(data)

    def handle_command(self, data: bytes) -> None:
        """Decode, validate and check one command datagram, apply it and send the answers.

        A datagram that does not decode, or has a non-finite, out-of-range or mistyped
        field, is dropped whole and counted by reason in ``stats.command_rejected``; so is
        one for another runtime session (``session_mismatch``).
        """
        try:
            command = packets.decode_command(data)
        except ProtocolError as exc:
            self.stats.command_rejected[exc.reason] += 1
            if exc.reason != 'unknown_type':
                self._throttled(f'command:{exc.reason}',
                                f'dropped a malformed command datagram ({len(data)} B): {exc}'
                                f' [{sum(self.stats.command_rejected.values())} dropped]')
            return
        if not self.available or not self.runtime.accept_command(command):
            self.stats.command_rejected['session_mismatch'] += 1
            return
        self.stats.commands[command['type']] += 1
        for type_name, payload in self.control.command(command, self.world.active, self.clock,
                                                       self.envelope):
            self.emit(type_name, payload)

    def drain_admin(self) -> None:
        """Apply admin requests (JSON over UDP) and answer each one."""
        admin.serve(self.admin_sock, self.admin)

    def admin(self, request: dict) -> dict:
        """Carry out one admin request; return the reply fields."""
        cmd = request.get('cmd')
        world = self.world
        if cmd in WORLD_REQUESTS and not self.owns_world:
            raise ValueError(f'{cmd} acts on the world every vehicle shares: send it to the '
                             'management port')
        if cmd == 'status':
            pass
        elif cmd == 'pause':
            self.paused = True
        elif cmd == 'resume':
            self.paused = False
        elif cmd == 'warp':
            world.set_warp(float(request.get('rate', 1.0)), str(request.get('mode', 'physics')))
        elif cmd == 'switch':
            target = world.find(str(request['vessel']))
            if target.spec.is_debris:
                raise ValueError(f'{target.key} is debris and cannot be controlled')
            if target.key != world.active_key and target.key in world.focus:
                raise ValueError(f"{target.key} is another vehicle's active vessel")
            world.active_key = target.key
        elif cmd == 'revert':
            world.reset()
            self.world_reset()
        elif cmd in ('pack', 'unpack'):
            world.active.packed = cmd == 'pack'
        elif cmd == 'sas':
            world.active.sas = bool(request.get('enabled', True))
        elif cmd == 'sensor':
            if not self.sensing.set_enabled(str(request.get('id')),
                                            bool(request.get('enabled', True))):
                raise ValueError(f'no sensor {request.get("id")!r}')
        elif cmd == 'electric_charge':
            amount = float(request.get('amount', 0.0))
            if not math.isfinite(amount):
                raise ValueError(f'electric_charge amount must be finite, got {amount}')
            set_electric_charge(world.active, amount)
        elif cmd == 'heartbeat':
            self.heartbeat_enabled = bool(request.get('enabled', True))
        elif cmd == 'restart':
            self._start_process()
        elif cmd == 'quit':
            self.stop_requested = True
        else:
            raise ValueError(f'unknown admin cmd {cmd!r} (status, pause, resume, warp, '
                             'switch, revert, pack, unpack, sas, sensor, electric_charge, '
                             'heartbeat, restart, quit)')
        if cmd not in ('status', 'quit', 'heartbeat'):
            self._observe()
        return self.status()

    def world_reset(self) -> None:
        """Follow the world back to the scenario's start (a revert).

        The runtime session resets at the next observation, since UT went backwards.
        """
        self.control.typed_by_vessel.clear()    # every actuator as the scenario has it
        self.docked_identity.clear()
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
        body wrench accepted from the lease owner: then the simulator reads commands (and
        sends their answers) but runs no frame until the next wrench comes, at most
        ``LOCKSTEP_WAIT_WALL_SEC`` of wall time. A controller that misses that has stopped
        or stalled for good: the game runs free (leases and command timeouts run out as in
        KSP) until its next wrench. Nothing waits while paused, unavailable or unowned.
        """
        if not self._behind():
            return 0.0
        start = time.monotonic()
        waiting_for = self.control.wrench_received_at
        while (left := start + LOCKSTEP_WAIT_WALL_SEC - time.monotonic()) > 0:
            select.select([self.command_sock], [], [], left)
            with self.sending():
                self.drain_commands()
            if not self._behind():
                return time.monotonic() - start
        self._lockstep_lapsed = waiting_for
        self.stats.lockstep_lapses += 1
        self._throttled('lockstep', f'lockstep: no wrench for {LOCKSTEP_WAIT_WALL_SEC:g} s of '
                        'wall time; the game runs free until the controller sends again')
        return time.monotonic() - start

    def _behind(self) -> bool:
        """Tell whether the lease owner's last wrench is ``lockstep_lead`` or more ago."""
        received = self.control.wrench_received_at
        return (self.lockstep_lead is not None and self.command_sock is not None
                and not self.paused and self.available and self.control.authority.owned
                and received is not None and received != self._lockstep_lapsed
                and self.clock - received >= self.lockstep_lead - 1e-9)

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
        for sock in (self._out, self.command_sock, self.admin_sock):
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
