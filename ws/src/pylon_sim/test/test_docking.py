"""Docking: KSP's port states and limits, the merge of two vessels, undocking."""

import numpy as np
from pylon_protocol import rotations
from pylon_sim.game import docking, topology
from pylon_sim.game.docking import ACQUIRE, Contact, DISENGAGE, DOCKEE, DOCKER, READY
from pylon_sim.game.physics import RigidState
from pylon_sim.game.vessel import mass_properties, Module, Part, Shape, VesselSpec
import pytest

CHASER_PORT, TARGET_PORT = 'docking_port_3300002_0', 'docking_port_4400002_0'
TARGET = '7d2b6f1c3e4a5b0c9d8e7f6a5b4c3d2e'


@pytest.mark.parametrize('state, seen, expected', [
    (READY, None, READY),
    (READY, Contact(0.51, 1.0, 0.1), READY),             # beyond acquireRange
    (READY, Contact(0.49, 1.0, 0.1), ACQUIRE),
    (READY, Contact(0.49, 0.69, 0.1), READY),            # beyond acquireMinFwdDot
    (ACQUIRE, Contact(0.3, 0.9, 0.1), ACQUIRE),
    (ACQUIRE, Contact(0.6, 0.9, 0.1), READY),            # left the acquire range
    (ACQUIRE, Contact(0.05, 0.999, 0.29), DOCKER),       # captured
    (ACQUIRE, Contact(0.05, 0.997, 0.29), ACQUIRE),      # beyond captureMinFwdDot
    (ACQUIRE, Contact(0.05, 0.999, 0.31), ACQUIRE),      # faster than captureMaxRvel
    (ACQUIRE, Contact(0.07, 0.999, 0.1), ACQUIRE),       # beyond captureRange
    (READY, Contact(0.05, 1.0, 0.1), ACQUIRE),           # acquired before it can capture
    (DISENGAGE, Contact(0.9, 1.0, 0.1), DISENGAGE),      # within minDistanceToReEngage
    (DISENGAGE, Contact(1.1, 1.0, 0.1), READY),
    (DOCKER, None, DOCKER),
    (DOCKEE, Contact(5.0, 0.0, 1.0), DOCKEE),
])
def test_port_states_follow_ksp_limits(state, seen, expected):
    assert docking.next_state(state, seen) == expected


def probe(vid, pid, rpy=(0.0, 0.0, 0.0)):
    port = Part('port', 'Port', pid + 1, pid + 11, 0, (0.65, 0.1, -0.05),
                tuple(rotations.from_rpy(*rpy).tolist()), 50.0, Shape('cylinder', (0.3, 0.3)),
                modules=(Module('docking_port', 0, {'node_type': 'size1'}),))
    body = Part('body', 'Body', pid, pid + 10, None, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0),
                500.0, Shape('box', (1.0, 0.8, 1.2)), modules=(Module('command', 0),))
    tank = Part('tank', 'Tank', pid + 2, pid + 12, 0, (-0.8, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0),
                200.0, Shape('cylinder', (0.4, 0.6)))
    return VesselSpec(vid, f'Probe {pid}', (body, port, tank))


def test_merging_keeps_momentum_and_the_inertia_is_the_parallel_axis_sum():
    a, b = probe('a' * 32, 100), probe('b' * 32, 200)
    a_mass, b_mass = mass_properties(a, {}), mass_properties(b, {})
    qa = rotations.from_rpy(0.2, -0.1, 0.4)
    qb = rotations.multiply(qa, rotations.from_rpy(0.01, 0.02, np.pi))
    sa = RigidState(0.0, np.array([7.0e5, 0.0, 0.0]), np.array([0.0, 2246.0, 0.0]), qa,
                    np.array([0.001, 0.003, -0.002]))
    sb = RigidState(0.0, sa.position + rotations.rotate(qa, (1.3, 0.05, -0.02)),
                    sa.velocity + np.array([-0.04, 0.01, 0.002]), qb,
                    np.array([-0.002, 0.001, 0.004]))
    ra, rb = rotations.to_matrix(qa), rotations.to_matrix(qb)
    origin = a_mass.com + ra.T @ (sb.position - rb @ b_mass.com - sa.position)
    joined = topology.merge(a, b, 1, 1, origin, rotations.multiply(rotations.conjugate(qa), qb))
    assert [p.persistent_id for p in joined.spec.parts] == [100, 101, 102, 201, 200, 202]
    assert [p.parent for p in joined.spec.parts] == [None, 0, 0, 1, 3, 4]
    merged = mass_properties(joined.spec, {})
    total = a_mass.mass + b_mass.mass
    assert merged.mass == pytest.approx(total, rel=1e-12)
    # the parallel-axis theorem, in a's axes about the common centre of mass
    b_centre = a_mass.com + ra.T @ (sb.position - sa.position)      # in a's frame
    com = (a_mass.mass * a_mass.com + b_mass.mass * b_centre) / total
    b_in_a = ra.T @ rb
    expected = np.zeros((3, 3))
    for inertia, centre, turn, m in ((a_mass.inertia, a_mass.com, np.eye(3), a_mass.mass),
                                     (b_mass.inertia, b_centre, b_in_a, b_mass.mass)):
        d = centre - com
        expected += turn @ inertia @ turn.T + m * (float(d @ d) * np.eye(3) - np.outer(d, d))
    assert np.allclose(merged.com, com, rtol=0, atol=1e-9)
    assert np.allclose(merged.inertia, expected, rtol=1e-9, atol=1e-9)
    state = topology.merge_states(sa, a_mass, sb, b_mass, merged)
    momentum = a_mass.mass * sa.velocity + b_mass.mass * sb.velocity
    assert np.linalg.norm(total * state.velocity - momentum) <= 1e-9 * np.linalg.norm(momentum)
    centre = (a_mass.mass * sa.position + b_mass.mass * sb.position) / total
    angular = sum(rot @ m.inertia @ s.body_rate + m.mass * np.cross(
        s.position - centre, s.velocity - momentum / total)
        for rot, m, s in ((ra, a_mass, sa), (rb, b_mass, sb)))
    after = ra @ merged.inertia @ state.body_rate
    assert np.linalg.norm(after - angular) <= 1e-9 * np.linalg.norm(angular)


def port_states(h, port):
    out = []
    for p in h.of('pylon_docking_port_state'):
        if p['name'] == port and (not out or out[-1] != p['state']):
            out.append(p['state'])
    return out


def test_the_scripted_approach_docks_and_an_undock_restores_the_target(harness):
    h = harness('docking')
    world = h.sim.world
    chaser = world.vessels['chaser']
    generation = h.sim.runtime.generation
    h.run(14.0)
    assert port_states(h, CHASER_PORT) == [READY, ACQUIRE, DOCKER]
    assert list(world.vessels) == ['chaser'] and chaser.mass.mass == pytest.approx(1100.0)
    assert h.sim.runtime.generation == generation + 1
    assert [p.persistent_id for p in chaser.spec.parts] == [3300001, 3300002, 4400002, 4400001]
    typed = h.sim.control.typed(chaser)
    assert typed.docking_fields(TARGET_PORT)['state'] == DOCKEE
    assert typed.docking_fields(CHASER_PORT)['partnerName'] == TARGET_PORT
    # undock: the target comes back as itself, both ports disengage, then part
    h.acquire()
    h.send('pylon_docking_port_command', name=CHASER_PORT, action=3, **h.identity())
    h.frames(1)
    undocked = world.find(TARGET)
    assert undocked.key == 'target' and undocked.spec.name == 'PyLoN Target'
    assert not undocked.spec.is_debris
    assert [p.persistent_id for p in undocked.spec.parts] == [4400002, 4400001]
    # 10 kN for one 0.02 s step on each piece: they part at J (1/m1 + 1/m2), along the axis
    away = undocked.state.velocity - chaser.state.velocity
    line = undocked.state.position - chaser.state.position
    expected = 10e3 * 0.02 * (1.0 / chaser.mass.mass + 1.0 / undocked.mass.mass)
    assert float(away @ line) / np.linalg.norm(line) == pytest.approx(expected, abs=2e-3)
    assert h.sim.control.typed(chaser).docking_fields(CHASER_PORT)['state'] == DISENGAGE
    assert h.sim.control.typed(undocked).docking_fields(TARGET_PORT)['state'] == DISENGAGE
    # the target's port left with it: a release of it from the chaser names nothing
    h.acquire()                                   # the undock's reset ended the lease
    h.send('pylon_docking_port_command', name=TARGET_PORT, action=3, **h.identity())
    h.run(60.0)
    assert h.sim.control.refused[('pylon_docking_port_command', 'unknown_docking_port')] == 1
    assert h.sim.control.typed(chaser).docking_fields(CHASER_PORT)['state'] == READY


def test_docking_commands_for_missing_or_free_ports_are_refused(harness):
    h = harness('docking')
    h.acquire()
    h.send('pylon_docking_port_command', name='docking_port_1_0', action=3, **h.identity())
    h.send('pylon_docking_port_command', name=CHASER_PORT, action=3, **h.identity())
    h.frames(1)
    refused = h.sim.control.refused
    assert refused[('pylon_docking_port_command', 'unknown_docking_port')] == 1
    assert refused[('pylon_docking_port_command', 'not_docked')] == 1
    assert len(h.sim.world.vessels) == 2


def test_a_revert_after_docking_brings_both_vessels_back(harness):
    h = harness('docking')
    h.run(14.0)
    assert list(h.sim.world.vessels) == ['chaser']
    h.sim.admin({'cmd': 'revert'})
    world = h.sim.world
    assert sorted(world.vessels) == ['chaser', 'target']
    typed = h.sim.control.typed(world.active)
    assert typed.docking_ports() == [CHASER_PORT]
    h.capture.clear()
    h.run(14.0)
    assert port_states(h, CHASER_PORT) == [READY, ACQUIRE, DOCKER]
