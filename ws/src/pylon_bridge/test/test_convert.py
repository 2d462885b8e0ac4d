"""Ground-truth conversions of the bridge: the pose carried forward to a sensor's time."""

import math

import numpy as np
from pylon_bridge import convert
from pylon_protocol import rotations
import pytest


def packet(rate):
    return {'position': [1.0, 2.0, 3.0], 'rotation': [0.0, 0.0, 0.0, 1.0],
            'linearVelocity': [1.0, 0.0, -2.0], 'angularVelocity': list(rate)}


def test_extrapolation_turns_by_the_rate_times_dt():
    position, rotation = convert.extrapolate_pose(packet([0.0, 0.0, 0.5]), 0.2)
    assert position == pytest.approx((1.2, 2.0, 2.6))
    assert rotation == pytest.approx(rotations.from_axis_angle((0, 0, 1), 0.1))


@pytest.mark.parametrize('rate', [(0.0, 0.0, 0.0), (1.8e-10, -1.2e-10, 1.7e-10)])
def test_extrapolation_of_a_vessel_barely_turning_keeps_its_rotation(rate):
    # a rover at rest on its springs has rates of 1e-10 rad/s: no zero-length axis error
    _, rotation = convert.extrapolate_pose(packet(rate), 0.05)
    assert rotation == pytest.approx(np.array([0.0, 0.0, 0.0, 1.0]), abs=1e-10)
    assert math.isclose(float(np.linalg.norm(rotation)), 1.0)
