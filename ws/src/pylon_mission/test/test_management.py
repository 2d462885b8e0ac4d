"""The management's state machine: simulator status, ranking and sessions in; states out."""

import math

from pylon_common import mission
from pylon_mission.management import COUNT, Management
import pytest

TASK = {'kind': 'rendezvous', 'target': 'target', 'radius_m': 10.0,
        'relative_speed_mps': 0.2, 'hold_sec': 30.0, 'time_limit_sec': 900.0,
        'target_vessel_id': 'b' * 32}
SESSIONS = [('i1', 3, 'e1'), ('i2', 5, 'e2')]
BOTH = SESSIONS
NONE = [None, None]


def status(phase='held', owned=(False, False), ut=100.0, started=None, elapsed=0.0,
           task=TASK, settled=(True, True), race=None) -> dict:
    return {'phase': phase, 'ut': ut, 'clock': ut, 'rate': 1.0, 'warp': [1.0, 'physics'],
            'paused': False, 'started_ut': started, 'elapsed': elapsed, 'task': task,
            'vehicles': [{'vehicle': k, 'key': key, 'vessel_id': key[0] * 32, 'name': key,
                          'available': True, 'settled': calm, 'session': list(session),
                          'lease_owned': lease, 'controller_id': '',
                          'propellant_kg': 240.0 - k, 'propellant_used_kg': float(k),
                          **({'race': race} if race else {})}
                         for k, (key, lease, calm, session) in enumerate(
                             zip(('chaser', 'target'), owned, settled, SESSIONS), start=1)]}


def ranking(completed=False, started=None, progress=0.5, scored=(True, False)) -> dict:
    done = completed if isinstance(completed, tuple) else (completed, False)
    return {'started_ut': started, 'vehicles': [
        {'vehicle': k, 'scored': mine, 'completed': finished,
         'progress': 1.0 if finished else progress, 'score': 700.0 if finished else 0.0,
         'completion_time_sec': 200.0 if finished else None}
        for k, (finished, mine) in enumerate(zip(done, scored), start=1)]}


def test_select_mode_play_start_ready_and_the_vehicle_states():
    m = Management()
    assert m.step(None, None, 0.0).state == mission.SELECT_MODE
    assert not m.start() and 'has not answered' in m.take_log()[0]
    # vehicle 1 settled, its bridge on the current session; vehicle 2 not settled yet
    report = m.step(status(settled=(True, False)), None, 0.1, [SESSIONS[0], None])
    assert report.state == mission.PLAY_START
    assert report.vehicle_states == [mission.VEHICLE_READY, mission.SPAWNED]
    # settled, but its bridge says another session (an old one): Grounded
    report = m.step(status(), None, 0.2, [SESSIONS[0], ('i2', 4, 'old')])
    assert report.vehicle_states == [mission.VEHICLE_READY, mission.GROUNDED]
    assert not m.start() and 'vehicle(s) 2 not Ready' in m.take_log()[0]
    assert m.refused == 2 and m.state == mission.PLAY_START      # refused: nothing changed
    # Ready without any lease: no controller needs to hold one
    report = m.step(status(owned=(False, False)), None, 0.3, BOTH)
    assert report.state == mission.READY and report.requests == []
    assert report.vehicle_states == [mission.VEHICLE_READY] * 2


def test_a_start_in_ready_counts_down_game_time_then_starts():
    m = Management(countdown_sec=3.0)
    m.step(status(ut=100.0), None, 0.0, BOTH)
    assert m.start() and m.state == mission.WAIT_START
    assert 'WaitStart' in m.take_log()[0]
    assert not m.start() and 'countdown' in m.take_log()[0]      # once is enough
    report = m.step(status(ut=102.9), None, 0.1, BOTH)
    assert report.state == mission.WAIT_START and report.requests == []
    assert report.vehicle_states == [mission.VEHICLE_READY] * 2   # nothing acts yet
    # a bridge gone during the countdown: the accepted start goes on
    report = m.step(status(ut=102.95), None, 0.15, [SESSIONS[0], None])
    assert report.state == mission.WAIT_START
    assert report.vehicle_states == [mission.VEHICLE_READY, mission.GROUNDED]
    report = m.step(status(ut=103.0), None, 0.2, BOTH)
    assert report.state == mission.WAIT_START and report.requests == [{'cmd': 'start'}]
    assert m.step(status(ut=103.1), None, 0.3, BOTH).requests == []    # sent once
    report = m.step(status('running', ut=103.2, started=103.1, elapsed=0.1), None, 0.4, BOTH)
    assert report.state == mission.START
    assert report.vehicle_states == [mission.VEHICLE_START] * 2
    assert not m.start() and 'reset it first' in m.take_log()[0]
    # a vehicle whose bridge went away does not stop a running mission
    assert m.step(status('running', ut=104.0, started=103.1, elapsed=0.9), None, 0.5,
                  NONE).state == mission.START


def test_a_vehicle_that_stops_being_ready_before_the_start_takes_ready_back():
    m = Management()
    assert m.step(status(), None, 0.0, BOTH).state == mission.READY
    assert m.step(status(), None, 0.1, [SESSIONS[0], None]).state == mission.PLAY_START
    assert not m.start()


def values_of(array) -> dict:
    return dict(zip(mission.STATUS_NAMES, array))


def test_the_status_array_follows_the_index_table():
    m = Management()
    m.step(status('running', (True, True), 100.0, 50.0, 50.0), None, 0.0)
    report = m.step(status('running', (True, True), 100.5, 50.0, 50.5),
                    ranking(started=50.0, progress=0.25), 0.5)
    assert values_of(report.status_arrays[0]) == {
        'sessionTime': 849.5, 'lapCount': 0.0, 'thisLapTime': 50.5, 'section': 0.0,
        'timeScale': 1.0, 'boostRemaining': 0.0, 'isBoosting': 0.0, 'elapsed_sec': 50.5,
        'task_progress': 0.25, 'score': 0.0, 'propellant_left_kg': 239.0,
        'propellant_used_kg': 1.0, 'completed': 0.0, 'rank': 0.0, 'penalty_count': 0.0,
        'penalty_active': 0.0, 'best_lap_sec': 0.0, 'last_lap_end_sec': 0.0,
        'collision_count': 0.0}
    assert len(report.status_arrays[1]) == len(mission.STATUS_FIELDS)
    # the interface's seven first, in its order
    assert list(mission.STATUS_NAMES[:mission.INTERFACE_FIELDS]) == [
        'sessionTime', 'lapCount', 'thisLapTime', 'section', 'timeScale', 'boostRemaining',
        'isBoosting']
    # completed: one lap, its time frozen at the completion
    done = ranking(completed=(True, False), started=50.0)
    done['vehicles'][0]['rank'] = 1
    report = m.step(status('running', (True, True), 400.0, 50.0, 350.0), done, 1.0)
    first = values_of(report.status_arrays[0])
    assert (first['lapCount'], first['thisLapTime'], first['completed'], first['rank']) == (
        1.0, 200.0, 1.0, 1.0)
    # a scenario without a task has no limit; a ranking of another run is not used
    m = Management()
    report = m.step(status(task=None), ranking(completed=True, started=7.0), 0.0)
    assert report.status_arrays[0][mission.STATUS_INDEX['sessionTime']] == mission.NO_LIMIT
    assert report.status_arrays[0][mission.STATUS_INDEX['completed']] == 0.0


RACE_TASK = {'kind': 'race', 'track': 'kart', 'laps': 2, 'time_limit_sec': 60.0,
             'boosts': 3, 'boost_sec': 5.0}


def kart(laps=(), t=0.0, finished=False, into=0.0, boosts=3, boosting=False, penalties=0,
         active=False) -> dict:
    """Return a kart's race as the simulator reports it (``kart_status``), laps of 20 s."""
    ends = [3.0 + 20.0 * (i + 1) for i in range(len(laps))]
    return {'sessionTime': max(0.0, 60.0 - t), 'lapCount': len(laps), 'thisLapTime': into,
            'section': 1, 'boostRemaining': boosts, 'isBoosting': boosting,
            'lapTimes': list(laps), 'sectionTimes': [[t / 2, t / 2] for t in laps],
            'lapEnds': ends, 'currentSectionTimes': [],
            'bestLap': min(laps) if laps else None, 'finished': finished,
            'finishTime': ends[-1] if finished else None, 'boostsUsed': 3 - boosts,
            'boostEndsIn': 0.0, 'penalties': {'count': penalties, 'active': active,
                                              'offTrack': False, 'endsIn': 0.0},
            'lateral': 0.5, 'events': {}, 'grid': 0, 'collisions': 1 if penalties else 0,
            'collisionLog': []}


def race_status(phase='running', karts=(None, None), t=10.0, race_phase='running',
                ut=None) -> dict:
    """Return a management status of a two-kart race ``t`` s after its start (UT 100)."""
    started = None if race_phase == 'grid' else 100.0
    out = status(phase, (True, True), ut if ut is not None else 100.0 + t, started,
                 0.0 if started is None else t, RACE_TASK)
    for vehicle, race in zip(out['vehicles'], karts):
        vehicle['race'] = race or kart(t=t)
    out['race'] = {'phase': race_phase, 'elapsed': t, 'sessionTime': max(0.0, 60.0 - t),
                   'track': 'kart', 'sections': 2, 'rules': RACE_TASK, 'events': {},
                   'requests': {}}
    return out


def test_a_race_fills_the_status_array_from_the_simulators_race():
    m = Management()
    m.step(race_status(t=42.5), None, 0.0)
    report = m.step(race_status(karts=(kart((19.5, 20.5), 43.0, into=0.0, boosts=1,
                                            penalties=2, active=True),
                                       kart((21.0,), 43.0, into=19.0, boosting=True)),
                                t=43.0), None, 0.5)
    one, two = (values_of(a) for a in report.status_arrays)
    assert one == {'sessionTime': 17.0, 'lapCount': 2.0, 'thisLapTime': 0.0, 'section': 1.0,
                   'timeScale': 1.0, 'boostRemaining': 1.0, 'isBoosting': 0.0,
                   'elapsed_sec': 43.0, 'task_progress': 1.0, 'score': 0.0,
                   'propellant_left_kg': 239.0, 'propellant_used_kg': 1.0, 'completed': 0.0,
                   'rank': 1.0, 'penalty_count': 2.0, 'penalty_active': 1.0,
                   'best_lap_sec': 19.5, 'last_lap_end_sec': 43.0, 'collision_count': 1.0}
    assert (two['lapCount'], two['thisLapTime'], two['isBoosting'], two['task_progress'],
            two['rank'], two['last_lap_end_sec']) == (1.0, 19.0, 1.0, 0.5, 2.0, 23.0)
    # on the grid: the session's whole limit, no lap, every boost
    grid = Management().step(race_status('held', t=0.0, race_phase='grid'), None, 0.0)
    assert values_of(grid.status_arrays[0])['sessionTime'] == 60.0
    assert [values_of(a)['rank'] for a in grid.status_arrays] == [1.0, 2.0]   # by number


def test_a_race_ends_as_the_simulators_race_says():
    m = Management()
    # a ranking saying otherwise is not read: the simulator's race is the authority
    wrong = ranking(completed=(True, True), started=100.0, scored=(True, True))
    report = m.step(race_status(t=30.0), wrong, 0.0, BOTH)
    assert report.state == mission.START
    first = kart((20.0, 20.0), 43.0, finished=True)
    report = m.step(race_status(karts=(first, kart((21.0,), 43.0))), None, 0.1, BOTH)
    assert report.state == mission.LAP_COMPLETE and report.requests == []
    assert report.vehicle_states == [mission.VEHICLE_FINISH, mission.VEHICLE_START]
    both = (first, kart((21.0, 21.0), 45.0, finished=True))
    report = m.step(race_status(karts=both, t=45.0, race_phase='over'), None, 0.2, BOTH)
    assert report.state == mission.FINISH_ALL and report.requests == [{'cmd': 'finish'}]
    assert report.vehicle_states == [mission.VEHICLE_FINISH] * 2
    # the session ran out first: Finish, every vehicle Finish
    m = Management()
    m.step(race_status(karts=(first, None), t=59.9), None, 0.0, BOTH)
    report = m.step(race_status(karts=(first, None), t=60.0, race_phase='over'), None, 0.1,
                    BOTH)
    assert report.state == mission.FINISH and report.requests == [{'cmd': 'finish'}]
    assert report.vehicle_states == [mission.VEHICLE_FINISH] * 2
    held = m.step(race_status('held', karts=(first, None), t=60.0, race_phase='over',
                              ut=161.0), None, 0.2, BOTH)
    assert held.state == mission.FINISH and held.requests == []


def test_the_description_carries_the_race():
    report = Management().step(race_status(karts=(kart((20.0,), 30.0), None), t=30.0),
                               None, 0.0, BOTH)
    description = report.mission
    assert description['race']['phase'] == 'running' and description['task'] == RACE_TASK
    assert description['vehicles'][0]['race']['lapTimes'] == [20.0]
    assert description['vehicles'][1]['race']['lapCount'] == 0


def test_awsim_cmd_forwards_a_changed_boost_command_and_drops_bad_input():
    m = Management()
    assert m.command(1, [1.0]) == 'the mission has no race'       # no answer yet
    m.step(race_status(t=5.0), None, 0.0, BOTH)
    assert (m.command(1, [0.0]), m.command(1, [0.0, 7.0]), m.command(1, [1.0])) == ('',) * 3
    assert (m.command(2, [1.0]), m.command(1, [1.0])) == ('', '')
    assert m.command(1, []) == 'an empty array'
    assert m.command(2, [math.nan]) == m.command(2, [math.inf]) == \
        'index 0 is not a finite number'
    report = m.step(race_status(t=5.1), None, 0.1, BOTH)
    assert report.requests == [{'cmd': 'boost', 'vehicle': 1, 'value': 0.0},
                               {'cmd': 'boost', 'vehicle': 1, 'value': 1.0},
                               {'cmd': 'boost', 'vehicle': 2, 'value': 1.0}]
    assert dict(m.commands) == {'forwarded': 3, 'unchanged': 2, 'empty': 1, 'not_finite': 2,
                                'no_race': 1}
    assert m.dropped() == 4
    # what the simulator made of them: counted, logged
    for answer in ({'vehicle': 1, 'outcome': 'fired'}, {'vehicle': 1, 'outcome': 'ignored'},
                   {'vehicle': 2, 'outcome': 'none_left'}):
        m.boost_answered(answer)
    assert (m.boosts['fired'], m.boosts_refused()) == (1, 1)
    assert m.step(race_status(t=5.2), None, 0.2, BOTH).log == [
        'vehicle 1 boost fired', 'vehicle 2 boost refused: none_left (1 refused so far)']
    # a reset forgets the last values: a held 1.0 is sent again to the reset race
    m.reset()
    assert m.command(1, [1.0]) == ''
    assert {'cmd': 'boost', 'vehicle': 1, 'value': 1.0} in m.step(
        race_status(t=0.0, race_phase='grid'), None, 0.3, BOTH).requests
    # a mission without a race sends none
    plain = Management()
    plain.step(status(), None, 0.0, BOTH)
    assert plain.command(1, [1.0]) == 'the mission has no race'
    assert plain.step(status(), None, 0.1, BOTH).requests == []


@pytest.mark.parametrize('completed, elapsed, end', [
    (True, 500.0, mission.FINISH_ALL), (False, 900.0, mission.FINISH),
    (True, 900.0, mission.FINISH_ALL)])
def test_the_mission_ends_when_every_vehicle_completed_or_time_is_up(completed, elapsed, end):
    m = Management()
    report = m.step(status('running', (True, True), 100.0 + elapsed, 100.0, elapsed),
                    ranking(completed, started=100.0), 1.0, BOTH)
    assert report.state == end and {'cmd': 'finish'} in report.requests
    assert report.vehicle_states == [mission.VEHICLE_FINISH] * 2
    held = m.step(status('held', (True, True), 101.0 + elapsed, 100.0, elapsed),
                  ranking(completed, started=100.0), 1.1, BOTH)
    assert held.state == end and held.requests == []
    assert not m.start()                       # over: reset first
    m.reset()
    assert m.state == mission.PLAY_START
    report = m.step(status(ut=100.0), None, 1.2, NONE)
    assert report.requests == [{'cmd': 'reset'}] and report.state == mission.PLAY_START
    assert report.vehicle_states == [mission.GROUNDED] * 2


def test_lap_complete_while_the_others_go_on():
    m = Management()
    two_scored = status('running', (True, True), 300.0, 100.0, 200.0)
    first = ranking(completed=(True, False), started=100.0, scored=(True, True))
    report = m.step(two_scored, first, 0.0, BOTH)
    assert report.state == mission.LAP_COMPLETE and report.requests == []
    assert report.vehicle_states == [mission.VEHICLE_FINISH, mission.VEHICLE_START]
    both = ranking(completed=(True, True), started=100.0, scored=(True, True))
    report = m.step(status('running', (True, True), 310.0, 100.0, 210.0), both, 0.1, BOTH)
    assert report.state == mission.FINISH_ALL and {'cmd': 'finish'} in report.requests


def test_a_ut_that_goes_back_forgets_the_run():
    m = Management()
    report = m.step(status('running', (True, True), 1000.0, 100.0, 900.0), None, 0.0, BOTH)
    assert m.state == mission.FINISH and not report.respawned
    report = m.step(status(ut=100.0), None, 0.1, BOTH)
    assert report.state == mission.READY and report.respawned     # said from Spawned
    assert not m.step(status(ut=100.1), None, 0.2, BOTH).respawned
    m.start()
    assert m.step(status(ut=50.0), None, 0.2, BOTH).state == mission.READY   # no countdown


def test_count_starts_once_every_vehicle_is_in_control():
    m = Management(start_mode=COUNT, countdown_sec=3.0, control_timeout_sec=30.0)
    assert m.step(status(owned=(True, False)), None, 0.0, [SESSIONS[0], None]).state == \
        mission.PLAY_START
    assert m.step(status(ut=101.0, owned=(True, False)), None, 0.1, BOTH).state == \
        mission.READY                             # Ready, vehicle 2 not in control yet
    report = m.step(status(ut=102.0, owned=(True, True)), None, 0.2, BOTH)
    assert report.state == mission.WAIT_START and 'in control' in report.log[0]
    assert m.step(status(ut=105.0, owned=(True, True)), None, 0.3, BOTH).requests == [
        {'cmd': 'start'}]
    m.reset()                                     # a new run counts again
    m.step(status(ut=100.0, owned=(True, True)), None, 0.4, BOTH)
    assert m.state == mission.WAIT_START


def test_count_starts_without_a_stack_that_never_takes_control():
    m = Management(start_mode=COUNT, countdown_sec=0.0, control_timeout_sec=30.0)
    assert m.step(status(ut=100.0, owned=(True, False)), None, 0.0, BOTH).state == \
        mission.READY
    assert m.step(status(ut=129.9, owned=(True, False)), None, 0.1, BOTH).state == \
        mission.READY
    report = m.step(status(ut=130.0, owned=(True, False)), None, 0.2, BOTH)
    assert report.state == mission.WAIT_START and report.requests == [{'cmd': 'start'}]
    assert 'vehicle(s) 2 took no control' in report.log[0]


def test_count_gives_up_on_vehicles_never_ready():
    late = Management(start_mode=COUNT, ready_timeout_sec=10.0)
    late.step(status(), None, 0.0, [SESSIONS[0], None])
    report = late.step(status(), None, 10.0, [SESSIONS[0], None])
    assert report.state == mission.TERMINATE and 'vehicle(s) 2 not Ready' in report.log[0]
    assert late.step(status(), None, 11.0, BOTH).state == mission.TERMINATE
    # the timeout counts from the run's beginning: a reset long after starts it again
    m = Management(start_mode=COUNT, ready_timeout_sec=10.0, countdown_sec=0.0)
    m.step(status(owned=(True, True)), None, 0.0, BOTH)
    m.step(status('running', (True, True), 200.0, 100.0, 100.0), None, 100.0, BOTH)
    m.reset()
    assert m.step(status(ut=100.0), None, 100.1, NONE).state == mission.PLAY_START
    assert m.step(status(ut=100.1), None, 110.1, NONE).state == mission.TERMINATE
    # sync waits as long as it takes
    patient = Management(ready_timeout_sec=10.0)
    patient.step(status(), None, 0.0, NONE)
    assert patient.step(status(), None, 100.0, NONE).state == mission.PLAY_START


def test_a_silent_simulator_terminates_the_management():
    m = Management(sim_timeout_sec=3.0)
    m.step(status(), None, 0.0)
    assert m.step(None, None, 2.9).state == mission.PLAY_START
    report = m.step(None, None, 3.0)
    assert report.state == mission.TERMINATE and 'not answered' in report.log[0]
    m.reset()
    assert 'terminated' in m.take_log()[0]
    assert m.terminate().state == mission.TERMINATE


def test_an_unknown_start_mode_is_refused():
    with pytest.raises(ValueError, match='start_mode'):
        Management(start_mode='auto')


def test_the_mission_description_names_every_vehicle_and_the_task():
    m = Management()
    report = m.step(status(owned=(True, False)), None, 0.0, [SESSIONS[0], None])
    description = report.mission
    assert description['task'] == TASK and description['state'] == mission.PLAY_START
    assert description['start_mode'] == 'sync'
    assert [(v['vehicle'], v['key'], v['state']) for v in description['vehicles']] == [
        (1, 'chaser', mission.VEHICLE_READY), (2, 'target', mission.GROUNDED)]


@pytest.mark.parametrize('last, new, said', [
    (None, mission.VEHICLE_READY, [mission.SPAWNED, mission.GROUNDED, mission.VEHICLE_READY]),
    (mission.SPAWNED, mission.VEHICLE_READY, [mission.GROUNDED, mission.VEHICLE_READY]),
    (mission.VEHICLE_READY, mission.VEHICLE_READY, []),
    (mission.VEHICLE_READY, mission.GROUNDED, [mission.GROUNDED]),      # its bridge gone
    (mission.VEHICLE_START, mission.SPAWNED, [mission.SPAWNED]),
    (mission.VEHICLE_READY, mission.VEHICLE_FINISH,
     [mission.VEHICLE_START, mission.VEHICLE_FINISH]),
])
def test_vehicle_states_are_said_in_order(last, new, said):
    assert mission.states_on_the_way(last, new) == said


def test_on_collision_says_true_once_for_each_poll_a_collision_began_in():
    m = Management()

    def collided(*counts):
        karts = [dict(kart(t=10.0), collisions=n) for n in counts]
        return m.step(race_status(karts=karts), None, 0.0, BOTH).collided
    assert collided(0, 0) == [False, False]
    assert collided(1, 0) == [True, False]          # kart 1's first collision began
    assert collided(1, 0) == [False, False]         # nothing new: false again
    assert collided(3, 1) == [True, True]           # two more of kart 1's, kart 2's first
    assert collided(0, 0) == [False, False]         # a reset: counts start again
    assert collided(1, 0) == [True, False]
    assert Management().step(status(), None, 0.0).collided == [False, False]   # no race
