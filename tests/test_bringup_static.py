"""Static checks of the Docker, launch and RViz bringup.

What cannot run here (no Docker engine, no ``launch`` package, no rviz2) must at least
parse and reference real files, components, parameters and topics.
"""

import ast
import json
import os
from pathlib import Path
import re
import socket
import subprocess
import sys

from pylon_common.parameters import file_section
from pylon_testing.plan import load_components
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
LAUNCH = ROOT / 'launch' / 'pylon.launch.py'


pc = load_components(ROOT)
COMPOSE = yaml.safe_load((ROOT / 'compose.yaml').read_text())
SERVICES = COMPOSE['services']


def _dockerfile_instructions() -> list[tuple[str, str]]:
    text = (ROOT / 'docker' / 'Dockerfile').read_text().replace('\\\n', ' ')
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1])
            for line in text.splitlines() if line.strip() and not line.lstrip().startswith('#')]


def _stages() -> list[str]:
    return [m.group(1) for op, args in _dockerfile_instructions() if op == 'FROM'
            for m in [re.search(r'\bAS\s+(\S+)', args, re.IGNORECASE)] if m]


def _stage_runs() -> dict[str, str]:
    """Return every stage's RUN commands, with those of the stages it is built on."""
    runs: dict[str, str] = {}
    stage = ''
    for op, args in _dockerfile_instructions():
        if op == 'FROM':
            image, *_, stage = args.split()
            runs[stage] = runs.get(image, '')
        elif op == 'RUN':
            runs[stage] += args + '\n'
    return runs


def _launch_args(command: list[str]) -> dict[str, str]:
    return dict(a.split(':=', 1) for a in command if ':=' in a)


# -- components ---------------------------------------------------------------------------

def test_component_table_is_complete():
    assert list(pc.COMPONENTS) == ['sim', 'bridge', 'rsp', 'controller', 'estimator',
                                   'markers', 'kart', 'kart_stack', 'rviz', 'foxglove_bridge',
                                   'viewer', 'record']
    # the viewers are chosen by name, the recorder when a recording is asked for (record:=)
    assert pc.DEFAULT_COMPONENTS == ('sim', 'bridge', 'rsp', 'controller', 'estimator',
                                     'markers', 'kart', 'kart_stack')
    # the scenario decides between the spacecraft's control and the kart's
    assert pc.effective(pc.DEFAULT_COMPONENTS, False) == (
        'sim', 'bridge', 'rsp', 'controller', 'estimator', 'markers')
    assert pc.effective(pc.DEFAULT_COMPONENTS, False, 'kart') == (
        'sim', 'bridge', 'rsp', 'kart', 'kart_stack')
    assert pc.select('all') == tuple(pc.COMPONENTS)
    assert pc.select('rviz,bridge') == ('bridge', 'rviz')
    with pytest.raises(ValueError, match='unknown component'):
        pc.select('bridge,gazebo')
    assert pc.effective(pc.select('all'), use_real_ksp=True)[0] == 'bridge'


def test_every_base_parameter_file_exists_or_is_being_written():
    pending = {'config/setpoint_controller.yaml', 'config/attitude_estimator.yaml'}
    for comp in pc.COMPONENTS.values():
        for name in comp.base_parameter_files:
            if name in pending and not (ROOT / name).exists():
                continue  # written with the controller/estimator nodes (same issue)
            assert (ROOT / name).is_file(), name
            data = yaml.safe_load((ROOT / name).read_text())
            # keyed for every namespace (pylon_common.parameters.ANY_NAMESPACE)
            assert set(data) <= {file_section(n) for n in comp.node_names} | {'/**'}, name
            for section in data.values():
                assert 'ros__parameters' in section, name


def test_bridge_base_file_uses_real_options_and_the_simulator_ports():
    from pylon_bridge import config
    params = pc.overlay_parameters(ROOT / 'config' / 'pylon_bridge.yaml')['udp_bridge']
    names = {o.name for o in config.OPTIONS}
    assert set(params) <= names
    for key in ('publish_proxy_static_tf', 'disable_ground_truth', 'host', 'port',
                'command_host', 'command_port'):
        assert key in params, key
    sim = pc.sim_arguments()
    assert params['port'] == pc.STATE_PORT == int(sim[sim.index('--state-port') + 1])
    assert params['command_port'] == pc.COMMAND_PORT == int(
        sim[sim.index('--command-port') + 1])
    assert params['host'] == sim[sim.index('--state-host') + 1]


def test_simulator_arguments_are_its_real_flags():
    from pylon_sim.loop import main
    source = Path(main.__file__).read_text()
    for flag in [a for a in pc.sim_arguments() if a.startswith('--')]:
        assert f"'{flag}'" in source, flag
    assert pc.CONTROL_SAFETY.is_file()
    for scenario in pc.SCENARIOS:
        assert (ROOT / 'config' / 'scenarios' / f'{scenario}.yaml').is_file()


def test_parameter_files_layer_overlays_in_order_and_only_where_they_apply():
    files = pc.parameter_files('bridge', ['remote_ksp', 'fast_slew', 'no_ground_truth'])
    assert [f.name for f in files] == ['pylon_bridge.yaml', 'remote_ksp.yaml',
                                       'no_ground_truth.yaml']
    controller = pc.parameter_files('controller', ['no_ground_truth', 'fast_slew'])
    assert [f.name for f in controller] == ['setpoint_controller.yaml', 'fast_slew.yaml']
    assert pc.parameter_files('sim', ['no_ground_truth']) == []
    with pytest.raises(FileNotFoundError):
        pc.parameter_files('bridge', ['no_such_overlay'])


def test_bridge_static_tf_is_off_exactly_when_rsp_runs():
    assert pc.bridge_parameters(('sim', 'bridge'))['publish_proxy_static_tf'] is True
    assert pc.bridge_parameters(('bridge', 'rsp'))['publish_proxy_static_tf'] is False
    assert 'disable_ground_truth' not in pc.bridge_parameters(('bridge',))
    real = pc.bridge_parameters(('bridge',), use_real_ksp=True, ksp_host='10.0.0.5')
    assert real['host'] == '0.0.0.0' and real['command_host'] == '10.0.0.5'


OVERLAYS = sorted((ROOT / 'config' / 'overlays').glob('*.yaml'))


@pytest.mark.parametrize('overlay', OVERLAYS, ids=lambda p: p.stem)
def test_overlay_keys_are_parameters_of_their_base(overlay):
    from pylon_bridge import config
    bridge = {o.name for o in config.OPTIONS}
    nodes = {n: c for c in pc.COMPONENTS.values() for n in c.node_names}
    keys = set(yaml.safe_load(overlay.read_text()))
    assert keys <= {file_section(n) for n in nodes} | {'/**'}, (overlay.name, keys)
    for node, params in pc.overlay_parameters(overlay).items():
        assert node in nodes, f'{overlay.name}: no component runs a node {node!r}'
        if node == 'udp_bridge':
            known = bridge
        else:
            proc = next(p for p in nodes[node].processes if p.node == node)
            if not proc.parameter_files:
                pytest.fail(f'{overlay.name}: {node} has no base parameter file to overlay')
            base = ROOT / proc.parameter_files[0]
            assert base.is_file(), (f'{overlay.name} overlays {node}, whose base parameter '
                                    f'file {proc.parameter_files[0]} is missing')
            known = set(pc.overlay_parameters(base).get(node, {}))
        assert set(params) <= known, (overlay.name, set(params) - known)


def test_overlay_readme_lists_every_overlay():
    readme = (ROOT / 'config' / 'overlays' / 'README.md').read_text()
    for overlay in OVERLAYS:
        assert f'`{overlay.name}`' in readme, overlay.name


# -- launch file --------------------------------------------------------------------------

def test_launch_file_parses_and_uses_the_component_table():
    tree = ast.parse(LAUNCH.read_text())
    imports = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert 'pylon_components' in imports
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert 'generate_launch_description' in functions
    arguments = next(n for n in tree.body if isinstance(n, ast.Assign)
                     and getattr(n.targets[0], 'id', '') == 'ARGUMENTS')
    names = {elt.elts[0].value for elt in arguments.value.elts}
    assert {'components', 'scenario', 'disable_ground_truth', 'overlays',
            'use_real_ksp'} <= names
    source = LAUNCH.read_text()
    for use in ('pc.plan', 'pc.select', 'pc.parse_bool'):
        assert use in source, use


def test_launch_module_is_plain_python():
    source = (ROOT / 'launch' / 'pylon_components.py').read_text()
    assert not re.search(r'^\s*(from|import) launch', source, re.MULTILINE)


def test_rviz_component_opens_the_workspace_config():
    (rviz,) = pc.COMPONENTS['rviz'].processes
    assert rviz.arguments == ('-d', str(ROOT / 'rviz' / 'pylon.rviz'))
    assert (ROOT / 'rviz' / 'pylon.rviz').is_file()


# -- Dockerfile ---------------------------------------------------------------------------

def test_dockerfile_stages_build_on_the_official_image():
    # hadolint checks the syntax and that COPY --from names a stage; the COPY sources are
    # checked in tests/static/test_layout.py
    stages = _stages()
    assert stages == ['base', 'build', 'runtime', 'desktop', 'dev']
    for op, args in _dockerfile_instructions():
        if op == 'FROM':
            image = args.split()[0]
            assert image.startswith('ros:${ROS_DISTRO}') or image in stages, image
    text = (ROOT / 'docker' / 'Dockerfile').read_text()
    # every stage runs as the non-root user pylon, uid 1000 unless built otherwise
    assert 'ARG USER_UID=1000' in text and 'USER ${USER_UID}:${USER_GID}' in text
    assert 'rosdep install' in text
    assert 'ros-${ROS_DISTRO}-rviz2' in text and 'novnc' in text
    for copied in ('config', 'launch', 'rviz'):
        assert f'COPY {copied} {copied}' in text


def test_dockerfile_paths_match_the_components_module():
    text = (ROOT / 'docker' / 'Dockerfile').read_text()
    assert 'PYLON_WORKSPACE_ROOT=/ws' in text
    assert '/ws/launch/pylon.launch.py' in text


# -- compose ------------------------------------------------------------------------------

def test_compose_services():
    expected = {'sim', 'bridge', 'robot_state_publisher', 'controller', 'estimator', 'rviz',
                'foxglove', 'rviz-x11', 'record', 'mission', 'kart', 'race'}
    assert set(SERVICES) == expected
    default = {n for n, s in SERVICES.items() if not s.get('profiles')}
    assert default == expected - {'rviz-x11', 'record', 'mission', 'kart', 'race'}
    assert SERVICES['kart']['profiles'] == ['kart']
    assert SERVICES['race']['profiles'] == ['race']
    assert SERVICES['rviz-x11']['profiles'] == ['x11']
    assert SERVICES['record']['profiles'] == ['record']
    assert SERVICES['mission']['profiles'] == ['mission']


def test_compose_mission_runs_a_mission_in_its_domains():
    service = SERVICES['mission']
    args = _launch_args(service['command'])
    assert args['vehicles'] == '${PYLON_VEHICLES:-2}'
    assert args['domain_base'] == '${PYLON_DOMAIN_BASE:-0}'
    # the container's own domain (its health check's) is the management domain
    assert service['environment']['ROS_DOMAIN_ID'] == '${PYLON_DOMAIN_BASE:-0}'
    assert service['environment']['PYLON_HEALTH_NODE'] == '/sim_manager'
    for vehicles, scenario in pc.MISSION_SCENARIOS.items():
        assert (ROOT / 'config' / 'scenarios' / f'{scenario}.yaml').is_file()
        assert len(pc.vehicle_facts(scenario, vehicles)) == vehicles


@pytest.mark.parametrize('name', sorted(SERVICES))
def test_compose_service_builds_and_runs_the_launch_file(name):
    service = SERVICES[name]
    build = service['build']
    context = ROOT / build['context']
    assert context.is_dir()
    assert (context / build['dockerfile']).is_file()
    assert build['target'] in _stages()
    assert service['network_mode'] == 'host' and service['ipc'] == 'host'
    assert 'ports' not in service, 'host networking: published ports are ignored'
    for volume in service.get('volumes', []):
        # the X server's socket (rviz-x11) and the recordings folder (record), nothing else
        source = volume['source'] if isinstance(volume, dict) else volume.split(':')[0]
        assert source in ('/tmp/.X11-unix', './recordings'), source
    assert service.get('healthcheck', {}).get('test'), 'every service has a healthcheck'
    command = service['command']
    if name == 'record':    # ros2 bag record itself, checked below
        assert command[:2] == ['bash', '-c'] and 'exec ros2 bag record' in command[2]
        return
    assert command[:3] == ['ros2', 'launch', '/ws/launch/pylon.launch.py']
    args = _launch_args(command)
    selected = pc.select(args.get('components', ''))
    assert set(pc.split_list(args.get('components', ''))) <= set(pc.COMPONENTS)
    if 'rviz' in selected:
        assert build['target'] in ('desktop', 'dev')
    if 'overlays' in args:
        assert args['overlays'] == '${PYLON_OVERLAYS:-}'


WORKSPACE_PACKAGES = {p.parent.name for p in (ROOT / 'ws' / 'src').glob('*/package.xml')}


@pytest.mark.parametrize('name', sorted(n for n, s in SERVICES.items()
                                        if 'components' in _launch_args(s['command'])))
def test_compose_service_image_installs_what_its_components_run(name):
    # a package outside ws/src (robot_state_publisher, rviz2, foxglove_bridge) is not in the
    # native environment: the stage the service runs installs it from apt
    service = SERVICES[name]
    installed = _stage_runs()[service['build']['target']]
    for component in pc.select(_launch_args(service['command'])['components']):
        for proc in pc.COMPONENTS[component].processes:
            if proc.package not in WORKSPACE_PACKAGES:
                package = proc.package.replace('_', '-')
                apt = f'"ros-${{ROS_DISTRO}}-{package}"'
                assert apt in installed, (component, apt, service['build']['target'])


def test_compose_runs_every_component_once_with_consistent_static_tf():
    started = [c for s in SERVICES.values() if not s.get('profiles')
               and 'components' in _launch_args(s['command'])
               for c in pc.select(_launch_args(s['command'])['components'])]
    # the live view is the native path's (make demo); Docker users have RViz. The recorder
    # runs where a recording is asked for (record:=PATH), not as a service
    # the kart's run in the kart profile's service
    assert sorted(started) == sorted(c for c in pc.COMPONENTS
                                     if c not in ('viewer', pc.RECORD.name, *pc.KART_COMPONENTS))
    bridge = _launch_args(SERVICES['bridge']['command'])
    assert 'rsp' in bridge['external_components']  # rsp runs in its own service
    assert 'use_real_ksp' in _launch_args(SERVICES['sim']['command'])


def test_compose_kart_runs_the_kart_plan_and_rviz_follows_the_scenario():
    args = _launch_args(SERVICES['kart']['command'])
    assert args['scenario'] == 'kart' and args['sim_rate'] == '${PYLON_SIM_RATE:-1.0}'
    selected = pc.effective(pc.select(args['components']), False, args['scenario'])
    assert selected == ('sim', 'bridge', 'rsp', 'kart', 'kart_stack')
    nodes = {p.node for p in pc.plan(args['components'], scenario='kart')}
    assert SERVICES['kart']['environment']['PYLON_HEALTH_NODE'].lstrip('/') in nodes
    for name in ('rviz', 'rviz-x11'):
        assert _launch_args(SERVICES[name]['command'])['scenario'] == \
            '${PYLON_SCENARIO:-orbit}', name
    (rviz,) = pc.plan('rviz', scenario='kart')
    assert rviz.arguments == ('-d', str(ROOT / 'rviz' / 'kart.rviz'))


def test_compose_race_runs_the_race_in_its_domains():
    service = SERVICES['race']
    args = _launch_args(service['command'])
    assert args['scenario'] == pc.RACE_SCENARIO == 'race'
    assert args['vehicles'] == '${PYLON_VEHICLES:-4}'
    assert args['domain_base'] == '${PYLON_DOMAIN_BASE:-0}'
    assert args['start_mode'] == '${PYLON_START_MODE:-count}'
    assert {'race_laps', 'race_time_limit_sec', 'overlays', 'sim_rate'} <= set(args)
    # the container's own domain (its health check's) is the management domain, where the
    # organisers' view runs (and the foxglove service serves it, domain 0 by default)
    assert service['environment']['ROS_DOMAIN_ID'] == '${PYLON_DOMAIN_BASE:-0}'
    nodes = {p.node for p in pc.mission_plan(4, scenario='race') if p.domain == 0}
    assert service['environment']['PYLON_HEALTH_NODE'].lstrip('/') in nodes
    assert SERVICES['foxglove']['environment']['ROS_DOMAIN_ID'] == '${ROS_DOMAIN_ID:-0}'


def test_web_vnc_is_on_localhost_6080():
    rviz = SERVICES['rviz']
    assert rviz['environment']['PYLON_WEB_VNC'] == '1'
    assert rviz['environment']['PYLON_VNC_PORT'] == '${PYLON_VNC_PORT:-6080}'
    entrypoint = (ROOT / 'docker' / 'entrypoint.sh').read_text()
    assert '"127.0.0.1:${PYLON_VNC_PORT:-6080}"' in entrypoint
    assert '-localhost' in entrypoint


def test_foxglove_bridge_serves_localhost_8765():
    service = SERVICES['foxglove']
    assert _launch_args(service['command']) == {'components': 'foxglove_bridge'}
    assert service['build']['target'] == 'runtime'
    (bridge,) = pc.COMPONENTS['foxglove_bridge'].processes
    assert (bridge.package, bridge.executable) == ('foxglove_bridge', 'foxglove_bridge')
    assert dict(bridge.parameters) == {'address': '127.0.0.1', 'port': 8765}


def _run_healthcheck(service: str, port: int) -> subprocess.CompletedProcess:
    """Run a service's Python healthcheck here, against ``port`` on localhost."""
    test = SERVICES[service]['healthcheck']['test']
    assert test[:3] == ['CMD', 'python3', '-c']
    address = f"('{pc.LOOPBACK}', {pc.FOXGLOVE_PORT})"
    assert address in test[3]
    code = test[3].replace(address, f"('{pc.LOOPBACK}', {port})")
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=60)


def test_foxglove_healthcheck_completes_a_foxglove_websocket_handshake():
    import foxglove  # the Foxglove SDK's server speaks the protocol foxglove_bridge does
    server = foxglove.start_server(host=pc.LOOPBACK, port=0)
    try:
        result = _run_healthcheck('foxglove', server.port)
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    with socket.socket() as unused:    # a port held but not listening: refused
        unused.bind((pc.LOOPBACK, 0))
        assert _run_healthcheck('foxglove', unused.getsockname()[1]).returncode == 1


def test_compose_record_writes_mcap_into_the_mounted_folder():
    service = SERVICES['record']
    assert service['build']['target'] == 'runtime'
    installed = _stage_runs()['runtime']
    for package in ('rosbag2', 'rosbag2-storage-mcap'):
        assert f'"ros-${{ROS_DISTRO}}-{package}"' in installed, package
    assert '--storage mcap' in service['command'][2]
    (volume,) = service['volumes']
    assert (volume['type'], volume['source'], volume['target']) == (
        'bind', './recordings', '/recordings')
    # a missing folder stops compose; docker would create it owned by root, unwritable
    assert volume['bind']['create_host_path'] is False
    assert service['working_dir'] == '/recordings'    # rosbag2_<date>-<time>/ lands there
    assert service['environment']['PYLON_HEALTH_NODE'] == '/rosbag2_recorder'
    assert service['stop_signal'] == 'SIGINT'     # the recorder closes the file as on Ctrl-C
    for ignored in ('.gitignore', '.dockerignore'):   # neither committed nor sent to build
        assert re.search(r'^/?recordings/?$', (ROOT / ignored).read_text(), re.M), ignored


@pytest.mark.parametrize(('topics', 'selection'), [
    ('', ['--all-topics']),
    ('/tf /ksp_vessel/imu', ['--topics', '/tf', '/ksp_vessel/imu']),
])
def test_compose_record_takes_every_topic_or_the_listed_ones(tmp_path, topics, selection):
    command = SERVICES['record']['command']
    assert command[:2] == ['bash', '-c']
    # compose turns $$ into $ and has nothing else to substitute in the script
    assert '$' not in command[2].replace('$$', '')
    ros2 = tmp_path / 'ros2'    # prints the arguments it was given, one a line
    ros2.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    ros2.chmod(0o755)
    env = {**os.environ, 'PATH': f'{tmp_path}:{os.environ["PATH"]}',
           'PYLON_RECORD_TOPICS': topics}
    result = subprocess.run(['bash', '-c', command[2].replace('$$', '$')], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ['bag', 'record', '--storage', 'mcap', *selection]


# -- RViz ---------------------------------------------------------------------------------

def _rviz_displays(name: str = 'pylon.rviz'):
    config = yaml.safe_load((ROOT / 'rviz' / name).read_text())
    return config, config['Visualization Manager']['Displays']


def _topic(display) -> str | None:
    for key in ('Topic', 'Description Topic'):
        if isinstance(display.get(key), dict):
            return display[key]['Value']
    return None


def _published_topics() -> dict:
    """Return ``{topic name: contract row}`` of every topic published with default options."""
    from pylon_bridge import config
    from pylon_common import topics
    ids = set()
    for scenario in (ROOT / 'config' / 'scenarios').glob('*.yaml'):
        ids |= set(re.findall(r'sensor_id:\s*([\w-]+)', scenario.read_text()))
    defaults = config.defaults()
    published = {}
    for row in topics.BRIDGE_TOPICS:
        if row.direction != topics.PUBLISHES:
            continue
        if '{id}' in row.name:
            published.update({defaults.topic(row.key, id=i): row for i in ids})
        else:
            published[defaults.topic(row.key)] = row
    published[topics.topic('nearby_markers').default_name()] = topics.topic('nearby_markers')
    return published


def _check_displays(displays, published: dict) -> dict:
    """Check every display's topic is published and its QoS receives it; return by class."""
    from pylon_common import qos
    classes = {}
    for display in displays:
        classes[display['Class']] = display
        topic = _topic(display)
        if topic is None:
            continue
        assert topic in published, topic
        setting = display.get('Topic') or display['Description Topic']
        # the display's QoS receives what the bridge publishes (and a latched value late)
        profile = published[topic].profile
        if profile.reliability == qos.BEST_EFFORT:
            assert setting['Reliability Policy'] == 'Best Effort', topic
        if profile.durability == qos.TRANSIENT_LOCAL:
            assert setting['Durability Policy'] == 'Transient Local', topic
        else:
            assert setting['Durability Policy'] == 'Volatile', topic
    return classes


def test_rviz_config_topics_are_published_and_fixed_frame_is_pylon_root():
    from pylon_common import topics
    config, displays = _rviz_displays()
    assert config['Visualization Manager']['Global Options']['Fixed Frame'] == 'pylon_root'
    classes = _check_displays(displays, _published_topics())
    for cls in ('TF', 'RobotModel', 'PointCloud2', 'LaserScan', 'Image', 'MarkerArray'):
        assert f'rviz_default_plugins/{cls}' in classes, cls
    model = classes['rviz_default_plugins/RobotModel']
    assert model['Description Source'] == 'Topic'
    assert model['Description Topic']['Value'] == topics.topic('robot_description').default_name()


def _kart_published_topics() -> dict:
    """Return ``{topic name: contract row}`` of what the kart's plan publishes.

    The bridge's topics (its kart sensors at the competition's names,
    ``pylon_kart.sensing``), the interface's and the reference stack's.
    """
    from pylon_common import topics
    published = _published_topics()
    for source, target in pc.kart_remappings():
        if source in published:
            published[target] = published.pop(source)
    published.update({row.default_name(): row for row in topics.KART_TOPICS + topics.STACK_TOPICS
                      if row.direction == topics.PUBLISHES})
    return published


def test_kart_rviz_config_shows_course_kart_path_and_scan_in_map():
    from pylon_common import topics
    from pylon_kart.kart_limits import MAP
    config, displays = _rviz_displays('kart.rviz')
    assert config['Visualization Manager']['Global Options']['Fixed Frame'] == MAP == 'map'
    assert config['Visualization Manager']['Views']['Current']['Target Frame'] == 'base_link'
    classes = _check_displays(displays, _kart_published_topics())
    assert set(classes) == {f'rviz_default_plugins/{c}' for c in (
        'Grid', 'TF', 'RobotModel', 'MarkerArray', 'Path', 'LaserScan')}
    shown = {cls.rsplit('/', 1)[1]: _topic(d) for cls, d in classes.items()}
    assert shown['RobotModel'] == topics.name('robot_description')
    assert shown['MarkerArray'] == topics.name('stack/course_markers')
    assert shown['Path'] == topics.name('stack/trajectory_path')
    lidar = dict(pc.kart_remappings())[topics.name('lidar_2d', id='lidar')]
    assert shown['LaserScan'] == lidar == '/sensing/lidar/scan'


def test_rviz_readme_documents_the_fixed_frame():
    assert 'pylon_root' in (ROOT / 'rviz' / 'README.md').read_text()
    assert '`kart.rviz`' in (ROOT / 'rviz' / 'README.md').read_text()


# -- devcontainer -------------------------------------------------------------------------

def test_devcontainer_uses_the_workspace_image():
    path = ROOT / '.devcontainer' / 'devcontainer.json'
    config = json.loads(path.read_text())
    build = config['build']
    assert (path.parent / build['dockerfile']).resolve() == ROOT / 'docker' / 'Dockerfile'
    assert (path.parent / build['context']).resolve() == ROOT
    assert build['target'] in _stages()
    assert 'colcon' in config['postCreateCommand'] and 'build' in config['postCreateCommand']
    for base in re.findall(r'--base-paths ([^-]+)--', config['postCreateCommand'])[0].split():
        assert (ROOT / base).is_dir(), base
