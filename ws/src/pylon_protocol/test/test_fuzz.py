"""Fuzzing: decoders return a dict or raise ProtocolError, and nothing else, for any input."""

import copy
import json
import math

from hypothesis import example, given, HealthCheck, settings
from hypothesis import strategies as st
from pylon_protocol import packets, wire
from pylon_protocol.errors import ProtocolError
from pylon_testing import packet_samples as samples
from pylon_testing.properties import examples

FUZZ = settings(deadline=None, max_examples=examples(250),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DEEP = '__deep_nesting__'
HEADER = ('type', 'version', 'runtimeInstance', 'runtimeGeneration', 'runtimeEpoch',
          'runtimeVesselId')
STATE_PACKETS = {case: samples.state_packet(case) for case in samples.STATE_SAMPLES}
COMMAND_PACKETS = {case: samples.command_packet(case) for case in samples.COMMAND_SAMPLES}
ALL_CASES = sorted([('state', case) for case in STATE_PACKETS]
                   + [('command', case) for case in COMMAND_PACKETS])
FIELD_NAMES = sorted({key for packet in [*STATE_PACKETS.values(), *COMMAND_PACKETS.values()]
                      for key in packet})

special_numbers = st.sampled_from([
    math.nan, math.inf, -math.inf, 0, -0.0, 1, -1, 2**31, 2**32, 2**53 + 1, 2**63, 2**64,
    -2**63 - 1, 10**30, -10**300, 10**4000, 1e308, 5e-324, True, False])
scalars = (st.none() | st.booleans() | st.integers() | st.floats() | special_numbers
           | st.text(max_size=30) | st.sampled_from(['', ' ', 'pylon_imu', 'wheel', 'engine',
                                                     'rgb8', 'base_link', 'tracking', 'AAAA',
                                                     'a' * 32, 'A' * 300]))
json_values = st.recursive(scalars, lambda children: st.lists(children, max_size=6)
                           | st.dictionaries(st.text(max_size=8), children, max_size=6),
                           max_leaves=25)


def outcome(decode, validate, data: bytes) -> None:
    """Decode; on success the result is a dict that validates again and can be encoded."""
    try:
        result = decode(data)
    except ProtocolError as exc:
        assert exc.reason in packets.REASONS, exc
        return
    assert type(result) is dict
    assert type(validate(result)) is dict
    try:
        wire.encode_state(result, allow_nan=True)
    except ProtocolError as exc:
        assert exc.reason in ('too_large', 'too_deep'), exc


def both(data: bytes) -> None:
    outcome(packets.decode_state, packets.validate_state, data)
    outcome(packets.decode_command, packets.validate_command, data)


def dumps(obj) -> bytes:
    text = json.dumps(obj, allow_nan=True)
    return text.replace(json.dumps(DEEP), '[' * 20000 + ']' * 20000).encode('utf-8',
                                                                             'surrogatepass')


@FUZZ
@given(st.binary(max_size=400))
@example(b'{' * 40000)
@example(b'[' * 60000)
@example(b'{"type":"pylon_imu","version":1}')
@example(b'\xff\xfe{}')
def test_arbitrary_bytes(data):
    both(data)


@FUZZ
@given(json_values)
def test_arbitrary_json_values(value):
    both(dumps(value))


@FUZZ
@given(st.sampled_from(ALL_CASES),
       st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=8), json_values,
                       max_size=12))
def test_arbitrary_payloads_with_valid_headers(case, payload):
    kind, name = case
    packet = (STATE_PACKETS if kind == 'state' else COMMAND_PACKETS)[name]
    header = {key: packet[key] for key in HEADER}
    both(dumps({**header, **payload}))


def _paths(value, prefix=()):
    """Yield the path of every value inside a packet but its header (keys and indices)."""
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, child in items:
        if prefix or key not in HEADER:
            yield (*prefix, key)
        yield from _paths(child, (*prefix, key))


mutations = st.one_of(
    st.just(('drop', None)),
    st.tuples(st.just('set'), json_values),
    st.tuples(st.just('set'), special_numbers),
    st.tuples(st.just('set'), st.sampled_from([DEEP, '', [], {}]) | st.integers(1, 70000).map(
        lambda n: 'x' * n)),
    st.just(('wrap', None)),
    st.just(('stringify', None)),
    st.just(('duplicate', None)),
)


def apply(packet: dict, path: tuple, mutation: tuple) -> dict:
    out = copy.deepcopy(packet)
    *parents, last = path
    target = out
    for step in parents:
        target = target[step]
    op, value = mutation
    if op == 'drop':
        del target[last]
    elif op == 'set':
        target[last] = value
    elif op == 'wrap':
        target[last] = [target[last]]
    elif op == 'stringify':
        target[last] = json.dumps(target[last], allow_nan=True)
    elif op == 'duplicate' and isinstance(target[last], list) and target[last]:
        target[last] = target[last] * 40
    return out


@settings(FUZZ, max_examples=examples(600))
@given(st.sampled_from(ALL_CASES), st.lists(st.tuples(st.integers(0, 10**6), mutations),
                                            min_size=1, max_size=3))
def test_mutated_valid_packets(case, steps):
    kind, name = case
    packet = (STATE_PACKETS if kind == 'state' else COMMAND_PACKETS)[name]
    for index, mutation in steps:
        paths = list(_paths(packet))
        if not paths:
            break
        packet = apply(packet, paths[index % len(paths)], mutation)
    both(dumps(packet))


BATCH = COMMAND_PACKETS['pylon_control_batch']
MEMBER_KEYS = [('engineJson', 0), ('flightJson',), ('separationJson',)]


@FUZZ
@given(st.sampled_from(MEMBER_KEYS), st.integers(0, 10**6), mutations)
def test_mutated_batch_members(where, index, mutation):
    batch = copy.deepcopy(BATCH)
    holder, key = (batch['engineJson'], 0) if len(where) == 2 else (batch, where[0])
    member = json.loads(holder[key])
    paths = list(_paths(member))
    member = apply(member, paths[index % len(paths)], mutation)
    holder[key] = dumps(member).decode('utf-8', 'surrogatepass')
    both(dumps(batch))


def test_valid_samples_pass_the_outcome_check():
    for packet in STATE_PACKETS.values():
        outcome(packets.decode_state, packets.validate_state, wire.encode_state(packet))
    for packet in COMMAND_PACKETS.values():
        outcome(packets.decode_command, packets.validate_command, wire.encode_command(packet))
