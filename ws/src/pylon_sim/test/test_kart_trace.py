"""The kart's physics, pinned: 200 frames of a seeded run against a recorded trace.

The kart (``kart`` scenario) settles on its wheels for 40 frames, drives its rear wheels
toward 40 rad/s with the front wheels steered 0.2 rad then -0.1 rad, and brakes at half
its brake torque for the last 40 frames. Every tenth frame's rigid state, specific force
and wheel state must match ``data/kart_trace.json`` (recorded before the wheel and rover
numerics were made cheaper) to ``TOLERANCE`` (relative and absolute): float rounding, which
differs between CPUs (numpy's vector kernels: up to 2e-8 relative, 4e-6 N of wheel force,
between the machine that recorded it and a later one), far below what any change to the
physics moves. Re-record (only for a change meant to
alter the physics) with ``python ws/src/pylon_sim/test/test_kart_trace.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from pylon_sim.game.world import World
from pylon_sim.loop.scenario import load_scenario

TRACE = Path(__file__).parent / 'data' / 'kart_trace.json'
FRAMES = 200
EVERY = 10
STATE = ('position', 'velocity', 'attitude', 'body_rate')
TOLERANCE = 1e-6
WHEELS = ('angle', 'omega', 'deflection', 'grounded', 'steering', 'drive_torque',
          'brake_torque', 'slip', 'load', 'force', 'arm')


def command(frame: int, names: tuple[str, ...]) -> dict:
    """Return the wheel commands of one frame (empty while the kart settles)."""
    if frame < 40:
        return {}
    braking = frame >= 160
    steer = 0.2 if frame < 110 else -0.1
    return {name: {'enabled': not braking, 'commanded': True, 'max_drive_torque': 0.0,
                   'target_angular_velocity': 40.0 if k >= 2 and not braking else 0.0,
                   'steering_angle': steer if k < 2 else 0.0,
                   'brake': 0.5 if braking else 0.0}
            for k, name in enumerate(names)}


def trace() -> list[dict]:
    """Run the kart ``FRAMES`` frames; return every ``EVERY``-th frame's state as lists."""
    world = World(load_scenario('kart'))
    kart = world.active
    names = world.wheel_params(kart).names
    rows = []
    for frame in range(FRAMES):
        world.step(wheel_commands={kart.key: command(frame, names)})
        if frame % EVERY == EVERY - 1:
            row = {'ut': world.ut, 'specific_force': kart.specific_force.tolist()}
            row.update({key: np.asarray(getattr(kart.state, key)).tolist() for key in STATE})
            row.update({f'wheel_{key}': np.asarray(getattr(kart.wheel_state, key),
                                                   dtype=float).tolist() for key in WHEELS})
            rows.append(row)
    return rows


def test_the_kart_follows_its_recorded_trace():
    recorded = json.loads(TRACE.read_text(encoding='utf-8'))
    now = trace()
    assert len(now) == len(recorded) == FRAMES // EVERY
    # it moved: settled, drove a curve, braked
    assert max(abs(w) for w in recorded[15]['wheel_omega']) > 10.0
    for frame, (got, want) in enumerate(zip(now, recorded)):
        assert got.keys() == want.keys()
        for key in want:
            np.testing.assert_allclose(np.asarray(got[key]), np.asarray(want[key]),
                                       rtol=TOLERANCE, atol=TOLERANCE,
                                       err_msg=f'row {frame} {key}')


if __name__ == '__main__':
    TRACE.parent.mkdir(exist_ok=True)
    TRACE.write_text(json.dumps(trace()), encoding='utf-8')
