"""The options of ``udp_bridge``: one table for flags, ROS parameters, defaults and ranges.

Every option is a ``pylon_common.parameters.Parameter`` row, and at the same time a
command-line flag (``--topic-prefix``) and a read-only ROS parameter (``topic_prefix``).
The bridge reads them once at start; a value comes from the first of these that gives one:

1. the flag on the command line;
2. the ROS parameter (``--ros-args -p topic_prefix:=/a`` or a ``--params-file`` overlay);
3. for topic options, the default derived from their prefix: ``vessel_lifecycle_topic``
   is ``<topic-prefix>/lifecycle`` with whatever ``topic_prefix`` resolved to, so a new
   prefix moves every topic that was not set on its own;
4. the built-in default.

Topic names: ``BridgeConfig.topic(key)`` places a topic of the contract
(``pylon_common.topics``) under the option that covers it (``imu`` under ``imu_topic``,
``ground_truth/pose`` under ``ground_truth_prefix``, ``star_tracker/{id}/state`` under
``topic_prefix``). Nothing here needs ``rclpy.init()``; ``--help`` loads no ROS at all.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
import dataclasses
from dataclasses import replace
import functools
import re
from typing import Any, TYPE_CHECKING

from pylon_common import topics
from pylon_common.parameters import checked, coerce, declare, Parameter, TYPE_NAMES
from pylon_protocol.packets import (
    COMMAND_PORT,
    MAX_COMMAND_TIMEOUT_SEC,
    MAX_DATAGRAM_BYTES,
    MIN_COMMAND_TIMEOUT_SEC,
    STATE_PORT,
)

if TYPE_CHECKING:
    from rclpy.node import Node

OptionValue = str | int | float | bool

PROG = 'udp_bridge'
ROS_ARGS = '--ros-args'
ROS_ARGS_END = '--'

GROUP_TRANSPORT = 'UDP transport'
GROUP_BEHAVIOUR = 'behaviour'
GROUP_TOPICS = 'topics (a relative name is resolved in the node namespace)'

PORT = {'minimum': 1, 'maximum': 65535, 'metavar': 'PORT'}
POSITIVE_SECONDS = {'minimum': 0.0, 'exclusive_minimum': True, 'metavar': 'SEC'}


def _transport(name: str, default: OptionValue, text: str, **extra: Any) -> Parameter:
    return Parameter(name, default, text, group=GROUP_TRANSPORT, **extra)


def _behaviour(name: str, default: OptionValue, text: str, **extra: Any) -> Parameter:
    return Parameter(name, default, text, group=GROUP_BEHAVIOUR, **extra)


def _derived(name: str, prefix: str, suffix: str, text: str) -> Parameter:
    return Parameter(name, '', text, topic=True, derived_from=prefix, suffix=suffix,
                     group=GROUP_TOPICS,
                     metavar='PREFIX' if name.endswith('_prefix') else 'TOPIC')


def _topic_option(name: str, key: str, text: str) -> Parameter:
    """Return a single topic's option: its namespace's prefix and its contract name."""
    row = topics.topic(key)
    prefix = 'bridge_prefix' if row.namespace == topics.BRIDGE else 'topic_prefix'
    return _derived(name, prefix, row.name, text)


OPTIONS: tuple[Parameter, ...] = (
    _transport('host', '0.0.0.0', 'address the state socket binds to (the mod sends to '
               'PYLON_TRANSPORT.stateHost:statePort)', metavar='ADDR'),
    _transport('port', STATE_PORT, 'UDP port the state socket binds to', **PORT),
    _transport('command_host', '127.0.0.1',
               'address commands are sent to (the computer running KSP)', metavar='ADDR'),
    _transport('command_port', COMMAND_PORT,
               "UDP port commands are sent to (the mod's PYLON_TRANSPORT.commandPort)",
               **PORT),
    _transport('max_datagram_bytes', MAX_DATAGRAM_BYTES,
               'receive buffer per datagram; a longer datagram is cut and then dropped',
               minimum=512, maximum=MAX_DATAGRAM_BYTES, metavar='BYTES'),
    _behaviour('topic_timeout_sec', 3.0,
               'silence after which the session turns STALE and a sensor topic is removed',
               **POSITIVE_SECONDS),
    _behaviour('vehicle_command_timeout_sec', 0.5,
               'timeoutSeconds of typed actuator commands that give none: the mod stops the '
               'actuator when no newer command arrives within it',
               minimum=MIN_COMMAND_TIMEOUT_SEC, maximum=MAX_COMMAND_TIMEOUT_SEC,
               metavar='SEC'),
    _behaviour('disable_ground_truth', False,
               'publish no ground truth topics and no world TF; VesselLifecycle.world_frame '
               'is empty'),
    _behaviour('ground_truth_domain', -1,
               "ROS domain id (not the bridge's own) in which a second node of this process "
               'publishes every ground truth topic (ground_truth/*, control/snapshot) under '
               "its usual name, type and QoS; the bridge's own domain then gets none of them "
               'and no world TF, and VesselLifecycle.world_frame is empty, as with '
               '--disable-ground-truth (several vehicles: no vehicle domain carries ground '
               'truth); -1: off', minimum=-1, maximum=232, metavar='DOMAIN'),
    _behaviour('allow_remote_models', False,
               'accept vessel model (URDF) datagrams from non-loopback senders'),
    _behaviour('allow_servo_joints', False,
               'accept the proxy-model extension in which a servo part hangs on a revolute or '
               'prismatic joint named as its joint_states entry (pylon_sim --servo-joints); '
               "the mod's own fixed-joint models are checked as strictly either way"),
    _behaviour('publish_proxy_static_tf', True,
               "publish the proxy model's fixed joints on /tf_static; turn off when "
               'robot_state_publisher publishes them from robot_description'),
    _behaviour('diagnostics_period_sec', 1.0, 'period of the diagnostics messages',
               **POSITIVE_SECONDS),
    _behaviour('publish_clock', False,
               'publish /clock (rosgraph_msgs/Clock) from KSP universal time through the '
               "session's UT -> ROS mapping, for nodes run with use_sim_time:=true; the "
               'bridge itself keeps the system clock'),
    _behaviour('frame_prefix', 'pylon',
               'first word of every sensor frame name: <prefix>_<vessel id, 8 hex>_<sensor id>'
               ' (sanitised to [a-z0-9_])', metavar='PREFIX'),
    _behaviour('imu_frame_id', '',
               "header.frame_id of the IMU; when set (e.g. imu_link) the bridge also sends "
               'base_link -> it on /tf_static, identity (the IMU measures at the centre of '
               "mass in base_link axes); '': base_link itself, no transform "
               '([A-Za-z_][A-Za-z0-9_]{0,63})', metavar='FRAME'),
    _behaviour('model_tf_rate', 5.0,
               'Hz of the timer that keeps base_link -> proxy root on /tf at the latest game '
               'time when nothing else carries it (no ground truth, no sensor)',
               minimum=0.5, maximum=60.0, metavar='HZ'),
    _behaviour('node_name', topics.UDP_BRIDGE,
               'ROS node name, sanitised to [a-z0-9_] (-r __node:=NAME works too; a '
               'node_name parameter that differs from the running name is an error)',
               metavar='NAME'),
    replace(topics.TOPIC_PREFIX, group=GROUP_TOPICS),
    replace(topics.BRIDGE_PREFIX, group=GROUP_TOPICS),
    _topic_option('status_topic', 'status', 'bridge state (latched)'),
    _topic_option('diagnostics_topic', 'diagnostics',
                  'datagram counters, session and topic rates'),
    _topic_option('imu_topic', 'imu', 'IMU of the active vessel'),
    _topic_option('vessel_lifecycle_topic', 'lifecycle',
                  'vessel identity and frame lifecycle (latched)'),
    _derived('ground_truth_prefix', 'topic_prefix', 'ground_truth',
             'prefix of the ground truth topics (pose, twist, twist_body, acceleration, '
             'kinematic_state, frame_angular_velocity, nearby_vessels, flight)'),
    _topic_option('control_snapshot_topic', 'control/snapshot',
                  "control snapshots: one frame's flight state, engines and separators "
                  '(ground truth)'),
    _derived('actuators_prefix', 'topic_prefix', 'actuators',
             'prefix of the typed actuator topics: servo, wheel, propulsion, rcs and '
             'separation, each with command and state'),
    _derived('docking_ports_prefix', 'topic_prefix', 'docking_ports',
             'prefix of the docking port topics (per port id: state, command, camera)'),
    _topic_option('joint_states_topic', 'joint_states', 'state of every ROS servo'),
    _topic_option('robot_description_topic', 'robot_description',
                  'proxy URDF of the active vessel (latched)'),
    _topic_option('root_frame_topic', 'root_frame',
                  'root frame of the proxy model, for the RViz fixed frame (latched)'),
    _topic_option('body_wrench_command_topic', 'control/wrench_command',
                  'lease-bound base_link wrench commands (subscribed)'),
    _topic_option('control_authority_command_topic', 'control/authority/command',
                  'lease acquire, renew, release and emergency stop (subscribed)'),
    _topic_option('control_authority_state_topic', 'control/authority/state',
                  'the owner the mod confirmed (latched)'),
    _topic_option('wrench_feedback_topic', 'control/wrench_feedback',
                  'requested, allocated and achieved wrench'),
)

OPTION_BY_NAME: dict[str, Parameter] = {option.name: option for option in OPTIONS}
NAMESPACE_OPTION = {topics.VESSEL: 'topic_prefix', topics.BRIDGE: 'bridge_prefix'}


# -- topic names ----------------------------------------------------------------------------

def _covering_option(row: topics.Topic) -> tuple[str, str]:
    """Return the option that places ``row`` and the rest of its name after that option.

    The derived option of the row's namespace whose suffix is the row's name, or the
    longest one whose suffix leads it; else the namespace's prefix itself.
    """
    prefix = NAMESPACE_OPTION[row.namespace]
    best, rest, longest = prefix, f'/{row.name}', 0
    for option in OPTIONS:
        if option.derived_from != prefix:
            continue
        if row.name == option.suffix:
            return option.name, ''
        if row.name.startswith(option.suffix + '/') and len(option.suffix) > longest:
            best, rest, longest = option.name, row.name[len(option.suffix):], len(option.suffix)
    return best, rest


@functools.cache
def _placement(key: str) -> tuple[str, str] | None:
    row = topics.topic(key)
    return None if row.namespace not in NAMESPACE_OPTION else _covering_option(row)


def _config_topic(self: Any, key: str, id: str | None = None) -> str:
    """Return the topic name of ``key`` (a key of the topic contract) in this configuration.

    Names with a per-sensor part take it as ``id``, e.g.
    ``config.topic('star_tracker/state', id='st_1')``.
    """
    placement = _placement(key)
    name = topics.topic(key).name if placement is None \
        else getattr(self, placement[0]) + placement[1]
    if '{id}' in name:
        if id is None:
            raise ValueError(f'topic {key!r} needs id=...')
        name = name.replace('{id}', id)
    return name


BridgeConfig = dataclasses.make_dataclass(
    'BridgeConfig', [(option.name, option.type) for option in OPTIONS], frozen=True,
    namespace={
        '__doc__': 'The resolved options of the bridge: one attribute per option of '
                   '``OPTIONS`` (parameter names); build it with ``resolve``.',
        'topic': _config_topic,
    })
BridgeConfig.__module__ = __name__


# -- values -----------------------------------------------------------------------------------

def node_name(explicit_cli: Mapping[str, Any]) -> str:
    """Return the node name a ``--node-name`` flag asks for, sanitised (``udp_bridge``)."""
    from pylon_protocol.names import sanitize_name
    default = OPTION_BY_NAME['node_name'].default
    return sanitize_name(explicit_cli.get('node_name', default), default)


def derive(prefix: str, suffix: str) -> str:
    """Return the topic ``suffix`` under ``prefix``."""
    return topics.join(prefix, suffix)


def resolve(explicit_cli: Mapping[str, Any], parameters: Mapping[str, Any]) -> BridgeConfig:
    """Return the configuration from the flags given and the ROS parameters set.

    Precedence: explicit flag > ROS parameter > derived default > default. ``''`` for a
    derived topic, at either level, means "not set here". Every value is type-checked and
    validated; a ValueError names the option (both options of a pair that excludes each
    other: ``--disable-ground-truth`` and ``--ground-truth-domain``).
    """
    for source, given in (('flag', explicit_cli), ('parameter', parameters)):
        unknown = sorted(set(given) - set(OPTION_BY_NAME))
        if unknown:
            raise ValueError(f'unknown {source} option(s): {", ".join(unknown)}')
    values: dict[str, OptionValue] = {}

    def value_of(name: str) -> OptionValue:
        if name in values:
            return values[name]
        option = OPTION_BY_NAME[name]
        for given in (explicit_cli, parameters):
            if name in given and not (option.derived and given[name] == ''):
                value = coerce(option, given[name])
                break
        else:
            value = derive(value_of(option.derived_from), option.suffix) \
                if option.derived_from is not None else option.default
        values[name] = checked(option, value)
        return values[name]

    for option in OPTIONS:
        value_of(option.name)
    _check_together(values)
    return BridgeConfig(**values)


FRAME_ID = re.compile(r'[A-Za-z_][A-Za-z0-9_]{0,63}')
"""A frame name the bridge may be given (``imu_frame_id``): a tf2 frame id, no slash."""


def _check_together(values: Mapping[str, OptionValue]) -> None:
    """Raise ValueError naming both options when two options exclude each other.

    Also a frame name that is not one (``FRAME_ID``), naming its option.
    """
    frame = values['imu_frame_id']
    if frame and FRAME_ID.fullmatch(frame) is None:
        raise ValueError(f'{OPTION_BY_NAME["imu_frame_id"].label}: {frame!r} is not a frame '
                         f'name ({FRAME_ID.pattern}, or empty for base_link)')
    if values['disable_ground_truth'] and values['ground_truth_domain'] >= 0:
        disable, domain = (OPTION_BY_NAME[name].label
                           for name in ('disable_ground_truth', 'ground_truth_domain'))
        raise ValueError(f'{disable} and {domain} exclude each other: ground truth is either '
                         'published nowhere or in another ROS domain; give one of them')


@functools.cache
def defaults() -> BridgeConfig:
    """Return the configuration when nothing is given."""
    return resolve({}, {})


def default_text(option: Parameter) -> str:
    """Return the default as shown to users, e.g. ``<topic-prefix>/lifecycle → /a/lifecycle``."""
    if option.derived:
        return f'{option.template} → {getattr(defaults(), option.name)}'
    if option.type is bool:
        return 'true' if option.default else 'false'
    return str(option.default)


# -- command line -----------------------------------------------------------------------------

def split_ros_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split ``argv`` into the bridge's own arguments and the ROS arguments.

    ROS arguments run from each ``--ros-args`` to the next ``--`` or the end, as rcl reads
    them; both markers stay in the ROS list so that it can go to ``rclpy.init`` unchanged.
    """
    own: list[str] = []
    ros: list[str] = []
    inside = False
    for arg in argv:
        if inside:
            ros.append(arg)
            inside = arg != ROS_ARGS_END
        elif arg == ROS_ARGS:
            ros.append(arg)
            inside = True
        else:
            own.append(arg)
    return own, ros


def _cli_type(option: Parameter) -> Callable[[str], OptionValue]:
    def convert(text: str) -> OptionValue:
        try:
            value = option.type(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f'expected a {TYPE_NAMES[option.type]}, got {text!r}') from None
        try:
            return checked(option, value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).split(': ', 1)[1]) from None
    convert.__name__ = TYPE_NAMES[option.type]
    return convert


def build_arg_parser() -> argparse.ArgumentParser:
    """Return the parser of the bridge's flags; ``--help`` shows every option and default."""
    parser = argparse.ArgumentParser(
        prog=PROG, allow_abbrev=False,
        description='Bridge the PyLoN mod (UDP datagrams) to ROS 2 topics and back.',
        epilog='Every option is also a read-only ROS parameter of the same name with '
               'underscores, e.g. --ros-args -p topic_prefix:=/my_vessel or --params-file '
               'bridge.yaml. Precedence: flag > ROS parameter > derived default > default. '
               'A derived topic default follows its prefix unless the topic is set itself. '
               'QoS of each topic: qos_overrides.<key>.reliability|durability|depth '
               'parameters.')
    groups: dict[str, argparse._ArgumentGroup] = {}
    for option in OPTIONS:
        group = groups.get(option.group)
        if group is None:
            group = groups[option.group] = parser.add_argument_group(option.group)
        text = option.description
        if option.range_text():
            text += f'; {option.range_text()}'
        text = f'{text} (default: {default_text(option)})'.replace('%', '%%')
        if option.type is bool:
            group.add_argument(option.flag, dest=option.name, default=argparse.SUPPRESS,
                               action=argparse.BooleanOptionalAction, help=text)
        else:
            group.add_argument(option.flag, dest=option.name, default=argparse.SUPPRESS,
                               type=_cli_type(option), help=text,
                               metavar=option.metavar or option.type.__name__.upper())
    return parser


def parse_cli(argv: Sequence[str]) -> tuple[dict[str, OptionValue], list[str]]:
    """Return the options given on the command line (by parameter name) and the ROS args.

    ``argv`` excludes the program name. ROS arguments (``--ros-args ... [--]``) are not
    parsed here and come back for ``rclpy.init``. ``--help`` and a bad flag exit through
    ``SystemExit`` as argparse does (code 0 and 2).
    """
    own, ros = split_ros_args(argv)
    namespace = build_arg_parser().parse_args(own)
    return dict(vars(namespace)), ros


def parse_args(argv: Sequence[str],
               parameters: Mapping[str, Any] | None = None) -> tuple[BridgeConfig, list[str]]:
    """Return the configuration from flags (and ``parameters``) and the ROS arguments."""
    explicit, ros = parse_cli(argv)
    return resolve(explicit, parameters or {}), ros


# -- ROS parameters ---------------------------------------------------------------------------

def declare_parameters(node: Node) -> dict[str, OptionValue]:
    """Declare every option as a read-only ROS parameter; return the ones set.

    Derived topics are declared with ``''`` ("derive from the prefix"). The result maps
    parameter name to value for each parameter whose value differs from its declared
    default, ready for ``resolve``. Raise ValueError naming the option for a wrong type,
    an out-of-range value or an invalid topic name.
    """
    values = declare(node, OPTIONS)
    return {name: value for name, value in values.items()
            if value != OPTION_BY_NAME[name].default}
