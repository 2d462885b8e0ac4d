"""The simulator's sensors in the loop: what each one sees of the world, sample by sample.

Star trackers, 2D/3D LiDARs, RGB cameras, the docking-port camera and the
relative-navigation sensor (``relative_nav``, our extension): each sensor part of
each vessel gets its module settings from the scenario and samples at its own rate on the
simulator clock; only the active vessel's sensors sample. The world for ray casting and
rendering is the simulator's inertial frame (KCI): the vessel's planet, its sphere with the
body's terrain (``World.terrain_of``, body-fixed, turned to KCI at the scene's UT) where the
scenario has one, every vessel's part shapes, and the Sun's direction for shading. A sensor
ignores its own part and any part its origin lies inside (it sits on that part's surface); a
camera renders only the parts whose bounding spheres reach into its field of view, so parts
out of view cast no shadows into it.

``Sensing`` owns the star trackers of every vessel (``star_tracker.StarTracker``), builds
their ``Inputs`` from the world (KCI positions of the vessel, the Sun, Kerbin and the Mun;
every other loaded vessel's part shapes as occluders; Kerbin's sphere, its height field
and its boulders as the terrain;
the vessel's ElectricCharge) and draws the ElectricCharge they use. The runtime calls
``star_tracker_samples`` every frame and sends what it returns; a tracker samples at its
own ``sampleRateHz`` on the simulator clock (the mod's wall-time rate). When another vessel
becomes active, the trackers of the one left behind send ``inactive`` once.

A relative-navigation sensor samples at its ``rate_hz`` on the simulator clock through
``relative_nav_samples`` (the model is ``relative_nav.measure``), drawing its ElectricCharge
over the UT between its samples; without that charge, or switched off, it takes none.

Switches the player has in KSP are here too: ``set_enabled`` (the part's on/off switch) and
``power.set_electric_charge`` (fill or empty the vessel's batteries).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
import math
import random
import time

import numpy as np
from pylon_protocol import camera as camera_codec
from pylon_protocol import lidar, names, rotations
from pylon_protocol.errors import ProtocolError

from pylon_sim import raycast, relative_nav, render
from pylon_sim import star_tracker as st
from pylon_sim.bodies import (
    body_center,
    body_fixed_rotation,
    KERBIN,
    MUN,
    mun_position,
    sun_position,
)
from pylon_sim.environment import body_offset
from pylon_sim.power import draw_electric_charge, electric_charge, EMPTY
from pylon_sim.vessel import Part
from pylon_sim.world import SimVessel, World

#: module settings of the imaging sensors and their defaults (scenario keys, snake case)
LIDAR_2D_DEFAULTS = {'horizontal_count': 360, 'horizontal_fov_deg': 360.0,
                     'max_distance': 100.0, 'scan_rate_hz': 10.0}
LIDAR_3D_DEFAULTS = {'hemisphere_density': 163.0, 'max_distance': 200.0,
                     'scan_rate_hz': 10.0}
CAMERA_DEFAULTS = {'width': 320, 'height': 240, 'vertical_fov_deg': 60.0, 'rate_hz': 5.0}
DOCKING_CAMERA = {'width': 320, 'height': 240, 'vertical_fov_deg': 60.0, 'rate_hz': 5.0}

def _setting(part: Part, kind: str, key: str, default: float) -> float:
    module = part.modules_of(kind)[0]
    value = module.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f'{part.name}: {kind} setting {key} must be a positive number')
    return float(value)


@dataclass
class _Imager:
    """A LiDAR or camera of a vessel, with its settings and its next sample time."""

    kind: str                  # lidar_2d, lidar_3d, camera
    sensor_id: str
    vessel_key: str
    part: Part
    settings: dict
    period: float
    frame_position: tuple = (0.0, 0.0, 0.0)
    frame_rotation: tuple = (0.0, 0.0, 0.0, 1.0)
    next: float = 0.0
    session_id: str = ''
    sequence: int = 0
    directions: np.ndarray | None = None
    own: tuple | None = None   # LiDAR: (own parts' poses in the sensor frame, their ranges)


def contains(primitive: raycast.Primitive, point: np.ndarray) -> bool:
    """Tell whether ``point`` lies inside (or on) a primitive."""
    local = primitive.rotation.T @ (np.asarray(point, dtype=float) - primitive.center)
    size = primitive.size
    if primitive.kind == 'box':
        return bool(np.all(np.abs(local) <= np.asarray(size) / 2.0 + 1e-9))
    if primitive.kind == 'cylinder':
        return abs(local[0]) <= size[1] / 2.0 + 1e-9 and \
            math.hypot(local[1], local[2]) <= size[0] + 1e-9
    return float(np.linalg.norm(local)) <= size[0] + 1e-9


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


class _Tracker:
    """One tracker in the loop: the sensor, its owning vessel and its next sample time."""

    def __init__(self, sensor: st.StarTracker, vessel_key: str) -> None:
        self.sensor = sensor
        self.vessel_key = vessel_key
        self.next = 0.0
        self.last_ut: float | None = None
        self.enabled = True


@dataclass
class _Navigator:
    """A relative-navigation sensor of a vessel: its settings, switch and next sample."""

    sensor_id: str
    vessel_key: str
    part: Part
    settings: relative_nav.Settings
    next: float = 0.0
    last_ut: float | None = None    # UT of its last sample (its ElectricCharge draw)
    enabled: bool = True


#: s of UT: a gap between two samples of a relative-navigation sensor longer than this (the
#: vessel was packed, or not the active one) draws no ElectricCharge: it was not running.
NAV_DRAW_GAP_SEC = 2.0


class Sensing:
    """The sensors of the world's vessels."""

    def __init__(self, world: World, seed: int = 0) -> None:
        """Create every vessel's star trackers (noise seeded from ``seed``)."""
        self.world = world
        self.noise = np.random.default_rng(seed)
        self.ids = random.Random(seed)
        self.trackers: list[_Tracker] = []
        self.imagers: list[_Imager] = []
        self.navigators: list[_Navigator] = []
        for vessel in world.vessels.values():
            for part in vessel.spec.parts:
                for module in part.modules_of(st.KIND):
                    config = st.StarTrackerConfig.from_part(part, module, rng=self.ids)
                    sensor = st.StarTracker(config, self.noise, self.ids)
                    self.trackers.append(_Tracker(sensor, vessel.key))
                for kind in ('lidar_2d', 'lidar_3d', 'camera'):
                    for module in part.modules_of(kind):
                        self.imagers.append(self._imager(kind, part, module, vessel.key))
                for module in part.modules_of(relative_nav.KIND):
                    self.navigators.append(_Navigator(
                        names.sensor_id(module.get('sensor_id'), relative_nav.KIND, self.ids),
                        vessel.key, part, relative_nav.Settings.from_module(module.settings)))
        self.active_key = world.active.key
        self._imaging_key = world.active.key
        self.docking_camera: tuple[str, str] | None = None    # (vessel key, port id)
        self.docking_session = names.new_guid_hex(self.ids)
        self.docking_sequence = 0
        self.docking_next = 0.0
        self.cost = Counter()      # s of CPU time spent sampling, by sensor kind
        self.samples = Counter()   # samples taken, by sensor kind
        self.skipped = Counter()   # samples not taken, by (sensor kind, reason)

    def _count(self, kind: str, start: float) -> None:
        self.cost[kind] += time.process_time() - start
        self.samples[kind] += 1

    def _imager(self, kind: str, part: Part, module, vessel_key: str) -> _Imager:
        defaults = {'lidar_2d': LIDAR_2D_DEFAULTS, 'lidar_3d': LIDAR_3D_DEFAULTS,
                    'camera': CAMERA_DEFAULTS}[kind]
        settings = {key: _setting(part, kind, key, value) for key, value in defaults.items()}
        sensor_id = names.sensor_id(module.get('sensor_id'), kind, self.ids)
        rate = settings.get('scan_rate_hz', settings.get('rate_hz'))
        imager = _Imager(kind, sensor_id, vessel_key, part, settings, 1.0 / rate)
        if kind == 'lidar_2d':
            imager.directions = lidar.vertical_major_directions(
                int(settings['horizontal_count']), settings['horizontal_fov_deg'])
        elif kind == 'lidar_3d':
            imager.directions = lidar.fibonacci_hemisphere_directions(
                raycast.hemisphere_ray_count(settings['hemisphere_density']))
        else:
            imager.session_id = names.new_guid_hex(self.ids)
        return imager

    def set_enabled(self, sensor_id: str, enabled: bool) -> bool:
        """Switch a star tracker or relative-navigation sensor on or off; say if it exists."""
        found = False
        for tracker in self.trackers:
            if tracker.sensor.config.sensor_id == sensor_id:
                tracker.enabled, found = enabled, True
        for navigator in self.navigators:
            if navigator.sensor_id == sensor_id:
                navigator.enabled, found = enabled, True
        return found

    def _inputs(self, vessel: SimVessel, tracker: _Tracker, ut: float,
                active: bool) -> st.Inputs:
        offset = body_offset(vessel, ut)
        state = vessel.state
        occluders: list[st.Primitive] = []
        for other in self.world.vessels.values():
            occluders += st.vessel_primitives(
                other.spec.parts, other.state.position + body_offset(other, ut),
                other.state.attitude, other.mass.com, other.vessel_id)
        bodies = [st.BodyDisc(KERBIN.name, np.zeros(3), KERBIN.radius,
                              KERBIN.atmosphere_depth),
                  st.BodyDisc(MUN.name, mun_position(ut), MUN.radius, MUN.atmosphere_depth)]
        terrain, occluders = self._tracker_terrain(ut, occluders)
        return st.Inputs(
            ut=ut, attitude=np.asarray(state.attitude, dtype=float),
            position=np.asarray(state.position, dtype=float) + offset,
            sun_position=sun_position(ut), body_rate=np.asarray(state.body_rate, dtype=float),
            bodies=bodies, occluders=occluders,
            terrain=terrain, com=vessel.mass.com,
            electric_charge=electric_charge(vessel), enabled=tracker.enabled,
            packed=self.world.is_packed(vessel), active=active, vessel_id=vessel.vessel_id)

    def _tracker_terrain(self, ut: float, occluders: list) -> tuple[st.Terrain, list]:
        """Return the terrain a star tracker sees and the occluders with its boulders.

        The scenario's terrain (one site) lies on its own body, centred where that body is
        at ``ut`` (the Mun moves); without one it is Kerbin's bare sphere.
        """
        site = self.world.scenario.terrain
        if site is None:
            return st.Terrain(np.zeros(3), KERBIN.radius), occluders
        name = site.spec.body
        body = self.world.scenario.bodies[name]
        center = body_center(name, ut)
        to_fixed = body_fixed_rotation(body, ut)
        boulders = [st.Primitive('sphere', (radius,), position) for position, radius
                    in site.boulder_primitives(to_fixed.T, center)]
        return (st.Terrain(center, body.radius, lambda p: site.height(p @ to_fixed.T)),
                occluders + boulders)

    def follow_parts(self, ut: float) -> list[tuple[str, dict]]:
        """Re-home every sensor to the vessel holding its part now (after a split).

        A sensor keeps its part (persistent id) and takes the part's pose in its new
        vessel's frame; one that left the active vessel sends what a vessel switch would
        make it send: its ``inactive`` star tracker sample or LiDAR/camera notice.
        """
        holders = {(p.persistent_id or p.flight_id): (vessel, p)
                   for vessel in self.world.vessels.values() for p in vessel.spec.parts}
        active = self.world.active.key
        out: list[tuple[str, dict]] = []
        for imager in self.imagers:
            vessel, part = holders[imager.part.persistent_id or imager.part.flight_id]
            if imager.vessel_key == active != vessel.key:
                out.append(self._inactive(imager))
            imager.vessel_key, imager.part = vessel.key, part
        for navigator in self.navigators:
            vessel, part = holders[navigator.part.persistent_id or navigator.part.flight_id]
            navigator.vessel_key, navigator.part = vessel.key, part
        for tracker in self.trackers:
            config = tracker.sensor.config
            vessel, part = holders[config.part_persistent_id]
            tracker.sensor.config = replace(
                config, mount_position=tuple(float(v) for v in part.position),
                mount_rotation=tuple(float(v) for v in part.rotation))
            if tracker.vessel_key == active != vessel.key:
                sample = tracker.sensor.step(self._inputs(vessel, tracker, ut, False), 0.0)
                if sample is not None:
                    out.append(('pylon_star_tracker', sample))
                tracker.next = 0.0
            tracker.vessel_key = vessel.key
        return out

    def star_tracker_samples(self, clock: float, ut: float) -> list[dict]:
        """Return the ``pylon_star_tracker`` payloads due at ``clock`` (simulator seconds).

        Only the active vessel's trackers sample; those of a vessel that stopped being the
        active one send one ``inactive`` sample first.
        """
        out: list[dict] = []
        active = self.world.active
        if active.key != self.active_key:
            for tracker in self.trackers:
                if tracker.vessel_key == self.active_key:
                    vessel = self.world.find(tracker.vessel_key)
                    sample = tracker.sensor.step(self._inputs(vessel, tracker, ut, False), 0.0)
                    if sample is not None:
                        out.append(sample)
                    tracker.next = 0.0
            self.active_key = active.key
        for tracker in self.trackers:
            if tracker.vessel_key != active.key or clock + 1e-9 < tracker.next:
                continue
            tracker.next = max(tracker.next + tracker.sensor.period, clock)
            dt = 0.0 if tracker.last_ut is None else max(0.0, ut - tracker.last_ut)
            start = time.process_time()
            sample = tracker.sensor.step(self._inputs(active, tracker, ut, True), dt)
            self._count(st.KIND, start)
            if sample is None:        # UT has not advanced (paused): nothing is sent
                continue
            tracker.last_ut = ut
            draw_electric_charge(active, tracker.sensor.state.ec_drawn)
            out.append(sample)
        return out

    # -- relative navigation ------------------------------------------------------------
    def relative_nav_samples(self, clock: float, ut: float) -> list[dict]:
        """Return the ``pylon_relative_nav`` payloads due at ``clock`` (simulator seconds).

        Only the active vessel's sensors sample, each at its ``rate_hz`` on the simulator
        clock (``relative_nav.measure``: every other unpacked vessel on the same body in
        range). A sensor switched off (``set_enabled``) takes no sample and draws nothing;
        one whose vessel lacks the ElectricCharge of ``electric_charge_rate`` over the UT
        since its last sample takes none (``skipped``, reason ``no_power``). The runtime
        calls this only while the vessel is available and the game not paused.
        """
        active = self.world.active
        out: list[dict] = []
        for nav in self.navigators:
            if nav.vessel_key != active.key or not nav.enabled:
                nav.last_ut = None               # not running: nothing to draw for it
                continue
            if clock + 1e-9 < nav.next:
                continue
            nav.next += 1.0 / nav.settings.rate_hz
            if nav.next <= clock:           # fell behind (or was off): on from now, no burst
                nav.next = clock + 1.0 / nav.settings.rate_hz
            start = time.process_time()
            gap = 0.0 if nav.last_ut is None else ut - nav.last_ut
            nav.last_ut = ut
            if not self._nav_powered(active, nav.settings.electric_charge_rate,
                                     gap if 0.0 < gap <= NAV_DRAW_GAP_SEC else 0.0):
                self.skipped[relative_nav.KIND, 'no_power'] += 1
                continue
            others = [v for v in self.world.vessels.values() if v is not active
                      and v.body is active.body and not self.world.is_packed(v)]
            out.append(relative_nav.measure(
                active, others, ut, nav.settings, self.noise, sensor_id=nav.sensor_id,
                part_flight_id=nav.part.flight_id))
            self._count(relative_nav.KIND, start)
        return out

    @staticmethod
    def _nav_powered(vessel: SimVessel, rate: float, seconds: float) -> bool:
        """Draw ``rate`` EC/s over ``seconds`` (what there is of it); tell if it was there.

        The star tracker's rule: a sensor that draws anything needs some charge to run, even
        for its first sample (nothing to draw yet).
        """
        need = rate * seconds
        available = max(0.0, electric_charge(vessel))
        draw_electric_charge(vessel, min(need, available))
        return available >= need * (1.0 - 1e-9) and (available > EMPTY or rate == 0.0)

    # -- LiDAR and cameras --------------------------------------------------------------
    def _scene(self, ut: float) -> dict:
        """Return the world the imaging sensors see at ``ut`` (KCI)."""
        primitives: list[raycast.Primitive] = []
        origins = {}
        for vessel in self.world.vessels.values():
            rot = rotations.to_matrix(vessel.state.attitude)
            origin = vessel.state.position + body_offset(vessel, ut) - rot @ vessel.mass.com
            origins[vessel.key] = (origin, rot)
            primitives += raycast.vessel_primitives(vessel.spec.parts, origin, rot, vessel.key)
        active = self.world.active
        terrain = self.world.terrain_of(active.body.name)
        if terrain is not None:
            terrain = terrain.in_frame(body_fixed_rotation(active.body, ut))
        return {'primitives': primitives, 'origins': origins,
                'planet': (body_offset(active, ut), active.body.radius,
                           active.body.atmosphere_depth),
                'terrain': terrain, 'sun': sun_position(ut)}

    @staticmethod
    def _pose(scene: dict, vessel_key: str, part: Part, frame_position, frame_rotation):
        """Return the world position and rotation of a sensor frame on a part."""
        origin, rot = scene['origins'][vessel_key]
        part_rot = rot @ rotations.to_matrix(part.rotation)
        position = origin + rot @ np.asarray(part.position, dtype=float) \
            + part_rot @ np.asarray(frame_position, dtype=float)
        return position, part_rot @ rotations.to_matrix(frame_rotation)

    @staticmethod
    def _seen(scene: dict, vessel: SimVessel, part: Part, position: np.ndarray) -> tuple:
        """Return the primitives a sensor can see and the owners to leave out.

        The sensor's own part and any part its origin lies inside (a sensor sits on the
        surface of what holds it) are left out.
        """
        own = (vessel.key, part.flight_id)
        inside = {p.owner for p in scene['primitives']
                  if p.owner[0] == vessel.key and contains(p, position)}
        return scene['primitives'], inside | {own}

    def _lidar(self, imager: _Imager, scene: dict, vessel: SimVessel, ut: float) -> dict:
        position, rotation = self._pose(scene, vessel.key, imager.part, imager.frame_position,
                                        imager.frame_rotation)
        center, radius, _ = scene['planet']
        max_distance = imager.settings['max_distance']
        primitives, exclude = self._seen(scene, vessel, imager.part, position)
        primitives = [p for p in primitives if float(np.linalg.norm(p.center - position))
                      - p.bounding_radius <= max_distance and p.owner not in exclude]
        own = [p for p in primitives if p.owner[0] == vessel.key]
        ranges = raycast.scan(imager.directions, position, rotation, max_distance,
                              [p for p in primitives if p.owner[0] != vessel.key],
                              center, radius, scene['terrain'], exclude=exclude)
        ranges = np.minimum(ranges, self._own_ranges(imager, own, position, rotation))
        mode = '2D' if imager.kind == 'lidar_2d' else '3D'
        return raycast.lidar_scan_fields(
            mode=mode, sensor_id=imager.sensor_id, vessel=vessel.spec.name,
            part_flight_id=imager.part.flight_id, universal_time=ut, ranges=ranges,
            directions=imager.directions, max_distance=imager.settings['max_distance'],
            scan_rate_hz=imager.settings['scan_rate_hz'],
            frame_position=imager.frame_position, frame_rotation=imager.frame_rotation,
            horizontal_fov_deg=imager.settings.get('horizontal_fov_deg', 360.0),
            hemisphere_density=imager.settings.get('hemisphere_density', 0.0))

    @staticmethod
    def _own_ranges(imager: _Imager, own: list, position: np.ndarray,
                    rotation: np.ndarray) -> np.ndarray:
        """Return a LiDAR's ranges to its own vessel's parts, cast again only when they move.

        The parts sit still in the sensor frame (every pose entry within 1e-6, m or
        rotation, of the last cast's: the same ranges), so the scan reuses them until a
        part moves, comes or goes.
        """
        local = [raycast.Primitive(p.kind, p.size, rotation.T @ (p.center - position),
                                   rotation.T @ p.rotation, p.owner) for p in own]
        poses = np.array([np.concatenate([p.center, p.rotation.ravel()]) for p in local])
        owners = [p.owner for p in local]
        cached = imager.own
        if cached is not None and cached[0] == owners and cached[1].shape == poses.shape \
                and (poses.size == 0 or np.abs(cached[1] - poses).max() <= 1e-6):
            return cached[2]
        ranges = raycast.scan(imager.directions, np.zeros(3), np.eye(3),
                              imager.settings['max_distance'], local)
        imager.own = (owners, poses, ranges)
        return ranges

    def _frame(self, scene: dict, vessel: SimVessel, part: Part, settings: dict,
               frame_position, frame_rotation) -> bytes:
        position, rotation = self._pose(scene, vessel.key, part, frame_position,
                                        frame_rotation)
        center, radius, atmosphere = scene['planet']
        sun = scene['sun'] - position
        width, height = int(settings['width']), int(settings['height'])
        half_v = math.radians(settings['vertical_fov_deg']) / 2.0
        half_diagonal = math.atan(math.tan(half_v) * math.hypot(width / height, 1.0))
        primitives, exclude = self._seen(scene, vessel, part, position)
        primitives = visible([p for p in primitives if p.owner not in exclude], position,
                             rotation[:, 0], half_diagonal)
        image = render.render(
            position, rotation, sun / np.linalg.norm(sun), width=width, height=height,
            vertical_fov_deg=settings['vertical_fov_deg'], primitives=primitives,
            exclude=exclude, planet_center=center, planet_radius=radius,
            terrain=scene['terrain'], atmosphere_depth=atmosphere)
        return render.to_rgb8_bytes(image)

    def _chunks(self, raw: bytes, settings: dict, *, session_id: str, sequence: int,
                sensor_id: str, source: str, part: Part, ut: float, frame_position,
                frame_rotation, vessel: str | None) -> list[dict]:
        try:
            return camera_codec.chunk_frame(
                raw, width=int(settings['width']), height=int(settings['height']),
                session_id=session_id, sequence=sequence, sensor_id=sensor_id, source=source,
                part_flight_id=part.flight_id, universal_time=ut,
                vertical_fov_deg=settings['vertical_fov_deg'],
                frame_position=frame_position, frame_rotation=frame_rotation, vessel=vessel)
        except ProtocolError:        # the mod skips a frame it cannot send
            return []

    def imaging_packets(self, clock: float, ut: float, docking_port: tuple | None,
                        ) -> list[tuple[str, dict]]:
        """Return the LiDAR scans, camera chunks and ``…_inactive`` notices due now.

        ``docking_port`` is ``(port id, Part)`` of the port whose camera is selected on the
        active vessel, or None.
        """
        out: list[tuple[str, dict]] = []
        active = self.world.active
        for imager in self.imagers:
            if imager.vessel_key == self._imaging_key and imager.vessel_key != active.key:
                out.append(self._inactive(imager))
        selected = (active.key, docking_port[0]) if docking_port else None
        if self.docking_camera is not None and self.docking_camera != selected:
            out.append(('pylon_camera_inactive', {'source': 'docking_port',
                                                  'sensorId': self.docking_camera[1]}))
            self.docking_camera = None
        self._imaging_key = active.key
        due = [i for i in self.imagers
               if i.vessel_key == active.key and clock + 1e-9 >= i.next]
        docking_due = selected is not None and clock + 1e-9 >= self.docking_next
        if not due and not docking_due:
            return out
        scene = self._scene(ut)
        for imager in due:
            imager.next = max(imager.next + imager.period, clock)
            start = time.process_time()
            if imager.kind == 'camera':
                imager.sequence += 1
                raw = self._frame(scene, active, imager.part, imager.settings,
                                  imager.frame_position, imager.frame_rotation)
                out += [('pylon_camera_frame_chunk', chunk) for chunk in self._chunks(
                    raw, imager.settings, session_id=imager.session_id,
                    sequence=imager.sequence, sensor_id=imager.sensor_id,
                    source='rgb_camera', part=imager.part, ut=ut,
                    frame_position=imager.frame_position,
                    frame_rotation=imager.frame_rotation, vessel=active.spec.name)]
            else:
                out.append(('pylon_lidar_scan', self._lidar(imager, scene, active, ut)))
            self._count(imager.kind, start)
        if docking_due:
            start = time.process_time()
            self.docking_camera = selected
            self.docking_next = max(self.docking_next + 1.0 / DOCKING_CAMERA['rate_hz'], clock)
            self.docking_sequence += 1
            port_id, part = docking_port
            ahead = (float(part.shape.size[-1]) / 2.0 if part.shape.size else 0.0, 0.0, 0.0)
            raw = self._frame(scene, active, part, DOCKING_CAMERA, ahead, (0.0, 0.0, 0.0, 1.0))
            out += [('pylon_camera_frame_chunk', chunk) for chunk in self._chunks(
                raw, DOCKING_CAMERA, session_id=self.docking_session,
                sequence=self.docking_sequence, sensor_id=port_id, source='docking_port',
                part=part, ut=ut, frame_position=ahead,
                frame_rotation=(0.0, 0.0, 0.0, 1.0), vessel=None)]
            self._count('docking_camera', start)
        return out

    @staticmethod
    def _inactive(imager: _Imager) -> tuple[str, dict]:
        if imager.kind == 'camera':
            return 'pylon_camera_inactive', {'source': 'rgb_camera',
                                             'sensorId': imager.sensor_id,
                                             'partFlightId': imager.part.flight_id}
        return 'pylon_lidar_inactive', {'mode': '2D' if imager.kind == 'lidar_2d' else '3D',
                                        'sensorId': imager.sensor_id,
                                        'partFlightId': imager.part.flight_id}
