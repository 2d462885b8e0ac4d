"""The kart's sensors at the competition's names: ROS remapping of udp_bridge's own topics.

A team's stack reads the kart's sensors under the competition's names and frames. The
bridge publishes them under its own (``pylon_common.topics``, per sensor id of the ``kart``
scenario); ``REMAPS`` maps one to the other, and ``bridge_arguments`` gives the
``--ros-args`` that make the bridge's own publishers use the competition's names. No relay
sits on the path: each message leaves the bridge once, on the competition's name (a 1080-
point scan at 40 Hz pays no extra hop), and the bridge's own names carry nothing.

Frames: the IMU's is ``IMU_FRAME`` (the bridge's ``imu_frame_id`` parameter, static and
identity under ``base_link``); the GNSS receiver's is the scenario module's ``frame_id``
(``GNSS_FRAME``). Plain data: nothing here imports rclpy.
"""

from __future__ import annotations

from dataclasses import dataclass

from pylon_common import topics

LIDAR, CAMERA, GNSS = 'lidar', 'camera', 'gnss'
"""The sensor ids of the kart's LiDAR, camera and GNSS receiver (the ``kart`` scenario)."""
IMU_FRAME = 'imu_link'
"""The IMU's frame in the competition's interface (the bridge's ``imu_frame_id``)."""
GNSS_FRAME = 'gnss_link'
"""The GNSS receiver's frame (the kart scenario's ``gnss`` module ``frame_id``)."""


@dataclass(frozen=True)
class Remap:
    """One bridge topic (contract ``key``, per-sensor ``sensor_id``) and its competition name."""

    key: str
    sensor_id: str
    competition: str

    def bridge_name(self, topic_prefix: str = topics.DEFAULT_TOPIC_PREFIX) -> str:
        """Return the bridge's own name of the topic under ``topic_prefix``."""
        return topics.name(self.key, topic_prefix, id=self.sensor_id)


REMAPS: tuple[Remap, ...] = (
    Remap('imu', '', topics.name('stack/imu')),            # the localizer reads these two
    Remap('gnss', GNSS, topics.name('stack/gnss')),
    Remap('lidar_2d', LIDAR, '/sensing/lidar/scan'),
    Remap('camera', CAMERA, '/sensing/camera/image_raw'),
    Remap('camera_info', CAMERA, '/sensing/camera/camera_info'),
)
"""The kart's sensor topics: the bridge's (``sensor_msgs`` Imu, NavSatFix, LaserScan, Image,
CameraInfo) and the competition's name of each."""


def remapping(topic_prefix: str = topics.DEFAULT_TOPIC_PREFIX) -> dict[str, str]:
    """Return bridge name -> competition name of every ``REMAPS`` row."""
    return {row.bridge_name(topic_prefix): row.competition for row in REMAPS}


BRIDGE_PARAMETERS = {'imu_frame_id': IMU_FRAME}
"""udp_bridge's parameters for the kart: the IMU in the competition's frame."""


def interface_remapping(topic_prefix: str = topics.DEFAULT_TOPIC_PREFIX) -> dict[str, str]:
    """Return kart_interface's remaps beside a bridge started with ``bridge_arguments``.

    The interface measures its yaw rate with the IMU, which the bridge then publishes at the
    competition's name.
    """
    imu = REMAPS[0]
    return {imu.bridge_name(topic_prefix): imu.competition}


def interface_arguments(topic_prefix: str = topics.DEFAULT_TOPIC_PREFIX) -> list[str]:
    """Return kart_interface's ROS arguments beside a remapped bridge (``--ros-args -r ...``)."""
    args = ['--ros-args']
    for source, target in interface_remapping(topic_prefix).items():
        args += ['-r', f'{source}:={target}']
    return args


def bridge_arguments(topic_prefix: str = topics.DEFAULT_TOPIC_PREFIX) -> list[str]:
    """Return udp_bridge's ROS arguments: every remap and ``imu_frame_id:=imu_link``.

    ``['--ros-args', '-r', '/ksp_vessel/imu/data_raw:=/sensing/imu/imu_raw', ..., '-p',
    'imu_frame_id:=imu_link']``; append them to the bridge's own flags.
    """
    args = ['--ros-args']
    for bridge, competition in remapping(topic_prefix).items():
        args += ['-r', f'{bridge}:={competition}']
    return [*args, *(arg for key, value in BRIDGE_PARAMETERS.items()
                     for arg in ('-p', f'{key}:={value}'))]
