"""``pylon_viewer``: the workspace's ROS graph, live, over the Foxglove WebSocket protocol.

A ``foxglove-sdk`` WebSocket server (``ws://127.0.0.1:8765`` by default) that Foxglove or
Lichtblick opens with Open connection → Foxglove WebSocket. Every topic of the graph is a
channel (message encoding ``cdr``, schema ``ros2msg``: the complete definition from
``pylon_tools.definitions``), advertised when the topic appears and removed when it goes
(the graph is read every ``graph_period_sec``). A channel costs nothing until a client
subscribes: only then does the node subscribe in ROS, raw (the serialised bytes are
forwarded untouched, no deserialisation), with a QoS matched to the publishers
(``viewer.reader_profile``), and it unsubscribes when the last client leaves. Each
message's log time is when the node received it.

Clients may publish only to the topics of ``client_publish_topics`` (default: the
controller's setpoint), with that topic's type and ``cdr``; each message must deserialise
as that type before it is published in ROS as the bytes it is. Anything else (another
topic or schema, malformed data, a subscription to a channel that is gone, malformed
protocol frames, which the SDK answers itself) is refused with a throttled log line, and
the server keeps serving the other clients.

The SDK calls back on its own threads; those callbacks only queue (``viewer.Inbox``), and
the node's executor does the work (``EVENT_PERIOD_SEC``). The decisions are in
``pylon_tools.viewer``; this module wires them to rclpy and the SDK. Its status goes on
``/diagnostics`` every second (``pylon_common.diagnostics``, hardware id the server's URL):
channels advertised, topics subscribed for clients, events the inbox dropped (WARN once any).
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from typing import Any

import foxglove
from foxglove import Channel, Schema
from foxglove.websocket import Capability, StatusLevel
from pylon_common import diagnostics, node_main, qos, topics
from pylon_common.parameters import declare
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy
from rclpy.serialization import deserialize_message

from pylon_tools import definitions, viewer
from pylon_tools.viewer import Event, Key

EVENT_PERIOD_SEC = 0.02
"""How often the executor takes the clients' events (subscribe, publish, ...) from the SDK."""
SDK_LOGGER = 'foxglove'
STATUS_ID = 'pylon_viewer'


class Listener:
    """The SDK's ``ServerListener``: every callback queues an ``Event`` and returns."""

    def __init__(self, inbox: viewer.Inbox) -> None:
        """Queue into ``inbox``."""
        self.inbox = inbox

    def on_subscribe(self, client: Any, channel: Any) -> None:
        """Queue a subscription."""
        self.inbox.put(Event('subscribe', client.id, channel.id))

    def on_unsubscribe(self, client: Any, channel: Any) -> None:
        """Queue an unsubscription (also sent when a client leaves or a channel goes)."""
        self.inbox.put(Event('unsubscribe', client.id, channel.id))

    def on_client_advertise(self, client: Any, channel: Any) -> None:
        """Queue a client channel's advertisement."""
        self.inbox.put(Event('advertise', client.id, channel.id, channel.topic,
                             channel.encoding, channel.schema_name))

    def on_client_unadvertise(self, client: Any, client_channel_id: int) -> None:
        """Queue a client channel's end (also sent when its client leaves)."""
        self.inbox.put(Event('unadvertise', client.id, client_channel_id))

    def on_message_data(self, client: Any, client_channel_id: int, data: bytes) -> None:
        """Queue a client message (dropped when too many wait)."""
        self.inbox.put(Event('data', client.id, client_channel_id, data=bytes(data)))


class SdkLogs(logging.Handler):
    """The SDK's Python log records, into the node's log, throttled per kind of message."""

    def __init__(self, node: ViewerNode) -> None:
        """Log through ``node``."""
        super().__init__(logging.INFO)
        self.node = node

    def emit(self, record: logging.LogRecord) -> None:
        """Log one record unless its kind was logged within the throttle period."""
        text = f'foxglove: {record.getMessage()}'
        level = 'warning' if record.levelno >= logging.WARNING else 'info'
        self.node.note(viewer.log_key(text), text, level)


def _message_class(type_name: str) -> type:
    package, kind, name = definitions.canonical(type_name).split('/')
    return getattr(importlib.import_module(f'{package}.{kind}'), name)


def _offered(info: Any) -> viewer.Offered:
    reliable = info.qos_profile.reliability == ReliabilityPolicy.RELIABLE
    latched = info.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL
    return viewer.Offered(qos.RELIABLE if reliable else qos.BEST_EFFORT,
                          qos.TRANSIENT_LOCAL if latched else qos.VOLATILE,
                          max(0, int(info.qos_profile.depth or 0)))


class ViewerNode(Node):
    """The live view: graph → Foxglove channels, client subscriptions → ROS subscriptions."""

    def __init__(self) -> None:
        """Declare the parameters, start the server, read the graph."""
        super().__init__(topics.VIEWER)
        p = declare(self, viewer.PARAMETERS)
        self.allowlist = viewer.Allowlist(p['client_publish_topics'] if p['client_publish']
                                          else '')
        self.throttle = viewer.Throttle()
        self._note_lock = threading.Lock()      # the SDK logs from its own threads
        self.inbox = viewer.Inbox()
        self.catalogue = viewer.Catalogue()
        self.interest = viewer.Interest()
        self.client_channels = viewer.ClientChannels()
        self.fox_context = foxglove.Context()
        self.channels: dict[Key, Channel] = {}
        self.keys: dict[int, Key] = {}                      # channel id -> key
        self.raw_subscriptions: dict[Key, tuple[Any, qos.Profile]] = {}
        self.client_publishers: dict[str, Any] = {}
        self.dropped_seen = 0
        self._sdk_logs = SdkLogs(self)
        sdk = logging.getLogger(SDK_LOGGER)
        sdk.addHandler(self._sdk_logs)
        sdk.setLevel(logging.INFO)
        sdk.propagate = False
        self.server = self._start_server(p['address'], p['port'])
        self.url = viewer.url(p['address'], self.server.port)
        self.get_logger().info(
            f'live view on {self.url} (Foxglove or Lichtblick: Open connection → Foxglove '
            f'WebSocket); clients may publish to: {", ".join(self.allowlist.topics) or "none"}')
        self.event_timer = self.create_timer(EVENT_PERIOD_SEC, self._take_events)
        self.graph_timer = self.create_timer(p['graph_period_sec'], self._read_graph)
        self._read_graph()
        self.diagnostics = diagnostics.NodeDiagnostics(self, self.url, self._report)

    def _report(self) -> diagnostics.Report:
        values = {'channels': len(self.channels), 'subscribed': len(self.raw_subscriptions),
                  'client_publishers': len(self.client_publishers),
                  'events_dropped': self.inbox.dropped}
        message = f'serving {values["channels"]} channels on {self.url}'
        if self.inbox.dropped:
            return diagnostics.Report(diagnostics.WARN, f'{message}; {self.inbox.dropped} '
                                      'client events dropped', values)
        return diagnostics.Report(diagnostics.OK, message, values)

    def _start_server(self, address: str, port: int) -> Any:
        publish = bool(self.allowlist.topics)
        try:
            return foxglove.start_server(
                name=topics.VIEWER, host=address, port=port, context=self.fox_context,
                server_listener=Listener(self.inbox),
                capabilities=[Capability.ClientPublish] if publish else [],
                supported_encodings=[viewer.MESSAGE_ENCODING] if publish else None)
        except RuntimeError as exc:          # the SDK's FoxgloveError: bind failed, ...
            raise OSError(f'cannot serve on {address}:{port}: {exc}') from None

    def note(self, key: str, text: str, level: str = 'warning', tell_clients: bool = False,
             ) -> None:
        """Log ``text`` unless a line of ``key`` went out within the throttle period."""
        with self._note_lock:
            held = self.throttle.allow(key, time.monotonic())
        if held is None:
            return
        text += f' ({held} more like it held back)' if held else ''
        if level == 'info':          # rclpy: one severity per call site
            self.get_logger().info(text)
        else:
            self.get_logger().warning(text)
        if tell_clients:
            self.server.publish_status(text, StatusLevel.Warning, STATUS_ID)

    # -- the graph -----------------------------------------------------------------------------
    def _read_graph(self) -> None:
        changes = self.catalogue.changes(self.get_topic_names_and_types())
        for key in changes.removed:
            self._remove(key)
        for key in changes.added:
            self._advertise(key)
        for key in list(self.raw_subscriptions):
            profile = viewer.reader_profile(self._offers(key))
            if profile != self.raw_subscriptions[key][1]:
                self.get_logger().info(f'{key[0]}: publishers changed, subscribing again '
                                       f'({profile.title})')
                self._subscribe(key, profile)

    def _advertise(self, key: Key) -> None:
        topic, type_name = key
        try:
            text = definitions.definition(type_name)
            _message_class(type_name)
        except (definitions.DefinitionError, ImportError, AttributeError) as exc:
            self.catalogue.refuse(key, str(exc))
            self.get_logger().warning(f'{topic}: not served, {type_name} is not installed '
                                      f'here ({exc})')
            return
        channel = Channel(topic, schema=Schema(name=type_name, encoding=viewer.SCHEMA_ENCODING,
                                               data=text.encode()),
                          message_encoding=viewer.MESSAGE_ENCODING, context=self.fox_context)
        self.channels[key] = channel
        self.keys[channel.id()] = key
        self.catalogue.advertise(key)

    def _remove(self, key: Key) -> None:
        channel = self.channels.pop(key)
        self.keys.pop(channel.id(), None)
        self.catalogue.remove(key)
        self._unsubscribe(key)
        self.interest.drop(channel.id())
        channel.close()                      # the SDK tells the clients (unadvertise)

    def _offers(self, key: Key) -> list[viewer.Offered]:
        topic, type_name = key
        return [_offered(info) for info in self.get_publishers_info_by_topic(topic)
                if info.topic_type == type_name]

    # -- lazy subscriptions ----------------------------------------------------------------------
    def _subscribe(self, key: Key, profile: qos.Profile) -> None:
        """(Re)create the raw subscription of a channel with ``profile``."""
        self._unsubscribe(key)
        log = self.channels[key].log

        def forward(data: bytes) -> None:
            log(data, log_time=time.time_ns())
        subscription = self.create_subscription(
            _message_class(key[1]), key[0], forward, qos.qos_profile(profile), raw=True)
        self.raw_subscriptions[key] = (subscription, profile)

    def _unsubscribe(self, key: Key) -> None:
        entry = self.raw_subscriptions.pop(key, None)
        if entry is not None:
            self.destroy_subscription(entry[0])

    # -- the clients' events ---------------------------------------------------------------------
    def _take_events(self) -> None:
        for event in self.inbox.drain():
            try:
                getattr(self, f'_on_{event.kind}')(event)
            except Exception as exc:     # one client's event never ends the others' service
                self.note(f'failed {event.kind}', f'client {event.client}: {event.kind} on '
                                                  f'channel {event.channel} failed: {exc!r}')
        if self.inbox.dropped > self.dropped_seen:
            self.note('backlog', f'{self.inbox.dropped - self.dropped_seen} client messages '
                                 f'dropped: more than {self.inbox.limit} waiting')
            self.dropped_seen = self.inbox.dropped

    def _on_subscribe(self, event: Event) -> None:
        key = self.keys.get(event.channel)
        if key is None:
            self.note('subscribe-gone', f'client {event.client}: subscription to channel '
                                        f'{event.channel} refused, its topic is gone')
            return
        first = self.interest.subscribe(event.channel, event.client)
        if first or key not in self.raw_subscriptions:
            self._subscribe(key, viewer.reader_profile(self._offers(key)))
        elif self.raw_subscriptions[key][1].durability == qos.TRANSIENT_LOCAL:
            # a latched topic's value already went by: subscribe again so it is delivered
            self._subscribe(key, self.raw_subscriptions[key][1])

    def _on_unsubscribe(self, event: Event) -> None:
        key = self.keys.get(event.channel)
        if self.interest.unsubscribe(event.channel, event.client) and key is not None:
            self._unsubscribe(key)

    def _on_advertise(self, event: Event) -> None:
        reason = self.allowlist.refusal(event.topic, event.encoding, event.schema_name)
        if reason:
            self.note(f'advertise {reason}', f'client {event.client}: channel {event.channel} '
                                             f'refused: {reason}', tell_clients=True)
            return
        allowed = self.allowlist.topics[event.topic]
        if event.topic not in self.client_publishers:
            self.client_publishers[event.topic] = self.create_publisher(
                _message_class(allowed.type), event.topic, qos.qos_profile(allowed.profile))
        self.client_channels.accept(event.client, event.channel, event.topic)
        self.get_logger().info(f'client {event.client}: channel {event.channel} publishes to '
                               f'{event.topic} ({allowed.type})')

    def _on_unadvertise(self, event: Event) -> None:
        self.client_channels.forget(event.client, event.channel)

    def _on_data(self, event: Event) -> None:
        topic = self.client_channels.topic_of(event.client, event.channel)
        if topic is None:
            self.note('data-refused', f'client {event.client}: data on channel {event.channel} '
                                      'dropped, the channel was not accepted')
            return
        allowed = self.allowlist.topics[topic]
        try:
            deserialize_message(event.data, _message_class(allowed.type))
        except Exception as exc:              # rclpy raises its RMWError (no common base)
            self.note(f'malformed {topic}', f'client {event.client}: {len(event.data)} bytes '
                                            f'on {topic} dropped, not a {allowed.type}: '
                                            f'{str(exc).splitlines()[0][:120]}',
                      tell_clients=True)
            return
        self.client_publishers[topic].publish(event.data)

    def close(self) -> None:
        """Stop the server and detach the SDK's log records."""
        self.server.stop()
        logging.getLogger(SDK_LOGGER).removeHandler(self._sdk_logs)


def main() -> int:
    """Entry point of ``pylon_viewer``."""
    return node_main.run(ViewerNode, on_exit=lambda node: node.close())
