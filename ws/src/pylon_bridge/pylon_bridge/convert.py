"""Validated PyLoN packets to ROS messages: pure functions, no node, no clock.

The mod already converts Unity vectors to ROS axes; these functions
copy them into messages, normalise quaternions, fill in the REP-145 conventions of the
IMU, and build the transforms of the ground truth and the proxy model. ``stamp``
arguments are ROS times in seconds (the bridge's UT mapping).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
import functools
import struct

from geometry_msgs.msg import (
    AccelStamped,
    PoseStamped,
    QuaternionStamped,
    TransformStamped,
    TwistStamped,
    Vector3Stamped,
)
from nav_msgs.msg import Odometry
import numpy as np
from pylon_common.stamps import to_nanoseconds, to_time
from pylon_interfaces.msg import (
    ControlAuthorityState,
    DockingPortState,
    EngineState,
    MotorCommand,
    MotorState,
    NearbyVessel,
    NearbyVessels,
    RcsState,
    SeparationState,
    StarTrackerState,
    WheelState,
    WrenchFeedback,
)
from pylon_protocol import frames, rotations
from pylon_protocol.model_chunks import Model
from sensor_msgs.msg import Imu, JointState, NavSatFix, NavSatStatus

from pylon_bridge.commands import MOTOR_MODES

MAX_TF_EXTRAPOLATION_SEC = 0.1
"""How far the ground-truth pose may be carried forward to cover a sensor stamp."""

UNKNOWN_COVARIANCE = [0.0] * 9
"""REP-145 / sensor_msgs: all zeros means "covariance unknown"."""

NO_ORIENTATION_COVARIANCE = [-1.0] + [0.0] * 8
"""sensor_msgs/Imu: element 0 = -1 means "no orientation estimate" (data_raw)."""
NO_ORIENTATION_COVARIANCE_ARRAY = np.array(NO_ORIENTATION_COVARIANCE)
MOTOR_MODE_OF = {name: mode for mode, name in MOTOR_MODES.items()}
"""The MotorCommand mode of the mod's ``commandMode`` (the inverse of the command's map)."""


def _xyz(target, values: Sequence[float]):
    target.x, target.y, target.z = (float(v) for v in values)
    return target


def _xyzw(target, values: Sequence[float]):
    target.x, target.y, target.z, target.w = (float(v) for v in values)
    return target


def header(msg, stamp: float, frame_id: str):
    """Set ``msg.header`` (stamp in seconds, frame id); return ``msg``."""
    msg.header.stamp = to_time(stamp)
    msg.header.frame_id = frame_id
    return msg


Orientation = tuple[Sequence[float], Sequence[float]]
"""An AHRS's ``(quaternion [x, y, z, w], variances about East, North, Up in rad^2)``."""


def orientation_covariance(variances: Sequence[float]) -> list[float]:
    """Return the 3x3 row-major covariance (rad^2, about the fixed ENU axes) of ``variances``."""
    east, north, up = (float(v) for v in variances)
    return [east, 0.0, 0.0, 0.0, north, 0.0, 0.0, 0.0, up]


def imu(packet: Mapping, stamp: float, body_frame: str = frames.BASE_LINK,
        into: Imu | None = None, orientation: Orientation | None = None) -> Imu:
    """Return ``pylon_imu`` as REP-145 ``imu/data_raw`` in the frame ``body_frame``.

    Inertial angular rate (rad/s) and specific force (m/s², ≈ +g on +Z standing upright,
    ≈ 0 in free fall) in ``base_link`` axes; the rate and acceleration covariances are
    unknown (all zeros): the mod adds no noise and states no accuracy. ``orientation``: an
    AHRS sample (our simulator's extension) to fill in, base_link in ENU with its
    covariance; without one, no orientation (``orientation_covariance[0] = -1`` and an
    all-zero quaternion).

    ``into``: a message made by an earlier call to refill (the stamp, the two vectors and
    the orientation change), for a publisher that serialises each message before the next.
    """
    msg = into
    if msg is None:
        msg = Imu()
        msg.header.frame_id = body_frame
    if orientation is None:
        _xyzw(msg.orientation, (0.0, 0.0, 0.0, 0.0))
        msg.orientation_covariance = NO_ORIENTATION_COVARIANCE_ARRAY
    else:
        _xyzw(msg.orientation, orientation[0])
        msg.orientation_covariance = orientation_covariance(orientation[1])
    stamp_ns = to_nanoseconds(stamp)
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    v = msg.angular_velocity
    v.x, v.y, v.z = packet['angularVelocity']
    v = msg.linear_acceleration
    v.x, v.y, v.z = packet['linearAcceleration']
    return msg


_CDR_LE = b'\x00\x01\x00\x00'          # the encapsulation header: plain CDR, little endian
_CDR_COVARIANCE = struct.pack('<9d', *UNKNOWN_COVARIANCE)
_INT32_MAX = 2**31 - 1


@functools.lru_cache(maxsize=16)
def _imu_cdr(body_frame: str, oriented: bool = False) -> tuple[struct.Struct, bytes]:
    """Return the layout of an ``imu`` message's CDR and its constant middle part.

    The layout: encapsulation, stamp (sec, nanosec), the middle (frame id, and unless
    ``oriented`` the orientation and its covariance), [the orientation, its covariance,]
    angular velocity, its covariance, linear acceleration, its covariance.
    """
    name = body_frame.encode('utf-8') + b'\x00'
    fixed = 12 + len(name)              # sec, nanosec, string length and text
    middle = struct.pack('<I', len(name)) + name + bytes(-fixed % 8)       # doubles: 8-aligned
    if not oriented:
        middle += struct.pack('<4d9d', 0.0, 0.0, 0.0, 0.0, *NO_ORIENTATION_COVARIANCE)
    size = len(_CDR_COVARIANCE)
    return struct.Struct(f'<4siI{len(middle)}s{"13d" if oriented else ""}3d{size}s3d{size}s'), \
        middle


def imu_serialized(packet: Mapping, stamp: float, body_frame: str = frames.BASE_LINK,
                   orientation: Orientation | None = None) -> bytes | None:
    """Return ``imu(packet, stamp, body_frame, orientation=...)`` serialized: rclpy's CDR.

    The bytes ``rclpy.serialization.serialize_message`` gives for that message (the tests
    compare them, padding aside, and deserialise them), packed in one call around constant
    parts: a publisher given them skips converting and serialising the message. The vectors
    must be the validated packet's floats. None when the stamp's seconds do not fit the
    message's int32 (publish the message itself).
    """
    sec, nanosec = divmod(to_nanoseconds(stamp), 1_000_000_000)
    if sec > _INT32_MAX:
        return None
    if orientation is None:
        layout, middle = _imu_cdr(body_frame)
        return layout.pack(_CDR_LE, sec, nanosec, middle, *packet['angularVelocity'],
                           _CDR_COVARIANCE, *packet['linearAcceleration'], _CDR_COVARIANCE)
    layout, middle = _imu_cdr(body_frame, True)
    return layout.pack(_CDR_LE, sec, nanosec, middle, *orientation[0],
                       *orientation_covariance(orientation[1]), *packet['angularVelocity'],
                       _CDR_COVARIANCE, *packet['linearAcceleration'], _CDR_COVARIANCE)


@dataclass(frozen=True)
class GroundTruth:
    """The messages of one ``pylon_ground_truth`` packet."""

    pose: PoseStamped
    twist: TwistStamped
    twist_body: TwistStamped
    accel: AccelStamped
    frame_angular_velocity: Vector3Stamped | None
    kinematic_state: Odometry


def body_velocities(packet: Mapping) -> tuple[frames.Vec3, frames.Vec3]:
    """Return (linear, angular) velocity in ``base_link``.

    The mod's ``linearVelocityBody``/``angularVelocityBody`` when present; otherwise the
    ENU vectors rotated by the inverse of ``rotation``, as the mod's protocol specifies.
    """
    inverse = rotations.conjugate(packet['rotation'])      # rotate() normalises it
    linear = packet.get('linearVelocityBody')
    angular = packet.get('angularVelocityBody')
    if linear is None:
        linear = rotations.rotate(inverse, packet['linearVelocity'])
    if angular is None:
        angular = rotations.rotate(inverse, packet['angularVelocity'])
    return tuple(linear), tuple(angular)


def ground_truth(packet: Mapping, stamp: float, world_frame: str = frames.GROUND_TRUTH_ENU,
                 body_frame: str = frames.BASE_LINK) -> GroundTruth:
    """Return pose, twist (ENU), twist_body (base_link), acceleration, frame rate, odometry.

    The odometry (``kinematic_state``) is the pose and the body twist in one message: pose
    in ``world_frame``, twist in ``child_frame_id`` ``body_frame``, as ROS's Odometry has
    them; its covariances stay zero (the truth).
    """
    pose = header(PoseStamped(), stamp, world_frame)
    _xyz(pose.pose.position, packet['position'])
    _xyzw(pose.pose.orientation, rotations.normalize(packet['rotation']))
    twist = header(TwistStamped(), stamp, world_frame)
    _xyz(twist.twist.linear, packet['linearVelocity'])
    _xyz(twist.twist.angular, packet['angularVelocity'])
    twist_body = header(TwistStamped(), stamp, body_frame)
    linear, angular = body_velocities(packet)
    _xyz(twist_body.twist.linear, linear)
    _xyz(twist_body.twist.angular, angular)
    accel = header(AccelStamped(), stamp, world_frame)
    _xyz(accel.accel.linear, packet['linearAcceleration'])
    _xyz(accel.accel.angular, packet['angularAcceleration'])
    frame_rate = None
    if packet.get('frameAngularVelocity') is not None:
        frame_rate = header(Vector3Stamped(), stamp, world_frame)
        _xyz(frame_rate.vector, packet['frameAngularVelocity'])
    odometry = header(Odometry(), stamp, world_frame)
    odometry.child_frame_id = body_frame
    odometry.pose.pose = pose.pose
    odometry.twist.twist = twist_body.twist
    return GroundTruth(pose, twist, twist_body, accel, frame_rate, odometry)


def extrapolate_pose(packet: Mapping, dt: float) -> tuple[frames.Vec3, np.ndarray]:
    """Return the ground-truth pose carried ``dt`` seconds forward at constant velocity.

    Position moves with the ENU velocity; the orientation turns with the ENU angular
    velocity (``q(t + dt) = exp(ω dt / 2) q(t)``, ω in the reference frame).
    """
    rotation = rotations.normalize(packet['rotation'])
    position = packet['position']
    if dt == 0.0:
        return tuple(float(v) for v in position), rotation
    velocity = packet['linearVelocity']
    omega = packet['angularVelocity']
    moved = tuple(float(p) + float(v) * dt for p, v in zip(position, velocity, strict=True))
    # the exponential map: exact for any rate, also a vessel barely turning (a rover at rest)
    turn = rotations.from_rotvec([float(w) * dt for w in omega])
    return moved, rotations.normalize(rotations.multiply(turn, rotation))


def world_transform(packet: Mapping, stamp: float, sample_time: float | None = None,
                    max_extrapolation: float = MAX_TF_EXTRAPOLATION_SEC,
                    world_frame: str = frames.GROUND_TRUTH_ENU,
                    body_frame: str = frames.BASE_LINK) -> TransformStamped:
    """Return the transform ``world_frame → body_frame`` of a ground-truth packet.

    Stamped at ``stamp`` (the packet's own time) or, with ``sample_time`` later than
    it, extrapolated to ``min(sample_time, stamp + max_extrapolation)`` so that a sensor
    sample newer than the last pose can still be looked up.
    """
    dt = 0.0
    if sample_time is not None and sample_time > stamp:
        dt = min(sample_time - stamp, max_extrapolation)
    position, rotation = extrapolate_pose(packet, dt)
    return transform(stamp + dt, world_frame, body_frame, position, rotation)


def transform(stamp: float, parent: str, child: str, translation: Sequence[float],
              rotation: Sequence[float]) -> TransformStamped:
    """Return one ``TransformStamped`` (``rotation`` as x, y, z, w)."""
    msg = header(TransformStamped(), stamp, parent)
    msg.child_frame_id = child
    _xyz(msg.transform.translation, translation)
    _xyzw(msg.transform.rotation, rotation)
    return msg


def _nearby_vessel(vessel_id: str, name: str, is_debris: bool, position: Sequence[float],
                   velocity: Sequence[float]) -> NearbyVessel:
    vessel = NearbyVessel(vessel_id=vessel_id, vessel_name=name, is_debris=bool(is_debris))
    _xyz(vessel.position, position)
    _xyz(vessel.linear_velocity, velocity)
    return vessel


def nearby(packet: Mapping, stamp: float,
           world_frame: str = frames.GROUND_TRUTH_ENU) -> NearbyVessels:
    """Return ``pylon_nearby_vessels``: observer and vessels, absolute in the same ENU."""
    msg = header(NearbyVessels(), stamp, world_frame)
    msg.observer_vessel_id = packet['vesselId']
    msg.origin_sequence = max(0, int(packet['originSequence']))
    _xyz(msg.observer_position, packet['position'])
    _xyz(msg.observer_linear_velocity, packet['linearVelocity'])
    msg.vessels = [_nearby_vessel(other['vesselId'], other.get('vessel', ''), other['isDebris'],
                                  other['position'], other['linearVelocity'])
                   for other in packet['vessels']]
    return msg


def relative_nav(packet: Mapping, stamp: float,
                 body_frame: str = frames.BASE_LINK) -> NearbyVessels:
    """Return ``pylon_relative_nav`` (our simulator's extension) as ``NearbyVessels``.

    Relative values in the observer's body frame: each vessel's ``position`` is the
    target's centre of mass relative to the observer's and ``linear_velocity`` the
    inertial velocity difference, as measured (noisy); the observer's own position and
    velocity are zero and ``origin_sequence`` is 0 (no ENU origin is involved).
    """
    msg = header(NearbyVessels(), stamp, body_frame)
    msg.observer_vessel_id = packet['vesselId']
    msg.vessels = [_nearby_vessel(target['vesselId'], target['vesselName'], target['isDebris'],
                                  target['position'], target['velocity'])
                   for target in packet['targets']]
    return msg


def gnss_fix(packet: Mapping, stamp: float, frame_id: str) -> NavSatFix:
    """Return ``pylon_gnss`` (our simulator's extension) as ``NavSatFix`` in ``frame_id``.

    A fix: latitude, longitude (deg) and altitude (m above the body's sphere, KSP's
    altitude over sea level, not WGS-84's ellipsoid), ``STATUS_FIX``, and the packet's East,
    North, Up variances (m^2) on the covariance's diagonal (``COVARIANCE_TYPE_DIAGONAL_KNOWN``).
    No fix: ``STATUS_NO_FIX``, the three NaN, covariance unknown (zeros). ``SERVICE_GPS``.
    """
    msg = header(NavSatFix(), stamp, frame_id)
    msg.status.service = NavSatStatus.SERVICE_GPS
    if packet['status'] != 'fix':
        msg.status.status = NavSatStatus.STATUS_NO_FIX
        msg.latitude = msg.longitude = msg.altitude = float('nan')
        msg.position_covariance_type = NavSatFix.COVARIANCE_TYPE_UNKNOWN
        return msg
    msg.status.status = NavSatStatus.STATUS_FIX
    msg.latitude, msg.longitude = float(packet['latitude']), float(packet['longitude'])
    msg.altitude = float(packet['altitude'])
    east, north, up = (float(v) for v in packet['positionCovariance'])
    msg.position_covariance = [east, 0.0, 0.0, 0.0, north, 0.0, 0.0, 0.0, up]
    msg.position_covariance_type = NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN
    return msg


def joint_state(motors: Iterable[Mapping], stamp: float) -> JointState:
    """Return every servo's ``pylon_motor_state`` as one ``JointState`` (names sorted).

    Position in rad or m, velocity in rad/s or m/s, effort in N·m or N: the units of the
    joint type, as ``sensor_msgs/JointState`` expects.
    """
    msg = JointState()
    msg.header.stamp = to_time(stamp)
    for motor in sorted(motors, key=lambda m: m['name']):
        msg.name.append(motor['name'])
        msg.position.append(float(motor['position']))
        msg.velocity.append(float(motor['velocity']))
        msg.effort.append(float(motor['effort']))
    return msg


def joint_transform(joint, stamp: float) -> TransformStamped:
    """Return the transform ``parent → child`` of a proxy joint's ``origin``."""
    return transform(stamp, joint.parent, joint.child, joint.xyz, rotations.from_rpy(*joint.rpy))


def servo_joint_transform(joint, position: float, stamp: float) -> TransformStamped:
    """Return ``parent → child`` of a servo joint (extension) at ``position``.

    Revolute: the origin, then a rotation by ``position`` rad about ``axis`` (joint frame);
    prismatic: the origin, then a translation by ``position`` m along ``axis``; as
    robot_state_publisher computes it.
    """
    q_origin = rotations.from_rpy(*joint.rpy)
    if joint.type == 'revolute':
        rotation = rotations.multiply(q_origin, rotations.from_axis_angle(joint.axis, position))
        return transform(stamp, joint.parent, joint.child, joint.xyz, rotation)
    m = rotations.to_matrix(q_origin)
    offset = np.asarray(joint.xyz) + m @ (np.asarray(joint.axis) * position)
    return transform(stamp, joint.parent, joint.child, offset, q_origin)


def proxy_static_transforms(model: Model, stamp: float) -> list[TransformStamped]:
    """Return the fixed joints of the proxy model, parent before child."""
    return [joint_transform(joint, stamp) for joint in model.structure.joints
            if joint.type == 'fixed']


def base_to_root_transform(model: Model, stamp: float,
                           body_frame: str = frames.BASE_LINK) -> TransformStamped:
    """Return ``base_link → root link``: the root part's pose in the CoM frame."""
    return transform(stamp, body_frame, model.root_frame, model.base_to_root_position,
                     rotations.normalize(model.base_to_root_rotation))



# -- control and actuator state -------------------------------------------------------------

def camel(name: str) -> str:
    """Return the wire spelling of a message field: ``max_thrust`` → ``maxThrust``."""
    head, *rest = name.split('_')
    return head + ''.join(part.capitalize() for part in rest)


_VECTORS = ('geometry_msgs/Point', 'geometry_msgs/Vector3')
_CASTS = {'double': float, 'float': float, 'boolean': bool, 'string': str}


@functools.cache
def _field_plan(msg_type: type) -> tuple[tuple[str, str, str], ...]:
    """Return (field, wire key, rosidl type) of each field but the header, once per type."""
    return tuple((name, camel(name), kind)
                 for name, kind in msg_type.get_fields_and_field_types().items()
                 if name != 'header')


def copy_fields(msg, packet: Mapping, skip: Iterable[str] = ()):
    """Fill ``msg``'s plain fields from the packet's camelCase fields of the same name.

    Numbers, bools and strings are copied when present; ``geometry_msgs/Point`` and
    ``Vector3`` fields take a 3-array. Fields in ``skip`` and the header are left alone.
    """
    for name, key, kind in _field_plan(type(msg)):
        value = packet.get(key)
        if value is None or name in skip:
            continue
        if kind in _VECTORS:
            _xyz(getattr(msg, name), value)
        else:
            cast = _CASTS.get(kind)
            setattr(msg, name, cast(value) if cast is not None else max(0, int(value)))
    return msg


def runtime_identity(msg, packet: Mapping):
    """Copy the runtime envelope into a state message that carries it."""
    msg.runtime_instance = packet['runtimeInstance']
    msg.runtime_generation = int(packet['runtimeGeneration'])
    msg.runtime_epoch = packet['runtimeEpoch']
    return msg


def authority_state(packet: Mapping, generation: int, stamp: float):
    """Return ``pylon_control_authority_state`` as ``ControlAuthorityState``."""
    msg = copy_fields(ControlAuthorityState(), packet, skip=('generation', 'vessel_name',
                                                             'lease_remaining_sec'))
    msg.header.stamp = to_time(stamp)
    msg.generation = generation
    msg.vessel_name = packet.get('vessel', '')
    msg.lease_remaining_sec = float(packet.get('leaseRemainingSeconds', 0.0))
    return msg


def _wrench(target, value: Mapping):
    _xyz(target.force, value['force'])
    _xyz(target.torque, value['torque'])


def wrench_feedback(packet: Mapping, stamp: float, body_frame: str = frames.BASE_LINK):
    """Return ``pylon_wrench_status`` as ``WrenchFeedback`` (frame ``base_link``)."""
    msg = header(WrenchFeedback(), stamp, body_frame)
    msg.vessel_id = packet.get('vesselId', '')
    msg.controller_id = packet.get('controllerId', '')
    msg.lease_id = packet.get('leaseId', '')
    msg.sequence = max(0, int(packet.get('sequence', 0)))
    msg.accepted = bool(packet['accepted'])
    msg.reason = packet.get('reason', '')
    for name in ('requested', 'allocated', 'achieved', 'allocation_residual',
                 'tracking_residual'):
        _wrench(getattr(msg, name), packet[camel(name)])
    msg.saturation_ratio = float(packet.get('saturationRatio', 0.0))
    msg.tracking_error_ratio = float(packet.get('trackingErrorRatio', 0.0))
    msg.saturated = bool(packet.get('saturated', False))
    msg.achieved_quality = packet.get('achievedQuality', '')
    return msg


def actuator_state(packet: Mapping, stamp: float, body_frame: str = frames.BASE_LINK):
    """Return ``pylon_actuator_state`` as Wheel/Engine/Rcs/SeparationState; ``name`` = id."""
    kind = packet['actuatorType']
    types = {'wheel': WheelState, 'engine': EngineState, 'rcs': RcsState,
             'separation': SeparationState}
    msg = copy_fields(types[kind](), packet, skip=('id', 'name'))
    if 'runtime_instance' in msg.get_fields_and_field_types():
        runtime_identity(msg, packet)
    msg.id = msg.name = packet['name']
    return header(msg, stamp, body_frame)


def motor_state(packet: Mapping, stamp: float, body_frame: str = frames.BASE_LINK):
    """Return ``pylon_motor_state`` as ``MotorState`` (the servo's state topic)."""
    msg = copy_fields(MotorState(), packet, skip=('id', 'name', 'mode', 'enabled'))
    msg.id = msg.name = packet['name']
    msg.motor_type = packet.get('jointType', '')
    msg.enabled = bool(packet.get('engaged', False))
    msg.mode = MOTOR_MODE_OF.get(packet.get('commandMode') or 'position',
                                 MotorCommand.MODE_POSITION)
    return header(msg, stamp, body_frame)


def docking_port_state(packet: Mapping, stamp: float, body_frame: str = frames.BASE_LINK):
    """Return ``pylon_docking_port_state`` as ``DockingPortState``."""
    return header(copy_fields(DockingPortState(), packet), stamp, body_frame)


def rejected_wrench(msg, reason: str, stamp: float, body_frame: str = frames.BASE_LINK):
    """Return the WrenchFeedback of a wrench command the bridge refused to send.

    ``requested`` echoes the command (non-finite values as sent); everything allocated and
    achieved is zero, the ratios 0, ``accepted`` false.
    """
    feedback = header(WrenchFeedback(), stamp, body_frame)
    feedback.vessel_id = msg.vessel_id
    feedback.controller_id = msg.controller_id
    feedback.lease_id = msg.lease_id
    feedback.sequence = msg.sequence
    feedback.accepted = False
    feedback.reason = reason
    feedback.requested = msg.wrench
    feedback.achieved_quality = 'not_sent'
    return feedback


def rejected_authority(last, msg, reason: str, lifecycle, stamp: float):
    """Return the authority state after the bridge refused an authority command.

    The ownership fields stay those the mod last confirmed (unowned when none yet); only
    ``reason`` says what happened to this command.
    """
    state = ControlAuthorityState() if last is None else copy_message(last)
    if last is None:
        state.vessel_id = lifecycle.vessel_id
        state.vessel_name = lifecycle.vessel_name
        state.generation = lifecycle.generation
    state.header.stamp = to_time(stamp)
    state.reason = reason
    return state


def star_tracker_state(packet: Mapping, stamp: float) -> StarTrackerState:
    """Return the StarTrackerState of one ``pylon_star_tracker`` sample.

    ``header.frame_id`` is ``kerbol_inertial``; the orientation is the rotation
    ``base_link -> kerbol_inertial`` (normalised) with covariance ``noiseStdRad² I`` about
    the body axes. An invalid sample carries an all-zero quaternion and
    ``orientation_covariance[0] = -1``: never a stale or identity attitude.
    """
    msg = StarTrackerState(
        vessel_id=packet['vesselId'], sensor_id=packet['sensorId'],
        session_id=packet['sessionId'], sequence=int(packet['sequence']),
        universal_time=float(packet['universalTime']),
        measured_frame_id=packet['measuredFrame'], valid=bool(packet['valid']),
        reason=packet['reason'], angular_rate_deg_sec=float(packet['angularRateDegSec']))
    header(msg, stamp, packet['referenceFrame'])
    q = packet['orientation']
    if msg.valid and q is not None:
        norm = float(np.linalg.norm(q))
        _xyzw(msg.orientation, [v / norm for v in q])
        variance = float(packet['noiseStdRad']) ** 2
        msg.orientation_covariance = [variance, 0.0, 0.0, 0.0, variance, 0.0, 0.0, 0.0,
                                      variance]
    else:
        _xyzw(msg.orientation, (0.0, 0.0, 0.0, 0.0))
        msg.orientation_covariance = list(NO_ORIENTATION_COVARIANCE)
    return msg


def star_tracker_stale(last: StarTrackerState, stamp: float) -> StarTrackerState:
    """Return the bridge's ``stale`` heartbeat for a silent star tracker.

    It names the sensor, vessel and session of the last sample and repeats its sequence and
    universal time (no new measurement exists); stamped with the bridge's clock.
    """
    msg = StarTrackerState(
        vessel_id=last.vessel_id, sensor_id=last.sensor_id, session_id=last.session_id,
        sequence=last.sequence, universal_time=last.universal_time,
        measured_frame_id=last.measured_frame_id, valid=False, reason='stale',
        angular_rate_deg_sec=0.0)
    header(msg, stamp, last.header.frame_id)
    _xyzw(msg.orientation, (0.0, 0.0, 0.0, 0.0))
    msg.orientation_covariance = list(NO_ORIENTATION_COVARIANCE)
    return msg


def star_tracker_attitude(state: StarTrackerState) -> QuaternionStamped:
    """Return the attitude of a valid star tracker sample (same header and quaternion)."""
    msg = QuaternionStamped()
    msg.header.stamp = state.header.stamp
    msg.header.frame_id = state.header.frame_id
    msg.quaternion = copy_message(state.orientation)
    return msg


def copy_message(msg):
    """Return a field-by-field copy of a ROS message."""
    copy = type(msg)()
    for name in msg.get_fields_and_field_types():
        setattr(copy, name, getattr(msg, name))
    return copy
