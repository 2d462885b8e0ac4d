"""udp_bridge driven by pylon_sim, both real processes, checked by a node over real DDS."""

import bisect
import math

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import AccelStamped, PoseStamped, TwistStamped, Vector3Stamped
from pylon_interfaces.msg import NearbyVessels, VesselLifecycle
from pylon_protocol import frames, rotations
from pylon_testing.recorder import stamp_of, TopicRecorder
import pytest
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    qos_profile_sensor_data,
    QoSProfile,
    ReliabilityPolicy,
)
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

pytestmark = pytest.mark.integration

SAT = '5a7e1f0c3b2d4e6f8a9b0c1d2e3f4a5b'
TARGET = '0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e'
ENU, BASE = 'pylon_ground_truth_enu', 'base_link'


def qos(reliability, durability=DurabilityPolicy.VOLATILE, depth=10):
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=reliability,
                      durability=durability)


# deep reader queues: a test process that is late to spin loses no sample of a stream
RELIABLE = qos(ReliabilityPolicy.RELIABLE, depth=200)
BEST_EFFORT = qos(ReliabilityPolicy.BEST_EFFORT, depth=200)
# depth 10 on the reading side: no lifecycle change is lost between two spins
LATCHED = qos(ReliabilityPolicy.RELIABLE, DurabilityPolicy.TRANSIENT_LOCAL, 10)
TF_STATIC = qos(ReliabilityPolicy.RELIABLE, DurabilityPolicy.TRANSIENT_LOCAL, 1)

# topic, type, the QoS the topic specification gives its subscribers, the mod's rate (Hz)
STREAMS = {
    'imu': ('/ksp_vessel/imu/data_raw', Imu, BEST_EFFORT, 30.0),
    'pose': ('/ksp_vessel/ground_truth/pose', PoseStamped, BEST_EFFORT, 30.0),
    'twist': ('/ksp_vessel/ground_truth/twist', TwistStamped, BEST_EFFORT, 30.0),
    'twist_body': ('/ksp_vessel/ground_truth/twist_body', TwistStamped, BEST_EFFORT, 30.0),
    'accel': ('/ksp_vessel/ground_truth/acceleration', AccelStamped, BEST_EFFORT, 30.0),
    'frame_rate': ('/ksp_vessel/ground_truth/frame_angular_velocity', Vector3Stamped,
                   RELIABLE, 30.0),
    'nearby': ('/ksp_vessel/ground_truth/nearby_vessels', NearbyVessels, RELIABLE, 30.0),
    'tf': ('/tf', TFMessage, qos(ReliabilityPolicy.RELIABLE, depth=100), None),
}
FRAMES = {'imu': BASE, 'pose': ENU, 'twist': ENU, 'twist_body': BASE, 'accel': ENU,
          'frame_rate': ENU, 'nearby': ENU}


def lifecycle_recorder(ros_node):
    return TopicRecorder(ros_node).add('life', '/ksp_vessel/lifecycle', VesselLifecycle, LATCHED)


def test_orbit_streams_types_frames_rates_and_values(sim_stack, ros_node):
    sim_stack()
    rec = lifecycle_recorder(ros_node)
    for name, (topic, msg_type, profile, _) in STREAMS.items():
        rec.add(name, topic, msg_type, profile)
    active = rec.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE)
    assert active.vessel_id == SAT and active.generation == 1
    assert (active.world_frame, active.body_frame) == (ENU, BASE)
    # 3 s of every stream, measured on the stamps (KSP time), from a point after ACTIVE
    start_at = rec.mark()
    for name, (topic, _, _, rate) in STREAMS.items():
        msgs = rec.wait_stamp_span(name, 3.0, start_at) if rate is not None \
            else rec.wait_count(name, 1, start_at)
        if rate is not None:
            # the rate on KSP time: samples over the span of their stamps (the mod's
            # schedule runs on 50 Hz physics frames, so single intervals vary by a frame)
            stamps = [stamp_of(m) for m in msgs]
            measured = (len(stamps) - 1) / (stamps[-1] - stamps[0])
            assert rate * 0.8 <= measured <= rate * 1.2, (topic, measured)
            assert all(b > a for a, b in zip(stamps, stamps[1:])), topic
        if name in FRAMES:
            assert {m.header.frame_id for m in msgs} == {FRAMES[name]}, topic
    for msg in rec.messages('imu'):                     # free fall, REP-145 data_raw
        accel = msg.linear_acceleration
        assert math.hypot(accel.x, accel.y, accel.z) < 1e-3
        assert msg.orientation_covariance[0] == -1.0
        assert list(msg.angular_velocity_covariance) == [0.0] * 9
        assert list(msg.linear_acceleration_covariance) == [0.0] * 9
    nearby = rec.last('nearby')
    assert nearby.observer_vessel_id == SAT
    assert TARGET in [v.vessel_id for v in nearby.vessels]
    assert SAT not in [v.vessel_id for v in nearby.vessels]
    assert nearby.origin_sequence == active.origin_sequence


def test_ground_truth_angular_velocity_matches_the_quaternion_difference(sim_stack, ros_node):
    sim_stack()
    rec = TopicRecorder(ros_node).add('pose', STREAMS['pose'][0], PoseStamped, BEST_EFFORT)
    rec.add('twist', STREAMS['twist'][0], TwistStamped, BEST_EFFORT)
    rec.until(lambda: len(rec.got['pose']) > 40 and len(rec.got['twist']) > 40,
              '40 poses and twists')
    twists = {stamp_of(m): m.twist.angular for m in rec.messages('twist')}
    poses = sorted((stamp_of(m), m.pose.orientation) for m in rec.messages('pose'))
    checked = 0
    for (t0, q0), (t1, q1) in zip(poses, poses[1:]):
        if t0 not in twists or t1 - t0 > 0.1:
            continue
        omega = rotations.angular_velocity_from_quaternions(
            (q0.x, q0.y, q0.z, q0.w), (q1.x, q1.y, q1.z, q1.w), t1 - t0)
        w = twists[t0]
        assert frames.norm(omega) > 1e-4                  # the orbit turns the ENU attitude
        assert (w.x, w.y, w.z) == pytest.approx(omega, rel=0.05, abs=1e-6)
        checked += 1
    assert checked > 20


def test_tf_covers_every_sensor_stamp(sim_stack, ros_node):
    sim_stack()
    rec = TopicRecorder(ros_node).add('imu', STREAMS['imu'][0], Imu, BEST_EFFORT)
    rec.add('tf', '/tf', TFMessage, STREAMS['tf'][2])
    rec.add('pose', STREAMS['pose'][0], PoseStamped, BEST_EFFORT)
    rec.wait_count('imu', 61)
    world = sorted(((stamp_of(t), t) for m in rec.messages('tf')
                    for t in m.transforms if (t.header.frame_id, t.child_frame_id) == (ENU, BASE)),
                   key=lambda pair: pair[0])
    stamps = [s for s, _ in world]
    assert len(stamps) == len(set(stamps)), 'a transform stamp was published twice'
    poses = {stamp_of(m): m.pose for m in rec.messages('pose')}
    checked = 0
    for imu in rec.messages('imu')[5:-5]:
        t = stamp_of(imu)
        i = bisect.bisect_left(stamps, t)
        assert i < len(stamps), f'no transform at or after the IMU stamp {t}'
        assert i > 0 or stamps[0] == t
        after = world[i][1].transform
        if stamps[i] == t and t in poses:
            # tf2 returns this transform: the pose itself, or the previous pose carried
            # forward by at most one sample period at constant velocity
            pose = poses[t]
            assert after.translation.x == pytest.approx(pose.position.x, abs=0.01)
            assert after.translation.z == pytest.approx(pose.position.z, abs=0.01)
            assert after.rotation.w == pytest.approx(pose.orientation.w, abs=1e-6)
        checked += 1
    assert checked > 40


def test_qos_compatibility_and_mismatch_detection(sim_stack, ros_node):
    sim_stack()
    rec = lifecycle_recorder(ros_node)
    rec.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE)
    incompatible = []
    callbacks = SubscriptionEventCallbacks(
        incompatible_qos=lambda event: incompatible.append(event.last_policy_kind))
    # the IMU is Best Effort: a Reliable subscriber is detected as incompatible
    rec.add('imu_reliable', STREAMS['imu'][0], Imu, RELIABLE, event_callbacks=callbacks)
    # latched topics serve sensor-data and late subscribers alike
    rec.add('description', '/ksp_vessel/robot_description', String, LATCHED)
    rec.add('root', '/ksp_vessel/root_frame', String, LATCHED)
    rec.add('static', '/tf_static', TFMessage, TF_STATIC)
    rec.add('status', '/pylon/status', String, LATCHED)
    rec.add('diagnostics', '/pylon/diagnostics', DiagnosticArray, RELIABLE)
    rec.add('frame_rate_be', STREAMS['frame_rate'][0], Vector3Stamped, qos_profile_sensor_data)
    rec.until(lambda: incompatible and all(
        rec.got[k] for k in ('root', 'static', 'status', 'diagnostics', 'frame_rate_be')),
        'latched topics, sensor-data subscription and the QoS event')
    assert not rec.got['imu_reliable']
    description = rec.wait_for('description', lambda m: m.data != '')
    assert f'<robot name="pylon_{SAT[:8]}_active_vessel">' in description.data
    root = rec.wait_for('root', lambda m: m.data != '').data
    assert root == f'pylon_{SAT[:8]}_link_0000'
    static = rec.last('static')
    assert static.transforms and all(t.header.frame_id.startswith(f'pylon_{SAT[:8]}_link_')
                                     for t in static.transforms)
    diagnostics = rec.last('diagnostics')
    names = {status.name: {kv.key: kv.value for kv in status.values}
             for status in diagnostics.status}
    assert int(names['pylon_bridge: datagrams']['received']) > 0
    assert names['pylon_bridge: session']['state'] in ('ACTIVE', 'CHANGED')
    ready = rec.wait_for('life', lambda m: m.model_ready)
    assert len(ready.model_id) == 64


def test_lifecycle_across_switch_revert_pause_pack_and_heartbeat_loss(sim_stack, ros_node):
    stack = sim_stack()
    rec = lifecycle_recorder(ros_node)
    rec.add('imu', STREAMS['imu'][0], Imu, BEST_EFFORT)
    rec.add('description', '/ksp_vessel/robot_description', String, LATCHED)
    rec.add('diagnostics', '/pylon/diagnostics', DiagnosticArray, RELIABLE)
    ready = rec.wait_for('life', lambda m: m.model_ready and
                         m.state == VesselLifecycle.STATE_ACTIVE)
    generation = ready.generation

    def step(command, predicate, **fields):
        since = rec.mark()
        stack.admin(command, **fields)
        return rec.wait_for('life', predicate, since, f'the lifecycle after {command}'), since

    # revert: UT goes back to the scenario start (1 s or more back), a new generation
    rec.wait_stamp_span('imu', 1.0)
    rewound, _ = step('revert', lambda m: m.generation == generation + 1)
    assert (rewound.state, rewound.reason) == (VesselLifecycle.STATE_CHANGED, 'time_rewind')
    assert rewound.vessel_id == SAT

    # vessel switch: CHANGED with a new generation, the old model withdrawn at once
    changed, since = step('switch', lambda m: m.generation == generation + 2, vessel='target')
    assert (changed.state, changed.reason) == (VesselLifecycle.STATE_CHANGED, 'vessel_changed')
    assert changed.vessel_id == TARGET and not changed.model_ready
    # the old vessel's model is withdrawn at once: the target's model comes after an empty
    # description, with no model of the old vessel in between (the old one may still come
    # in just before the switch is seen, re-sent after the revert)
    target_model = f'pylon_{TARGET[:8]}_active_vessel'
    rec.wait_for('description', lambda m: target_model in m.data, since)
    after = [m.data for m in rec.messages('description', since)]
    arrived = next(i for i, data in enumerate(after) if target_model in data)
    previous = ([m.data for m in rec.got['description'][:since['description']]]
                + after[:arrived])
    assert previous and previous[-1] == '', 'the old model was not withdrawn first'
    active = rec.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE and
                          m.generation == generation + 2)
    assert active.origin_sequence > ready.origin_sequence

    # pause: once the bridge has seen the paused heartbeat, no new IMU sample for a second
    # of the simulator's clock, and the lifecycle stays as it is
    since = rec.mark()
    stack.admin('pause')

    def paused(message):
        values = {s.name: {kv.key: kv.value for kv in s.values} for s in message.status}
        return values['pylon_bridge: session']['paused'] == 'True'
    rec.wait_for('diagnostics', paused, since, 'the bridge seeing the pause')
    quiet = rec.mark()
    rec.until(stack.clock_reached(1.0), 'one second of pause')
    assert rec.messages('imu', quiet) == []
    assert rec.last('life').generation == generation + 2
    resumed = rec.mark()
    stack.admin('resume')
    rec.wait_for('imu', since=resumed)

    # pack: unavailable, then a runtime reset when it is back
    unavailable, _ = step('pack', lambda m: m.state == VesselLifecycle.STATE_UNAVAILABLE)
    assert unavailable.reason == 'vessel_unavailable'
    back, _ = step('unpack', lambda m: m.generation == generation + 3)
    assert (back.state, back.reason) == (VesselLifecycle.STATE_CHANGED, 'runtime_reset')

    # heartbeat loss: STALE after the timeout, a new generation when it returns
    stale, _ = step('heartbeat', lambda m: m.state == VesselLifecycle.STATE_STALE,
                    enabled=False)
    assert stale.reason == 'session_timeout' and not stale.model_ready
    recovered, _ = step('heartbeat', lambda m: m.reason == 'session_recovered',
                        enabled=True)
    assert recovered.generation == stale.generation + 1 == generation + 4


def test_surface_pad_imu_and_servo_joint_states(sim_stack, ros_node):
    sim_stack(scenario='surface')
    rec = TopicRecorder(ros_node).add('joints', '/ksp_vessel/joint_states', JointState,
                                      BEST_EFFORT)
    rec.add('imu', STREAMS['imu'][0], Imu, BEST_EFFORT)
    joints = rec.wait_count('joints', 26)
    rec.wait_count('imu', 1)
    last = rec.last('joints')
    assert list(last.name) == ['mast_hinge']
    assert len(last.position) == len(last.velocity) == len(last.effort) == 1
    stamps = [stamp_of(m) for m in joints]
    measured = (len(stamps) - 1) / (stamps[-1] - stamps[0])
    assert 16.0 <= measured <= 24.0, measured                  # 20 Hz ± 20 % of KSP time
    imu = rec.last('imu')
    # standing on the pad, nose up: specific force is about +g along the vessel's up axis
    accel = imu.linear_acceleration
    assert math.hypot(accel.x, accel.y, accel.z) == pytest.approx(9.756, abs=0.02)


def test_disable_ground_truth_creates_no_world_topic(sim_stack, ros_node):
    sim_stack(bridge_args=('--disable-ground-truth',))
    rec = lifecycle_recorder(ros_node)
    rec.add('imu', STREAMS['imu'][0], Imu, BEST_EFFORT)
    rec.add('tf', '/tf', TFMessage, STREAMS['tf'][2])
    rec.add('root', '/ksp_vessel/root_frame', String, LATCHED)
    active = rec.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE)
    assert active.world_frame == ''
    root = rec.wait_for('root', lambda m: m.data != '').data
    tf = rec.wait_for('tf', lambda m: any(t.child_frame_id == root for t in m.transforms))
    assert all(t.header.frame_id == BASE for t in tf.transforms)
    rec.wait_count('imu', 31)
    names = {name for name, _ in ros_node.get_topic_names_and_types()}
    assert not any(name.startswith('/ksp_vessel/ground_truth') for name in names)
    for message in rec.messages('tf'):
        assert all(t.header.frame_id != ENU for t in message.transforms)
