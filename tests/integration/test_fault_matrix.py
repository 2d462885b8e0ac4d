"""The fault matrix: a fault hits while the controller flies a slew; the vessel stays safe.

One flight stack for the module (``pylon_testing.fault_matrix``: simulator, the fault relay,
bridge, estimator, controller); each row flies a slew (or the phase it names), injects its
fault, and recovers. In every row the simulator's audit stays at 0 (no physics step pushed
without a live lease and a command in force), and the output is cut as the row's line of
the README's table says: at once (within a physics step, plus the time the fault takes to
reach the simulator), within the wrench timeout and a physics step of the last command the
simulator accepted, or (a killed simulator) from the restarted one's first frame; once cut,
nothing pushes until the fresh MODE_IDLE. The rows that keep flying keep the controller
armed with its lease, a commanded torque in every physics step of the fault and the slew
going toward its target. After every fault the simulator pushes again only after the fresh
MODE_IDLE, and the recovery's DETUMBLE needs no further MODE_IDLE but where the row allows.
Times are the simulator's clock. The controller has room for a busy machine's stalls
(``fault_matrix.ROOM_FOR_STALLS``: longer input and setpoint timeouts and lease); the cut
is timed by the wrench timeout, which keeps its default.
"""

from pylon_testing.fault_matrix import (
    DEGRADED_SEC,
    Matrix,
    ROOM_FOR_STALLS,
    ROWS,
    TICK_SEC,
    WRENCH_TIMEOUT_SEC,
)
import pytest

pytestmark = pytest.mark.integration

AT_ONCE, AFTER_COMMAND, RAMP, RESTARTED, KEEPS_FLYING = (
    'at once', 'after the last command', 'ramp', 'restarted', 'keeps flying')
EXPECT = {        # row: (how the output is cut, whether the controller disarms; None: either)
    'loss_10': (KEEPS_FLYING, False),
    'loss_30_reorder': (KEEPS_FLYING, None),
    'duplication': (KEEPS_FLYING, False),
    'partition_5s': (AFTER_COMMAND, True),
    'sim_killed': (RESTARTED, True),
    'sim_restarted': (AT_ONCE, True),
    'bridge_restarted': (AFTER_COMMAND, True),
    'controller_killed': (AFTER_COMMAND, True),
    'estimator_killed': (RAMP, True),
    'revert': (AT_ONCE, True),
    'pause': (AT_ONCE, True),
    'physics_warp': (KEEPS_FLYING, None),
    'vessel_switch': (AT_ONCE, True),
    'estop_idle': (AT_ONCE, None),      # the MODE_IDLE streamed on re-arms it at once
    'estop_detumble': (AT_ONCE, True),
    'estop_slew': (AT_ONCE, True),
    'estop_six_dof': (AT_ONCE, True),
}
# row: the disarms the recovery's DETUMBLE may meet (each answered with MODE_IDLE); none
# elsewhere. DETUMBLE runs on the IMU (its input, not the estimate): none may disarm it.
REARMS: dict[str, tuple[str, ...]] = {}
REACH_SEC = 0.25       # from reading the clock to the fault reaching the simulator's step
# the input timeout (the room's), then a command period and the slew's ramp down
RAMP_SEC = ROOM_FOR_STALLS['input_timeout_sec'] + 1.5
PROGRESS_DEG = 2.0     # the slew's least progress over a fault it flies through


@pytest.fixture(scope='module')
def matrix(module_ros_process, free_udp_port, module_ros_node, tmp_path_factory):
    flight = Matrix(module_ros_process, free_udp_port, module_ros_node,
                    tmp_path_factory.mktemp('faults'), room=True)
    yield flight
    flight.close()


def test_every_row_has_an_expectation():
    assert set(EXPECT) == set(ROWS)
    assert set(REARMS) <= set(ROWS)


@pytest.mark.parametrize('row', ROWS)
def test_a_fault_never_leaves_the_vessel_pushing_without_a_live_command(matrix, row):
    outcome = matrix.run(row, at_push=cuts_a_push(row))
    try:
        check(row, outcome)
    except AssertionError:
        matrix.failed = True          # the next row starts on a fresh stack
        raise


def cuts_a_push(row: str) -> bool:
    """Tell whether ``row``'s fault is checked as the cut of a push (injected during one)."""
    return EXPECT[row][0] != KEEPS_FLYING and row != 'estop_idle'


def check(row: str, outcome) -> None:
    """Check one row's outcome against its expectation (``EXPECT``, ``REARMS``)."""
    cut, disarms = EXPECT[row]
    assert outcome.unbacked_steps == 0, outcome
    # the simulator pushed again, after the controller was armed by the fresh MODE_IDLE
    assert outcome.armed_at is not None and outcome.flew_again_at is not None, outcome
    assert outcome.flew_again_at >= outcome.armed_at, outcome
    assert all(reason in REARMS.get(row, ()) for reason, _ in outcome.rearms), outcome
    if disarms is not None:
        assert bool(outcome.disarmed) == disarms, outcome
    if outcome.disarmed:
        # nothing flies before MODE_IDLE (the refusal's reason, armed, quiet in the notes)
        assert outcome.refused_before_idle, (outcome.disarmed, outcome.notes)
    if cut == KEEPS_FLYING:
        assert outcome.safe_at is None, outcome          # never cut: the slew went on
        if not outcome.disarmed:
            kept = outcome.kept
            assert kept['window_s'] >= DEGRADED_SEC, outcome
            assert kept['armed_through'], outcome       # armed, the lease never lost
            assert len(kept['owners']) == 1 and kept['owners'][0], outcome
            # a command in force in every physics step of the fault, and pushing
            assert kept['commanded_steps'] == kept['steps'] > 0, outcome
            assert kept['pushed_steps'] > 0, outcome
            first, last = kept['error_deg']
            assert first - last >= PROGRESS_DEG, outcome      # toward the target
        return
    if cuts_a_push(row):
        assert outcome.pushing_at_fault, outcome         # the cut is of a push
    assert outcome.pushed_before_idle == 0, outcome      # cut until the fresh MODE_IDLE
    if cut == AT_ONCE:
        assert 0.0 <= outcome.time_to_safe <= TICK_SEC + REACH_SEC, outcome
    elif cut == AFTER_COMMAND:
        assert outcome.safe_at - outcome.last_command_at <= \
            WRENCH_TIMEOUT_SEC + TICK_SEC + 1e-6, outcome
    elif cut == RAMP:
        assert 0.0 <= outcome.time_to_safe <= RAMP_SEC, outcome
    else:      # RESTARTED: nothing pushed from the restarted simulator's first frame on
        assert outcome.time_to_safe == 0.0, outcome


def test_a_failed_row_leaves_the_next_a_fresh_stack(matrix):
    """After a row that failed, the whole stack starts again and the next row flies on it."""
    starts = matrix.fresh_starts
    sim = matrix.processes['sim'].pid
    matrix.failed = True              # as a row whose checks failed leaves it
    outcome = matrix.run('loss_10')
    assert matrix.fresh_starts == starts + 1 and not matrix.failed
    assert matrix.processes['sim'].pid != sim
    check('loss_10', outcome)
