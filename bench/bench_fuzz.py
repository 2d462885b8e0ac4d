"""udp_bridge fuzzed live: a million hostile datagrams beside pylon_sim's valid stream.

``pylon_sim --scenario orbit`` (real time) sends its valid stream to a fresh ``udp_bridge``
(both real processes, ports and ROS domain of their own); once the vessel is ACTIVE, a
sender process (``python -m pylon_testing.fuzz state``) sends ``COUNT`` seeded hostile
datagrams to the same port: random bytes, real packets of every type (the simulator's own,
captured in the sender, ``packet_samples`` and ``mod_datagrams``) bit-flipped, truncated,
with fields deleted or of another type, NaN and infinity, huge numbers, arrays and strings,
new sensor and port ids, foreign runtime envelopes, the largest UDP payload, deeply nested
JSON, and hostile model and camera chunk sequences (``pylon_testing.fuzz``). The sender
keeps the bridge's socket queue below a bound, so the kernel never drops a datagram (of
the fuzz or of the simulator): the rate is the bridge's own.

The bench's node subscribes to the IMU, the lifecycle and the diagnostics, as a user
would, and reports (``pylon_testing.fuzz_stack``): datagrams sent and per second; the
bridge's VmRSS before, at its peak and after (target growth below 20 MB); whether bridge
and simulator still run, their exit codes when stopped with SIGINT and the tracebacks in
their logs (target: none); the bridge's counters over the run (received, accepted,
dropped by reason, ignored) and the kernel's drops; the longest gap between the stamps of
consecutive IMU messages received during the fuzz against the topic timeout (3 s), and
the lifecycle (ACTIVE throughout, one generation).

``python bench/bench_fuzz.py [COUNT [SEED]]``; prints one JSON object on its last line.
"""

from __future__ import annotations

import os
import sys

from pylon_testing.bench import BenchNode, BenchSession, run
from pylon_testing.fuzz_stack import BridgeFuzz, passed, RSS_GROWTH_LIMIT_MB

COUNT = 1_000_000
SEED = 1


def measure(session: BenchSession, count: int, seed: int) -> dict:
    """Run the fuzz once; return the benchmark's JSON object."""
    with BenchNode('bench_fuzz') as bench:
        fuzz = BridgeFuzz(session.group.start, session.take_port, bench.recorder())
        result = fuzz.run(count, seed)
        checks = passed(result, RSS_GROWTH_LIMIT_MB)
        exit_codes = {'bridge': fuzz.bridge.stop(), 'sim': fuzz.sim.stop()}
    checks['clean_exit'] = all(code == 0 for code in exit_codes.values())
    return {
        'benchmark': 'fuzz',
        'rmw': os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp'),
        'cpus': os.cpu_count(),
        'parameters': {'count': count, 'seed': seed, 'scenario': 'orbit', 'sim_rate': 1.0,
                       'target_rss_growth_mb': RSS_GROWTH_LIMIT_MB,
                       'command': f'ci/env.sh python bench/bench_fuzz.py {count} {seed}'},
        **result,
        'exit_codes': exit_codes,
        'checks': checks,
        'pass': all(checks.values()),
        'runtime_seconds': session.runtime_seconds(),
    }


def main(argv: list[str]) -> int:
    """Parse ``[COUNT [SEED]]``, measure, print one JSON object."""
    count = int(argv[0]) if argv else COUNT
    seed = int(argv[1]) if len(argv) > 1 else SEED
    return run('bench_fuzz', lambda session: measure(session, count, seed))


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
