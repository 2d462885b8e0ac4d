"""Tests for vessel model chunks: the sender's chunking and the receiver's reassembly."""

import base64
import gzip
import hashlib
import json
import math
import tracemalloc

from hypothesis import given
from hypothesis import strategies as st
from pylon_protocol import packets, wire
from pylon_protocol.bundle import build_bundle
from pylon_protocol.envelope import Envelope
from pylon_protocol.errors import ProtocolError
from pylon_protocol.model_chunks import (
    chunk_model,
    clear_payload,
    effective_chunk_bytes,
    gunzip_bounded,
    is_loopback_source,
    ModelAssembler,
)
from pylon_protocol.urdf import build_proxy_urdf, ProxyPart
from pylon_testing.model_samples import (
    bundle,
    FAST,
    joint,
    json_values,
    link,
    OTHER_SESSION,
    P,
    PART_FRAMES,
    raw_bundle,
    reason_of,
    SERVO_CHILDREN,
    SESSION,
    URDF,
    urdf_text,
    VID,
)
import pytest

LOOPBACK = ('127.0.0.1', 49010)
CHUNK_ORDER = ['sessionId', 'modelId', 'chunkIndex', 'chunkCount', 'encoding', 'sha256',
               'expiresAfterSec', 'sentAtUt', 'data']


def chunks_for(compressed, *, session=SESSION, model_id=None, piece=64, expires=6.0):
    model_id = model_id or hashlib.sha256(URDF.encode()).hexdigest()
    parts = [compressed[i:i + piece] for i in range(0, len(compressed), piece)] or [b'']
    digest = hashlib.sha256(compressed).hexdigest()
    return [
        {'sessionId': session, 'modelId': model_id, 'chunkIndex': i, 'chunkCount': len(parts),
         'encoding': 'gzip+base64', 'sha256': digest, 'expiresAfterSec': expires,
         'sentAtUt': 1.0, 'data': base64.b64encode(p).decode()}
        for i, p in enumerate(parts)
    ]


def feed(assembler, chunks, now=0.0, source=LOOPBACK):
    result = None
    for chunk in chunks:
        got = assembler.add(chunk, now, source)
        if got is not None:
            result = got
    return result


# Sender


def test_chunk_model_fields_and_payload():
    b = bundle()
    chunks = chunk_model(b, session_id=SESSION, sent_at_ut=12.5, chunk_bytes=128)
    assert len(chunks) > 1
    compressed = b''.join(base64.b64decode(c['data'], validate=True) for c in chunks)
    for index, chunk in enumerate(chunks):
        assert list(chunk) == CHUNK_ORDER
        assert chunk['chunkIndex'] == index and chunk['chunkCount'] == len(chunks)
        assert chunk['encoding'] == 'gzip+base64' and chunk['sentAtUt'] == 12.5
        assert chunk['modelId'] == hashlib.sha256(URDF.encode('utf-8')).hexdigest()
        assert chunk['sha256'] == hashlib.sha256(compressed).hexdigest()
        assert chunk['expiresAfterSec'] == 6.0
    assert json.loads(gzip.decompress(compressed)) == b
    assert b['modelId'] == chunks[0]['modelId']


@pytest.mark.parametrize(('refresh', 'expires'), [(2.0, 6.0), (0.5, 3.0), (0.1, 3.0),
                                                  (1.5, 4.5), (100.0, 90.0), (math.nan, 6.0)])
def test_expires_after(refresh, expires):
    chunks = chunk_model(bundle(), session_id=SESSION, sent_at_ut=0.0, refresh_seconds=refresh)
    assert chunks[0]['expiresAfterSec'] == expires


@pytest.mark.parametrize(
    ('chunk_bytes', 'datagram', 'expected'),
    [(12000, 60000, 12000), (1, 60000, 128), (10**6, 66000, 48000), (10**6, 65000, 47982),
     (48000, 60000, 44232), (12000, 5000, 2982), (12000, 1100, 57)],
)
def test_effective_chunk_bytes(chunk_bytes, datagram, expected):
    assert effective_chunk_bytes(chunk_bytes, datagram) == expected


def test_effective_chunk_bytes_no_room():
    assert reason_of(effective_chunk_bytes, 12000, 1024) == 'bad_limit'


def test_chunk_size_applied():
    parts = [ProxyPart(None, (1, 1, 1), 1.0)] + [
        ProxyPart(i, (1, 1, 1), 1.0, (i * 0.37, 0, 0)) for i in range(150)]
    urdf = build_proxy_urdf(VID, parts)
    frames = {1000 + i: f'{P}_link_{i:04d}' for i in range(151)}
    b = build_bundle(session_id=SESSION, vessel_id=VID, urdf=urdf, base_to_root_position=[0] * 3,
                     base_to_root_rotation=[0, 0, 0, 1], part_frames=frames)
    chunks = chunk_model(b, session_id=SESSION, sent_at_ut=0.0, chunk_bytes=200)
    sizes = [len(base64.b64decode(c['data'])) for c in chunks]
    assert all(s == 200 for s in sizes[:-1]) and len(chunks) > 3
    assert reason_of(chunk_model, b, session_id=SESSION, sent_at_ut=0.0, chunk_bytes=200,
                     max_chunks=len(chunks) - 1) == 'too_many_chunks'
    assert reason_of(chunk_model, b, session_id=SESSION, sent_at_ut=0.0, chunk_bytes=128,
                     max_chunks=0) == 'too_many_chunks'  # clamped to 1


def test_chunk_model_validates_first():
    assert reason_of(chunk_model, bundle(), session_id=OTHER_SESSION,
                     sent_at_ut=0.0) == 'bundle_mismatch'
    assert reason_of(chunk_model, raw_bundle(geometryPolicy='mesh'), session_id=SESSION,
                     sent_at_ut=0.0) == 'bad_bundle'
    assert reason_of(chunk_model, bundle(), session_id=SESSION,
                     sent_at_ut=math.inf) == 'bad_field'


def test_clear_payload():
    assert clear_payload(SESSION) == {'sessionId': SESSION}
    assert reason_of(clear_payload, 'x') == 'bad_field'


# Receiver: assembly


def test_reassembles_model():
    chunks = chunk_model(bundle(), session_id=SESSION, sent_at_ut=0.0, chunk_bytes=128)
    got = feed(ModelAssembler(), reversed(chunks), now=5.0)
    assert got.urdf == URDF and got.vessel_id == VID and got.session_id == SESSION
    assert got.model_id == chunks[0]['modelId'] and got.sha256 == chunks[0]['sha256']
    assert got.root_frame == f'{P}_link_0000' == got.structure.root_link
    assert got.base_to_root_position == (0.5, 0.0, -1.0)
    assert got.base_to_root_rotation == (0.0, 0.0, 0.0, 1.0)
    assert dict(got.part_frames) == PART_FRAMES and got.frame_for_part(101) == f'{P}_link_0001'
    assert got.frame_for_part(5) is None
    assert got.expires_after_sec == 6.0 and got.received_at == 5.0
    assert [j.child for j in got.structure.joints] == [f'{P}_link_0001', f'{P}_link_0002']


@FAST
@given(st.randoms(use_true_random=False), st.integers(0, 6), st.integers(128, 400))
def test_any_order_with_duplicates(rng, dups, piece):
    b = bundle()
    chunks = chunk_model(b, session_id=SESSION, sent_at_ut=0.0, chunk_bytes=piece)
    stream = chunks + [rng.choice(chunks) for _ in range(dups)]
    rng.shuffle(stream)
    assembler = ModelAssembler()
    models = [m for m in (assembler.add(dict(c), 0.0, LOOPBACK) for c in stream) if m]
    assert len(models) == 1 and models[0].urdf == URDF
    assert assembler.pending_count <= 1  # duplicates after completion start a new one


def test_decoded_packets_are_assembled_without_a_second_check():
    chunks = chunk_model(bundle(), session_id=SESSION, sent_at_ut=0.0, chunk_bytes=128)
    envelope = Envelope('c0ffee00' * 4, 1, 'e90c4e90' * 4, VID)
    decoded = [packets.decode_state(wire.encode_state(
        packets.build_state('pylon_vessel_urdf_chunk', envelope, **chunk))) for chunk in chunks]
    assembler = ModelAssembler()
    got = [assembler.add_decoded(packet, 1.0, LOOPBACK) for packet in decoded][-1]
    assert got.urdf == URDF and got.model_id == chunks[0]['modelId']
    assert assembler.completed == 1 and not assembler.drops
    assert reason_of(ModelAssembler().add_decoded, decoded[0], 1.0, '10.0.0.1') == \
        'remote_source'


@pytest.mark.parametrize('source', ['127.0.0.1', '127.9.8.7', ('127.0.0.1', 1),
                                    '::ffff:127.0.0.1', ('::ffff:127.0.0.2', 1, 0, 0), '::1'])
def test_loopback_sources(source):
    assert is_loopback_source(source)
    chunks = chunk_model(bundle(), session_id=SESSION, sent_at_ut=0.0)
    assert feed(ModelAssembler(), chunks, source=source) is not None


@pytest.mark.parametrize('source', ['10.0.0.1', ('192.168.1.2', 5), '::ffff:10.0.0.1', '::2',
                                    'localhost', '', None, 5, (), ('x' * 200, 1)])
def test_remote_sources_rejected(source):
    assert not is_loopback_source(source)
    chunks = chunk_model(bundle(), session_id=SESSION, sent_at_ut=0.0)
    assembler = ModelAssembler()
    assert reason_of(assembler.add, chunks[0], 0.0, source) == 'remote_source'
    assert ModelAssembler(allow_remote=True).add(chunks[0], 0.0, source) is not None


def _chunk(**change):
    chunk = dict(chunk_model(bundle(), session_id=SESSION, sent_at_ut=0.0)[0])
    chunk.update(change)
    return chunk


@pytest.mark.parametrize(
    'change',
    [
        {'chunkCount': 0}, {'chunkCount': 513}, {'chunkCount': True}, {'chunkCount': 1.0},
        {'chunkIndex': 1}, {'chunkIndex': -1}, {'chunkIndex': None},
        {'encoding': 'gzip'}, {'encoding': 'base64'},
        {'sha256': 'A' * 64}, {'sha256': 'a' * 63}, {'modelId': '0' * 32},
        {'sessionId': 'z' * 32}, {'sessionId': None},
        {'expiresAfterSec': 0.5}, {'expiresAfterSec': 120.5}, {'expiresAfterSec': math.nan},
        {'expiresAfterSec': True}, {'expiresAfterSec': '6'},
        {'data': 'abc'}, {'data': 'ab c'}, {'data': 'QR=='}, {'data': ''}, {'data': 7},
        {'data': '-_-_'},
    ],
)
def test_chunk_limits(change):
    assembler = ModelAssembler()
    assert reason_of(assembler.add, _chunk(**change), 0.0, LOOPBACK) == 'bad_chunk'
    assert assembler.drops['bad_chunk'] == 1


@pytest.mark.parametrize('change', [{'chunkCount': 512, 'chunkIndex': 511},
                                    {'expiresAfterSec': 1}, {'expiresAfterSec': 120.0}])
def test_chunk_limits_inclusive(change):
    assembler = ModelAssembler()
    assembler.add(_chunk(**change), 0.0, LOOPBACK)  # does not raise
    assert not assembler.drops


def test_data_length_cap_before_decoding():
    assert reason_of(ModelAssembler().add, _chunk(data='A' * (8 * 1024 * 1024 + 4)), 0.0,
                     LOOPBACK) == 'bad_chunk'


def test_compressed_size_cap():
    blob = base64.b64encode(bytes(3 * 1024 * 1024)).decode()
    assembler = ModelAssembler()
    assert assembler.add(_chunk(chunkCount=2, chunkIndex=0, data=blob), 0.0, LOOPBACK) is None
    assert reason_of(assembler.add, _chunk(chunkCount=2, chunkIndex=1, data=blob), 0.0,
                     LOOPBACK) == 'compressed_too_large'
    assert assembler.pending_count == 0


def _gz(data: bytes) -> bytes:
    """Return ``data`` gzipped with a fixed header time, so test ids are the same in every run."""
    return gzip.compress(data, mtime=0)


def test_decompressed_size_cap_is_bounded():
    bomb = gzip.compress(bytes(9 * 1024 * 1024), compresslevel=9)
    chunks = chunks_for(bomb, piece=len(bomb))
    assert reason_of(feed, ModelAssembler(), chunks) == 'decompressed_too_large'
    big_bomb = gzip.compress(bytes(64 * 1024 * 1024), compresslevel=1)
    tracemalloc.start()
    try:
        assert reason_of(gunzip_bounded, big_bomb, 4096) == 'decompressed_too_large'
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(big_bomb) + 256 * 1024


@pytest.mark.parametrize(
    ('payload', 'reason'),
    [
        (b'not gzip at all', 'bad_gzip'),
        (_gz(b'{}')[:-3], 'bad_gzip'),  # truncated
        (_gz(b'{}') + b'junk', 'bad_gzip'),
        (_gz(b'{}') + _gz(b'{}'), 'bad_gzip'),  # two members
        (_gz(b'\xff\xfe{}'), 'bad_bundle'),  # not UTF-8
        (_gz(b'{"a":'), 'bad_bundle'),
        (_gz(b'[1, 2]'), 'bad_bundle'),
        (_gz(b'[' * 100000 + b']' * 100000), 'bad_bundle'),
        (_gz(json.dumps(raw_bundle(sessionId=OTHER_SESSION)).encode()),
         'bundle_mismatch'),
        (_gz(json.dumps(raw_bundle(modelId='e' * 64)).encode()), 'bundle_mismatch'),
    ],
    ids=['not_gzip', 'truncated', 'trailing_junk', 'two_members', 'not_utf8', 'cut_json',
         'not_an_object', 'deep_nesting', 'other_session', 'other_model'],
)
def test_completed_payload_errors(payload, reason):
    assembler = ModelAssembler()
    assert reason_of(feed, assembler, chunks_for(payload)) == reason
    assert assembler.drops[reason] == 1 and assembler.model is None


def test_sha256_mismatch():
    chunks = chunk_model(bundle(), session_id=SESSION, sent_at_ut=0.0, chunk_bytes=128)
    chunks[-1] = dict(chunks[-1], data=base64.b64encode(b'tampered').decode())
    assert reason_of(feed, ModelAssembler(), chunks) == 'sha256_mismatch'


@pytest.mark.parametrize('change', [{'chunkCount': 99}, {'sha256': 'e' * 64}])
def test_metadata_mismatch_drops_assembly(change):
    chunks = chunk_model(bundle(), session_id=SESSION, sent_at_ut=0.0, chunk_bytes=128)
    assembler = ModelAssembler()
    assembler.add(chunks[0], 0.0, LOOPBACK)
    assert reason_of(assembler.add, dict(chunks[1], **change), 0.0,
                     LOOPBACK) == 'metadata_mismatch'
    assert assembler.pending_count == 0


def test_expires_change_is_not_metadata():
    chunks = chunk_model(bundle(), session_id=SESSION, sent_at_ut=0.0, chunk_bytes=128)
    chunks[-1] = dict(chunks[-1], expiresAfterSec=9.0)
    assert feed(ModelAssembler(), chunks).expires_after_sec == 9.0


def test_duplicates():
    chunks = chunk_model(bundle(), session_id=SESSION, sent_at_ut=0.0, chunk_bytes=128)
    assembler = ModelAssembler()
    assembler.add(chunks[0], 0.0, LOOPBACK)
    assert assembler.add(dict(chunks[0]), 0.0, LOOPBACK) is None
    assert assembler.duplicates == 1
    conflicting = dict(chunks[0], data=base64.b64encode(b'x' * 10).decode())
    assert reason_of(assembler.add, conflicting, 0.0, LOOPBACK) == 'conflicting_chunk'
    assert assembler.pending_count == 0


def test_untouched_assembly_purged_after_10_s():
    chunks = chunk_model(bundle(), session_id=SESSION, sent_at_ut=0.0, chunk_bytes=128)
    assembler = ModelAssembler()
    assembler.add(chunks[0], 0.0, LOOPBACK)
    for i, chunk in enumerate(chunks[1:-1], start=1):
        assembler.add(chunk, 10.0 * i, LOOPBACK)  # each touch keeps it alive
    assert assembler.expire(10.0 * (len(chunks) - 2) + 10.0) == 0
    assert assembler.expire(10.0 * (len(chunks) - 2) + 10.01) == 1
    assert assembler.drops['purged'] == 1
    assert assembler.add(chunks[-1], 1000.0, LOOPBACK) is None


def test_assemblies_are_bounded():
    assembler = ModelAssembler(max_assemblies=2)
    for n in range(3):
        assembler.add(_chunk(chunkCount=2, sessionId=f'{n:032x}'), 0.0, LOOPBACK)
    assert assembler.pending_count == 2 and assembler.drops['evicted'] == 1


def test_clear_ignores_session_for_120_s_and_removes_model():
    assembler = ModelAssembler()
    chunks = chunk_model(bundle(), session_id=SESSION, sent_at_ut=0.0)
    assert feed(assembler, chunks, now=1.0) is not None
    assert assembler.clear(SESSION, 2.0) is True
    assert assembler.model is None and assembler.is_cleared(SESSION, 2.0)
    assert reason_of(assembler.add, chunks[0], 122.0, LOOPBACK) == 'cleared_session'
    assert feed(assembler, chunks, now=122.01) is not None  # remembered for 120 s only
    assert assembler.clear(OTHER_SESSION, 123.0) is False
    assert assembler.model is not None


def test_clear_drops_assemblies_of_that_session():
    assembler = ModelAssembler()
    chunks = chunk_model(bundle(), session_id=SESSION, sent_at_ut=0.0, chunk_bytes=128)
    assembler.add(chunks[0], 0.0, LOOPBACK)
    assembler.clear(SESSION, 0.0)
    assert assembler.pending_count == 0


def test_cleared_sessions_are_bounded():
    assembler = ModelAssembler(max_cleared=1024)
    for n in range(1030):
        assembler.clear(f'{n:032x}', 0.0)
    assert not assembler.is_cleared(f'{0:032x}', 0.0)
    assert assembler.is_cleared(f'{1029:032x}', 0.0)
    assert len(assembler._cleared) == 1024


def test_clear_rejects_bad_id():
    assert reason_of(ModelAssembler().clear, 'XYZ', 0.0) == 'bad_field'


def test_resend_only_refreshes_expiry():
    assembler = ModelAssembler()
    chunks = chunk_model(bundle(), session_id=SESSION, sent_at_ut=0.0)
    first = feed(assembler, chunks, now=0.0)
    assert assembler.is_current(5.99) and not assembler.is_current(6.0)
    assert feed(assembler, chunks, now=2.0) is None and assembler.refreshes == 1
    assert assembler.current(7.9) is not None and assembler.current(8.0) is None
    assert assembler.model.urdf == first.urdf
    # Same vessel and model under a new producer session: still only a refresh.
    moved = chunk_model(bundle(sessionId=OTHER_SESSION), session_id=OTHER_SESSION,
                        sent_at_ut=0.0)
    assert feed(assembler, moved, now=3.0) is None and assembler.refreshes == 2
    assert assembler.model.session_id == OTHER_SESSION
    # Once expired, the same model is announced again.
    assert feed(assembler, moved, now=100.0) is not None


def test_new_model_replaces_current():
    assembler = ModelAssembler()
    feed(assembler, chunk_model(bundle(), session_id=SESSION, sent_at_ut=0.0), now=0.0)
    other = urdf_text(links=[link(0), link(1)], joints=[joint(1, 0)])
    b = build_bundle(session_id=SESSION, vessel_id=VID, urdf=other,
                     base_to_root_position=[0, 0, 0], base_to_root_rotation=[0, 0, 0, 1],
                     part_frames={100: f'{P}_link_0000', 101: f'{P}_link_0001'})
    got = feed(assembler, chunk_model(b, session_id=SESSION, sent_at_ut=0.0), now=1.0)
    assert got is not None and got.urdf == other and assembler.completed == 2


def test_reset_clears_transfers_and_model():
    assembler = ModelAssembler()
    chunks = chunk_model(bundle(), session_id=SESSION, sent_at_ut=0.0, chunk_bytes=128)
    feed(assembler, chunks)
    assembler.add(chunks[0], 0.0, LOOPBACK)
    assembler.reset()
    assert assembler.model is None and assembler.pending_count == 0


def test_assembler_servo_flag():
    text = urdf_text(joints=[joint(1, 0, jtype='revolute', extra=SERVO_CHILDREN), joint(2, 1)])
    b = build_bundle(session_id=SESSION, vessel_id=VID, urdf=text,
                     base_to_root_position=[0, 0, 0], base_to_root_rotation=[0, 0, 0, 1],
                     part_frames=PART_FRAMES, allow_servo_joints=True)
    chunks = chunk_model(b, session_id=SESSION, sent_at_ut=0.0, allow_servo_joints=True)
    assert reason_of(feed, ModelAssembler(), chunks) == 'bad_urdf'
    got = feed(ModelAssembler(allow_servo_joints=True), chunks)
    assert got.structure.joints[0].type == 'revolute'


@FAST
@given(st.binary(max_size=400))
def test_random_bytes_only_raise_protocol_error(blob):
    assembler = ModelAssembler()
    for chunk in (chunks_for(blob)[0], _chunk(data=base64.b64encode(blob).decode()),
                  chunks_for(gzip.compress(blob))[0]):
        try:
            assembler.add(chunk, 0.0, LOOPBACK)
        except ProtocolError:
            pass


@FAST
@given(st.dictionaries(st.sampled_from(CHUNK_ORDER), json_values, max_size=6))
def test_random_chunk_fields_only_raise_protocol_error(change):
    assembler = ModelAssembler()
    for chunk in (_chunk(**change), change, None):
        try:
            assembler.add(chunk, 0.0, LOOPBACK)
        except ProtocolError:
            pass
