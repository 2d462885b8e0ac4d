"""Scenario files: the shipped ones load, and every error names the file, the key and why."""

from pathlib import Path
import re

from pylon_sim.game.vessel import mass_properties
from pylon_sim.loop.scenario import load_scenario, ScenarioError
from pylon_sim.sensors import relative_nav
import pytest
import yaml

SHIPPED = ('orbit', 'surface', 'launchpad', 'docking')


@pytest.mark.parametrize('name', SHIPPED)
def test_shipped_scenarios_load(name):
    scenario = load_scenario(name, seed=1)
    assert scenario.name == name
    assert scenario.active in [v.key for v in scenario.vessels]
    for vessel in scenario.vessels:
        assert re.fullmatch(r'[0-9a-f]{32}', vessel.spec.vessel_id)
        props = mass_properties(vessel.spec, vessel.spec.initial_resources())
        assert props.mass > 0
        assert all(v > 0 for v in props.inertia.diagonal())


def test_orbit_has_what_the_default_scenario_promises():
    scenario = load_scenario('orbit')
    sat = scenario.vessel('sat').spec
    kinds = [m.kind for p in sat.parts for m in p.modules]
    assert kinds.count('rcs') == 4
    for kind in ('star_tracker', 'reaction_wheel', 'engine', 'docking_port', 'lidar_3d',
                 'camera'):
        assert kind in kinds
    engine = next(m for p in sat.parts for m in p.modules if m.kind == 'engine')
    assert engine.get('gimbal_range_deg') > 0
    sensor_ids = {m.get('sensor_id') for p in sat.parts for m in p.modules}
    assert {'star_tracker_main', 'lidar_3d_front', 'camera_front'} <= sensor_ids
    assert scenario.vessel('debris').spec.is_debris


def test_sensors_without_an_id_get_the_generated_form(tmp_path):
    data = yaml.safe_load(Path(load_scenario('orbit').path).read_text())
    for part in data['vessels'][0]['parts']:
        for module in part.get('modules', []):
            module.pop('sensor_id', None)
    path = tmp_path / 'noid.yaml'
    path.write_text(yaml.safe_dump(data))
    ids = [m.get('sensor_id') for p in load_scenario(str(path), seed=3).vessel('sat').spec.parts
           for m in p.modules if m.get('sensor_id')]
    assert len(ids) == 3
    for sensor in ids:
        assert re.fullmatch(r'(star_tracker|lidar_3d|camera)_[0-9a-f]{8}', sensor)
    again = [m.get('sensor_id') for p in load_scenario(str(path), seed=3).vessel('sat')
             .spec.parts for m in p.modules if m.get('sensor_id')]
    assert again == ids


def broken(tmp_path, mutate) -> str:
    data = yaml.safe_load(Path(load_scenario('orbit').path).read_text())
    mutate(data)
    path = tmp_path / 'broken.yaml'
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError) as info:
        load_scenario(str(path))
    message = str(info.value)
    assert message.startswith(str(path))
    return message


@pytest.mark.parametrize('mutate, key, what', [
    (lambda d: d['vessels'][0]['parts'][0].update(mass=-1), 'vessels[0].parts[0].mass',
     'must be > 0'),
    (lambda d: d['vessels'][0]['parts'][1].update(parent=7), 'vessels[0].parts[1].parent',
     'index of an earlier part'),
    (lambda d: d['vessels'][0]['orbit'].update(altitude='high'),
     'vessels[0].orbit.altitude', 'must be a number'),
    (lambda d: d['vessels'][0]['parts'][0].update(shape={'cone': [1, 2]}),
     'vessels[0].parts[0].shape.cone', 'must be box, cylinder or sphere'),
    (lambda d: d.update(active='nobody'), 'active', 'is not a vessel key'),
    (lambda d: d['vessels'][1].update(vessel_id='XYZ'), 'vessels[1].vessel_id',
     'does not match'),
    (lambda d: d['vessels'][0]['parts'][0].update(resources={'Unobtainium': [1, 1]}),
     'vessels[0].parts[0].resources.Unobtainium', 'unknown resource'),
    (lambda d: d['vessels'][0]['parts'][0].update(colour='red'),
     'vessels[0].parts[0].colour', 'unknown key'),
    (lambda d: d['vessels'][0]['parts'][8]['modules'][0].update(sensor_id='Bad Id'),
     'vessels[0].parts[8].modules[0].sensor_id', 'does not match'),
    (lambda d: d['vessels'][0]['parts'][2].update(persistent_id=1100001),
     'vessels[0].parts', 'persistent_id values must be unique'),
    (lambda d: d['vessels'][0].pop('orbit'), 'vessels[0]', 'needs exactly one of orbit'),
])
def test_errors_name_file_key_and_problem(tmp_path, mutate, key, what):
    message = broken(tmp_path, mutate)
    assert f': {key}: ' in message
    assert what in message


def _nav(**settings):
    """Return a mutation that puts a relative-navigation sensor on the sat's probe core."""
    return lambda d: d['vessels'][0]['parts'][0]['modules'].append(
        {'kind': 'relative_nav', 'index': 1, **settings})


@pytest.mark.parametrize('settings, key, what', [
    ({'max_range_m': 3000}, 'max_range_m', 'must be within (0, 2500]'),
    ({'max_range_m': 0}, 'max_range_m', 'must be within (0, 2500]'),
    ({'rate_hz': 25}, 'rate_hz', 'must be within [1, 20]'),
    ({'rate_hz': 0.5}, 'rate_hz', 'must be within [1, 20]'),
    ({'position_noise_m': -0.1}, 'position_noise_m', 'must be within [0, inf]'),
    ({'range_noise_fraction': 2}, 'range_noise_fraction', 'must be within [0, 1]'),
    ({'velocity_noise_mps': 'low'}, 'velocity_noise_mps', 'must be a finite number'),
    ({'electric_charge_rate': True}, 'electric_charge_rate', 'must be a finite number'),
    ({'max_range': 100}, 'max_range', 'unknown setting'),
    ({'sensor_id': 'Nav 1'}, 'sensor_id', 'does not match'),
])
def test_relative_nav_settings_are_checked_at_load(tmp_path, settings, key, what):
    message = broken(tmp_path, _nav(**settings))
    assert f': vessels[0].parts[0].modules[1].{key}: ' in message, message
    assert what in message, message


def test_relative_nav_defaults_and_generated_id(tmp_path):
    assert relative_nav.Settings.from_module({}) == relative_nav.Settings(
        max_range_m=2000.0, rate_hz=10.0, position_noise_m=0.05, range_noise_fraction=0.001,
        velocity_noise_mps=0.005, electric_charge_rate=0.05)
    data = yaml.safe_load(Path(load_scenario('orbit').path).read_text())
    _nav(rate_hz=20, max_range_m=2500)(data)
    path = tmp_path / 'nav.yaml'
    path.write_text(yaml.safe_dump(data))
    [module] = load_scenario(str(path)).vessel('sat').spec.parts[0].modules_of('relative_nav')
    assert re.fullmatch(r'relative_nav_[0-9a-f]{8}', module.get('sensor_id'))
    settings = relative_nav.Settings.from_module(module.settings)
    assert (settings.rate_hz, settings.max_range_m) == (20.0, 2500.0)


def test_unreadable_yaml_and_missing_files(tmp_path):
    path = tmp_path / 'bad.yaml'
    path.write_text('vessels: [unclosed')
    with pytest.raises(ScenarioError, match='not valid YAML'):
        load_scenario(str(path))
    with pytest.raises(ScenarioError, match='not found'):
        load_scenario('no_such_scenario')


def test_a_gimbal_group_with_different_ranges_is_refused(tmp_path):
    data = yaml.safe_load(Path(load_scenario('launchpad').path).read_text())
    modules = data['vessels'][0]['parts'][3]['modules']
    assert [m['gimbal_group'] for m in modules] == ['swivel', 'swivel']
    modules[1]['gimbal_range_deg'] = 5
    path = tmp_path / 'swivel.yaml'
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError) as info:
        load_scenario(str(path))
    message = str(info.value)
    assert ': vessels[0].parts[3].modules[1].gimbal_range_deg: ' in message
    assert '5.0 deg differs from the 3.0 deg of parts[3].modules[0].gimbal_range_deg' in message
    modules[1]['gimbal_range_deg'] = 3.0         # equal ranges (int or float) load
    path.write_text(yaml.safe_dump(data))
    assert load_scenario(str(path)).vessels[0].spec.parts[3].modules[1].get(
        'gimbal_range_deg') == 3.0
