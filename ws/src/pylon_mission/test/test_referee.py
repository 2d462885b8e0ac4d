"""The referee's scoring: the zone, the hold, breaks, completion time, ranking and reset."""

from pylon_mission.referee import BACKLOG_SEC, Referee

TASK = {'kind': 'rendezvous', 'target': 'target', 'radius_m': 10.0,
        'relative_speed_mps': 0.2, 'hold_sec': 30.0, 'time_limit_sec': 900.0,
        'target_vessel_id': 'b' * 32}


def description(started=1000.0, used=(2.0, 1.0, 0.0), task=TASK) -> dict:
    keys = ('chaser_1', 'chaser_2', 'target')
    return {'state': 'Start', 'started_ut': started, 'task': task, 'vehicles': [
        {'vehicle': k, 'key': key, 'name': key, 'propellant_used_kg': u}
        for k, (key, u) in enumerate(zip(keys, used), start=1)]}


def hold(referee: Referee, vehicle: int, start: float, seconds: float, step: float = 1 / 30,
         distance: float = 5.0, speed: float = 0.05) -> list[float]:
    """Feed samples inside (or outside) the zone; return the times that completed."""
    done, t = [], start
    while t <= start + seconds + 1e-9:
        if referee.sample(vehicle, t, (distance, 0.0, 0.0), (0.0, speed, 0.0)):
            done.append(t)
        t += step
    return done


def test_a_vehicle_completes_after_the_hold_and_is_timed_from_the_start():
    referee = Referee()
    referee.mission(description())
    assert referee.scored() == [1, 2] and referee.target_vessel_id() == 'b' * 32
    done = hold(referee, 1, 1100.0, 31.0, step=0.5)
    assert done == [1130.0]
    entry = referee.ranking()['vehicles'][0]
    assert entry['completed'] and entry['completion_time_sec'] == 130.0
    assert entry['score'] == 770.0 and entry['progress'] == 1.0 and entry['rank'] == 1
    assert entry['distance_m'] == 5.0 and entry['relative_speed_mps'] == 0.05
    assert not referee.sample(1, 1200.0, (50.0, 0, 0), (0, 0, 0))   # done: nothing changes
    assert referee.ranking()['vehicles'][0]['distance_m'] == 5.0


def test_a_break_resets_the_hold_and_the_edges_of_the_zone_count():
    referee = Referee()
    referee.mission(description())
    assert hold(referee, 1, 1100.0, 20.0, step=1.0) == []
    assert referee.ranking()['vehicles'][0]['progress'] == 20.0 / 30.0
    assert not referee.sample(1, 1121.0, (10.01, 0, 0), (0, 0, 0))          # out of range
    assert referee.ranking()['vehicles'][0]['progress'] == 0.0
    assert hold(referee, 1, 1122.0, 20.0, step=1.0) == []
    assert not referee.sample(1, 1143.0, (1.0, 0, 0), (0.2, 0, 0))           # too fast
    assert not referee.sample(1, 1144.0, None, None)                        # target unseen
    assert hold(referee, 1, 1145.0, 30.0, step=1.0, distance=10.0, speed=0.199) == [1175.0]


def test_samples_before_the_start_and_a_run_that_stays_out_of_range_score_nothing():
    referee = Referee()
    referee.mission(description(started=None))
    assert hold(referee, 1, 900.0, 40.0) == []                 # not started
    referee.mission(description(started=1000.0))
    assert hold(referee, 1, 990.0, 5.0) == []                  # before the start
    assert hold(referee, 2, 1000.0, 100.0, distance=12.0) == []   # stays out of range
    ranking = referee.ranking()
    assert not ranking['all_completed']
    assert [e['completed'] for e in ranking['vehicles']] == [False, False, False]
    assert [e['score'] for e in ranking['vehicles']] == [0.0, 0.0, 0.0]
    assert ranking['vehicles'][2]['scored'] is False and ranking['vehicles'][2]['rank'] == 0


def test_too_late_is_not_completed():
    referee = Referee()
    referee.mission(description())
    assert hold(referee, 1, 1880.0, 40.0, step=1.0) == []       # hold ends at 1910 > 1900
    assert not referee.ranking()['vehicles'][0]['completed']


def test_ranking_by_time_then_propellant_then_progress():
    referee = Referee()
    referee.mission(description(used=(3.0, 1.0, 0.0)))
    hold(referee, 1, 1050.0, 31.0, step=1.0)
    hold(referee, 2, 1050.0, 31.0, step=1.0)                 # the same time, less propellant
    ranking = referee.ranking()
    assert [(e['vehicle'], e['rank']) for e in ranking['vehicles'][:2]] == [(1, 2), (2, 1)]
    assert ranking['all_completed']
    other = Referee()
    other.mission(description())
    hold(other, 1, 1050.0, 10.0, step=1.0)                   # 10 s held, then nothing
    hold(other, 2, 1050.0, 20.0, step=1.0)                   # 20 s held
    assert [e['rank'] for e in other.ranking()['vehicles'][:2]] == [2, 1]


def test_a_new_start_scores_afresh_and_no_task_scores_nobody():
    referee = Referee()
    referee.mission(description())
    hold(referee, 1, 1050.0, 31.0, step=1.0)
    assert referee.ranking()['vehicles'][0]['completed']
    referee.mission(description(started=None))               # reset
    assert not referee.ranking()['vehicles'][0]['completed']
    referee.mission(description(task=None))
    assert referee.scored() == [] and referee.target_vessel_id() == ''
    assert not referee.ranking()['all_completed']


def test_a_start_heard_of_late_is_scored_from_its_own_game_time():
    referee = Referee()
    referee.mission(description(started=None))
    assert hold(referee, 1, 995.0, 9.0) == []       # in the zone, the start not known yet
    referee.mission(description(started=1000.0))    # the news: the start was at 1000
    done = hold(referee, 1, 1004.0 + 1 / 30, 27.0)
    # from the first sample at or after the start: within two sample periods of 30 s
    assert len(done) == 1 and 1030.0 <= done[0] < 1030.0 + 2 / 30
    entry = referee.ranking()['vehicles'][0]
    assert 30.0 <= entry['completion_time_sec'] < 30.0 + 2 / 30
    # only BACKLOG_SEC of samples are kept: a start heard of later than that is late
    late = Referee()
    late.mission(description(started=None))
    hold(late, 1, 990.0, 25.0)
    late.mission(description(started=1000.0))
    assert late.scores[1].hold_from >= 1015.0 - BACKLOG_SEC - 1e-9
