"""What acts on the active vessel in one physics step: the output side of the vehicle manager.

``Actuation.step`` turns what is in force into the force and torque on the vessel
(base_link): a body wrench through the safety filter (``safety``) and the allocation
(``allocation``), or else the stock flight inputs (``flight_control``); plus the engines
typed overrides drive (through their gimbals) and the stock SAS's reaction-wheel torque.
With neither a wrench nor flight inputs in force the commanded output stops at once,
without a slew ramp (the fail-safe path). It keeps what the last step gave per actuator
(engine and RCS thrust, wheel and SAS torque) for the state packets, the propellant burned
and the push audit. ``AllocatorCache`` keeps the allocator of the current geometry.

``achieved`` (``WrenchOutcome``) is the engine and RCS wrench of the *previous* step, as
the mod reports it (reaction wheels excluded).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pylon_sim.game.world import SimVessel
from pylon_sim.mod import allocation, safety
from pylon_sim.mod.flight_control import FlightCommand, stock_input_wrench
from pylon_sim.mod.safety import SafetyLimits
from pylon_sim.mod.typed_actuators import TypedActuators

ZERO = np.zeros(3)
SAS_TIME_CONSTANT_SEC = 1.0        # the stock SAS damps body rates with this time constant
EMPTY = 1e-9
Wrench = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class WrenchOutcome:
    """What one step made of the body wrench in force (its ``pylon_wrench_status``)."""

    reason: str            # 'accepted', or the safety filter's reasons joined by commas
    allocated: Wrench
    achieved: Wrench       # engine + RCS of the previous step


def module_thrust(nozzles: list[allocation.Nozzle], thrust) -> dict[str, float]:
    """Return the thrust (N) of each RCS module, summed over its nozzles."""
    out: dict[str, float] = {}
    for nozzle, value in zip(nozzles, thrust):
        out[nozzle.module] = out.get(nozzle.module, 0.0) + float(value)
    return out


def typed_engines(typed: TypedActuators, engines: list[allocation.Engine]
                  ) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """Return the force, torque and thrust of the engines a typed override drives.

    Each acts through its gimbal at the gimbal's current inputs, about the engine's own
    mounting axes (``allocation.engine_wrench``, ``allocation.gimbal_direction``): the
    same geometry the allocation uses.
    """
    force, torque = np.zeros(3), np.zeros(3)
    thrust = typed.engine_thrust()
    gimbals = typed.engine_gimbal()
    for engine in engines:
        value = thrust.get(engine.id, 0.0)
        if value <= 0.0:
            continue
        f, t = allocation.engine_wrench(engine, value, gimbals.get(engine.id, (0.0, 0.0, 0.0)))
        force += f
        torque += t
    return force, torque, {k: v for k, v in thrust.items() if v > 0.0}


class AllocatorCache:
    """The allocator of a vessel's current geometry and settings, rebuilt when they change."""

    def __init__(self, limits: SafetyLimits) -> None:
        """Start empty; the allocator scales by the safety limits."""
        self.limits = limits
        self._key = None
        self._allocator: allocation.Allocator | None = None
        self._engines: list[allocation.Engine] = []     # every engine, with the allocator
        self._ids: tuple = (None, ([], []))             # (spec, (engine ids, wheel ids))

    def get(self, vessel: SimVessel, typed: TypedActuators
            ) -> tuple[allocation.Allocator, list[allocation.Engine]]:
        """Return the allocator of the current geometry and settings, and every engine.

        Every engine's geometry comes along because typed overrides drive some. Typed RCS
        settings apply; engines a typed override drives are left out of the allocation.
        Rebuilt only when the vessel, its centre of mass (to 1 cm) or those settings
        change.
        """
        settings = {name: dict(values) for name, values in typed.rcs_settings().items()}
        totals = vessel.spec.resource_totals(vessel.resources)
        monopropellant = totals.get('MonoPropellant', 0.0) > EMPTY
        for values in settings.values():
            values['has_propellant'] = monopropellant
        allocatable = typed.allocatable_engines()
        engine_ids, wheel_ids = self._actuator_ids(vessel)
        for engine in engine_ids:
            if engine not in allocatable:
                settings[engine] = {'operational': False}
        if totals.get('ElectricCharge', 0.0) <= EMPTY:     # wheels need ElectricCharge
            for wheel in wheel_ids:
                settings[wheel] = {'enabled': False}
        key = (vessel.vessel_id, tuple(np.round(vessel.mass.com, 2)),
               repr(sorted((k, sorted(v.items())) for k, v in settings.items())))
        if self._key != key:
            nozzles, engines, wheels = allocation.geometry(vessel.spec, vessel.mass.com,
                                                           settings)
            self._allocator = allocation.Allocator(
                nozzles, engines, wheels, force_scale=self.limits.max_force_n,
                torque_scale=self.limits.max_torque_nm)
            self._key = key
            self._engines = engines     # where every engine sits (thrust 0 if not allocatable)
        return self._allocator, self._engines

    def _actuator_ids(self, vessel: SimVessel) -> tuple[list[str], list[str]]:
        """Return the ids of a vessel's engines and reaction wheels (kept per spec)."""
        spec, ids = self._ids
        if spec is not vessel.spec:
            _, engines, wheels = allocation.geometry(vessel.spec, vessel.mass.com)
            ids = ([e.id for e in engines], [w.id for w in wheels])
            self._ids = (vessel.spec, ids)
        return ids


class Actuation:
    """The force and torque of each physics step, and what each actuator gave in it."""

    def __init__(self, limits: SafetyLimits) -> None:
        """Start with zero outputs and a fresh safety filter."""
        self.limits = limits
        self.allocators = AllocatorCache(limits)
        self.safety = safety.zero_state()
        self.measured: Wrench = (ZERO, ZERO)    # engine + RCS wrench of the last step
        self.applied: Wrench = (ZERO, ZERO)     # everything acting now, wheels included
        self.last_allocation: allocation.Allocation | None = None
        self.wheel_torque = ZERO                # N·m the reaction wheels gave, last step
        self.rcs_thrust: dict[str, float] = {}      # N per RCS module, last step
        self.engine_thrust: dict[str, float] = {}   # N per engine, last step
        self.sas_torque = ZERO                      # N·m, the stock SAS's, last step
        # clock of the last fail-safe stop: a step with neither a wrench nor flight inputs in
        # force after one that applied a wrench (what acts stays: stock engines, the SAS)
        self.zeroed_at: float | None = None
        self._fixed: Wrench = (ZERO, ZERO)      # what no command decides, last step

    def restart(self) -> None:
        """Start the safety filter afresh (another vessel, a new runtime session)."""
        self.safety = safety.zero_state()

    def rest(self) -> None:
        """Note that the wheels give nothing until the next step (each frame, paused too)."""
        self.wheel_torque = ZERO

    def step(self, vessel: SimVessel, typed: TypedActuators, wanted: Wrench | None,
             flight: FlightCommand | None, sas_suppressed: bool, now: float,
             dt: float) -> WrenchOutcome | None:
        """Act for one physics step on the body wrench ``wanted`` or the ``flight`` inputs.

        Returns what became of ``wanted`` (None without one); ``applied`` holds the force
        and torque on the vessel afterwards.
        """
        allocator, engines = self.allocators.get(vessel, typed)
        fixed = typed_engines(typed, engines)
        self._fixed = fixed[:2]
        self.sas_torque = self._sas(vessel, allocator, sas_suppressed)
        if wanted is None:
            self._without_wrench(allocator, fixed, flight, now, dt)
            return None
        return self._with_wrench(vessel, allocator, fixed, wanted, dt)

    def quiet(self) -> bool:
        """Return whether the last step pushed nothing commanded.

        Quiet: the engine and RCS wrench is what no command decides (stock and
        throttle-locked engines) and the reaction wheels gave only the SAS's torque.
        """
        return (np.array_equal(self.measured[0], self._fixed[0])
                and np.array_equal(self.measured[1], self._fixed[1])
                and np.array_equal(self.wheel_torque, self.sas_torque))

    def _without_wrench(self, allocator: allocation.Allocator, fixed: tuple,
                        flight: FlightCommand | None, now: float, dt: float) -> None:
        """Act without a body wrench: typed engines, SAS and the stock flight inputs."""
        force, torque, self.engine_thrust = fixed
        self.safety = safety.idle(self.safety, self.limits, dt)
        wheel = ZERO
        self.rcs_thrust = {}
        if flight is None:
            if np.any(self.applied[0]) or np.any(self.applied[1]):
                self.zeroed_at = now
        else:
            stock = stock_input_wrench(flight.pitch, flight.yaw, flight.roll, allocator)
            force, torque = force + stock.force, torque + stock.torque - stock.wheel_torque
            wheel = stock.wheel_torque
            self.rcs_thrust = module_thrust(allocator.nozzles, stock.nozzle_thrust)
        self.last_allocation = None
        self.measured = (force, torque)
        self.wheel_torque = wheel + self.sas_torque
        self.applied = (force, torque + self.wheel_torque)

    def _with_wrench(self, vessel: SimVessel, allocator: allocation.Allocator, fixed: tuple,
                     wanted: Wrench, dt: float) -> WrenchOutcome:
        """Act on the body wrench in force: safety filter, then allocation."""
        fixed_force, fixed_torque, fixed_thrust = fixed
        result = safety.step(self.safety, self.limits, wanted[0], wanted[1],
                             vessel.state.body_rate, dt)
        self.safety = result.state
        alloc = allocator.solve(result.force, result.torque)
        thrust = np.array([e.max_thrust for e in allocator.engines]) * alloc.engine_throttle
        force, torque = allocation.wrench_of(allocator.nozzles, alloc.nozzle_thrust,
                                             allocator.engines, thrust)
        measured = (force + fixed_force, torque + fixed_torque)
        achieved, self.measured = self.measured, measured
        self.wheel_torque = alloc.wheel_torque + self.sas_torque
        self.applied = (measured[0], measured[1] + self.wheel_torque)
        self.last_allocation = alloc
        self.engine_thrust = {**{e.id: float(t) for e, t in zip(allocator.engines, thrust)
                                 if t > 0.0}, **fixed_thrust}
        self.rcs_thrust = module_thrust(allocator.nozzles, alloc.nozzle_thrust)
        return WrenchOutcome(','.join(result.reasons) or 'accepted',
                             (alloc.force, alloc.torque), achieved)

    def _sas(self, vessel: SimVessel, allocator: allocation.Allocator,
             suppressed: bool) -> np.ndarray:
        """Return the torque of the stock SAS (zero while off or suppressed).

        It is on when the player's switch is on and no lease or emergency stop suppresses
        it, and damps the body rate with the reaction wheels: ``-I ω / τ`` with τ =
        ``SAS_TIME_CONSTANT_SEC``, each axis within the wheels' capacity.
        """
        if not vessel.sas or suppressed:
            return ZERO
        capacity = sum(wheel.max_torque for wheel in allocator.wheels)
        wanted = -(vessel.mass.inertia @ vessel.state.body_rate) / SAS_TIME_CONSTANT_SEC
        return np.clip(wanted, -capacity, capacity)

    def fields(self, vessel: SimVessel, typed: TypedActuators, actuator_id: str) -> dict:
        """Return the state fields the control decides for one actuator (merge them)."""
        try:
            fields = typed.state_fields(actuator_id)
        except KeyError:
            return {}
        if vessel.wheel_state is not None and actuator_id in vessel.wheel_state.names:
            fields.update(vessel.wheel_state.fields(actuator_id))   # what the wheel does
        if actuator_id in self.engine_thrust or actuator_id.startswith('engine_'):
            thrust = self.engine_thrust.get(actuator_id, 0.0)
            fields.setdefault('thrust', float(thrust))
            maximum = fields.get('maxThrust') or 0.0
            fields.setdefault('throttle', min(1.0, thrust / maximum) if maximum > 0 else 0.0)
        if actuator_id in self.rcs_thrust:
            fields['thrust'] = float(self.rcs_thrust[actuator_id])
        return fields

    def status(self) -> dict:
        """Return the output fields of the admin status (JSON-ready)."""
        return {'sas_torque': [float(v) for v in self.sas_torque],
                'applied_force': [float(v) for v in self.applied[0]],
                'applied_torque': [float(v) for v in self.applied[1]],
                'zeroed_at': self.zeroed_at,
                'wheel_torque': [float(v) for v in self.wheel_torque]}
