"""The fault matrix, repeated: time to safe of every row over several runs.

``pylon_testing.fault_matrix.Matrix`` starts the flight stack (``pylon_sim --rate 1`` in
the orbit scenario, the fault relay, ``udp_bridge``, ``attitude_estimator``,
``setpoint_controller``) and runs each row of ``ROWS`` as the integration test
``tests/integration/test_fault_matrix.py`` does: the controller flies a 30 degree slew,
the row's fault hits, the bench notes the first frame in which nothing commanded acted on
the vessel (the simulator's audit: the frame after the last physics step that pushed),
then recovers (MODE_IDLE, DETUMBLE, a slew again).

Per row over ``RUNS`` runs: time to safe from the fault (simulator clock, s; a killed
simulator: from the restarted one's first frame) p50 and max; for the rows cut by a
command timeout, from the last command the simulator accepted; whether and why the
controller disarmed; the steps that pushed between safe and the fresh MODE_IDLE; the
recovery's extra MODE_IDLEs (``rearms``); for the rows that keep flying, whether the
controller stayed armed with its lease and a command was in force every physics step; the
simulator's audit (``unbacked_steps``, must be 0). ``python bench/bench_faults.py [RUNS
[ROW ...]]``. Prints one JSON object on its last line.
"""

from __future__ import annotations

from collections import Counter
import statistics
import sys

from pylon_testing.bench import BenchNode, BenchSession, run
from pylon_testing.fault_matrix import Matrix, Outcome, ROWS

RUNS = 5


def summary(outcomes: list[Outcome]) -> dict:
    """Return a row's figures over its runs."""
    safe = [o.time_to_safe for o in outcomes if o.time_to_safe is not None]
    after = [o.safe_at - o.last_command_at for o in outcomes
             if o.safe_at is not None and o.last_command_at is not None
             and o.safe_at >= o.last_command_at]
    return {
        'runs': len(outcomes),
        'time_to_safe_s': {'p50': round(statistics.median(safe), 3),
                           'max': round(max(safe), 3)} if safe else None,
        'safe_after_last_command_s': {'p50': round(statistics.median(after), 3),
                                      'max': round(max(after), 3)} if after else None,
        'cut_runs': len(safe),
        'disarmed': dict(Counter(o.disarmed or 'no' for o in outcomes)),
        'refused_before_idle': all(o.refused_before_idle for o in outcomes if o.disarmed),
        'pushed_before_idle': sum(o.pushed_before_idle or 0 for o in outcomes),
        'rearms': sum(len(o.rearms) for o in outcomes),
        'kept_flying': sum(bool(o.kept) and not o.disarmed and o.kept['armed_through']
                           and o.kept['commanded_steps'] == o.kept['steps']
                           for o in outcomes),
        'unbacked_steps': sum(o.unbacked_steps for o in outcomes),
        'flew_again': all(o.flew_again for o in outcomes),
    }


def measure(session: BenchSession, runs: int, rows: tuple[str, ...]) -> dict:
    """Run every row ``runs`` times; return the figures per row."""
    outcomes: dict[str, list[Outcome]] = {row: [] for row in rows}
    with BenchNode('bench_faults') as bench:
        matrix = Matrix(session.group.start, session.take_port, bench.node, session.log_dir,
                        executor=bench.executor)
        try:
            for _ in range(runs):
                for row in rows:
                    outcomes[row].append(matrix.run(row))
        finally:
            matrix.close()
    return {'runs': runs, 'rows': {row: summary(outcomes[row]) for row in rows},
            'unbacked_steps': sum(o.unbacked_steps for os_ in outcomes.values() for o in os_)}


def main(argv: list[str]) -> int:
    """Run the benchmark: ``[RUNS [ROW ...]]``."""
    runs = int(argv[0]) if argv else RUNS
    rows = tuple(argv[1:]) or ROWS
    unknown = set(rows) - set(ROWS)
    if unknown:
        print(f'unknown rows {sorted(unknown)}; rows are {", ".join(ROWS)}', file=sys.stderr)
        return 2
    return run('faults', lambda session: measure(session, runs, rows))


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
