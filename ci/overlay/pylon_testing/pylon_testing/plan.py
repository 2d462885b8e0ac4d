"""The workspace's launch plan for tests and benchmarks: ``launch/pylon_components.py``.

The plan lives beside the launch file (``launch/``, not a package); tests and benchmarks
import it from the repository they run in with ``load_components(root)``, once per
process (the module registers itself, as its dataclasses need); ``load_launch_module`` the
demo's modules beside it (``race_demo``, ``kart_demo``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
import sys
from types import ModuleType

from pylon_common.parameters import file_section
from pylon_common.topics import SETPOINT_CONTROLLER
import yaml

MODULE = 'pylon_components'


def load_components(root: Path) -> ModuleType:
    """Return ``<root>/launch/pylon_components.py`` as the module ``pylon_components``."""
    return load_launch_module(root, MODULE)


def load_launch_module(root: Path, name: str) -> ModuleType:
    """Return ``<root>/launch/<name>.py`` as the module ``name`` (e.g. ``race_demo``).

    The demo modules import their neighbours themselves (``native_demo`` does the same).
    """
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(root) / 'launch' / f'{name}.py')
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module            # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def room_for_stalls(folder: Path, rate: float) -> str:
    """Write a controller overlay giving it room for a stall of a busy machine; return its path.

    On game time at ``rate`` a stall of s wall seconds is rate x s game seconds: the lease
    gets ``rate`` x 2 s (2 s of wall time, the fault matrix's room), the two timeouts 3 s of
    wall time (as test_controller_with_sim gives them), so that the controller does not
    disarm in the middle of a slew. With 1 s of wall time, a start on a machine running the
    suite lost the lease at once: the acquisition was confirmed about 1 s of wall time after
    it was sent, before the game waits for the controller (from its first wrench on), and the
    controller, which times the lease on game time, found it run out. For ``DEMO_OVERLAYS``.
    """
    path = folder / 'room_for_stalls.yaml'
    # keyed as every parameter file is ('/**/<node>'): the controller in any namespace
    path.write_text(yaml.safe_dump({file_section(SETPOINT_CONTROLLER): {'ros__parameters': {
        'lease_duration_sec': 2.0 * rate, 'setpoint_timeout_sec': 3.0 * rate,
        'input_timeout_sec': 3.0 * rate}}}), encoding='utf-8')
    return str(path)
