"""Several vehicles in one world: a game each, one management port, held until started."""

import json
from pathlib import Path
import re

import numpy as np
from pylon_protocol import management, packets
from pylon_sim.game import world as world_module
from pylon_sim.game.world import World, WorldView
from pylon_sim.loop.scenario import load_scenario, ScenarioError
from pylon_testing.scenarios import write_scenario
import pytest
import yaml

HELD = packets.SIMULATION_HELD


def envelope(packet: dict) -> tuple:
    return (packet['runtimeInstance'], packet['runtimeGeneration'], packet['runtimeEpoch'],
            packet['runtimeVesselId'])


def test_every_vehicle_is_a_game_of_its_own_on_its_own_ports(mission):
    run, (chaser, target) = mission()
    assert [p.command for p in run.ports] == [40000, 40000 + management.PORT_STRIDE]
    chaser.run(2.0)
    ids = {h.sim.world.active.vessel_id for h in (chaser, target)}
    assert len(ids) == 2
    for h in (chaser, target):
        sent = h.capture.packets
        assert {p['runtimeVesselId'] for p in sent} == {h.vessel_id}
        assert {p['type'] for p in sent} >= {'pylon_session', 'pylon_imu', 'pylon_ground_truth',
                                             'pylon_vessel_urdf_chunk'}
    # one runtime instance each, as two game processes would have
    assert envelope(chaser.capture.packets[-1])[0] != envelope(target.capture.packets[-1])[0]
    # one world: both at the same UT, and each sees the other 200 m away
    assert chaser.of('pylon_imu')[-1]['universalTime'] == \
        target.of('pylon_imu')[-1]['universalTime']
    for h, other in ((chaser, target), (target, chaser)):
        seen = h.of('pylon_nearby_vessels')[-1]
        (vessel,) = seen['vessels']
        assert vessel['vesselId'] == other.vessel_id
        gap = np.subtract(vessel['position'], h.of('pylon_ground_truth')[-1]['position'])
        assert np.linalg.norm(gap) == pytest.approx(200.0, abs=0.5)


def wrench(h, torque=(0.0, 0.0, 500.0)) -> None:
    h.send('pylon_body_wrench_command', frame='base_link', force=[0.0, 0.0, 0.0],
           torque=list(torque),
           timeoutSeconds=1.0, **h.identity())


def body_rate(h) -> np.ndarray:
    return np.array(h.sim.world.active.state.body_rate)


def test_held_until_started_every_command_but_authority_is_refused_with_its_reason(mission):
    run, (chaser, target) = mission()
    chaser.frames(5)
    assert run.phase == management.HELD
    chaser.acquire()                              # leases can be taken while held
    assert run.status()['vehicles'][0]['lease_owned']
    assert not run.status()['vehicles'][1]['lease_owned']
    rate = body_rate(chaser)
    wrench(chaser)
    chaser.send('pylon_actuator_command', actuatorType='rcs', name='rcs_7100004_0',
                enabled=True, thrustLimit=500.0, timeoutSeconds=1.0, **chaser.identity())
    chaser.run(1.0)
    (status,) = [p for p in chaser.of('pylon_wrench_status') if not p['accepted']]
    assert status['reason'] == HELD
    answers = [p['reason'] for p in chaser.of('pylon_control_authority_state')]
    assert HELD in answers
    assert chaser.sim.control.last_reason == 'lease_acquired'   # not an authority event
    assert np.allclose(body_rate(chaser), rate, atol=1e-12)     # nothing moved it
    assert chaser.sim.control.refused[('pylon_body_wrench_command', HELD)] == 1

    run.manage({'cmd': 'start'})
    assert run.phase == management.RUNNING and run.started_ut == run.world.ut
    wrench(chaser)
    chaser.run(1.0)
    assert chaser.of('pylon_wrench_status')[-1]['accepted']
    assert body_rate(chaser)[2] - rate[2] > 1e-3                # the torque acted
    with pytest.raises(ValueError, match='running already'):
        run.manage({'cmd': 'start'})

    run.manage({'cmd': 'finish'})                 # over: held again, nothing in force
    assert chaser.sim.control.wrench is None and run.phase == management.HELD
    wrench(chaser)
    chaser.run(0.5)
    assert chaser.of('pylon_wrench_status')[-1]['reason'] == HELD
    force, torque = chaser.sim.control.applied     # the vessel spins on, nothing pushes it
    assert not np.any(force) and not np.any(torque)


def test_reset_puts_every_vessel_back_with_new_sessions_and_no_lease(mission):
    run, (chaser, target) = mission()
    start = {key: v.state.position.copy() for key, v in run.world.vessels.items()}
    ut0 = run.world.ut
    chaser.frames(2)
    chaser.acquire()
    run.manage({'cmd': 'start'})
    wrench(chaser, torque=(0.0, 300.0, 0.0))
    chaser.run(3.0)
    before = [envelope(h.capture.packets[-1]) for h in (chaser, target)]
    status = run.manage({'cmd': 'reset'})
    assert status['phase'] == management.HELD and status['started_ut'] is None
    assert run.world.ut == ut0
    for key, vessel in run.world.vessels.items():
        assert np.array_equal(vessel.state.position, start[key])
    assert not status['vehicles'][0]['lease_owned']
    chaser.frames(3)
    status = run.status()
    for h, old, vehicle in zip((chaser, target), before, status['vehicles']):
        new = envelope(h.capture.packets[-1])
        assert new[0] == old[0] and new[2] != old[2] and new[1] > old[1]   # new session
        # the status names the session the packets carry: a bridge's ACTIVE one matches it
        assert vehicle['session'] == list(new[:3]) and vehicle['settled']
    assert 'runtime_session_changed' in [
        p['reason'] for p in chaser.of('pylon_control_authority_state')]


def test_a_command_with_another_vehicles_session_moves_nothing(mission):
    run, (chaser, target) = mission()
    chaser.frames(2)
    run.manage({'cmd': 'start'})
    rate = body_rate(chaser), body_rate(target)
    # vehicle 2's session on vehicle 1's port: the chaser's game drops it
    packet = packets.build_command(
        'pylon_control_authority_command', target.sim.envelope, action='acquire', priority=0,
        leaseDurationSeconds=5.0, suppressSas=False, **target.identity())
    chaser.port.queue.append(json.dumps(packet).encode())
    chaser.frames(2)
    assert chaser.sim.stats.command_rejected['session_mismatch'] == 1
    assert not chaser.sim.control.authority.owned and not target.sim.control.authority.owned
    assert np.allclose(body_rate(chaser), rate[0]) and np.allclose(body_rate(target), rate[1])


def test_world_requests_go_to_the_management_port_only(mission):
    run, (chaser, target) = mission()
    chaser.frames(2)
    for cmd in ('pause', 'warp', 'revert', 'quit'):
        with pytest.raises(ValueError, match='management port'):
            chaser.sim.admin({'cmd': cmd})
    with pytest.raises(ValueError, match="another vehicle's"):
        chaser.sim.admin({'cmd': 'switch', 'vessel': 'target'})
    ut = run.world.ut
    run.manage({'cmd': 'pause'})
    chaser.frames(10)
    assert run.world.ut == ut
    assert target.of('pylon_session')[-1]['paused']
    run.manage({'cmd': 'resume'})
    chaser.frames(5)
    assert run.world.ut > ut
    with pytest.raises(ValueError, match='unknown management cmd'):
        run.manage({'cmd': 'explode'})
    run.manage({'cmd': 'quit'})
    chaser.frames(1)
    assert run.stop_requested


def test_every_vehicle_is_simulated_and_vehicles_do_not_dock_with_each_other(mission):
    run, drivers = mission('rendezvous4')
    assert run.world.focus == {'chaser_1', 'chaser_2', 'chaser_3', 'target'}
    drivers[0].frames(1)
    with pytest.raises(ValueError, match='active vessel'):
        run.world.remove('target')
    # the docking pass of a game ignores another game's vessel even when it is close
    mine = run.games[0].world.active
    run.world.vessels['target'].state = type(mine.state)(
        mine.state.ut, mine.state.position + np.array([0.0, 0.0, 1.0]), mine.state.velocity,
        mine.state.attitude, mine.state.body_rate)
    drivers[0].frames(3)
    assert set(run.world.vessels) == {'chaser_1', 'chaser_2', 'chaser_3', 'target'}


def test_ports_follow_the_stride_and_stay_in_range():
    assert management.vehicle_port(49010, 1) == 49010
    assert management.vehicle_port(49010, 3) == 49030
    assert management.vehicle_port(0, 3) == 0
    with pytest.raises(ValueError, match='outside'):
        management.vehicle_port(65530, 2)
    with pytest.raises(ValueError, match='not within'):
        management.vehicle_port(49010, 0)


def test_vehicles_and_task_are_checked_at_load(tmp_path):
    def write(changes: dict) -> str:
        path = Path(write_scenario(tmp_path, 'rendezvous'))
        data = yaml.safe_load(path.read_text(encoding='utf-8'))
        data.update(changes['top'])
        path.write_text(yaml.safe_dump(data), encoding='utf-8')
        return str(path)
    scenario = load_scenario('rendezvous')
    assert scenario.vehicles == ('chaser', 'target') and scenario.active == 'chaser'
    assert scenario.task.target == 'target' and scenario.task.hold_sec == 30.0
    assert load_scenario('orbit').vehicles == ('sat',) and load_scenario('orbit').task is None
    for top, match in (({'vehicles': ['chaser', 'nobody']}, 'not a vessel key'),
                       ({'vehicles': ['chaser', 'chaser']}, 'unique'),
                       ({'vehicles': []}, 'non-empty'),
                       ({'active': 'target'}, 'first of vehicles'),
                       ({'task': {'kind': 'capture', 'target': 'target'}}, 'not a task kind'),
                       ({'task': {'kind': 'rendezvous', 'target': 'moon'}}, 'not a vessel'),
                       ({'task': {'kind': 'rendezvous', 'target': 'target',
                                  'hold_sec': -1}}, 'must be > 0')):
        with pytest.raises(ScenarioError, match=match):
            load_scenario(write({'top': top}))


def test_a_view_offers_every_world_attribute_the_games_read():
    # a game's modules read its world by name: each name must be a member of WorldView
    source = Path(world_module.__file__).parents[1]        # every layer of pylon_sim
    read = set()
    for path in source.glob('*/*.py'):
        if path.name not in ('world.py', 'mission.py'):    # those hold the World itself
            read |= set(re.findall(r'\bworld\.([a-z_]+)\b', path.read_text(encoding='utf-8')))
    read.discard('step')          # runtime.advance steps the World itself, not a view
    view = World(load_scenario('rendezvous')).view('chaser')
    assert read >= {'active', 'ut', 'vessels', 'separate', 'frame_step'}
    assert [name for name in sorted(read) if not hasattr(view, name)] == []
    assert view.ut == view.world.ut and view.vessels is view.world.vessels
    assert not hasattr(WorldView, '__getattr__')
