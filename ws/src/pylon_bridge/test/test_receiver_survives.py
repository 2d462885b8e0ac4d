"""The receive thread outlives a datagram whose handling raises.

A real ``UdpBridge`` in the test process (its own rclpy context) fed over a real socket; the
fault is injected into its core: the first datagram's handling raises. The datagram is
counted (``internal_error``), logged, and the next ones are handled as ever: a bug a hostile
datagram finds costs that datagram, never the bridge's input.
"""

import socket

from pylon_bridge.node import UdpBridge
from pylon_testing import mod_datagrams as d
from pylon_testing.wait import spin_until
import pytest

pytestmark = pytest.mark.integration


def test_a_datagram_that_raises_is_dropped_and_the_receiver_goes_on(ros_node, free_udp_port,
                                                                   monkeypatch):
    port = free_udp_port()
    bridge = UdpBridge({'host': '127.0.0.1', 'port': port, 'command_port': free_udp_port()},
                       context=ros_node.context)
    handle, calls = bridge.core.handle, []

    def faulty(*args):
        calls.append(args)
        if len(calls) == 1:
            raise RuntimeError('injected fault')
        return handle(*args)
    monkeypatch.setattr(bridge.core, 'handle', faulty)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sender.sendto(d.session(sequence=1), ('127.0.0.1', port))
        spin_until(ros_node, lambda: bridge.core.stats.dropped['internal_error'] == 1, 60.0,
                   what='the raising datagram counted')
        sequence = iter(range(2, 1_000_000))

        def active():
            sender.sendto(d.session(sequence=next(sequence)), ('127.0.0.1', port))
            return bridge.core.stats.accepted >= 1
        spin_until(ros_node, active, 60.0, what='the next heartbeat accepted')
        assert bridge.receiver.is_alive()
        assert bridge.core.stats.dropped['internal_error'] == 1
    finally:
        sender.close()
        bridge.close()
        bridge.destroy_node()
