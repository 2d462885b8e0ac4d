"""The surface terrain end to end: the rover's 2D LiDAR, through udp_bridge, sees a boulder.

The scenario places one boulder (radius 1 m, a quarter of its diameter buried) at a known
East/North offset from the site, which is the rover's start. Ground truth is ENU at the
rover's start (its centre of mass, the anchor of the first session), so the boulder's
centre is at (east, north, 0.5 - 0.44413) m in the ground-truth frame (to 0.1 mm over 10 m
of the sphere's curvature). The scan must show it at the range and bearing that this and
the rover's ground-truth pose predict.
"""

import math
from pathlib import Path

from geometry_msgs.msg import PoseStamped
import numpy as np
from pylon_common import topics
from pylon_protocol import rotations
from pylon_sim.game.vessel import mass_properties
from pylon_sim.loop.scenario import load_scenario
from pylon_testing.pilot import Pilot
import pytest
from sensor_msgs.msg import LaserScan
import yaml

pytestmark = pytest.mark.integration

EAST, NORTH, RADIUS, BURIED = 7.0, 3.0, 1.0, 0.25
REST = 0.44413                                # the rover's centre of mass above the ground


def _scenario(folder: Path) -> tuple[str, np.ndarray]:
    """Write the surface scenario with one boulder; return it and the LiDAR in base_link."""
    data = yaml.safe_load(Path(load_scenario('surface').path).read_text(encoding='utf-8'))
    rover = data['vessels'][0]['surface']
    data['terrain'] = {'body': 'Kerbin', 'latitude': rover['latitude'],
                       'longitude': rover['longitude'], 'radius': 40,
                       'boulders': {'at': [{'east': EAST, 'north': NORTH, 'radius': RADIUS,
                                            'buried': BURIED}]}}
    assert rover['altitude'] == REST
    path = folder / 'terrain_boulder.yaml'
    path.write_text(yaml.safe_dump(data), encoding='utf-8')
    spec = load_scenario(str(path)).vessel('rover').spec
    com = mass_properties(spec, spec.initial_resources()).com
    lidar = next(p for p in spec.parts if p.modules_of('lidar_2d'))
    return str(path), np.asarray(lidar.position, dtype=float) - com


def _predicted(scan: LaserScan, origin: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """Return each ray's range to the boulder's sphere (inf: it misses), ENU."""
    angles = scan.angle_min + scan.angle_increment * np.arange(len(scan.ranges))
    d = np.column_stack([np.cos(angles), np.sin(angles), np.zeros_like(angles)]) @ rotation.T
    centre = np.array([EAST, NORTH, RADIUS * (1.0 - 2.0 * BURIED) - REST])
    rel = origin - centre
    b = d @ rel
    disc = b * b - (rel @ rel - RADIUS * RADIUS)
    t = -b - np.sqrt(np.maximum(disc, 0.0))
    return np.where((disc >= 0.0) & (t > 0.0), t, np.inf)


def test_lidar_scan_shows_the_boulder_where_ground_truth_says(sim_stack, ros_node, tmp_path):
    scenario, mount = _scenario(tmp_path)
    sim_stack(scenario=scenario, sim_args=['--rate', '3'])     # no controller: 3x real time
    pilot = Pilot(ros_node)
    pilot.add('scan', topics.name('lidar_2d', id='lidar_2d_front'), LaserScan,
              topics.qos('lidar_2d', reader=True))
    pilot.add('pose', topics.name('ground_truth/pose'), PoseStamped,
              topics.qos('ground_truth/pose', reader=True))
    pilot.ready()
    scan = pilot.wait_for('scan', lambda m: any(math.isfinite(r) and r < 20.0
                                                for r in m.ranges), what='a scan with returns')
    pose = pilot.wait_for('pose', what='a ground-truth pose')
    q = pose.pose.orientation
    rotation = rotations.to_matrix(np.array([q.x, q.y, q.z, q.w]))   # base_link -> ENU
    position = np.array([pose.pose.position.x, pose.pose.position.y, pose.pose.position.z])
    assert np.linalg.norm(position) < 0.01            # the rover stands at the anchor
    expected = _predicted(scan, position + rotation @ mount, rotation)
    ranges = np.array(scan.ranges, dtype=float)
    seen = np.isfinite(expected)
    assert seen.sum() >= 10, 'the boulder should cover at least 10 rays of 1 degree'
    assert ranges[seen] == pytest.approx(expected[seen], abs=0.03)
    # the nearest return is the boulder, in its direction from the sensor
    nearest = int(np.argmin(np.where(np.isfinite(ranges) & (ranges > 2.0), ranges, np.inf)))
    assert seen[nearest]
    heading = math.atan2(rotation[1, 0], rotation[0, 0])           # base_link +X from East
    sensor = position + rotation @ mount
    bearing = math.atan2(NORTH - sensor[1], EAST - sensor[0]) - heading
    angle = scan.angle_min + scan.angle_increment * nearest
    assert math.remainder(angle - bearing, 2 * math.pi) == pytest.approx(0.0, abs=0.03)
    # elsewhere the scan plane clears the flat ground: no other returns beyond the rover
    far = np.isfinite(ranges) & (ranges > 2.0) & ~seen
    assert not far.any(), ranges[far]
