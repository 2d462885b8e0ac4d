"""A camera frame over terrain: the reference cast against the camera's terrain cast.

The kart scenario's camera (``pylonCamera``, 320 x 240, 60 deg, 10 deg down the track, the
scenario's 14 craters and 60 boulders) on the grid: the CPU time of ``render.pixel_hits``
(what every pixel hits) and of a whole frame (``imaging.frame``: hits, shading, bytes),
with the reference cast (``reference=True``: ``raycast.cast_full`` on every planet pixel)
and the fast one (``terrain_near``: each crater and boulder on the pixels it covers), the
median of ``REPEATS``; and how many pixels the two see differently. Then the fast frame
(``render.render``) from ``TRACK_POSES`` poses along the track (the camera's height and
tilt, looking along the centreline): the median, 90th percentile and largest of their
CPU times (each the least of 3). Prints one JSON object; ``python bench/bench_camera.py``.
"""

from __future__ import annotations

import json
import statistics
import time

import numpy as np
from pylon_protocol.threads import limit_threads
from pylon_sim.game.world import World
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.sensors import imaging, render
from pylon_sim.sensors.sensing import Sensing

REPEATS = 9
TRACK_POSES = 25


def track_poses(scene: dict, height: float, tilt_deg: float) -> list[tuple]:
    """Return camera poses (world position, ``ros_sensor`` -> world) along the track.

    ``height`` m above the field at evenly spaced centreline points, looking along the
    centreline ``tilt_deg`` down.
    """
    terrain = scene['terrain']
    center = scene['planet'][0]
    fixed = terrain.frame_rotation
    points = np.asarray(terrain.spec.keep_out.points)
    east, north, _ = terrain.enu
    poses = []
    for i in range(0, len(points), max(1, len(points) // TRACK_POSES)):
        here, ahead = points[i], points[(i + 1) % len(points)]
        up = terrain.up_of(here[None])[0]
        forward = (ahead - here)[0] * east + (ahead - here)[1] * north
        forward -= (forward @ up) * up
        forward /= np.linalg.norm(forward)
        tilt = np.radians(tilt_deg)
        look = np.cos(tilt) * forward - np.sin(tilt) * up
        left = np.cross(up, look) / np.linalg.norm(np.cross(up, look))
        rotation = fixed.T @ np.column_stack([look, left, np.cross(look, left)])
        lift = terrain.body_radius + terrain.field(here[None])[0][0] + height
        poses.append((center + fixed.T @ (up * lift), rotation))
    return poses


def track_ms(scene: dict, position: np.ndarray, rotation: np.ndarray, kw: dict) -> dict:
    """Return the fast frame's CPU ms along the track: median, 90th percentile, largest."""
    center, radius = kw['planet_center'], kw['planet_radius']
    height = float(np.linalg.norm(position - center)) - radius \
        - float(scene['terrain'].height((position - center)[None] @ scene[
            'terrain'].frame_rotation.T)[0])
    up = (position - center) / np.linalg.norm(position - center)
    tilt = float(np.degrees(np.arcsin(-rotation[:, 0] @ up)))
    times = []
    for pose in track_poses(scene, height, tilt):
        def call(pose=pose):
            render.render(*pose, (0.3, -0.5, 0.8), atmosphere_depth=scene['planet'][2], **kw)
        call()
        runs = []
        for _ in range(3):
            start = time.process_time()
            call()
            runs.append(time.process_time() - start)
        times.append(1e3 * min(runs))
    return {'track_poses': len(times), 'track_frame_ms_median': round(float(np.median(times)), 2),
            'track_frame_ms_p90': round(float(np.percentile(times, 90)), 2),
            'track_frame_ms_max': round(max(times), 2)}


def median_ms(call) -> float:
    """Return the median CPU ms of ``REPEATS`` calls (after one warm-up call)."""
    call()
    times = []
    for _ in range(REPEATS):
        start = time.process_time()
        call()
        times.append(time.process_time() - start)
    return round(1e3 * statistics.median(times), 2)


def main() -> int:
    """Measure and print one JSON object."""
    limit_threads()
    world = World(load_scenario('kart'))
    scene = imaging.scene(world, world.ut)
    vessel = world.active
    imager = next(i for i in Sensing(world).imagers if i.kind == 'camera')
    position, rotation = imaging.pose(scene, vessel.key, imager.part, (0, 0, 0),
                                      (0, 0, 0, 1))
    center, radius, _ = scene['planet']
    kw = {'planet_center': center, 'planet_radius': radius, 'terrain': scene['terrain'],
          'width': int(imager.settings['width']), 'height': int(imager.settings['height']),
          'vertical_fov_deg': imager.settings['vertical_fov_deg']}
    result = {'benchmark': 'camera', 'scenario': 'kart', 'width': kw['width'],
              'height': kw['height']}
    for name, reference in (('reference', True), ('fast', False)):
        result[f'{name}_hits_ms'] = median_ms(
            lambda r=reference: render.pixel_hits(position, rotation, reference=r, **kw))
        result[f'{name}_frame_ms'] = median_ms(
            lambda r=reference: imaging.frame(scene, vessel, imager.part, imager.settings,
                                              (0, 0, 0), (0, 0, 0, 1), reference=r))
    result['frame_ratio'] = round(result['reference_frame_ms'] / result['fast_frame_ms'], 2)
    reference = render.pixel_hits(position, rotation, reference=True, **kw)
    fast = render.pixel_hits(position, rotation, **kw)
    hit = np.isfinite(reference.ranges) & np.isfinite(fast.ranges)
    result['pixels'] = len(fast.ranges)
    result['pixels_hitting_another_thing'] = int((reference.what != fast.what).sum())
    result['max_range_difference_m'] = float(
        np.abs(reference.ranges[hit] - fast.ranges[hit]).max())
    result.update(track_ms(scene, position, rotation, kw))
    result['target_frame_ms'] = 20.0
    result['pass'] = result['fast_frame_ms'] <= 20.0
    print(json.dumps(result))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
