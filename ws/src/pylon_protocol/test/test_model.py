"""Tests for the vessel proxy model: URDF allowlist, bundle, chunking, reassembly."""

import base64
import gzip
import hashlib
import json
import math
import time
import tracemalloc

from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
from pylon_protocol import model as mdl
from pylon_protocol.errors import ProtocolError
from pylon_protocol.model import (
    build_bundle,
    build_proxy_urdf,
    chunk_model,
    clear_payload,
    gunzip_bounded,
    is_loopback_source,
    ModelAssembler,
    ProxyPart,
    URDF_ALLOWLIST,
    validate_bundle,
    validate_urdf,
)
import pytest

FAST = settings(derandomize=True, max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

VID = '0123456789abcdef' * 2
V8 = VID[:8]
SESSION = 'ab' * 16
OTHER_SESSION = 'cd' * 16
LOOPBACK = ('127.0.0.1', 49010)
P = f'pylon_{V8}'
CHUNK_ORDER = ['sessionId', 'modelId', 'chunkIndex', 'chunkCount', 'encoding', 'sha256',
               'expiresAfterSec', 'sentAtUt', 'data']

INERTIAL = ('<inertial><origin xyz="0 0 0" rpy="0 0 0"/><mass value="1"/>'
            '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>')
VISUAL = ('<visual><origin xyz="0 0 0" rpy="0 0 0"/><geometry><box size="1 2 3"/></geometry>'
          '</visual>')
COLLISION = ('<collision><origin xyz="0 0 0"/><geometry><sphere radius="0.5"/></geometry>'
             '</collision>')


def link(index, body=None):
    body = INERTIAL + VISUAL + COLLISION if body is None else body
    return f'<link name="{P}_link_{index:04d}">{body}</link>'


def joint(index, parent, child=None, jtype='fixed', extra=''):
    child = index if child is None else child
    return (f'<joint name="{P}_joint_{index:04d}" type="{jtype}">'
            f'<parent link="{P}_link_{parent:04d}"/><child link="{P}_link_{child:04d}"/>'
            f'<origin xyz="1 2 3" rpy="0 0 1.5707963267948966"/>{extra}</joint>')


def urdf_text(links=None, joints=None, robot=None):
    links = [link(0), link(1), link(2)] if links is None else links
    joints = [joint(1, 0), joint(2, 1)] if joints is None else joints
    robot = f'{P}_active_vessel' if robot is None else robot
    return ('<?xml version="1.0"?>\n<!-- PyLoN primitive proxy -->\n'
            f'<robot name="{robot}">\n' + '\n'.join(links + joints) + '\n</robot>\n')


URDF = urdf_text()
PART_FRAMES = {100: f'{P}_link_0000', 101: f'{P}_link_0001', 102: f'{P}_link_0002'}


def bundle(urdf=URDF, **change):
    value = build_bundle(
        session_id=SESSION, vessel_id=VID, urdf=urdf, base_to_root_position=[0.5, 0, -1],
        base_to_root_rotation=[0, 0, 0, 2], part_frames=PART_FRAMES,
    )
    value.update(change)
    return value


def raw_bundle(**change):
    """Return a bundle dict built by hand (no validation) with ``change`` applied."""
    value = {
        'type': 'pylon_active_vessel_proxy', 'version': 1, 'sessionId': SESSION,
        'vesselId': VID, 'modelId': hashlib.sha256(URDF.encode()).hexdigest(),
        'geometryPolicy': 'primitive_proxy_only', 'persistencePolicy': 'memory_only',
        'rootFrame': f'{P}_link_0000', 'baseToRootPosition': [0, 0, 0],
        'baseToRootRotation': [0, 0, 0, 1], 'urdf': URDF,
        'partFrames': [{'partFlightId': k, 'frame': v} for k, v in PART_FRAMES.items()],
    }
    value.update(change)
    return value


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


def reason_of(call, *args, **kwargs):
    with pytest.raises(ProtocolError) as info:
        call(*args, **kwargs)
    return info.value.reason


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
    assert mdl.effective_chunk_bytes(chunk_bytes, datagram) == expected


def test_effective_chunk_bytes_no_room():
    assert reason_of(mdl.effective_chunk_bytes, 12000, 1024) == 'bad_limit'


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


def test_build_bundle_wire_order_and_root_default():
    b = bundle()
    assert list(b) == ['type', 'version', 'sessionId', 'vesselId', 'modelId',
                       'geometryPolicy', 'persistencePolicy', 'rootFrame',
                       'baseToRootPosition', 'baseToRootRotation', 'urdf', 'partFrames']
    assert b['rootFrame'] == f'{P}_link_0000'


def test_clear_payload():
    assert clear_payload(SESSION) == {'sessionId': SESSION}
    assert reason_of(clear_payload, 'x') == 'bad_field'


def test_build_proxy_urdf_is_valid():
    urdf = build_proxy_urdf(VID, [ProxyPart(None, (1, 2, 3), 10.0),
                                  ProxyPart(0, (1, 1, 1), 1.0, (0, 0, 2), (0.1, 0.2, 0.3))])
    assert urdf.startswith('<?xml version="1.0"?>\n<!--')
    structure = validate_urdf(urdf, vessel_id=VID)
    assert structure.joints[0].xyz == (0.0, 0.0, 2.0)
    assert structure.joints[0].rpy == (0.1, 0.2, 0.3)
    with pytest.raises(ProtocolError):
        build_proxy_urdf(VID, [ProxyPart(0, (1, 1, 1), 1.0)])
    with pytest.raises(ProtocolError):
        build_proxy_urdf(VID, [ProxyPart(None, (1, 1, 1), 0.0)])  # mass must be > 0


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
        (gzip.compress(b'{}')[:-3], 'bad_gzip'),  # truncated
        (gzip.compress(b'{}') + b'junk', 'bad_gzip'),
        (gzip.compress(b'{}') + gzip.compress(b'{}'), 'bad_gzip'),  # two members
        (gzip.compress(b'\xff\xfe{}'), 'bad_bundle'),  # not UTF-8
        (gzip.compress(b'{"a":'), 'bad_bundle'),
        (gzip.compress(b'[1, 2]'), 'bad_bundle'),
        (gzip.compress(b'[' * 100000 + b']' * 100000), 'bad_bundle'),
        (gzip.compress(json.dumps(raw_bundle(sessionId=OTHER_SESSION)).encode()),
         'bundle_mismatch'),
        (gzip.compress(json.dumps(raw_bundle(modelId='e' * 64)).encode()), 'bundle_mismatch'),
    ],
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


# Bundle validation


@pytest.mark.parametrize(
    ('change', 'reason'),
    [
        ({'type': 'ksp_active_vessel_proxy'}, 'bad_bundle'),
        ({'version': True}, 'bad_bundle'), ({'version': 1.0}, 'bad_bundle'),
        ({'version': 2}, 'bad_bundle'),
        ({'sessionId': 'AB' * 16}, 'bad_bundle'),
        ({'vesselId': VID.upper()}, 'bad_bundle'), ({'vesselId': ''}, 'bad_bundle'),
        ({'vesselId': 'f' * 32}, 'bad_urdf'),  # robot/link names carry vesselId[:8]
        ({'modelId': 'e' * 64}, 'bundle_mismatch'), ({'modelId': 'e'}, 'bad_bundle'),
        ({'geometryPolicy': 'mesh'}, 'bad_bundle'),
        ({'persistencePolicy': 'write_to_disk'}, 'bad_bundle'),
        ({'rootFrame': f'{P}_link_0001'}, 'bundle_mismatch'),
        ({'rootFrame': None}, 'bundle_mismatch'),
        ({'baseToRootPosition': [0, 0]}, 'bad_bundle'),
        ({'baseToRootPosition': [0, 0, math.nan]}, 'bad_bundle'),
        ({'baseToRootPosition': None}, 'bad_bundle'),
        ({'baseToRootRotation': [0, 0, 0, 0]}, 'bad_bundle'),
        ({'baseToRootRotation': [0, 0, 1]}, 'bad_bundle'),
        ({'baseToRootRotation': [0, 0, 0, True]}, 'bad_bundle'),
        ({'urdf': 5}, 'bad_bundle'),
        ({'partFrames': None}, 'bad_bundle'),
        ({'partFrames': 'abc'}, 'bad_bundle'),
        ({'partFrames': []}, 'bad_bundle'),
        ({'partFrames': [{'partFlightId': 1, 'frame': f'{P}_link_0000'},
                          {'partFlightId': 2, 'frame': f'{P}_link_0001'}]}, 'bad_bundle'),
        ({'partFrames': [{'partFlightId': 1, 'frame': f'{P}_link_0000'},
                          {'partFlightId': 2, 'frame': f'{P}_link_0000'},
                          {'partFlightId': 3, 'frame': f'{P}_link_0002'}]}, 'bad_bundle'),
        ({'partFrames': [{'partFlightId': 1, 'frame': f'{P}_link_0000'},
                          {'partFlightId': 1, 'frame': f'{P}_link_0001'},
                          {'partFlightId': 3, 'frame': f'{P}_link_0002'}]}, 'bad_bundle'),
        ({'partFrames': [{'partFlightId': 1, 'frame': f'{P}_link_0000'},
                          {'partFlightId': 2, 'frame': f'{P}_link_0001'},
                          {'partFlightId': 3, 'frame': f'{P}_link_0009'}]}, 'bad_bundle'),
        ({'partFrames': [{'partFlightId': -1, 'frame': f'{P}_link_0000'}, 1, 2]},
         'bad_bundle'),
        ({'partFrames': [{'partFlightId': 2**64, 'frame': f'{P}_link_0000'}, 1, 2]},
         'bad_bundle'),
        ({'partFrames': [{'partFlightId': True, 'frame': f'{P}_link_0000'}, 1, 2]},
         'bad_bundle'),
        ({'partFrames': [1, 2, 3]}, 'bad_bundle'),
    ],
)
def test_bundle_rules(change, reason):
    assert reason_of(validate_bundle, raw_bundle(**change)) == reason


@pytest.mark.parametrize('field', ['type', 'version', 'sessionId', 'vesselId', 'modelId',
                                   'geometryPolicy', 'persistencePolicy', 'rootFrame',
                                   'baseToRootPosition', 'baseToRootRotation', 'urdf',
                                   'partFrames'])
def test_bundle_fields_required(field):
    b = raw_bundle()
    del b[field]
    with pytest.raises(ProtocolError):
        validate_bundle(b)


def test_bundle_ids_must_match_chunk():
    assert validate_bundle(raw_bundle(), session_id=SESSION)['sessionId'] == SESSION
    assert reason_of(validate_bundle, raw_bundle(), session_id=OTHER_SESSION) == \
        'bundle_mismatch'
    assert reason_of(validate_bundle, raw_bundle(), model_id='f' * 64) == 'bundle_mismatch'
    assert reason_of(validate_bundle, [1]) == 'bad_bundle'


def test_bundle_normalised_copy():
    b = raw_bundle(baseToRootRotation=[0, 0, 3, 4], extra='ignored')
    out = validate_bundle(b)
    assert out['baseToRootRotation'] == [0.0, 0.0, 0.6, 0.8] and 'extra' not in out
    assert out['partFrames'][2] == {'partFlightId': 102, 'frame': f'{P}_link_0002'}


def test_model_id_over_utf8():
    urdf = URDF.replace('PyLoN primitive proxy', 'Kerbal Größe 🚀')
    b = raw_bundle(urdf=urdf, modelId=hashlib.sha256(urdf.encode('utf-8')).hexdigest())
    assert validate_bundle(b)['urdf'] == urdf
    lone = raw_bundle(urdf=URDF + '\ud800')
    assert reason_of(validate_bundle, lone) == 'bad_bundle'


# URDF allowlist


def test_base_urdf_valid():
    structure = validate_urdf(URDF, vessel_id=VID)
    assert structure.robot_name == f'{P}_active_vessel'
    assert structure.links == tuple(f'{P}_link_{i:04d}' for i in range(3))
    assert structure.root_link == f'{P}_link_0000'
    assert structure.joints[0].rpy == (0.0, 0.0, 1.5707963267948966)
    assert validate_urdf(URDF) == structure  # vid8 from the robot name


@pytest.mark.parametrize(
    'text',
    [
        URDF.replace('<?xml version="1.0"?>\n', ''),  # declaration optional
        URDF.replace('<inertial>', '<!-- comment --><inertial>'),  # comments anywhere
        urdf_text(joints=[joint(2, 1), joint(1, 0)]),  # any joint order
        urdf_text(links=[link(2), link(0), link(1)]),
        urdf_text(links=[link(0), link(1), link(2)] , joints=[joint(1, 2), joint(2, 0)]),
        urdf_text(links=[link(0, INERTIAL + VISUAL * 48 + COLLISION * 48)], joints=[]),
        URDF.replace('<origin xyz="0 0 0"/>', ''),  # optional origin in collision
        URDF.replace('<origin xyz="0 0 0" rpy="0 0 0"/><mass', '<mass'),
        URDF.replace('<box size="1 2 3"/>', '<cylinder radius="0.5" length="2"/>'),
        URDF.replace('size="1 2 3"', 'size=" 1E-05\t2.5e+3\n.5 "'),
        URDF.replace('xyz="1 2 3"', 'xyz="-0 +1 -1.5E+16"'),
        URDF.replace('ixy="0"', 'ixy="-0.25"'),
    ],
)
def test_urdf_accepted_variants(text):
    validate_urdf(text, vessel_id=VID)


def _sub(old, new, text=URDF, count=1):
    assert old in text
    return text.replace(old, new, count)


BAD_URDFS = {
    'doctype': _sub('<robot', '<!DOCTYPE robot>\n<robot'),
    'entity': _sub('<?xml version="1.0"?>\n', '<?xml version="1.0"?>\n<!DOCTYPE r [\n'
                   '<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>\n'),
    'cdata': _sub('<inertial>', '<![CDATA[x]]><inertial>'),
    'undefined_entity': _sub('<inertial>', '&foo;<inertial>'),
    'pi': _sub('<inertial>', '<?php echo 1 ?><inertial>'),
    'top_pi': _sub('<robot', '<?xml-stylesheet href="x"?><robot'),
    'namespace': _sub('<robot ', '<robot xmlns="http://x" '),
    'prefixed_ns': _sub('<robot ', '<robot xmlns:x="http://x" '),
    'mesh': _sub('<box size="1 2 3"/>', '<mesh filename="package://x.dae"/>'),
    'material': _sub('<geometry>', '<material name="red"/><geometry>'),
    'transmission': _sub('</robot>', '<transmission name="t"/></robot>'),
    'gazebo': _sub('</robot>', '<gazebo/></robot>'),
    'root_not_robot': '<link name="x"/>',
    'nested_robot': _sub('</robot>', '<robot name="x"/></robot>'),
    'link_in_link': _sub('<inertial>', f'<link name="{P}_link_0009"/><inertial>'),
    'visual_name': _sub('<visual>', '<visual name="v">'),
    'extra_attribute': _sub('<mass value="1"/>', '<mass value="1" unit="kg"/>'),
    'ns_attribute': _sub('<mass value="1"/>', '<mass value="1" xml:lang="en"/>'),
    'text_in_link': _sub('<inertial>', 'hello<inertial>'),
    'tail_text': _sub('</inertial>', '</inertial>tail'),
    'text_in_robot': _sub('</robot>', 'x</robot>'),
    'robot_name': urdf_text(robot='pylon_ffffffff_active_vessel'),
    'robot_name_format': urdf_text(robot='vessel'),
    'link_prefix': URDF.replace(f'{P}_link_0002', 'pylon_ffffffff_link_0002'),
    'link_digits': URDF.replace(f'{P}_link_0002', f'{P}_link_002'),
    'link_name_chars': URDF.replace(f'{P}_link_0002', f'{P}-link-0002'),
    'joint_name': _sub(f'{P}_joint_0001', f'{P}_jnt_0001'),
    'long_name': _sub(f'{P}_joint_0001', 'j' * 129),
    'missing_name': _sub(f' name="{P}_joint_0001"', ''),
    'revolute': _sub('type="fixed"', 'type="revolute"'),
    'continuous': _sub('type="fixed"', 'type="continuous"'),
    'missing_type': _sub(' type="fixed"', ''),
    'axis_on_fixed': _sub('</joint>', '<axis xyz="0 0 1"/></joint>'),
    'missing_parent': _sub(f'<parent link="{P}_link_0000"/>', ''),
    'missing_child': _sub(f'<child link="{P}_link_0001"/>', ''),
    'missing_origin': _sub('<origin xyz="1 2 3" rpy="0 0 1.5707963267948966"/>', ''),
    'two_parents': _sub(f'<parent link="{P}_link_0000"/>',
                        f'<parent link="{P}_link_0000"/><parent link="{P}_link_0000"/>'),
    'two_origins': _sub('<origin xyz="1 2 3"', '<origin/><origin xyz="1 2 3"'),
    'no_inertial': urdf_text(links=[link(0, VISUAL + COLLISION), link(1), link(2)]),
    'two_inertials': urdf_text(links=[link(0, INERTIAL * 2 + VISUAL + COLLISION), link(1),
                                      link(2)]),
    'no_visual': urdf_text(links=[link(0, INERTIAL + COLLISION), link(1), link(2)]),
    'no_collision': urdf_text(links=[link(0, INERTIAL + VISUAL), link(1), link(2)]),
    '49_visuals': urdf_text(links=[link(0, INERTIAL + VISUAL * 49 + COLLISION)], joints=[]),
    '49_collisions': urdf_text(links=[link(0, INERTIAL + VISUAL + COLLISION * 49)], joints=[]),
    'no_mass': _sub('<mass value="1"/>', ''),
    'no_inertia': _sub('<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>', ''),
    'no_geometry': _sub('<geometry><box size="1 2 3"/></geometry>', ''),
    'empty_geometry': _sub('<box size="1 2 3"/>', ''),
    'two_primitives': _sub('<box size="1 2 3"/>', '<box size="1 2 3"/><sphere radius="1"/>'),
    'box_in_visual': _sub('<geometry><box size="1 2 3"/></geometry>', '<box size="1 2 3"/>'),
    'box_children': _sub('<box size="1 2 3"/>', '<box size="1 2 3"><origin/></box>'),
    'box_zero': _sub('size="1 2 3"', 'size="1 0 3"'),
    'box_negative': _sub('size="1 2 3"', 'size="1 -2 3"'),
    'box_two_numbers': _sub('size="1 2 3"', 'size="1 2"'),
    'box_nan': _sub('size="1 2 3"', 'size="1 nan 3"'),
    'box_inf': _sub('size="1 2 3"', 'size="1 inf 3"'),
    'box_overflow': _sub('size="1 2 3"', 'size="1 1e400 3"'),
    'box_underscore': _sub('size="1 2 3"', 'size="1 2_0 3"'),
    'box_hex': _sub('size="1 2 3"', 'size="1 0x2 3"'),
    'box_comma': _sub('size="1 2 3"', 'size="1,2,3"'),
    'box_missing': _sub('<box size="1 2 3"/>', '<box/>'),
    'cylinder_zero': _sub('<box size="1 2 3"/>', '<cylinder radius="0" length="2"/>'),
    'cylinder_missing_length': _sub('<box size="1 2 3"/>', '<cylinder radius="1"/>'),
    'sphere_negative': _sub('radius="0.5"', 'radius="-0.5"'),
    'mass_zero': _sub('<mass value="1"/>', '<mass value="0"/>'),
    'mass_two': _sub('<mass value="1"/>', '<mass value="1 2"/>'),
    'inertia_missing_izz': _sub(' izz="1"', ''),
    'inertia_nan': _sub('ixy="0"', 'ixy="NaN"'),
    'origin_two_numbers': _sub('xyz="1 2 3"', 'xyz="1 2"'),
    'origin_garbage': _sub('rpy="0 0 1.5707963267948966"', 'rpy="a b c"'),
    'two_roots': urdf_text(joints=[joint(1, 0)]),
    'cycle': urdf_text(joints=[joint(1, 0), joint(2, 1), joint(3, 2, child=0)]),
    'detached_cycle': urdf_text(links=[link(i) for i in range(4)],
                                joints=[joint(1, 0), joint(2, 3, child=2), joint(3, 2, child=3)]),
    'self_loop': urdf_text(links=[link(0), link(1)], joints=[joint(1, 0), joint(2, 1, 1)]),
    'unknown_link': urdf_text(joints=[joint(1, 0), joint(2, 1, child=7)]),
    'duplicate_link': urdf_text(links=[link(0), link(1), link(1)], joints=[joint(1, 0)]),
    'duplicate_joint': urdf_text(joints=[joint(1, 0), joint(1, 1, child=2)]),
    'two_parent_joints': urdf_text(joints=[joint(1, 0), joint(2, 1), joint(3, 0, child=2)]),
    'no_links': urdf_text(links=[], joints=[]),
    'not_xml': 'robot',
    'empty': '',
    'unclosed': URDF.replace('</robot>', ''),
    'two_roots_xml': URDF + '<robot name="x"/>',
}


@pytest.mark.parametrize('name', sorted(BAD_URDFS))
def test_urdf_rejected(name):
    assert reason_of(validate_urdf, BAD_URDFS[name], vessel_id=VID) == 'bad_urdf'


def test_urdf_rejects_non_strings_and_bad_vessel():
    assert reason_of(validate_urdf, b'<robot/>') == 'bad_urdf'
    assert reason_of(validate_urdf, URDF, vessel_id='XYZ') == 'bad_urdf'


def test_dtd_rejected_before_parsing():
    laughs = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
              + ''.join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i else "&lol;" * 10}">'
                        for i in range(9))
              + ']><robot name="&lol8;"/>')
    start = time.perf_counter()
    assert reason_of(validate_urdf, laughs) == 'bad_urdf'
    assert time.perf_counter() - start < 0.1


def test_element_limit():
    links = [link(i) for i in range(2001)]  # 10 elements each: 20011 in all
    joints = [joint(i, i - 1) for i in range(1, 2)]
    with pytest.raises(ProtocolError) as info:
        validate_urdf(urdf_text(links=links, joints=joints), vessel_id=VID)
    assert 'elements' in info.value.detail


@pytest.mark.parametrize(('count', 'ok'), [(2048, True), (2049, False)])
def test_link_limit(monkeypatch, count, ok):
    monkeypatch.setattr(mdl, 'MAX_ELEMENTS', 10**6)  # isolate the link limit
    minimal = INERTIAL + VISUAL + COLLISION
    text = urdf_text(links=[link(i, minimal) for i in range(count)],
                     joints=[joint(i, i - 1) for i in range(1, count)])
    if ok:
        assert len(validate_urdf(text, vessel_id=VID).links) == 2048
    else:
        assert reason_of(validate_urdf, text, vessel_id=VID) == 'bad_urdf'


# Servo joint extension

SERVO_CHILDREN = '<axis xyz="0 0 1"/><limit lower="-1.5" upper="1.5" effort="10" velocity="2"/>'


@pytest.mark.parametrize('jtype', ['revolute', 'prismatic'])
def test_servo_joints_behind_flag(jtype):
    text = urdf_text(joints=[joint(1, 0, jtype=jtype, extra=SERVO_CHILDREN), joint(2, 1)])
    assert reason_of(validate_urdf, text, vessel_id=VID) == 'bad_urdf'
    structure = validate_urdf(text, vessel_id=VID, allow_servo_joints=True)
    servo = structure.joints[0]
    assert servo.type == jtype and servo.axis == (0.0, 0.0, 1.0)
    assert servo.limit == (-1.5, 1.5, 10.0, 2.0)
    assert structure.joints[1].axis is None and structure.joints[1].limit is None


@pytest.mark.parametrize(
    'extra',
    [
        '',  # axis and limit are required
        '<axis xyz="0 0 1"/>',
        '<limit lower="0" upper="1" effort="1" velocity="1"/>',
        '<axis xyz="0 0 1"/>' + SERVO_CHILDREN,
        SERVO_CHILDREN + '<limit lower="0" upper="1" effort="1" velocity="1"/>',
        '<axis xyz="0 0 0"/><limit lower="0" upper="1" effort="1" velocity="1"/>',
        '<axis xyz="0 1"/><limit lower="0" upper="1" effort="1" velocity="1"/>',
        '<axis/><limit lower="0" upper="1" effort="1" velocity="1"/>',
        '<axis xyz="0 0 1"/><limit lower="2" upper="1" effort="1" velocity="1"/>',
        '<axis xyz="0 0 1"/><limit lower="0" upper="inf" effort="1" velocity="1"/>',
        '<axis xyz="0 0 1"/><limit lower="0" upper="1" effort="1"/>',
        '<axis xyz="0 0 1"/><limit lower="0" upper="1" effort="1" velocity="1" soft="1"/>',
        '<axis xyz="0 0 1" rpy="0 0 0"/><limit lower="0" upper="1" effort="1" velocity="1"/>',
    ],
)
def test_servo_joint_rules(extra):
    text = urdf_text(joints=[joint(1, 0, jtype='revolute', extra=extra), joint(2, 1)])
    assert reason_of(validate_urdf, text, vessel_id=VID, allow_servo_joints=True) == 'bad_urdf'


def test_servo_flag_keeps_other_rules():
    for name in ('continuous', 'axis_on_fixed', 'mesh'):
        assert reason_of(validate_urdf, BAD_URDFS[name], vessel_id=VID,
                         allow_servo_joints=True) == 'bad_urdf'


def test_allowlist_is_one_table_with_feature_rows():
    gated = {tag for tag, rule in URDF_ALLOWLIST.items() if rule.feature}
    assert gated == {'axis', 'limit'}
    assert set(URDF_ALLOWLIST) == {
        'robot', 'link', 'joint', 'parent', 'child', 'origin', 'inertial', 'mass',
        'inertia', 'visual', 'collision', 'geometry', 'box', 'cylinder', 'sphere', 'axis',
        'limit'}


def test_assembler_servo_flag():
    text = urdf_text(joints=[joint(1, 0, jtype='revolute', extra=SERVO_CHILDREN), joint(2, 1)])
    b = build_bundle(session_id=SESSION, vessel_id=VID, urdf=text,
                     base_to_root_position=[0, 0, 0], base_to_root_rotation=[0, 0, 0, 1],
                     part_frames=PART_FRAMES, allow_servo_joints=True)
    chunks = chunk_model(b, session_id=SESSION, sent_at_ut=0.0, allow_servo_joints=True)
    assert reason_of(feed, ModelAssembler(), chunks) == 'bad_urdf'
    got = feed(ModelAssembler(allow_servo_joints=True), chunks)
    assert got.structure.joints[0].type == 'revolute'


# Robustness

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats()
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=8,
)


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


@FAST
@given(st.dictionaries(st.sampled_from(list(raw_bundle())), json_values, max_size=4))
def test_random_bundles_only_raise_protocol_error(change):
    try:
        validate_bundle(raw_bundle(**change))
    except ProtocolError:
        pass


@FAST
@given(st.text(alphabet=st.sampled_from(list('<>/="! ?-[]&;abrotlinkjyxz01')), max_size=120))
def test_random_xml_only_raises_protocol_error(text):
    for candidate in (text, URDF.replace('<inertial>', text, 1)):
        try:
            validate_urdf(candidate)
        except ProtocolError:
            pass


@pytest.mark.parametrize('name,ok', [('mast_hinge', True), ('_arm2', True),
                                     ('Mast_Hinge', False), ('mast-hinge', False),
                                     ('2arm', False), ('a' * 65, False)])
def test_servo_joint_may_carry_its_joint_states_name(name, ok):
    servo = joint(1, 0, jtype='revolute', extra=SERVO_CHILDREN).replace(
        f'{P}_joint_0001', name)
    text = urdf_text(joints=[servo, joint(2, 1)])
    if ok:
        structure = validate_urdf(text, vessel_id=VID, allow_servo_joints=True)
        assert structure.joints[0].name == name
    else:
        assert reason_of(validate_urdf, text, vessel_id=VID,
                         allow_servo_joints=True) == 'bad_urdf'
    # never without the flag, and a fixed joint keeps the pylon name rule
    assert reason_of(validate_urdf, text, vessel_id=VID) == 'bad_urdf'
    fixed = urdf_text(joints=[joint(1, 0).replace(f'{P}_joint_0001', 'mast_hinge'),
                              joint(2, 1)])
    assert reason_of(validate_urdf, fixed, vessel_id=VID, allow_servo_joints=True) == \
        'bad_urdf'
