#!/usr/bin/env bash
# The whole suite (`make test`): lint, then pytest over tests/, ws/src and ci/overlay, in
# parallel workers (pytest-xdist; a module whose tests share a stack stays in one worker).
# Extra arguments go to pytest, e.g. `bash ci/test.sh -k lifecycle`, `bash ci/test.sh -n 0`
# (one process, no workers). PYLON_TEST_WORKERS sets the number of workers (default 2).
# It prints the 40 slowest tests (setup, call and teardown apart) and every skip with its
# reason, and writes test-results/junit.xml and test-results/durations.json.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
RESULTS="$ROOT/test-results"

status=0
echo 'test: ruff check .'
ci/env.sh ruff check . || status=1
echo "test: pytest with ${PYLON_TEST_WORKERS:-2} workers"
ci/env.sh python -m pytest -n "${PYLON_TEST_WORKERS:-2}" --dist loadgroup --durations=40 \
  --junitxml="$RESULTS/junit.xml" --record-durations "$RESULTS/durations.json" "$@" || status=1
exit $status
