"""A race track: centreline, width, sections, starting grid and the ``map`` frame (pure).

Frames and units
    ``map`` is a local East-North-Up frame at the track's geodetic origin (``origin:``):
    x east, y north, z up, metres, on the body's sphere (spherical latitude and longitude,
    altitude above the body's radius, as the simulator's ``bodies`` and terrain use them).
    Headings are ENU yaw in radians: 0 = east, counter-clockwise positive (pi/2 = north).
    The arc length ``s`` runs along the centreline in the driving direction from the
    start/finish line, in ``[0, length)``; ``lateral`` is the signed distance from the
    centreline, positive to the left of the driving direction. Curvature is 1/m, positive
    in a left turn.

The track file (YAML; ``kart.yaml`` ships as package data, ``load_track('kart')``)::

    name: kart
    origin: {body: Kerbin, body_radius: 600000.0, latitude: deg, longitude: deg,
             altitude: m}
    width: 8.0                       # m, the drivable band, centred on the centreline
    start: {x: m, y: m, heading_deg: deg}   # the start/finish line's centre in map
    segments:                        # in the driving direction, from the start line
      - {straight: 70}               # m
      - {arc: 25, turn_deg: 90}      # radius m; turn + left, - right
    sections: [0, 70, ...]           # m of arc length where each section begins
    grid:                            # starting slots, slot 0 first
      - {behind: 3.0, left: 1.5}     # m behind the line along the centreline, m left of it

The segments must close (end where they start, with the start's heading, to 1 mm and
1e-6 rad); the band must not overlap itself (``MIN_GAP``). The body radius is in the file
(this package imports nothing of the simulator); a simulator test checks it against the
simulator's body.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
import math
from pathlib import Path
from typing import Any

import numpy as np
import yaml

SAMPLE_SPACING = 0.25
"""m, the largest spacing of ``Track.centreline``'s points."""
CLOSURE_TOLERANCE = 1e-3
"""m (and 1e-6 rad of heading): how exactly the segments must come back to the start."""
MIN_GAP = 1.0
"""The band's self-clearance: centreline points farther apart along the track than
(pi/2) x width must be at least ``MIN_GAP`` x width apart in the plane (a hairpin's two
legs, two straights side by side), and every arc's radius above width / 2."""
TRACK_KEYS = ('name', 'description', 'origin', 'width', 'start', 'segments', 'sections',
              'grid')


class TrackError(ValueError):
    """A track file that cannot be used; the message names the file, the key and why."""


@dataclass(frozen=True)
class Origin:
    """The ``map`` frame's origin: a point of the body's sphere (deg, deg, m above R)."""

    body: str
    body_radius: float      # m
    latitude: float         # deg
    longitude: float        # deg
    altitude: float         # m above body_radius


@dataclass(frozen=True)
class Segment:
    """A straight (curvature 0) or an arc of the centreline, map frame."""

    start_s: float          # m, arc length at its start
    length: float           # m
    x: float                # m, start point
    y: float
    heading: float          # rad, at its start
    curvature: float        # 1/m, + left


@dataclass(frozen=True)
class Projection:
    """Where points lie relative to the centreline (floats for one point, arrays for N)."""

    s: Any                  # m, arc length of the nearest centreline point, [0, length)
    lateral: Any            # m, + left of the driving direction
    heading: Any            # rad, the centreline's heading at s


def _enu_rows(lat_deg: float, lon_deg: float) -> np.ndarray:
    """Return the rows East, North, Up (body-fixed) at latitude, longitude (deg)."""
    lat, lon = math.radians(lat_deg), math.radians(lon_deg)
    sl, cl, so, co = math.sin(lat), math.cos(lat), math.sin(lon), math.cos(lon)
    return np.array([[-so, co, 0.0], [-sl * co, -sl * so, cl], [cl * co, cl * so, sl]])


def _positions(seg_x, seg_y, heading, curvature, u):
    """Return (x, y) at distance ``u`` along segments (arrays broadcast)."""
    turn = curvature * u
    straight = np.abs(curvature) < 1e-12
    k = np.where(straight, 1.0, curvature)
    h = heading + turn
    dx = np.where(straight, u * np.cos(heading), (np.sin(h) - np.sin(heading)) / k)
    dy = np.where(straight, u * np.sin(heading), (np.cos(heading) - np.cos(h)) / k)
    return seg_x + dx, seg_y + dy


class Track:
    """A closed circuit in the ``map`` frame (see the module docstring for frames/units)."""

    def __init__(self, name: str, origin: Origin, width: float,
                 segments: tuple[Segment, ...], sections: tuple[float, ...],
                 grid: tuple[tuple[float, float], ...], description: str = '') -> None:
        """Build a track from checked parts (``load_track`` reads and checks a file)."""
        self.name, self.origin, self.width = name, origin, float(width)
        self.description = description
        self.segments = segments
        self.length = float(sum(seg.length for seg in segments))
        self.sections = tuple(float(s) for s in sections)
        self.grid = tuple((float(b), float(left)) for b, left in grid)
        self._s0 = np.array([seg.start_s for seg in segments])
        self._len = np.array([seg.length for seg in segments])
        self._x = np.array([seg.x for seg in segments])
        self._y = np.array([seg.y for seg in segments])
        self._h = np.array([seg.heading for seg in segments])
        self._k = np.array([seg.curvature for seg in segments])
        counts = [max(1, math.ceil(seg.length / SAMPLE_SPACING - 1e-9)) for seg in segments]
        self.centreline_s = np.concatenate(
            [seg.start_s + seg.length * np.arange(n) / n for seg, n in zip(segments, counts)])
        self.centreline = self.point_at(self.centreline_s)
        self._enu = _enu_rows(origin.latitude, origin.longitude)
        self._origin_fixed = (origin.body_radius + origin.altitude) * self._enu[2]

    # -- along the centreline -------------------------------------------------------------
    def _locate(self, s) -> tuple[np.ndarray, np.ndarray]:
        """Return the segment index and the distance into it of arc lengths ``s``."""
        s = np.mod(np.asarray(s, dtype=float), self.length)
        index = np.clip(np.searchsorted(self._s0, s, side='right') - 1, 0, len(self._s0) - 1)
        return index, s - self._s0[index]

    def point_at(self, s) -> np.ndarray:
        """Return the centreline point (m, map) at arc length ``s`` (m; wraps): (2,) or (N, 2)."""
        i, u = self._locate(s)
        x, y = _positions(self._x[i], self._y[i], self._h[i], self._k[i], u)
        return np.stack([x, y], axis=-1)

    def heading_at(self, s):
        """Return the centreline's heading at ``s`` (rad, ENU yaw in [-pi, pi))."""
        i, u = self._locate(s)
        return _wrap(self._h[i] + self._k[i] * u)

    def curvature_at(self, s):
        """Return the centreline's curvature at ``s`` (1/m, + left; 0 on a straight)."""
        i, _ = self._locate(s)
        return self._k[i] if np.ndim(s) else float(self._k[i])

    def normal_at(self, s) -> np.ndarray:
        """Return the unit normal to the left of the driving direction at ``s``."""
        h = self.heading_at(s)
        return np.stack([-np.sin(h), np.cos(h)], axis=-1)

    def section_at(self, s):
        """Return the index of the section that ``s`` (m; wraps) lies in."""
        s = np.mod(np.asarray(s, dtype=float), self.length)
        index = np.searchsorted(np.array(self.sections), s, side='right') - 1
        return index if np.ndim(s) else int(index)

    def grid_pose(self, slot: int) -> tuple[float, float, float]:
        """Return starting slot ``slot``'s (x, y, yaw): m in map, rad; behind the line."""
        if not 0 <= slot < len(self.grid):
            raise IndexError(f'track {self.name!r} has grid slots 0..{len(self.grid) - 1}, '
                             f'not {slot}')
        behind, left = self.grid[slot]
        s = self.length - behind
        x, y = self.point_at(s) + left * self.normal_at(s)
        return float(x), float(y), float(self.heading_at(s))

    # -- points in the plane --------------------------------------------------------------
    def project(self, xy) -> Projection:
        """Return where map points (m, (2,) or (N, 2)) lie: s, lateral, heading there.

        The nearest point of the exact centreline (its straights and arcs), so
        ``project(point_at(s) + lateral * normal_at(s))`` gives back ``(s, lateral)`` for
        ``|lateral|`` below the radius of the turn and the distance to other parts.
        """
        q = np.asarray(xy, dtype=float)
        single = q.ndim == 1
        q = q.reshape(-1, 2)
        u = self._foot(q)                                              # (N, M)
        fx, fy = _positions(self._x, self._y, self._h, self._k, u)
        dist2 = (q[:, 0:1] - fx) ** 2 + (q[:, 1:2] - fy) ** 2
        best = np.argmin(dist2, axis=1)
        rows = np.arange(len(q))
        s = np.mod(self._s0[best] + u[rows, best], self.length)
        heading = _wrap(self._h[best] + self._k[best] * u[rows, best])
        lateral = ((q[:, 1] - fy[rows, best]) * np.cos(heading)
                   - (q[:, 0] - fx[rows, best]) * np.sin(heading))
        if single:
            return Projection(float(s[0]), float(lateral[0]), float(heading[0]))
        return Projection(s, lateral, heading)

    def _foot(self, q: np.ndarray) -> np.ndarray:
        """Return, per point and segment, the distance along it of its nearest point."""
        dx, dy = q[:, 0:1] - self._x, q[:, 1:2] - self._y
        along = dx * np.cos(self._h) + dy * np.sin(self._h)
        straight = np.abs(self._k) < 1e-12
        k = np.where(straight, 1.0, self._k)
        sign = np.sign(k)
        # the arc's centre, and the heading at the point of the circle nearest q
        cx, cy = -np.sin(self._h) / k, np.cos(self._h) / k
        heading = np.arctan2(dy - cy, dx - cx) + sign * 0.5 * math.pi
        span = np.abs(self._k) * self._len
        turned = sign * (heading - self._h)
        turned = np.mod(turned - 0.5 * span + math.pi, 2.0 * math.pi) - math.pi + 0.5 * span
        arc = np.clip(turned, 0.0, span) / np.where(straight, 1.0, np.abs(k))
        return np.where(straight, np.clip(along, 0.0, self._len), arc)

    def inside(self, xy):
        """Tell whether map points are on the track: ``|lateral| <= width / 2`` (bool/array)."""
        lateral = self.project(xy).lateral
        return np.abs(lateral) <= 0.5 * self.width

    # -- the map frame on the body --------------------------------------------------------
    def fixed_from_map(self, xyz) -> np.ndarray:
        """Return body-fixed positions (m) of map points (m, (3,) or (N, 3)).

        Body-fixed: from the body's centre, x to latitude 0 / longitude 0, z north.
        """
        return self._origin_fixed + np.asarray(xyz, dtype=float) @ self._enu

    def map_from_fixed(self, fixed) -> np.ndarray:
        """Return map points (m) of body-fixed positions (the inverse of fixed_from_map)."""
        return (np.asarray(fixed, dtype=float) - self._origin_fixed) @ self._enu.T

    def geodetic_from_map(self, x, y, z):
        """Return (latitude deg, longitude deg, altitude m above the radius) of a map point."""
        p = self.fixed_from_map(np.stack(np.broadcast_arrays(x, y, z), axis=-1))
        r = np.linalg.norm(p, axis=-1)
        lat = np.degrees(np.arcsin(np.clip(p[..., 2] / r, -1.0, 1.0)))
        lon = np.degrees(np.arctan2(p[..., 1], p[..., 0]))
        alt = r - self.origin.body_radius
        if np.ndim(lat):
            return lat, lon, alt
        return float(lat), float(lon), float(alt)

    def map_from_geodetic(self, lat, lon, alt):
        """Return the map point (x, y, z) m of latitude, longitude (deg), altitude (m)."""
        lat_r, lon_r = np.radians(lat), np.radians(lon)
        r = self.origin.body_radius + np.asarray(alt, dtype=float)
        fixed = np.stack(np.broadcast_arrays(r * np.cos(lat_r) * np.cos(lon_r),
                                             r * np.cos(lat_r) * np.sin(lon_r),
                                             r * np.sin(lat_r)), axis=-1)
        out = self.map_from_fixed(fixed)
        if out.ndim == 1:
            return float(out[0]), float(out[1]), float(out[2])
        return out[..., 0], out[..., 1], out[..., 2]

    def self_gap(self) -> float:
        """Return the least plane distance (m) of centreline points far apart along it.

        Far apart: more than (pi/2) x width of arc length (both ways round the circuit).
        """
        pts = self.point_at(np.arange(0.0, self.length, 0.5))
        s = np.arange(0.0, self.length, 0.5)
        along = np.abs(s[:, None] - s[None, :])
        along = np.minimum(along, self.length - along)
        dist = np.hypot(pts[:, None, 0] - pts[None, :, 0], pts[:, None, 1] - pts[None, :, 1])
        far = along > 0.5 * math.pi * self.width
        return float(dist[far].min()) if far.any() else math.inf


def _wrap(angle):
    """Return angles wrapped to [-pi, pi)."""
    out = np.mod(np.asarray(angle, dtype=float) + math.pi, 2.0 * math.pi) - math.pi
    return out if np.ndim(out) else float(out)


# -- reading track files ------------------------------------------------------------------
def track_names() -> list[str]:
    """Return the names of the track files shipped with this package."""
    folder = resources.files('pylon_track') / 'tracks'
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith('.yaml'))


def _text_of(name_or_path: str | Path) -> tuple[str, str]:
    """Return (where, text) of a track given by name (package data) or by path."""
    candidate = Path(name_or_path)
    if candidate.suffix in ('.yaml', '.yml') or '/' in str(name_or_path):
        try:
            return str(candidate), candidate.read_text(encoding='utf-8')
        except OSError as exc:
            raise TrackError(f'{candidate}: cannot read: {exc}') from exc
    resource = resources.files('pylon_track') / 'tracks' / f'{name_or_path}.yaml'
    if not resource.is_file():
        raise TrackError(f'track {str(name_or_path)!r} not found (shipped: '
                         f'{", ".join(track_names())})')
    return f'pylon_track:tracks/{name_or_path}.yaml', resource.read_text(encoding='utf-8')


def load_track(name_or_path: str | Path) -> Track:
    """Read, check and return a track by name (``'kart'``) or by path to a YAML file.

    Raises ``TrackError`` naming the file, the key and the problem.
    """
    where, text = _text_of(name_or_path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TrackError(f'{where}: not valid YAML: {exc}') from exc
    return track_from_dict(data, where)


def _fail(where: str, key: str, what: str) -> None:
    raise TrackError(f'{where}: {key}: {what}')


def _number(where: str, block: dict, key: str, path: str, positive: bool = False,
            default: float | None = None) -> float:
    value = block.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value):
        _fail(where, path, f'must be a finite number, got {value!r}')
    if positive and value <= 0:
        _fail(where, path, f'must be > 0, got {value!r}')
    return float(value)


def _mapping(where: str, value: Any, path: str, keys: tuple[str, ...]) -> dict:
    if not isinstance(value, dict):
        _fail(where, path, f'must be a mapping, got {value!r}')
    for key in value:
        if key not in keys:
            _fail(where, f'{path}.{key}', f'unknown key (allowed: {", ".join(keys)})')
    return value


def _segments(where: str, data: dict) -> tuple[Segment, ...]:
    """Return the segments of ``start:`` and ``segments:``, checked for closure."""
    start = _mapping(where, data.get('start'), 'start', ('x', 'y', 'heading_deg'))
    x, y = _number(where, start, 'x', 'start.x'), _number(where, start, 'y', 'start.y')
    heading = math.radians(_number(where, start, 'heading_deg', 'start.heading_deg'))
    items = data.get('segments')
    if not isinstance(items, list) or not items:
        _fail(where, 'segments', 'must be a non-empty list')
    out, s, width = [], 0.0, float(data['width'])
    for i, item in enumerate(items):
        path = f'segments[{i}]'
        if isinstance(item, dict) and 'straight' in item:
            _mapping(where, item, path, ('straight',))
            length, curvature = _number(where, item, 'straight', path, positive=True), 0.0
        else:
            item = _mapping(where, item, path, ('arc', 'turn_deg'))
            radius = _number(where, item, 'arc', f'{path}.arc', positive=True)
            if radius <= 0.5 * width:
                _fail(where, f'{path}.arc', f'radius {radius} m must exceed half the '
                                            f'width ({0.5 * width} m)')
            turn = math.radians(_number(where, item, 'turn_deg', f'{path}.turn_deg'))
            if turn == 0.0 or abs(turn) >= 2.0 * math.pi:
                _fail(where, f'{path}.turn_deg', 'must be non-zero and within (-360, 360)')
            length, curvature = radius * abs(turn), math.copysign(1.0 / radius, turn)
        out.append(Segment(s, length, x, y, heading, curvature))
        x, y = (float(v) for v in _positions(x, y, heading, curvature, length))
        heading, s = heading + curvature * length, s + length
    gap = math.hypot(x - out[0].x, y - out[0].y)
    twist = abs(_wrap(heading - out[0].heading))
    if gap > CLOSURE_TOLERANCE or twist > 1e-6:
        _fail(where, 'segments', f'do not close: they end {gap:.4f} m from the start, '
                                 f'heading {math.degrees(twist):.4f} deg off')
    return tuple(out)


def _sections_and_grid(where: str, data: dict, length: float, width: float):
    sections = data.get('sections')
    if not isinstance(sections, list) or not sections or sections[0] != 0:
        _fail(where, 'sections', f'must be a list of arc lengths starting with 0, got '
                                 f'{sections!r}')
    values = [_number(where, {'v': v}, 'v', f'sections[{i}]') for i, v in enumerate(sections)]
    if any(b <= a for a, b in zip(values, values[1:])) or values[-1] >= length:
        _fail(where, 'sections', f'must increase strictly and stay below the length '
                                 f'{length:.3f} m, got {values}')
    grid = data.get('grid')
    if not isinstance(grid, list) or not grid:
        _fail(where, 'grid', 'must be a non-empty list of {behind, left}')
    slots = []
    for i, slot in enumerate(grid):
        slot = _mapping(where, slot, f'grid[{i}]', ('behind', 'left'))
        behind = _number(where, slot, 'behind', f'grid[{i}].behind', positive=True)
        left = _number(where, slot, 'left', f'grid[{i}].left')
        if behind >= length or abs(left) > 0.5 * width:
            _fail(where, f'grid[{i}]', f'must lie behind the line within the track '
                                       f'(behind < {length:.1f} m, |left| <= {width / 2} m)')
        slots.append((behind, left))
    return tuple(values), tuple(slots)


def track_from_dict(data: Any, where: str = '(track)') -> Track:
    """Return the checked ``Track`` of a parsed track file (``where`` names it in errors)."""
    data = _mapping(where, data, '(top level)', TRACK_KEYS)
    name = data.get('name')
    if not isinstance(name, str) or not name:
        _fail(where, 'name', f'must be a non-empty string, got {name!r}')
    origin = _mapping(where, data.get('origin'), 'origin',
                      ('body', 'body_radius', 'latitude', 'longitude', 'altitude'))
    if not isinstance(origin.get('body'), str):
        _fail(where, 'origin.body', f'must be a body name, got {origin.get("body")!r}')
    lat = _number(where, origin, 'latitude', 'origin.latitude')
    if abs(lat) >= 89.0:
        _fail(where, 'origin.latitude', f'must be within (-89, 89), got {lat}')
    at = Origin(origin['body'], _number(where, origin, 'body_radius', 'origin.body_radius',
                                        positive=True),
                lat, _number(where, origin, 'longitude', 'origin.longitude'),
                _number(where, origin, 'altitude', 'origin.altitude', default=0.0))
    width = _number(where, data, 'width', 'width', positive=True)
    data = {**data, 'width': width}
    segments = _segments(where, data)
    length = sum(seg.length for seg in segments)
    sections, grid = _sections_and_grid(where, data, length, width)
    track = Track(name, at, width, segments, sections, grid,
                  str(data.get('description', '')))
    gap = track.self_gap()
    if gap < MIN_GAP * width:
        _fail(where, 'segments', f'the track comes within {gap:.2f} m of itself '
                                 f'(at least {MIN_GAP * width:.2f} m: the width)')
    return track
