"""Vessels as KSP describes them: parts with ids, modules, masses, shapes and resources.

Part poses are given in the vessel frame: the root part's frame in ROS axes (+X forward,
the KSP control-from "up" direction; +Y left; +Z up), metres. ``base_link`` is the
vessel's centre of mass with the root part's axes, so the pose of a part in
``base_link`` is its vessel-frame pose shifted by minus the centre of mass, which moves
as propellant burns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
import math

import numpy as np
from pylon_protocol import rotations

# kg per unit of each KSP resource
RESOURCE_DENSITY = {
    'LiquidFuel': 5.0,
    'Oxidizer': 5.0,
    'MonoPropellant': 4.0,
    'XenonGas': 0.1,
    'SolidFuel': 7.5,
    'ElectricCharge': 0.0,
    'Ore': 10.0,
}

# the resources engines and RCS burn (what a mission counts as propellant used)
PROPELLANTS = ('LiquidFuel', 'Oxidizer', 'MonoPropellant', 'XenonGas', 'SolidFuel')

SHAPES = ('box', 'cylinder', 'sphere')
MODULE_KINDS = ('rcs', 'engine', 'reaction_wheel', 'docking_port', 'star_tracker', 'lidar_2d',
                'lidar_3d', 'camera', 'wheel', 'servo', 'decoupler', 'fairing',
                'launch_clamp', 'command', 'solar_panel', 'relative_nav', 'gnss',
                'ahrs')
DEFAULT_MAX_TEMP = 2000.0   # K, KSP's default part maxTemp and skinMaxTemp
#: m: KSP loads (unpacks) the vessels within this distance of the active one; the nearby
#: vessels and a relative-navigation sensor see no farther.
LOADED_RANGE_M = 2500.0


@dataclass(frozen=True)
class Shape:
    """A primitive collision/visual shape centred on the part origin.

    ``box``: size = (x, y, z) m; ``cylinder``: size = (radius, length) m, axis along the
    part's +X (the stack axis); ``sphere``: size = (radius,) m.
    """

    kind: str
    size: tuple[float, ...]

    def extent(self, direction: np.ndarray) -> float:
        """Return how far the shape reaches from its centre along a unit direction, m.

        ``direction`` is in part axes; this is the shape's support function, e.g. the depth
        of its lowest point below its centre for ``direction`` down.
        """
        d = np.abs(np.asarray(direction, dtype=float))
        if self.kind == 'box':
            return 0.5 * float(d @ np.asarray(self.size, dtype=float))
        if self.kind == 'cylinder':
            r, length = self.size
            return r * float(np.sqrt(max(0.0, 1.0 - d[0] * d[0]))) + 0.5 * length * float(d[0])
        return float(self.size[0])

    def inertia(self, mass: float) -> np.ndarray:
        """Return the solid shape's inertia tensor about its centre in part axes, kg m^2."""
        if self.kind == 'box':
            x, y, z = self.size
            return mass / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])
        if self.kind == 'cylinder':
            r, length = self.size
            axial = 0.5 * mass * r * r
            transverse = mass * (3.0 * r * r + length * length) / 12.0
            return np.diag([axial, transverse, transverse])
        r = self.size[0]
        return np.eye(3) * 0.4 * mass * r * r


def flag_setting(settings: Mapping[str, object], key: str, default: bool) -> bool:
    """Return a module's yes/no setting: a bool (YAML ``true``/``false``), else ``default``.

    One rule for every reader of a module's settings (the allocation, the typed actuators,
    the packets): an absent setting or one of another type (``0``, ``1``, ``'yes'``) is
    the default, never an error, so every reader sees the same value.
    """
    value = settings.get(key, default)
    return value if isinstance(value, bool) else default


def number_setting(settings: Mapping[str, object], key: str, default: float) -> float:
    """Return a module's numeric setting: a finite int or float, else ``default``.

    The same rule as ``flag_setting``: absent, a bool, a string or a non-finite value gives
    the default (which may itself be non-finite, e.g. ``-inf`` for no limit).
    """
    value = settings.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value):
        return default
    return float(value)


@dataclass(frozen=True)
class Module:
    """One PartModule: its kind, index in the part and its settings."""

    kind: str
    module_index: int
    settings: Mapping[str, object] = field(default_factory=dict)

    def get(self, key: str, default: object = None) -> object:
        """Return one setting."""
        return self.settings.get(key, default)

    def flag(self, key: str, default: bool) -> bool:
        """Return a yes/no setting (``flag_setting``: not a bool gives ``default``)."""
        return flag_setting(self.settings, key, default)

    def number(self, key: str, default: float) -> float:
        """Return a numeric setting (``number_setting``: a non-number gives ``default``)."""
        return number_setting(self.settings, key, default)


@dataclass(frozen=True)
class Part:
    """One part of a vessel."""

    name: str
    title: str
    persistent_id: int
    flight_id: int
    parent: int | None           # index of the parent part; None for the root
    position: tuple[float, float, float]       # m, in the vessel frame
    rotation: tuple[float, float, float, float]  # part -> vessel frame, quaternion x y z w
    dry_mass: float              # kg
    shape: Shape
    resources: Mapping[str, float] = field(default_factory=dict)  # initial amounts
    capacity: Mapping[str, float] = field(default_factory=dict)   # maximum amounts
    modules: tuple[Module, ...] = ()
    max_temp: float = DEFAULT_MAX_TEMP        # K, internal temperature limit (maxTemp)
    skin_max_temp: float = DEFAULT_MAX_TEMP   # K, skin temperature limit (skinMaxTemp)

    def modules_of(self, kind: str) -> list[Module]:
        """Return the part's modules of one kind."""
        return [m for m in self.modules if m.kind == kind]


@dataclass(frozen=True)
class VesselSpec:
    """A vessel's fixed description."""

    vessel_id: str  # 32 lowercase hex
    name: str
    parts: tuple[Part, ...]
    is_debris: bool = False

    def resource_totals(self, amounts: Mapping[tuple[int, str], float]) -> dict[str, float]:
        """Sum resource amounts per resource name."""
        totals: dict[str, float] = {}
        for (_, resource), amount in amounts.items():
            totals[resource] = totals.get(resource, 0.0) + amount
        return totals

    def initial_resources(self) -> dict[tuple[int, str], float]:
        """Return the starting amount per (part index, resource)."""
        return {(i, name): float(amount) for i, part in enumerate(self.parts)
                for name, amount in part.resources.items()}

    def topology_hash(self) -> int:
        """Return a hash over the parts' persistent ids (changes on staging or docking)."""
        h = 1469598103934665603
        for part in self.parts:
            h = ((h ^ part.persistent_id) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
        return h


@dataclass(frozen=True)
class MassProperties:
    """Mass, centre of mass (vessel frame) and inertia about the centre of mass."""

    mass: float             # kg
    com: np.ndarray         # m, vessel frame
    inertia: np.ndarray     # kg m^2, base_link axes (= vessel frame axes)

    @property
    def inertia_inv(self) -> np.ndarray:
        """Return the inverse inertia tensor."""
        return np.linalg.inv(self.inertia)


def part_masses(spec: VesselSpec, amounts: Mapping[tuple[int, str], float]) -> np.ndarray:
    """Return each part's wet mass in kg for the given resource amounts."""
    masses = np.array([p.dry_mass for p in spec.parts], dtype=float)
    for (index, resource), amount in amounts.items():
        masses[index] += RESOURCE_DENSITY.get(resource, 0.0) * max(0.0, amount)
    return masses


def mass_properties(spec: VesselSpec,
                    amounts: Mapping[tuple[int, str], float]) -> MassProperties:
    """Return the vessel's mass properties with its parts as solid primitive shapes."""
    masses = part_masses(spec, amounts)
    total = float(masses.sum())
    positions = np.array([p.position for p in spec.parts], dtype=float)
    com = (masses[:, None] * positions).sum(axis=0) / total
    inertia = np.zeros((3, 3))
    for part, mass, position in zip(spec.parts, masses, positions):
        rot = rotations.to_matrix(part.rotation)
        local = rot @ part.shape.inertia(float(mass)) @ rot.T
        d = position - com
        inertia += local + mass * (float(d @ d) * np.eye(3) - np.outer(d, d))
    return MassProperties(total, com, inertia)


def propellant_mass(amounts: Mapping[tuple[int, str], float]) -> float:
    """Return the mass (kg) of the propellant in a vessel's resource amounts."""
    return sum(RESOURCE_DENSITY[resource] * max(0.0, amount)
               for (_, resource), amount in amounts.items() if resource in PROPELLANTS)
