"""The fuzz generators: one seed, one sequence; every kind drawn; nothing authentic sent.

``pylon_testing.fuzz`` feeds the fuzz benchmark and its integration tests. Here it runs
without processes: the state fuzzer on the sample corpus in the test vessel's session,
the command fuzzer and the admin requests into a simulator in this process (its admin
requests through ``pylon_sim.loop.admin.serve`` over a real socket, as the simulator answers
them).
"""

from collections import Counter
import itertools
import json
import random
import socket

from pylon_protocol import packets
from pylon_protocol.envelope import Envelope, ENVELOPE_KEYS
from pylon_protocol.errors import ProtocolError
from pylon_testing import fuzz
from pylon_testing import mod_datagrams as d
import pytest

LIVE = d.ENV


@pytest.fixture(scope='module')
def corpus():
    return fuzz.sample_corpus()


def take(source, count):
    return list(itertools.islice(source, count))


def kinds_of(cls):
    return {name[len('_kind_'):] for name in dir(cls) if name.startswith('_kind_')}


def test_the_corpus_has_every_state_sample_and_the_mods_forms(corpus):
    types = {p['type'] for p in corpus}
    assert {'pylon_session', 'pylon_imu', 'pylon_docking_port_state', 'pylon_motor_state',
            'pylon_vessel_urdf_chunk', 'pylon_camera_frame_chunk'} <= types


def test_one_seed_gives_one_sequence(corpus):
    one, again, other = (fuzz.StateFuzzer(seed, corpus, LIVE) for seed in (5, 5, 6))
    assert take(one, 400) == take(again, 400) != take(other, 400)
    one, again, other = (fuzz.CommandFuzzer(seed, LIVE) for seed in (5, 5, 6))
    assert take(one, 400) == take(again, 400) != take(other, 400)
    one, again, other = (fuzz.admin_requests(random.Random(seed)) for seed in (5, 5, 6))
    assert take(one, 200) == take(again, 200) != take(other, 200)


def test_every_kind_has_a_weight_and_is_drawn(corpus):
    assert set(fuzz.STATE_WEIGHTS) == kinds_of(fuzz.StateFuzzer)
    assert set(fuzz.COMMAND_WEIGHTS) <= kinds_of(fuzz.CommandFuzzer)
    drawn = Counter(kind for kind, _ in take(fuzz.StateFuzzer(1, corpus, LIVE), 6000))
    assert set(drawn) == set(fuzz.STATE_WEIGHTS), set(fuzz.STATE_WEIGHTS) - set(drawn)
    drawn = Counter(kind for kind, _ in take(fuzz.CommandFuzzer(1, LIVE), 4000))
    assert set(drawn) == set(fuzz.COMMAND_WEIGHTS), set(fuzz.COMMAND_WEIGHTS) - set(drawn)
    drawn = Counter(kind for kind, _ in take(fuzz.admin_requests(random.Random(1)), 1000))
    assert set(drawn) == {'not_json', 'invalid_utf8', 'not_object', 'deep_nesting',
                          'unknown_cmd', 'mistyped_cmd', 'bad_value'}


def test_every_datagram_fits_in_one_udp_datagram(corpus):
    for source in (fuzz.StateFuzzer(2, corpus, LIVE), fuzz.CommandFuzzer(2, LIVE),
                   fuzz.admin_requests(random.Random(2))):
        sizes = [len(data) for _, data in take(source, 3000)]
        assert max(sizes) <= fuzz.MAX_UDP_PAYLOAD


def test_the_corpus_is_never_changed(corpus):
    before = json.dumps(corpus, sort_keys=True)
    take(fuzz.StateFuzzer(3, corpus, LIVE), 3000)
    assert json.dumps(corpus, sort_keys=True) == before


def test_no_heartbeat_or_imu_sample_the_bridge_would_take_as_the_games(corpus):
    # a heartbeat of a new instance takes the session over, an IMU sample of the live
    # session with a later UT makes the game's stale: both would be authentic, not hostile
    fuzzer = fuzz.StateFuzzer(4, corpus, LIVE)
    decoded = Counter()
    for kind, data in take(fuzzer, 8000):
        try:
            packet = packets.decode_state(data)
        except ProtocolError:
            continue
        if packet['type'] == 'pylon_session':
            assert packet['runtimeEpoch'] == fuzz.FOREIGN_EPOCH, (kind, data[:300])
        elif packet['type'] == 'pylon_imu':
            assert (not LIVE.matches(packet) or packet['runtimeEpoch'] ==
                    fuzz.FOREIGN_EPOCH), (kind, data[:300])
        decoded[packet['type']] += 1
    assert decoded['pylon_session'] and decoded['pylon_imu'] and fuzzer.neutralised


def test_chunk_sequences_are_hostile_orderings_of_whole_sets(corpus):
    fuzzer = fuzz.StateFuzzer(7, corpus, LIVE)
    models = [fuzzer._kind_model_sequence() for _ in range(60)]
    frames = [fuzzer._kind_camera_sequence() for _ in range(60)]
    for sequence in models + frames:
        for _, data in sequence:
            packets.decode_state(data)          # each chunk alone is well-formed
    for sequences, most in ((models, packets.MAX_MODEL_CHUNKS),
                            (frames, packets.MAX_CAMERA_CHUNKS)):
        assert any(len({data for _, data in s}) < len(s) for s in sequences)  # duplicates
        assert any(json.loads(data)['chunkCount'] == most                    # huge totals
                   for s in sequences for _, data in s)


@pytest.fixture
def simulator():
    from pylon_sim.loop.runtime import Simulator
    from pylon_sim.loop.scenario import load_scenario
    sim = Simulator(load_scenario('orbit', seed=0), send=lambda data: None, seed=0)
    sim.run(rate=0, duration=0.2)
    yield sim
    sim.close()


def test_admin_requests_are_all_refused_by_a_simulator(simulator):
    from pylon_sim.loop import admin
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
        server.bind(('127.0.0.1', 0))
        server.setblocking(False)
        client.settimeout(10.0)
        replies = Counter()
        for kind, data in take(fuzz.admin_requests(random.Random(8)), 600):
            client.sendto(data, server.getsockname())
            admin.serve(server, simulator.admin, limit=1)
            reply = json.loads(client.recv(65535))
            assert reply['ok'] is False, (kind, data[:200], reply)
            replies[kind] += 1
    assert len(replies) == 7
    status = simulator.status()
    assert not simulator.stop_requested and not status['paused']
    assert status['warp'] == [1.0, 'physics']


def test_fuzzed_commands_never_raise_in_a_simulator_and_nothing_pushes_unbacked(simulator):
    live = Envelope(*(simulator.status()[key] for key in ENVELOPE_KEYS))
    fuzzer = fuzz.CommandFuzzer(9, live)
    for i, (_, data) in enumerate(take(fuzzer, 4000)):
        simulator.handle_command(data)
        if i % 100 == 0:
            simulator.run(rate=0, duration=0.02)
    status = simulator.status()
    assert status['control']['unbacked_steps'] == 0
    assert sum(status['command_rejected'].values()) > 2000
    assert status['control']['refused'] and status['commands']
