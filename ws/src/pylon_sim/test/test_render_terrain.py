"""The camera's terrain cast (``terrain_near``) against the per-pixel reference cast.

``render`` casts a ``SiteTerrain`` per crater and boulder on the pixels each one covers;
``reference=True`` casts every planet pixel with ``raycast.cast_full`` (``SiteTerrain
.intersect``). On the kart scenario's camera view and on a view down into its largest
crater, the two agree: the same thing hit on every pixel but a few silhouette pixels, the
same range within 1 mm on all but 0.1 % of them, and the same colours.
"""

from functools import lru_cache

import numpy as np
from pylon_sim.game import terrain_march
from pylon_sim.sensors import imaging, render
import pytest

SUN = (0.3, -0.5, 0.8)


@lru_cache(maxsize=1)
def kart_scene():
    from pylon_sim.game.world import World
    from pylon_sim.loop.scenario import load_scenario
    from pylon_sim.sensors.sensing import Sensing
    world = World(load_scenario('kart'))
    scene = imaging.scene(world, world.ut)
    camera = next(i for i in Sensing(world).imagers if i.kind == 'camera')
    position, rotation = imaging.pose(scene, world.active.key, camera.part, (0, 0, 0),
                                      (0, 0, 0, 1))
    return scene, position, rotation


def crater_view(scene):
    """Return a camera 3 m above the ground west of the largest crater, 25 deg down."""
    terrain = scene['terrain']
    center = scene['planet'][0]
    fixed = terrain.frame_rotation
    crater = max(terrain.craters, key=lambda c: c.radius)
    up = terrain.up_of(np.array([[crater.east - 2.2 * crater.radius, crater.north]]))[0]
    east, _, up_axis = terrain.enu
    look = np.cos(np.radians(25.0)) * east - np.sin(np.radians(25.0)) * up_axis
    left = np.cross(up_axis, look)
    left /= np.linalg.norm(left)
    rotation = np.column_stack([look, left, np.cross(look, left)])
    return center + fixed.T @ (up * (terrain.body_radius + 3.0)), fixed.T @ rotation


def both_paths(position, rotation, scene, **size):
    center, radius, _ = scene['planet']
    kw = dict(planet_center=center, planet_radius=radius, terrain=scene['terrain'], **size)
    return (render.pixel_hits(position, rotation, reference=True, **kw),
            render.pixel_hits(position, rotation, **kw))


def compare(reference, fast):
    """Return the fraction of pixels hitting another thing, and of ranges off by > 1 mm."""
    other = np.mean(reference.what != fast.what)
    hit = np.isfinite(reference.ranges) & np.isfinite(fast.ranges)
    off = np.abs(reference.ranges[hit] - fast.ranges[hit]) > 1e-3
    return other, off.sum() / len(reference.ranges)


def test_the_kart_cameras_view_is_the_reference_casts():
    scene, position, rotation = kart_scene()
    reference, fast = both_paths(position, rotation, scene)
    assert np.isfinite(fast.ranges).sum() > 0.5 * len(fast.ranges)    # the ground, mostly
    assert (fast.what == -2).sum() == np.isfinite(fast.ranges).sum()
    other, off = compare(reference, fast)
    assert other == 0.0 and off == 0.0
    hit = np.isfinite(fast.ranges)
    assert np.abs(reference.normals[hit] - fast.normals[hit]).max() < 1e-6


def test_a_view_into_a_crater_is_the_reference_cast_but_at_silhouettes():
    scene, _, _ = kart_scene()
    position, rotation = crater_view(scene)
    reference, fast = both_paths(position, rotation, scene, width=80, height=60)
    marched = np.isfinite(fast.ranges) & (fast.ranges < 40.0)
    assert marched.mean() > 0.5                                 # the crater fills the view
    other, off = compare(reference, fast)
    assert other <= 0.002 and off <= 0.002


def test_rendered_frames_match_the_reference_colours():
    scene, position, rotation = kart_scene()
    center, radius, atmosphere = scene['planet']
    kw = {'planet_center': center, 'planet_radius': radius, 'terrain': scene['terrain'],
          'atmosphere_depth': atmosphere, 'width': 160, 'height': 120}
    fast = render.render(position, rotation, SUN, **kw).astype(int)
    reference = render.render(position, rotation, SUN, reference=True, **kw).astype(int)
    assert np.mean(np.abs(fast - reference).max(axis=2) <= 1) >= 0.999


def test_the_sampled_march_finds_the_crossing_in_fewer_calls():
    from pylon_sim.game import terrain
    calls = {'samples': 0, 'reference': 0}

    def gap_of(name):
        def gap(idx, t):         # a ray descending 1 cm per metre onto a floor 1 m below
            calls[name] += 1
            return 1.0 - 1e-2 * t, np.full(np.shape(t), -1e-2)
        return gap
    args = (np.zeros(1), np.full(1, 200.0), np.full(1, 0.5), np.zeros(1, dtype=bool))
    sampled = terrain_march.march_samples(gap_of('samples'), *args)
    reference = terrain.march_relief(gap_of('reference'), *args)
    assert sampled[0] == pytest.approx(100.0, abs=1e-6)
    assert reference[0] == pytest.approx(100.0, abs=1e-6)
    assert calls['samples'] < 0.4 * calls['reference']


def test_the_sampled_march_stops_at_a_dip_a_step_would_pass_over():
    """A ray level 1 m over a floor with one 4 cm-wide pit: found, as by the reference."""
    from pylon_sim.game import terrain

    def gap(idx, t):
        pit = (np.abs(np.asarray(t) - 7.0) < 0.02)
        return np.where(pit, -1.0, 0.01) + 0 * np.asarray(t), np.zeros(np.shape(t))
    args = (np.zeros(1), np.full(1, 20.0), np.full(1, 0.5), np.zeros(1, dtype=bool))
    reference = terrain.march_relief(lambda i, t: gap(i, t), *args)
    sampled = terrain_march.march_samples(gap, *args)
    assert reference[0] == pytest.approx(6.98, abs=0.02)
    assert sampled[0] == pytest.approx(reference[0], abs=1e-6)


def test_the_crater_rays_gap_is_the_terrains_in_a_turned_frame():
    """``CraterRays.gap`` from a camera frame: ``SiteTerrain._gap`` in the terrain's."""
    from pylon_protocol import rotations
    scene, position, _ = kart_scene()
    terrain = scene['terrain']
    rng = np.random.default_rng(3)
    origin = terrain.site + terrain.enu[2] * 0.6             # 0.6 m above the site
    ray, crater = np.arange(300), rng.integers(0, len(terrain.craters), 300)
    toward = terrain._k_centers[crater] - origin + rng.normal(0.0, 3.0, (300, 3))
    d = toward / np.linalg.norm(toward, axis=1, keepdims=True)
    t = rng.uniform(0.0, 1.2, (300, 4)) * np.linalg.norm(toward, axis=1)[:, None]
    turn = rotations.to_matrix(np.array([0.3, -0.5, 0.2, 0.78]) / np.linalg.norm(
        [0.3, -0.5, 0.2, 0.78]))                             # rays' frame -> terrain's
    rays = terrain_march.CraterRays(terrain, turn.T @ origin, d @ turn, crater,
                                    terrain.enu @ turn)
    gap, climb = rays.gap(ray, t)
    for k in range(t.shape[1]):
        expected, expected_climb = terrain._gap(np.broadcast_to(origin, d.shape), d, t[:, k],
                                                terrain._k_groups[crater])
        assert np.abs(gap[:, k] - expected).max() < 1e-8
        assert np.abs(climb[:, k] - expected_climb).max() < 1e-12


def test_a_craters_shell_bounds_the_field_in_its_sphere():
    from pylon_sim.game.terrain_near import _crater_bounds
    scene, _, _ = kart_scene()
    terrain = scene['terrain']
    low, high = _crater_bounds(terrain)
    assert high.max() < terrain.max_height + 0.01 and low.min() > terrain.min_height - 0.01
    assert high.min() < terrain.max_height - 0.1              # tighter than the terrain's
    rng = np.random.default_rng(5)
    for k, crater in enumerate(terrain.craters):
        angle = rng.uniform(0.0, 2 * np.pi, 4000)
        rho = terrain._k_reach[k] * np.sqrt(rng.uniform(0.0, 1.0, 4000))
        en = np.column_stack([crater.east + rho * np.cos(angle),
                              crater.north + rho * np.sin(angle)])
        h = terrain.field(en)[0]
        assert low[k] <= h.min() and h.max() <= high[k]
