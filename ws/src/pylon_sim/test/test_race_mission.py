"""The race in the simulator: a mission of karts, lock-stepped in process, over the protocol.

The ``kart`` scenario is the one-kart race, ``race`` the four-kart one (lean: no LiDAR or
camera). The kart is driven as a vehicle interface drives it (a lease, a wheel command per
wheel every frame); what the race says comes from the management status; every time is
the simulator's game time.
"""

import json
import math
from pathlib import Path
import socket

import numpy as np
from pylon_protocol import management
from pylon_sim.game import rover, wheels
from pylon_sim.game.bodies import body_fixed_rotation
from pylon_sim.game.save import RaceTask
from pylon_sim.loop.admin import request
from pylon_sim.loop.scenario import load_scenario, ScenarioError
from pylon_testing.scenarios import write_scenario
from pylon_track import load_track
import pytest
import yaml

TRACK = load_track('kart')
FULL = 1000.0            # rad/s: a target spin the motors never reach (full torque)


class Kart:
    """One vehicle of a race mission: its harness, its wheels, its truth."""

    def __init__(self, run, harness, index: int) -> None:
        self.run, self.h, self.index = run, harness, index
        self.renewed = -math.inf
        self.wheels = [name for name, _, _ in wheels.wheel_modules(harness.sim.world.active.spec)]

    @property
    def vessel(self):
        return self.h.sim.world.active

    def command(self, spin: float = FULL, steering: float = 0.0, brake: float = 0.0) -> None:
        """Queue this frame's wheel commands (rear wheels driven, front wheels steered).

        The lease is renewed every 5 s of the simulator clock.
        """
        if self.run.clock - self.renewed >= 5.0:
            self.h.send('pylon_control_authority_command', action='renew', priority=0,
                        leaseDurationSeconds=10.0, suppressSas=False, **self.h.identity())
            self.renewed = self.run.clock
        for k, name in enumerate(self.wheels):
            self.h.send('pylon_actuator_command', actuatorType='wheel', name=name,
                        enabled=True, timeoutSeconds=0.5, brake=brake,
                        targetAngularVelocity=spin if k >= 2 else 0.0,
                        steeringAngle=steering if k < 2 else 0.0, maxDriveTorque=0.0,
                        **self.h.identity())

    def drive(self, seconds: float, until=None, **command) -> list[dict]:
        """Drive ``seconds`` of game time (or until ``until(sample)``); return a sample a frame."""
        samples = []
        end = self.run.clock + seconds
        while self.run.clock < end - 1e-9:
            self.command(**command)
            self.run.frame()
            samples.append(self.sample())
            if until is not None and until(samples[-1]):
                break
        return samples

    def sample(self) -> dict:
        """Return the kart's truth now: map position, speed, lateral, its race status."""
        vessel, world = self.vessel, self.run.world
        fixed = body_fixed_rotation(vessel.body, world.ut) @ vessel.state.position
        x, y, _ = TRACK.map_from_fixed(fixed)
        motion = rover.kinematics(vessel.state, vessel.body, world.ut)
        return {'ut': world.ut, 'x': float(x), 'y': float(y),
                'speed': float(np.linalg.norm(motion.velocity)),
                'lateral': TRACK.project((x, y)).lateral,
                'torque': float(np.max(vessel.wheel_state.drive_torque))
                if vessel.wheel_state is not None else 0.0,
                'race': self.status()}

    def status(self) -> dict:
        return self.run.manage({'cmd': 'status'})['vehicles'][self.index]['race']


@pytest.fixture
def race(mission, tmp_path):
    """Return ``make(name='kart') -> (mission, [Kart])``: a lean race mission, lock-stepped."""
    def make(name: str = 'kart'):
        run, harnesses = mission(write_scenario(tmp_path, name))
        return run, [Kart(run, h, k) for k, h in enumerate(harnesses)]
    return make


def start(run, kart: Kart) -> None:
    run.manage({'cmd': 'start'})
    kart.h.acquire()
    kart.renewed = run.clock


def test_the_one_kart_race_over_the_line_on_the_simulator_clock(race):
    run, (kart,) = race('kart')
    status = run.manage({'cmd': 'status'})
    assert status['task']['kind'] == 'race' and status['race']['phase'] == 'grid'
    assert (status['race']['sessionTime'], status['race']['rules']['laps']) == (600.0, 6)
    before = kart.status()
    assert (before['lapCount'], before['section'], before['thisLapTime'], before['grid'],
            before['boostRemaining'], before['isBoosting']) == (0, 4, 0.0, 0, 3, False)
    start(run, kart)
    started = run.started_ut
    samples = kart.drive(4.0, spin=40.0)                 # 5.6 m/s at most, 3 m to the line
    after = samples[-1]['race']
    assert after['lapCount'] == 0 and after['section'] == 0 and after['thisLapTime'] > 0.0
    assert after['sessionTime'] == pytest.approx(600.0 - (run.world.ut - started), abs=1e-6)
    # the lap began where the kart's centre crossed the line, interpolated in game time
    line_x = float(TRACK.point_at(0.0)[0])
    i = next(i for i, s in enumerate(samples) if s['x'] >= line_x)
    a, b = samples[i - 1], samples[i]
    crossed = a['ut'] + (line_x - a['x']) / (b['x'] - a['x']) * (b['ut'] - a['ut'])
    assert run.world.ut - after['thisLapTime'] == pytest.approx(crossed, abs=1e-6)
    assert 0.5 < crossed - started < 3.0
    assert json.loads(json.dumps(run.manage({'cmd': 'status'}), allow_nan=False))


def test_a_boost_raises_the_torque_and_the_speed_for_its_duration_then_one_less(race):
    run, (kart,) = race('kart')
    start(run, kart)
    plain = kart.drive(3.0)
    assert max(s['torque'] for s in plain) <= 56.0 + 1e-9
    assert plain[-1]['race']['section'] == 0                       # over the line
    run.manage({'cmd': 'reset'})                           # back on grid slot 0
    assert kart.status()['boostRemaining'] == 3 and kart.status()['section'] == 4
    assert (kart.sample()['x'], kart.sample()['y']) == pytest.approx(TRACK.grid_pose(0)[:2],
                                                                      abs=1e-3)
    start(run, kart)
    reply = run.manage({'cmd': 'boost', 'vehicle': 1, 'value': 1.0})
    assert reply['boost']['outcome'] == 'fired'
    fired = reply['race']['elapsed']                     # s since the start, game time
    assert reply['vehicles'][0]['race']['boostRemaining'] == 2
    assert reply['vehicles'][0]['race']['isBoosting']
    boosted = kart.drive(3.0)
    # 1.5 x 56 N m at standstill on the torque curve (the rear tyres slip and spin up: 74)
    assert 1.25 * 56.0 < max(s['torque'] for s in boosted) <= 1.5 * 56.0
    assert boosted[-1]['speed'] > 1.25 * plain[-1]['speed']       # 12.3 against 8.9 m/s
    assert all(s['race']['isBoosting'] for s in boosted)
    rest = kart.drive(2.5)                               # the boost ends 5 s after it fired
    ended = next(s for s in rest if not s['race']['isBoosting'])
    assert 5.0 <= ended['ut'] - run.started_ut - fired <= 5.0 + 0.02 + 1e-6   # a frame
    assert rest[-1]['torque'] <= 56.0 + 1e-9 and kart.vessel.drive is wheels.NORMAL
    # a held value fires nothing; an edge is refused while boosting and when none is left

    def press(value: float) -> str:
        return run.manage({'cmd': 'boost', 'vehicle': 1, 'value': value})['boost']['outcome']

    assert press(1.0) == 'ignored'
    assert (press(0.0), press(1.0), press(0.0), press(2.0)) == (
        'ignored', 'fired', 'ignored', 'boosting')
    kart.drive(5.1, spin=0.0, brake=1.0)
    assert (press(0.0), press(1.0), press(0.0), press(1.0)) == (
        'ignored', 'fired', 'ignored', 'none_left')
    kart.drive(5.1, spin=0.0, brake=1.0)
    assert (press(0.0), press(1.0)) == ('ignored', 'none_left')
    race = run.manage({'cmd': 'status'})['vehicles'][0]['race']
    assert (race['boostRemaining'], race['boostsUsed'], race['isBoosting']) == (0, 3, False)
    assert race['events'] == {'boost_fired': 3, 'boost_refused_boosting': 1,
                              'boost_refused_none_left': 2}


def test_leaving_the_track_caps_the_speed(race):
    run, (kart,) = race('kart')
    start(run, kart)
    kart.drive(2.0)                                      # up to speed along the straight
    fast = kart.sample()['speed']
    assert fast > 5.0
    off = kart.drive(4.0, until=lambda s: s['race']['penalties']['offTrack'], steering=-0.15)
    assert off[-1]['race']['penalties'] == {'count': 1, 'active': True, 'offTrack': True,
                                            'endsIn': None}
    assert off[-1]['lateral'] < -(TRACK.width / 2 + 0.5)
    capped = kart.drive(2.0)                             # full throttle, straight on
    assert kart.vessel.drive == wheels.Drive(speed_cap=2.0)     # from the next frame
    assert capped[-1]['speed'] <= 2.1 and capped[-1]['race']['penalties']['active']
    assert run.manage({'cmd': 'status'})['vehicles'][0]['race']['events']['off_track'] == 1


def test_four_karts_on_their_slots_a_boost_for_one_and_a_reset(race):
    run, karts = race('race')
    status = run.manage({'cmd': 'status'})
    assert [v['race']['grid'] for v in status['vehicles']] == [0, 1, 2, 3]
    assert status['race']['sessionTime'] == 420.0 and status['task']['laps'] == 6
    for k, kart in enumerate(karts):
        x, y, _ = TRACK.grid_pose(k)
        where = kart.sample()
        assert (where['x'], where['y']) == pytest.approx((x, y), abs=1e-3)
    run.manage({'cmd': 'start'})
    reply = run.manage({'cmd': 'boost', 'vehicle': 2, 'value': 1.0})
    assert reply['boost'] == {'vehicle': 2, 'value': 1.0, 'outcome': 'fired', 'fired': True}
    assert [v['race']['boostRemaining'] for v in reply['vehicles']] == [3, 2, 3, 3]
    run.frame()
    assert [k.vessel.drive for k in karts] == [
        wheels.NORMAL, wheels.Drive(1.5, 1.2, math.inf), wheels.NORMAL, wheels.NORMAL]
    # malformed requests: refused, counted, nothing changed
    for bad in ({'vehicle': 5, 'value': 1.0}, {'vehicle': 'two', 'value': 1.0},
                {'vehicle': 2}, {'vehicle': True, 'value': 1.0}):
        with pytest.raises(ValueError, match='vehicle'):
            run.manage({'cmd': 'boost', **bad})
    with pytest.raises(ValueError, match='finite'):
        run.manage({'cmd': 'boost', 'vehicle': 3, 'value': math.nan})
    status = run.manage({'cmd': 'status'})
    assert status['race']['requests'] == {'malformed_request': 4}
    assert status['vehicles'][2]['race']['events'] == {'malformed_boost': 1}
    assert [v['race']['boostRemaining'] for v in status['vehicles']] == [3, 2, 3, 3]
    run.manage({'cmd': 'reset'})
    status = run.manage({'cmd': 'status'})
    assert status['race']['phase'] == 'grid' and status['race']['requests'] == {
        'malformed_request': 4}
    assert all(v['race']['boostRemaining'] == 3 and not v['race']['isBoosting']
               and v['race']['events'] == {} for v in status['vehicles'])
    assert [k.vessel.drive for k in karts] == [wheels.NORMAL] * 4


def test_a_race_over_starts_again_only_after_a_reset(race):
    run, (kart,) = race('kart')
    run.manage({'cmd': 'start'})
    run.manage({'cmd': 'finish'})
    assert run.manage({'cmd': 'status'})['race']['phase'] == 'over'
    assert run.manage({'cmd': 'boost', 'vehicle': 1,
                       'value': 1.0})['boost']['outcome'] == 'finished'
    with pytest.raises(ValueError, match='reset it first'):
        run.manage({'cmd': 'start'})
    run.manage({'cmd': 'reset'})
    run.manage({'cmd': 'start'})
    assert run.manage({'cmd': 'status'})['race']['phase'] == 'running'


def test_a_mission_without_a_race_refuses_a_boost(mission):
    run, _ = mission('rendezvous')
    assert 'race' not in run.manage({'cmd': 'status'})
    with pytest.raises(ValueError, match='no race'):
        run.manage({'cmd': 'boost', 'vehicle': 1, 'value': 1.0})


# -- the scenarios ----------------------------------------------------------------------
def test_the_race_scenarios_and_their_modes():
    four, one = load_scenario('race'), load_scenario('kart')
    assert four.vehicles == ('kart_1', 'kart_2', 'kart_3', 'kart_4')
    assert isinstance(four.task, RaceTask) and four.task.track == 'kart'
    assert (four.task.rules.laps, four.task.rules.time_limit_sec) == (6, 420.0)
    assert (one.task.rules.laps, one.task.rules.time_limit_sec) == (6, 600.0)
    assert one.vehicles == ('kart',)
    ids = [v.spec.vessel_id for v in four.vessels]
    assert ids == [f'4b4152540000000000000000000000{k:02d}' for k in range(1, 5)]
    parts = [p.persistent_id for v in four.vessels for p in v.spec.parts]
    assert len(set(parts)) == len(parts) == 32
    # each kart the kart scenario's, with its sensor ids (each vehicle is a game of its own)
    kart = one.vessels[0].spec
    for vessel in four.vessels:
        assert [(p.name, p.dry_mass, p.position, p.modules) for p in vessel.spec.parts] == [
            (p.name, p.dry_mass, p.position, p.modules) for p in kart.parts]
    assert [v.start.grid for v in four.vessels] == [0, 1, 2, 3]


def test_a_race_task_is_checked_at_load(tmp_path):
    no_limit = yaml.safe_load(Path(write_scenario(tmp_path, 'race')).read_text())
    del no_limit['task']['time_limit_sec']
    path = tmp_path / 'mode.yaml'
    path.write_text(yaml.safe_dump(no_limit))
    assert load_scenario(str(path)).task.rules.time_limit_sec == 420.0   # the mode's
    for task, changes, match in (
            ({'lap': 3}, {}, 'unknown key'),
            ({'laps': 0}, {}, 'laps'),
            ({'laps': 2.5}, {}, 'integer'),
            ({'boost_sec': -1.0}, {}, 'boost_sec'),
            ({'gate_runoff_m': 8.0}, {}, 'gate 2'),
            ({'track': 'nowhere'}, {}, 'not found'),
            ({}, {'kart_3': {'surface': {'body': 'Kerbin', 'track': 'kart', 'grid': 1,
                                         'altitude': 0.13728}}}, 'share grid slot 1'),
            ({}, {'kart_4': {'surface': {'body': 'Kerbin', 'latitude': -0.1,
                                         'longitude': -74.56, 'altitude': 0.13728}}},
             'does not start on the grid')):
        with pytest.raises(ScenarioError, match=match):
            load_scenario(write_scenario(tmp_path, 'race', task=task, changes=changes))


def test_sensor_ids_repeat_only_across_the_vehicles_of_a_mission(tmp_path):
    data = yaml.safe_load(Path(write_scenario(tmp_path, 'race')).read_text())
    data['vehicles'] = ['kart_1']
    data['task'] = {'kind': 'race', 'track': 'kart'}
    for vessel in data['vessels'][1:]:
        vessel['surface'] = {'body': 'Kerbin', 'latitude': -0.1, 'longitude': -74.56,
                             'altitude': 0.13728}
    path = tmp_path / 'one.yaml'
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError, match="'ahrs' is used twice"):
        load_scenario(str(path))


def test_the_race_over_the_management_port_of_a_real_simulator(
        ros_process, free_udp_port, free_udp_port_series, lean_scenario):
    manager = free_udp_port()
    sim = ros_process(['pylon_sim', '--scenario', lean_scenario('race'), '--rate', '1',
                       '--state-port', str(free_udp_port_series(4, management.PORT_STRIDE)),
                       '--command-port', str(free_udp_port_series(4, management.PORT_STRIDE)),
                       '--management-port', str(manager)])
    sim.wait_for_output(r'mission of 4 vehicles', timeout=20)
    status = request(manager, {'cmd': 'status'})
    assert status['ok'] and status['race']['phase'] == 'grid'
    assert [v['race']['grid'] for v in status['vehicles']] == [0, 1, 2, 3]
    assert request(manager, {'cmd': 'start'})['race']['phase'] == 'running'
    reply = request(manager, {'cmd': 'boost', 'vehicle': 3, 'value': 1.0})
    assert reply['ok'] and reply['boost']['outcome'] == 'fired'
    assert [v['race']['boostRemaining'] for v in reply['vehicles']] == [3, 3, 2, 3]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:   # JSON's NaN
        sock.settimeout(10.0)
        sock.sendto(b'{"cmd": "boost", "vehicle": 3, "value": NaN}', ('127.0.0.1', manager))
        bad = json.loads(sock.recv(65535))
    assert not bad['ok'] and 'finite' in bad['error']
    assert request(manager, {'cmd': 'status'})['vehicles'][2]['race']['events'] == {
        'boost_fired': 1, 'malformed_boost': 1}
    assert request(manager, {'cmd': 'quit'})['ok']
    assert sim.wait(timeout=20) == 0
    assert 'race: vehicle 3 boost fired' in sim.log()


def world_after_settling(run, karts, frames: int = 20) -> dict:
    """Return what the world is ``frames`` frames after a reset: truth, drive, race, leases.

    Settling from the grid is deterministic: any state a reset forgot (a wheel's spin, a
    suspension, a boost, a penalty, a lap) shows in it.
    """
    for _ in range(frames):
        run.frame()
    status = run.manage({'cmd': 'status'})
    world = {}
    for kart, vehicle in zip(karts, status['vehicles']):
        v = kart.vessel
        race = {k: vehicle['race'][k] for k in ('lapCount', 'section', 'boostRemaining',
                                                'isBoosting', 'thisLapTime', 'events')}
        world[kart.index] = {
            'state': [np.asarray(getattr(v.state, key)).round(9).tolist() for key in (
                'position', 'velocity', 'attitude', 'body_rate')],
            'wheels': np.asarray(v.wheel_state.omega).round(9).tolist(),
            'drive': v.drive, 'race': race, 'lease_owned': vehicle['lease_owned']}
    world['phase'] = status['phase'], status['race']['phase']
    return world


def test_ten_resets_mid_race_leave_the_same_world(race):
    run, karts = race('race')
    first = world_after_settling(run, karts)
    sessions = {tuple(v['session']) for v in run.manage({'cmd': 'status'})['vehicles']}
    rng = np.random.default_rng(4)
    for attempt in range(10):
        run.manage({'cmd': 'start'})
        for kart in karts[:2]:
            kart.h.acquire()
            kart.renewed = run.clock
        run.manage({'cmd': 'boost', 'vehicle': 1, 'value': 1.0})
        driven = float(rng.uniform(0.4, 1.2))        # mid-race: moving, boosting, steering
        end = run.clock + driven
        while run.clock < end:
            for kart in karts[:2]:
                kart.command(steering=0.3 if attempt % 2 else -0.3)
            run.frame()
        assert karts[0].sample()['speed'] > 1.0
        run.manage({'cmd': 'reset'})
        now = run.manage({'cmd': 'status'})['vehicles']
        fresh = {tuple(v['session']) for v in now}
        assert not fresh & sessions, 'a reset makes new runtime sessions'
        sessions |= fresh
        assert world_after_settling(run, karts) == first, f'reset {attempt + 1}'


def test_a_kart_driven_into_the_one_ahead_reports_the_collision_on_both(race):
    run, karts = race('race')
    rear, front = karts[2], karts[0]               # slot 2 is 8 m behind slot 0
    start(run, rear)
    samples = rear.drive(6.0, until=lambda s: s['race']['collisions'] > 0)
    hit = samples[-1]['race']
    assert hit['collisions'] == 1, 'the rear kart reached the one ahead within 6 s'
    log = hit['collisionLog'][0]
    assert log['with'] == 1 and log['speed'] > 1.0 and log['impulse'] > 0.0
    assert 0.0 < log['at'] <= run.manage({'cmd': 'status'})['race']['elapsed'] + 1e-9
    ahead = front.status()
    assert ahead['collisions'] == 1 and ahead['collisionLog'][0]['with'] == 3
    assert ahead['collisionLog'][0]['at'] == log['at']
    assert karts[1].status()['collisions'] == karts[3].status()['collisions'] == 0
    run.manage({'cmd': 'reset'})
    assert all(k.status()['collisions'] == 0 for k in karts)
