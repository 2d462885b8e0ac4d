"""Typed engine commands: ignition switches, thrust overrides and gimbals (module ``engine``).

* ``enabled`` is the ignition switch. Switching on an engine that burned before and cannot
  be restarted is refused (``engine_cannot_restart``); switching off a running engine that
  cannot be shut down is refused (``engine_cannot_shut_down``). The switch is a lasting
  state, not an override: no timeout and ``release_all`` leaves it.
* A command with ``targetThrust`` 0 and ``hasGimbalCommand`` false only sets the switch: it
  sets no timeout, and it ends earlier thrust and gimbal overrides of that engine.
* Any other command overrides the engine's independent throttle with ``targetThrust /
  maxThrust`` clamped to 0..1 until the timeout; then the throttle goes back to the value
  it had before the override (the stock independent throttle). A throttle-locked engine (a
  solid) refuses ``targetThrust > 0`` (``throttle_locked``); there ``targetThrust`` 0 means
  "no thrust change". While overridden, the engine is not offered to the body-wrench
  allocation.
* ``hasGimbalCommand`` true passes the pitch/yaw/roll inputs (−1..1, not angles) to the
  gimbal of that engine only, until the timeout. The gimbal scales them by its limiter,
  keeps them at 0 while locked or on a disabled axis, and moves toward them no faster than
  its response speed. ``hasGimbalCommand`` false ends an earlier gimbal override of that
  engine. Without an override the gimbal is neutral (stock control, which the simulator
  does not model, holds it at 0). An engine without a gimbal accepts gimbal inputs and
  ignores them.
* Engine modules that share one gimbal (same ``gimbal_group``): of the gimbal overrides
  currently in force for any of them, the one with the highest sequence drives the gimbal,
  and every member reports that command.
* An ignited engine flames out when any resource it burns is exhausted (vessel totals,
  missing = exhausted); it then gives no thrust. A restartable engine recovers when the
  resources return; one that cannot be restarted stays out.
* Gimbal and thrust inputs are validated even when unused: non-finite values, negative
  thrust or gimbal inputs outside −1..1 are refused (``invalid_command``).

Settings (``vessel.flag_setting`` / ``number_setting``: a wrong type is the default):
``max_thrust`` N, ``gimbal_range_deg`` (0 = no gimbal), ``throttle_locked`` (default
false), ``restartable`` and ``allow_shutdown`` (default: not throttle locked), ``ignited``
(initial switch; default: not throttle locked), ``independent_throttle`` (stock
independent throttle 0..1, default 0), ``gimbal_limit`` (limiter 0..1, default 1),
``gimbal_locked`` (default false), ``gimbal_enable_pitch``/``_yaw``/``_roll`` (default
true), ``gimbal_response_deg_per_sec`` (0 or missing = instantaneous), ``gimbal_group``
(engine modules with the same value share the gimbal; its settings come from the first of
them in part order), ``fuel`` (resource names burned; default ``SolidFuel`` for a
throttle-locked engine, else ``LiquidFuel`` and ``Oxidizer``; ``[]`` never flames out).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pylon_sim.game.parts import Actuator
from pylon_sim.mod.typed_common import (
    ACCEPTED,
    clamp,
    command_flag,
    command_number,
    EXHAUSTED,
    InvalidCommandError,
    Override,
)

AXES = ('pitch', 'yaw', 'roll')
NEUTRAL = (0.0, 0.0, 0.0)


@dataclass
class Gimbal:
    """One gimbal, shared by the engine modules in ``members``."""

    members: list[str]
    range_deg: float
    limit: float
    locked: bool
    enables: tuple[bool, bool, bool]
    response_deg_per_sec: float
    current: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])


@dataclass
class Engine:
    """One engine module: its switch, its flameout and the overrides it holds."""

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
    thrust: Override | None = None
    gimbal: Override | None = None

    @property
    def operational(self) -> bool:
        """Tell whether the engine burns: ignited and not flamed out."""
        return self.ignited and not self.flameout

    @property
    def decides_thrust(self) -> bool:
        """Tell whether its thrust is decided here rather than by the allocation."""
        return self.thrust is not None or self.throttle_locked or self.stock_throttle > 0.0

    @property
    def throttle(self) -> float:
        """Return the independent throttle: the override's, else the stock one."""
        if self.thrust is not None:
            return self.thrust.values['throttle']
        return 1.0 if self.throttle_locked else self.stock_throttle

    @property
    def output(self) -> float:
        """Return the thrust (N) at its independent throttle; 0 while not operational."""
        return self.throttle * self.max_thrust if self.operational else 0.0


def _engine(actuator: Actuator) -> Engine:
    module = actuator.module
    locked = module.flag('throttle_locked', False)
    fuel = module.get('fuel')
    if fuel is None:
        fuel = ('SolidFuel',) if locked else ('LiquidFuel', 'Oxidizer')
    elif isinstance(fuel, str):
        fuel = (fuel,)
    ignited = module.flag('ignited', not locked)
    group = module.get('gimbal_group')
    return Engine(
        actuator, max(0.0, module.number('max_thrust', 0.0)), locked,
        module.flag('restartable', not locked), module.flag('allow_shutdown', not locked),
        clamp(module.number('independent_throttle', 0.0), 0.0, 1.0),
        tuple(str(f) for f in fuel), None if group is None else str(group), ignited, ignited)


def _gimbal(actuator: Actuator, range_deg: float) -> Gimbal:
    module = actuator.module
    return Gimbal(
        [actuator.name], range_deg, clamp(module.number('gimbal_limit', 1.0), 0.0, 1.0),
        module.flag('gimbal_locked', False),
        tuple(module.flag(f'gimbal_enable_{axis}', True) for axis in AXES),
        max(0.0, module.number('gimbal_response_deg_per_sec', 0.0)))


class Engines:
    """The engines of one vessel and the gimbals they share."""

    def __init__(self, actuators: list[Actuator]) -> None:
        self.engines: dict[str, Engine] = {}
        self.gimbals: dict[str, Gimbal] = {}
        for actuator in actuators:
            engine = self.engines[actuator.name] = _engine(actuator)
            range_deg = actuator.module.number('gimbal_range_deg', 0.0)
            if range_deg <= 0.0:
                continue
            key = f'group:{engine.group}' if engine.group is not None else actuator.name
            if key in self.gimbals:
                self.gimbals[key].members.append(actuator.name)
            else:
                self.gimbals[key] = _gimbal(actuator, range_deg)

    def command(self, name: str, packet: dict, sequence: int, expires: float) -> str:
        """Apply an engine command (module docstring); return ``command_accepted`` or why not."""
        engine = self.engines[name]
        enabled = command_flag(packet, 'enabled', True)
        target = command_number(packet, 'targetThrust')
        has_gimbal = command_flag(packet, 'hasGimbalCommand', False)
        axes = tuple(command_number(packet, f'gimbal{axis.capitalize()}') for axis in AXES)
        if target < 0.0 or any(abs(a) > 1.0 for a in axes):
            raise InvalidCommandError('range')
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
            throttle = clamp(target / engine.max_thrust, 0.0, 1.0) if engine.max_thrust else 0.0
            engine.thrust = Override(sequence, expires, {'throttle': throttle})
        if has_gimbal and self.gimbal_of(name) is not None:
            engine.gimbal = Override(sequence, expires, {'axes': axes})
        else:
            engine.gimbal = None
        return ACCEPTED

    # ---------------------------------------------------------------- time

    def tick(self, now: float, dt: float, resources: dict[str, float]) -> None:
        """Move the gimbals over ``dt``, end the overrides due at ``now``, then flameouts."""
        for gimbal in self.gimbals.values():
            target = self._target(gimbal)
            if gimbal.response_deg_per_sec <= 0.0:
                gimbal.current = list(target)
                continue
            step = gimbal.response_deg_per_sec / gimbal.range_deg * dt
            gimbal.current = [c + clamp(t - c, -step, step)
                              for c, t in zip(gimbal.current, target)]
        self.expire(now)
        self.sync()
        for engine in self.engines.values():
            dry = any(resources.get(f, 0.0) <= EXHAUSTED for f in engine.fuel)
            if engine.ignited and dry:
                engine.flameout = True
            elif engine.flameout and not dry and engine.restartable:
                engine.flameout = False

    def expire(self, now: float) -> None:
        """End the thrust and gimbal overrides whose time is up at ``now``."""
        for engine in self.engines.values():
            if engine.thrust is not None and now >= engine.thrust.expires:
                engine.thrust = None
            if engine.gimbal is not None and now >= engine.gimbal.expires:
                engine.gimbal = None

    def release(self) -> None:
        """End every override; the gimbals go neutral at once."""
        for engine in self.engines.values():
            engine.thrust = engine.gimbal = None
        for gimbal in self.gimbals.values():
            gimbal.current = [0.0, 0.0, 0.0]

    def overriding(self) -> bool:
        """Tell whether any thrust or gimbal override is in force."""
        return any(e.thrust is not None or e.gimbal is not None for e in self.engines.values())

    def sequence(self, name: str) -> int | None:
        """Return the sequence of the newest override in force on an engine."""
        engine = self.engines[name]
        held = [o.sequence for o in (engine.thrust, engine.gimbal) if o is not None]
        return max(held) if held else None

    def carry_from(self, old: Engines) -> None:
        """Take the state of the engines and gimbals still here from ``old``."""
        for name, engine in old.engines.items():
            if name in self.engines:
                self.engines[name] = replace(engine, actuator=self.engines[name].actuator)
        for key, gimbal in old.gimbals.items():
            if key in self.gimbals:
                self.gimbals[key].current = list(gimbal.current)

    # ---------------------------------------------------------------- gimbals

    def gimbal_of(self, name: str) -> Gimbal | None:
        """Return the gimbal an engine moves, if it has one."""
        for gimbal in self.gimbals.values():
            if name in gimbal.members:
                return gimbal
        return None

    def _winner(self, gimbal: Gimbal) -> Override | None:
        best = None
        for member in gimbal.members:
            override = self.engines[member].gimbal
            if override is not None and (best is None or override.sequence > best.sequence):
                best = override
        return best

    def _target(self, gimbal: Gimbal) -> tuple[float, float, float]:
        winner = self._winner(gimbal)
        if winner is None or gimbal.locked:
            return NEUTRAL
        return tuple(a * gimbal.limit if on else 0.0
                     for a, on in zip(winner.values['axes'], gimbal.enables))

    def sync(self) -> None:
        """Put the instantaneous gimbals at their targets."""
        for gimbal in self.gimbals.values():
            if gimbal.response_deg_per_sec <= 0.0:
                gimbal.current = list(self._target(gimbal))

    # ---------------------------------------------------------------- outputs

    def thrust(self) -> dict[str, float]:
        """Return N per engine whose thrust is decided here (0 while not operational)."""
        return {name: engine.output
                for name, engine in self.engines.items() if engine.decides_thrust}

    def gimbal_inputs(self) -> dict[str, tuple[float, float, float]]:
        """Return each gimballed engine's current gimbal input (pitch, yaw, roll)."""
        return {member: tuple(gimbal.current)
                for gimbal in self.gimbals.values() for member in gimbal.members}

    def allocatable(self) -> set[str]:
        """Return the engines the body-wrench allocation may throttle."""
        return {name for name, engine in self.engines.items()
                if engine.operational and not engine.decides_thrust}

    def fields(self, name: str) -> dict:
        """Return an engine's state fields (``throttle``, ``thrust`` only if decided here)."""
        engine = self.engines[name]
        gimbal = self.gimbal_of(name)
        winner = self._winner(gimbal) if gimbal is not None else None
        axes = winner.values['axes'] if winner is not None else NEUTRAL
        fields = {
            'enabled': engine.ignited, 'operational': engine.operational,
            'flameout': engine.flameout, 'maxThrust': engine.max_thrust,
            'commandActive': engine.thrust is not None or engine.gimbal is not None,
            'gimbalAvailable': gimbal is not None, 'gimbalCommandActive': winner is not None,
            'gimbalPitch': axes[0], 'gimbalYaw': axes[1], 'gimbalRoll': axes[2]}
        if engine.decides_thrust:
            fields['throttle'] = engine.throttle
            fields['thrust'] = engine.output
        return fields
