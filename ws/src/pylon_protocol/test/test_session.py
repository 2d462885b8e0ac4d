"""Tests for runtime sessions: mod-side identity, bridge-side gating, UT clock."""

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st
from pylon_protocol.errors import ProtocolError
from pylon_protocol.names import is_hex32
from pylon_protocol.session import (
    ENVELOPE_FIELDS,
    RuntimeSession,
    SessionKey,
    SessionTracker,
    UtClock,
)
from pylon_testing.properties import examples
import pytest

FAST = settings(max_examples=examples(80), deadline=None)

INST_A = 'a' * 32
INST_B = 'b' * 32
EPOCH_1 = '1' * 32
EPOCH_2 = '2' * 32
VESSEL = 'c' * 32
OTHER_VESSEL = 'd' * 32


def beat(instance=INST_A, generation=0, epoch=EPOCH_1, vessel=VESSEL, available=True,
         ut=100.0, seq=None, **extra):
    packet = {
        'runtimeInstance': instance,
        'runtimeGeneration': generation,
        'runtimeEpoch': epoch,
        'runtimeVesselId': vessel,
        'type': 'pylon_session',
        'version': 1,
        'vesselId': vessel,
        'vesselName': 'Rover',
        'available': available,
        'universalTime': ut,
    }
    if seq is not None:
        packet['observationSequence'] = seq
    packet.update(extra)
    return packet


def state(tracker_key, **fields):
    packet = dict(tracker_key.envelope())
    packet.update(type='pylon_imu', version=1)
    packet.update(fields)
    return packet


def opened(**kwargs):
    tracker = SessionTracker()
    result = tracker.observe_heartbeat(beat(**kwargs), now=0.0)
    assert result.accepted
    return tracker


# Heartbeat ordering


def test_first_heartbeat_opens_session():
    tracker = SessionTracker()
    assert tracker.key is None and not tracker.available
    result = tracker.observe_heartbeat(beat(), 1.0)
    assert result.accepted and result.reason == 'opened' and result.session_changed
    assert tracker.key == SessionKey(INST_A, 0, EPOCH_1, VESSEL)
    assert result.key == tracker.key and result.previous_key is None
    assert tracker.available and tracker.last_heartbeat == 1.0


def test_same_key_refresh_is_not_a_change():
    tracker = opened()
    result = tracker.observe_heartbeat(beat(ut=101.0), 0.1)
    assert result.accepted and result.reason == 'refreshed' and not result.session_changed


@pytest.mark.parametrize(
    ('second', 'reason'),
    [
        ({'available': False}, 'availability_changed'),
        ({'generation': 1, 'epoch': EPOCH_2}, 'new_generation'),
        ({'generation': 5, 'epoch': EPOCH_2, 'vessel': OTHER_VESSEL}, 'new_generation'),
        ({'instance': INST_B, 'generation': 0, 'epoch': EPOCH_2}, 'new_instance'),
        ({'instance': INST_B, 'generation': 0, 'epoch': EPOCH_1, 'ut': 1.0}, 'new_instance'),
    ],
)
def test_session_changes(second, reason):
    tracker = opened()
    result = tracker.observe_heartbeat(beat(**second), 0.1)
    assert result.accepted and result.reason == reason and result.session_changed
    assert result.previous_key == SessionKey(INST_A, 0, EPOCH_1, VESSEL)


@pytest.mark.parametrize(
    ('first', 'second', 'reason'),
    [
        ({'generation': 3}, {'generation': 2, 'epoch': EPOCH_2}, 'stale_generation'),
        ({}, {'epoch': EPOCH_2}, 'conflicting_generation'),
        ({}, {'vessel': OTHER_VESSEL}, 'conflicting_generation'),
        ({'ut': 100.0}, {'ut': 99.999}, 'universal_time_decreased'),
        ({'seq': 10}, {'seq': None}, 'missing_observation_sequence'),
        ({'seq': 10}, {'seq': 10}, 'stale_observation_sequence'),
        ({'seq': 10}, {'seq': 9}, 'stale_observation_sequence'),
    ],
)
def test_ignored_heartbeats(first, second, reason):
    tracker = opened(**first)
    key = tracker.key
    result = tracker.observe_heartbeat(beat(**second), 0.1)
    assert not result.accepted and result.reason == reason and not result.session_changed
    assert tracker.key == key and tracker.last_heartbeat == 0.0


@pytest.mark.parametrize(
    ('first', 'second'),
    [
        ({'ut': 100.0}, {'ut': 100.0}),  # equal UT is fine
        ({'seq': None}, {'seq': 3}),  # sequence may start being used
        ({'seq': 10}, {'seq': 11}),
        # a new generation restarts both counters
        ({'seq': 10, 'ut': 5.0}, {'generation': 1, 'epoch': EPOCH_2, 'seq': 0, 'ut': 1.0}),
        ({'seq': 10}, {'generation': 1, 'epoch': EPOCH_2}),  # new key may omit it
    ],
)
def test_accepted_heartbeats(first, second):
    tracker = opened(**first)
    assert tracker.observe_heartbeat(beat(**second), 0.1).accepted


def test_universal_time_rule_restarts_with_new_generation():
    tracker = opened(ut=500.0)
    assert tracker.observe_heartbeat(beat(generation=1, epoch=EPOCH_2, ut=10.0), 0.1).accepted
    assert tracker.last_universal_time == 10.0


def test_superseded_instance_is_retired_forever():
    tracker = opened()
    assert tracker.observe_heartbeat(beat(instance=INST_B, epoch=EPOCH_2), 0.1).accepted
    assert tracker.retired_instances == (INST_A,)
    result = tracker.observe_heartbeat(beat(instance=INST_A, generation=99), 0.2)
    assert not result.accepted and result.reason == 'retired_instance'
    # Even after a third instance and an expiry, A never comes back.
    tracker.observe_heartbeat(beat(instance='e' * 32), 0.3)
    tracker.expire(100.0, 3.0)
    assert tracker.observe_heartbeat(beat(instance=INST_A), 100.1).reason == 'retired_instance'
    assert tracker.observe_heartbeat(beat(instance=INST_B), 100.2).reason == 'retired_instance'


def test_retired_instances_are_bounded_oldest_first():
    tracker = SessionTracker(max_retired=3)
    ids = [f'{i:032x}' for i in range(6)]
    for t, instance in enumerate(ids):
        assert tracker.observe_heartbeat(beat(instance=instance), float(t)).accepted
    assert tracker.retired_instances == tuple(ids[2:5])
    assert tracker.observe_heartbeat(beat(instance=ids[0]), 10.0).accepted  # forgotten


def test_default_retired_bound_is_64():
    tracker = SessionTracker()
    for t in range(100):
        tracker.observe_heartbeat(beat(instance=f'{t:032x}'), float(t))
    assert len(tracker.retired_instances) == 64


@pytest.mark.parametrize(
    'change',
    [
        {'runtimeInstance': ''},
        {'runtimeInstance': 5},
        {'runtimeEpoch': ''},
        {'runtimeEpoch': None},
        {'runtimeVesselId': None},
        {'runtimeGeneration': -1},
        {'runtimeGeneration': True},
        {'runtimeGeneration': 1.0},
        {'runtimeGeneration': '1'},
        {'available': 1},
        {'available': None},
        {'universalTime': math.nan},
        {'universalTime': math.inf},
        {'universalTime': True},
        {'universalTime': '1'},
        {'vesselId': OTHER_VESSEL},
        {'vesselId': None},
        {'observationSequence': -1},
        {'observationSequence': True},
        {'observationSequence': 1.5},
    ],
)
def test_malformed_heartbeat_raises(change):
    packet = beat()
    packet.update(change)
    with pytest.raises(ProtocolError):
        SessionTracker().observe_heartbeat(packet, 0.0)


def test_missing_field_heartbeat_raises():
    for field in ('runtimeInstance', 'runtimeEpoch', 'available', 'universalTime', 'vesselId'):
        packet = beat()
        del packet[field]
        with pytest.raises(ProtocolError):
            SessionTracker().observe_heartbeat(packet, 0.0)
    with pytest.raises(ProtocolError):
        SessionTracker().observe_heartbeat(['not', 'a', 'dict'], 0.0)


def test_empty_vessel_session():
    tracker = opened(vessel='', available=False)
    assert tracker.key.vessel_id == '' and not tracker.available


# Gating of other packets


def test_admit_accepts_matching_packets():
    tracker = opened()
    tracker.admit(state(tracker.key))  # no vesselId: envelope alone
    tracker.admit(state(tracker.key, vesselId=VESSEL))


def test_admit_without_session():
    with pytest.raises(ProtocolError) as info:
        SessionTracker().admit(state(SessionKey(INST_A, 0, EPOCH_1, VESSEL)))
    assert info.value.reason == 'no_session'


def test_admit_unavailable_session():
    tracker = opened(available=False)
    with pytest.raises(ProtocolError) as info:
        tracker.admit(state(tracker.key))
    assert info.value.reason == 'session_unavailable'


def test_admit_after_expiry():
    tracker = opened()
    assert tracker.expire(3.5, 3.0)
    with pytest.raises(ProtocolError) as info:
        tracker.admit(state(tracker.key))
    assert info.value.reason == 'session_unavailable'


@pytest.mark.parametrize(
    'change',
    [
        {'runtimeInstance': INST_B},
        {'runtimeGeneration': 1},
        {'runtimeGeneration': 0.0},
        {'runtimeGeneration': False},
        {'runtimeEpoch': EPOCH_2},
        {'runtimeVesselId': OTHER_VESSEL},
        {'runtimeVesselId': ''},
    ],
)
def test_admit_envelope_mismatch(change):
    tracker = opened()
    packet = state(tracker.key)
    packet.update(change)
    with pytest.raises(ProtocolError) as info:
        tracker.admit(packet)
    assert info.value.reason == 'envelope_mismatch'


@pytest.mark.parametrize('field', ENVELOPE_FIELDS)
def test_admit_missing_envelope_field(field):
    tracker = opened()
    packet = state(tracker.key)
    del packet[field]
    with pytest.raises(ProtocolError) as info:
        tracker.admit(packet)
    assert info.value.reason == 'envelope_mismatch'


@pytest.mark.parametrize('vessel', [OTHER_VESSEL, '', None, 3])
def test_admit_vessel_mismatch(vessel):
    tracker = opened()
    with pytest.raises(ProtocolError) as info:
        tracker.admit(state(tracker.key, vesselId=vessel))
    assert info.value.reason == 'vessel_id_mismatch'


def test_packet_beating_new_heartbeat_is_dropped():
    tracker = opened()
    old_key = tracker.key
    tracker.observe_heartbeat(beat(generation=1, epoch=EPOCH_2), 0.1)
    with pytest.raises(ProtocolError):
        tracker.admit(state(old_key))


# Expiry and commands


def test_expiry_is_strictly_after_timeout_and_reported_once():
    tracker = opened()
    assert not tracker.expire(3.0, 3.0)
    assert tracker.available
    assert tracker.expire(3.0001, 3.0)
    assert tracker.stale and not tracker.available
    assert not tracker.expire(10.0, 3.0)


def test_expire_without_session_is_false():
    assert not SessionTracker().expire(100.0)


def test_reopen_after_expiry_is_a_change():
    tracker = opened(seq=1)
    tracker.expire(5.0, 3.0)
    result = tracker.observe_heartbeat(beat(seq=2, ut=101.0), 5.1)
    assert result.accepted and result.reason == 'reopened' and result.session_changed
    assert tracker.available and not tracker.stale
    # The ordering history survives expiry.
    assert not tracker.observe_heartbeat(beat(seq=2, ut=102.0), 5.2).accepted


def test_ignored_heartbeat_does_not_refresh():
    tracker = opened(ut=100.0)
    tracker.observe_heartbeat(beat(ut=50.0), 2.9)
    assert tracker.expire(3.1, 3.0)


@pytest.mark.parametrize(
    ('setup', 'now', 'expected'),
    [
        ({}, 2.999, True),
        ({}, 3.0, False),  # must be strictly fresher than the timeout
        ({'available': False}, 0.5, False),
    ],
)
def test_can_send_command(setup, now, expected):
    tracker = opened(**setup)
    assert tracker.can_send_command(now, 3.0) is expected


def test_cannot_send_without_session_or_when_stale():
    assert not SessionTracker().can_send_command(0.0)
    tracker = opened()
    tracker.expire(4.0, 3.0)
    assert not tracker.can_send_command(0.1, 3.0)


def test_command_envelope():
    tracker = opened()
    assert tracker.command_envelope(1.0) == tracker.key.envelope()
    with pytest.raises(ProtocolError) as info:
        tracker.command_envelope(10.0)
    assert info.value.reason == 'no_fresh_session'


# Property: random heartbeat streams


heartbeats = st.fixed_dictionaries(
    {
        'instance': st.sampled_from([INST_A, INST_B, 'e' * 32]),
        'generation': st.integers(0, 3),
        'epoch': st.sampled_from([EPOCH_1, EPOCH_2]),
        'vessel': st.sampled_from([VESSEL, OTHER_VESSEL, '']),
        'available': st.booleans(),
        'ut': st.floats(0, 10),
        'seq': st.none() | st.integers(0, 5),
    }
)


@FAST
@given(st.lists(st.tuples(heartbeats, st.floats(0, 2)), max_size=30))
def test_random_heartbeat_streams_keep_invariants(stream):
    tracker = SessionTracker()
    now = 0.0
    retired: set[str] = set()
    last = {}
    for fields, gap in stream:
        now += gap
        tracker.expire(now, 3.0)
        before = tracker.key
        result = tracker.observe_heartbeat(beat(**fields), now)
        if not result.accepted:
            assert tracker.key == before
            continue
        key = tracker.key
        assert key.instance not in retired
        if before is not None and before.instance != key.instance:
            retired.add(before.instance)
        if before is not None and before.instance == key.instance:
            assert key.generation >= before.generation
        if key == before:
            prev_ut, prev_seq = last[key]
            assert fields['ut'] >= prev_ut
            if prev_seq is not None:
                assert fields['seq'] is not None and fields['seq'] > prev_seq
        else:
            assert result.session_changed
        last[key] = (fields['ut'], fields['seq'])


@FAST
@given(st.dictionaries(st.sampled_from(
    ['runtimeInstance', 'runtimeGeneration', 'runtimeEpoch', 'runtimeVesselId', 'vesselId',
     'available', 'universalTime', 'observationSequence']),
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats() | st.text(max_size=3)
    | st.lists(st.integers(), max_size=2)))
def test_arbitrary_heartbeat_only_raises_protocol_error(packet):
    tracker = opened()
    try:
        tracker.observe_heartbeat(packet, 1.0)
    except ProtocolError:
        pass
    try:
        tracker.admit(packet)
    except ProtocolError:
        pass


# UT clock


def test_ut_clock_fixed_offset_never_rebased():
    clock = UtClock()
    assert clock.offset is None
    assert clock.stamp(1000.0, 50.0) == 50.0
    # A late packet keeps its UT interval, not its arrival interval.
    assert clock.stamp(1000.1, 50.9) == pytest.approx(50.1)
    assert clock.stamp(1000.2, 50.2) == pytest.approx(50.2)
    assert clock.offset == pytest.approx(-950.0)


def test_ut_clock_reset_and_unusable_ut():
    clock = UtClock()
    assert clock.stamp(None, 7.0) == 7.0
    assert clock.stamp(math.nan, 8.0) == 8.0
    assert clock.stamp(True, 8.5) == 8.5
    assert clock.offset is None  # unusable samples do not fix the offset
    clock.stamp(10.0, 20.0)
    clock.reset()
    assert clock.stamp(10.0, 30.0) == 30.0


# Mod side


def make_runtime(seed=1):
    session = RuntimeSession(random.Random(seed))
    session.observe(VESSEL, 11, 'Kerbin', True, (0.0, 0.0, 0.0), 0.0, 0.02, 100.0)
    return session


BASE = {'active_vessel_id': VESSEL, 'topology_hash': 11, 'main_body': 'Kerbin', 'available': True,
            'body_relative_position': (0.0, 0.0, 0.0), 'max_speed': 0.0, 'dt': 0.02, 'ut': 100.0}


def test_runtime_identity_is_guid_hex_and_deterministic():
    a, b = RuntimeSession(random.Random(3)), RuntimeSession(random.Random(3))
    assert is_hex32(a.instance) and is_hex32(a.epoch) and a.instance != a.epoch
    assert (a.instance, a.epoch) == (b.instance, b.epoch)
    assert a.generation == 0


def test_first_observation_is_baseline():
    session = RuntimeSession(random.Random(0))
    epoch = session.epoch
    assert not session.observe(**BASE)
    assert session.generation == 0 and session.epoch == epoch


def test_unchanged_state_does_not_reset():
    session = make_runtime()
    assert not session.observe(**{**BASE, 'ut': 100.02})
    assert session.generation == 0


@pytest.mark.parametrize(
    'change',
    [
        {'active_vessel_id': OTHER_VESSEL},
        {'active_vessel_id': None},
        {'topology_hash': 12},
        {'main_body': 'Mun'},
        {'available': False},
        {'ut': 99.0},
        {'body_relative_position': (50.01, 0.0, 0.0)},
        {'body_relative_position': (0.0, 70.0, 0.0), 'max_speed': 100.0, 'dt': 0.09},
    ],
)
def test_reset_triggers(change):
    session = make_runtime()
    instance, epoch = session.instance, session.epoch
    assert session.observe(**{**BASE, **change})
    assert session.generation == 1 and session.epoch != epoch and is_hex32(session.epoch)
    assert session.instance == instance


@pytest.mark.parametrize(
    'change',
    [
        {'body_relative_position': (50.0, 0.0, 0.0)},  # exactly the threshold
        {'body_relative_position': (0.0, 70.0, 0.0), 'max_speed': 100.0, 'dt': 0.1},
        {'ut': 100.0},  # equal UT
        {'body_relative_position': None},
        {'body_relative_position': (math.nan, 0.0, 0.0)},
    ],
)
def test_no_reset_within_limits(change):
    session = make_runtime()
    assert not session.observe(**{**BASE, **change})


def test_relocation_ignored_while_unavailable():
    session = RuntimeSession(random.Random(0))
    session.observe(**{**BASE, 'available': False})
    assert not session.observe(**{**BASE, 'available': False,
                                  'body_relative_position': (1e6, 0.0, 0.0)})


def test_envelope_order_and_values():
    session = make_runtime()
    envelope = session.envelope()
    assert tuple(envelope) == ENVELOPE_FIELDS
    assert envelope == {'runtimeInstance': session.instance, 'runtimeGeneration': 0,
                        'runtimeEpoch': session.epoch, 'runtimeVesselId': VESSEL}
    session.observe(**{**BASE, 'active_vessel_id': None, 'available': False})
    assert session.envelope()['runtimeVesselId'] == ''


def command_for(session, **change):
    command = {'type': 'pylon_body_wrench_command', 'version': 1}
    command.update(session.envelope())
    command.update(change)
    return command


def test_accept_command_current_envelope():
    session = make_runtime()
    assert session.accept_command(command_for(session))
    assert session.accept_command(command_for(session, runtimeGeneration=0.0))  # numeric


@pytest.mark.parametrize(
    'change',
    [
        {'runtimeInstance': INST_B},
        {'runtimeGeneration': 1},
        {'runtimeGeneration': '0'},
        {'runtimeGeneration': False},
        {'runtimeEpoch': EPOCH_2},
        {'runtimeVesselId': OTHER_VESSEL},
        {'runtimeVesselId': VESSEL.upper()},  # exact string compare
        {'version': 2},
        {'version': '1'},
        {'type': 'ksp_body_wrench_command'},
        {'type': None},
    ],
)
def test_accept_command_rejects(change):
    session = make_runtime()
    assert not session.accept_command(command_for(session, **change))


def test_accept_command_requires_available_and_fields():
    session = make_runtime()
    command = command_for(session)
    session.observe(**{**BASE, 'available': False})
    assert not session.accept_command(command_for(session))
    assert not session.accept_command(command)
    assert not session.accept_command(None)


def test_mod_and_bridge_interoperate():
    mod = make_runtime()
    tracker = SessionTracker()
    heartbeat = {**mod.envelope(), 'type': 'pylon_session', 'version': 1, 'vesselId': VESSEL,
                 'available': mod.available, 'universalTime': 100.0}
    assert tracker.observe_heartbeat(heartbeat, 0.0).accepted
    tracker.admit({**mod.envelope(), 'type': 'pylon_imu', 'version': 1, 'vesselId': VESSEL})
    command = {'type': 'pylon_motor_command', 'version': 1,
               **tracker.command_envelope(0.5)}
    assert mod.accept_command(command)
    mod.observe(**{**BASE, 'topology_hash': 99})  # staging -> new epoch
    assert not mod.accept_command(command)
