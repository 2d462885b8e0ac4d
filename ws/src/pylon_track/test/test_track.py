"""The track file and the geometry on it: length, projection, inside, sections, grid, geodesy."""

import math

import numpy as np
from pylon_track import load_track, Track, track_names, TrackError
from pylon_track.track import SAMPLE_SPACING, track_from_dict
import pytest
import yaml

KART = load_track('kart')


def small(**changes) -> dict:
    """Return a valid 20 x 40 m stadium track's dict, with ``changes`` applied."""
    data = {'name': 'small', 'width': 6.0,
            'origin': {'body': 'Kerbin', 'body_radius': 600000.0, 'latitude': 0.0,
                       'longitude': 0.0},
            'start': {'x': 0.0, 'y': -10.0, 'heading_deg': 0.0},
            'segments': [{'straight': 20}, {'arc': 10, 'turn_deg': 180},
                         {'straight': 20}, {'arc': 10, 'turn_deg': 180}],
            'sections': [0, 20, 51.4],
            'grid': [{'behind': 2.0, 'left': 1.0}]}
    data.update(changes)
    return data


def test_the_kart_track_ships_with_the_package_and_loads_by_name_and_by_path(tmp_path):
    assert 'kart' in track_names()
    assert KART.name == 'kart' and KART.width == 8.0
    path = tmp_path / 'copy.yaml'
    path.write_text(yaml.safe_dump(small()))
    assert load_track(path).name == 'small' and load_track(str(path)).length > 0


def test_length_is_the_sum_of_the_segments():
    expected = 70 + 25 * math.pi / 2 + 40 + 10 * math.pi + 10 + 15 * math.pi / 2 + 85 \
        + 2 * 20 * math.pi / 2 + 25
    assert KART.length == pytest.approx(expected, abs=1e-9)
    assert 300.0 <= KART.length <= 450.0
    # the dense centreline: its chords add up to the length within the arcs' sagitta
    closed = np.vstack([KART.centreline, KART.centreline[:1]])
    chords = np.hypot(*np.diff(closed, axis=0).T)
    assert chords.max() <= SAMPLE_SPACING + 1e-9
    assert chords.sum() == pytest.approx(KART.length, rel=1e-4)
    assert KART.centreline[0] == pytest.approx(KART.point_at(0.0))


def test_the_kart_course_has_what_a_kart_course_needs():
    radii = [1 / abs(seg.curvature) for seg in KART.segments if seg.curvature]
    straights = [seg.length for seg in KART.segments if not seg.curvature]
    assert min(radii) == 10.0 and max(radii) <= 30.0 and max(straights) >= 60.0
    assert np.hypot(*KART.centreline.T).max() + KART.width / 2 <= 110.0
    assert KART.self_gap() >= KART.width


def test_heading_and_curvature_of_a_straight_and_an_arc():
    # the main straight heads east, the back straight (214.25 .. 299.25 m) west
    assert KART.heading_at(30.0) == pytest.approx(0.0)
    assert abs(KART.heading_at(250.0)) == pytest.approx(math.pi)
    assert KART.curvature_at(30.0) == 0.0
    # half-way round turn 1 (left, 25 m): 45 deg, curvature +1/25; turn 3 is to the right
    assert KART.heading_at(70 + 25 * math.pi / 4) == pytest.approx(math.pi / 4)
    assert KART.curvature_at(80.0) == pytest.approx(1 / 25)
    assert KART.curvature_at(200.0) == pytest.approx(-1 / 15)
    # the heading is the direction of the centreline
    s = np.linspace(0.0, KART.length, 400, endpoint=False)
    ahead = (KART.point_at(s + 0.01) - KART.point_at(s - 0.01)) / 0.02
    error = np.arctan2(ahead[:, 1], ahead[:, 0]) - KART.heading_at(s)
    assert np.abs(np.mod(error + math.pi, 2 * math.pi) - math.pi).max() < 1e-4


def test_projection_round_trips_s_and_lateral():
    rng = np.random.default_rng(3)
    s = rng.uniform(0.0, KART.length, 500)
    lateral = rng.uniform(-4.0, 4.0, 500)
    points = KART.point_at(s) + lateral[:, None] * KART.normal_at(s)
    back = KART.project(points)
    gap = np.mod(back.s - s + KART.length / 2, KART.length) - KART.length / 2
    assert np.abs(gap).max() < 1e-9
    assert back.lateral == pytest.approx(lateral, abs=1e-9)
    turn = np.mod(back.heading - KART.heading_at(s) + math.pi, 2 * math.pi) - math.pi
    assert np.abs(turn).max() < 1e-9
    one = KART.project(KART.point_at(100.0) + 2.0 * KART.normal_at(100.0))
    assert (one.s, one.lateral) == pytest.approx((100.0, 2.0))
    assert isinstance(one.s, float)


def test_left_is_positive_lateral():
    # on the main straight (heading east) north is left
    x, y = KART.point_at(20.0)
    assert KART.project([x, y + 3.0]).lateral == pytest.approx(3.0)
    assert KART.project([x, y - 3.0]).lateral == pytest.approx(-3.0)


def test_inside_and_outside():
    s = np.array([10.0, 90.0, 160.0, 200.0, 250.0, 340.0])
    normal = KART.normal_at(s)
    inner = KART.point_at(s) + 3.9 * normal
    outer = KART.point_at(s) - 4.1 * normal
    assert KART.inside(inner).all()
    assert not KART.inside(outer).any()
    assert KART.inside(KART.centreline).all()
    assert not KART.inside([0.0, -17.5])      # the infield
    assert KART.inside(KART.point_at(5.0))


def test_sections_are_monotonic_within_the_length_and_found_by_s():
    sections = KART.sections
    assert len(sections) >= 4 and sections[0] == 0.0
    assert all(b > a for a, b in zip(sections, sections[1:])) and sections[-1] < KART.length
    assert KART.section_at(0.0) == 0 and KART.section_at(69.9) == 0
    assert KART.section_at(70.0) == 1 and KART.section_at(KART.length - 0.1) == 4
    assert KART.section_at(KART.length + 1.0) == 0
    assert list(KART.section_at(np.array(sections))) == list(range(len(sections)))


def test_grid_slots_are_behind_the_line_inside_the_track_and_face_the_driving_direction():
    poses = [KART.grid_pose(k) for k in range(4)]
    for k, (x, y, yaw) in enumerate(poses):
        where = KART.project([x, y])
        behind = KART.length - where.s
        assert behind == pytest.approx(3.0 + 4.0 * k)
        assert where.lateral == pytest.approx(1.5 if k % 2 == 0 else -1.5)
        assert KART.inside([x, y])
        assert yaw == pytest.approx(KART.heading_at(where.s))
    with pytest.raises(IndexError):
        KART.grid_pose(4)


def test_geodetic_round_trip_is_exact_on_the_sphere():
    origin = KART.origin
    assert KART.map_from_geodetic(origin.latitude, origin.longitude, origin.altitude) \
        == pytest.approx((0.0, 0.0, 0.0), abs=1e-9)
    rng = np.random.default_rng(1)
    xyz = rng.uniform(-150.0, 150.0, (200, 3))
    lat, lon, alt = KART.geodetic_from_map(*xyz.T)
    back = np.column_stack(KART.map_from_geodetic(lat, lon, alt))
    assert np.abs(back - xyz).max() < 1e-3 * 1e-3     # well under 1 mm
    # map is ENU at the origin: 100 m east is 100 / R rad of longitude / cos(lat), and the
    # sphere falls away below the tangent plane by about d^2 / 2R
    lat1, lon1, alt1 = KART.geodetic_from_map(100.0, 0.0, 0.0)
    radius = origin.body_radius
    assert math.radians(lon1 - origin.longitude) * radius * math.cos(
        math.radians(origin.latitude)) == pytest.approx(100.0, rel=1e-6)
    assert alt1 == pytest.approx(100.0 ** 2 / (2 * radius), rel=1e-3)
    x, y, z = KART.map_from_geodetic(origin.latitude + math.degrees(50.0 / radius),
                                     origin.longitude, 0.0)
    assert (x, y) == pytest.approx((0.0, 50.0), abs=1e-4) and z < 0


@pytest.mark.parametrize('changes, words', [
    ({'segments': [{'straight': 20}, {'arc': 10, 'turn_deg': 180}, {'straight': 21},
                   {'arc': 10, 'turn_deg': 180}]}, 'do not close'),
    ({'segments': [{'straight': 20}, {'arc': 2, 'turn_deg': 180}]}, 'exceed half'),
    ({'sections': [0, 30, 20]}, 'increase strictly'),
    ({'sections': [5, 30]}, 'starting with 0'),
    ({'grid': [{'behind': 2.0, 'left': 4.0}]}, 'within the track'),
    ({'segments': [{'arc': 10, 'turn_deg': 180}, {'arc': 10, 'turn_deg': 180},   # an 8
                   {'arc': 10, 'turn_deg': -180}, {'arc': 10, 'turn_deg': -180}]},
     'comes within'),
    ({'lanes': 2}, 'unknown key'),
])
def test_bad_track_files_are_refused_naming_the_key(changes, words):
    with pytest.raises(TrackError, match=words):
        track_from_dict(small(**changes), 'small.yaml')


def test_an_unknown_track_name_lists_the_shipped_ones():
    with pytest.raises(TrackError, match='kart'):
        load_track('nowhere')


def test_a_stadium_is_what_its_segments_say():
    track = track_from_dict(small())
    assert isinstance(track, Track)
    assert track.length == pytest.approx(40 + 20 * math.pi)
    assert track.point_at(20 + 10 * math.pi / 2) == pytest.approx([30.0, 0.0])
    assert track.project([10.0, 0.0]).lateral == pytest.approx(10.0)   # the centre, left
