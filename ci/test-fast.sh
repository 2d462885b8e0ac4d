#!/usr/bin/env bash
# The fast tier (`make test-fast`): lint and every test that starts no process and no ROS
# node (static checks, unit and property tests), for the edit loop. `make test` stays the
# whole suite. Extra arguments go to pytest. Two workers by default (PYLON_TEST_WORKERS):
# on 2 cores they finish it in 2 min 0 s, three in 2 min 16 s.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1

status=0
echo 'test-fast: ruff check .'
ci/env.sh ruff check . || status=1
echo 'test-fast: pytest -m "not integration"'
ci/env.sh python -m pytest -n "${PYLON_TEST_WORKERS:-2}" -m 'not integration' \
  --durations=10 "$@" || status=1
exit $status
