"""udp_bridge as a real process fed by the test's own datagrams, its commands read back.

The test plays the mod: it sends heartbeats and state datagrams to the bridge's state
port and listens on the command port for what the bridge sends.
"""

import json
import socket

from diagnostic_msgs.msg import DiagnosticArray
from pylon_common import topics
from pylon_interfaces.msg import DockingPortCommand, DockingPortState
from pylon_testing import mod_datagrams as d
from pylon_testing.pilot import COMMAND, STREAM
from pylon_testing.recorder import TopicRecorder
import pytest
from sensor_msgs.msg import Imu

pytestmark = pytest.mark.integration

PORT_ID = 'docking_port_3008_0'
TOPIC_TIMEOUT_SEC = 0.5
DIAGNOSTICS_PERIOD_SEC = 0.2    # the counters the test waits on come this often


class Mod:
    """The test's stand-in for KSP: a state sender and a command listener."""

    def __init__(self, state_port, command_port):
        self.target = ('127.0.0.1', state_port)
        self.out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.commands = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.commands.bind(('127.0.0.1', command_port))
        self.commands.setblocking(False)
        self.sequence = 0
        self.received = []

    def send(self, *datagrams):
        for data in datagrams:
            self.out.sendto(data, self.target)

    def heartbeat(self):
        self.sequence += 1
        self.send(d.session(sequence=self.sequence))

    def docking_state(self):
        self.send(d.encode('pylon_docking_port_state', name=PORT_ID, partFlightId=4008,
                           moduleIndex=0, nodeType='size1', state='Ready', docked=False,
                           acquiring=False, releasable=False, cameraActive=False,
                           partnerName='', partnerPartFlightId=0))

    def read_commands(self):
        while True:
            try:
                data, _ = self.commands.recvfrom(65535)
            except BlockingIOError:
                return self.received
            self.received.append(json.loads(data))

    def close(self):
        self.out.close()
        self.commands.close()


def test_a_docking_port_that_comes_back_sends_each_command_once(ros_process, free_udp_port,
                                                                ros_node):
    state_port, command_port = free_udp_port(), free_udp_port()
    mod = Mod(state_port, command_port)
    ros_process(['udp_bridge', '--host', '127.0.0.1', '--port', str(state_port),
                 '--command-port', str(command_port), '--topic-timeout-sec',
                 str(TOPIC_TIMEOUT_SEC)], name='bridge')
    rec = TopicRecorder(ros_node)
    rec.add('dock', f'/ksp_vessel/docking_ports/{PORT_ID}/state', DockingPortState, COMMAND)
    topic = f'/ksp_vessel/docking_ports/{PORT_ID}/command'
    try:
        def port_alive():
            mod.heartbeat()
            mod.docking_state()
            return bool(rec.got['dock'])

        def port_silent():
            mod.heartbeat()                  # the session stays fresh, the port falls silent
            return ros_node.count_publishers(f'/ksp_vessel/docking_ports/{PORT_ID}/state') == 0
        # the port appears, falls silent past the topic timeout (its topics go), comes back
        rec.until(port_alive, 'the docking port state')
        rec.until(port_silent, 'the docking port topic removed after its timeout')
        back = rec.mark()
        rec.until(lambda: port_alive() and rec.messages('dock', back), 'the port back')
        publisher = ros_node.create_publisher(DockingPortCommand, topic, COMMAND)
        # the port keeps sending its state: silent past the topic timeout, its command topic
        # would go again (however slowly discovery runs on a busy machine)
        rec.until(lambda: port_alive() and publisher.get_subscription_count() > 0,
                  'the bridge subscribed to the port command')
        def command(sequence):
            publisher.publish(DockingPortCommand(
                action=DockingPortCommand.ACTION_SELECT_CAMERA, vessel_id=d.VESSEL,
                controller_id='ctl', lease_id='lease-1', sequence=sequence))

        def sent(sequence):
            port_alive()
            return [c for c in mod.read_commands()
                    if c.get('type') == 'pylon_docking_port_command' and
                    c['sequence'] == sequence]
        # a second command behind the first: once it is in, so is any copy of the first
        command(7)
        rec.until(lambda: sent(7), 'the docking command at the mod')
        command(8)
        rec.until(lambda: sent(8), 'the second docking command at the mod')
        assert len(sent(7)) == 1 and len(sent(8)) == 1, mod.received
        assert sent(7)[0]['name'] == PORT_ID
        assert ros_node.count_subscribers(topic) == 1
    finally:
        mod.close()


def test_a_datagram_longer_than_the_buffer_is_dropped_and_the_next_one_read(
        ros_process, free_udp_port, ros_node):
    state_port, command_port = free_udp_port(), free_udp_port()
    mod = Mod(state_port, command_port)
    ros_process(['udp_bridge', '--host', '127.0.0.1', '--port', str(state_port),
                 '--command-port', str(command_port), '--max-datagram-bytes', '600',
                 '--diagnostics-period-sec', str(DIAGNOSTICS_PERIOD_SEC)], name='bridge')
    rec = TopicRecorder(ros_node)
    rec.add('diag', topics.name('diagnostics'), DiagnosticArray, COMMAND)
    rec.add('imu', topics.name('imu'), Imu, STREAM)

    def datagrams() -> dict:
        report = rec.last('diag')
        return {} if report is None else {
            kv.key: kv.value for s in report.status if s.name == 'pylon_bridge: datagrams'
            for kv in s.values}
    ut = [d.UT]

    def imu(rate_x: float, pad: bytes = b'') -> bytes:
        ut[0] += 0.02
        data = d.imu(ut=ut[0], rate=(rate_x, 0.0, 0.0))
        return data[:-1] + b',"pad":"' + pad + b'"}' if pad else data
    try:
        assert len(imu(0.125, b'x' * 700)) > 600 and len(imu(0.25)) < 600
        rec.until(lambda: mod.heartbeat() or datagrams().get('accepted', '0') != '0',
                  'the bridge accepting heartbeats')
        # the first IMU of a session only primes it (the mod's rule), and the bridge makes
        # the topic with its first message, which a subscriber not matched yet misses:
        # samples go until the test node got one (the topic matched: none is missed so)
        mod.send(imu(0.0))
        rec.until(lambda: mod.heartbeat() or mod.send(imu(0.0625)) or rec.got['imu'],
                  'the IMU topic matched')
        # the long one, then the next one
        mod.send(imu(0.125, b'x' * 700), imu(0.25))
        rec.wait_for('imu', lambda m: m.angular_velocity.x == 0.25,
                     what='the IMU after the long datagram')
        assert all(m.angular_velocity.x != 0.125 for m in rec.got['imu'])   # never read
        rec.until(lambda: datagrams().get('dropped.datagram_too_large') == '1',
                  'the long datagram counted as datagram_too_large')
    finally:
        mod.close()
