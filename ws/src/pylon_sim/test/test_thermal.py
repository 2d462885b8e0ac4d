"""Part temperatures: the lumped skin/interior model and its packets."""

import math
from pathlib import Path

import numpy as np
from pylon_sim.game import thermal
from pylon_sim.game.vessel import Part, Shape, VesselSpec
from pylon_sim.loop.scenario import load_scenario
import pytest

SIGMA = 5.670374419e-8
ENGINE = 'engine_1100004_0'
ENGINE_PART = 4100004               # liquidEngine3.v2 of the sat
PROBE_PART = 4100001


def ball(mass=100.0, radius=0.5):
    return VesselSpec('0' * 32, 'v', (Part(
        name='ball', title='Ball', persistent_id=1, flight_id=1, parent=None,
        position=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0, 1.0), dry_mass=mass,
        shape=Shape('sphere', (radius,))),))


def run(state, params, inputs, seconds, dt):
    for _ in range(int(round(seconds / dt))):
        state = thermal.step(state, params, inputs, dt)
    return state


def test_surface_areas_of_the_shapes():
    assert thermal.surface_area(Shape('box', (1.0, 2.0, 3.0))) == 22.0
    assert thermal.surface_area(Shape('cylinder', (0.5, 2.0))) == pytest.approx(
        2 * math.pi * 0.25 + 2 * math.pi * 0.5 * 2.0)
    assert thermal.surface_area(Shape('sphere', (0.5,))) == pytest.approx(math.pi)


def test_in_sunlight_a_part_settles_at_the_radiative_equilibrium():
    params = thermal.params(ball(mass=10.0), [10.0])
    sunlit = thermal.Inputs(solar_flux=1360.0)
    # absorbed α S A/4 = radiated ε σ A (T⁴ − T_bg⁴), A cancels
    expected = (0.25 * 1360.0 / (4 * 0.4 * SIGMA) + 4.0 ** 4) ** 0.25
    state = run(thermal.initial_state(1), params, sunlit, 3e4, 1000.0)   # long warp steps
    assert state.skin[0] == pytest.approx(expected, abs=0.5)
    assert state.internal[0] == pytest.approx(expected, abs=0.5)
    assert 240.0 < expected < 255.0


def test_in_shadow_a_part_cools_towards_the_sky_and_the_skin_leads():
    params = thermal.params(ball(mass=10.0), [10.0])
    state = thermal.initial_state(1)
    skins = []
    for _ in range(30):
        state = run(state, params, thermal.Inputs(), 60.0, 0.5)
        skins.append(state.skin[0])
        assert state.skin[0] < state.internal[0]              # heat flows out through the skin
    assert all(b < a for a, b in zip(skins, skins[1:]))
    assert skins[-1] < thermal.INITIAL_TEMPERATURE - 20.0 and skins[-1] > 4.0


def test_skin_and_interior_exchange_heat():
    params = thermal.params(ball(), [100.0])
    state = thermal.State(np.array([400.0]), np.array([300.0]))
    later = thermal.step(state, params, thermal.Inputs(), 1.0)
    conductance = thermal.SKIN_INTERNAL_CONDUCTANCE * params.area[0]
    # the interior gains G ΔT dt / C in the first second
    assert later.internal[0] - 300.0 == pytest.approx(conductance * 100.0
                                                      / params.internal_capacity[0], rel=0.01)


def test_engine_heat_warms_the_interior_at_power_over_capacity():
    params = thermal.params(ball(), [100.0])
    state = thermal.initial_state(1)
    heat = np.array([8.0 * 10000.0])                           # a 10 kN engine burning
    later = thermal.step(state, params, thermal.Inputs(engine_heat=heat), 1.0)
    assert later.internal[0] - state.internal[0] == pytest.approx(
        heat[0] / params.internal_capacity[0], rel=0.01)


def test_part_limits_come_from_the_scenario(tmp_path):
    spec = load_scenario('orbit').vessel('sat').spec
    assert {(p.max_temp, p.skin_max_temp) for p in spec.parts} == {(2000.0, 2000.0)}
    text = Path(load_scenario('orbit').path).read_text(encoding='utf-8').replace(
        '        mass: 500\n', '        mass: 500\n        max_temp: 2200\n'
        '        skin_max_temp: 2500\n')
    (tmp_path / 'hot.yaml').write_text(text, encoding='utf-8')
    engine = load_scenario(str(tmp_path / 'hot.yaml')).vessel('sat').spec.parts[3]
    assert (engine.name, engine.max_temp, engine.skin_max_temp) == (
        'liquidEngine3.v2', 2200.0, 2500.0)


def engine_command(h, thrust, timeout=0.2):
    h.send('pylon_actuator_command', actuatorType='engine', name=ENGINE, enabled=True,
           targetThrust=thrust, timeoutSeconds=timeout, **h.identity())


def thermal_of(h, flight_id):
    return [p for p in h.of('pylon_part_thermal_state') if p['partFlightId'] == flight_id]


def test_an_engine_part_heats_while_its_engine_burns(harness):
    h = harness()
    h.acquire()
    h.run(1.0)
    before = thermal_of(h, ENGINE_PART)[-1]
    probe_before = thermal_of(h, PROBE_PART)[-1]
    for _ in range(250):                                        # 5 s at full thrust
        engine_command(h, 60000.0)
        h.frames(1)
    assert h.sim.control.engine_thrust[ENGINE] == pytest.approx(60000.0)
    burning = thermal_of(h, ENGINE_PART)[-1]
    assert burning['temperature'] - before['temperature'] > 4.0           # about 1.2 K/s
    # the heat leaves the interior through the skin
    assert burning['temperature'] > burning['skinTemperature'] + 4.0
    probe = thermal_of(h, PROBE_PART)[-1]
    assert abs(probe['temperature'] - probe_before['temperature']) < 0.1
    engine_command(h, 0.0)
    h.run(3.0)
    stopped = thermal_of(h, ENGINE_PART)
    assert stopped[-1]['temperature'] - stopped[-2]['temperature'] < 0.01   # no more heating


def test_one_thermal_packet_per_part_at_2_hz(harness):
    h = harness()
    h.run(3.0)
    spec = h.sim.world.active.spec
    packets = h.of('pylon_part_thermal_state')
    assert len(packets) == pytest.approx(6 * len(spec.parts), abs=len(spec.parts))
    by_part = {}
    for packet in packets:
        by_part.setdefault(packet['partFlightId'], []).append(packet)
    assert set(by_part) == {p.flight_id for p in spec.parts}
    for part in spec.parts:
        samples = by_part[part.flight_id]
        sequences = [p['observationSequence'] for p in samples]
        assert sequences == sorted(set(sequences))
        last = samples[-1]
        assert (last['partPersistentId'], last['partName']) == (part.persistent_id, part.name)
        assert last['electricCapacity'] == part.capacity.get('ElectricCharge', 0.0)
        assert last['maxTemperature'] == 2000.0 and not last['shieldedFromAirstream']
        assert 200.0 < last['skinTemperature'] < 300.0
