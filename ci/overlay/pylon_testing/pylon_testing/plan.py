"""The workspace's launch plan for tests and benchmarks: ``launch/pylon_components.py``.

The plan lives beside the launch file (``launch/``, not a package); tests and benchmarks
import it from the repository they run in with ``load_components(root)``, once per
process (the module registers itself, as its dataclasses need).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
import sys
from types import ModuleType

MODULE = 'pylon_components'


def load_components(root: Path) -> ModuleType:
    """Return ``<root>/launch/pylon_components.py`` as the module ``pylon_components``."""
    if MODULE in sys.modules:
        return sys.modules[MODULE]
    spec = importlib.util.spec_from_file_location(MODULE, Path(root) / 'launch' / f'{MODULE}.py')
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE] = module          # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module
