"""The topic contract: every topic and service of the workspace, in one table.

A row (``Topic``) says what a topic is: its name relative to its namespace, its message
type, its QoS profile (``pylon_common.qos``), the node that owns it and in which direction
(the bridge publishes ``imu``, subscribes to ``control/wrench_command``), the other nodes
of the workspace that read it or write to it, and why its QoS is what it is. The bridge,
the controller, the estimator, the evaluator, the relays, the native runner and the
benchmarks all take their names, types and QoS from here; the README's topic table is
generated from it.

Namespaces. The active vessel's topics live under ``topic_prefix`` (default
``/ksp_vessel``), the bridge's own under ``bridge_prefix`` (default ``/pylon``): every node
has both as parameters, and ``name()`` joins a row's relative name to them. ``/tf`` and
``/tf_static`` are global. A node's own topics (the controller's setpoint) are private
(``~/setpoint``), the estimator's output relative (``pylon_estimator/odometry``): ROS
resolves them in the node's namespace. With relative prefixes (``topic_prefix:=ksp_vessel``)
a whole stack follows a namespace (``--ros-args -r __ns:=/vehicle_2``), and ROS remapping
(``-r /ksp_vessel/imu/data_raw:=/my/imu``) works on every resolved name as usual.

Every node that reports diagnostics publishes each report twice: on its own topic (the
bridge's ``/pylon/diagnostics``, the controller's ``~/diagnostics``) and on the global
``/diagnostics`` (``ROS_DIAGNOSTICS``), where ROS tools look.

Per-sensor and per-port topics carry ``{id}`` in their name (``star_tracker/{id}/state``).
Plain data: nothing here imports rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass
import importlib
from typing import Any

from pylon_common import mission
from pylon_common import qos as profiles
from pylon_common.parameters import Parameter

# -- namespaces, directions, nodes ------------------------------------------------------------

VESSEL = 'vessel'        # under topic_prefix
BRIDGE = 'bridge'        # under bridge_prefix
GLOBAL = 'global'        # an absolute name (/tf)
PRIVATE = 'private'      # the owner's private namespace (~/name)
RELATIVE = 'relative'    # relative to the owner's namespace

PUBLISHES = 'pub'
SUBSCRIBES = 'sub'
SERVES = 'srv'

UDP_BRIDGE = 'udp_bridge'
SETPOINT_CONTROLLER = 'setpoint_controller'
ATTITUDE_ESTIMATOR = 'attitude_estimator'
ATTITUDE_EVALUATOR = 'attitude_evaluator'
DESCRIPTION_RELAY = 'description_relay'
NEARBY_MARKERS = 'nearby_markers'
ROBOT_STATE_PUBLISHER = 'robot_state_publisher'
SIM_MANAGER = 'sim_manager'
REFEREE = 'referee'
RENDEZVOUS_CHASER = 'rendezvous_chaser'
VIEWER = 'pylon_viewer'
PYLON_RECORDER = 'pylon_recorder'
KART_INTERFACE = 'kart_interface'
KART_LOCALIZER = 'kart_localizer'
TRAJECTORY_PUBLISHER = 'trajectory_publisher'
PURE_PURSUIT = 'pure_pursuit'
RACE_VIEW = 'race_view'

DEFAULT_TOPIC_PREFIX = '/ksp_vessel'
DEFAULT_BRIDGE_PREFIX = '/pylon'

TOPIC_PREFIX = Parameter(
    'topic_prefix', DEFAULT_TOPIC_PREFIX,
    "prefix of the active vessel's topics; every topic default derived from it follows it "
    '(relative, e.g. ksp_vessel: resolved in the node namespace)', topic=True,
    metavar='PREFIX')
BRIDGE_PREFIX = Parameter(
    'bridge_prefix', DEFAULT_BRIDGE_PREFIX, "prefix of the bridge process's own topics",
    topic=True, metavar='PREFIX')


@dataclass(frozen=True)
class Topic:
    """One topic (or service) of the workspace.

    ``ground_truth``: the topic carries the game's truth rather than what the vessel could
    measure (``GROUND_TRUTH_KEYS``); the bridge publishes it only where ground truth may go.
    """

    key: str
    name: str
    type: str
    qos: str
    owner: str
    direction: str
    namespace: str
    why: str
    readers: tuple[str, ...] = ()
    writers: tuple[str, ...] = ()
    ground_truth: bool = False

    @property
    def users(self) -> tuple[str, ...]:
        """Return the other nodes of the workspace that read or write the topic."""
        return self.readers + self.writers

    @property
    def profile(self) -> profiles.Profile | None:
        """Return the QoS profile (data) of the topic; None for a service."""
        return profiles.PROFILES.get(self.qos)

    def default_name(self, id: str = '<id>') -> str:
        """Return the fully qualified name with every prefix at its default (root namespace)."""
        if self.namespace == PRIVATE:
            return f'/{self.owner}/{self.name}'
        if self.namespace == RELATIVE:
            return f'/{self.name}'
        return name(self.key, id=id)


SPECIFIED = 'as specified'
NO_SPEC = 'no QoS specified: reaches Reliable and Best Effort subscribers'
LATE_JOINER = 'latched: a late subscriber gets the current value'
SENSOR = 'sensor stream, no QoS specified: reaches RViz and sensor-data subscribers'
NEWEST = f'{SPECIFIED}; newest sample wins'
NO_REPLAY = f'{SPECIFIED}; no command lost, none replayed'

_CONTROL = (SETPOINT_CONTROLLER,)
ROS_DIAGNOSTICS = 'ros_diagnostics'
"""``/diagnostics``: every node's DiagnosticArray also goes there (each status with its
name, hardware_id and level), besides the node's own diagnostics topic."""
_DIAGNOSED = (SETPOINT_CONTROLLER, ATTITUDE_ESTIMATOR, ATTITUDE_EVALUATOR, RENDEZVOUS_CHASER,
              DESCRIPTION_RELAY, NEARBY_MARKERS, VIEWER, PYLON_RECORDER, SIM_MANAGER, REFEREE,
              KART_INTERFACE, KART_LOCALIZER, PURE_PURSUIT)
"""The nodes besides the bridge that publish their status on ``/diagnostics``."""
_ACTUATORS = (('servo', 'Motor'), ('wheel', 'Wheel'), ('propulsion', 'Engine'),
              ('rcs', 'Rcs'), ('separation', 'Separation'))


def _bridge(key: str, name: str, kind: str, qos: str, why: str, direction: str = PUBLISHES,
            namespace: str = VESSEL, readers: tuple[str, ...] = (),
            writers: tuple[str, ...] = (), ground_truth: bool = False) -> Topic:
    return Topic(key, name, kind, qos, UDP_BRIDGE, direction, namespace, why, readers, writers,
                 ground_truth)


def _truth(key: str, name: str, kind: str, qos: str, why: str,
           readers: tuple[str, ...] = ()) -> Topic:
    """Return a ground-truth topic of the bridge (``Topic.ground_truth``)."""
    return _bridge(key, name, kind, qos, why, readers=readers, ground_truth=True)


_MSG = 'pylon_interfaces/msg/'

BRIDGE_TOPICS: tuple[Topic, ...] = (
    _bridge('status', 'status', 'std_msgs/msg/String', 'LATCHED',
            f'{SPECIFIED}; {LATE_JOINER}', namespace=BRIDGE),
    _bridge('diagnostics', 'diagnostics', 'diagnostic_msgs/msg/DiagnosticArray',
            'DEFAULT_STREAM', NO_SPEC, namespace=BRIDGE),
    _bridge(ROS_DIAGNOSTICS, '/diagnostics', 'diagnostic_msgs/msg/DiagnosticArray',
            'DEFAULT_STREAM', f'{NO_SPEC}; the ROS convention: diagnostic_aggregator and '
            'rqt_robot_monitor read it', namespace=GLOBAL, writers=_DIAGNOSED),
    _bridge('lifecycle', 'lifecycle', _MSG + 'VesselLifecycle', 'LATCHED',
            f'{SPECIFIED}; {LATE_JOINER}',
            readers=(SETPOINT_CONTROLLER, ATTITUDE_ESTIMATOR, SIM_MANAGER)),
    _bridge('imu', 'imu/data_raw', 'sensor_msgs/msg/Imu', 'IMU',
            f'{SPECIFIED}; newest sample wins (up to 30 Hz)',
            readers=(SETPOINT_CONTROLLER, ATTITUDE_ESTIMATOR)),
    _truth('ground_truth/pose', 'ground_truth/pose', 'geometry_msgs/msg/PoseStamped',
           'GROUND_TRUTH', NEWEST, readers=(ATTITUDE_EVALUATOR,)),
    _truth('ground_truth/twist', 'ground_truth/twist', 'geometry_msgs/msg/TwistStamped',
           'GROUND_TRUTH', NEWEST),
    _truth('ground_truth/twist_body', 'ground_truth/twist_body',
           'geometry_msgs/msg/TwistStamped', 'GROUND_TRUTH', NEWEST),
    _truth('ground_truth/acceleration', 'ground_truth/acceleration',
           'geometry_msgs/msg/AccelStamped', 'GROUND_TRUTH', NEWEST),
    _truth('ground_truth/kinematic_state', 'ground_truth/kinematic_state',
           'nav_msgs/msg/Odometry', 'GROUND_TRUTH',
           f'{NEWEST}; pose (world frame) and body twist (base_link) of one sample in one '
           'message, as the AI Challenge carries its ground truth'),
    _truth('ground_truth/frame_angular_velocity', 'ground_truth/frame_angular_velocity',
           'geometry_msgs/msg/Vector3Stamped', 'DEFAULT_STREAM', NO_SPEC,
           readers=(ATTITUDE_EVALUATOR,)),
    _truth('ground_truth/nearby_vessels', 'ground_truth/nearby_vessels',
           _MSG + 'NearbyVessels', 'DEFAULT_STREAM', NO_SPEC, readers=(NEARBY_MARKERS, REFEREE)),
    _bridge('joint_states', 'joint_states', 'sensor_msgs/msg/JointState', 'DEFAULT_STREAM',
            f'{NO_SPEC} (robot_state_publisher, RViz)', readers=(ROBOT_STATE_PUBLISHER,)),
    _bridge('robot_description', 'robot_description', 'std_msgs/msg/String', 'LATCHED',
            f'{SPECIFIED}; robot_state_publisher and RViz may start later',
            readers=(SETPOINT_CONTROLLER, DESCRIPTION_RELAY)),
    _bridge('root_frame', 'root_frame', 'std_msgs/msg/String', 'LATCHED',
            f'{SPECIFIED}; {LATE_JOINER}'),
    _bridge('tf', '/tf', 'tf2_msgs/msg/TFMessage', 'TF',
            "tf2's broadcaster QoS; durability fixed", namespace=GLOBAL,
            writers=(ATTITUDE_ESTIMATOR, ROBOT_STATE_PUBLISHER, KART_LOCALIZER)),
    _bridge('tf_static', '/tf_static', 'tf2_msgs/msg/TFMessage', 'TF_STATIC',
            "tf2's static broadcaster QoS, all transforms in one message; "
            'durability fixed', namespace=GLOBAL, writers=(ROBOT_STATE_PUBLISHER,)),
    _bridge('control/authority/command', 'control/authority/command',
            _MSG + 'ControlAuthorityCommand', 'COMMAND', NO_REPLAY, SUBSCRIBES,
            writers=_CONTROL),
    _bridge('control/authority/state', 'control/authority/state',
            _MSG + 'ControlAuthorityState', 'LATCHED',
            f'{SPECIFIED}; a controller started later sees the owner', readers=_CONTROL),
    _bridge('control/wrench_command', 'control/wrench_command', _MSG + 'BodyWrenchCommand',
            'COMMAND', NO_REPLAY, SUBSCRIBES, writers=_CONTROL),
    _bridge('control/wrench_feedback', 'control/wrench_feedback', _MSG + 'WrenchFeedback',
            'DEFAULT_STREAM', NO_SPEC, readers=_CONTROL),
    _bridge('star_tracker/state', 'star_tracker/{id}/state', _MSG + 'StarTrackerState',
            'STAR_TRACKER', f'{SPECIFIED}; invalid and stale states must arrive',
            readers=(ATTITUDE_ESTIMATOR,)),
    _bridge('star_tracker/attitude', 'star_tracker/{id}/attitude',
            'geometry_msgs/msg/QuaternionStamped', 'STAR_TRACKER', SPECIFIED),
    _bridge('lidar_2d', 'lidar_2d/{id}/scan', 'sensor_msgs/msg/LaserScan',
            'DEFAULT_STREAM', SENSOR),
    _bridge('lidar_3d', 'lidar_3d/{id}/points', 'sensor_msgs/msg/PointCloud2',
            'DEFAULT_STREAM', SENSOR),
    _bridge('camera', 'camera/{id}/image_raw', 'sensor_msgs/msg/Image', 'DEFAULT_STREAM',
            SENSOR),
    _bridge('camera_info', 'camera/{id}/camera_info', 'sensor_msgs/msg/CameraInfo',
            'DEFAULT_STREAM', SENSOR),
    _bridge('relative_nav', 'relative_nav/{id}/targets', _MSG + 'NearbyVessels',
            'DEFAULT_STREAM', f"{SENSOR}; our simulator's extension, the mod sends none",
            readers=(RENDEZVOUS_CHASER,)),
    _bridge('gnss', 'gnss/{id}/fix', 'sensor_msgs/msg/NavSatFix', 'DEFAULT_STREAM',
            f"{SENSOR}; our simulator's extension, the mod sends none"),
    _bridge('docking_port/state', 'docking_ports/{id}/state', _MSG + 'DockingPortState',
            'DEFAULT_STREAM', NO_SPEC),
    _bridge('docking_port/command', 'docking_ports/{id}/command', _MSG + 'DockingPortCommand',
            'COMMAND', 'a command like the others: none lost, none replayed', SUBSCRIBES),
    _bridge('docking_port/camera', 'docking_ports/{id}/camera/image_raw',
            'sensor_msgs/msg/Image', 'DEFAULT_STREAM', SENSOR),
    _truth('ground_truth/flight', 'ground_truth/flight', _MSG + 'FlightState', 'GROUND_TRUTH',
           f'{NEWEST}; as the public PyLoN bridge', readers=(REFEREE,)),
    _bridge('simulator/state', 'simulator/state', _MSG + 'SimulatorState', 'LATCHED',
            f'{LATE_JOINER}; as the public PyLoN bridge'),
    _bridge('simulator/universal_time', 'simulator/universal_time', 'std_msgs/msg/Float64',
            'LATCHED', f'{LATE_JOINER}; as the public PyLoN documentation'),
    _bridge('clock', '/clock', 'rosgraph_msgs/msg/Clock', 'CLOCK',
            'only with --publish-clock; game time for use_sim_time', namespace=GLOBAL),
    _bridge('control/flight_command', 'control/flight_command',
            _MSG + 'FlightControlCommand', 'COMMAND', NO_REPLAY, SUBSCRIBES),
    _bridge('control/batch', 'control/batch', _MSG + 'ControlBatch', 'COMMAND', NO_REPLAY,
            SUBSCRIBES),
    _truth('control/snapshot', 'control/snapshot', _MSG + 'ControlSnapshot',
           'CONTROL_SNAPSHOT', 'as the public PyLoN bridge'),
    _bridge('health/power', 'health/power', _MSG + 'VehicleHealth', 'HEALTH',
            'as the public PyLoN bridge'),
    _bridge('health/thermal', 'health/thermal', _MSG + 'PartThermalState', 'HEALTH',
            'as the public PyLoN bridge'),
    _bridge('actuators/separation/result', 'actuators/separation/result',
            _MSG + 'SeparationResult', 'SEPARATION_RESULT', 'as the public PyLoN bridge'),
    _bridge('actuators/separation/get_result', 'actuators/separation/get_result',
            'pylon_interfaces/srv/GetSeparationResult', '', 'a service: the cached result, '
            'or a query to the game', SERVES),
    _bridge('docking_port/camera_info', 'docking_ports/{id}/camera/camera_info',
            'sensor_msgs/msg/CameraInfo', 'DEFAULT_STREAM', SENSOR),
) + tuple(row for kind, prefix in _ACTUATORS for row in (
    _bridge(f'actuators/{kind}/command', f'actuators/{kind}/command',
            f'{_MSG}{prefix}Command', 'COMMAND', NO_REPLAY, SUBSCRIBES),
    _bridge(f'actuators/{kind}/state', f'actuators/{kind}/state', f'{_MSG}{prefix}State',
            'SEPARATION_STATE' if kind == 'separation' else 'ACTUATOR_STATE',
            f'{SPECIFIED}; late subscribers get the irreversible results'
            if kind == 'separation' else NEWEST)))
"""What udp_bridge publishes and subscribes to."""


NODE_TOPICS: tuple[Topic, ...] = (
    Topic('setpoint', 'setpoint', 'pylon_interfaces/msg/ControlSetpoint', 'COMMAND',
          SETPOINT_CONTROLLER, SUBSCRIBES, PRIVATE,
          "the user's setpoints: none lost, none replayed", (ATTITUDE_EVALUATOR,),
          (RENDEZVOUS_CHASER, VIEWER)),
    Topic('controller/diagnostics', 'diagnostics', 'diagnostic_msgs/msg/DiagnosticArray',
          'DEFAULT_STREAM', SETPOINT_CONTROLLER, PUBLISHES, PRIVATE, NO_SPEC,
          (RENDEZVOUS_CHASER,)),
    Topic('odometry', 'pylon_estimator/odometry', 'nav_msgs/msg/Odometry', 'DEFAULT_STREAM',
          ATTITUDE_ESTIMATOR, PUBLISHES, RELATIVE, NO_SPEC,
          (SETPOINT_CONTROLLER, ATTITUDE_EVALUATOR, RENDEZVOUS_CHASER)),
    Topic('nearby_markers', 'nearby_markers', 'visualization_msgs/msg/MarkerArray',
          'DEFAULT_STREAM', NEARBY_MARKERS, PUBLISHES, BRIDGE, f'{NO_SPEC} (RViz)'),
    Topic('robot_state_publisher/set_parameters', '/robot_state_publisher/set_parameters',
          'rcl_interfaces/srv/SetParameters', '', ROBOT_STATE_PUBLISHER, SERVES, GLOBAL,
          'a service: description_relay sets robot_description through it',
          (DESCRIPTION_RELAY,)),
)
"""The topics and services the other nodes own."""


_ADMIN = 'the management domain only (a vehicle domain never carries it)'
_OURS = "our extension, not the interface's"
_MISSION = 'std_msgs/msg/String'
_STATUS = 'std_msgs/msg/Float32MultiArray'
_INTERFACE = "the interface's name and type"
_EVERY_SECOND = ('also republished every second, so a Volatile subscriber started later '
                 'learns it within a second')

MISSION_TOPICS: tuple[Topic, ...] = (
    Topic('admin/state', '/admin/awsim/state', _MISSION, 'LATCHED', SIM_MANAGER, PUBLISHES,
          GLOBAL, f'{_INTERFACE}; {LATE_JOINER}; {_ADMIN}'),
    Topic('admin/start', '/admin/awsim/start', 'std_msgs/msg/Bool', 'COMMAND', SIM_MANAGER,
          SUBSCRIBES, GLOBAL, f'{_INTERFACE}; {NO_REPLAY}; {_ADMIN}'),
    Topic('admin/reset', '/admin/awsim/reset', 'std_msgs/msg/Empty', 'COMMAND', SIM_MANAGER,
          SUBSCRIBES, GLOBAL, f'{_INTERFACE}; {NO_REPLAY}; {_ADMIN}'),
    Topic('admin/mission', '/admin/awsim/mission', _MISSION, 'LATCHED', SIM_MANAGER,
          PUBLISHES, GLOBAL, f'{_OURS}; {LATE_JOINER}; the task and the vehicles, JSON; '
          f'{_ADMIN}', (REFEREE,)),
    Topic('admin/ranking', '/admin/awsim/ranking', _MISSION, 'LATCHED', REFEREE, PUBLISHES,
          GLOBAL, f'{_OURS}; {LATE_JOINER}; JSON; {_ADMIN}', (SIM_MANAGER,)),
    Topic('admin/vehicle_state', mission.in_management('{id}', '/awsim/state'), _MISSION,
          'LATCHED', SIM_MANAGER, PUBLISHES, GLOBAL,
          f"vehicle <id>'s /awsim/state mirrored; {LATE_JOINER}; {_EVERY_SECOND}; {_ADMIN}"),
    Topic('admin/vehicle_status', mission.in_management('{id}', '/awsim/status'), _STATUS,
          'DEFAULT_STREAM', SIM_MANAGER, PUBLISHES, GLOBAL,
          f"vehicle <id>'s /awsim/status mirrored; {NO_SPEC}; {_ADMIN}"),
    Topic('admin/on_collision',
          mission.in_management('{id}', mission.GROUND_TRUTH + '/on_collision'),
          'std_msgs/msg/Bool', 'DEFAULT_STREAM', SIM_MANAGER, PUBLISHES, GLOBAL,
          f"{_INTERFACE} (ground truth); vehicle <id>'s, every poll of the simulator: true "
          f"when a collision of the kart began since the last (a race's); {_ADMIN}"),
    Topic('awsim/state', '/awsim/state', _MISSION, 'LATCHED', SIM_MANAGER, PUBLISHES,
          GLOBAL, f"{_INTERFACE}; {LATE_JOINER}; {_EVERY_SECOND}; in each vehicle domain, "
          "that vehicle's (pylon_common.mission)", (RENDEZVOUS_CHASER,)),
    Topic('awsim/status', '/awsim/status', _STATUS, 'DEFAULT_STREAM', SIM_MANAGER, PUBLISHES,
          GLOBAL, f"{_INTERFACE}; {NO_SPEC}; in each vehicle domain, that vehicle's "
          '(pylon_common.mission)'),
    Topic('awsim/cmd', '/awsim/cmd', _STATUS, 'SENSOR_READER', SIM_MANAGER, SUBSCRIBES,
          GLOBAL,
          f"{_INTERFACE} (its later revision); index 0 the boost command (a rising edge to "
          '>= 1.0 fires one), forwarded to the race when it changes; read Best Effort, so '
          "that a team's Reliable or Best Effort publisher reaches it; in each vehicle "
          "domain, that vehicle's"),
)
"""What the mission management and the referee publish and subscribe to (pylon_mission)."""


_AUTOWARE = 'autoware_auto_vehicle_msgs/msg/'
_KART = "the competition's name and type"


def _kart(key: str, name: str, kind: str, qos: str, why: str,
          direction: str = PUBLISHES, readers: tuple[str, ...] = (),
          writers: tuple[str, ...] = ()) -> Topic:
    """Return a topic of the kart's vehicle interface (the competition's, absolute)."""
    return Topic(f'kart/{key}', name, kind, qos, KART_INTERFACE, direction, GLOBAL,
                 f'{_KART}; {why}', readers, writers)


KART_TOPICS: tuple[Topic, ...] = (
    _kart('control_cmd', '/control/command/control_cmd',
          'autoware_auto_control_msgs/msg/AckermannControlCommand', 'LATEST_COMMAND',
          'steering_tire_angle and acceleration act; the newest wins', SUBSCRIBES,
          writers=(PURE_PURSUIT,)),
    _kart('actuation_cmd', '/control/command/actuation_cmd',
          'tier4_vehicle_msgs/msg/ActuationCommandStamped', 'LATEST_COMMAND',
          'accel and brake 0..1, steer rad; the newest wins', SUBSCRIBES),
    _kart('gear_cmd', '/control/command/gear_cmd', _AUTOWARE + 'GearCommand', 'COMMAND',
          NO_REPLAY, SUBSCRIBES),
    _kart('control_mode_request', '/control/control_mode_request',
          'autoware_auto_vehicle_msgs/srv/ControlModeCommand', '',
          'a service: AUTONOMOUS takes the lease, MANUAL gives it back', SERVES),
    _kart('control_mode_request_topic', '/awsim/control_mode_request_topic',
          'std_msgs/msg/Bool', 'COMMAND', f'true: AUTONOMOUS, false: MANUAL; {NO_REPLAY}',
          SUBSCRIBES),
    _kart('control_mode', '/vehicle/status/control_mode', _AUTOWARE + 'ControlModeReport',
          'LATCHED', f'NOT_READY, AUTONOMOUS or MANUAL; {LATE_JOINER}'),
    _kart('gear_status', '/vehicle/status/gear_status', _AUTOWARE + 'GearReport', 'LATCHED',
          LATE_JOINER),
    _kart('velocity_status', '/vehicle/status/velocity_status', _AUTOWARE + 'VelocityReport',
          'DEFAULT_STREAM', f'from the wheels and the IMU, never ground truth; {NO_SPEC}',
          readers=(KART_LOCALIZER,)),
    _kart('steering_status', '/vehicle/status/steering_status', _AUTOWARE + 'SteeringReport',
          'DEFAULT_STREAM', f"the front wheels' measured angles; {NO_SPEC}"),
    _kart('actuation_status', '/vehicle/status/actuation_status',
          'tier4_vehicle_msgs/msg/ActuationStatusStamped', 'DEFAULT_STREAM',
          f'the motor torque, brake and steering applied; {NO_SPEC}'),
    Topic('kart/diagnostics', 'diagnostics', 'diagnostic_msgs/msg/DiagnosticArray',
          'DEFAULT_STREAM', KART_INTERFACE, PUBLISHES, PRIVATE, NO_SPEC),
)
"""What the kart's vehicle interface (pylon_kart) serves in its vehicle's domain."""


_STACK = "the competition's name and type, as its reference stack uses them"

STACK_TOPICS: tuple[Topic, ...] = (
    Topic('stack/trajectory', '/planning/scenario_planning/trajectory',
          'autoware_auto_planning_msgs/msg/Trajectory', 'LATCHED', TRAJECTORY_PUBLISHER,
          PUBLISHES, GLOBAL,
          f"{_STACK}; republished every second; {LATE_JOINER} (the competition's Best "
          'Effort depth 1 readers match it too; pure_pursuit reads it SENSOR_READER, so '
          "that another stack's Best Effort publisher reaches it)", (PURE_PURSUIT,)),
    Topic('stack/trajectory_path', '/planning/scenario_planning/trajectory/path',
          'nav_msgs/msg/Path', 'LATCHED', TRAJECTORY_PUBLISHER, PUBLISHES, GLOBAL,
          "the trajectory's poses (map) for viewers: RViz and Foxglove draw a Path, not "
          f'the Autoware type; published with it; {LATE_JOINER}'),
    Topic('stack/course_markers', '/planning/course_markers',
          'visualization_msgs/msg/MarkerArray', 'LATCHED', TRAJECTORY_PUBLISHER, PUBLISHES,
          GLOBAL,
          "the track's edges, centreline and start line (map, line strips) for viewers; "
          f'published with the trajectory; {LATE_JOINER}'),
    Topic('stack/kinematic_state', '/localization/kinematic_state', 'nav_msgs/msg/Odometry',
          'DEFAULT_STREAM', KART_LOCALIZER, PUBLISHES, GLOBAL,
          f"{_STACK}; the EKF's pose (map) and twist (base_link), never ground truth; "
          f'{NO_SPEC}; pure_pursuit reads it Best Effort (SENSOR_READER), as the '
          "competition's", (PURE_PURSUIT,)),
    Topic('stack/gnss', '/sensing/gnss/nav_sat_fix', 'sensor_msgs/msg/NavSatFix',
          'SENSOR_READER', KART_LOCALIZER, SUBSCRIBES, GLOBAL,
          f"{_STACK}; read Best Effort, whatever the simulator's publisher is"),
    Topic('stack/imu', '/sensing/imu/imu_raw', 'sensor_msgs/msg/Imu', 'SENSOR_READER',
          KART_LOCALIZER, SUBSCRIBES, GLOBAL,
          f'{_STACK}; imu_link aligned with base_link; read Best Effort'),
    Topic('stack/set_initial_pose', '/set_initial_pose', 'std_srvs/srv/Trigger', '',
          KART_LOCALIZER, SERVES, GLOBAL,
          "a service: the localizer starts again at its grid slot (the competition's "
          'orchestrator calls it before it asks for AUTONOMOUS)'),
)
"""What the kart's reference stack (pylon_kart: kart_localizer, trajectory_publisher,
pure_pursuit) owns; it also writes the kart's ``control_cmd`` and ``/tf`` and reads
``velocity_status``."""


_VIEW = "the organisers' view (management domain, map frame, for viewers); our extension"

RACE_VIEW_TOPICS: tuple[Topic, ...] = (
    Topic('race/course_markers', '/race/course_markers', 'visualization_msgs/msg/MarkerArray',
          'LATCHED', RACE_VIEW, PUBLISHES, GLOBAL,
          f"{_VIEW}; the track's edges, centreline and start line (line strips); "
          f'{LATE_JOINER}'),
    Topic('race/kart_markers', '/race/kart_markers', 'visualization_msgs/msg/MarkerArray',
          'DEFAULT_STREAM', RACE_VIEW, PUBLISHES, GLOBAL,
          f'{_VIEW}; every kart from its ground truth (a box and a label: place, laps, lap '
          f'time, boosts); {NO_SPEC}'),
)
"""What the race's live view (pylon_kart's ``race_view``) publishes in the management domain;
it reads every kart's relayed ground truth (``/d<N>/awsim/ground_truth/...``) and mirrored
status there."""


TOPICS: dict[str, Topic] = {row.key: row for row in BRIDGE_TOPICS + NODE_TOPICS
                            + MISSION_TOPICS + KART_TOPICS + STACK_TOPICS
                            + RACE_VIEW_TOPICS}
"""Every topic and service of the workspace, by key."""

GROUND_TRUTH_KEYS = frozenset(row.key for row in BRIDGE_TOPICS if row.ground_truth)
"""The bridge's ground-truth topics: none exists with ``--disable-ground-truth``, and with
``--ground-truth-domain`` they are the topics published in that other ROS domain. The world
transform on ``/tf`` is ground truth too, but ``tf`` carries other transforms as well."""


def topic(key: str) -> Topic:
    """Return the row of ``key``; KeyError listing the keys when there is none."""
    try:
        return TOPICS[key]
    except KeyError:
        raise KeyError(f'no topic with key {key!r}; keys: {", ".join(TOPICS)}') from None


def join(prefix: str, relative: str) -> str:
    """Return ``relative`` under ``prefix`` (which may itself be relative, or ``~``)."""
    return f'{prefix}/{relative}' if prefix else relative


def name(key: str, topic_prefix: str = DEFAULT_TOPIC_PREFIX,
         bridge_prefix: str = DEFAULT_BRIDGE_PREFIX, id: str = '') -> str:
    """Return the name a node uses for topic ``key`` (``id`` fills ``{id}``).

    Private and relative names stay as ROS resolves them in the node's namespace
    (``~/setpoint``, ``pylon_estimator/odometry``).
    """
    row = topic(key)
    if row.namespace == VESSEL:
        resolved = join(topic_prefix, row.name)
    elif row.namespace == BRIDGE:
        resolved = join(bridge_prefix, row.name)
    elif row.namespace == PRIVATE:
        resolved = f'~/{row.name}'
    else:
        resolved = row.name
    return resolved.replace('{id}', id) if id else resolved


def resolved(key: str, node: str, namespace: str = '/', topic_prefix: str = DEFAULT_TOPIC_PREFIX,
             bridge_prefix: str = DEFAULT_BRIDGE_PREFIX, id: str = '') -> str:
    """Return the fully qualified name ROS gives ``name(key, ...)`` in node ``node``.

    ``namespace`` is the node's namespace; a relative name goes under it, a private one
    (``~/...``) under the node's own name in it, as rcl resolves them.
    """
    relative = name(key, topic_prefix, bridge_prefix, id)
    base = namespace.rstrip('/')
    if relative.startswith('~/'):
        return f'{base}/{node}/{relative[2:]}'
    return relative if relative.startswith('/') else f'{base}/{relative}'


def subscribed_by(node: str) -> tuple[str, ...]:
    """Return the keys of the topics ``node`` subscribes to (as owner or as a reader)."""
    return tuple(key for key, row in TOPICS.items() if row.direction != SERVES and (
        (row.owner == node and row.direction == SUBSCRIBES) or node in row.readers))


def published_by(node: str) -> tuple[str, ...]:
    """Return the keys of the topics ``node`` publishes (as owner or as a writer)."""
    return tuple(key for key, row in TOPICS.items() if row.direction != SERVES and (
        (row.owner == node and row.direction == PUBLISHES) or node in row.writers))


def message_class(key: str) -> type:
    """Import and return the message (or service) class of topic ``key``."""
    package, kind, type_name = topic(key).type.split('/')
    return getattr(importlib.import_module(f'{package}.{kind}'), type_name)


def qos(key: str, reader: bool = False) -> Any:
    """Return the ``rclpy`` QoS profile of topic ``key`` (a reader's: at least depth 10)."""
    profile = topic(key).profile
    return profiles.qos_profile(profiles.for_reader(profile) if reader else profile)
