"""The runtime envelope: validation, wire names and where it goes in a datagram."""

import dataclasses

from pylon_protocol import envelope
from pylon_protocol.envelope import Envelope
from pylon_protocol.errors import ProtocolError
import pytest

INSTANCE = '0123456789abcdef0123456789abcdef'
EPOCH = 'fedcba9876543210fedcba9876543210'
VESSEL = '5f3c2a1b9d8e4f7a6b5c4d3e2f1a0b9c'
WIRE = {'runtimeInstance': INSTANCE, 'runtimeGeneration': 4, 'runtimeEpoch': EPOCH,
        'runtimeVesselId': VESSEL}


def test_to_wire_gives_the_four_camel_case_fields_in_order():
    env = Envelope(INSTANCE, 4, EPOCH, VESSEL)
    assert env.to_wire() == WIRE
    assert list(env.to_wire()) == list(envelope.ENVELOPE_KEYS)


def test_from_packet_round_trip_and_ignores_other_fields():
    env = Envelope.from_packet({**WIRE, 'type': 'pylon_imu', 'x': 1})
    assert env == Envelope(runtime_instance=INSTANCE, runtime_generation=4,
                           runtime_epoch=EPOCH, runtime_vessel_id=VESSEL)


def test_empty_vessel_id_and_extreme_generations_are_valid():
    assert Envelope(INSTANCE, 0, EPOCH, '').runtime_vessel_id == ''
    assert Envelope(INSTANCE, 2**64 - 1, EPOCH, VESSEL).runtime_generation == 2**64 - 1


def test_envelope_is_frozen_and_hashable():
    env = Envelope(INSTANCE, 4, EPOCH, VESSEL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        env.runtime_generation = 5
    assert len({env, Envelope(INSTANCE, 4, EPOCH, VESSEL)}) == 1


@pytest.mark.parametrize('key, value, reason', [
    ('runtimeInstance', '', 'bad_value'),
    ('runtimeInstance', 5, 'bad_type'),
    ('runtimeInstance', None, 'bad_type'),
    ('runtimeEpoch', '', 'bad_value'),
    ('runtimeEpoch', ['x'], 'bad_type'),
    ('runtimeGeneration', -1, 'out_of_range'),
    ('runtimeGeneration', 2**64, 'out_of_range'),
    ('runtimeGeneration', 2**4000, 'out_of_range'),
    ('runtimeGeneration', True, 'bad_type'),
    ('runtimeGeneration', 1.0, 'bad_type'),
    ('runtimeGeneration', '4', 'bad_type'),
    ('runtimeVesselId', None, 'bad_type'),
    ('runtimeVesselId', 7, 'bad_type'),
])
def test_from_packet_rejections(key, value, reason):
    with pytest.raises(ProtocolError) as info:
        Envelope.from_packet({**WIRE, key: value})
    assert (info.value.reason, info.value.field) == (reason, key)


@pytest.mark.parametrize('key', envelope.ENVELOPE_KEYS)
def test_from_packet_requires_every_field(key):
    packet = dict(WIRE)
    del packet[key]
    with pytest.raises(ProtocolError) as info:
        Envelope.from_packet(packet)
    assert (info.value.reason, info.value.field) == ('missing_field', key)


def test_constructor_validates_too():
    with pytest.raises(ProtocolError):
        Envelope('', 0, EPOCH, VESSEL)


def test_prepend_puts_the_envelope_first_as_the_mod_does():
    env = Envelope(INSTANCE, 4, EPOCH, VESSEL)
    payload = {'type': 'pylon_imu', 'version': 1, 'runtimeGeneration': 99, 'a': 1}
    out = envelope.prepend(env, payload)
    assert list(out) == [*envelope.ENVELOPE_KEYS, 'type', 'version', 'a']
    assert out['runtimeGeneration'] == 4
    assert payload['runtimeGeneration'] == 99   # input untouched


def test_append_puts_the_envelope_last_as_the_bridge_does():
    env = Envelope(INSTANCE, 4, EPOCH, VESSEL)
    payload = {'type': 'pylon_x', 'runtimeEpoch': 'old', 'version': 1, 'a': 1}
    out = envelope.append(payload, env)
    assert list(out) == ['type', 'version', 'a', *envelope.ENVELOPE_KEYS]
    assert out['runtimeEpoch'] == EPOCH
    assert payload['runtimeEpoch'] == 'old'


def test_matches_compares_all_four_fields_exactly():
    env = Envelope(INSTANCE, 4, EPOCH, VESSEL)
    assert env.matches({**WIRE, 'type': 'pylon_x'})
    for key, value in [('runtimeInstance', INSTANCE.upper()), ('runtimeGeneration', 5),
                       ('runtimeGeneration', 4.0), ('runtimeEpoch', EPOCH[::-1]),
                       ('runtimeVesselId', '')]:
        assert not env.matches({**WIRE, key: value}), key
    assert not env.matches({'type': 'pylon_x'})
