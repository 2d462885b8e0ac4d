"""``--lockstep-lead``: the game waits for its controller's next command, over real UDP."""

import socket
import time

from pylon_sim.loop import main as sim_main
from pylon_sim.loop import runtime
import pytest

LEAD = 0.1


@pytest.fixture(params=['orbit'])
def lockstepped(harness, monkeypatch, request):
    """Return a lean harness whose commands come over loopback UDP, lock-stepped."""
    monkeypatch.setattr(runtime, 'LOCKSTEP_WAIT_WALL_SEC', 0.2)   # a lapse costs less
    h = harness(request.param)
    h.acquire()                          # over the queue the harness gives
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(('127.0.0.1', 0))
    rx.setblocking(False)
    h.sim.command_sock, h.sim.lockstep_lead = rx, LEAD

    def deliver():
        """Send what the test queued through the socket the simulator reads."""
        while h.port.queue:
            tx.sendto(h.port.queue.popleft(), rx.getsockname())
    yield h, deliver
    tx.close()           # rx: closed with the simulator


def wrench(h):
    h.send('pylon_body_wrench_command', frame='base_link', force=[0.0, 0.0, 0.0],
           torque=[0.0, 0.0, 10.0], timeoutSeconds=0.5, **h.identity())


def release(h, deliver):
    """Give the lease back (one frame)."""
    h.send('pylon_control_authority_command', action='release', **h.identity())
    deliver()
    h.sim.frame()
    assert not h.sim.control.authority.owned


def frames_until_a_wait(h) -> float:
    """Run frames until one waits (at most 100); return the wall seconds it waited."""
    for _ in range(100):
        if (waited := h.sim.hold()) > 0.0:
            return waited
        h.sim.frame()
    raise AssertionError('no frame waited')


def free_frames(h, count):
    """Run ``count`` frames, none of which may wait."""
    for _ in range(count):
        assert h.sim.hold() == 0.0
        h.sim.frame()


def test_without_an_owner_nothing_waits(lockstepped):
    h, deliver = lockstepped
    release(h, deliver)
    free_frames(h, 20)
    assert h.sim.clock == pytest.approx(0.44)


def test_the_clock_stops_lead_seconds_past_the_last_wrench_until_the_next(lockstepped):
    h, deliver = lockstepped
    wrench(h)
    deliver()
    h.sim.frame()
    received = h.sim.control.wrench_received_at
    assert received == pytest.approx(h.sim.clock)
    frames_until_a_wait(h)              # free while the last wrench is less than LEAD old
    # it waited the longest it may (no wrench came) and ran out at exactly LEAD game s
    assert h.sim.clock - received == pytest.approx(LEAD)
    assert h.sim.stats.lockstep_lapses == 1
    # the controller missed its wait: the game runs free until it sends again
    stopped_at = h.sim.clock
    free_frames(h, 10)
    assert h.sim.clock == pytest.approx(stopped_at + 0.2)
    # a wrench that is already waiting: taken in the wait, no frame runs for it
    wrench(h)
    deliver()
    h.sim.frame()
    received = h.sim.control.wrench_received_at
    while h.sim.clock - received < LEAD - 1e-9:
        assert h.sim.hold() == 0.0
        h.sim.frame()
    clock = h.sim.clock
    wrench(h)
    deliver()
    waited = h.sim.hold()
    assert 0.0 <= waited < runtime.LOCKSTEP_WAIT_WALL_SEC
    assert h.sim.clock == clock                         # no frame ran while it waited
    assert h.sim.control.wrench_received_at == clock    # the wrench was taken at that clock
    assert h.sim.stats.lockstep_lapses == 1
    assert h.sim.admin({'cmd': 'status'})['lockstep_lapses'] == 1


def test_paused_or_unowned_games_never_wait(lockstepped):
    h, deliver = lockstepped
    wrench(h)
    deliver()
    h.sim.frame()
    h.sim.paused = True
    free_frames(h, 10)
    h.sim.paused = False
    release(h, deliver)
    free_frames(h, 10)


@pytest.mark.parametrize('value', ['0', '-1', 'nan', 'inf'])
def test_the_lead_must_be_a_positive_finite_number(value, capsys):
    with pytest.raises(SystemExit):
        sim_main.parser().parse_args(['--lockstep-lead', value])
    assert '--lockstep-lead' in capsys.readouterr().err


def test_a_mission_refuses_a_lead(caplog):
    assert sim_main.main(['--scenario', 'rendezvous', '--lockstep-lead', '0.1',
                          '--state-port', '0', '--command-port', '0', '--duration', '0']) == 2
    assert '--lockstep-lead holds one game for one controller' in caplog.text


@pytest.mark.parametrize('lockstepped', ['surface'], indirect=True)
def test_a_rovers_wheel_commands_pace_the_clock_as_wrenches_do(lockstepped):
    h, deliver = lockstepped

    def wheel():
        h.send('pylon_actuator_command', actuatorType='wheel', name='wheel_7700004_0',
               enabled=True, timeoutSeconds=0.5, targetAngularVelocity=1.0, steeringAngle=0.0,
               maxDriveTorque=10.0, brake=0.0, **h.identity())
    wheel()
    deliver()
    h.sim.frame()
    received = h.sim.control.paced_at
    assert received == pytest.approx(h.sim.clock) and h.sim.control.wrench_received_at is None
    while h.sim.hold() == 0.0:
        h.sim.frame()
        assert h.sim.clock - received < 1.0
    assert h.sim.clock - received == pytest.approx(LEAD) and h.sim.stats.lockstep_lapses == 1
    # a refused typed command (an unknown wheel) paces nothing
    h.send('pylon_actuator_command', actuatorType='wheel', name='wheel_9_0', enabled=True,
           timeoutSeconds=0.5, targetAngularVelocity=1.0, steeringAngle=0.0,
           maxDriveTorque=10.0, brake=0.0, **h.identity())
    deliver()
    free_frames(h, 3)
    assert h.sim.control.paced_at == received


def test_lockstep_wait_sets_how_long_a_frame_waits_for_the_controller(lockstepped):
    h, deliver = lockstepped
    h.sim.lockstep_wait = 0.4            # more than this module's default (0.2): it is used
    wrench(h)
    deliver()
    h.sim.frame()
    assert frames_until_a_wait(h) >= 0.4
    assert h.sim.stats.lockstep_lapses == 1


def _wait_sends(h, deliver) -> tuple[float, list[dict], int]:
    """Send a wrench and run frames until one waits.

    Return the wait, what it sent and the frame count (``observationSequence``) before it.
    """
    wrench(h)
    deliver()
    h.sim.frame()
    for _ in range(100):
        h.capture.clear()
        before = h.sim.stats.frame_count
        if (waited := h.sim.hold()) > 0.0:
            return waited, list(h.capture.packets), before
        h.sim.frame()
    raise AssertionError('no frame waited')


def test_a_waiting_game_keeps_the_mods_wall_time_heartbeat(lockstepped):
    """While a frame waits, the heartbeat (10 Hz) and health (2 Hz) go on by wall time.

    Unity's Update runs between physics steps. A wait longer than the receiver's session
    timeout (3 s) would otherwise make a live vessel's session stale and cost its
    controller the lease. Nothing measured goes out (the clock stands), and a simulator
    without a wall clock (``wall`` None) sends nothing.
    """
    h, deliver = lockstepped
    h.sim.lockstep_wait = 0.7            # more than the health's 0.5 s
    waited, sent, _ = _wait_sends(h, deliver)
    assert waited >= 0.7 and sent == []
    h.sim.wall = time.monotonic
    free_frames(h, 30)                   # the schedules fire on the wall clock too
    waited, sent, before = _wait_sends(h, deliver)
    assert waited >= 0.7 and h.sim.stats.lockstep_lapses == 2
    beats = [p for p in sent if p['type'] == 'pylon_session']
    # at least the last look of the wait (0.7 s past the last heartbeat, whatever the load)
    assert len(beats) >= 1 and len(h.capture.of('pylon_vehicle_health')) >= 1
    # Unity's frame count rises on while no physics step runs: each heartbeat is newer
    # than the last frame's, or the receiver drops it as out of order
    sequences = [p['observationSequence'] for p in beats]
    assert sequences == sorted(set(sequences)) and sequences[0] > before
    assert {p['universalTime'] for p in beats} == {h.sim.world.ut}
    assert {p['type'] for p in sent} <= {'pylon_session', 'pylon_vehicle_health',
                                         'pylon_part_thermal_state'}


def test_a_new_lease_runs_free_until_its_own_first_command(lockstepped):
    """A lease taken again does not wait on the last one's commands.

    Its controller may tick only on the game's clock (``kart_interface`` on /clock): a
    wait for it before its first command would stop both, until the wait ran out.
    """
    h, deliver = lockstepped
    wrench(h)
    deliver()
    h.sim.frame()
    release(h, deliver)
    h.lease = 'second'                   # a new engagement: a new lease id
    h.send('pylon_control_authority_command', action='acquire', priority=0,
           leaseDurationSeconds=10.0, suppressSas=False, **h.identity())
    deliver()
    h.sim.frame()
    assert h.sim.control.authority.owner == (h.controller, 'second')
    free_frames(h, 20)                   # far past the old wrench's lead: nothing waits
    assert h.sim.stats.lockstep_lapses == 0
    wrench(h)                            # the new lease's first: from now on it paces
    deliver()
    h.sim.frame()
    frames_until_a_wait(h)
    assert h.sim.clock - h.sim.control.paced_at == pytest.approx(LEAD)
