"""QoS of the bridge's topics: named profiles, the topic table, and overrides.

``TOPIC_QOS`` is the one place that says which message type and QoS profile each topic
of the bridge uses; the node, the README and the tests read it from here. Where the
topic specification gives a QoS, the profile is that one. Where it gives none, the
profile is ``DEFAULT_STREAM``: a Reliable publisher, because a Reliable publisher
matches both Reliable subscriptions (RViz's default, ``ros2 topic echo``) and Best Effort
ones (``qos_profile_sensor_data``), while a Best Effort publisher would never match
RViz's default Reliable subscription.

Every topic key has three read-only ROS parameters that override its profile:
``qos_overrides.<key>.reliability`` (``reliable`` | ``best_effort``),
``qos_overrides.<key>.durability`` (``volatile`` | ``transient_local``) and
``qos_overrides.<key>.depth`` (1-10000), e.g. ``-p qos_overrides.imu.depth:=50``.
The durability of ``tf`` and ``tf_static`` is fixed: tf2's static listener subscribes
Transient Local and never matches a Volatile ``/tf_static`` publisher, and ``/tf`` must
stay Volatile so that no outdated dynamic transform is replayed to a late joiner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TYPE_CHECKING

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from pylon_bridge import config

if TYPE_CHECKING:
    from rclpy.node import Node

RELIABLE = ReliabilityPolicy.RELIABLE
BEST_EFFORT = ReliabilityPolicy.BEST_EFFORT
VOLATILE = DurabilityPolicy.VOLATILE
TRANSIENT_LOCAL = DurabilityPolicy.TRANSIENT_LOCAL


def profile(reliability: ReliabilityPolicy, durability: DurabilityPolicy,
            depth: int) -> QoSProfile:
    """Return a new keep-last profile."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=reliability,
                      durability=durability)


LATCHED = profile(RELIABLE, TRANSIENT_LOCAL, 1)
"""Latched state (status, lifecycle, authority state, robot_description, root_frame).

Only the current value matters, and a subscriber started later (RViz,
robot_state_publisher, a controller) must get it at once.
"""

IMU = profile(BEST_EFFORT, VOLATILE, 10)
"""The IMU stream, as the topic specification says: the newest sample beats a resent one."""

GROUND_TRUTH = profile(BEST_EFFORT, VOLATILE, 10)
"""Ground truth pose, twist, twist_body and acceleration, as specified: newest sample wins."""

STAR_TRACKER = profile(RELIABLE, VOLATILE, 10)
"""Star tracker state and attitude, as specified: a 5 Hz stream whose invalid and stale
states must reach the estimator."""

COMMAND = profile(RELIABLE, VOLATILE, 10)
"""Commands (subscribed), as specified: none may be lost, and none is replayed to a late
joiner, so an old command never acts."""

ACTUATOR_STATE = profile(BEST_EFFORT, VOLATILE, 10)
"""Typed actuator state (servo, wheel, propulsion, RCS), as specified: newest sample wins."""

SEPARATION_STATE = profile(RELIABLE, TRANSIENT_LOCAL, 10)
"""Decoupler and fairing state, as specified: separations cannot be undone, so a late
subscriber still gets the recent results."""

TF = profile(RELIABLE, VOLATILE, 100)
"""``/tf``: what ``tf2_ros.TransformBroadcaster`` uses, so every tf2 listener matches."""

TF_STATIC = profile(RELIABLE, TRANSIENT_LOCAL, 1)
"""``/tf_static``: what ``tf2_ros.StaticTransformBroadcaster`` uses. Depth 1: every static
transform goes in one message, the only one a late joiner receives."""

DEFAULT_STREAM = profile(RELIABLE, VOLATILE, 10)
"""Streams the specification gives no QoS for (wrench feedback, joint states, nearby
vessels, frame angular velocity, diagnostics, LiDAR, cameras, docking port state).

A Reliable publisher matches Reliable subscriptions (RViz's default) and Best Effort
subscriptions (sensor-data subscribers) alike; a Best Effort publisher would not match
RViz's default Reliable subscription. Volatile: a stream has no state worth replaying.
"""

PROFILES: dict[str, QoSProfile] = {
    'LATCHED': LATCHED, 'IMU': IMU, 'GROUND_TRUTH': GROUND_TRUTH,
    'STAR_TRACKER': STAR_TRACKER, 'COMMAND': COMMAND, 'ACTUATOR_STATE': ACTUATOR_STATE,
    'SEPARATION_STATE': SEPARATION_STATE, 'TF': TF, 'TF_STATIC': TF_STATIC,
    'DEFAULT_STREAM': DEFAULT_STREAM,
}

PUBLISH = 'pub'
SUBSCRIBE = 'sub'


@dataclass(frozen=True)
class TopicQos:
    """One topic of the bridge: its name, message type, profile and why.

    ``name`` is a ``str.format`` template over the option names of ``config.OPTIONS``
    plus ``{id}`` for per-sensor topics; ``BridgeConfig.topic(key, id=...)`` fills it in.
    """

    key: str
    name: str
    type: str
    profile_name: str
    why: str
    direction: str = PUBLISH

    @property
    def profile(self) -> QoSProfile:
        """Return the named profile (shared: copy it before changing it)."""
        return PROFILES[self.profile_name]


SPECIFIED = 'as specified'
NO_SPEC = 'no QoS specified: reaches Reliable and Best Effort subscribers'
LATE_JOINER = 'latched: a late subscriber gets the current value'
SENSOR = 'sensor stream, no QoS specified: reaches RViz and sensor-data subscribers'

_ACTUATORS = (('servo', 'Motor'), ('wheel', 'Wheel'), ('propulsion', 'Engine'),
              ('rcs', 'Rcs'), ('separation', 'Separation'))


def _entries() -> list[TopicQos]:
    gt = '{ground_truth_prefix}'
    dock = '{docking_ports_prefix}/{id}'
    entries = [
        TopicQos('status', '{status_topic}', 'std_msgs/msg/String', 'LATCHED',
                 f'{SPECIFIED}; {LATE_JOINER}'),
        TopicQos('diagnostics', '{diagnostics_topic}', 'diagnostic_msgs/msg/DiagnosticArray',
                 'DEFAULT_STREAM', NO_SPEC),
        TopicQos('lifecycle', '{vessel_lifecycle_topic}', 'pylon_interfaces/msg/VesselLifecycle',
                 'LATCHED', f'{SPECIFIED}; {LATE_JOINER}'),
        TopicQos('imu', '{imu_topic}', 'sensor_msgs/msg/Imu', 'IMU',
                 f'{SPECIFIED}; newest sample wins (up to 30 Hz)'),
        TopicQos('ground_truth/pose', f'{gt}/pose', 'geometry_msgs/msg/PoseStamped',
                 'GROUND_TRUTH', f'{SPECIFIED}; newest sample wins'),
        TopicQos('ground_truth/twist', f'{gt}/twist', 'geometry_msgs/msg/TwistStamped',
                 'GROUND_TRUTH', f'{SPECIFIED}; newest sample wins'),
        TopicQos('ground_truth/twist_body', f'{gt}/twist_body',
                 'geometry_msgs/msg/TwistStamped', 'GROUND_TRUTH',
                 f'{SPECIFIED}; newest sample wins'),
        TopicQos('ground_truth/acceleration', f'{gt}/acceleration',
                 'geometry_msgs/msg/AccelStamped', 'GROUND_TRUTH',
                 f'{SPECIFIED}; newest sample wins'),
        TopicQos('ground_truth/frame_angular_velocity', f'{gt}/frame_angular_velocity',
                 'geometry_msgs/msg/Vector3Stamped', 'DEFAULT_STREAM', NO_SPEC),
        TopicQos('ground_truth/nearby_vessels', f'{gt}/nearby_vessels',
                 'pylon_interfaces/msg/NearbyVessels', 'DEFAULT_STREAM', NO_SPEC),
        TopicQos('joint_states', '{joint_states_topic}', 'sensor_msgs/msg/JointState',
                 'DEFAULT_STREAM', f'{NO_SPEC} (robot_state_publisher, RViz)'),
        TopicQos('robot_description', '{robot_description_topic}', 'std_msgs/msg/String',
                 'LATCHED', f'{SPECIFIED}; robot_state_publisher and RViz may start later'),
        TopicQos('root_frame', '{root_frame_topic}', 'std_msgs/msg/String', 'LATCHED',
                 f'{SPECIFIED}; {LATE_JOINER}'),
        TopicQos('tf', '/tf', 'tf2_msgs/msg/TFMessage', 'TF',
                 "tf2's broadcaster QoS; durability fixed"),
        TopicQos('tf_static', '/tf_static', 'tf2_msgs/msg/TFMessage', 'TF_STATIC',
                 "tf2's static broadcaster QoS, all transforms in one message; "
                 'durability fixed'),
        TopicQos('control/authority/command', '{control_authority_command_topic}',
                 'pylon_interfaces/msg/ControlAuthorityCommand', 'COMMAND',
                 f'{SPECIFIED}; no command lost, none replayed', SUBSCRIBE),
        TopicQos('control/authority/state', '{control_authority_state_topic}',
                 'pylon_interfaces/msg/ControlAuthorityState', 'LATCHED',
                 f'{SPECIFIED}; a controller started later sees the owner'),
        TopicQos('control/wrench_command', '{body_wrench_command_topic}',
                 'pylon_interfaces/msg/BodyWrenchCommand', 'COMMAND',
                 f'{SPECIFIED}; no command lost, none replayed', SUBSCRIBE),
        TopicQos('control/wrench_feedback', '{wrench_feedback_topic}',
                 'pylon_interfaces/msg/WrenchFeedback', 'DEFAULT_STREAM', NO_SPEC),
        TopicQos('star_tracker/state', '{topic_prefix}/star_tracker/{id}/state',
                 'pylon_interfaces/msg/StarTrackerState', 'STAR_TRACKER',
                 f'{SPECIFIED}; invalid and stale states must arrive'),
        TopicQos('star_tracker/attitude', '{topic_prefix}/star_tracker/{id}/attitude',
                 'geometry_msgs/msg/QuaternionStamped', 'STAR_TRACKER', SPECIFIED),
        TopicQos('lidar_2d', '{topic_prefix}/lidar_2d/{id}/scan', 'sensor_msgs/msg/LaserScan',
                 'DEFAULT_STREAM', SENSOR),
        TopicQos('lidar_3d', '{topic_prefix}/lidar_3d/{id}/points',
                 'sensor_msgs/msg/PointCloud2', 'DEFAULT_STREAM', SENSOR),
        TopicQos('camera', '{topic_prefix}/camera/{id}/image_raw', 'sensor_msgs/msg/Image',
                 'DEFAULT_STREAM', SENSOR),
        TopicQos('camera_info', '{topic_prefix}/camera/{id}/camera_info',
                 'sensor_msgs/msg/CameraInfo', 'DEFAULT_STREAM', SENSOR),
        TopicQos('docking_port/state', f'{dock}/state', 'pylon_interfaces/msg/DockingPortState',
                 'DEFAULT_STREAM', NO_SPEC),
        TopicQos('docking_port/command', f'{dock}/command',
                 'pylon_interfaces/msg/DockingPortCommand', 'COMMAND',
                 'a command like the others: none lost, none replayed', SUBSCRIBE),
        TopicQos('docking_port/camera', f'{dock}/camera/image_raw', 'sensor_msgs/msg/Image',
                 'DEFAULT_STREAM', SENSOR),
        TopicQos('docking_port/camera_info', f'{dock}/camera/camera_info',
                 'sensor_msgs/msg/CameraInfo', 'DEFAULT_STREAM', SENSOR),
    ]
    for kind, msg in _ACTUATORS:
        entries.append(TopicQos(
            f'actuators/{kind}/command', f'{{actuators_prefix}}/{kind}/command',
            f'pylon_interfaces/msg/{msg}Command', 'COMMAND',
            f'{SPECIFIED}; no command lost, none replayed', SUBSCRIBE))
        separation = kind == 'separation'
        entries.append(TopicQos(
            f'actuators/{kind}/state', f'{{actuators_prefix}}/{kind}/state',
            f'pylon_interfaces/msg/{msg}State',
            'SEPARATION_STATE' if separation else 'ACTUATOR_STATE',
            f'{SPECIFIED}; late subscribers get the irreversible results' if separation
            else f'{SPECIFIED}; newest sample wins'))
    return entries


TOPIC_QOS: dict[str, TopicQos] = {entry.key: entry for entry in _entries()}

# -- overrides ----------------------------------------------------------------------------

POLICIES = ('reliability', 'durability', 'depth')
FIXED_DURABILITY = frozenset({'tf', 'tf_static'})
MAX_DEPTH = 10000
RELIABILITY_NAMES = {'reliable': RELIABLE, 'best_effort': BEST_EFFORT}
DURABILITY_NAMES = {'volatile': VOLATILE, 'transient_local': TRANSIENT_LOCAL}

Overrides = Mapping[str, Mapping[str, Any]]


def parameter_name(key: str, policy: str) -> str:
    """Return the name of the ROS parameter that overrides ``policy`` of topic ``key``."""
    return f'qos_overrides.{key}.{policy}'


def policy_text(qos: QoSProfile, policy: str) -> str | int:
    """Return ``policy`` of ``qos`` as its parameter value (e.g. ``'best_effort'``, 10)."""
    if policy == 'reliability':
        return next(k for k, v in RELIABILITY_NAMES.items() if v == qos.reliability)
    if policy == 'durability':
        return next(k for k, v in DURABILITY_NAMES.items() if v == qos.durability)
    return qos.depth


def _entry(key: str) -> TopicQos:
    try:
        return TOPIC_QOS[key]
    except KeyError:
        raise KeyError(f'no topic with key {key!r}; keys: {", ".join(TOPIC_QOS)}') from None


def _check_override(key: str, policy: str, value: Any) -> None:
    name = parameter_name(key, policy)
    if policy == 'reliability':
        if value not in RELIABILITY_NAMES:
            raise ValueError(f"{name}: must be 'reliable' or 'best_effort', got {value!r}")
    elif policy == 'durability':
        if value not in DURABILITY_NAMES:
            raise ValueError(f"{name}: must be 'volatile' or 'transient_local', got {value!r}")
        if key in FIXED_DURABILITY and value != policy_text(_entry(key).profile, policy):
            raise ValueError(f'{name}: the durability of {key} cannot be overridden '
                             '(tf2 listeners rely on it)')
    elif policy == 'depth':
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DEPTH:
            raise ValueError(f'{name}: must be an integer 1-{MAX_DEPTH}, got {value!r}')
    else:
        raise ValueError(f'{name}: unknown QoS policy {policy!r}; one of {", ".join(POLICIES)}')


def qos_for(key: str, overrides: Overrides | None = None) -> QoSProfile:
    """Return a new profile for topic ``key``, with ``overrides[key]`` applied.

    ``overrides`` maps topic key to ``{policy: value}`` as ``declare_qos_parameters``
    returns it. Raise KeyError for an unknown key and ValueError for a bad override.
    """
    base = _entry(key).profile
    values = {policy: policy_text(base, policy) for policy in POLICIES}
    for policy, value in ((overrides or {}).get(key) or {}).items():
        _check_override(key, policy, value)
        values[policy] = value
    return profile(RELIABILITY_NAMES[values['reliability']],
                   DURABILITY_NAMES[values['durability']], values['depth'])


def declare_qos_parameters(node: Node) -> dict[str, dict[str, str | int]]:
    """Declare the read-only ``qos_overrides.<key>.<policy>`` parameters; return the given.

    Each parameter is declared with the topic's profile as default; the result holds,
    per topic key, the policies whose value differs from it. Raise ValueError naming
    the parameter for a wrong value, including any change of tf or tf_static durability.
    """
    from rcl_interfaces.msg import IntegerRange, ParameterDescriptor, ParameterType
    from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
    overrides: dict[str, dict[str, str | int]] = {}
    for key, entry in TOPIC_QOS.items():
        for policy in POLICIES:
            name = parameter_name(key, policy)
            default = policy_text(entry.profile, policy)
            descriptor = ParameterDescriptor(
                name=name, read_only=True,
                description=f'QoS {policy} of {entry.name} ({entry.profile_name})')
            if policy == 'depth':
                descriptor.type = ParameterType.PARAMETER_INTEGER
                descriptor.integer_range = [IntegerRange(from_value=1, to_value=MAX_DEPTH,
                                                         step=1)]
                descriptor.additional_constraints = f'1-{MAX_DEPTH}'
            else:
                descriptor.type = ParameterType.PARAMETER_STRING
                names = RELIABILITY_NAMES if policy == 'reliability' else DURABILITY_NAMES
                descriptor.additional_constraints = ' or '.join(names)
                if policy == 'durability' and key in FIXED_DURABILITY:
                    descriptor.additional_constraints = f'fixed: {default} (tf2 relies on it)'
            try:
                value = node.declare_parameter(name, default, descriptor).value
            except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
                raise ValueError(f'{name}: {descriptor.additional_constraints}: {exc}') from exc
            _check_override(key, policy, value)
            if value != default:
                overrides.setdefault(key, {})[policy] = value
    return overrides


# -- documentation ------------------------------------------------------------------------

RELIABILITY_TITLES = {RELIABLE: 'Reliable', BEST_EFFORT: 'Best Effort'}
DURABILITY_TITLES = {VOLATILE: 'Volatile', TRANSIENT_LOCAL: 'Transient Local'}


def default_topic_name(key: str) -> str:
    """Return the topic name of ``key`` with every option at its default (ids as ``<id>``)."""
    return config.defaults().topic(key, id='<id>')


def markdown_table() -> str:
    """Return ``TOPIC_QOS`` as a Markdown table for the README."""
    lines = ['| Topic (default name) | Key | Dir. | Type | Reliability | Durability | Depth '
             '| Why |',
             '|---|---|---|---|---|---|---|---|']
    for key, entry in TOPIC_QOS.items():
        qos = entry.profile
        lines.append(
            f'| `{default_topic_name(key)}` | `{key}` | {entry.direction} | `{entry.type}` | '
            f'{RELIABILITY_TITLES[qos.reliability]} | {DURABILITY_TITLES[qos.durability]} | '
            f'{qos.depth} | {entry.profile_name}: {entry.why} |')
    return '\n'.join(lines) + '\n'
