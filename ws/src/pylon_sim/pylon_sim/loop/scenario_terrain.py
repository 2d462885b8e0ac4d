"""The scenario's ``terrain:`` block, and every surface vessel's start above the ground.

The site, its craters and boulders and the race track kept clear of them.

Part of the scenario loader (``scenario.load_scenario``); errors are ``ScenarioError``s
naming the file, the key and the problem.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from pylon_protocol import rotations

from pylon_sim.game.bodies import Body, enu_rotation, fixed_from_geodetic
from pylon_sim.game.save import SurfaceStart, VesselStart
from pylon_sim.game.terrain import (
    Boulder,
    Crater,
    KeepOut,
    MAX_FEATURES,
    RIM_EXTENT,
    SiteTerrain,
    TerrainSpec,
)
from pylon_sim.game.vessel import mass_properties
from pylon_sim.game.wheels import suspension
from pylon_sim.loop.scenario_reader import Reader
from pylon_sim.loop.scenario_track import check_placed, keep_out, read_track

#: m a part may start inside the terrain (rounding of the scenario's altitudes).
START_TOLERANCE = 1e-3
#: The ``terrain:`` block's defaults: TerrainSpec's field defaults (one place).
TERRAIN_DEFAULTS = {f.name: f.default for f in dataclasses.fields(TerrainSpec)
                    if f.default is not dataclasses.MISSING}


def _size_range(reader: Reader, key: str, default: tuple[float, float]) -> tuple:
    low, high = reader.vector(key, 2, default)
    if not 0 < low <= high:
        reader.fail(key, f'needs 0 < min <= max, got [{low}, {high}]')
    return low, high


def _placed(reader: Reader, key: str, patch: float, defaults: dict,
            band: KeepOut | None) -> tuple:
    """Return the craters or boulders listed under ``key: {at: [...]}`` (none on ``band``)."""
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
        if band is not None:
            check_placed(item, band, feature.east, feature.north, reach, key[:-1])
        out.append(feature)
    return tuple(out)


def _features(reader: Reader, key: str, patch: float, clear: float,
              band: KeepOut | None) -> dict:
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
    placed = _placed(block, key, patch, values, band)
    if count + len(placed) > MAX_FEATURES:
        block.fail('at', f'{count} seeded and {len(placed)} placed {key} exceed '
                         f'{MAX_FEATURES}, the most a terrain holds of each')
    values.update({f'{singular}_count': count, f'{singular}_radius': size, key: placed})
    return values


def read_terrain(top: Reader, bodies: dict[str, Body], vessels: tuple) -> SiteTerrain | None:
    """Return the scenario's terrain (the ``terrain:`` block), checked; None without one."""
    if not top.has('terrain'):
        return None
    reader = top.sub('terrain')
    reader.check_keys(('body', 'latitude', 'longitude', 'radius', 'seed', 'clear_radius',
                       'craters', 'boulders', 'track'))
    body = bodies[reader.string('body', choices=tuple(bodies))]
    patch = reader.number('radius', TERRAIN_DEFAULTS['radius'], high=0.01 * body.radius,
                          positive=True)
    clear = reader.number('clear_radius', TERRAIN_DEFAULTS['clear_radius'], low=0.0,
                          high=patch)
    lat, lon = reader.number('latitude', low=-90, high=90), \
        reader.number('longitude', low=-180, high=180)
    band = keep_out(read_track(reader, 'track', body), lat, lon, body) \
        if reader.has('track') else None
    spec = TerrainSpec(
        body.name, lat, lon, patch, reader.integer('seed', TERRAIN_DEFAULTS['seed']), clear,
        **_features(reader, 'craters', patch, clear, band),
        **_features(reader, 'boulders', patch, clear, band), keep_out=band)
    try:
        terrain = SiteTerrain(spec, body)
    except ValueError as error:         # no room for a seeded feature beside the track
        reader.fail('track', str(error))
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


def _check_parts_above(top: Reader, i: int, vessel: VesselStart, terrain: SiteTerrain,
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
