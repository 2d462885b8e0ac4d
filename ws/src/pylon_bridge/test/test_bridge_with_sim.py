"""udp_bridge driven by pylon_sim, both real processes, checked by a node over real DDS.

The tests share one simulator and bridge (``stack``: the lean orbit scenario, its target
spinning, at 3x real time: no test plays a controller that must keep up); each starts from
the scenario's start in a runtime session of its own (``session``). The one that needs
another bridge (``--disable-ground-truth``) starts its stack in a ROS domain of its own
(``own_stack``). The surface pad's IMU and joint states are checked in test_rover_with_sim.
"""

import bisect
import math

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import AccelStamped, PoseStamped, TwistStamped, Vector3Stamped
import numpy as np
from pylon_common import topics
from pylon_common.qos import qos_profile
from pylon_interfaces.msg import ControlSnapshot, EngineCommand, NearbyVessels, VesselLifecycle
from pylon_protocol import frames, rotations
from pylon_sim.loop.scenario import load_scenario
from pylon_testing.pilot import A, acquire, Pilot, send_authority
from pylon_testing.recorder import stamp_of, TopicRecorder
from pylon_testing.scenarios import write_scenario
from pylon_testing.wait import throttled
import pytest
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    qos_profile_sensor_data,
    QoSProfile,
    ReliabilityPolicy,
)
from sensor_msgs.msg import Imu
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


SPIN = (0.0, 0.0, 0.05)          # rad/s of the target in the IMU test; the sat does not turn
RATE = ('--rate', '3')           # the simulator at 3x real time: no controller in the loop


def lifecycle_recorder(ros_node):
    return TopicRecorder(ros_node).add('life', '/ksp_vessel/lifecycle', VesselLifecycle, LATCHED)


@pytest.fixture(scope='module')
def stack(module_sim_stack, tmp_path_factory):
    """Return the module's simulator and bridge: the lean orbit scenario, the target spinning."""
    scenario = write_scenario(tmp_path_factory.mktemp('scenario'), 'orbit',
                              changes={'target': {'angular_velocity': list(SPIN)}})
    return module_sim_stack(scenario, sim_args=RATE)


@pytest.fixture
def ros_node(shared_ros_node):
    """Return the module's test node (``shared_ros_node``), in the shared stack's domain."""
    return shared_ros_node


@pytest.fixture
def session(stack, ros_node):
    """Start the test in a session of its own; return ``(before, active)`` lifecycles.

    The shared simulator goes back to the scenario's start (revert, resumed, heartbeat on)
    and starts as a new KSP process (restart: no lease, override or emergency stop left);
    ``before`` is the bridge's lifecycle until then, ``active`` the new session's ACTIVE one.
    """
    return stack.fresh_session(ros_node)


# -- the test with a stack of its own (in a domain of its own) ------------------------

def test_disable_ground_truth_creates_no_world_topic(own_stack, lean_scenario):
    _, ros_node = own_stack(lean_scenario(), bridge_args=('--disable-ground-truth',),
                            sim_args=RATE)
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


# -- the tests on the shared stack ---------------------------------------------------------

def test_orbit_streams_types_frames_rates_and_values(session, ros_node):
    before, active = session
    rec = lifecycle_recorder(ros_node)
    for name, (topic, msg_type, profile, _) in STREAMS.items():
        rec.add(name, topic, msg_type, profile)
    # a new session of the bridge's active vessel is a new generation
    assert active.vessel_id == SAT and active.generation > before.generation
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


def test_ground_truth_angular_velocity_matches_the_quaternion_difference(session, ros_node):
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


def test_tf_covers_every_sensor_stamp(session, ros_node):
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


def test_qos_compatibility_and_mismatch_detection(session, ros_node):
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

    def latency(message):
        return {kv.key: float(kv.value) for status in message.status
                if status.name == 'pylon_bridge: latency' for kv in status.values}
    # arrival -> publish latency of the IMU and ground-truth datagrams of the last period
    report = latency(rec.wait_for('diagnostics', lambda m: all(
        latency(m).get(f'{kind}.count', 0) > 0 for kind in ('imu', 'ground_truth'))))
    for kind in ('imu', 'ground_truth'):
        p50, p99, top = (report[f'{kind}.{k}'] for k in ('p50_ms', 'p99_ms', 'max_ms'))
        assert 0.0 <= p50 <= p99 <= top < 10_000.0, report
        assert report[f'{kind}.count'] == int(report[f'{kind}.count'])
    ready = rec.wait_for('life', lambda m: m.model_ready)
    assert len(ready.model_id) == 64


def test_lifecycle_across_switch_revert_pause_pack_and_heartbeat_loss(stack, session,
                                                                      ros_node):
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


# -- the IMU after a runtime reset, and the values of ground-truth acceleration ------------

def deep(key):
    """Return the contract's QoS of ``key`` with a reader queue deep enough to lose nothing."""
    return qos_profile(topics.topic(key).profile, depth=200)


def nanoseconds(msg):
    return msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec


def session_of(snapshot):
    """Return the mod's runtime session of a control snapshot (instance, epoch, generation)."""
    flight = snapshot.flight
    return flight.runtime_instance, flight.runtime_epoch, flight.runtime_generation


RESETS = (('switch', {'vessel': 'target'}, SPIN), ('unpack', {}, SPIN),
          ('revert', {}, (0.0, 0.0, 0.0)), ('restart', {}, (0.0, 0.0, 0.0)))
"""Runtime resets: a vessel switch, an unpack, a revert (a load) and a new KSP process;
the body rate the IMU of the vessel active after each must show."""


def reset_and_record(rec, stack, command, fields):
    """Make the runtime reset ``command``; return what the new runtime session sent first.

    Its first three control snapshots, and the IMU samples from the first one's stamp on
    that are not the old session's: a new session's stamps start no earlier than the last
    stamp the bridge gave (``UtClock``'s floor), and exactly there when the mapped time ran
    ahead of the receiver's clock (a late first sample under load), so the old session's
    last IMU sample can share the new session's first stamp. Stamps only rise within a
    session and one topic arrives in order, so that one comes first.
    """
    seen = {session_of(m) for m in rec.messages('snapshot')}
    since = rec.mark()
    if command == 'unpack':
        stack.admin('pack')
        rec.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_UNAVAILABLE, since,
                     'the vessel packed')
    stack.admin(command, **fields)

    def new():
        return [m for m in rec.messages('snapshot', since) if session_of(m) not in seen]

    def imus_of_new():
        first = nanoseconds(new()[0])
        old_last = max(nanoseconds(m) for m in rec.messages('snapshot')
                       if session_of(m) in seen)
        found = [m for m in rec.messages('imu') if nanoseconds(m) >= first]
        if found and nanoseconds(found[0]) == first == old_last:
            found = found[1:]                 # the old session's last, at the floor
        return found
    rec.until(lambda: len(new()) >= 3 and len(imus_of_new()) >= 2,
              f'the samples of the runtime session after {command}')
    return new()[:3], imus_of_new()


def test_imu_waits_one_sample_after_a_switch_an_unpack_a_revert_and_a_restart(
        stack, session, ros_node):
    # the mod drops the first IMU sample after a runtime reset; the other measurements of that
    # frame go out (the control snapshot of each frame, Reliable, names its runtime session)
    rec = TopicRecorder(ros_node)
    rec.add('imu', topics.name('imu'), Imu, deep('imu'))
    rec.add('snapshot', topics.name('control/snapshot'), ControlSnapshot,
            deep('control/snapshot'))
    rec.add('life', topics.name('lifecycle'), VesselLifecycle,
            topics.qos('lifecycle', reader=True))
    rec.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE)
    rec.wait_count('imu', 3)
    rec.wait_count('snapshot', 3)
    for command, fields, rate in RESETS:
        snapshots, imus = reset_and_record(rec, stack, command, fields)
        first, second, third = (nanoseconds(m) for m in snapshots)
        # none with the new session's first snapshot (the first frame the IMU is due after
        # the reset), then every sample again from the next one on
        assert nanoseconds(imus[0]) == second > first, (command, first, second,
                                                        [nanoseconds(m) for m in imus])
        assert nanoseconds(imus[1]) == third, command
        # and it is the newly active vessel's sample: its body rate
        w = imus[0].angular_velocity
        assert (w.x, w.y, w.z) == pytest.approx(rate, abs=1e-3), command


ENGINE = 'engine_1100004_0'        # the sat's LV-909 (60 kN max), in line with base_link +X
THRUST_N = 30000.0
ACCEL_TOLERANCE = 2e-4
"""m/s² per axis between the published acceleration and physics. The mod's value is the
difference of two velocity samples one or two physics steps apart. Gravity and the terms
of the turning frame change smoothly (the simulator integrates them with RK4): their mean
at both ends is their mean over the difference. The thrust is held for each step in the
attitude the vessel has when the step begins (``physics.step``) and acts on the mass left
when it ends (the control burns a step's propellant before the step): means over the
steps' beginnings and ends, the sample half-way interpolated (the vessel turns under the
engine's torque and burns 9 kg/s). What is left out is below 5e-5 m/s²; a thrust turned
half a step late is 5e-4 m/s² off after a second of burn, the mass of a step early 5e-4
m/s², a missing Coriolis or centrifugal term 1.2 or 0.06 m/s². Gravity is 7.2 m/s², the
burn 13.5 m/s²."""
ANGULAR_RELATIVE = 1e-6
"""Of the angular acceleration: the mod divides by a difference of universal times (a
multiple of the physics step, taken here from the stamps' rounded one: a ROS stamp near
1.8e9 s is a float64 with 0.24 µs steps, 1e-5 of a step)."""


def vec(v):
    return np.array([v.x, v.y, v.z])


def physics(pose, velocity, frame, snapshot, thrust_axis):
    """Return the accelerations (m/s², ENU axes: planet-fixed) physics gives at one sample.

    ``(smooth, thrust, mass)``: gravity (GM / r² towards the centre) with the terms of the
    frame turning with the planet (Coriolis and centrifugal) for the surface velocity; the
    thrust (N, its magnitude from the snapshot, along ``thrust_axis`` in base_link); the
    mass.
    """
    q = pose.pose.orientation
    turn = rotations.to_matrix((q.x, q.y, q.z, q.w))             # base_link -> ENU
    flight = snapshot.flight
    up = turn @ vec(flight.up_body)
    r = (flight.body_radius + flight.altitude_asl) * up
    gravity = -flight.gravitational_parameter / (r @ r) * up
    thrust = sum(engine.thrust for engine in snapshot.engines)
    omega, v = vec(frame.vector), vec(velocity.twist.linear)
    return (gravity - 2.0 * np.cross(omega, v) - np.cross(omega, np.cross(omega, r)),
            turn @ thrust_axis * thrust, flight.mass)


ACCELERATION_TOPICS = (
    ('pose', 'ground_truth/pose', PoseStamped),
    ('velocity', 'ground_truth/twist', TwistStamped),
    ('accel', 'ground_truth/acceleration', AccelStamped),
    ('frame', 'ground_truth/frame_angular_velocity', Vector3Stamped),
    ('snapshot', 'control/snapshot', ControlSnapshot))


def comparable(pilot, since) -> list:
    """Return (acceleration, its samples' stamps, thrust, samples) since ``since`` to check.

    An acceleration is the difference of two velocity samples: one a busy machine dropped
    (Best Effort) leaves its neighbour without one; one over a thrust change is left out.
    """
    by_stamp = {name: {nanoseconds(m): m for m in pilot.got[name]}
                for name in ('pose', 'velocity', 'frame', 'snapshot')}
    stamps = sorted(by_stamp['velocity'])
    found = []
    for accel in pilot.messages('accel', since):
        t = nanoseconds(accel)
        i = bisect.bisect_left(stamps, t)
        if not 0 < i < len(stamps) or stamps[i] != t or t - stamps[i - 1] > 50_000_000:
            continue                      # the previous sample missing: no difference
        ends = (stamps[i - 1], t)
        if not all(s in by_stamp[name] for s in ends for name in by_stamp):
            continue
        thrusts = {sum(e.thrust for e in by_stamp['snapshot'][s].engines) for s in ends}
        if len(thrusts) == 1:             # else the thrust changed within the difference
            found.append((accel, ends, thrusts.pop(), by_stamp))
    return found


def test_ground_truth_acceleration_is_gravity_thrust_and_the_turning_frame(
        stack, session, ros_node):
    step = load_scenario('orbit').physics_step           # the lean copy's, the shipped one's
    step_ns = step * 1e9
    pilot = Pilot(ros_node)
    for name, key, msg_type in ACCELERATION_TOPICS:
        pilot.add(name, topics.name(key), msg_type, deep(key))
    engine = ros_node.create_publisher(EngineCommand, topics.name('actuators/propulsion/command'),
                                       topics.qos('actuators/propulsion/command'))
    pilot.ready()
    coast = pilot.mark()

    pilot.wait_stamp_span('accel', 1.0, coast)
    pilot.until(throttled(lambda: sum(thrust == 0.0 for _, _, thrust, _
                                      in comparable(pilot, coast)) >= 20),
                '20 comparable samples of the coast')
    pilot.until(lambda: engine.get_subscription_count() > 0, 'the engine command subscriber')
    renewed = [stack.clock()]                       # the lease and the override start later
    assert acquire(pilot, duration=10.0)[0].reason == 'lease_acquired'

    def burn():
        engine.publish(EngineCommand(vessel_id=SAT, controller_id='ctl', lease_id='lease-1',
                                     sequence=pilot.next_sequence('ctl', 'lease-1'), id=ENGINE,
                                     enabled=True, target_thrust=THRUST_N, timeout_sec=10.0))

    def keep_burning():
        # the lease and the override (10 s at most each) renewed every 2 s of the simulator's
        # clock, so that neither ends however late this process is
        now = stack.clock()
        if now - renewed[-1] >= 2.0:
            send_authority(pilot, A.ACTION_RENEW, 'ctl', 'lease-1', duration=10.0,
                           suppress_sas=True)
            burn()
            renewed.append(now)

    def thrusting(message):
        return any(e.thrust == THRUST_N for e in message.engines)
    burn()
    pilot.until(lambda: keep_burning() or pilot.messages('snapshot', coast, thrusting),
                'the burn')
    burning = pilot.messages('snapshot', coast, thrusting)[0]
    force = np.array(stack.control()['applied_force'])          # the engine's, base_link
    assert force == pytest.approx([THRUST_N, 0.0, 0.0], rel=1e-9, abs=1e-6)
    burn_since = pilot.after('snapshot', burning)

    def burned():
        # at least a second of stamps and 20 samples of the burn that can be checked (looked
        # at a few times a second: going over every sample at every callback left a busy
        # test process behind its Best Effort queues, which then lost the samples)
        found = pilot.messages('accel', burn_since)
        return len(found) > 1 and stamp_of(found[-1]) - stamp_of(found[0]) >= 1.0 and sum(
            thrust > 0.0 for _, _, thrust, _ in comparable(pilot, coast)) >= 20
    look = throttled(burned)
    pilot.until(lambda: keep_burning() or look(), '20 comparable samples of the burn')
    checked = {'coast': 0, 'burn': 0}
    for accel, ends, thrust_sum, by_stamp in comparable(pilot, coast):
        steps = round((ends[1] - ends[0]) / step_ns)
        assert steps in (1, 2) and abs(ends[1] - ends[0] - steps * step_ns) < 1000, ends
        (smooth0, thrust0, mass0), (smooth1, thrust1, mass1) = (
            physics(by_stamp['pose'][s], by_stamp['velocity'][s], by_stamp['frame'][s],
                    by_stamp['snapshot'][s], force / THRUST_N) for s in ends)
        # the steps begin at the first sample and (with two) half-way, and end half-way and
        # at the second: the half-way sample is the mean of both
        late = (steps - 1) / (2.0 * steps)
        thrust = (1.0 - late) * thrust0 + late * thrust1
        inverse_mass = late / mass0 + (1.0 - late) / mass1
        expected = (smooth0 + smooth1) / 2.0 + thrust * inverse_mass
        assert vec(accel.accel.linear) == pytest.approx(expected, abs=ACCEL_TOLERANCE), \
            (thrust_sum, vec(accel.accel.linear) - expected)
        rates = [vec(by_stamp['velocity'][s].twist.angular) for s in ends]
        assert vec(accel.accel.angular) == pytest.approx(
            (rates[1] - rates[0]) / (steps * step), rel=ANGULAR_RELATIVE, abs=1e-12)
        checked['burn' if thrust_sum > 0.0 else 'coast'] += 1
    assert checked['coast'] >= 20 and checked['burn'] >= 20, checked
