"""Run every bench/bench_*.py and write each one's JSON to bench/results/<name>.json.

A benchmark is a script that prints one JSON object on its last line of stdout.
``python bench/run.py [NAME ...]`` runs the named ones only (without the bench_ prefix).
The ones in ``ON_REQUEST`` (``soak``: 30 minutes) run only when named.
"""

from __future__ import annotations

import json
from pathlib import Path
import subprocess
import sys

from pylon_protocol.threads import limit_threads

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / 'results'
ON_REQUEST = ('soak',)


def main(argv: list[str]) -> int:
    """Run the benchmarks; return non-zero if any failed."""
    limit_threads()           # every benchmark inherits one BLAS thread per process
    scripts = sorted(BENCH_DIR.glob('bench_*.py'))
    names = argv or [s.stem.removeprefix('bench_') for s in scripts
                     if s.stem.removeprefix('bench_') not in ON_REQUEST]
    scripts = [s for s in scripts if s.stem.removeprefix('bench_') in names]
    RESULTS.mkdir(exist_ok=True)
    failed = 0
    for script in scripts:
        name = script.stem.removeprefix('bench_')
        print(f'bench: {name}', flush=True)
        result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
        lines = result.stdout.strip().splitlines()
        try:
            data = json.loads(lines[-1]) if result.returncode == 0 and lines else None
        except json.JSONDecodeError:
            data = None
        if data is None:
            failed += 1
            print(f'bench: {name} failed ({result.returncode})\n{result.stderr}', file=sys.stderr)
            continue
        out = RESULTS / f'{name}.json'
        out.write_text(json.dumps(data, indent=2) + '\n')
        print(json.dumps(data, indent=2))
        print(f'bench: wrote {out.relative_to(BENCH_DIR.parent)}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
