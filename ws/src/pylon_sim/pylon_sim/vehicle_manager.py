"""The mod's vehicle manager for the active vessel: authority, body wrench, safety, allocation.

``VehicleManager`` is what the mod's vehicle manager decides, frame by frame:

- ``command(packet, vessel, now)`` takes one decoded command datagram (already past the
  runtime-session check) and returns the state packets it answers with: every authority
  command gets a ``pylon_control_authority_state`` with the outcome as ``reason``; a
  refused body wrench a ``pylon_wrench_status`` with ``accepted`` false; a refused formal
  actuator command an authority state carrying the failure reason.
- ``tick(vessel, now, dt)`` runs once per physics step: lease expiry, wrench timeout,
  emergency stop, then the safety filter (``safety``) and the allocation (``allocation``)
  of the current wrench. It returns the force and torque acting on the vessel (base_link:
  the modelled RCS nozzle and engine thrust plus the reaction-wheel torque) and the packets
  to send: a ``pylon_wrench_status`` after each tick that allocated an accepted wrench.

``achieved`` in the wrench status is rebuilt from the engine and RCS thrust of the
*previous* physics tick, as the mod does (reaction wheels excluded). Times (``now``) are
the simulator's wall clock; leases, timeouts and slew limits run on it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
import math

import numpy as np
from pylon_protocol import names, packets, rotations
from pylon_protocol.packets import (
    MAX_COMMAND_TIMEOUT_SEC,
    MIN_COMMAND_TIMEOUT_SEC,
    MOD_DEFAULT_COMMAND_TIMEOUT_SEC,
)

from pylon_sim import allocation, safety
from pylon_sim.authority import ControlAuthority
from pylon_sim.safety import SafetyLimits
from pylon_sim.typed_actuators import ACCEPTED, TypedActuators
from pylon_sim.vessel import mass_properties, RESOURCE_DENSITY
from pylon_sim.world import SimVessel

ZERO = np.zeros(3)
Packet = tuple[str, dict]


@dataclass(frozen=True)
class EngineGeometry:
    """An engine's place, thrust axis and gimbal range in base_link."""

    id: str
    position: np.ndarray
    direction: np.ndarray
    gimbal_range_deg: float

    @classmethod
    def of(cls, engine: allocation.Engine, spec) -> EngineGeometry:
        """Return the geometry of an allocation engine, with its module's gimbal range."""
        span = 0.0
        for part in spec.parts:
            for module in part.modules_of('engine'):
                if names.actuator_name('engine', part.persistent_id, part.flight_id,
                                       module.module_index) == engine.id:
                    span = float(module.get('gimbal_range_deg', 0.0))
        return cls(engine.id, engine.position, engine.direction, span)


G0 = 9.80665                       # m/s², KSP's standard gravity for Isp
SAS_TIME_CONSTANT_SEC = 1.0        # the stock SAS damps body rates with this time constant
EMPTY = 1e-9
# propellant units an engine burns, in KSP's mixture (LiquidFuel : Oxidizer = 0.9 : 1.1)
LIQUID_MIXTURE = (('LiquidFuel', 0.9), ('Oxidizer', 1.1))


def _draw(vessel: SimVessel, resource: str, units: float) -> None:
    """Take ``units`` of a resource from the vessel's parts, first part first."""
    for key in sorted(k for k in vessel.resources if k[1] == resource):
        if units <= 0.0:
            return
        taken = min(vessel.resources[key], units)
        vessel.resources[key] -= taken
        units -= taken


def burn(vessel: SimVessel, engine_thrust: dict[str, float], rcs_thrust: dict[str, float],
         dt: float) -> bool:
    """Consume the propellant of one physics step; return whether any was burned.

    Mass flow = thrust / (Isp × g0) for each engine (LiquidFuel and Oxidizer in KSP's
    mixture; SolidFuel for a throttle-locked engine) and each RCS module (MonoPropellant),
    drawn from any part that holds it (full crossfeed). The vessel's mass properties
    follow, so the centre of mass moves as the tanks drain.
    """
    flows: dict[str, float] = {}
    for part in vessel.spec.parts:
        for module in part.modules:
            if module.kind not in ('engine', 'rcs'):
                continue
            ident = names.actuator_name(module.kind, part.persistent_id, part.flight_id,
                                        module.module_index)
            thrust = (engine_thrust if module.kind == 'engine' else rcs_thrust).get(ident, 0.0)
            isp = float(module.get('isp', 0.0) or 0.0)
            if thrust <= 0.0 or isp <= 0.0:
                continue
            kilograms = thrust / (isp * G0) * dt
            if module.kind == 'rcs':
                mixture = (('MonoPropellant', 1.0),)
            elif module.get('throttle_locked'):
                mixture = (('SolidFuel', 1.0),)
            else:
                mixture = LIQUID_MIXTURE
            total = sum(share for _, share in mixture)
            for resource, share in mixture:
                density = RESOURCE_DENSITY[resource]
                flows[resource] = flows.get(resource, 0.0) + \
                    kilograms * share / total / density
    for resource, units in flows.items():
        _draw(vessel, resource, units)
    if flows:
        vessel.mass = mass_properties(vessel.spec, vessel.resources)
    return bool(flows)


def clamp_timeout(value: object) -> float:
    """Return a command timeout as the mod applies it: 0.05–10 s, 0.5 s if unusable."""
    if not isinstance(value, int | float) or isinstance(value, bool) \
            or not math.isfinite(value) or value <= 0.0:
        return MOD_DEFAULT_COMMAND_TIMEOUT_SEC
    return min(max(float(value), MIN_COMMAND_TIMEOUT_SEC), MAX_COMMAND_TIMEOUT_SEC)


def wire_wrench(force, torque) -> dict:
    """Return a wrench as the wire writes it."""
    return {'force': [float(v) for v in force], 'torque': [float(v) for v in torque]}


@dataclass
class WrenchCommand:
    """The accepted body wrench in force until its timeout."""

    identity: dict
    force: np.ndarray
    torque: np.ndarray
    expires: float


class VehicleManager:
    """Authority, the body wrench, the safety filter and the allocation of one game."""

    def __init__(self, limits: SafetyLimits | None = None) -> None:
        """Start unowned, with no command and zero outputs."""
        self.limits = limits or SafetyLimits()
        self.authority = ControlAuthority()
        self.safety = safety.zero_state()
        self.wrench: WrenchCommand | None = None
        self.measured = (ZERO, ZERO)          # engine + RCS wrench of the last tick
        self.applied = (ZERO, ZERO)           # everything acting now, wheels included
        self.last_allocation: allocation.Allocation | None = None
        self.last_reason = 'unowned'          # outcome of the last authority event
        self._allocator_key = None
        self._allocator_cache: allocation.Allocator | None = None
        self.typed_by_vessel: dict[str, TypedActuators] = {}
        self.typed_refused: Counter = Counter()     # typed commands the vessel refused
        self.rcs_thrust: dict[str, float] = {}      # N per RCS module, last tick
        self.engine_thrust: dict[str, float] = {}   # N per engine, last tick
        self.sas_torque = ZERO                      # N·m, the stock SAS's, last tick
        self.wrench_received_at: float | None = None   # clock of the last accepted wrench
        self.zeroed_at: float | None = None   # clock at which the applied wrench became zero
        self.authority_command_at: float | None = None  # clock of the last authority command

    # -- commands -------------------------------------------------------------------------
    def command(self, packet: dict, vessel: SimVessel, now: float) -> list[Packet]:
        """Apply one command; return the state packets that answer it."""
        kind = packet['type']
        if kind == 'pylon_control_authority_command':
            self.authority_command_at = now
            decision = self.authority.command(packet, vessel.vessel_id, now)
            if self.authority.emergency_stop or not self.authority.owned:
                self._drop_commands()
                self._release_overrides()
            return [self.authority_state(vessel, now, decision.reason)]
        decision = self.authority.check(packet, vessel.vessel_id, now)
        if kind == 'pylon_body_wrench_command':
            if not decision.accepted:
                return [self._status(packet, False, decision.reason, vessel)]
            self.wrench = WrenchCommand(
                identity={k: packet[k] for k in ('vesselId', 'controllerId', 'leaseId',
                                                 'sequence')},
                force=np.array(packet['force'], dtype=float),
                torque=np.array(packet['torque'], dtype=float),
                expires=now + clamp_timeout(packet.get('timeoutSeconds')))
            self.wrench_received_at = now
            return []
        if not decision.accepted:
            return [self.authority_state(vessel, now, decision.reason)]
        typed = self.typed(vessel)
        if kind == 'pylon_docking_port_command':
            result = typed.docking(packet, now)
        elif kind in ('pylon_actuator_command', 'pylon_motor_command'):
            result = typed.command(packet, now)
        else:                                   # flight control and batches: not modelled
            result = 'unsupported_command'
        if result != ACCEPTED:
            self.typed_refused[result] += 1
        return []

    def typed(self, vessel: SimVessel) -> TypedActuators:
        """Return the typed actuator state of a vessel (kept per vessel)."""
        found = self.typed_by_vessel.get(vessel.vessel_id)
        if found is None:
            found = self.typed_by_vessel[vessel.vessel_id] = TypedActuators(vessel.spec)
        return found

    def authority_state(self, vessel: SimVessel, now: float, reason: str) -> Packet:
        """Return the authority state packet with ``reason`` (remembered for the 10 Hz one)."""
        self.last_reason = reason
        return 'pylon_control_authority_state', self.authority.state(
            vessel.vessel_id, vessel.spec.name, now, reason)

    def _drop_commands(self) -> None:
        self.wrench = None

    def _release_overrides(self) -> None:
        """End every typed override (lease gone, emergency stop, vessel switch)."""
        for typed in self.typed_by_vessel.values():
            typed.release_all()

    # -- events ---------------------------------------------------------------------------
    def vessel_changed(self, vessel: SimVessel, now: float) -> list[Packet]:
        """End the lease when another vessel is active (an emergency stop stays latched)."""
        self._drop_commands()
        self._release_overrides()
        self.safety = safety.zero_state()
        reason = self.authority.vessel_changed(now)
        return [self.authority_state(vessel, now, reason or 'active_vessel_changed')]

    def session_changed(self, vessel: SimVessel, now: float) -> list[Packet]:
        """End the lease after a runtime reset of the same vessel."""
        self._drop_commands()
        self._release_overrides()
        self.safety = safety.zero_state()
        reason = self.authority.session_changed(now)
        return [self.authority_state(vessel, now, reason or 'runtime_session_changed')]

    # -- physics tick ---------------------------------------------------------------------
    def expire(self, vessel: SimVessel, now: float) -> list[Packet]:
        """End a lease whose time ran out (also while paused: leases run on wall time)."""
        expired = self.authority.expire(now)
        if not expired:
            return []
        self._drop_commands()
        self._release_overrides()
        return [self.authority_state(vessel, now, expired)]

    def tick(self, vessel: SimVessel, now: float, dt: float
             ) -> tuple[np.ndarray, np.ndarray, list[Packet]]:
        """Run one physics step of control; return (force, torque, packets)."""
        out = self.expire(vessel, now)
        command = self.wrench
        if command is not None and now >= command.expires:
            out.append(self._status(command.identity, False, 'command_timeout', vessel,
                                    command=command))
            self.wrench = command = None
        if self.authority.emergency_stop:
            self.wrench = command = None
            self._release_overrides()
        typed = self.typed(vessel)
        typed.tick(now, dt, vessel.spec.resource_totals(vessel.resources))
        allocator, engines = self._allocator(vessel, typed)
        fixed_force, fixed_torque, fixed_thrust = self._typed_engines(typed, engines)
        if command is None:
            # no command in force (none yet, timed out, lease gone, emergency stop): the
            # output stops at once, without a slew ramp: the fail-safe path
            self.safety = safety.idle(self.safety, self.limits, dt)
            self._apply_zero(now)
            self.measured = (fixed_force, fixed_torque)
            self.sas_torque = self._sas(vessel, allocator)
            self.applied = (fixed_force, fixed_torque + self.sas_torque)
            self.engine_thrust, self.rcs_thrust = fixed_thrust, {}
            burn(vessel, self.engine_thrust, self.rcs_thrust, dt)
            return self.applied[0], self.applied[1], out
        result = safety.step(self.safety, self.limits, command.force, command.torque,
                             vessel.state.body_rate, dt)
        self.safety = result.state
        alloc = allocator.solve(result.force, result.torque)
        thrust = np.array([e.max_thrust for e in allocator.engines]) * alloc.engine_throttle
        force, torque = allocation.wrench_of(allocator.nozzles, alloc.nozzle_thrust,
                                             allocator.engines, thrust)
        measured = (force + fixed_force, torque + fixed_torque)
        achieved, self.measured = self.measured, measured
        self.sas_torque = self._sas(vessel, allocator)
        self.applied = (measured[0], measured[1] + alloc.wheel_torque + self.sas_torque)
        self.last_allocation = alloc
        self.engine_thrust = {**{e.id: float(t) for e, t in zip(allocator.engines, thrust)
                                 if t > 0.0}, **fixed_thrust}
        self.rcs_thrust = {}
        for nozzle, value in zip(allocator.nozzles, alloc.nozzle_thrust):
            self.rcs_thrust[nozzle.module] = self.rcs_thrust.get(nozzle.module, 0.0) + float(value)
        burn(vessel, self.engine_thrust, self.rcs_thrust, dt)
        reason = ','.join(result.reasons) or 'accepted'
        out.append(self._status(command.identity, True, reason, vessel, command=command,
                                allocated=(alloc.force, alloc.torque), achieved=achieved))
        return self.applied[0], self.applied[1], out

    def _sas(self, vessel: SimVessel, allocator: allocation.Allocator) -> np.ndarray:
        """Return the torque of the stock SAS (zero while off or suppressed).

        It is on when the player's switch is on and no lease or emergency stop suppresses
        it, and damps the body rate with the reaction wheels: ``-I ω / τ`` with τ =
        ``SAS_TIME_CONSTANT_SEC``, each axis within the wheels' capacity.
        """
        if not vessel.sas or self.authority.sas_suppressed:
            return ZERO
        capacity = sum(wheel.max_torque for wheel in allocator.wheels)
        wanted = -(vessel.mass.inertia @ vessel.state.body_rate) / SAS_TIME_CONSTANT_SEC
        return np.clip(wanted, -capacity, capacity)

    def _typed_engines(self, typed: TypedActuators, engines: list
                       ) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
        """Return the force, torque and thrust of the engines a typed override drives.

        The thrust acts along the engine's axis turned by its gimbal: pitch input turns it
        about base_link +Y, yaw about +Z, each by input × the engine's gimbal range
        (a single engine on the axis has no roll authority).
        """
        force, torque = np.zeros(3), np.zeros(3)
        thrust = typed.engine_thrust()
        gimbals = typed.engine_gimbal()
        for engine in engines:
            value = thrust.get(engine.id, 0.0)
            if value <= 0.0:
                continue
            pitch, yaw, _ = gimbals.get(engine.id, (0.0, 0.0, 0.0))
            span = math.radians(engine.gimbal_range_deg)
            turn = rotations.to_matrix(rotations.multiply(
                rotations.from_axis_angle((0.0, 1.0, 0.0), pitch * span),
                rotations.from_axis_angle((0.0, 0.0, 1.0), yaw * span)))
            applied = value * (turn @ engine.direction)
            force += applied
            torque += np.cross(engine.position, applied)
        return force, torque, {k: v for k, v in thrust.items() if v > 0.0}

    def _allocator(self, vessel: SimVessel, typed: TypedActuators
                   ) -> tuple[allocation.Allocator, list[EngineGeometry]]:
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
        _, all_engines, _ = allocation.geometry(vessel.spec, vessel.mass.com)
        for engine in all_engines:
            if engine.id not in allocatable:
                settings[engine.id] = {'operational': False}
        key = (vessel.vessel_id, tuple(np.round(vessel.mass.com, 2)),
               repr(sorted((k, sorted(v.items())) for k, v in settings.items())))
        if self._allocator_key != key:
            nozzles, engines, wheels = allocation.geometry(vessel.spec, vessel.mass.com,
                                                           settings)
            self._allocator_cache = allocation.Allocator(
                nozzles, engines, wheels, force_scale=self.limits.max_force_n,
                torque_scale=self.limits.max_torque_nm)
            self._allocator_key = key
            self._engine_geometry = [EngineGeometry.of(e, vessel.spec) for e in all_engines]
        return self._allocator_cache, self._engine_geometry

    def actuator_fields(self, vessel: SimVessel, actuator_id: str) -> dict:
        """Return the state fields the control decides for one actuator (merge them)."""
        typed = self.typed(vessel)
        try:
            fields = typed.state_fields(actuator_id)
        except KeyError:
            return {}
        if actuator_id in self.engine_thrust or actuator_id.startswith('engine_'):
            thrust = self.engine_thrust.get(actuator_id, 0.0)
            fields.setdefault('thrust', float(thrust))
            maximum = fields.get('maxThrust') or 0.0
            fields.setdefault('throttle', min(1.0, thrust / maximum) if maximum > 0 else 0.0)
        if actuator_id in self.rcs_thrust:
            fields['thrust'] = float(self.rcs_thrust[actuator_id])
        return fields

    def status(self) -> dict:
        """Return the control state for the admin status (JSON-ready)."""
        owner = self.authority.owner
        return {
            'owner': list(owner) if owner else None,
            'emergency_stop': self.authority.emergency_stop,
            'sas_suppressed': self.authority.sas_suppressed,
            'sas_torque': [float(v) for v in self.sas_torque],
            'applied_force': [float(v) for v in self.applied[0]],
            'applied_torque': [float(v) for v in self.applied[1]],
            'wrench_received_at': self.wrench_received_at, 'zeroed_at': self.zeroed_at,
            'authority_command_at': self.authority_command_at,
        }

    def _apply_zero(self, now: float) -> None:
        if np.any(self.applied[0]) or np.any(self.applied[1]):
            self.zeroed_at = now
        self.measured = (ZERO, ZERO)
        self.applied = (ZERO, ZERO)
        self.last_allocation = None

    def _status(self, identity: dict, accepted: bool, reason: str, vessel: SimVessel, *,
                command: WrenchCommand | None = None, allocated=None, achieved=None) -> Packet:
        """Return a ``pylon_wrench_status`` (requested echoes the command)."""
        if command is not None:
            requested = (command.force, command.torque)
        else:
            requested = (np.array(identity.get('force', ZERO), dtype=float),
                         np.array(identity.get('torque', ZERO), dtype=float))
            if not (np.all(np.isfinite(requested[0])) and np.all(np.isfinite(requested[1]))):
                requested = (ZERO, ZERO)
        allocated = allocated or (ZERO, ZERO)
        achieved = achieved or (ZERO, ZERO)
        r = allocation.ratios(requested, allocated, achieved, self.limits.max_force_n,
                              self.limits.max_torque_nm)
        sequence = identity.get('sequence', 0)
        return 'pylon_wrench_status', {
            'vesselId': vessel.vessel_id, 'controllerId': identity.get('controllerId', ''),
            'leaseId': identity.get('leaseId', ''),
            'sequence': sequence if isinstance(sequence, int) and sequence >= 0 else 0,
            'accepted': accepted, 'reason': reason,
            'requested': wire_wrench(*requested), 'allocated': wire_wrench(*allocated),
            'achieved': wire_wrench(*achieved),
            'allocationResidual': wire_wrench(*r['allocationResidual']),
            'trackingResidual': wire_wrench(*r['trackingResidual']),
            'saturationRatio': float(r['saturationRatio']),
            'trackingErrorRatio': float(r['trackingErrorRatio']),
            'saturated': bool(r['saturated']),
            'achievedQuality': packets.ACHIEVED_QUALITY,
        }
