"""Two small nodes around udp_bridge for RViz and robot_state_publisher.

``description_relay`` copies each new, non-empty ``robot_description`` (Transient Local)
into robot_state_publisher's ``robot_description`` parameter through its
``set_parameters`` service, as webots_ros2 does, so rsp follows the active vessel's proxy
model. Parameters: ``RELAY_PARAMETERS``.

``nearby_markers`` turns ``ground_truth/nearby_vessels`` into a
``visualization_msgs/MarkerArray`` on ``<bridge_prefix>/nearby_markers``: a sphere and a
name per vessel in the message's frame (``pylon_ground_truth_enu``), debris grey, others
blue; markers of vessels that left are deleted. Parameters: ``MARKER_PARAMETERS``.

Topic names, types and QoS come from the topic contract (``pylon_common.topics``). Each
node's status goes on ``/diagnostics`` every second (``pylon_common.diagnostics``, hardware
id the vessel's topic prefix): the relay WARN while a model waits for rsp, the markers the
vessels shown.
"""

from __future__ import annotations

from pylon_common import diagnostics, node_main, topics
from pylon_common.parameters import declare, Parameter, Retired
from pylon_interfaces.msg import NearbyVessels
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.node import Node
from std_msgs.msg import String
from visualization_msgs.msg import Marker, MarkerArray

MARKER_LIFETIME_SEC = 2.0
RETRY_PERIOD_SEC = 0.5

RELAY_PARAMETERS: tuple[Parameter, ...] = (
    Parameter('target_node', f'/{topics.ROBOT_STATE_PUBLISHER}',
              'the node whose robot_description parameter is set (its set_parameters service)'),
    topics.TOPIC_PREFIX,
)
RELAY_RETIRED = (Retired('description_topic', 'the topic is <topic_prefix>/robot_description: '
                                              'set topic_prefix, or remap with --ros-args -r'),)

MARKER_PARAMETERS: tuple[Parameter, ...] = (
    Parameter('scale_m', 5.0, 'diameter of a vessel sphere (m)', 0.01, 1000.0),
    topics.TOPIC_PREFIX,
    topics.BRIDGE_PREFIX,
)
MARKER_RETIRED = (
    Retired('nearby_topic', 'the topic is <topic_prefix>/ground_truth/nearby_vessels: set '
                            'topic_prefix, or remap with --ros-args -r'),
    Retired('markers_topic', 'the topic is <bridge_prefix>/nearby_markers: set bridge_prefix, '
                             'or remap with --ros-args -r'),
)


class DescriptionRelay(Node):
    """Push the proxy URDF into robot_state_publisher whenever it changes."""

    def __init__(self) -> None:
        """Declare the parameters; subscribe to the description; create the client."""
        super().__init__(topics.DESCRIPTION_RELAY)
        p = declare(self, RELAY_PARAMETERS, RELAY_RETIRED)
        self.client = self.create_client(
            SetParameters, f'{p["target_node"].rstrip("/")}/set_parameters')
        self.pending: str | None = None
        self.applied: str | None = None
        self.sub = self.create_subscription(
            String, topics.name('robot_description', p['topic_prefix']), self._on_description,
            topics.qos('robot_description', reader=True))
        self.timer = self.create_timer(RETRY_PERIOD_SEC, self._push)
        self.target = p['target_node']
        self.diagnostics = diagnostics.NodeDiagnostics(self, p['topic_prefix'], self._report)

    def _report(self) -> diagnostics.Report:
        values = {'target_node': self.target, 'applied_bytes': len(self.applied or ''),
                  'pending': self.pending is not None}
        if self.pending is not None:
            return diagnostics.Report(diagnostics.WARN, f'a model waits for {self.target}',
                                      values)
        if self.applied is None:
            return diagnostics.Report(diagnostics.OK, 'no model yet', values)
        return diagnostics.Report(diagnostics.OK, 'model set', values)

    def _on_description(self, msg: String) -> None:
        if msg.data and msg.data != self.applied:   # '' = no model: rsp keeps the last one
            self.pending = msg.data
            self._push()

    def _push(self) -> None:
        if self.pending is None or not self.client.service_is_ready():
            return
        urdf, self.pending = self.pending, None
        value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=urdf)
        future = self.client.call_async(SetParameters.Request(
            parameters=[ParameterMsg(name='robot_description', value=value)]))
        future.add_done_callback(lambda f, urdf=urdf: self._done(f, urdf))

    def _done(self, future, urdf: str) -> None:
        result = future.result()
        if result is not None and result.results and result.results[0].successful:
            self.applied = urdf
            self.get_logger().info(f'robot_description set ({len(urdf)} bytes)')
        else:
            reason = result.results[0].reason if result is not None and result.results else ''
            self.get_logger().warning(f'robot_description refused: {reason or "no answer"}')
            if self.pending is None:
                self.pending = urdf                  # try again at the next tick


def _sphere(msg: NearbyVessels, vessel, scale: float) -> Marker:
    body = Marker(header=msg.header, ns='nearby_vessels', id=_marker_id(vessel.vessel_id),
                  type=Marker.SPHERE, action=Marker.ADD)
    body.pose.position = vessel.position
    body.pose.orientation.w = 1.0
    body.scale.x = body.scale.y = body.scale.z = scale
    body.color.a = 0.9
    body.color.r, body.color.g, body.color.b = (0.6, 0.6, 0.6) if vessel.is_debris \
        else (0.2, 0.5, 1.0)
    body.lifetime.sec = int(MARKER_LIFETIME_SEC)
    return body


def _label(msg: NearbyVessels, vessel, scale: float) -> Marker:
    label = Marker(header=msg.header, ns='nearby_vessel_names', id=_marker_id(vessel.vessel_id),
                   type=Marker.TEXT_VIEW_FACING, action=Marker.ADD, text=vessel.vessel_name)
    label.pose.position.x = vessel.position.x
    label.pose.position.y = vessel.position.y
    label.pose.position.z = vessel.position.z + scale
    label.pose.orientation.w = 1.0
    label.scale.z = scale / 2.0
    label.color.a = label.color.r = label.color.g = label.color.b = 1.0
    label.lifetime.sec = int(MARKER_LIFETIME_SEC)
    return label


def markers(msg: NearbyVessels, scale: float, previous: set[str]) -> tuple[MarkerArray, set]:
    """Return the markers of a NearbyVessels message and the ids now shown."""
    out = MarkerArray()
    shown = set()
    for vessel in msg.vessels:
        shown.add(vessel.vessel_id)
        out.markers += [_sphere(msg, vessel, scale), _label(msg, vessel, scale)]
    for gone in previous - shown:
        for ns in ('nearby_vessels', 'nearby_vessel_names'):
            out.markers.append(Marker(header=msg.header, ns=ns, id=_marker_id(gone),
                                      action=Marker.DELETE))
    return out, shown


def _marker_id(vessel_id: str) -> int:
    return int(vessel_id[:7], 16) if vessel_id else 0


class NearbyMarkers(Node):
    """Nearby vessels as RViz markers."""

    def __init__(self) -> None:
        """Declare the parameters and wire the topics."""
        super().__init__(topics.NEARBY_MARKERS)
        p = declare(self, MARKER_PARAMETERS, MARKER_RETIRED)
        self.scale = p['scale_m']
        self.shown: set[str] = set()
        self.pub = self.create_publisher(
            MarkerArray, topics.name('nearby_markers', bridge_prefix=p['bridge_prefix']),
            topics.qos('nearby_markers'))
        self.sub = self.create_subscription(
            NearbyVessels, topics.name('ground_truth/nearby_vessels', p['topic_prefix']),
            self._on_nearby, topics.qos('ground_truth/nearby_vessels', reader=True))
        self.diagnostics = diagnostics.NodeDiagnostics(self, p['topic_prefix'], self._report)

    def _report(self) -> diagnostics.Report:
        return diagnostics.Report(diagnostics.OK, f'{len(self.shown)} vessels shown',
                                  {'vessels_shown': len(self.shown)})

    def _on_nearby(self, msg: NearbyVessels) -> None:
        array, self.shown = markers(msg, self.scale, self.shown)
        self.pub.publish(array)


def description_relay_main() -> int:
    """Entry point of ``description_relay``."""
    return node_main.run(DescriptionRelay)


def nearby_markers_main() -> int:
    """Entry point of ``nearby_markers``."""
    return node_main.run(NearbyMarkers)
