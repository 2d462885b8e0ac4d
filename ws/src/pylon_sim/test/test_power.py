"""ElectricCharge: storage, solar panels in sun and shadow, reaction wheels, vehicle health."""

from dataclasses import replace
import math

import numpy as np
from pylon_protocol import rotations
from pylon_sim.game import environment, kepler, power
from pylon_sim.game.bodies import KERBIN, sun_position
from pylon_sim.game.vessel import Module, Part, Shape, VesselSpec
from pylon_sim.game.world import World
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.mod.vehicle_manager import VehicleManager
import pytest

STAR_TRACKER_DRAW = 0.05          # EC/s, the star tracker's default


def part(index, capacity=0.0, amount=None, modules=(), rpy=(0.0, 0.0, 0.0)):
    ec = {} if capacity == 0.0 else {'ElectricCharge': capacity if amount is None else amount}
    return Part(name=f'p{index}', title=f'P{index}', persistent_id=index + 1,
                flight_id=100 + index, parent=None if index == 0 else 0,
                position=(0.0, 0.0, 0.0), rotation=tuple(rotations.from_rpy(*rpy).tolist()),
                dry_mass=10.0, shape=Shape('box', (1.0, 1.0, 1.0)), resources=ec,
                capacity={'ElectricCharge': capacity} if capacity else {},
                modules=tuple(modules))


def test_storage_fills_and_empties_in_part_order():
    spec = VesselSpec('0' * 32, 'v', (part(0, 10.0, 5.0), part(1), part(2, 20.0, 0.0)))
    held = spec.initial_resources()
    charged = power.step(held, spec, power.Flows(produced=2.0), 10.0)     # 20 EC in
    assert (charged[(0, 'ElectricCharge')], charged[(2, 'ElectricCharge')]) == (10.0, 15.0)
    full = power.step(charged, spec, power.Flows(produced=100.0), 10.0)   # the rest is lost
    assert (full[(0, 'ElectricCharge')], full[(2, 'ElectricCharge')]) == (10.0, 20.0)
    drawn = power.step(full, spec, power.Flows(consumed=1.5), 10.0)       # 15 EC out
    assert (drawn[(0, 'ElectricCharge')], drawn[(2, 'ElectricCharge')]) == (0.0, 15.0)
    empty = power.step(drawn, spec, power.Flows(consumed=100.0), 10.0)
    assert sum(empty.values()) == 0.0
    assert held == spec.initial_resources()                  # the input is not modified
    assert power.electric_capacity(spec) == 30.0


def test_a_fixed_panel_follows_the_cosine_to_the_sun():
    panel = Module('solar_panel', 0, {})                     # OX-STAT, cells along part +Z
    panels = power.solar_panels(VesselSpec('0' * 32, 'v', (part(0, modules=[panel]),)))
    attitude = np.array([0.0, 0.0, 0.0, 1.0])            # base_link = inertial
    for angle, expected in ((0.0, 0.35), (60.0, 0.175), (90.0, 0.0), (150.0, 0.0)):
        sun = np.array([math.sin(math.radians(angle)), 0.0, math.cos(math.radians(angle))])
        assert power.solar_rate(panels, attitude, sun, 1.0) == pytest.approx(expected,
                                                                              abs=1e-12)
    assert power.solar_rate(panels, attitude, np.array([0.0, 0.0, 1.0]), 0.0) == 0.0
    # the part's mounting turns the normal: rolled 180 deg, the cells face -Z
    flipped = power.solar_panels(VesselSpec('0' * 32, 'v', (
        part(0, modules=[panel], rpy=(math.pi, 0.0, 0.0)),)))
    assert power.solar_rate(flipped, attitude, np.array([0.0, 0.0, -1.0]), 1.0) == \
        pytest.approx(0.35)


def test_reaction_wheels_draw_in_proportion_to_the_torque_they_give():
    spec = load_scenario('orbit').vessel('sat').spec              # one 5 kN·m wheel
    rating = power.wheel_rating(spec)
    assert rating == pytest.approx((0.03 * 5.0, 5000.0))          # 0.03 EC/s per kN·m
    assert power.wheel_draw_rate([5000.0, 0.0, 0.0], rating) == pytest.approx(0.15)
    assert power.wheel_draw_rate([0.0, -2500.0, 0.0], rating) == pytest.approx(0.075)
    assert power.wheel_draw_rate([5000.0, 5000.0, -5000.0], rating) == pytest.approx(0.45)
    assert power.wheel_draw_rate(np.zeros(3), rating) == 0.0


def in_shadow(position: np.ndarray, sun: np.ndarray) -> bool:
    """Kerbin's shadow as the cylinder behind it (the Sun is far): an independent check."""
    s = sun / np.linalg.norm(sun)
    along = float(position @ s)
    return along < 0.0 and float(np.linalg.norm(position - along * s)) < KERBIN.radius


def test_shadow_is_the_region_behind_kerbin():
    world = World(load_scenario('orbit'))
    vessel = world.active
    seen = set()
    for _ in range(200):                        # one orbit in 10 s steps
        position, velocity = kepler.propagate(vessel.body, vessel.state.position,
                                              vessel.state.velocity, 10.0)
        vessel.state = replace(vessel.state, position=position, velocity=velocity)
        exposure = environment.sun_exposure(vessel, world.ut)
        sun = sun_position(world.ut)
        dark = in_shadow(position, sun)
        seen.add(dark)
        assert exposure.lit == (not dark)
        assert exposure.flux_scale == pytest.approx(0.0 if dark else 1.0, abs=0.02)
    assert seen == {True, False}


def test_the_orbit_scenario_starts_in_kerbins_shadow():
    world = World(load_scenario('orbit'))
    assert not environment.sun_exposure(world.active, world.ut).lit


def ec_slopes(samples: list[dict]) -> list[float]:
    return [(b['electricCharge'] - a['electricCharge'])
            / (b['universalTime'] - a['universalTime']) for a, b in zip(samples, samples[1:])]


def test_charge_falls_in_eclipse_and_rises_after_sunrise(harness):
    # 1.5 deg before the end of Kerbin's shadow (sunrise at about 74.5 deg of the orbit)
    h = harness(changes={'sat': {'orbit': {'body': 'Kerbin', 'altitude': 100000,
                                           'true_anomaly': 73.0}}})
    h.sim.admin({'cmd': 'electric_charge', 'amount': 100.0})
    h.run(20.0)
    health = h.of('pylon_vehicle_health')
    assert len(health) == pytest.approx(40, abs=1)                      # 2 Hz
    assert all(p['electricCapacity'] == 150.0 for p in health)
    vessel = h.sim.world.active
    lit = []
    for sample in health:
        ut = sample['universalTime']
        # where the vessel was at that UT: propagate back from now (two-body, free flight)
        position, _ = kepler.propagate(vessel.body, vessel.state.position,
                                       vessel.state.velocity, ut - h.sim.world.ut)
        lit.append(not in_shadow(position, sun_position(ut)))
    assert lit[0] is False and lit[-1] is True
    slopes = ec_slopes(health)
    for slope, before, after in zip(slopes, lit, lit[1:]):
        if not before and not after:                  # night: the star tracker's draw only
            assert slope == pytest.approx(-STAR_TRACKER_DRAW, abs=0.02)
        elif before and after:                        # day: the panel, minus the tracker
            normal = rotations.to_matrix(vessel.state.attitude) @ np.array([0.0, 0.0, -1.0])
            sun = sun_position(vessel.state.ut) - vessel.state.position
            expected = 0.35 * float(normal @ sun) / float(np.linalg.norm(sun))
            assert slope == pytest.approx(expected - STAR_TRACKER_DRAW, rel=0.1, abs=0.01)
            assert slope > 0.05


def test_health_packets_sum_the_parts_and_count_frames(harness):
    h = harness('surface')
    h.run(3.0)
    health = h.of('pylon_vehicle_health')
    assert len(health) == pytest.approx(6, abs=1)
    vessel = h.sim.world.active
    assert health[-1]['electricCharge'] == pytest.approx(power.electric_charge(vessel))
    assert health[-1]['electricCapacity'] == power.electric_capacity(vessel.spec) == 120.0
    sequences = [p['observationSequence'] for p in health]
    assert sequences == sorted(set(sequences))
    # the frame counter, as in the flight state sent in the same frame
    flights = {p['universalTime']: p['observationSequence'] for p in h.of('pylon_flight_state')}
    assert all(flights[p['universalTime']] == p['observationSequence']
               for p in health if p['universalTime'] in flights)


def test_wheels_without_charge_give_no_torque():
    world = World(load_scenario('orbit'))
    vessel = world.active
    vessel.sas = True                                           # damps this rate with wheels
    vessel.state = replace(vessel.state, body_rate=np.array([0.0, 0.0, 0.05]))
    control = VehicleManager()
    control.tick(vessel, 0.02, 0.02)
    assert control.sas_torque[2] < -1.0 and control.wheel_torque[2] < -1.0
    power.set_electric_charge(vessel, 0.0)
    control.tick(vessel, 0.04, 0.02)
    assert not np.any(control.sas_torque) and not np.any(control.wheel_torque)


def test_wheel_torque_draws_charge(harness):
    h = harness()
    vessel = h.sim.world.active
    h.sim.sensing.set_enabled('star_tracker_main', False)        # only the wheel draws
    h.acquire()
    before = power.electric_charge(vessel)
    for _ in range(50):                                          # 1 s of full roll input
        h.send('pylon_flight_control_command', landingGear=False, timeoutSeconds=0.1,
               pitch=0.0, yaw=0.0, roll=1.0, **h.identity())
        h.frames(1)
    assert before - power.electric_charge(vessel) == pytest.approx(0.15, rel=0.05)
