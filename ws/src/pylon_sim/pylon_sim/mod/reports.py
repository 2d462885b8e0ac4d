"""The mod's periodic state packets: when each is due, and the producers that build them.

Each packet type goes out at its rate of the protocol's one table (``packets.SEND_RATES_HZ``)
on the simulator clock (``Schedule``). ``Reports`` holds what the producers keep between
frames (the ground-truth anchor, the IMU's skipped first sample after a reset, the proxy
model's producer and chunks) and sends through the ``emit`` it is given; which packets a
frame sends, and in what order with the sensors' packets, is the frame loop's
(``frame_packets.FramePackets``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pylon_protocol import packets
from pylon_protocol.envelope import ENVELOPE_KEYS_SET
from pylon_protocol.model_chunks import chunk_model

from pylon_sim.game import ksp_view, parts
from pylon_sim.game.vessel import Part, part_masses
from pylon_sim.game.world import WorldView
from pylon_sim.mod import actuators, proxy_model, telemetry
from pylon_sim.mod.outbox import Emit
from pylon_sim.mod.vehicle_manager import VehicleManager

#: schedule name -> the packet type whose send rate it keeps
SCHEDULED = {
    'session': 'pylon_session', 'imu': 'pylon_imu', 'gt': 'pylon_ground_truth',
    'flight': 'pylon_flight_state', 'actuator': 'pylon_actuator_state',
    'manifest': 'pylon_actuator_manifest', 'motor': 'pylon_motor_state',
    'model': 'pylon_vessel_urdf_chunk', 'authority': 'pylon_control_authority_state',
    'docking': 'pylon_docking_port_state', 'docking_manifest': 'pylon_docking_port_manifest',
    'snapshot': 'pylon_control_snapshot', 'health': 'pylon_vehicle_health',
    'thermal': 'pylon_part_thermal_state'}


#: the schedules the mod keeps on wall time (Unity ``Update``) also when the game runs
#: slower than real time: the session heartbeat, the model's refresh and the slow reports
#: (manifests 1 Hz, health and thermal 2 Hz). Each goes out at least once per period of wall
#: time, because the receiver expires the session (3 s), the model (6 s) and a topic silent
#: for 3 s on its wall clock: a loaded machine must not withdraw a live vessel. The
#: measurements stay on the game's clock (they sample its physics).
WALL_KEPT = frozenset({'session', 'model', 'manifest', 'docking_manifest', 'health',
                       'thermal'})


class Schedule:
    """A periodic deadline on the simulator clock (at most one firing per frame).

    ``wall_kept``: also due once ``period`` s of wall time passed since it last fired, when
    the check is given the wall time (``Moment.wall``).
    """

    def __init__(self, period: float, wall_kept: bool = False) -> None:
        """Fire first at the next check."""
        self.period = period
        self.next = 0.0
        self.wall_kept = wall_kept
        self.wall_at: float | None = None     # s of wall time of the last firing

    def due(self, clock: float, wall: float | None = None) -> bool:
        """Tell whether the period has elapsed at ``clock`` (or on the wall); advance if so."""
        if clock + 1e-9 >= self.next:
            self.next += self.period
            if self.next <= clock:          # fell behind: skip, do not burst
                self.next = clock + self.period
        elif self._wall_due(wall):          # a slow game: the period from now on both clocks
            self.next = clock + self.period
        else:
            return False
        self._fired(wall)
        return True

    def _wall_due(self, wall: float | None) -> bool:
        return (self.wall_kept and wall is not None and self.wall_at is not None
                and wall - self.wall_at >= self.period - 1e-9)

    def _fired(self, wall: float | None) -> None:
        if self.wall_kept and wall is not None:
            self.wall_at = wall

    def fire_now(self) -> None:
        """Make the next check fire."""
        self.next = 0.0

    def restart(self, clock: float, wall: float | None = None) -> None:
        """Count the period from ``clock`` (the packet was just sent out of turn)."""
        self.next = clock + self.period
        self._fired(wall)


@dataclass(frozen=True)
class Moment:
    """The game's state a frame's packets report."""

    clock: float          # s, simulator clock
    sequence: int         # the frame's number (``observationSequence``)
    available: bool       # the mod's availability
    paused: bool
    wall: float | None = None   # s, wall time, which the WALL_KEPT schedules keep too


class ModelSender:
    """The active vessel's proxy model in chunks, and the producer session they belong to."""

    def __init__(self, new_id: Callable[[], str], allowed: bool, servo_joints: bool) -> None:
        """Start a producer session (``new_id()``); send only when ``allowed``."""
        self._new_id = new_id
        self.allowed = allowed
        self.servo_joints = servo_joints     # the proxy-model extension (see proxy_model)
        self.session = new_id()
        self.key: tuple | None = None
        self._chunks: tuple | None = None    # (what they were built from, chunks)

    def send(self, emit: Emit, vessel, epoch: int, ut: float) -> None:
        """Send the vessel's model in chunks (loopback destinations only)."""
        if not self.allowed:
            return
        key = (vessel.vessel_id, epoch, vessel.spec.topology_hash())
        if self.key is not None and (self.key[0], self.key[2]) != (key[0], key[2]):
            # another vessel became active, or its parts changed (a split): retire the old
            # model and start a new producer, as for a new vessel
            emit('pylon_vessel_urdf_clear', {'sessionId': self.session})
            self.session = self._new_id()
        self.key = key
        masses = part_masses(vessel.spec, vessel.resources)
        urdf = proxy_model.build_urdf(vessel.spec, masses, servo_joints=self.servo_joints)
        # the bundle and its compressed chunks only change with the URDF, the centre of
        # mass or the producer: built once, re-sent every 2 s with the UT of the sending
        content = (self.session, urdf, tuple(float(v) for v in vessel.mass.com),
                   self.servo_joints)
        if self._chunks is None or self._chunks[0] != content:
            bundle = proxy_model.build_bundle(vessel.spec, vessel.mass.com, self.session,
                                              urdf, servo_joints=self.servo_joints)
            self._chunks = (content, chunk_model(
                bundle, session_id=self.session, sent_at_ut=ut,
                allow_servo_joints=self.servo_joints))
        for chunk in self._chunks[1]:
            emit('pylon_vessel_urdf_chunk', {**chunk, 'sentAtUt': float(ut)})


class Reports:
    """The mod's state-packet producers for one runtime instance of one game."""

    def __init__(self, world: WorldView, control: VehicleManager, emit: Emit,
                 model: ModelSender) -> None:
        """Report on ``world``'s active vessel under ``control``; send through ``emit``."""
        self.world = world
        self.control = control
        self.emit = emit
        self.model = model
        self.schedules = {name: Schedule(1.0 / packets.SEND_RATES_HZ[type_name],
                                         wall_kept=name in WALL_KEPT)
                          for name, type_name in SCHEDULED.items()}
        self.anchor = telemetry.GroundTruthAnchor()
        self.imu_skip = True
        self._actuator_list: tuple | None = None   # (spec, topology hash, actuators)

    def due(self, clock: float, wall: float | None = None) -> dict[str, bool]:
        """Return, per schedule, whether its packets are due at ``clock`` (and ``wall``)."""
        return {name: schedule.due(clock, wall) for name, schedule in self.schedules.items()}

    def reset(self) -> None:
        """Follow a runtime reset.

        A new ground-truth anchor, the IMU's next sample skipped, the manifest and the
        model due at once.
        """
        self.anchor.reset(self.world.active, self.world.ut)
        self.imu_skip = True
        self.schedules['manifest'].fire_now()
        self.schedules['model'].fire_now()

    def heartbeat(self, vessel_id: str, now: Moment) -> None:
        """Send the session heartbeat (``pylon_session``) of runtime vessel ``vessel_id``."""
        self.emit('pylon_session', telemetry.session(
            self.world, vessel_id, now.available, now.paused,
            self.world.is_packed(self.world.active), now.sequence, now.clock))

    def motion(self, due: dict, view: ksp_view.KspView) -> None:
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

    def vessel(self, due: dict, epoch: int, now: Moment) -> None:
        """Send the model, actuator manifest, authority state and separation results due."""
        vessel = self.world.active
        self.model_and_manifest(due, epoch)
        if due['authority']:
            self.emit(*self.control.authority_state(vessel, now.clock,
                                                    self.control.last_reason))
        for result in self.control.journal.due(now.clock):
            self.emit('pylon_separation_result', result)

    def model_and_manifest(self, due: dict, epoch: int) -> None:
        """Send the vessel's model and its actuator manifest if due."""
        vessel = self.world.active
        if due['model']:
            self.model.send(self.emit, vessel, epoch, self.world.ut)
        if due['manifest']:
            self.emit('pylon_actuator_manifest', actuators.manifest(vessel.spec))

    def control_state(self, due: dict, view: ksp_view.KspView, now: Moment) -> None:
        """Send flight, actuator and motor states, and the snapshot of that frame."""
        vessel, ut, sequence = self.world.active, self.world.ut, now.sequence
        spec = vessel.spec
        flight = None
        states: list[dict] = []
        if due['flight']:
            flight = self.emit('pylon_flight_state', telemetry.flight_state(
                self.world, view, sequence, self.control.flight_fields(now.clock)))
        found = self._actuators(spec)
        if due['actuator']:
            com = tuple(float(v) for v in vessel.mass.com)
            for actuator in found:
                if actuator.actuator_type != 'motor':
                    payload = actuators.state(actuator, spec, ut, sequence, com)
                    payload.update(self.control.actuator_fields(vessel, actuator.name))
                    states.append(self.emit('pylon_actuator_state', payload))
        if due['snapshot'] and flight is not None and due['actuator']:
            self._snapshot(flight, states)
        if due['motor']:
            for actuator in found:
                if actuator.actuator_type == 'motor':
                    payload = actuators.motor_state(actuator, spec, ut)
                    payload.update(self.control.actuator_fields(vessel, actuator.name))
                    self.emit('pylon_motor_state', payload)

    def _actuators(self, spec) -> list[parts.Actuator]:
        """Return the vessel's actuators, found again only for another vessel or topology."""
        key = spec.topology_hash()
        cached = self._actuator_list
        if cached is None or cached[0] is not spec or cached[1] != key:
            cached = self._actuator_list = (spec, key, parts.actuators_of(spec))
        return cached[2]

    def _snapshot(self, flight: dict, states: list[dict]) -> None:
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

    def health(self, due: dict, now: Moment) -> None:
        """Send the vessel's power (2 Hz) and one thermal state per part (2 Hz)."""
        vessel, ut, sequence = self.world.active, self.world.ut, now.sequence
        if due['health']:
            self.emit('pylon_vehicle_health', telemetry.vehicle_health(vessel, ut, sequence))
        if due['thermal']:
            for payload in telemetry.part_thermal_states(vessel, ut, sequence):
                self.emit('pylon_part_thermal_state', payload)

    def camera_port(self) -> tuple[str, Part] | None:
        """Return the docking port the active vessel's camera looks through, and its part."""
        typed = self.control.typed(self.world.active)
        port = typed.camera_port()
        if port is None:
            return None
        flight_id = typed.docking_fields(port)['partFlightId']
        return port, next(p for p in self.world.active.spec.parts if p.flight_id == flight_id)

    def docking(self, due: dict) -> None:
        """Send the docking-port manifest and the port states due."""
        typed = self.control.typed(self.world.active)
        ports = typed.docking_ports()
        if ports and due['docking_manifest']:
            self.emit('pylon_docking_port_manifest', {'ports': [
                {k: typed.docking_fields(port)[k] for k in ('name', 'partFlightId',
                                                             'moduleIndex')}
                for port in ports]})
        if ports and due['docking']:
            for port in ports:
                self.emit('pylon_docking_port_state', typed.docking_fields(port))
