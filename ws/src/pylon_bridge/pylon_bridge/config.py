"""The options of ``udp_bridge``: one table for flags, ROS parameters, defaults and ranges.

Every option is a command-line flag (``--topic-prefix``) and a read-only ROS parameter
(``topic_prefix``) at the same time. The bridge reads them once at start; a value comes
from the first of these that gives one:

1. the flag on the command line;
2. the ROS parameter (``--ros-args -p topic_prefix:=/a`` or a ``--params-file`` overlay);
3. for topic options, the default derived from their prefix: ``vessel_lifecycle_topic``
   is ``<topic-prefix>/lifecycle`` with whatever ``topic_prefix`` resolved to, so a new
   prefix moves every topic that was not set on its own;
4. the built-in default.

Nothing here needs ``rclpy.init()``. rclpy is imported only where a node is touched and
for its topic name rules.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
import dataclasses
from dataclasses import dataclass
import functools
import math
import re
from typing import Any, TYPE_CHECKING

from pylon_protocol.packets import (
    MAX_COMMAND_TIMEOUT_SEC,
    MAX_DATAGRAM_BYTES,
    MIN_COMMAND_TIMEOUT_SEC,
)

if TYPE_CHECKING:
    from rcl_interfaces.msg import ParameterDescriptor
    from rclpy.node import Node

OptionValue = str | int | float | bool

PROG = 'udp_bridge'
ROS_ARGS = '--ros-args'
ROS_ARGS_END = '--'

GROUP_TRANSPORT = 'UDP transport'
GROUP_BEHAVIOUR = 'behaviour'
GROUP_TOPICS = 'topics (a relative name is resolved in the node namespace)'

TYPE_NAMES = {str: 'string', int: 'integer', float: 'float', bool: 'bool'}


@dataclass(frozen=True)
class Option:
    """One bridge option: flag, ROS parameter, type, default, range, help.

    A derived option (``derived_from`` set) is a topic whose default is
    ``<derived_from>/<suffix>``; its declared parameter default is ``''``, meaning
    "derive it".
    """

    name: str
    type: type
    default: OptionValue
    help: str
    group: str
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    topic: bool = False
    derived_from: str | None = None
    suffix: str = ''
    metavar: str | None = None

    @property
    def flag(self) -> str:
        """Return the command-line spelling, e.g. ``--topic-prefix``."""
        return '--' + self.name.replace('_', '-')

    @property
    def label(self) -> str:
        """Return how error messages name the option: parameter and flag."""
        return f'option {self.name} ({self.flag})'

    @property
    def derived(self) -> bool:
        """Return whether the default is derived from a prefix option."""
        return self.derived_from is not None

    @property
    def template(self) -> str:
        """Return the derived default as text, e.g. ``<topic-prefix>/lifecycle``."""
        if self.derived_from is None:
            return ''
        prefix = self.derived_from.replace('_', '-')
        return f'<{prefix}>/{self.suffix}'

    def range_text(self) -> str:
        """Return the allowed range in words, or ``''`` when any value of the type goes."""
        if self.minimum is None and self.maximum is None:
            return ''
        low = '' if self.minimum is None else _number(self.minimum)
        high = '' if self.maximum is None else _number(self.maximum)
        if self.maximum is None:
            return f'> {low}' if self.exclusive_minimum else f'>= {low}'
        if self.minimum is None:
            return f'<= {high}'
        if self.exclusive_minimum:
            return f'> {low} and <= {high}'
        return f'{low}–{high}'


def _number(value: float) -> str:
    return f'{value:g}'


def _option(name: str, kind: type, default: OptionValue, help_text: str, group: str,
            **extra: Any) -> Option:
    return Option(name=name, type=kind, default=default, help=help_text, group=group, **extra)


def _prefix(name: str, default: str, help_text: str) -> Option:
    return Option(name=name, type=str, default=default, help=help_text, group=GROUP_TOPICS,
                  topic=True, metavar='PREFIX')


def _derived(name: str, prefix: str, suffix: str, help_text: str) -> Option:
    return Option(name=name, type=str, default='', help=help_text, group=GROUP_TOPICS,
                  topic=True, derived_from=prefix, suffix=suffix,
                  metavar='PREFIX' if name.endswith('_prefix') else 'TOPIC')


PORT = {'minimum': 1, 'maximum': 65535, 'metavar': 'PORT'}
POSITIVE_SECONDS = {'minimum': 0.0, 'exclusive_minimum': True, 'metavar': 'SEC'}

OPTIONS: tuple[Option, ...] = (
    _option('host', str, '0.0.0.0',
            'address the state socket binds to (the mod sends to '
            'PYLON_TRANSPORT.stateHost:statePort)', GROUP_TRANSPORT, metavar='ADDR'),
    _option('port', int, 49010, 'UDP port the state socket binds to', GROUP_TRANSPORT, **PORT),
    _option('command_host', str, '127.0.0.1',
            'address commands are sent to (the computer running KSP)', GROUP_TRANSPORT,
            metavar='ADDR'),
    _option('command_port', int, 49011,
            "UDP port commands are sent to (the mod's PYLON_TRANSPORT.commandPort)",
            GROUP_TRANSPORT, **PORT),
    _option('max_datagram_bytes', int, MAX_DATAGRAM_BYTES,
            'receive buffer per datagram; a longer datagram is cut and then dropped',
            GROUP_TRANSPORT, minimum=512, maximum=MAX_DATAGRAM_BYTES, metavar='BYTES'),
    _option('topic_timeout_sec', float, 3.0,
            'silence after which the session turns STALE and a sensor topic is removed',
            GROUP_BEHAVIOUR, **POSITIVE_SECONDS),
    _option('vehicle_command_timeout_sec', float, 0.5,
            'timeoutSeconds of typed actuator commands that give none: the mod stops the '
            'actuator when no newer command arrives within it',
            GROUP_BEHAVIOUR, minimum=MIN_COMMAND_TIMEOUT_SEC, maximum=MAX_COMMAND_TIMEOUT_SEC,
            metavar='SEC'),
    _option('disable_ground_truth', bool, False,
            'publish no ground truth topics and no world TF; VesselLifecycle.world_frame '
            'is empty', GROUP_BEHAVIOUR),
    _option('allow_remote_models', bool, False,
            'accept vessel model (URDF) datagrams from non-loopback senders',
            GROUP_BEHAVIOUR),
    _option('allow_servo_joints', bool, False,
            'accept the proxy-model extension in which a servo part hangs on a revolute or '
            'prismatic joint named as its joint_states entry (pylon_sim --servo-joints); '
            "the mod's own fixed-joint models are checked as strictly either way",
            GROUP_BEHAVIOUR),
    _option('publish_proxy_static_tf', bool, True,
            "publish the proxy model's fixed joints on /tf_static; turn off when "
            'robot_state_publisher publishes them from robot_description', GROUP_BEHAVIOUR),
    _option('diagnostics_period_sec', float, 1.0, 'period of the diagnostics messages',
            GROUP_BEHAVIOUR, **POSITIVE_SECONDS),
    _prefix('topic_prefix', '/ksp_vessel',
            "prefix of the active vessel's topics; every topic default derived from it "
            'follows it'),
    _prefix('bridge_prefix', '/pylon', "prefix of the bridge process's own topics"),
    _derived('status_topic', 'bridge_prefix', 'status', 'bridge state (latched)'),
    _derived('diagnostics_topic', 'bridge_prefix', 'diagnostics',
             'datagram counters, session and topic rates'),
    _derived('imu_topic', 'topic_prefix', 'imu/data_raw', 'IMU of the active vessel'),
    _derived('vessel_lifecycle_topic', 'topic_prefix', 'lifecycle',
             'vessel identity and frame lifecycle (latched)'),
    _derived('ground_truth_prefix', 'topic_prefix', 'ground_truth',
             'prefix of the ground truth topics (pose, twist, twist_body, acceleration, '
             'frame_angular_velocity, nearby_vessels)'),
    _derived('actuators_prefix', 'topic_prefix', 'actuators',
             'prefix of the typed actuator topics: servo, wheel, propulsion, rcs and '
             'separation, each with command and state'),
    _derived('docking_ports_prefix', 'topic_prefix', 'docking_ports',
             'prefix of the docking port topics (per port id: state, command, camera)'),
    _derived('joint_states_topic', 'topic_prefix', 'joint_states', 'state of every ROS servo'),
    _derived('robot_description_topic', 'topic_prefix', 'robot_description',
             'proxy URDF of the active vessel (latched)'),
    _derived('root_frame_topic', 'topic_prefix', 'root_frame',
             'root frame of the proxy model, for the RViz fixed frame (latched)'),
    _derived('body_wrench_command_topic', 'topic_prefix', 'control/wrench_command',
             'lease-bound base_link wrench commands (subscribed)'),
    _derived('control_authority_command_topic', 'topic_prefix', 'control/authority/command',
             'lease acquire, renew, release and emergency stop (subscribed)'),
    _derived('control_authority_state_topic', 'topic_prefix', 'control/authority/state',
             'the owner the mod confirmed (latched)'),
    _derived('wrench_feedback_topic', 'topic_prefix', 'control/wrench_feedback',
             'requested, allocated and achieved wrench'),
)

OPTION_BY_NAME: dict[str, Option] = {option.name: option for option in OPTIONS}


# -- values -------------------------------------------------------------------------------

def coerce(option: Option, value: Any) -> OptionValue:
    """Return ``value`` as the option's type; raise ValueError naming the option if it is not.

    An integer is accepted for a float option; a bool is never a number.
    """
    if option.type is bool:
        ok = isinstance(value, bool)
    elif option.type is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif option.type is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    else:
        ok = isinstance(value, str)
    if not ok:
        raise ValueError(f'{option.label}: expected a {TYPE_NAMES[option.type]}, '
                         f'got {value!r}')
    return float(value) if option.type is float else value


def check(option: Option, value: OptionValue) -> None:
    """Raise ValueError naming the option if ``value`` is out of range or not a topic name.

    ``''`` is accepted for a derived topic: it means "derive from the prefix".
    """
    if option.type in (int, float):
        low, high = option.minimum, option.maximum
        bad = (not math.isfinite(value)
               or (low is not None and (value <= low if option.exclusive_minimum
                                        else value < low))
               or (high is not None and value > high))
        if bad:
            raise ValueError(f'{option.label}: must be {option.range_text()}, got {value!r}')
    elif option.topic and not (option.derived and value == ''):
        problem = topic_name_problem(value)
        if problem:
            raise ValueError(f'{option.label}: {value!r} is not a valid ROS topic name '
                             f'({problem})')
    elif option.type is str and not option.topic and not value:
        raise ValueError(f'{option.label}: must not be empty')


_TOKEN = re.compile(r'^(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})+$')


def topic_name_problem(name: str) -> str:
    """Return why ``name`` is not a valid absolute or relative ROS topic name, or ``''``.

    rcl's rules, checked without loading rclpy (so that ``--help`` needs no ROS): not
    empty; ``~`` only as the first character and followed by ``/`` or nothing; tokens
    between slashes non-empty, made of letters, digits and underscores (or a ``{sub}``
    substitution) and not starting with a digit; no trailing slash.
    """
    if not name:
        return 'topic name must not be empty'
    body = name
    if body.startswith('~'):
        body = body[1:]
        if body and not body.startswith('/'):
            return "'~' must be followed by '/'"
        if not body:
            return ''
    if body.startswith('/'):
        body = body[1:]
    if not body:
        return 'topic name must not be only a slash'
    if body.endswith('/'):
        return 'topic name must not end with a slash'
    for token in body.split('/'):
        if not token:
            return 'topic name must not contain repeated slashes'
        if not _TOKEN.match(token):
            return (f'token {token!r} must contain only letters, digits and underscores '
                    'and must not start with a digit')
    return ''


def derive(prefix: str, suffix: str) -> str:
    """Return the topic ``suffix`` under ``prefix``."""
    return f'{prefix}/{suffix}'


def _config_topic(self: Any, key: str, **fields: str) -> str:
    """Return the topic name of ``key`` (a key of ``qos.TOPIC_QOS``) for this configuration.

    Names with a per-sensor part take it as a keyword, e.g.
    ``config.topic('star_tracker/state', id='st_1')``.
    """
    from pylon_bridge.qos import TOPIC_QOS
    if key not in TOPIC_QOS:
        raise KeyError(f'no topic with key {key!r}')
    values = {option.name: getattr(self, option.name) for option in OPTIONS}
    try:
        return TOPIC_QOS[key].name.format(**values, **fields)
    except KeyError as exc:
        raise ValueError(f'topic {key!r} needs {exc.args[0]}=...') from exc


BridgeConfig = dataclasses.make_dataclass(
    'BridgeConfig', [(option.name, option.type) for option in OPTIONS], frozen=True,
    namespace={
        '__doc__': 'The resolved options of the bridge: one attribute per option of '
                   '``OPTIONS`` (parameter names); build it with ``resolve``.',
        'topic': _config_topic,
    })
BridgeConfig.__module__ = __name__


def resolve(explicit_cli: Mapping[str, Any], parameters: Mapping[str, Any]) -> BridgeConfig:
    """Return the configuration from the flags given and the ROS parameters set.

    Precedence: explicit flag > ROS parameter > derived default > default. ``''`` for a
    derived topic, at either level, means "not set here". Every value is type-checked and
    validated; a ValueError names the option.
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
            if option.derived_from is not None:
                value = derive(value_of(option.derived_from), option.suffix)
            else:
                value = option.default
        check(option, value)
        values[name] = value
        return value

    for option in OPTIONS:
        value_of(option.name)
    return BridgeConfig(**values)


@functools.cache
def defaults() -> BridgeConfig:
    """Return the configuration when nothing is given."""
    return resolve({}, {})


def default_text(option: Option) -> str:
    """Return the default as shown to users, e.g. ``<topic-prefix>/lifecycle → /a/lifecycle``."""
    if option.derived:
        return f'{option.template} → {getattr(defaults(), option.name)}'
    if option.type is bool:
        return 'true' if option.default else 'false'
    return str(option.default)


# -- command line -------------------------------------------------------------------------

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


def _cli_type(option: Option) -> Callable[[str], OptionValue]:
    def convert(text: str) -> OptionValue:
        try:
            value = option.type(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f'expected a {TYPE_NAMES[option.type]}, got {text!r}') from None
        try:
            check(option, value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).split(': ', 1)[1]) from None
        return value
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
        text = option.help
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


# -- ROS parameters -----------------------------------------------------------------------

def parameter_descriptor(option: Option) -> ParameterDescriptor:
    """Return the read-only ``ParameterDescriptor`` of ``option`` with its range."""
    from rcl_interfaces.msg import (
        FloatingPointRange,
        IntegerRange,
        ParameterDescriptor,
        ParameterType,
    )
    kinds = {str: ParameterType.PARAMETER_STRING, int: ParameterType.PARAMETER_INTEGER,
             float: ParameterType.PARAMETER_DOUBLE, bool: ParameterType.PARAMETER_BOOL}
    descriptor = ParameterDescriptor(name=option.name, type=kinds[option.type],
                                     description=f'{option.help} (flag {option.flag})',
                                     read_only=True)
    constraints = []
    if option.range_text():
        constraints.append(option.range_text())
    if option.type is int:
        descriptor.integer_range = [IntegerRange(
            from_value=int(option.minimum), to_value=int(option.maximum), step=1)]
    elif option.type is float and option.minimum is not None:
        descriptor.floating_point_range = [FloatingPointRange(
            from_value=float(option.minimum),
            to_value=math.inf if option.maximum is None else float(option.maximum),
            step=0.0)]
    if option.topic:
        constraints.append('a valid ROS topic name')
    if option.derived:
        constraints.append(f"'' = {option.template}")
    descriptor.additional_constraints = '; '.join(constraints)
    return descriptor


def declare_parameters(node: Node) -> dict[str, OptionValue]:
    """Declare every option as a read-only ROS parameter; return the ones set.

    Derived topics are declared with ``''`` ("derive from the prefix"). The result maps
    parameter name to value for each parameter whose value differs from its declared
    default, ready for ``resolve``. Raise ValueError naming the option for a wrong type,
    an out-of-range value or an invalid topic name.
    """
    from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
    given: dict[str, OptionValue] = {}
    for option in OPTIONS:
        try:
            parameter = node.declare_parameter(option.name, option.default,
                                               parameter_descriptor(option))
        except InvalidParameterTypeException as exc:
            hint = ' (write a decimal point, e.g. 5.0)' if option.type is float else ''
            raise ValueError(f'{option.label}: the parameter must be a '
                             f'{TYPE_NAMES[option.type]}{hint}: {exc}') from exc
        except InvalidParameterValueException as exc:
            raise ValueError(f'{option.label}: must be {option.range_text()}: {exc}') from exc
        value = coerce(option, parameter.value)
        check(option, value)
        if value != option.default:
            given[option.name] = value
    return given


# -- documentation ------------------------------------------------------------------------

def _md(text: str) -> str:
    return text.replace('|', '\\|').replace('<', '&lt;')


def markdown_options() -> str:
    """Return the options as a Markdown table (flag, parameter, type, default, range, meaning)."""
    lines = ['| Flag | Parameter | Type | Default | Range | Meaning |',
             '|---|---|---|---|---|---|']
    for option in OPTIONS:
        if option.derived:
            default = f'`{option.template}` → `{getattr(defaults(), option.name)}`'
        else:
            default = f'`{default_text(option)}`'
        flag = f'`{option.flag}`'
        if option.type is bool:
            flag += f', `--no-{option.flag[2:]}`'
        lines.append(f'| {flag} | `{option.name}` | {TYPE_NAMES[option.type]} | {default} | '
                     f'{_md(option.range_text())} | {_md(option.help)} |')
    return '\n'.join(lines) + '\n'
