"""Scenario files: which vessels fly where, made of which parts (YAML, see config/scenarios).

``load_scenario(name_or_path, seed)`` reads and checks a file and returns a ``Scenario``;
any error names the file, the key path and what is wrong, and stops the simulator before it
sends anything. The dataclasses it returns live in ``save`` (the game starts from them
without this loader); they stay importable from here.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
import random
import re
from typing import Any

import numpy as np
from pylon_protocol import rotations
import yaml

from pylon_sim.game.bodies import BODIES, Body, enu_rotation, fixed_from_geodetic
from pylon_sim.game.rcs_geometry import rcs_layout
from pylon_sim.game.save import (  # what a scenario is (re-exported for the loader's importers)
    OrbitStart,
    Scenario,
    SurfaceStart,
    Task,
    TASK_DEFAULTS,
    TASK_KINDS,
    VesselStart,
)
from pylon_sim.game.terrain import (
    Boulder,
    Crater,
    MAX_FEATURES,
    RIM_EXTENT,
    SiteTerrain,
    TerrainSpec,
)
from pylon_sim.game.vessel import (
    DEFAULT_MAX_TEMP,
    mass_properties,
    Module,
    MODULE_KINDS,
    Part,
    RESOURCE_DENSITY,
    Shape,
    VesselSpec,
)
from pylon_sim.game.wheels import suspension
from pylon_sim.sensors import gnss, relative_nav
from pylon_sim.sensors.module_settings import SettingError

SCENARIO_DIR_ENV = 'PYLON_SCENARIO_PATH'
HEX32 = re.compile(r'^[0-9a-f]{32}$')
SENSOR_ID = re.compile(r'^[a-z_][a-z0-9_]{0,63}$')
#: The sensor kinds of ours whose settings are checked at load (``module_settings``).
_SETTINGS_OF = {relative_nav.KIND: relative_nav.Settings, gnss.KIND: gnss.Settings}
SENSOR_KINDS = ('star_tracker', 'lidar_2d', 'lidar_3d', 'camera', 'relative_nav', 'gnss')
#: m a part may start inside the terrain (rounding of the scenario's altitudes).
START_TOLERANCE = 1e-3
#: The ``terrain:`` block's defaults: TerrainSpec's field defaults (one place).
TERRAIN_DEFAULTS = {f.name: f.default for f in dataclasses.fields(TerrainSpec)
                    if f.default is not dataclasses.MISSING}


class ScenarioError(ValueError):
    """A scenario file that cannot be flown; the message names file, key and problem."""


def scenario_dirs() -> list[Path]:
    """Return the folders searched for ``--scenario NAME``, in order."""
    dirs = [Path(p) for p in os.environ.get(SCENARIO_DIR_ENV, '').split(os.pathsep) if p]
    try:
        from ament_index_python.packages import get_package_share_directory
        dirs.append(Path(get_package_share_directory('pylon_sim')) / 'scenarios')
    except (ImportError, LookupError, ValueError):
        pass
    dirs.append(Path(__file__).resolve().parents[5] / 'config' / 'scenarios')
    return dirs


def resolve(name_or_path: str) -> Path:
    """Find a scenario by file path or by name in the scenario folders."""
    candidate = Path(name_or_path)
    if candidate.suffix in ('.yaml', '.yml') or os.sep in name_or_path:
        if candidate.is_file():
            return candidate
        raise ScenarioError(f'{name_or_path}: no such scenario file')
    for directory in scenario_dirs():
        path = directory / f'{name_or_path}.yaml'
        if path.is_file():
            return path
    searched = ', '.join(str(d) for d in scenario_dirs())
    raise ScenarioError(f'scenario {name_or_path!r} not found in {searched}')


class _Reader:
    """Typed access to a YAML mapping that reports errors with file and key path."""

    def __init__(self, path: Path, data: Any, where: str = '') -> None:
        self.path, self.data, self.where = path, data, where
        if not isinstance(data, dict):
            self.fail('', f'must be a mapping, got {type(data).__name__}')

    def fail(self, key: str, what: str) -> None:
        location = '.'.join(p for p in (self.where, key) if p) or '(top level)'
        raise ScenarioError(f'{self.path}: {location}: {what}')

    def has(self, key: str) -> bool:
        return key in self.data

    def sub(self, key: str) -> _Reader:
        if key not in self.data:
            self.fail(key, 'is required')
        return _Reader(self.path, self.data[key], '.'.join(p for p in (self.where, key) if p))

    def items(self, key: str) -> list[_Reader]:
        value = self.data.get(key)
        if not isinstance(value, list) or not value:
            self.fail(key, 'must be a non-empty list')
        prefix = '.'.join(p for p in (self.where, key) if p)
        return [_Reader(self.path, item, f'{prefix}[{i}]') for i, item in enumerate(value)]

    def optional_items(self, key: str) -> list[_Reader]:
        return self.items(key) if self.data.get(key) else []

    def number(self, key: str, default: float | None = None, low: float = -math.inf,
               high: float = math.inf, positive: bool = False) -> float:
        if key not in self.data:
            if default is None:
                self.fail(key, 'is required')
            return default
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(key, f'must be a number, got {value!r}')
        value = float(value)
        if not math.isfinite(value):
            self.fail(key, f'must be finite, got {value!r}')
        if positive and value <= 0:
            self.fail(key, f'must be > 0, got {value!r}')
        if not low <= value <= high:
            self.fail(key, f'must be within [{low}, {high}], got {value!r}')
        return value

    def integer(self, key: str, default: int | None = None, low: int = 0,
                high: int = 2 ** 32 - 1) -> int:
        if key not in self.data:
            if default is None:
                self.fail(key, 'is required')
            return default
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f'must be an integer, got {value!r}')
        if not low <= value <= high:
            self.fail(key, f'must be within [{low}, {high}], got {value!r}')
        return value

    def string(self, key: str, default: str | None = None, pattern: re.Pattern | None = None,
               choices: tuple[str, ...] | None = None) -> str:
        if key not in self.data:
            if default is None:
                self.fail(key, 'is required')
            return default
        value = self.data[key]
        if not isinstance(value, str) or not value.strip():
            self.fail(key, f'must be a non-empty string, got {value!r}')
        if pattern is not None and not pattern.match(value):
            self.fail(key, f'{value!r} does not match {pattern.pattern}')
        if choices is not None and value not in choices:
            self.fail(key, f'{value!r} is not one of {", ".join(choices)}')
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            self.fail(key, f'must be true or false, got {value!r}')
        return value

    def vector(self, key: str, length: int, default: tuple | None = None) -> tuple:
        if key not in self.data:
            if default is None:
                self.fail(key, 'is required')
            return default
        value = self.data[key]
        if (not isinstance(value, list) or len(value) != length
                or any(isinstance(v, bool) or not isinstance(v, (int, float))
                       or not math.isfinite(v) for v in value)):
            self.fail(key, f'must be a list of {length} finite numbers, got {value!r}')
        return tuple(float(v) for v in value)

    def check_keys(self, allowed: tuple[str, ...]) -> None:
        for key in self.data:
            if key not in allowed:
                self.fail(str(key), f'unknown key (allowed: {", ".join(allowed)})')


def _shape(reader: _Reader) -> Shape:
    shape = reader.sub('shape')
    if len(shape.data) != 1:
        shape.fail('', 'must have exactly one of box, cylinder, sphere')
    kind = next(iter(shape.data))
    if kind == 'box':
        size = shape.vector('box', 3)
    elif kind == 'cylinder':
        size = shape.vector('cylinder', 2)
    elif kind == 'sphere':
        size = (shape.number('sphere', positive=True),)
    else:
        shape.fail(str(kind), 'must be box, cylinder or sphere')
    if any(v <= 0 for v in size):
        shape.fail(kind, f'sizes must be > 0, got {list(size)}')
    return Shape(kind, size)


def _module(reader: _Reader, rng: random.Random, sensor_ids: set[str]) -> Module:
    kind = reader.string('kind', choices=MODULE_KINDS)
    index = reader.integer('index', high=1024)
    settings = {k: v for k, v in reader.data.items() if k not in ('kind', 'index')}
    if kind in SENSOR_KINDS:
        if 'sensor_id' in settings:
            sensor = reader.string('sensor_id', pattern=SENSOR_ID)
        else:  # as KSP does for a new part without an id set in the editor
            sensor = f'{kind}_{rng.getrandbits(32):08x}'
        if sensor in sensor_ids:
            reader.fail('sensor_id', f'{sensor!r} is used twice')
        sensor_ids.add(sensor)
        settings['sensor_id'] = sensor
    for key, value in settings.items():
        if isinstance(value, float) and not math.isfinite(value):
            reader.fail(key, f'must be finite, got {value!r}')
    if kind == 'rcs':
        try:
            rcs_layout(settings)
        except ValueError as error:
            reader.fail('nozzles', str(error))
    elif kind in _SETTINGS_OF:
        try:
            _SETTINGS_OF[kind].from_module(settings)
        except SettingError as error:
            reader.fail(error.key, error.what)
    return Module(kind, index, settings)


def _part(reader: _Reader, count: int, rng: random.Random, sensor_ids: set[str]) -> Part:
    reader.check_keys(('name', 'title', 'persistent_id', 'flight_id', 'parent', 'position',
                       'rpy_deg', 'mass', 'shape', 'resources', 'modules', 'max_temp',
                       'skin_max_temp'))
    parent = reader.data.get('parent')
    if parent is not None and (isinstance(parent, bool) or not isinstance(parent, int)
                               or not 0 <= parent < count):
        reader.fail('parent', f'must be null or the index of an earlier part, got {parent!r}')
    resources, capacity = {}, {}
    if reader.has('resources'):
        res = reader.sub('resources')
        for name in res.data:
            if name not in RESOURCE_DENSITY:
                res.fail(str(name), f'unknown resource (known: {", ".join(RESOURCE_DENSITY)})')
            amount, cap = res.vector(name, 2)
            if not 0 <= amount <= cap:
                res.fail(name, f'needs 0 <= amount <= capacity, got [{amount}, {cap}]')
            resources[name], capacity[name] = amount, cap
    roll, pitch, yaw = (math.radians(v) for v in reader.vector('rpy_deg', 3, (0.0, 0.0, 0.0)))
    name = reader.string('name')
    modules = tuple(_module(m, rng, sensor_ids) for m in reader.optional_items('modules'))
    indices = [m.module_index for m in modules]
    if len(set(indices)) != len(indices):
        reader.fail('modules', f'module indices must be unique, got {indices}')
    return Part(
        name=name, title=reader.string('title', name),
        persistent_id=reader.integer('persistent_id', low=1),
        flight_id=reader.integer('flight_id', low=1),
        parent=parent, position=reader.vector('position', 3, (0.0, 0.0, 0.0)),
        rotation=tuple(rotations.from_rpy(roll, pitch, yaw).tolist()),
        dry_mass=reader.number('mass', positive=True), shape=_shape(reader),
        resources=resources, capacity=capacity, modules=modules,
        max_temp=reader.number('max_temp', DEFAULT_MAX_TEMP, positive=True),
        skin_max_temp=reader.number('skin_max_temp', DEFAULT_MAX_TEMP, positive=True))


def _start(reader: _Reader, bodies: dict[str, Body]) -> OrbitStart | SurfaceStart:
    if reader.has('orbit') == reader.has('surface'):
        reader.fail('', 'needs exactly one of orbit, surface')
    if reader.has('orbit'):
        orbit = reader.sub('orbit')
        orbit.check_keys(('body', 'altitude', 'eccentricity', 'inclination', 'lan',
                          'arg_periapsis', 'true_anomaly', 'along_track'))
        body = orbit.string('body', choices=tuple(bodies))
        return OrbitStart(body, orbit.number('altitude', positive=True),
                          orbit.number('eccentricity', 0.0, 0.0, 0.99),
                          orbit.number('inclination', 0.0, 0.0, 180.0),
                          orbit.number('lan', 0.0), orbit.number('arg_periapsis', 0.0),
                          orbit.number('true_anomaly', 0.0), orbit.number('along_track', 0.0))
    surface = reader.sub('surface')
    surface.check_keys(('body', 'latitude', 'longitude', 'altitude'))
    return SurfaceStart(surface.string('body', choices=tuple(bodies)),
                        surface.number('latitude', low=-90, high=90),
                        surface.number('longitude', low=-180, high=180),
                        surface.number('altitude', positive=True))


def _check_gimbal_groups(reader: _Reader, parts: list[Part]) -> None:
    """Refuse a ``gimbal_group`` whose engines have different ``gimbal_range_deg``.

    The members share one gimbal: the typed actuators scale its commands by one range and
    the allocation tilts each member's thrust by its own, so the two must be the same.
    """
    ranges: dict[str, tuple[float, str]] = {}
    for i, part in enumerate(parts):
        for j, module in enumerate(part.modules):
            group = module.get('gimbal_group') if module.kind == 'engine' else None
            if group is None:
                continue
            key = f'parts[{i}].modules[{j}].gimbal_range_deg'
            span = float(module.get('gimbal_range_deg', 0.0))
            first = ranges.setdefault(str(group), (span, key))
            if span != first[0]:
                reader.fail(key, f'{span} deg differs from the {first[0]} deg of {first[1]}: '
                                 f'the engines of gimbal_group {group!r} share one gimbal')


def _vessel(reader: _Reader, rng: random.Random, bodies: dict[str, Body],
            sensor_ids: set[str]) -> VesselStart:
    reader.check_keys(('key', 'name', 'vessel_id', 'debris', 'packed', 'sas', 'orbit',
                       'surface', 'attitude_rpy_deg', 'angular_velocity', 'parts'))
    key = reader.string('key')
    vessel_id = reader.string('vessel_id', f'{rng.getrandbits(128):032x}', pattern=HEX32)
    parts: list[Part] = []
    for part_reader in reader.items('parts'):
        parts.append(_part(part_reader, len(parts), rng, sensor_ids))
    if parts[0].parent is not None:
        reader.fail('parts[0].parent', 'the first part is the root and has no parent')
    for i, part in enumerate(parts[1:], start=1):
        if part.parent is None:
            reader.fail(f'parts[{i}].parent', 'only the first part may be the root')
    _check_gimbal_groups(reader, parts)
    for attr in ('persistent_id', 'flight_id'):
        values = [getattr(p, attr) for p in parts]
        if len(set(values)) != len(values):
            reader.fail('parts', f'{attr} values must be unique within the vessel')
    spec = VesselSpec(vessel_id, reader.string('name', key), tuple(parts),
                      reader.boolean('debris', False))
    return VesselStart(key, spec, _start(reader, bodies),
                       reader.vector('attitude_rpy_deg', 3, (0.0, 0.0, 0.0)),
                       reader.vector('angular_velocity', 3, (0.0, 0.0, 0.0)),
                       reader.boolean('packed', False), reader.boolean('sas', False))


def _size_range(reader: _Reader, key: str, default: tuple[float, float]) -> tuple:
    low, high = reader.vector(key, 2, default)
    if not 0 < low <= high:
        reader.fail(key, f'needs 0 < min <= max, got [{low}, {high}]')
    return low, high


def _placed(reader: _Reader, key: str, patch: float, defaults: dict) -> tuple:
    """Return the craters or boulders listed under ``key: {at: [...]}``."""
    out = []
    for item in reader.optional_items('at'):
        if key == 'craters':
            item.check_keys(('east', 'north', 'radius', 'depth', 'rim_height'))
            radius = item.number('radius', positive=True)
            feature = Crater(item.number('east'), item.number('north'), radius,
                             item.number('depth', defaults['depth_ratio'] * radius, low=0.0),
                             item.number('rim_height', defaults['rim_ratio'] * radius,
                                         low=0.0))
            reach = RIM_EXTENT * radius
        else:
            item.check_keys(('east', 'north', 'radius', 'buried'))
            feature = Boulder(item.number('east'), item.number('north'),
                              item.number('radius', positive=True),
                              item.number('buried', defaults['buried'], low=0.0, high=1.0))
            reach = feature.radius
        if math.hypot(feature.east, feature.north) + reach > patch:
            item.fail('', f'reaches {math.hypot(feature.east, feature.north) + reach:.1f} m '
                          f'from the site, outside the patch (radius {patch} m)')
        out.append(feature)
    return tuple(out)


def _features(reader: _Reader, key: str, patch: float, clear: float) -> dict:
    """Return the TerrainSpec fields of the ``craters:`` or ``boulders:`` block."""
    if not reader.has(key):
        return {}
    block = reader.sub(key)
    singular = key[:-1]
    if key == 'craters':
        block.check_keys(('count', 'radius', 'depth_ratio', 'rim_ratio', 'at'))
        values = {name: block.number(name, TERRAIN_DEFAULTS[name], low=0.0, high=1.0)
                  for name in ('depth_ratio', 'rim_ratio')}
        reach = RIM_EXTENT
    else:
        block.check_keys(('count', 'radius', 'buried', 'at'))
        values = {'buried': block.number('buried', TERRAIN_DEFAULTS['buried'], low=0.0,
                                         high=1.0)}
        reach = 1.0
    size = _size_range(block, 'radius', TERRAIN_DEFAULTS[f'{singular}_radius'])
    count = block.integer('count', TERRAIN_DEFAULTS[f'{singular}_count'], high=MAX_FEATURES)
    if count and clear + 2.0 * reach * size[1] > patch:
        block.fail('radius', f'a {singular} of radius {size[1]} m does not fit between '
                             f'clear_radius {clear} m and the patch edge ({patch} m)')
    placed = _placed(block, key, patch, values)
    if count + len(placed) > MAX_FEATURES:
        block.fail('at', f'{count} seeded and {len(placed)} placed {key} exceed '
                         f'{MAX_FEATURES}, the most a terrain holds of each')
    values.update({f'{singular}_count': count, f'{singular}_radius': size, key: placed})
    return values


def _terrain(top: _Reader, bodies: dict[str, Body], vessels: tuple) -> SiteTerrain | None:
    """Return the scenario's terrain (the ``terrain:`` block), checked; None without one."""
    if not top.has('terrain'):
        return None
    reader = top.sub('terrain')
    reader.check_keys(('body', 'latitude', 'longitude', 'radius', 'seed', 'clear_radius',
                       'craters', 'boulders'))
    body = bodies[reader.string('body', choices=tuple(bodies))]
    patch = reader.number('radius', TERRAIN_DEFAULTS['radius'], high=0.01 * body.radius,
                          positive=True)
    clear = reader.number('clear_radius', TERRAIN_DEFAULTS['clear_radius'], low=0.0,
                          high=patch)
    spec = TerrainSpec(
        body.name, reader.number('latitude', low=-90, high=90),
        reader.number('longitude', low=-180, high=180), patch,
        reader.integer('seed', TERRAIN_DEFAULTS['seed']), clear,
        **_features(reader, 'craters', patch, clear), **_features(reader, 'boulders', patch,
                                                                  clear))
    terrain = SiteTerrain(spec, body)
    for i, vessel in enumerate(vessels):
        where = vessel.start
        if isinstance(where, SurfaceStart) and where.body == body.name:
            point = fixed_from_geodetic(body, where.latitude, where.longitude, where.altitude)
            clearance = float(terrain.ground(point[None, :])[0][0])
            if clearance <= 0.0:
                top.fail(f'vessels[{i}].surface.altitude',
                         f'{where.altitude} m puts the centre of mass {-clearance:.2f} m '
                         'below the terrain there')
            _check_parts_above(top, i, vessel, terrain, body)
    return terrain


def _lowest_points(vessel: VesselStart, body: Body) -> list[tuple[int, np.ndarray, float]]:
    """Return (part index, lowest point, depth it may start below the ground) of every part.

    Body-fixed, at the surface start, ``down`` the local vertical: a part's lowest point is
    its shape's extent down from its centre; a wheel's is its tyre's contact point (hub
    minus radius), allowed below the ground by the suspension travel left beyond the rest
    compression (``wheels.suspension``).
    """
    where = vessel.start
    com_fixed = fixed_from_geodetic(body, where.latitude, where.longitude, where.altitude)
    down = -com_fixed / np.linalg.norm(com_fixed)
    roll, pitch, yaw = (math.radians(v) for v in vessel.attitude_rpy)
    attitude = enu_rotation(where.latitude, where.longitude).T @ rotations.to_matrix(
        rotations.from_rpy(roll, pitch, yaw))                 # vessel frame -> body-fixed
    com = mass_properties(vessel.spec, vessel.spec.initial_resources()).com
    out = []
    for index, part in enumerate(vessel.spec.parts):
        centre = com_fixed + attitude @ (np.asarray(part.position, dtype=float) - com)
        rims = [suspension(m) for m in part.modules_of('wheel')]
        if rims:
            out += [(index, centre + radius * down, travel - rest)
                    for radius, travel, rest in rims]
            continue
        to_part = (attitude @ rotations.to_matrix(part.rotation)).T
        out.append((index, centre + part.shape.extent(to_part @ down) * down, 0.0))
    return out


def _check_parts_above(top: _Reader, i: int, vessel: VesselStart, terrain: SiteTerrain,
                       body: Body) -> None:
    """Refuse a surface start with a part inside the terrain (a wheel: beyond its travel)."""
    lowest = _lowest_points(vessel, body)
    clearance = terrain.ground(np.array([point for _, point, _ in lowest]))[0]
    for (index, _, allowed), gap in zip(lowest, clearance):
        if gap < -allowed - START_TOLERANCE:
            part = vessel.spec.parts[index]
            top.fail(f'vessels[{i}].surface.altitude',
                     f'{vessel.start.altitude} m puts part {index} ({part.name}) '
                     f'{-gap:.3f} m inside the terrain'
                     + (f' (its wheel may start {allowed:.3f} m below it)' if allowed else ''))


def load_scenario(name_or_path: str, seed: int = 0) -> Scenario:
    """Read, check and return a scenario; raise ScenarioError naming file, key and problem."""
    path = resolve(name_or_path)
    try:
        data = yaml.safe_load(path.read_text(encoding='utf-8'))
    except yaml.YAMLError as exc:
        raise ScenarioError(f'{path}: not valid YAML: {exc}') from exc
    except OSError as exc:
        raise ScenarioError(f'{path}: cannot read: {exc}') from exc
    top = _Reader(path, data)
    top.check_keys(('scenario', 'description', 'start_ut', 'physics_step', 'active',
                    'bodies', 'vessels', 'terrain', 'vehicles', 'task'))
    rng = random.Random(seed)
    bodies = dict(BODIES)
    if top.has('bodies'):
        overrides = top.sub('bodies')
        for name in overrides.data:
            if name not in bodies:
                overrides.fail(str(name), f'unknown body (known: {", ".join(bodies)})')
            body = overrides.sub(name)
            body.check_keys(('rotating_frame_altitude',))
            bodies[name] = dataclasses.replace(bodies[name], rotating_frame_altitude=body.number(
                'rotating_frame_altitude', low=0.0))
    sensor_ids: set[str] = set()
    vessels = tuple(_vessel(v, rng, bodies, sensor_ids) for v in top.items('vessels'))
    keys = [v.key for v in vessels]
    if len(set(keys)) != len(keys):
        top.fail('vessels', f'vessel keys must be unique, got {keys}')
    ids = [v.spec.vessel_id for v in vessels]
    if len(set(ids)) != len(ids):
        top.fail('vessels', 'vessel_id values must be unique')
    vehicles = _vehicles(top, vessels)
    active = top.string('active', vehicles[0] if vehicles else keys[0])
    if active not in keys:
        top.fail('active', f'{active!r} is not a vessel key ({", ".join(keys)})')
    if vehicles and active != vehicles[0]:
        top.fail('active', f'{active!r} must be the first of vehicles ({vehicles[0]!r})')
    return Scenario(
        name=top.string('scenario', path.stem),
        description=top.string('description') if top.data.get('description') else '',
        path=path, start_ut=top.number('start_ut', 0.0, low=0.0),
        physics_step=top.number('physics_step', 0.02, low=0.001, high=0.1),
        active=active, vessels=vessels, bodies=bodies,
        terrain=_terrain(top, bodies, vessels), vehicles=vehicles or (active,),
        task=_task(top, keys))


def _vehicles(top: _Reader, vessels: tuple[VesselStart, ...]) -> tuple[str, ...]:
    """Return ``vehicles:`` (controllable vessel keys, unique, none debris) or ()."""
    if not top.has('vehicles'):
        return ()
    chosen = top.data['vehicles']
    by_key = {v.key: v for v in vessels}
    if not isinstance(chosen, list) or not chosen or not all(
            isinstance(key, str) for key in chosen):
        top.fail('vehicles', 'must be a non-empty list of vessel keys')
    if len(set(chosen)) != len(chosen):
        top.fail('vehicles', f'vessel keys must be unique, got {chosen}')
    for key in chosen:
        if key not in by_key:
            top.fail('vehicles', f'{key!r} is not a vessel key ({", ".join(by_key)})')
        if by_key[key].spec.is_debris:
            top.fail('vehicles', f'{key!r} is debris and cannot be controlled')
    return tuple(chosen)


def _task(top: _Reader, keys: list[str]) -> Task | None:
    """Return the scenario's ``task:`` or None."""
    if not top.has('task'):
        return None
    task = top.sub('task')
    task.check_keys(('kind', 'target', *TASK_DEFAULTS))
    kind = task.string('kind')
    if kind not in TASK_KINDS:
        task.fail('kind', f'{kind!r} is not a task kind ({", ".join(TASK_KINDS)})')
    target = task.string('target')
    if target not in keys:
        task.fail('target', f'{target!r} is not a vessel key ({", ".join(keys)})')
    return Task(kind, target, **{key: task.number(key, default, positive=True)
                                 for key, default in TASK_DEFAULTS.items()})
