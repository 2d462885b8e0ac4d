"""The ControlSafety filter: each rule with exact numbers, and the config file."""

from pathlib import Path

import numpy as np
from pylon_sim import safety
from pylon_sim.safety import load_limits, SafetyLimits
import pytest

LIMITS = SafetyLimits()
DT = 0.02
CONFIG = Path(__file__).resolve().parents[4] / 'config' / 'ControlSafety.cfg'


def run(force, torque, rate=(0.0, 0.0, 0.0), state=None, steps=1, limits=LIMITS):
    state = state or safety.zero_state()
    result = None
    for _ in range(steps):
        result = safety.step(state, limits, force, torque, rate, DT)
        state = result.state
    return result


def settled(force, torque, rate=(0.0, 0.0, 0.0)):
    """Return a state whose last output already equals the (limited) command."""
    wide = SafetyLimits(max_force_slew_n_per_sec=1e12, max_torque_slew_nm_per_sec=1e12)
    return run(force, torque, rate, limits=wide).state


def test_defaults_are_the_mods():
    assert LIMITS == SafetyLimits(250000.0, 100000.0, 0.35, 50000.0, 10000.0, 30.0, 0.5)
    assert load_limits(CONFIG) == LIMITS


def test_magnitude_limit_keeps_the_direction():
    force, torque = (300000.0, 400000.0, 0.0), (0.0, 0.0, 200000.0)
    result = run(force, torque, state=settled((150000.0, 200000.0, 0.0), (0, 0, 100000.0)))
    assert result.force == pytest.approx([150000.0, 200000.0, 0.0])
    assert result.torque == pytest.approx([0.0, 0.0, 100000.0])
    assert result.reasons == ('magnitude_limit',)


def test_angular_speed_limit_removes_only_accelerating_torque():
    rate = (0.0, 0.0, 0.5)                           # above 0.35 rad/s about +Z
    start = settled((0, 0, 0), (10.0, 0.0, 0.0), rate)
    result = run((0, 0, 0), (10.0, 0.0, 20.0), rate, state=start)
    assert result.torque == pytest.approx([10.0, 0.0, 0.0])       # +Z part removed
    assert 'angular_speed_limit' in result.reasons
    brake = run((0, 0, 0), (10.0, 0.0, -20.0), rate,
                state=settled((0, 0, 0), (10.0, 0.0, -20.0), rate))
    assert brake.torque == pytest.approx([10.0, 0.0, -20.0])      # braking kept
    assert 'angular_speed_limit' not in brake.reasons
    slow = run((0, 0, 0), (0, 0, 20.0), (0, 0, 0.3), state=settled((0, 0, 0), (0, 0, 20.0)))
    assert slow.torque == pytest.approx([0, 0, 20.0]) and slow.reasons == ()


def test_slew_limits_the_change_per_step():
    result = run((100000.0, 0.0, 0.0), (0.0, 5000.0, 0.0))
    assert result.force == pytest.approx([50000.0 * DT, 0.0, 0.0])
    assert result.torque == pytest.approx([0.0, 10000.0 * DT, 0.0])
    assert result.reasons == ('slew_rate_limit',)
    ramp = run((100000.0, 0.0, 0.0), (0, 0, 0), steps=50)
    assert ramp.force == pytest.approx([50000.0, 0.0, 0.0])        # 1 s at 50 kN/s
    down = run((0, 0, 0), (0, 0, 0), state=ramp.state)
    assert down.force == pytest.approx([49000.0, 0.0, 0.0])        # an explicit zero ramps


def test_continuous_actuation_trips_after_30_s_and_resets_after_half_a_second_idle():
    state = settled((10.0, 0, 0), (0, 0, 0))
    steps_30s = int(round(30.0 / DT))
    result = run((10.0, 0, 0), (0, 0, 0), state=state, steps=steps_30s - 2)
    assert result.force[0] == 10.0 and result.reasons == ()
    result = run((10.0, 0, 0), (0, 0, 0), state=result.state, steps=3)
    assert result.force[0] == 0.0 and result.reasons == ('continuous_actuation_limit',)
    # a non-zero command keeps it tripped; zeros for less than 0.5 s do not reset it
    idle = run((0, 0, 0), (0, 0, 0), state=result.state, steps=int(0.5 / DT) - 2)
    again = run((10.0, 0, 0), (0, 0, 0), state=idle.state)
    assert again.force[0] == 0.0 and 'continuous_actuation_limit' in again.reasons
    idle = run((0, 0, 0), (0, 0, 0), state=again.state, steps=int(round(0.5 / DT)))
    back = run((10.0, 0, 0), (0, 0, 0), state=idle.state)
    assert back.force[0] == pytest.approx(10.0) and back.reasons == ()


def test_reset_cuts_the_output_at_once():
    state = settled((1000.0, 0, 0), (0, 0, 50.0))
    cut = safety.reset(state)
    assert not np.any(cut.force) and not np.any(cut.torque)


def test_non_finite_input_is_refused():
    with pytest.raises(ValueError):
        run((float('nan'), 0, 0), (0, 0, 0))


@pytest.mark.parametrize('text, message', [
    ('PYLON_CONTROL_SAFETY\n{\n  maxForceN = -5\n}\n', 'maxForceN must be a finite'),
    ('PYLON_CONTROL_SAFETY\n{\n  maxForceN = lots\n}\n', 'maxForceN must be a number'),
    ('PYLON_CONTROL_SAFETY\n{\n  maxWarp = 5\n}\n', "unknown key 'maxWarp'"),
    ('OTHER\n{\n}\n', 'expected the node'),
    ('PYLON_CONTROL_SAFETY\n{\n  maxForceN = 5\n', 'complete'),
])
def test_bad_config_files_name_the_problem(tmp_path, text, message):
    path = tmp_path / 'ControlSafety.cfg'
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_limits(path)


def test_partial_config_keeps_defaults(tmp_path):
    path = tmp_path / 'ControlSafety.cfg'
    path.write_text('PYLON_CONTROL_SAFETY {\n  maxTorqueNm = 500 // N m\n}\n')
    assert load_limits(path) == SafetyLimits(max_torque_nm=500.0)
