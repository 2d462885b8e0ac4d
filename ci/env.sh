#!/usr/bin/env bash
# Run one command inside the native workspace environment, from any directory:
#   ci/env.sh python -c 'import rclpy'
#   ci/env.sh pylon_sim --help
# Activates .venv (ROS 2 Jazzy from PyPI), sources ws/install/setup.bash and puts every
# workspace executable (ws/install/<pkg>/lib/<pkg>/*, where `ros2 run` looks) on PATH.
# Run `make setup` first.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${PYLON_VENV:-$ROOT/.venv}"
INSTALL="$ROOT/ws/install"

if [ ! -x "$VENV/bin/python" ] || [ ! -f "$INSTALL/setup.bash" ]; then
  echo "env.sh: the workspace is not built; run 'make setup' in $ROOT first." >&2
  exit 1
fi
if [ $# -eq 0 ]; then
  echo "usage: ci/env.sh CMD [ARGS...]" >&2
  exit 2
fi

# shellcheck disable=SC1091
source "$VENV/bin/activate"
export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$VENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
# shellcheck disable=SC1091
source "$INSTALL/setup.bash"
export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
# Keep compiled modules (__pycache__, and pytest's rewritten test modules): where the machine
# sets PYTHONDONTWRITEBYTECODE, each of the suite's ~300 processes would compile the
# workspace's modules again and each pytest worker rewrite every test module (collection
# 7.7 s of CPU instead of 2.5 s, four times a run).
unset PYTHONDONTWRITEBYTECODE
for dir in "$INSTALL"/*/lib/*/; do
  case "$dir" in */lib/python*) continue ;; esac
  PATH="${dir%/}:$PATH"
done
export PATH
exec "$@"
