#!/usr/bin/env bash
# `make demo`: the main job natively. The workspace is built by `make setup`; the native
# runner of sim + bridge + controller joins once those packages have executables.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
echo "demo: workspace built in $ROOT/ws/install:"
"$ROOT/ci/env.sh" python - <<'PY'
from ament_index_python.packages import get_packages_with_prefixes
for name, prefix in sorted(get_packages_with_prefixes().items()):
    if name.startswith('pylon_'):
        print(f'  {name:24s} {prefix}')
PY
echo 'demo: no runnable nodes yet (pylon_sim, udp_bridge and setpoint_controller are not built);'
echo 'demo: use ci/env.sh CMD to work in the environment.'
