#!/usr/bin/env bash
# The fast tier (`make test-fast`): lint and every test that starts no process and no ROS
# node (static checks, unit and property tests), for the edit loop. `make test` stays the
# whole suite. Extra arguments go to pytest. Two workers by default (PYLON_TEST_WORKERS)
# that steal work from each other (`--dist worksteal`: these tests share nothing). With
# pytest-xdist's default `load`, the first chunk handed to one worker held nearly every
# heavy test of the heaviest-first order: one worker ran 383 tests for 137 s while the
# other ran 2688 in 35 s (2 min 25 s in all); work stealing takes 1 min 22 s on 2 cores
# (three workers 1 min 29 s).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1

status=0
echo 'test-fast: ruff check .'
ci/env.sh ruff check . || status=1
echo 'test-fast: pytest -m "not integration"'
ci/env.sh python -m pytest -n "${PYLON_TEST_WORKERS:-2}" --dist worksteal -m 'not integration' \
  --durations=10 "$@" || status=1
exit $status
