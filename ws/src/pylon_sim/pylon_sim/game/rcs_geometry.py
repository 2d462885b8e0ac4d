"""Where an RCS module's nozzles sit and which way they fire, from the module's settings.

KSP gives an RCS part its nozzles as ``thrusterTransforms``; a module here lists them in
its settings (``rcs_layout``), all in part axes:

- ``nozzles``: ``[{position: [x, y, z], direction: [x, y, z]}, ...]`` (m from the part
  origin; ``direction`` as KSP defines a thruster transform: the way the exhaust leaves);
- else ``thrust_directions``: each entry a nozzle ``nozzle_arm`` (default 0.1 m) from the
  part origin along its exhaust direction;
- else an RV-105 quad: four nozzles in a cross in the part's XY plane, exhaust along part
  +X, -X, +Y, -Y, each 0.1 m out along its exhaust.

With ``use_z_axis: true`` (KSP's ``useZaxis``) every nozzle uses the part's +Z axis as its
exhaust axis instead (a module that lists no nozzle then has one, at the part origin).
The allocation turns the layout into forces on the vessel; the packets report its nozzle
count. A layout is parsed once (``layout_arrays`` keeps up to ``MAX_LAYOUTS``): geometry
runs every frame.
"""

from __future__ import annotations

from collections.abc import Mapping
import math

import numpy as np

from pylon_sim.game.vessel import flag_setting, number_setting

NOZZLE_ARM = 0.1        # m, nozzle from the part origin when a module lists no positions
RV105_EXHAUSTS = ((1.0, 0.0, 0.0), (-1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, -1.0, 0.0))
LAYOUT_KEYS = ('nozzles', 'thrust_directions', 'nozzle_arm', 'use_z_axis')
MAX_LAYOUTS = 256       # distinct nozzle layouts kept parsed (geometry runs every frame)
_LAYOUTS: dict[str, tuple[np.ndarray, np.ndarray]] = {}
_TINY = 1e-12


def rcs_layout(conf: Mapping[str, object]) -> list[tuple[np.ndarray, np.ndarray]]:
    """
    Return ``(position, exhaust direction)`` of each nozzle of an RCS module, part axes.

    ``conf`` is the module's settings (module docstring: ``nozzles``, else
    ``thrust_directions`` at ``nozzle_arm``, else the RV-105 cross; ``use_z_axis``). Raise
    ValueError with the reason when a setting is malformed.
    """
    use_z = flag_setting(conf, 'use_z_axis', False)
    listed = conf.get('nozzles')
    if listed is not None:
        if not isinstance(listed, list | tuple) or not listed:
            raise ValueError('nozzles must be a non-empty list of {position, direction}')
        pairs = [(_vector3(entry, 'position'), _vector3(entry, 'direction'))
                 for entry in listed]
    else:
        arm = number_setting(conf, 'nozzle_arm', math.nan) if 'nozzle_arm' in conf \
            else NOZZLE_ARM
        if not arm >= 0.0:
            raise ValueError(f'nozzle_arm must be a number >= 0, got {conf["nozzle_arm"]!r}')
        entries = conf.get('thrust_directions')
        if entries is None:
            entries = [] if use_z else RV105_EXHAUSTS
        if not isinstance(entries, list | tuple) or not (entries or use_z):
            raise ValueError('thrust_directions must be a non-empty list of 3-vectors')
        directions = [_vector3({'direction': entry}, 'direction') for entry in entries]
        pairs = [(arm * d / np.linalg.norm(d), d) for d in directions]
    if use_z:
        pairs = [(p, np.array([0.0, 0.0, 1.0])) for p, _ in pairs] or \
            [(np.zeros(3), np.array([0.0, 0.0, 1.0]))]
    return pairs


def _vector3(entry: object, key: str) -> np.ndarray:
    value = entry.get(key) if isinstance(entry, Mapping) else None
    try:
        vector = np.array(value, dtype=float) if isinstance(value, list | tuple) else None
    except (TypeError, ValueError):
        vector = None
    if vector is None or vector.shape != (3,) or not np.isfinite(vector).all():
        raise ValueError(f'nozzle {key} must be 3 finite numbers, got {value!r}')
    if key == 'direction' and float(vector @ vector) <= _TINY * _TINY:
        raise ValueError('a nozzle direction is zero')
    return vector


def layout_arrays(conf: Mapping[str, object]) -> tuple[np.ndarray, np.ndarray]:
    """Return ``rcs_layout`` as (N x 3 positions, N x 3 exhausts), parsed once per layout."""
    key = repr([conf.get(k) for k in LAYOUT_KEYS])
    found = _LAYOUTS.get(key)
    if found is None:
        layout = rcs_layout(conf)
        found = (np.array([p for p, _ in layout]), np.array([d for _, d in layout]))
        if len(_LAYOUTS) < MAX_LAYOUTS:
            _LAYOUTS[key] = found
    return found


def nozzle_count(conf: Mapping[str, object]) -> int:
    """Return how many nozzles an RCS module's layout has (``rcs_layout``, parsed once)."""
    return len(layout_arrays(conf)[0])
