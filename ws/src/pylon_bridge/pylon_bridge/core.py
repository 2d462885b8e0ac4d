"""The bridge's logic without rclpy: datagrams in, actions out, by a small dispatcher.

``BridgeCore.handle(data, source, now, ros_now)`` decodes and validates one datagram
(``decode``: ``pylon_protocol``), then ``handle_packet`` applies the session gate
(heartbeats open and refresh the session; everything else must match it), then the two
gates of the specification, once for every type: nothing from ground truth with
``--disable-ground-truth``, no new measurement while the game is paused. It hands the
datagram to the collaborator whose job it is and returns the ``Publish``/``Destroy``
actions for the node:

| collaborator | job |
|---|---|
| ``session_time.SessionTime`` | the runtime session, UT -> ROS time, pause |
| ``vessel_session.VesselSession`` | the VesselLifecycle: generations, states, model readiness |
| ``transforms.Transforms`` | /tf and /tf_static bookkeeping |
| ``description.ProxyDescription`` | the proxy model, robot_description and root_frame |
| ``measurements.Measurements`` | IMU (with an AHRS's orientation), ground truth, nearby vessels |
| ``sensor_streams.SensorStreams`` | star trackers, LiDARs, cameras, relative nav., GNSS |
| ``actuation.Actuation`` | authority, wrench feedback, actuators (manifests), docking; commands |
| ``flight.Flight`` | flight state and control snapshots (ground truth) |
| ``health.Health`` | power and part temperatures |
| ``separation_results.SeparationResults`` | separation receipts, their cache and the service |
| ``simulator_state.SimulatorTracker`` | the game's state from heartbeats; UT; ``/clock`` |

``tick(now, ros_now)`` expires the session, the model and silent topics, and says STALE on
``simulator/state`` when the heartbeats stop. With ``publish_clock`` every datagram that
moves the UT-mapped time forward also publishes ``/clock`` (a model chunk never does: it
carries no ``universalTime``, and its ``sentAtUt`` is not read). Every handler takes
``(packet, source, now, ros_now)``; only the model chunk's reads ``source`` (a model from a
remote address is refused without ``allow_remote_models``). Every rejected
datagram is counted by reason in ``stats``; nothing here raises on bad input. Times:
``now`` is monotonic seconds (expiries), ``ros_now`` the ROS clock in seconds (stamps).

Ground truth in another ROS domain (``route_ground_truth``, ``--ground-truth-domain``): the
core then behaves as with ``--disable-ground-truth`` (no ground-truth topic, no world TF,
an empty ``world_frame``), but instead of dropping the ground-truth datagrams it hands them,
and every accepted heartbeat, to a second ``BridgeCore`` with ground truth on, the *truth
core* (counted ``routed.<type>``). That core stamps on this one's UT -> ROS mapping, so its
messages are those a single core would publish; of its actions only those of the
ground-truth topics (``pylon_common.topics.GROUND_TRUTH_KEYS``) come back, wrapped in
``Relayed`` for the node in the other domain (not the world TF). ``tick`` expires its
topics too; its drops and ignored datagrams are counted here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pylon_common import topics
from pylon_common.stamps import to_time
from pylon_protocol import packets
from pylon_protocol.errors import ProtocolError
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Float64, String

from pylon_bridge import description, simulator_state, vessel_session
from pylon_bridge.actions import Destroy, Publish, Relayed, Stats
from pylon_bridge.actuation import Actuation
from pylon_bridge.commands import CommandError, Outgoing
from pylon_bridge.context import CoreConfig, Shared
from pylon_bridge.flight import Flight
from pylon_bridge.health import Health
from pylon_bridge.measurements import Measurements
from pylon_bridge.sensor_streams import SensorStreams
from pylon_bridge.separation_results import QUERY_SENT, SeparationResults
from pylon_bridge.session_time import MappedTime

__all__ = ['BridgeCore', 'CoreConfig', 'Destroy', 'EXPIRY_PERIOD_SEC', 'Publish', 'Relayed',
           'Stats']

EXPIRY_PERIOD_SEC = 0.25
GROUND_TRUTH_TYPES = frozenset({'pylon_ground_truth', 'pylon_nearby_vessels',
                                'pylon_flight_state', 'pylon_control_snapshot'})
"""Dropped as a whole with ``--disable-ground-truth``; routed to the truth core with
``--ground-truth-domain``."""
PAUSED_TYPES = frozenset({'pylon_imu', 'pylon_ground_truth', 'pylon_motor_state',
                          'pylon_star_tracker', 'pylon_lidar_scan',
                          'pylon_camera_frame_chunk', 'pylon_relative_nav', 'pylon_gnss',
                          'pylon_ahrs'})
"""Measurements: none is published while the game is paused."""


def _star_tracker_gated_fields(packet: dict) -> tuple[dict, bool]:
    """Return what the session gate checks of a star tracker datagram; may it pass unavailable.

    Every other datagram is checked whole, and never while the session is unavailable.

    Star tracker notices (seed 003): ``inactive`` comes when its vessel stops being the
    active one, under the new session's envelope with the old vessel's id, so the gate
    checks its envelope but not its ``vesselId``; ``packed`` comes while the vessel is on
    rails, when the session is not available, so it passes while unavailable.
    """
    reason = packet.get('reason')
    if reason == 'inactive':
        return {key: value for key, value in packet.items() if key != 'vesselId'}, False
    return packet, reason == 'packed'


class BridgeCore:
    """Gates and dispatches datagrams; expires what fell silent."""

    def __init__(self, config: CoreConfig, mapped: MappedTime | None = None) -> None:
        """Start with no session; the vessel lifecycle is UNAVAILABLE.

        ``mapped``: stamp on another core's UT -> ROS mapping (the truth core on its
        bridge core's). With ``config.route_ground_truth`` the truth core is made here.
        """
        if config.disable_ground_truth and config.route_ground_truth:
            raise ValueError('ground truth cannot be both disabled and routed')
        self.shared = s = Shared(config, mapped)
        self.config, self.stats = config, s.stats
        self.measurements = Measurements(s)
        self.sensors = SensorStreams(s)
        self.actuation = Actuation(s)
        self.flight = Flight(s)
        self.health = Health(s)
        self.separations = SeparationResults(self.stats)
        self.simulator = simulator_state.SimulatorTracker()
        self._clock_published: float | None = None
        self.truth = BridgeCore(replace(config, route_ground_truth=False, publish_clock=False),
                                s.time.mapped) if config.route_ground_truth else None
        self._handlers = {
            'pylon_imu': self.measurements.imu,
            'pylon_ahrs': self.measurements.ahrs,
            'pylon_ground_truth': self.measurements.ground_truth,
            'pylon_nearby_vessels': self.measurements.nearby,
            'pylon_star_tracker': self.sensors.star_tracker,
            'pylon_lidar_scan': self.sensors.lidar,
            'pylon_lidar_inactive': self.sensors.lidar_inactive,
            'pylon_camera_frame_chunk': self.sensors.camera_chunk,
            'pylon_camera_inactive': self.sensors.camera_inactive,
            'pylon_relative_nav': self.sensors.relative_nav,
            'pylon_gnss': self.sensors.gnss,
            'pylon_control_authority_state': self.actuation.authority_state,
            'pylon_wrench_status': self.actuation.wrench_status,
            'pylon_actuator_state': self.actuation.actuator_state,
            'pylon_actuator_manifest': self.actuation.actuator_manifest,
            'pylon_motor_state': self.actuation.motor,
            'pylon_docking_port_state': self.actuation.docking_state,
            'pylon_docking_port_manifest': self.actuation.docking_manifest,
            'pylon_vessel_urdf_chunk': self._model_chunk,
            'pylon_vessel_urdf_clear': self._model_clear,
            'pylon_flight_state': self.flight.flight_state,
            'pylon_control_snapshot': self.flight.snapshot,
            'pylon_vehicle_health': self.health.power,
            'pylon_part_thermal_state': self.health.thermal,
            'pylon_separation_result': self._separation_result,
        }

    @property
    def vessel(self) -> vessel_session.VesselSessionState:
        """Return the vessel session as the lifecycle topic says it."""
        return self.shared.vessel.current

    @property
    def paused(self) -> bool:
        """Return whether the last heartbeat said the game is paused."""
        return self.shared.time.paused

    def initial(self, ros_now: float) -> list:
        """Return what to publish at start: lifecycle, status and an empty model."""
        return [*vessel_session.changed(self.vessel, ros_now),
                Publish('status', String(data='waiting for a PyLoN session')),
                *description.empty()]

    # -- entry points ----------------------------------------------------------------------------
    def handle(self, data: bytes, source: Any, now: float, ros_now: float) -> list:
        """Process one datagram; return the actions it causes."""
        packet = self.decode(data)
        return [] if packet is None else self.handle_packet(packet, source, now, ros_now)

    def decode(self, data: bytes) -> dict | None:
        """Return a datagram's validated packet, or None (counted as dropped or ignored)."""
        self.stats.received += 1
        try:
            packet = packets.decode_state(data, self.config.max_datagram_bytes)
        except ProtocolError as exc:
            if exc.reason == 'unknown_type':    # a newer mod's packet: ignored silently
                self.stats.ignored['unknown_type'] += 1
            else:
                self.stats.drop(exc.reason, str(exc))
            return None
        self.stats.by_type[packet['type']] += 1
        return packet

    def handle_packet(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Process one packet ``decode`` returned; return the actions it causes."""
        kind = packet['type']
        if kind == 'pylon_session':
            return self._heartbeat(packet, now, ros_now)
        try:
            if kind == 'pylon_star_tracker':
                self.shared.time.admit(*_star_tracker_gated_fields(packet))
            else:
                self.shared.time.admit(packet)
        except ProtocolError as exc:
            return self.stats.drop(exc.reason, f'{kind}: {exc}')
        handler = self._handlers.get(kind)
        if handler is None:                  # a state this bridge has no topic for
            self.stats.ignored[kind] += 1
            return []
        self.stats.accepted += 1
        if kind in GROUND_TRUTH_TYPES and not self.config.ground_truth_here:
            if self.truth is None:
                return self.stats.drop('ground_truth_disabled', kind)
            return self._route(packet, now, ros_now)
        if kind in PAUSED_TYPES and self.paused:
            return self.stats.drop('paused', f'{kind} while paused')
        try:
            out = handler(packet, source, now, ros_now)
            return out + self._clock() if self.config.publish_clock else out
        except ProtocolError as exc:
            return self.stats.drop(exc.reason, f'{kind}: {exc}')

    def _clock(self) -> list:
        """Return /clock when the UT-mapped time moved forward (``publish_clock``: callers)."""
        latest = self.shared.time.latest_stamp
        if latest is None or (
                self._clock_published is not None and latest <= self._clock_published):
            return []
        self._clock_published = latest
        return [Publish('clock', Clock(clock=to_time(latest)))]

    def tick(self, now: float, ros_now: float) -> list:
        """Expire the session, the model and the topics that fell silent; return the actions."""
        s = self.shared
        out: list = []
        if s.time.expire(now, self.config.topic_timeout_sec):
            out += vessel_session.changed(s.vessel.stale(), ros_now)
            out.append(Publish('status', String(
                data=f'stale: no heartbeat for {self.config.topic_timeout_sec:g} s')))
            out += self._withdraw_model(ros_now, lifecycle=False)
            self._new_session()
        self.sensors.expire(now)
        if s.description.expired(now):
            out += self._withdraw_model(ros_now)      # not refreshed in time: withdrawn
        out += s.topics.expire(now, self.config.topic_timeout_sec)
        out += self.sensors.expire_star_trackers(now, ros_now)
        stale = self.simulator.stale(now, self.config.topic_timeout_sec)
        if stale is not None:
            out.append(s.topics.publish('simulator/state',
                                        simulator_state.message(stale, ros_now), now))
        if self.truth is not None:
            out += self._relayed(self.truth.tick(now, ros_now))
        return out

    def model_tf(self, now: float, ros_now: float) -> list:
        """Return /tf with ``base_link -> proxy root`` at the newest game time, if not sent.

        The node calls this at ``--model-tf-rate``: the proxy model's frames then stay
        connected when no ground truth and no sensor sample carries them.
        """
        s = self.shared
        latest = s.time.latest_stamp
        if latest is None or s.description.model is None:
            return []
        return s.transforms.cover(latest, now, s.description.model)

    def reject(self, reason: str, detail: str) -> None:
        """Count a datagram the node could not even read (e.g. longer than the buffer)."""
        self.stats.received += 1
        self.stats.drop(reason, detail)

    def command(self, outgoing: Outgoing, now: float) -> bytes:
        """Return the datagram of a command for the current session (``Actuation.command``)."""
        return self.actuation.command(outgoing, now)

    def command_rejected(self, key: str, msg: Any, error: CommandError, ros_now: float) -> list:
        """Count a refused command; return what reports it (``Actuation.command_rejected``)."""
        return self.actuation.command_rejected(key, msg, error, ros_now)

    def separation_query(self, request: Any, now: float, ros_now: float) -> tuple[Any, bytes]:
        """Answer ``GetSeparationResult``; return (response, query datagram or b'')."""
        response, query = self.separations.get(request, now, ros_now)
        if query is None:
            return response, b''
        try:
            data = self.command(query, now)
        except CommandError as error:
            self.stats.commands_rejected[error.reason] += 1
            response.reason = error.detail
            return response, b''
        response.query_sent, response.reason = True, QUERY_SENT
        return response, data

    def _separation_result(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        msg = self.separations.result(packet, now, ros_now)
        return [] if msg is None else [
            self.shared.topics.publish('actuators/separation/result', msg, now)]

    # -- session ---------------------------------------------------------------------------------
    def _heartbeat(self, packet: dict, now: float, ros_now: float) -> list:
        s = self.shared
        try:
            result = s.time.heartbeat(packet, now)
        except ProtocolError as exc:
            return self.stats.drop(exc.reason, f'pylon_session: {exc}')
        if not result.accepted:
            return self.stats.drop(result.reason, 'pylon_session out of order')
        self.stats.accepted += 1
        out: list = []
        if result.session_changed:
            out += self._withdraw_model(ros_now, lifecycle=False)
            self._new_session()
        state = s.vessel.session(result.key, packet.get('vesselName', ''), result.available,
                                 packet['universalTime'], result.session_changed,
                                 result.reason == 'reopened')
        return (out + self._simulator_state(packet, now, ros_now)
                + vessel_session.changed(state, ros_now, status=True)
                + self._route(packet, now, ros_now))

    def _simulator_state(self, packet: dict, now: float, ros_now: float) -> list:
        """Return ``simulator/state`` and ``simulator/universal_time`` of a heartbeat."""
        observed = self.simulator.observe(packet, now)
        if observed is None:
            return []
        topics = self.shared.topics
        out = [topics.publish('simulator/state', simulator_state.message(observed, ros_now),
                              now),
               topics.publish('simulator/universal_time',
                              Float64(data=observed.universal_time), now)]
        if self.config.publish_clock and packet['vesselId']:
            try:
                self.shared.stamp(packet, ros_now)
            except ProtocolError:       # a UT no stamp holds: the heartbeat moves no clock
                return out
            out += self._clock()
        return out

    # -- ground truth in another domain ---------------------------------------------------------
    def _route(self, packet: dict, now: float, ros_now: float) -> list:
        """Hand an admitted packet to the truth core; return its ground-truth actions."""
        if self.truth is None:
            return []
        self.stats.routed[packet['type']] += 1
        # no ground-truth datagram depends on its sender (only a model chunk does)
        return self._relayed(self.truth.handle_packet(packet, None, now, ros_now))

    def _relayed(self, actions: list) -> list:
        """Return the truth core's actions on ground-truth topics, for the other domain."""
        self.stats.absorb(self.truth.stats)
        return [Relayed(action) for action in actions
                if action.key in topics.GROUND_TRUTH_KEYS]

    def _new_session(self) -> None:
        """Forget everything that belonged to the previous runtime session."""
        self.shared.time.new_session()
        self.shared.transforms.new_session()
        self.shared.topics.new_session()
        for collaborator in (self.measurements, self.sensors, self.actuation):
            collaborator.new_session()

    # -- model -----------------------------------------------------------------------------------
    def _model_chunk(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        s = self.shared
        model = s.description.add(packet, source, now, s.vessel_id())
        if model is None:
            return []
        return [*description.published(model), *s.transforms.static(model, ros_now),
                *vessel_session.changed(s.vessel.model(model.model_id), ros_now)]

    def _model_clear(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        if not self.shared.description.clear(packet['sessionId'], now):
            return []
        return self._withdraw_model(ros_now)

    def _withdraw_model(self, ros_now: float, lifecycle: bool = True) -> list:
        """Withdraw the model: latched description and root frame become empty."""
        s = self.shared
        s.transforms.forget_mounts()
        out = s.description.withdraw()
        if out and lifecycle:
            out += vessel_session.changed(s.vessel.model(''), ros_now)
        return out

