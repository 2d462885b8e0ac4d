"""Burning propellant: what the engines and RCS of one physics step take from the tanks.

The game's rule: each engine and RCS module burns thrust / (Isp × g0) kg/s: LiquidFuel and
Oxidizer in KSP's mixture (0.9 : 1.1 by units), SolidFuel for a throttle-locked engine,
MonoPropellant for RCS, drawn from any part that holds it (full crossfeed), first part first.

Pure steps, state in and state out: ``flows`` (the units of each resource a step burns),
``drain`` (the part resources after taking them) and ``step`` (both). ``burn`` applies a
step to a vessel and recomputes its mass properties, so the centre of mass moves as the
tanks drain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pylon_protocol import names

from pylon_sim.game.vessel import mass_properties, Module, RESOURCE_DENSITY, VesselSpec

if TYPE_CHECKING:
    from pylon_sim.game.world import SimVessel

G0 = 9.80665                       # m/s², KSP's standard gravity for Isp
#: propellant units an engine burns, in KSP's mixture (LiquidFuel : Oxidizer = 0.9 : 1.1)
LIQUID_MIXTURE = (('LiquidFuel', 0.9), ('Oxidizer', 1.1))
RCS_MIXTURE = (('MonoPropellant', 1.0),)
SOLID_MIXTURE = (('SolidFuel', 1.0),)

Resources = Mapping[tuple[int, str], float]    # (part index, resource) -> units


def mixture(module: Module) -> tuple[tuple[str, float], ...]:
    """Return the (resource, share) a thrusting engine or RCS module burns."""
    if module.kind == 'rcs':
        return RCS_MIXTURE
    if module.get('throttle_locked'):
        return SOLID_MIXTURE
    return LIQUID_MIXTURE


def flows(spec: VesselSpec, engine_thrust: Mapping[str, float],
          rcs_thrust: Mapping[str, float], dt: float) -> dict[str, float]:
    """Return the units of each resource that ``dt`` seconds at this thrust burn.

    ``engine_thrust`` and ``rcs_thrust`` hold N per actuator id (an RCS module's summed
    over its nozzles); an actuator without thrust or without an Isp burns nothing.
    """
    out: dict[str, float] = {}
    for part in spec.parts:
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
            shares = mixture(module)
            total = sum(share for _, share in shares)
            for resource, share in shares:
                density = RESOURCE_DENSITY[resource]
                out[resource] = out.get(resource, 0.0) + kilograms * share / total / density
    return out


def drain(resources: Resources, burned: Mapping[str, float]) -> dict[tuple[int, str], float]:
    """Return the part resources after taking ``burned`` units, first part first.

    What the parts do not hold is not taken (a tank runs dry; nothing goes negative).
    """
    out = dict(resources)
    for resource, units in burned.items():
        for key in sorted(k for k in out if k[1] == resource):
            if units <= 0.0:
                break
            taken = min(out[key], units)
            out[key] -= taken
            units -= taken
    return out


def step(spec: VesselSpec, resources: Resources, engine_thrust: Mapping[str, float],
         rcs_thrust: Mapping[str, float], dt: float
         ) -> tuple[dict[tuple[int, str], float], bool]:
    """Return the part resources after one physics step of burning and whether any burned."""
    burned = flows(spec, engine_thrust, rcs_thrust, dt) if engine_thrust or rcs_thrust else {}
    return drain(resources, burned), bool(burned)


def burn(vessel: SimVessel, engine_thrust: Mapping[str, float],
         rcs_thrust: Mapping[str, float], dt: float) -> bool:
    """Consume the propellant of one physics step; return whether any was burned.

    The vessel's resources change in place and its mass properties follow.
    """
    if not engine_thrust and not rcs_thrust:
        return False
    resources, burned = step(vessel.spec, vessel.resources, engine_thrust, rcs_thrust, dt)
    if burned:
        vessel.resources.update(resources)
        vessel.mass = mass_properties(vessel.spec, vessel.resources)
    return burned
