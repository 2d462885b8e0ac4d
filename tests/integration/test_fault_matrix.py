"""The fault matrix: a fault hits while the controller flies a slew; the vessel stays safe.

One flight stack for the module (``pylon_testing.fault_matrix``: simulator, the fault relay,
bridge, estimator, controller); each row flies a slew (or the phase it names), injects its
fault, and recovers. In every row the simulator's audit stays at 0 (no physics step pushed
without a live lease and a command in force), the controller flies again only after a fresh
MODE_IDLE, and the output is cut as the row's line of the README's table says: at once
(within a physics step, plus the time the fault takes to reach the simulator), or within
the wrench timeout and a physics step of the last command the simulator accepted.
Times are the simulator's clock.
"""

from pylon_testing.fault_matrix import Matrix, ROWS, TICK_SEC, WRENCH_TIMEOUT_SEC
import pytest

pytestmark = pytest.mark.integration

AT_ONCE, AFTER_COMMAND, RAMP, IMMEDIATE, KEEPS_FLYING = (
    'at once', 'after the last command', 'ramp', 'immediate', 'keeps flying')
EXPECT = {        # row: (how the output is cut, whether the controller disarms; None: either)
    'loss_10': (KEEPS_FLYING, False),
    'loss_30_reorder': (KEEPS_FLYING, None),
    'duplication': (KEEPS_FLYING, False),
    'partition_5s': (AFTER_COMMAND, True),
    'sim_killed': (IMMEDIATE, True),
    'sim_restarted': (AT_ONCE, True),
    'bridge_restarted': (AFTER_COMMAND, True),
    'controller_killed': (AFTER_COMMAND, True),
    'estimator_killed': (RAMP, True),
    'revert': (AT_ONCE, True),
    'pause': (IMMEDIATE, True),
    'physics_warp': (KEEPS_FLYING, None),
    'vessel_switch': (AT_ONCE, True),
    'estop_idle': (AT_ONCE, True),
    'estop_detumble': (AT_ONCE, True),
    'estop_slew': (AT_ONCE, True),
    'estop_six_dof': (AT_ONCE, True),
}
REACH_SEC = 0.25       # from reading the clock to the fault reaching the simulator's step
RAMP_SEC = 2.0         # input timeout, a command period and the slew ramp down


@pytest.fixture(scope='module')
def matrix(module_ros_process, free_udp_port, module_ros_node, tmp_path_factory):
    flight = Matrix(module_ros_process, free_udp_port, module_ros_node,
                    tmp_path_factory.mktemp('faults'))
    yield flight
    flight.close()


def test_every_row_has_an_expectation():
    assert set(EXPECT) == set(ROWS)


@pytest.mark.parametrize('row', ROWS)
def test_a_fault_never_leaves_the_vessel_pushing_without_a_live_command(matrix, row):
    outcome = matrix.run(row)
    cut, disarms = EXPECT[row]
    assert outcome.unbacked_steps == 0, outcome
    assert outcome.flew_again, outcome
    if disarms is not None:
        assert bool(outcome.disarmed) == disarms, outcome
    if outcome.disarmed:
        assert outcome.refused_before_idle, outcome      # nothing flies before MODE_IDLE
    if cut == AT_ONCE:
        assert outcome.time_to_safe <= TICK_SEC + REACH_SEC, outcome
    elif cut == AFTER_COMMAND:
        assert outcome.safe_at - outcome.last_command_at <= \
            WRENCH_TIMEOUT_SEC + TICK_SEC + 1e-6, outcome
    elif cut == RAMP:
        assert outcome.time_to_safe <= RAMP_SEC, outcome
    elif cut == IMMEDIATE:
        assert outcome.time_to_safe == 0.0, outcome
    else:
        assert outcome.safe_at is None, outcome          # never cut: the slew went on
