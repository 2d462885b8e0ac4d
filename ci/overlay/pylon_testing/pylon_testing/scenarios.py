"""Scenario files for tests: a shipped scenario, changed per vessel, written to a folder.

``write_scenario(folder, 'orbit', changes={'sat': {'orbit': {...}}})`` copies a scenario of
``pylon_sim``; ``lean`` (the default) leaves the LiDAR and camera modules out (their parts
stay), so a test that does not look at images or scans does not pay for rendering them.
``write_ring_race`` writes a race of karts on a small ring track that a constant steering
angle laps (``ring_steering``), so that a test drives whole laps without a controller.
No ROS here: the simulator's own tests use it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
import math
from pathlib import Path

from pylon_sim.loop.scenario import load_scenario
from pylon_track import load_track
import yaml

IMAGING = ('lidar_2d', 'lidar_3d', 'camera')
"""Module kinds a lean scenario leaves out."""


def write_scenario(directory: Path, name: str, *, lean: bool = True,
                   changes: dict | None = None, modules: dict | None = None,
                   task: dict | None = None) -> str:
    """Write a copy of a shipped scenario (lean: no LiDAR or camera modules); return its path.

    ``changes`` maps a vessel key to top-level vessel keys to replace (e.g. ``orbit``);
    ``task`` holds mission task keys to replace (e.g. a shorter ``hold_sec``);
    ``modules`` maps a vessel key to ``{part name: [module, ...]}``, modules added to
    those parts (e.g. a ``relative_nav`` sensor on the orbit satellite's probe core).
    """
    data = yaml.safe_load(Path(load_scenario(name).path).read_text(encoding='utf-8'))
    if task:
        data['task'] = {**data['task'], **task}
    for vessel in data['vessels']:
        vessel.update((changes or {}).get(vessel['key'], {}))
        added = (modules or {}).get(vessel['key'], {})
        for part in vessel['parts']:
            if lean and part.get('modules'):
                part['modules'] = [m for m in part['modules'] if m['kind'] not in IMAGING]
            if part['name'] in added:
                part['modules'] = [*part.get('modules', []), *added[part['name']]]
    path = Path(directory) / f'{name}_{len(list(Path(directory).iterdir()))}.yaml'
    path.write_text(yaml.safe_dump(data), encoding='utf-8')
    return str(path)


def write_crowd(directory: Path, *, lean: bool = False, modules: dict | None = None) -> str:
    """Write the orbit scenario crowded for the nearby-vessel rules; return its path.

    The sat (with ``modules`` added as ``write_scenario`` adds them), 40 copies of the
    target on its orbit 20 + 50 i m ahead (ids 1..40 as 32 hex), one 2 600 m ahead (id
    100), a packed one 10 m ahead (id 101) and one around the Mun (id 102).
    """
    path = Path(write_scenario(directory, 'orbit', lean=lean, modules=modules))
    data = yaml.safe_load(path.read_text(encoding='utf-8'))
    sat, template = data['vessels'][0], data['vessels'][1]

    def copy(key: str, number: int, orbit: dict, **extra: object) -> dict:
        return {**template, 'key': key, 'vessel_id': f'{number:032x}', 'orbit': orbit,
                **extra}

    kerbin = {'body': 'Kerbin', 'altitude': 100000}
    data['vessels'] = [sat, *(copy(f'near{i}', i + 1, {**kerbin, 'along_track': 20.0 + 50.0 * i})
                              for i in range(40)),
                       copy('far', 100, {**kerbin, 'along_track': 2600}),
                       copy('packed', 101, {**kerbin, 'along_track': 10}, packed=True),
                       copy('munar', 102, {'body': 'Mun', 'altitude': 10000})]
    path.write_text(yaml.safe_dump(data), encoding='utf-8')
    return str(path)


RING_RADIUS_M = 10.0
"""m, the centreline radius of the tests' ring track (``write_ring_track``)."""
RING_WIDTH_M = 12.0
"""m, its width: room for a kart held at one steering angle to drift a little."""
KART_WHEELBASE_M = 1.05
KART_REAR_AXLE_M = 0.425
"""m, the kart's wheelbase and its rear axle behind its centre of mass (the kart scenario)."""
KART_UNDERSTEER = 0.0045
"""rad of steering per m/s² of lateral acceleration the kart needs beyond the kinematic
angle (its tyres slip outwards): measured lock-stepped on a ring of 12 m at 6.3 m/s; on the
ring of 10 m at 6.4 and 5.9 m/s (wheels at 46 and 42 rad/s) the karts on grid slots 0 and 1
stay within 0.9 and 1.3 m of their slot's lane (lap 8.7 and 13.3 s)."""


def write_ring_track(directory: Path, radius: float = RING_RADIUS_M,
                     width: float = RING_WIDTH_M) -> str:
    """Write a ring track: a circle of ``radius`` m about the kart circuit's origin.

    Three sections; driven anticlockwise from the line at ``(0, -radius)`` heading east;
    ``width`` wide; the kart circuit's origin and grid (4 m apart, alternately 1.5 m left
    and right). Return the file's path.
    """
    kart = load_track('kart')
    length = 2.0 * math.pi * radius
    data = {
        'name': 'ring', 'description': f'a ring of {radius:g} m for the tests',
        'origin': asdict(kart.origin), 'width': width,
        'start': {'x': 0.0, 'y': -radius, 'heading_deg': 0.0},
        'segments': [{'arc': radius, 'turn_deg': 180}, {'arc': radius, 'turn_deg': 180}],
        'sections': [0.0, round(length / 3.0, 3), round(2.0 * length / 3.0, 3)],
        'grid': [{'behind': behind, 'left': left} for behind, left in kart.grid],
    }
    path = Path(directory) / f'ring_{radius:g}.yaml'
    path.write_text(yaml.safe_dump(data), encoding='utf-8')
    return str(path)


def ring_steering(slot: int, speed: float, radius: float = RING_RADIUS_M) -> float:
    """Return the steering angle (rad, + left) that drives a kart on ``slot`` round the ring.

    At ``speed`` (m/s): the kinematic angle of the circle through the kart's centre of
    mass concentric with the ring (its grid slot's offset from the centreline kept all
    round), and the understeer's share (``KART_UNDERSTEER``).
    """
    left = load_track('kart').grid[slot][1]
    centre = radius - left                      # the centre of mass's circle
    rear = math.sqrt(centre ** 2 - KART_REAR_AXLE_M ** 2)
    return math.atan(KART_WHEELBASE_M / rear) + KART_UNDERSTEER * speed ** 2 / centre


def write_ring_race(directory: Path, karts: int = 2, *, radius: float = RING_RADIUS_M,
                    task: dict | None = None, lean: bool = True,
                    grid: Sequence[int] | None = None) -> str:
    """Write the race scenario with its first ``karts`` karts on the ring (its grid slots).

    ``task`` holds race keys to replace (a short ``laps`` and ``time_limit_sec``); the
    terrain keeps its craters and boulders off the ring. ``grid``: the slot of each kart
    kept (default: their own, 0 ..). Return the scenario's path.
    """
    ring = write_ring_track(directory, radius)
    path = Path(write_scenario(directory, 'race', lean=lean,
                               task={**(task or {}), 'track': ring}))
    data = yaml.safe_load(path.read_text(encoding='utf-8'))
    data['vehicles'] = data['vehicles'][:karts]
    data['vessels'] = [v for v in data['vessels'] if v['key'] in data['vehicles']]
    for k, vessel in enumerate(data['vessels']):
        vessel['surface'] = {**vessel['surface'], 'track': ring}
        if grid is not None:
            vessel['surface']['grid'] = int(grid[k])
    data['terrain']['track'] = ring
    path.write_text(yaml.safe_dump(data), encoding='utf-8')
    return str(path)
