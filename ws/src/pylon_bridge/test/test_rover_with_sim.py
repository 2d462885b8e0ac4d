"""The rover end to end: on the pad, servo and wheel commanded, driven on ground truth.

Its IMU and joint states on the pad; its GNSS fix and its AHRS orientation in the IMU (our
simulator's extensions) against its standing place and its ground-truth attitude; servo
and wheel commands through udp_bridge, their states; WheelCommand driving it on ground
truth. The tests share one simulator and bridge (``stack``: the surface scenario without
its LiDAR, a GNSS receiver and an AHRS added on the rover's body, at real time: the test
plays the controller), each from the scenario's start in a runtime session of its own
(``session``) under a lease id of its own.
"""

import math
from pathlib import Path

from geometry_msgs.msg import PoseStamped
import numpy as np
from pylon_common import topics
from pylon_interfaces.msg import (
    MotorCommand,
    MotorState,
    WheelCommand,
    WheelState,
)
from pylon_protocol import rotations
from pylon_testing.pilot import acquire, COMMAND, Pilot, STREAM
from pylon_testing.recorder import stamp_of, TopicRecorder
from pylon_testing.scenarios import write_scenario
import pytest
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Imu, JointState, NavSatFix, NavSatStatus
import yaml

pytestmark = pytest.mark.integration

ROVER = '7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a29'
WHEELS = ('wheel_7700002_0', 'wheel_7700003_0', 'wheel_7700004_0', 'wheel_7700005_0')
GNSS = 'gnss'
"""A GNSS receiver on the rover's body (the root part, at the vessel frame's origin), with
the defaults (10 Hz, 0.2 m horizontal and 0.4 m vertical sigma) and the frame the
competition's interface names."""
GNSS_MODULE = {'kind': 'gnss', 'index': 1, 'sensor_id': GNSS, 'frame_id': 'gnss_link'}
AHRS_MODULE = {'kind': 'ahrs', 'index': 2, 'sensor_id': 'ahrs'}
"""An AHRS on the rover's body with the defaults: 50 Hz, tilt sigma 0.0035 rad, heading sigma
0.0087 rad, heading bias walk 0.0005 rad/sqrt(s)."""
TILT_SIGMA, HEADING_SIGMA = 0.0035, 0.0087
STAND = (-0.0486, -74.7247, 0.44413)
"""The surface scenario's standing place of the rover's centre of mass: deg, deg, m above
Kerbin's sphere (its ground-truth ENU origin)."""
KERBIN_RADIUS = 600_000.0


@pytest.fixture(scope='module')
def scenario(tmp_path_factory) -> str:
    """Return the path of the module's scenario: surface, no LiDAR, the GNSS receiver."""
    return write_scenario(tmp_path_factory.mktemp('scenario'), 'surface',
                          modules={'rover': {'roverBody.v2': [GNSS_MODULE, AHRS_MODULE]}})


@pytest.fixture(scope='module')
def stack(module_sim_stack, scenario):
    """Return the module's simulator and bridge: ``scenario``."""
    return module_sim_stack(scenario)


@pytest.fixture
def ros_node(shared_ros_node):
    """Return the module's test node (``shared_ros_node``), in the shared stack's domain."""
    return shared_ros_node


def position(pose: PoseStamped) -> np.ndarray:
    p = pose.pose.position
    return np.array([p.x, p.y, p.z])


def test_surface_pad_imu_and_servo_joint_states(session, ros_node):
    rec = TopicRecorder(ros_node).add('joints', '/ksp_vessel/joint_states', JointState, STREAM)
    rec.add('imu', '/ksp_vessel/imu/data_raw', Imu, STREAM)
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


def _centre_of_mass(scenario: str) -> np.ndarray:
    """Return the rover's centre of mass in its vessel frame (m): the parts' dry masses.

    Its only resource, ElectricCharge, weighs nothing.
    """
    parts = yaml.safe_load(Path(scenario).read_text())['vessels'][0]['parts']
    masses = np.array([part['mass'] for part in parts], dtype=float)
    places = np.array([part.get('position', [0.0, 0.0, 0.0]) for part in parts], dtype=float)
    return masses @ places / masses.sum()


def _rotate(q, v: np.ndarray) -> np.ndarray:
    """Return ``v`` turned by the unit quaternion ``q`` (a geometry_msgs Quaternion)."""
    u = np.array([q.x, q.y, q.z])
    return v + 2.0 * np.cross(u, np.cross(u, v) + q.w * v)


def _enu_of(fix: NavSatFix) -> np.ndarray:
    """Return a fix relative to ``STAND`` in its East, North, Up metres (on the sphere)."""
    lat0, lon0, alt0 = STAND
    radius = KERBIN_RADIUS + alt0
    return np.array([math.radians(fix.longitude - lon0) * radius * math.cos(math.radians(lat0)),
                     math.radians(fix.latitude - lat0) * radius, fix.altitude - alt0])


def test_gnss_fixes_at_the_rate_in_gnss_link_around_the_standing_antenna(session, ros_node,
                                                                          scenario):
    rec = TopicRecorder(ros_node).add('fix', topics.name('gnss', id=GNSS), NavSatFix,
                                      qos_profile_sensor_data)
    rec.add('pose', topics.name('ground_truth/pose'), PoseStamped, qos_profile_sensor_data)
    fixes = rec.wait_count('fix', 51)[-50:]
    poses = rec.messages('pose')
    assert {f.header.frame_id for f in fixes} == {'gnss_link'}
    assert {(f.status.status, f.status.service) for f in fixes} == {
        (NavSatStatus.STATUS_FIX, NavSatStatus.SERVICE_GPS)}
    for fix in fixes:
        assert list(fix.position_covariance) == pytest.approx(
            [0.04, 0, 0, 0, 0.04, 0, 0, 0, 0.16], rel=1e-9)
    assert {f.position_covariance_type for f in fixes} == {
        NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN}
    # stamped on the simulator's clock: KSP time, 0.1 s apart at 10 Hz (one 0.02 s physics
    # step of slack), as the ground-truth poses of the same time
    stamps = np.array([stamp_of(f) for f in fixes])
    assert (len(stamps) - 1) / (stamps[-1] - stamps[0]) == pytest.approx(10.0, rel=0.01)
    assert np.all(np.abs(np.diff(stamps) - 0.1) <= 0.021), np.diff(stamps)
    # the truth over the fixes' 5 s (Best Effort: a busy machine may drop the first poses)
    within = [p for p in poses if stamps[0] <= stamp_of(p) <= stamps[-1]]
    assert len(within) > 50 and stamp_of(within[-1]) >= stamps[-1] - 1.0
    # the truth: the antenna (the root part's origin, 0 in the vessel frame) relative to the
    # centre of mass, turned by the ground-truth attitude, from the ground-truth position
    # (ENU at STAND); the rover stands still, so the mean over the fixes' time
    lever = -_centre_of_mass(scenario)
    truth = np.mean([position(p) + _rotate(p.pose.orientation, lever) for p in poses
                     if stamps[0] <= stamp_of(p) <= stamps[-1]], axis=0)
    errors = np.array([_enu_of(f) for f in fixes]) - truth
    sigma = np.array([0.2, 0.2, 0.4])
    assert np.all(np.abs(errors.mean(axis=0)) < 3 * sigma / math.sqrt(len(fixes)) + 0.01), \
        (errors.mean(axis=0), truth)
    assert np.all(errors.std(axis=0) < 2 * sigma) and np.all(errors.std(axis=0) > sigma / 2)


def test_the_imu_carries_the_ahrs_orientation_around_the_ground_truth(session, ros_node):
    rec = TopicRecorder(ros_node).add('imu', topics.name('imu'), Imu, qos_profile_sensor_data)
    rec.add('pose', topics.name('ground_truth/pose'), PoseStamped, qos_profile_sensor_data)
    rec.wait_count('imu', 61)
    poses = {stamp_of(p): p.pose.orientation for p in rec.messages('pose')}
    # the IMU samples of the game times the ground truth has (both 30 Hz on one clock)
    pairs = [(m, poses[stamp_of(m)]) for m in rec.messages('imu')[1:]
             if stamp_of(m) in poses]
    assert len(pairs) >= 40, (len(pairs), len(poses))
    assert {m.header.frame_id for m, _ in pairs} == {'base_link'}
    # the rover stands at the ground truth's ENU origin: the local ENU is that ENU; the error
    # rotation measured * truth^-1 about East, North, Up
    errors, heading_sigma = [], []
    for imu, truth in pairs:
        cov = np.array(imu.orientation_covariance).reshape(3, 3)
        assert cov[0, 0] == cov[1, 1] == pytest.approx(TILT_SIGMA ** 2, rel=1e-9)
        assert cov[2, 2] >= HEADING_SIGMA ** 2
        assert np.count_nonzero(cov - np.diag(np.diag(cov))) == 0
        heading_sigma.append(math.sqrt(cov[2, 2]))
        q = imu.orientation
        errors.append(rotations.to_rotvec(rotations.multiply(
            (q.x, q.y, q.z, q.w), rotations.conjugate((truth.x, truth.y, truth.z, truth.w)))))
    errors = np.array(errors)
    n = len(errors)
    tilt = errors[:, :2]
    assert np.all(np.abs(tilt.mean(axis=0)) < 3 * TILT_SIGMA / math.sqrt(n)), tilt.mean(axis=0)
    assert np.all(tilt.std(axis=0) > 0.6 * TILT_SIGMA) and np.all(
        tilt.std(axis=0) < 1.4 * TILT_SIGMA), tilt.std(axis=0)
    # the heading: white noise about a bias that walks; each within 4 sigma of its covariance
    assert np.all(np.abs(errors[:, 2]) < 4 * np.array(heading_sigma)), errors[:, 2]
    assert errors[:, 2].std() > 0.6 * HEADING_SIGMA


def test_servo_and_wheel_on_the_surface(session, ros_node):
    lease = 'lease-servo-wheel'
    pilot = Pilot(ros_node)
    servo = ros_node.create_publisher(MotorCommand, '/ksp_vessel/actuators/servo/command',
                                      COMMAND)
    wheel_pub = ros_node.create_publisher(WheelCommand, '/ksp_vessel/actuators/wheel/command',
                                          COMMAND)
    pilot.add('servo', '/ksp_vessel/actuators/servo/state', MotorState, STREAM)
    pilot.add('wheel', '/ksp_vessel/actuators/wheel/state', WheelState, STREAM)
    pilot.add('joints', '/ksp_vessel/joint_states', JointState, STREAM)
    pilot.ready()
    assert acquire(pilot, vessel=ROVER, lease=lease, duration=5.0)[0].reason == \
        'lease_acquired'

    def send(publisher, msg):
        """Publish a typed command under the test's lease; return the mark before it."""
        pilot.until(lambda: publisher.get_subscription_count() > 0, 'the command subscriber')
        msg.vessel_id, msg.controller_id, msg.lease_id = ROVER, 'ctl', lease
        msg.sequence = pilot.next_sequence('ctl', lease)
        since = pilot.mark()
        publisher.publish(msg)
        return since
    since = send(servo, MotorCommand(id='mast_hinge', enabled=True,
                                     mode=MotorCommand.MODE_POSITION, position=0.3,
                                     timeout_sec=5.0))
    moving = pilot.wait_for('servo', lambda m: m.command_active and m.target == 0.3, since,
                            'the servo command')
    assert moving.mode == MotorCommand.MODE_POSITION and moving.name == 'mast_hinge'
    joints = pilot.wait_for('joints', lambda m: m.position[0] == pytest.approx(0.3, abs=1e-3),
                            since, 'the joint at 0.3 rad')
    assert list(joints.name) == ['mast_hinge']
    since = send(wheel_pub, WheelCommand(id='wheel_7700002_0', enabled=True,
                                         target_angular_velocity=2.0, steering_angle=0.1,
                                         max_drive_torque=100.0, timeout_sec=1.0))
    wheel = pilot.wait_for('wheel', lambda m: m.id == 'wheel_7700002_0' and
                           m.max_drive_torque == 100.0, since, 'the wheel override')
    assert wheel.steering_angle == pytest.approx(0.1) and wheel.enabled


def test_wheel_commands_drive_the_rover_on_ground_truth(session, ros_node):
    lease = 'lease-drive'
    pilot = Pilot(ros_node)
    pilot.add('wheel', topics.name('actuators/wheel/state'), WheelState, qos_profile_sensor_data)
    pilot.add('pose', topics.name('ground_truth/pose'), PoseStamped, qos_profile_sensor_data)
    publisher = ros_node.create_publisher(WheelCommand, topics.name('actuators/wheel/command'),
                                          COMMAND)
    pilot.ready()
    still = pilot.wait_for('wheel', lambda m: m.id == WHEELS[0], what='a wheel state')
    assert still.grounded and still.angular_velocity == pytest.approx(0.0, abs=1e-3)
    start = position(pilot.wait_for('pose', what='ground truth'))
    assert acquire(pilot, vessel=ROVER, lease=lease, duration=5.0)[0].reason == \
        'lease_acquired'
    pilot.until(lambda: publisher.get_subscription_count() > 0, 'the wheel command subscriber')
    since = pilot.mark()
    for wheel in WHEELS:
        publisher.publish(WheelCommand(
            vessel_id=ROVER, controller_id='ctl', lease_id=lease,
            sequence=pilot.next_sequence('ctl', lease), id=wheel, enabled=True,
            target_angular_velocity=10.0, max_drive_torque=0.0, timeout_sec=4.0))
    driving = pilot.wait_for('wheel', lambda m: m.id == WHEELS[0] and m.angular_velocity > 1.0,
                             since, 'the wheel spinning')
    assert driving.grounded and driving.drive_torque > 0.0 and driving.enabled
    moved = pilot.wait_for('pose', lambda m: np.linalg.norm(position(m) - start) > 1.0, since,
                           'the rover 1 m from where it stood')
    # it drove forward: east, along the ENU x axis it was heading
    assert position(moved)[0] - start[0] > 0.9
