"""Sensors through pylon_sim and udp_bridge: star tracker, LiDAR with TF, cameras."""

import math
import time

from geometry_msgs.msg import QuaternionStamped
import numpy as np
from pilot import LATCHED, Pilot, SAT, start
from pylon_bridge.convert import to_seconds
from pylon_interfaces.msg import StarTrackerState
from pylon_sim.admin import request
import pytest
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from tf2_msgs.msg import TFMessage

pytestmark = pytest.mark.integration

TRACKER = '/ksp_vessel/star_tracker/star_tracker_main'
RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)


def _tracker(pilot):
    pilot.got.update(state=[], attitude=[])
    pilot.subs += [
        pilot.node.create_subscription(StarTrackerState, f'{TRACKER}/state',
                                       pilot._keep('state'), RELIABLE),
        pilot.node.create_subscription(QuaternionStamped, f'{TRACKER}/attitude',
                                       pilot._keep('attitude'), RELIABLE)]


def _reasons_since(pilot, since):
    return [m.reason for t, m in pilot.got['state'] if t >= since]


def test_star_tracker_acquires_tracks_and_reacquires_after_a_switch_off(
        ros_process, free_udp_port, ros_node):
    admin = start(ros_process, free_udp_port)
    pilot = Pilot(ros_node)
    _tracker(pilot)
    pilot.ready()
    first = pilot.wait_for('state', lambda m: m.valid, 0.0, 'a tracking sample', timeout=20.0)
    assert first.reason == 'tracking' and first.header.frame_id == 'kerbol_inertial'
    q = first.orientation
    assert math.isclose(math.hypot(q.x, q.y, q.z, q.w), 1.0, abs_tol=1e-6)
    sigma = 20.0 / 3600.0 * math.pi / 180.0
    assert first.orientation_covariance[0] == pytest.approx(sigma ** 2, rel=1e-6)
    attitude = pilot.wait_for('attitude', lambda m: m.header.stamp == first.header.stamp,
                              0.0, 'the attitude of that sample')
    assert attitude.quaternion == first.orientation
    # the samples come at the tracker's 5 Hz (simulator clock = wall clock here)
    since = time.monotonic()
    pilot.spin_for(2.0)
    count = len([1 for t, _ in pilot.got['state'] if t >= since])
    assert 5 <= count <= 15, count           # 5 Hz on the simulator clock (real time)
    # the part's switch: disabled at once, then acquiring for 2 s, then tracking
    off = time.monotonic()
    assert request(admin, {'cmd': 'sensor', 'id': 'star_tracker_main', 'enabled': False})['ok']
    disabled = pilot.wait_for('state', lambda m: m.reason == 'disabled', off, 'disabled')
    assert not disabled.valid and disabled.orientation.w == 0.0
    assert disabled.orientation_covariance[0] == -1.0
    on = time.monotonic()
    assert request(admin, {'cmd': 'sensor', 'id': 'star_tracker_main', 'enabled': True})['ok']
    acquiring = pilot.wait_for('state', lambda m: m.reason == 'acquiring', on, 'acquiring')
    back = pilot.wait_for('state', lambda m: m.reason == 'tracking', on, 'tracking again')
    waited = to_seconds(back.header.stamp) - to_seconds(acquiring.header.stamp)
    assert 1.9 <= waited <= 2.5, waited
    # no attitude published while the tracker was off or acquiring
    valid_stamps = {m.header.stamp.sec * 10**9 + m.header.stamp.nanosec
                    for _, m in pilot.got['state'] if m.valid}
    assert all(m.header.stamp.sec * 10**9 + m.header.stamp.nanosec in valid_stamps
               for _, m in pilot.got['attitude'])


def test_star_tracker_without_power_and_stale_when_paused(ros_process, free_udp_port,
                                                          ros_node):
    admin = start(ros_process, free_udp_port)
    pilot = Pilot(ros_node)
    _tracker(pilot)
    pilot.ready()
    pilot.wait_for('state', lambda m: m.valid, 0.0, 'a tracking sample', timeout=20.0)
    cut = time.monotonic()
    assert request(admin, {'cmd': 'electric_charge', 'amount': 0})['ok']
    pilot.wait_for('state', lambda m: m.reason == 'no_power', cut, 'no_power')
    assert request(admin, {'cmd': 'electric_charge', 'amount': 100})['ok']
    pilot.wait_for('state', lambda m: m.reason == 'tracking', time.monotonic(),
                   'tracking with power back', timeout=10.0)
    # paused: the mod sends nothing new, the bridge says stale after --topic-timeout-sec
    paused = time.monotonic()
    assert request(admin, {'cmd': 'pause'})['ok']
    stale = pilot.wait_for('state', lambda m: m.reason == 'stale', paused, 'stale',
                           timeout=10.0)
    assert not stale.valid and stale.orientation_covariance[0] == -1.0
    first_stale = next(t for t, m in pilot.got['state'] if t >= paused and m.reason == 'stale')
    assert first_stale - paused >= 2.9
    pilot.spin_for(1.0)
    beats = [t for t, m in pilot.got['state'] if m.reason == 'stale']
    assert len(beats) >= 4 and all(b - a >= 0.15 for a, b in zip(beats, beats[1:]))


def _matrix(q):
    x, y, z, w = q.x, q.y, q.z, q.w
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _apply(transform, points):
    t = transform.transform
    offset = np.array([t.translation.x, t.translation.y, t.translation.z])
    return points @ _matrix(t.rotation).T + offset


def test_lidar_cloud_transforms_into_enu_at_its_own_stamp_and_camera_frames(
        ros_process, free_udp_port, ros_node):
    start(ros_process, free_udp_port)
    pilot = Pilot(ros_node)
    got = {'cloud': [], 'tf': [], 'static': [], 'image': [], 'info': []}
    sensor = qos_profile_sensor_data
    pilot.subs += [
        ros_node.create_subscription(PointCloud2, '/ksp_vessel/lidar_3d/lidar_3d_front/points',
                                     got['cloud'].append, sensor),
        ros_node.create_subscription(TFMessage, '/tf', got['tf'].append,
                                     QoSProfile(depth=200,
                                                reliability=ReliabilityPolicy.RELIABLE)),
        ros_node.create_subscription(TFMessage, '/tf_static', got['static'].append, LATCHED),
        ros_node.create_subscription(Image, '/ksp_vessel/camera/camera_front/image_raw',
                                     got['image'].append, sensor),
        ros_node.create_subscription(CameraInfo, '/ksp_vessel/camera/camera_front/camera_info',
                                     got['info'].append, sensor)]
    pilot.ready()
    frame = f'pylon_{SAT[:8]}_lidar_3d_front'

    def mounted():
        return any(t.child_frame_id == frame for m in got['static'] for t in m.transforms)
    pilot.until(lambda: len(got['cloud']) >= 3 and mounted() and got['image'] and got['info'],
                'clouds, the LiDAR mount on /tf_static and a camera frame', timeout=20.0)
    statics = {t.child_frame_id: t for m in got['static'] for t in m.transforms}
    cloud = got['cloud'][-1]
    assert cloud.header.frame_id == frame and cloud.point_step == 12 and cloud.width > 0
    points = np.frombuffer(bytes(cloud.data), dtype=np.float32).reshape(-1, 3).astype(float)
    # sensor frame -> part link -> ... -> proxy root (static chain), root -> base_link,
    # base_link -> ENU (dynamic, at the cloud's own stamp: no extrapolation needed)
    chain, child = [], frame
    while child in statics:
        chain.append(statics[child])
        child = statics[child].header.frame_id
    root = child
    assert root == f'pylon_{SAT[:8]}_link_0000', root
    stamp = cloud.header.stamp

    def tf_at_stamp():
        return {t.child_frame_id: t for msg in got['tf'] for t in msg.transforms
                if t.header.stamp == stamp}
    # the bridge sends the transform before the cloud, but the two subscriptions may be
    # served in either order: wait for it (briefly) rather than assume the order
    pilot.until(lambda: {root, 'base_link'} <= set(tf_at_stamp()), 'the /tf at the cloud stamp',
                timeout=5.0)
    dynamic = tf_at_stamp()
    in_base = points
    for t in chain:
        in_base = _apply(t, in_base)
    in_base = _apply(dynamic[root], in_base)
    # every return is on the sat or the target station, which is 150 m ahead
    reach = np.linalg.norm(in_base, axis=1)
    assert np.all((reach < 5.0) | ((reach > 100.0) & (reach < 220.0))), reach.max()
    in_enu = _apply(dynamic['base_link'], in_base)
    assert dynamic['base_link'].header.frame_id == 'pylon_ground_truth_enu'
    assert np.all(np.isfinite(in_enu))
    image, info = got['image'][-1], got['info'][-1]
    assert (image.width, image.height, image.encoding) == (320, 240, 'rgb8')
    assert image.header.frame_id == info.header.frame_id == \
        f'pylon_{SAT[:8]}_camera_front_optical'
    assert info.k[0] == pytest.approx(240 / (2 * math.tan(math.radians(30.0))))
    pixels = np.frombuffer(bytes(image.data), dtype=np.uint8).reshape(240, 320, 3)
    assert pixels.max() > 0        # something lit is in view
