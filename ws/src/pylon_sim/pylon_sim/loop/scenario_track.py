"""Race tracks in a scenario: the terrain kept off the track, a start on the starting grid.

Part of the scenario loader. A track (``pylon_track``) is named as ``pylon_track`` finds it
(``kart``: shipped with that package) or by a path to its YAML file (relative to the
scenario file). Two keys use it:

- ``terrain.track``: seeded craters and boulders are kept off the track's band, the
  centreline ± (width / 2 + ``TRACK_MARGIN``), every crater to its full rim extent 2 a and
  every boulder to its radius (``terrain.KeepOut``, rejection sampling with the terrain's
  seed); a placed feature (``at:``) reaching into the band is refused.
- ``vessels[i].surface: {track, grid, altitude}``: the vessel's centre of mass stands on
  grid slot ``grid`` (default 0) of the track (``Track.grid_pose``) and faces the driving
  direction: latitude and longitude come from the slot, the heading replaces the yaw of
  ``attitude_rpy_deg`` (its roll and pitch stay).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from pylon_track import load_track, Track, TrackError

from pylon_sim.game.bodies import Body, enu_rotation
from pylon_sim.game.terrain import gnomonic, KeepOut
from pylon_sim.loop.scenario_reader import Reader

TRACK_MARGIN = 2.0
"""m beyond the track's edges kept free of seeded craters and boulders."""


def read_track(reader: Reader, key: str, body: Body) -> Track:
    """Return the track named by ``reader[key]``, on ``body`` (its name and radius)."""
    name = reader.string(key)
    target: str | Path = name
    if Path(name).suffix in ('.yaml', '.yml') or '/' in name:
        target = Path(reader.path).parent / name       # an absolute path stays itself
    try:
        track = load_track(target)
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


def grid_start(surface: Reader, body: Body) -> tuple[float, float, float]:
    """Return (latitude, longitude, heading) in deg of ``surface``'s grid slot.

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
    return lat, lon, math.degrees(math.atan2(north, east))
