"""BridgeCore without ROS: ``pylon_ahrs`` (our simulator's extension) into the IMU's orientation.

The IMU's frame (``imu_frame`` and its static transform), the orientation and its
covariance while the AHRS sample is fresh (within ``AHRS_MAX_AGE_SEC`` of KSP time of the
IMU sample, same runtime session), none without it, in the message and in the serialized
bytes the node publishes; old, paused and bad AHRS samples.
"""

import json

from pylon_bridge.measurements import AHRS_MAX_AGE_SEC
from pylon_testing import mod_datagrams as d
from pylon_testing.core_driver import Driver, started
import pytest
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import Imu

TURNED = (0.0, 0.0, 0.38268343236508984, 0.9238795325112867)   # 45 deg about Up
VARIANCES = (1.2e-5, 1.3e-5, 7.6e-5)


def imu_of(driver, actions) -> Imu:
    """Return the one IMU message in ``actions``, deserialised if it went out as bytes."""
    published = [a for a in actions if getattr(a, 'key', '') == 'imu']
    assert len(published) == 1, actions
    action = published[0]
    return action.msg if action.serialized is None \
        else deserialize_message(action.serialized, Imu)


def quaternion(msg: Imu) -> list[float]:
    q = msg.orientation
    return [q.x, q.y, q.z, q.w]


@pytest.mark.parametrize('serialize', [False, True])
def test_a_fresh_ahrs_sample_fills_the_orientation_and_its_covariance(serialize):
    driver = started(serialize_imu=serialize)
    assert driver.feed(d.ahrs(ut=d.UT, orientation=TURNED, covariance=VARIANCES)) == []
    msg = imu_of(driver, driver.feed(d.imu(ut=d.UT)))
    assert quaternion(msg) == pytest.approx(TURNED, abs=1e-15)
    assert list(msg.orientation_covariance) == [1.2e-5, 0, 0, 0, 1.3e-5, 0, 0, 0, 7.6e-5]
    assert msg.header.frame_id == 'base_link'             # no imu_frame: today's frame
    # fresh either side of the IMU's UT up to the limit; beyond it, no orientation
    edge = imu_of(driver, driver.feed(d.imu(ut=d.UT + AHRS_MAX_AGE_SEC - 1e-6)))
    assert edge.orientation_covariance[0] == 1.2e-5
    old = imu_of(driver, driver.feed(d.imu(ut=d.UT + AHRS_MAX_AGE_SEC + 1e-3)))
    assert (quaternion(old), old.orientation_covariance[0]) == ([0.0] * 4, -1.0)
    driver.feed(d.ahrs(sequence=2, ut=d.UT + 0.2, covariance=VARIANCES))
    back = imu_of(driver, driver.feed(d.imu(ut=d.UT + 0.15)))
    assert quaternion(back) == [0.0, 0.0, 0.0, 1.0]      # the newer sample, 0.05 s ahead


def test_without_an_ahrs_the_imu_has_no_orientation():
    driver = started()
    msg = imu_of(driver, driver.feed(d.imu()))
    assert (quaternion(msg), msg.orientation_covariance[0]) == ([0.0] * 4, -1.0)


def test_a_new_runtime_session_forgets_the_sample():
    driver = started()
    driver.feed(d.ahrs(ut=d.UT))
    new = d.envelope(generation=4)
    driver.feed(d.session(env=new))
    msg = imu_of(driver, driver.feed(d.imu(ut=d.UT, env=new)))
    assert msg.orientation_covariance[0] == -1.0


def test_old_paused_and_bad_samples_are_dropped_and_counted():
    driver = started()
    driver.feed(d.ahrs(ut=d.UT + 0.02, orientation=TURNED), d.ahrs(sequence=2, ut=d.UT))
    assert driver.core.stats.dropped['stale_ahrs'] == 1
    assert quaternion(imu_of(driver, driver.feed(d.imu(ut=d.UT + 0.02)))) == pytest.approx(
        TURNED, abs=1e-15)
    packet = json.loads(d.ahrs(sequence=3, ut=d.UT + 0.04))
    packet['orientation'] = [0.0, 0.0, 0.0, 2.0]              # not a unit quaternion
    assert driver.feed(json.dumps(packet).encode()) == []
    assert driver.core.stats.dropped['bad_value'] == 1
    paused = Driver()
    paused.feed(d.session(paused=True))
    assert paused.feed(d.ahrs()) == []
    assert paused.core.stats.dropped['paused'] == 1


def test_the_imu_frame_is_its_own_and_static_under_base_link():
    driver = started(imu_frame='imu_link')
    actions = driver.feed(d.imu(), d.ground_truth(), *d.model_chunks())
    assert imu_of(driver, actions).header.frame_id == 'imu_link'
    static, = driver.published('tf_static', actions)
    mount, = [t for t in static.transforms if t.child_frame_id == 'imu_link']
    assert mount.header.frame_id == 'base_link'
    t = mount.transform
    assert (t.translation.x, t.translation.y, t.translation.z) == (0.0, 0.0, 0.0)
    assert (t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w) == (0.0, 0.0, 0.0, 1.0)
    # without imu_frame there is no such transform
    plain = started()
    static, = plain.published('tf_static', plain.feed(d.imu(), d.ground_truth(),
                                                        *d.model_chunks()))
    assert 'imu_link' not in {t.child_frame_id for t in static.transforms}
    assert 'base_link' not in {t.child_frame_id for t in static.transforms}
