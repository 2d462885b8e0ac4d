"""Tests of the pure lease client."""

import itertools

import numpy as np
from pylon_sim.mod.authority import ControlAuthority
from pylon_vehicle_control import lease as ls
from pylon_vehicle_control.lease import LeaseClient
import pytest

VESSEL = '5a7e1f0c3b2d4e6f8a9b0c1d2e3f4a5b'


def make_client(**kwargs):
    ids = (f'lease-{n}' for n in itertools.count(1))
    return LeaseClient('ctl', lease_id_factory=lambda _c: next(ids), **kwargs)


def to_payload(cmd):
    action = {1: 'acquire', 2: 'renew', 3: 'release'}[cmd.action]
    return {'action': action, 'vesselId': cmd.vessel_id, 'controllerId': cmd.controller_id,
            'leaseId': cmd.lease_id, 'sequence': cmd.sequence, 'priority': cmd.priority,
            'leaseDurationSeconds': cmd.lease_duration_sec, 'suppressSas': cmd.suppress_sas}


class Ksp:
    """The simulator's authority, answering with authority states."""

    def __init__(self):
        self.auth = ControlAuthority()

    def send(self, client, cmds, now):
        events = []
        for cmd in cmds:
            decision = self.auth.command(to_payload(cmd), VESSEL, now)
            events += self.publish(client, decision.reason, now).events
        return events

    def publish(self, client, reason, now):
        self.auth.expire(now)
        owner = self.auth.owner or ('', '')
        state = 1 if self.auth.owned else 0
        return client.on_authority(state, owner[0], owner[1], VESSEL, reason, now,
                                   self.auth.last_sequence(owner) if owner[0] else None)


def test_waits_for_an_active_vessel_then_acquires_and_confirms():
    c = make_client()
    assert c.tick(0.0).commands == []
    assert c.on_lifecycle(ls.LIFECYCLE_UNAVAILABLE, '', 1, 0.0).commands == []
    up = c.on_lifecycle(ls.LIFECYCLE_ACTIVE, VESSEL, 1, 0.1)
    [acq] = up.commands
    assert (acq.action, acq.vessel_id, acq.controller_id, acq.lease_id, acq.sequence) == (
        ls.ACTION_ACQUIRE, VESSEL, 'ctl', 'lease-1', 1)
    assert not c.owns(0.1)
    # another identity's OWNED state does not count
    assert c.on_authority(1, 'ctl', 'lease-0', VESSEL, 'lease_acquired', 0.15).events == []
    assert c.on_authority(1, 'other', 'lease-1', VESSEL, 'lease_acquired', 0.15).events == []
    assert not c.owns(0.15)
    up = c.on_authority(1, 'ctl', 'lease-1', VESSEL, 'lease_acquired', 0.2, 1)
    assert up.events == ['acquired'] and c.owns(0.2)


def test_renews_every_quarter_and_sequence_is_shared():
    ksp, c = Ksp(), make_client(lease_duration_sec=1.0)
    t = 0.0
    ksp.send(c, c.on_lifecycle(ls.LIFECYCLE_ACTIVE, VESSEL, 1, t).commands, t)
    assert c.owns(t)
    renew_times, sequences = [], [1]
    while t < 5.0:
        t = round(t + 0.05, 10)
        wrench_seq = c.next_sequence()          # a wrench command each period
        assert ksp.auth.check({'vesselId': VESSEL, 'controllerId': 'ctl',
                               'leaseId': c.lease_id, 'sequence': wrench_seq},
                              VESSEL, t).accepted
        sequences.append(wrench_seq)
        cmds = c.tick(t).commands
        for cmd in cmds:
            assert cmd.action == ls.ACTION_RENEW
            renew_times.append(t)
            sequences.append(cmd.sequence)
        assert not ksp.send(c, cmds, t)
        assert c.owns(t)
    assert sequences == sorted(sequences) and len(set(sequences)) == len(sequences)
    gaps = [b - a for a, b in zip(renew_times, renew_times[1:])]
    assert all(g == pytest.approx(0.25) for g in gaps)


def test_expires_without_confirmed_renewal_and_reacquires_with_new_lease_id():
    c = make_client(lease_duration_sec=1.0)
    c.on_lifecycle(ls.LIFECYCLE_ACTIVE, VESSEL, 1, 0.0)
    c.on_authority(1, 'ctl', 'lease-1', VESSEL, 'lease_acquired', 0.0, 1)
    for t in (0.25, 0.5, 0.75):
        assert [cmd.action for cmd in c.tick(t).commands] == [ls.ACTION_RENEW]
    assert c.owns(0.99)
    up = c.tick(1.0)                          # no renewal was ever confirmed
    assert up.events == ['lost:lease_expired']
    [acq] = up.commands
    assert acq.action == ls.ACTION_ACQUIRE and acq.lease_id == 'lease-2'
    assert acq.sequence == 1                  # fresh counter for the new identity
    assert not c.owns(1.0)


def test_preemption_is_a_loss_and_refused_acquire_retries():
    c = make_client(lease_duration_sec=1.0)
    c.on_lifecycle(ls.LIFECYCLE_ACTIVE, VESSEL, 1, 0.0)
    c.on_authority(1, 'ctl', 'lease-1', VESSEL, 'lease_acquired', 0.0, 1)
    up = c.on_authority(1, 'boss', 'x', VESSEL, 'lease_acquired', 0.1)
    assert up.events == ['lost:lease_acquired']
    assert [(m.action, m.lease_id) for m in up.commands] == [(ls.ACTION_ACQUIRE, 'lease-2')]
    # still held by the other owner: retried every lease/2 with fresh sequences
    assert c.tick(0.3).commands == []
    [retry] = c.tick(0.6).commands
    assert (retry.action, retry.lease_id, retry.sequence) == (ls.ACTION_ACQUIRE, 'lease-2', 2)
    up = c.on_authority(2, 'ctl', 'lease-2', VESSEL, 'emergency_stop', 0.7)
    assert up.events == [] and not c.owns(0.7)


def test_vessel_switch_unavailable_and_generation():
    c = make_client()
    c.on_lifecycle(ls.LIFECYCLE_ACTIVE, VESSEL, 1, 0.0)
    c.on_authority(1, 'ctl', 'lease-1', VESSEL, 'lease_acquired', 0.0, 1)
    assert c.on_lifecycle(ls.LIFECYCLE_ACTIVE, VESSEL, 2, 0.1).events == [
        'generation_changed']
    assert c.owns(0.1)
    up = c.on_lifecycle(ls.LIFECYCLE_CHANGED, 'other-vessel', 3, 0.2)
    assert up.events == ['lost:vessel_changed']
    [acq] = up.commands
    assert acq.vessel_id == 'other-vessel' and acq.lease_id == 'lease-2'
    c.on_authority(1, 'ctl', 'lease-2', 'other-vessel', 'lease_acquired', 0.3, 1)
    up = c.on_lifecycle(ls.LIFECYCLE_STALE, 'other-vessel', 3, 0.4)
    assert up.events == ['lost:vessel_unavailable'] and up.commands == []
    assert c.tick(1.0).commands == []
    assert c.phase == ls.WAITING


def test_release_on_shutdown():
    c = make_client()
    c.on_lifecycle(ls.LIFECYCLE_ACTIVE, VESSEL, 1, 0.0)
    c.on_authority(1, 'ctl', 'lease-1', VESSEL, 'lease_acquired', 0.0, 1)
    seq = c.next_sequence()
    [rel] = c.shutdown(0.5).commands
    assert rel.action == ls.ACTION_RELEASE and rel.sequence == seq + 1
    assert c.tick(1.0).commands == [] and not c.owns(0.6)
    idle = make_client()
    assert idle.shutdown(0.0).commands == []


def test_with_the_simulator_authority_end_to_end():
    ksp, c = Ksp(), make_client(lease_duration_sec=0.5)
    ksp.send(c, c.on_lifecycle(ls.LIFECYCLE_ACTIVE, VESSEL, 1, 0.0).commands, 0.0)
    assert c.owns(0.0) and ksp.auth.owner == ('ctl', 'lease-1')
    ksp.send(c, c.shutdown(0.2).commands, 0.2)
    assert not ksp.auth.owned


def test_bad_construction():
    with pytest.raises(ValueError):
        LeaseClient(' ')
    with pytest.raises(ValueError):
        LeaseClient('ctl', lease_duration_sec=20.0)
    with pytest.raises(RuntimeError):
        LeaseClient('ctl').next_sequence()
    assert len(ls.default_lease_id('x' * 64)) <= 64


# -- on game time (use_sim_time): acquire with a tick, and a wall clock beside game time -------

def test_on_game_time_a_loss_acquires_again_only_when_a_tick_comes():
    """While game time stands still (no ticks) a lost lease is not acquired again."""
    c = make_client(lease_duration_sec=1.0, acquire_on_tick=True)
    assert c.on_lifecycle(ls.LIFECYCLE_ACTIVE, VESSEL, 1, 10.0).commands == []
    assert c.phase == ls.ACQUIRING
    [acq] = c.tick(10.05).commands
    assert (acq.action, acq.lease_id, acq.sequence) == (ls.ACTION_ACQUIRE, 'lease-1', 1)
    c.on_authority(1, 'ctl', 'lease-1', VESSEL, 'lease_acquired', 10.05, 1)
    assert c.owns(10.05)
    # paused at 10.2: the mod's lease runs out on its wall clock and it says so
    up = c.on_authority(0, '', '', VESSEL, 'lease_expired', 10.2)
    assert up.events == ['lost:lease_expired'] and up.commands == []
    assert c.on_authority(0, '', '', VESSEL, 'lease_expired', 10.2).commands == []
    assert c.phase == ls.ACQUIRING and not c.owns(10.2)
    # game time moves again: the next tick acquires a new lease, once
    [acq] = c.tick(10.25).commands
    assert (acq.action, acq.lease_id, acq.sequence) == (ls.ACTION_ACQUIRE, 'lease-2', 1)
    assert c.tick(10.3).commands == []


def test_acquire_on_tick_keeps_the_steady_clock_behaviour_of_tick():
    """A lease that ran out by its own clock is acquired again in the same tick either way."""
    for on_tick in (False, True):
        c = make_client(lease_duration_sec=1.0, acquire_on_tick=on_tick)
        c.on_lifecycle(ls.LIFECYCLE_ACTIVE, VESSEL, 1, 0.0)
        c.tick(0.0)
        c.on_authority(1, 'ctl', 'lease-1', VESSEL, 'lease_acquired', 0.0, 1)
        up = c.tick(1.0)
        assert up.events == ['lost:lease_expired']
        assert [(m.action, m.lease_id) for m in up.commands] == [(ls.ACTION_ACQUIRE, 'lease-2')]


def on_wall_clock(auth, c):
    """Return ``send(cmds, game, wall)``: the mod takes commands on its wall clock, answers."""
    def send(cmds, game, wall):
        for cmd in cmds:
            assert auth.command(to_payload(cmd), VESSEL, wall).accepted
            owner = auth.owner or ('', '')
            c.on_authority(int(auth.owned), *owner, VESSEL, 'ok', game,
                           auth.last_sequence(owner))
    return send


def test_a_tick_a_lease_after_the_previous_on_the_wall_clock_finds_the_lease_lapsed():
    """Game time stood still (paused) while the wall clock ran on: the mod ended the lease."""
    auth, c = ControlAuthority(), make_client(lease_duration_sec=1.0, acquire_on_tick=True)
    send = on_wall_clock(auth, c)
    c.on_lifecycle(ls.LIFECYCLE_ACTIVE, VESSEL, 1, 5.0)
    wall = 100.0
    send(c.tick(5.0, wall).commands, 5.0, wall)
    assert c.owns(5.0)
    for k in range(1, 5):                         # game time and wall time side by side
        send(c.tick(5.0 + 0.05 * k, wall + 0.05 * k).commands, 5.0 + 0.05 * k,
             wall + 0.05 * k)
    assert c.owns(5.2) and auth.remaining(wall + 0.2) > 0.0
    # 1.5 s of wall time without a tick, 0.05 s of game time: the lease ran out on the mod
    wall += 0.2 + 1.5
    assert auth.remaining(wall) == 0.0 and c.owns(5.25)
    up = c.tick(5.25, wall)
    assert up.events == ['lost:clock_stopped']
    [acq] = up.commands
    assert (acq.action, acq.lease_id) == (ls.ACTION_ACQUIRE, 'lease-2')
    send(up.commands, 5.25, wall)
    assert c.owns(5.25) and auth.owner == ('ctl', 'lease-2')
    # a tick exactly a lease after the previous one is not a stall; without wall, none
    assert c.tick(5.3, wall + 1.0).events == []
    assert c.tick(5.35).events == [] and c.tick(5.4, wall + 5.0).events == []
    assert c.lapse(5.4, 'clock_stopped').events == ['lost:clock_stopped']
    assert c.lapse(5.4, 'clock_stopped').events == []          # not owned: nothing


def test_a_game_slower_than_real_time_renews_on_the_wall_clock():
    """Game time at a tenth of real time (lock-stepped to a slow stack): renewed on wall time.

    The mod times the lease on its wall clock: it gets a renewal every quarter lease of wall
    time (here every 0.2 or 0.4 s: the ticks are 0.2 s of wall time apart).
    """
    auth, c = ControlAuthority(), make_client(lease_duration_sec=1.0)
    send = on_wall_clock(auth, c)
    send(c.on_lifecycle(ls.LIFECYCLE_ACTIVE, VESSEL, 1, 5.0).commands, 5.0, 100.0)
    renewed = []
    for k in range(1, 200):                       # 0.02 game s a tick, 0.2 wall s
        game, wall = 5.0 + 0.02 * k, 100.0 + 0.2 * k
        cmds = c.tick(game, wall).commands
        assert all(cmd.action == ls.ACTION_RENEW for cmd in cmds)
        send(cmds, game, wall)
        renewed += [wall] * len(cmds)
        assert auth.remaining(wall) > 0.0, wall          # never ran out on the mod
    gaps = np.diff(renewed)
    assert len(renewed) > 50 and np.all(gaps <= 0.4 + 1e-9), gaps     # (a quarter is 0.25)
    assert c.owns(game) and auth.owner == ('ctl', 'lease-1')
