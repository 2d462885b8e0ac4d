"""The control's audit of the steps that pushed: when a commanded output acted, and when not.

``VehicleManager`` notes per physics step whether a commanded output acted (``pushed_steps``,
``pushed_at``, ``pushing_since``) and whether a command was in force (``commanded_steps``);
the fault matrix measures its times to safe, "kept flying" and "flew again" from them.
"""

from dataclasses import replace

import numpy as np
from pylon_sim.game.world import World
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.mod.vehicle_manager import VehicleManager
import pytest

DT = 0.02


@pytest.fixture
def vessel():
    return World(load_scenario('orbit')).active


def identity(sequence, vessel):
    return {'vesselId': vessel.vessel_id, 'controllerId': 'ctl', 'leaseId': 'l1',
            'sequence': sequence}


def acquire(control, vessel, now=0.0, duration=2.0):
    control.command({'type': 'pylon_control_authority_command', 'action': 'acquire',
                     **identity(1, vessel), 'priority': 0, 'leaseDurationSeconds': duration,
                     'suppressSas': True}, vessel, now)
    assert control.authority.owned


def wrench(sequence, vessel, torque=(0.0, 0.0, 40.0), timeout=0.5):
    return {'type': 'pylon_body_wrench_command', 'frame': 'base_link',
            **identity(sequence, vessel), 'force': [0.0, 0.0, 0.0], 'torque': list(torque),
            'timeoutSeconds': timeout}


def test_nothing_pushed_before_a_command(vessel):
    control = VehicleManager()
    for step in range(1, 5):
        control.tick(vessel, step * DT, DT)
    status = control.status()
    assert (status['pushed_steps'], status['pushed_at'], status['pushing_since'],
            status['commanded_steps']) == (0, None, None, 0)


def test_a_wrench_pushes_from_its_first_step_to_its_last(vessel):
    control = VehicleManager()
    acquire(control, vessel)
    control.command(wrench(2, vessel), vessel, 0.1)
    clocks = [round(0.1 + step * DT, 2) for step in range(0, 30)]   # the timeout at 0.6
    for now in clocks:
        control.tick(vessel, now, DT)
        if now < 0.6:
            assert control.pushing_since == 0.1 and control.pushed_at == now
    # the command timed out at 0.6: that step pushed nothing; the run ended with 0.58
    assert control.pushed_at == 0.58 and control.pushing_since is None
    assert control.pushed_steps == 25 and control.commanded_steps == 25
    assert control.unbacked_steps == 0


def test_pushing_again_starts_a_new_run(vessel):
    control = VehicleManager()
    acquire(control, vessel, duration=10.0)
    control.command(wrench(2, vessel), vessel, 0.0)
    control.tick(vessel, 0.0, DT)
    control.tick(vessel, 0.5, DT)                      # timed out
    assert control.pushing_since is None and control.pushed_at == 0.0
    control.command(wrench(3, vessel), vessel, 1.0)
    control.tick(vessel, 1.0, DT)
    control.tick(vessel, 1.02, DT)
    assert control.pushing_since == 1.0 and control.pushed_at == 1.02
    assert control.pushed_steps == 3


def test_exact_zeros_and_the_sas_push_nothing(vessel):
    vessel.state = replace(vessel.state, body_rate=np.array([0.0, 0.0, 0.05]))
    vessel.sas = True
    control = VehicleManager()
    _, torque, _ = control.tick(vessel, 0.0, DT)
    assert np.any(torque)                              # the SAS acts; nothing commanded does
    acquire(control, vessel)
    control.command(wrench(2, vessel, torque=(0.0, 0.0, 0.0)), vessel, 0.0)
    control.tick(vessel, 0.02, DT)
    assert control.wrench is not None                  # a command in force, of zeros
    assert control.pushed_steps == 0 and control.pushing_since is None
    assert control.commanded_steps == 1


def test_a_zero_command_after_a_push_pushes_until_the_ramp_is_down(vessel):
    control = VehicleManager()
    acquire(control, vessel)
    control.command(wrench(2, vessel, torque=(0.0, 0.0, 2000.0), timeout=10.0), vessel, 0.0)
    for step in range(0, 50):
        control.tick(vessel, step * DT, DT)
    now = 50 * DT
    control.command(wrench(3, vessel, torque=(0.0, 0.0, 0.0), timeout=10.0), vessel, now)
    steps = 0
    while control.pushing_since is not None or steps == 0:
        control.tick(vessel, now, DT)
        steps += 1
        now = round(now + DT, 2)
        assert steps < 500
    assert steps > 1                                   # ramped, not cut
    assert control.pushed_at == pytest.approx(now - 2 * DT)
    assert not np.any(control.applied[1])


def test_a_paused_frame_changes_nothing(vessel):
    control = VehicleManager()
    acquire(control, vessel)
    control.command(wrench(2, vessel, timeout=10.0), vessel, 0.0)
    control.tick(vessel, 0.0, DT)
    control.expire(vessel, 0.02)                       # what a paused frame runs
    assert control.pushed_at == 0.0 and control.pushing_since == 0.0
    assert control.pushed_steps == 1 and control.commanded_steps == 1
