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
            boosting: bool = False) -> list[float]:
    values = [0.0] * len(mission.STATUS_FIELDS)
    values[INDEX['lapCount']], values[INDEX['thisLapTime']] = laps, lap_time
    values[INDEX['elapsed_sec']], values[INDEX['section']] = elapsed, section
    values[INDEX['boostRemaining']], values[INDEX['isBoosting']] = boosts, float(boosting)
    return values


def test_standings_count_laps_and_time_them_from_the_line_crossings():
    standings = race_view.Standings(2)
    # kart 1 crosses the line at 1.4 s (its first lap begins), 41.4 s and 80.9 s
    for t in np.arange(0.0, 90.0, 0.1):
        laps = int(t >= 41.4) + int(t >= 80.9)
        line = 80.9 if t >= 80.9 else 41.4 if t >= 41.4 else 1.4
        standings.update(1, _status(laps, t - line if t >= 1.4 else 0.0, t,
                                    section=int(t // 10) % 5))
    kart = standings.karts[1]
    assert kart.laps == 2 and kart.crossings == pytest.approx([1.4, 41.4, 80.9], abs=1e-6)
    assert kart.lap_times == pytest.approx([40.0, 39.5], abs=1e-6)
    assert kart.best_lap == pytest.approx(39.5) and kart.last_line == pytest.approx(80.9)
    # kart 2 finished its one-lap race at 42.0 s: its lap time stays 0 from then on, so its
    # crossing is the first status that counts the lap (0.1 s late at most)
    standings.update(2, _status(0, 1.0, 2.0))
    standings.update(2, _status(0, 39.95, 40.95))
    standings.update(2, _status(1, 0.0, 42.05))
    standings.update(2, _status(1, 0.0, 50.0))
    assert standings.karts[2].lap_times == pytest.approx([41.05])
    assert [row['vehicle'] for row in standings.table()] == [1, 2]
    assert standings.positions() == {1: 1, 2: 2}


def test_standings_rank_laps_then_the_earlier_line_then_the_number():
    standings = race_view.Standings(4)
    standings.update(3, _status(0, 1.0, 2.0))
    standings.update(3, _status(1, 0.5, 42.5))      # lap completed at 42.0
    standings.update(2, _status(0, 1.0, 2.0))
    standings.update(2, _status(1, 0.5, 41.5))      # ... at 41.0: ahead of kart 3
    assert [row['vehicle'] for row in standings.table()] == [2, 3, 1, 4]
    table = standings.table()
    assert table[0] == {'rank': 1, 'vehicle': 2, 'laps': 1, 'lap_times_sec': [40.0],
                        'best_lap_sec': 40.0, 'last_line_sec': 41.0, 'section': 0,
                        'boosts_left': 3, 'statuses_seen': 2}


def test_standings_ignore_bad_statuses_and_start_again_after_a_reset():
    standings = race_view.Standings(1)
    standings.update(1, _status(0, 1.0, 2.0))
    standings.update(1, _status(1, 0.5, 42.5))
    standings.update(1, [1.0, 2.0])                               # short
    standings.update(1, _status(5, float('nan'), 50.0))           # not finite
    standings.update(7, _status(5, 1.0, 50.0))                    # no such kart
    assert standings.karts[1].laps == 1 and standings.karts[1].samples == 2
    standings.update(1, _status(0, 0.0, 0.0, boosts=3))           # reset: back on the grid
    assert standings.karts[1].laps == 0 and standings.karts[1].lap_times == []
    standings.update(1, _status(0, 2.0, 5.0, boosts=2, boosting=True))
    kart = standings.karts[1]
    assert kart.boosting and kart.boosts_left == 2
    assert race_view.label(kart, 1) == 'P1 #1 lap 0   2.0s b2 BOOST'
