#!/usr/bin/env bash
# The whole suite (`make test`): lint, then pytest over tests/, ws/src and ci/overlay.
# Extra arguments go to pytest, e.g. `bash ci/test.sh -k lifecycle`.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1

status=0
echo 'test: ruff check .'
ci/env.sh ruff check . || status=1
echo 'test: pytest'
ci/env.sh python -m pytest "$@" || status=1
exit $status
