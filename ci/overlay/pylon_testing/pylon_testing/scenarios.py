"""Scenario files for tests: a shipped scenario, changed per vessel, written to a folder.

``write_scenario(folder, 'orbit', changes={'sat': {'orbit': {...}}})`` copies a scenario of
``pylon_sim``; ``lean`` (the default) leaves the LiDAR and camera modules out (their parts
stay), so a test that does not look at images or scans does not pay for rendering them.
No ROS here: the simulator's own tests use it too.
"""

from __future__ import annotations

from pathlib import Path

from pylon_sim.scenario import load_scenario
import yaml

IMAGING = ('lidar_2d', 'lidar_3d', 'camera')
"""Module kinds a lean scenario leaves out."""


def write_scenario(directory: Path, name: str, *, lean: bool = True,
                   changes: dict | None = None) -> str:
    """Write a copy of a shipped scenario (lean: no LiDAR or camera modules); return its path.

    ``changes`` maps a vessel key to top-level vessel keys to replace (e.g. ``orbit``).
    """
    data = yaml.safe_load(Path(load_scenario(name).path).read_text(encoding='utf-8'))
    for vessel in data['vessels']:
        vessel.update((changes or {}).get(vessel['key'], {}))
        for part in vessel['parts']:
            if lean and part.get('modules'):
                part['modules'] = [m for m in part['modules'] if m['kind'] not in IMAGING]
    path = Path(directory) / f'{name}_{len(list(Path(directory).iterdir()))}.yaml'
    path.write_text(yaml.safe_dump(data), encoding='utf-8')
    return str(path)
