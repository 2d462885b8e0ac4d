"""Datagram framing: decode_json, check_header and the two encoders."""

import base64
import json
import math
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from pylon_protocol import packets, wire
from pylon_protocol.envelope import Envelope
from pylon_protocol.errors import ProtocolError
from pylon_testing.cost import cpu_seconds
from pylon_testing.properties import examples
import pytest

FAST = settings(max_examples=examples(200), deadline=None)
ENVELOPE = Envelope('a' * 32, 1, 'b' * 32, 'c' * 32)


def reason_of(call, *args, **kwargs) -> str:
    with pytest.raises(ProtocolError) as info:
        call(*args, **kwargs)
    return info.value.reason


# -- decode_json ------------------------------------------------------------------------

def test_decode_json_returns_the_object():
    assert wire.decode_json(b'{"type":"pylon_imu","a":[1,2.5,null,true]}') == {
        'type': 'pylon_imu', 'a': [1, 2.5, None, True]}


@pytest.mark.parametrize('data', [b'[]', b'[{"type":"pylon_imu"}]', b'"x"', b'1', b'null',
                                  b'true'])
def test_decode_json_root_must_be_an_object(data):
    assert reason_of(wire.decode_json, data) == 'not_object'


@pytest.mark.parametrize('data, reason', [
    (b'{"a":"\xff"}', 'invalid_utf8'),
    (b'{"a":"\xed\xa0\x80"}', 'invalid_utf8'),       # an encoded surrogate
    (b'{"a":1', 'invalid_json'),
    (b'', 'invalid_json'),
    (b'{"a":1}{"b":2}', 'invalid_json'),
    (b"{'a':1}", 'invalid_json'),
    (b'\xef\xbb\xbf{"a":1}', 'invalid_json'),         # a byte order mark
    (b'{"a":"\x01"}', 'invalid_json'),                # raw control character in a string
    (b'{"a":' + b'9' * 5000 + b'}', 'invalid_json'),  # beyond the integer digit limit
    (b'{"a":' + b'[' * 30000 + b']' * 30000 + b'}', 'too_deep'),
])
def test_decode_json_rejections(data, reason):
    assert reason_of(wire.decode_json, data) == reason


def test_decode_json_checks_the_size_before_parsing():
    assert reason_of(wire.decode_json, b'x' * 65536) == 'too_large'
    assert reason_of(wire.decode_json, b'{"a":"' + b'x' * 100 + b'"}', max_bytes=50) == \
        'too_large'
    data = b'{"a":"' + b'x' * (65535 - 8) + b'"}'
    assert len(data) == 65535
    assert wire.decode_json(data)['a'] == 'x' * (65535 - 8)


def test_decode_json_accepts_nan_tokens_and_keeps_the_last_duplicate():
    obj = wire.decode_json(b'{"a":NaN,"b":Infinity,"c":-Infinity,"d":1,"d":2}')
    assert math.isnan(obj['a'])
    assert obj['b'] == math.inf and obj['c'] == -math.inf
    assert obj['d'] == 2


def test_decode_json_takes_bytes_like_objects():
    assert wire.decode_json(bytearray(b'{"a":1}')) == {'a': 1}
    assert wire.decode_json(memoryview(b'{"a":1}')) == {'a': 1}


# -- check_header -------------------------------------------------------------------------

def test_check_header_returns_the_type():
    assert wire.check_header({'type': 'pylon_anything', 'version': 1}) == 'pylon_anything'


@pytest.mark.parametrize('header', [
    {'version': 1}, {'type': None, 'version': 1}, {'type': 5, 'version': 1},
    {'type': ['pylon_imu'], 'version': 1}, {'type': 'ksp_imu', 'version': 1},
    {'type': 'PYLON_imu', 'version': 1}, {'type': ' pylon_imu', 'version': 1},
])
def test_check_header_rejects_bad_types(header):
    assert reason_of(wire.check_header, header) == 'bad_packet_type'


@pytest.mark.parametrize('version', [True, 1.0, 0, 2, -1, '1', None, [1], 2**64 + 1])
def test_check_header_accepts_only_the_json_integer_1(version):
    assert reason_of(wire.check_header, {'type': 'pylon_imu', 'version': version}) == \
        'bad_version'
    assert reason_of(wire.check_header, {'type': 'pylon_imu'}) == 'bad_version'


# -- encode_command -----------------------------------------------------------------------

def test_encode_command_is_compact_ascii_json():
    data = wire.encode_command({'type': 'pylon_x', 'version': 1, 'v': [1.0, -0.5],
                                'name': 'Jebediah’s'})
    assert data == b'{"type":"pylon_x","version":1,"v":[1.0,-0.5],"name":"Jebediah\\u2019s"}'
    assert wire.decode_json(data)['name'] == 'Jebediah’s'


@pytest.mark.parametrize('value', [math.nan, math.inf, -math.inf, [1.0, math.nan],
                                   {'deep': {'x': math.inf}}])
def test_encode_command_refuses_non_finite_numbers(value):
    assert reason_of(wire.encode_command, {'type': 'pylon_x', 'x': value}) == 'non_finite'


@pytest.mark.parametrize('obj, reason', [
    ([1, 2], 'not_object'),
    ('text', 'not_object'),
    ({'a': {1, 2}}, 'bad_type'),
    ({'a': b'bytes'}, 'bad_type'),
    ({'a': 'x' * 70000}, 'too_large'),
])
def test_encode_command_rejections(obj, reason):
    assert reason_of(wire.encode_command, obj) == reason


def test_encoders_refuse_nesting_too_deep_to_decode():
    nested: list = []
    for _ in range(100000):
        nested = [nested]
    assert reason_of(wire.encode_command, {'a': nested}) == 'too_deep'
    assert reason_of(wire.encode_state, {'a': nested}) == 'too_deep'


def test_encode_command_and_decode_round_trip():
    packet = packets.build_command('pylon_separation_query', ENVELOPE, operationId='op',
                                   operationInstance='i', operationEpoch='e',
                                   operationVesselId='v')
    assert packets.decode_command(wire.encode_command(packet)) == packet


# -- encode_state ---------------------------------------------------------------------------

@pytest.mark.parametrize('value, text', [
    (1.0, '1'), (-0.0, '-0'), (0.0, '0'), (100.0, '100'), (-3.0, '-3'), (1e-05, '1E-05'),
    (1.5e16, '1.5E+16'), (1e16, '1E+16'), (2.5e-07, '2.5E-07'), (0.1, '0.1'),
    (12345.5, '12345.5'), (1.7976931348623157e308, '1.7976931348623157E+308'),
    (5e-324, '5E-324'), (-1.25e-10, '-1.25E-10'), (7, '7'), (True, 'true'),
    (False, 'false'), (None, 'null'), (0.0001, '0.0001'),
])
def test_encode_state_writes_numbers_like_csharp_round_trip(value, text):
    assert wire.encode_state({'v': value}) == ('{"v":' + text + '}').encode()
    assert wire.encode_state({'v': [value, value]}) == f'{{"v":[{text},{text}]}}'.encode()


@pytest.mark.parametrize('text', [
    '1.0,', 'v1.0]', 'x.0}', '1e-05', 'true e+5', '2.0', 'a"b.0,c', 'back\\slash 1.0,',
    'tab\t1.0}', '1e+16\n', '\u00e9 3.0,', '"', '\\', '\\"1.0,"',
])
def test_encode_state_never_alters_strings(text):
    obj = {text: text, 'list': [text, 1.0, text], 'n': 2.0}
    data = wire.encode_state(obj)
    assert json.loads(data) == obj
    assert data.endswith(b'"n":2}')


def test_encode_state_writes_raw_utf8_and_decodes():
    data = wire.encode_state({'vessel': 'Jebediah’s Rover Ü'})
    assert 'Jebediah’s Rover Ü'.encode() in data
    assert wire.decode_json(data) == {'vessel': 'Jebediah’s Rover Ü'}


def test_encode_state_rejections():
    assert reason_of(wire.encode_state, {'a': math.nan}) == 'non_finite'
    assert reason_of(wire.encode_state, {'a': '\ud800'}) == 'bad_value'
    assert reason_of(wire.encode_state, {'a': 'x' * 65535}) == 'too_large'
    assert reason_of(wire.encode_state, [1.0]) == 'not_object'


def test_encode_state_can_write_the_nan_tokens_of_the_mod():
    data = wire.encode_state({'a': [math.nan, math.inf, -math.inf, 1.0]}, allow_nan=True)
    assert data == b'{"a":[NaN,Infinity,-Infinity,1]}'
    assert math.isnan(wire.decode_json(data)['a'][0])


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_PYTHON_FLOAT_FORMS = re.compile(r'\d\.0(?![0-9])|\de[+-]')

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=30)


@FAST
@given(st.dictionaries(st.text(max_size=12), json_values, max_size=8))
def test_encode_state_keeps_every_value_and_leaves_no_python_float_forms(obj):
    data = wire.encode_state(obj)
    assert wire.decode_json(data) == obj
    outside = _STRINGS.sub('""', data.decode())
    assert _PYTHON_FLOAT_FORMS.search(outside) is None
    assert wire.decode_json(wire.encode_command(obj)) == obj


@FAST
@given(st.dictionaries(st.text(max_size=12), json_values, max_size=8))
def test_encoders_write_what_json_dumps_writes(obj):
    # the encoders are kept between calls: their output is json.dumps's with the same options
    compact = {'separators': (',', ':')}
    assert wire.encode_command(obj) == json.dumps(obj, allow_nan=False, **compact).encode()
    assert wire.encode_state(obj) == wire._csharp_numbers(
        json.dumps(obj, ensure_ascii=False, **compact)).encode()
    with_nan = {**obj, 'nan': math.nan, 'inf': [-math.inf]}
    assert wire.encode_state(with_nan, allow_nan=True) == wire._csharp_numbers(
        json.dumps(with_nan, ensure_ascii=False, **compact)).encode()


base64_text = st.binary(max_size=300).map(lambda raw: base64.b64encode(raw).decode())


@FAST
@given(st.dictionaries(st.text(max_size=12), json_values, max_size=8), base64_text,
       st.text(min_size=1, max_size=8))
def test_encode_state_with_base64_writes_the_bytes_of_encode_state(obj, data, key):
    obj = {**obj, key: data}
    assert wire.encode_state_with_base64(obj, key) == wire.encode_state(obj)


@pytest.mark.parametrize('obj', [
    {'data': 'QUJD', 'x': [1.0, -0.0, 1e-07], 'nested': {'data': 'QUJD'}},
    {'data': 'QUJD', 'other': '\x00'},                    # the placeholder's own text
    {'data': 'QUJD', 'nested': {'data': '\x00'}},          # the placeholder twice: fallback
    {'data': 'a"b\\c\n', 'x': 1},                         # not base64: escaped as usual
    {'data': 'é', 'x': 1},                                  # not ASCII
    {'data': 5, 'x': 1.0},                                  # not a string
    {'x': 1.0},                                             # no such key
])
def test_encode_state_with_base64_handles_every_value(obj):
    assert wire.encode_state_with_base64(obj, 'data') == wire.encode_state(obj)
    assert wire.decode_json(wire.encode_state_with_base64(obj, 'data')) == obj


def test_encode_state_with_base64_keeps_the_size_limit_and_refusals():
    big = {'data': 'QUJD' * 20000}
    assert reason_of(wire.encode_state_with_base64, big, 'data') == 'too_large'
    assert reason_of(wire.encode_state_with_base64, {'data': 'QUJD', 'x': math.nan},
                     'data') == 'non_finite'
    assert reason_of(wire.encode_state_with_base64, ['QUJD'], 'data') == 'not_object'
    nan = wire.encode_state_with_base64({'data': 'QUJD', 'x': math.nan}, 'data',
                                        allow_nan=True)
    assert nan == b'{"data":"QUJD","x":NaN}'


def test_build_and_encode_state_are_fast():
    fields = dict.fromkeys(packets.FLIGHT_SCALARS, 1.5)
    fields.update({name: [0.0, 0.5, 1.0] for name in packets.FLIGHT_VECTORS})
    fields.update(vesselId='c' * 32, bodyName='Kerbin', landed=False, splashed=False,
                  observationSequence=5)
    rounds = 300

    def build_and_encode():
        for _ in range(rounds):
            wire.encode_state(packets.build_state('pylon_flight_state', ENVELOPE, **fields))
    per_packet = cpu_seconds(build_and_encode) / rounds
    assert per_packet < 1e-3   # typically ~25 us of CPU
