"""Vessel session rules: generations, CHANGED then ACTIVE, STALE and recovery, the model."""

from pylon_bridge import vessel_session as lc
from pylon_interfaces.msg import VesselLifecycle
from pylon_protocol.session import SessionKey

ACTIVE, CHANGED, STALE, UNAVAILABLE = lc.ACTIVE, lc.CHANGED, lc.STALE, lc.UNAVAILABLE
Lifecycle = lc.VesselSession

A, B = 'a' * 32, 'b' * 32


def key(generation=0, epoch='e0', vessel=A, instance='i0'):
    return SessionKey(instance, generation, epoch, vessel)


def test_starts_unavailable_then_changed_then_active():
    life = Lifecycle('pylon_ground_truth_enu')
    assert life.current.state == UNAVAILABLE and life.current.generation == 0
    state = life.session(key(), 'Sat', True, 100.0, changed=True, reopened=False)
    assert (state.state, state.generation, state.reason) == (CHANGED, 1, lc.REASON_SESSION_STARTED)
    assert state.vessel_id == A and state.world_frame == 'pylon_ground_truth_enu'
    state = life.measured()
    assert (state.state, state.reason) == (ACTIVE, lc.REASON_MEASURING)
    assert life.measured() is None
    assert life.session(key(), 'Sat', True, 100.1, changed=False, reopened=False) is None


def test_the_next_heartbeat_makes_the_session_active_without_a_measurement():
    life = Lifecycle('')
    life.session(key(), 'Sat', True, 100.0, changed=True, reopened=False)
    state = life.session(key(), 'Sat', True, 100.1, changed=False, reopened=False)
    assert (state.state, state.generation, state.reason) == (
        ACTIVE, 1, lc.REASON_SESSION_CURRENT)
    assert life.measured() is None
    assert life.session(key(), 'Sat', True, 100.2, changed=False, reopened=False) is None


def started() -> Lifecycle:
    life = Lifecycle('')
    life.session(key(), 'Sat', True, 100.0, changed=True, reopened=False)
    life.measured()
    return life


def test_each_runtime_change_bumps_the_generation_with_its_reason():
    life = started()
    cases = [
        (key(1, 'e1', B), 100.2, False, lc.REASON_VESSEL_CHANGED),
        (key(2, 'e2', B), 50.0, False, lc.REASON_TIME_REWIND),
        (key(3, 'e3', B), 50.1, False, lc.REASON_RUNTIME_RESET),
        (key(0, 'e4', B, instance='i1'), 50.2, False, lc.REASON_RUNTIME_RESTARTED),
    ]
    generation = life.current.generation
    for new_key, ut, reopened, reason in cases:
        state = life.session(new_key, 'X', True, ut, changed=True, reopened=reopened)
        generation += 1
        assert (state.state, state.generation, state.reason) == (CHANGED, generation, reason)
        assert life.measured().state == ACTIVE


def test_stale_and_recovery():
    life = started()
    state = life.stale()
    assert (state.state, state.reason) == (STALE, lc.REASON_SESSION_TIMEOUT)
    assert life.stale() is None
    state = life.session(key(), 'Sat', True, 110.0, changed=True, reopened=True)
    assert (state.state, state.generation, state.reason) == (CHANGED, 2,
                                                            lc.REASON_SESSION_RECOVERED)


def test_unavailable_while_packed_and_new_generation_when_back():
    life = started()
    state = life.session(key(1, 'e1'), 'Sat', False, 101.0, changed=True, reopened=False)
    assert (state.state, state.reason, state.generation) == (UNAVAILABLE,
                                                            lc.REASON_VESSEL_UNAVAILABLE, 1)
    state = life.session(key(2, 'e2'), 'Sat', True, 102.0, changed=True, reopened=False)
    assert (state.state, state.generation) == (CHANGED, 2)


def test_model_readiness_and_origin_sequence():
    life = started()
    state = life.model('m' * 64)
    assert state.model_ready and state.model_id == 'm' * 64
    assert state.reason == lc.REASON_MODEL_READY
    assert life.model('m' * 64) is None
    origin = life.current.origin_sequence
    assert life.mod_origin(5) is None                  # first origin of the generation
    assert life.mod_origin(5) is None
    assert life.mod_origin(6).origin_sequence == origin + 1
    state = life.session(key(1, 'e1', B), 'Other', True, 101.0, changed=True, reopened=False)
    assert not state.model_ready and state.model_id == ''
    assert state.origin_sequence == origin + 2


def test_a_rewind_is_seen_against_the_newest_measurement():
    life = Lifecycle('pylon_ground_truth_enu')
    life.session(key(), 'Sat', True, 100.0, changed=True, reopened=False)
    life.note_ut(100.3)                       # measurements after the last heartbeat
    state = life.session(key(generation=1, epoch='e1'), 'Sat', True, 100.1, changed=True,
                         reopened=False)
    assert state.reason == lc.REASON_TIME_REWIND


def test_states_are_the_message_constants_and_the_message_carries_every_field():
    assert (UNAVAILABLE, ACTIVE, CHANGED, STALE) == (
        VesselLifecycle.STATE_UNAVAILABLE, VesselLifecycle.STATE_ACTIVE,
        VesselLifecycle.STATE_CHANGED, VesselLifecycle.STATE_STALE)
    state = started().current
    msg = lc.lifecycle_message(state, VesselLifecycle().header.stamp)
    assert (msg.state, msg.vessel_id, msg.generation, msg.reason) == (
        ACTIVE, A, 1, lc.REASON_MEASURING)
    assert lc.status_text(state) == f'active: Sat ({A}) generation 1, measuring'
