"""A real Foxglove WebSocket protocol v1 client, for the live view's tests and benchmark.

``FoxgloveClient(url)`` connects (``websocket-client``) offering the subprotocols Foxglove
and Lichtblick offer, reads in a thread of its own and keeps what the server says: the
``serverInfo``, the channels it advertises (and removes), ``status`` messages, and for
each subscription the messages received (``Received``: the server's log time, the receipt
time on ``time.monotonic`` and ``time.time_ns``, the payload unless the subscription was
made with ``keep=False``). It speaks the client side: ``subscribe``/``unsubscribe``,
``advertise``/``unadvertise`` a client channel, ``publish`` on it, and ``send_raw`` for
frames the protocol does not allow. Waits are conditions with a timeout (``until``).

Wire format (the protocol's spec): text frames are JSON objects with an ``op``; server
message data is binary ``0x01``, uint32 subscription id, uint64 log time (ns), payload;
client message data is ``0x01``, uint32 client channel id, payload (little endian).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
import itertools
import json
import socket
import struct
import threading
import time
from typing import Any

import websocket

SUBPROTOCOLS = ('foxglove.websocket.v1', 'foxglove.sdk.v1')
"""What the apps offer: the protocol's original name and its current one (the same v1)."""
MESSAGE_DATA = 0x01
READ_PERIOD_SEC = 1.0
DEFAULT_TIMEOUT_SEC = 60.0


@dataclass(frozen=True)
class Received:
    """One message of a subscription."""

    log_time_ns: int
    received: float          # time.monotonic() at receipt
    received_ns: int         # time.time_ns() at receipt (the server's log time is wall clock)
    size: int
    payload: bytes | None


class FoxgloveClient:
    """One connection to a Foxglove WebSocket server, read in a background thread."""

    def __init__(self, url: str, subprotocols: Iterable[str] = SUBPROTOCOLS,
                 timeout: float = 10.0) -> None:
        """Connect (``websocket.WebSocketBadStatusException`` when the server refuses)."""
        self.ws = websocket.create_connection(url, subprotocols=list(subprotocols),
                                              timeout=timeout, enable_multithread=True)
        self.ws.settimeout(READ_PERIOD_SEC)
        self.subprotocol = self.ws.getsubprotocol()
        self.server_info: dict[str, Any] | None = None
        self.channels: dict[int, dict[str, Any]] = {}
        self.removed: list[int] = []
        self.statuses: list[dict[str, Any]] = []
        self.received: dict[int, list[Received]] = {}
        self._keep: dict[int, bool] = {}
        self._ids = itertools.count(1)
        self.error: BaseException | None = None
        self._closing = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- reading -----------------------------------------------------------------------------
    def _read(self) -> None:
        while not self._closing.is_set():
            try:
                frame = self.ws.recv()
            except websocket.WebSocketTimeoutException:
                continue
            except Exception as exc:            # closed by the server or by us
                if not self._closing.is_set():
                    self.error = exc
                return
            if isinstance(frame, bytes):
                self._on_binary(frame)
            elif frame:
                self._on_text(json.loads(frame))

    def _on_text(self, message: dict[str, Any]) -> None:
        op = message.get('op')
        if op == 'serverInfo':
            self.server_info = message
        elif op == 'advertise':
            self.channels.update({c['id']: c for c in message['channels']})
        elif op == 'unadvertise':
            for channel_id in message['channelIds']:
                self.channels.pop(channel_id, None)
                self.removed.append(channel_id)
        elif op == 'status':
            self.statuses.append(message)

    def _on_binary(self, frame: bytes) -> None:
        if frame[:1] != bytes([MESSAGE_DATA]) or len(frame) < 13:
            return
        subscription, log_time = struct.unpack_from('<IQ', frame, 1)
        payload = frame[13:]
        self.received.setdefault(subscription, []).append(Received(
            log_time, time.monotonic(), time.time_ns(), len(payload),
            payload if self._keep.get(subscription, True) else None))

    # -- asking ------------------------------------------------------------------------------
    def until(self, condition: Callable[[], bool], what: str,
              timeout: float = DEFAULT_TIMEOUT_SEC, every: Callable[[], None] | None = None,
              ) -> None:
        """Wait until ``condition()`` (``every()`` runs at each look, e.g. a ROS spin)."""
        deadline = time.monotonic() + timeout
        while not condition():
            if self.error is not None:
                raise ConnectionError(f'the server closed the connection: {self.error!r}')
            if time.monotonic() > deadline:
                raise TimeoutError(f'{what} did not hold within {timeout} s')
            if every is not None:
                every()
            else:
                time.sleep(0.02)

    def channel(self, topic: str) -> dict[str, Any] | None:
        """Return the advertised channel of ``topic`` (the first, if it has several)."""
        return next((c for c in self.channels.values() if c['topic'] == topic), None)

    def wait_channel(self, topic: str, timeout: float = DEFAULT_TIMEOUT_SEC,
                     every: Callable[[], None] | None = None) -> dict[str, Any]:
        """Return the channel of ``topic`` once it is advertised."""
        self.until(lambda: self.channel(topic) is not None, f'a channel for {topic}', timeout,
                   every)
        return self.channel(topic)

    # -- speaking ----------------------------------------------------------------------------
    def send_json(self, message: dict[str, Any]) -> None:
        """Send one JSON (text) message."""
        self.ws.send(json.dumps(message))

    def subscribe(self, channel_id: int, keep: bool = True) -> int:
        """Subscribe to a channel; return the subscription id (``keep``: keep the payloads)."""
        subscription = next(self._ids)
        self._keep[subscription] = keep
        self.received[subscription] = []
        self.send_json({'op': 'subscribe',
                        'subscriptions': [{'id': subscription, 'channelId': channel_id}]})
        return subscription

    def unsubscribe(self, subscription: int) -> None:
        """End a subscription."""
        self.send_json({'op': 'unsubscribe', 'subscriptionIds': [subscription]})

    def advertise(self, channel_id: int, topic: str, schema_name: str,
                  encoding: str = 'cdr') -> None:
        """Advertise a client channel (the server must offer ``clientPublish``)."""
        self.send_json({'op': 'advertise', 'channels': [{
            'id': channel_id, 'topic': topic, 'encoding': encoding, 'schemaName': schema_name}]})

    def unadvertise(self, channel_id: int) -> None:
        """End a client channel."""
        self.send_json({'op': 'unadvertise', 'channelIds': [channel_id]})

    def publish(self, channel_id: int, payload: bytes) -> None:
        """Send one message on a client channel."""
        self.ws.send_binary(bytes([MESSAGE_DATA]) + struct.pack('<I', channel_id) + payload)

    def send_raw(self, data: bytes | str) -> None:
        """Send a frame as it is (text for ``str``, binary for ``bytes``)."""
        if isinstance(data, str):
            self.ws.send(data)
        else:
            self.ws.send_binary(data)

    def drop_mid_frame(self, partial_frame: bytes) -> None:
        """Send the start of a frame and drop the TCP connection without a closing handshake."""
        self._closing.set()
        sock = self.ws.sock
        sock.sendall(partial_frame)
        sock.shutdown(socket.SHUT_RDWR)
        self._reader.join(timeout=2.0)
        sock.close()

    def close(self) -> None:
        """Close the connection and stop reading."""
        self._closing.set()
        try:
            self.ws.close(timeout=1.0)
        except Exception:
            pass
        self._reader.join(timeout=2.0)

    def __enter__(self) -> FoxgloveClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
