"""Typed actuator overrides of the active vessel, as the mod keeps them on the KSP side.

A typed command names one actuator (engine, RCS module, wheel, separator, servo motor) or
one docking port. The caller has already checked the authority (lease, sequence, vessel);
``TypedActuators`` applies the accepted command and keeps its effect until the command's
timeout, a newer command for the same actuator, or ``release_all``. Nothing here does I/O
or reads a clock: ``now`` (simulator seconds) and ``dt`` are passed in.

Timeouts
    ``timeoutSeconds`` is clamped to 0.05–10 s; zero, negative, non-finite or missing
    means 0.5 s. An override given at ``now`` is in force while ``t < now + timeout`` and
    ends at the first ``tick`` (or ``command``) whose time reaches ``now + timeout``.

Engines (module ``engine``)
    * ``enabled`` is the ignition switch. Switching on an engine that burned before and
      cannot be restarted is refused (``engine_cannot_restart``); switching off a running
      engine that cannot be shut down is refused (``engine_cannot_shut_down``). The switch
      is a lasting state, not an override: no timeout and ``release_all`` leaves it.
    * A command with ``targetThrust`` 0 and ``hasGimbalCommand`` false only sets the switch:
      it sets no timeout, and it ends earlier thrust and gimbal overrides of that engine.
    * Any other command overrides the engine's independent throttle with
      ``targetThrust / maxThrust`` clamped to 0..1 until the timeout; then the throttle
      goes back to the value it had before the override (the stock independent throttle).
      A throttle-locked engine (a solid) refuses ``targetThrust > 0`` (``throttle_locked``);
      there ``targetThrust`` 0 means "no thrust change". While overridden, the engine is
      not offered to the body-wrench allocation.
    * ``hasGimbalCommand`` true passes the pitch/yaw/roll inputs (−1..1, not angles) to the
      gimbal of that engine only, until the timeout. The gimbal scales them by its limiter,
      keeps them at 0 while locked or on a disabled axis, and moves toward them no faster
      than its response speed. ``hasGimbalCommand`` false ends an earlier gimbal override
      of that engine. Without an override the gimbal is neutral (stock control, which the
      simulator does not model, holds it at 0). An engine without a gimbal accepts gimbal
      inputs and ignores them.
    * Engine modules that share one gimbal (same ``gimbal_group``): of the gimbal overrides
      currently in force for any of them, the one with the highest sequence drives the
      gimbal, and every member reports that command.
    * An ignited engine flames out when any resource it burns is exhausted (vessel totals,
      missing = exhausted); it then gives no thrust. A restartable engine recovers when
      the resources return; one that cannot be restarted stays out.
    * Gimbal and thrust inputs are validated even when unused: non-finite values,
      negative thrust or gimbal inputs outside −1..1 are refused (``invalid_command``).

RCS (module ``rcs``)
    ``enabled`` and ``thrustLimit`` (N per nozzle; limiter = thrustLimit / thruster_power,
    clamped to 0..1, so the limit ends up within 0..thruster_power) hold until the
    timeout, then the module's stock enable and limit return.

Wheels (module ``wheel``)
    ``enabled`` (motor), ``targetAngularVelocity`` rad/s, ``steeringAngle`` rad (clamped to
    the steering range, 0 for a fixed wheel), ``maxDriveTorque`` N·m (0 keeps the stock
    torque), ``brake`` 0–1 hold until the timeout, then the stock settings return (motor
    idle, straight, brakes off). Non-finite fields, a negative torque or a brake outside
    0–1 are refused (``invalid_command``). ``wheel_inputs`` hands the settings to the
    physics (``wheels``, ``rover``), which drives the wheel only while a command is in
    force; the wheel state fields (grounded, spin, torques, slip) come from there.

Servos (module ``servo``, ``pylon_motor_command``)
    A servo needs ElectricCharge: while the vessel holds none it does not move and reports
    ``powered`` false (no draw is modelled). Modes ``position`` (move toward the clamped
    target at the servo's speed),
    ``velocity`` (move at the clamped velocity) and ``effort`` (a simple rate model: speed =
    max speed × effort / max effort). Positions stay within ``lower``..``upper``. ``enabled``
    false holds the servo where it is. On timeout or ``release_all`` the servo holds its
    position and the command is no longer active. A ``partFlightId`` > 0 must match.

Separators (modules ``decoupler``, ``fairing``, ``launch_clamp``)
    ``separate: true`` fires once and for ever (a second one is ``already_separated``);
    a separator that is the vessel's root part has nothing beyond it to separate
    (``nothing_beyond``, nothing changes); ``separate: false`` changes nothing. A fired
    separator reports separated and not available. Splitting the vessel is the caller's
    business: ``take_fired`` hands over the separators fired since the last call, once.
    The impulse of the split is the module's ``ejection_force`` (kN) for the frame's
    integrated step (``topology.push_impulse``).

Docking ports (module ``docking_port``, ``pylon_docking_port_command``)
    Action 1 selects this port's camera; one docking camera streams at a time, so
    selecting another port stops the first. Action 2 stops this port's camera (a no-op if
    it was not selected). Action 3 undocks a docked port (``not_docked`` otherwise): the
    port goes to ``Disengage`` and ``take_released`` hands it to the simulator, which
    splits the vessel there. ``state`` is the port's ``docking`` state, which the
    simulator advances (``set_port_state``, ``set_docked``).

``release_all`` (lease loss, emergency stop, vessel switch) ends every override at once:
engine throttles back to their stock independent throttle and gimbals neutral at once,
RCS, wheels and servos back to stock (servos hold their position). Ignition switches,
fired separators, docking and the selected docking camera are not overrides and stay.

Module settings read here (all optional; unknown settings are ignored)
    engine: ``max_thrust`` N, ``gimbal_range_deg`` (0 = no gimbal), ``throttle_locked``
    (default false), ``restartable`` and ``allow_shutdown`` (default: not throttle
    locked), ``ignited`` (initial switch; default: not throttle locked),
    ``independent_throttle`` (stock independent throttle 0..1, default 0),
    ``gimbal_limit`` (limiter 0..1, default 1), ``gimbal_locked`` (default false),
    ``gimbal_enable_pitch``/``_yaw``/``_roll`` (default true),
    ``gimbal_response_deg_per_sec`` (0 or missing = instantaneous), ``gimbal_group``
    (engine modules with the same value share the gimbal; its settings come from the first
    of them in part order), ``fuel`` (resource names burned; default ``SolidFuel`` for a
    throttle-locked engine, else ``LiquidFuel`` and ``Oxidizer``; ``[]`` never flames out).
    rcs: ``thruster_power`` N per nozzle, ``nozzles`` / ``thrust_directions`` (the nozzle
    layout, ``rcs_geometry.rcs_layout``; its length is the nozzle count), ``enabled``
    (default true), ``thrust_limit_fraction`` (stock limiter 0..1, default 1).
    wheel: ``max_drive_torque``, ``steerable``, ``max_steering_angle_deg`` (the others
    and every default: ``wheels.SETTINGS``).
    servo: ``lower``/``upper`` (rad | m), ``velocity`` (max speed), ``effort`` (max
    effort), ``position`` (initial, default 0).
    docking_port: ``node_type``, ``docked`` (default false), ``partner_name``,
    ``partner_part_flight_id``.
    decoupler, fairing, launch_clamp: ``ejection_force`` (kN, KSP's ``ejectionForce``).

``carried(spec)`` (after a topology change) is a new instance for the changed vessel that
keeps the state of the actuators still in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
import math

from pylon_protocol import names
from pylon_protocol.packets import (
    MAX_COMMAND_TIMEOUT_SEC,
    MIN_COMMAND_TIMEOUT_SEC,
    MOD_DEFAULT_COMMAND_TIMEOUT_SEC,
)

from pylon_sim import topology, wheels
from pylon_sim.docking import ACQUIRE, DISENGAGE, DOCKER, READY
from pylon_sim.parts import Actuator, actuators_of
from pylon_sim.rcs_geometry import nozzle_count
from pylon_sim.vessel import VesselSpec

ACCEPTED = 'command_accepted'
EXHAUSTED = 1e-9
MOTOR_MODES = ('position', 'velocity', 'effort')
SELECT_CAMERA, STOP_CAMERA, RELEASE = 1, 2, 3
STOCK_DRIVE_TORQUE = wheels.SETTINGS['max_drive_torque'][0]   # N·m, a wheel's default


class _InvalidError(ValueError):
    """A command field of the wrong type or out of range."""


def clamp_timeout(value: object) -> float:
    """Return a command timeout as applied: 0.05–10 s, 0.5 s if unusable."""
    if not _is_number(value) or not math.isfinite(value) or value <= 0.0:
        return MOD_DEFAULT_COMMAND_TIMEOUT_SEC
    return min(max(float(value), MIN_COMMAND_TIMEOUT_SEC), MAX_COMMAND_TIMEOUT_SEC)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(packet: dict, key: str, default: float = 0.0) -> float:
    value = packet.get(key, default)
    if not _is_number(value) or not math.isfinite(value):
        raise _InvalidError(key)
    return float(value)


def _flag(packet: dict, key: str, default: bool) -> bool:
    value = packet.get(key, default)
    if not isinstance(value, bool):
        raise _InvalidError(key)
    return value


def _setting(actuator_module, key: str, default: float) -> float:
    value = actuator_module.get(key, default)
    return float(value) if _is_number(value) else float(default)


def _clamp(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


@dataclass
class _Override:
    """What an accepted command holds until ``expires``."""

    sequence: int
    expires: float
    values: dict


@dataclass
class _Gimbal:
    """One gimbal, shared by the engine modules in ``members``."""

    members: list[str]
    range_deg: float
    limit: float
    locked: bool
    enables: tuple[bool, bool, bool]
    response_deg_per_sec: float
    current: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])


@dataclass
class _Engine:
    actuator: Actuator
    max_thrust: float
    throttle_locked: bool
    restartable: bool
    allow_shutdown: bool
    stock_throttle: float
    fuel: tuple[str, ...]
    group: str | None
    ignited: bool
    ever_ignited: bool
    flameout: bool = False
    thrust: _Override | None = None
    gimbal: _Override | None = None


@dataclass
class _Servo:
    actuator: Actuator
    lower: float
    upper: float
    max_speed: float
    max_effort: float
    position: float
    velocity: float = 0.0
    target: float = 0.0
    mode: str = 'position'
    command: _Override | None = None


@dataclass
class _Port:
    part_flight_id: int
    module_index: int
    node_type: str
    docked: bool
    partner_name: str
    partner_part_flight_id: int
    state: str = READY


class TypedActuators:
    """The KSP-side state of the typed actuator overrides of one vessel."""

    def __init__(self, spec: VesselSpec) -> None:
        self.spec = spec
        self._actuators: dict[str, Actuator] = {a.name: a for a in actuators_of(spec)}
        self._engines: dict[str, _Engine] = {}
        self._gimbals: dict[str, _Gimbal] = {}
        self._rcs: dict[str, _Override | None] = {}
        self._wheels: dict[str, _Override | None] = {}
        self._servos: dict[str, _Servo] = {}
        self._separated: set[str] = set()
        self._fired: list[str] = []        # fired since the last ``take_fired``
        self._ports: dict[str, _Port] = {}
        self._undocked: set[str] = set()
        self._released: list[tuple[str, int]] = []   # (port, partner part) to undock
        self._camera: str | None = None
        self._powered = True              # the vessel holds ElectricCharge (servos move)
        for name, actuator in self._actuators.items():
            kind = actuator.actuator_type
            if kind == 'engine':
                self._add_engine(name, actuator)
            elif kind == 'rcs':
                self._rcs[name] = None
            elif kind == 'wheel':
                self._wheels[name] = None
            elif kind == 'motor':
                self._add_servo(name, actuator)
        for part in spec.parts:
            for module in part.modules_of('docking_port'):
                port = names.docking_port_name(part.persistent_id or part.flight_id,
                                               module.module_index)
                self._ports[port] = _Port(
                    part.flight_id, module.module_index,
                    str(module.get('node_type', 'unknown')) or 'unknown',
                    bool(module.get('docked', False)), str(module.get('partner_name', '')),
                    int(module.get('partner_part_flight_id', 0) or 0),
                    DOCKER if module.get('docked', False) else READY)

    def _add_engine(self, name: str, actuator: Actuator) -> None:
        module = actuator.module
        locked = bool(module.get('throttle_locked', False))
        fuel = module.get('fuel')
        if fuel is None:
            fuel = ('SolidFuel',) if locked else ('LiquidFuel', 'Oxidizer')
        elif isinstance(fuel, str):
            fuel = (fuel,)
        ignited = bool(module.get('ignited', not locked))
        group = module.get('gimbal_group')
        engine = _Engine(
            actuator, max(0.0, _setting(module, 'max_thrust', 0.0)), locked,
            bool(module.get('restartable', not locked)),
            bool(module.get('allow_shutdown', not locked)),
            _clamp(_setting(module, 'independent_throttle', 0.0), 0.0, 1.0),
            tuple(str(f) for f in fuel), None if group is None else str(group),
            ignited, ignited)
        self._engines[name] = engine
        range_deg = _setting(module, 'gimbal_range_deg', 0.0)
        if range_deg <= 0.0:
            return
        key = f'group:{group}' if group is not None else name
        if key in self._gimbals:
            self._gimbals[key].members.append(name)
            return
        self._gimbals[key] = _Gimbal(
            [name], range_deg, _clamp(_setting(module, 'gimbal_limit', 1.0), 0.0, 1.0),
            bool(module.get('gimbal_locked', False)),
            tuple(bool(module.get(f'gimbal_enable_{axis}', True))
                  for axis in ('pitch', 'yaw', 'roll')),
            max(0.0, _setting(module, 'gimbal_response_deg_per_sec', 0.0)))

    def _add_servo(self, name: str, actuator: Actuator) -> None:
        module = actuator.module
        lower = _setting(module, 'lower', -math.inf)
        upper = _setting(module, 'upper', math.inf)
        start = _clamp(_setting(module, 'position', 0.0), lower, upper)
        self._servos[name] = _Servo(actuator, lower, upper,
                                    max(0.0, _setting(module, 'velocity', 1.0)),
                                    max(0.0, _setting(module, 'effort', 0.0)), start,
                                    target=start)

    # ---------------------------------------------------------------- commands

    def command(self, packet: dict, now: float) -> str:
        """
        Apply an accepted ``pylon_actuator_command`` or ``pylon_motor_command``.

        ``packet`` is the decoded command with wire field names. Return
        ``command_accepted`` or the reason it was refused (``unknown_actuator``,
        ``actuator_kind_mismatch``, ``invalid_command``, ``engine_cannot_restart``,
        ``engine_cannot_shut_down``, ``throttle_locked``, ``already_separated``,
        ``nothing_beyond``); a refused command changes nothing.
        """
        self._expire(now)
        motor = packet.get('type') == 'pylon_motor_command' or (
            'actuatorType' not in packet and 'mode' in packet)
        kind = 'motor' if motor else packet.get('actuatorType')
        name = packet.get('name')
        actuator = self._actuators.get(name) if isinstance(name, str) else None
        if actuator is None:
            return 'unknown_actuator'
        if actuator.actuator_type != kind:
            return 'actuator_kind_mismatch'
        try:
            sequence = packet.get('sequence', 0)
            if not isinstance(sequence, int) or isinstance(sequence, bool):
                raise _InvalidError('sequence')
            expires = now + clamp_timeout(packet.get('timeoutSeconds'))
            handler = {'engine': self._engine_command, 'rcs': self._rcs_command,
                       'wheel': self._wheel_command, 'separation': self._separation_command,
                       'motor': self._motor_command}[kind]
            result = handler(name, packet, sequence, now, expires)
        except _InvalidError:
            return 'invalid_command'
        self._sync_gimbals()
        return result

    def _engine_command(self, name: str, packet: dict, sequence: int, now: float,
                        expires: float) -> str:
        engine = self._engines[name]
        enabled = _flag(packet, 'enabled', True)
        target = _number(packet, 'targetThrust')
        has_gimbal = _flag(packet, 'hasGimbalCommand', False)
        axes = tuple(_number(packet, key) for key in ('gimbalPitch', 'gimbalYaw', 'gimbalRoll'))
        if target < 0.0 or any(abs(a) > 1.0 for a in axes):
            raise _InvalidError('range')
        if enabled and not engine.ignited and engine.ever_ignited and not engine.restartable:
            return 'engine_cannot_restart'
        if not enabled and engine.ignited and not engine.allow_shutdown:
            return 'engine_cannot_shut_down'
        if target > 0.0 and engine.throttle_locked:
            return 'throttle_locked'
        if enabled and not engine.ignited:
            engine.ignited = engine.ever_ignited = True
        elif not enabled and engine.ignited:
            engine.ignited = False
            if engine.restartable:
                engine.flameout = False
        if target == 0.0 and not has_gimbal:   # enable-only: the switch, no timeout
            engine.thrust = engine.gimbal = None
            return ACCEPTED
        if not engine.throttle_locked:
            throttle = _clamp(target / engine.max_thrust, 0.0, 1.0) if engine.max_thrust else 0.0
            engine.thrust = _Override(sequence, expires, {'throttle': throttle})
        if has_gimbal and self._gimbal_of(name) is not None:
            engine.gimbal = _Override(sequence, expires, {'axes': axes})
        else:
            engine.gimbal = None
        return ACCEPTED

    def _rcs_command(self, name: str, packet: dict, sequence: int, now: float,
                     expires: float) -> str:
        enabled = _flag(packet, 'enabled', True)
        power = self._rcs_power(name)
        limit = _number(packet, 'thrustLimit')
        fraction = _clamp(limit / power, 0.0, 1.0) if power > 0.0 else 0.0
        self._rcs[name] = _Override(sequence, expires,
                                    {'enabled': enabled, 'thrust_limit': power * fraction})
        return ACCEPTED

    def _wheel_command(self, name: str, packet: dict, sequence: int, now: float,
                       expires: float) -> str:
        module = self._actuators[name].module
        enabled = _flag(packet, 'enabled', True)
        omega = _number(packet, 'targetAngularVelocity')
        steering = _number(packet, 'steeringAngle')
        torque = _number(packet, 'maxDriveTorque')
        brake = _number(packet, 'brake')
        if torque < 0.0 or not 0.0 <= brake <= 1.0:
            raise _InvalidError('range')
        steer_max = (math.radians(_setting(module, 'max_steering_angle_deg', 0.0))
                     if module.get('steerable') else 0.0)
        stock_torque = max(0.0, _setting(module, 'max_drive_torque', STOCK_DRIVE_TORQUE))
        self._wheels[name] = _Override(sequence, expires, {
            'enabled': enabled, 'target_angular_velocity': omega,
            'steering_angle': _clamp(steering, -steer_max, steer_max),
            'max_drive_torque': torque if torque > 0.0 else stock_torque, 'brake': brake})
        return ACCEPTED

    def _separation_command(self, name: str, packet: dict, sequence: int, now: float,
                            expires: float) -> str:
        if not _flag(packet, 'separate', False):
            return ACCEPTED
        if name in self._separated:
            return 'already_separated'
        if not topology.beyond_indices(self.spec, self._actuators[name].part_index):
            return 'nothing_beyond'
        self._separated.add(name)
        self._fired.append(name)
        return ACCEPTED

    def take_fired(self) -> list[str]:
        """Return the separators fired since the last call, in firing order (once)."""
        fired, self._fired = self._fired, []
        return fired

    def carried(self, spec: VesselSpec, *others: TypedActuators) -> TypedActuators:
        """Return the actuator state of ``spec`` (a changed vessel) for the actuators in it.

        Everything of an actuator still in ``spec`` carries over from this vessel and
        ``others`` (the vessel docked to it): switches, overrides, gimbal positions, servo
        motion, fired separators, docking; the runtime-session reset that follows a
        topology change then releases the overrides as usual.
        """
        new = TypedActuators(spec)
        for source in (*reversed(others), self):
            source._carry_into(new)
        return new

    def _carry_into(self, new: TypedActuators) -> None:
        for name, engine in self._engines.items():
            if name in new._engines:
                new._engines[name] = replace(engine, actuator=new._actuators[name])
        for key, gimbal in self._gimbals.items():
            if key in new._gimbals:
                new._gimbals[key].current = list(gimbal.current)
        for table, old in ((new._rcs, self._rcs), (new._wheels, self._wheels)):
            for name in table:
                if name in old:
                    table[name] = old[name]
        for name, servo in self._servos.items():
            if name in new._servos:
                new._servos[name] = replace(servo, actuator=new._actuators[name])
        new._separated |= {n for n in self._separated if n in new._actuators}
        for name in new._ports:
            if name in self._ports:
                new._ports[name] = replace(self._ports[name])
        new._undocked |= {n for n in self._undocked if n in new._ports}
        if self._camera in new._ports:
            new._camera = self._camera
        new._powered = self._powered

    def _motor_command(self, name: str, packet: dict, sequence: int, now: float,
                       expires: float) -> str:
        servo = self._servos[name]
        flight_id = packet.get('partFlightId', 0)
        if not isinstance(flight_id, int) or isinstance(flight_id, bool) or flight_id < 0:
            raise _InvalidError('partFlightId')
        if flight_id and flight_id != servo.actuator.part.flight_id:
            return 'unknown_actuator'
        mode = packet.get('mode')
        if mode not in MOTOR_MODES:
            raise _InvalidError('mode')
        enabled = _flag(packet, 'enabled', True) if _flag(packet, 'hasEnabled', False) else True
        value = 0.0
        if enabled:
            if not _flag(packet, f'has{mode.capitalize()}', False):
                raise _InvalidError(mode)
            value = _number(packet, mode)
        servo.mode = mode
        servo.command = _Override(sequence, expires, {'enabled': enabled, 'value': value})
        if enabled and mode == 'position':
            servo.target = _clamp(value, servo.lower, servo.upper)
        else:
            servo.target = servo.position
        return ACCEPTED

    def docking(self, packet: dict, now: float) -> str:
        """
        Apply an accepted ``pylon_docking_port_command``.

        Return ``command_accepted``, ``unknown_docking_port``, ``invalid_command`` or
        ``not_docked`` (release of a port that is not docked).
        """
        name = packet.get('name')
        port = self._ports.get(name) if isinstance(name, str) else None
        if port is None:
            return 'unknown_docking_port'
        action = packet.get('action')
        if isinstance(action, bool) or action not in (SELECT_CAMERA, STOP_CAMERA, RELEASE):
            return 'invalid_command'
        if action == SELECT_CAMERA:
            self._camera = name
        elif action == STOP_CAMERA:
            if self._camera == name:
                self._camera = None
        else:
            if not port.docked:
                return 'not_docked'
            self._released.append((name, port.partner_part_flight_id))
            port.docked, port.partner_name, port.partner_part_flight_id = False, '', 0
            port.state = DISENGAGE
            self._undocked.add(name)
        return ACCEPTED

    def set_docked(self, port_id: str, partner_name: str = '',
                   partner_part_flight_id: int = 0, state: str = DOCKER) -> None:
        """Record that a port has docked (the simulator's docking event)."""
        port = self._ports[port_id]
        port.docked, port.partner_name = True, partner_name
        port.partner_part_flight_id = partner_part_flight_id
        port.state = state
        self._undocked.discard(port_id)

    def set_port_state(self, port_id: str, state: str) -> None:
        """Set a free port's ``docking`` state (Ready, Acquire, Disengage)."""
        self._ports[port_id].state = state

    def undock_port(self, port_id: str) -> None:
        """Record that a port's partner left (undocked from the other side)."""
        port = self._ports[port_id]
        port.docked, port.partner_name, port.partner_part_flight_id = False, '', 0

    def take_released(self) -> list[tuple[str, int]]:
        """Return the ports released since the last call, with their partner part (once)."""
        released, self._released = self._released, []
        return released

    # ---------------------------------------------------------------- time

    def tick(self, now: float, dt: float, resources: dict[str, float]) -> None:
        """
        Advance by ``dt`` to ``now``: servo and gimbal motion, timeouts, flameouts.

        ``resources`` are the vessel's totals by resource name. Motion over ``dt`` uses the
        commands in force before ``now``; overrides whose time is up at ``now`` then end.
        """
        dt = max(0.0, float(dt))
        self._powered = resources.get('ElectricCharge', 0.0) > EXHAUSTED
        for servo in self._servos.values():
            self._move_servo(servo, dt)
        for gimbal in self._gimbals.values():
            target = self._gimbal_target(gimbal)
            if gimbal.response_deg_per_sec <= 0.0:
                gimbal.current = list(target)
                continue
            step = gimbal.response_deg_per_sec / gimbal.range_deg * dt
            gimbal.current = [c + _clamp(t - c, -step, step)
                              for c, t in zip(gimbal.current, target)]
        self._expire(now)
        self._sync_gimbals()
        for engine in self._engines.values():
            dry = any(resources.get(f, 0.0) <= EXHAUSTED for f in engine.fuel)
            if engine.ignited and dry:
                engine.flameout = True
            elif engine.flameout and not dry and engine.restartable:
                engine.flameout = False

    def _move_servo(self, servo: _Servo, dt: float) -> None:
        command = servo.command
        if command is None or not command.values['enabled'] or dt <= 0.0 or not self._powered:
            servo.velocity = 0.0
            return
        value = command.values['value']
        if servo.mode == 'position':
            step = _clamp(servo.target - servo.position, -servo.max_speed * dt,
                          servo.max_speed * dt)
        else:
            if servo.mode == 'velocity':
                speed = _clamp(value, -servo.max_speed, servo.max_speed)
            elif servo.max_effort > 0.0:
                speed = servo.max_speed * _clamp(value / servo.max_effort, -1.0, 1.0)
            else:
                speed = math.copysign(servo.max_speed, value) if value else 0.0
            step = speed * dt
        new = _clamp(servo.position + step, servo.lower, servo.upper)
        servo.velocity = (new - servo.position) / dt
        servo.position = new
        if servo.mode != 'position':
            servo.target = new

    def _expire(self, now: float) -> None:
        for engine in self._engines.values():
            if engine.thrust is not None and now >= engine.thrust.expires:
                engine.thrust = None
            if engine.gimbal is not None and now >= engine.gimbal.expires:
                engine.gimbal = None
        for table in (self._rcs, self._wheels):
            for name, override in table.items():
                if override is not None and now >= override.expires:
                    table[name] = None
        for servo in self._servos.values():
            if servo.command is not None and now >= servo.command.expires:
                self._hold(servo)

    @staticmethod
    def _hold(servo: _Servo) -> None:
        servo.command = None
        servo.velocity = 0.0
        servo.target = servo.position

    def overriding(self) -> bool:
        """Tell whether any command is in force: an engine, RCS, wheel or servo override."""
        return (any(e.thrust is not None or e.gimbal is not None
                    for e in self._engines.values())
                or any(o is not None for table in (self._rcs, self._wheels)
                       for o in table.values())
                or any(s.command is not None for s in self._servos.values()))

    def release_all(self) -> None:
        """End every override at once (lease loss, emergency stop, vessel switch)."""
        for engine in self._engines.values():
            engine.thrust = engine.gimbal = None
        for gimbal in self._gimbals.values():
            gimbal.current = [0.0, 0.0, 0.0]
        for table in (self._rcs, self._wheels):
            for name in table:
                table[name] = None
        for servo in self._servos.values():
            self._hold(servo)

    # ---------------------------------------------------------------- gimbals

    def _gimbal_of(self, name: str) -> _Gimbal | None:
        for gimbal in self._gimbals.values():
            if name in gimbal.members:
                return gimbal
        return None

    def _winner(self, gimbal: _Gimbal) -> _Override | None:
        best = None
        for member in gimbal.members:
            override = self._engines[member].gimbal
            if override is not None and (best is None or override.sequence > best.sequence):
                best = override
        return best

    def _gimbal_target(self, gimbal: _Gimbal) -> tuple[float, float, float]:
        winner = self._winner(gimbal)
        if winner is None or gimbal.locked:
            return (0.0, 0.0, 0.0)
        return tuple(a * gimbal.limit if on else 0.0
                     for a, on in zip(winner.values['axes'], gimbal.enables))

    def _sync_gimbals(self) -> None:
        for gimbal in self._gimbals.values():
            if gimbal.response_deg_per_sec <= 0.0:
                gimbal.current = list(self._gimbal_target(gimbal))

    # ---------------------------------------------------------------- outputs

    def _decides_thrust(self, engine: _Engine) -> bool:
        return (engine.thrust is not None or engine.throttle_locked
                or engine.stock_throttle > 0.0)

    def independent_throttle(self, engine_id: str) -> float:
        """Return an engine's independent throttle: the override's, else the stock one."""
        engine = self._engines[engine_id]
        if engine.thrust is not None:
            return engine.thrust.values['throttle']
        return 1.0 if engine.throttle_locked else engine.stock_throttle

    def _operational(self, engine: _Engine) -> bool:
        return engine.ignited and not engine.flameout

    def engine_thrust(self) -> dict[str, float]:
        """
        Return N per engine whose thrust is decided here instead of by the allocation.

        These are the engines with a thrust override, throttle-locked engines and engines
        with a non-zero stock independent throttle; 0 while not operational.
        """
        return {name: (self.independent_throttle(name) * engine.max_thrust
                       if self._operational(engine) else 0.0)
                for name, engine in self._engines.items() if self._decides_thrust(engine)}

    def engine_gimbal(self) -> dict[str, tuple[float, float, float]]:
        """Return each gimballed engine's current gimbal input (pitch, yaw, roll)."""
        return {member: tuple(gimbal.current)
                for gimbal in self._gimbals.values() for member in gimbal.members}

    def allocatable_engines(self) -> set[str]:
        """Return the engines the body-wrench allocation may throttle."""
        return {name for name, engine in self._engines.items()
                if self._operational(engine) and not self._decides_thrust(engine)}

    def _rcs_power(self, name: str) -> float:
        return max(0.0, _setting(self._actuators[name].module, 'thruster_power', 0.0))

    def rcs_settings(self) -> dict[str, dict]:
        """Return ``{'enabled', 'thrust_limit'}`` (N per nozzle) per RCS module."""
        out = {}
        for name, override in self._rcs.items():
            if override is not None:
                out[name] = dict(override.values)
                continue
            module = self._actuators[name].module
            fraction = _clamp(_setting(module, 'thrust_limit_fraction', 1.0), 0.0, 1.0)
            out[name] = {'enabled': bool(module.get('enabled', True)),
                         'thrust_limit': self._rcs_power(name) * fraction}
        return out

    def wheel_settings(self) -> dict[str, dict]:
        """Return each wheel's drive settings: the override's, else stock."""
        out = {}
        for name, override in self._wheels.items():
            if override is not None:
                out[name] = dict(override.values)
                continue
            module = self._actuators[name].module
            out[name] = {'enabled': True, 'target_angular_velocity': 0.0,
                         'steering_angle': 0.0, 'brake': 0.0,
                         'max_drive_torque': max(0.0, _setting(module, 'max_drive_torque',
                                                               STOCK_DRIVE_TORQUE))}
        return out

    def wheel_inputs(self) -> dict[str, dict]:
        """Return ``wheel_settings`` with ``commanded`` (a command in force) for the physics."""
        return {name: {**values, 'commanded': self._wheels[name] is not None}
                for name, values in self.wheel_settings().items()}

    def servo_positions(self) -> dict[str, float]:
        """Return each servo's position (rad | m)."""
        return {name: servo.position for name, servo in self._servos.items()}

    def separated_ids(self) -> set[str]:
        """Return the separators that have fired."""
        return set(self._separated)

    def undocked_ports(self) -> set[str]:
        """Return the docking ports released by command."""
        return set(self._undocked)

    def camera_port(self) -> str | None:
        """Return the docking port whose camera streams, if any."""
        return self._camera

    def override_sequence(self, actuator_id: str) -> int | None:
        """Return the sequence of the newest override in force on an actuator."""
        if actuator_id in self._engines:
            engine = self._engines[actuator_id]
            held = [o.sequence for o in (engine.thrust, engine.gimbal) if o is not None]
            return max(held) if held else None
        if actuator_id in self._servos:
            command = self._servos[actuator_id].command
        else:
            command = self._rcs.get(actuator_id) or self._wheels.get(actuator_id)
        return None if command is None else command.sequence

    def state_fields(self, actuator_id: str) -> dict:
        """
        Return the wire fields to merge into an actuator's state payload.

        Engines report ``throttle`` and ``thrust`` only while their thrust is decided here
        (see ``engine_thrust``); otherwise the allocation's values stand. Raise KeyError
        for an unknown id.
        """
        kind = self._actuators[actuator_id].actuator_type
        if kind == 'engine':
            return self._engine_fields(actuator_id)
        if kind == 'rcs':
            settings = self.rcs_settings()[actuator_id]
            nozzles = nozzle_count(self._actuators[actuator_id].module.settings)
            return {'enabled': settings['enabled'],
                    'active': settings['enabled'] and settings['thrust_limit'] > 0.0,
                    'thrustLimit': settings['thrust_limit'],
                    'maxThrust': self._rcs_power(actuator_id) * nozzles,
                    'commandActive': self._rcs[actuator_id] is not None}
        if kind == 'wheel':
            settings = self.wheel_settings()[actuator_id]
            return {'enabled': settings['enabled'],
                    'steeringAngle': settings['steering_angle'],
                    'maxDriveTorque': settings['max_drive_torque'],
                    'commandActive': self._wheels[actuator_id] is not None}
        if kind == 'separation':
            fired = actuator_id in self._separated
            return {'separated': fired, 'available': not fired}
        servo = self._servos[actuator_id]
        command = servo.command
        effort = command.values['value'] if (
            command is not None and servo.mode == 'effort' and command.values['enabled']) else 0.0
        return {'position': servo.position, 'velocity': servo.velocity, 'effort': effort,
                'target': servo.target, 'commandMode': servo.mode,
                'engaged': command is None or command.values['enabled'],
                'commandActive': command is not None, 'powered': self._powered}

    def _engine_fields(self, name: str) -> dict:
        engine = self._engines[name]
        gimbal = self._gimbal_of(name)
        winner = self._winner(gimbal) if gimbal is not None else None
        axes = winner.values['axes'] if winner is not None else (0.0, 0.0, 0.0)
        fields = {
            'enabled': engine.ignited, 'operational': self._operational(engine),
            'flameout': engine.flameout, 'maxThrust': engine.max_thrust,
            'commandActive': engine.thrust is not None or engine.gimbal is not None,
            'gimbalAvailable': gimbal is not None, 'gimbalCommandActive': winner is not None,
            'gimbalPitch': axes[0], 'gimbalYaw': axes[1], 'gimbalRoll': axes[2]}
        if self._decides_thrust(engine):
            fields['throttle'] = self.independent_throttle(name)
            fields['thrust'] = self.engine_thrust()[name]
        return fields

    def docking_ports(self) -> list[str]:
        """Return the ids of the vessel's docking ports, in part order."""
        return list(self._ports)

    def docking_fields(self, port_id: str) -> dict:
        """Return the ``pylon_docking_port_state`` fields of a port (KeyError if unknown)."""
        port = self._ports[port_id]
        return {'name': port_id, 'partFlightId': port.part_flight_id,
                'moduleIndex': port.module_index, 'nodeType': port.node_type,
                'state': port.state, 'docked': port.docked,
                'acquiring': port.state == ACQUIRE, 'releasable': port.docked,
                'cameraActive': self._camera == port_id, 'partnerName': port.partner_name,
                'partnerPartFlightId': port.partner_part_flight_id}
