"""Burning propellant as pure steps: flows per resource, draining the tanks, the mass after."""

import numpy as np
from pylon_sim.game import propellant
from pylon_sim.game.propellant import G0
from pylon_sim.game.vessel import (
    mass_properties,
    Module,
    Part,
    RESOURCE_DENSITY,
    Shape,
    VesselSpec,
)
import pytest

DT = 0.02
ENGINE, SOLID, RCS = 'engine_10_0', 'engine_11_0', 'rcs_12_0'


def part(index, pid, resources=None, modules=(), position=0.0):
    return Part(name=f'p{index}', title=f'p{index}', persistent_id=pid, flight_id=pid + 100,
                parent=None if index == 0 else 0, position=(position, 0.0, 0.0),
                rotation=(0.0, 0.0, 0.0, 1.0), dry_mass=100.0,
                shape=Shape('cylinder', (0.5, 1.0)), resources=resources or {},
                modules=tuple(modules))


@pytest.fixture
def spec():
    """Two tanks (LF/Ox, mono, solid), a liquid engine, a solid booster and an RCS block."""
    return VesselSpec('0' * 32, 'burner', (
        part(0, 1, {'LiquidFuel': 9.0, 'Oxidizer': 11.0, 'MonoPropellant': 1.0}),
        part(1, 2, {'LiquidFuel': 90.0, 'Oxidizer': 110.0, 'SolidFuel': 50.0},
             position=-2.0),
        part(2, 10, modules=[Module('engine', 0, {'isp': 300.0})], position=-4.0),
        part(3, 11, modules=[Module('engine', 0, {'isp': 200.0, 'throttle_locked': True})]),
        part(4, 12, modules=[Module('rcs', 0, {'isp': 240.0})]),
        part(5, 13, modules=[Module('engine', 0, {})]),        # no Isp: burns nothing
    ))


def test_each_actuator_burns_thrust_over_isp_g0_in_its_mixture(spec):
    flows = propellant.flows(spec, {ENGINE: 30000.0, SOLID: 10000.0, 'engine_13_0': 5e4},
                             {RCS: 1000.0}, DT)
    liquid_kg = 30000.0 / (300.0 * G0) * DT
    assert flows['LiquidFuel'] == pytest.approx(liquid_kg * 0.9 / 2.0 / 5.0, rel=1e-12)
    assert flows['Oxidizer'] == pytest.approx(liquid_kg * 1.1 / 2.0 / 5.0, rel=1e-12)
    assert flows['SolidFuel'] == pytest.approx(10000.0 / (200.0 * G0) * DT / 7.5, rel=1e-12)
    assert flows['MonoPropellant'] == pytest.approx(1000.0 / (240.0 * G0) * DT / 4.0,
                                                    rel=1e-12)
    burned_kg = sum(units * RESOURCE_DENSITY[r] for r, units in flows.items())
    assert burned_kg == pytest.approx(liquid_kg + (10000.0 / 200.0 + 1000.0 / 240.0) / G0 * DT,
                                      rel=1e-12)


def test_no_thrust_burns_nothing(spec):
    resources = spec.initial_resources()
    assert propellant.flows(spec, {ENGINE: 0.0, 'engine_99_0': 1e5}, {}, DT) == {}
    after, burned = propellant.step(spec, resources, {}, {}, DT)
    assert after == resources and burned is False


def test_the_tanks_drain_first_part_first_and_never_below_empty(spec):
    resources = spec.initial_resources()
    before = dict(resources)
    after = propellant.drain(resources, {'LiquidFuel': 10.0, 'MonoPropellant': 5.0})
    assert resources == before                       # state in, state out
    assert after[(0, 'LiquidFuel')] == 0.0 and after[(1, 'LiquidFuel')] == 89.0
    assert after[(0, 'MonoPropellant')] == 0.0       # 4 units more than the vessel holds
    assert after[(0, 'Oxidizer')] == 11.0 and after[(1, 'SolidFuel')] == 50.0


def test_burn_moves_the_mass_and_centre_of_mass_of_a_vessel(spec):
    class Vessel:     # what burn touches of a SimVessel
        pass

    vessel = Vessel()
    vessel.spec, vessel.resources = spec, spec.initial_resources()
    vessel.mass = mass_properties(spec, vessel.resources)
    held = vessel.resources
    before = vessel.mass
    assert propellant.burn(vessel, {ENGINE: 60000.0}, {}, 1.0)
    assert vessel.resources is held                  # the vessel's dict, changed in place
    burned_kg = 60000.0 / (300.0 * G0)
    assert vessel.mass.mass == pytest.approx(before.mass - burned_kg, rel=1e-12)
    assert not np.allclose(vessel.mass.com, before.com)
    assert propellant.burn(vessel, {}, {}, 1.0) is False
