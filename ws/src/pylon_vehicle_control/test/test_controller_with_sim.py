"""setpoint_controller flying the orbit sat: pylon_sim -> udp_bridge -> estimator -> controller.

The test node plays the user: it sends ControlSetpoint messages and judges the result on
ground truth (the controller and the estimator never read it).
"""

import math
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import TwistStamped
from nav_msgs.msg import Odometry
from pylon_interfaces.msg import ControlAuthorityState, ControlSetpoint, WrenchFeedback
from pylon_testing.wait import spin_until
import pytest
from rclpy.qos import DurabilityPolicy, qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sim_stack import start, subscriptions_of

pytestmark = pytest.mark.integration

RELIABLE = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
SETPOINT = '/setpoint_controller/setpoint'


def quat_mul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)


def angle_deg(a, b):
    dot = abs(sum(x * y for x, y in zip(a, b)))
    return math.degrees(2 * math.acos(min(1.0, dot)))


class User:
    """The test node: setpoints out; estimate, authority, feedback, truth rates in."""

    def __init__(self, node):
        self.node = node
        self.got = {'odom': [], 'authority': [], 'feedback': [], 'twist': [], 'diag': []}
        keep = lambda name: lambda m: self.got[name].append((time.monotonic(), m))  # noqa
        self.subs = [
            node.create_subscription(Odometry, '/pylon_estimator/odometry', keep('odom'),
                                     RELIABLE),
            node.create_subscription(ControlAuthorityState,
                                     '/ksp_vessel/control/authority/state', keep('authority'),
                                     LATCHED),
            node.create_subscription(WrenchFeedback, '/ksp_vessel/control/wrench_feedback',
                                     keep('feedback'), RELIABLE),
            node.create_subscription(TwistStamped, '/ksp_vessel/ground_truth/twist_body',
                                     keep('twist'), qos_profile_sensor_data),
            node.create_subscription(DiagnosticArray, '/setpoint_controller/diagnostics',
                                     keep('diag'), RELIABLE)]
        self.pub = node.create_publisher(ControlSetpoint, SETPOINT, RELIABLE)

    def until(self, condition, what, timeout=20.0):
        spin_until(self.node, condition, timeout, what=what)

    def owned(self):
        return any(m.state == ControlAuthorityState.STATE_OWNED and
                   m.controller_id == 'setpoint_controller' for _, m in self.got['authority'])

    def attitude(self):
        o = self.got['odom'][-1][1].pose.pose.orientation
        return (o.x, o.y, o.z, o.w)

    def send(self, mode, q=(0.0, 0.0, 0.0, 1.0)):
        msg = ControlSetpoint(mode=mode)
        msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = q
        self.pub.publish(msg)

    def arm(self):
        """Send MODE_IDLE until the controller says it is armed.

        It starts disarmed after the first generation change, as after any fault.
        """
        self.until(lambda: self.pub.get_subscription_count() > 0, 'the setpoint subscriber')

        def armed():
            self.send(ControlSetpoint.MODE_IDLE)
            return bool(self.got['diag']) and self.diag().get('armed') == 'True' and \
                self.got['diag'][-1][0] > sent
        sent = time.monotonic()
        self.until(armed, 'the controller armed by MODE_IDLE')

    def diag(self):
        status = self.got['diag'][-1][1].status[0]
        return {kv.key: kv.value for kv in status.values}


def test_controller_takes_the_lease_and_slews_within_the_rate_limit(
        ros_process, free_udp_port, ros_node, tmp_path):
    start(ros_process, free_udp_port)
    ros_process(['attitude_estimator'], name='estimator')
    evaluator = ros_process(['attitude_evaluator', '--ros-args', '-p',
                             f'output_dir:={tmp_path}', '-p', 'print_period_sec:=1.0'],
                            name='evaluator')
    controller = ros_process(['setpoint_controller'], name='controller')
    user = User(ros_node)
    user.until(user.owned, 'the controller owning the lease', timeout=30.0)
    user.until(lambda: len(user.got['odom']) > 10, 'the estimate')
    node_name, wanted = 'setpoint_controller', '/setpoint_controller/setpoint'
    spin_until(ros_node, lambda: wanted in subscriptions_of(ros_node, node_name), 10.0,
               what=f'{node_name} in the graph')
    names = subscriptions_of(ros_node, 'setpoint_controller')
    assert not any('ground_truth' in n for n in names), names
    # a bad setpoint is refused and changes nothing
    user.send(ControlSetpoint.MODE_ATTITUDE_HOLD, (0.0, 0.0, 0.5, 0.5))
    user.until(lambda: user.got['diag'] and user.diag().get('last_refusal', '').startswith(
        'non_unit_quaternion'), 'the refusal in diagnostics')
    # slew 10 degrees about the body z axis, rate limited to 1.5 deg/s
    start_q = user.attitude()
    step = math.radians(10.0)
    target = quat_mul(start_q, (0.0, 0.0, math.sin(step / 2), math.cos(step / 2)))
    user.arm()
    t0 = time.monotonic()
    errors = []
    end = t0 + 16.0
    while time.monotonic() < end:
        user.send(ControlSetpoint.MODE_ATTITUDE_HOLD, target)
        mark = time.monotonic() + 0.2
        user.until(lambda mark=mark: time.monotonic() > mark, 'a spin', timeout=5.0)
        errors.append((time.monotonic() - t0, angle_deg(user.attitude(), target)))
    rates = [math.degrees(math.sqrt(m.twist.angular.x ** 2 + m.twist.angular.y ** 2 +
                                    m.twist.angular.z ** 2))
             for t, m in user.got['twist'] if t >= t0]
    assert max(rates) <= 1.5 * 1.05, max(rates)
    assert errors[-1][1] < 0.1, errors[-5:]
    settled = next(t for t, e in errors if e < 0.1)
    # rate-limited minimum time plus the acceleration phases, with margin
    assert settled < 10.0 / 1.5 * 1.2 + 4.0, settled
    assert all(e < 0.6 for t, e in errors if t > settled), 'overshoot'
    assert user.owned()
    feedback = [m for _, m in user.got['feedback'] if m.controller_id == 'setpoint_controller']
    assert feedback and all(m.accepted for m in feedback[-20:])
    # input loss: without setpoints the target is discarded and only zeros go out
    mark = time.monotonic() + 2.0
    user.until(lambda: time.monotonic() > mark, 'setpoint timeout', timeout=5.0)
    assert user.diag()['disarm_reason'] == 'setpoint_timeout'
    zeros = [m for t, m in user.got['feedback'] if t > mark - 0.5]
    assert zeros and all(m.requested.torque.z == 0.0 for m in zeros[-5:])
    # shutdown releases the lease
    controller.stop()                      # SIGINT: the node releases before it exits
    evaluator.stop()                       # SIGINT: RMS printed, CSV and PNG written
    assert 'estimate RMS [arcsec]' in evaluator.log()
    assert (tmp_path / 'attitude_errors.csv').read_text().startswith('t_s,')
    assert (tmp_path / 'attitude_errors.png').read_bytes()[:4] == b'\x89PNG'
    user.until(lambda: any(m.state == ControlAuthorityState.STATE_UNOWNED and
                           m.reason == 'lease_released' for _, m in user.got['authority']),
               'the lease released on shutdown')


def test_detumble_from_0_3_rad_s_on_the_gyro_alone(ros_process, free_udp_port, ros_node,
                                                   tmp_path):
    from pylon_sim.scenario import resolve
    import yaml
    data = yaml.safe_load(resolve('orbit').read_text(encoding='utf-8'))
    for vessel in data['vessels']:
        if vessel['key'] == data.get('active', 'sat'):
            vessel['angular_velocity'] = [0.0, 0.18, -0.24]           # |w| = 0.3 rad/s
    scenario = tmp_path / 'orbit_spinning.yaml'
    scenario.write_text(yaml.safe_dump(data), encoding='utf-8')
    start(ros_process, free_udp_port, scenario=str(scenario))
    ros_process(['attitude_estimator'], name='estimator')
    ros_process(['setpoint_controller'], name='controller')
    user = User(ros_node)
    user.until(user.owned, 'the controller owning the lease', timeout=30.0)
    user.until(lambda: user.got['twist'], 'ground truth rates')

    def rate():
        w = user.got['twist'][-1][1].twist.angular
        return math.sqrt(w.x ** 2 + w.y ** 2 + w.z ** 2)
    assert rate() == pytest.approx(0.3, abs=0.01)
    assert not user.got['odom']            # too fast for the star tracker: no estimate yet
    user.arm()
    deadline = time.monotonic() + 30.0
    while rate() >= 0.001 and time.monotonic() < deadline:
        user.send(ControlSetpoint.MODE_DETUMBLE)
        mark = time.monotonic() + 0.2
        user.until(lambda mark=mark: time.monotonic() > mark, 'a spin', timeout=5.0)
    assert rate() < 0.001, rate()
