# ruff: noqa: N999
"""The one top-level launch file of the PyLoN workspace.

``ros2 launch launch/pylon.launch.py`` starts the selected components (see
``launch/pylon_components.py``, shared with the native runner) with the parameter files
of ``config/`` and the overlays of ``config/overlays/`` layered in order::

    ros2 launch launch/pylon.launch.py                                # headless demo
    ros2 launch launch/pylon.launch.py components:=all scenario:=surface
    ros2 launch launch/pylon.launch.py components:=bridge,rsp,rviz use_real_ksp:=true
    ros2 launch launch/pylon.launch.py overlays:=no_ground_truth,fast_slew
    ros2 launch launch/pylon.launch.py record:=/tmp/run.mcap            # and record it all
    ros2 launch launch/pylon.launch.py sim_rate:=3                      # 3x real time, game time
    ros2 launch launch/pylon.launch.py scenario:=kart                   # the racing kart

With ``scenario:=kart`` the kart's interface and reference stack run instead of the attitude
control (``pylon_components``: no ground truth, ``/clock``, the competition's sensor
names); engage it as the competition's orchestrator does, once it reports MANUAL::

    ros2 topic pub --once /awsim/control_mode_request_topic std_msgs/msg/Bool "{data: true}"

``ros2 launch launch/pylon.launch.py --show-args`` lists the arguments.

With ``vehicles:=N`` (N >= 1) it starts a mission instead (``pylon_components.mission_plan``):
the simulator serving N vehicles, ``sim_manager`` and ``referee`` in the management domain
``domain_base`` and each vehicle's stack in domain ``domain_base + k``; launch ends when
the referee has written the results of an ended mission::

    ros2 launch launch/pylon.launch.py vehicles:=2 domain_base:=0 results_path:=/tmp/r.json

With ``scenario:=race`` it is the race of four karts (``vehicles:=1`` or ``2`` keeps the
first karts; ``race_laps:=``, ``race_time_limit_sec:=`` shorten it): kart k's bridge,
``kart_interface`` and reference stack in domain ``domain_base + k``, ``sim_manager``, the
referee and ``race_view`` in ``domain_base`` (``components:=default,viewer`` adds the live
view there, as ``DEMO_SCENARIO=race make demo`` has it). Engage each kart as the competition's
orchestrator does, once its ``/awsim/state`` is Ready (``count`` starts the race once every
kart is AUTONOMOUS, or 30 s of game time after they were all Ready); launch ends when the
referee, the race's judge, has written the results (``results_path:=``, the result files
beside it)::

    ros2 launch launch/pylon.launch.py scenario:=race results_path:=/tmp/race/results.json
    ROS_DOMAIN_ID=1 ros2 topic pub --once /awsim/control_mode_request_topic \
        std_msgs/msg/Bool "{data: true}"
"""

from pathlib import Path
import sys

from launch.actions import (
    DeclareLaunchArgument,
    EmitEvent,
    ExecuteProcess,
    LogInfo,
    OpaqueFunction,
    RegisterEventHandler,
)
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.launch_description import LaunchDescription
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import ExecutableInPackage

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pylon_components as pc  # noqa: E402, I001  (beside this file, not a package)

ARGUMENTS = (
    ('components', ','.join(pc.DEFAULT_COMPONENTS),
     'comma list of components to start, in any order: '
     + '; '.join(f'{c.name} = {c.description}' for c in pc.COMPONENTS.values())
     + f'. Aliases: all (every component), default (all but the viewers: '
       f'{", ".join(pc.VIEWERS)}).'),
    ('external_components', '',
     'comma list of components that run in another launch (e.g. another compose service); '
     'they start nothing here but count for cross-component settings: the bridge leaves '
     'the proxy static TF to robot_state_publisher when rsp is selected or external'),
    ('scenario', '',
     f'pylon_sim scenario: {"|".join(pc.SCENARIOS)} or a path to a scenario YAML file '
     f"(only with the sim component); '' = {pc.DEFAULT_SCENARIO}, or with vehicles the "
     "mission's default. kart: the kart's components (kart, kart_stack) instead of the "
     'controller, estimator and markers, the bridge without ground truth, on game time, '
     'RViz with rviz/kart.rviz'),
    ('disable_ground_truth', '',
     'true|false: the bridge publishes no ground truth topics and no world TF; '
     'empty (default) leaves it to config/pylon_bridge.yaml and the overlays'),
    ('overlays', '',
     'comma list of overlay names (config/overlays/<name>.yaml) layered in order over '
     'the base parameter files, later ones winning; each applies to the nodes it names'),
    ('use_real_ksp', 'false',
     'true: no simulator; the bridge listens for the PyLoN mod of a real KSP on '
     'bridge_host and sends commands to ksp_host'),
    ('bridge_host', '0.0.0.0',
     'with use_real_ksp: address the bridge binds its state socket to (0.0.0.0: every '
     'interface; the mod sends to its PYLON_TRANSPORT.stateHost)'),
    ('ksp_host', pc.LOOPBACK,
     'with use_real_ksp: address of the computer running KSP (commands go there)'),
    ('vehicles', '0',
     'N >= 1: a mission of N vehicles, each in its own ROS domain (domain_base + k), the '
     'management and the referee in domain_base; scenario defaults to '
     + ', '.join(f'{n}: {s}' for n, s in pc.MISSION_SCENARIOS.items())
     + '. With a race scenario (race: 4 karts; 0 = all of its karts) each kart runs its '
     'bridge, kart_interface and reference stack, the management, the referee (the '
     "race's judge) and race_view (the organisers' view) run in domain_base. Overlays "
     'apply; of components only the live views (viewer, foxglove_bridge), which then run '
     'in domain_base; use_real_ksp does not'),
    ('domain_base', '0', 'with vehicles: the management domain; vehicle k uses domain_base + k'),
    ('start_mode', 'count',
     'with vehicles: count starts the mission by itself once every vehicle is Ready and in '
     'control; sync waits for /admin/awsim/start (std_msgs/Bool true) in Ready'),
    ('results_path', '', "with vehicles: where the referee writes the results ('' none); "
                         "a race's judge writes its result files beside it"),
    ('race_laps', '',
     "with a race: laps to finish ('' the scenario's or its mode's: 6), e.g. 1 for a short race"),
    ('race_time_limit_sec', '',
     "with a race: the session's time limit in s of game time ('' the scenario's or its "
     "mode's: one kart 600, several 420)"),
    ('exit_on_finish', 'true', 'with vehicles: end launch once the mission ended'),
    ('sim_rate', '1.0',
     'pylon_sim runs at this many times real time (--rate, above 0). Not 1: the control runs '
     'on game time too (see use_sim_time), so it keeps its periods, lease and timeouts in '
     'game seconds while the game runs faster; not with use_real_ksp'),
    ('use_sim_time', '',
     'true|false: game time for the control: the bridge publishes /clock (publish_clock, KSP '
     'universal time) and the estimator, controller and chaser run with use_sim_time on it '
     '(their loops, leases and timeouts in game seconds; a paused game stops them and the '
     'lease lapses). Empty (default): true exactly when sim_rate is not 1. With a real KSP, '
     'true is what physics warp wants'),
    ('record', '',
     'a file path: also start pylon_recorder (component record), writing every topic to a '
     'rosbag2-compatible MCAP file there (with vehicles: one file per domain, '
     '<name>_management.mcap and <name>_vehicle_<k>.mcap)'),
)


def _typed(params: dict) -> dict:
    # strings stay strings (a URDF or an address must not go through YAML type guessing)
    return {k: ParameterValue(v, value_type=str) if isinstance(v, str) else v
            for k, v in params.items()}


def _actions(planned) -> list:
    """Return the launch actions of planned processes (a domain each where planned)."""
    actions = []
    for proc in planned:
        env = {} if proc.domain is None else {'ROS_DOMAIN_ID': str(proc.domain)}
        if proc.node is None:
            actions.append(ExecuteProcess(
                cmd=[ExecutableInPackage(proc.executable, proc.package), *proc.arguments],
                name=proc.executable, output='screen', emulate_tty=True,
                additional_env=env))
            continue
        parameters = list(proc.parameter_files)
        if proc.parameters:
            parameters.append(_typed(dict(proc.parameters)))
        actions.append(Node(
            package=proc.package, executable=proc.executable, name=proc.node,
            parameters=parameters, remappings=list(proc.remappings),
            arguments=list(proc.arguments), output='screen', emulate_tty=True,
            additional_env=env))
    return actions


def _optional(text: str, kind: type):
    """Return a launch argument as ``kind``, None when it is empty."""
    return kind(text) if text.strip() else None


def _mission(arg, vehicles: int) -> list:
    """Return the actions of a mission (``vehicles:=N``); launch ends with the referee.

    The referee (a race's judge too) stops once it wrote an ended mission's results
    (``exit_on_finish``).
    """
    scenario = arg('scenario')
    viewers = [name for name in pc.select(arg('components')) if name in pc.MISSION_VIEWERS]
    planned = pc.mission_plan(
        vehicles, scenario=scenario,
        overlays=pc.split_list(arg('overlays')), domain_base=int(arg('domain_base')),
        start_mode=arg('start_mode'),
        exit_on_finish=bool(pc.parse_bool(arg('exit_on_finish'))),
        results_path=arg('results_path'), record_output=arg('record'),
        sim_rate=pc.sim_rate_of(arg('sim_rate')), use_sim_time=pc.parse_bool(arg('use_sim_time')),
        race_laps=_optional(arg('race_laps'), int),
        race_time_limit_sec=_optional(arg('race_time_limit_sec'), float), viewers=viewers)
    race = any(p.component == pc.RACE_VIEW.name for p in planned)
    actions = [LogInfo(msg=f'pylon: {"race" if race else "mission"} of {vehicles} vehicles, '
                           f'management domain {arg("domain_base")}'
                           + (f'; each kart engages on '
                              f'{pc.topics.name("kart/control_mode_request_topic")} in its '
                              'domain' if race else ''))] + _actions(planned)
    referee = next(a for a, p in zip(actions[1:], planned) if p.component == 'referee')
    actions.append(RegisterEventHandler(OnProcessExit(
        target_action=referee, on_exit=[EmitEvent(event=Shutdown(reason='mission ended'))])))
    return actions


def _game_time(arg) -> bool:
    if pc.is_kart(arg('scenario')):
        return pc.parse_bool(arg('use_sim_time')) is not False
    return pc.on_game_time(pc.sim_rate_of(arg('sim_rate')), pc.parse_bool(arg('use_sim_time')))


def _setup(context):
    def arg(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    vehicles = int(arg('vehicles') or 0) or (pc.default_vehicles(arg('scenario'))
                                            if arg('scenario') else None)
    if vehicles:
        return _mission(arg, vehicles)
    use_real_ksp = bool(pc.parse_bool(arg('use_real_ksp')))
    overlays = pc.split_list(arg('overlays'))
    external = pc.select(arg('external_components')) if arg('external_components') else ()
    planned = pc.plan(arg('components'), overlays=overlays,
                      scenario=arg('scenario') or pc.DEFAULT_SCENARIO,
                      external=external,
                      disable_ground_truth=pc.parse_bool(arg('disable_ground_truth')),
                      use_real_ksp=use_real_ksp, bridge_host=arg('bridge_host'),
                      ksp_host=arg('ksp_host'), record_output=arg('record'),
                      sim_rate=pc.sim_rate_of(arg('sim_rate')),
                      use_sim_time=pc.parse_bool(arg('use_sim_time')))
    components = sorted({p.component for p in planned}, key=list(pc.COMPONENTS).index)
    actions = [LogInfo(msg=f'pylon: components {",".join(components) or "(none)"}; '
                           f'overlays {",".join(overlays) or "(none)"}'
                           + ('; use_real_ksp: no simulator' if use_real_ksp else '')
                           + ('; control on game time (/clock)' if _game_time(arg) else '')
                           + (f'; the kart: engage it on '
                              f'{pc.topics.name("kart/control_mode_request_topic")}'
                              if pc.is_kart(arg('scenario')) else ''))]
    return actions + _actions(planned)


def generate_launch_description():
    """Return the launch description: the arguments, then the selected components."""
    return LaunchDescription([
        *(DeclareLaunchArgument(name, default_value=default, description=text)
          for name, default, text in ARGUMENTS),
        OpaqueFunction(function=_setup),
    ])
