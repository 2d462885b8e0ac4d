"""Control and actuators: what the mod reports of them, and the commands the bridge sends.

State (mod -> ROS): the control authority the mod confirmed (latched), the wrench status
as ``WrenchFeedback``, the typed actuator states (wheel, engine, RCS, separation), the
servos (``MotorState`` and ``joint_states``, and their joints on /tf for the servo-joint
extension) and the docking ports; the two manifests remove what the vessel no longer has
(``manifests``). Commands (ROS -> mod): ``command`` puts the session's
envelope on a validated command, ``command_rejected`` reports a refused one to its sender
(a WrenchFeedback or an authority state with the reason).

RCS thrust limits are N per module on the ROS side (``RcsCommand``/``RcsState``, as the
seed says) and N per nozzle on the wire. ``RcsModules`` converts with the module's nozzle
count: the state's ``nozzleCount`` where the game sends it (pylon_sim does), else
``round(maxThrust / thruster power)`` with the power taken as the largest per-nozzle
limit the module ever reported: the stock limiter starts at 100 %, and where it never was,
the estimate has too many nozzles and a command limits more than asked, never less.
A session's table holds at most ``MAX_RCS_MODULES`` modules (datagrams naming more are
hostile or a vessel no game flies): a module beyond them is not learned, its state shows a
limit of 0 and a command to it is refused (``rcs_module_unknown``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pylon_protocol import wire
from pylon_protocol.errors import ProtocolError
from pylon_protocol.names import sanitize_name

from pylon_bridge import commands, convert
from pylon_bridge.actions import Publish
from pylon_bridge.context import Shared
from pylon_bridge.manifests import absent_ports, ActuatorManifest, DOCKING_PORT_KEYS

ACTUATOR_STATE_KEYS = {'wheel': 'actuators/wheel/state', 'engine': 'actuators/propulsion/state',
                       'rcs': 'actuators/rcs/state', 'separation': 'actuators/separation/state'}
"""The wire's actuator kinds and the topic keys of their state."""
MAX_RCS_MODULES = 1024
"""RCS modules a session's nozzle table learns at most (bounds the memory a sender costs)."""
KSP_TIME_STAMPED = frozenset({'actuators/wheel/state'})
"""Actuator states stamped with their KSP time (their message says so); others on receipt."""


class RcsModules:
    """The nozzle count of each RCS module, from its states, for the unit conversion."""

    def __init__(self, max_modules: int = MAX_RCS_MODULES) -> None:
        """Know no module; learn ``max_modules`` at most."""
        self.max_modules = max_modules
        self.nozzles: dict[str, int] = {}
        self.power: dict[str, float] = {}        # largest per-nozzle limit seen (N)

    def observe(self, packet: dict) -> int | None:
        """Note a module's state; return its nozzle count (None while it cannot be told)."""
        name = packet['name']
        if (name not in self.power and name not in self.nozzles
                and max(len(self.power), len(self.nozzles)) >= self.max_modules):
            return None                 # the table is full: a module beyond it stays unknown
        given = packet.get('nozzleCount')
        if given is not None:
            self.nozzles[name] = given
            return given
        power = max(self.power.get(name, 0.0), packet.get('thrustLimit', 0.0))
        self.power[name] = power
        if power > 0.0 and packet.get('maxThrust', 0.0) > 0.0:
            self.nozzles[name] = max(1, round(packet['maxThrust'] / power))
        return self.nozzles.get(name)

    def names(self) -> set[str]:
        """Return the modules the table knows."""
        return set(self.nozzles) | set(self.power)

    def forget(self, names: Iterable[str]) -> None:
        """Forget modules (gone from the vessel): a command to one is refused again."""
        for name in names:
            self.nozzles.pop(name, None)
            self.power.pop(name, None)

    def per_nozzle(self, outgoing: commands.Outgoing) -> commands.Outgoing:
        """Return an RCS command with its module limit turned into the wire's per-nozzle one."""
        name = sanitize_name(outgoing.fields['name'], 'rcs')
        count = self.nozzles.get(name)
        if count is None:
            raise commands.CommandError('rcs_module_unknown', f'RCS module {name}: no state '
                                        'with its nozzle count yet')
        fields = dict(outgoing.fields, thrustLimit=outgoing.fields['thrustLimit'] / count)
        return commands.Outgoing(outgoing.type_name, fields)


class Actuation:
    """Authority, wrench feedback, actuator and servo states, docking ports, commands."""

    def __init__(self, shared: Shared) -> None:
        """Work on the core's shared state."""
        self.s = shared
        self.last_authority = None          # the last ControlAuthorityState of the mod
        self.last_wrench_status: dict | None = None    # for diagnostics
        self.actuators = ActuatorManifest()     # kept across sessions: reset by vessel id
        self.new_session()

    def new_session(self) -> None:
        """Forget the servos and RCS modules of the previous session."""
        self.motors: dict[str, dict] = {}
        self.rcs = RcsModules()

    # -- state -----------------------------------------------------------------------------------
    def authority_state(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Publish the owner the mod confirmed."""
        msg = convert.authority_state(packet, self.s.vessel.current.generation, ros_now)
        self.last_authority = msg
        return [self.s.topics.publish('control/authority/state', msg, now)]

    def wrench_status(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Publish the mod's wrench status as WrenchFeedback (stamped on receipt)."""
        self.last_wrench_status = packet
        return [self.s.topics.publish('control/wrench_feedback', convert.wrench_feedback(
            packet, ros_now, self.s.config.body_frame), now)]

    def actuator_state(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Publish a wheel, engine, RCS or separation state on its kind's topic."""
        key = ACTUATOR_STATE_KEYS.get(packet['actuatorType'])
        if key is None:                 # 'motor' in an actuator state: motors have their own
            self.s.stats.ignored['pylon_actuator_state/motor'] += 1
            return []
        stamp = self.s.stamp(packet, ros_now) if key in KSP_TIME_STAMPED else ros_now
        msg = convert.actuator_state(packet, stamp, self.s.config.body_frame)
        if packet['actuatorType'] == 'rcs':          # N per nozzle -> N per module
            msg.thrust_limit *= self.rcs.observe(packet) or 0
        self.actuators.observe(packet)
        return [self.s.topics.publish(key, msg, now)]

    def actuator_manifest(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Forget the actuators the manifest left out; latch its missing separators."""
        changes = self.actuators.update(packet, {'motor': list(self.motors),
                                                 'rcs': self.rcs.names()})
        for name in changes.of('motor'):
            del self.motors[name]
        self.rcs.forget(changes.of('rcs'))
        return [self.s.topics.publish('actuators/separation/state', convert.actuator_state(
            state, ros_now, self.s.config.body_frame), now) for state in changes.latched]

    def docking_manifest(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Remove the topics of the docking ports the manifest left out."""
        present = self.s.topics.ids_of(DOCKING_PORT_KEYS)
        return [action for port in absent_ports(packet, present)
                for action in self.s.topics.remove(DOCKING_PORT_KEYS, port)]

    def motor(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Publish a servo's state, every servo's joint state and the moved joints on /tf."""
        s = self.s
        if not s.topics.admit('servo', packet['name'], 'pylon_motor_state'):
            return []               # (a joint state entry each: the message would grow)
        self.motors[packet['name']] = packet
        stamp = s.stamp(packet, ros_now)
        return [s.topics.publish('joint_states',
                                 convert.joint_state(self.motors.values(), stamp), now),
                s.topics.publish('actuators/servo/state',
                                 convert.motor_state(packet, stamp, s.config.body_frame), now),
                *s.transforms.servo_joints(s.description.model, self.motors, stamp, now)]

    def docking_state(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Publish a docking port's state on its own topic (stamped on receipt)."""
        if not self.s.topics.admit('docking_port', packet['name'], 'pylon_docking_port_state'):
            return []
        msg = convert.docking_port_state(packet, ros_now, self.s.config.body_frame)
        return [self.s.topics.publish('docking_port/state', msg, now, topic_id=packet['name'])]

    # -- commands --------------------------------------------------------------------------------
    def command(self, outgoing: commands.Outgoing, now: float) -> bytes:
        """Return the datagram of a command for the current session.

        Raise ``commands.CommandError`` when there is no fresh available session
        (``control_unavailable``) or the codec refuses the packet; the caller reports it.
        """
        try:
            envelope = self.s.time.command_envelope(now, self.s.config.topic_timeout_sec)
        except ProtocolError:
            raise commands.CommandError('control_unavailable',
                                        'no fresh active flight session') from None
        if outgoing.fields.get('actuatorType') == 'rcs':
            outgoing = self.rcs.per_nozzle(outgoing)
        data = wire.encode_command(commands.validate(outgoing, envelope))
        self.s.stats.commands_sent[outgoing.type_name] += 1
        return data

    def command_rejected(self, key: str, msg: Any, error: commands.CommandError,
                         ros_now: float) -> list:
        """Count a refused command and return what reports it to the sender.

        A wrench command gets a WrenchFeedback with ``accepted`` false; an authority command
        the last authority state the mod confirmed, with the reason; others diagnostics only.
        """
        self.s.stats.commands_rejected[error.reason] += 1
        self.s.stats.recent_drops.append((error.reason, f'{key}: {error.detail}'))
        if key == 'control/wrench_command':
            feedback = convert.rejected_wrench(msg, error.reason, ros_now,
                                               self.s.config.body_frame)
            return [Publish('control/wrench_feedback', feedback)]
        if key == 'control/authority/command':
            state = convert.rejected_authority(self.last_authority, msg, error.reason,
                                               self.s.vessel.current, ros_now)
            return [Publish('control/authority/state', state)]
        return []
