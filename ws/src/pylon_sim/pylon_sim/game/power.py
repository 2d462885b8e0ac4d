"""ElectricCharge: where a vessel stores it, what makes it and what uses it.

Storage
    ElectricCharge (EC) is a resource like any other: each part holds an amount up to its
    capacity (``resources: {ElectricCharge: [amount, capacity]}`` in the scenario), in
    ``SimVessel.resources``. Charge fills the parts in part order; a draw empties them in
    part order. ``electric_charge``/``electric_capacity`` sum them (the vessel's
    ``pylon_vehicle_health``; ``part_charge`` gives one part's, for
    ``pylon_part_thermal_state``).

Solar panels (module ``solar_panel``)
    A fixed panel as KSP's OX-STAT: ``charge_rate`` EC/s (default
    ``OX_STAT_CHARGE_RATE``, 0.35, the OX-STAT's rating) with the Sun on its ``normal``
    (part axes, default part +Z) at Kerbin's distance from the Sun. The output is
    ``charge_rate × max(0, cos θ) × (d_Kerbin / d)²`` with θ the angle between the normal
    and the Sun, and zero while a body's sphere hides the Sun's centre (umbra only, no
    penumbra; ``environment.sun_exposure``). No temperature efficiency curve, no
    deployment, no sun tracking.

Reaction wheels (module ``reaction_wheel``)
    KSP draws a wheel's ElectricCharge in proportion to the torque it delivers: at full
    torque about one axis it draws its ``electric_charge_per_second`` (default
    ``WHEEL_EC_PER_KNM`` × its torque in kN·m: 0.03 EC/s per kN·m, the Advanced Inline
    Stabilizer's 0.45 EC/s at 15 kN·m), and the draws of the three axes add. The wheels
    of a vessel share the torque in proportion to their capacity, so the vessel draws
    ``Σ rate × Σ_axes |τ_axis| / Σ torque``. Wheels deliver no torque while the vessel
    holds no ElectricCharge (``vehicle_manager``).

Rover wheels (module ``wheel``)
    A wheel motor draws in proportion to the torque it delivers, as KSP's
    ``resourceConsumptionRate``: ``electric_charge_per_second`` × |drive torque| /
    ``max_drive_torque`` (``rover_wheel_draw_rate``; defaults in ``wheels.SETTINGS``, 1 EC/s
    at full torque). Without ElectricCharge the motors give no torque (``wheels.Commands``);
    brakes, steering and suspension need none.

Other consumers: the star tracker draws its own (``sensing``); servos need some
ElectricCharge to move but draw none here; RCS and engines use none.

``step(resources, spec, flows, dt)`` is pure: it returns the new resources after ``dt`` s
of production and consumption (production first, so a panel can feed a consumer in the
same step).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from pylon_protocol import rotations

from pylon_sim.game.vessel import Module, VesselSpec

ELECTRIC_CHARGE = 'ElectricCharge'
SOLAR_PANEL = 'solar_panel'
REACTION_WHEEL = 'reaction_wheel'
#: EC/s of KSP's OX-STAT photovoltaic panel facing the Sun at Kerbin's distance.
OX_STAT_CHARGE_RATE = 0.35
#: EC/s per kN·m of torque at full input about one axis: KSP's Advanced Inline
#: Stabilizer draws 0.45 EC/s for its 15 kN·m.
WHEEL_EC_PER_KNM = 0.03
EMPTY = 1e-9

Resources = Mapping[tuple[int, str], float]


# -- storage -----------------------------------------------------------------------------
def electric_charge(vessel) -> float:
    """Return the ElectricCharge the vessel holds."""
    return float(sum(v for (_, name), v in vessel.resources.items() if name == ELECTRIC_CHARGE))


def electric_capacity(spec: VesselSpec) -> float:
    """Return the vessel's ElectricCharge capacity, summed over its parts."""
    return float(sum(part.capacity.get(ELECTRIC_CHARGE, 0.0) for part in spec.parts))


def part_charge(resources: Resources, index: int) -> float:
    """Return the ElectricCharge held by part ``index``."""
    return float(resources.get((index, ELECTRIC_CHARGE), 0.0))


def draw_electric_charge(vessel, amount: float) -> None:
    """Take ``amount`` of ElectricCharge from the parts that hold it, in part order."""
    vessel.resources.update(_drawn(vessel.resources, amount))


def set_electric_charge(vessel, amount: float) -> None:
    """Set the vessel's ElectricCharge to ``amount`` (spread over its parts, capped)."""
    draw_electric_charge(vessel, electric_charge(vessel))
    for index, part in enumerate(vessel.spec.parts):
        key = (index, ELECTRIC_CHARGE)
        if key in vessel.resources and amount > 0.0:
            capacity = float(part.capacity.get(ELECTRIC_CHARGE, amount))
            vessel.resources[key] = min(amount, capacity)
            amount -= vessel.resources[key]


def _drawn(resources: Resources, amount: float) -> dict:
    """Return the changed ElectricCharge entries after drawing ``amount``, part order."""
    changed = {}
    for key in sorted(k for k in resources if k[1] == ELECTRIC_CHARGE):
        if amount <= 0.0:
            break
        take = min(amount, resources[key])
        changed[key] = resources[key] - take
        amount -= take
    return changed


def _charged(resources: Resources, spec: VesselSpec, amount: float) -> dict:
    """Return the changed ElectricCharge entries after storing ``amount``, part order."""
    changed = {}
    for index, part in enumerate(spec.parts):
        if amount <= 0.0:
            break
        capacity = float(part.capacity.get(ELECTRIC_CHARGE, 0.0))
        key = (index, ELECTRIC_CHARGE)
        held = float(resources.get(key, 0.0))
        put = min(amount, max(0.0, capacity - held))
        if put > 0.0:
            changed[key] = held + put
            amount -= put
    return changed


# -- producers and consumers -------------------------------------------------------------
@dataclass(frozen=True)
class SolarPanel:
    """One fixed solar panel: its normal in the vessel frame and its rating."""

    part_index: int
    normal: np.ndarray          # unit, vessel frame (= base_link axes)
    charge_rate: float          # EC/s facing the Sun at Kerbin's distance


def _positive(module: Module, key: str, default: float) -> float:
    """Return a setting by the settings rule (``Module.number``); a negative one: ``default``."""
    value = module.number(key, default)
    return value if value >= 0.0 else float(default)


def solar_panels(spec: VesselSpec) -> list[SolarPanel]:
    """Return the vessel's solar panels."""
    panels = []
    for index, part in enumerate(spec.parts):
        for module in part.modules_of(SOLAR_PANEL):
            normal = np.asarray(module.get('normal', (0.0, 0.0, 1.0)), dtype=float)
            normal = rotations.to_matrix(part.rotation) @ normal
            length = float(np.linalg.norm(normal))
            if length <= 0.0:
                continue
            panels.append(SolarPanel(index, normal / length,
                                     _positive(module, 'charge_rate', OX_STAT_CHARGE_RATE)))
    return panels


def solar_rate(panels: list[SolarPanel], attitude, sun_direction, flux_scale: float) -> float:
    """Return the EC/s of the panels: rating × max(0, cos) × flux scale (0 in shadow).

    ``attitude`` rotates base_link into the inertial frame, ``sun_direction`` is the unit
    vector to the Sun there, ``flux_scale`` the sunlight relative to Kerbin's (0 when the
    Sun is hidden).
    """
    if flux_scale <= 0.0 or not panels:
        return 0.0
    sun_body = rotations.to_matrix(attitude).T @ np.asarray(sun_direction, dtype=float)
    return float(sum(p.charge_rate * max(0.0, float(p.normal @ sun_body)) for p in panels)
                 * flux_scale)


def wheel_rating(spec: VesselSpec) -> tuple[float, float]:
    """Return the reaction wheels' summed EC/s at full torque and summed torque (N·m)."""
    rate = torque = 0.0
    for part in spec.parts:
        for module in part.modules_of(REACTION_WHEEL):
            capacity = _positive(module, 'torque', 0.0)
            torque += capacity
            rate += _positive(module, 'electric_charge_per_second',
                              WHEEL_EC_PER_KNM * capacity / 1000.0)
    return rate, torque


def wheel_draw_rate(wheel_torque, rating: tuple[float, float]) -> float:
    """Return the EC/s the wheels draw to deliver ``wheel_torque`` (N·m, base_link)."""
    rate, capacity = rating
    if capacity <= 0.0:
        return 0.0
    return rate * float(np.sum(np.abs(np.asarray(wheel_torque, dtype=float)))) / capacity


def rover_wheel_draw_rate(drive_torque, max_torque, rate) -> float:
    """Return the EC/s of wheel motors delivering ``drive_torque`` (N·m, one per wheel).

    Each draws its ``rate`` (EC/s at full torque) × |torque| / its ``max_torque``.
    """
    torque = np.abs(np.asarray(drive_torque, dtype=float))
    maximum = np.asarray(max_torque, dtype=float)
    share = np.divide(torque, maximum, out=np.zeros_like(torque), where=maximum > 0.0)
    return float(np.sum(np.asarray(rate, dtype=float) * np.minimum(share, 1.0)))


# -- one step ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Flows:
    """ElectricCharge flows over one step, EC/s."""

    produced: float = 0.0
    consumed: float = 0.0


def step(resources: Resources, spec: VesselSpec, flows: Flows, dt: float) -> dict:
    """Return the resources after ``dt`` s of ``flows``: charge first, then the draw.

    Charge beyond the capacity is lost; a draw beyond what is held takes what there is.
    Other resources are unchanged; ``resources`` itself is not modified.
    """
    out = dict(resources)
    dt = max(0.0, float(dt))
    out.update(_charged(out, spec, max(0.0, flows.produced) * dt))
    out.update(_drawn(out, max(0.0, flows.consumed) * dt))
    return out
