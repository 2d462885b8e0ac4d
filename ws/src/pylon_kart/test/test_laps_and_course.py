"""The lap counter and the course lines on the ``kart`` track (plain logic, no ROS)."""

import math

import numpy as np
from pylon_kart.course import CLOSED, course_lines
from pylon_kart.laps import LapCounter
from pylon_track import load_track
import pytest

TRACK = load_track('kart')


def positions(s_values, lateral=0.0):
    """Return map points at arc lengths ``s_values`` (m), ``lateral`` m left of the line."""
    s = np.asarray(s_values, dtype=float)
    return TRACK.point_at(s) + lateral * TRACK.normal_at(s)


def test_laps_start_at_the_first_crossing_and_are_timed_between_crossings():
    counter = LapCounter(TRACK)
    x, y, _ = TRACK.grid_pose(0)                    # 3 m behind the line, 1.5 m to the left
    status = counter.update(0.0, x, y)
    assert status.lap == 0 and status.laps == 0 and status.best_lap is None
    assert status.lateral == pytest.approx(1.5, abs=1e-6)
    assert status.s == pytest.approx(TRACK.length - 3.0, abs=1e-6)
    # 10 m/s from 3 m behind the line, one position every 0.1 s, 0.5 m to the right
    speed, dt = 10.0, 0.1
    t = np.arange(1, 1000) * dt
    s = TRACK.length - 3.0 + speed * t
    for ti, (xi, yi) in zip(t, positions(s, -0.5)):
        status = counter.update(float(ti), float(xi), float(yi))
    lap_time = TRACK.length / speed
    driven = s[-1] - (TRACK.length - 3.0)
    assert status.progress == pytest.approx(driven, rel=1e-6)
    assert status.lap == math.floor(s[-1] / TRACK.length)   # lap 1 began at the line
    assert status.laps == status.lap - 1
    assert status.lap_times == pytest.approx([lap_time] * status.laps, abs=1e-6)
    assert status.best_lap == pytest.approx(lap_time, abs=1e-6)
    assert status.lateral == pytest.approx(-0.5, abs=1e-6)


def test_backing_over_the_line_counts_no_lap_twice():
    counter = LapCounter(TRACK)
    path = [TRACK.length - 2.0, 1.0, 3.0, -1.0 + TRACK.length, 2.0, 4.0]  # over, back, over
    statuses = [counter.update(float(i), *positions(s)) for i, s in enumerate(path)]
    assert [st.lap for st in statuses] == [0, 1, 1, 1, 1, 1]
    assert statuses[-1].laps == 0
    assert statuses[-1].progress == pytest.approx(6.0, abs=1e-6)


def test_bad_positions_are_refused_and_change_nothing():
    counter = LapCounter(TRACK)
    counter.update(1.0, *positions(10.0))
    for t, x, y in ((float('nan'), 0.0, 0.0), (2.0, float('inf'), 0.0)):
        with pytest.raises(ValueError, match='finite'):
            counter.update(t, x, y)
    with pytest.raises(ValueError, match='time went back'):
        counter.update(0.5, *positions(11.0))
    assert counter.update(2.0, *positions(12.0)).progress == pytest.approx(2.0, abs=1e-6)


def test_the_course_lines_are_the_track_edges_and_centreline():
    lines = course_lines(TRACK, spacing=1.0)
    assert set(lines) == {*CLOSED, 'start_line'}
    for name in CLOSED:
        line = lines[name]
        assert np.allclose(line[0], line[-1])                    # closed
        steps = np.linalg.norm(np.diff(line, axis=0), axis=1)
        # at most 1 m along the centreline, so more on the outside of the tightest turn
        widest = 1.0 + 0.5 * TRACK.width * np.abs(TRACK.curvature_at(TRACK.centreline_s)).max()
        assert steps.max() <= widest + 1e-6, name
    lateral = {name: TRACK.project(lines[name]).lateral for name in CLOSED}
    assert np.allclose(lateral['left_edge'], 0.5 * TRACK.width, atol=1e-6)
    assert np.allclose(lateral['right_edge'], -0.5 * TRACK.width, atol=1e-6)
    assert np.allclose(lateral['centreline'], 0.0, atol=1e-6)
    start = TRACK.project(lines['start_line'])
    assert np.allclose(np.abs(start.lateral), 0.5 * TRACK.width, atol=1e-6)
    assert np.allclose(np.mod(start.s + 1.0, TRACK.length) - 1.0, 0.0, atol=1e-6)
    assert len(course_lines(TRACK, spacing=5.0)['centreline']) < len(lines['centreline'])
    for bad in (0.0, -1.0, float('nan')):
        with pytest.raises(ValueError, match='spacing'):
            course_lines(TRACK, spacing=bad)


def test_the_viewers_messages_carry_the_course_and_the_trajectory():
    from pylon_kart import trajectory
    from pylon_kart.trajectory_node import (
        course_message,
        COURSE_STYLE,
        path_message,
        trajectory_message,
    )
    lines = course_lines(TRACK)
    markers = course_message(lines).markers
    assert [m.id for m in markers] == list(range(len(COURSE_STYLE)))
    for marker, name in zip(markers, COURSE_STYLE):
        assert marker.header.frame_id == 'map' and marker.type == marker.LINE_STRIP
        assert marker.scale.x == COURSE_STYLE[name][0] and marker.color.a > 0.0
        assert np.allclose([(p.x, p.y) for p in marker.points], lines[name])
    shipped = trajectory.read_csv(trajectory.shipped_path('kart'))
    msg = trajectory_message(shipped)
    msg.header.stamp.sec = 7
    path = path_message(msg)
    assert path.header.frame_id == 'map' and path.header.stamp.sec == 7
    assert np.allclose([(p.pose.position.x, p.pose.position.y) for p in path.poses],
                       shipped.xy)
    assert all(p.header.frame_id == 'map' for p in path.poses)
