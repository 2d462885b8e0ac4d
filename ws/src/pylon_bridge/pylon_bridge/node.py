"""``udp_bridge``: the ROS 2 side of the PyLoN mod (thin; the logic is in ``core``).

A receive thread blocks on the state socket and hands each datagram to ``BridgeCore``
at once (low latency); a timer expires the session and silent topics every 0.25 s and
another publishes diagnostics. Publishers are created on a topic's first message and
destroyed when the core says so (``publishers.Publishers``). One lock serialises the core
and the publishers. With ``--ground-truth-domain`` the core's ``Relayed`` actions go to the
node of that domain (``publishers.GroundTruthDomain``), closed with the bridge.
"""

from __future__ import annotations

from collections import deque
import ipaddress
import select
import socket
import struct
import threading
import time
import traceback

from diagnostic_msgs.msg import DiagnosticArray
from pylon_common import topics
from pylon_interfaces.msg import (
    BodyWrenchCommand,
    ControlAuthorityCommand,
    ControlBatch,
    DockingPortCommand,
    EngineCommand,
    FlightControlCommand,
    MotorCommand,
    RcsCommand,
    SeparationCommand,
    WheelCommand,
)
from pylon_interfaces.srv import GetSeparationResult
from pylon_protocol.names import sanitize_name
from rclpy.node import Node

from pylon_bridge import commands, diagnostics
from pylon_bridge import config as bridge_config
from pylon_bridge import qos as bridge_qos
from pylon_bridge.core import (
    BridgeCore,
    CoreConfig,
    Destroy,
    EXPIRY_PERIOD_SEC,
    Publish,
    Relayed,
)
from pylon_bridge.publishers import GroundTruthDomain, Publishers

RECV_TIMEOUT_SEC = 0.05
SO_TIMESTAMPNS = getattr(socket, 'SO_TIMESTAMPNS', 35)   # Linux: kernel receive time
ANCILLARY_BYTES = 64
SOL_SOCKET = int(socket.SOL_SOCKET)
MSG_TRUNC = int(socket.MSG_TRUNC)        # an int: ``flags & socket.MSG_TRUNC`` costs 0.6 us
_TIMESPEC = struct.Struct('qq')
LATENCY_KEYS = {'imu': 'imu', 'ground_truth/pose': 'ground_truth',
                'ground_truth/flight': 'flight_state'}
LATENCY_WINDOW = 4096
LOG_THROTTLE_SEC = 5.0


def _arrival(ancillary: list) -> float:
    """Return a datagram's kernel receive time (``SO_TIMESTAMPNS``), else the time now."""
    if ancillary:                          # the one item asked for: the kernel's timestamp
        level, kind, payload = ancillary[0]
        if level == SOL_SOCKET and kind == SO_TIMESTAMPNS and len(payload) >= 16:
            seconds, nanoseconds = _TIMESPEC.unpack_from(payload)
            return seconds + nanoseconds * 1e-9
    return time.time()


def core_config(o: bridge_config.BridgeConfig) -> CoreConfig:
    """Return what the core needs of the bridge's options."""
    return CoreConfig(
        topic_timeout_sec=o.topic_timeout_sec, disable_ground_truth=o.disable_ground_truth,
        route_ground_truth=o.ground_truth_domain >= 0,
        allow_remote_models=o.allow_remote_models, allow_servo_joints=o.allow_servo_joints,
        publish_proxy_static_tf=o.publish_proxy_static_tf,
        max_datagram_bytes=o.max_datagram_bytes, reuse_messages=True, serialize_imu=True,
        publish_clock=o.publish_clock, frame_prefix=sanitize_name(o.frame_prefix, 'pylon'),
        imu_frame=o.imu_frame_id)


class UdpBridge(Node):
    """Receives PyLoN state datagrams and publishes them as ROS 2 topics."""

    def __init__(self, explicit: dict | None = None, **kwargs) -> None:
        """Declare parameters, resolve the options, bind the socket, start receiving."""
        explicit = explicit or {}
        super().__init__(bridge_config.node_name(explicit), **kwargs)
        parameters = bridge_config.declare_parameters(self)
        asked = parameters.get('node_name', self.get_name())
        if 'node_name' not in explicit and asked != self.get_name():
            raise ValueError(f'parameter node_name: {asked!r} cannot rename the running node '
                             f'{self.get_name()!r}; use --node-name or -r __node:=NAME')
        self.options = bridge_config.resolve({**explicit, 'node_name': self.get_name()},
                                             parameters)
        self.qos_overrides = bridge_qos.declare_qos_parameters(self)
        o = self.options
        self.core = BridgeCore(core_config(o))
        # system time unless the node runs on /clock: then ask the ROS clock each time
        self.sim_time = bool(self.get_parameter('use_sim_time').value)
        if self.sim_time and o.publish_clock:
            raise ValueError('publish_clock: the bridge publishes /clock from the system '
                             'clock and cannot itself run with use_sim_time:=true')
        self.topic_publishers = Publishers(self, lambda key, topic_id: o.topic(key, id=topic_id),
                                     self.qos_overrides)
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        except OSError:
            pass                                  # arrival then = when recvmsg returns
        self.latency = {kind: deque(maxlen=LATENCY_WINDOW) for kind in LATENCY_KEYS.values()}
        self._latency_of = {key: self.latency[kind] for key, kind in LATENCY_KEYS.items()}
        self.sock.bind((o.host, o.port))
        # non-blocking: a datagram already queued costs one recvmsg, no poll before it
        self.sock.setblocking(False)
        self._readable = select.poll()
        self._readable.register(self.sock, select.POLLIN)
        self.ground_truth_domain = self._join_ground_truth_domain()
        self._rates_at = time.monotonic()
        self._rates_base: dict = {}
        with self.lock:
            self._apply(self.core.initial(self._ros_now()))
        self.expiry_timer = self.create_timer(EXPIRY_PERIOD_SEC, self._on_expiry)
        self.diagnostics_timer = self.create_timer(o.diagnostics_period_sec,
                                                   self._on_diagnostics)
        self.model_tf_timer = self.create_timer(1.0 / o.model_tf_rate, self._on_model_tf)
        self.command_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.command_addr = (o.command_host, o.command_port)
        self.command_subscriptions: dict = {}
        timeout = o.vehicle_command_timeout_sec
        for key, msg_type, build in (
                ('control/authority/command', ControlAuthorityCommand,
                 commands.authority_command),
                ('control/wrench_command', BodyWrenchCommand, commands.wrench_command),
                ('actuators/propulsion/command', EngineCommand,
                 lambda msg: commands.engine_command(msg, timeout)),
                ('actuators/rcs/command', RcsCommand,
                 lambda msg: commands.rcs_command(msg, timeout)),
                ('actuators/wheel/command', WheelCommand,
                 lambda msg: commands.wheel_command(msg, timeout)),
                ('actuators/servo/command', MotorCommand,
                 lambda msg: commands.motor_command(msg, timeout)),
                ('actuators/separation/command', SeparationCommand,
                 lambda msg: commands.separation_command(msg, timeout)),
                ('control/flight_command', FlightControlCommand, commands.flight_command),
                ('control/batch', ControlBatch, commands.control_batch)):
            self._subscribe_command(key, msg_type, build)
        self.separation_service = self.create_service(
            GetSeparationResult, o.topic('actuators/separation/get_result'),
            self._on_get_separation_result)
        self.running = True
        self.receiver = threading.Thread(target=self._receive_loop, name='pylon_udp_rx',
                                         daemon=True)
        self.receiver.start()
        truth = 'disabled' if o.disable_ground_truth else 'enabled' \
            if self.ground_truth_domain is None else f'in ROS domain {o.ground_truth_domain}'
        self.get_logger().info(
            f'listening on {o.host}:{o.port} (UDP); topics under {o.topic_prefix}; '
            f'ground truth {truth}')
        self._warn_beyond_loopback()

    def _warn_beyond_loopback(self) -> None:
        """Warn once when the state socket takes datagrams from beyond this machine."""
        if not ipaddress.ip_address(self.sock.getsockname()[0]).is_loopback:
            self.get_logger().warning(
                f'the state socket listens beyond loopback ({self.options.host}): anyone who '
                f'reaches UDP port {self.options.port} can send vessel state (the protocol '
                'has no authentication); --host 127.0.0.1 keeps it on this machine')

    def _join_ground_truth_domain(self) -> GroundTruthDomain | None:
        """Return the node in the ground-truth domain (``--ground-truth-domain``), if any."""
        domain = self.options.ground_truth_domain
        if domain < 0:
            return None
        if domain == self.context.get_domain_id():
            raise ValueError(f'ground_truth_domain {domain} is the ROS domain of the bridge '
                             'itself (ROS_DOMAIN_ID): ground truth would be published there')
        return GroundTruthDomain(
            domain, sanitize_name(self.resolve_topic_name(self.options.ground_truth_prefix),
                                  'ground_truth'),
            lambda key, topic_id: self.resolve_topic_name(self.options.topic(key, id=topic_id)),
            self.qos_overrides, bridge_config.PROG)

    def _subscribe_command(self, key: str, msg_type: type, build, topic_id: str = '') -> None:
        def on_command(msg) -> None:
            self._on_command(key, msg, build, topic_id)
        self.command_subscriptions[key, topic_id] = self.create_subscription(
            msg_type, self.options.topic(key, id=topic_id),
            on_command, bridge_qos.qos_for(key, self.qos_overrides))

    def _on_command(self, key: str, msg, build, topic_id: str = '') -> None:
        """Validate a command, add the session envelope and send it to the mod."""
        with self.lock:
            try:
                data = self.core.command(build(msg), time.monotonic())
            except commands.CommandError as error:
                self._apply(self.core.command_rejected(key, msg, error, self._ros_now()))
                self.get_logger().warning(    # a docking port's topic has the port's id in it
                    f'refused a command on {self.options.topic(key, id=topic_id)} '
                    f'({error.reason}): '
                    f'{error.detail}', throttle_duration_sec=LOG_THROTTLE_SEC)
                return
        self._send(data)

    def _on_get_separation_result(self, request, response):
        """Answer from the cache; on a miss, also ask the mod (the answer comes on the topic)."""
        with self.lock:
            answer, query = self.core.separation_query(request, time.monotonic(),
                                                       self._ros_now())
        if query:
            self._send(query)
        return answer

    def _send(self, data: bytes) -> None:
        try:
            self.command_sock.sendto(data, self.command_addr)
        except OSError as exc:
            self.get_logger().error(f'could not send a command to {self.command_addr}: {exc}',
                                    throttle_duration_sec=LOG_THROTTLE_SEC)

    def _ros_now(self) -> float:
        if not self.sim_time:
            return time.time()
        return self.get_clock().now().nanoseconds * 1e-9

    # -- applying the core's actions -------------------------------------------------------
    def _apply(self, actions: list) -> None:
        for action in actions:
            if type(action) is Publish:                        # the common case first
                if self.topic_publishers.publish(action) and action.key == 'docking_port/state':
                    self._subscribe_command(                   # the port's command topic
                        'docking_port/command', DockingPortCommand,
                        lambda msg, port=action.topic_id: commands.docking_command(msg, port),
                        action.topic_id)
            elif isinstance(action, Relayed):
                self.ground_truth_domain.apply(action.action)
            elif isinstance(action, Destroy):
                removed = self.topic_publishers.destroy(action)
                if removed:
                    self.get_logger().info(f'removed {removed}: its source fell silent')
                if action.key == 'docking_port/state':         # the port is gone: its command too
                    subscription = self.command_subscriptions.pop(
                        ('docking_port/command', action.topic_id), None)
                    if subscription is not None:
                        self.destroy_subscription(subscription)

    def _receive_loop(self) -> None:
        """Receive and handle datagrams until ``close``; a queued datagram costs one recvmsg."""
        logger = self.get_logger()
        recvmsg, handle = self.sock.recvmsg, self.handle_datagram
        size = self.options.max_datagram_bytes
        while self.running:
            try:
                data, ancillary, flags, source = recvmsg(size, ANCILLARY_BYTES)
            except BlockingIOError:             # nothing queued: wait up to RECV_TIMEOUT_SEC
                self._readable.poll(RECV_TIMEOUT_SEC * 1e3)
                continue
            except OSError:
                if self.running:
                    logger.error('state socket failed', throttle_duration_sec=LOG_THROTTLE_SEC)
                    continue
                return
            try:
                handle(data, source, _arrival(ancillary), flags & MSG_TRUNC != 0)
            except Exception as error:         # a datagram never stops the receiver
                with self.lock:
                    self.core.stats.drop('internal_error', f'{type(error).__name__}: {error}')
                logger.error(f'a datagram raised {type(error).__name__}: {error}; dropped '
                             f'(internal_error), receiving on\n{traceback.format_exc()}',
                             throttle_duration_sec=LOG_THROTTLE_SEC)

    def handle_datagram(self, data: bytes, source, arrived: float, truncated: bool) -> None:
        """Process one received datagram: core, publishers, latency, throttled drop log."""
        with self.lock:
            dropped = self.core.stats.drop_count
            if truncated:
                self.core.reject('datagram_too_large', f'longer than '
                                 f'--max-datagram-bytes {self.options.max_datagram_bytes}')
                actions = []
            else:
                actions = self.core.handle(data, source, time.monotonic(),
                                           self._ros_now() if self.sim_time else time.time())
            self._apply(actions)
            self._note_latency(actions, arrived)
            if self.core.stats.drop_count != dropped:
                reason, detail = self.core.stats.recent_drops[-1]
                self.get_logger().warning(
                    f'dropped a datagram ({reason}): {detail} '
                    f'[{self.core.stats.drop_count} dropped so far]',
                    throttle_duration_sec=LOG_THROTTLE_SEC)

    def _note_latency(self, actions: list, arrived: float) -> None:
        """Record arrival → publish-returned latency of IMU, ground-truth and flight datagrams."""
        for action in actions:
            samples = self._latency_of.get(getattr(action, 'key', None))
            if samples is not None:
                samples.append((time.time() - arrived) * 1e3)
                return

    def _on_expiry(self) -> None:
        with self.lock:
            self._apply(self.core.tick(time.monotonic(), self._ros_now()))

    def _on_model_tf(self) -> None:
        with self.lock:
            self._apply(self.core.model_tf(time.monotonic(), self._ros_now()))

    def _on_diagnostics(self) -> None:
        with self.lock:
            msg = self._diagnostics()
            self._apply([Publish('diagnostics', msg), Publish(topics.ROS_DIAGNOSTICS, msg)])

    def _diagnostics(self) -> DiagnosticArray:
        published = self.core.stats.published
        now = time.monotonic()
        elapsed = max(1e-6, now - self._rates_at)
        rates = {key: (count - self._rates_base.get(key, 0)) / elapsed
                 for key, count in published.items()}
        self._rates_at, self._rates_base = now, dict(published)
        msg = diagnostics.report(self.core, rates, len(self.topic_publishers),
                                 lambda key: self.options.topic(key, id='<id>'), self.latency)
        for samples in self.latency.values():
            samples.clear()
        msg.header.stamp = self.get_clock().now().to_msg()
        return msg

    def close(self) -> None:
        """Stop receiving, close the sockets, leave the ground-truth domain."""
        self.running = False
        self.receiver.join(timeout=1.0)
        self.sock.close()
        self.command_sock.close()
        if self.ground_truth_domain is not None:
            with self.lock:
                self.ground_truth_domain.close()
