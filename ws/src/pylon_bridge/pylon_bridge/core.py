"""The bridge's logic without rclpy: datagrams in, messages to publish out.

``BridgeCore.handle(data, source, now, ros_now)`` decodes and validates one datagram
(``pylon_protocol``), applies session gating (heartbeats open and refresh the session;
everything else must match it), maps UT to ROS time with one offset per session, applies
the duplicate and ordering rules, and returns ``Publish``/``Destroy`` actions for the node.
``tick(now, ros_now)`` expires the session and silent topics. Every rejected datagram is
counted by reason in ``stats``; nothing here raises on bad input.

Times: ``now`` is monotonic seconds (expiries), ``ros_now`` the ROS clock in seconds
(stamps).
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from pylon_interfaces.msg import VesselLifecycle
from pylon_protocol import frames, packets, wire
from pylon_protocol.camera import FrameAssembler
from pylon_protocol.errors import ProtocolError
from pylon_protocol.model_chunks import ModelAssembler
from pylon_protocol.session import SessionTracker, UtClock
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from pylon_bridge import commands, convert, sensors
from pylon_bridge.lifecycle import Lifecycle, LifecycleState, STATE_NAMES

# topic keys whose messages are state: never destroyed for silence
LATCHED_KEYS = frozenset({'status', 'lifecycle', 'robot_description', 'root_frame', 'tf_static',
                          'control/authority/state', 'actuators/separation/state'})
# the wire's actuator kinds and the topic keys of their state
ACTUATOR_STATE_KEYS = {'wheel': 'actuators/wheel/state', 'engine': 'actuators/propulsion/state',
                       'rcs': 'actuators/rcs/state', 'separation': 'actuators/separation/state'}
# topic keys that belong to ground truth (never created with --disable-ground-truth)
GROUND_TRUTH_KEYS = ('ground_truth/pose', 'ground_truth/twist', 'ground_truth/twist_body',
                     'ground_truth/acceleration', 'ground_truth/frame_angular_velocity',
                     'ground_truth/nearby_vessels')
EXPIRY_PERIOD_SEC = 0.25
STAR_TRACKER_STALE_PERIOD_SEC = 0.25     # the 4 Hz ``stale`` heartbeat of a silent tracker
STAR_TRACKER_MIN_LIFETIME_SEC = 30.0     # removal: max(this, 3 x topic timeout) of silence


@dataclass
class StarTrackerTopic:
    """What the bridge remembers of one star tracker (by sensor id)."""

    session_id: str
    sequence: int
    last: Any                 # the last StarTrackerState published from a sample
    seen: float               # monotonic time of the last sample
    heartbeat: float = 0.0    # monotonic time of the last stale heartbeat


@dataclass(frozen=True)
class Publish:
    """Publish ``msg`` on the topic with ``key`` (and ``topic_id`` for per-port topics)."""

    key: str
    msg: Any
    topic_id: str = ''


@dataclass(frozen=True)
class Destroy:
    """Remove the topic with ``key`` (and ``topic_id``)."""

    key: str
    topic_id: str = ''


@dataclass
class Stats:
    """Counters for diagnostics."""

    received: int = 0
    accepted: int = 0
    dropped: Counter = field(default_factory=Counter)
    ignored: Counter = field(default_factory=Counter)
    published: Counter = field(default_factory=Counter)
    by_type: Counter = field(default_factory=Counter)
    commands_sent: Counter = field(default_factory=Counter)
    commands_rejected: Counter = field(default_factory=Counter)


@dataclass
class CoreConfig:
    """The options the core needs (a subset of the bridge's configuration)."""

    topic_timeout_sec: float = 3.0
    disable_ground_truth: bool = False
    allow_remote_models: bool = False
    allow_servo_joints: bool = False
    publish_proxy_static_tf: bool = True
    max_datagram_bytes: int = wire.MAX_DATAGRAM_BYTES
    world_frame: str = 'pylon_ground_truth_enu'
    body_frame: str = 'base_link'
    reuse_messages: bool = False   # refill one IMU message (the node publishes at once)


class BridgeCore:
    """Session, time, lifecycle, model and topic lifetimes of the bridge."""

    def __init__(self, config: CoreConfig) -> None:
        """Start with no session; the lifecycle is UNAVAILABLE."""
        self.config = config
        self.stats = Stats()
        self.session = SessionTracker()
        self.clock = UtClock()
        self.models = ModelAssembler(allow_remote=config.allow_remote_models,
                                     allow_servo_joints=config.allow_servo_joints)
        self.lifecycle = Lifecycle('' if config.disable_ground_truth else config.world_frame)
        self.last_seen: dict[tuple[str, str], float] = {}   # (key, id) -> time of last data
        self.paused = False
        self.recent_drops: deque[tuple[str, str]] = deque(maxlen=32)
        self.last_authority = None          # the last ControlAuthorityState of the mod
        self._imu_msg = None
        self.drop_count = 0
        self.last_wrench_status: dict | None = None    # for diagnostics
        self.star_trackers: dict[str, StarTrackerTopic] = {}
        self.camera_frames = FrameAssembler()
        self._reset_session_state()

    # -- per-session state -----------------------------------------------------------------
    def _reset_session_state(self) -> None:
        self.clock.reset()
        self.last_imu_ut: float | None = None
        self.last_gt: dict | None = None
        self.last_gt_stamp: float | None = None
        self.last_tf_ns: int | None = None       # newest stamp on /tf, in ns
        self.motors: dict[str, dict] = {}
        self.model = None
        self.sensor_mounts: dict[str, tuple] = {}   # frame -> (part flight id, xyz, xyzw)
        self.last_scan_ut: dict[tuple[str, str], float] = {}
        self.camera_frames.reset()

    def initial(self, ros_now: float) -> list:
        """Return what to publish at start: lifecycle, status and an empty model."""
        return [self._lifecycle_msg(self.lifecycle.current, ros_now),
                Publish('status', String(data='waiting for a PyLoN session')),
                Publish('robot_description', String(data='')),
                Publish('root_frame', String(data=''))]

    # -- entry points ------------------------------------------------------------------
    def handle(self, data: bytes, source: Any, now: float, ros_now: float) -> list:
        """Process one datagram; return the actions it causes."""
        self.stats.received += 1
        try:
            packet = packets.decode_state(data, self.config.max_datagram_bytes)
        except ProtocolError as exc:
            if exc.reason == 'unknown_type':    # a newer mod's packet: ignored silently
                self.stats.ignored['unknown_type'] += 1
                return []
            return self._drop(exc.reason, str(exc))
        kind = packet['type']
        self.stats.by_type[kind] += 1
        if kind == 'pylon_session':
            return self._heartbeat(packet, now, ros_now)
        try:
            self.session.admit(packet)
        except ProtocolError as exc:
            return self._drop(exc.reason, f'{kind}: {exc}')
        handler = self._handlers.get(kind)
        if handler is None:                  # a state this bridge has no topic for
            self.stats.ignored[kind] += 1
            return []
        self.stats.accepted += 1
        try:
            return handler(self, packet, source, now, ros_now)
        except ProtocolError as exc:
            return self._drop(exc.reason, f'{kind}: {exc}')

    def tick(self, now: float, ros_now: float) -> list:
        """Expire the session and topics that fell silent; return the actions."""
        out: list = []
        if self.session.expire(now, self.config.topic_timeout_sec):
            out += self._lifecycle_change(self.lifecycle.stale(), ros_now)
            out.append(Publish('status', String(
                data=f'stale: no heartbeat for {self.config.topic_timeout_sec:g} s')))
            out += self._clear_model(ros_now, lifecycle=False)
            self._reset_session_state()
        self.models.expire(now)
        self.camera_frames.expire(now)
        if self.model is not None and not self.models.is_current(now):
            out += self._clear_model(ros_now)      # not refreshed in time: withdrawn
        for (key, topic_id), seen in list(self.last_seen.items()):
            if key not in LATCHED_KEYS and now - seen > self.config.topic_timeout_sec:
                del self.last_seen[key, topic_id]
                out.append(Destroy(key, topic_id))
        out += self._expire_star_trackers(now, ros_now)
        return out

    def reject(self, reason: str, detail: str) -> None:
        """Count a datagram the node could not even read (e.g. longer than the buffer)."""
        self.stats.received += 1
        self._drop(reason, detail)

    # -- helpers -----------------------------------------------------------------------
    def _drop(self, reason: str, detail: str) -> list:
        self.drop_count += 1
        self.stats.dropped[reason] += 1
        self.recent_drops.append((reason, detail))
        return []

    def _stamp(self, packet: dict, ros_now: float) -> float:
        ut = packet.get('universalTime')
        if ut is not None:
            self.lifecycle.note_ut(ut)
        return self.clock.stamp(ut, ros_now)

    def _publish(self, key: str, msg: Any, now: float, topic_id: str = '') -> Publish:
        self.last_seen[key, topic_id] = now
        self.stats.published[key] += 1
        return Publish(key, msg, topic_id)

    def _lifecycle_msg(self, state: LifecycleState, ros_now: float) -> Publish:
        msg = VesselLifecycle(
            state=state.state, vessel_id=state.vessel_id, vessel_name=state.vessel_name,
            runtime_instance=state.runtime_instance, runtime_epoch=state.runtime_epoch,
            runtime_generation=state.runtime_generation, generation=state.generation,
            origin_sequence=state.origin_sequence, world_frame=state.world_frame,
            body_frame=state.body_frame, model_ready=state.model_ready,
            model_id=state.model_id, reason=state.reason)
        msg.header.stamp = convert.to_time(ros_now)
        msg.header.frame_id = state.world_frame
        return Publish('lifecycle', msg)

    def _lifecycle_change(self, state: LifecycleState | None, ros_now: float) -> list:
        return [] if state is None else [self._lifecycle_msg(state, ros_now)]

    # -- session -----------------------------------------------------------------------
    def _heartbeat(self, packet: dict, now: float, ros_now: float) -> list:
        try:
            result = self.session.observe_heartbeat(packet, now)
        except ProtocolError as exc:
            return self._drop(exc.reason, f'pylon_session: {exc}')
        if not result.accepted:
            return self._drop(result.reason, 'pylon_session out of order')
        self.stats.accepted += 1
        self.paused = bool(packet.get('paused', False))
        out: list = []
        if result.session_changed:
            out += self._clear_model(ros_now, lifecycle=False)
            self._reset_session_state()
        state = self.lifecycle.session(result.key, packet.get('vesselName', ''),
                                       result.available, packet['universalTime'],
                                       result.session_changed, result.reason == 'reopened')
        out += self._lifecycle_change(state, ros_now)
        if state is not None:
            out.append(Publish('status', String(data=self._status_text())))
        return out

    def _status_text(self) -> str:
        current = self.lifecycle.current
        vessel = f'{current.vessel_name or "-"} ({current.vessel_id or "-"})'
        return (f'{STATE_NAMES[current.state].lower()}: {vessel} generation {current.generation}, '
                f'{current.reason}')

    # -- measurements --------------------------------------------------------------------
    def _measured(self, ros_now: float) -> list:
        state = self.lifecycle.measured()
        out = self._lifecycle_change(state, ros_now)
        if state is not None:
            out.append(Publish('status', String(data=self._status_text())))
        return out

    def _imu(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        if self.paused:
            return self._drop('paused', 'pylon_imu while paused')
        ut = packet['universalTime']
        if self.last_imu_ut is not None and ut <= self.last_imu_ut:
            return self._drop('stale_imu', f'pylon_imu UT {ut} <= {self.last_imu_ut}')
        self.last_imu_ut = ut
        stamp = self._stamp(packet, ros_now)
        # the transform covering the sample goes out first, so a listener has it in time
        out = self._sensor_tf(stamp, now)
        msg = convert.imu(packet, stamp, self.config.body_frame, into=self._imu_msg)
        if self.config.reuse_messages:
            self._imu_msg = msg
        out.append(self._publish('imu', msg, now))
        if self.config.disable_ground_truth:
            out += self._measured(ros_now)
        return out

    def _claim_tf_stamp(self, stamp: float) -> bool:
        """Return whether ``stamp`` is newer than every stamp on /tf so far (and take it).

        Compared in whole nanoseconds, as the message carries it, so that no stamp is
        ever published twice.
        """
        stamp_ns = convert.to_nanoseconds(stamp)
        if self.last_tf_ns is not None and stamp_ns <= self.last_tf_ns:
            return False
        self.last_tf_ns = stamp_ns
        return True

    def _sensor_tf(self, stamp: float, now: float) -> list:
        """Cover a sensor stamp newer than the last transform on /tf.

        With ground truth, the last pose is extrapolated to the stamp (at most 0.1 s);
        without it, only ``base_link -> proxy root`` is sent, at the stamp.
        """
        if self.config.disable_ground_truth:
            if self.model is None or not self._claim_tf_stamp(stamp):
                return []
            return [self._publish('tf', self._tf_message(None, stamp), now)]
        if self.last_gt is None:
            return []
        tf = convert.world_transform(self.last_gt, self.last_gt_stamp, stamp,
                                     world_frame=self.config.world_frame,
                                     body_frame=self.config.body_frame)
        covered = convert.to_seconds(tf.header.stamp)
        if not self._claim_tf_stamp(covered):
            return []                # capped at a stamp already sent: nothing new
        return [self._publish('tf', self._tf_message(tf, covered), now)]

    def _tf_message(self, world_tf, stamp: float) -> Any:
        transforms = [world_tf] if world_tf is not None else []
        if self.model is not None:
            transforms.append(convert.base_to_root_transform(self.model, stamp,
                                                             self.config.body_frame))
        return TFMessage(transforms=transforms)

    def _ground_truth(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        if self.config.disable_ground_truth:
            return self._drop('ground_truth_disabled', 'pylon_ground_truth')
        if self.paused:
            return self._drop('paused', 'pylon_ground_truth while paused')
        stamp = self._stamp(packet, ros_now)
        out = self._lifecycle_change(self.lifecycle.mod_origin(packet['originSequence']),
                                     ros_now)
        gt = convert.ground_truth(packet, stamp, self.config.world_frame, self.config.body_frame)
        self.last_gt, self.last_gt_stamp = packet, stamp
        out += [self._publish('ground_truth/pose', gt.pose, now),
                self._publish('ground_truth/twist', gt.twist, now),
                self._publish('ground_truth/twist_body', gt.twist_body, now),
                self._publish('ground_truth/acceleration', gt.accel, now)]
        if gt.frame_angular_velocity is not None:
            out.append(self._publish('ground_truth/frame_angular_velocity',
                                     gt.frame_angular_velocity, now))
        if self._claim_tf_stamp(stamp):
            tf = convert.world_transform(packet, stamp, world_frame=self.config.world_frame,
                                         body_frame=self.config.body_frame)
            out.append(self._publish('tf', self._tf_message(tf, stamp), now))
        out += self._measured(ros_now)
        return out

    def _nearby(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        if self.config.disable_ground_truth:
            return self._drop('ground_truth_disabled', 'pylon_nearby_vessels')
        gt = self.last_gt
        if (gt is None or gt['vesselId'] != packet['vesselId']
                or gt['originSequence'] != packet['originSequence']):
            return self._drop('nearby_without_ground_truth',
                              'pylon_nearby_vessels does not follow its ground truth')
        stamp = self._stamp(packet, ros_now)
        msg = convert.nearby(packet, stamp, self.config.world_frame)
        msg.origin_sequence = self.lifecycle.current.origin_sequence
        return [self._publish('ground_truth/nearby_vessels', msg, now)]

    def _motor(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        if self.paused:
            return self._drop('paused', 'pylon_motor_state while paused')
        self.motors[packet['name']] = packet
        stamp = self._stamp(packet, ros_now)
        out = [self._publish('joint_states',
                             convert.joint_state(self.motors.values(), stamp), now),
               self._publish('actuators/servo/state',
                             convert.motor_state(packet, stamp, self.config.body_frame), now)]
        if self.model is not None and self.config.publish_proxy_static_tf:
            # the servo joints of the extension move: the bridge animates them on /tf
            # (robot_state_publisher does it instead when it runs)
            moving = [j for j in self.model.structure.joints
                      if j.type in ('revolute', 'prismatic') and j.name in self.motors]
            if moving:
                out.append(self._publish('tf', TFMessage(transforms=[
                    convert.servo_joint_transform(j, self.motors[j.name]['position'], stamp)
                    for j in moving]), now))
        return out

    def _star_tracker(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        if self.paused:
            return self._drop('paused', 'pylon_star_tracker while paused')
        sensor = packet['sensorId']
        known = self.star_trackers.get(sensor)
        if known is not None and known.session_id == packet['sessionId'] \
                and packet['sequence'] <= known.sequence:
            return self._drop('stale_sequence',
                              f'pylon_star_tracker {sensor}: sequence {packet["sequence"]} '
                              f'<= {known.sequence}')
        state = convert.star_tracker_state(packet, self._stamp(packet, ros_now))
        self.star_trackers[sensor] = StarTrackerTopic(packet['sessionId'], packet['sequence'],
                                                      state, now)
        self.stats.published['star_tracker/state'] += 1
        out = [Publish('star_tracker/state', state, sensor)]
        if state.valid:
            self.stats.published['star_tracker/attitude'] += 1
            out.append(Publish('star_tracker/attitude', convert.star_tracker_attitude(state),
                               sensor))
        return out

    def _expire_star_trackers(self, now: float, ros_now: float) -> list:
        """Send the 4 Hz ``stale`` heartbeat of silent trackers; remove long-silent ones."""
        timeout = self.config.topic_timeout_sec
        lifetime = max(STAR_TRACKER_MIN_LIFETIME_SEC, 3.0 * timeout)
        out: list = []
        for sensor, tracker in list(self.star_trackers.items()):
            silent = now - tracker.seen
            if silent > lifetime:
                del self.star_trackers[sensor]
                out += [Destroy('star_tracker/state', sensor),
                        Destroy('star_tracker/attitude', sensor)]
            elif silent > timeout and now - tracker.heartbeat >= \
                    STAR_TRACKER_STALE_PERIOD_SEC - 1e-3:
                tracker.heartbeat = now
                self.stats.published['star_tracker/state'] += 1
                out.append(Publish('star_tracker/state',
                                   convert.star_tracker_stale(tracker.last, ros_now), sensor))
        return out

    def _lidar(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        if self.paused:
            return self._drop('paused', 'pylon_lidar_scan while paused')
        mode, sensor = packet['mode'], packet['sensorId']
        ut = packet.get('universalTime')
        if ut is not None:
            last = self.last_scan_ut.get((mode, sensor))
            if last is not None and ut <= last:
                return self._drop('stale_scan', f'pylon_lidar_scan {sensor}: UT {ut} <= {last}')
            self.last_scan_ut[mode, sensor] = ut
        stamp = self._stamp(packet, ros_now) if ut is not None else ros_now
        frame = sensors.sensor_frame(self.lifecycle.current.vessel_id, sensor)
        if mode == '2D':
            msg = sensors.laser_scan(packet, stamp, frame)
            key = 'lidar_2d'
        else:
            try:
                points = sensors.scan_points(packet)
            except ValueError as exc:
                return self._drop('bad_layout', f'pylon_lidar_scan {sensor}: {exc}')
            msg = sensors.point_cloud(points, stamp, frame)
            key = 'lidar_3d'
        out = self._sensor_tf(stamp, now)
        if 'framePosition' in packet and 'frameRotation' in packet:
            out += self._note_mount(frame, packet.get('partFlightId', 0),
                                    packet['framePosition'], packet['frameRotation'], ros_now)
        out.append(self._publish(key, msg, now, topic_id=sensor))
        return out

    def _lidar_inactive(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        key = 'lidar_2d' if packet['mode'] == '2D' else 'lidar_3d'
        return self._remove(key, packet['sensorId'])

    def _remove(self, *keys_then_id: str) -> list:
        *keys, topic_id = keys_then_id
        out = []
        for key in keys:
            if self.last_seen.pop((key, topic_id), None) is not None:
                out.append(Destroy(key, topic_id))
        return out

    def _camera_chunk(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        if self.paused:
            return self._drop('paused', 'pylon_camera_frame_chunk while paused')
        try:
            frame = self.camera_frames.add_decoded(packet, now)
        except ProtocolError as exc:
            return self._drop(f'camera_{exc.reason}', f'pylon_camera_frame_chunk: {exc}')
        if frame is None:
            return []
        stamp = self._stamp({'universalTime': frame.universal_time}, ros_now)
        base = sensors.sensor_frame(self.lifecycle.current.vessel_id, frame.sensor_id,
                                    frame.source)
        optical = base + sensors.OPTICAL_SUFFIX
        out = self._sensor_tf(stamp, now)
        out += self._note_mount(base, frame.part_flight_id, frame.frame_position,
                                frame.frame_rotation, ros_now)
        out += self._note_mount(optical, frame.part_flight_id, frame.frame_position,
                                frame.optical_rotation, ros_now)
        keys = ('docking_port/camera', 'docking_port/camera_info') \
            if frame.source == 'docking_port' else ('camera', 'camera_info')
        out.append(self._publish(keys[1], sensors.camera_info(frame, stamp, optical), now,
                                 topic_id=frame.sensor_id))
        out.append(self._publish(keys[0], sensors.image(frame, stamp, optical), now,
                                 topic_id=frame.sensor_id))
        return out

    def _camera_inactive(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        if packet.get('source') == 'docking_port':
            return self._remove('docking_port/camera', 'docking_port/camera_info',
                                packet['sensorId'])
        return self._remove('camera', 'camera_info', packet['sensorId'])

    # -- control and actuators -----------------------------------------------------------
    def _authority_state(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        msg = convert.authority_state(packet, self.lifecycle.current.generation, ros_now)
        self.last_authority = msg
        return [self._publish('control/authority/state', msg, now)]

    def _wrench_status(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        self.last_wrench_status = packet
        return [self._publish('control/wrench_feedback', convert.wrench_feedback(
            packet, ros_now, self.config.body_frame), now)]

    def _actuator_state(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        key = ACTUATOR_STATE_KEYS.get(packet['actuatorType'])
        if key is None:                 # 'motor' in an actuator state: motors have their own
            self.stats.ignored['pylon_actuator_state/motor'] += 1
            return []
        # a wheel's state is stamped with its KSP time (WheelState); engine, RCS and
        # separation states with the receipt time, as their messages say
        stamp = self._stamp(packet, ros_now) if key == 'actuators/wheel/state' else ros_now
        return [self._publish(key, convert.actuator_state(packet, stamp,
                                                          self.config.body_frame), now)]

    def _docking_state(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        msg = convert.docking_port_state(packet, ros_now, self.config.body_frame)
        return [self._publish('docking_port/state', msg, now, topic_id=packet['name'])]

    def command(self, outgoing: commands.Outgoing, now: float) -> bytes:
        """Return the datagram of a command for the current session.

        Raise ``commands.CommandError`` when there is no fresh available session
        (``control_unavailable``) or the codec refuses the packet; the caller reports it.
        """
        try:
            envelope = self.session.command_envelope(now, self.config.topic_timeout_sec)
        except ProtocolError:
            raise commands.CommandError('control_unavailable',
                                        'no fresh active flight session') from None
        data = wire.encode_command(commands.validate(outgoing, envelope))
        self.stats.commands_sent[outgoing.type_name] += 1
        return data

    def command_rejected(self, key: str, msg: Any, error: commands.CommandError,
                         ros_now: float) -> list:
        """Count a refused command and return what reports it to the sender.

        A wrench command gets a WrenchFeedback with ``accepted`` false; an authority command
        the last authority state the mod confirmed, with the reason; others diagnostics only.
        """
        self.stats.commands_rejected[error.reason] += 1
        self.recent_drops.append((error.reason, f'{key}: {error.detail}'))
        if key == 'control/wrench_command':
            feedback = convert.rejected_wrench(msg, error.reason, ros_now,
                                               self.config.body_frame)
            return [Publish('control/wrench_feedback', feedback)]
        if key == 'control/authority/command':
            state = convert.rejected_authority(self.last_authority, msg, error.reason,
                                               self.lifecycle.current, ros_now)
            return [Publish('control/authority/state', state)]
        return []

    # -- model -------------------------------------------------------------------------
    def _model_chunk(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        address = source[0] if isinstance(source, tuple) else source
        try:
            model = self.models.add_decoded(packet, now, address)
        except ProtocolError as exc:
            return self._drop(exc.reason, f'pylon_vessel_urdf_chunk: {exc}')
        if model is None:
            return []
        if model.vessel_id != self.lifecycle.current.vessel_id:
            self.models.reset()         # so that a later copy is assembled and checked again
            return self._drop('model_for_other_vessel',
                              f'model of {model.vessel_id} while '
                              f'{self.lifecycle.current.vessel_id} is active')
        if self.model is not None and self.model.model_id == model.model_id:
            self.model = model          # same model re-sent: only refreshed
            return []
        self.model = model
        stamp = ros_now
        out = [Publish('robot_description', String(data=model.urdf)),
               Publish('root_frame', String(data=model.root_frame))]
        out += self._static_tf(stamp)
        out += self._lifecycle_change(self.lifecycle.model(model.model_id), ros_now)
        return out

    def _static_tf(self, stamp: float) -> list:
        """Return /tf_static with everything static the bridge knows, in one message.

        The root alias ``pylon_root`` (identity under the proxy root link), the proxy's
        fixed joints (unless robot_state_publisher publishes them) and every sensor mount
        whose part link the current model names.
        """
        if self.model is None:
            return []
        transforms = [convert.transform(stamp, self.model.root_frame, frames.ROOT_ALIAS,
                                        (0.0, 0.0, 0.0), frames.IDENTITY_QUATERNION)]
        if self.config.publish_proxy_static_tf:
            transforms += convert.proxy_static_transforms(self.model, stamp)
        for frame, (part, position, rotation) in sorted(self.sensor_mounts.items()):
            link = self.model.frame_for_part(part)
            if link is not None:
                transforms.append(convert.transform(stamp, link, frame, position, rotation))
        return [Publish('tf_static', TFMessage(transforms=transforms))]

    def _note_mount(self, frame: str, part: int, position, rotation, ros_now: float) -> list:
        """Remember a sensor frame's mount; return /tf_static when it is new or moved."""
        try:
            position, rotation = sensors.mount(position, rotation)
        except ProtocolError:
            return []
        entry = (part, position, rotation)
        if self.sensor_mounts.get(frame) == entry:
            return []
        self.sensor_mounts[frame] = entry
        return self._static_tf(ros_now)

    def _model_clear(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        cleared_current = self.models.clear(packet['sessionId'], now)
        if not cleared_current and (self.model is None
                                    or self.model.session_id != packet['sessionId']):
            return []
        return self._clear_model(ros_now)

    def _clear_model(self, ros_now: float, lifecycle: bool = True) -> list:
        """Withdraw the model: latched description and root frame become empty."""
        had = self.model is not None
        self.model = None
        self.models.reset()
        self.sensor_mounts.clear()
        if not had:
            return []
        out = [Publish('robot_description', String(data='')),
               Publish('root_frame', String(data=''))]
        if lifecycle:
            out += self._lifecycle_change(self.lifecycle.model(''), ros_now)
        return out

    _handlers = {
        'pylon_imu': _imu,
        'pylon_ground_truth': _ground_truth,
        'pylon_nearby_vessels': _nearby,
        'pylon_motor_state': _motor,
        'pylon_vessel_urdf_chunk': _model_chunk,
        'pylon_vessel_urdf_clear': _model_clear,
        'pylon_control_authority_state': _authority_state,
        'pylon_wrench_status': _wrench_status,
        'pylon_actuator_state': _actuator_state,
        'pylon_docking_port_state': _docking_state,
        'pylon_star_tracker': _star_tracker,
        'pylon_lidar_scan': _lidar,
        'pylon_lidar_inactive': _lidar_inactive,
        'pylon_camera_frame_chunk': _camera_chunk,
        'pylon_camera_inactive': _camera_inactive,
    }
