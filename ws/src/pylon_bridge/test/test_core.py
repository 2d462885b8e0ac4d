"""BridgeCore without ROS: gating, time, ordering, lifecycle, model, TF and lifetimes."""

import math

import numpy as np
from pylon_bridge.core import Destroy, Publish
from pylon_common.stamps import to_seconds
from pylon_interfaces.msg import VesselLifecycle
from pylon_testing import mod_datagrams as d
from pylon_testing.core_driver import Driver, ROS_T0, started
import pytest


def test_nothing_before_a_heartbeat():
    driver = Driver()
    assert driver.feed(d.imu(), d.ground_truth()) == []
    assert driver.core.stats.dropped['no_session'] == 2
    assert driver.lifecycle().state == VesselLifecycle.STATE_UNAVAILABLE
    assert driver.lifecycle().reason == 'bridge_started'


def test_changed_then_active_with_the_first_measurement():
    driver = started()
    changed = driver.lifecycle()
    assert (changed.state, changed.generation, changed.reason) == (
        VesselLifecycle.STATE_CHANGED, 1, 'session_started')
    assert changed.vessel_id == d.VESSEL and changed.runtime_generation == 3
    driver.feed(d.ground_truth())
    active = driver.lifecycle()
    assert (active.state, active.generation, active.reason) == (
        VesselLifecycle.STATE_ACTIVE, 1, 'measuring')
    assert active.world_frame == 'pylon_ground_truth_enu' and active.body_frame == 'base_link'


def test_envelope_and_vessel_must_match_the_session():
    driver = started()
    other_epoch = d.envelope(epoch='ab' * 16)
    assert driver.feed(d.imu(env=other_epoch)) == []
    assert driver.core.stats.dropped['envelope_mismatch'] == 1
    foreign = d.encode('pylon_imu', d.ENV, vesselId=d.OTHER, universalTime=d.UT,
                       angularVelocity=[0, 0, 0], linearAcceleration=[0, 0, 0])
    assert driver.feed(foreign) == []
    assert sum(driver.core.stats.dropped.values()) == 2
    assert not driver.published('imu')


def test_unavailable_session_publishes_nothing():
    driver = Driver()
    driver.feed(d.session(available=False))
    assert driver.feed(d.imu(), d.ground_truth()) == []
    assert driver.lifecycle().state == VesselLifecycle.STATE_UNAVAILABLE
    assert driver.lifecycle().reason == 'vessel_unavailable'


def test_imu_duplicates_and_reordering_are_dropped():
    driver = started()
    driver.feed(d.imu(ut=d.UT), d.imu(ut=d.UT), d.imu(ut=d.UT - 0.1), d.imu(ut=d.UT + 0.1))
    assert len(driver.published('imu')) == 2
    assert driver.core.stats.dropped['stale_imu'] == 2


def test_ut_maps_with_one_offset_per_session():
    driver = started()
    driver.feed(d.imu(ut=d.UT))                                   # receipt ROS_T0 + 0
    driver.feed(d.imu(ut=d.UT + 0.5), dt=2.0)                     # delayed by 1.5 s
    first, second = (to_seconds(m.header.stamp) for m in driver.published('imu'))
    assert second - first == pytest.approx(0.5, abs=1e-6)        # intervals kept
    assert first == pytest.approx(ROS_T0, abs=1e-6)


def test_imu_follows_rep_145():
    driver = started()
    [msg] = driver.published('imu', driver.feed(d.imu(rate=(0.1, -0.2, 0.3))))
    assert msg.header.frame_id == 'base_link'
    assert msg.orientation_covariance[0] == -1.0
    assert list(msg.angular_velocity_covariance) == [0.0] * 9
    assert list(msg.linear_acceleration_covariance) == [0.0] * 9
    assert (msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z) == (
        0.1, -0.2, 0.3)
    assert msg.linear_acceleration.z == 9.81


@pytest.mark.parametrize('reuse', [False, True])
def test_imu_carries_its_cdr_bytes_for_the_node(reuse):
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import Imu
    driver = started(serialize_imu=True, reuse_messages=reuse)
    plain = started()                       # the same datagrams, messages built
    for step, rate in enumerate(((0.1, -0.2, 0.3), (1e-05, 0, 7.3e-05))):
        datagram = d.imu(ut=d.UT + step, rate=rate)
        [action] = [a for a in driver.feed(datagram)
                    if isinstance(a, Publish) and a.key == 'imu']
        [built] = [a for a in plain.feed(datagram) if isinstance(a, Publish) and a.key == 'imu']
        assert action.msg is None and action.msg_type is Imu    # no message built
        assert deserialize_message(action.serialized, Imu) == built.msg
        assert built.serialized is None                         # only when asked


def test_ground_truth_topics_and_frames():
    driver = started()
    actions = driver.feed(d.ground_truth(rotation=(0.0, 0.0, 2.0, 2.0)))   # not normalised
    pose = driver.published('ground_truth/pose', actions)[0]
    assert pose.header.frame_id == 'pylon_ground_truth_enu'
    assert pose.pose.orientation.z == pytest.approx(math.sqrt(0.5))
    assert driver.published('ground_truth/twist', actions)[0].header.frame_id == \
        'pylon_ground_truth_enu'
    assert driver.published('ground_truth/twist_body', actions)[0].header.frame_id == \
        'base_link'
    assert driver.published('ground_truth/acceleration', actions)[0].header.frame_id == \
        'pylon_ground_truth_enu'
    rate = driver.published('ground_truth/frame_angular_velocity', actions)[0]
    assert rate.vector.y == pytest.approx(2.9e-4)
    # the odometry: the same pose, the body twist, each in its frame
    odometry = driver.published('ground_truth/kinematic_state', actions)[0]
    assert (odometry.header.frame_id, odometry.child_frame_id) == (
        'pylon_ground_truth_enu', 'base_link')
    assert odometry.header.stamp == pose.header.stamp and odometry.pose.pose == pose.pose
    assert odometry.twist.twist == driver.published('ground_truth/twist_body',
                                                    actions)[0].twist
    [tf] = driver.published('tf', actions)
    [world] = tf.transforms
    assert (world.header.frame_id, world.child_frame_id) == ('pylon_ground_truth_enu',
                                                             'base_link')


def test_twist_body_falls_back_to_rotating_the_enu_twist():
    driver = started()
    yaw90 = (0.0, 0.0, math.sqrt(0.5), math.sqrt(0.5))
    actions = driver.feed(d.ground_truth(rotation=yaw90, velocity=(0.0, 5.0, 0.0),
                                         body=False))
    body = driver.published('ground_truth/twist_body', actions)[0].twist.linear
    # the vessel faces north (+Y ENU): moving north is moving forward (+X body)
    assert (body.x, body.y, body.z) == pytest.approx((5.0, 0.0, 0.0), abs=1e-12)


def test_nearby_needs_its_ground_truth():
    driver = started()
    assert driver.feed(d.nearby()) == []
    assert driver.core.stats.dropped['nearby_without_ground_truth'] == 1
    driver.feed(d.ground_truth(origin=4))
    assert driver.feed(d.nearby(origin=3)) == []
    [msg] = driver.published('ground_truth/nearby_vessels', driver.feed(d.nearby(origin=4)))
    assert msg.observer_vessel_id == d.VESSEL and msg.vessels[0].vessel_id == d.OTHER
    assert msg.vessels[0].is_debris and msg.header.frame_id == 'pylon_ground_truth_enu'


def test_tf_covers_an_imu_stamp_newer_than_the_pose_by_at_most_a_tenth():
    driver = started()
    driver.feed(d.ground_truth(ut=d.UT, velocity=(10.0, 0.0, 0.0), omega=(0.0, 0.0, 1.0)))
    [tf] = driver.published('tf', driver.feed(d.imu(ut=d.UT + 0.04)))
    world = tf.transforms[0]
    assert to_seconds(world.header.stamp) == pytest.approx(ROS_T0 + 0.04, abs=1e-6)
    assert world.transform.translation.x == pytest.approx(1.0 + 10.0 * 0.04)
    turned = world.transform.rotation
    assert 2 * math.atan2(turned.z, turned.w) == pytest.approx(0.04)
    [tf] = driver.published('tf', driver.feed(d.imu(ut=d.UT + 0.5)))
    assert to_seconds(tf.transforms[0].header.stamp) == pytest.approx(ROS_T0 + 0.1, abs=1e-6)
    assert driver.published('tf', driver.feed(d.imu(ut=d.UT + 0.6))) == []   # capped again


def test_disable_ground_truth_creates_no_world_topic():
    driver = started(disable_ground_truth=True)
    driver.feed(d.ground_truth(), d.nearby(), d.imu(), *d.model_chunks())
    keys = {a.key for a in driver.out if isinstance(a, Publish)}
    assert not any(key.startswith('ground_truth') for key in keys)
    assert driver.lifecycle().world_frame == ''
    assert driver.lifecycle().state == VesselLifecycle.STATE_ACTIVE
    driver.feed(d.imu(ut=d.UT + 0.1))
    for tf in driver.published('tf'):
        assert all(t.header.frame_id != 'pylon_ground_truth_enu' for t in tf.transforms)
    assert driver.published('tf')[-1].transforms[0].child_frame_id == \
        f'pylon_{d.VESSEL[:8]}_link_0000'


def test_model_description_root_frame_static_tf_and_lifecycle():
    driver = started()
    actions = driver.feed(*d.model_chunks())
    [description] = driver.published('robot_description', actions)
    assert f'<robot name="pylon_{d.VESSEL[:8]}_active_vessel">' in description.data
    assert driver.published('root_frame', actions)[0].data == f'pylon_{d.VESSEL[:8]}_link_0000'
    [static] = driver.published('tf_static', actions)
    assert [t.child_frame_id for t in static.transforms] == [
        'pylon_root', f'pylon_{d.VESSEL[:8]}_link_0001', f'pylon_{d.VESSEL[:8]}_link_0002']
    alias = static.transforms[0]
    assert alias.header.frame_id == f'pylon_{d.VESSEL[:8]}_link_0000'
    assert alias.transform.rotation.w == 1.0 and alias.transform.translation.z == 0.0
    first = static.transforms[1].transform
    assert first.translation.z == 1.5
    assert 2 * math.atan2(first.rotation.z, first.rotation.w) == pytest.approx(0.3)
    assert driver.lifecycle().model_ready and len(driver.lifecycle().model_id) == 64
    assert driver.feed(*d.model_chunks()) == []             # a resend only refreshes
    driver.feed(d.ground_truth())
    tf = driver.published('tf')[-1]
    assert [t.child_frame_id for t in tf.transforms] == [
        'base_link', f'pylon_{d.VESSEL[:8]}_link_0000']
    assert tf.transforms[1].header.frame_id == 'base_link'
    assert tf.transforms[1].transform.translation.z == -0.4


def test_without_static_tf_robot_state_publisher_takes_over():
    driver = started(publish_proxy_static_tf=False)
    actions = driver.feed(*d.model_chunks())
    assert driver.published('robot_description', actions)
    [static] = driver.published('tf_static', actions)    # only the root alias
    assert [t.child_frame_id for t in static.transforms] == ['pylon_root']


def test_model_clear_and_vessel_switch_withdraw_the_model_at_once():
    driver = started()
    driver.feed(*d.model_chunks())
    actions = driver.feed(d.model_clear())
    assert driver.published('robot_description', actions)[0].data == ''
    assert driver.published('root_frame', actions)[0].data == ''
    assert not driver.lifecycle().model_ready
    driver.feed(*d.model_chunks(session_id='aa' * 16))
    assert driver.lifecycle().model_ready
    switched = d.envelope(generation=4, epoch='ab' * 16, vessel=d.OTHER)
    actions = driver.feed(d.session(env=switched, sequence=2))
    assert driver.published('robot_description', actions)[0].data == ''
    life = driver.lifecycle()
    assert (life.state, life.generation, life.reason) == (
        VesselLifecycle.STATE_CHANGED, 2, 'vessel_changed')
    assert not life.model_ready and life.model_id == ''
    # a model of the previous vessel is never presented as current
    assert driver.feed(*d.model_chunks(session_id='bb' * 16, env=switched)) == []
    assert driver.core.stats.dropped['model_for_other_vessel'] == 1


def test_remote_models_need_the_flag():
    driver = started()
    assert driver.feed(*d.model_chunks(), source=('192.0.2.7', 49010)) == []
    assert driver.core.stats.dropped['remote_source'] >= 1
    allowed = started(allow_remote_models=True)
    assert allowed.published('robot_description',
                             allowed.feed(*d.model_chunks(), source=('192.0.2.7', 49010)))


def test_time_rewind_and_timeout_recovery_bump_the_generation():
    driver = started()
    driver.feed(d.ground_truth())
    rewound = d.envelope(generation=4, epoch='ab' * 16)
    driver.feed(d.session(ut=d.UT - 100.0, env=rewound, sequence=2))
    assert (driver.lifecycle().generation, driver.lifecycle().reason) == (2, 'time_rewind')
    driver.feed(d.session(ut=d.UT - 99.9, env=rewound, sequence=3))
    assert driver.tick(2.9) == []
    actions = driver.tick(0.2)
    stale = driver.published('lifecycle', actions)[0]
    assert (stale.state, stale.reason) == (VesselLifecycle.STATE_STALE, 'session_timeout')
    assert driver.feed(d.imu(ut=d.UT - 99.8, env=rewound)) == []
    driver.feed(d.session(ut=d.UT - 99.0, env=rewound, sequence=4))
    life = driver.lifecycle()
    assert (life.state, life.generation, life.reason) == (
        VesselLifecycle.STATE_CHANGED, 3, 'session_recovered')
    assert life.origin_sequence == 3


def test_a_new_mod_origin_bumps_the_origin_sequence():
    driver = started()
    driver.feed(d.ground_truth(origin=1))
    before = driver.lifecycle().origin_sequence
    driver.feed(d.ground_truth(origin=2, ut=d.UT + 0.1))
    assert driver.lifecycle().origin_sequence == before + 1
    assert driver.lifecycle().generation == 1


def test_silent_topics_are_removed_after_the_timeout():
    driver = started(topic_timeout_sec=1.0)
    driver.feed(d.motor())
    driver.feed(d.session(sequence=2, ut=d.UT + 0.5), dt=0.5)
    assert not [a for a in driver.tick(0.4) if isinstance(a, Destroy)]
    driver.feed(d.session(sequence=3, ut=d.UT + 1.0), dt=0.0)
    removed = [a.key for a in driver.tick(0.3) if isinstance(a, Destroy)]
    assert set(removed) == {'joint_states', 'actuators/servo/state'}


def test_joint_states_collect_every_servo():
    driver = started()
    driver.feed(d.motor('b_slide', 0.2), d.motor('a_hinge', 0.4))
    msg = driver.published('joint_states')[-1]
    assert list(msg.name) == ['a_hinge', 'b_slide']
    assert list(msg.position) == [0.4, 0.2]


def test_state_stamps_are_ksp_time_where_the_datagram_carries_it():
    driver = started()
    driver.feed(d.imu(ut=d.UT), dt=0.1)                     # fixes the UT -> ROS offset
    offset = ROS_T0 + driver.now - d.UT
    # servo and wheel states carry UT: stamped with it (as MotorState/WheelState say)
    driver.feed(d.motor('mast_hinge', 0.25, ut=d.UT + 1.0), dt=0.4)
    wheel = d.encode('pylon_actuator_state', actuatorType='wheel', name='wheel_7700002_0',
                     vesselId=d.VESSEL, universalTime=d.UT + 2.0, enabled=True)
    driver.feed(wheel, dt=0.4)
    servo, = driver.published('actuators/servo/state')
    assert to_seconds(servo.header.stamp) == pytest.approx(d.UT + 1.0 + offset, abs=1e-6)
    wheel_state, = driver.published('actuators/wheel/state')
    assert to_seconds(wheel_state.header.stamp) == pytest.approx(d.UT + 2.0 + offset, abs=1e-6)
    # the wrench status and the docking port state carry none: stamped on receipt
    driver.feed(d.encode('pylon_docking_port_state', name='docking_port_3008_0',
                         state='Ready', docked=False, acquiring=False, releasable=False,
                         cameraActive=False), dt=0.4)
    dock, = driver.published('docking_port/state')
    assert to_seconds(dock.header.stamp) == pytest.approx(ROS_T0 + driver.now, abs=1e-6)



def test_ids_no_topic_can_hold_are_sanitised_into_their_topics():
    # found by the fuzz bench: one bit flipped made 'docking_port_11000(10_0', a long string
    # a LiDAR id of backslashes; creating their publishers raised in the receive thread
    from pylon_bridge.config import defaults
    from rclpy.validate_topic_name import validate_topic_name
    driver = started()
    driver.feed(d.ground_truth(), d.imu())
    actions = driver.feed(d.encode('pylon_docking_port_state', name='Docking Port(2)',
                                   state='Ready', docked=False, acquiring=False,
                                   releasable=False, cameraActive=False),
                          d.lidar_3d(ut=d.UT + 0.1, sensor='\\' * 300),
                          d.lidar_2d(ut=d.UT + 0.1, sensor='x' * 5000))
    ids = {a.key: a.topic_id for a in actions if isinstance(a, Publish) and a.topic_id}
    assert ids == {'docking_port/state': 'docking_port_2', 'lidar_3d': 'sensor',
                   'lidar_2d': 'x' * 128}
    for key, topic_id in ids.items():
        validate_topic_name(defaults().topic(key, id=topic_id))
    removed = driver.feed(d.encode('pylon_lidar_inactive', mode='3D', sensorId='\\' * 300))
    assert [(a.key, a.topic_id) for a in removed if isinstance(a, Destroy)] == [
        ('lidar_3d', 'sensor')]


@pytest.mark.parametrize('ut', [1e308, 2.0**64, d.UT + 2.0**31, -1e12])
def test_a_ut_no_stamp_can_hold_is_dropped_and_moves_no_clock(ut):
    # found by the fuzz bench: a datagram of the session with such a UT made a stamp past
    # the int32 seconds of builtin_interfaces/Time; the publish raised in the receive thread
    # and, as the newest stamp, it would have started the next session there
    driver = started(publish_clock=True)
    driver.feed(d.imu(ut=d.UT))
    clock = driver.published('clock')[-1]
    assert driver.feed(d.imu(ut=ut), d.ground_truth(ut=ut), d.flight_state(ut=ut),
                       dt=0.01) == []
    assert sum(driver.core.stats.dropped.values()) == 3
    assert driver.core.stats.dropped['out_of_range'] >= 1
    assert driver.core.shared.time.latest_stamp == pytest.approx(ROS_T0)
    driver.feed(d.session(ut=ut, sequence=2), dt=0.01)              # a heartbeat: no clock
    assert driver.published('clock')[-1] == clock
    [imu] = driver.published('imu', driver.feed(d.imu(ut=d.UT + 0.1), dt=0.01))
    assert to_seconds(imu.header.stamp) == pytest.approx(ROS_T0 + 0.1, abs=1e-6)
    assert driver.lifecycle().generation == 1


@pytest.mark.parametrize('data, reason', [
    (b'\xff\xfe', 'invalid_utf8'),
    (b'[1, 2]', 'not_object'),
    (b'{"type": "pylon_imu", "version": true}', 'bad_version'),
    (b'{"type": "ksp_imu", "version": 1}', 'bad_packet_type'),
    (b'{' * 5000 + b'}' * 5000, 'invalid_json'),
])
def test_malformed_datagrams_are_counted_by_reason(data, reason):
    driver = started()
    assert driver.feed(data) == []
    assert dict(driver.core.stats.dropped) == {reason: 1}


def test_non_finite_values_are_rejected():
    driver = started()
    text = d.imu().decode().replace('9.81', 'NaN')
    assert driver.feed(text.encode()) == []
    assert sum(driver.core.stats.dropped.values()) == 1
    assert not driver.published('imu')


def test_unknown_types_and_states_without_topic_are_ignored_not_dropped():
    driver = started()
    unknown = d.session().replace(b'"pylon_session"', b'"pylon_from_the_future"')
    assert driver.feed(unknown) == []
    assert driver.core.stats.ignored['unknown_type'] == 1
    assert sum(driver.core.stats.dropped.values()) == 0
    motor = d.encode('pylon_actuator_state', actuatorType='motor', name='arm_hinge',
                     vesselId=d.VESSEL)       # servos have pylon_motor_state: no topic here
    assert driver.feed(motor) == []
    assert driver.core.stats.ignored == {'unknown_type': 1, 'pylon_actuator_state/motor': 1}
    assert sum(driver.core.stats.dropped.values()) == 0


def test_motor_and_wrench_diagnostics():
    from pylon_bridge import diagnostics
    driver = started()
    driver.feed(d.motor('mast_hinge', 0.25))
    [status] = diagnostics.motor_statuses(driver.core.actuation.motors.values())
    values = {kv.key: kv.value for kv in status.values}
    assert status.name == 'pylon_bridge: motor mast_hinge' and status.level == status.OK
    assert values['position'] == '0.25' and values['powered'] == 'True'
    assert diagnostics.wrench_status(None).message == 'no wrench command yet'
    wrench = {'force': [3.0, 4.0, 0.0], 'torque': [0.0, 0.0, 0.0]}
    status = diagnostics.wrench_status({
        'accepted': True, 'reason': 'magnitude_limit', 'saturationRatio': 0.5,
        'trackingErrorRatio': 0.6, 'saturated': True, 'controllerId': 'c', 'sequence': 4,
        'allocationResidual': wrench, 'trackingResidual': wrench})
    values = {kv.key: kv.value for kv in status.values}
    assert status.level == status.WARN and values['allocationResidual.force_norm'] == '5'
    assert values['saturation_ratio'] == '0.5' and status.message == 'magnitude_limit'
    huge = {'force': [1e200, 1.7e308, 0.0], 'torque': [1.7e308, 1.7e308, 1.7e308]}
    status = diagnostics.wrench_status({'accepted': False, 'allocationResidual': huge,
                                        'trackingResidual': huge})
    values = {kv.key: kv.value for kv in status.values}
    assert values['allocationResidual.force_norm'] == '1.7e+308'
    assert values['allocationResidual.torque_norm'] == 'inf'


# -- star tracker -------------------------------------------------------------------------
def test_star_tracker_valid_sample_gives_state_and_attitude():
    driver = started()
    actions = driver.feed(d.star_tracker(ut=d.UT + 0.2))
    state, = driver.published('star_tracker/state', actions)
    attitude, = driver.published('star_tracker/attitude', actions)
    assert {a.topic_id for a in actions if isinstance(a, Publish)
            and a.key.startswith('star_tracker')} == {'star_tracker_main'}
    assert state.header.frame_id == 'kerbol_inertial' and state.measured_frame_id == 'base_link'
    assert state.valid and state.reason == 'tracking' and state.sequence == 1
    assert state.universal_time == d.UT + 0.2
    q = state.orientation
    assert (q.x, q.y, q.z, q.w) == pytest.approx((0.0, 0.0, 0.38268343, 0.92387953))
    sigma2 = 9.696273622190799e-05 ** 2
    assert list(state.orientation_covariance) == pytest.approx(
        [sigma2, 0, 0, 0, sigma2, 0, 0, 0, sigma2])
    assert attitude.header == state.header and attitude.quaternion == state.orientation
    # the stamp comes from the session's UT mapping (the same as the IMU's)
    imu, = driver.published('imu', driver.feed(d.imu(ut=d.UT + 0.2)))
    assert imu.header.stamp == state.header.stamp


def test_star_tracker_invalid_sample_has_no_attitude_and_zero_quaternion():
    driver = started()
    actions = driver.feed(d.star_tracker(reason='sun_exclusion'))
    state, = driver.published('star_tracker/state', actions)
    assert driver.published('star_tracker/attitude', actions) == []
    assert not state.valid and state.reason == 'sun_exclusion'
    q = state.orientation
    assert (q.x, q.y, q.z, q.w) == (0.0, 0.0, 0.0, 0.0)
    assert state.orientation_covariance[0] == -1.0


def test_star_tracker_duplicates_and_reordered_samples_are_dropped_per_sensor():
    driver = started()
    driver.feed(d.star_tracker(sequence=5), d.star_tracker(sequence=5),
                d.star_tracker(sequence=4), d.star_tracker(sequence=6))
    assert [m.sequence for m in driver.published('star_tracker/state')] == [5, 6]
    assert driver.core.stats.dropped['stale_sequence'] == 2
    # another sensor has its own sequence; a new session of the mod starts again
    driver.feed(d.star_tracker(sequence=1, sensor='star_tracker_aft'),
                d.star_tracker(sequence=1, session_id='cd' * 16))
    assert [(m.sensor_id, m.sequence) for m in driver.published('star_tracker/state')][2:] \
        == [('star_tracker_aft', 1), ('star_tracker_main', 1)]


def test_star_tracker_goes_stale_at_4_hz_then_is_removed():
    driver = started(topic_timeout_sec=3.0)
    driver.feed(d.star_tracker(sequence=7))
    quiet = []
    for _ in range(int(2.9 / 0.25)):
        driver.feed(d.session())         # the session is alive, the tracker silent
        quiet += driver.tick(0.25)
    assert driver.published('star_tracker/state', quiet) == []
    stale = []
    for _ in range(40):                    # 10 s more: the heartbeat at 4 Hz
        driver.feed(d.session())
        stale += driver.tick(0.25)
    beats = driver.published('star_tracker/state', stale)
    assert 38 <= len(beats) <= 40
    assert all(not m.valid and m.reason == 'stale' and m.sequence == 7
               and m.orientation_covariance[0] == -1.0 and m.orientation.w == 0.0
               for m in beats)
    assert not any(isinstance(a, Destroy) for a in stale)
    late = []
    for _ in range(int(18 / 0.25)):        # removed 30 s (max(30, 3 x 3)) after the sample
        driver.feed(d.session())
        late += driver.tick(0.25)
    removed = [(a.key, a.topic_id) for a in late if isinstance(a, Destroy)]
    assert removed == [('star_tracker/state', 'star_tracker_main'),
                       ('star_tracker/attitude', 'star_tracker_main')]
    assert driver.core.sensors.star_trackers == {}


def test_star_tracker_sample_while_paused_is_dropped():
    driver = Driver()
    driver.feed(d.session(paused=True))
    assert driver.feed(d.star_tracker()) == []
    assert driver.core.stats.dropped['paused'] == 1


def test_star_tracker_works_without_ground_truth():
    driver = started(disable_ground_truth=True)
    actions = driver.feed(d.star_tracker())
    assert len(driver.published('star_tracker/attitude', actions)) == 1
    assert driver.published('tf', actions) == []


# -- LiDAR and cameras --------------------------------------------------------------------
def _with_model(**config):
    driver = started(**config)
    driver.feed(d.imu(), d.ground_truth())
    driver.feed(*d.model_chunks())
    assert driver.core.shared.description.model is not None
    return driver


def test_lidar_2d_scan_angles_ranges_and_frame():
    driver = started()
    actions = driver.feed(d.lidar_2d(ut=d.UT + 0.1))
    scan, = driver.published('lidar_2d', actions)
    assert [a.topic_id for a in actions if getattr(a, 'key', '') == 'lidar_2d'] == \
        ['lidar_2d_front']
    assert scan.header.frame_id == f'pylon_{d.VESSEL[:8]}_lidar_2d_front'
    assert scan.angle_min == pytest.approx(-math.pi / 4)
    assert scan.angle_increment == pytest.approx(math.pi / 2 / 4)     # fov / (N - 1)
    assert scan.angle_max == pytest.approx(math.pi / 4)
    assert list(scan.ranges) == [1.0, 2.0, math.inf, math.inf, 3.0]   # miss, beyond max
    assert scan.range_max == 40.0 and scan.scan_time == pytest.approx(0.1)
    full, = driver.published('lidar_2d', driver.feed(d.lidar_2d(ut=d.UT + 0.2, fov=360.0)))
    assert full.angle_increment == pytest.approx(2 * math.pi / 5)     # fov / N


def test_a_full_circle_scan_of_no_ray_is_published_empty_not_raised():
    driver = started()
    driver.feed(d.ground_truth())
    actions = driver.feed(d.lidar_2d(ranges=(), fov=360.0))
    scan, = driver.published('lidar_2d', actions)
    assert list(scan.ranges) == [] and scan.angle_increment == 0.0
    assert sum(driver.core.stats.dropped.values()) == 0


def test_lidar_3d_points_from_the_fibonacci_layout():
    driver = started()
    cloud, = driver.published('lidar_3d', driver.feed(d.lidar_3d()))
    assert cloud.width == 3 and cloud.height == 1 and cloud.point_step == 12
    assert [f.name for f in cloud.fields] == ['x', 'y', 'z'] and cloud.is_dense
    pts = np.frombuffer(bytes(cloud.data), dtype=np.float32).reshape(-1, 3)
    n = 4
    expected = []
    for i, r in [(0, 1.0), (1, 2.0), (3, 4.0)]:
        f = (i + 0.5) / n
        rr = math.sqrt(1 - f * f)
        a = i * 2.3999632
        expected.append([f * r, -math.cos(a) * rr * r, math.sin(a) * rr * r])
    np.testing.assert_allclose(pts, expected, rtol=1e-6)
    # explicit points win, misses (null) and invalid ranges are omitted
    explicit = d.lidar_3d(ut=d.UT + 0.1, ranges=(1.0, 2.0, -1.0, 4.0),
                          points=[1, 0, 0, 0, 2, 0, None, None, None, 0, 0, 4])
    cloud, = driver.published('lidar_3d', driver.feed(explicit))
    pts = np.frombuffer(bytes(cloud.data), dtype=np.float32).reshape(-1, 3)
    np.testing.assert_allclose(pts, [[1, 0, 0], [0, 2, 0], [0, 0, 4]])


def test_lidar_scans_out_of_order_are_dropped_and_inactive_removes_the_topic():
    driver = started()
    driver.feed(d.lidar_2d(ut=d.UT + 0.2), d.lidar_2d(ut=d.UT + 0.1))
    assert len(driver.published('lidar_2d')) == 1
    assert driver.core.stats.dropped['stale_scan'] == 1
    inactive = d.encode('pylon_lidar_inactive', mode='2D', sensorId='lidar_2d_front',
                        vessel='Rover', partFlightId=4002)
    removed = [a for a in driver.feed(inactive) if isinstance(a, Destroy)]
    assert [(a.key, a.topic_id) for a in removed] == [('lidar_2d', 'lidar_2d_front')]


def test_a_session_names_at_most_max_ids_per_kind():
    from pylon_bridge.actions import MAX_IDS_PER_KIND
    driver = started()
    ids = [f'lidar_{i}' for i in range(MAX_IDS_PER_KIND + 1)]
    for i, sensor in enumerate(ids):
        driver.feed(d.lidar_2d(ut=d.UT + 0.1 + i * 0.01, sensor=sensor))
    published = {a.topic_id for a in driver.out if isinstance(a, Publish) and a.key == 'lidar_2d'}
    assert published == set(ids[:-1])                   # the one id too many: no topic
    assert driver.core.stats.dropped['too_many_topics'] == 1
    assert 'lidar_2d ids' in driver.core.stats.recent_drops[-1][1]
    assert ('lidar_2d', ids[-1]) not in driver.core.sensors.last_ut   # nor any state
    # a known id goes on, also after its topic fell silent and was removed
    driver.feed(d.session(ut=d.UT + 2.0, sequence=2), dt=2.0)
    assert Destroy('lidar_2d', ids[0]) in driver.tick(1.5)
    assert driver.published('lidar_2d', driver.feed(d.lidar_2d(ut=d.UT + 5.0, sensor=ids[0])))
    assert driver.core.stats.dropped['too_many_topics'] == 1
    # another kind has ids of its own: servos (one joint state entry each) and LiDAR 3D
    driver.feed(*(d.motor(f'hinge_{i}') for i in range(MAX_IDS_PER_KIND + 1)))
    assert driver.core.stats.dropped['too_many_topics'] == 2
    assert len(driver.core.actuation.motors) == MAX_IDS_PER_KIND
    # a new runtime session of the mod may name its own
    driver.feed(d.session(env=d.envelope(instance='d00dfeed' * 4)))
    assert driver.published('lidar_2d', driver.feed(
        d.lidar_2d(ut=d.UT + 6.0, env=d.envelope(instance='d00dfeed' * 4), sensor=ids[-1])))


def test_sensor_mounts_go_to_tf_static_under_the_part_link_with_the_proxy_joints():
    driver = _with_model()
    link = driver.core.shared.description.model.frame_for_part(4002)
    assert link is not None
    actions = driver.feed(d.lidar_2d(ut=d.UT + 0.1, part=4002))
    static, = driver.published('tf_static', actions)
    mounts = {t.child_frame_id: t for t in static.transforms}
    frame = f'pylon_{d.VESSEL[:8]}_lidar_2d_front'
    assert mounts[frame].header.frame_id == link
    assert mounts[frame].transform.translation.z == pytest.approx(0.2)
    fixed = [t for t in static.transforms if t.child_frame_id != frame]
    assert fixed, 'the proxy fixed joints are in the same message'
    # the same mount again: nothing new on /tf_static
    assert driver.published('tf_static', driver.feed(d.lidar_2d(ut=d.UT + 0.2))) == []
    # with robot_state_publisher owning the fixed joints, only the mounts
    driver = _with_model(publish_proxy_static_tf=False)
    static, = driver.published('tf_static', driver.feed(d.lidar_2d(ut=d.UT + 0.1)))
    assert [t.child_frame_id for t in static.transforms] == ['pylon_root', frame]
    assert static.transforms[0].header.frame_id == f'pylon_{d.VESSEL[:8]}_link_0000'


def _frame(width=20, height=10):
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, width * height * 3, dtype=np.uint8).tobytes()


def test_camera_frame_reassembled_from_reordered_and_duplicated_chunks():
    driver = started()
    raw = _frame()
    chunks = d.camera_chunks(raw, 20, 10)
    assert len(chunks) == 2
    actions = driver.feed(chunks[1], chunks[1], chunks[0])
    img, = driver.published('camera', actions)
    info, = driver.published('camera_info', actions)
    assert bytes(img.data) == raw and img.encoding == 'rgb8' and img.step == 60
    optical = f'pylon_{d.VESSEL[:8]}_camera_front_optical'
    assert img.header.frame_id == info.header.frame_id == optical
    f = 10 / (2 * math.tan(math.radians(30.0)))
    assert list(info.k) == pytest.approx([f, 0, 9.5, 0, f, 4.5, 0, 0, 1])
    assert info.distortion_model == 'plumb_bob' and list(info.d) == [0.0] * 5


def test_camera_lost_chunk_or_bad_hash_never_publishes_a_partial_image():
    driver = started()
    raw = _frame()
    chunks = d.camera_chunks(raw, 20, 10)
    assert driver.feed(chunks[0]) == []                 # the second chunk is lost
    driver.tick(2.5)                                    # the pending frame expires
    assert driver.published('camera') == []
    tampered = d.camera_chunks(bytes(len(raw)), 20, 10, sequence=2, ut=d.UT + 1)
    good = d.camera_chunks(raw, 20, 10, sequence=2, ut=d.UT + 1)
    # the hash of the real frame with the bytes of another: refused when complete
    import json
    bad = json.loads(tampered[1])
    bad['sha256'] = json.loads(good[1])['sha256']
    first = json.loads(tampered[0])
    first['sha256'] = bad['sha256']
    driver.feed(json.dumps(first).encode(), json.dumps(bad).encode())
    assert driver.published('camera') == []
    assert driver.core.stats.dropped['camera_sha256_mismatch'] == 1


def test_docking_port_camera_topics_and_inactive():
    driver = started()
    raw = _frame(16, 16)
    actions = driver.feed(*d.camera_chunks(raw, 16, 16, sensor='docking_port_1100010_0',
                                           source='docking_port'))
    img, = driver.published('docking_port/camera', actions)
    assert img.header.frame_id == f'pylon_{d.VESSEL[:8]}_docking_port_1100010_0_camera_optical'
    inactive = d.encode('pylon_camera_inactive', source='docking_port',
                        sensorId='docking_port_1100010_0', partFlightId=4002)
    removed = {(a.key, a.topic_id) for a in driver.feed(inactive) if isinstance(a, Destroy)}
    assert removed == {('docking_port/camera', 'docking_port_1100010_0'),
                       ('docking_port/camera_info', 'docking_port_1100010_0')}


def test_bad_sensor_packets_are_counted_and_publish_nothing():
    driver = started()
    other = d.envelope(epoch='ab' * 16)          # another runtime session's packets
    bad = {
        'envelope_mismatch': [d.lidar_3d(env=other), d.star_tracker(env=other),
                              *d.camera_chunks(_frame(), 20, 10, env=other)],
        'bad_layout': [d.lidar_3d(ut=d.UT + 1, layout='vertical-major')],
    }
    truncated = d.lidar_3d(ut=d.UT + 2)[:-20]
    huge = d.lidar_3d(ut=d.UT + 3)[:-1] + b' ' * 70000 + b'}'
    actions = driver.feed(*bad['envelope_mismatch'], *bad['bad_layout'], truncated, huge)
    assert not [a for a in actions if isinstance(a, Publish)]
    dropped = driver.core.stats.dropped
    assert dropped['envelope_mismatch'] == len(bad['envelope_mismatch'])
    assert dropped['bad_layout'] == 1
    assert sum(dropped.values()) == len(bad['envelope_mismatch']) + 3, dict(dropped)
    # and the sensors still work afterwards
    assert driver.published('lidar_3d', driver.feed(d.lidar_3d(ut=d.UT + 4)))


# -- relative navigation (our simulator's extension) ---------------------------------------
NAV = 'relative_nav_main'
THIRD = 'ab' * 16


def test_relative_nav_becomes_nearby_vessels_in_the_body_frame():
    driver = started()
    actions = driver.feed(d.relative_nav(ut=d.UT + 0.2, targets=(
        (d.OTHER, (120.0, 90.0, 0.0), (0.0, -0.17, 0.0)),
        (THIRD, (-1800.0, 3.0, -4.0), (0.1, 0.0, 5.8)))))
    msg, = driver.published('relative_nav', actions)
    assert {a.topic_id for a in actions if isinstance(a, Publish)
            and a.key == 'relative_nav'} == {NAV}
    assert msg.header.frame_id == 'base_link' and msg.observer_vessel_id == d.VESSEL
    assert msg.origin_sequence == 0
    assert (msg.observer_position.x, msg.observer_position.y, msg.observer_position.z) == (
        0.0, 0.0, 0.0)
    assert (msg.observer_linear_velocity.x, msg.observer_linear_velocity.z) == (0.0, 0.0)
    near, far = msg.vessels
    assert (near.vessel_id, near.vessel_name, near.is_debris) == (d.OTHER, 'Target Station',
                                                                   False)
    assert (near.position.x, near.position.y, near.position.z) == (120.0, 90.0, 0.0)
    assert (near.linear_velocity.y, far.linear_velocity.z) == (-0.17, 5.8)
    assert far.vessel_id == THIRD and far.position.x == -1800.0
    # the stamp is the session's UT mapping, the IMU's
    imu, = driver.published('imu', driver.feed(d.imu(ut=d.UT + 0.2)))
    assert imu.header.stamp == msg.header.stamp
    # the body frame follows the bridge's configuration
    renamed = started(body_frame='vehicle_body')
    msg, = renamed.published('relative_nav', renamed.feed(d.relative_nav()))
    assert msg.header.frame_id == 'vehicle_body'


def test_relative_nav_old_samples_are_dropped_per_sensor():
    driver = started()
    driver.feed(d.relative_nav(ut=d.UT + 0.2), d.relative_nav(ut=d.UT + 0.2),
                d.relative_nav(ut=d.UT + 0.1), d.relative_nav(ut=d.UT + 0.3))
    assert len(driver.published('relative_nav')) == 2
    assert driver.core.stats.dropped['stale_relative_nav'] == 2
    # another sensor keeps its own time; a new runtime session starts again
    driver.feed(d.relative_nav(ut=d.UT, sensor='relative_nav_aft'))
    driver.feed(d.session(env=d.envelope(generation=4)), d.relative_nav(
        ut=d.UT, env=d.envelope(generation=4)))
    topics = [a.topic_id for a in driver.out if isinstance(a, Publish)
              and a.key == 'relative_nav']
    assert topics == [NAV, NAV, 'relative_nav_aft', NAV]


def test_relative_nav_is_a_measurement_paused_a_sensor_without_ground_truth():
    paused = Driver()
    paused.feed(d.session(paused=True))
    assert paused.feed(d.relative_nav()) == []
    assert paused.core.stats.dropped['paused'] == 1
    blind = started(disable_ground_truth=True)
    assert len(blind.published('relative_nav', blind.feed(d.relative_nav()))) == 1
    assert blind.core.stats.dropped['ground_truth_disabled'] == 0


def test_relative_nav_topic_goes_after_the_timeout():
    driver = started(topic_timeout_sec=1.0)
    driver.feed(d.relative_nav())
    driver.feed(d.session(sequence=2, ut=d.UT + 0.5), dt=0.5)
    assert not [a for a in driver.tick(0.4) if isinstance(a, Destroy)]
    driver.feed(d.session(sequence=3, ut=d.UT + 1.0))
    removed = [(a.key, a.topic_id) for a in driver.tick(0.3) if isinstance(a, Destroy)]
    assert removed == [('relative_nav', NAV)]
