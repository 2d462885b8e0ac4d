"""``udp_bridge``: the ROS 2 side of the PyLoN mod (thin; the logic is in ``core``).

A receive thread blocks on the state socket and hands each datagram to ``BridgeCore``
at once (low latency); a timer expires the session and silent topics every 0.25 s and
another publishes diagnostics. Publishers are created on a topic's first message and
destroyed when the core says so. One lock serialises the core and the publishers.
"""

from __future__ import annotations

import socket
import sys
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

from pylon_bridge import config as bridge_config
from pylon_bridge import qos as bridge_qos
from pylon_bridge.core import BridgeCore, CoreConfig, Destroy, EXPIRY_PERIOD_SEC, Publish

RECV_TIMEOUT_SEC = 0.05
MAX_DATAGRAMS_PER_WAKE = 256
LOG_THROTTLE_SEC = 5.0


class UdpBridge(Node):
    """Receives PyLoN state datagrams and publishes them as ROS 2 topics."""

    def __init__(self, explicit: dict | None = None, **kwargs) -> None:
        """Declare parameters, resolve the options, bind the socket, start receiving."""
        super().__init__('udp_bridge', **kwargs)
        parameters = bridge_config.declare_parameters(self)
        self.options = bridge_config.resolve(explicit or {}, parameters)
        self.qos_overrides = bridge_qos.declare_qos_parameters(self)
        o = self.options
        self.core = BridgeCore(CoreConfig(
            topic_timeout_sec=o.topic_timeout_sec, disable_ground_truth=o.disable_ground_truth,
            allow_remote_models=o.allow_remote_models,
            publish_proxy_static_tf=o.publish_proxy_static_tf,
            max_datagram_bytes=o.max_datagram_bytes))
        self.publishers_by_key: dict = {}
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
        self.sock.bind((o.host, o.port))
        self.sock.settimeout(RECV_TIMEOUT_SEC)
        self._rates_at = time.monotonic()
        self._rates_base: dict = {}
        with self.lock:
            self._apply(self.core.initial(self._ros_now()))
        self.expiry_timer = self.create_timer(EXPIRY_PERIOD_SEC, self._on_expiry)
        self.diagnostics_timer = self.create_timer(o.diagnostics_period_sec,
                                                   self._on_diagnostics)
        self.running = True
        self.receiver = threading.Thread(target=self._receive_loop, name='pylon_udp_rx',
                                         daemon=True)
        self.receiver.start()
        self.get_logger().info(
            f'listening on {o.host}:{o.port} (UDP); topics under {o.topic_prefix}; '
            f'ground truth {"disabled" if o.disable_ground_truth else "enabled"}')

    def _ros_now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # -- applying the core's actions -------------------------------------------------------
    def _apply(self, actions: list) -> None:
        for action in actions:
            if isinstance(action, Publish):
                publisher = self.publishers_by_key.get(action.key)
                if publisher is None:
                    publisher = self.create_publisher(
                        type(action.msg), self.options.topic(action.key),
                        bridge_qos.qos_for(action.key, self.qos_overrides))
                    self.publishers_by_key[action.key] = publisher
                publisher.publish(action.msg)
            elif isinstance(action, Destroy):
                publisher = self.publishers_by_key.pop(action.key, None)
                if publisher is not None:
                    self.destroy_publisher(publisher)
                    self.get_logger().info(
                        f'removed {self.options.topic(action.key)}: no data for '
                        f'{self.options.topic_timeout_sec:g} s')

    def _receive_loop(self) -> None:
        logger = self.get_logger()
        size = self.options.max_datagram_bytes
        while self.running:
            try:
                data, source = self.sock.recvfrom(size)
            except TimeoutError:
                continue
            except OSError:
                if self.running:
                    logger.error('state socket failed', throttle_duration_sec=LOG_THROTTLE_SEC)
                return
            batch = [(data, source)]
            self.sock.setblocking(False)
            try:
                while len(batch) < MAX_DATAGRAMS_PER_WAKE:
                    batch.append(self.sock.recvfrom(size))
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                pass
            finally:
                self.sock.settimeout(RECV_TIMEOUT_SEC)
            with self.lock:
                for data, source in batch:
                    dropped = sum(self.core.stats.dropped.values())
                    self._apply(self.core.handle(data, source, time.monotonic(),
                                                 self._ros_now()))
                    if sum(self.core.stats.dropped.values()) != dropped:
                        reason, detail = self.core.recent_drops[-1] \
                            if self.core.recent_drops else ('dropped', '')
                        logger.warning(f'dropped a datagram ({reason}): {detail} '
                                       f'[{sum(self.core.stats.dropped.values())} dropped]',
                                       throttle_duration_sec=LOG_THROTTLE_SEC)

    def _on_expiry(self) -> None:
        with self.lock:
            self._apply(self.core.tick(time.monotonic(), self._ros_now()))

    def _on_diagnostics(self) -> None:
        with self.lock:
            msg = self._diagnostics()
            self._apply([Publish('diagnostics', msg)])

    def _diagnostics(self) -> DiagnosticArray:
        stats = self.core.stats
        now = time.monotonic()
        elapsed = max(1e-6, now - self._rates_at)
        rates = {key: (count - self._rates_base.get(key, 0)) / elapsed
                 for key, count in stats.published.items()}
        self._rates_at, self._rates_base = now, dict(stats.published)
        life = self.core.lifecycle.current
        names = {0: 'UNAVAILABLE', 1: 'ACTIVE', 2: 'CHANGED', 3: 'STALE'}
        datagrams = DiagnosticStatus(
            level=DiagnosticStatus.OK, name='pylon_bridge: datagrams',
            message=f'{stats.received} received, {sum(stats.dropped.values())} dropped',
            hardware_id='udp_bridge',
            values=[KeyValue(key='received', value=str(stats.received)),
                    KeyValue(key='accepted', value=str(stats.accepted))]
            + [KeyValue(key=f'dropped.{reason}', value=str(count))
               for reason, count in sorted(stats.dropped.items())]
            + [KeyValue(key=f'received.{kind}', value=str(count))
               for kind, count in sorted(stats.by_type.items())])
        session = DiagnosticStatus(
            level=DiagnosticStatus.OK if life.state in (1, 2) else DiagnosticStatus.WARN,
            name='pylon_bridge: session', message=f'{names[life.state]} ({life.reason})',
            hardware_id='udp_bridge',
            values=[KeyValue(key=k, value=str(v)) for k, v in (
                ('state', names[life.state]), ('vessel_id', life.vessel_id),
                ('vessel_name', life.vessel_name), ('generation', life.generation),
                ('runtime_instance', life.runtime_instance),
                ('runtime_generation', life.runtime_generation),
                ('runtime_epoch', life.runtime_epoch), ('model_ready', life.model_ready),
                ('paused', self.core.paused))])
        topics = DiagnosticStatus(
            level=DiagnosticStatus.OK, name='pylon_bridge: topics',
            message=f'{len(self.publishers_by_key)} topics', hardware_id='udp_bridge',
            values=[KeyValue(key=f'rate_hz.{self.options.topic(key)}', value=f'{rate:.1f}')
                    for key, rate in sorted(rates.items())])
        msg = DiagnosticArray(status=[datagrams, session, topics])
        msg.header.stamp = self.get_clock().now().to_msg()
        return msg

    def close(self) -> None:
        """Stop receiving and close the socket."""
        self.running = False
        self.receiver.join(timeout=1.0)
        self.sock.close()


def run(explicit: dict, ros_args: list[str]) -> int:
    """Start the node with the flags given and ``--ros-args``; spin until shutdown."""
    rclpy.init(args=['udp_bridge', *ros_args])
    node = None
    try:
        node = UdpBridge(explicit)
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (ValueError, OSError) as exc:
        print(f'udp_bridge: {exc}', file=sys.stderr)
        return 2
    finally:
        if node is not None:
            node.close()
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
