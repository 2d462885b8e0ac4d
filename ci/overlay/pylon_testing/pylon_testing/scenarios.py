"""Scenario files for tests: a shipped scenario, changed per vessel, written to a folder.

``write_scenario(folder, 'orbit', changes={'sat': {'orbit': {...}}})`` copies a scenario of
``pylon_sim``; ``lean`` (the default) leaves the LiDAR and camera modules out (their parts
stay), so a test that does not look at images or scans does not pay for rendering them.
No ROS here: the simulator's own tests use it too.
"""

from __future__ import annotations

from pathlib import Path

from pylon_sim.loop.scenario import load_scenario
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
