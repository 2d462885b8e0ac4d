"""``rendezvous_chaser``: an example autonomy that flies a rendezvous on its own topics only.

It reads, in its own vehicle's domain and nothing else (no ground truth): the fixes of
its relative-navigation sensor (``<topic_prefix>/relative_nav/<relative_nav_id>/targets``,
``NearbyVessels`` in ``base_link``), the estimate (``pylon_estimator/odometry``) and the
mission's state for this vehicle (``/awsim/state``), and whether ``setpoint_controller``
is armed (its ``~/diagnostics``). Until the state is ``Start`` it sends ``MODE_IDLE``; from
``Start`` on, while the controller does not say it is armed (it arms on a ``MODE_IDLE``; its
setpoint subscription may have matched after the last one, or a lifecycle change or timeout
disarmed it) it sends ``MODE_IDLE`` and begins its approach again once armed; otherwise,
every ``period_sec``, a SIX_DOF setpoint toward a point ``standoff_m`` short of the target
that moves with it (``rendezvous.setpoint``), holding the attitude it had when the approach
began. A fix older than ``fix_timeout_sec`` (by the stamps of the fix and the estimate: game
time) is not used: the chaser then stops where it is. After the mission it sends
``MODE_IDLE`` again.
Its period runs on the node's ROS clock: with ``use_sim_time`` (what the plan gives it on
game time) ``period_sec`` is game time, as the controller's timeouts then are, so a
simulator faster than real time does not let its setpoints age out. Its status (the
mission state, armed, approaching or idle) goes on ``/diagnostics`` every second
(``pylon_common.diagnostics``).
"""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from pylon_common import diagnostics, mission, node_main, topics
from pylon_common.parameters import declare, Parameter
from pylon_common.stamps import to_seconds
from pylon_interfaces.msg import ControlSetpoint, NearbyVessels
from pylon_protocol import rotations
from rclpy.node import Node
from std_msgs.msg import String

from pylon_vehicle_control import rendezvous

PARAMETERS: tuple[Parameter, ...] = (
    topics.TOPIC_PREFIX,
    Parameter('relative_nav_id', 'relative_nav_main',
              'the relative-navigation sensor whose fixes it follows '
              '(<topic_prefix>/relative_nav/<id>/targets)'),
    Parameter('target_vessel_id', '', "the vessel to reach ('': the nearest that is not "
                                      'debris)'),
    Parameter('standoff_m', 5.0, 'm, the aim point is this far short of the target',
              0.0, 1000.0),
    Parameter('period_sec', 0.25, 's between two setpoints', 0.02, 5.0),
    Parameter('fix_timeout_sec', 1.0, 's of game time a fix stays usable beside the estimate',
              0.05, 60.0),
)
SETPOINT_CONTROLLER_NAMESPACE = '/'


class ChaserNode(Node):
    """The chaser's ROS plumbing over ``rendezvous``."""

    def __init__(self) -> None:
        """Declare the parameters, subscribe to its own vehicle's topics."""
        super().__init__(topics.RENDEZVOUS_CHASER)
        self.params = p = declare(self, PARAMETERS)
        prefix = p['topic_prefix']
        self.state = ''
        self.estimate: Odometry | None = None
        self.fix: rendezvous.Fix | None = None
        self.hold: tuple | None = None
        self.sent_mode: int | None = None
        self.controller_armed = False
        self.setpoint_pub = self.create_publisher(
            ControlSetpoint, topics.resolved('setpoint', topics.SETPOINT_CONTROLLER,
                                             SETPOINT_CONTROLLER_NAMESPACE),
            topics.qos('setpoint'))
        self.subs = [
            self.create_subscription(
                NearbyVessels, topics.name('relative_nav', prefix, id=p['relative_nav_id']),
                self._on_fix, topics.qos('relative_nav', reader=True)),
            self.create_subscription(Odometry, topics.name('odometry'), self._on_estimate,
                                     topics.qos('odometry', reader=True)),
            self.create_subscription(String, topics.name('awsim/state'), self._on_state,
                                     topics.qos('awsim/state', reader=True)),
            self.create_subscription(
                DiagnosticArray, topics.resolved('controller/diagnostics',
                                                 topics.SETPOINT_CONTROLLER,
                                                 SETPOINT_CONTROLLER_NAMESPACE),
                self._on_controller, topics.qos('controller/diagnostics', reader=True))]
        self.timer = self.create_timer(p['period_sec'], self._tick)
        self.diagnostics = diagnostics.NodeDiagnostics(self, prefix, self._report)

    def _report(self) -> diagnostics.Report:
        values = {'mission_state': self.state, 'controller_armed': self.controller_armed,
                  'estimate': self.estimate is not None, 'fix': self.fix is not None,
                  'setpoint_mode': '' if self.sent_mode is None else self.sent_mode}
        if self.hold is not None:
            return diagnostics.Report(diagnostics.OK, 'approaching', values)
        return diagnostics.Report(diagnostics.OK, 'idle: waiting for the start, the estimate '
                                  'and an armed controller', values)

    def _on_state(self, msg: String) -> None:
        if msg.data != self.state:
            self.get_logger().info(f'mission state {msg.data}')
        self.state = msg.data

    def _on_controller(self, msg: DiagnosticArray) -> None:
        armed = controller_armed(msg)
        if armed is not None and armed != self.controller_armed:
            self.get_logger().info(f'setpoint_controller {"armed" if armed else "disarmed"}')
            self.controller_armed = armed

    def _on_estimate(self, msg: Odometry) -> None:
        self.estimate = msg

    def _on_fix(self, msg: NearbyVessels) -> None:
        found = rendezvous.nearest(
            [(v.vessel_id, v.is_debris, (v.position.x, v.position.y, v.position.z),
              (v.linear_velocity.x, v.linear_velocity.y, v.linear_velocity.z))
             for v in msg.vessels], self.params['target_vessel_id'])
        self.fix = None if found is None else rendezvous.Fix(
            found[0], found[1], to_seconds(msg.header.stamp))

    def _tick(self) -> None:
        est = self.estimate
        if self.state != mission.VEHICLE_START or est is None or not self.controller_armed:
            self.hold = None
            self._send(ControlSetpoint.MODE_IDLE)
            return
        o = est.pose.pose.orientation
        orientation = (o.x, o.y, o.z, o.w)
        if self.hold is None:
            self.hold = orientation
            self.get_logger().info('approach begins')
        fresh = self.fix is not None and \
            to_seconds(est.header.stamp) - self.fix.stamp <= self.params['fix_timeout_sec']
        if fresh:
            velocity = rotations.rotate(orientation, _xyz(est.twist.twist.linear))
            target = rendezvous.setpoint(self.fix, orientation, velocity, self.hold,
                                         self.params['standoff_m'])
        else:                          # no usable fix: stop where it is, keep the attitude
            target = rendezvous.SixDof((0.0, 0.0, 0.0), self.hold, (0.0, 0.0, 0.0))
        self._send(ControlSetpoint.MODE_SIX_DOF, target, est.header.frame_id)

    def _send(self, mode: int, target: rendezvous.SixDof | None = None,
              frame: str = '') -> None:
        msg = ControlSetpoint(mode=mode)
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = frame
        msg.orientation.w = 1.0
        if target is not None:
            msg.position.x, msg.position.y, msg.position.z = target.position
            q = msg.orientation
            q.x, q.y, q.z, q.w = target.orientation
            v = msg.linear_velocity
            v.x, v.y, v.z = target.linear_velocity
        if mode != self.sent_mode:
            self.get_logger().info(f'setpoint mode {mode}')
            self.sent_mode = mode
        self.setpoint_pub.publish(msg)


def controller_armed(msg: DiagnosticArray) -> bool | None:
    """Return the ``armed`` value of setpoint_controller's diagnostics (None: not in it)."""
    for status in msg.status:
        if status.name == topics.SETPOINT_CONTROLLER:
            for pair in status.values:
                if pair.key == 'armed':
                    return pair.value == 'True'
    return None


def _xyz(v) -> tuple[float, float, float]:
    return (v.x, v.y, v.z)


def main() -> int:
    """Entry point of ``rendezvous_chaser``."""
    return node_main.run(ChaserNode)
