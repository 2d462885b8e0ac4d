#!/usr/bin/env bash
# `make fuzz`: the property tests (hypothesis) with random seeds and ten times their
# examples (the `fuzz` profile, pylon_testing.properties), round after round until
# FUZZ_SECONDS (default 300) have passed. Each round prints its seed: a failure is rerun
# with `ci/env.sh python -m pytest -m hypothesis --hypothesis-profile=fuzz
# --hypothesis-seed=SEED`; examples that failed are kept in .hypothesis/ and tried first
# next time. CI runs the same tests derandomized (`make test`).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
budget="${FUZZ_SECONDS:-300}"
end=$((SECONDS + budget))
round=0
while [ "$SECONDS" -lt "$end" ]; do
  round=$((round + 1))
  seed="$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')"
  echo "fuzz: round $round, seed $seed ($((end - SECONDS)) s of $budget s left)"
  ci/env.sh python -m pytest -q -m hypothesis --hypothesis-profile=fuzz \
    --hypothesis-seed="$seed" -n "${PYLON_TEST_WORKERS:-3}" "$@" \
    || { echo "fuzz: round $round failed (seed $seed)"; exit 1; }
done
echo "fuzz: $round round(s) passed in $SECONDS s"
