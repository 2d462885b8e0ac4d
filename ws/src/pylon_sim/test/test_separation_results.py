"""Separation operations: the journal, ``pylon_separation_result`` and the query."""

from pylon_protocol import names
from pylon_protocol.envelope import Envelope
from pylon_protocol.packets import SEPARATION_RESULT_RETENTION_SEC
from pylon_sim.mod.separation_journal import operation_of, SeparationJournal
import pytest

DECOUPLER = 'decoupler_9900002_0'
CLAMP = 'launch_clamp_9900005_0'


def separate(h, name=DECOUPLER, **operation):
    h.send('pylon_actuator_command', actuatorType='separation', name=name, separate=True,
           enabled=True, timeoutSeconds=0.5, **h.identity(), **operation)


def query(h, result):
    h.send('pylon_separation_query', **{k: result[k] for k in (
        'operationId', 'operationInstance', 'operationEpoch', 'operationVesselId')})


def results(h, operation_id=None):
    return [p for p in h.of('pylon_separation_result')
            if operation_id is None or p['operationId'] == operation_id]


def test_a_separation_succeeds_is_repeated_and_answers_a_query(harness):
    h = harness('launchpad')
    h.acquire()
    commanded = h.sim.envelope
    separate(h, operationId='stage-1')
    h.frames(1)
    [first] = results(h)
    envelope = h.sim.envelope
    assert (first['completed'], first['success'], first['retained'], first['reason']) == (
        True, True, True, 'separated')
    # the split changed the part topology: it completes in the session that reset to
    assert first['operationInstance'] == envelope.runtime_instance
    assert first['operationEpoch'] == commanded.runtime_epoch != envelope.runtime_epoch
    assert first['resultEpoch'] == envelope.runtime_epoch
    assert first['originalGeneration'] == commanded.runtime_generation
    assert first['resultGeneration'] == envelope.runtime_generation == \
        commanded.runtime_generation + 1
    assert first['activeVesselId'] == first['operationVesselId'] == h.vessel_id
    [debris] = [v for v in h.sim.world.vessels.values() if v.key != 'rocket']
    assert first['resultingVesselIds'] == [h.vessel_id, debris.vessel_id]
    assert (first['name'], first['controllerId'], first['sequence']) == (
        DECOUPLER, 'ctl', h.sequence)
    assert first['retentionRemainingSeconds'] == SEPARATION_RESULT_RETENTION_SEC
    h.run(12.0)
    repeats = results(h)[1:]
    # every 0.5 s for 10 s after completion, then no more
    assert len(repeats) == 20
    times = [h.capture.frames[i] for i, p in enumerate(h.capture.packets)
             if p['type'] == 'pylon_separation_result']
    assert {b - a for a, b in zip(times, times[1:])} == {25}        # frames of 0.02 s
    assert all({k: v for k, v in p.items() if k != 'retentionRemainingSeconds'}
               == {k: v for k, v in first.items() if k != 'retentionRemainingSeconds'}
               for p in repeats)
    assert repeats[-1]['retentionRemainingSeconds'] == pytest.approx(590.0, abs=0.1)
    query(h, first)
    h.frames(1)
    answer = results(h)[-1]
    assert answer['retained'] and answer['success'] and answer['reason'] == 'separated'
    assert answer['retentionRemainingSeconds'] == pytest.approx(588.0, abs=0.1)


def test_outcomes_of_separations_that_cannot_happen(harness):
    h = harness('launchpad')
    h.acquire()
    separate(h, operationId='a')
    separate(h, operationId='b')                       # the same decoupler again
    separate(h, name='decoupler_1_0', operationId='c')  # no such separator
    separate(h, name=CLAMP, operationId='a')           # a's id for another command
    h.frames(1)
    got = {(p['operationId'], p['name']): p for p in results(h)}
    assert got[('a', DECOUPLER)]['reason'] == 'separated'
    unavailable = got[('b', DECOUPLER)]
    assert (unavailable['completed'], unavailable['success'], unavailable['retained'],
            unavailable['reason']) == (True, False, True, 'actuator_unavailable')
    assert unavailable['resultingVesselIds'] == []
    assert got[('c', 'decoupler_1_0')]['reason'] == 'actuator_not_found'
    conflict = got[('a', CLAMP)]
    assert (conflict['reason'], conflict['retained']) == ('operation_id_conflict', False)
    assert CLAMP not in h.sim.control.typed(h.sim.world.active).separated_ids()
    # a retry of the same command gets the journal's result; nothing fires twice. The
    # split reset the session, so the retry names the operation's original identity
    first = got[('a', DECOUPLER)]
    h.send('pylon_actuator_command', actuatorType='separation', name=DECOUPLER,
           separate=True, enabled=True, timeoutSeconds=0.5,
           **{k: first[k] for k in ('operationId', 'operationInstance', 'operationEpoch',
                                    'operationVesselId')}, **h.identity())
    h.capture.clear()
    h.frames(1)
    [retry] = results(h, 'a')
    assert retry['reason'] == 'separated' and retry['sequence'] == got[('a', DECOUPLER)][
        'sequence']


def test_refused_separations_carry_the_authority_reason(harness):
    h = harness('launchpad')
    separate(h, operationId='early')                     # no lease yet
    h.frames(1)
    [refused] = results(h)
    assert (refused['reason'], refused['completed'], refused['success'],
            refused['retained']) == ('lease_not_owned', True, False, False)
    h.acquire()
    separate(h, operationId='early')                     # retried under the lease: it acts
    h.frames(1)
    assert results(h)[-1]['reason'] == 'separated'
    assert h.sim.control.refused[('pylon_actuator_command', 'lease_not_owned')] == 1


def test_an_empty_operation_id_is_the_legacy_one(harness):
    h = harness('launchpad')
    h.acquire()
    separate(h)
    h.frames(1)
    [result] = results(h)
    assert result['operationId'] == names.legacy_operation_id('ctl', 'lease-1', DECOUPLER,
                                                              h.sequence)
    assert result['operationVesselId'] == h.vessel_id


def test_an_unknown_operation_is_not_retained(harness):
    h = harness('launchpad')
    h.frames(1)
    h.send('pylon_separation_query', operationId='never', operationInstance='x',
           operationEpoch='y', operationVesselId='z')
    h.frames(1)
    [answer] = results(h)
    assert (answer['completed'], answer['success'], answer['retained'], answer['reason']) == (
        True, False, False, 'result_not_retained')


def test_results_are_repeated_under_the_current_envelope(harness):
    h = harness('launchpad')
    h.acquire()
    commanded = h.sim.envelope
    separate(h, operationId='before-switch')
    h.frames(1)
    old = h.sim.envelope                                     # after the split's reset
    h.sim.admin({'cmd': 'revert'})                           # a new epoch
    h.capture.clear()
    h.run(1.0)
    repeats = results(h, 'before-switch')
    assert repeats and all(p['runtimeEpoch'] != old.runtime_epoch for p in repeats)
    assert all(p['operationEpoch'] == commanded.runtime_epoch for p in repeats)
    assert all(p['resultEpoch'] == old.runtime_epoch for p in repeats)
    assert all(p['originalGeneration'] == commanded.runtime_generation for p in repeats)


SESSION = Envelope('a' * 32, 3, 'b' * 32, 'c' * 32)


def command(operation_id, name=DECOUPLER, sequence=1):
    return {'vesselId': 'c' * 32, 'controllerId': 'ctl', 'leaseId': 'l', 'sequence': sequence,
            'name': name, 'operationId': operation_id, 'operationInstance': '',
            'operationEpoch': '', 'operationVesselId': ''}


def test_a_full_journal_refuses_and_completed_results_expire_after_600_s():
    journal = SeparationJournal(capacity=2)
    for i, now in ((0, 0.0), (1, 100.0)):
        entry = journal.begin(operation_of(command(f'op{i}'), SESSION), now)
        journal.complete(entry, True, 'separated', SESSION, now)
    assert journal.begin(operation_of(command('op2'), SESSION), 200.0) is None   # full
    assert journal.lookup(operation_of(command('op0'), SESSION).key, 599.0) is not None
    assert journal.lookup(operation_of(command('op0'), SESSION).key, 600.0) is None
    assert journal.begin(operation_of(command('op2'), SESSION), 600.0) is not None


def test_an_operation_from_another_epoch_has_original_generation_zero():
    other = {**command('x'), 'operationEpoch': 'd' * 32}
    assert operation_of(other, SESSION).generation == 0
    assert operation_of(command('x'), SESSION).generation == 3
    assert operation_of({**command('x'), 'vesselId': 'has blanks'}, SESSION) is None
