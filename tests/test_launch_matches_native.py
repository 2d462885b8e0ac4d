"""The launch file and the native runner start the same nodes with the same parameter files.

``launch`` and ``launch_ros`` are not on PyPI, so the launch file runs here against small
recording stand-ins of the handful of classes it uses; what it asks them to start is
compared with the native runner's command lines (``launch/native_demo.py``).
"""

import importlib.util
from pathlib import Path
import sys
import types

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class _Recorder:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class _LaunchConfiguration:
    values: dict = {}

    def __init__(self, name):
        self.name = name

    def perform(self, context):
        return context[self.name]


@pytest.fixture
def launch_file(monkeypatch):
    stubs = {
        'launch': {}, 'launch.actions': {
            'DeclareLaunchArgument': _Recorder, 'ExecuteProcess': _Recorder,
            'LogInfo': _Recorder, 'OpaqueFunction': _Recorder, 'EmitEvent': _Recorder,
            'RegisterEventHandler': _Recorder},
        'launch.event_handlers': {'OnProcessExit': _Recorder},
        'launch.events': {'Shutdown': _Recorder},
        'launch.launch_description': {'LaunchDescription': _Recorder},
        'launch.substitutions': {'LaunchConfiguration': _LaunchConfiguration},
        'launch_ros': {}, 'launch_ros.actions': {'Node': _Recorder},
        'launch_ros.parameter_descriptions': {
            'ParameterValue': lambda value, value_type=None: value},
        'launch_ros.substitutions': {
            'ExecutableInPackage': lambda executable, package: executable},
    }
    for name, attrs in stubs.items():
        module = types.ModuleType(name)
        for key, value in attrs.items():
            setattr(module, key, value)
        monkeypatch.setitem(sys.modules, name, module)
    return _module('pylon_launch_under_test', ROOT / 'launch' / 'pylon.launch.py')


def _context(launch, **values):
    context = {name: default for name, default, _ in launch.ARGUMENTS}
    context.update(values)
    return context


def _as_commands(actions):
    """Turn the recorded launch actions into command lines as launch_ros builds them."""
    out = []
    for action in actions:
        kw = action.kwargs
        if 'cmd' in kw:                                     # ExecuteProcess: the simulator
            out.append(list(kw['cmd']))
        elif 'package' in kw:                               # Node
            cmd = [kw['executable'], *kw['arguments'], '--ros-args', '-r',
                   f'__node:={kw["name"]}']
            fixed = {}
            for entry in kw['parameters']:
                if isinstance(entry, dict):
                    fixed.update(entry)
                else:
                    cmd += ['--params-file', entry]
            for name, value in fixed.items():
                value = ('true' if value else 'false') if isinstance(value, bool) else (
                    f"'{value}'" if isinstance(value, str) else str(value))
                cmd += ['-p', f'{name}:={value}']
            for src, dst in kw['remappings']:
                cmd += ['-r', f'{src}:={dst}']
            out.append(cmd)
    return out


@pytest.mark.parametrize('overlays', ['', 'fast_slew', 'no_ground_truth,fast_slew'])
def test_launch_and_native_demo_start_the_same_processes(launch_file, overlays):
    native = _module('native_demo_under_test', ROOT / 'launch' / 'native_demo.py')
    components = ','.join(native.DEMO_COMPONENTS)
    actions = launch_file._setup(_context(launch_file, components=components,
                                          overlays=overlays))
    launched = _as_commands(actions)
    expected = native.command_lines(overlays=[o for o in overlays.split(',') if o])
    assert launched == expected
    executables = [cmd[0] for cmd in launched]
    assert executables == ['pylon_sim', 'udp_bridge', 'setpoint_controller',
                           'attitude_estimator', 'pylon_viewer']
    files = [arg for cmd in launched for i, arg in enumerate(cmd)
             if i and cmd[i - 1] == '--params-file']
    assert str(ROOT / 'config' / 'pylon_bridge.yaml') in files
    assert str(ROOT / 'config' / 'setpoint_controller.yaml') in files
    assert str(ROOT / 'config' / 'attitude_estimator.yaml') in files
    assert str(ROOT / 'config' / 'pylon_viewer.yaml') in files


def test_launch_sets_the_static_tf_switch_with_robot_state_publisher(launch_file):
    actions = launch_file._setup(_context(launch_file, components='bridge,rsp'))
    bridge = next(a for a in actions if a.kwargs.get('executable') == 'udp_bridge')
    fixed = {k: v for entry in bridge.kwargs['parameters'] if isinstance(entry, dict)
             for k, v in entry.items()}
    assert fixed['publish_proxy_static_tf'] is False
    actions = launch_file._setup(_context(launch_file, components='bridge'))
    bridge = next(a for a in actions if a.kwargs.get('executable') == 'udp_bridge')
    fixed = {k: v for entry in bridge.kwargs['parameters'] if isinstance(entry, dict)
             for k, v in entry.items()}
    assert fixed['publish_proxy_static_tf'] is True


def test_launch_and_native_demo_start_the_same_mission(launch_file):
    native = _module('native_demo_under_test', ROOT / 'launch' / 'native_demo.py')
    mission = sys.modules['mission_demo']
    actions = launch_file._setup(_context(launch_file, vehicles='2', domain_base='7',
                                          results_path='/tmp/results.json'))
    started = [a for a in actions if 'cmd' in a.kwargs or 'package' in a.kwargs]
    planned = mission.plan(2, domain_base=7, log_dir=Path('/tmp'))
    assert _as_commands(started) == [native.pc.command_line(p) for p in planned]
    # every process in its domain: the simulator none, management 7, vehicle k 7 + k
    domains = [a.kwargs['additional_env'].get('ROS_DOMAIN_ID') for a in started]
    assert domains == [None if p.domain is None else str(p.domain) for p in planned]
    assert domains[:3] == [None, '7', '7'] and set(domains[3:]) == {'8', '9'}
    # launch ends when the referee exits (it does once it wrote an ended mission's result)
    (handler,) = [a for a in actions
                  if a.args and 'target_action' in getattr(a.args[0], 'kwargs', {})]
    assert handler.args[0].kwargs['target_action'].kwargs['executable'] == 'referee'


def test_launch_and_native_demo_record_the_same_way(launch_file, tmp_path):
    """record:= and DEMO_RECORD add the same recorder, writing to the same file."""
    native = _module('native_demo_under_test', ROOT / 'launch' / 'native_demo.py')
    output = str(tmp_path / 'demo.mcap')
    actions = launch_file._setup(_context(launch_file, components=','.join(native.DEMO_COMPONENTS),
                                          record=output))
    launched = _as_commands(actions)
    assert launched == native.command_lines(record=output)
    assert launched[:-1] == native.command_lines()          # the same demo, plus the recorder
    assert launched[-1] == ['pylon_recorder', '--ros-args', '-r', '__node:=pylon_recorder',
                            '-p', f"output:='{output}'"]
    # never in the default selection
    default = _as_commands(launch_file._setup(_context(launch_file)))
    assert 'pylon_recorder' not in [cmd[0] for cmd in default]


def test_launch_and_native_demo_record_a_mission_per_domain(launch_file):
    native = _module('native_demo_under_test', ROOT / 'launch' / 'native_demo.py')
    mission = sys.modules['mission_demo']
    actions = launch_file._setup(_context(launch_file, vehicles='2', domain_base='7',
                                          results_path='/tmp/results.json',
                                          record='/tmp/run.mcap'))
    started = [a for a in actions if 'cmd' in a.kwargs or 'package' in a.kwargs]
    planned = mission.plan(2, domain_base=7, log_dir=Path('/tmp'), record='/tmp/run.mcap')
    assert _as_commands(started) == [native.pc.command_line(p) for p in planned]
    recorders = [(a.kwargs['additional_env'].get('ROS_DOMAIN_ID'), a.kwargs['parameters'][-1])
                 for a in started if a.kwargs.get('executable') == 'pylon_recorder']
    assert recorders == [('7', {'output': '/tmp/run_management.mcap'}),
                         ('8', {'output': '/tmp/run_vehicle_1.mcap'}),
                         ('9', {'output': '/tmp/run_vehicle_2.mcap'})]


def _fixed(cmd):
    """Return the ``-p name:=value`` parameters of a command line."""
    return dict(cmd[i + 1].split(':=', 1) for i, arg in enumerate(cmd) if arg == '-p')


@pytest.mark.parametrize('rate, use_sim_time, game', [
    ('3', '', True), ('1.0', 'true', True), ('2.5', 'false', False), ('1.0', '', False)])
def test_launch_and_native_demo_run_on_game_time_the_same_way(launch_file, rate, use_sim_time,
                                                              game):
    """sim_rate:= and DEMO_RATE (use_sim_time:=, DEMO_USE_SIM_TIME) start the same processes.

    Game time: the simulator at --rate, the bridge publishing /clock, the estimator and the
    controller on it (use_sim_time), the viewer not; at rate 1 by default nothing changes.
    """
    native = _module('native_demo_under_test', ROOT / 'launch' / 'native_demo.py')
    actions = launch_file._setup(_context(launch_file, components=','.join(native.DEMO_COMPONENTS),
                                          sim_rate=rate, use_sim_time=use_sim_time))
    launched = _as_commands(actions)
    sim_time = native.pc.parse_bool(use_sim_time)
    assert launched == native.command_lines(sim_rate=float(rate), use_sim_time=sim_time)
    sim, bridge, controller, estimator, viewer = launched
    # faster than real time on game time, the game lock-steps with the controller (a period)
    stepped = game and float(rate) != 1.0
    assert native.pc.LOCKSTEP_LEAD_SEC == 0.05                 # command_period_sec's default
    lead = ['--lockstep-lead', '0.05'] if stepped else []
    assert sim[len(sim) - len(lead):] == lead, sim
    sim = sim[:len(sim) - len(lead)]
    assert (sim[-2:] == ['--rate', f'{float(rate):g}']) == (float(rate) != 1.0), sim
    assert '--rate' not in sim[:-2] and '--lockstep-lead' not in sim
    assert _fixed(bridge).get('publish_clock') == ('true' if game else None)
    for node in (controller, estimator):
        assert _fixed(node).get('use_sim_time') == ('true' if game else None), node
    assert 'use_sim_time' not in _fixed(viewer)
    if not game and float(rate) == 1.0:                     # the shipped configuration
        assert launched == native.command_lines()


def test_launch_and_native_demo_run_a_mission_on_game_time_the_same_way(launch_file):
    """Every vehicle's bridge publishes /clock in its domain; its nodes use it."""
    native = _module('native_demo_under_test', ROOT / 'launch' / 'native_demo.py')
    mission = sys.modules['mission_demo']
    actions = launch_file._setup(_context(launch_file, vehicles='2', domain_base='7',
                                          results_path='/tmp/results.json', sim_rate='3'))
    started = [a for a in actions if 'cmd' in a.kwargs or 'package' in a.kwargs]
    planned = mission.plan(2, domain_base=7, log_dir=Path('/tmp'), sim_rate=3.0)
    launched = _as_commands(started)
    assert launched == [native.pc.command_line(p) for p in planned]
    sim = launched[0]
    assert sim[0] == 'pylon_sim' and sim[sim.index('--rate') + 1] == '3'
    by_node = {}
    for proc, cmd in zip(planned, launched):
        by_node.setdefault(proc.executable, []).append((proc.domain, _fixed(cmd)))
    assert [(d, p.get('publish_clock')) for d, p in by_node['udp_bridge']] == [
        (8, 'true'), (9, 'true')]
    for name in ('setpoint_controller', 'attitude_estimator', 'rendezvous_chaser'):
        assert by_node[name] and all(p.get('use_sim_time') == 'true' for _, p in by_node[name])
    for name in ('sim_manager', 'referee'):             # management domain: no /clock there
        assert [p.get('use_sim_time') for _, p in by_node[name]] == [None]


def test_a_simulator_rate_is_checked_and_needs_the_simulator():
    import pylon_components as pc
    assert pc.sim_rate_of('') == pc.sim_rate_of(None) == 1.0 and pc.sim_rate_of('4') == 4.0
    for bad in ('0', '-1', 'nan', 'inf', 'fast'):
        with pytest.raises(ValueError, match='sim_rate'):
            pc.sim_rate_of(bad)
    with pytest.raises(ValueError, match='use_sim_time'):
        pc.plan('bridge,controller', use_real_ksp=True, sim_rate=2.0)
    # a real KSP under physics warp: game time without a simulator rate
    real = {p.node: dict(p.parameters) for p in pc.plan('bridge,controller', use_real_ksp=True,
                                                       use_sim_time=True)}
    assert real['udp_bridge']['publish_clock'] is True
    assert real['setpoint_controller']['use_sim_time'] is True


@pytest.mark.parametrize('rate', ['1.0', '4'])
def test_launch_and_native_demo_start_the_same_kart(launch_file, rate):
    """scenario:=kart and DEMO_SCENARIO=kart start the same kart.

    The kart's interface and reference stack instead of the attitude control, all on game
    time; a team's domain (no ground truth).
    """
    native = _module('native_demo_under_test', ROOT / 'launch' / 'native_demo.py')
    pc = native.pc
    actions = launch_file._setup(_context(launch_file, components=','.join(native.DEMO_COMPONENTS),
                                          scenario='kart', sim_rate=rate))
    launched = _as_commands(actions)
    assert launched == native.command_lines(scenario='kart', sim_rate=float(rate))
    sim, bridge, interface, *stack, viewer = launched
    assert [cmd[0] for cmd in (interface, *stack, viewer)] == [
        'kart_interface', 'kart_localizer', 'trajectory_publisher', 'pure_pursuit',
        'pylon_viewer']
    scenario = sim[sim.index('--scenario') + 1]
    assert pc.is_kart(scenario) and scenario == 'kart'
    lead = ['--lockstep-lead', '0.06'] if rate != '1.0' else []
    assert sim[len(sim) - len(lead):] == lead, sim
    assert _fixed(bridge)['publish_clock'] == 'true'
    assert _fixed(bridge)['disable_ground_truth'] == 'true'
    remaps = [bridge[i + 1] for i, arg in enumerate(bridge) if arg == '-r'][1:]
    from pylon_kart import sensing
    assert tuple(remaps) == tuple(f'{a}:={b}' for a, b in sensing.remapping().items())
    assert yaml.safe_load(_fixed(bridge)['imu_frame_id']) == sensing.IMU_FRAME
    assert '/ksp_vessel/imu/data_raw:=/sensing/imu/imu_raw' in interface
    for node in (interface, *stack):
        assert _fixed(node)['use_sim_time'] == 'true', node
    # faster than real time the interface's wheel commands follow the stack's control_cmd
    age = _fixed(interface).get('lockstep_command_age_sec')
    assert (float(age) if age else None) == (0.01 if lead else None), interface
    # and its lease, on game time, lasts a second of wall time
    lease = _fixed(interface).get('lease_duration_sec')
    assert (float(lease) if lease else None) == (
        min(float(rate), 10.0) if lead else None), interface
    # the default selection: robot_state_publisher beside, no attitude control, no markers
    default = [cmd[0] for cmd in _as_commands(launch_file._setup(
        _context(launch_file, scenario='kart')))]
    assert default == ['pylon_sim', 'udp_bridge', 'robot_state_publisher',
                       'description_relay', 'kart_interface', 'kart_localizer',
                       'trajectory_publisher', 'pure_pursuit']
    # and the kart's nodes never start with another scenario
    orbit = [cmd[0] for cmd in _as_commands(launch_file._setup(_context(launch_file)))]
    assert not {'kart_interface', 'kart_localizer', 'pure_pursuit'} & set(orbit)
    rviz = _as_commands(launch_file._setup(_context(launch_file, components='rviz',
                                                    scenario='kart')))
    assert rviz == [['rviz2', '-d', str(ROOT / 'rviz' / 'kart.rviz'), '--ros-args', '-r',
                     '__node:=rviz2']]


def test_the_kart_refuses_ground_truth():
    import pylon_components as pc
    with pytest.raises(ValueError, match='ground truth'):
        pc.plan('bridge', scenario='kart', disable_ground_truth=False)


@pytest.mark.parametrize('vehicles, laps', [('4', ''), ('2', '1'), ('0', '')])
def test_launch_and_native_demo_start_the_same_race(launch_file, monkeypatch, vehicles, laps):
    """scenario:=race (with the live view named) and DEMO_SCENARIO=race start the same race.

    Every kart's bridge, interface and reference stack in its domain, the management, the
    referee (the race's judge), the organisers' view and the live view in the management
    domain; launch ends with the referee. ``vehicles:=0``: every kart of the race.
    """
    monkeypatch.delenv('DEMO_VIEWER_PORT', raising=False)
    native = _module('native_demo_under_test', ROOT / 'launch' / 'native_demo.py')
    race = sys.modules['race_demo']
    actions = launch_file._setup(_context(
        launch_file, vehicles=vehicles, scenario='race', domain_base='7', race_laps=laps,
        components='default,viewer', results_path='/tmp/results.json'))
    started = [a for a in actions if 'cmd' in a.kwargs or 'package' in a.kwargs]
    karts = int(vehicles) or 4
    planned = race.plan(karts, scenario='race', domain_base=7, log_dir=Path('/tmp'),
                        laps=int(laps) if laps else None)
    assert _as_commands(started) == [native.pc.command_line(p) for p in planned]
    domains = [a.kwargs['additional_env'].get('ROS_DOMAIN_ID') for a in started]
    assert domains[:5] == [None, '7', '7', '7', '7']
    assert sorted(set(domains[5:]), key=int) == [str(7 + k) for k in range(1, karts + 1)]
    assert [cmd[0] for cmd in _as_commands(started)[:5]] == [
        'pylon_sim', 'sim_manager', 'referee', 'race_view', 'pylon_viewer']
    (handler,) = [a for a in actions
                  if a.args and 'target_action' in getattr(a.args[0], 'kwargs', {})]
    assert handler.args[0].kwargs['target_action'].kwargs['executable'] == 'referee'
    # without the live view named, the same race without it
    bare = launch_file._setup(_context(launch_file, vehicles=vehicles, scenario='race',
                                       domain_base='7', race_laps=laps,
                                       results_path='/tmp/results.json'))
    launched = _as_commands([a for a in bare if 'cmd' in a.kwargs or 'package' in a.kwargs])
    assert launched == [cmd for cmd in _as_commands(started) if cmd[0] != 'pylon_viewer']
