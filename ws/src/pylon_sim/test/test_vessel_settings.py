"""A module's settings are read by one rule: the allocation, typed actuators and packets agree."""

import math

from pylon_sim.game.parts import actuators_of
from pylon_sim.game.vessel import flag_setting, Module, number_setting, Part, Shape, VesselSpec
from pylon_sim.mod import actuators, allocation
from pylon_sim.mod.typed_actuators import TypedActuators
import pytest

RCS = 'rcs_2_0'
POWER = 1000.0       # N per nozzle


def _spec(rcs_settings: dict) -> VesselSpec:
    def part(pid, modules):
        return Part(name=f'part.{pid}', title=f'Part {pid}', persistent_id=pid,
                    flight_id=pid, parent=0 if pid > 1 else None, position=(0.0, 0.0, 0.0),
                    rotation=(0.0, 0.0, 0.0, 1.0), dry_mass=10.0,
                    shape=Shape('box', (0.5, 0.5, 0.5)), modules=modules)
    return VesselSpec('0' * 32, 'settings', (
        part(1, (Module('command', 0),)), part(2, (Module('rcs', 0, rcs_settings),))))


@pytest.mark.parametrize(('value', 'read'), [
    (True, True), (False, False), (None, True), (0, True), (1, True), ('no', True),
    (0.0, True)])
def test_a_flag_is_a_bool_or_its_default(value, read):
    assert flag_setting({'enabled': value}, 'enabled', True) is read
    assert flag_setting({}, 'enabled', True) is True
    assert Module('rcs', 0, {'enabled': value}).flag('enabled', True) is read


@pytest.mark.parametrize(('value', 'read'), [
    (2, 2.0), (2.5, 2.5), (True, 7.0), ('3', 7.0), (None, 7.0), (math.nan, 7.0),
    (math.inf, 7.0)])
def test_a_number_is_a_finite_int_or_float_or_its_default(value, read):
    assert number_setting({'x': value}, 'x', 7.0) == read
    assert Module('servo', 0, {'x': value}).number('x', 7.0) == read
    assert number_setting({}, 'lower', -math.inf) == -math.inf


@pytest.mark.parametrize(('settings', 'enabled', 'power'), [
    ({'enabled': 0}, True, POWER),           # KSP/YAML flags are true/false: 0 is no flag
    ({'enabled': None}, True, POWER),
    ({'enabled': 1}, True, POWER),
    ({'enabled': 'off'}, True, POWER),
    ({'enabled': False}, False, POWER),
    ({'thruster_power': math.nan}, True, 0.0),
    ({'thruster_power': '1000'}, True, 0.0),
    ({'thrust_limit_fraction': math.nan}, True, POWER)], ids=repr)
def test_a_mistyped_rcs_setting_reads_the_same_in_allocation_and_typed_actuators(
        settings, enabled, power):
    spec = _spec({'thruster_power': POWER, **settings})
    typed = TypedActuators(spec)
    limit = power if enabled else 0.0     # N per nozzle the allocation may command
    alone, _, _ = allocation.geometry(spec, (0.0, 0.0, 0.0))
    assert [n.max_thrust for n in alone] == [limit] * 4
    # the vehicle manager hands the typed RCS settings to the allocation (no command here)
    through_typed, _, _ = allocation.geometry(spec, (0.0, 0.0, 0.0), typed.rcs_settings())
    assert [n.max_thrust for n in through_typed] == [limit] * 4
    assert typed.rcs_settings()[RCS] == {'enabled': enabled, 'thrust_limit': power}
    fields = typed.state_fields(RCS)
    assert (fields['enabled'], fields['active']) == (enabled, limit > 0.0)
    assert fields['maxThrust'] == 4 * power
    [actuator] = [a for a in actuators_of(spec) if a.name == RCS]
    packet = actuators.state(actuator, spec, 0.0, 1, (0.0, 0.0, 0.0))
    assert (packet['maxThrust'], packet['thrustLimit']) == (4 * power, power)


def test_the_stock_thrust_limiter_limits_once():
    """An RCS module at half its stock limiter may push half, alone or through its overrides.

    The typed side hands the allocation the module's limit with the limiter applied
    (``thrust_limit``); the allocation applied the limiter again: a quarter.
    """
    spec = _spec({'thruster_power': POWER, 'thrust_limit_fraction': 0.5})
    typed = TypedActuators(spec)
    alone, _, _ = allocation.geometry(spec, (0.0, 0.0, 0.0))
    through_typed, _, _ = allocation.geometry(spec, (0.0, 0.0, 0.0), typed.rcs_settings())
    assert [n.max_thrust for n in alone] == [n.max_thrust for n in through_typed] == \
        [0.5 * POWER] * 4
    assert typed.state_fields(RCS)['thrustLimit'] == 0.5 * POWER
