"""The race on the kart track: gates, laps, section and lap times, boosts, track limits."""

import math

import numpy as np
from pylon_track import load_track
from pylon_track.race import (
    crossings,
    FIRED,
    GRID,
    IGNORED,
    Inputs,
    MALFORMED,
    mode_rules,
    OVER,
    Race,
    RaceRules,
    RULE_NAMES,
    RUNNING,
    track_gates,
)
import pytest

TRACK = load_track('kart')
L = TRACK.length
SPEED = 10.0          # m/s along the centreline
DT = 0.02             # s, the simulator's physics step
GRID_S = L - TRACK.grid[0][0]      # slot 0, 3 m behind the line


def at(s: float, lateral: float = 0.0) -> Inputs:
    """Return the inputs of a kart at arc length ``s`` (unwrapped is fine), ``lateral`` left."""
    x, y = TRACK.point_at(s) + lateral * TRACK.normal_at(s)
    return Inputs(float(x), float(y))


class Run:
    """One kart (of ``karts``) driven through a race by arc length, step by step."""

    def __init__(self, rules: RaceRules | None = None, karts: int = 1,
                 start: bool = True) -> None:
        self.race = Race(TRACK, rules or RaceRules())
        self.state = self.race.initial(karts)
        self.s = GRID_S
        self.put(self.s)
        if start:
            self.state = self.race.start(self.state)

    def put(self, s: float, lateral: float = 0.0, dt: float = 0.0) -> None:
        """Step the race by ``dt`` with kart 0 at ``s``, the others standing still."""
        others = [None] * (len(self.state.karts) - 1)
        self.state = self.race.step(self.state, [at(s, lateral), *others], dt)
        self.s = s

    def drive(self, distance: float, speed: float = SPEED, lateral: float = 0.0) -> None:
        """Drive ``distance`` m along the centreline (negative: backwards) at ``speed``."""
        steps = math.ceil(abs(distance) / (speed * DT) - 1e-9)
        for _ in range(steps):
            self.put(self.s + distance / steps, lateral, abs(distance) / steps / speed)

    def to(self, s: float, speed: float = SPEED) -> None:
        """Drive forward to the unwrapped arc length ``s``."""
        self.drive(s - self.s, speed)

    @property
    def kart(self) -> dict:
        return self.race.kart_status(self.state, 0)

    @property
    def events(self) -> dict:
        return self.kart['events']


# -- rules and gates --------------------------------------------------------------------
def test_the_modes_are_the_competitions_and_every_rule_can_be_set():
    assert (mode_rules(1).laps, mode_rules(1).time_limit_sec) == (6, 600.0)
    assert (mode_rules(4).laps, mode_rules(4).time_limit_sec) == (6, 420.0)
    assert mode_rules(2).time_limit_sec == 420.0          # two karts race as four do
    assert mode_rules(4, laps=3, boosts=1).to_dict() == {
        **RaceRules().to_dict(), 'laps': 3, 'boosts': 1, 'time_limit_sec': 420.0}
    assert set(RaceRules().to_dict()) == set(RULE_NAMES)
    for bad in ({'laps': 0}, {'laps': 2.5}, {'boosts': -1}, {'boost_sec': 0},
                {'time_limit_sec': math.inf}, {'penalty_speed_mps': -1.0},
                {'boost_torque_gain': 'x'}, {'laps': True}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            RaceRules(**bad)
    with pytest.raises(ValueError):
        mode_rules(0)


def test_a_gate_at_every_section_start_across_the_track():
    gates = track_gates(TRACK, 3.0)
    assert [g.s for g in gates] == list(TRACK.sections)
    for gate in gates:
        assert (gate.x, gate.y) == pytest.approx(tuple(TRACK.point_at(gate.s)))
        assert gate.half == 7.0
    # a gate long enough to reach the hairpin's other leg is refused
    with pytest.raises(ValueError, match='gate 2 .* another part'):
        track_gates(TRACK, 8.0)


def test_a_path_crosses_a_gate_forward_or_backward_only_within_its_length():
    line = track_gates(TRACK, 3.0)[:1]
    behind, ahead = at(-1.0), at(1.0)
    assert crossings(line, (behind.x, behind.y), (ahead.x, ahead.y)) == [
        (pytest.approx(0.5), 0, True)]
    assert crossings(line, (ahead.x, ahead.y), (behind.x, behind.y)) == [
        (pytest.approx(0.5), 0, False)]
    wide_behind, wide_ahead = at(-1.0, 7.5), at(1.0, 7.5)       # beyond the gate's end
    assert crossings(line, (wide_behind.x, wide_behind.y), (wide_ahead.x, wide_ahead.y)) == []
    on = at(0.0)
    assert crossings(line, (behind.x, behind.y), (on.x, on.y))[0][2] is True
    assert crossings(line, (on.x, on.y), (ahead.x, ahead.y)) == []


# -- laps -------------------------------------------------------------------------------
def test_full_laps_count_with_lap_and_section_times_on_the_clock():
    run = Run()
    assert run.kart['section'] == 4 and run.kart['lapCount'] == 0
    run.drive(2.0)                         # still behind the line: no lap yet
    assert run.kart['thisLapTime'] == 0.0
    run.drive(2.0)                         # over it, 3 m from the grid at 10 m/s
    start = 3.0 / SPEED
    assert run.state.t - start == pytest.approx(run.kart['thisLapTime'], abs=1e-9)
    assert run.kart['section'] == 0
    run.to(L + 100.0)
    assert run.kart['section'] == 1 and run.kart['currentSectionTimes'] == [
        pytest.approx(TRACK.sections[1] / SPEED, abs=1e-6)]
    run.to(L + L + 1.0)
    kart = run.kart
    assert kart['lapCount'] == 1
    assert kart['lapTimes'] == [pytest.approx(L / SPEED, abs=1e-6)]
    bounds = [*TRACK.sections, L]
    expected = [(b - a) / SPEED for a, b in zip(bounds, bounds[1:])]
    assert kart['sectionTimes'][0] == pytest.approx(expected, abs=1e-6)
    assert sum(kart['sectionTimes'][0]) == pytest.approx(kart['lapTimes'][0], abs=1e-9)
    assert kart['thisLapTime'] == pytest.approx(1.0 / SPEED, abs=1e-6)
    assert kart['bestLap'] == kart['lapTimes'][0]
    run.to(3 * L + 1.0, speed=20.0)        # a faster second lap (its first metre at 10 m/s)
    assert run.kart['lapTimes'] == [pytest.approx(L / SPEED, abs=1e-6),
                                    pytest.approx(1.0 / SPEED + (L - 1.0) / 20.0, abs=1e-6)]
    assert run.kart['bestLap'] == run.kart['lapTimes'][1]
    assert run.events == {}


def test_the_lap_time_is_interpolated_at_the_crossing_not_rounded_to_a_step():
    run = Run()
    run.put(L - 0.3, dt=1.0)              # one coarse step each side of the line
    run.put(L + 0.1, dt=1.0)
    # 0.3 m of 0.4 m: the line was crossed 0.75 s into the step that began at t = 1
    assert run.state.t - run.kart['thisLapTime'] == pytest.approx(1.75, abs=1e-6)


def test_the_last_lap_finishes_the_kart_and_then_the_race():
    run = Run(RaceRules(laps=2), karts=2)
    run.to(L + 2 * L + 5.0)
    kart = run.kart
    assert kart['lapCount'] == 2 and kart['finished']
    assert kart['finishTime'] == pytest.approx(3.0 / SPEED + 2 * L / SPEED, abs=1e-6)
    # each lap's end in race time: the line 3 m ahead of the grid, then a lap each
    assert kart['lapEnds'] == pytest.approx([3.0 / SPEED + L / SPEED, kart['finishTime']],
                                            abs=1e-6)
    assert run.state.phase == RUNNING           # the second kart has not finished
    run.to(run.s + L + 5.0)                      # nothing more counts for the finished kart
    assert run.kart['lapCount'] == 2 and run.kart['thisLapTime'] == 0.0
    one = Run(RaceRules(laps=1))
    one.to(2 * L + 1.0)
    assert one.state.phase == OVER and one.kart['finished']


def test_a_lap_that_skips_a_section_does_not_count():
    run = Run()
    run.to(L + 45.0)                                 # over the line, on the main straight
    # straight north across the infield onto the back straight (x = 20 m on both)
    a, b = at(45.0), at(229.25)
    assert a.x == pytest.approx(b.x, abs=0.01)
    for k in range(1, 41):
        x, y = a.x + k / 40 * (b.x - a.x), a.y + k / 40 * (b.y - a.y)
        run.state = run.race.step(run.state, [Inputs(x, y)], DT)
    run.s = L + 229.25
    run.to(2 * L + 1.0)                              # on round, over the line
    assert run.kart['lapCount'] == 0
    assert run.events['skipped_section'] == 1 and run.events['invalid_lap'] == 1
    run.to(3 * L + 1.0)                              # the next lap is clean and counts
    assert run.kart['lapCount'] == 1
    assert run.kart['lapTimes'] == [pytest.approx(L / SPEED, abs=1e-6)]


def test_crossing_the_line_backwards_counts_no_lap():
    run = Run()
    run.drive(-50.0)                                 # away from the line, the wrong way
    run.drive(-(L - 60.0))                           # round the course backwards
    run.drive(-20.0)                                 # and over the line backwards
    assert run.s < 0.0 and run.kart['lapCount'] == 0
    assert run.events['wrong_way'] == 5              # gates 4, 3, 2, 1, the line backwards
    assert run.kart['thisLapTime'] == 0.0 and run.kart['section'] == 4


def test_backing_over_the_line_and_forward_again_counts_no_lap_twice():
    run = Run()
    run.to(2 * L + 5.0)                              # one lap counted, 5 m into the next
    assert run.kart['lapCount'] == 1
    for _ in range(3):                               # back over the line and forward again
        run.drive(-10.0)
        assert run.kart['thisLapTime'] == 0.0 and run.kart['section'] == 4
        run.drive(10.0)
    assert run.kart['lapCount'] == 1
    assert run.events == {'backed_over_gate': 3}
    begun = run.state.t - run.kart['thisLapTime']    # the lap begins at the last crossing
    assert run.kart['thisLapTime'] == pytest.approx(0.5, abs=1e-6)
    run.to(run.s + L)
    assert run.kart['lapCount'] == 2
    assert run.kart['lapTimes'][-1] == pytest.approx(L / SPEED, abs=1e-6)
    assert run.state.t - run.kart['thisLapTime'] - begun == pytest.approx(L / SPEED, abs=1e-6)


def test_backing_over_an_inner_gate_and_on_again_keeps_the_lap():
    run = Run()
    run.to(L + TRACK.sections[2] + 5.0)
    run.drive(-10.0)                                 # back over gate 2
    assert run.kart['section'] == 1
    run.to(2 * L + 1.0)
    assert run.kart['lapCount'] == 1 and run.events == {'backed_over_gate': 1}
    # the section time of section 1 includes the way back and forward again
    assert run.kart['sectionTimes'][0][1] == pytest.approx(
        (TRACK.sections[2] - TRACK.sections[1] + 20.0) / SPEED, abs=1e-6)


def test_nothing_is_judged_before_the_start_and_the_session_time_counts_down():
    run = Run(RaceRules(time_limit_sec=60.0), start=False)
    assert run.state.phase == GRID and run.kart['sessionTime'] == 60.0
    run.to(L + 200.0)                                # driven before the start: nothing
    assert run.state.t == 0.0 and run.kart['lapCount'] == 0 and run.kart['section'] == 4
    run.drive(-200.0 - 10.0)
    run.state = run.race.start(run.state)
    with pytest.raises(ValueError, match='running'):
        run.race.start(run.state)
    run.drive(10.0)
    assert run.kart['sessionTime'] == pytest.approx(59.0, abs=1e-9)
    run.to(L + 290.0, speed=5.0)                     # 59 s of session used, no lap yet
    assert run.state.phase == RUNNING and run.kart['sessionTime'] == pytest.approx(1.0)
    run.drive(15.0, speed=5.0)                       # the limit runs out at 60 s
    assert run.state.phase == OVER and run.state.t == 60.0
    assert run.kart['sessionTime'] == 0.0 and run.kart['lapCount'] == 0


def test_a_crossing_after_the_time_limit_does_not_count():
    run = Run(RaceRules(time_limit_sec=3.0 / SPEED + L / SPEED - 0.01))
    run.to(2 * L + 1.0)
    assert run.state.phase == OVER and run.kart['lapCount'] == 0


# -- boost ------------------------------------------------------------------------------
def press(run: Run, value) -> str:
    run.state, outcome = run.race.boost(run.state, 0, value)
    return outcome


def test_a_boost_fires_on_a_rising_edge_and_lasts_its_duration_with_its_gains():
    rules = RaceRules(boosts=2, boost_sec=2.0, boost_torque_gain=1.5, boost_speed_gain=1.2)
    run = Run(rules, start=False)
    assert press(run, 1.0) == 'not_started'          # before the start: refused
    run.state = run.race.start(run.state)
    assert press(run, 1.0) == IGNORED                # still pressed: no edge
    assert press(run, 0.0) == IGNORED
    assert run.race.drive(run.state, 0) == (1.0, 1.0, None)
    assert press(run, 1.0) == FIRED
    assert run.kart['isBoosting'] and run.kart['boostRemaining'] == 1
    assert run.race.drive(run.state, 0) == (1.5, 1.2, None)
    run.drive(1.9 * SPEED)
    assert run.kart['isBoosting'] and run.kart['boostEndsIn'] == pytest.approx(0.1, abs=1e-6)
    assert press(run, 0.5) == IGNORED
    assert press(run, 1.2) == 'boosting'             # an edge while boosting: refused
    run.drive(0.2 * SPEED)
    assert not run.kart['isBoosting'] and run.race.drive(run.state, 0) == (1.0, 1.0, None)
    assert press(run, 0.0) == IGNORED and press(run, 1.0) == FIRED
    run.drive(2.0 * SPEED)
    assert press(run, 0.0) == IGNORED and press(run, 1.0) == 'none_left'
    kart = run.kart
    assert kart['boostRemaining'] == 0 and kart['boostsUsed'] == 2
    assert kart['events'] == {'boost_refused_not_started': 1, 'boost_fired': 2,
                              'boost_refused_boosting': 1, 'boost_refused_none_left': 1}


def test_a_boost_command_in_the_step_inputs_acts_as_one_given_alone():
    run = Run(RaceRules(boost_sec=1.0))
    run.state = run.race.step(run.state, [Inputs(at(GRID_S).x, at(GRID_S).y, boost=1.0)], DT)
    assert run.kart['isBoosting'] and run.kart['boostEndsIn'] == pytest.approx(1.0 - DT)


def test_a_malformed_boost_command_is_counted_and_changes_nothing():
    run = Run()
    for bad in (math.nan, math.inf, 'go', None, True, [1.0]):
        assert press(run, bad) == MALFORMED
    assert run.kart['boostRemaining'] == 3 and not run.kart['isBoosting']
    assert run.events == {'malformed_boost': 6}
    assert press(run, 1.0) == FIRED                  # the edge memory is still 0


def test_no_boost_after_the_finish():
    run = Run(RaceRules(laps=1), karts=2)
    run.to(2 * L + 1.0)
    assert run.kart['finished'] and press(run, 1.0) == 'finished'
    run.state = run.race.finish(run.state)
    run.state, outcome = run.race.boost(run.state, 1, 1.0)
    assert outcome == 'finished'


# -- track limits -----------------------------------------------------------------------
def test_leaving_the_track_caps_the_speed_while_off_and_for_its_time_after():
    rules = RaceRules(penalty_speed_mps=2.0, penalty_sec=3.0, off_track_margin_m=0.5)
    run = Run(rules)
    run.to(L + 20.0)
    run.drive(1.0, lateral=4.4)                      # beyond the edge, within the margin
    assert run.kart['penalties'] == {'count': 0, 'active': False, 'offTrack': False,
                                     'endsIn': 0.0}
    run.drive(1.0, lateral=4.6)                      # off
    assert run.kart['penalties']['count'] == 1 and run.kart['penalties']['active']
    assert run.race.drive(run.state, 0) == (1.0, 1.0, 2.0)
    run.drive(5.0, lateral=4.2)                      # still off until within the edge
    run.drive(1.0, lateral=4.7)
    assert run.kart['penalties']['count'] == 1 and run.kart['penalties']['endsIn'] is None
    run.put(run.s + 0.2, 3.9, DT)                    # back on: 3 s more of the cap
    back = run.state.t
    assert not run.kart['penalties']['offTrack']
    run.drive(2.9 * SPEED)
    assert run.race.drive(run.state, 0)[2] == 2.0
    assert run.kart['penalties']['endsIn'] == pytest.approx(back + 3.0 - run.state.t)
    run.drive(0.2 * SPEED)
    assert run.race.drive(run.state, 0) == (1.0, 1.0, None)
    assert not run.kart['penalties']['active']
    run.drive(1.0, lateral=-5.0)                     # off on the other side: another
    assert run.kart['penalties']['count'] == 2 and run.events['off_track'] == 2
    # the cap holds a boost's gains too
    assert press(run, 1.0) == FIRED
    assert run.race.drive(run.state, 0) == (1.5, 1.2, 2.0)


def test_track_limits_are_not_judged_on_the_grid():
    run = Run(start=False)
    run.drive(5.0, lateral=6.0)
    assert run.kart['penalties']['count'] == 0 and run.kart['lateral'] == pytest.approx(6.0)


# -- bad input --------------------------------------------------------------------------
def test_malformed_positions_and_steps_are_counted_and_move_nothing():
    run = Run()
    run.drive(5.0)
    before = run.state
    run.state = run.race.step(run.state, [Inputs(math.nan, 1.0)], DT)
    assert run.state.karts[0].position == before.karts[0].position
    assert run.events == {'malformed_position': 1}
    assert run.state.t == pytest.approx(before.t + DT)       # the session goes on
    for dt in (math.nan, -0.02, math.inf):
        stepped = run.race.step(run.state, [at(run.s + 100.0)], dt)
        assert stepped.karts == run.state.karts and stepped.t == run.state.t
        run.state = stepped
    assert run.state.counts == {'malformed_dt': 3}
    with pytest.raises(ValueError, match='2 inputs for 1 karts'):
        run.race.step(run.state, [at(0.0), at(1.0)], DT)
    run.drive(5.0)                                   # and it goes on from the last position
    assert run.kart['lapCount'] == 0 and run.kart['section'] == 0


def test_a_kart_without_inputs_keeps_its_state_while_the_others_race():
    run = Run(karts=4)
    run.to(L + 10.0)
    for k in range(1, 4):
        status = run.race.kart_status(run.state, k)
        assert status['section'] == 4 and status['thisLapTime'] == 0.0
    assert run.race.status(run.state)['sessionTime'] == pytest.approx(600.0 - run.state.t)


def test_the_race_status_is_json_ready():
    import json
    run = Run()
    run.to(L + L + 1.0)
    press(run, 1.0)
    text = json.dumps({'race': run.race.status(run.state), 'kart': run.kart},
                      allow_nan=False)
    assert np.isfinite(json.loads(text)['kart']['lapTimes']).all()
