"""Two small nodes around udp_bridge for RViz and robot_state_publisher.

``description_relay`` copies each new, non-empty ``/ksp_vessel/robot_description``
(Transient Local) into robot_state_publisher's ``robot_description`` parameter through
its ``set_parameters`` service, as webots_ros2 does, so rsp follows the active vessel's
proxy model. Parameters: ``target_node`` (default ``/robot_state_publisher``),
``description_topic``.

``nearby_markers`` turns ``/ksp_vessel/ground_truth/nearby_vessels`` into a
``visualization_msgs/MarkerArray`` on ``/pylon/nearby_markers``: a sphere and a name per
vessel in the message's frame (``pylon_ground_truth_enu``), debris grey, others blue;
markers of vessels that left are deleted. Parameters: ``nearby_topic``, ``markers_topic``,
``scale_m``.
"""

from __future__ import annotations

import sys

from pylon_interfaces.msg import NearbyVessels
from pylon_protocol.threads import limit_threads
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
import rclpy
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String
from visualization_msgs.msg import Marker, MarkerArray

from pylon_bridge import qos as bridge_qos

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
MARKER_LIFETIME_SEC = 2.0


class DescriptionRelay(Node):
    """Push the proxy URDF into robot_state_publisher whenever it changes."""

    def __init__(self) -> None:
        """Subscribe to the description; create the parameter client."""
        super().__init__('description_relay')
        target = self.declare_parameter('target_node', '/robot_state_publisher').value
        topic = self.declare_parameter('description_topic',
                                       '/ksp_vessel/robot_description').value
        self.client = self.create_client(SetParameters, f'{target.rstrip("/")}/set_parameters')
        self.pending: str | None = None
        self.applied: str | None = None
        self.sub = self.create_subscription(String, topic, self._on_description, LATCHED)
        self.timer = self.create_timer(0.5, self._push)

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
            parameters=[Parameter(name='robot_description', value=value)]))
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


def markers(msg: NearbyVessels, scale: float, previous: set[str]) -> tuple[MarkerArray, set]:
    """Return the markers of a NearbyVessels message and the ids now shown."""
    out = MarkerArray()
    shown = set()
    for i, vessel in enumerate(msg.vessels):
        shown.add(vessel.vessel_id)
        body = Marker(header=msg.header, ns='nearby_vessels', id=_marker_id(vessel.vessel_id),
                      type=Marker.SPHERE, action=Marker.ADD)
        body.pose.position = vessel.position
        body.pose.orientation.w = 1.0
        body.scale.x = body.scale.y = body.scale.z = scale
        body.color.a = 0.9
        body.color.r, body.color.g, body.color.b = (0.6, 0.6, 0.6) if vessel.is_debris \
            else (0.2, 0.5, 1.0)
        body.lifetime.sec = int(MARKER_LIFETIME_SEC)
        label = Marker(header=msg.header, ns='nearby_vessel_names', id=body.id,
                       type=Marker.TEXT_VIEW_FACING, action=Marker.ADD, text=vessel.vessel_name)
        label.pose.position.x = vessel.position.x
        label.pose.position.y = vessel.position.y
        label.pose.position.z = vessel.position.z + scale
        label.pose.orientation.w = 1.0
        label.scale.z = scale / 2.0
        label.color.a = label.color.r = label.color.g = label.color.b = 1.0
        label.lifetime.sec = int(MARKER_LIFETIME_SEC)
        out.markers += [body, label]
        del i
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
        super().__init__('nearby_markers')
        nearby = self.declare_parameter('nearby_topic',
                                        '/ksp_vessel/ground_truth/nearby_vessels').value
        out = self.declare_parameter('markers_topic', '/pylon/nearby_markers').value
        self.scale = float(self.declare_parameter('scale_m', 5.0).value)
        self.shown: set[str] = set()
        self.pub = self.create_publisher(MarkerArray, out, 10)
        self.sub = self.create_subscription(NearbyVessels, nearby, self._on_nearby,
                                            bridge_qos.qos_for('ground_truth/nearby_vessels'))

    def _on_nearby(self, msg: NearbyVessels) -> None:
        array, self.shown = markers(msg, self.scale, self.shown)
        self.pub.publish(array)


def _run(node_type) -> int:
    limit_threads()
    rclpy.init(args=sys.argv)
    node = node_type()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


def description_relay_main() -> int:
    """Entry point of ``description_relay``."""
    return _run(DescriptionRelay)


def nearby_markers_main() -> int:
    """Entry point of ``nearby_markers``."""
    return _run(NearbyMarkers)
