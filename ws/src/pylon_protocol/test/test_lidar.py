"""Tests for the LiDAR ray layouts: ray order, angles and the mod's formulas."""

import math

import numpy as np
from pylon_protocol import lidar
import pytest


def test_2d_pattern_angles_and_order():
    full = lidar.lidar_2d_angles(4, 360.0)
    assert full == pytest.approx(np.radians([-180.0, -90.0, 0.0, 90.0]))
    part = lidar.lidar_2d_angles(5, 180.0)
    assert part == pytest.approx(np.radians([-90.0, -45.0, 0.0, 45.0, 90.0]))
    dirs = lidar.vertical_major_directions(5, 180.0)
    assert dirs.shape == (5, 3)
    # Counter-clockwise about +Z: +45 deg is forward-left (+Y).
    assert dirs[3] == pytest.approx([math.sqrt(0.5), math.sqrt(0.5), 0.0])
    assert dirs[0] == pytest.approx([0.0, -1.0, 0.0], abs=1e-12)
    multi = lidar.vertical_major_directions(3, 90.0, 2, 20.0)
    assert multi.shape == (6, 3)
    assert multi[0, 2] < 0.0 < multi[3, 2]


@pytest.mark.parametrize(('count', 'fov'), [(4, 360.0), (360, 359.9), (5, 180.0), (2, 10.0)])
def test_2d_increment_is_the_step_between_rays(count, fov):
    angles = lidar.lidar_2d_angles(count, fov)
    assert lidar.angle_increment_2d(count, fov) == pytest.approx(angles[1] - angles[0])
    assert angles[0] == pytest.approx(-math.radians(fov) / 2.0)


def test_2d_single_ray_and_full_circle_threshold():
    assert lidar.angle_increment_2d(1, 90.0) == 0.0
    assert lidar.lidar_2d_angles(1, 90.0).tolist() == [0.0]
    assert lidar.is_full_circle(359.9) and not lidar.is_full_circle(359.89)
    with pytest.raises(ValueError):
        lidar.lidar_2d_angles(0, 360.0)


def test_3d_fibonacci_pattern_matches_protocol_formula():
    n = 7
    dirs = lidar.fibonacci_hemisphere_directions(n)
    for i in range(n):
        f = (i + 0.5) / n
        r = math.sqrt(1 - f * f)
        a = i * 2.3999632
        assert dirs[i] == pytest.approx([f, -math.cos(a) * r, math.sin(a) * r])
    assert lidar.fibonacci_hemisphere_directions(1).tolist() == [[1.0, 0.0, 0.0]]
    assert np.linalg.norm(lidar.fibonacci_hemisphere_directions(500), axis=1) == \
        pytest.approx(np.ones(500))
    assert lidar.fibonacci_hemisphere_directions(0).shape == (0, 3)
    with pytest.raises(ValueError):
        lidar.fibonacci_hemisphere_directions(-1)


def test_layout_names_are_the_wire_names():
    assert (lidar.LAYOUT_2D, lidar.LAYOUT_3D) == ('vertical-major', 'fibonacci-hemisphere')
