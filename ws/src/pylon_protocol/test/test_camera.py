"""Tests for camera frame chunking and reassembly."""

import base64
import hashlib
import math
import random

from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
from pylon_protocol import packets, wire
from pylon_protocol.camera import chunk_frame, FrameAssembler
from pylon_protocol.envelope import Envelope
from pylon_protocol.errors import ProtocolError
from pylon_testing.model_samples import json_values
from pylon_testing.properties import examples
import pytest

FAST = settings(max_examples=examples(60), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

SESSION = '0123456789abcdef' * 2
WIRE_ORDER = [
    'source', 'sessionId', 'sequence', 'chunkIndex', 'chunkCount', 'frameBytes', 'sha256',
    'sensorId', 'vessel', 'partFlightId', 'universalTime', 'width', 'height', 'step',
    'encoding', 'verticalFovDeg', 'coordinateFrame', 'framePosition', 'frameRotation', 'data',
]


def image(width, height, seed=0):
    rng = random.Random(seed)
    return bytes(rng.getrandbits(8) for _ in range(width * height * 3))


def frame(width=64, height=32, seed=0, **overrides):
    args = {
        'width': width, 'height': height, 'session_id': SESSION, 'sequence': 1,
        'sensor_id': 'camera_1', 'source': 'rgb_camera', 'part_flight_id': 42,
        'universal_time': 10.0, 'vertical_fov_deg': 60.0, 'frame_position': [0.1, 0.0, 0.2],
        'frame_rotation': [0.0, 0.0, 0.0, 1.0], 'vessel': 'Rover', 'chunk_bytes': 512,
    }
    args.update(overrides)
    raw = overrides.pop('raw', None)
    args.pop('raw', None)
    if raw is None:
        raw = image(width, height, seed)
    return raw, chunk_frame(raw, **args)


def rechunk(chunks, piece):
    """Split the same frame into pieces smaller than the sender would use."""
    raw = b''.join(base64.b64decode(c['data']) for c in chunks)
    parts = [raw[i:i + piece] for i in range(0, len(raw), piece)]
    out = []
    for index, part in enumerate(parts):
        chunk = dict(chunks[0])
        chunk.update(chunkIndex=index, chunkCount=len(parts),
                     data=base64.b64encode(part).decode())
        out.append(chunk)
    return out


def feed(assembler, chunks, now=0.0):
    result = None
    for chunk in chunks:
        got = assembler.add(chunk, now)
        if got is not None:
            assert result is None
            result = got
    return result


# Sender


def test_chunk_fields_in_wire_order():
    raw, chunks = frame()
    assert len(chunks) == 12
    for index, chunk in enumerate(chunks):
        assert list(chunk) == WIRE_ORDER
        assert chunk['chunkIndex'] == index and chunk['chunkCount'] == 12
        assert chunk['frameBytes'] == len(raw) == 64 * 32 * 3
        assert chunk['step'] == 64 * 3 and chunk['encoding'] == 'rgb8'
        assert chunk['coordinateFrame'] == 'ros_sensor'
        assert chunk['sha256'] == hashlib.sha256(raw).hexdigest()
    data = [base64.b64decode(c['data'], validate=True) for c in chunks]
    assert all(len(d) == 512 for d in data[:-1]) and b''.join(data) == raw


def test_docking_chunks_have_no_vessel():
    _, chunks = frame(source='docking_port', vessel='ignored')
    assert 'vessel' not in chunks[0]
    assert list(chunks[0]) == [k for k in WIRE_ORDER if k != 'vessel']


@pytest.mark.parametrize(('requested', 'used'), [(1, 512), (511, 512), (1000, 1000),
                                                  (36000, 36000), (10**6, 36000)])
def test_chunk_bytes_clamp(requested, used):
    raw, chunks = frame(width=128, height=128, chunk_bytes=requested)
    assert len(base64.b64decode(chunks[0]['data'])) == min(used, len(raw))


@pytest.mark.parametrize(('fov', 'sent'), [(60.0, 60.0), (5.0, 20.0), (150.0, 120.0),
                                           (math.nan, 60.0), (90, 90.0)])
def test_vertical_fov_clamp(fov, sent):
    _, chunks = frame(vertical_fov_deg=fov)
    assert chunks[0]['verticalFovDeg'] == sent


@pytest.mark.parametrize(('max_chunks', 'ok'), [(12, True), (11, False), (0, False),
                                                (5000, True)])
def test_max_chunks(max_chunks, ok):
    if ok:
        assert len(frame(max_chunks=max_chunks)[1]) == 12
    else:
        with pytest.raises(ProtocolError) as info:
            frame(max_chunks=max_chunks)
        assert info.value.reason == 'too_many_chunks'


def test_max_chunks_clamped_to_1024():
    # 4 MiB frame at 512-byte pieces would need 8192 chunks.
    with pytest.raises(ProtocolError):
        frame(width=1024, height=1024, raw=bytes(1024 * 1024 * 3), max_chunks=10**6)


@pytest.mark.parametrize(
    'override',
    [
        {'raw': b'\x00' * 10},  # size does not match width*height*3
        {'width': 0}, {'height': 4097}, {'width': True},
        {'session_id': 'ABC'}, {'sequence': 0}, {'sequence': 2**63},
        {'sensor_id': ' '}, {'source': 'thermal'}, {'part_flight_id': -1},
        {'universal_time': math.inf}, {'frame_position': [0, 0]},
        {'frame_rotation': [0, 0, 0, 0]}, {'chunk_bytes': 1.5},
        {'max_frame_bytes': 100},
    ],
)
def test_sender_rejects(override):
    with pytest.raises(ProtocolError):
        frame(**override)


# Receiver: assembly


def test_in_order_and_reverse_order():
    raw, chunks = frame()
    got = feed(FrameAssembler(), chunks)
    assert got.data == raw and got.sequence == 1 and got.part_flight_id == 42
    assert got.stream == ('rgb_camera', 'camera_1', 42)
    assert got.vessel == 'Rover' and got.width == 64 and got.step == 192
    assert feed(FrameAssembler(), list(reversed(chunks))).data == raw


@FAST
@given(st.integers(1, 20), st.randoms(use_true_random=False), st.integers(0, 8))
def test_any_order_with_duplicates_reassembles(pieces, rng, dups):
    raw, chunks = frame(width=8, height=8)
    chunks = rechunk(chunks, max(1, len(raw) // pieces))
    stream = chunks + [rng.choice(chunks) for _ in range(dups)]
    rng.shuffle(stream)
    assembler = FrameAssembler()
    got = None
    for chunk in stream:
        result = assembler.add(dict(chunk), 0.0)
        if result is not None:
            got = result
            break
    assert got is not None and got.data == raw
    assert assembler.pending_count == 0


def test_decoded_packets_are_assembled_without_a_second_check():
    raw, chunks = frame()
    envelope = Envelope('c0ffee00' * 4, 1, 'e90c4e90' * 4, '')
    decoded = [packets.decode_state(wire.encode_state(
        packets.build_state('pylon_camera_frame_chunk', envelope, **chunk))) for chunk in chunks]
    assembler = FrameAssembler()
    got = [assembler.add_decoded(packet, 0.0) for packet in decoded][-1]
    assert got == feed(FrameAssembler(), chunks) and got.data == raw
    assert assembler.completed == 1 and not assembler.drops


def test_identical_duplicate_is_ignored():
    raw, chunks = frame()
    assembler = FrameAssembler()
    assert assembler.add(chunks[0], 0.0) is None
    assert assembler.add(dict(chunks[0]), 0.0) is None
    assert assembler.duplicates == 1 and not assembler.drops
    assert feed(assembler, chunks[1:]).data == raw


def test_conflicting_duplicate_discards_frame():
    _, chunks = frame()
    assembler = FrameAssembler()
    assembler.add(chunks[0], 0.0)
    bad = dict(chunks[0], data=base64.b64encode(b'\x01' * 512).decode())
    with pytest.raises(ProtocolError) as info:
        assembler.add(bad, 0.0)
    assert info.value.reason == 'conflicting_chunk'
    assert assembler.pending_count == 0 and assembler.drops['conflicting_chunk'] == 1
    # The remaining chunks start a new assembly that lacks chunk 0: no frame.
    assert feed(assembler, chunks[1:]) is None


@pytest.mark.parametrize(
    ('field', 'value'),
    [
        ('universalTime', 10.5), ('frameRotation', [0.0, 0.0, 0.6, 0.8]),
        ('framePosition', [0.0, 0.0, 0.0]), ('verticalFovDeg', 61.0),
        ('vessel', 'Other'), ('sha256', 'f' * 64), ('coordinateFrame', 'other'),
        ('chunkCount', 13),
    ],
)
def test_metadata_change_discards_frame(field, value):
    _, chunks = frame()
    assembler = FrameAssembler()
    assembler.add(chunks[0], 0.0)
    with pytest.raises(ProtocolError) as info:
        assembler.add(dict(chunks[1], **{field: value}), 0.0)
    assert info.value.reason == 'metadata_mismatch'
    assert assembler.pending_count == 0


def test_geometry_change_discards_frame():
    _, chunks = frame(width=64, height=32)
    assembler = FrameAssembler()
    assembler.add(chunks[0], 0.0)
    changed = dict(chunks[1], width=32, height=64, step=96)
    with pytest.raises(ProtocolError) as info:
        assembler.add(changed, 0.0)
    assert info.value.reason == 'metadata_mismatch'


def test_key_fields_separate_frames():
    raw, chunks = frame()
    assembler = FrameAssembler()
    assembler.add(chunks[0], 0.0)
    for field, value in (('sequence', 2), ('sensorId', 'camera_2'), ('partFlightId', 7),
                         ('source', 'docking_port'), ('sessionId', 'f' * 32)):
        assembler.add(dict(chunks[0], **{field: value}), 0.0)
    assert assembler.pending_count == 6


def test_overflow_discards_frame():
    _, chunks = frame(width=16, height=16)  # 768 bytes in chunks of 512 + 256
    assembler = FrameAssembler()
    assembler.add(chunks[0], 0.0)
    big = dict(chunks[1], data=base64.b64encode(b'\x00' * 300).decode())
    with pytest.raises(ProtocolError) as info:
        assembler.add(big, 0.0)
    assert info.value.reason == 'frame_overflow' and assembler.pending_count == 0


def test_short_frame_is_dropped():
    _, chunks = frame(width=16, height=16)
    short = dict(chunks[1], data=base64.b64encode(b'\x00' * 100).decode())
    assembler = FrameAssembler()
    assembler.add(chunks[0], 0.0)
    with pytest.raises(ProtocolError) as info:
        assembler.add(short, 0.0)
    assert info.value.reason == 'frame_size_mismatch'


def test_sha256_mismatch_is_dropped():
    raw, chunks = frame(width=16, height=16)
    tampered = dict(chunks[1], data=base64.b64encode(b'\xff' * 256).decode())
    assembler = FrameAssembler()
    assembler.add(chunks[0], 0.0)
    with pytest.raises(ProtocolError) as info:
        assembler.add(tampered, 0.0)
    assert info.value.reason == 'sha256_mismatch'
    assert assembler.drops['sha256_mismatch'] == 1


def test_pending_limit_evicts_oldest():
    assembler = FrameAssembler(max_pending=16)
    firsts = []
    for seq in range(1, 18):
        _, chunks = frame(width=16, height=16, sequence=seq, universal_time=float(seq))
        firsts.append(chunks)
        assembler.add(chunks[0], 0.0)
    assert assembler.pending_count == 16 and assembler.drops['evicted'] == 1
    assert assembler.add(firsts[0][1], 0.0) is None  # frame 1 was evicted: starts again
    assert assembler.drops['evicted'] == 2  # ... evicting frame 2
    assert assembler.add(firsts[2][1], 0.0).sequence == 3


def test_pending_frame_expires_after_last_chunk():
    _, chunks = frame()
    assembler = FrameAssembler(timeout=2.0)
    assembler.add(chunks[0], 0.0)
    assembler.add(chunks[1], 1.5)  # touch extends the deadline
    assembler.add(chunks[2], 3.5)  # 2.0 s after the last chunk: still alive
    assert assembler.pending_count == 1
    assert assembler.expire(5.6) == 1 and assembler.drops['expired'] == 1
    assert feed(assembler, chunks[3:], 5.6) is None


def test_universal_time_must_increase_per_stream():
    assembler = FrameAssembler()
    _, first = frame(sequence=1, universal_time=10.0)
    assert feed(assembler, first) is not None
    assert assembler.last_universal_time('rgb_camera', 'camera_1', 42) == 10.0
    for seq, ut in ((2, 10.0), (3, 9.0)):
        _, chunks = frame(sequence=seq, universal_time=ut)
        with pytest.raises(ProtocolError) as info:
            assembler.add(chunks[0], 0.0)
        assert info.value.reason == 'stale_frame'
    # Another part / sensor / source is an independent stream.
    for override in ({'part_flight_id': 43}, {'sensor_id': 'camera_2'},
                     {'source': 'docking_port'}):
        _, chunks = frame(sequence=4, universal_time=5.0, **override)
        assert feed(assembler, chunks) is not None
    _, newer = frame(sequence=5, universal_time=10.5)
    assert feed(assembler, newer).universal_time == 10.5


def test_stale_frame_completing_late_is_dropped():
    assembler = FrameAssembler()
    _, old = frame(sequence=1, universal_time=1.0)
    _, new = frame(sequence=2, universal_time=2.0)
    assembler.add(old[0], 0.0)
    assert feed(assembler, new) is not None
    with pytest.raises(ProtocolError) as info:
        feed(assembler, old[1:])
    assert info.value.reason == 'stale_frame'


def test_reset_clears_pending_and_times():
    assembler = FrameAssembler()
    _, chunks = frame(universal_time=10.0)
    assert feed(assembler, chunks) is not None
    _, pending = frame(sequence=2, universal_time=11.0)
    assembler.add(pending[0], 0.0)
    assembler.reset()
    assert assembler.pending_count == 0
    assert feed(assembler, chunks) is not None  # same UT accepted after a session change


def test_stream_memory_is_bounded():
    assembler = FrameAssembler(max_streams=2)
    for part in range(5):
        assert feed(assembler, frame(width=4, height=4, part_flight_id=part)[1]) is not None
    assert assembler.last_universal_time('rgb_camera', 'camera_1', 0) is None
    assert assembler.last_universal_time('rgb_camera', 'camera_1', 4) == 10.0


def test_defaults_for_source_and_part():
    raw, chunks = frame(width=4, height=4)
    chunk = dict(chunks[0])
    del chunk['partFlightId']
    chunk['source'] = ''
    got = FrameAssembler().add(chunk, 0.0)
    assert got.source == 'rgb_camera' and got.part_flight_id == 0 and got.data == raw
    del chunk['source']
    assert FrameAssembler().add(chunk, 0.0).source == 'rgb_camera'


def test_rotation_is_normalised_and_optical():
    _, chunks = frame(width=4, height=4, frame_rotation=[0.0, 0.0, 0.0, 3.0])
    got = FrameAssembler().add(chunks[0], 0.0)
    assert got.frame_rotation == (0.0, 0.0, 0.0, 1.0)
    assert got.optical_rotation == pytest.approx((-0.5, 0.5, -0.5, 0.5))


# Receiver: limits


def _one_chunk(**change):
    _, chunks = frame(width=4, height=4)
    chunk = dict(chunks[0])
    chunk.update(change)
    return chunk


def _b64(n):
    return base64.b64encode(b'\x00' * n).decode()


@pytest.mark.parametrize(
    'change',
    [
        {'chunkCount': 0}, {'chunkCount': 1025}, {'chunkCount': True},
        {'chunkIndex': -1}, {'chunkIndex': 1024, 'chunkCount': 1024}, {'chunkIndex': 1},
        {'chunkIndex': 1.0},
        {'data': ''}, {'data': _b64(65537)}, {'data': 'AAA'}, {'data': 'AA=A'},
        {'data': 'AAAA\n'}, {'data': 'A-_A'}, {'data': 'QR=='}, {'data': None},
        {'data': 'ÄÄÄÄ'},
        {'frameBytes': 0}, {'frameBytes': 4 * 1024 * 1024 + 1},
        {'width': 0, 'step': 0, 'frameBytes': 1}, {'width': 4097}, {'height': 4097},
        {'step': 0}, {'step': 65537}, {'step': 13},
        {'width': 5}, {'frameBytes': 47},
        {'sequence': 0}, {'sequence': 2**63}, {'sequence': '1'},
        {'sessionId': 'A' * 32}, {'sessionId': 'a' * 31}, {'sessionId': None},
        {'sha256': 'a' * 63}, {'sha256': 'G' * 64},
        {'encoding': 'bgr8'}, {'encoding': None},
        {'verticalFovDeg': 0.0}, {'verticalFovDeg': 180.0}, {'verticalFovDeg': math.nan},
        {'verticalFovDeg': True},
        {'framePosition': [0, 0]}, {'framePosition': [0, 0, math.inf]},
        {'framePosition': 'abc'}, {'framePosition': [0, 0, True]},
        {'frameRotation': [0, 0, 0, 0]}, {'frameRotation': [0, 0, 1]},
        {'frameRotation': [0, 0, 0, 1e-10]},
        {'source': 'thermal'}, {'source': 3},
        {'sensorId': ''}, {'sensorId': '   '}, {'sensorId': None},
        {'partFlightId': -1}, {'partFlightId': 2**64}, {'partFlightId': 1.0},
        {'universalTime': math.nan}, {'universalTime': None}, {'universalTime': False},
        {'vessel': 5},
    ],
)
def test_limits(change):
    assembler = FrameAssembler()
    with pytest.raises(ProtocolError) as info:
        assembler.add(_one_chunk(**change), 0.0)
    assert info.value.reason == 'bad_chunk'
    assert assembler.drops['bad_chunk'] == 1 and assembler.pending_count == 0


@pytest.mark.parametrize(
    'change',
    [{'sequence': 2**63 - 1}, {'partFlightId': 2**64 - 1}, {'verticalFovDeg': 179.9},
     {'frameRotation': [0, 0, 0, 1e-9]}, {'vessel': ''}],
)
def test_limits_inclusive(change):
    assert FrameAssembler().add(_one_chunk(**change), 0.0) is not None


def test_missing_required_fields():
    for field in ('chunkCount', 'chunkIndex', 'frameBytes', 'width', 'height', 'step',
                  'sequence', 'sessionId', 'sha256', 'encoding', 'verticalFovDeg',
                  'framePosition', 'frameRotation', 'sensorId', 'universalTime', 'data'):
        chunk = _one_chunk()
        del chunk[field]
        with pytest.raises(ProtocolError):
            FrameAssembler().add(chunk, 0.0)


def test_max_size_chunk_and_frame():
    width, height = 2048, 682  # 4 190 208 bytes, under 4 MiB
    raw = bytes(width * height * 3)
    chunks = chunk_frame(
        raw, width=width, height=height, session_id=SESSION, sequence=1, sensor_id='c',
        source='rgb_camera', part_flight_id=0, universal_time=0.0, vertical_fov_deg=60,
        frame_position=[0, 0, 0], frame_rotation=[0, 0, 0, 1], chunk_bytes=36000,
        max_chunks=1024)
    assert len(chunks) == 117
    assert feed(FrameAssembler(), chunks).data == raw
    big = rechunk(chunks, 65536)
    assert feed(FrameAssembler(), big).data == raw


# Robustness

@FAST
@given(st.binary(max_size=300), st.text(max_size=40))
def test_random_chunk_data_only_raises_protocol_error(blob, text):
    assembler = FrameAssembler()
    for data in (base64.b64encode(blob).decode(), text):
        try:
            assembler.add(_one_chunk(data=data), 0.0)
        except ProtocolError:
            pass


@FAST
@given(st.dictionaries(st.sampled_from(WIRE_ORDER), json_values, max_size=8))
def test_random_field_values_only_raise_protocol_error(change):
    assembler = FrameAssembler()
    for chunk in (_one_chunk(**change), change):
        try:
            assembler.add(chunk, 0.0)
        except ProtocolError:
            pass
    try:
        assembler.add(None, 0.0)
    except ProtocolError:
        pass
