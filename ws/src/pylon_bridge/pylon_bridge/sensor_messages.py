"""LiDAR and camera packets to ROS messages, without rclpy: numpy in, messages out.

PROTOCOL.md §5.9–§5.12 facts this module applies:

- Sensor data are in the ``ros_sensor`` frame (+X along the look direction, +Y left, +Z
  up) whose pose relative to the owning part's link is the packet's ``framePosition`` /
  ``frameRotation``. The bridge names that frame
  ``<frame prefix>_<vessel id, 8 hex>_<sensor id>`` (prefix ``pylon``, ``--frame-prefix``;
  ``sensor_frame``) and sends it on ``/tf_static`` under the part's link; a camera's
  images are in the REP-103 optical frame ``<sensor frame>_optical`` (z forward, x right,
  y down). A docking-port camera's frame is ``<prefix>_<vid8>_<port name>_camera``.
- 2D LiDAR: the rays follow the ``vertical-major`` layout (``pylon_protocol.lidar``).
  Ranges that are not finite, negative or beyond ``maxDistance`` become +Inf; missing ones
  are padded with +Inf.
- 3D LiDAR: points are the packet's ``points`` when given, else ``directions * range``,
  else the ``fibonacci-hemisphere`` layout's directions (``pylon_protocol.lidar``) times
  the range; invalid ranges are omitted. The cloud is ``x, y, z`` float32, unorganised
  (height 1), dense.
- Camera: ``rgb8`` rows top-down; pinhole intrinsics from the vertical FOV:
  ``f = height / (2 tan(vfov / 2))``, ``cx = (width - 1) / 2``, ``cy = (height - 1) / 2``,
  ``plumb_bob`` with zero distortion.
"""

from __future__ import annotations

from collections.abc import Mapping
import math

import numpy as np
from pylon_common.stamps import to_time
from pylon_protocol import frames
from pylon_protocol.camera import Frame
from pylon_protocol.lidar import angle_increment_2d, fibonacci_hemisphere_directions, LAYOUT_3D
from sensor_msgs.msg import CameraInfo, Image, LaserScan, PointCloud2, PointField

OPTICAL_SUFFIX = '_optical'
_XYZ_FIELDS = [PointField(name=name, offset=4 * i, datatype=PointField.FLOAT32, count=1)
               for i, name in enumerate('xyz')]


DEFAULT_FRAME_PREFIX = 'pylon'
"""The first word of every sensor frame name (``--frame-prefix``)."""


def sensor_frame(vessel_id: str, sensor_id: str, source: str = 'lidar',
                 prefix: str = DEFAULT_FRAME_PREFIX) -> str:
    """Return the frame name of a sensor of a vessel (see the module docstring)."""
    suffix = '_camera' if source == 'docking_port' else ''
    return f'{prefix}_{vessel_id[:8]}_{sensor_id}{suffix}'


def _stamp(msg, stamp: float, frame_id: str):
    msg.header.stamp = to_time(stamp)
    msg.header.frame_id = frame_id
    return msg


def clean_ranges(packet: Mapping, count: int) -> np.ndarray:
    """Return ``count`` ranges (m, float64) with misses and invalid values as +Inf."""
    ranges = np.full(count, np.inf)
    raw = np.asarray(packet['ranges'][:count], dtype=float)
    ranges[:raw.size] = raw
    max_distance = packet.get('maxDistance')
    bad = ~np.isfinite(ranges) | (ranges < 0.0)
    if max_distance is not None:
        bad |= ranges > float(max_distance)
    ranges[bad] = np.inf
    return ranges


def ray_count(packet: Mapping) -> int:
    """Return the number of rays of a scan (``rayCount``, else the ranges given)."""
    count = packet.get('rayCount')
    return int(count) if count is not None else len(packet['ranges'])


def laser_scan(packet: Mapping, stamp: float, frame_id: str) -> LaserScan:
    """Return the LaserScan of a 2D ``pylon_lidar_scan``."""
    count = ray_count(packet)
    fov_deg = float(packet.get('horizontalFovDeg') or 0.0)
    fov = math.radians(fov_deg)
    increment = angle_increment_2d(count, fov_deg)
    msg = _stamp(LaserScan(), stamp, frame_id)
    msg.angle_min = -fov / 2.0
    msg.angle_max = msg.angle_min + increment * max(count - 1, 0)
    msg.angle_increment = increment
    rate = float(packet.get('scanRateHz') or 0.0)
    msg.scan_time = 1.0 / rate if rate > 0.0 else 0.0
    msg.time_increment = 0.0
    msg.range_min = 0.0
    msg.range_max = float(packet.get('maxDistance') or np.inf)
    msg.ranges = clean_ranges(packet, count).astype(np.float32)
    return msg


def scan_points(packet: Mapping) -> np.ndarray:
    """Return the M × 3 hit points (m, sensor frame) of a 3D scan; misses omitted.

    Raise ValueError when the scan carries neither points, directions nor a layout the
    bridge can reconstruct.
    """
    count = ray_count(packet)
    ranges = clean_ranges(packet, count)
    hit = np.isfinite(ranges)
    points = packet.get('points')
    if points is not None:
        raw = np.array([np.nan if v is None else v for v in points], dtype=float)
        xyz = np.full((count, 3), np.nan)
        given = raw.reshape(-1, 3)[:count]
        xyz[:given.shape[0]] = given
        keep = hit & np.all(np.isfinite(xyz), axis=1)
        return xyz[keep]
    directions = packet.get('directions')
    if directions is not None:
        unit = np.full((count, 3), np.nan)
        given = np.asarray(directions, dtype=float).reshape(-1, 3)[:count]
        unit[:given.shape[0]] = given
        hit &= np.all(np.isfinite(unit), axis=1)
    elif packet.get('coordinateFrame') == 'ros_sensor' and packet.get('layout') == LAYOUT_3D:
        unit = fibonacci_hemisphere_directions(count)
    else:
        raise ValueError(f'a 3D scan without points or directions needs the {LAYOUT_3D} '
                         'layout in ros_sensor')
    return unit[hit] * ranges[hit, None]


def point_cloud(points: np.ndarray, stamp: float, frame_id: str) -> PointCloud2:
    """Return an unorganised ``x, y, z`` float32 PointCloud2 of M × 3 points."""
    data = np.ascontiguousarray(points, dtype=np.float32)
    msg = _stamp(PointCloud2(), stamp, frame_id)
    msg.height = 1
    msg.width = int(data.shape[0])
    msg.fields = list(_XYZ_FIELDS)
    msg.is_bigendian = False
    msg.point_step = 12
    msg.row_step = 12 * msg.width
    msg.is_dense = True
    msg.data = data.tobytes()
    return msg


def lidar_message(packet: Mapping, stamp: float, frame_id: str) -> LaserScan | PointCloud2:
    """Return the LaserScan (2D) or the PointCloud2 (3D) of a ``pylon_lidar_scan``.

    Raise ValueError when a 3D scan carries no geometry the bridge can reconstruct.
    """
    if packet['mode'] == '2D':
        return laser_scan(packet, stamp, frame_id)
    return point_cloud(scan_points(packet), stamp, frame_id)


def image(frame: Frame, stamp: float, frame_id: str) -> Image:
    """Return the ``rgb8`` Image of a reassembled camera frame."""
    msg = _stamp(Image(), stamp, frame_id)
    msg.height, msg.width, msg.step = frame.height, frame.width, frame.step
    msg.encoding = 'rgb8'
    msg.is_bigendian = 0
    msg.data = frame.data
    return msg


def camera_info(frame: Frame, stamp: float, frame_id: str) -> CameraInfo:
    """Return the pinhole CameraInfo of a frame (vertical FOV, centred, no distortion)."""
    msg = _stamp(CameraInfo(), stamp, frame_id)
    msg.width, msg.height = frame.width, frame.height
    f = frame.height / (2.0 * math.tan(math.radians(frame.vertical_fov_deg) / 2.0))
    cx, cy = (frame.width - 1) / 2.0, (frame.height - 1) / 2.0
    msg.distortion_model = 'plumb_bob'
    msg.d = [0.0] * 5
    msg.k = [f, 0.0, cx, 0.0, f, cy, 0.0, 0.0, 1.0]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [f, 0.0, cx, 0.0, 0.0, f, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg


def mount(packet_position, packet_rotation, optical: bool = False) -> tuple:
    """Return a sensor frame's (position, normalised rotation) in its part's link."""
    rotation = frames.unit_quat(packet_rotation)
    if optical:
        rotation = frames.sensor_to_optical(rotation)
    return tuple(float(v) for v in packet_position), tuple(rotation)
