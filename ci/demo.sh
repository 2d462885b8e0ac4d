#!/usr/bin/env bash
# `make demo`: simulator, bridge, estimator and controller natively, from the same plan as
# launch/pylon.launch.py (launch/pylon_components.py), flying a detumble and a slew.
# DEMO_SECONDS=N stops after N seconds with a summary; DEMO_OVERLAYS, DEMO_SCENARIO select
# overlays and the scenario. See launch/native_demo.py.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "$ROOT/ci/env.sh" python "$ROOT/launch/native_demo.py" "$@"
