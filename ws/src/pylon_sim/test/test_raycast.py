"""Ray casting and LiDAR patterns against analytic geometry and the packet schema."""

import json
import math

import numpy as np
from pylon_protocol import packets, rotations
from pylon_protocol.envelope import Envelope
from pylon_protocol.lidar import fibonacci_hemisphere_directions, vertical_major_directions
from pylon_protocol.wire import encode_state
from pylon_sim.game import raycast
from pylon_sim.game.raycast import Primitive
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.sensors import imaging, lidar_scan
import pytest

R = 600_000.0
ENVELOPE = Envelope(runtime_instance='c0ffee00c0ffee00c0ffee00c0ffee00', runtime_generation=1,
                    runtime_epoch='e90c4e90c4e90c4e90c4e90c4e90c4e9',
                    runtime_vessel_id='5f3c2a1b9d8e4f7a6b5c4d3e2f1a0b9c')


def slant_range(altitude: float, off_nadir: float) -> float:
    a = R + altitude
    return a * math.cos(off_nadir) - math.sqrt(R * R - (a * math.sin(off_nadir)) ** 2)


def test_nadir_and_slant_ranges_to_the_planet():
    altitude = 1500.0
    origin = np.array([0.0, 0.0, R + altitude])
    angles = np.radians([0.0, 10.0, 30.0, 60.0])
    dirs = np.stack([np.sin(angles), np.zeros(4), -np.cos(angles)], axis=1)
    ranges = raycast.cast(origin, dirs, 1e6, (), (0.0, 0.0, 0.0), R)
    expected = [slant_range(altitude, a) for a in angles]
    assert ranges[0] == pytest.approx(altitude, abs=1e-6)
    assert ranges == pytest.approx(expected, rel=1e-9, abs=1e-6)


def test_planet_beyond_max_range_or_behind_is_no_hit():
    origin = np.array([0.0, 0.0, R + 1500.0])
    dirs = np.array([[0.0, 0.0, -1.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    ranges = raycast.cast(origin, dirs, 1000.0, (), (0.0, 0.0, 0.0), R)
    assert np.all(np.isinf(ranges))
    ranges = raycast.cast(origin, dirs, 2000.0, (), (0.0, 0.0, 0.0), R)
    assert ranges[0] == pytest.approx(1500.0)
    assert np.isinf(ranges[1]) and np.isinf(ranges[2])


def test_box_sphere_and_cylinder_at_known_distances():
    rot = rotations.to_matrix((0.0, 0.0, math.sin(0.3), math.cos(0.3)))
    box = Primitive('box', (2.0, 4.0, 6.0), (10.0, 0.0, 0.0), owner=('v', 1))
    turned = Primitive('box', (2.0, 2.0, 2.0), (0.0, 20.0, 0.0), rot, owner=('v', 2))
    ball = Primitive('sphere', (1.5,), (0.0, 0.0, -30.0), owner=('v', 3))
    can = Primitive('cylinder', (0.5, 4.0), (0.0, -40.0, 0.0), owner=('v', 4))
    dirs = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, -1.0], [0, -1.0, 0], [-1.0, 0, 0]])
    ranges = raycast.cast(np.zeros(3), dirs, 100.0, [box, turned, ball, can])
    # The cube turned by 0.6 rad about z: the ray meets a face tilted by 0.6 rad.
    corner = 20.0 - 1.0 / math.cos(0.6)
    assert ranges == pytest.approx([9.0, corner, 28.5, 39.5, math.inf])
    # Cylinder end cap: its axis is the local +X.
    cap = raycast.cast(np.array([-10.0, -40.0, 0.1]), np.array([[1.0, 0, 0]]), 100.0, [can])
    assert cap[0] == pytest.approx(8.0)


def test_own_part_excluded_and_inside_start():
    own = Primitive('box', (0.2, 0.2, 0.2), (0.0, 0.0, 0.0), owner=('me', 7))
    other = Primitive('box', (1.0, 1.0, 1.0), (5.0, 0.0, 0.0), owner=('me', 8))
    ray = np.array([[1.0, 0.0, 0.0]])
    assert raycast.cast(np.zeros(3), ray, 50.0, [own, other])[0] == pytest.approx(0.1)
    excluded = raycast.cast(np.zeros(3), ray, 50.0, [own, other], exclude={('me', 7)})
    assert excluded[0] == pytest.approx(4.5)
    assert np.isinf(raycast.cast(np.zeros(3), ray, 4.0, [other])[0])


def test_star_tracker_cases_on_the_one_kernel():
    # The star tracker's own kernel had these cases; the one kernel answers them alike,
    # except a ray from inside a box: it meets the box where it leaves (0.5 m), where the
    # star tracker's kernel said 0.
    o = np.zeros(3)
    dirs = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [-1.0, 0, 0]])
    sphere = Primitive('sphere', (1.0,), np.array([5.0, 0, 0]))
    assert raycast.cast(o, dirs, 100.0, [sphere]) == pytest.approx([4.0, np.inf, np.inf, np.inf])
    assert np.isinf(raycast.cast(o, dirs, 3.9, [sphere])).all()
    turn = rotations.to_matrix((0, 0, math.sin(math.pi / 8), math.cos(math.pi / 8)))  # 45 deg
    box = Primitive('box', (2.0, 2.0, 2.0), np.array([0, 10.0, 0]), turn)
    assert raycast.cast(o, dirs, 100.0, [box])[1] == pytest.approx(10.0 - math.sqrt(2))
    # cylinder along local X turned onto Z: its side faces a ray along X, its cap one along Z
    up = rotations.to_matrix((0, -math.sin(math.pi / 4), 0, math.cos(math.pi / 4)))
    assert up @ [1, 0, 0] == pytest.approx([0, 0, 1])
    side = Primitive('cylinder', (0.5, 4.0), np.array([3.0, 0, 0]), up, owner=('a', 1))
    cap = Primitive('cylinder', (0.5, 4.0), np.array([0, 0, 6.0]), up, owner=('b', 1))
    assert raycast.cast(o, dirs, 100.0, [side, cap]) == pytest.approx(
        [2.5, np.inf, 4.0, np.inf])
    inside = Primitive('box', (1.0, 1.0, 1.0), np.zeros(3))
    assert raycast.cast(o, dirs, 100.0, [inside]) == pytest.approx([0.5] * 4)
    # a ray parallel to a box face, outside the slab, misses
    slab = Primitive('box', (10.0, 1.0, 1.0), np.array([5.0, 3.0, 0]))
    assert raycast.cast(o, dirs, 100.0, [slab])[0] == np.inf


@pytest.mark.parametrize('kind, size', [('box', (2.0, 2.0, 2.0)), ('sphere', (1.0,)),
                                        ('cylinder', (1.0, 2.0))])
def test_a_ray_starting_inside_a_shape_meets_it_where_it_leaves(kind, size):
    # One rule for every closed shape: the exit, with the normal facing back at the ray;
    # a ray starting on the surface going out does not hit it (HIT_EPS).
    shape = Primitive(kind, size, (0.0, 0.0, 0.0))
    o = np.array([0.25, 0.0, 0.0])
    dirs = np.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]])
    hits = raycast.cast_full(o, dirs, 10.0, [shape])
    assert hits.ranges == pytest.approx([0.75, 1.25])
    assert hits.normals == pytest.approx(np.array([[-1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]))
    on_surface = raycast.cast(np.array([1.0, 0.0, 0.0]), dirs, 10.0, [shape])
    assert np.isinf(on_surface[0]) and on_surface[1] == pytest.approx(2.0)
    # the bare planet sphere follows the same rule
    assert raycast.cast(o, dirs[:1], 10.0, (), (0.0, 0.0, 0.0), 1.0)[0] == pytest.approx(0.75)


def test_one_parallel_threshold_for_box_faces_and_cylinder_walls():
    # A ray whose component across a slab is below PARALLEL runs along it: on the face
    # (the boundary counts as inside) it hits; just outside it never does, whatever the
    # sign of that tiny component. Exactly 0 and 0.5 PARALLEL are the same case.
    box = Primitive('box', (2.0, 2.0, 2.0), (5.0, 0.0, 0.0))
    can = Primitive('cylinder', (1.0, 2.0), (5.0, 0.0, 0.0))    # axis along +X
    for tiny in (0.0, 0.5 * raycast.PARALLEL, -0.5 * raycast.PARALLEL):
        ray = np.array([[1.0, tiny, 0.0]])
        assert raycast.cast((0.0, 1.0, 0.0), ray, 100.0, [box])[0] == pytest.approx(4.0)
        assert np.isinf(raycast.cast((0.0, 1.0 + 1e-9, 0.0), ray, 100.0, [box])[0])
        assert raycast.cast((0.0, 1.0, 0.0), ray, 100.0, [can])[0] == pytest.approx(4.0)
        assert np.isinf(raycast.cast((0.0, 1.0 + 1e-9, 0.0), ray, 100.0, [can])[0])
        hits = raycast.cast_full((0.0, 0.5, 0.0), ray, 100.0, [can])
        assert hits.normals[0] == pytest.approx([-1.0, 0.0, 0.0])   # the end cap
    # a component just above it is an ordinary slanted ray
    ray = np.array([[1.0, -1e-3, 0.0]])
    assert raycast.cast((0.0, 1.0 + 1e-3, 0.0), ray, 100.0, [box])[0] == pytest.approx(
        4.0, abs=1e-5)


def test_scenario_vessel_parts_in_view():
    scenario = load_scenario('orbit', seed=1)
    parts = scenario.vessel(scenario.active).spec.parts
    prims = raycast.vessel_primitives(parts, (100.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), 'x')
    assert len(prims) == len(parts)
    ranges = raycast.cast(np.zeros(3), np.array([[1.0, 0.0, 0.0]]), 500.0, prims)
    assert 90.0 < ranges[0] < 100.0


def test_terrain_is_hit_between_its_bounds():
    terrain = raycast.SmoothTerrain(amplitude=300.0, seed=3)
    up = np.random.default_rng(0).normal(size=(200, 3))
    up /= np.linalg.norm(up, axis=1, keepdims=True)
    heights = terrain.height(up)
    assert np.all(np.abs(heights) <= 300.0) and np.ptp(heights) > 10.0
    origins = up * (R + 2000.0)
    ranges = raycast.cast(origins, -up, 1e5, (), (0.0, 0.0, 0.0), R, terrain)
    assert ranges == pytest.approx(2000.0 - heights, abs=0.05)


def test_hemisphere_ray_count_from_density():
    assert lidar_scan.hemisphere_ray_count(100.0) == round(200 * math.pi)
    assert lidar_scan.hemisphere_ray_count(0.0) == lidar_scan.hemisphere_ray_count(math.nan) == 1
    assert lidar_scan.hemisphere_ray_count(1e9) == 20000


def test_scan_from_a_rotated_sensor():
    # Sensor +X pointed down (pitch +90 deg about +Y): the 3D LiDAR sees the planet.
    q = (0.0, math.sin(math.pi / 4), 0.0, math.cos(math.pi / 4))
    dirs = fibonacci_hemisphere_directions(300)
    ranges = lidar_scan.scan(dirs, (0.0, 0.0, R + 50.0), q, 200.0,
                             sphere_center=(0.0, 0.0, 0.0), sphere_radius=R)
    hit = np.isfinite(ranges)
    assert hit.any() and not hit.all()
    nadir = int(np.argmax(dirs[:, 0]))
    assert ranges[nadir] == pytest.approx(50.0 / dirs[nadir, 0], rel=1e-3)


@pytest.mark.parametrize('mode', ['2D', '3D'])
def test_scan_fields_fit_the_packet_schema(mode):
    if mode == '2D':
        dirs = vertical_major_directions(8, 360.0)
    else:
        dirs = fibonacci_hemisphere_directions(16)
    ranges = np.full(len(dirs), np.inf)
    ranges[::3] = 12.5
    ranges[1] = 500.0   # beyond maxDistance -> no return
    fields = lidar_scan.lidar_scan_fields(
        mode=mode, sensor_id='lidar_x', vessel='Sat', part_flight_id=42,
        universal_time=10.0, ranges=ranges, directions=dirs, max_distance=100.0,
        scan_rate_hz=10.0, frame_position=(0.1, 0.0, 0.35), hemisphere_density=2.5,
        include_hit_points=True, include_directions=True)
    assert set(fields) == set(packets.LIDAR_SCAN.fields)
    packet = packets.build_state('pylon_lidar_scan', ENVELOPE, **fields)
    decoded = packets.decode_state(encode_state(packet))
    assert decoded['rayCount'] == len(dirs) == len(decoded['ranges'])
    assert decoded['hitCount'] == len(range(0, len(dirs), 3))
    assert decoded['ranges'][1] == -1.0 and decoded['hitMask'][1] == 0
    assert decoded['layout'] == ('vertical-major' if mode == '2D' else 'fibonacci-hemisphere')
    assert decoded['points'][0:3] == pytest.approx(list(12.5 * dirs[0]), abs=1e-3)
    assert decoded['points'][3:6] == [None, None, None]
    json.dumps(packet, allow_nan=False)


def test_lidar_reuses_its_own_vessels_ranges_only_while_the_parts_hold_still():
    # The orbit sat's 3D LiDAR sees its own parts (engine, tanks, RCS blocks) and the
    # target 150 m ahead: each scan equals one cast of every ray against everything.
    from dataclasses import replace

    from pylon_sim.loop.runtime import Simulator

    sim = Simulator(load_scenario('orbit'), send=lambda data: None, seed=1)
    sensing = sim.sensing
    lidar = next(i for i in sensing.imagers if i.kind == 'lidar_3d')
    vessel = sim.world.active

    def scans_and_truth():
        scene = imaging.scene(sim.world, sim.world.ut)
        fields = imaging.lidar_fields(lidar, scene, vessel, sim.world.ut)
        position, rotation = imaging.pose(scene, vessel.key, lidar.part,
                                          lidar.frame_position, lidar.frame_rotation)
        _, exclude = imaging.seen(scene, vessel, lidar.part, position)
        truth = lidar_scan.scan(lidar.directions, position, rotation, 200.0,
                             scene['primitives'], *scene['planet'][:2], exclude=exclude)
        return np.array(fields['ranges']), np.where(np.isfinite(truth), truth, -1.0)

    first, truth = scans_and_truth()
    assert (first > 0).sum() > 100                   # its own parts fill part of the view
    assert first == pytest.approx(truth, abs=1e-4)
    vessel.state = replace(vessel.state, attitude=rotations.multiply(
        vessel.state.attitude, rotations.from_rotvec([0.2, -0.4, 0.3])))
    cached = lidar.own[2]
    turned, truth = scans_and_truth()
    assert lidar.own[2] is cached                    # the parts did not move on the vessel
    assert turned == pytest.approx(truth, abs=1e-4)
    moved = vessel.spec.parts[9]                     # the docking port slides 0.3 m out
    assert moved.name == 'dockingPort2'
    parts = list(vessel.spec.parts)                  # (a new spec, as a change of parts is)
    parts[9] = replace(moved, position=tuple(np.asarray(moved.position) + (0.3, 0.0, 0.0)))
    vessel.spec = replace(vessel.spec, parts=tuple(parts))
    shifted, truth = scans_and_truth()
    assert lidar.own[2] is not cached
    assert shifted == pytest.approx(truth, abs=1e-4)
    assert not np.allclose(shifted, turned)


def test_one_instants_placement_serves_every_sensor_and_follows_every_change():
    """The vessels' shapes are placed once an instant (a mission's sensors share them).

    A moved vessel, a change of parts or a new instant is placed again.
    """
    from dataclasses import replace

    from pylon_sim.loop.runtime import Simulator

    sim = Simulator(load_scenario('orbit'), send=lambda data: None, seed=1)
    world, vessel = sim.world, sim.world.active
    first = imaging.scene(world, world.ut)
    assert imaging.scene(world, world.ut)['primitives'] is first['primitives']
    vessel.state = replace(vessel.state, position=vessel.state.position + (1.0, 0.0, 0.0))
    moved = imaging.scene(world, world.ut)
    assert moved['primitives'] is not first['primitives']
    shift = moved['origins'][vessel.key][0] - first['origins'][vessel.key][0]
    assert shift == pytest.approx([1.0, 0.0, 0.0])
    vessel.spec = replace(vessel.spec, parts=vessel.spec.parts[:-1])     # a part fewer
    fewer = imaging.scene(world, world.ut)
    assert len(fewer['primitives']) == len(moved['primitives']) - 1
    sim.frame()
    later = imaging.scene(world, world.ut)
    assert later['primitives'] is not fewer['primitives']
    assert later['origins'][vessel.key][0] != pytest.approx(fewer['origins'][vessel.key][0])
