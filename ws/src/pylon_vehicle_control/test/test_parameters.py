"""The parameter table and config/setpoint_controller.yaml agree."""

from pathlib import Path

from pylon_vehicle_control import parameters
from pylon_vehicle_control.control_law import ControlParams
import pytest
import yaml

YAML = Path(__file__).resolve().parents[4] / 'config' / 'setpoint_controller.yaml'


def test_yaml_lists_every_parameter_with_its_default():
    data = yaml.safe_load(YAML.read_text(encoding='utf-8'))
    values = data['setpoint_controller']['ros__parameters']
    assert list(values) == list(parameters.PARAMETER_NAMES)
    for row in parameters.PARAMETERS:
        value = values[row.name]
        assert type(value) is type(row.default), row.name
        assert value == row.default, row.name


def test_table_rows_are_complete_and_in_range():
    names = parameters.PARAMETER_NAMES
    assert len(set(names)) == len(names)
    for row in parameters.PARAMETERS:
        assert row.description.strip()
        assert row.scope in ('node', 'control')
        assert parameters.check_value(row.name, row.default) == row.default
        if row.minimum is not None and row.maximum is not None:
            assert row.minimum <= row.maximum


def test_node_level_parameters_are_listed():
    d = parameters.defaults('node')
    assert d == {
        'controller_id': 'setpoint_controller',
        'setpoint_topic': '/setpoint_controller/setpoint',
        'priority': 0, 'lease_duration_sec': 1.0, 'suppress_sas': True,
        'command_period_sec': 0.05, 'wrench_timeout_sec': 0.5,
        'setpoint_timeout_sec': 1.0, 'input_timeout_sec': 0.5, 'state_topic': '',
        'imu_topic': '/ksp_vessel/imu/data_raw',
    }
    assert parameters.param('attitude_hold_rate_limit_deg_s').default == 1.5


def test_control_params_cover_the_control_rows():
    control = set(parameters.defaults('control'))
    assert control == set(ControlParams.__dataclass_fields__)
    params = ControlParams.from_values({'rate_gain': 2, 'controller_id': 'x'})
    assert params.rate_gain == 2.0


@pytest.mark.parametrize(('name', 'value'), [
    ('rate_gain', -1.0), ('max_torque_nm', 1e6), ('suppress_sas', 1), ('priority', 1.5),
    ('controller_id', 3), ('attitude_gain', float('nan')), ('max_force_n', True),
    ('no_such_parameter', 1.0),
])
def test_bad_values_are_refused(name, value):
    with pytest.raises(ValueError):
        parameters.check_value(name, value)


def test_the_readme_documents_every_parameter():
    from pathlib import Path

    from pylon_vehicle_control import estimator
    readme = (Path(__file__).resolve().parents[1] / 'README.md').read_text(encoding='utf-8')
    for row in (*parameters.PARAMETERS, *estimator.PARAMETERS):
        assert f'| `{row.name}` | `{row.default!r}` |' in readme, row.name
