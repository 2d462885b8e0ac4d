"""Race tracks in a scenario: the terrain kept off the track, a start on the starting grid.

Part of the scenario loader. A track (``pylon_track``) is named as ``pylon_track`` finds it
(``kart``: shipped with that package) or by a path to its YAML file (relative to the
scenario file). Three keys use it:

- ``terrain.track``: seeded craters and boulders are kept off the track's band, the
  centreline ± (width / 2 + ``TRACK_MARGIN``), every crater to its full rim extent 2 a and
  every boulder to its radius (``terrain.KeepOut``, rejection sampling with the terrain's
  seed); a placed feature (``at:``) reaching into the band is refused.
- ``vessels[i].surface: {track, grid, altitude}``: the vessel's centre of mass stands on
  grid slot ``grid`` (default 0) of the track (``Track.grid_pose``) and faces the driving
  direction: latitude and longitude come from the slot, the heading replaces the yaw of
  ``attitude_rpy_deg`` (its roll and pitch stay).
- ``task: {kind: race, track, ...}``: the race the simulator runs on it (``race_task``):
  every vehicle must stand on a grid slot of that track, each on its own.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from pylon_track import load_track, Track, TrackError
from pylon_track.race import mode_rules, Race, RULE_NAMES, WHOLE_RULES

from pylon_sim.game.bodies import Body, enu_rotation
from pylon_sim.game.save import RaceTask, SurfaceStart, VesselStart
from pylon_sim.game.terrain import gnomonic, KeepOut
from pylon_sim.loop.scenario_reader import Reader

TRACK_MARGIN = 2.0
"""m beyond the track's edges kept free of seeded craters and boulders."""


def track_reference(reader: Reader, key: str) -> str:
    """Return the track ``reader[key]`` names as ``load_track`` takes it from anywhere.

    A shipped track's name stays itself; a path becomes absolute (relative to the scenario
    file).
    """
    name = reader.string(key)
    if Path(name).suffix in ('.yaml', '.yml') or '/' in name:
        return str(Path(reader.path).parent.resolve() / name)   # an absolute path stays
    return name


def read_track(reader: Reader, key: str, body: Body) -> Track:
    """Return the track named by ``reader[key]``, on ``body`` (its name and radius)."""
    try:
        track = load_track(track_reference(reader, key))
    except TrackError as error:
        reader.fail(key, str(error))
    if track.origin.body != body.name or track.origin.body_radius != body.radius:
        reader.fail(key, f'track {track.name!r} is on {track.origin.body} (radius '
                         f'{track.origin.body_radius} m), not on {body.name} (radius '
                         f'{body.radius} m)')
    return track


def keep_out(track: Track, latitude: float, longitude: float, body: Body) -> KeepOut:
    """Return the band of ``track`` in the local (east, north) of a terrain site (deg).

    The centreline's map points (z = 0) are taken to the body-fixed frame and projected
    as the terrain projects (gnomonic about its site): exact for any site.
    """
    line = np.column_stack([track.centreline, np.zeros(len(track.centreline))])
    en, _ = gnomonic(enu_rotation(latitude, longitude), body.radius,
                     track.fixed_from_map(line))
    return KeepOut(f'track {track.name!r}', tuple(map(tuple, en.tolist())),
                   0.5 * track.width + TRACK_MARGIN)


def check_placed(reader: Reader, band: KeepOut, east: float, north: float,
                 reach: float, what: str) -> None:
    """Refuse a placed feature (``what``, of ``reach`` m) that comes into the band."""
    into = band.intrusion(east, north, reach)
    if into > 0.0:
        reader.fail('', f'{what} at ({east:g}, {north:g}) reaching {reach:g} m comes '
                        f'{into:.2f} m into the {band.name} band (width / 2 + '
                        f'{TRACK_MARGIN:g} m = {band.clearance:g} m from its centreline)')


def grid_start(surface: Reader, body: Body) -> tuple[float, float, float, int]:
    """Return (latitude, longitude, heading) in deg of ``surface``'s grid slot, and the slot.

    The heading is the yaw in the East-North-Up axes at the slot (those turn a little from
    the track origin's), of the track's driving direction there.
    """
    track = read_track(surface, 'track', body)
    slot = surface.integer('grid', 0, high=len(track.grid) - 1)
    x, y, yaw = track.grid_pose(slot)
    lat, lon, _ = track.geodetic_from_map(x, y, 0.0)
    ahead = track.fixed_from_map([x + math.cos(yaw), y + math.sin(yaw), 0.0]) \
        - track.fixed_from_map([x, y, 0.0])
    east, north, _ = enu_rotation(lat, lon) @ ahead
    return lat, lon, math.degrees(math.atan2(north, east)), slot


def race_task(task: Reader, vessels: tuple[VesselStart, ...], vehicles: tuple[str, ...],
              bodies: dict[str, Body]) -> RaceTask:
    """Return the race of a ``task: {kind: race, track, <rules>}`` block.

    The rules are ``pylon_track.race.mode_rules`` of the number of vehicles with the
    block's keys over them; every vehicle must start on a grid slot of ``track``, each on
    a slot of its own; the track's gates must fit it (``gate_runoff_m``).
    """
    task.check_keys(('kind', 'track', *RULE_NAMES))
    reference = track_reference(task, 'track')
    settings = {key: task.integer(key, high=10 ** 6) if key in WHOLE_RULES else
                task.number(key) for key in RULE_NAMES if task.has(key)}
    try:
        rules = mode_rules(len(vehicles), **settings)
    except ValueError as error:
        task.fail(next((k for k in settings if k in str(error)), ''), str(error))
    by_key = {v.key: v for v in vessels}
    track = read_track(task, 'track', bodies[by_key[vehicles[0]].start.body])
    slots: dict[int, str] = {}
    for key in vehicles:
        start = by_key[key].start
        if not isinstance(start, SurfaceStart) or start.track != reference:
            task.fail('track', f'vehicle {key!r} does not start on the grid of track '
                               f'{reference!r} (surface: {{track, grid}})')
        if start.grid in slots:
            task.fail('track', f'vehicles {slots[start.grid]!r} and {key!r} share grid slot '
                               f'{start.grid}')
        slots[start.grid] = key
    try:
        Race(track, rules)
    except ValueError as error:
        task.fail('gate_runoff_m', str(error))
    return RaceTask(reference, rules)
