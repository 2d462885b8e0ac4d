"""Scenario files: which vessels fly where, made of which parts (YAML, see config/scenarios).

``load_scenario(name_or_path, seed)`` reads and checks a file and returns a ``Scenario``;
any error names the file, the key path and what is wrong, and stops the simulator before it
sends anything. The dataclasses it returns live in ``save`` (the game starts from them
without this loader); they stay importable from here. The ``terrain:`` block is read by
``scenario_terrain``, a start on a race track's grid by ``scenario_track``.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
import random
import re

from pylon_protocol import rotations
import yaml

from pylon_sim.game.bodies import BODIES, Body
from pylon_sim.game.rcs_geometry import rcs_layout
from pylon_sim.game.save import (  # what a scenario is (re-exported for the loader's importers)
    OrbitStart,
    RaceTask,
    Scenario,
    SurfaceStart,
    Task,
    TASK_DEFAULTS,
    TASK_KINDS,
    VesselStart,
)
from pylon_sim.game.vessel import (
    DEFAULT_MAX_TEMP,
    Module,
    MODULE_KINDS,
    Part,
    RESOURCE_DENSITY,
    Shape,
    VesselSpec,
)
from pylon_sim.loop.scenario_reader import Reader, ScenarioError
from pylon_sim.loop.scenario_terrain import read_terrain, START_TOLERANCE, TERRAIN_DEFAULTS
from pylon_sim.loop.scenario_track import grid_start, race_task, track_reference
from pylon_sim.sensors import ahrs, gnss, relative_nav
from pylon_sim.sensors.module_settings import SettingError

__all__ = ['load_scenario', 'resolve', 'scenario_dirs', 'Scenario', 'ScenarioError',
           'START_TOLERANCE', 'TERRAIN_DEFAULTS', 'OrbitStart', 'RaceTask', 'SurfaceStart',
           'Task', 'VesselStart']

SCENARIO_DIR_ENV = 'PYLON_SCENARIO_PATH'
HEX32 = re.compile(r'^[0-9a-f]{32}$')
SENSOR_ID = re.compile(r'^[a-z_][a-z0-9_]{0,63}$')
#: The sensor kinds of ours whose settings are checked at load (``module_settings``).
_SETTINGS_OF = {relative_nav.KIND: relative_nav.Settings, gnss.KIND: gnss.Settings,
                ahrs.KIND: ahrs.Settings}
SENSOR_KINDS = ('star_tracker', 'lidar_2d', 'lidar_3d', 'camera', 'relative_nav', 'gnss',
                'ahrs')


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


def _shape(reader: Reader) -> Shape:
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


def _module(reader: Reader, rng: random.Random, sensor_ids: set[str]) -> Module:
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


def _part(reader: Reader, count: int, rng: random.Random, sensor_ids: set[str]) -> Part:
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


def _start(reader: Reader, bodies: dict[str, Body],
           ) -> tuple[OrbitStart | SurfaceStart, float | None]:
    """Return where a vessel starts and the heading (deg) a track's grid slot gives it."""
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
                          orbit.number('true_anomaly', 0.0),
                          orbit.number('along_track', 0.0)), None
    surface = reader.sub('surface')
    surface.check_keys(('body', 'latitude', 'longitude', 'altitude', 'track', 'grid'))
    body = surface.string('body', choices=tuple(bodies))
    heading, track, slot = None, '', None
    if surface.has('track'):
        for key in ('latitude', 'longitude'):
            if surface.has(key):
                surface.fail(key, 'not with track: the grid slot gives the place')
        lat, lon, heading, slot = grid_start(surface, bodies[body])
        track = track_reference(surface, 'track')
    else:
        if surface.has('grid'):
            surface.fail('grid', 'needs track')
        lat, lon = surface.number('latitude', low=-90, high=90), \
            surface.number('longitude', low=-180, high=180)
    return SurfaceStart(body, lat, lon, surface.number('altitude', positive=True), track,
                        slot), heading


def _check_gimbal_groups(reader: Reader, parts: list[Part]) -> None:
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


def _vessel(reader: Reader, rng: random.Random, bodies: dict[str, Body],
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
    start, heading = _start(reader, bodies)
    roll, pitch, yaw = reader.vector('attitude_rpy_deg', 3, (0.0, 0.0, 0.0))
    return VesselStart(key, spec, start, (roll, pitch, yaw if heading is None else heading),
                       reader.vector('angular_velocity', 3, (0.0, 0.0, 0.0)),
                       reader.boolean('packed', False), reader.boolean('sas', False))


def load_scenario(name_or_path: str, seed: int = 0) -> Scenario:
    """Read, check and return a scenario; raise ScenarioError naming file, key and problem."""
    path = resolve(name_or_path)
    try:
        data = yaml.safe_load(path.read_text(encoding='utf-8'))
    except yaml.YAMLError as exc:
        raise ScenarioError(f'{path}: not valid YAML: {exc}') from exc
    except OSError as exc:
        raise ScenarioError(f'{path}: cannot read: {exc}') from exc
    top = Reader(path, data)
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
    shared: set[str] = set()       # sensor ids: unique in the scenario, or in a vehicle's
    games = _own_games(top)         # vessel when each vehicle is a game of its own
    vessels = tuple(_vessel(v, rng, bodies, set() if v.data.get('key') in games else shared)
                    for v in top.items('vessels'))
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
        terrain=read_terrain(top, bodies, vessels), vehicles=vehicles or (active,),
        task=_task(top, vessels, vehicles or (active,), bodies))


def _vehicles(top: Reader, vessels: tuple[VesselStart, ...]) -> tuple[str, ...]:
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


def _own_games(top: Reader) -> set[str]:
    """Return the vessel keys ``vehicles:`` lists when there are several (else none).

    Each vehicle of a mission of several is a game of its own: its sensor ids need be
    unique only on its vessel (four karts keep the kart's ``lidar``, ``camera``, ...).
    """
    chosen = top.data.get('vehicles')
    if not isinstance(chosen, list) or len(chosen) < 2:
        return set()
    return {key for key in chosen if isinstance(key, str)}


def _task(top: Reader, vessels: tuple[VesselStart, ...],
          vehicles: tuple[str, ...], bodies: dict[str, Body]) -> Task | RaceTask | None:
    """Return the scenario's ``task:`` or None."""
    if not top.has('task'):
        return None
    task = top.sub('task')
    kind = task.string('kind')
    if kind not in TASK_KINDS:
        task.fail('kind', f'{kind!r} is not a task kind ({", ".join(TASK_KINDS)})')
    if kind == 'race':
        return race_task(task, vessels, vehicles, bodies)
    task.check_keys(('kind', 'target', *TASK_DEFAULTS))
    keys = [v.key for v in vessels]
    target = task.string('target')
    if target not in keys:
        task.fail('target', f'{target!r} is not a vessel key ({", ".join(keys)})')
    return Task(kind, target, **{key: task.number(key, default, positive=True)
                                 for key, default in TASK_DEFAULTS.items()})
