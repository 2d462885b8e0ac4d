"""The wheels' drive modifier (a race's boost and penalty) on the kart, flat ground, in process.

``wheels.Drive``: the torque gain and the top-speed gain raise what the motors give; the
speed cap holds the motors' target and brakes a faster vessel down to it.
"""

from dataclasses import replace

import numpy as np
from pylon_sim.game import drive_limits, wheels
from pylon_sim.loop.scenario import load_scenario
import pytest

RIG = drive_limits.Rig(load_scenario('kart'))
P = RIG.params
BOOST = wheels.Drive(torque_gain=1.5, speed_gain=1.2)


def full_drive(modifier: wheels.Drive = wheels.NORMAL) -> wheels.Commands:
    return replace(RIG.commands(spins=1000.0, drive=RIG.driven), modifier=modifier)


def test_the_normal_drive_changes_nothing():
    RIG.reset()
    RIG.set_rolling(5.0)
    start = (RIG.state, RIG.wheels)
    plain = RIG.run(1.0, RIG.commands(spins=1000.0, drive=RIG.driven))[-1]
    RIG.state, RIG.wheels = start
    same = RIG.run(1.0, full_drive(wheels.Drive()))[-1]      # an equal modifier, not NORMAL
    assert same.speed == plain.speed and np.array_equal(same.rear_axle, plain.rear_axle)


def test_a_boost_gives_more_torque_and_a_higher_top_speed():
    RIG.reset()
    RIG.set_rolling(10.0)
    plain = RIG.run(2.0, full_drive())
    torque = RIG.wheels.drive_torque[RIG.driven].copy()
    RIG.reset()
    RIG.set_rolling(10.0)
    boosted = RIG.run(2.0, full_drive(BOOST))
    # at 10 m/s: 56 N m x (1 - 10 / 16.5) against 1.5 x 56 N m x (1 - 10 / 19.8)
    assert RIG.wheels.drive_torque[RIG.driven] == pytest.approx(
        torque * 1.5 * (1 - boosted[-1].speed / 19.8) / (1 - plain[-1].speed / 16.5), rel=0.05)
    assert boosted[-1].speed - 10.0 > 1.8 * (plain[-1].speed - 10.0)
    # the top speed: where the torque curve meets rolling resistance, 1.2 x further out
    RIG.set_rolling(19.0 - boosted[-1].speed)
    top = RIG.run(6.0, full_drive(BOOST))[-1].speed
    drive = float(np.sum(P.max_torque)) / P.radius[0]
    rolling = P.rolling[0] * RIG.mass * RIG.g
    assert top == pytest.approx(16.5 * 1.2 * (1 - rolling / (1.5 * drive)), rel=0.02)
    assert top > 19.0 > 16.5


def test_a_speed_cap_brakes_a_driven_or_coasting_kart_down_to_it_and_holds_it():
    for commands in (full_drive(wheels.Drive(speed_cap=2.0)),
                     replace(RIG.commands(), modifier=wheels.Drive(speed_cap=2.0))):
        RIG.reset()
        RIG.set_rolling(12.0)
        motion = RIG.run(4.0, commands)
        speeds = np.array([m.speed for m in motion])
        assert speeds[-1] <= 2.05
        assert np.all(np.diff(speeds[:25]) < 0.0)        # braking from the first step
        assert 1.0 < speeds[:100].mean() - 2.0           # not at once: the brakes act
    RIG.reset()                                          # a driven kart holds the cap
    motion = RIG.run(5.0, full_drive(wheels.Drive(torque_gain=1.5, speed_gain=1.2,
                                                  speed_cap=2.0)))
    assert motion[-1].speed == pytest.approx(2.0, abs=0.05)
    assert max(m.speed for m in motion) <= 2.1
