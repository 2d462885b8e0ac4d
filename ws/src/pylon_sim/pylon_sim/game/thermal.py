"""Part temperatures: a lumped model with a skin node and an internal node per part.

Each part is two lumps at uniform temperature: its skin (``SKIN_MASS_PER_AREA`` kg per m²
of surface, at most half the part's mass) and its interior (the rest of its current
mass, propellant included), both with KSP's standard specific heat ``SPECIFIC_HEAT``
(800 J/(kg·K)). The surface area A is the part's primitive shape's (box, cylinder, sphere).

Heat flows, W (``step``):

- skin, from the Sun: ``ABSORPTIVITY × flux × A / 4`` while the Sun is not hidden; A / 4
  is the mean sunlit cross-section of a convex body over all orientations (exact for a
  sphere); the flux is ``SOLAR_FLUX_AT_KERBIN`` (1360 W/m²) scaled by the inverse square of
  the distance to the Sun;
- skin, radiated: ``EMISSIVITY × σ × A × (T_skin⁴ − BACKGROUND_TEMPERATURE⁴)``, to a
  4 K sky; no planetary infrared or albedo;
- skin, convected in an atmosphere: ``CONVECTION_SEA_LEVEL × (ρ / ρ₀) × A × (T_air −
  T_skin)``, with the air at ``AIR_TEMPERATURE``, ρ from the exponential atmosphere;
- skin ↔ interior: ``SKIN_INTERNAL_CONDUCTANCE × A × (T_skin − T_internal)``;
- interior, from engines: each engine heats its part's interior with
  ``heat_per_newton`` W per newton of thrust (module setting, default
  ``ENGINE_HEAT_PER_NEWTON`` = 8 W/N, about 0.5 % of the exhaust's kinetic power
  ½·F·Isp·g₀ of a 330 s engine), for as long as it burns.

There is no conduction between parts and no aerodynamic heating; ``shieldedFromAirstream``
is always false. Every part starts at ``INITIAL_TEMPERATURE`` (288.15 K) in both nodes.
``maxTemperature``/``maxSkinTemperature`` are the part's ``max_temp``/``skin_max_temp``
(KSP's ``maxTemp``/``skinMaxTemp``, default 2000 K); nothing breaks above them.

``step`` integrates with a linearised implicit (backward Euler) step per node, in
sub-steps of at most ``MAX_SUBSTEP_SEC``, so it stays stable for the long steps of time
warp.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math

import numpy as np

from pylon_sim.game.bodies import SEA_LEVEL_AIR_DENSITY
from pylon_sim.game.vessel import Shape, VesselSpec

SPECIFIC_HEAT = 800.0                 # J/(kg·K), KSP's standard specific heat capacity
SKIN_MASS_PER_AREA = 1.0              # kg/m² of skin
SKIN_INTERNAL_CONDUCTANCE = 10.0      # W/(m²·K) between a part's skin and its interior
ABSORPTIVITY = 0.25                   # of sunlight, by the skin
EMISSIVITY = 0.4                      # of the skin, in the infrared
STEFAN_BOLTZMANN = 5.670374419e-8     # W/(m²·K⁴)
BACKGROUND_TEMPERATURE = 4.0          # K, deep space
SOLAR_FLUX_AT_KERBIN = 1360.0         # W/m² at Kerbin's distance from the Sun
CONVECTION_SEA_LEVEL = 20.0           # W/(m²·K) in sea-level air, proportional to density
AIR_TEMPERATURE = 288.15              # K
INITIAL_TEMPERATURE = 288.15          # K, both nodes of every part at the start
ENGINE_HEAT_PER_NEWTON = 8.0          # W per N of thrust into the engine part's interior
MAX_SUBSTEP_SEC = 10.0


def surface_area(shape: Shape) -> float:
    """Return the surface area (m²) of a part's primitive shape."""
    if shape.kind == 'box':
        x, y, z = shape.size
        return 2.0 * (x * y + y * z + x * z)
    if shape.kind == 'cylinder':
        r, length = shape.size
        return 2.0 * math.pi * r * (r + length)
    return 4.0 * math.pi * shape.size[0] ** 2


@dataclass(frozen=True)
class Params:
    """The thermal constants of a vessel's parts (one entry per part)."""

    area: np.ndarray                # m²
    skin_capacity: np.ndarray       # J/K
    internal_capacity: np.ndarray   # J/K


def params(spec: VesselSpec, masses: Sequence[float]) -> Params:
    """Return the parts' thermal constants for their current masses (kg)."""
    area = np.array([surface_area(part.shape) for part in spec.parts])
    mass = np.asarray(masses, dtype=float)
    skin = np.minimum(SKIN_MASS_PER_AREA * area, 0.5 * mass)
    return Params(area, skin * SPECIFIC_HEAT, (mass - skin) * SPECIFIC_HEAT)


@dataclass(frozen=True)
class State:
    """Skin and internal temperatures per part, K."""

    skin: np.ndarray
    internal: np.ndarray


def initial_state(parts: int, temperature: float = INITIAL_TEMPERATURE) -> State:
    """Return every part at ``temperature`` in both nodes."""
    return State(np.full(parts, float(temperature)), np.full(parts, float(temperature)))


@dataclass(frozen=True)
class Inputs:
    """What heats and cools the parts during one step."""

    solar_flux: float = 0.0          # W/m² of sunlight at the vessel (0 in shadow)
    engine_heat: np.ndarray | None = None   # W into each part's interior
    air_density: float = 0.0         # kg/m³ around the vessel


def step(state: State, p: Params, inputs: Inputs, dt: float) -> State:
    """Return the temperatures after ``dt`` s (see the module docstring for the model)."""
    dt = max(0.0, float(dt))
    if dt == 0.0:
        return state
    count = max(1, math.ceil(dt / MAX_SUBSTEP_SEC))
    h = dt / count
    engine = np.zeros_like(p.area) if inputs.engine_heat is None else np.asarray(
        inputs.engine_heat, dtype=float)
    solar = ABSORPTIVITY * max(0.0, inputs.solar_flux) * p.area / 4.0
    convection = (CONVECTION_SEA_LEVEL * max(0.0, inputs.air_density) / SEA_LEVEL_AIR_DENSITY
                  * p.area)
    conductance = SKIN_INTERNAL_CONDUCTANCE * p.area
    radiation = EMISSIVITY * STEFAN_BOLTZMANN * p.area
    skin, internal = state.skin.copy(), state.internal.copy()
    for _ in range(count):
        q_skin = (solar - radiation * (skin ** 4 - BACKGROUND_TEMPERATURE ** 4)
                  + conductance * (internal - skin) + convection * (AIR_TEMPERATURE - skin))
        slope = 4.0 * radiation * skin ** 3 + conductance + convection
        q_internal = conductance * (skin - internal) + engine
        skin = np.maximum(skin + h * q_skin / (p.skin_capacity + h * slope), 0.0)
        internal = np.maximum(internal + h * q_internal / (p.internal_capacity
                                                           + h * conductance), 0.0)
    return State(skin, internal)
