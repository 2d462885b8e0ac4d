"""The ControlSafety filter (pylon_sim.mod.safety): every rule with exact numbers, the loader."""

from pathlib import Path

import numpy as np
from pylon_sim.mod import safety
from pylon_sim.mod.safety import load_limits, SafetyLimits, SafetyState
import pytest

DT = 0.02                       # 50 Hz: 1000 N and 200 N·m of slew per step
LIMITS = SafetyLimits()
WIDE = SafetyLimits(max_force_slew_n_per_sec=1e12, max_torque_slew_nm_per_sec=1e12)
STILL = (0.0, 0.0, 0.0)
ROOT = Path(__file__).resolve().parents[4]
CONFIG = ROOT / 'config' / 'ControlSafety.cfg'


def run(force, torque, rate=STILL, state=None, steps=1, limits=LIMITS, dt=DT):
    """Run ``steps`` identical steps; return the last result."""
    state = state if state is not None else safety.zero_state()
    result = None
    for _ in range(steps):
        result = safety.step(state, limits, force, torque, rate, dt)
        state = result.state
    return result


def at(force, torque, active_sec=0.0):
    """Return a state whose last output is this wrench (no slew history to climb)."""
    return SafetyState(force=np.array(force, dtype=float), torque=np.array(torque, dtype=float),
                       active_sec=active_sec)


# -- defaults and the shipped config ----------------------------------------------------

def test_the_repository_root_is_four_levels_up():
    assert (ROOT / 'ws' / 'src' / 'pylon_sim' / 'test' / 'test_safety.py').is_file()
    assert (ROOT / 'Makefile').is_file() and CONFIG.is_file()


def test_defaults_are_the_table():
    assert LIMITS.max_force_n == 250000.0
    assert LIMITS.max_torque_nm == 100000.0
    assert LIMITS.max_angular_speed_rad_sec == 0.35
    assert LIMITS.max_force_slew_n_per_sec == 50000.0
    assert LIMITS.max_torque_slew_nm_per_sec == 10000.0
    assert LIMITS.max_continuous_actuation_sec == 30.0
    assert LIMITS.continuous_reset_idle_sec == 0.5


def test_the_shipped_config_loads_to_the_defaults_and_sets_every_key():
    assert load_limits(CONFIG) == SafetyLimits()
    text = CONFIG.read_text(encoding='utf-8')
    for key in safety.CFG_KEYS:
        assert sum(line.split('//')[0].split('=')[0].strip() == key
                   for line in text.splitlines()) == 1, key
    assert '//' in text                    # commented


def test_zero_state():
    state = safety.zero_state()
    assert state.force.tolist() == [0.0, 0.0, 0.0] and state.torque.tolist() == [0.0] * 3
    assert (state.active_sec, state.idle_sec, state.tripped) == (0.0, 0.0, False)


# -- rule 1: magnitude --------------------------------------------------------------------

def test_magnitude_limit_scales_and_keeps_the_direction():
    result = run((300000.0, 400000.0, 0.0), (0.0, -300000.0, 400000.0), limits=WIDE)
    assert result.force == pytest.approx([150000.0, 200000.0, 0.0])
    assert result.torque == pytest.approx([0.0, -60000.0, 80000.0])
    assert result.reasons == ('magnitude_limit',)


def test_magnitude_limit_only_force_or_at_the_limit():
    result = run((0.0, 0.0, -1000000.0), (0.0, 0.0, 5.0), limits=WIDE)
    assert result.force.tolist() == [0.0, 0.0, -250000.0]
    assert result.torque.tolist() == [0.0, 0.0, 5.0]
    assert result.reasons == ('magnitude_limit',)
    exact = run((250000.0, 0.0, 0.0), (0.0, 100000.0, 0.0), limits=WIDE)
    assert exact.force.tolist() == [250000.0, 0.0, 0.0]
    assert exact.torque.tolist() == [0.0, 100000.0, 0.0]
    assert exact.reasons == ()
    just_over = run((0.0, 250001.0, 0.0), (0.0, 0.0, -100000.5), limits=WIDE)
    assert just_over.force.tolist() == [0.0, 250000.0, 0.0]
    assert just_over.torque.tolist() == [0.0, 0.0, -100000.0]
    assert just_over.reasons == ('magnitude_limit',)


# -- rule 2: angular speed ----------------------------------------------------------------

def test_angular_speed_removes_the_accelerating_part_along_the_rate():
    rate = (0.3, 0.4, 0.0)                 # |ω| = 0.5 rad/s, ω̂ = (0.6, 0.8, 0)
    result = run(STILL, (100.0, 200.0, 50.0), rate, limits=WIDE)
    # τ·ω̂ = 220 > 0: 220 ω̂ = (132, 176, 0) is removed, the perpendicular rest stays
    assert result.torque == pytest.approx([-32.0, 24.0, 50.0])
    assert float(result.torque @ np.array([0.6, 0.8, 0.0])) == pytest.approx(0.0, abs=1e-9)
    assert result.reasons == ('angular_speed_limit',)


def test_angular_speed_keeps_braking_and_perpendicular_torque():
    rate = (0.3, 0.4, 0.0)
    brake = run(STILL, (-60.0, -80.0, 30.0), rate, limits=WIDE)
    assert brake.torque.tolist() == [-60.0, -80.0, 30.0]
    assert brake.reasons == ()
    across = run(STILL, (-80.0, 60.0, 70.0), rate, limits=WIDE)
    assert across.torque.tolist() == [-80.0, 60.0, 70.0]
    assert across.reasons == ()


def test_angular_speed_at_or_below_the_limit_changes_nothing():
    for rate in ((0.35, 0.0, 0.0), (0.0, 0.2, 0.0)):
        result = run(STILL, (10.0, 20.0, 0.0), rate, limits=WIDE)
        assert result.torque.tolist() == [10.0, 20.0, 0.0]
        assert result.reasons == ()
    above = run(STILL, (10.0, 20.0, 0.0), (0.36, 0.0, 0.0), limits=WIDE)
    assert above.torque.tolist() == [0.0, 20.0, 0.0]


def test_angular_speed_leaves_the_force_alone():
    result = run((500.0, 0.0, 0.0), (0.0, 0.0, 40.0), (0.0, 0.0, 1.0), limits=WIDE)
    assert result.force.tolist() == [500.0, 0.0, 0.0]
    assert result.torque.tolist() == [0.0, 0.0, 0.0]


# -- rule 3: slew -------------------------------------------------------------------------

def test_slew_limits_the_vector_change_per_step():
    result = run((0.0, 3000.0, 4000.0), (0.0, 0.0, -1000.0))
    assert result.force == pytest.approx([0.0, 600.0, 800.0])      # |ΔF| = 1000 N
    assert result.torque == pytest.approx([0.0, 0.0, -200.0])      # |Δτ| = 200 N·m
    assert result.reasons == ('slew_rate_limit',)


def test_slew_ramps_at_exactly_the_limit_and_arrives():
    state = safety.zero_state()
    for expected in (1000.0, 2000.0, 3000.0, 4000.0):
        result = safety.step(state, LIMITS, (5000.0, 0.0, 0.0), STILL, STILL, DT)
        assert result.force.tolist() == [expected, 0.0, 0.0]
        assert result.reasons == ('slew_rate_limit',)
        state = result.state
    last = safety.step(state, LIMITS, (5000.0, 0.0, 0.0), STILL, STILL, DT)
    assert last.force.tolist() == [5000.0, 0.0, 0.0]
    assert last.reasons == ()                  # a change of exactly the limit is allowed


def test_slew_scales_with_dt_and_reverses_through_zero():
    result = run((-5000.0, 0.0, 0.0), STILL, state=at((2000.0, 0, 0), STILL), dt=0.05)
    assert result.force.tolist() == [-500.0, 0.0, 0.0]             # 2500 N in 0.05 s
    assert result.reasons == ('slew_rate_limit',)


def test_a_zero_command_ramps_down_too():
    result = run(STILL, STILL, state=at((3000.0, 0.0, 0.0), (0.0, 300.0, 0.0)))
    assert result.force.tolist() == [2000.0, 0.0, 0.0]
    assert result.torque == pytest.approx([0.0, 100.0, 0.0])
    assert result.reasons == ('slew_rate_limit',)
    done = run(STILL, STILL, state=result.state, steps=2)
    assert done.force.tolist() == [0.0, 0.0, 0.0] and done.torque.tolist() == [0.0] * 3


def test_reset_cuts_at_once_and_keeps_the_continuous_count():
    state = SafetyState(force=np.array([3000.0, 0, 0]), torque=np.array([0, 0, 500.0]),
                        active_sec=12.0, idle_sec=0.0, tripped=False)
    cut = safety.reset(state)
    assert cut.force.tolist() == [0.0] * 3 and cut.torque.tolist() == [0.0] * 3
    assert cut.active_sec == 12.0 and cut.tripped is False
    tripped = safety.reset(SafetyState(np.zeros(3), np.zeros(3), 31.0, 0.1, True))
    assert tripped.tripped is True
    again = run((3000.0, 0.0, 0.0), STILL, state=cut)               # climbs from zero
    assert again.force.tolist() == [1000.0, 0.0, 0.0]


# -- rule 4: continuous actuation ---------------------------------------------------------

def test_continuous_limit_trips_after_30_s_and_resets_after_half_a_second_not_before():
    state = safety.zero_state()
    command = ((10.0, 0.0, 0.0), STILL)
    thirty = run(*command, state=state, steps=1500)                 # 1500 × 0.02 s = 30 s
    assert thirty.force.tolist() == [10.0, 0.0, 0.0] and thirty.reasons == ()
    assert thirty.state.active_sec == pytest.approx(30.0) and not thirty.state.tripped
    over = run(*command, state=thirty.state)                        # 30.02 s > 30 s
    assert over.force.tolist() == [0.0] * 3 and over.torque.tolist() == [0.0] * 3
    assert over.reasons == ('continuous_actuation_limit',) and over.state.tripped
    still = run(*command, state=over.state, steps=200)              # stays cut
    assert still.force.tolist() == [0.0] * 3
    assert still.reasons == ('continuous_actuation_limit',)
    idle = run(STILL, STILL, state=still.state, steps=24)          # 0.48 s of zeros
    assert idle.state.tripped and idle.reasons == ('continuous_actuation_limit',)
    early = run(*command, state=idle.state)                         # too early: still cut
    assert early.force.tolist() == [0.0] * 3 and early.state.idle_sec == 0.0
    idle = run(STILL, STILL, state=early.state, steps=24)
    assert idle.state.tripped
    idle = run(STILL, STILL, state=idle.state)                     # 25th step: 0.5 s
    assert not idle.state.tripped and idle.state.active_sec == 0.0 and idle.reasons == ()
    back = run(*command, state=idle.state)
    assert back.force.tolist() == [10.0, 0.0, 0.0] and back.reasons == ()
    assert back.state.active_sec == pytest.approx(DT)


def test_a_short_pause_does_not_reset_the_count_a_long_one_does():
    command = ((10.0, 0.0, 0.0), STILL)
    busy = run(*command, steps=1450)                                # 29 s
    paused = run(STILL, STILL, state=busy.state, steps=24)          # 0.48 s
    assert paused.state.active_sec == pytest.approx(29.0)
    more = run(*command, state=paused.state, steps=50)              # 30 s in all
    assert more.force.tolist() == [10.0, 0.0, 0.0]
    assert run(*command, state=more.state).reasons == ('continuous_actuation_limit',)
    rested = run(STILL, STILL, state=busy.state, steps=25)          # 0.5 s
    assert rested.state.active_sec == 0.0
    assert run(*command, state=rested.state, steps=1500).reasons == ()


def test_a_single_idle_step_of_half_a_second_resets():
    tripped = SafetyState(np.zeros(3), np.zeros(3), active_sec=30.5, tripped=True)
    assert run(STILL, STILL, state=tripped, dt=0.49).state.tripped
    assert not run(STILL, STILL, state=tripped, dt=0.5).state.tripped


def test_ramping_down_counts_as_actuation_and_only_exact_zero_is_idle():
    down = run(STILL, STILL, state=at((3000.0, 0.0, 0.0), STILL, active_sec=5.0))
    assert down.state.active_sec == pytest.approx(5.0 + DT)         # output still 2000 N
    assert down.state.idle_sec == pytest.approx(DT)                 # but the command is zero
    tiny = run((0.0, 0.0, 0.0), (0.0, 0.0, 1e-300), state=down.state)
    assert tiny.state.idle_sec == 0.0


def test_the_trip_cuts_a_large_output_at_once_without_a_slew_reason():
    state = at((50000.0, 0.0, 0.0), (0.0, 0.0, 9000.0), active_sec=30.0)
    result = run((50000.0, 0.0, 0.0), (0.0, 0.0, 9000.0), state=state)
    assert result.force.tolist() == [0.0] * 3 and result.torque.tolist() == [0.0] * 3
    assert result.reasons == ('continuous_actuation_limit',)


# -- reasons, inputs ----------------------------------------------------------------------

def test_reasons_come_in_the_documented_order():
    result = run((300000.0, 0.0, 0.0), (0.0, 0.0, 200000.0), (0.0, 0.0, 1.0))
    assert result.reasons == ('magnitude_limit', 'angular_speed_limit', 'slew_rate_limit')
    assert result.force.tolist() == [1000.0, 0.0, 0.0]
    assert result.torque.tolist() == [0.0, 0.0, 0.0]
    tripped = run((300000.0, 0.0, 0.0), STILL, state=at(STILL, STILL, active_sec=30.0))
    assert tripped.reasons == ('magnitude_limit', 'continuous_actuation_limit')
    assert set(safety.REASONS) == {'magnitude_limit', 'angular_speed_limit',
                                   'slew_rate_limit', 'continuous_actuation_limit'}


def test_arrays_are_not_shared_with_the_caller():
    force = np.array([500.0, 0.0, 0.0])
    result = safety.step(safety.zero_state(), LIMITS, force, STILL, STILL, DT)
    force[0] = 9.0
    result.force[1] = 7.0
    assert result.state.force.tolist() == [500.0, 0.0, 0.0]


@pytest.mark.parametrize('force, torque, rate, dt', [
    ((float('nan'), 0.0, 0.0), STILL, STILL, DT),
    (STILL, (0.0, float('inf'), 0.0), STILL, DT),
    (STILL, STILL, (0.0, 0.0, float('-inf')), DT),
    (STILL, STILL, STILL, float('nan')),
    (STILL, STILL, STILL, -0.02),
    ((1.0,), STILL, STILL, DT),
    ((1.0, 2.0, 3.0, 4.0), STILL, STILL, DT),
    (('a', 0.0, 0.0), STILL, STILL, DT),
])
def test_bad_input_is_refused(force, torque, rate, dt):
    with pytest.raises(ValueError):
        safety.step(safety.zero_state(), LIMITS, force, torque, rate, dt)


# -- the loader ---------------------------------------------------------------------------

def write(tmp_path, text: str, encoding: str = 'utf-8') -> Path:
    path = tmp_path / 'ControlSafety.cfg'
    path.write_text(text, encoding=encoding)
    return path


def test_loader_reads_all_keys_comments_and_layouts(tmp_path):
    text = ('// header\nPYLON_CONTROL_SAFETY\n{\n'
            '    maxForceN = 1000 // N\n  maxTorqueNm=2e3\n'
            '  maxAngularSpeedRadSec = 0.5\n  maxForceSlewNPerSec = 4000\n'
            '  maxTorqueSlewNmPerSec = 5000\n  maxContinuousActuationSec = 6\n'
            '  continuousResetIdleSec = 0.25\n}\n')
    assert load_limits(write(tmp_path, text)) == SafetyLimits(
        1000.0, 2000.0, 0.5, 4000.0, 5000.0, 6.0, 0.25)
    one_line = 'PYLON_CONTROL_SAFETY { maxTorqueNm = 500 }  // N·m\n'
    assert load_limits(write(tmp_path, one_line)) == SafetyLimits(max_torque_nm=500.0)
    bom = 'PYLON_CONTROL_SAFETY {\n  maxForceN = 7\n}\n'
    assert load_limits(write(tmp_path, bom, 'utf-8-sig')) == SafetyLimits(max_force_n=7.0)
    assert load_limits(write(tmp_path, 'PYLON_CONTROL_SAFETY\n{\n}\n')) == SafetyLimits()


@pytest.mark.parametrize('body, message', [
    ('  maxForceN = -5', r':3: maxForceN must be a finite number > 0'),
    ('  maxTorqueNm = 0', r':3: maxTorqueNm must be a finite number > 0'),
    ('  maxAngularSpeedRadSec = nan', r':3: maxAngularSpeedRadSec must be a finite'),
    ('  maxForceSlewNPerSec = inf', r':3: maxForceSlewNPerSec must be a finite'),
    ('  maxForceN = lots', r":3: maxForceN must be a number, got 'lots'"),
    ('  maxForceN = 1_000', r':3: maxForceN must be a number'),
    ('  maxForceN =', r':3: maxForceN must be a number'),
    ('  continuousResetIdleSec = 0.5 0.6', r':3: continuousResetIdleSec must be a number'),
    ('\n  maxWarp = 5', r":4: unknown key 'maxWarp'"),
    ('  maxforcen = 5', r":3: unknown key 'maxforcen'"),
    ('  maxForceN = 5\n  maxForceN = 6', r':4: maxForceN given twice \(first on line 3\)'),
    ('  maxForceN', r":3: expected key = value, got 'maxForceN'"),
])
def test_bad_values_name_the_key_and_line(tmp_path, body, message):
    path = write(tmp_path, f'PYLON_CONTROL_SAFETY\n{{\n{body}\n}}\n')
    with pytest.raises(ValueError, match=message):
        load_limits(path)


@pytest.mark.parametrize('text, message', [
    ('', 'complete'),
    ('// nothing\n', 'complete'),
    ('PYLON_CONTROL_SAFETY\n{\n  maxForceN = 5\n', 'complete'),
    ('PYLON_CONTROL_SAFETY\n', 'complete'),
    ('OTHER\n{\n}\n', r":1: expected the node PYLON_CONTROL_SAFETY, got 'OTHER'"),
    ('maxForceN = 5\n', ':1: expected the node'),
    ('PYLON_CONTROL_SAFETY {\n}\nPYLON_CONTROL_SAFETY {\n}\n', ':3: a second'),
    ('PYLON_CONTROL_SAFETY {\n}\n}\n', r':3: unexpected \}'),
    ('PYLON_CONTROL_SAFETY {\n  INNER {\n  }\n}\n', ':2: '),
    ('PYLON_CONTROL_SAFETY\n  maxForceN = 5\n', r':2: expected \{ after'),
])
def test_bad_structure_is_refused(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        load_limits(write(tmp_path, text))
