"""What collisions cost: ``World.step`` with four karts, with and without contacts.

Four copies of the ``kart`` scenario's kart on grid slots 0..3 of the kart circuit (slots
4 m apart, 1.5 m either side of the centreline: slots 0 and 2 share a lane, 1 and 3 the
other), one ``World`` in this process, lock-stepped, pinned to one core; physics only (no
sensors, no packets). Each phase runs ``STEPS`` physics steps (0.02 s) twice: as shipped
(``contacts``: the world's ``collisions.Collisions``) and with the contact hook replaced by
one that does nothing (``no_contacts``), ``REPEATS`` times each, keeping the least CPU
(the machine is shared; the least is the run others disturbed least).

- ``grid``: the four karts standing on the grid (no contact: the broad phase only);
- ``driving``: all four driven straight on (rear wheels toward 40 rad/s): no contact;
- ``pushing``: karts 2 and 3 driven into karts 0 and 1 ahead of them in their lanes (idle,
  brakes off) and pushing them on: after about 1.3 s, two contacts in every step.

Per phase: CPU ms per step of ``World.step`` (``step_ms``) with and without contacts, the
contact hook's own CPU ms per step (``hook_ms``, the mean over the phase) and its share
of the step, the steps with a kart touching another and the collisions logged.
``python bench/bench_contact.py`` prints one JSON object.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import tempfile
import time

from pylon_protocol.threads import limit_threads
from pylon_sim.game.world import World
from pylon_sim.loop.scenario import load_scenario
import yaml

STEPS = 400                    # 8 s of game time
REPEATS = 3
DRIVE = 40.0                   # rad/s of the rear wheels
SOLID = ('wheel', 'command')   # the modules kept (parts all stay)


class Timed:
    """The world's contact hook, timed: CPU seconds spent in it."""

    def __init__(self, hook) -> None:
        """Time ``hook`` (a ``collisions.Collisions``)."""
        self.hook, self.seconds = hook, 0.0

    def step(self, *args) -> None:
        """Resolve the step's contacts (the hook's own ``step``), timed."""
        start = time.process_time()
        self.hook.step(*args)
        self.seconds += time.process_time() - start


class Off:
    """No contacts: the hook does nothing."""

    seconds = 0.0

    def step(self, *args) -> None:
        """Do nothing."""


def grid_scenario(folder: Path) -> str:
    """Write the kart scenario with four karts on grid slots 0..3; return its path.

    The parts stay; their sensor modules go (the world steps no sensor).
    """
    data = yaml.safe_load(Path(load_scenario('kart').path).read_text(encoding='utf-8'))
    kart = data['vessels'][0]
    for part in kart['parts']:         # physics only: the sensors' modules go (ids are unique)
        part['modules'] = [m for m in part.get('modules', []) if m['kind'] in SOLID]
    data['vessels'] = [{**kart, 'key': f'kart{k}', 'vessel_id': kart['vessel_id'][:-1] + str(k),
                        'surface': {**kart['surface'], 'grid': k}} for k in range(4)]
    data['active'] = 'kart0'
    path = folder / 'grid4.yaml'
    path.write_text(yaml.safe_dump(data), encoding='utf-8')
    return str(path)


def commands(world: World, keys: tuple[str, ...]) -> dict:
    """Return wheel commands driving the rear wheels of ``keys`` straight on."""
    out = {}
    for key in keys:
        names = world.wheel_params(world.vessels[key]).names
        out[key] = {name: {'enabled': True, 'commanded': True, 'max_drive_torque': 0.0,
                           'target_angular_velocity': DRIVE if k >= 2 else 0.0,
                           'steering_angle': 0.0, 'brake': 0.0}
                    for k, name in enumerate(names)}
    return out


PHASES = {'grid': (), 'driving': ('kart0', 'kart1', 'kart2', 'kart3'),
          'pushing': ('kart2', 'kart3')}


def run(path: str, driven: tuple[str, ...], contacts: bool) -> dict:
    """Run one phase once; return its CPU figures."""
    world = World(load_scenario(path))
    hook = Timed(world.contacts) if contacts else Off()
    world.contacts = hook
    wheel_commands = commands(world, driven)
    touching = 0
    start = time.process_time()
    for _ in range(STEPS):
        world.step(wheel_commands=wheel_commands)
        touching += bool(contacts and hook.hook.touching)
    cpu = time.process_time() - start
    return {'step_ms': 1000.0 * cpu / STEPS, 'hook_ms': 1000.0 * hook.seconds / STEPS,
            'touching_steps': touching,
            'collisions': len(hook.hook.events) if contacts else 0}


def main() -> None:
    """Run every phase with and without contacts; print one JSON object."""
    limit_threads()
    if hasattr(os, 'sched_setaffinity'):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    result: dict = {'steps': STEPS, 'repeats': REPEATS, 'karts': 4}
    with tempfile.TemporaryDirectory() as folder:
        path = grid_scenario(Path(folder))
        for phase, driven in PHASES.items():
            runs = {mode: min((run(path, driven, mode == 'contacts') for _ in range(REPEATS)),
                              key=lambda r: r['step_ms'])
                    for mode in ('contacts', 'no_contacts')}
            with_, without = runs['contacts'], runs['no_contacts']
            result[phase] = {
                'step_ms': round(with_['step_ms'], 3),
                'step_ms_no_contacts': round(without['step_ms'], 3),
                'hook_ms': round(with_['hook_ms'], 3),
                'hook_share': round(with_['hook_ms'] / with_['step_ms'], 4),
                'touching_steps': with_['touching_steps'],
                'collisions': with_['collisions']}
    print(json.dumps(result))


if __name__ == '__main__':
    main()
