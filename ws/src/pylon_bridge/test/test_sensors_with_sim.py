"""Star tracker through pylon_sim and udp_bridge: acquisition, reasons, switch, stale."""

import math
import time

from geometry_msgs.msg import QuaternionStamped
from pilot import Pilot, start
from pylon_bridge.convert import to_seconds
from pylon_interfaces.msg import StarTrackerState
from pylon_sim.admin import request
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy

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
    assert 7 <= count <= 13, count
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
