"""Control authority: leases, priority, sequences, SAS, emergency stop, the state payload."""

from pylon_protocol import packets
from pylon_sim.mod.authority import ControlAuthority, Decision
import pytest

VID = '0123456789abcdef0123456789abcdef'
OTHER_VID = 'fedcba9876543210fedcba9876543210'


def auth_cmd(action, controller='ctl', lease='lease-1', sequence=1, *, vessel=VID,
             priority=0, duration=1.0, suppress=False, **extra):
    cmd = {'type': 'pylon_control_authority_command', 'action': action, 'vesselId': vessel,
           'controllerId': controller, 'leaseId': lease, 'priority': priority,
           'leaseDurationSeconds': duration, 'suppressSas': suppress, 'sequence': sequence}
    cmd.update(extra)
    return cmd


def wrench(controller='ctl', lease='lease-1', sequence=1, *, vessel=VID):
    return {'type': 'pylon_body_wrench_command', 'frame': 'base_link', 'vesselId': vessel,
            'controllerId': controller, 'leaseId': lease, 'force': [0.0, 0.0, 0.0],
            'torque': [0.0, 0.0, 1.0], 'timeoutSeconds': 0.5, 'sequence': sequence}


def send(a, action, *args, now=0.0, active=VID, **kwargs):
    return a.command(auth_cmd(action, *args, **kwargs), active, now)


def ok(reason):
    return Decision(True, reason)


def no(reason):
    return Decision(False, reason)


@pytest.fixture
def a():
    return ControlAuthority()


@pytest.fixture
def owned(a):
    assert send(a, 'acquire', 'ctl', 'lease-1', 1, duration=2.0) == ok('lease_acquired')
    return a


def valid_state(payload):
    """Check a state payload against the bridge's schema and reason list."""
    assert packets.CONTROL_AUTHORITY_STATE(dict(payload)) == payload
    assert payload['reason'] in packets.AUTHORITY_REASONS
    return payload


# -- initial state ------------------------------------------------------------------------
def test_starts_unowned(a):
    assert (a.owned, a.owner, a.emergency_stop, a.sas_suppressed) == (False, None, False,
                                                                       False)
    assert a.expire(100.0) is None
    assert valid_state(a.state(VID, 'Sat', 0.0, 'unowned')) == {
        'vesselId': VID, 'vessel': 'Sat', 'state': 0, 'controllerId': '', 'leaseId': '',
        'priority': 0, 'leaseRemainingSeconds': 0.0, 'sasSuppressed': False,
        'emergencyStop': False, 'lastSequence': 0, 'reason': 'unowned'}


def test_decision_is_frozen():
    d = Decision(True, 'lease_acquired')
    with pytest.raises(AttributeError):
        d.accepted = False


def test_max_identities_must_be_positive():
    with pytest.raises(ValueError):
        ControlAuthority(max_identities=0)


# -- acquire ------------------------------------------------------------------------------
def test_acquire_on_a_free_vessel(a):
    assert send(a, 'acquire', 'ctl', 'lease-1', 3, priority=7, duration=2.5,
                now=10.0) == ok('lease_acquired')
    assert a.owned and a.owner == ('ctl', 'lease-1')
    assert not a.sas_suppressed
    assert valid_state(a.state(VID, 'Sat', 11.0, 'lease_acquired')) == {
        'vesselId': VID, 'vessel': 'Sat', 'state': 1, 'controllerId': 'ctl',
        'leaseId': 'lease-1', 'priority': 7, 'leaseRemainingSeconds': pytest.approx(1.5),
        'sasSuppressed': False, 'emergencyStop': False, 'lastSequence': 3,
        'reason': 'lease_acquired'}


def test_action_is_trimmed_and_case_folded(a):
    assert send(a, '  ACQUIRE ') == ok('lease_acquired')


def test_vessel_id_compared_without_case(a):
    assert send(a, 'acquire', vessel=VID.upper()) == ok('lease_acquired')


def test_priority_defaults_to_zero(a):
    cmd = auth_cmd('acquire')
    del cmd['priority']
    assert a.command(cmd, VID, 0.0) == ok('lease_acquired')
    assert a.state(VID, '', 0.0, 'lease_acquired')['priority'] == 0


def test_equal_priority_keeps_the_first_owner(owned):
    assert send(owned, 'acquire', 'other', 'lease-2', 1) == no(
        'authority_held_by_higher_or_equal_priority')
    assert owned.owner == ('ctl', 'lease-1')


def test_lower_priority_refused(a):
    send(a, 'acquire', 'ctl', 'lease-1', 1, priority=5)
    assert send(a, 'acquire', 'other', 'lease-2', 1, priority=4) == no(
        'authority_held_by_higher_or_equal_priority')
    assert send(a, 'acquire', 'other', 'lease-2', 2, priority=5) == no(
        'authority_held_by_higher_or_equal_priority')
    assert a.owner == ('ctl', 'lease-1')


def test_higher_priority_preempts(owned):
    assert send(owned, 'acquire', 'boss', 'lease-9', 1, priority=1, duration=5.0,
                now=0.5) == ok('lease_acquired')
    assert owned.owner == ('boss', 'lease-9')
    state = owned.state(VID, '', 1.0, 'lease_acquired')
    assert (state['controllerId'], state['leaseId'], state['priority']) == ('boss',
                                                                             'lease-9', 1)
    assert state['leaseRemainingSeconds'] == pytest.approx(4.5)
    # the preempted owner is no longer one
    assert owned.check(wrench('ctl', 'lease-1', 2), VID, 1.0) == no('lease_not_owned')
    assert send(owned, 'renew', 'ctl', 'lease-1', 3, now=1.0) == no('lease_not_owned')
    assert send(owned, 'release', 'ctl', 'lease-1', 4, now=1.0) == no('lease_not_owned')
    # and cannot take it back at its old priority
    assert send(owned, 'acquire', 'ctl', 'lease-1', 5, now=1.0) == no(
        'authority_held_by_higher_or_equal_priority')


def test_same_controller_other_lease_is_another_identity(owned):
    assert send(owned, 'acquire', 'ctl', 'lease-2', 1) == no(
        'authority_held_by_higher_or_equal_priority')
    assert owned.owner == ('ctl', 'lease-1')


def test_acquire_by_the_owner_is_a_renewal(a):
    send(a, 'acquire', 'ctl', 'lease-1', 1, priority=3, duration=1.0, suppress=True)
    assert send(a, 'acquire', 'ctl', 'lease-1', 2, priority=9, duration=4.0, suppress=False,
                now=0.5) == ok('lease_renewed')
    state = a.state(VID, '', 0.5, 'lease_renewed')
    # extended from now; priority and the SAS choice stay those of the acquisition
    assert state['leaseRemainingSeconds'] == pytest.approx(4.0)
    assert state['priority'] == 3 and state['sasSuppressed'] and a.sas_suppressed
    assert a.expire(4.4) is None and a.owned
    assert a.expire(4.5) == 'lease_expired'


@pytest.mark.parametrize('duration', [0.0, 0.09, 10.01, -1.0, float('nan'), float('inf'),
                                      None, '1.0', True])
def test_acquire_with_bad_duration_is_invalid(a, duration):
    assert send(a, 'acquire', duration=duration) == no('invalid_lease')
    assert not a.owned and a.last_sequence(('ctl', 'lease-1')) == 0


def test_acquire_without_duration_is_invalid(a):
    cmd = auth_cmd('acquire')
    del cmd['leaseDurationSeconds']
    assert a.command(cmd, VID, 0.0) == no('invalid_lease')


@pytest.mark.parametrize('duration', [0.1, 10.0, 10])
def test_duration_bounds_are_inclusive(a, duration):
    assert send(a, 'acquire', duration=duration) == ok('lease_acquired')
    assert a.state(VID, '', 0.0, 'x')['leaseRemainingSeconds'] == pytest.approx(duration)


@pytest.mark.parametrize('controller,lease', [
    ('', 'lease-1'), ('ctl', ''), ('   ', 'lease-1'), ('ctl', '\t'), ('c' * 65, 'lease-1'),
    ('ctl', 'l' * 65), (None, 'lease-1'), ('ctl', 7)])
def test_bad_identity_is_invalid(a, controller, lease):
    assert send(a, 'acquire', controller, lease) == no('invalid_lease')
    assert send(a, 'emergency_stop', controller, lease) == no('invalid_lease')
    assert a.check(wrench(controller, lease), VID, 0.0) == no('invalid_lease')
    assert not a.owned and not a.emergency_stop


def test_identity_of_64_chars_is_valid(a):
    assert send(a, 'acquire', 'c' * 64, 'l' * 64) == ok('lease_acquired')


@pytest.mark.parametrize('sequence', [0, -1, 1.0, '1', None, True, 2 ** 63])
def test_bad_sequence_is_invalid(a, sequence):
    assert send(a, 'acquire', sequence=sequence) == no('invalid_lease')
    assert not a.owned


def test_largest_sequence_is_valid(a):
    assert send(a, 'acquire', sequence=2 ** 63 - 1) == ok('lease_acquired')


@pytest.mark.parametrize('priority', [1.5, '2', True, None, 2 ** 31])
def test_bad_priority_is_invalid(a, priority):
    assert send(a, 'acquire', priority=priority) == no('invalid_lease')


def test_bad_suppress_sas_is_invalid(a):
    assert send(a, 'acquire', suppress=1) == no('invalid_lease')
    assert not a.owned


def test_missing_suppress_sas_means_false(a):
    cmd = auth_cmd('acquire')
    del cmd['suppressSas']
    assert a.command(cmd, VID, 0.0) == ok('lease_acquired')
    assert not a.sas_suppressed


@pytest.mark.parametrize('vessel', [OTHER_VID, '', None, VID[:-1]])
def test_wrong_vessel_is_refused(a, vessel):
    assert send(a, 'acquire', vessel=vessel) == no('active_vessel_mismatch')
    assert not a.owned
    # the sequence was not used: the same one is fine on the right vessel
    assert send(a, 'acquire') == ok('lease_acquired')


def test_no_active_vessel_matches_nothing(a):
    assert send(a, 'acquire', vessel='', active='') == no('active_vessel_mismatch')


# -- unsupported action ---------------------------------------------------------------------
@pytest.mark.parametrize('action', ['take', '', None, 1, 'acquire_now'])
def test_unsupported_action(a, action):
    assert a.command(auth_cmd(action), VID, 0.0) == no('unsupported_authority_action')
    assert send(a, 'acquire') == ok('lease_acquired')   # sequence 1 still fresh


def test_missing_action(a):
    cmd = auth_cmd('acquire')
    del cmd['action']
    assert a.command(cmd, VID, 0.0) == no('unsupported_authority_action')


# -- renew and release ----------------------------------------------------------------------
def test_renew_extends_from_now(owned):
    assert send(owned, 'renew', 'ctl', 'lease-1', 2, duration=3.0, now=1.5) == ok(
        'lease_renewed')
    assert owned.state(VID, '', 1.5, 'lease_renewed')['leaseRemainingSeconds'] == \
        pytest.approx(3.0)
    assert owned.expire(2.5) is None and owned.owned      # past the first end (2.0)
    assert owned.expire(4.49) is None
    assert owned.expire(4.5) == 'lease_expired'
    assert not owned.owned


def test_renew_by_a_non_owner(owned):
    assert send(owned, 'renew', 'other', 'lease-2', 1) == no('lease_not_owned')
    assert owned.owner == ('ctl', 'lease-1')


def test_renew_when_unowned(a):
    assert send(a, 'renew') == no('lease_not_owned')


def test_renew_with_bad_duration(owned):
    assert send(owned, 'renew', 'ctl', 'lease-1', 2, duration=11.0) == no('invalid_lease')
    assert send(owned, 'renew', 'ctl', 'lease-1', 2, duration=3.0) == ok('lease_renewed')


def test_renew_after_the_lease_ran_out(owned):
    assert send(owned, 'renew', 'ctl', 'lease-1', 2, now=2.0) == no('lease_not_owned')
    assert not owned.owned
    assert owned.expire(2.0) == 'lease_expired'
    assert owned.expire(2.1) is None


def test_release_by_the_owner(owned):
    assert send(owned, 'release', 'ctl', 'lease-1', 2) == ok('lease_released')
    assert not owned.owned and owned.owner is None
    assert owned.expire(10.0) is None
    state = valid_state(owned.state(VID, '', 0.0, 'lease_released'))
    assert (state['state'], state['controllerId'], state['lastSequence']) == (0, '', 0)


def test_release_by_a_non_owner(owned):
    assert send(owned, 'release', 'other', 'lease-2', 1) == no('lease_not_owned')
    assert owned.owner == ('ctl', 'lease-1')


def test_release_needs_no_duration(owned):
    assert send(owned, 'release', 'ctl', 'lease-1', 2, duration=None) == ok('lease_released')


def test_release_when_unowned(a):
    assert send(a, 'release') == no('lease_not_owned')


# -- expiry -------------------------------------------------------------------------------
def test_lease_expires_on_the_clock(owned):
    assert owned.expire(1.999) is None and owned.owned
    assert owned.state(VID, '', 1.5, 'x')['leaseRemainingSeconds'] == pytest.approx(0.5)
    assert owned.expire(2.0) == 'lease_expired'
    assert not owned.owned
    assert owned.expire(3.0) is None                      # reported once
    assert owned.state(VID, '', 3.0, 'lease_expired')['state'] == 0


def test_state_of_a_run_out_lease_before_expire(owned):
    state = valid_state(owned.state(VID, '', 2.5, 'lease_acquired'))
    assert (state['state'], state['controllerId'], state['leaseRemainingSeconds']) == (
        0, '', 0.0)


def test_another_may_acquire_once_the_lease_ran_out(owned):
    assert send(owned, 'acquire', 'other', 'lease-2', 1, now=2.0) == ok('lease_acquired')
    assert owned.owner == ('other', 'lease-2')
    assert owned.expire(2.0) is None            # the answer already showed the new owner


def test_check_after_expiry(owned):
    assert owned.check(wrench('ctl', 'lease-1', 2), VID, 2.0) == no('lease_not_owned')
    assert owned.expire(2.0) == 'lease_expired'


# -- sequences ----------------------------------------------------------------------------
def test_repeated_and_older_authority_sequences(a):
    assert send(a, 'acquire', 'ctl', 'lease-1', 5) == ok('lease_acquired')
    assert send(a, 'renew', 'ctl', 'lease-1', 5) == no('stale_sequence')
    assert send(a, 'renew', 'ctl', 'lease-1', 4) == no('stale_sequence')
    assert send(a, 'release', 'ctl', 'lease-1', 5) == no('stale_sequence')
    assert a.owned                                   # nothing changed
    assert send(a, 'renew', 'ctl', 'lease-1', 6) == ok('lease_renewed')


def test_one_counter_across_authority_and_other_commands(owned):
    assert owned.check(wrench('ctl', 'lease-1', 10), VID, 0.1) == ok('command_accepted')
    assert owned.check(wrench('ctl', 'lease-1', 10), VID, 0.2) == no('stale_sequence')
    assert owned.check(wrench('ctl', 'lease-1', 9), VID, 0.2) == no('stale_sequence')
    assert send(owned, 'renew', 'ctl', 'lease-1', 10, now=0.3) == no('stale_sequence')
    assert send(owned, 'release', 'ctl', 'lease-1', 7, now=0.3) == no('stale_sequence')
    assert owned.owned
    assert send(owned, 'renew', 'ctl', 'lease-1', 11, now=0.4) == ok('lease_renewed')
    assert owned.check(wrench('ctl', 'lease-1', 11), VID, 0.5) == no('stale_sequence')
    assert owned.check(wrench('ctl', 'lease-1', 12), VID, 0.5) == ok('command_accepted')
    # kinds of formal commands share it too
    motor = {'type': 'pylon_motor_command', 'vesselId': VID, 'controllerId': 'ctl',
             'leaseId': 'lease-1', 'sequence': 12, 'name': 'hinge'}
    assert owned.check(motor, VID, 0.5) == no('stale_sequence')
    motor['sequence'] = 13
    assert owned.check(motor, VID, 0.5) == ok('command_accepted')


def test_each_lease_id_has_its_own_counter(a):
    assert send(a, 'acquire', 'ctl', 'lease-1', 50) == ok('lease_acquired')
    assert send(a, 'release', 'ctl', 'lease-1', 51) == ok('lease_released')
    assert send(a, 'acquire', 'ctl', 'lease-2', 1) == ok('lease_acquired')
    assert a.last_sequence(('ctl', 'lease-1')) == 51
    assert a.last_sequence(('ctl', 'lease-2')) == 1
    assert send(a, 'acquire', 'other', 'lease-1', 1, priority=1) == ok('lease_acquired')


def test_refused_commands_do_not_use_the_sequence(owned):
    assert send(owned, 'acquire', 'other', 'lease-2', 1) == no(
        'authority_held_by_higher_or_equal_priority')
    assert owned.last_sequence(('other', 'lease-2')) == 0
    assert owned.check(wrench('other', 'lease-2', 2), VID, 0.0) == no('lease_not_owned')
    assert owned.last_sequence(('other', 'lease-2')) == 0
    assert send(owned, 'release', 'ctl', 'lease-1', 2) == ok('lease_released')
    assert send(owned, 'acquire', 'other', 'lease-2', 1) == ok('lease_acquired')


def test_stale_comes_before_the_action_rule(owned):
    assert send(owned, 'acquire', 'boss', 'b', 3, priority=5) == ok('lease_acquired')
    assert send(owned, 'acquire', 'boss', 'b', 3, priority=5) == no('stale_sequence')
    assert send(owned, 'emergency_stop', 'boss', 'b', 2) == no('stale_sequence')
    assert not owned.emergency_stop


def test_last_sequence_in_the_state(owned):
    owned.check(wrench('ctl', 'lease-1', 7), VID, 0.1)
    assert owned.state(VID, '', 0.1, 'command_accepted')['lastSequence'] == 7
    send(owned, 'renew', 'ctl', 'lease-1', 8, now=0.2)
    assert owned.state(VID, '', 0.2, 'lease_renewed')['lastSequence'] == 8
    # another identity's numbers are not the owner's
    send(owned, 'acquire', 'other', 'x', 100)
    assert owned.state(VID, '', 0.2, 'x')['lastSequence'] == 8


def test_sequences_survive_release_switch_and_session_change(owned):
    assert owned.vessel_changed(0.1) == 'active_vessel_changed'
    assert send(owned, 'acquire', 'ctl', 'lease-1', 1, now=0.2) == no('stale_sequence')
    assert send(owned, 'acquire', 'ctl', 'lease-1', 2, now=0.2) == ok('lease_acquired')
    assert owned.session_changed(0.3) == 'runtime_session_changed'
    assert send(owned, 'acquire', 'ctl', 'lease-1', 2, now=0.4) == no('stale_sequence')


def test_identity_memory_is_bounded_least_recent_first():
    a = ControlAuthority(max_identities=3)
    for name in 'bcd':       # each preempts the one before it: accepted, so remembered
        assert send(a, 'acquire', name, 'l', 5, priority=ord(name)) == ok('lease_acquired')
    assert [a.last_sequence((n, 'l')) for n in 'bcd'] == [5, 5, 5]
    assert a.check(wrench('b', 'l', 6), VID, 0.0) == no('lease_not_owned')   # not a use
    assert a.check(wrench('d', 'l', 6), VID, 0.0) == ok('command_accepted')
    assert send(a, 'release', 'd', 'l', 7) == ok('lease_released')
    assert send(a, 'acquire', 'b', 'l', 6) == ok('lease_acquired')           # 'b' used
    assert send(a, 'acquire', 'e', 'l', 1, priority=999) == ok('lease_acquired')
    # four identities used, three kept: 'c' (least recently used) was forgotten
    assert [a.last_sequence((n, 'l')) for n in 'bcde'] == [6, 0, 7, 1]
    assert send(a, 'acquire', 'f', 'l', 1, priority=1000) == ok('lease_acquired')
    assert [a.last_sequence((n, 'l')) for n in 'bdef'] == [6, 0, 1, 1]


def test_refused_commands_take_no_room():
    a = ControlAuthority(max_identities=2)
    assert send(a, 'acquire', 'owner', 'l', 10) == ok('lease_acquired')
    for i in range(5):
        assert a.check(wrench(f'x{i}', 'l', 1), VID, 0.0) == no('lease_not_owned')
        assert send(a, 'acquire', f'y{i}', 'l', 1) == no(
            'authority_held_by_higher_or_equal_priority')
    assert a.last_sequence(('owner', 'l')) == 10
    assert send(a, 'renew', 'owner', 'l', 10) == no('stale_sequence')


def test_stop_issuer_is_never_forgotten():
    a = ControlAuthority(max_identities=2)
    for i in range(5):
        assert send(a, 'emergency_stop', f's{i}', 'l', 1) == ok('emergency_stop')
    assert a.last_sequence(('s0', 'l')) == 1 and a.last_sequence(('s4', 'l')) == 1
    assert a.last_sequence(('s1', 'l')) == 0
    assert send(a, 'clear_emergency_stop', 's0', 'l', 1) == no('stale_sequence')
    assert send(a, 'clear_emergency_stop', 's0', 'l', 2) == ok('emergency_stop_cleared')


# -- SAS ----------------------------------------------------------------------------------
def test_sas_untouched_without_suppress_sas(owned):
    assert not owned.sas_suppressed
    assert not owned.state(VID, '', 0.0, 'x')['sasSuppressed']


def test_sas_suppressed_for_the_whole_lease_and_restored_on_release(a):
    send(a, 'acquire', 'ctl', 'lease-1', 1, suppress=True, duration=5.0)
    assert a.sas_suppressed and a.state(VID, '', 0.0, 'x')['sasSuppressed']
    # commands and renewals without the flag do not toggle it
    a.check(wrench('ctl', 'lease-1', 2), VID, 0.1)
    send(a, 'renew', 'ctl', 'lease-1', 3, suppress=False, now=0.2)
    assert a.sas_suppressed
    assert send(a, 'release', 'ctl', 'lease-1', 4, now=0.3) == ok('lease_released')
    assert not a.sas_suppressed
    assert not a.state(VID, '', 0.3, 'lease_released')['sasSuppressed']


def test_sas_restored_on_expiry(a):
    send(a, 'acquire', suppress=True, duration=1.0)
    assert a.sas_suppressed
    assert a.expire(1.0) == 'lease_expired'
    assert not a.sas_suppressed


def test_sas_follows_the_preempting_lease(a):
    send(a, 'acquire', 'ctl', 'lease-1', 1, suppress=True)
    send(a, 'acquire', 'boss', 'b', 1, priority=1, suppress=False)
    assert a.owner == ('boss', 'b') and not a.sas_suppressed


def test_sas_restored_on_switch_and_session_change(a):
    send(a, 'acquire', 'ctl', 'lease-1', 1, suppress=True)
    a.vessel_changed(0.1)
    assert not a.sas_suppressed
    send(a, 'acquire', 'ctl', 'lease-1', 2, suppress=True)
    a.session_changed(0.1)
    assert not a.sas_suppressed


# -- emergency stop -----------------------------------------------------------------------
def test_emergency_stop_by_a_non_owner(a):
    send(a, 'acquire', 'ctl', 'lease-1', 1, priority=100, duration=5.0)
    assert send(a, 'emergency_stop', 'safety_operator', 'stop-1', 1,
                now=0.5) == ok('emergency_stop')
    assert a.emergency_stop and a.sas_suppressed
    assert not a.owned and a.owner is None
    assert a.expire(100.0) is None                   # no lease left to run out
    assert valid_state(a.state(VID, 'Sat', 0.5, 'emergency_stop')) == {
        'vesselId': VID, 'vessel': 'Sat', 'state': 2, 'controllerId': 'safety_operator',
        'leaseId': 'stop-1', 'priority': 0, 'leaseRemainingSeconds': 0.0,
        'sasSuppressed': True, 'emergencyStop': True, 'lastSequence': 1,
        'reason': 'emergency_stop'}


def test_emergency_stop_by_the_owner(owned):
    assert send(owned, 'emergency_stop', 'ctl', 'lease-1', 2) == ok('emergency_stop')
    assert owned.emergency_stop and not owned.owned


def test_emergency_stop_on_a_free_vessel(a):
    assert send(a, 'emergency_stop', 'op', 's', 1) == ok('emergency_stop')
    assert a.emergency_stop


def test_emergency_stop_needs_the_active_vessel(a):
    assert send(a, 'emergency_stop', 'op', 's', 1, vessel=OTHER_VID) == no(
        'active_vessel_mismatch')
    assert not a.emergency_stop


def test_emergency_stop_needs_a_positive_sequence(a):
    assert send(a, 'emergency_stop', 'op', 's', 0) == no('invalid_lease')
    assert not a.emergency_stop


def test_emergency_stop_needs_no_duration(a):
    assert send(a, 'emergency_stop', 'op', 's', 1, duration=None) == ok('emergency_stop')


def test_everything_refused_during_the_stop(a):
    send(a, 'emergency_stop', 'op', 's', 1)
    assert send(a, 'acquire', 'ctl', 'lease-1', 1, priority=2 ** 31 - 1) == no(
        'emergency_stop')
    assert send(a, 'renew', 'ctl', 'lease-1', 2) == no('emergency_stop')
    assert send(a, 'release', 'ctl', 'lease-1', 3) == no('emergency_stop')
    assert a.check(wrench('ctl', 'lease-1', 4), VID, 0.0) == no('emergency_stop')
    assert a.check(wrench('op', 's', 5), VID, 0.0) == no('emergency_stop')
    assert not a.owned and a.emergency_stop
    # refused ones used no sequence
    assert a.last_sequence(('ctl', 'lease-1')) == 0


def test_check_refuses_the_former_owner_during_the_stop(owned):
    send(owned, 'emergency_stop', 'op', 's', 1)
    assert owned.check(wrench('ctl', 'lease-1', 2), VID, 0.1) == no('emergency_stop')


def test_clear_by_another_identity_is_refused(a):
    send(a, 'emergency_stop', 'safety_operator', 'stop-1', 1)
    assert send(a, 'clear_emergency_stop', 'someone_else', 'other', 1) == no(
        'emergency_stop_owner_mismatch')
    assert send(a, 'clear_emergency_stop', 'safety_operator', 'other', 2) == no(
        'emergency_stop_owner_mismatch')
    assert send(a, 'clear_emergency_stop', 'other', 'stop-1', 3) == no(
        'emergency_stop_owner_mismatch')
    assert a.emergency_stop
    assert a.state(VID, '', 0.0, 'emergency_stop_owner_mismatch')['state'] == 2


def test_clear_by_the_issuer_with_a_higher_sequence(a):
    send(a, 'emergency_stop', 'safety_operator', 'stop-1', 1)
    assert send(a, 'clear_emergency_stop', 'safety_operator', 'stop-1', 1) == no(
        'stale_sequence')
    assert a.emergency_stop
    assert send(a, 'clear_emergency_stop', 'safety_operator', 'stop-1', 2) == ok(
        'emergency_stop_cleared')
    assert not a.emergency_stop and not a.owned and not a.sas_suppressed
    assert valid_state(a.state(VID, '', 0.0, 'emergency_stop_cleared')) == {
        'vesselId': VID, 'vessel': '', 'state': 0, 'controllerId': '', 'leaseId': '',
        'priority': 0, 'leaseRemainingSeconds': 0.0, 'sasSuppressed': False,
        'emergencyStop': False, 'lastSequence': 0, 'reason': 'emergency_stop_cleared'}
    # leases work again
    assert send(a, 'acquire', 'ctl', 'lease-1', 1) == ok('lease_acquired')


def test_clear_with_nothing_latched(a):
    assert send(a, 'clear_emergency_stop', 'op', 's', 1) == no('emergency_stop_not_active')
    send(a, 'emergency_stop', 'op', 's', 2)
    send(a, 'clear_emergency_stop', 'op', 's', 3)
    assert send(a, 'clear_emergency_stop', 'op', 's', 4) == no('emergency_stop_not_active')


def test_clear_does_not_leave_the_old_lease(owned):
    send(owned, 'emergency_stop', 'ctl', 'lease-1', 2)
    send(owned, 'clear_emergency_stop', 'ctl', 'lease-1', 3)
    assert not owned.owned
    assert owned.check(wrench('ctl', 'lease-1', 4), VID, 0.1) == no('lease_not_owned')


def test_clear_needs_the_active_vessel(a):
    send(a, 'emergency_stop', 'op', 's', 1)
    assert send(a, 'clear_emergency_stop', 'op', 's', 2, vessel=OTHER_VID) == no(
        'active_vessel_mismatch')
    assert a.emergency_stop


def test_second_stop_keeps_the_first_issuer(a):
    send(a, 'emergency_stop', 'op1', 's', 1)
    assert send(a, 'emergency_stop', 'op2', 's', 1) == ok('emergency_stop')
    assert a.state(VID, '', 0.0, 'emergency_stop')['controllerId'] == 'op1'
    assert send(a, 'clear_emergency_stop', 'op2', 's', 2) == no(
        'emergency_stop_owner_mismatch')
    assert send(a, 'clear_emergency_stop', 'op1', 's', 2) == ok('emergency_stop_cleared')


def test_stop_survives_vessel_and_session_changes(a):
    send(a, 'emergency_stop', 'safety_operator', 'stop-1', 1)
    assert a.vessel_changed(1.0) is None
    assert a.session_changed(2.0) is None
    assert a.emergency_stop and a.sas_suppressed
    assert a.state(OTHER_VID, 'Target', 2.0, 'active_vessel_changed')['state'] == 2
    # cleared by the issuer naming the vessel active now
    assert send(a, 'clear_emergency_stop', 'safety_operator', 'stop-1', 2, vessel=VID,
                active=OTHER_VID) == no('active_vessel_mismatch')
    assert send(a, 'clear_emergency_stop', 'safety_operator', 'stop-1', 2, vessel=OTHER_VID,
                active=OTHER_VID) == ok('emergency_stop_cleared')


# -- vessel switch and session change ---------------------------------------------------------
def test_vessel_change_releases_the_lease(owned):
    assert owned.vessel_changed(0.5) == 'active_vessel_changed'
    assert not owned.owned and owned.expire(5.0) is None
    assert owned.vessel_changed(0.6) is None


def test_session_change_releases_the_lease(owned):
    assert owned.session_changed(0.5) == 'runtime_session_changed'
    assert not owned.owned
    assert owned.session_changed(0.6) is None


def test_nothing_to_release_on_a_change(a):
    assert a.vessel_changed(0.0) is None and a.session_changed(0.0) is None


# -- check --------------------------------------------------------------------------------
def test_check_accepts_the_owner(owned):
    assert owned.check(wrench('ctl', 'lease-1', 2), VID, 0.1) == ok('command_accepted')
    assert owned.last_sequence(('ctl', 'lease-1')) == 2


def test_check_refuses_non_owners(owned):
    assert owned.check(wrench('other', 'lease-2', 2), VID, 0.1) == no('lease_not_owned')
    assert owned.check(wrench('ctl', 'lease-2', 2), VID, 0.1) == no('lease_not_owned')


def test_check_refuses_when_unowned(a):
    separation = {'type': 'pylon_separation_command', 'vesselId': VID,
                  'controllerId': 'rogue', 'leaseId': 'none', 'sequence': 1}
    assert a.check(separation, VID, 0.0) == no('lease_not_owned')


def test_check_refuses_the_wrong_vessel(owned):
    assert owned.check(wrench(vessel=OTHER_VID, sequence=2), VID, 0.1) == no(
        'active_vessel_mismatch')
    assert owned.check(wrench(sequence=2), OTHER_VID, 0.1) == no('active_vessel_mismatch')
    assert owned.check(wrench(sequence=2), VID, 0.1) == ok('command_accepted')


def test_check_refuses_bad_sequences(owned):
    assert owned.check(wrench(sequence=0), VID, 0.1) == no('invalid_lease')
    assert owned.check(wrench(sequence=None), VID, 0.1) == no('invalid_lease')
    assert owned.check(wrench(sequence=1), VID, 0.1) == no('stale_sequence')


def test_check_does_not_change_ownership(owned):
    for seq in range(2, 6):
        owned.check(wrench(sequence=seq), VID, 0.1 * seq)
    assert owned.state(VID, '', 1.0, 'x')['leaseRemainingSeconds'] == pytest.approx(1.0)


# -- every outcome is a known reason -----------------------------------------------------------
def test_every_reason_produced_is_a_protocol_reason(a):
    reasons = set()

    def note(decision):
        reasons.add(decision.reason)
        return decision

    note(send(a, 'bogus'))
    note(send(a, 'acquire', vessel=OTHER_VID))
    note(send(a, 'acquire', duration=0.0))
    note(send(a, 'acquire', 'ctl', 'lease-1', 1, duration=1.0))
    note(send(a, 'acquire', 'ctl', 'lease-1', 1))
    note(send(a, 'acquire', 'ctl', 'lease-1', 2, now=0.1))
    note(send(a, 'renew', 'ctl', 'lease-1', 3, now=0.2))
    note(send(a, 'acquire', 'x', 'y', 1))
    note(send(a, 'renew', 'x', 'y', 2))
    note(a.check(wrench('ctl', 'lease-1', 4), VID, 0.3))
    note(send(a, 'release', 'ctl', 'lease-1', 5, now=0.4))
    note(send(a, 'clear_emergency_stop', 'op', 's', 1))
    note(send(a, 'emergency_stop', 'op', 's', 2))
    note(send(a, 'clear_emergency_stop', 'x', 'y', 3))
    note(send(a, 'clear_emergency_stop', 'op', 's', 3))
    send(a, 'acquire', 'ctl', 'lease-1', 6, now=1.0)
    reasons.add(a.expire(10.0))
    send(a, 'acquire', 'ctl', 'lease-1', 7, now=11.0)
    reasons.add(a.vessel_changed(11.0))
    send(a, 'acquire', 'ctl', 'lease-1', 8, now=11.0)
    reasons.add(a.session_changed(11.0))
    assert reasons == packets.AUTHORITY_REASONS - {'unowned', 'initializing'}
    for reason in reasons:
        valid_state(a.state(VID, 'Sat', 11.0, reason))
