"""The kart scenario: its ids, its place on the grid, its wheels and the track-free terrain."""

import math

import numpy as np
from pylon_sim.game import wheels
from pylon_sim.game.bodies import KERBIN
from pylon_sim.game.vessel import mass_properties
from pylon_sim.game.world import World
from pylon_sim.loop.scenario import load_scenario, ScenarioError
from pylon_sim.loop.scenario_track import TRACK_MARGIN
from pylon_track import load_track
import pytest
import yaml

KART = load_scenario('kart')
TRACK = load_track('kart')


def test_the_kart_has_the_ids_other_code_depends_on():
    vessel = KART.vessels[0]
    assert (KART.active, vessel.key, vessel.spec.vessel_id, vessel.spec.name) == (
        'kart', 'kart', '4b415254000000000000000000000001', 'PyLoN Kart')
    parts = vessel.spec.parts
    assert [p.persistent_id for p in parts] == list(range(7800001, 7800009))
    assert [p.flight_id for p in parts] == list(range(8800001, 8800009))
    assert parts[0].modules[0].kind == 'command'
    lidar, camera = parts[5].modules[0], parts[6].modules[0]
    assert (lidar.kind, lidar.get('sensor_id'), lidar.get('horizontal_count'),
            lidar.get('horizontal_fov_deg'), lidar.get('max_distance'),
            lidar.get('scan_rate_hz')) == ('lidar_2d', 'lidar', 1080, 270, 30, 40)
    assert (camera.kind, camera.get('sensor_id'), camera.get('width'),
            camera.get('height')) == ('camera', 'camera', 320, 240)
    # our simulator's extensions: the AHRS on the chassis, the GNSS antenna above its centre
    ahrs, antenna = parts[0].modules[1], parts[7]
    assert (ahrs.kind, ahrs.get('sensor_id')) == ('ahrs', 'ahrs')
    gnss = antenna.modules[0]
    assert (gnss.kind, gnss.get('sensor_id'), gnss.get('frame_id')) == (
        'gnss', 'gnss', 'gnss_link')
    assert (antenna.parent, tuple(antenna.position)) == (0, (0.0, 0.0, 0.15))


def test_the_kart_is_a_kart():
    spec = KART.vessels[0].spec
    mass = mass_properties(spec, spec.initial_resources())
    p = wheels.params(spec, mass.com, mass.mass, KERBIN.surface_gravity())
    assert mass.mass == pytest.approx(160.0)
    front, rear = p.hub[:2], p.hub[2:]
    assert front[0, 0] - rear[0, 0] == pytest.approx(1.05)              # wheelbase
    assert front[0, 1] - front[1, 1] == rear[0, 1] - rear[1, 1] == pytest.approx(1.0)
    assert p.radius == pytest.approx([0.14] * 4)
    assert np.degrees(p.steer_max) == pytest.approx([25, 25, 0, 0])
    assert list(p.max_torque[:2]) == [0.0, 0.0] and np.all(p.max_torque[2:] > 0)
    assert np.all(p.brake_torque > 0) and np.all(p.travel <= 0.05)
    # the centre of mass 0.137 m above the ground, behind the middle of the axles
    assert mass.com[2] - (front[0, 2] + mass.com[2] - p.radius[0]) == pytest.approx(
        KART.vessels[0].start.altitude, abs=1e-4)
    assert 0.35 < -rear[0, 0] / 1.05 < 0.5                                # front share
    # ElectricCharge for 30 min of both motors at full torque
    ec = sum(part.resources.get('ElectricCharge', 0.0) for part in spec.parts)
    assert ec >= 30 * 60 * float(np.sum(p.ec_rate[p.max_torque > 0]))


def test_the_kart_stands_on_grid_slot_0_facing_the_driving_direction():
    start = KART.vessels[0].start
    x, y, yaw = TRACK.grid_pose(0)
    assert TRACK.map_from_geodetic(start.latitude, start.longitude, 0.0)[:2] == \
        pytest.approx((x, y), abs=1e-6)
    assert KART.vessels[0].attitude_rpy[2] == pytest.approx(math.degrees(yaw), abs=1e-3)
    assert TRACK.origin.body_radius == KERBIN.radius       # the track file's radius
    # at rest on its wheels in the world: every wheel grounded, nose along the track
    world = World(KART)
    for _ in range(50):
        world.step()
    kart = world.active
    assert np.all(kart.wheel_state.grounded)


def test_seeded_features_keep_off_the_track_band():
    terrain = KART.terrain
    band = terrain.spec.keep_out
    assert band.clearance == TRACK.width / 2 + TRACK_MARGIN
    craters = [(c.east, c.north, 2 * c.radius) for c in terrain.craters]
    boulders = [(b.east, b.north, b.radius) for b in terrain.boulders]
    assert len(craters) == 14 and len(boulders) == 60
    for east, north, reach in craters + boulders:
        lateral = abs(TRACK.project([east, north]).lateral)
        assert lateral >= TRACK.width / 2 + TRACK_MARGIN + reach - 1e-3
    # some are close beside it: the LiDAR has something to see
    near = [abs(TRACK.project([e, n]).lateral) - r for e, n, r in boulders]
    assert min(near) < 15.0
    # the same seed gives the same terrain
    assert load_scenario('kart').terrain.boulders == terrain.boulders


def _with_terrain(tmp_path, **changes):
    data = yaml.safe_load(KART.path.read_text())
    data['terrain'].update(changes)
    path = tmp_path / 'kart.yaml'
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_placed_boulder_on_the_track_is_refused_naming_it(tmp_path):
    x, y = TRACK.point_at(30.0)
    east, north = round(float(x), 2), round(float(y), 2)
    path = _with_terrain(tmp_path, boulders={'at': [{'east': east, 'north': north,
                                                     'radius': 0.5}]})
    with pytest.raises(ScenarioError, match=r'terrain\.boulders\.at\[0\]: boulder at .* '
                                            r"comes 6\.50 m into the track 'kart' band"):
        load_scenario(str(path))
    beside = _with_terrain(tmp_path, boulders={'at': [{'east': east, 'north': north + 7.0,
                                                       'radius': 0.5}]})
    assert len(load_scenario(str(beside)).terrain.boulders) == 1


def test_a_track_on_another_body_or_unknown_is_refused(tmp_path):
    with pytest.raises(ScenarioError, match=r'terrain\.track: track .nowhere. not found'):
        load_scenario(str(_with_terrain(tmp_path, track='nowhere')))
    data = yaml.safe_load(KART.path.read_text())
    data['vessels'][0]['surface']['latitude'] = 0.0
    path = tmp_path / 'both.yaml'
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError, match=r'surface\.latitude: not with track'):
        load_scenario(str(path))


def test_grid_slots_1_to_3_start_behind_slot_0(tmp_path):
    data = yaml.safe_load(KART.path.read_text())
    starts = []
    for slot in range(4):
        data['vessels'][0]['surface']['grid'] = slot
        path = tmp_path / f'grid{slot}.yaml'
        path.write_text(yaml.safe_dump(data))
        start = load_scenario(str(path)).vessels[0].start
        starts.append(TRACK.project(TRACK.map_from_geodetic(start.latitude,
                                                            start.longitude, 0.0)[:2]))
    assert [TRACK.length - p.s for p in starts] == pytest.approx([3, 7, 11, 15], abs=1e-6)
    assert [p.lateral for p in starts] == pytest.approx([1.5, -1.5, 1.5, -1.5], abs=1e-6)
