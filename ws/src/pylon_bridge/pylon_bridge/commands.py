"""ROS command messages to PyLoN command payloads: pure functions, validated before sending.

Each ``*_command(msg, ...)`` returns ``(type_name, fields)`` with the wire's field names,
or raises ``CommandError(reason, detail)``. ``BridgeCore.command`` then appends the
session's runtime envelope and validates the whole packet with ``pylon_protocol`` (finite
numbers, ranges, identity lengths), so nothing invalid is ever sent.

Rules the ROS side adds:

- ``BodyWrenchCommand.header.frame_id`` must be empty or ``base_link``;
- ``timeout_sec`` of a wrench must be 0.05–10 s; for typed actuator commands (engine,
  RCS, wheel, motor) ``0`` means the bridge's ``--vehicle-command-timeout-sec``, any
  other value must be 0.05–10 s;
- an engine command that only switches the engine on or off (``target_thrust`` 0 and no
  gimbal command) is *enable-only*: the simulator (as the mod) applies the switch with no
  timeout; ``timeout_sec`` is still sent, as the wire requires one;
- identities must be present (vessel_id, controller_id, lease_id, a positive sequence).

Reasons are the mod's own words where one fits (``non_finite_command``,
``unsupported_wrench_frame``, ``invalid_wrench``, ``invalid_lease``,
``unsupported_authority_action``), else ``invalid_command``.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Any

from pylon_interfaces.msg import ControlAuthorityCommand, DockingPortCommand, MotorCommand
from pylon_protocol import names, packets
from pylon_protocol.packets import (
    MAX_COMMAND_TIMEOUT_SEC,
    MAX_LEASE_SEC,
    MAX_SHORT_COMMAND_TIMEOUT_SEC,
    MIN_COMMAND_TIMEOUT_SEC,
    MIN_LEASE_SEC,
    MOD_DEFAULT_COMMAND_TIMEOUT_SEC,
)
from pylon_protocol.schema import INT64_MAX

BASE_LINK = 'base_link'

AUTHORITY_ACTIONS = {
    ControlAuthorityCommand.ACTION_ACQUIRE: 'acquire',
    ControlAuthorityCommand.ACTION_RENEW: 'renew',
    ControlAuthorityCommand.ACTION_RELEASE: 'release',
    ControlAuthorityCommand.ACTION_EMERGENCY_STOP: 'emergency_stop',
    ControlAuthorityCommand.ACTION_CLEAR_EMERGENCY_STOP: 'clear_emergency_stop',
}
MOTOR_MODES = {MotorCommand.MODE_POSITION: 'position', MotorCommand.MODE_VELOCITY: 'velocity',
               MotorCommand.MODE_EFFORT: 'effort'}
DOCKING_ACTIONS = (DockingPortCommand.ACTION_SELECT_CAMERA,
                   DockingPortCommand.ACTION_STOP_CAMERA, DockingPortCommand.ACTION_RELEASE)


class CommandError(ValueError):
    """A command the bridge refuses to send; ``reason`` is a short machine-readable word."""

    def __init__(self, reason: str, detail: str) -> None:
        """Keep the reason and a human-readable detail."""
        super().__init__(f'{reason}: {detail}')
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Outgoing:
    """A command ready for the envelope: type name and wire fields."""

    type_name: str
    fields: dict[str, Any]

    @property
    def identity(self) -> tuple[str, str, str, int]:
        """Return (vesselId, controllerId, leaseId, sequence)."""
        f = self.fields
        return f['vesselId'], f['controllerId'], f['leaseId'], f['sequence']


def _finite(values: dict[str, float], reason: str = 'non_finite_command') -> None:
    for name, value in values.items():
        if not math.isfinite(value):
            raise CommandError(reason, f'{name} is {value}')


def _identity(msg: Any) -> dict[str, Any]:
    for name in ('vessel_id', 'controller_id', 'lease_id'):
        if not getattr(msg, name).strip():
            raise CommandError('invalid_lease', f'{name} is empty')
    if not 1 <= msg.sequence <= INT64_MAX:
        raise CommandError('invalid_lease', f'sequence must be 1..2^63-1, got {msg.sequence}')
    return {'vesselId': msg.vessel_id, 'controllerId': msg.controller_id,
            'leaseId': msg.lease_id, 'sequence': int(msg.sequence)}


def _timeout(value: float, default: float | None, reason: str = 'invalid_command',
             maximum: float = MAX_COMMAND_TIMEOUT_SEC) -> float:
    if default is not None and value == 0.0:
        return default
    if not math.isfinite(value):
        raise CommandError('non_finite_command', f'timeout_sec is {value}')
    if not MIN_COMMAND_TIMEOUT_SEC <= value <= maximum:
        raise CommandError(reason, f'timeout_sec must be {MIN_COMMAND_TIMEOUT_SEC}–'
                           f'{maximum:g} s'
                           f'{" (or 0 for the default)" if default is not None else ""}, '
                           f'got {value}')
    return float(value)


def _lease_duration(value: float) -> float:
    _finite({'lease_duration_sec': value}, 'invalid_lease')
    if not MIN_LEASE_SEC <= value <= MAX_LEASE_SEC:
        raise CommandError('invalid_lease', f'lease_duration_sec must be {MIN_LEASE_SEC:g}–'
                           f'{MAX_LEASE_SEC:g} s, got {value}')
    return float(value)


def authority_command(msg: ControlAuthorityCommand) -> Outgoing:
    """Return ``pylon_control_authority_command``."""
    action = AUTHORITY_ACTIONS.get(msg.action)
    if action is None:
        raise CommandError('unsupported_authority_action', f'action {msg.action} is not 1..5')
    fields = {'action': action, **_identity(msg), 'priority': int(msg.priority),
              'suppressSas': bool(msg.suppress_sas)}
    if action in ('acquire', 'renew'):
        fields['leaseDurationSeconds'] = _lease_duration(msg.lease_duration_sec)
    return Outgoing('pylon_control_authority_command', fields)


def wrench_command(msg: Any) -> Outgoing:
    """Return ``pylon_body_wrench_command`` (frame ``base_link``, N and N·m)."""
    if msg.header.frame_id not in ('', BASE_LINK):
        raise CommandError('unsupported_wrench_frame',
                           f'frame_id must be empty or {BASE_LINK}, got {msg.header.frame_id!r}')
    force = [msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z]
    torque = [msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z]
    _finite({'force': math.fsum(abs(v) for v in force),
             'torque': math.fsum(abs(v) for v in torque)})
    return Outgoing('pylon_body_wrench_command', {
        'frame': BASE_LINK, **_identity(msg), 'force': force, 'torque': torque,
        'timeoutSeconds': _timeout(msg.timeout_sec, None, 'invalid_wrench')})


def engine_command(msg: Any, default_timeout: float,
                   identity: dict[str, Any] | None = None) -> Outgoing:
    """Return an engine ``pylon_actuator_command`` (thrust N, gimbal inputs -1..1)."""
    _finite({'target_thrust': msg.target_thrust, 'gimbal_pitch': msg.gimbal_pitch,
             'gimbal_yaw': msg.gimbal_yaw, 'gimbal_roll': msg.gimbal_roll})
    if msg.target_thrust < 0.0:
        raise CommandError('invalid_command', f'target_thrust must be >= 0, got '
                           f'{msg.target_thrust}')
    for axis in ('gimbal_pitch', 'gimbal_yaw', 'gimbal_roll'):
        if not -1.0 <= getattr(msg, axis) <= 1.0:
            raise CommandError('invalid_command', f'{axis} must be -1..1, got '
                               f'{getattr(msg, axis)}')
    return _actuator('engine', msg, default_timeout, identity,
                     targetThrust=float(msg.target_thrust),
                     hasGimbalCommand=bool(msg.has_gimbal_command),
                     gimbalPitch=float(msg.gimbal_pitch), gimbalYaw=float(msg.gimbal_yaw),
                     gimbalRoll=float(msg.gimbal_roll))


def rcs_command(msg: Any, default_timeout: float) -> Outgoing:
    """Return an RCS ``pylon_actuator_command`` with the module's thrust limit (N).

    ``thrustLimit`` is still the module's limit here, as ``RcsCommand`` gives it; the core
    divides it by the module's nozzle count for the wire (``actuation.RcsModules``).
    """
    _finite({'thrust_limit': msg.thrust_limit})
    if msg.thrust_limit < 0.0:
        raise CommandError('invalid_command', f'thrust_limit must be >= 0, got '
                           f'{msg.thrust_limit}')
    return _actuator('rcs', msg, default_timeout, thrustLimit=float(msg.thrust_limit))


def wheel_command(msg: Any, default_timeout: float) -> Outgoing:
    """Return a wheel ``pylon_actuator_command``."""
    _finite({'target_angular_velocity': msg.target_angular_velocity,
             'steering_angle': msg.steering_angle, 'max_drive_torque': msg.max_drive_torque,
             'brake': msg.brake})
    if msg.max_drive_torque < 0.0 or not 0.0 <= msg.brake <= 1.0:
        raise CommandError('invalid_command', 'max_drive_torque must be >= 0 and brake 0..1')
    return _actuator('wheel', msg, default_timeout,
                     targetAngularVelocity=float(msg.target_angular_velocity),
                     steeringAngle=float(msg.steering_angle),
                     maxDriveTorque=float(msg.max_drive_torque), brake=float(msg.brake))


def separation_command(msg: Any, default_timeout: float,
                       identity: dict[str, Any] | None = None) -> Outgoing:
    """Return a separation ``pylon_actuator_command`` with its operation identity.

    ``complete`` fills an empty operation identity once the session is known.
    """
    out = _actuator('separation', msg, default_timeout, identity, enabled=True,
                    separate=bool(msg.separate),
                    operationId=msg.operation_id,
                    operationInstance=msg.original_runtime_instance,
                    operationEpoch=msg.original_runtime_epoch,
                    operationVesselId=msg.original_vessel_id)
    return out


def _actuator(kind: str, msg: Any, default_timeout: float,
              identity: dict[str, Any] | None = None, **fields: Any) -> Outgoing:
    if not msg.id.strip():
        raise CommandError('invalid_command', 'id is empty')
    timeout = _timeout(getattr(msg, 'timeout_sec', 0.0), default_timeout)
    enabled = fields.pop('enabled', getattr(msg, 'enabled', True))
    return Outgoing('pylon_actuator_command', {
        'actuatorType': kind, 'name': msg.id, **(identity or _identity(msg)),
        'enabled': bool(enabled),
        'timeoutSeconds': timeout, **fields})


def flight_command(msg: Any, identity: dict[str, Any] | None = None) -> Outgoing:
    """Return ``pylon_flight_control_command`` (normalised stock inputs, timeout 0.05–1 s).

    There is no default timeout: 0 is refused. ``identity`` (a batch's) replaces the
    message's own.
    """
    inputs = {'pitch': msg.pitch, 'yaw': msg.yaw, 'roll': msg.roll}
    _finite(inputs)
    for axis, value in inputs.items():
        if not -1.0 <= value <= 1.0:
            raise CommandError('invalid_command', f'{axis} must be -1..1, got {value}')
    return Outgoing('pylon_flight_control_command', {
        **(identity or _identity(msg)), 'landingGear': bool(msg.landing_gear),
        'timeoutSeconds': _timeout(msg.timeout_sec, None,
                                   maximum=MAX_SHORT_COMMAND_TIMEOUT_SEC),
        **{axis: float(value) for axis, value in inputs.items()}})


def control_batch(msg: Any) -> Outgoing:
    """Return ``pylon_control_batch``: the whole batch validated, members as dicts.

    The outer identity replaces each member's; engine timeouts are 0.05–1 s (no default),
    engine ids unique after sanitising, the separation must have ``separate`` true. Any
    refused member refuses the batch. ``complete`` fills the separation's operation
    identity and turns the members into the JSON strings the wire carries.
    """
    identity = _identity(msg)
    fields: dict[str, Any] = {**identity, 'renewLease': bool(msg.renew_lease),
                              'leaseDurationSeconds': float(msg.lease_duration_sec),
                              'suppressSas': bool(msg.suppress_sas),
                              'hasFlight': bool(msg.has_flight),
                              'hasSeparation': bool(msg.has_separation)}
    if msg.renew_lease:
        fields['leaseDurationSeconds'] = _lease_duration(msg.lease_duration_sec)
    elif not math.isfinite(msg.lease_duration_sec):
        raise CommandError('non_finite_command', 'lease_duration_sec is not finite')
    engines, seen = [], set()
    for index, engine in enumerate(msg.engines):
        name = names.sanitize_name(engine.id, 'engine') if engine.id.strip() else ''
        if name in seen:
            raise CommandError('invalid_command', f'engines[{index}]: id {engine.id!r} repeats')
        seen.add(name)
        member = _member(f'engines[{index}]', engine_command, engine, identity, None)
        if member['timeoutSeconds'] > MAX_SHORT_COMMAND_TIMEOUT_SEC:
            raise CommandError('invalid_command', f'engines[{index}]: timeout_sec must be '
                               f'{MIN_COMMAND_TIMEOUT_SEC}–{MAX_SHORT_COMMAND_TIMEOUT_SEC:g} s'
                               f' in a batch, got {engine.timeout_sec}')
        engines.append(member)
    fields['engineJson'] = engines
    if msg.has_flight:
        fields['flightJson'] = _member('flight', flight_command, msg.flight, identity)
    if msg.has_separation:
        if not msg.separation.separate:
            raise CommandError('invalid_command', 'separation: separate must be true')
        fields['separationJson'] = _member('separation', separation_command, msg.separation,
                                           identity, MOD_DEFAULT_COMMAND_TIMEOUT_SEC)
    return Outgoing('pylon_control_batch', fields)


def _member(path: str, build, msg: Any, identity: dict[str, Any], *args: Any) -> dict:
    """Return a batch member's wire fields (the batch's identity), the path in any error."""
    try:
        return build(msg, *args, identity=identity).fields
    except CommandError as error:
        raise CommandError(error.reason, f'{path}: {error.detail}') from None


def with_operation_identity(fields: dict[str, Any], envelope: dict[str, Any]) -> dict:
    """Return separation fields whose empty operation identity is filled in.

    An empty ``operationId`` becomes the legacy id (``names.legacy_operation_id``), an
    empty original instance and epoch the current session's, an empty original vessel the
    command's vessel, as the mod would fill them.
    """
    filled = dict(fields)
    filled['operationId'] = fields.get('operationId') or names.legacy_operation_id(
        fields['controllerId'], fields['leaseId'], fields['name'], fields['sequence'])
    filled['operationInstance'] = fields.get('operationInstance') or envelope['runtimeInstance']
    filled['operationEpoch'] = fields.get('operationEpoch') or envelope['runtimeEpoch']
    filled['operationVesselId'] = fields.get('operationVesselId') or fields['vesselId']
    return filled


def complete(outgoing: Outgoing, envelope: dict[str, Any]) -> Outgoing:
    """Return ``outgoing`` with what needs the session: operation identities, batch members."""
    fields = outgoing.fields
    if outgoing.type_name == 'pylon_actuator_command' and fields['actuatorType'] == 'separation':
        return Outgoing(outgoing.type_name, with_operation_identity(fields, envelope))
    if outgoing.type_name != 'pylon_control_batch':
        return outgoing
    fields = dict(fields)
    if 'separationJson' in fields:
        fields['separationJson'] = with_operation_identity(fields['separationJson'], envelope)
    member = packets.build_batch_member
    fields['engineJson'] = [member('pylon_actuator_command', **engine)
                            for engine in fields['engineJson']]
    for key, type_name in (('flightJson', 'pylon_flight_control_command'),
                           ('separationJson', 'pylon_actuator_command')):
        if key in fields:
            fields[key] = member(type_name, **fields[key])
    return Outgoing(outgoing.type_name, fields)


def motor_command(msg: MotorCommand, default_timeout: float) -> Outgoing:
    """Return ``pylon_motor_command``: only the active mode's ``has*`` flag is set."""
    mode = MOTOR_MODES.get(msg.mode)
    if mode is None:
        raise CommandError('invalid_command', f'mode must be 0, 1 or 2, got {msg.mode}')
    if not msg.id.strip():
        raise CommandError('invalid_command', 'id is empty')
    _finite({'position': msg.position, 'velocity': msg.velocity, 'effort': msg.effort})
    fields = {'name': msg.id, **_identity(msg), 'partFlightId': 0, 'mode': mode,
              'hasEnabled': True, 'enabled': bool(msg.enabled),
              'timeoutSeconds': _timeout(msg.timeout_sec, default_timeout)}
    for name in MOTOR_MODES.values():
        fields['has' + name.capitalize()] = bool(msg.enabled) and name == mode
        fields[name] = float(getattr(msg, name))
    return Outgoing('pylon_motor_command', fields)


def docking_command(msg: DockingPortCommand, port_id: str) -> Outgoing:
    """Return ``pylon_docking_port_command`` for the port of the topic."""
    if msg.action not in DOCKING_ACTIONS:
        raise CommandError('invalid_command', f'action must be 1, 2 or 3, got {msg.action}')
    return Outgoing('pylon_docking_port_command', {
        'name': port_id, 'action': int(msg.action), **_identity(msg)})


def validate(outgoing: Outgoing, envelope: dict[str, Any]) -> dict:
    """Return the full command packet (payload, then the envelope), validated by the codec.

    Raise CommandError('invalid_command', ...) naming the field the codec refused.
    """
    from pylon_protocol.errors import ProtocolError
    try:
        outgoing = complete(outgoing, envelope)
        packet = packets.build_command(outgoing.type_name, None, **outgoing.fields)
    except ProtocolError as exc:
        reason = 'non_finite_command' if exc.reason == 'non_finite' else 'invalid_command'
        raise CommandError(reason, str(exc)) from None
    packet.update(envelope)
    return packet
