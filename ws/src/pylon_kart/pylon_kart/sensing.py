"""The kart's sensors at the competition's names: the bridge's own topics, remapped.

No relay: ``udp_bridge`` itself publishes under the competition's names when started with
``bridge_arguments()`` (ROS remapping of its resolved names), so a 1080-point scan pays no
extra hop. The bridge's side of each pair comes from the topic contract (the ``kart``
scenario's sensor ids); the competition's side is its interface. Plain data, no rclpy.
"""

from __future__ import annotations

from pylon_common import topics

LIDAR_ID = 'lidar'
CAMERA_ID = 'camera'
GNSS_ID = 'gnss'
"""The ``kart`` scenario's sensor ids."""

REMAPS: tuple[tuple[str, str], ...] = (
    (topics.name('imu'), topics.name('stack/imu')),
    (topics.name('gnss', id=GNSS_ID), topics.name('stack/gnss')),
    (topics.name('lidar_2d', id=LIDAR_ID), '/sensing/lidar/scan'),
    (topics.name('camera', id=CAMERA_ID), '/sensing/camera/image_raw'),
    (topics.name('camera_info', id=CAMERA_ID), '/sensing/camera/camera_info'),
)
"""(the bridge's name, the competition's name) of every kart sensor."""


def bridge_arguments() -> tuple[str, ...]:
    """Return the ``--ros-args`` that put the bridge's kart sensors at the competition's names."""
    out: list[str] = ['--ros-args']
    for source, target in REMAPS:
        out += ['-r', f'{source}:={target}']
    return tuple(out)
