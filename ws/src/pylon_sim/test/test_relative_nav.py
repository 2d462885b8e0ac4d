"""The relative-navigation sensor (our extension) against the simulator's ground truth.

A ``relative_nav`` module on the orbit sat's probe core sees the target 150 m ahead and the
debris 1.8 km behind. The truth a sample is checked against is the world right after the
frame that sent it, turned into base_link through KSP's view (``ksp_view``, the mod's
conversions in ``telemetry``), or the ground-truth packets of the same UT: neither is the
rotation the sensor model uses.
"""

from collections import Counter
from dataclasses import replace

import numpy as np
from pylon_protocol import packets, rotations
from pylon_sim.game import ksp_view
from pylon_sim.loop.runtime import Simulator
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.mod import telemetry
from pylon_sim.sensors import relative_nav
from pylon_testing.scenarios import write_crowd
import pytest

PACKET = 'pylon_relative_nav'
SENSOR = 'relative_nav_main'
EXACT = {'position_noise_m': 0.0, 'range_noise_fraction': 0.0, 'velocity_noise_mps': 0.0}


def nav(**settings) -> dict:
    """Return ``write_scenario``'s ``modules``: the sensor on the sat's probe core."""
    return {'sat': {'probeCoreOcto': [{'kind': 'relative_nav', 'index': 1,
                                       'sensor_id': SENSOR, **settings}]}}


def truth(sim: Simulator, vessel_id: str) -> tuple[np.ndarray, np.ndarray]:
    """Return a vessel's position and velocity relative to the active one, in base_link."""
    active, other = sim.world.active, sim.world.find(vessel_id)
    view = ksp_view.observe(active, sim.world.ut)
    position = telemetry.to_base(view, view.world_unity(other.state.position
                                                        - active.state.position))
    velocity = telemetry.to_base(view, view.world_unity(other.state.velocity
                                                        - active.state.velocity))
    return np.array(position), np.array(velocity)


def samples_with_truth(h, count: int) -> list[tuple[dict, dict]]:
    """Step frames until ``count`` samples came; return each with its targets' truth.

    The truth is keyed by vessel id, and ``ut`` holds the UT of the frame that sent it.
    """
    out = []
    while len(out) < count:
        before = len(h.of(PACKET))
        h.frames(1)
        for sample in h.of(PACKET)[before:]:
            out.append((sample, {'ut': h.sim.world.ut, **{
                t['vesselId']: truth(h.sim, t['vesselId']) for t in sample['targets']}}))
    return out


def test_a_sample_is_the_exact_geometry_without_noise(harness):
    h = harness(modules=nav(**EXACT))
    for sample, truths in samples_with_truth(h, 20):
        assert sample['vesselId'] == h.vessel_id and sample['sensorId'] == SENSOR
        assert sample['coordinateFrame'] == 'base_link' and sample['partFlightId'] == 4100001
        assert sample['universalTime'] == truths['ut']
        assert [t['vesselName'] for t in sample['targets']] == ['Target Station',
                                                                'Spent Stage Debris']
        for target in sample['targets']:
            position, velocity = truths[target['vesselId']]
            assert target['position'] == pytest.approx(position, abs=1e-9 * target['range'])
            assert target['velocity'] == pytest.approx(velocity, abs=1e-9)
            assert target['range'] == pytest.approx(np.linalg.norm(position), rel=1e-12)
    # co-orbiting 150 m apart: the inertial velocity difference is the orbit's rate times
    # the separation (about 0.48 m/s), not the near-zero change of the relative position
    # that a frame turning with the orbit would see
    speed = np.linalg.norm(sample['targets'][0]['velocity'])
    rate = np.linalg.norm(h.sim.world.active.state.velocity) / np.linalg.norm(
        h.sim.world.active.state.position)
    assert speed == pytest.approx(rate * sample['targets'][0]['range'], rel=1e-3)


def test_it_agrees_with_the_ground_truth_packets_of_the_same_ut(harness):
    # the ENU ground truth (pose, nearby vessels, the frame's rate) of the same UT, turned
    # into base_link; surface-relative velocities plus the frame's rate x the offset
    h = harness(modules=nav(**EXACT))
    h.run(2.0)
    truths = {p['universalTime']: p for p in h.of('pylon_ground_truth')}
    nearby = {p['universalTime']: p for p in h.of('pylon_nearby_vessels')}
    matched = 0
    for sample in h.of(PACKET):
        gt = truths.get(sample['universalTime'])
        if gt is None:
            continue
        to_enu = rotations.to_matrix(gt['rotation'])
        others = {v['vesselId']: v for v in nearby[sample['universalTime']]['vessels']}
        for target in sample['targets']:
            other = others[target['vesselId']]
            offset = np.subtract(other['position'], gt['position'])
            drift = np.subtract(other['linearVelocity'], gt['linearVelocity']) \
                + np.cross(gt['frameAngularVelocity'], offset)
            assert target['position'] == pytest.approx(to_enu.T @ offset, abs=1e-6)
            assert target['velocity'] == pytest.approx(to_enu.T @ drift, abs=1e-6)
            matched += 1
    assert matched >= 20


def test_the_noise_is_unbiased_with_the_stated_sigma(harness):
    h = harness(modules=nav(rate_hz=20))
    errors = {'target': [], 'debris': [], 'velocity': []}
    sigmas = {'target': [], 'debris': []}
    for sample, truths in samples_with_truth(h, 400):
        for target in sample['targets']:
            position, velocity = truths[target['vesselId']]
            sigma = sample['positionSigmaBase'] + sample['rangeSigmaFraction'] * \
                np.linalg.norm(position)
            kind = 'debris' if target['isDebris'] else 'target'
            errors[kind] += list(np.subtract(target['position'], position) / sigma)
            sigmas[kind].append(sigma)
            errors['velocity'] += list(np.subtract(target['velocity'], velocity)
                                       / sample['velocitySigma'])
    assert np.mean(sigmas['target']) == pytest.approx(0.05 + 0.001 * 150, rel=0.01)
    assert np.mean(sigmas['debris']) == pytest.approx(0.05 + 0.001 * 1800, rel=0.01)
    for kind, normalised in errors.items():         # 1200 or 2400 values each
        assert len(normalised) >= 1200
        assert abs(np.mean(normalised)) < 0.15, kind             # 5 standard errors
        assert np.std(normalised) == pytest.approx(1.0, abs=0.1), kind


def test_the_same_seed_gives_the_same_samples(harness):
    runs = [harness(modules=nav(), seed=seed) for seed in (5, 5, 6)]
    for h in runs:
        h.run(1.0)
    first, again, other = ([t['position'] for s in h.of(PACKET) for t in s['targets']]
                           for h in runs)
    assert first == again and first != other


def test_a_rotated_observer_sees_in_its_own_axes(harness):
    # yawed 90 deg from prograde: the target ahead lies along base_link -Y
    h = harness(modules=nav(**EXACT), changes={'sat': {'attitude_rpy_deg': [0, 0, 90]}})
    h.frames(1)
    [sample] = h.of(PACKET)
    assert sample['targets'][0]['position'] == pytest.approx([0.0, -150.0, 0.0], abs=0.05)
    # any attitude and a tumble: the geometry in the body axes of that instant
    h = harness(modules=nav(**EXACT), changes={'sat': {
        'attitude_rpy_deg': [30, -50, 120], 'angular_velocity': [0.05, -0.1, 0.2]}})
    for sample, truths in samples_with_truth(h, 10):
        for target in sample['targets']:
            position, velocity = truths[target['vesselId']]
            assert target['position'] == pytest.approx(position, abs=1e-9 * target['range'])
            assert target['velocity'] == pytest.approx(velocity, abs=1e-9)


def test_range_cut_off_nearest_first_and_who_is_seen(tmp_path):
    def ids(**settings):
        path = write_crowd(tmp_path, lean=True, modules=nav(**settings))
        got = []
        sim = Simulator(load_scenario(path, seed=2), seed=2,
                        send=lambda data: got.append(packets.decode_state(data)))
        sim.run(rate=0, duration=0.02)
        [sample] = [p for p in got if p['type'] == PACKET]
        assert [t['range'] for t in sample['targets']] == sorted(
            t['range'] for t in sample['targets'])
        return [int(t['vesselId'], 16) for t in sample['targets']]

    # 40 copies 20 + 50 i m ahead, one 2.6 km ahead, one packed 10 m ahead, one at the Mun
    assert ids(max_range_m=969.9) == list(range(1, 20))         # 20 ... 920 m
    assert ids(max_range_m=970.1) == list(range(1, 21))         # the 20th: 970 m of arc
    assert ids() == list(range(1, 33))                          # the 32 nearest of 40


def test_the_cap_and_the_order_of_the_model(harness):
    # measure() itself: 40 copies of the target at shuffled distances, one out of range
    h = harness()
    world = h.sim.world
    sat, target = world.active, world.vessels['target']
    order = np.random.default_rng(1).permutation(41)
    crowd = [replace(target, spec=replace(target.spec, vessel_id=f'{int(i) + 1:032x}'),
                     state=replace(target.state, position=sat.state.position
                                   + (30.0 + 50.0 * int(i)) * np.array([0.6, 0.0, 0.8])))
             for i in order]
    sample = relative_nav.measure(sat, [sat, *crowd], world.ut, relative_nav.Settings(),
                                  np.random.default_rng(0), sensor_id=SENSOR,
                                  part_flight_id=1)
    listed = [int(t['vesselId'], 16) for t in sample['targets']]
    assert listed == list(range(1, 33))
    packets.build_state(PACKET, h.sim.envelope, **sample)         # a valid packet
    empty = relative_nav.measure(sat, [], world.ut, relative_nav.Settings(),
                                 np.random.default_rng(0), sensor_id=SENSOR, part_flight_id=1)
    assert empty['targets'] == []


@pytest.mark.parametrize('rate', [1.0, 10.0, 20.0])
def test_it_samples_at_its_rate_on_the_simulator_clock(harness, rate):
    h = harness(modules=nav(rate_hz=rate))
    h.run(5.0)
    frames = [f for p, f in zip(h.capture.packets, h.capture.frames) if p['type'] == PACKET]
    per_second = Counter(f * 2 // 100 for f in frames)        # 50 frames of 0.02 s
    assert [per_second[second] for second in range(1, 5)] == [rate] * 4
    # in UT: the period on average, each interval within the frame (0.02 s) it falls in
    intervals = np.diff([p['universalTime'] for p in h.of(PACKET)])[1:]
    assert np.mean(intervals) == pytest.approx(1.0 / rate, abs=1e-3)
    assert np.all(np.abs(intervals - 1.0 / rate) < 0.02 + 1e-6)
    assert all(p['rateHz'] == rate for p in h.of(PACKET))


def test_power_and_the_switch(harness):
    h = harness(modules=nav(electric_charge_rate=1.0))
    idle = harness(modules=nav(electric_charge_rate=0.0))
    for sim in (h, idle):
        sim.run(10.0)
    # the same run but for the sensor's draw: 1 EC/s over the UT between its samples
    spent = telemetry.power.electric_charge(idle.sim.world.active) \
        - telemetry.power.electric_charge(h.sim.world.active)
    ut = [p['universalTime'] for p in h.of(PACKET)]
    assert spent == pytest.approx(ut[-1] - ut[0], abs=1e-6)
    # no charge: no sample, and the simulator counts why
    h.sim.admin({'cmd': 'electric_charge', 'amount': 0})
    h.capture.clear()
    h.run(1.0)
    assert h.of(PACKET) == [] and h.of('pylon_imu')
    assert h.sim.sensing.skipped[relative_nav.KIND, 'no_power'] == 10
    h.sim.admin({'cmd': 'electric_charge', 'amount': 50})
    h.run(1.0)
    assert len(h.of(PACKET)) == 10
    # the part's switch (admin ``sensor``), as a star tracker's
    h.sim.admin({'cmd': 'sensor', 'id': SENSOR, 'enabled': False})
    h.capture.clear()
    h.run(1.0)
    assert h.of(PACKET) == []
    h.sim.admin({'cmd': 'sensor', 'id': SENSOR, 'enabled': True})
    h.run(1.0)
    assert len(h.of(PACKET)) == 10


def test_only_the_active_unpaused_vessel_samples(harness):
    h = harness(modules=nav())
    h.sim.admin({'cmd': 'pause'})
    h.run(1.0)
    assert h.of(PACKET) == []
    h.sim.admin({'cmd': 'resume'})
    h.sim.admin({'cmd': 'switch', 'vessel': 'target'})     # the sensor stays on the sat
    h.run(1.0)
    assert h.of(PACKET) == []
    h.sim.admin({'cmd': 'switch', 'vessel': 'sat'})
    h.sim.admin({'cmd': 'revert'})                          # parts followed, as the others
    h.run(1.0)
    assert len(h.of(PACKET)) == 10
    assert {p['vesselId'] for p in h.of(PACKET)} == {h.vessel_id}
    assert h.sim.sensing.samples[relative_nav.KIND] == 10
    assert h.sim.sensing.cost[relative_nav.KIND] > 0.0


def test_in_a_mission_the_chaser_sees_the_target_and_the_target_sends_none(mission):
    # the rendezvous scenario carries the sensor on the chaser: each vehicle is a game of
    # its own on one shared world; only the chaser's game has the sensor's vessel active
    run, (chaser, target) = mission('rendezvous')
    chaser.run(1.0)
    samples = chaser.of(PACKET)
    assert len(samples) >= 10 and target.of(PACKET) == []
    for sample in samples:
        (seen,) = sample['targets']
        assert sample['vesselId'] == chaser.vessel_id and seen['vesselId'] == target.vessel_id
        assert seen['range'] == pytest.approx(200.0, abs=5 * (0.05 + 0.001 * 200.0))
