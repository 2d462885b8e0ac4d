"""BridgeCore without ROS: ``pylon_gnss`` (our simulator's extension) to ``NavSatFix``.

The message's fields, its frame (the packet's ``frameId`` or the sensor frame, mounted at
the part's origin), the session and sequence rules, pause and the topic's timeout.
"""

import json
import math

from pylon_bridge.core import Destroy, Publish
from pylon_testing import mod_datagrams as d
from pylon_testing.core_driver import Driver, started
import pytest
from sensor_msgs.msg import NavSatFix, NavSatStatus

SENSOR = 'gnss'


def test_a_fix_becomes_nav_sat_fix_with_its_diagonal_covariance():
    driver = started()
    actions = driver.feed(d.gnss(ut=d.UT + 0.2))
    msg, = driver.published('gnss', actions)
    assert [a.topic_id for a in actions if getattr(a, 'key', '') == 'gnss'] == [SENSOR]
    assert (msg.latitude, msg.longitude, msg.altitude) == (-0.0486, -74.7247, 0.6)
    assert (msg.status.status, msg.status.service) == (NavSatStatus.STATUS_FIX,
                                                       NavSatStatus.SERVICE_GPS)
    assert list(msg.position_covariance) == [0.04, 0, 0, 0, 0.04, 0, 0, 0, 0.16]
    assert msg.position_covariance_type == NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN
    assert msg.header.frame_id == f'pylon_{d.VESSEL[:8]}_{SENSOR}'
    # the stamp is the session's UT mapping, the IMU's
    imu, = driver.published('imu', driver.feed(d.imu(ut=d.UT + 0.2)))
    assert imu.header.stamp == msg.header.stamp


def test_no_fix_has_no_position_and_an_unknown_covariance():
    driver = started()
    msg, = driver.published('gnss', driver.feed(d.gnss(fix=None)))
    assert msg.status.status == NavSatStatus.STATUS_NO_FIX
    assert all(math.isnan(v) for v in (msg.latitude, msg.longitude, msg.altitude))
    assert msg.position_covariance_type == NavSatFix.COVARIANCE_TYPE_UNKNOWN
    assert list(msg.position_covariance) == [0.0] * 9


def test_the_frame_is_the_packets_and_is_mounted_at_the_part_origin():
    driver = started()
    driver.feed(d.imu(), d.ground_truth(), *d.model_chunks())
    link = driver.core.shared.description.model.frame_for_part(4002)
    actions = driver.feed(d.gnss(frame='gnss_link', part=4002))
    msg, = driver.published('gnss', actions)
    assert msg.header.frame_id == 'gnss_link'
    static, = driver.published('tf_static', actions)
    mount, = [t for t in static.transforms if t.child_frame_id == 'gnss_link']
    assert mount.header.frame_id == link
    t = mount.transform
    assert (t.translation.x, t.translation.y, t.translation.z) == (0.0, 0.0, 0.0)
    assert (t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w) == (0.0, 0.0, 0.0, 1.0)
    assert driver.published('tf_static', driver.feed(d.gnss(sequence=2, frame='gnss_link',
                                                            part=4002))) == []


def test_old_samples_are_dropped_per_receiver_and_session():
    driver = started()
    driver.feed(d.gnss(sequence=5), d.gnss(sequence=5), d.gnss(sequence=4),
                d.gnss(sequence=6))
    assert len(driver.published('gnss')) == 2
    assert driver.core.stats.dropped['stale_sequence'] == 2
    # another receiver counts its own; a new receiver session starts again from 1
    driver.feed(d.gnss(sequence=1, sensor='gnss_aft'), d.gnss(sequence=1, session='d' * 32))
    topics = [a.topic_id for a in driver.out if isinstance(a, Publish) and a.key == 'gnss']
    assert topics == [SENSOR, SENSOR, 'gnss_aft', SENSOR]


def test_a_datagram_of_another_session_or_vessel_is_dropped():
    driver = started()
    assert driver.feed(d.gnss(env=d.envelope(epoch='ab' * 16))) == []
    assert driver.feed(d.gnss(env=d.envelope(generation=9))) == []
    assert driver.core.stats.dropped['envelope_mismatch'] == 2
    assert not driver.published('gnss')
    # a new runtime session's receiver is taken once its heartbeat came
    new = d.envelope(generation=4)
    assert driver.published('gnss', driver.feed(d.session(env=new), d.gnss(env=new)))


def test_paused_drops_it_and_the_topic_goes_after_the_timeout():
    paused = Driver()
    paused.feed(d.session(paused=True))
    assert paused.feed(d.gnss()) == []
    assert paused.core.stats.dropped['paused'] == 1
    driver = started(topic_timeout_sec=1.0)
    driver.feed(d.gnss())
    driver.feed(d.session(sequence=2, ut=d.UT + 0.5), dt=0.5)
    assert not [a for a in driver.tick(0.4) if isinstance(a, Destroy)]
    driver.feed(d.session(sequence=3, ut=d.UT + 1.0))
    removed = [(a.key, a.topic_id) for a in driver.tick(0.3) if isinstance(a, Destroy)]
    assert removed == [('gnss', SENSOR)]


@pytest.mark.parametrize('field, value, reason', [
    ('latitude', 91.0, 'out_of_range'), ('altitude', math.inf, 'non_finite'),
    ('positionCovariance', [0.04, -0.04, 0.16], 'out_of_range'),
    ('sessionId', 'receiver-1', 'bad_value')])
def test_a_bad_sample_is_dropped_counted_and_the_next_one_goes_out(field, value, reason):
    driver = started()
    packet = json.loads(d.gnss())
    packet[field] = value
    assert driver.feed(json.dumps(packet, allow_nan=True).encode()) == []
    assert driver.core.stats.dropped[reason] == 1
    assert driver.published('gnss', driver.feed(d.gnss()))
