"""The management's state machine: simulator status and ranking in, states and requests out."""

from pylon_common import mission
from pylon_mission.management import Management
import pytest

TASK = {'kind': 'rendezvous', 'target': 'target', 'radius_m': 10.0,
        'relative_speed_mps': 0.2, 'hold_sec': 30.0, 'time_limit_sec': 900.0,
        'target_vessel_id': 'b' * 32}


def status(phase='held', owned=(False, False), ut=100.0, started=None, elapsed=0.0,
           task=TASK) -> dict:
    return {'phase': phase, 'ut': ut, 'clock': ut, 'rate': 1.0, 'warp': [1.0, 'physics'],
            'paused': False, 'started_ut': started, 'elapsed': elapsed, 'task': task,
            'vehicles': [{'vehicle': k, 'key': key, 'vessel_id': key[0] * 32, 'name': key,
                          'available': True, 'lease_owned': lease, 'controller_id': '',
                          'propellant_kg': 240.0 - k, 'propellant_used_kg': float(k)}
                         for k, (key, lease) in enumerate(zip(('chaser', 'target'), owned),
                                                          start=1)]}


def ranking(completed=False, started=None, progress=0.5) -> dict:
    return {'started_ut': started, 'vehicles': [
        {'vehicle': 1, 'scored': True, 'completed': completed, 'progress': progress,
         'score': 700.0 if completed else 0.0},
        {'vehicle': 2, 'scored': False, 'completed': False, 'progress': 0.0, 'score': 0.0}]}


def test_wait_ready_start_and_the_vehicle_states():
    m = Management()
    assert m.step(None, None, 0.0).state == mission.WAIT_START
    assert not m.start()                                 # nothing heard yet
    assert 'not answered' in m.take_log()[0]
    report = m.step(status(owned=(True, False)), None, 0.1)
    assert report.state == mission.WAIT_START
    assert report.vehicle_states == [mission.VEHICLE_READY, mission.SPAWNED]
    assert not m.start() and 'vehicle(s) 2 not Ready' in m.take_log()[0]
    report = m.step(status(owned=(True, True)), None, 0.2)
    assert report.state == mission.READY and report.requests == []
    assert m.start()
    report = m.step(status(owned=(True, True)), None, 0.3)
    assert report.requests == [{'cmd': 'start'}]
    report = m.step(status('running', (True, True), 101.0, 100.5, 0.5), None, 0.4)
    assert report.state == mission.START
    assert report.vehicle_states == [mission.VEHICLE_START] * 2
    assert not m.start() and 'reset it first' in m.take_log()[0]


def test_the_status_array_follows_the_index_table():
    m = Management()
    m.step(status('running', (True, True), 100.0, 50.0, 50.0), None, 0.0)
    report = m.step(status('running', (True, True), 100.5, 50.0, 50.5),
                    ranking(started=50.0, progress=0.25), 0.5)
    values = dict(zip((name for name, _ in mission.STATUS_FIELDS), report.status_arrays[0]))
    assert values == {'time_left_sec': 849.5, 'elapsed_sec': 50.5, 'time_scale': 1.0,
                      'task_progress': 0.25, 'score': 0.0, 'propellant_left_kg': 239.0,
                      'propellant_used_kg': 1.0, 'completed': 0.0}
    assert len(report.status_arrays[1]) == len(mission.STATUS_FIELDS)
    # a scenario without a task has no limit; a ranking of another run is not used
    m = Management()
    report = m.step(status(task=None), ranking(completed=True, started=7.0), 0.0)
    assert report.status_arrays[0][mission.STATUS_INDEX['time_left_sec']] == mission.NO_LIMIT
    assert report.status_arrays[0][mission.STATUS_INDEX['completed']] == 0.0


@pytest.mark.parametrize('completed, elapsed, end', [
    (True, 500.0, mission.FINISH_ALL), (False, 900.0, mission.FINISH),
    (True, 900.0, mission.FINISH_ALL)])
def test_the_mission_ends_when_every_vehicle_completed_or_time_is_up(completed, elapsed, end):
    m = Management()
    report = m.step(status('running', (True, True), 100.0 + elapsed, 100.0, elapsed),
                    ranking(completed, started=100.0), 1.0)
    assert report.state == end and {'cmd': 'finish'} in report.requests
    assert report.vehicle_states == [mission.VEHICLE_FINISH] * 2
    held = m.step(status('held', (True, True), 101.0 + elapsed, 100.0, elapsed),
                  ranking(completed, started=100.0), 1.1)
    assert held.state == end and held.requests == []
    assert not m.start()                       # over: reset first
    m.reset()
    report = m.step(status(owned=(False, False), ut=100.0), None, 1.2)
    assert report.requests == [{'cmd': 'reset'}] and report.state == mission.WAIT_START


def test_a_ut_that_goes_back_forgets_the_end():
    m = Management()
    m.step(status('running', (True, True), 1000.0, 100.0, 900.0), None, 0.0)
    assert m.state == mission.FINISH
    assert m.step(status(owned=(True, True), ut=100.0), None, 0.1).state == mission.READY


def test_autostart_once_and_its_ready_timeout():
    m = Management(autostart=True, ready_timeout_sec=10.0)
    assert m.step(status(owned=(True, False)), None, 0.0).requests == []
    report = m.step(status(owned=(True, True)), None, 1.0)
    assert report.requests == [{'cmd': 'start'}]
    assert m.step(status(owned=(True, True)), None, 1.1).requests == []    # once
    late = Management(autostart=True, ready_timeout_sec=10.0)
    late.step(status(owned=(True, False)), None, 0.0)
    report = late.step(status(owned=(True, False)), None, 10.0)
    assert report.state == mission.TERMINATE and 'vehicle(s) 2 not Ready' in report.log[0]
    assert late.step(status(owned=(True, True)), None, 11.0).state == mission.TERMINATE


def test_a_silent_simulator_terminates_the_management():
    m = Management(sim_timeout_sec=3.0)
    m.step(status(), None, 0.0)
    assert m.step(None, None, 2.9).state == mission.WAIT_START
    report = m.step(None, None, 3.0)
    assert report.state == mission.TERMINATE and 'not answered' in report.log[0]
    m.reset()
    assert 'terminated' in m.take_log()[0]
    assert m.terminate().state == mission.TERMINATE


def test_the_mission_description_names_every_vehicle_and_the_task():
    m = Management()
    report = m.step(status(owned=(True, False)), None, 0.0)
    description = report.mission
    assert description['task'] == TASK and description['state'] == mission.WAIT_START
    assert [(v['vehicle'], v['key'], v['state']) for v in description['vehicles']] == [
        (1, 'chaser', mission.VEHICLE_READY), (2, 'target', mission.SPAWNED)]
