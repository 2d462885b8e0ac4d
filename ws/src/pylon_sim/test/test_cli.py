"""The pylon_sim executable: runs headless, answers admin requests, stops cleanly."""

import json
import signal
import socket

from pylon_protocol import management, packets
from pylon_sim.loop.admin import request


def receiver() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(('127.0.0.1', 0))
    sock.settimeout(10.0)
    return sock


def test_runs_sends_answers_admin_and_stops_on_sigterm(ros_process, free_udp_port):
    state = receiver()
    admin_port = free_udp_port()
    sim = ros_process(['pylon_sim', '--state-port', str(state.getsockname()[1]),
                       '--command-port', str(free_udp_port()), '--admin-port',
                       str(admin_port), '--rate', '1'])
    sim.wait_for_output(r'scenario orbit .* active sat', timeout=20)
    types = set()
    while 'pylon_imu' not in types or 'pylon_session' not in types:
        types.add(packets.decode_state(state.recv(65535))['type'])
    reply = request(admin_port, {'cmd': 'pause'})
    assert reply['ok'] and reply['paused'] and reply['active'] == 'sat'
    reply = request(admin_port, {'cmd': 'nonsense'})
    assert not reply['ok'] and 'unknown admin cmd' in reply['error']
    sim.popen.send_signal(signal.SIGTERM)
    assert sim.wait(timeout=10) == 0
    assert 'stopped' in sim.log()
    state.close()


def test_duration_and_lockstep(ros_process, free_udp_port, lean_scenario):
    # lean (no LiDAR): what is timed here is the game's clock, not its sensors
    sim = ros_process(['pylon_sim', '--scenario', lean_scenario('surface'), '--rate', '0',
                       '--duration', '10', '--state-port', str(free_udp_port()),
                       '--command-port', str(free_udp_port())])
    assert sim.wait(timeout=60) == 0
    status = [line for line in sim.log().splitlines() if 'UT ' in line]
    assert status and 'clock 10.0 s' in status[-1], status     # the final status line


def test_a_broken_scenario_is_rejected_at_start(ros_process, free_udp_port, tmp_path):
    bad = tmp_path / 'bad.yaml'
    bad.write_text(json.dumps({'vessels': [{'key': 'x', 'parts': []}]}))
    sim = ros_process(['pylon_sim', '--scenario', str(bad), '--command-port',
                       str(free_udp_port())])
    assert sim.wait(timeout=20) == 2
    assert f'{bad}: vessels[0].parts: must be a non-empty list' in sim.log()


def test_a_mission_serves_each_vehicle_on_its_ports_and_answers_management(
        ros_process, free_udp_port, free_udp_port_series):
    stride = management.PORT_STRIDE
    first_state = free_udp_port_series(2, stride)
    receivers = []
    for k in range(2):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(('127.0.0.1', first_state + k * stride))
        sock.settimeout(10.0)
        receivers.append(sock)
    manager = free_udp_port()
    sim = ros_process(['pylon_sim', '--scenario', 'rendezvous', '--rate', '1',
                       '--state-port', str(first_state),
                       '--command-port', str(free_udp_port_series(2, stride)),
                       '--management-port', str(manager)])
    sim.wait_for_output(r'mission of 2 vehicles', timeout=20)
    seen = []
    for sock in receivers:
        while True:
            packet = packets.decode_state(sock.recv(65535))
            if packet['type'] == 'pylon_imu':
                seen.append(packet['vesselId'])
                break
    status = request(manager, {'cmd': 'status'})
    assert status['ok'] and status['phase'] == management.HELD
    assert [v['vessel_id'] for v in status['vehicles']] == seen      # vehicle k on port k
    assert [v['state_port'] for v in status['vehicles']] == [first_state,
                                                             first_state + stride]
    assert request(manager, {'cmd': 'start'})['phase'] == management.RUNNING
    reply = request(manager, {'cmd': 'start'})
    assert not reply['ok'] and 'running already' in reply['error']
    assert request(manager, {'cmd': 'quit'})['ok']
    assert sim.wait(timeout=20) == 0
    for sock in receivers:
        sock.close()


def test_every_process_is_a_new_runtime_instance_whatever_the_seed(ros_process,
                                                                    free_udp_port,
                                                                    lean_scenario):
    # a restarted game is a new KSP start: a bridge must not take it for the old one
    # (same instance, UT gone backwards: it would refuse every heartbeat)
    state = receiver()
    instances = []
    scenario = lean_scenario()
    for _ in range(2):
        sim = ros_process(['pylon_sim', '--scenario', scenario, '--seed', '3', '--state-port',
                           str(state.getsockname()[1]), '--command-port', str(free_udp_port()),
                           '--rate', '0', '--duration', '1'])
        packet = packets.decode_state(state.recv(65535))
        instances.append(packet['runtimeInstance'])
        assert sim.wait(timeout=60) == 0
        while True:                         # what is left of that run
            state.settimeout(0.2)
            try:
                state.recv(65535)
            except TimeoutError:
                break
        state.settimeout(10.0)
    assert instances[0] != instances[1]
    state.close()
