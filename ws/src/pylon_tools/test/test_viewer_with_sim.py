"""pylon_viewer with the simulator flying: a real Foxglove WebSocket client against real DDS.

One simulator, bridge and viewer serve the module (the orbit scenario: LiDAR and camera
on); each test connects its own clients (``pylon_testing.foxglove_client``) and checks
against a direct rclpy subscriber in the test process. Waits are conditions with a timeout.
"""

from dataclasses import dataclass
import json
import time
from typing import Any

from pylon_common import topics
from pylon_interfaces.msg import BodyWrenchCommand, ControlSetpoint
from pylon_testing.foxglove_client import FoxgloveClient
from pylon_testing.processes import RosProcess
from pylon_testing.recorder import stamp_of, TopicRecorder
from pylon_testing.stack import start_stack
from pylon_testing.wait import spin_until
from pylon_tools import definitions, viewer
import pytest
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import Image, PointCloud2
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage
import websocket

pytestmark = pytest.mark.integration

TF, TF_STATIC = topics.name('tf'), topics.name('tf_static')
DESCRIPTION = topics.name('robot_description')
CLOUD = topics.name('lidar_3d', id='lidar_3d_front')
IMAGE = topics.name('camera', id='camera_front')
IMU = topics.name('imu')
WRENCH = topics.name('control/wrench_command')
SETPOINT = topics.resolved('setpoint', topics.SETPOINT_CONTROLLER)
SETPOINT_TYPE = 'pylon_interfaces/msg/ControlSetpoint'
VANISHING = '/pylon_viewer_test/vanishing'
RESEND_SEC = 0.5     # a volatile topic: a client's setpoint is sent again until it arrives


@dataclass
class Live:
    """The running stack, the viewer process, its address and the test's node."""

    viewer: RosProcess
    url: str
    node: Node

    def spin(self) -> None:
        """Spin the test node once (a wait's turn)."""
        turns = iter((False, True))
        spin_until(self.node, lambda: next(turns), 10.0)

    def viewer_readers(self, topic: str) -> list[Any]:
        """Return the viewer's subscriptions to ``topic`` the graph shows."""
        return [i for i in self.node.get_subscriptions_info_by_topic(topic)
                if i.node_name == topics.VIEWER]

    def viewer_writers(self, topic: str) -> list[Any]:
        """Return the viewer's publishers on ``topic`` the graph shows."""
        return [i for i in self.node.get_publishers_info_by_topic(topic)
                if i.node_name == topics.VIEWER]

    def until(self, condition, what: str) -> None:
        """Spin the test node until ``condition()``; fail at once if the viewer died."""
        def alive_and() -> bool:
            self.viewer.check()
            return condition()
        TopicRecorder(self.node).until(alive_and, what)


@pytest.fixture(scope='module')
def live(module_ros_process, module_ros_node, free_udp_port) -> Live:
    start_stack(module_ros_process, free_udp_port, 'orbit')
    process = module_ros_process(['pylon_viewer', '--ros-args', '-p', 'port:=0'],
                                 name='viewer')
    found = process.wait_for_output(r'live view on (ws://\S+)', timeout=60.0)
    return Live(process, found.group(1), module_ros_node)


def test_every_topic_is_a_channel_with_its_complete_definition(live):
    with FoxgloveClient(live.url) as client:
        assert client.subprotocol == viewer.SUBPROTOCOL
        live.until(lambda: client.server_info is not None, 'serverInfo')
        assert client.server_info['name'] == topics.VIEWER
        assert client.server_info['capabilities'] == ['clientPublish']
        assert client.server_info['supportedEncodings'] == ['cdr']
        for topic in (TF, TF_STATIC, DESCRIPTION, CLOUD, IMAGE, IMU):
            channel = client.wait_channel(topic, every=live.spin)
            assert channel['encoding'] == 'cdr' and channel['schemaEncoding'] == 'ros2msg'
            assert channel['schema'] == definitions.definition(channel['schemaName']), topic
        graph = {name for name, _ in live.node.get_topic_names_and_types()}
        live.until(lambda: graph <= {c['topic'] for c in client.channels.values()},
                   f'a channel for every topic of the graph ({len(graph)})')
    # the protocol's original subprotocol name alone: the SDK's server refuses the handshake
    with pytest.raises(websocket.WebSocketBadStatusException):
        FoxgloveClient(live.url, subprotocols=['foxglove.websocket.v1'])


class Through:
    """The messages of one topic as the client decoded them, and as the test node got them."""

    def __init__(self, client: FoxgloveClient, subscription: int, kind: type,
                 recorder: TopicRecorder, name: str, key) -> None:
        self.client, self.subscription, self.kind = client, subscription, kind
        self.recorder, self.name, self.key = recorder, name, key
        self._decoded: list[Any] = []

    def decoded(self) -> list[Any]:
        received = self.client.received[self.subscription]
        for item in received[len(self._decoded):]:
            self._decoded.append(deserialize_message(item.payload, self.kind))
        return self._decoded

    def pairs(self) -> list[tuple[Any, list[Any]]]:
        direct: dict[Any, list[Any]] = {}
        for message in self.recorder.messages(self.name):
            direct.setdefault(self.key(message), []).append(message)
        return [(m, direct[self.key(m)]) for m in self.decoded() if self.key(m) in direct]


def _tf_key(message: TFMessage) -> tuple:
    return tuple((t.header.stamp.sec, t.header.stamp.nanosec, t.child_frame_id)
                 for t in message.transforms)


def test_forwarded_messages_are_the_ros_messages(live):
    recorder = TopicRecorder(live.node)
    streams = {'tf': (TF, TFMessage, 'tf', _tf_key),
               'cloud': (CLOUD, PointCloud2, 'lidar_3d', stamp_of),
               'image': (IMAGE, Image, 'camera', stamp_of)}
    for name, (topic, kind, key, _) in streams.items():
        recorder.add(name, topic, kind, topics.qos(key, reader=True))
    with FoxgloveClient(live.url) as client:
        through = {name: Through(client, client.subscribe(
            client.wait_channel(topic, every=live.spin)['id']), kind, recorder, name, key)
            for name, (topic, kind, _, key) in streams.items()}
        description = client.subscribe(client.wait_channel(DESCRIPTION)['id'])
        live.until(lambda: all(len(t.pairs()) >= 3 for t in through.values()),
                   'three messages of each stream through the viewer and directly')
        for name, stream in through.items():
            for forwarded, direct in stream.pairs():
                assert forwarded in direct, name         # same stamp, same contents
            times = [r.log_time_ns for r in client.received[stream.subscription]]
            assert times == sorted(times) and times[0] > 0, name
        # the latched description: the client subscribed after it was published (an empty
        # one, latched while a new session's model was on its way, may come first)
        def models() -> list[str]:
            return [text for text in (deserialize_message(item.payload, String).data
                                      for item in client.received[description])
                    if '<robot' in text]
        live.until(models, 'the latched robot_description')
        direct = recorder.add('description', DESCRIPTION, String,
                              topics.qos('robot_description', reader=True)).wait_for(
            'description', lambda m: '<robot' in m.data, what='the model, directly')
        live.until(lambda: direct.data in models(), 'the same model through the viewer')
    recorder.close()


def _qos_of(info: Any) -> tuple:
    return info.qos_profile.reliability, info.qos_profile.durability


def test_a_ros_subscription_exists_only_while_a_client_subscribes(live):
    with FoxgloveClient(live.url) as client:
        imu = client.subscribe(client.wait_channel(IMU, every=live.spin)['id'], keep=False)
        live.until(lambda: live.viewer_readers(IMU), "the viewer's IMU subscription")
        # the graph is current up to the IMU subscription: nothing else is subscribed
        assert live.viewer_readers(CLOUD) == [] and live.viewer_readers(DESCRIPTION) == []
        assert _qos_of(live.viewer_readers(IMU)[0])[0] == ReliabilityPolicy.BEST_EFFORT
        cloud = client.subscribe(client.channel(CLOUD)['id'], keep=False)
        live.until(lambda: live.viewer_readers(CLOUD), 'the viewer subscribing to the cloud')
        assert _qos_of(live.viewer_readers(CLOUD)[0])[0] == ReliabilityPolicy.RELIABLE
        live.until(lambda: client.received[cloud], 'a cloud through the viewer')
        client.unsubscribe(cloud)
        live.until(lambda: not live.viewer_readers(CLOUD), 'the cloud subscription gone')
        assert live.viewer_readers(IMU), 'the IMU is still subscribed'
        # a latched topic: Reliable and Transient Local; a late second client gets its value
        first = client.subscribe(client.channel(DESCRIPTION)['id'])
        live.until(lambda: client.received[first], 'the description for the first client')
        assert _qos_of(live.viewer_readers(DESCRIPTION)[0]) == (
            ReliabilityPolicy.RELIABLE, DurabilityPolicy.TRANSIENT_LOCAL)
        with FoxgloveClient(live.url) as late:
            second = late.subscribe(late.wait_channel(DESCRIPTION)['id'])
            live.until(lambda: late.received[second], 'the description for a late client')
            assert late.received[second][0].payload == client.received[first][0].payload
        assert client.received[imu]
    live.until(lambda: not live.viewer_readers(IMU) and not live.viewer_readers(DESCRIPTION),
               'every subscription of the viewer gone with its client')


def test_clients_publish_the_setpoint_and_nothing_else(live):
    recorder = TopicRecorder(live.node)
    recorder.add('setpoint', SETPOINT, ControlSetpoint, topics.qos('setpoint', reader=True))
    recorder.add('wrench', WRENCH, BodyWrenchCommand,
                 topics.qos('control/wrench_command', reader=True))
    with FoxgloveClient(live.url) as watcher, FoxgloveClient(live.url) as client:
        tf = watcher.subscribe(watcher.wait_channel(TF, every=live.spin)['id'], keep=False)
        live.until(lambda: client.server_info is not None, 'serverInfo')
        client.advertise(1, WRENCH, 'pylon_interfaces/msg/BodyWrenchCommand')  # not allowed
        client.advertise(2, SETPOINT, 'std_msgs/msg/String')                   # wrong schema
        client.advertise(3, SETPOINT, SETPOINT_TYPE, encoding='json')          # not cdr
        client.advertise(4, SETPOINT, SETPOINT_TYPE)
        client.publish(1, serialize_message(BodyWrenchCommand(controller_id='intruder')))
        client.publish(2, serialize_message(String(data='not a setpoint')))
        client.publish(3, b'{"mode": 2}')
        client.publish(4, b'\x00\x01\x00\x00garbage')                       # malformed CDR
        idle = ControlSetpoint(mode=ControlSetpoint.MODE_IDLE)
        idle.header.frame_id = 'from_foxglove'
        sent = [-1.0]

        def arrived() -> bool:     # volatile: sent again until the two ends have matched
            if not recorder.messages('setpoint') and time.monotonic() - sent[-1] > RESEND_SEC:
                client.publish(4, serialize_message(idle))
                sent.append(time.monotonic())
            return bool(recorder.messages('setpoint'))
        live.until(arrived, 'the setpoint a client published, in ROS')
        # the refused messages went first on the same connection: they were handled before
        assert all(m == idle for m in recorder.messages('setpoint'))
        live.until(lambda: live.viewer_writers(SETPOINT), "the viewer's setpoint publisher")
        assert [i.topic_type for i in live.viewer_writers(SETPOINT)] == [SETPOINT_TYPE]
        assert recorder.messages('wrench') == [] and live.viewer_writers(WRENCH) == []
        log = live.viewer.log()
        for refused in (f"'{WRENCH}' is not open to clients",
                        f"schema 'std_msgs/msg/String' is not {SETPOINT_TYPE}",
                        "encoding 'json'", f'on {SETPOINT} dropped, not a {SETPOINT_TYPE}'):
            assert refused in log, refused
        live.until(lambda: any('not open to clients' in s['message'] for s in client.statuses),
                   'the refusal told to the clients')
        mark = len(watcher.received[tf])
        live.until(lambda: len(watcher.received[tf]) > mark + 5, 'the watcher still served')
    recorder.close()


def _half_a_frame() -> bytes:
    frame = websocket.ABNF.create_frame(b'\x01' * 4000, websocket.ABNF.OPCODE_BINARY).format()
    return frame[:len(frame) // 2]


def test_bad_clients_leave_the_server_serving(live):
    with FoxgloveClient(live.url) as good:
        tf = good.subscribe(good.wait_channel(TF, every=live.spin)['id'], keep=False)
        bad = FoxgloveClient(live.url)
        live.until(lambda: bad.server_info is not None, 'serverInfo')
        for frame in (b'\x07garbage', 'not json', json.dumps({'op': 'nonsense'}), b'\x01\x00',
                      json.dumps({'op': 'subscribe',
                                  'subscriptions': [{'id': 1, 'channelId': 999999}]})):
            bad.send_raw(frame)
        bad.publish(77, b'data on a channel never advertised')
        live.until(lambda: len(bad.statuses) >= 5, 'the server answering the bad frames')
        # a topic that came and went: subscribing to its old channel is refused
        publisher = live.node.create_publisher(String, VANISHING, 1)
        gone = bad.wait_channel(VANISHING, every=live.spin)['id']
        live.node.destroy_publisher(publisher)
        live.until(lambda: gone in bad.removed, 'the vanished topic unadvertised')
        bad.subscribe(gone)
        live.until(lambda: any(str(gone) in s['message'] for s in bad.statuses),
                   'the subscription to the vanished channel refused')
        assert live.viewer_readers(VANISHING) == []
        # a client subscribed to the image drops its connection in the middle of a frame
        bad.subscribe(bad.channel(IMAGE)['id'], keep=False)
        live.until(lambda: live.viewer_readers(IMAGE), 'the viewer subscribing to the image')
        bad.drop_mid_frame(_half_a_frame())
        live.until(lambda: not live.viewer_readers(IMAGE), 'the image subscription gone')
        mark = len(good.received[tf])
        live.until(lambda: len(good.received[tf]) > mark + 5, 'the good client still served')
        assert good.error is None
    assert 'foxglove: ' in live.viewer.log()         # the SDK's own lines, in the node's log
