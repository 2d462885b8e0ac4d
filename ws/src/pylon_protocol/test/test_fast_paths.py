"""The fast paths of decoding and validation give what the reference paths give.

``wire.decode_json`` tries msgspec's decoder first and falls back to ``json.loads``
(``wire.decode_json_reference``); ``Envelope.check_packet`` checks in place what
``Envelope.from_packet`` checks by building an envelope; ``schema.vector`` converts a
plain vector without a call per element. Each is compared here with its reference on the
mod's quirks (NaN and Infinity tokens, duplicate keys, integral doubles written as ints)
and on what a hostile sender may write (huge integers, deep nesting, bad UTF-8).
"""

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st
from pylon_protocol import packets, schema, wire
from pylon_protocol.envelope import Envelope
from pylon_protocol.errors import ProtocolError
from pylon_testing import mod_datagrams
from pylon_testing.properties import examples
import pytest

FAST = settings(max_examples=examples(300), deadline=None)


def same(a, b) -> bool:
    """Tell whether two decoded values are identical: types, key order, NaN where NaN."""
    pending = [(a, b)]                       # no recursion: values may nest 1000 deep
    while pending:
        a, b = pending.pop()
        if type(a) is not type(b):
            return False
        if type(a) is dict:
            if list(a) != list(b):
                return False
            pending.extend((a[k], b[k]) for k in a)
        elif type(a) is list:
            if len(a) != len(b):
                return False
            pending.extend(zip(a, b))
        elif type(a) is float:
            if repr(a) != repr(b):           # -0.0 is not 0.0, NaN is NaN
                return False
        elif a != b:
            return False
    return True


def outcome(call, data):
    """Return ('ok', value) or ('error', reason) of ``call(data)``."""
    try:
        return 'ok', call(data)
    except ProtocolError as exc:
        return 'error', exc.reason


def reference(data: bytes):
    """``decode_json`` as it was: the size, the reference decoder, then the root check."""
    if len(data) > wire.MAX_DATAGRAM_BYTES:
        raise ProtocolError('too_large', str(len(data)))
    obj = wire.decode_json_reference(data)
    if type(obj) is not dict:
        raise ProtocolError('not_object', type(obj).__name__)
    return obj


def assert_same_as_reference(data: bytes) -> None:
    fast, slow = outcome(wire.decode_json, data), outcome(reference, data)
    assert fast[0] == slow[0] and same(fast[1], slow[1]), (data[:200], fast, slow)


QUIRKS = [
    b'{"a":NaN,"b":Infinity,"c":-Infinity}',
    b'{"a":[NaN,1,-Infinity],"b":{"c":Infinity}}',
    b'{"a":1,"a":2}',
    b'{"b":1,"a":2,"b":3}',                            # last value, first place
    b'{"a":{"x":1},"a":[1,2]}',
    b'{"a":1,"b":{"c":1,"c":NaN},"a":"z"}',
    b'{"a":18446744073709551615,"b":18446744073709551616}',
    b'{"a":-9223372036854775808,"b":-9223372036854775809}',
    b'{"a":123456789012345678901234567890}',
    b'{"a":-123456789012345678901234567890}',
    b'{"a":' + b'9' * 4300 + b'}',
    b'{"a":-' + b'9' * 4300 + b'}',
    b'{"a":' + b'9' * 4301 + b'}',                     # beyond the digit limit: invalid_json
    b'{"a":1E+400,"b":-1e400,"c":1e-400,"d":-1e-400}',
    b'{"a":1.7976931348623157e308,"b":1.7976931348623159e308,"c":5e-324}',
    b'{"a":1,"b":-0,"c":-0.0,"d":1.0,"e":1E-05,"f":1.5E+16,"g":12345.500100000001}',
    b'{"a":0.1000000000000000055511151231257827021181583404541015625}',
    b'{"a":[1,[2,[3,{"b":[{"c":null}]}]]],"d":true,"e":false,"f":""}',
    b'{"a":"\\u00e9\\ud83d\\ude80","b":"\xc3\xa9","c":"\\"\\\\\\/\\b\\f\\n\\r\\t"}',
    b'{"a":"\\ud800"}',                                 # a lone surrogate escape
    b'{"a":"\\u0000"}',
    b' \t\r\n{"a" : 1 }\n',
    b'{}',
    # refused by both
    b'{"a":"\xff"}', b'{"a":"\xed\xa0\x80"}', b'{"\xc0\xaf":1}', b'\xef\xbb\xbf{"a":1}',
    b'{"a":"\x01"}', b'{"a":1', b'', b'{"a":1}{"b":2}', b"{'a':1}", b'{"a":1,}',
    b'{"a":01}', b'{"a":1.}', b'{"a":.5}', b'{"a":+1}', b'{"a":nan}', b'{"a":inf}',
    b'{"a":-NaN}', b'{"a":Infinity1}', b'[]', b'[{"a":1}]', b'"x"', b'1', b'null', b'true',
]


@pytest.mark.parametrize('data', QUIRKS)
def test_decode_json_matches_the_reference_decoder_on_quirks(data):
    assert_same_as_reference(data)


@pytest.mark.parametrize('depth', [1, 50, 200, 254, 255, 256, 300, 900, 990, 995, 1000,
                                   2000, 30000])
@pytest.mark.parametrize('opening', [b'[', b'{"a":'])
def test_decode_json_matches_the_reference_decoder_at_every_depth(depth, opening):
    closing = b']' if opening == b'[' else b'}'
    data = b'{"x":' + opening * depth + b'1' + closing * depth + b'}'
    assert_same_as_reference(data)


def test_decode_json_does_not_try_the_fast_decoder_on_deep_text(monkeypatch):
    calls = []
    monkeypatch.setattr(wire, '_fast_loads', lambda data: calls.append(data) or {})
    depth = wire.FAST_PATH_MAX_OPENINGS
    wire.decode_json(b'{"a":' + b'[' * (depth - 2) + b']' * (depth - 2) + b'}')
    assert len(calls) == 1
    wire.decode_json(b'{"a":' + b'[' * depth + b']' * depth + b'}')
    assert len(calls) == 1


def test_decode_json_takes_the_fast_path_when_msgspec_is_there(monkeypatch):
    pytest.importorskip('msgspec')

    def refuse(text):
        raise AssertionError('the reference decoder ran')
    monkeypatch.setattr(json, 'loads', refuse)
    assert wire.decode_json(b'{"a":1,"a":[2.5,-0]}') == {'a': [2.5, 0]}


def test_decode_json_without_msgspec_is_the_reference_decoder(monkeypatch):
    monkeypatch.setattr(wire, '_fast_loads', None)
    for data in QUIRKS:
        assert_same_as_reference(data)


# mod-like text: compact JSON, C#-style numbers, NaN tokens, duplicated keys
json_leaves = (st.none() | st.booleans() | st.integers(-2**80, 2**80)
               | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
json_values = st.recursive(
    json_leaves,
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=6), children, max_size=5),
    max_leaves=25)


@FAST
@given(st.dictionaries(st.sampled_from('abcde'), json_values, max_size=6),
       st.lists(st.tuples(st.sampled_from('abcde'), json_values), max_size=3))
def test_decode_json_matches_the_reference_decoder_on_generated_text(obj, duplicates):
    data = wire.encode_state(obj, allow_nan=True)
    if duplicates:                                   # keys written again after the object
        extra = b','.join(wire.encode_state({k: v}, allow_nan=True)[1:-1]
                          for k, v in duplicates)
        data = data[:-1] + (b',' if obj else b'') + extra + b'}'
    assert_same_as_reference(data)


@FAST
@given(st.binary(max_size=80))
def test_decode_json_matches_the_reference_decoder_on_random_bytes(data):
    assert_same_as_reference(data)
    assert_same_as_reference(b'{"a":' + data + b'}')


# -- Envelope.check_packet ----------------------------------------------------------------
GOOD = {'runtimeInstance': 'a' * 32, 'runtimeGeneration': 3, 'runtimeEpoch': 'b' * 32,
        'runtimeVesselId': 'c' * 32}


@pytest.mark.parametrize('changes', [
    {}, {'runtimeVesselId': ''}, {'runtimeGeneration': 0}, {'runtimeGeneration': 2**64 - 1},
    {'runtimeGeneration': 2**64}, {'runtimeGeneration': -1}, {'runtimeGeneration': 3.0},
    {'runtimeGeneration': True}, {'runtimeGeneration': None}, {'runtimeInstance': ''},
    {'runtimeInstance': 5}, {'runtimeEpoch': ''}, {'runtimeEpoch': None},
    {'runtimeVesselId': None}, {'runtimeVesselId': 1},
    {'runtimeInstance': None, 'runtimeEpoch': ''},
])
@pytest.mark.parametrize('missing', [None, 'runtimeInstance', 'runtimeGeneration',
                                     'runtimeEpoch', 'runtimeVesselId'])
def test_envelope_check_packet_is_from_packet_without_the_object(changes, missing):
    obj = {**GOOD, **changes}
    if missing:
        del obj[missing]

    def error_of(call):
        try:
            call(obj)
        except ProtocolError as exc:
            return exc.reason, exc.field, exc.detail
        return None
    assert error_of(Envelope.check_packet) == error_of(Envelope.from_packet)


# -- schema.vector ------------------------------------------------------------------------
def vector_reference(value, length=3):
    """Check a vector as ``schema.vector`` did: one ``_as_float`` per element."""
    if type(value) is not list and type(value) is not tuple:
        raise ProtocolError('bad_type', 'array')
    if len(value) != length:
        raise ProtocolError('bad_length', 'length')
    out = []
    for index, item in enumerate(value):
        try:
            out.append(schema._as_float(item))
        except ProtocolError as exc:
            raise schema.relocate(exc, f'[{index}]') from None
    return out


ITEMS = [0, -0, 1, -1, 0.0, -0.0, 1.5, 5e-324, 1.7976931348623157e308, 2**53 + 1,
         2**1024 - 2**970 - 1, 2**1024 - 2**970, 2**1024, -(2**1024), 10**400, math.nan,
         math.inf, -math.inf, True, False, None, '1', [1.0], {'x': 1}]


@pytest.mark.parametrize('first', ITEMS)
@pytest.mark.parametrize('last', [0, 2.5, math.nan, True, 2**1024])
def test_vector_fast_path_matches_the_element_wise_check(first, last):
    check = schema.vector(3)
    def run(call, value):
        try:
            return 'ok', call(value)
        except ProtocolError as exc:
            return 'error', exc.reason, exc.field
    for value in ([first, 1, last], (0.5, first, last), [first, last], [first] * 4, first):
        fast, slow = run(check, value), run(vector_reference, value)
        assert fast[0] == slow[0], value
        if fast[0] == 'ok':
            assert type(fast[1]) is list and same(fast[1], slow[1]), value
        else:
            assert fast == slow, value


def test_imu_validation_keeps_its_output():
    packet = {**GOOD, 'type': 'pylon_imu', 'version': 1, 'vesselId': 'c' * 32,
              'universalTime': 12345, 'angularVelocity': [1, -0.0, 2**60],
              'linearAcceleration': (0, 0, 9.81), 'extra': [1]}
    out = packets.validate_state(packet)
    assert same(out, {**packet, 'universalTime': 12345.0,
                      'angularVelocity': [1.0, -0.0, float(2**60)],
                      'linearAcceleration': [0.0, 0.0, 9.81]})
    assert packet['linearAcceleration'] == (0, 0, 9.81)       # the input is not changed


# -- packets.decode_state: the typed IMU decoder -----------------------------------------
IMU = json.loads(mod_datagrams.imu(rate=(0.1, -0.2, 0.3), accel=(0.0, 0.0, 9.81)))


def state_reference(data: bytes, max_bytes: int = wire.MAX_DATAGRAM_BYTES) -> dict:
    """``decode_state`` without the typed IMU decoder: the reference decoder and schemas."""
    if len(data) > max_bytes:
        raise ProtocolError('too_large', str(len(data)))
    return packets.validate_state(reference(data))


def assert_state_same_as_reference(data: bytes, max_bytes=wire.MAX_DATAGRAM_BYTES) -> None:
    fast = outcome(lambda d: packets.decode_state(d, max_bytes), data)
    slow = outcome(lambda d: state_reference(d, max_bytes), data)
    assert fast[0] == slow[0], (data[:300], fast, slow)
    if fast[0] == 'ok':                              # same values and types, any key order
        assert same(dict(sorted(fast[1].items())), dict(sorted(slow[1].items()))), \
            (data[:300], fast, slow)
    else:
        assert fast[1] == slow[1], (data[:300], fast, slow)


def imu_text(**changes) -> bytes:
    return json.dumps({**IMU, **changes}, separators=(',', ':')).encode()


IMU_VARIANTS = [
    mod_datagrams.imu(), mod_datagrams.imu(rate=(-0.0, 0, 1), accel=(0, 0, 0)),
    imu_text(), imu_text(universalTime=12345), imu_text(universalTime=-0.0),
    imu_text(angularVelocity=[1, -0, 2**53 + 1]),
    imu_text(angularVelocity=[2**64, -2**63 - 1, 10**30]),
    imu_text(linearAcceleration=[1.7976931348623157e308, 5e-324, -1e-300]),
    imu_text(universalTime=None), imu_text(universalTime='1'), imu_text(universalTime=True),
    imu_text(angularVelocity=[1, 2]), imu_text(angularVelocity=[1, 2, 3, 4]),
    imu_text(angularVelocity=[1, 2, True]), imu_text(angularVelocity=[1, 2, '3']),
    imu_text(angularVelocity=[1, 2, [3]]), imu_text(angularVelocity={'x': 1}),
    imu_text(angularVelocity=None), imu_text(linearAcceleration=[]),
    imu_text(vesselId=IMU['vesselId'].upper()), imu_text(vesselId=IMU['vesselId'] + '\n'),
    imu_text(vesselId=IMU['vesselId'][:-1]), imu_text(vesselId=''), imu_text(vesselId=5),
    imu_text(vesselId=IMU['vesselId'][:16] + 'g' + IMU['vesselId'][17:]),
    imu_text(vesselId=IMU['vesselId'][:16] + 'A' + IMU['vesselId'][17:]),
    imu_text(vesselId=IMU['vesselId'][:16] + '\u0663' + IMU['vesselId'][17:]),
    imu_text(vesselId=' ' + IMU['vesselId'][1:]),
    imu_text(version=True), imu_text(version=1.0), imu_text(version=2), imu_text(version='1'),
    imu_text(type='pylon_imu2'), imu_text(type='pylon_ground_truth'), imu_text(type=None),
    imu_text(runtimeGeneration=0), imu_text(runtimeGeneration=-1),
    imu_text(runtimeGeneration=2**63 - 1), imu_text(runtimeGeneration=2**63),
    imu_text(runtimeGeneration=2**64 - 1), imu_text(runtimeGeneration=2**64),
    imu_text(runtimeGeneration=True), imu_text(runtimeGeneration=3.0),
    imu_text(runtimeInstance=''), imu_text(runtimeInstance=7), imu_text(runtimeEpoch=''),
    imu_text(runtimeVesselId=''), imu_text(runtimeVesselId=None),
    imu_text(extra=1), imu_text(observationSequence=4),
    json.dumps({k: v for k, v in IMU.items() if k != 'universalTime'}).encode(),
    json.dumps({k: v for k, v in IMU.items() if k != 'runtimeEpoch'}).encode(),
    json.dumps(dict(reversed(list(IMU.items())))).encode(),           # any key order
    imu_text().replace(b'"pylon_imu"', b'"\\u0070ylon_imu"'),          # an escape
    imu_text().replace(b'[0.1,', b'[NaN,'), imu_text().replace(b'[0.1,', b'[Infinity,'),
    imu_text().replace(b'[0.1,', b'[-Infinity,'), imu_text().replace(b'[0.1,', b'[1e999,'),
    imu_text().replace(b'[0.1,', b'[1' + b'0' * 320 + b','),
    imu_text()[:-1] + b',"universalTime":7}',                         # a duplicate, last wins
    imu_text()[:-1] + b',"universalTime":NaN}', imu_text()[:-1] + b',"type":"pylon_x"}',
    imu_text()[:-1] + b',"angularVelocity":[1,2,3]}', imu_text()[:-1] + b',"version":1}',
    imu_text().replace(b',', b' ,\n\t'), b'\xef\xbb\xbf' + imu_text(), imu_text() + b'x',
    imu_text()[:-1], imu_text().replace(b'"v', b'"\xff'), b'[' + imu_text() + b']',
]


@pytest.mark.parametrize('data', IMU_VARIANTS)
def test_decode_state_takes_the_reference_path_for_all_but_a_plain_imu(data):
    assert_state_same_as_reference(data)
    assert_state_same_as_reference(data, max_bytes=len(data) - 1)      # too large: refused


def test_decode_state_decodes_a_plain_imu_in_one_call(monkeypatch):
    pytest.importorskip('msgspec')
    data = mod_datagrams.imu(rate=(0.1, -0.2, 0.3))

    def refuse(obj):
        raise AssertionError('the reference validation ran')
    expected = state_reference(data)
    monkeypatch.setattr(packets, 'validate_state', refuse)
    assert packets.decode_state(data) == expected
    with pytest.raises(AssertionError):             # anything else: the reference path
        packets.decode_state(mod_datagrams.ground_truth())


def test_decode_state_without_msgspec_is_the_reference_path(monkeypatch):
    monkeypatch.setattr(packets, '_decode_imu', None)
    for data in IMU_VARIANTS:
        assert_state_same_as_reference(data)


imu_values = (json_leaves | st.lists(json_leaves, min_size=2, max_size=4)
              | st.lists(st.integers(-2**70, 2**70) | st.floats(), min_size=3, max_size=3))


@FAST
@given(st.dictionaries(st.sampled_from(sorted(IMU)), imu_values, max_size=4),
       st.sets(st.sampled_from(sorted(IMU)), max_size=2),
       st.dictionaries(st.sampled_from(['extra', 'vesselId', 'type']), imu_values, max_size=1))
def test_decode_state_matches_the_reference_on_generated_imu(changes, missing, appended):
    obj = {k: v for k, v in {**IMU, **changes}.items() if k not in missing}
    data = wire.encode_state(obj, allow_nan=True)
    if appended:                                    # a key written again after the object
        data = data[:-1] + b',' + wire.encode_state(appended, allow_nan=True)[1:]
    assert_state_same_as_reference(data)
