"""udp_bridge driven by pylon_sim, both real processes, checked by a node over real DDS."""

import bisect
import math
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import AccelStamped, PoseStamped, TwistStamped, Vector3Stamped
from pylon_bridge.convert import to_seconds
from pylon_interfaces.msg import NearbyVessels, VesselLifecycle
from pylon_protocol import frames
from pylon_sim.admin import request
from pylon_testing.wait import spin_until
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


RELIABLE = qos(ReliabilityPolicy.RELIABLE)
BEST_EFFORT = qos(ReliabilityPolicy.BEST_EFFORT)
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


class Recorder:
    """Subscribes to topics and keeps (receipt time, message) per name."""

    def __init__(self, node):
        self.node = node
        self.got = {}
        self.subscriptions = []

    def add(self, name, topic, msg_type, profile, **kwargs):
        self.got[name] = []

        def keep(msg, name=name):
            self.got[name].append((time.monotonic(), msg))
        self.subscriptions.append(
            self.node.create_subscription(msg_type, topic, keep, profile, **kwargs))
        return self

    def until(self, condition, timeout, what):
        spin_until(self.node, condition, timeout, what=what)

    def messages(self, name, since=0.0):
        return [msg for t, msg in self.got[name] if t >= since]

    def last(self, name):
        return self.got[name][-1][1] if self.got[name] else None

    def wait_for(self, name, predicate=lambda m: True, timeout=20.0, since=0.0):
        found = []

        def check():
            found[:] = [m for m in self.messages(name, since) if predicate(m)]
            return bool(found)
        self.until(check, timeout, f'a matching message on {name}')
        return found[0]


def start(ros_process, free_udp_port, scenario='orbit', bridge_args=(), sim_args=()):
    state_port, command_port, admin_port = free_udp_port(), free_udp_port(), free_udp_port()
    ros_process(['udp_bridge', '--host', '127.0.0.1', '--port', str(state_port),
                 '--command-port', str(command_port), *bridge_args], name='bridge')
    ros_process(['pylon_sim', '--scenario', scenario, '--state-port', str(state_port),
                 '--command-port', str(command_port), '--admin-port', str(admin_port),
                 *sim_args], name='sim')
    return admin_port


def lifecycle_recorder(ros_node):
    return Recorder(ros_node).add('life', '/ksp_vessel/lifecycle', VesselLifecycle, LATCHED)


def test_orbit_streams_types_frames_rates_and_values(ros_process, free_udp_port, ros_node):
    start(ros_process, free_udp_port)
    rec = lifecycle_recorder(ros_node)
    for name, (topic, msg_type, profile, _) in STREAMS.items():
        rec.add(name, topic, msg_type, profile)
    active = rec.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE)
    assert active.vessel_id == SAT and active.generation == 1
    assert (active.world_frame, active.body_frame) == (ENU, BASE)
    start_at = time.monotonic() + 0.5
    rec.until(lambda: time.monotonic() > start_at + 3.0, 10.0, '3 s of streams')
    for name, (topic, _, _, rate) in STREAMS.items():
        msgs = rec.messages(name, since=start_at)
        assert msgs, f'nothing on {topic}'
        if rate is not None:
            times = [t for t, _ in rec.got[name] if t >= start_at]
            measured = (len(times) - 1) / (times[-1] - times[0])
            assert rate * 0.8 <= measured <= rate * 1.2, (topic, measured)
            stamps = [to_seconds(m.header.stamp) for m in msgs]
            by_stamp = (len(stamps) - 1) / (stamps[-1] - stamps[0])
            assert rate * 0.8 <= by_stamp <= rate * 1.2, (topic, by_stamp)
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


def test_ground_truth_angular_velocity_matches_the_quaternion_difference(
        ros_process, free_udp_port, ros_node):
    start(ros_process, free_udp_port)
    rec = Recorder(ros_node).add('pose', STREAMS['pose'][0], PoseStamped, BEST_EFFORT)
    rec.add('twist', STREAMS['twist'][0], TwistStamped, BEST_EFFORT)
    rec.until(lambda: len(rec.got['pose']) > 40 and len(rec.got['twist']) > 40, 20.0,
              '40 poses and twists')
    twists = {to_seconds(m.header.stamp): m.twist.angular for m in rec.messages('twist')}
    poses = sorted((to_seconds(m.header.stamp), m.pose.orientation) for m in rec.messages('pose'))
    checked = 0
    for (t0, q0), (t1, q1) in zip(poses, poses[1:]):
        if t0 not in twists or t1 - t0 > 0.1:
            continue
        omega = frames.angular_velocity_from_quaternions(
            (q0.x, q0.y, q0.z, q0.w), (q1.x, q1.y, q1.z, q1.w), t1 - t0)
        w = twists[t0]
        assert frames.norm(omega) > 1e-4                  # the orbit turns the ENU attitude
        assert (w.x, w.y, w.z) == pytest.approx(omega, rel=0.05, abs=1e-6)
        checked += 1
    assert checked > 20


def test_tf_covers_every_sensor_stamp(ros_process, free_udp_port, ros_node):
    start(ros_process, free_udp_port)
    rec = Recorder(ros_node).add('imu', STREAMS['imu'][0], Imu, BEST_EFFORT)
    rec.add('tf', '/tf', TFMessage, STREAMS['tf'][2])
    rec.add('pose', STREAMS['pose'][0], PoseStamped, BEST_EFFORT)
    rec.until(lambda: len(rec.got['imu']) > 60, 20.0, '60 IMU samples')
    world = sorted(((to_seconds(t.header.stamp), t) for m in rec.messages('tf')
                    for t in m.transforms if (t.header.frame_id, t.child_frame_id) == (ENU, BASE)),
                   key=lambda pair: pair[0])
    stamps = [s for s, _ in world]
    assert len(stamps) == len(set(stamps)), 'a transform stamp was published twice'
    poses = {to_seconds(m.header.stamp): m.pose for m in rec.messages('pose')}
    checked = 0
    for imu in rec.messages('imu')[5:-5]:
        t = to_seconds(imu.header.stamp)
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


def test_qos_compatibility_and_mismatch_detection(ros_process, free_udp_port, ros_node):
    start(ros_process, free_udp_port)
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
        20.0, 'latched topics, sensor-data subscription and the QoS event')
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


def test_lifecycle_across_switch_revert_pause_pack_and_heartbeat_loss(
        ros_process, free_udp_port, ros_node):
    admin = start(ros_process, free_udp_port)
    rec = lifecycle_recorder(ros_node)
    rec.add('imu', STREAMS['imu'][0], Imu, BEST_EFFORT)
    rec.add('description', '/ksp_vessel/robot_description', String, LATCHED)
    ready = rec.wait_for('life', lambda m: m.model_ready and
                         m.state == VesselLifecycle.STATE_ACTIVE)
    generation = ready.generation

    def step(command, predicate, what):
        since = time.monotonic()
        assert request(admin, command)['ok'], command
        return rec.wait_for('life', predicate, since=since), since

    # revert: UT goes back to the scenario start (1 s or more back), a new generation
    rec.until(lambda: len(rec.got['imu']) >= 30, 10.0, 'one second of flight')
    rewound, _ = step({'cmd': 'revert'}, lambda m: m.generation == generation + 1, 'revert')
    assert (rewound.state, rewound.reason) == (VesselLifecycle.STATE_CHANGED, 'time_rewind')
    assert rewound.vessel_id == SAT

    # vessel switch: CHANGED with a new generation, the old model withdrawn at once
    changed, since = step({'cmd': 'switch', 'vessel': 'target'},
                          lambda m: m.generation == generation + 2, 'switch')
    assert (changed.state, changed.reason) == (VesselLifecycle.STATE_CHANGED, 'vessel_changed')
    assert changed.vessel_id == TARGET and not changed.model_ready
    # the old vessel's model is withdrawn (unless the switch came before it was re-sent
    # after the revert, when the description was already empty)
    before = [m for t, m in rec.got['description'] if t < since]
    if before and before[-1].data != '':
        rec.wait_for('description', lambda m: m.data == '', since=since)
    new_model = rec.wait_for('description', lambda m: m.data != '', since=since)
    assert f'pylon_{TARGET[:8]}_active_vessel' in new_model.data
    active = rec.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE and
                          m.generation == generation + 2)
    assert active.origin_sequence > ready.origin_sequence

    # pause: no new IMU samples while paused, the lifecycle stays as it is
    rec.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE and
                 m.generation == generation + 2)
    assert request(admin, {'cmd': 'pause'})['ok']
    paused_at = time.monotonic() + 0.2
    rec.until(lambda: time.monotonic() > paused_at + 1.0, 5.0, 'one second of pause')
    assert rec.messages('imu', since=paused_at) == []
    assert rec.last('life').generation == generation + 2
    assert request(admin, {'cmd': 'resume'})['ok']
    rec.wait_for('imu', since=time.monotonic())

    # pack: unavailable, then a runtime reset when it is back
    unavailable, _ = step({'cmd': 'pack'}, lambda m: m.state ==
                          VesselLifecycle.STATE_UNAVAILABLE, 'pack')
    assert unavailable.reason == 'vessel_unavailable'
    back, _ = step({'cmd': 'unpack'}, lambda m: m.generation == generation + 3, 'unpack')
    assert (back.state, back.reason) == (VesselLifecycle.STATE_CHANGED, 'runtime_reset')

    # heartbeat loss: STALE after the timeout, a new generation when it returns
    stale, _ = step({'cmd': 'heartbeat', 'enabled': False},
                    lambda m: m.state == VesselLifecycle.STATE_STALE, 'heartbeat off')
    assert stale.reason == 'session_timeout' and not stale.model_ready
    recovered, _ = step({'cmd': 'heartbeat', 'enabled': True},
                        lambda m: m.reason == 'session_recovered', 'heartbeat on')
    assert recovered.generation == stale.generation + 1 == generation + 4


def test_surface_pad_imu_and_servo_joint_states(ros_process, free_udp_port, ros_node):
    start(ros_process, free_udp_port, scenario='surface')
    rec = Recorder(ros_node).add('joints', '/ksp_vessel/joint_states', JointState,
                                 qos_profile_sensor_data)
    rec.add('imu', STREAMS['imu'][0], Imu, BEST_EFFORT)
    rec.until(lambda: len(rec.got['joints']) > 25 and rec.got['imu'], 20.0, 'joint states')
    joints = rec.last('joints')
    assert list(joints.name) == ['mast_hinge']
    assert len(joints.position) == len(joints.velocity) == len(joints.effort) == 1
    times = [t for t, _ in rec.got['joints']][-20:]
    assert 16.0 <= (len(times) - 1) / (times[-1] - times[0]) <= 24.0     # 20 Hz ± 20 %
    imu = rec.last('imu')
    # standing on the pad, nose up: specific force is about +g along the vessel's up axis
    accel = imu.linear_acceleration
    assert math.hypot(accel.x, accel.y, accel.z) == pytest.approx(9.756, abs=0.02)


def test_disable_ground_truth_creates_no_world_topic(ros_process, free_udp_port, ros_node):
    start(ros_process, free_udp_port, bridge_args=('--disable-ground-truth',))
    rec = lifecycle_recorder(ros_node)
    rec.add('imu', STREAMS['imu'][0], Imu, BEST_EFFORT)
    rec.add('tf', '/tf', TFMessage, STREAMS['tf'][2])
    rec.add('root', '/ksp_vessel/root_frame', String, LATCHED)
    active = rec.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE)
    assert active.world_frame == ''
    root = rec.wait_for('root', lambda m: m.data != '').data
    tf = rec.wait_for('tf', lambda m: any(t.child_frame_id == root for t in m.transforms))
    assert all(t.header.frame_id == BASE for t in tf.transforms)
    rec.until(lambda: len(rec.got['imu']) > 30, 10.0, 'IMU samples')
    names = {name for name, _ in ros_node.get_topic_names_and_types()}
    assert not any(name.startswith('/ksp_vessel/ground_truth') for name in names)
    for message in rec.messages('tf'):
        assert all(t.header.frame_id != ENU for t in message.transforms)
