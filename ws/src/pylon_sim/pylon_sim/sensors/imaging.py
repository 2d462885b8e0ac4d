"""The LiDARs and cameras in the loop: what they see of the world, and when they sample.

The world for ray casting and rendering is the simulator's inertial frame (KCI): the
active vessel's planet, its sphere with the body's terrain (``World.terrain_of``,
body-fixed, turned to KCI at the scene's UT) where the scenario has one, every vessel's
part shapes, and the Sun's direction for shading. A sensor ignores its own part and any
part its origin lies inside (it sits on that part's surface); a camera renders only the
parts whose bounding spheres reach into its field of view, so parts out of view cast no
shadows into it. Each sensor samples at its own rate on the simulator clock; only the
active vessel's sensors sample, and the docking-port camera is the one the player selects.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
import math
import time

import numpy as np
from pylon_protocol import camera as camera_codec
from pylon_protocol import lidar, names, rotations
from pylon_protocol.errors import ProtocolError

from pylon_sim.game import raycast
from pylon_sim.game.bodies import body_fixed_rotation, sun_position
from pylon_sim.game.environment import body_offset
from pylon_sim.game.vessel import Part
from pylon_sim.game.world import SimVessel, World
from pylon_sim.sensors import lidar_scan, render
from pylon_sim.sensors.sensor_stats import SensorStats

#: module settings of the imaging sensors and their defaults (scenario keys, snake case)
LIDAR_2D_DEFAULTS = {'horizontal_count': 360, 'horizontal_fov_deg': 360.0,
                     'max_distance': 100.0, 'scan_rate_hz': 10.0}
LIDAR_3D_DEFAULTS = {'hemisphere_density': 163.0, 'max_distance': 200.0,
                     'scan_rate_hz': 10.0}
CAMERA_DEFAULTS = {'width': 320, 'height': 240, 'vertical_fov_deg': 60.0, 'rate_hz': 5.0}
DOCKING_CAMERA = {'width': 320, 'height': 240, 'vertical_fov_deg': 60.0, 'rate_hz': 5.0}
IMAGING_KINDS = ('lidar_2d', 'lidar_3d', 'camera')
_IDENTITY = (0.0, 0.0, 0.0, 1.0)


def _setting(part: Part, kind: str, key: str, default: float) -> float:
    module = part.modules_of(kind)[0]
    value = module.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f'{part.name}: {kind} setting {key} must be a positive number')
    return float(value)


@dataclass
class Imager:
    """A LiDAR or camera of a vessel, with its settings and its next sample time."""

    kind: str                  # lidar_2d, lidar_3d, camera
    sensor_id: str
    vessel_key: str
    part: Part
    settings: dict
    period: float
    frame_position: tuple = (0.0, 0.0, 0.0)
    frame_rotation: tuple = _IDENTITY
    next: float = 0.0
    session_id: str = ''
    sequence: int = 0
    directions: np.ndarray | None = None
    own: tuple | None = None   # LiDAR: (its vessel's spec, what it leaves out, own ranges)


def visible(primitives, position: np.ndarray, axis: np.ndarray, half_angle: float,
            max_range: float = math.inf) -> list:
    """Return the primitives whose bounding sphere reaches into a cone (apex, axis)."""
    out = []
    for primitive in primitives:
        v = primitive.center - position
        distance = float(np.linalg.norm(v))
        radius = primitive.bounding_radius
        if distance <= radius:
            out.append(primitive)
            continue
        if distance - radius > max_range:
            continue
        angle = math.acos(max(-1.0, min(1.0, float(v @ axis) / distance)))
        if angle - math.asin(min(1.0, radius / distance)) <= half_angle:
            out.append(primitive)
    return out


def make_imager(kind: str, part: Part, module, vessel_key: str, ids, sessions) -> Imager:
    """Return the imager of one module (sensor id from ``ids``, session id from ``sessions``)."""
    defaults = {'lidar_2d': LIDAR_2D_DEFAULTS, 'lidar_3d': LIDAR_3D_DEFAULTS,
                'camera': CAMERA_DEFAULTS}[kind]
    settings = {key: _setting(part, kind, key, value) for key, value in defaults.items()}
    sensor_id = names.sensor_id(module.get('sensor_id'), kind, ids)
    rate = settings.get('scan_rate_hz', settings.get('rate_hz'))
    imager = Imager(kind, sensor_id, vessel_key, part, settings, 1.0 / rate)
    if kind == 'lidar_2d':
        imager.directions = lidar.vertical_major_directions(
            int(settings['horizontal_count']), settings['horizontal_fov_deg'])
    elif kind == 'lidar_3d':
        imager.directions = lidar.fibonacci_hemisphere_directions(
            lidar_scan.hemisphere_ray_count(settings['hemisphere_density']))
    else:
        imager.session_id = names.new_guid_hex(sessions)
    return imager


def inactive(imager: Imager) -> tuple[str, dict]:
    """Return the notice an imager sends when its vessel stops being the active one."""
    if imager.kind == 'camera':
        return 'pylon_camera_inactive', {'source': 'rgb_camera',
                                         'sensorId': imager.sensor_id,
                                         'partFlightId': imager.part.flight_id}
    return 'pylon_lidar_inactive', {'mode': '2D' if imager.kind == 'lidar_2d' else '3D',
                                    'sensorId': imager.sensor_id,
                                    'partFlightId': imager.part.flight_id}


class _Placement:
    """The vessels' shapes placed at one instant, kept for the next ask of that instant.

    In a mission every game's sensors look at the one world after its physics step, so the
    LiDARs and cameras of four karts in one frame see one placement. It is kept while UT and
    every vessel's key, spec, state and mass are the same objects (each is replaced, never
    changed in place, when a vessel moves, splits, docks or burns propellant).
    """

    def __init__(self) -> None:
        self._last: tuple | None = None     # (ut, vessels' (key, spec, state, mass), placed)

    def of(self, world: World, ut: float) -> tuple[list[raycast.Primitive], dict]:
        """Return every vessel's primitives (KCI) and each vessel's (origin, rotation)."""
        members = tuple((v.key, v.spec, v.state, v.mass) for v in world.vessels.values())
        last = self._last
        if (last is not None and last[0] == ut and len(last[1]) == len(members)
                and all(a[0] == b[0] and a[1] is b[1] and a[2] is b[2] and a[3] is b[3]
                        for a, b in zip(last[1], members))):
            return last[2]
        primitives: list[raycast.Primitive] = []
        origins = {}
        for vessel in world.vessels.values():
            rot = rotations.to_matrix(vessel.state.attitude)
            origin = vessel.state.position + body_offset(vessel, ut) - rot @ vessel.mass.com
            origins[vessel.key] = (origin, rot)
            primitives += raycast.vessel_primitives(vessel.spec.parts, origin, rot,
                                                    vessel.key)
        self._last = (ut, members, (primitives, origins))
        return primitives, origins


_PLACEMENT = _Placement()


def scene(world: World, ut: float) -> dict:
    """Return the world the imaging sensors see at ``ut`` (KCI)."""
    primitives, origins = _PLACEMENT.of(world, ut)
    active = world.active
    terrain = world.terrain_of(active.body.name)
    if terrain is not None:
        terrain = terrain.in_frame(body_fixed_rotation(active.body, ut))
    return {'primitives': primitives, 'origins': origins,
            'planet': (body_offset(active, ut), active.body.radius,
                       active.body.atmosphere_depth),
            'terrain': terrain, 'sun': sun_position(ut)}


def pose(scene: dict, vessel_key: str, part: Part, frame_position, frame_rotation):
    """Return the world position and rotation of a sensor frame on a part."""
    origin, rot = scene['origins'][vessel_key]
    part_rot = rot @ rotations.to_matrix(part.rotation)
    position = origin + rot @ np.asarray(part.position, dtype=float) \
        + part_rot @ np.asarray(frame_position, dtype=float)
    return position, part_rot @ rotations.to_matrix(frame_rotation)


def seen(scene: dict, vessel: SimVessel, part: Part, position: np.ndarray) -> tuple:
    """Return the primitives a sensor can see and the owners to leave out.

    The sensor's own part and any part its origin lies inside (a sensor sits on the
    surface of what holds it) are left out.
    """
    own = (vessel.key, part.flight_id)
    inside = {p.owner for p in scene['primitives']
              if p.owner[0] == vessel.key and p.contains(position)}
    return scene['primitives'], inside | {own}


def lidar_fields(imager: Imager, scene: dict, vessel: SimVessel, ut: float) -> dict:
    """Cast a LiDAR's pattern in the scene; return its ``pylon_lidar_scan`` fields."""
    position, rotation = pose(scene, vessel.key, imager.part, imager.frame_position,
                              imager.frame_rotation)
    center, radius, _ = scene['planet']
    max_distance = imager.settings['max_distance']

    def near(p) -> bool:
        return float(np.linalg.norm(p.center - position)) - p.bounding_radius <= max_distance

    exclude, own = own_ranges(imager, scene, vessel, position, rotation, near)
    ranges = lidar_scan.scan(imager.directions, position, rotation, max_distance,
                             [p for p in scene['primitives']
                              if p.owner[0] != vessel.key and near(p)],
                             center, radius, scene['terrain'], exclude=exclude)
    ranges = np.minimum(ranges, own)
    mode = '2D' if imager.kind == 'lidar_2d' else '3D'
    return lidar_scan.lidar_scan_fields(
        mode=mode, sensor_id=imager.sensor_id, vessel=vessel.spec.name,
        part_flight_id=imager.part.flight_id, universal_time=ut, ranges=ranges,
        directions=imager.directions, max_distance=imager.settings['max_distance'],
        scan_rate_hz=imager.settings['scan_rate_hz'],
        frame_position=imager.frame_position, frame_rotation=imager.frame_rotation,
        horizontal_fov_deg=imager.settings.get('horizontal_fov_deg', 360.0),
        hemisphere_density=imager.settings.get('hemisphere_density', 0.0))


def own_ranges(imager: Imager, scene: dict, vessel: SimVessel, position: np.ndarray,
               rotation: np.ndarray, near: Callable) -> tuple[set, np.ndarray]:
    """Return what a LiDAR leaves out and its ranges to its own vessel's parts.

    Its own parts sit still in the sensor frame while the vessel keeps its spec (a part
    moves, comes or goes only with a new spec: a split, a docking), so the parts it sits in
    and the ranges to the rest are found once per spec (``imager.own``: spec, left out,
    ranges).
    """
    cached = imager.own
    if cached is not None and cached[0] is vessel.spec:
        return cached[1], cached[2]
    primitives, exclude = seen(scene, vessel, imager.part, position)
    local = [raycast.Primitive(p.kind, p.size, rotation.T @ (p.center - position),
                               rotation.T @ p.rotation, p.owner) for p in primitives
             if p.owner[0] == vessel.key and p.owner not in exclude and near(p)]
    ranges = lidar_scan.scan(imager.directions, np.zeros(3), np.eye(3),
                             imager.settings['max_distance'], local)
    imager.own = (vessel.spec, exclude, ranges)
    return exclude, ranges


def frame(scene: dict, vessel: SimVessel, part: Part, settings: dict,
          frame_position, frame_rotation, reference: bool = False) -> bytes:
    """Render a camera's frame in the scene; return its RGB8 bytes.

    ``reference`` casts the terrain on every pixel (``render.render``'s reference path).
    """
    position, rotation = pose(scene, vessel.key, part, frame_position, frame_rotation)
    center, radius, atmosphere = scene['planet']
    sun = scene['sun'] - position
    width, height = int(settings['width']), int(settings['height'])
    half_v = math.radians(settings['vertical_fov_deg']) / 2.0
    half_diagonal = math.atan(math.tan(half_v) * math.hypot(width / height, 1.0))
    primitives, exclude = seen(scene, vessel, part, position)
    primitives = visible([p for p in primitives if p.owner not in exclude], position,
                         rotation[:, 0], half_diagonal)
    image = render.render(
        position, rotation, sun / np.linalg.norm(sun), width=width, height=height,
        vertical_fov_deg=settings['vertical_fov_deg'], primitives=primitives,
        exclude=exclude, planet_center=center, planet_radius=radius,
        terrain=scene['terrain'], atmosphere_depth=atmosphere, reference=reference)
    return render.to_rgb8_bytes(image)


def chunks(raw: bytes, settings: dict, *, part: Part, ut: float, **fields) -> list[dict]:
    """Return a frame's ``pylon_camera_frame_chunk`` payloads (none if it cannot be sent)."""
    try:
        return camera_codec.chunk_frame(
            raw, width=int(settings['width']), height=int(settings['height']),
            part_flight_id=part.flight_id, universal_time=ut,
            vertical_fov_deg=settings['vertical_fov_deg'], **fields)
    except ProtocolError:        # the mod skips a frame it cannot send
        return []


class Imaging:
    """The LiDARs and cameras of the world's vessels, and the selected docking camera."""

    def __init__(self, world: World, stats: SensorStats, docking_session: str) -> None:
        self.world = world
        self.stats = stats
        self.imagers: list[Imager] = []
        self._imaging_key = world.active.key
        self.docking_camera: tuple[str, str] | None = None    # (vessel key, port id)
        self.docking_session = docking_session
        self.docking_sequence = 0
        self.docking_next = 0.0

    def follow(self, holders: dict) -> list[tuple[str, dict]]:
        """Re-home every imager to the vessel holding its part (see ``Sensing``)."""
        active = self.world.active.key
        out: list[tuple[str, dict]] = []
        for imager in self.imagers:
            vessel, part = holders[imager.part.persistent_id or imager.part.flight_id]
            if imager.vessel_key == active != vessel.key:
                out.append(inactive(imager))
            imager.vessel_key, imager.part = vessel.key, part
        return out

    def _notices(self, selected: tuple | None) -> list[tuple[str, dict]]:
        """Return the ``…_inactive`` notices of sensors that stopped being in use."""
        out: list[tuple[str, dict]] = []
        active = self.world.active
        for imager in self.imagers:
            if imager.vessel_key == self._imaging_key and imager.vessel_key != active.key:
                out.append(inactive(imager))
        if self.docking_camera is not None and self.docking_camera != selected:
            out.append(('pylon_camera_inactive', {'source': 'docking_port',
                                                  'sensorId': self.docking_camera[1]}))
            self.docking_camera = None
        self._imaging_key = active.key
        return out

    def packets(self, clock: float, ut: float, docking_port: tuple | None,
                ) -> list[tuple[str, dict]]:
        """Return the LiDAR scans, camera chunks and ``…_inactive`` notices due now.

        ``docking_port`` is ``(port id, Part)`` of the port whose camera is selected on the
        active vessel, or None.
        """
        active = self.world.active
        selected = (active.key, docking_port[0]) if docking_port else None
        out = self._notices(selected)
        due = [i for i in self.imagers
               if i.vessel_key == active.key and clock + 1e-9 >= i.next]
        docking_due = selected is not None and clock + 1e-9 >= self.docking_next
        if not due and not docking_due:
            return out
        view = scene(self.world, ut)
        for imager in due:
            imager.next = max(imager.next + imager.period, clock)
            start = time.process_time()
            if imager.kind == 'camera':
                imager.sequence += 1
                raw = frame(view, active, imager.part, imager.settings,
                            imager.frame_position, imager.frame_rotation)
                out += [('pylon_camera_frame_chunk', chunk) for chunk in chunks(
                    raw, imager.settings, session_id=imager.session_id,
                    sequence=imager.sequence, sensor_id=imager.sensor_id,
                    source='rgb_camera', part=imager.part, ut=ut,
                    frame_position=imager.frame_position,
                    frame_rotation=imager.frame_rotation, vessel=active.spec.name)]
            else:
                out.append(('pylon_lidar_scan', lidar_fields(imager, view, active, ut)))
            self.stats.count(imager.kind, start)
        if docking_due:
            out += self._docking_frame(view, clock, ut, selected, docking_port)
        return out

    def _docking_frame(self, view: dict, clock: float, ut: float, selected: tuple,
                       docking_port: tuple) -> list[tuple[str, dict]]:
        """Render the selected docking port's camera; return its chunks."""
        start = time.process_time()
        self.docking_camera = selected
        self.docking_next = max(self.docking_next + 1.0 / DOCKING_CAMERA['rate_hz'], clock)
        self.docking_sequence += 1
        port_id, part = docking_port
        ahead = (float(part.shape.size[-1]) / 2.0 if part.shape.size else 0.0, 0.0, 0.0)
        raw = frame(view, self.world.active, part, DOCKING_CAMERA, ahead, _IDENTITY)
        out = [('pylon_camera_frame_chunk', chunk) for chunk in chunks(
            raw, DOCKING_CAMERA, session_id=self.docking_session,
            sequence=self.docking_sequence, sensor_id=port_id, source='docking_port',
            part=part, ut=ut, frame_position=ahead, frame_rotation=_IDENTITY, vessel=None)]
        self.stats.count('docking_camera', start)
        return out
