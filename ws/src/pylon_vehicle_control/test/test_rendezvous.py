"""Rendezvous guidance: the aim point, its motion, the frames, the choice of target."""

import math

import numpy as np
from pylon_protocol import rotations
from pylon_vehicle_control import rendezvous
import pytest


def test_the_aim_point_stops_short_of_the_target_on_the_line_of_sight():
    fix = rendezvous.Fix((30.0, 40.0, 0.0), (0.0, 0.0, 0.0), 1.0)      # 50 m away
    assert np.allclose(rendezvous.aim(fix, 5.0), (27.0, 36.0, 0.0))      # 45 m, same line
    assert np.allclose(rendezvous.aim(fix, 60.0), (0.0, 0.0, 0.0))      # closer: hold
    assert np.allclose(rendezvous.aim(rendezvous.Fix((0.0, 0.0, 0.0), (0, 0, 0), 0), 5.0),
                       (0.0, 0.0, 0.0))


def test_the_setpoint_is_in_the_estimate_frame_and_moves_with_the_target():
    # the chaser is yawed 90 deg: base_link +x is the estimate frame's +y
    yawed = tuple(rotations.from_rpy(0.0, 0.0, math.pi / 2))
    fix = rendezvous.Fix((20.0, 0.0, 0.0), (-0.5, 0.0, 0.1), 3.0)
    sp = rendezvous.setpoint(fix, yawed, velocity=(1.0, 2.0, 3.0), hold=(0, 0, 0, 1.0),
                             standoff_m=5.0)
    assert np.allclose(sp.position, (0.0, 15.0, 0.0), atol=1e-12)
    # own velocity + the relative velocity turned into the estimate frame
    assert np.allclose(sp.linear_velocity, (1.0, 1.5, 3.1), atol=1e-12)
    assert sp.orientation == (0, 0, 0, 1.0)


def test_the_target_is_the_wanted_vessel_else_the_nearest_that_is_not_debris():
    targets = [('a' * 32, False, (100.0, 0.0, 0.0), (1.0, 0.0, 0.0)),
               ('b' * 32, True, (10.0, 0.0, 0.0), (2.0, 0.0, 0.0)),
               ('c' * 32, False, (0.0, 50.0, 0.0), (3.0, 0.0, 0.0))]
    assert rendezvous.nearest(targets) == ((0.0, 50.0, 0.0), (3.0, 0.0, 0.0))
    assert rendezvous.nearest(targets, 'a' * 32) == ((100.0, 0.0, 0.0), (1.0, 0.0, 0.0))
    assert rendezvous.nearest(targets, 'd' * 32) is None
    assert rendezvous.nearest([]) is None


@pytest.mark.parametrize('standoff', [0.0, 2.5])
def test_a_setpoint_at_rest_beside_the_target_asks_for_nothing(standoff):
    fix = rendezvous.Fix((standoff, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0)
    sp = rendezvous.setpoint(fix, (0, 0, 0, 1.0), (0.0, 0.0, 0.0), (0, 0, 0, 1.0), 5.0)
    assert sp.position == (0.0, 0.0, 0.0) and sp.linear_velocity == (0.0, 0.0, 0.0)


def test_the_chaser_reads_whether_the_controller_is_armed_from_its_diagnostics():
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    from pylon_vehicle_control.chaser_node import controller_armed

    def array(name, **values):
        return DiagnosticArray(status=[DiagnosticStatus(
            name=name, values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])])
    assert controller_armed(array('setpoint_controller', phase='owned', armed=True)) is True
    assert controller_armed(array('setpoint_controller', armed=False,
                                  disarm_reason='started')) is False
    assert controller_armed(array('udp_bridge', armed=True)) is None      # another node's
    assert controller_armed(array('setpoint_controller', phase='owned')) is None
