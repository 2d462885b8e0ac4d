"""What the network reaches: the bridge as shipped, a model from elsewhere, a command's way.

The shipped bridge listens on loopback only, takes a vessel model only from a loopback
sender unless told, and sends commands only to its configured host.

Each test starts the real ``udp_bridge`` and talks to it over real sockets; where the bound
address matters it is read from the kernel (``/proc/net/udp``), not from the bridge's log.
The README's "Security" section says what this leaves an attacker and which settings limit it.
"""

from __future__ import annotations

import json
from pathlib import Path
import socket

from diagnostic_msgs.msg import DiagnosticArray
from pylon_common import topics
from pylon_interfaces.msg import ControlAuthorityCommand
from pylon_testing import mod_datagrams as d
from pylon_testing.plan import load_components
from pylon_testing.recorder import TopicRecorder
import pytest
from std_msgs.msg import String

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def bound_addresses(port: int) -> list[str]:
    """Return the local IPv4 addresses of the UDP sockets bound to ``port`` (the kernel's)."""
    found = []
    for line in Path('/proc/net/udp').read_text().splitlines()[1:]:
        address, port_hex = line.split()[1].split(':')
        if int(port_hex, 16) == port:
            found.append(socket.inet_ntoa(bytes.fromhex(address)[::-1]))
    return found


def non_loopback_address() -> str | None:
    """Return this host's address on its default route, or None without one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(('192.0.2.1', 9))          # no datagram is sent by a UDP connect
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith('127.') or address == '0.0.0.0' else address


def counters(message: DiagnosticArray) -> dict[str, str]:
    """Return the key/values of the bridge's ``datagrams`` status."""
    for status in message.status:
        if status.name.endswith('datagrams'):
            return {kv.key: kv.value for kv in status.values}
    return {}


def test_the_shipped_bridge_listens_on_loopback_only(ros_process, free_udp_port, ros_node):
    pc = load_components(ROOT)
    ports = (free_udp_port(), free_udp_port(), free_udp_port())
    [bridge] = [p for p in pc.plan('bridge', ports=ports) if p.executable == 'udp_bridge']
    process = ros_process(pc.command_line(bridge), name='bridge')
    rec = TopicRecorder(ros_node)

    def bound():
        process.check()
        return bound_addresses(ports[0])
    rec.until(bound, 'the bridge bound its state port')
    assert bound_addresses(ports[0]) == ['127.0.0.1']
    # a real KSP elsewhere is the one opt-in that listens beyond loopback
    [real] = [p for p in pc.plan('bridge', use_real_ksp=True) if p.executable == 'udp_bridge']
    assert dict(real.parameters)['host'] == '0.0.0.0'


def test_a_model_from_another_host_is_refused_unless_allowed(ros_process, free_udp_port,
                                                            ros_node):
    remote = non_loopback_address()
    if remote is None:
        pytest.skip('this machine has no address besides loopback to send from')
    state_port = free_udp_port()
    ros_process(['udp_bridge', '--host', '0.0.0.0', '--port', str(state_port),
                 '--command-port', str(free_udp_port())], name='bridge')
    rec = TopicRecorder(ros_node)
    rec.add('description', topics.name('robot_description'), String,
            topics.qos('robot_description', reader=True))
    rec.add('diagnostics', '/pylon/diagnostics', DiagnosticArray,
            topics.qos('diagnostics', reader=True))
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stranger.bind((remote, 0))
    local = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sequence = iter(range(1, 1_000_000))
    try:
        def send(sock, *datagrams):
            local.sendto(d.session(sequence=next(sequence)), ('127.0.0.1', state_port))
            to = '127.0.0.1' if sock is local else remote
            for data in datagrams:
                sock.sendto(data, (to, state_port))

        def refused(message):
            return int(counters(message).get('dropped.remote_source', 0)) > 0
        since = rec.mark()
        rec.until(lambda: send(stranger, *d.model_chunks()) or
                  any(refused(m) for m in rec.messages('diagnostics', since)),
                  'the remote model counted as dropped')
        # the description stays the empty one of a session without a model
        assert [m.data for m in rec.messages('description')] in ([], [''])
        rec.until(lambda: send(local, *d.model_chunks()) or
                  any('<robot' in m.data for m in rec.messages('description')),
                  'the same model from loopback published')
    finally:
        stranger.close()
        local.close()


def test_commands_go_to_the_configured_host_only(ros_process, free_udp_port, ros_node):
    state_port, command_port = free_udp_port(), free_udp_port()
    commands = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    commands.bind(('127.0.0.1', command_port))
    commands.setblocking(False)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)    # the state's source
    sender.setblocking(False)
    ros_process(['udp_bridge', '--host', '127.0.0.1', '--port', str(state_port),
                 '--command-port', str(command_port)], name='bridge')
    rec = TopicRecorder(ros_node)
    publisher = ros_node.create_publisher(
        ControlAuthorityCommand, topics.name('control/authority/command'),
        topics.qos('control/authority/command'))
    received: list[dict] = []
    sequence, command_sequence = iter(range(1, 1_000_000)), iter(range(1, 1_000_000))
    try:
        def arrived():
            sender.sendto(d.session(sequence=next(sequence)), ('127.0.0.1', state_port))
            publisher.publish(ControlAuthorityCommand(
                action=ControlAuthorityCommand.ACTION_ACQUIRE, vessel_id=d.VESSEL,
                controller_id='ctl', lease_id='lease-1', priority=1,
                lease_duration_sec=1.0, sequence=next(command_sequence)))
            while True:
                try:
                    received.append(json.loads(commands.recv(65535)))
                except BlockingIOError:
                    return len(received) >= 2
        rec.until(arrived, 'authority commands at the configured command port')
        assert {c['type'] for c in received} == {'pylon_control_authority_command'}
        # the state's source, another port on the same host, never hears a command
        with pytest.raises(BlockingIOError):
            sender.recv(65535)
    finally:
        commands.close()
        sender.close()
