"""The data a game starts from lives in ``save``; the YAML loader stays above the game."""

import subprocess
import sys

from pylon_sim.game import save
from pylon_sim.loop import scenario
from pylon_sim.loop.scenario import load_scenario

MOVED = ('OrbitStart', 'SurfaceStart', 'VesselStart', 'Task', 'TASK_KINDS', 'TASK_DEFAULTS',
         'Scenario')


def test_the_loader_returns_the_save_s_dataclasses_and_re_exports_them():
    for name in MOVED:
        assert getattr(scenario, name) is getattr(save, name), name
    loaded = load_scenario('rendezvous')
    assert isinstance(loaded, save.Scenario) and isinstance(loaded.task, save.Task)
    assert all(isinstance(v, save.VesselStart) for v in loaded.vessels)
    assert isinstance(loaded.vessels[0].start, (save.OrbitStart, save.SurfaceStart))


def test_the_game_starts_without_the_scenario_loader():
    code = ('import sys, pylon_sim.game.world, pylon_sim.game.propellant; '
            'print(sorted(m for m in sys.modules if m.startswith("pylon_sim.")))')
    loaded = subprocess.run([sys.executable, '-c', code], check=True, capture_output=True,
                            text=True).stdout
    assert 'pylon_sim.game.save' in loaded and 'pylon_sim.game.world' in loaded
    for above in ('pylon_sim.loop.scenario', 'pylon_sim.mod.allocation', 'pylon_sim.loop.runtime',
                  'pylon_sim.mod.vehicle_manager', 'pylon_sim.sensors.relative_nav'):
        assert f"'{above}'" not in loaded, (above, loaded)
