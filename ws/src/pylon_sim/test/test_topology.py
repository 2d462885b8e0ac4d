"""Topology changes: a separator splits the part tree, mass and momentum are conserved."""

import math

import numpy as np
from pylon_protocol import rotations
from pylon_sim.game import kepler, topology
from pylon_sim.game.bodies import KERBIN
from pylon_sim.game.physics import RigidState
from pylon_sim.game.vessel import mass_properties, Module, Part, Shape, VesselSpec
from pylon_sim.game.world import World
from pylon_sim.loop.scenario import load_scenario
import pytest

TOLERANCE = 1e-9


CYLINDER = Shape('cylinder', (0.6, 1.0))


def part(index, parent, position, mass, *, rpy=(0.0, 0.0, 0.0), modules=(), resources=None,
         shape=CYLINDER):
    return Part(f'part{index}', f'Part {index}', 7000 + index, 8000 + index, parent,
                tuple(position), tuple(rotations.from_rpy(*rpy).tolist()), mass, shape,
                resources=resources or {}, capacity=resources or {}, modules=modules)


def stack() -> VesselSpec:
    """Return a pod, a turned and tilted decoupler, a tank, an engine and a fin."""
    decoupler = Module('decoupler', 0, {'ejection_force': 100.0})
    return VesselSpec('a' * 32, 'Stack', (
        part(0, None, (0.0, 0.0, 0.0), 800.0, modules=(Module('command', 0),)),
        part(1, 0, (-0.6, 0.05, 0.02), 40.0, rpy=(0.5, 0.1, -0.05), modules=(decoupler,)),
        part(2, 1, (-1.7, 0.1, 0.0), 250.0, resources={'LiquidFuel': 180.0}),
        part(3, 2, (-3.0, 0.0, 0.1), 1500.0, shape=Shape('box', (0.7, 1.2, 1.2))),
        part(4, 0, (0.0, 0.7, 0.0), 20.0, shape=Shape('box', (0.1, 0.5, 0.3))),
    ))


def test_the_separator_and_the_parts_beyond_it_leave_in_the_separators_frame():
    spec = stack()
    cut = topology.split(spec, 1, 'b' * 32)
    assert cut.kept_indices == (0, 4) and cut.beyond_indices == (1, 2, 3)
    assert [p.persistent_id for p in cut.kept.parts] == [7000, 7004]
    assert [p.parent for p in cut.kept.parts] == [None, 0]
    assert [p.persistent_id for p in cut.beyond.parts] == [7001, 7002, 7003]
    assert [p.parent for p in cut.beyond.parts] == [None, 0, 1]
    assert cut.kept.vessel_id == 'a' * 32 and cut.beyond.vessel_id == 'b' * 32
    assert cut.beyond.is_debris and cut.beyond.name == 'Stack Debris'
    # the new root is the separator, at the origin of its own frame
    assert np.allclose(cut.beyond.parts[0].position, 0.0, atol=1e-15)
    assert np.allclose(cut.beyond.parts[0].rotation, [0, 0, 0, 1], atol=1e-15)
    # every moved part is where it was: origin + R (its new pose)
    for old, new in zip((spec.parts[i] for i in cut.beyond_indices), cut.beyond.parts):
        back = cut.origin + rotations.rotate(cut.rotation, new.position)
        assert np.allclose(back, old.position, atol=1e-12)
        turned = rotations.multiply(cut.rotation, new.rotation)
        assert rotations.angle_between(turned, old.rotation) < 1e-12


def test_a_separator_at_the_root_has_nothing_beyond_it():
    spec = VesselSpec('a' * 32, 'Lone', (
        part(0, None, (0.0, 0.0, 0.0), 40.0, modules=(Module('decoupler', 0),)),
        part(1, 0, (-1.0, 0.0, 0.0), 100.0)))
    assert topology.beyond_indices(spec, 0) == ()
    with pytest.raises(topology.NothingBeyondError):
        topology.split(spec, 0, 'b' * 32)


def test_a_piece_with_a_command_module_is_not_debris():
    spec = stack()
    probe = Module('command', 1)
    parts = list(spec.parts)
    parts[3] = Part(**{**parts[3].__dict__, 'modules': (probe,)})
    cut = topology.split(VesselSpec(spec.vessel_id, spec.name, tuple(parts)), 1, 'b' * 32)
    assert not cut.beyond.is_debris and cut.beyond.name == 'Stack Part 3'


def pieces_of(spec, resources):
    cut = topology.split(spec, 1, 'b' * 32)
    kept = mass_properties(cut.kept, topology.split_resources(resources, cut.kept_indices))
    beyond = mass_properties(cut.beyond,
                             topology.split_resources(resources, cut.beyond_indices))
    identity = np.array([0.0, 0.0, 0.0, 1.0])
    return cut, (topology.Piece(kept, identity, -1.0),
                 topology.Piece(topology.in_frame(beyond, cut.origin, cut.rotation),
                                cut.rotation, 1.0))


def momenta(states, masses, inertias_body):
    """Return total mass, linear momentum, CoM and angular momentum about that CoM."""
    total = sum(masses)
    p = sum(m * s.velocity for m, s in zip(masses, states))
    com = sum(m * s.position for m, s in zip(masses, states)) / total
    vcom = p / total
    angular = np.zeros(3)
    for m, s, inertia in zip(masses, states, inertias_body):
        rot = rotations.to_matrix(s.attitude)
        r = s.position - com
        angular += rot @ inertia @ s.body_rate + m * np.cross(r, s.velocity - vcom)
    return total, p, angular


def test_the_split_conserves_mass_linear_and_angular_momentum():
    spec = stack()
    resources = spec.initial_resources()
    whole = mass_properties(spec, resources)
    cut, pieces = pieces_of(spec, resources)
    attitude = rotations.from_rpy(0.3, -0.7, 1.1)
    state = RigidState(100.0, np.array([7.0e5, 1.0e4, -2.0e3]), np.array([10.0, 2200.0, 5.0]),
                       attitude, np.array([0.05, -0.12, 0.3]))
    axis = rotations.rotate(cut.rotation, (1.0, 0.0, 0.0))
    kept, beyond = topology.separate_states(state, pieces, cut.origin, axis, 2000.0)
    beyond_inertia = mass_properties(cut.beyond, topology.split_resources(
        resources, cut.beyond_indices)).inertia
    m0, p0, l0 = momenta([state], [whole.mass], [whole.inertia])
    m1, p1, l1 = momenta([kept, beyond], [pieces[0].mass.mass, pieces[1].mass.mass],
                         [pieces[0].mass.inertia, beyond_inertia])
    assert abs(m1 - m0) <= TOLERANCE * m0
    assert np.linalg.norm(p1 - p0) <= TOLERANCE * np.linalg.norm(p0)
    assert np.linalg.norm(l1 - l0) <= TOLERANCE * np.linalg.norm(l0)
    # the common centre of mass has not moved
    com = (pieces[0].mass.mass * kept.position + pieces[1].mass.mass * beyond.position) / m0
    assert np.linalg.norm(com - state.position) < 1e-9 * np.linalg.norm(state.position)
    # the new vessel's attitude is the whole's turned by the separator's mounting
    assert rotations.angle_between(beyond.attitude,
                                   rotations.multiply(attitude, cut.rotation)) < 1e-12


def test_without_rotation_each_piece_gets_the_impulse_over_its_mass_along_the_axis():
    spec = stack()
    resources = spec.initial_resources()
    cut, pieces = pieces_of(spec, resources)
    state = RigidState(0.0, np.array([7.0e5, 0.0, 0.0]), np.array([0.0, 2200.0, 0.0]),
                       np.array([0.0, 0.0, 0.0, 1.0]), np.zeros(3))
    axis = rotations.rotate(cut.rotation, (1.0, 0.0, 0.0))
    kept, beyond = topology.separate_states(state, pieces, cut.origin, axis, 2000.0)
    assert np.allclose(kept.velocity - state.velocity, -axis * 2000.0 / pieces[0].mass.mass,
                       rtol=0, atol=1e-12)
    assert np.allclose(beyond.velocity - state.velocity, axis * 2000.0 / pieces[1].mass.mass,
                       rtol=0, atol=1e-12)


ORBIT_STACK = """
scenario: split
start_ut: 1000.0
physics_step: 0.02
active: ship
vessels:
  - key: ship
    name: Ship
    vessel_id: 0123456789abcdef0123456789abcdef
    orbit: {body: Kerbin, altitude: 100000}
    angular_velocity: [0.0, 0.02, 0.0]
    parts:
      - {name: probe, persistent_id: 11, flight_id: 21, mass: 500,
         shape: {box: [1, 1, 1]}, modules: [{kind: command, index: 0}]}
      - {name: decoupler, persistent_id: 12, flight_id: 22, parent: 0,
         position: [-0.6, 0, 0], mass: 40, shape: {cylinder: [0.6, 0.2]},
         modules: [{kind: decoupler, index: 0, ejection_force: 100}]}
      - {name: stage, persistent_id: 13, flight_id: 23, parent: 1,
         position: [-2.0, 0, 0], mass: 1500, shape: {cylinder: [0.6, 2.5]}}
"""


def test_both_pieces_follow_their_own_orbits_afterwards(tmp_path):
    path = tmp_path / 'split.yaml'
    path.write_text(ORBIT_STACK)
    world = World(load_scenario(str(path)))
    ship = world.active
    before = ship.mass.mass
    new = world.separate('ship', 1, 'ship-debris', 'f' * 32, impulse=2000.0)
    assert ship.mass.mass + new.mass.mass == pytest.approx(before, rel=TOLERANCE)
    assert [p.persistent_id for p in ship.spec.parts] == [11]
    assert world.find('f' * 32) is new and new.spec.is_debris
    starts = {v.key: (v.state.position.copy(), v.state.velocity.copy())
              for v in (ship, new)}
    seconds = 120.0
    for _ in range(int(round(seconds / world.physics_step))):
        world.step()
    separation = np.linalg.norm(ship.state.position - new.state.position)
    relative_speed = 2000.0 / ship.mass.mass + 2000.0 / new.mass.mass
    assert separation > 0.5 * relative_speed * seconds      # they drift apart
    for vessel in (ship, new):
        position, velocity = kepler.propagate(KERBIN, *starts[vessel.key], seconds)
        assert np.linalg.norm(vessel.state.position - position) < 1e-3
        assert np.linalg.norm(vessel.state.velocity - velocity) < 1e-5
    period = 2 * math.pi * math.sqrt((KERBIN.radius + 1e5) ** 3 / KERBIN.gm)
    assert seconds < period
