# ruff: noqa: N999
"""The one top-level launch file of the PyLoN workspace.

``ros2 launch launch/pylon.launch.py`` starts the selected components (see
``launch/pylon_components.py``, shared with the native runner) with the parameter files
of ``config/`` and the overlays of ``config/overlays/`` layered in order::

    ros2 launch launch/pylon.launch.py                                # headless demo
    ros2 launch launch/pylon.launch.py components:=all scenario:=surface
    ros2 launch launch/pylon.launch.py components:=bridge,rsp,rviz use_real_ksp:=true
    ros2 launch launch/pylon.launch.py overlays:=no_ground_truth,fast_slew

``ros2 launch launch/pylon.launch.py --show-args`` lists the arguments.
"""

from pathlib import Path
import sys

from launch.actions import DeclareLaunchArgument, ExecuteProcess, LogInfo, OpaqueFunction
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
     + '. Aliases: all (every component), default (all but rviz).'),
    ('external_components', '',
     'comma list of components that run in another launch (e.g. another compose service); '
     'they start nothing here but count for cross-component settings: the bridge leaves '
     'the proxy static TF to robot_state_publisher when rsp is selected or external'),
    ('scenario', pc.DEFAULT_SCENARIO,
     f'pylon_sim scenario: {"|".join(pc.SCENARIOS)} or a path to a scenario YAML file '
     '(only with the sim component)'),
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
)


def _typed(params: dict) -> dict:
    # strings stay strings (a URDF or an address must not go through YAML type guessing)
    return {k: ParameterValue(v, value_type=str) if isinstance(v, str) else v
            for k, v in params.items()}


def _setup(context):
    def arg(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    use_real_ksp = bool(pc.parse_bool(arg('use_real_ksp')))
    overlays = pc.split_list(arg('overlays'))
    external = pc.select(arg('external_components')) if arg('external_components') else ()
    planned = pc.plan(arg('components'), overlays=overlays, scenario=arg('scenario'),
                      external=external,
                      disable_ground_truth=pc.parse_bool(arg('disable_ground_truth')),
                      use_real_ksp=use_real_ksp, bridge_host=arg('bridge_host'),
                      ksp_host=arg('ksp_host'))
    components = sorted({p.component for p in planned}, key=list(pc.COMPONENTS).index)
    actions = [LogInfo(msg=f'pylon: components {",".join(components) or "(none)"}; '
                           f'overlays {",".join(overlays) or "(none)"}'
                           + ('; use_real_ksp: no simulator' if use_real_ksp else ''))]
    for proc in planned:
        if proc.node is None:
            actions.append(ExecuteProcess(
                cmd=[ExecutableInPackage(proc.executable, proc.package), *proc.arguments],
                name=proc.executable, output='screen', emulate_tty=True))
            continue
        parameters = list(proc.parameter_files)
        if proc.parameters:
            parameters.append(_typed(dict(proc.parameters)))
        actions.append(Node(
            package=proc.package, executable=proc.executable, name=proc.node,
            parameters=parameters, remappings=list(proc.remappings),
            arguments=list(proc.arguments), output='screen', emulate_tty=True))
    return actions


def generate_launch_description():
    """Return the launch description: the arguments, then the selected components."""
    return LaunchDescription([
        *(DeclareLaunchArgument(name, default_value=default, description=text)
          for name, default, text in ARGUMENTS),
        OpaqueFunction(function=_setup),
    ])
