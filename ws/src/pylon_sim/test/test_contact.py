"""Collisions: the contact model (``contact``) alone, then karts in one ``World``.

Karts are copies of the ``kart`` scenario's kart in one world, placed on the start straight
by hand (kart0 on grid slot 0, the others along its heading), lock-stepped by
``World.step``; wheels idle (brakes off, no drive) unless a test drives them. How deep two
karts are in each other is measured from their parts here (each part's box, as boxes
aligned with kart0's axes: never less than the true overlap), not by the model.
"""

from __future__ import annotations

from dataclasses import replace
import math

import numpy as np
from pylon_protocol import rotations
from pylon_sim.game import contact, wheels
from pylon_sim.game.bodies import body_fixed_rotation
from pylon_sim.game.collisions import BOULDER
from pylon_sim.game.terrain import Boulder, SiteTerrain
from pylon_sim.game.vessel import Module
from pylon_sim.game.world import World
from pylon_sim.loop.scenario import load_scenario
import pytest

STEP = 0.02
MASS = 160.0                   # kg, the kart
TOLERANCE = 1e-9               # m, rounding on top of the slop


def karts(count: int, terrain=None, change=None) -> World:
    """Return a world of ``count`` karts (``kart0`` .. ), all at grid slot 0 until placed.

    ``change(index, parts)`` may return other parts for kart ``index``.
    """
    scenario = load_scenario('kart')
    base = scenario.vessels[0]
    vessels = tuple(replace(base, key=f'kart{i}', spec=replace(
        base.spec, vessel_id=f'{base.spec.vessel_id[:-2]}{i:02d}',
        parts=change(i, base.spec.parts) if change else base.spec.parts))
        for i in range(count))
    return World(replace(scenario, vessels=vessels, active='kart0', vehicles=('kart0',),
                         terrain=terrain or scenario.terrain))


def axes(world: World) -> np.ndarray:
    """Return kart0's axes at the start (columns: heading, left, up; body-fixed)."""
    v = world.vessels['kart0']
    return body_fixed_rotation(v.body, world.ut) @ rotations.to_matrix(v.state.attitude)


def place(world: World, key: str, ahead: float, speed: float, reverse: bool = False,
          frame: np.ndarray | None = None, left: float = 0.0) -> None:
    """Put a kart ``ahead`` m along kart0's start heading (``left`` m to its left).

    It moves at ``speed`` m/s; ``reverse`` turns it to face kart0; its wheels spin at the
    rolling speed. Places are from kart0's place (place kart0 last).
    """
    frame = axes(world) if frame is None else frame
    first, vessel = world.vessels['kart0'], world.vessels[key]
    to_fixed = body_fixed_rotation(vessel.body, world.ut)
    rotation = frame @ np.diag([-1.0, -1.0, 1.0]) if reverse else frame
    position = to_fixed.T @ (to_fixed @ first.state.position + ahead * frame[:, 0]
                             + left * frame[:, 1])
    attitude = to_fixed.T @ rotation
    spin = vessel.body.spin_vector()
    vessel.state = replace(
        vessel.state, position=position, attitude=rotations.from_matrix(attitude),
        velocity=np.cross(spin, position) + to_fixed.T @ (speed * rotation[:, 0]),
        body_rate=attitude.T @ spin)
    params = world.wheel_params(vessel)
    if params is not None:
        vessel.wheel_state = replace(wheels.State.initial(params.names),
                                     omega=np.full(params.count, speed / params.radius[0]))


def ground_velocity(world: World, key: str) -> np.ndarray:
    """Return a kart's velocity over the ground (body-fixed), m/s."""
    v = world.vessels[key]
    to_fixed = body_fixed_rotation(v.body, world.ut)
    return to_fixed @ (v.state.velocity - np.cross(v.body.spin_vector(), v.state.position))


def part_boxes(world: World, key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the kart's parts as boxes: centres, axes (columns) and half sizes (fixed)."""
    v = world.vessels[key]
    to_fixed = body_fixed_rotation(v.body, world.ut)
    rot = to_fixed @ rotations.to_matrix(v.state.attitude)
    origin = to_fixed @ v.state.position - rot @ v.mass.com
    centres, frames, halves = [], [], []
    for part in v.spec.parts:
        size = np.asarray(part.shape.size, dtype=float)
        halves.append({'box': size / 2.0, 'cylinder': np.array([size[1] / 2.0, size[0], size[0]]),
                       'sphere': np.full(3, size[0])}[part.shape.kind])
        centres.append(origin + rot @ np.asarray(part.position))
        frames.append(rot @ rotations.to_matrix(part.rotation))
    return np.array(centres), np.array(frames), np.array(halves)


def penetration(world: World, a: str, b: str) -> float:
    """Return how deep any part box of kart ``a`` is in one of kart ``b`` (m, <= 0: apart).

    Two boxes overlap by the least overlap of their projections on the directions that
    can separate them: the six face normals and the nine cross products of their edges.
    """
    deepest = -math.inf
    for ca, ra, ha in zip(*part_boxes(world, a)):
        for cb, rb, hb in zip(*part_boxes(world, b)):
            edges = np.array([np.cross(u, v) for u in ra.T for v in rb.T])
            length = np.linalg.norm(edges, axis=1)
            directions = np.vstack([ra.T, rb.T, edges[length > 1e-6]
                                    / length[length > 1e-6, None]])
            overlap = (np.abs(directions @ ra) @ ha + np.abs(directions @ rb) @ hb
                       - np.abs(directions @ (cb - ca)))
            deepest = max(deepest, float(overlap.min()))
    return deepest


def momentum(world: World, keys, frame: np.ndarray) -> float:
    """Return the karts' linear momentum along kart0's start heading, N s."""
    return sum(MASS * float(ground_velocity(world, key) @ frame[:, 0]) for key in keys)


# -- the model alone -----------------------------------------------------------------------

def test_the_kart_collides_as_its_parts_boxes():
    world = karts(1)
    kart = world.vessels['kart0']
    hull = contact.hull(kart.spec.parts, kart.mass.com)
    assert len(hull.halves) == len(kart.spec.parts) == 8
    assert hull.halves[0] == pytest.approx([0.7, 0.4, 0.1])              # the chassis
    for wheel in range(1, 5):                      # a wheel: 0.28 long, 0.12 wide, 0.28 high
        extent = np.abs(hull.axes[wheel]) @ hull.halves[wheel]
        assert extent == pytest.approx([0.14, 0.06, 0.14])
    reach = np.abs(hull.axes) @ hull.halves[:, :, None]
    front = (hull.centres[:, 0] + reach[:, 0, 0]).max()
    side = (hull.centres[:, 1] + reach[:, 1, 0]).max()
    assert front + kart.mass.com[0] == pytest.approx(0.85)     # the LiDAR's front face
    assert side == pytest.approx(0.56)                         # a wheel's outer face


def box_body(key, x, velocity, rate=(0.0, 0.0, 0.0), mass=100.0, yaw=0.0):
    """Return a 1 x 0.6 x 0.4 m box body at (x, 0, 0) (its centre of mass at its centre)."""
    hull = contact.Hull(np.zeros((1, 3)), np.eye(3)[None], np.array([[0.5, 0.3, 0.2]]))
    inertia = mass / 12.0 * np.diag([0.6 ** 2 + 0.4 ** 2, 1.0 + 0.4 ** 2, 1.0 + 0.6 ** 2])
    return contact.Body(key, hull, np.array([x, 0.0, 0.0]),
                        rotations.to_matrix(rotations.from_rpy(0.0, 0.0, yaw)),
                        np.asarray(velocity, float), np.asarray(rate, float), mass, inertia)


def test_an_impulse_exchanges_momentum_and_bounces_with_the_restitution():
    # b, 0.05 m deep in a, off centre and turned, with friction: every component counts
    a = box_body('a', 0.0, (3.0, 0.5, 0.0), rate=(0.0, 0.0, 0.4))
    b = box_body('b', 1.0, (-1.0, 0.0, 0.0), mass=60.0, yaw=0.3)
    b = replace(b, position=b.position + [0.0, 0.15, 0.05])
    found = contact.contacts([a, b])
    assert len(found) == 1 and found[0].depth > 0.0
    out = contact.resolve([a, b], found)
    new_a, new_b = out.bodies

    def linear(x, y):
        return x.mass * x.velocity + y.mass * y.velocity

    def angular(x, y):          # about the origin: r x m v + I w (frame axes)
        return sum(np.cross(k.position, k.mass * k.velocity)
                   + k.rotation @ k.inertia @ k.rotation.T @ k.rate for k in (x, y))
    assert np.allclose(linear(new_a, new_b), linear(a, b), rtol=0.0, atol=1e-9)
    # positions moved (the correction), so the angular momentum about the origin is taken
    # with the old positions: the impulses alone conserve it
    moved_a, moved_b = replace(new_a, position=a.position), replace(new_b, position=b.position)
    assert np.allclose(angular(moved_a, moved_b), angular(a, b), rtol=0.0, atol=1e-9)
    assert out.impulses[0] > 0.0 and out.speeds[0] > contact.BOUNCE_SPEED
    again = contact.contacts(out.bodies)
    assert max(c.depth for c in again) <= contact.SLOP + TOLERANCE


def test_a_head_on_impulse_leaves_them_parting_at_the_restitution_speed():
    a = box_body('a', 0.0, (2.0, 0.0, 0.0))
    b = box_body('b', 0.98, (-2.0, 0.0, 0.0))
    out = contact.resolve([a, b], contact.contacts([a, b]))
    parting = out.bodies[1].velocity[0] - out.bodies[0].velocity[0]
    assert parting == pytest.approx(contact.VESSELS.restitution * 4.0, rel=1e-12)
    assert out.speeds == [pytest.approx(4.0)]
    assert out.impulses == [pytest.approx(50.0 * 4.0 * 1.3, rel=1e-12)]   # mu (1 + e) v
    gap = out.bodies[1].position[0] - out.bodies[0].position[0]
    assert gap == pytest.approx(1.0 - contact.SLOP, abs=TOLERANCE)       # corrected


def test_a_slow_push_does_not_bounce_and_static_things_do_not_move():
    a = box_body('a', 0.0, (0.3, 0.0, 0.0))
    wall = replace(box_body('wall', 0.99, (0.0, 0.0, 0.0)), mass=math.inf, inertia=None)
    out = contact.resolve([a, wall], contact.contacts([a, wall]))
    assert out.bodies[0].velocity == pytest.approx([0.0, 0.0, 0.0], abs=1e-12)
    assert out.bodies[1] is wall
    assert out.bodies[0].position[0] == pytest.approx(-0.01 + contact.SLOP)


def test_a_box_that_went_deep_into_a_boulder_in_one_step_goes_back_the_way_it_came():
    # the box's front face moved 0.5 m into a 0.3 m sphere whose centre is now inside the
    # box, nearer its bottom face than its front one: it still goes back, not up
    sphere = contact.Spheres(np.array([[0.4, 0.0, -0.15]]), np.array([0.3]))
    before = box_body('a', -0.5, (25.0, 0.0, 0.0))
    after = replace(before, position=np.zeros(3))
    (hit,) = contact.contacts([after], sphere, before=[before])
    assert hit.normal == pytest.approx([1.0, 0.0, 0.0])
    assert hit.depth == pytest.approx(0.5 - 0.4 + 0.3)
    (lazy,) = contact.contacts([after], sphere)                # without: the nearest face
    assert lazy.normal == pytest.approx([0.0, 0.0, -1.0])
    out = contact.resolve([after], [hit])
    assert out.bodies[0].velocity[0] < 0.0                     # it bounced back
    assert out.bodies[0].position[0] == pytest.approx(-(0.4 - contact.SLOP))


def test_touching_starts_on_penetration_and_lasts_within_the_margin():
    pair = frozenset({'a', 'b'})
    assert contact.touching(frozenset(), {pair: -0.001}) == frozenset()
    now = contact.touching(frozenset(), {pair: 0.001})
    assert now == {pair}
    assert contact.touching(now, {pair: -0.5 * contact.MARGIN}) == {pair}
    assert contact.touching(now, {pair: -2.0 * contact.MARGIN}) == frozenset()
    assert contact.touching(now, {}) == frozenset()


# -- karts in the world --------------------------------------------------------------------

def crash(speed0: float, speed1: float, reverse: bool, seconds: float = 1.0):
    """Run kart0 at ``speed0`` into kart1 4 m ahead (``speed1`` along kart1's heading).

    Return the world, the steps' (momentum along the heading, penetration) and kart0's
    start axes.
    """
    world = karts(2)
    frame = axes(world)
    place(world, 'kart0', 0.0, speed0, frame=frame)
    place(world, 'kart1', 4.0, speed1, reverse=reverse, frame=frame)
    rows = [(momentum(world, ('kart0', 'kart1'), frame), 0.0)]
    for _ in range(int(round(seconds / STEP))):
        world.step()
        rows.append((momentum(world, ('kart0', 'kart1'), frame),
                     penetration(world, 'kart0', 'kart1')))
    return world, rows, frame


def check_crash(world, rows, approach: float, window: int = 5) -> None:
    """Check a two-kart crash: reported once each, never deeper than the slop, momentum.

    The contact is resolved at the end of its step, after the wheels and the ground have
    acted with the karts' speeds before the crash: that step's change of the pair's
    momentum is the one of the step before (rolling resistance, the only force on a
    coasting kart) to 0.01 N s. Over ``window`` steps after it, the tyres also pull each
    kart's wheels to its new speed (wheel inertia 4 I / r² = 10 kg a kart): those pulls
    are internal to the pair only in the mean, so the pair's momentum may move by up to
    1 % of what it was, beyond the rolling resistance (2 C_rr m g = 63 N for two karts).
    """
    events = world.collisions
    assert [(e.vessel, e.other) for e in events] == [('kart0', 'kart1'), ('kart1', 'kart0')]
    assert events[0].speed == pytest.approx(approach, abs=0.3)
    assert events[0].impulse > 0.0
    depths = [depth for _, depth in rows]
    assert max(depths) <= contact.SLOP + TOLERANCE, max(depths)
    hit = next(i for i, depth in enumerate(depths) if depth > 0.0)
    p = [m for m, _ in rows]
    assert abs((p[hit] - p[hit - 1]) - (p[hit - 1] - p[hit - 2])) < 0.01
    rolling = 2 * 0.02 * MASS * 9.81 * window * STEP
    assert abs(p[hit + window] - p[hit - 1]) <= rolling + 0.01 * abs(p[hit - 1])


def test_rear_end_a_moving_kart_into_a_standing_one():
    world, rows, frame = crash(5.0, 0.0, reverse=False)
    check_crash(world, rows, 5.0)
    after0 = float(ground_velocity(world, 'kart0') @ frame[:, 0])
    after1 = float(ground_velocity(world, 'kart1') @ frame[:, 0])
    assert after1 > after0 > 0.0                       # pushed ahead, the striker slowed
    assert after1 - after0 == pytest.approx(contact.VESSELS.restitution * 5.0, abs=0.6)


def test_head_on_two_karts():
    world, rows, frame = crash(5.0, 3.0, reverse=True)
    check_crash(world, rows, 8.0)
    after0 = float(ground_velocity(world, 'kart0') @ frame[:, 0])
    after1 = float(ground_velocity(world, 'kart1') @ frame[:, 0])
    assert after1 > after0                              # parting


def drive(world: World, key: str, seconds: float, spin: float = 40.0, steering: float = 0.0,
          each=None) -> None:
    """Drive a kart's rear wheels toward ``spin`` rad/s (steering the front ones)."""
    names = world.wheel_params(world.vessels[key]).names
    command = {name: {'enabled': True, 'commanded': True, 'max_drive_torque': 0.0,
                      'target_angular_velocity': spin if k >= 2 else 0.0,
                      'steering_angle': steering if k < 2 else 0.0, 'brake': 0.0}
               for k, name in enumerate(names)}
    for _ in range(int(round(seconds / STEP))):
        world.step(wheel_commands={key: command})
        if each is not None:
            each()


def boulder_ahead(distance: float, radius: float) -> SiteTerrain:
    """Return the kart scenario's ground with one boulder ``distance`` m ahead of grid 0."""
    scenario = load_scenario('kart')
    site = scenario.terrain
    world = World(scenario)
    kart = world.active
    to_fixed = body_fixed_rotation(kart.body, world.ut)
    east, north = site.local((to_fixed @ kart.state.position)[None, :])[0][0]
    heading = (to_fixed @ rotations.to_matrix(kart.state.attitude))[:, 0]
    de, dn = site.enu[0] @ heading, site.enu[1] @ heading
    boulder = Boulder(float(east + distance * de), float(north + distance * dn), radius,
                      site.spec.buried)
    spec = replace(site.spec, crater_count=0, boulder_count=0, craters=(),
                   boulders=(boulder,), keep_out=None)
    return SiteTerrain(spec, kart.body)


def boulder_clearance(world: World, key: str, terrain: SiteTerrain) -> float:
    """Return the least distance of the kart's part boxes to the boulder (m, < 0: inside)."""
    v = world.vessels[key]
    to_fixed = body_fixed_rotation(v.body, world.ut)
    rot = to_fixed @ rotations.to_matrix(v.state.attitude)
    origin = to_fixed @ v.state.position - rot @ v.mass.com
    centre, radius = terrain.boulder_centers[0], terrain.boulders[0].radius
    least = math.inf
    for part in v.spec.parts:
        part_rot = rot @ rotations.to_matrix(part.rotation)
        local = part_rot.T @ (centre - origin - rot @ np.asarray(part.position))
        size = np.asarray(part.shape.size, dtype=float)
        half = {'box': size / 2.0, 'cylinder': np.array([size[1] / 2.0, size[0], size[0]]),
                'sphere': np.full(3, size[0])}[part.shape.kind]
        least = min(least, float(np.linalg.norm(local - np.clip(local, -half, half))) - radius)
    return least


def test_a_kart_driven_into_a_boulder_stops_against_it():
    terrain = boulder_ahead(6.0, 0.5)
    world = karts(1, terrain)
    frame = axes(world)
    least = []
    drive(world, 'kart0', 4.0, each=lambda: least.append(boulder_clearance(world, 'kart0',
                                                                           terrain)))
    events = world.collisions
    assert [(e.vessel, e.other) for e in events] == [('kart0', BOULDER)]
    assert events[0].speed > 3.0 and events[0].impulse > 0.0
    assert min(least) >= -(contact.SLOP + TOLERANCE)           # never into it
    assert least[-1] < 0.01                                    # still pressed against it
    ahead = float(ground_velocity(world, 'kart0') @ frame[:, 0])
    assert abs(ahead) < 0.05                                   # stopped there, driving on
    assert world.drain_collisions('kart0') == events
    assert world.drain_collisions('kart0') == []


def test_a_kart_alone_on_the_track_and_four_on_the_grid_collide_with_nothing():
    world = World(load_scenario('kart'))
    drive(world, 'kart', 6.0, steering=0.15)
    assert world.collisions == []
    grid = karts(4)
    frame = axes(grid)
    for k in (1, 2, 3, 0):      # as the grid slots: 4 m apart, 1.5 m either side
        place(grid, f'kart{k}', -4.0 * k, 0.0, frame=frame, left=1.5 if k % 2 else -1.5)
    for _ in range(100):
        grid.step()
    assert grid.collisions == []


def test_a_landed_vessel_without_wheels_stops_a_kart_and_does_not_move():
    def wheelless(index, parts):           # kart1: its wheels are parts without modules
        return parts if index == 0 else tuple(
            replace(p, modules=tuple(m for m in p.modules if m.kind != 'wheel'))
            for p in parts)
    world = karts(2, change=wheelless)
    frame = axes(world)
    place(world, 'kart1', 4.0, 0.0, frame=frame)
    place(world, 'kart0', 0.0, 4.0, frame=frame)
    wall = world.vessels['kart1']
    assert wall.state.landed and world.wheel_params(wall) is None
    fixed = body_fixed_rotation(wall.body, world.ut) @ wall.state.position
    depths = []
    for _ in range(60):
        world.step()
        depths.append(penetration(world, 'kart0', 'kart1'))
    assert [(e.vessel, e.other) for e in world.collisions] == [('kart0', 'kart1'),
                                                               ('kart1', 'kart0')]
    assert max(depths) <= contact.SLOP + TOLERANCE
    moved = body_fixed_rotation(wall.body, world.ut) @ wall.state.position - fixed
    assert np.linalg.norm(moved) < 1e-6                       # it stood, turning with Kerbin
    assert float(ground_velocity(world, 'kart0') @ frame[:, 0]) < 0.0   # bounced back


def test_vessels_that_could_dock_do_not_collide():
    def port(index, parts):                # a docking port module on each chassis
        chassis = parts[0]
        return (replace(chassis, modules=(*chassis.modules, Module('docking_port', 9))),
                *parts[1:])
    world = karts(2, change=port)
    frame = axes(world)
    place(world, 'kart1', 4.0, 0.0, frame=frame)
    place(world, 'kart0', 0.0, 4.0, frame=frame)
    for _ in range(40):
        world.step()
    assert world.collisions == []
    assert penetration(world, 'kart0', 'kart1') > 0.1        # they went into each other
