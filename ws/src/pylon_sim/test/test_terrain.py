"""The landing site's relief: crater profile, boulders, ground clearance and ray casts."""

import dataclasses
import math
from pathlib import Path

import numpy as np
from pylon_protocol import lidar, rotations
from pylon_sim.game import raycast, terrain
from pylon_sim.game.bodies import (
    body_fixed_rotation,
    fixed_from_geodetic,
    KERBIN,
    MUN,
    mun_position,
)
from pylon_sim.game.terrain import Boulder, Crater, SiteTerrain, TerrainSpec
from pylon_sim.game.vessel import Shape
from pylon_sim.game.world import World
from pylon_sim.loop.scenario import load_scenario, ScenarioError
from pylon_sim.sensors import imaging, render
from pylon_sim.sensors.sensing import Sensing
import pytest
import yaml

R = KERBIN.radius
LAT, LON = -0.0486, -74.7247
CRATER = Crater(east=20.0, north=0.0, radius=5.0, depth=1.0, rim_height=0.2)
BOULDER = Boulder(east=-10.0, north=5.0, radius=1.0, buried=0.25)


def site() -> SiteTerrain:
    """Return a terrain with one crater and one boulder placed exactly (nothing seeded)."""
    spec = TerrainSpec('Kerbin', LAT, LON, radius=100.0, craters=(CRATER,),
                       boulders=(BOULDER,))
    return SiteTerrain(spec, KERBIN)


def point(t: SiteTerrain, east: float, north: float, alt: float) -> np.ndarray:
    """Return the body-fixed point at local (east, north), alt m above the sphere."""
    return t.up_of(np.array([[east, north]]))[0] * (R + alt)


def test_crater_profile_is_the_documented_bowl_and_rim():
    t = site()
    s = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0])
    en = np.column_stack([CRATER.east + s * CRATER.radius, np.zeros_like(s)])
    h, grad = t.field(en)
    d, k = CRATER.depth, CRATER.rim_height
    expected = [-d, -d + (d + k) * 0.25, k, k * 0.5, 0.0, 0.0]
    assert h == pytest.approx(expected, abs=1e-12)
    # the gradient is the profile's slope, radial; compare with central differences
    step = 1e-5
    for e in (CRATER.east + 2.0, CRATER.east + 7.3, CRATER.east - 1.0):
        east = (t.field([[e + step, 0.0]])[0] - t.field([[e - step, 0.0]])[0]) / (2 * step)
        assert t.field([[e, 0.0]])[1][0] == pytest.approx([east[0], 0.0], abs=1e-6)
    assert t.min_height == -d and t.max_height == k
    assert t.max_slope == pytest.approx(2 * (d + k) / CRATER.radius)


def test_local_coordinates_round_trip_and_height_is_along_the_radius():
    t = site()
    en = np.array([[0.0, 0.0], [30.0, -40.0], [-99.0, 12.5]])
    back, front = t.local(t.up_of(en) * (R + 3.0))
    assert front.all() and back == pytest.approx(en, abs=1e-9)
    centre = t.up_of([[0.0, 0.0]])[0] * R
    assert centre == pytest.approx(fixed_from_geodetic(KERBIN, LAT, LON, 0.0), abs=1e-6)
    # the far side of the body has no projection and no relief
    far = -centre[None, :]
    assert not t.local(far)[1][0] and t.height(far)[0] == 0.0


def test_boulder_rests_partly_buried_and_ground_reports_clearance_to_the_union():
    t = site()
    center = t.boulder_centers[0]
    assert np.linalg.norm(center) - R == pytest.approx(0.5, abs=1e-9)   # r (1 - 2 b)
    top = point(t, BOULDER.east, BOULDER.north, 1.5 + 0.3)
    flat = point(t, 0.0, -30.0, 0.7)
    floor = point(t, CRATER.east, 0.0, -0.4)            # 0.6 m above the crater floor
    inside = point(t, BOULDER.east, BOULDER.north, 1.0)  # 0.5 m inside the boulder
    clearance, normal = t.ground(np.array([top, flat, floor, inside]))
    assert clearance == pytest.approx([0.3, 0.7, 0.6, -0.5], abs=1e-6)
    up = np.array([p / np.linalg.norm(p) for p in (top, flat, floor, inside)])
    assert np.einsum('ij,ij->i', normal, up) == pytest.approx([1, 1, 1, 1], abs=1e-6)
    # on the boulder's side the normal points away from its centre
    east = t.enu[0]
    side = center + 1.2 * east
    c, n = t.ground(side[None, :])
    assert c[0] == pytest.approx(0.2, abs=1e-9) and n[0] == pytest.approx(east, abs=1e-9)
    # on the crater wall the normal leans towards the crater's centre
    wall = point(t, CRATER.east + 3.0, 0.0, float(t.field([[CRATER.east + 3.0, 0.0]])[0][0]))
    c, n = t.ground(wall[None, :])
    slope = 2 * (CRATER.depth + CRATER.rim_height) * 0.6 / CRATER.radius
    assert c[0] == pytest.approx(0.0, abs=1e-6)
    assert n[0] @ east == pytest.approx(-slope / np.hypot(1, slope), abs=1e-3)


def test_one_point_asked_again_gets_the_same_answer_and_its_own_arrays():
    t = site()
    top, floor = point(t, BOULDER.east, BOULDER.north, 1.8), point(t, CRATER.east, 0.0, -0.4)
    fresh = {id(p): site().ground(p[None, :]) for p in (top, floor)}   # nothing kept yet
    first = t.ground(top[None, :])
    first[0][0], first[1][0] = 99.0, 0.0             # the caller's to change
    for p in (top, floor, top):                       # kept, replaced, computed again
        clearance, normal = t.ground(p[None, :])
        assert clearance[0] == fresh[id(p)][0][0]
        assert np.array_equal(normal[0], fresh[id(p)][1][0])


def test_a_sensor_leaves_out_spheres_beyond_its_range_and_sees_the_same(monkeypatch):
    t = load_scenario('kart').terrain                 # 14 craters and 60 boulders
    o = np.repeat(t.up_of([[30.0, 20.0]])[0][None, :] * (R + t.field([[30.0, 20.0]])[0][0]
                                                          + 0.5), 2160, axis=0)
    yaw = np.linspace(-math.pi, math.pi, 720, endpoint=False)
    tilt = np.repeat(np.radians([-6.0, -1.5, 0.5]), 720)
    local = np.column_stack([np.tile(np.cos(yaw), 3) * np.cos(tilt),
                             np.tile(np.sin(yaw), 3) * np.cos(tilt), np.sin(tilt)])
    d = local @ t.enu
    rel = o - t.site
    culled, _ = t.intersect(o, d, R, 12.0, want_normals=False)
    monkeypatch.setattr(raycast, 'spheres_in_reach', lambda o, c, r, m: np.arange(len(c)))
    every, _ = t.intersect(o, d, R, 12.0, want_normals=False)
    monkeypatch.undo()
    within = every <= 12.0
    assert 500 < within.sum() < 2000
    # the same to rounding (the ray-sphere products of fewer spheres may round apart)
    np.testing.assert_allclose(culled[within], every[within], rtol=0.0, atol=1e-12)
    assert np.all(culled[~within] > 12.0)               # dropped as beyond the range
    # it left spheres out: most boulders are farther than 12 m
    kept = raycast.spheres_in_reach(rel, t.boulder_centers - t.site, t._b_radius, 12.0)
    assert 0 < kept.size < 20
    assert raycast.spheres_in_reach(rel + np.arange(2160)[:, None] * 1e-3,   # apart: all
                                    t.boulder_centers - t.site, t._b_radius, 12.0).size == 60


def test_vertical_rays_hit_the_analytic_surface():
    t = site()
    east = np.linspace(CRATER.east - 11.0, CRATER.east + 11.0, 45)
    en = np.column_stack([east, np.full_like(east, 0.3)])
    up = t.up_of(en)
    o = up * (R + 20.0)
    ranges, normals = t.intersect(o, -up, R, 100.0)
    assert ranges == pytest.approx(20.0 - t.field(en)[0], abs=1e-6)
    assert np.einsum('ij,ij->i', normals, t.field_normal(o)) == pytest.approx(1.0, abs=1e-9)
    # a vertical ray onto the boulder meets its top: exact sphere intersection
    top = t.up_of([[BOULDER.east, BOULDER.north]])[0]
    r, _ = t.intersect(top[None, :] * (R + 20.0), -top[None, :], R, 100.0)
    assert r[0] == pytest.approx(20.0 - 1.5, abs=1e-9)


def test_oblique_rays_end_on_the_surface_and_never_pass_through_it():
    t = site()
    rng = np.random.default_rng(3)
    o = np.repeat(point(t, CRATER.east - 14.0, -1.0, 1.3)[None, :], 400, axis=0)
    local = np.column_stack([rng.uniform(0.3, 1.0, 400), rng.uniform(-0.3, 0.3, 400),
                             rng.uniform(-0.3, 0.02, 400)])
    d = local / np.linalg.norm(local, axis=1, keepdims=True) @ t.enu
    ranges, _ = t.intersect(o, d, R, 60.0)
    hit = np.isfinite(ranges)
    assert hit.sum() > 300
    p = o[hit] + ranges[hit, None] * d[hit]
    assert np.abs(t.ground(p)[0]) == pytest.approx(0.0, abs=1e-6)   # on the surface
    # 2 mm samples up to the hit are all above the surface (no feature skipped)
    samples = np.linspace(0.0, 1.0, 2000)[None, :, None]
    before = o[hit, None, :] + samples * (ranges[hit, None, None] - 0.002) * d[hit, None, :]
    assert t.ground(before.reshape(-1, 3))[0].min() > 0.0


def test_a_ray_grazing_the_rim_crest_hits_within_the_error_bound():
    t = site()
    bound = (1.0 + 1.01 * t.max_slope) * terrain.MIN_STEP / 2.0
    assert bound < 0.02
    crest = CRATER.east - CRATER.radius               # the rim crest on the west side
    k = CRATER.rim_height
    for below, expect_hit in ((bound, True), (-0.001, False)):
        o = point(t, crest - 8.0, 0.0, k - below)[None, :]
        d = (point(t, crest + 0.5, 0.0, k - below) - o[0])[None, :]
        d /= np.linalg.norm(d)
        r, _ = t.intersect(o, d, R, 20.0)
        assert np.isfinite(r[0]) == expect_hit, (below, r)
        if expect_hit:
            assert 7.0 < r[0] < 8.01


def test_outside_the_patch_the_surface_is_the_bare_sphere():
    t = site()
    up = t.up_of([[400.0, 0.0]])
    o = up * (R + 2.0)
    r, n = t.intersect(o, -up, R, 10.0)
    assert r[0] == pytest.approx(2.0, abs=1e-9) and n[0] == pytest.approx(up[0], abs=1e-12)
    assert t.ground(o)[0][0] == pytest.approx(2.0, abs=1e-9)


def test_seeded_features_are_reproducible_and_keep_out_of_the_clear_zone():
    spec = TerrainSpec('Kerbin', LAT, LON, radius=150.0, seed=11, clear_radius=12.0,
                       crater_count=20, crater_radius=(3.0, 12.0), boulder_count=40,
                       boulder_radius=(0.2, 0.8))
    craters, boulders = terrain.seeded_features(spec)
    assert (craters, boulders) == terrain.seeded_features(spec)
    other = terrain.seeded_features(dataclasses.replace(spec, seed=12))
    assert other[0] != craters
    assert len(craters) == 20 and len(boulders) == 40
    for c in craters:
        rho = np.hypot(c.east, c.north)
        assert 12.0 + 2 * c.radius - 1e-9 <= rho <= 150.0 - 2 * c.radius + 1e-9
        assert 3.0 <= c.radius <= 12.0 and c.depth == pytest.approx(0.2 * c.radius)
    for b in boulders:
        assert 12.0 + b.radius - 1e-9 <= np.hypot(b.east, b.north) <= 150.0 - b.radius
    t = SiteTerrain(spec, KERBIN)
    clear = t.up_of(np.array([[0.0, 0.0], [5.0, 5.0], [-8.0, 3.0]]))
    assert t.ground(clear * (R + 0.75))[0] == pytest.approx([0.75] * 3, abs=1e-12)


def test_the_surface_scenario_has_terrain_and_the_lidar_sees_the_placed_boulder():
    world = World(load_scenario('surface'))
    t = world.terrain_of('Kerbin')
    assert world.terrain_of(MUN.name) is None and len(t.craters) == 12
    assert World(load_scenario('orbit')).terrain_of('Kerbin') is None
    # the rover rests on the terrain: its centre of mass 0.75 m above flat ground
    rover = world.active
    fixed = body_fixed_rotation(KERBIN, world.ut) @ rover.state.position
    clearance, normal = t.ground(fixed[None, :])
    assert clearance[0] == pytest.approx(rover.state.rest_altitude, abs=1e-9)
    assert normal[0] == pytest.approx(fixed / np.linalg.norm(fixed), abs=1e-12)
    sensing = Sensing(world)
    imager = next(i for i in sensing.imagers if i.kind == 'lidar_2d')
    scene = imaging.scene(world, world.ut)
    fields = imaging.lidar_fields(imager, scene, world.active, world.ut)
    ranges = np.where(np.array(fields['hitMask']) == 1, np.array(fields['ranges']), np.inf)
    # predicted: the sensor's pose, the boulder's sphere, in the body-fixed frame
    position, rotation = imaging.pose(scene, 'rover', imager.part, (0, 0, 0), (0, 0, 0, 1))
    to_fixed = body_fixed_rotation(KERBIN, world.ut)
    o = to_fixed @ position
    d = imager.directions @ rotation.T @ to_fixed.T
    boulder = t.boulder_centers[-1]
    first, _ = terrain._sphere_hits(np.broadcast_to(o - boulder, d.shape), d, np.zeros((1, 3)),
                                   np.array([1.0]))
    seen = np.isfinite(first) & (first <= 100.0)
    assert seen.sum() >= 10
    assert ranges[seen] == pytest.approx(first[seen], abs=2e-4)     # 4 decimals on the wire
    # every return lies on the ground truth's surface or on the rover itself
    points = o + ranges[np.isfinite(ranges), None] * d[np.isfinite(ranges)]
    clearance = t.ground(points)[0]
    on_ground = np.abs(clearance) < 0.01
    assert on_ground.sum() >= seen.sum()
    assert np.all(on_ground | (np.linalg.norm(points - o, axis=1) < 2.0))


def _looking_down(t: SiteTerrain, ut: float, east: float, north: float, alt: float):
    """Return a camera position and rotation (KCI) above a local point, image up = east."""
    to_inertial = body_fixed_rotation(KERBIN, ut).T
    above = to_inertial @ point(t, east, north, alt)
    down = -above / np.linalg.norm(above)
    top = to_inertial @ t.enu[0]
    top = top - (top @ down) * down
    top /= np.linalg.norm(top)
    return above, np.column_stack([down, np.cross(top, down), top])


def test_camera_renders_craters_and_boulders_of_the_body_fixed_terrain():
    t = site()
    ut = 1234.5
    view = t.in_frame(body_fixed_rotation(KERBIN, ut))
    sun = body_fixed_rotation(KERBIN, ut).T @ (t.enu[2] + 0.6 * t.enu[0])
    args = {'width': 64, 'height': 48, 'vertical_fov_deg': 90.0,
            'planet_center': np.zeros(3), 'planet_radius': R}
    above, rotation = _looking_down(t, ut, CRATER.east, CRATER.north, 15.0)
    bare = render.render(above, rotation, sun, **args)
    relief = render.render(above, rotation, sun, terrain=view, **args)
    assert (bare == bare[0, 0]).all()                 # a flat, evenly lit sphere
    changed = np.any(relief != bare, axis=2)
    assert changed.sum() > 200                        # the crater's sloped bowl and rim
    # straight down onto the boulder: its top, shaded with the sphere's normal
    above, rotation = _looking_down(t, ut, BOULDER.east, BOULDER.north, 12.0)
    hits = raycast.cast_full(above, rotation[:, 0], 100.0, (), np.zeros(3), R, view)
    assert hits.ranges[0] == pytest.approx(12.0 - 1.5, abs=1e-9) and hits.what[0] == -2
    assert hits.normals[0] == pytest.approx(-rotation[:, 0], abs=1e-9)
    image = render.render(above, rotation, sun, terrain=view, **args)
    assert np.any(image != render.render(above, rotation, sun, **args), axis=2).sum() > 8


def test_a_level_camera_sees_the_whole_boulder_above_the_crater_field():
    # The boulder's top (1.5 m) stands above the crater field's highest point: the
    # renderer must still cast those pixels, so that it equals raycast.cast_full on
    # every pixel of a camera 1 m up, looking level at the boulder from 8 m away.
    t = site()
    assert t.top_height == pytest.approx(1.5, abs=1e-9) and t.top_height > t.max_height
    ut = 1234.5
    to_inertial = body_fixed_rotation(KERBIN, ut).T
    view = t.in_frame(to_inertial.T)
    east, north, up = (to_inertial @ axis for axis in t.enu)
    camera = to_inertial @ point(t, BOULDER.east + 8.0, BOULDER.north, 1.0)
    rotation = np.column_stack([-east, -north, up])      # +X (optical axis) west
    q = rotations.from_matrix(rotation)
    fast = render.pixel_hits(camera, q, width=64, height=48, vertical_fov_deg=60.0,
                             planet_center=np.zeros(3), planet_radius=R, terrain=view)
    d = render.pixel_directions(64, 48, 60.0) @ rotation.T
    reference = raycast.cast_full(camera, d, 1e12, (), np.zeros(3), R, view)
    assert np.array_equal(fast.what, reference.what)
    ground = np.isfinite(reference.ranges)
    assert np.allclose(fast.ranges[ground], reference.ranges[ground], rtol=1e-9)
    # the boulder's upper half is in view: rays above the horizontal that hit it
    above = ground & (d @ up > 0.0)
    assert above.sum() >= 10
    assert np.all(reference.ranges[above] < 8.0)


@pytest.mark.parametrize('body', [KERBIN, MUN])
def test_a_ray_down_to_the_deepest_floor_meets_it_whatever_its_rounding(body):
    # The crater's floor is the field's lowest bound (the inner sphere of the march). Rays
    # straight down its centre, their origins off by the 1e-10 m an inertial round trip
    # adds, used to stop at the inner sphere a hair above the floor and miss the ground
    # (4 of these 200 on Kerbin, 44 on the Mun).
    spec = TerrainSpec(body.name, 10.0, 20.0, radius=100.0,
                       craters=(Crater(30.0, 0.0, 10.0, 2.0, 0.4),))
    t = SiteTerrain(spec, body)
    up = t.up_of([[30.0, 0.0]])[0]
    o = (body.radius + 10.0) * up + np.random.default_rng(0).normal(size=(200, 3)) * 3e-10
    ranges, _ = t.intersect(o, np.broadcast_to(-up, o.shape), body.radius, 100.0, False)
    assert ranges == pytest.approx(np.full(200, 12.0), abs=1e-6)
    # the default march of a height field stops at its inner sphere the same way
    bowl = Bowl(up, body.radius)
    ranges, _ = bowl.intersect(o, np.broadcast_to(-up, o.shape), body.radius, 100.0, False)
    assert ranges == pytest.approx(np.full(200, 12.0), abs=1e-6)


class Bowl(raycast.Terrain):
    """A cone 2 m deep at ``centre`` (its lowest bound), 10 m across: the default march."""

    min_height, max_height = -2.0, 0.0

    def __init__(self, centre, radius):
        self.centre, self.radius = centre, radius

    def height(self, up):
        off = np.linalg.norm(up - self.centre, axis=1) * self.radius
        return -2.0 * np.clip(1.0 - off / 10.0, 0.0, 1.0)


def test_star_tracker_terrain_includes_the_boulders():
    world = World(load_scenario('surface'))
    surface = Sensing(world).tracking.surface(world.ut)
    t = world.terrain_of('Kerbin')
    assert surface.radius == R and surface.center == pytest.approx(np.zeros(3))
    to_inertial = body_fixed_rotation(KERBIN, world.ut).T
    # a ray cast straight down at the last boulder's top meets it (the one kernel)
    boulder = to_inertial @ t.boulder_centers[-1]
    up = boulder / np.linalg.norm(boulder)
    above = boulder + (t.boulders[-1].radius + 5.0) * up
    ranges = raycast.cast(above, -up[None, :], 100.0, (), surface.center, surface.radius,
                          surface.terrain)
    assert ranges[0] == pytest.approx(5.0, abs=1e-6)
    crater = t.craters[0]
    floor = to_inertial @ t.up_of([[crater.east, crater.north]])[0] * R
    field = t.field([[crater.east, crater.north]])[0][0]
    assert field < -0.5 * crater.depth
    down = raycast.cast(floor + 10.0 * floor / R, -floor[None, :], 100.0, (), surface.center,
                        surface.radius, surface.terrain)
    assert down[0] == pytest.approx(10.0 - field, abs=1e-6)


def test_star_tracker_terrain_is_on_its_own_body_where_that_body_is(tmp_path):
    block = {'body': 'Mun', 'latitude': 10.0, 'longitude': 20.0, 'radius': 100,
             'craters': {'at': [{'east': 30, 'north': 0, 'radius': 10}]},
             'boulders': {'at': [{'east': -20, 'north': 5, 'radius': 2}]}}
    world = World(load_scenario(str(write(tmp_path, block))))
    site = world.terrain_of(MUN.name)
    assert world.terrain_of('Kerbin') is None
    sensing = Sensing(world)
    for ut in (world.ut, world.ut + 3600.0):        # the Mun moves on its orbit
        surface = sensing.tracking.surface(ut)
        center = mun_position(ut)
        assert surface.center == pytest.approx(center) and surface.radius == MUN.radius
        to_inertial = body_fixed_rotation(MUN, ut).T
        boulder = center + to_inertial @ site.boulder_centers[0]
        up = (boulder - center) / np.linalg.norm(boulder - center)
        ranges = raycast.cast(boulder + 7.0 * up, -up[None, :], 100.0, (), surface.center,
                              surface.radius, surface.terrain)
        assert ranges[0] == pytest.approx(5.0, abs=1e-6)           # its 2 m top
        bowl = to_inertial @ site.up_of([[33.0, 0.0]])[0]     # unit, from the Mun's centre
        down = raycast.cast(center + (MUN.radius + 10.0) * bowl, -bowl[None, :], 100.0, (),
                            surface.center, surface.radius, surface.terrain)
        assert down[0] == pytest.approx(10.0 + 2.0 - 2.4 * 0.3 ** 2, abs=1e-6)  # s = 0.3
    assert np.linalg.norm(mun_position(world.ut + 3600.0) - mun_position(world.ut)) > 5e5


def write(tmp_path: Path, terrain_block: dict, altitude: float = 0.75) -> Path:
    data = yaml.safe_load(Path(load_scenario('surface').path).read_text(encoding='utf-8'))
    data['terrain'] = terrain_block
    data['vessels'][0]['surface']['altitude'] = altitude
    path = tmp_path / 'terrain.yaml'
    path.write_text(yaml.safe_dump(data), encoding='utf-8')
    return path


BASE = {'body': 'Kerbin', 'latitude': LAT, 'longitude': LON, 'radius': 50}


@pytest.mark.parametrize('block, key, words', [
    ({**BASE, 'height': 3}, 'terrain.height', 'unknown key'),
    ({**BASE, 'body': 'Eve'}, 'terrain.body', 'not one of'),
    ({**BASE, 'radius': -1}, 'terrain.radius', 'must be > 0'),
    ({**BASE, 'boulders': {'at': [{'east': 49.5, 'north': 0, 'radius': 1}]}},
     'terrain.boulders.at[0]', 'outside the patch'),
    ({**BASE, 'craters': {'radius': [5, 2]}}, 'terrain.craters.radius', '0 < min <= max'),
    ({**BASE, 'craters': {'count': 3, 'radius': [2, 20]}}, 'terrain.craters.radius',
     'does not fit'),
    ({**BASE, 'boulders': {'at': [{'east': 0, 'north': 0, 'radius': 1, 'buried': 2}]}},
     'terrain.boulders.at[0].buried', 'within [0.0, 1.0]'),
    ({**BASE, 'craters': {'count': terrain.MAX_FEATURES + 1, 'radius': [0.1, 0.2]}},
     'terrain.craters.count', f'within [0, {terrain.MAX_FEATURES}]'),
    ({**BASE, 'boulders': {'count': terrain.MAX_FEATURES, 'radius': [0.1, 0.2],
                           'at': [{'east': 0, 'north': 0, 'radius': 0.1}]}},
     'terrain.boulders.at', f'300 seeded and 1 placed boulders exceed {terrain.MAX_FEATURES}'),
])
def test_bad_terrain_blocks_name_file_key_and_reason(tmp_path, block, key, words):
    path = write(tmp_path, block)
    with pytest.raises(ScenarioError) as err:
        load_scenario(str(path))
    assert str(path) in str(err.value) and f'{key}:' in str(err.value)
    assert words in str(err.value)


def test_the_most_features_a_terrain_holds_load(tmp_path):
    block = {**BASE, 'radius': 150, 'boulders': {'count': terrain.MAX_FEATURES - 1,
                                                 'radius': [0.1, 0.2],
                                                 'at': [{'east': 5, 'north': 0, 'radius': 0.2}]}}
    t = load_scenario(str(write(tmp_path, block))).terrain
    assert len(t.boulders) == terrain.MAX_FEATURES == 300


def test_a_scenario_has_one_terrain_or_none(tmp_path):
    site = load_scenario(str(write(tmp_path, BASE))).terrain
    assert site.spec.body == 'Kerbin'
    assert load_scenario('orbit').terrain is None


def test_terrain_block_defaults_are_the_terrain_specs(tmp_path):
    block = {'body': 'Kerbin', 'latitude': LAT, 'longitude': LON,
             'craters': {'count': 2}, 'boulders': {'count': 3}}
    spec = load_scenario(str(write(tmp_path, block))).terrain.spec
    assert spec == TerrainSpec('Kerbin', LAT, LON, crater_count=2, boulder_count=3)
    assert (spec.radius, spec.crater_radius, spec.depth_ratio, spec.rim_ratio,
            spec.boulder_radius, spec.buried) == (200.0, (2.0, 10.0), 0.2, 0.04, (0.2, 0.8),
                                                  0.25)


def test_a_vessel_standing_below_the_terrain_is_refused(tmp_path):
    block = {**BASE, 'boulders': {'at': [{'east': 0, 'north': 0, 'radius': 2.0}]}}
    path = write(tmp_path, block)
    with pytest.raises(ScenarioError, match=r'vessels\[0\]\.surface\.altitude: 0\.75 m puts '
                                            r'the centre of mass 1\.75 m below the terrain'):
        load_scenario(str(path))
    assert load_scenario(str(write(tmp_path, block, altitude=3.5))).terrain is not None


def test_a_start_with_a_part_inside_the_terrain_is_refused_wheels_within_their_travel(
        tmp_path):
    flat = {**BASE}
    rest = 0.44413                      # the scenario's: the tyres touch the ground
    for altitude in (rest, rest - 0.04):       # 4 cm into the 5 cm of free travel: loads
        assert load_scenario(str(write(tmp_path, flat, altitude=altitude))).terrain is not None
    with pytest.raises(ScenarioError, match=r'vessels\[0\]\.surface\.altitude: 0\.36413 m '
                       r'puts part 1 \(roverWheel1\) 0\.080 m inside the terrain \(its wheel '
                       r'may start 0\.050 m below it\)'):
        load_scenario(str(write(tmp_path, flat, altitude=rest - 0.08)))
    # a 1 m boulder (not buried) under the LiDAR: its lowest point, 0.80 m up, is 0.20 m
    # inside; the CoM, the body's lowest point and the wheels are clear of it
    rock = {**BASE, 'boulders': {'at': [{'east': 0.75, 'north': 0, 'radius': 0.5,
                                         'buried': 0}]}}
    with pytest.raises(ScenarioError, match=r'puts part 5 \(pylonLidar2D\) 0\.19\d m inside '
                                            r'the terrain$'):
        load_scenario(str(write(tmp_path, rock, altitude=rest)))


def test_shape_extent_is_the_support_function():
    box, cylinder, ball = Shape('box', (1.6, 1.0, 0.35)), Shape('cylinder', (0.3, 0.2)), \
        Shape('sphere', (0.5,))
    down = np.array([0.0, 0.0, -1.0])
    assert box.extent(down) == pytest.approx(0.175)
    assert box.extent(np.array([1.0, 1.0, 0.0]) / 2 ** 0.5) == pytest.approx(1.3 / 2 ** 0.5)
    assert cylinder.extent(down) == pytest.approx(0.3)           # across its axis (+X)
    assert cylinder.extent(np.array([-1.0, 0.0, 0.0])) == pytest.approx(0.1)
    tilted = np.array([math.sin(0.4), 0.0, -math.cos(0.4)])
    assert cylinder.extent(tilted) == pytest.approx(0.3 * math.cos(0.4) + 0.1 * math.sin(0.4))
    assert ball.extent(tilted) == 0.5


def test_lidar_pattern_against_a_crater_wall_from_inside():
    t = site()
    o = point(t, CRATER.east, 0.0, -CRATER.depth + 0.4)
    d = lidar.vertical_major_directions(360, 360.0) @ t.enu
    ranges, _ = t.intersect(np.broadcast_to(o, d.shape), d, R, 30.0)
    assert np.isfinite(ranges).all()                # the bowl surrounds the sensor
    p = o + ranges[:, None] * d
    assert np.abs(t.ground(p)[0]).max() < 1e-6
    # the bowl is round: the wall is the same distance all around (h = -d + (d+k) s^2)
    s = np.sqrt(0.4 / (CRATER.depth + CRATER.rim_height))
    assert ranges == pytest.approx(s * CRATER.radius, abs=1e-3)
