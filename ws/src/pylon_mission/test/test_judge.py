"""The race judge: ranking order and the result files' contents."""

import json

from pylon_mission import judge
from pylon_mission.judge import KartRecord


def records():
    return [
        KartRecord(1, 'Kart 1', lap_times=(41.0, 40.0), section_times=((8.0, 9.0, 8.0, 8.0,
                   8.0), (8.0, 8.0, 8.0, 8.0, 8.0)), total_time=83.5, boosts_used=1,
                   collisions=({'at_sec': 12.5, 'with': 'kart_2'},)),
        KartRecord(2, 'Kart 2', lap_times=(39.0, 39.5), total_time=80.0, finished=True,
                   penalties=({'at_sec': 30.0, 'kind': 'track_limits'},)),
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
    assert two['finished'] and two['penalties'][0]['kind'] == 'track_limits'
    none = json.loads((tmp_path / 'd4-result-details.json').read_text())
    assert none['laps'] == 0 and none['best_lap_sec'] is None and none['rank'] == 5
    summary = json.loads((tmp_path / 'result-summary.json').read_text())
    assert summary['end'] == 'FinishAll' and summary['lap_target'] == 2
    assert [(e['rank'], e['vehicle'], e['laps']) for e in summary['ranking']] == [
        (1, 2, 2), (2, 1, 2), (3, 5, 2), (4, 3, 1), (5, 4, 0)]
