"""``race_view``: the organisers' live view of a race, in the management domain (domain 0).

What a viewer (``pylon_viewer``, Foxglove) draws of the race, in the track's ``map`` frame:

- ``/race/course_markers`` (``visualization_msgs/MarkerArray``, latched): the course of
  ``track`` (its edges, centreline and start line, ``course.course_lines``), as the
  reference stack's ``trajectory_publisher`` draws it in a kart's domain;
- ``/race/kart_markers`` (``MarkerArray``, every ``publish_period_sec``): every kart as a
  box in its colour (``race_view.KART_COLOURS``) at its ground-truth pose and a label above
  it (place, number, laps, time into the lap, boosts left).

Kart k's pose is its ground truth in the management domain,
``/d<k>/awsim/ground_truth/localization/kinematic_state`` (``pylon_common.mission``), taken
from its ENU frame into ``map`` by ``race_view.GroundTruthFrame`` anchored at its grid slot
(``grid_slots``); its place (the judge's), laps and lap time come from its mirrored
``/d<k>/awsim/status`` (``race_view.Standings``). A kart not heard from yet is not drawn.
It reads nothing of a vehicle's domain and publishes nothing there: it runs in the
management domain only.
"""

from __future__ import annotations

import math

from nav_msgs.msg import Odometry
from pylon_common import mission, node_main, topics
from pylon_common.parameters import declare, Parameter
from pylon_track import load_track
from rclpy.duration import Duration
from rclpy.node import Node
from std_msgs.msg import Float32MultiArray
from visualization_msgs.msg import Marker, MarkerArray

from pylon_kart import race_view
from pylon_kart.course import course_lines
from pylon_kart.kart_limits import MAP
from pylon_kart.trajectory_node import course_message

PARAMETERS: tuple[Parameter, ...] = (
    Parameter('track', 'kart', 'the race track (pylon_track name or YAML path): the course '
                               'drawn, the map frame, the grid'),
    Parameter('vehicles', 1, 'karts of the race: vehicle k in domain domain_base + k, its '
                             'ground truth and status under /d<k> here', 1, 20),
    Parameter('grid_slots', '', "each vehicle's grid slot, a comma list ('': vehicle k on "
                                'slot k - 1): where its ground-truth frame is anchored'),
    Parameter('publish_period_sec', 0.1, 's between two publications of the karts',
              0.02, 10.0),
)
LABEL_HEIGHT_M = 1.5
"""m above a kart's centre where its label floats."""
STALE_SEC = 2.0
"""s (node clock) after which a kart's marker fades: its ground truth stopped."""


class RaceViewNode(Node):
    """race_view's ROS plumbing."""

    def __init__(self) -> None:
        """Load the track, anchor every kart's frame, wire the topics; draw the course."""
        super().__init__(topics.RACE_VIEW)
        p = declare(self, PARAMETERS)
        self.track = load_track(p['track'])
        slots = race_view.parse_slots(p['grid_slots'], p['vehicles'])
        try:
            self.frames = {k: race_view.GroundTruthFrame(self.track, slot)
                           for k, slot in enumerate(slots, start=1)}
        except IndexError as exc:
            raise ValueError(f'grid_slots: {exc}') from None
        self.standings = race_view.Standings(p['vehicles'])
        self.poses: dict[int, tuple[float, float, float, float]] = {}
        self.heard: dict[int, float] = {}
        self.course_pub = self.create_publisher(MarkerArray, topics.name('race/course_markers'),
                                                topics.qos('race/course_markers'))
        self.kart_pub = self.create_publisher(MarkerArray, topics.name('race/kart_markers'),
                                              topics.qos('race/kart_markers'))
        self.subs = []
        for k in self.frames:
            self.subs.append(self.create_subscription(
                Odometry, mission.ground_truth_topic(k, 'ground_truth/kinematic_state'),
                lambda msg, k=k: self._on_truth(k, msg),
                topics.qos('ground_truth/kinematic_state', reader=True)))
            self.subs.append(self.create_subscription(
                Float32MultiArray, topics.name('admin/vehicle_status', id=str(k)),
                lambda msg, k=k: self.standings.update(k, msg.data),
                topics.qos('admin/vehicle_status', reader=True)))
        self.course_pub.publish(course_message(course_lines(self.track)))
        self.timer = self.create_timer(p['publish_period_sec'], self._publish)
        self.get_logger().info(f'{p["vehicles"]} kart(s) on {self.track.name}, grid slots '
                               f'{",".join(map(str, slots))}')

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_truth(self, vehicle: int, msg: Odometry) -> None:
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        self.poses[vehicle] = self.frames[vehicle].to_map(
            (p.x, p.y, p.z), race_view.yaw_of(q.x, q.y, q.z, q.w))
        self.heard[vehicle] = self._now()

    def _publish(self) -> None:
        out = MarkerArray()
        now = self._now()
        for k, (x, y, z, yaw) in sorted(self.poses.items()):
            alpha = 1.0 if now - self.heard[k] < STALE_SEC else 0.3
            r, g, b = race_view.KART_COLOURS[(k - 1) % len(race_view.KART_COLOURS)]
            box = self._marker(k, Marker.CUBE, x, y, z, yaw, (r, g, b, alpha))
            box.scale.x, box.scale.y, box.scale.z = race_view.KART_SIZE
            text = self._marker(k, Marker.TEXT_VIEW_FACING, x, y, z + LABEL_HEIGHT_M, 0.0,
                                (1.0, 1.0, 1.0, alpha), namespace='labels')
            text.scale.z = 0.8
            text.text = race_view.label(self.standings.karts[k])
            out.markers += [box, text]
        if out.markers:
            self.kart_pub.publish(out)

    def _marker(self, vehicle: int, kind: int, x: float, y: float, z: float, yaw: float,
                rgba: tuple, namespace: str = 'karts') -> Marker:
        marker = Marker(ns=namespace, id=vehicle, type=kind, action=Marker.ADD)
        marker.header.frame_id = MAP
        marker.lifetime = Duration(seconds=STALE_SEC * 5).to_msg()
        marker.pose.position.x, marker.pose.position.y, marker.pose.position.z = x, y, z
        marker.pose.orientation.z = math.sin(0.5 * yaw)
        marker.pose.orientation.w = math.cos(0.5 * yaw)
        marker.color.r, marker.color.g, marker.color.b, marker.color.a = rgba
        return marker


def main() -> int:
    """Entry point of ``race_view``."""
    return node_main.run(RaceViewNode)
