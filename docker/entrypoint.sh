#!/usr/bin/env bash
# Source ROS 2 and the workspace, then run the container's command.
# With PYLON_WEB_VNC=1 (the desktop image's rviz service) it first starts a private X
# server (TigerVNC, display :$PYLON_VNC_DISPLAY, VNC on 127.0.0.1:$PYLON_VNC_RFB_PORT
# only), openbox and noVNC on 127.0.0.1:$PYLON_VNC_PORT, and points DISPLAY at it.
set -e
# shellcheck disable=SC1090
source "/opt/ros/${ROS_DISTRO:-jazzy}/setup.bash"
# shellcheck disable=SC1091
[[ -f /ws/install/setup.bash ]] && source /ws/install/setup.bash

if [[ "${PYLON_WEB_VNC:-0}" == 1 ]]; then
  display="${PYLON_VNC_DISPLAY:-99}"
  Xtigervnc ":${display}" -localhost -rfbport "${PYLON_VNC_RFB_PORT:-5999}" \
    -SecurityTypes None -AlwaysShared -geometry "${PYLON_VNC_GEOMETRY:-1600x900}" \
    -depth 24 -nolisten tcp >/tmp/xvnc.log 2>&1 &
  for _ in $(seq 100); do
    [[ -S "/tmp/.X11-unix/X${display}" ]] && break
    sleep 0.1
  done
  export DISPLAY=":${display}"
  export LIBGL_ALWAYS_SOFTWARE="${LIBGL_ALWAYS_SOFTWARE:-1}"
  openbox >/tmp/openbox.log 2>&1 &
  websockify --web /usr/share/novnc "127.0.0.1:${PYLON_VNC_PORT:-6080}" \
    "127.0.0.1:${PYLON_VNC_RFB_PORT:-5999}" >/tmp/novnc.log 2>&1 &
  echo "pylon: RViz in the browser: http://127.0.0.1:${PYLON_VNC_PORT:-6080}/vnc.html"
fi
exec "$@"
