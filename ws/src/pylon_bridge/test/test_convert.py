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


# -- IMU, serialized --------------------------------------------------------------------
def imu_cases():
    rng = np.random.default_rng(7)
    values = [0.0, -0.0, 1e-300, 5e-324, -1.7976931348623157e308, 9.81, 12345.5001]
    for frame in ('base_link', '', 'a', 'abcdefg', 'abcdefgh', 'pylon/vessel_base_link', 'bäse'):
        for stamp in (0.0, 1e-9, 0.4999999999, 1796418335.4967813, 2**31 - 1.0):
            packet = {'angularVelocity': [float(v) for v in rng.uniform(-10, 10, 3)],
                      'linearAcceleration': [values[i] for i in rng.integers(0, len(values), 3)]}
            yield packet, stamp, frame


ORIENTATION = ([0.1, -0.2, 0.3, 0.927361849549570], [1.2e-5, 1.3e-5, 7.6e-5])
"""An AHRS sample: base_link in ENU and its variances about East, North, Up (rad^2)."""


@pytest.mark.parametrize('orientation', [None, ORIENTATION])
def test_imu_serialized_is_the_cdr_of_the_imu_message(orientation):
    from rclpy.serialization import deserialize_message, serialize_message
    from sensor_msgs.msg import Imu
    for packet, stamp, frame in imu_cases():
        msg = convert.imu(packet, stamp, frame, orientation=orientation)
        data = convert.imu_serialized(packet, stamp, frame, orientation=orientation)
        assert deserialize_message(data, Imu) == msg
        expected = serialize_message(msg)
        # the same bytes but the padding before the doubles, which rclpy leaves uninitialised
        text_end = 4 + 12 + len(frame.encode()) + 1
        doubles = text_end + (-(text_end - 4) % 8)
        assert len(data) == len(expected)
        assert data[:text_end] == expected[:text_end] and data[doubles:] == expected[doubles:]
        assert data[text_end:doubles] == bytes(doubles - text_end)


def test_imu_serialized_leaves_stamps_beyond_int32_to_the_message():
    packet = {'angularVelocity': [0.0, 0.0, 0.0], 'linearAcceleration': [0.0, 0.0, 9.81]}
    assert convert.imu_serialized(packet, 2.0**31 - 0.5) is not None
    assert convert.imu_serialized(packet, 2.0**31) is None



def test_imu_orientation_from_an_ahrs_or_none():
    packet = {'angularVelocity': [0.0, 0.0, 0.1], 'linearAcceleration': [0.0, 0.0, 9.81]}
    msg = convert.imu(packet, 5.0, 'imu_link', orientation=ORIENTATION)
    q = msg.orientation
    assert [q.x, q.y, q.z, q.w] == ORIENTATION[0]
    assert list(msg.orientation_covariance) == [1.2e-5, 0, 0, 0, 1.3e-5, 0, 0, 0, 7.6e-5]
    # a refilled message loses an orientation that is no longer there
    again = convert.imu(packet, 5.1, 'imu_link', into=msg)
    assert again is msg and (again.orientation.w, again.orientation_covariance[0]) == (0.0, -1.0)
    assert again.header.frame_id == 'imu_link'
