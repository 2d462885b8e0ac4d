"""A fired separator splits the vessel in the running simulator (launchpad rocket)."""

from pathlib import Path

import numpy as np
from pylon_protocol import packets
from pylon_sim.game import docking
from pylon_sim.loop.scenario import load_scenario
import pytest
import yaml

DECOUPLER = 'decoupler_9900002_0'
CLAMP = 'launch_clamp_9900005_0'


def separate(h, name=DECOUPLER, **operation):
    h.send('pylon_actuator_command', actuatorType='separation', name=name, separate=True,
           enabled=True, timeoutSeconds=0.5, **h.identity(), **operation)


def after_index(h, type_name, index):
    return [p for p in h.capture.packets[index:] if p['type'] == type_name]


def test_a_fired_decoupler_splits_the_rocket_and_the_session_resets(harness):
    h = harness('launchpad')
    h.run(2.5)                          # the first model went out
    h.acquire()
    world = h.sim.world
    rocket = world.active
    mass, generation = rocket.mass.mass, h.sim.runtime.generation
    old_model = h.of('pylon_vessel_urdf_chunk')[-1]['sessionId']
    mark = len(h.capture.packets)
    separate(h, operationId='stage-1')
    h.frames(1)
    [debris] = [v for v in world.vessels.values() if v is not rocket]
    assert [p.persistent_id for p in rocket.spec.parts] == [9900001]
    assert [p.persistent_id for p in debris.spec.parts] == [9900002, 9900003, 9900004, 9900005]
    assert debris.spec.is_debris and debris.spec.name == 'PyLoN Rocket Debris'
    assert rocket.mass.mass + debris.mass.mass == pytest.approx(mass, rel=1e-9)
    assert debris.vessel_id != rocket.vessel_id and len(debris.vessel_id) == 32
    # the decoupler's last state, in the old session, then one reset for the new
    # topology, whose heartbeat goes out first
    assert h.sim.runtime.generation == generation + 1
    last, heartbeat = h.capture.packets[mark:mark + 2]
    assert (last['type'], last['name'], last['separated'], last['available']) == (
        'pylon_actuator_state', DECOUPLER, True, False)
    assert last['runtimeGeneration'] == generation
    assert heartbeat['type'] == 'pylon_session'
    assert heartbeat['runtimeGeneration'] == generation + 1
    assert not [p for p in after_index(h, 'pylon_actuator_state', mark + 1)
                if p['name'] == DECOUPLER]
    # manifests at once: the pod has no separator or engine left
    [manifest] = after_index(h, 'pylon_actuator_manifest', mark)
    assert manifest['actuators'] == []
    # the old model is retired and a new producer sends the pod alone
    [clear] = after_index(h, 'pylon_vessel_urdf_clear', mark)
    assert clear['sessionId'] == old_model
    chunks = after_index(h, 'pylon_vessel_urdf_chunk', mark)
    assert chunks and {c['sessionId'] for c in chunks} == {h.sim.model_session} != {old_model}
    # the debris stands on the pad below the pod, in nearby vessels
    h.run(0.1)
    nearby = h.of('pylon_nearby_vessels')[-1]
    [entry] = [v for v in nearby['vessels'] if v['vesselId'] == debris.vessel_id]
    assert entry['isDebris'] and entry['vessel'] == 'PyLoN Rocket Debris'
    up = rocket.state.position / np.linalg.norm(rocket.state.position)
    drop = float(up @ (rocket.state.position - debris.state.position))
    assert 1.0 < drop < 3.0
    assert debris.state.landed and rocket.state.landed
    # the LiDARs and cameras see the debris's parts where they were: the tank 1.7 m below
    # the pod (base_link +X is up on the pad), in the imaging scene as the debris's own
    scene = {p.owner: p.center for p in h.sim.sensing._scene(world.ut)['primitives']}
    assert {owner for owner in scene if owner[0] == debris.key} == {
        (debris.key, p.flight_id) for p in debris.spec.parts}
    tank = scene[(debris.key, 9100003)] - scene[(rocket.key, 9100001)]
    assert float(up @ tank) == pytest.approx(-1.7, abs=1e-3)


def test_a_separator_with_nothing_beyond_it_is_refused_and_changes_nothing(harness):
    data = yaml.safe_load(Path(load_scenario('launchpad').path).read_text(encoding='utf-8'))
    parts = data['vessels'][0]['parts']
    parts[0]['modules'].append({'kind': 'decoupler', 'index': 2})    # on the root part
    h = harness('launchpad', changes={'rocket': {'parts': parts}})
    h.acquire()
    generation = h.sim.runtime.generation
    separate(h, name='decoupler_9900001_2', operationId='root')
    separate(h, name='decoupler_1_0', operationId='missing')
    h.frames(1)
    got = {p['operationId']: p for p in h.of('pylon_separation_result')}
    assert (got['root']['completed'], got['root']['success'], got['root']['reason']) == (
        True, False, 'nothing_beyond')
    assert got['missing']['reason'] == 'actuator_not_found'
    assert got['root']['resultingVesselIds'] == []
    refused = h.sim.control.refused
    assert refused[('pylon_actuator_command', 'nothing_beyond')] == 1
    assert refused[('pylon_actuator_command', 'unknown_actuator')] == 1
    assert len(h.sim.world.vessels) == 1 and len(h.sim.world.active.spec.parts) == 5
    assert h.sim.runtime.generation == generation
    typed = h.sim.control.typed(h.sim.world.active)
    assert typed.state_fields('decoupler_9900001_2') == {'separated': False, 'available': True}


def test_two_separators_in_one_frame_make_three_vessels(harness):
    h = harness('launchpad')
    h.acquire()
    separate(h, name=CLAMP, operationId='clamp')
    separate(h, name=DECOUPLER, operationId='stage')
    h.frames(1)
    world = h.sim.world
    assert len(world.vessels) == 3
    owners = {v.vessel_id: [p.persistent_id for p in v.spec.parts]
              for v in world.vessels.values()}
    assert sorted(owners.values()) == [[9900001], [9900002, 9900003, 9900004], [9900005]]
    results = {p['operationId']: p for p in h.of('pylon_separation_result')}
    assert results['clamp']['success'] and results['stage']['success']
    clamp_owner = next(k for k, v in owners.items() if v == [9900005])
    assert results['clamp']['resultingVesselIds'] == [world.active.vessel_id, clamp_owner]
    # one topology change of the active vessel, one reset
    assert results['clamp']['resultGeneration'] == results['stage']['resultGeneration']


def test_a_separator_that_left_with_the_debris_is_not_found(harness):
    h = harness('launchpad')
    h.acquire()
    separate(h, operationId='stage')
    h.frames(1)
    h.acquire()                                   # the split's reset ended the lease
    separate(h, name=CLAMP, operationId='clamp')   # the clamp is on the debris now
    h.frames(1)
    [late] = [p for p in h.of('pylon_separation_result') if p['operationId'] == 'clamp']
    assert (late['completed'], late['success'], late['reason']) == (
        True, False, 'actuator_not_found')
    assert h.sim.control.refused[('pylon_actuator_command', 'unknown_actuator')] == 1
    assert len(h.sim.world.vessels) == 2


def wheel_on_a_decoupler() -> list[dict]:
    """Return the surface rover's parts with its rear right wheel on a radial decoupler."""
    data = yaml.safe_load(Path(load_scenario('surface').path).read_text(encoding='utf-8'))
    parts = data['vessels'][0]['parts']
    decoupler = {'name': 'radialDecoupler', 'title': 'TT-38K Radial Decoupler',
                 'persistent_id': 7700010, 'flight_id': 8700010, 'parent': 0,
                 'position': [-0.6, -0.5, -0.3], 'mass': 5,
                 'shape': {'box': [0.1, 0.1, 0.1]}, 'modules': [{'kind': 'decoupler',
                                                                 'index': 0}]}
    parts.insert(1, decoupler)                  # every wheel's parent (the body) stays 0
    [wheel] = [p for p in parts if p['persistent_id'] == 7700005]
    wheel['parent'] = 1
    return parts


def test_a_wheel_that_left_with_a_separated_part_is_refused_as_unknown(harness):
    h = harness('surface', changes={'rover': {'parts': wheel_on_a_decoupler()}})
    h.run(0.5)
    h.acquire()
    rover = h.sim.world.active
    assert 'wheel_7700005_0' in h.sim.world.wheel_params(rover).names
    separate(h, name='decoupler_7700010_0', operationId='drop-wheel')
    h.frames(1)
    [piece] = [v for v in h.sim.world.vessels.values() if v is not rover]
    assert [p.persistent_id for p in piece.spec.parts] == [7700010, 7700005]
    assert 'wheel_7700005_0' not in h.sim.world.wheel_params(rover).names
    h.acquire()                         # the split's session reset released the lease
    h.capture.clear()
    for name in ('wheel_7700005_0', 'wheel_7700002_0'):       # gone, and still on board
        h.send('pylon_actuator_command', actuatorType='wheel', name=name, enabled=True,
               timeoutSeconds=0.5, targetAngularVelocity=5.0, steeringAngle=0.0,
               maxDriveTorque=0.0, brake=0.0, **h.identity())
    h.frames(1)
    refused = h.sim.control.refused
    assert refused[('pylon_actuator_command', 'unknown_actuator')] == 1
    assert sum(refused.values()) == 1                      # the wheel still on board works
    answers = [p['reason'] for p in h.of('pylon_control_authority_state')]
    assert answers.count('unknown_actuator') == 1
    assert h.sim.control.typed(rover).state_fields('wheel_7700002_0')['commandActive']
    assert h.sim.control.last_reason in packets.AUTHORITY_REASONS   # not the refusal


def record_parting(world, monkeypatch) -> list[tuple[float, float, float]]:
    """Record each split's (parting speed, mass kept, mass beyond) right after it."""
    seen = []
    split = world.separate

    def recording(key, *args, **kwargs):
        new = split(key, *args, **kwargs)
        kept = world.vessels[key]
        speed = float(np.linalg.norm(new.state.velocity - kept.state.velocity))
        seen.append((speed, kept.mass.mass, new.mass.mass))
        return new
    monkeypatch.setattr(world, 'separate', recording)
    return seen


def test_under_physics_warp_a_separator_pushes_for_the_step_integrated(harness, monkeypatch):
    # a frame integrates physics_step x warp: the ejection force acts for all of it
    # in orbit: on the ground the ground takes the impulse
    h = harness('orbit', modules={'sat': {'fuelTankSmall': [
        {'kind': 'decoupler', 'index': 5, 'ejection_force': 15.0}]}})
    h.acquire()
    seen = record_parting(h.sim.world, monkeypatch)
    h.sim.world.set_warp(4, 'physics')
    separate(h, name='decoupler_1100003_5', operationId='warped')
    h.frames(1)
    [(speed, kept, beyond)] = seen
    impulse = 15.0 * 1e3 * 0.02 * 4
    assert speed == pytest.approx(impulse * (1.0 / kept + 1.0 / beyond), rel=1e-3)


def test_under_physics_warp_an_undock_pushes_for_the_step_integrated(harness, monkeypatch):
    h = harness('docking')
    h.run(14.0)                                   # the scripted approach docks
    assert len(h.sim.world.vessels) == 1
    h.acquire()
    seen = record_parting(h.sim.world, monkeypatch)
    h.sim.world.set_warp(4, 'physics')
    h.send('pylon_docking_port_command', name='docking_port_3300002_0', action=3,
           **h.identity())
    h.frames(1)
    [(speed, kept, beyond)] = seen
    impulse = docking.UNDOCK_EJECTION_FORCE * 1e3 * 0.02 * 4
    assert speed == pytest.approx(impulse * (1.0 / kept + 1.0 / beyond), rel=1e-3)
