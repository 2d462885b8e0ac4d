"""The controller's and the evaluator's parameter tables, the YAML, and the README."""

from pathlib import Path
import subprocess
import sys

from pylon_common.parameters import checked, file_section
from pylon_vehicle_control import controller_params, evaluator_node
from pylon_vehicle_control.control_law import ControlParams
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[4]
YAML = ROOT / 'config' / 'setpoint_controller.yaml'


def test_yaml_lists_every_parameter_with_its_default():
    data = yaml.safe_load(YAML.read_text(encoding='utf-8'))
    values = data[file_section('setpoint_controller')]['ros__parameters']
    assert list(values) == list(controller_params.PARAMETER_NAMES)
    for row in controller_params.PARAMETERS:
        value = values[row.name]
        assert type(value) is type(row.default), row.name
        assert value == row.default, row.name


@pytest.mark.parametrize('rows', [controller_params.PARAMETERS, evaluator_node.PARAMETERS],
                         ids=['controller', 'evaluator'])
def test_table_rows_are_complete_and_in_range(rows):
    names = [row.name for row in rows]
    assert len(set(names)) == len(names)
    for row in rows:
        assert row.description.strip() and row.read_only
        assert checked(row, row.default) == row.default
        if row.minimum is not None and row.maximum is not None:
            assert row.minimum <= row.maximum


def test_the_node_rows_and_the_law_rows_are_apart():
    node = {row.name: row.default for row in controller_params.NODE_PARAMETERS}
    assert node == {
        'controller_id': 'setpoint_controller', 'priority': 0, 'lease_duration_sec': 1.0,
        'suppress_sas': True, 'command_period_sec': 0.05, 'wrench_timeout_sec': 0.5,
        'setpoint_timeout_sec': 1.0, 'input_timeout_sec': 0.5, 'state_max_age_sec': 0.25,
        'diagnostics_period_sec': 1.0,
        'topic_prefix': '/ksp_vessel', 'setpoint_topic': '~/setpoint',
    }
    law = {row.name for row in controller_params.LAW_PARAMETERS}
    assert law == set(ControlParams.__dataclass_fields__)
    params = ControlParams.from_values({'rate_gain': 2, 'controller_id': 'x'})
    assert params.rate_gain == 2.0 and params.attitude_hold_rate_limit_deg_s == 1.5


@pytest.mark.parametrize(('name', 'value'), [
    ('rate_gain', -1.0), ('max_torque_nm', 1e6), ('suppress_sas', 1), ('priority', 1.5),
    ('controller_id', 3), ('attitude_gain', float('nan')), ('max_force_n', True),
])
def test_bad_values_are_refused(name, value):
    row = next(r for r in controller_params.PARAMETERS if r.name == name)
    with pytest.raises(ValueError, match=name):
        checked(row, value)


def test_the_retired_parameters_say_what_replaced_them():
    retired = {r.name: r.instead for r in controller_params.RETIRED}
    assert set(retired) == {'state_topic', 'imu_topic'}
    assert not set(retired) & set(controller_params.PARAMETER_NAMES)
    assert 'remap' in retired['state_topic']


def test_the_readme_tables_are_generated_from_the_code():
    result = subprocess.run([sys.executable, str(ROOT / 'ci' / 'docs.py')],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    readme = (ROOT / 'ws' / 'src' / 'pylon_vehicle_control' / 'README.md').read_text()
    assert '| `star_tracker_id` | string | `star_tracker_main` |' in readme
