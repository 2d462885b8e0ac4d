"""The race judge: ranking order, records from the simulator's race, the result files."""

import json

from pylon_common import mission
from pylon_mission import judge
from pylon_mission.judge import KartRecord, RaceJudge


def records():
    return [
        KartRecord(1, 'Kart 1', lap_times=(41.0, 40.0), section_times=((8.0, 9.0, 8.0, 8.0,
                   8.0), (8.0, 8.0, 8.0, 8.0, 8.0)), total_time=83.5, boosts_used=1,
                   collisions=({'at_sec': 12.5, 'with': 'kart_2'},)),
        KartRecord(2, 'Kart 2', lap_times=(39.0, 39.5), total_time=80.0, finished=True,
                   penalties=1, events={'off_track': 1}),
        KartRecord(3, 'Kart 3', lap_times=(45.0,), total_time=47.0),
        KartRecord(4, 'Kart 4'),
        KartRecord(5, 'Kart 5', lap_times=(41.5, 40.5), total_time=83.5),
    ]


def test_more_laps_first_then_the_earlier_finish_then_the_vehicle():
    order = [r.vehicle for r in judge.rank(records())]
    assert order == [2, 1, 5, 3, 4]


def test_the_files_say_what_each_kart_did(tmp_path):
    paths = judge.write(tmp_path, records(), 'FinishAll', 2, 420.0)
    assert sorted(p.name for p in paths) == sorted(
        ['d1-result-details.json', 'd2-result-details.json', 'd3-result-details.json',
         'd4-result-details.json', 'd5-result-details.json', 'result-summary.json'])
    one = json.loads((tmp_path / 'd1-result-details.json').read_text())
    assert one['rank'] == 2 and one['laps'] == 2 and one['lap_times_sec'] == [41.0, 40.0]
    assert one['best_lap_sec'] == 40.0 and one['total_time_sec'] == 83.5
    assert one['section_times_sec'][1] == [8.0] * 5
    assert one['collision_count'] == 1 and one['collisions'][0]['with'] == 'kart_2'
    assert one['boosts_used'] == 1 and one['penalty_count'] == 0
    two = json.loads((tmp_path / 'd2-result-details.json').read_text())
    assert two['finished'] and two['penalty_count'] == 1 and two['events'] == {'off_track': 1}
    none = json.loads((tmp_path / 'd4-result-details.json').read_text())
    assert none['laps'] == 0 and none['best_lap_sec'] is None and none['rank'] == 5
    summary = json.loads((tmp_path / 'result-summary.json').read_text())
    assert summary['end'] == 'FinishAll' and summary['lap_target'] == 2
    assert [(e['rank'], e['vehicle'], e['laps']) for e in summary['ranking']] == [
        (1, 2, 2), (2, 1, 2), (3, 5, 2), (4, 3, 1), (5, 4, 0)]


def kart(laps=(), ends=(), finished=False, penalties=0, boosts_used=0, **extra) -> dict:
    """Return a kart's race as the simulator reports it (the fields the judge reads)."""
    return {'lapCount': len(laps), 'lapTimes': list(laps),
            'sectionTimes': [[t / 2, t / 2] for t in laps], 'lapEnds': list(ends),
            'finished': finished, 'finishTime': ends[-1] if finished else None,
            'boostsUsed': boosts_used, 'bestLap': min(laps) if laps else None,
            'penalties': {'count': penalties, 'active': False, 'offTrack': False,
                          'endsIn': 0.0},
            'events': {'off_track': penalties} if penalties else {}, **extra}


def description(state, *karts, started=100.0) -> dict:
    return {'state': state, 'started_ut': started,
            'task': {'kind': 'race', 'track': 'kart', 'laps': 2, 'time_limit_sec': 60.0},
            'vehicles': [{'vehicle': k, 'key': f'kart_{k}', 'name': f'Kart {k}', 'race': race}
                         for k, race in enumerate(karts, start=1)]}


def test_a_record_is_the_simulators_race_of_the_kart():
    record = judge.record({'vehicle': 2, 'name': 'Kart 2', 'race': kart(
        (20.0, 19.5), (23.0, 42.5), True, penalties=1, boosts_used=2, collisions=1,
        collisionLog=[{'at': 5.0, 'with': 'boulder', 'speed': 3.1, 'impulse': 300.0}])})
    assert record == KartRecord(2, 'Kart 2', (20.0, 19.5), ((10.0, 10.0), (9.75, 9.75)),
                                ({'at': 5.0, 'with': 'boulder', 'speed': 3.1,
                                  'impulse': 300.0},), 1, 2, True, 42.5, {'off_track': 1})
    # no collision log (a simulator without one): none; no lap: no time
    assert judge.record({'vehicle': 1, 'race': kart()}) == KartRecord(1, '')


def test_the_race_judge_ranks_and_writes_once_per_race_end(tmp_path):
    j = RaceJudge()
    j.mission(description(mission.START, kart((21.0,), (24.0,)), kart((20.0,), (27.0,))))
    ranking = j.ranking()
    assert [(e['vehicle'], e['rank'], e['key'], e['completed']) for e in ranking['vehicles']] \
        == [(1, 1, 'kart_1', False), (2, 2, 'kart_2', False)]
    assert ranking['kind'] == 'race' and ranking['end'] is None and ranking['lap_target'] == 2
    assert j.due() is None
    first = kart((21.0, 21.0), (24.0, 45.0), True)
    j.mission(description(mission.LAP_COMPLETE, first, kart((20.0,), (27.0,))))
    assert j.due() is None
    j.mission(description(mission.FINISH, first, kart((20.0,), (27.0,))))
    assert j.due() == mission.FINISH and j.due() is None        # once
    j.mission(description(mission.FINISH, first, kart((20.0,), (27.0,))))
    assert j.due() is None                                      # still the same end
    paths = j.write(tmp_path, mission.FINISH)
    summary = json.loads((tmp_path / judge.SUMMARY_FILE).read_text())
    assert summary['end'] == 'Finish' and summary['time_limit_sec'] == 60.0
    assert [e['vehicle'] for e in summary['ranking']] == [1, 2] and len(paths) == 3
    # a reset, a new race: armed again; FinishAll
    j.mission(description(mission.PLAY_START, kart(), kart(), started=None))
    j.mission(description(mission.FINISH_ALL, first, kart((20.0, 20.0), (27.0, 47.0), True),
                          started=300.0))
    assert j.due() == mission.FINISH_ALL and j.ranking()['all_completed']


def test_the_race_judge_knows_a_race():
    assert judge.is_race(description(mission.START))
    assert not judge.is_race({'task': {'kind': 'rendezvous'}}) and not judge.is_race({})
