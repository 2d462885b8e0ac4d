"""Static checks of the Foxglove layout that the README tells users to import.

Foxglove and Lichtblick cannot run here; what ``foxglove/pylon_layout.json`` names must at
least exist: every topic is one of the topic contract (a sensor's id one a shipped scenario
carries), every message path walks real fields of that topic's message type, every panel
setting is one the Foxglove SDK's layout schema (``foxglove.layouts``) knows, and the 3D
panel shows the scene from ``pylon_root`` as the RViz config does.

The kart's layout (``foxglove/kart_layout.json``, ``DEMO_SCENARIO=kart make demo``) is
held to the same rules, its sensors at the competition's names (``pylon_kart.sensing``: a
name there stands for the bridge's topic it is remapped from), its 3D panel in ``map``.
So is the race's (``foxglove/race_layout.json``, ``DEMO_SCENARIO=race make demo``): the
organisers' view in the management domain, every topic one of it.
"""

import importlib
import json
from pathlib import Path
import re

import foxglove.layouts as fl
from pylon_common import mission, topics
from pylon_kart import sensing
from pylon_kart.kart_limits import MAP
from pylon_protocol import frames
from pylon_tools.viewer import contract_row
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
LAYOUT_PATH = ROOT / 'foxglove' / 'pylon_layout.json'
LAYOUT = json.loads(LAYOUT_PATH.read_text(encoding='utf-8'))
PANELS = LAYOUT['configById']
CONTROLLER = ROOT / 'ws' / 'src' / 'pylon_vehicle_control' / 'pylon_vehicle_control' / \
    'controller_node.py'
MODIFIERS = {'degrees', 'radians', 'abs', 'negative'}
SEGMENT = re.compile(r'(?P<name>\w+)(?P<index>\[(\d+|:)\])?'
                     r'(?:\{(?P<field>\w+)==(?P<value>[^}]+)\})?')
"""One field of a message path: ``name``, ``name[0]``, ``name[:]{field=="value"}``."""
TITLE = 'foxglovePanelTitle'
KART_PATH = ROOT / 'foxglove' / 'kart_layout.json'
KART = json.loads(KART_PATH.read_text(encoding='utf-8'))
KART_PANELS = KART['configById']
COMPETITION = {target: source for source, target in sensing.remapping().items()}
"""The kart's sensors: the competition's name -> the bridge's own."""


def row_of(topic: str) -> topics.Topic | None:
    """Return the contract's row of a topic, a competition sensor name's of its source."""
    return contract_row(COMPETITION.get(topic, topic))


def _schema(kind: type) -> set[str]:
    """Return the settings a panel config of the SDK's layout schema may carry."""
    return set(kind()._to_dict()) | {TITLE}      # the SDK's own camelCase names


def _leaves(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    return _leaves(node['first']) + _leaves(node['second'])


def _paths(kind: str, panels: dict = PANELS) -> list[str]:
    return [series['value'] for panel_id, config in panels.items()
            if panel_id.startswith(f'{kind}!') for series in config['paths']]


def named_topics() -> set[str]:
    """Return every topic the layout names (panels, layers, message paths)."""
    three_d = PANELS['3D!pylon']
    found = set(three_d['topics'])
    found |= {layer['topic'] for layer in three_d['layers'].values() if 'topic' in layer}
    image = PANELS['Image!camera']['imageMode']
    found |= {image['imageTopic'], image['calibrationTopic']}
    found.add(PANELS['RawMessages!authority']['topicPath'])
    found |= {path.split('.', 1)[0] for path in _paths('Plot') + _paths('StateTransitions')}
    return found


def _message_class(type_name: str) -> type:
    package, *_, name = type_name.split('/')
    return getattr(importlib.import_module(f'{package}.msg'), name)


def _element(field_type: str) -> tuple[str, bool]:
    """Return (element type, is a sequence or array) of a rosidl field type."""
    match = re.fullmatch(r'sequence<([^,>]+)(?:, \d+)?>', field_type)
    if match:
        return match.group(1), True
    match = re.fullmatch(r'(.+)\[\d+\]', field_type)
    return (match.group(1), True) if match else (field_type, False)


def walk(path: str) -> str:
    """Return the type at the end of a message path; AssertionError where it does not exist."""
    topic, *segments = path.split('.')
    kind = row_of(topic).type
    for segment in segments:
        if segment.startswith('@'):
            assert segment[1:] in MODIFIERS, (path, segment)
            continue
        assert '/' in kind, f'{path}: {segment} below the primitive {kind}'
        fields = _message_class(kind).get_fields_and_field_types()
        match = SEGMENT.fullmatch(segment)
        assert match and match['name'] in fields, (path, segment, sorted(fields))
        kind, sequence = _element(fields[match['name']])
        assert bool(match['index'] or match['field']) == sequence, (path, segment)
        if match['field']:
            assert match['field'] in _message_class(kind).get_fields_and_field_types(), path
    return kind


def check_series_panels(panels: dict) -> None:
    """Check every Plot and StateTransitions panel of ``panels`` and each of its series."""
    kinds = {'Plot': (fl.PlotConfig, fl.PlotSeries),
             'StateTransitions': (fl.StateTransitionsConfig, fl.StateTransitionsSeries)}
    for panel_id, config in panels.items():
        if panel_id.split('!')[0] in kinds:
            panel, series = kinds[panel_id.split('!')[0]]
            assert set(config) <= _schema(panel), panel_id
            for entry in config['paths']:
                assert set(entry) <= _schema(series), (panel_id, entry)


def test_the_layout_is_a_tree_of_the_configured_panels():
    assert set(LAYOUT) == {'configById', 'globalVariables', 'userNodes', 'playbackConfig',
                           'layout'}
    assert sorted(_leaves(LAYOUT['layout'])) == sorted(PANELS)
    assert {panel_id.split('!')[0] for panel_id in PANELS} == {
        '3D', 'Image', 'Plot', 'StateTransitions', 'RawMessages'}


def test_every_setting_is_one_the_sdk_layout_schema_knows():
    three_d = PANELS['3D!pylon']
    assert set(three_d) <= _schema(fl.ThreeDeeConfig)
    assert set(three_d['scene']) <= _schema(fl.BaseRendererSceneSettings)
    assert set(three_d['scene']['transforms']) <= _schema(fl.BaseRendererTransforms)
    assert set(three_d['cameraState']) <= _schema(fl.ThreeDeeCameraState)
    settings = {'lidar_3d': fl.BaseRendererPointCloudTopicSettings,
                'lidar_2d': fl.BaseRendererLaserScanTopicSettings,
                'nearby_markers': fl.BaseRendererRosMarkerTopicSettings}
    for topic, config in three_d['topics'].items():
        assert set(config) <= _schema(settings[contract_row(topic).key]), topic
    layers = {'foxglove.Grid': fl.BaseRendererGridLayerSettings,
              'foxglove.Urdf': fl.BaseRendererUrdfLayerSettings}
    for layer_id, layer in three_d['layers'].items():
        assert layer['instanceId'] == layer_id
        assert set(layer) <= _schema(layers[layer['layerId']]), layer_id
    assert set(PANELS['Image!camera']) <= _schema(fl.ImageConfig)
    assert set(PANELS['Image!camera']['imageMode']) <= _schema(fl.ImageModeConfig)
    assert set(PANELS['RawMessages!authority']) <= _schema(fl.RawMessagesConfig)
    check_series_panels(PANELS)


def test_the_scene_is_seen_from_pylon_root_with_model_clouds_scan_and_markers():
    three_d = PANELS['3D!pylon']
    assert three_d['followTf'] == frames.ROOT_ALIAS == 'pylon_root'
    assert {contract_row(t).key for t in three_d['topics']} == {'lidar_3d', 'lidar_2d',
                                                                'nearby_markers'}
    (urdf,) = [layer for layer in three_d['layers'].values()
               if layer['layerId'] == 'foxglove.Urdf']
    assert (urdf['sourceType'], urdf['topic']) == ('topic', topics.name('robot_description'))
    image = PANELS['Image!camera']['imageMode']
    assert image['imageTopic'] == topics.name('camera', id='camera_front')
    assert image['calibrationTopic'] == topics.name('camera_info', id='camera_front')


def _scenario_sensor_ids() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in (ROOT / 'config' / 'scenarios').glob('*.yaml'):
        for vessel in yaml.safe_load(path.read_text(encoding='utf-8'))['vessels']:
            for part in vessel['parts']:
                for module in part.get('modules') or ():
                    if 'sensor_id' in module:
                        found.setdefault(module['kind'], set()).add(module['sensor_id'])
    return found


@pytest.mark.parametrize('topic', sorted(named_topics()))
def test_every_topic_is_in_the_contract_and_every_sensor_in_a_scenario(topic):
    row = contract_row(topic)
    assert row is not None, f'{topic} is no topic of the contract'
    if '{id}' in row.name:
        pattern = re.escape(row.default_name(id='{id}')).replace(r'\{id\}', '([^/]+)')
        sensor = re.fullmatch(pattern, topic).group(1)
        kind = row.key.removesuffix('_info')
        assert sensor in _scenario_sensor_ids()[kind], (topic, kind)


@pytest.mark.parametrize('path', _paths('Plot') + _paths('StateTransitions'))
def test_every_message_path_walks_real_fields_to_a_value(path):
    end = walk(path)
    assert '/' not in end, f'{path} ends at a message ({end}), not a value'


def test_plots_cover_attitude_rates_wrench_and_the_states():
    paths = _paths('Plot') + _paths('StateTransitions')
    odometry = topics.topic('odometry').default_name()
    feedback = topics.name('control/wrench_feedback')
    diagnostics = topics.resolved('controller/diagnostics', topics.SETPOINT_CONTROLLER)
    for axis in 'xyz':
        assert f'{odometry}.twist.twist.angular.{axis}.@degrees' in paths
        assert f'{feedback}.requested.torque.{axis}' in paths
        assert f'{feedback}.achieved.torque.{axis}' in paths
    assert f'{topics.name("lifecycle")}.state' in paths
    assert f'{topics.name("control/authority/state")}.state' in paths
    keys = {match['value'].strip('"') for path in paths if path.startswith(diagnostics)
            for match in [SEGMENT.search(path.split('.', 2)[2])] if match['value']}
    assert keys == {'attitude_error_deg', 'rate_limit_deg_s'}
    source = CONTROLLER.read_text(encoding='utf-8')
    for key in keys:                                # keys the controller's diagnostics carry
        assert f"'{key}':" in source, key


def test_the_readme_tells_how_to_import_it():
    readme = (ROOT / 'README.md').read_text(encoding='utf-8')
    assert 'foxglove/pylon_layout.json' in readme and 'Import from file' in readme


# -- the kart's layout ------------------------------------------------------------------------

def kart_topics() -> set[str]:
    """Return every topic the kart's layout names (panels, layers, message paths)."""
    three_d = KART_PANELS['3D!kart']
    found = set(three_d['topics'])
    found |= {layer['topic'] for layer in three_d['layers'].values() if 'topic' in layer}
    image = KART_PANELS['Image!camera']['imageMode']
    found |= {image['imageTopic'], image['calibrationTopic']}
    paths = _paths('Plot', KART_PANELS) + _paths('StateTransitions', KART_PANELS)
    return found | {path.split('.', 1)[0] for path in paths}


def test_the_kart_layout_is_a_tree_of_its_panels_each_known_to_the_sdk():
    assert set(KART) == set(LAYOUT)
    assert sorted(_leaves(KART['layout'])) == sorted(KART_PANELS)
    three_d = KART_PANELS['3D!kart']
    assert set(three_d) <= _schema(fl.ThreeDeeConfig)
    assert set(three_d['scene']) <= _schema(fl.BaseRendererSceneSettings)
    assert set(three_d['cameraState']) <= _schema(fl.ThreeDeeCameraState)
    settings = {'lidar_2d': fl.BaseRendererLaserScanTopicSettings,
                'stack/course_markers': fl.BaseRendererRosMarkerTopicSettings,
                'stack/trajectory_path': fl.BaseRendererPosesTopicSettings}
    for topic, config in three_d['topics'].items():
        assert set(config) <= _schema(settings[row_of(topic).key]), topic
    layers = {'foxglove.Grid': fl.BaseRendererGridLayerSettings,
              'foxglove.Urdf': fl.BaseRendererUrdfLayerSettings}
    for layer_id, layer in three_d['layers'].items():
        assert layer['instanceId'] == layer_id
        assert set(layer) <= _schema(layers[layer['layerId']]), layer_id
    assert set(KART_PANELS['Image!camera']['imageMode']) <= _schema(fl.ImageModeConfig)
    check_series_panels(KART_PANELS)


def test_the_kart_scene_is_the_course_in_map_with_the_kart_path_and_scan():
    three_d = KART_PANELS['3D!kart']
    assert three_d['followTf'] == MAP == 'map'
    assert {row_of(t).key for t in three_d['topics']} == {
        'lidar_2d', 'stack/course_markers', 'stack/trajectory_path'}
    assert topics.name('stack/course_markers') in three_d['topics']
    assert topics.name('stack/trajectory_path') in three_d['topics']
    assert '/sensing/lidar/scan' in three_d['topics']
    (urdf,) = [layer for layer in three_d['layers'].values()
               if layer['layerId'] == 'foxglove.Urdf']
    assert (urdf['sourceType'], urdf['topic']) == ('topic', topics.name('robot_description'))
    (grid,) = [layer for layer in three_d['layers'].values()
               if layer['layerId'] == 'foxglove.Grid']
    assert grid['frameId'] == MAP
    paths = _paths('Plot', KART_PANELS) + _paths('StateTransitions', KART_PANELS)
    assert f'{topics.name("kart/control_mode")}.mode' in paths
    assert f'{topics.name("stack/kinematic_state")}.twist.twist.linear.x' in paths


@pytest.mark.parametrize('topic', sorted(kart_topics()))
def test_every_kart_topic_is_in_the_contract_or_the_sensing_table(topic):
    row = row_of(topic)
    assert row is not None, f'{topic} is no topic of the contract nor a kart sensor'
    if '{id}' in row.name:
        pattern = re.escape(row.default_name(id='{id}')).replace(r'\{id\}', '([^/]+)')
        sensor = re.fullmatch(pattern, COMPETITION[topic]).group(1)
        assert sensor in _scenario_sensor_ids()[row.key.removesuffix('_info')], topic


@pytest.mark.parametrize('path', _paths('Plot', KART_PANELS) + _paths('StateTransitions',
                                                                        KART_PANELS))
def test_every_kart_message_path_walks_real_fields_to_a_value(path):
    end = walk(path)
    assert '/' not in end, f'{path} ends at a message ({end}), not a value'


def test_the_readme_tells_how_to_import_the_kart_layout():
    readme = (ROOT / 'README.md').read_text(encoding='utf-8')
    assert 'foxglove/kart_layout.json' in readme


# -- the race's layout (the organisers' view, management domain) ------------------------------

RACE_PATH = ROOT / 'foxglove' / 'race_layout.json'
RACE = json.loads(RACE_PATH.read_text(encoding='utf-8'))
RACE_PANELS = RACE['configById']
RACE_KARTS = 4
"""The karts the layout plots (the shipped race's; a race of fewer leaves the rest empty)."""


def race_topics() -> set[str]:
    """Return every topic the race's layout names (panels, layers, message paths)."""
    found = set(RACE_PANELS['3D!race']['topics'])
    found.add(RACE_PANELS['RawMessages!ranking']['topicPath'])
    paths = _paths('Plot', RACE_PANELS) + _paths('StateTransitions', RACE_PANELS)
    return found | {path.split('.', 1)[0] for path in paths}


def test_the_race_layout_is_a_tree_of_its_panels_each_known_to_the_sdk():
    assert set(RACE) == set(LAYOUT)
    assert sorted(_leaves(RACE['layout'])) == sorted(RACE_PANELS)
    three_d = RACE_PANELS['3D!race']
    assert set(three_d) <= _schema(fl.ThreeDeeConfig)
    assert set(three_d['scene']) <= _schema(fl.BaseRendererSceneSettings)
    assert set(three_d['cameraState']) <= _schema(fl.ThreeDeeCameraState)
    for topic, config in three_d['topics'].items():
        assert set(config) <= _schema(fl.BaseRendererRosMarkerTopicSettings), topic
    for layer_id, layer in three_d['layers'].items():
        assert layer['instanceId'] == layer_id and layer['layerId'] == 'foxglove.Grid'
        assert set(layer) <= _schema(fl.BaseRendererGridLayerSettings), layer_id
    assert set(RACE_PANELS['RawMessages!ranking']) <= _schema(fl.RawMessagesConfig)
    check_series_panels(RACE_PANELS)


def test_the_race_scene_is_the_course_and_the_karts_in_map_with_the_ranking():
    three_d = RACE_PANELS['3D!race']
    assert three_d['followTf'] == MAP == 'map'
    assert {row_of(t).key for t in three_d['topics']} == {'race/course_markers',
                                                          'race/kart_markers'}
    (grid,) = three_d['layers'].values()
    assert grid['frameId'] == MAP
    assert RACE_PANELS['RawMessages!ranking']['topicPath'] == topics.name('admin/ranking')
    paths = _paths('Plot', RACE_PANELS) + _paths('StateTransitions', RACE_PANELS)
    index = mission.STATUS_INDEX
    for k in range(1, RACE_KARTS + 1):
        status = topics.name('admin/vehicle_status', id=str(k))
        assert f'{status}.data[{index["lapCount"]}]' in paths
        assert f'{status}.data[{index["thisLapTime"]}]' in paths
        assert f'{topics.name("admin/vehicle_state", id=str(k))}.data' in paths
    assert f'{topics.name("admin/state")}.data' in paths


@pytest.mark.parametrize('topic', sorted(race_topics()))
def test_every_race_topic_is_in_the_management_domain_contract(topic):
    row = contract_row(topic)
    assert row is not None, f'{topic} is no topic of the contract'
    assert row.key.startswith(('admin/', 'race/')), (topic, row.key)   # domain 0's
    if '{id}' in row.name:                                # a vehicle number of the race
        pattern = re.escape(row.default_name(id='{id}')).replace(r'\{id\}', '([^/]+)')
        assert 1 <= int(re.fullmatch(pattern, topic).group(1)) <= RACE_KARTS, topic


@pytest.mark.parametrize('path', _paths('Plot', RACE_PANELS) + _paths('StateTransitions',
                                                                        RACE_PANELS))
def test_every_race_message_path_walks_real_fields_to_a_value(path):
    end = walk(path)
    assert '/' not in end, f'{path} ends at a message ({end}), not a value'


def test_the_readme_tells_how_to_import_the_race_layout():
    readme = (ROOT / 'README.md').read_text(encoding='utf-8')
    assert 'foxglove/race_layout.json' in readme
