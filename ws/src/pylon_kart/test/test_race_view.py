"""The organisers' view of a race, pure: ground truth into map, standings from the statuses."""

import math

import numpy as np
from pylon_common import mission
from pylon_kart import race_view
from pylon_sim.game.bodies import enu_rotation
from pylon_track import load_track
import pytest

TRACK = load_track('kart')
INDEX = mission.STATUS_INDEX


def _ground_truth(slot: int, point, heading: float):
    """Return what the simulator's ground truth says of a kart at a map point and heading.

    ENU at the kart's anchor (its grid slot, where its runtime session began): the
    simulator's own construction (``pylon_sim.mod.telemetry``) from the body-fixed frame.
    """
    x, y, _ = TRACK.grid_pose(slot)
    lat, lon, _ = TRACK.geodetic_from_map(x, y, 0.0)
    rows = enu_rotation(lat, lon)
    anchor = TRACK.fixed_from_map([x, y, 0.0])
    position = rows @ (TRACK.fixed_from_map(point) - anchor)
    ahead = TRACK.fixed_from_map([point[0] + math.cos(heading), point[1] + math.sin(heading),
                                  point[2]]) - TRACK.fixed_from_map(point)
    east, north, _ = rows @ ahead
    return position, math.atan2(north, east)


@pytest.mark.parametrize('slot', [0, 1, 3])
def test_ground_truth_lands_on_the_course_in_map(slot):
    frame = race_view.GroundTruthFrame(TRACK, slot)
    gx, gy, gyaw = TRACK.grid_pose(slot)
    x, y, z, yaw = frame.to_map((0.0, 0.0, 0.0), _ground_truth(slot, (gx, gy, 0.0), gyaw)[1])
    assert (x, y, z) == pytest.approx((gx, gy, 0.0), abs=1e-6)
    assert yaw == pytest.approx(gyaw, abs=1e-6)
    # anywhere on the course, 100 m and more from the slot: exact to a micrometre
    for s in np.linspace(0.0, TRACK.length, 9)[:-1]:
        px, py = TRACK.point_at(s) + 1.2 * TRACK.normal_at(s)
        heading = float(TRACK.heading_at(s)) + 0.3
        position, enu_yaw = _ground_truth(slot, (px, py, 0.25), heading)
        x, y, z, yaw = frame.to_map(position, enu_yaw)
        assert (x, y, z) == pytest.approx((px, py, 0.25), abs=1e-6)
        assert math.remainder(yaw - heading, 2 * math.pi) == pytest.approx(0.0, abs=1e-6)
    # the ENU frames of two slots differ: the same truth is two places
    assert race_view.GroundTruthFrame(TRACK, 2).to_map((0.0, 0.0, 0.0), 0.0)[:2] != \
        pytest.approx(frame.to_map((0.0, 0.0, 0.0), 0.0)[:2], abs=0.5)


def test_a_slot_the_track_lacks_is_refused():
    with pytest.raises(IndexError):
        race_view.GroundTruthFrame(TRACK, len(TRACK.grid))


def test_grid_slots_parse_one_per_vehicle():
    assert race_view.parse_slots('', 3) == (0, 1, 2)
    assert race_view.parse_slots('2,0', 2) == (2, 0)
    for bad in ('1', '0,0', '0,x', '-1,2'):
        with pytest.raises(ValueError, match='grid_slots'):
            race_view.parse_slots(bad, 2)


def _status(laps: int, lap_time: float, elapsed: float, section: int = 0, boosts: int = 3,
            boosting: bool = False, rank: int = 0, best: float = 0.0,
            lap_end: float = 0.0) -> list[float]:
    values = [0.0] * len(mission.STATUS_FIELDS)
    for name, value in (('lapCount', laps), ('thisLapTime', lap_time), ('elapsed_sec', elapsed),
                        ('section', section), ('boostRemaining', boosts),
                        ('isBoosting', float(boosting)), ('rank', rank), ('best_lap_sec', best),
                        ('last_lap_end_sec', lap_end)):
        values[INDEX[name]] = value
    return values


def test_standings_time_each_lap_from_the_line_to_the_race_s_lap_ends():
    standings = race_view.Standings(2)
    # kart 1 crosses the line at 1.4 s (its first lap begins); its laps end at 41.4 and 80.9
    for t in np.arange(0.0, 90.0, 0.1):
        ends = [end for end in (41.4, 80.9) if t >= end]
        line = ends[-1] if ends else 1.4
        standings.update(1, _status(len(ends), t - line if t >= 1.4 else 0.0, t,
                                    section=int(t // 10) % 5, rank=1,
                                    best=39.5 if len(ends) == 2 else 40.0 if ends else 0.0,
                                    lap_end=ends[-1] if ends else 0.0))
    kart = standings.karts[1]
    assert kart.laps == 2 and kart.started == pytest.approx(1.4, abs=1e-6)
    assert kart.lap_ends == pytest.approx([41.4, 80.9])
    assert kart.lap_times == pytest.approx([40.0, 39.5], abs=1e-6)
    assert kart.best_lap == pytest.approx(39.5) and kart.last_line == pytest.approx(80.9)
    # kart 2 finished its one-lap race: its time into the lap is 0 from then on, the lap's
    # end is the race's (exact), whenever the status comes
    standings.update(2, _status(0, 1.0, 2.0, rank=2))
    standings.update(2, _status(1, 0.0, 44.0, rank=2, best=41.5, lap_end=42.5))
    standings.update(2, _status(1, 0.0, 50.0, rank=2, best=41.5, lap_end=42.5))
    assert standings.karts[2].lap_times == pytest.approx([41.5])
    assert [row['vehicle'] for row in standings.table()] == [1, 2]


def test_standings_follow_the_judge_s_places_and_know_no_lap_they_missed():
    standings = race_view.Standings(4)
    standings.update(3, _status(0, 1.0, 2.0, rank=2))
    standings.update(3, _status(1, 0.5, 42.5, rank=2, best=40.0, lap_end=42.0))
    standings.update(2, _status(0, 1.0, 2.0, rank=1))
    standings.update(2, _status(2, 0.5, 82.5, rank=1, best=39.0, lap_end=82.0))   # 2 at once
    assert [row['vehicle'] for row in standings.table()] == [2, 3, 1, 4]
    table = standings.table()
    assert table[0]['lap_times_sec'] == [] and table[0]['best_lap_sec'] == 39.0
    assert table[1] == {'rank': 2, 'vehicle': 3, 'laps': 1, 'lap_times_sec': [41.0],
                        'best_lap_sec': 40.0, 'last_line_sec': 42.0, 'first_line_sec': 1.0,
                        'section': 0, 'boosts_left': 3, 'statuses_seen': 2}
    assert table[2]['rank'] == 0 and table[2]['statuses_seen'] == 0     # never heard of


def test_standings_ignore_bad_statuses_and_start_again_after_a_reset():
    standings = race_view.Standings(1)
    standings.update(1, _status(0, 1.0, 2.0, rank=1))
    standings.update(1, _status(1, 0.5, 42.5, rank=1, lap_end=42.0))
    standings.update(1, [1.0, 2.0])                               # short
    standings.update(1, _status(0, 1.0, 2.0)[:13])                # a rendezvous's layout
    standings.update(1, _status(5, float('nan'), 50.0))           # not finite
    standings.update(7, _status(5, 1.0, 50.0))                    # no such kart
    assert standings.karts[1].laps == 1 and standings.karts[1].samples == 2
    standings.update(1, _status(0, 0.0, 0.0, boosts=3))           # reset: back on the grid
    assert standings.karts[1].laps == 0 and standings.karts[1].lap_times == []
    standings.update(1, _status(0, 2.0, 5.0, boosts=2, boosting=True, rank=1))
    kart = standings.karts[1]
    assert kart.boosting and kart.boosts_left == 2
    assert race_view.label(kart) == 'P1 #1 lap 0   2.0s b2 BOOST'
    assert race_view.label(race_view.KartRecord(3)) == 'P- #3 lap 0   0.0s b0'
