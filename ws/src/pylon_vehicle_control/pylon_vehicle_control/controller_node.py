"""``setpoint_controller``: the lease client, the arming rules and the control law as a node.

The logic lives in plain classes: ``lease.LeaseClient`` (acquire, confirm, renew every
lease/4, one sequence per lease for every formal command, release on shutdown),
``supervisor.Supervisor`` (the setpoint in force; setpoint timeout, stale input,
generation change and authority loss disarm it; only a MODE_IDLE re-arms) and
``control_law.SetpointControlLaw`` (IDLE, DETUMBLE, ATTITUDE_HOLD, SIX_DOF). This node
wires them to topics and a timer of ``command_period_sec``:

- inputs (names from the topic contract, the vessel's under ``topic_prefix``): the
  lifecycle, the authority state, the wrench feedback (only feedback on our own lease),
  ``setpoint_topic`` (ControlSetpoint; default ``~/setpoint``), the state estimate
  ``pylon_estimator/odometry`` (Odometry; remap it to use another estimator), the IMU
  (DETUMBLE needs only the body rate, so it works before the estimate exists, e.g. while
  spinning too fast for the star tracker) and ``robot_description`` (mass and inertia,
  ``mass_properties``). Never a ground-truth topic.
- outputs: authority commands, a BodyWrenchCommand every period while the lease is ours
  (exact zeros when disarmed or IDLE, and for a step whose state is older than
  ``state_max_age_sec``: a late estimate would steer with the rate of a past moment), and
  ``~/diagnostics`` (``stale_state_steps`` counts those steps), also on ``/diagnostics``.

A setpoint's orientation is the target rotation ``base_link -> header.frame_id``; the
frame must be empty, ``kerbol_inertial`` or the estimate's own frame (whose axes are
``kerbol_inertial``'s); another frame is refused (``unsupported_frame``).

Clocks (``use_sim_time``, read once at start). Without it everything is timed on the
steady clock, as the mod times leases and command timeouts on the game computer's wall
clock. With it (``udp_bridge --publish-clock``: ``/clock`` is KSP time) the loop, the
diagnostics, the lease's renewals and expiry and the setpoint and input timeouts run on
the node's ROS clock, i.e. game time: the controller commands every ``command_period_sec``
of game time, whatever pace the game (or pylon_sim's ``--rate``) keeps. ROS time moves
only when a datagram brings a newer game time, so a step comes at most once per ``/clock``
update (under physics warp that can be less often than the period); the law then steps
the game time that passed since the previous step (at most ``MAX_GAME_STEP_SEC``). While
game time stands still (a paused game) nothing goes out; the mod's lease runs out on its wall clock
meanwhile, which the controller learns from the authority state (or, lacking that, from
a tick that comes more than a lease after the previous one on the steady clock): the lease
is lost (target discarded, MODE_IDLE re-arms) and acquired again once game time moves.
"""

from __future__ import annotations

import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from nav_msgs.msg import Odometry
import numpy as np
from pylon_common import node_main, topics
from pylon_common.parameters import declare
from pylon_interfaces.msg import (
    BodyWrenchCommand,
    ControlAuthorityCommand,
    ControlAuthorityState,
    ControlSetpoint,
    VesselLifecycle,
    WrenchFeedback,
)
from pylon_protocol import frames, rotations
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from sensor_msgs.msg import Imu
from std_msgs.msg import String

from pylon_vehicle_control import control_law, controller_params, lease, supervisor
from pylon_vehicle_control.mass_properties import mass_properties

INERTIAL_FRAMES = ('', frames.KERBOL_INERTIAL)
MAX_GAME_STEP_SEC = 1.0      # the longest game-time step the law takes (a stalled controller)


def _xyz(v) -> tuple[float, float, float]:
    return (float(v.x), float(v.y), float(v.z))


class ControllerNode(Node):
    """setpoint_controller's ROS plumbing."""

    def __init__(self) -> None:
        """Declare the parameters of ``controller_params.PARAMETERS``; wire everything."""
        super().__init__(topics.SETPOINT_CONTROLLER)
        self.params = p = declare(self, controller_params.PARAMETERS, controller_params.RETIRED)
        self.law = control_law.SetpointControlLaw(control_law.ControlParams.from_values(p))
        self.state = self.law.initial_state()
        # game time (use_sim_time): the ROS clock; else the steady clock, as the mod's
        self.game_time = bool(self.get_parameter('use_sim_time').value)
        self.clock = self.get_clock() if self.game_time else \
            Clock(clock_type=ClockType.STEADY_TIME)
        self.lease = lease.LeaseClient(p['controller_id'], priority=p['priority'],
                                       lease_duration_sec=p['lease_duration_sec'],
                                       suppress_sas=p['suppress_sas'],
                                       acquire_on_tick=self.game_time)
        self.supervisor = supervisor.Supervisor(p['setpoint_timeout_sec'],
                                                p['input_timeout_sec'])
        self.estimate: Odometry | None = None
        self.imu_rate: tuple[float, float, float] | None = None
        self.estimate_time = self.imu_time = 0.0     # when each was true (``_state_time``)
        self.estimate_frame = ''
        self.feedback: control_law.Feedback | None = None
        self.inertia = self.mass = None
        self.last_output: control_law.ControlOutput | None = None
        self.counts = {'wrench_sent': 0, 'setpoints_refused': 0, 'saturated_feedback': 0,
                       'leases_lost': 0, 'stale_state_steps': 0}
        self.last_refusal = ''
        self.last_period: float | None = None
        self.periods: list[float] = []
        self._wire(p['topic_prefix'], p['setpoint_topic'])
        self.timer = self.create_timer(p['command_period_sec'], self._tick, clock=self.clock)
        self.diag_timer = self.create_timer(p['diagnostics_period_sec'], self._diagnostics,
                                            clock=self.clock)

    def now(self) -> float:
        """Return the time of the lease, the timeouts and the loop (s): see the module doc."""
        if not self.game_time:
            return time.monotonic()
        return self.clock.now().nanoseconds * 1e-9

    def _wire(self, prefix: str, setpoint_topic: str) -> None:
        """Create the publishers and subscriptions, names and QoS from the topic contract.

        The setpoint topic is the ``setpoint_topic`` parameter (the contract's ``~/setpoint``
        by default), with the contract's QoS.
        """
        def publisher(msg_type, key):
            return self.create_publisher(msg_type, topics.name(key, prefix), topics.qos(key))

        def subscription(msg_type, key, callback):
            return self.create_subscription(msg_type, topics.name(key, prefix), callback,
                                            topics.qos(key, reader=True))
        self.authority_pub = publisher(ControlAuthorityCommand, 'control/authority/command')
        self.wrench_pub = publisher(BodyWrenchCommand, 'control/wrench_command')
        self.diag_pubs = (publisher(DiagnosticArray, 'controller/diagnostics'),
                          publisher(DiagnosticArray, topics.ROS_DIAGNOSTICS))
        self.subs = [
            subscription(VesselLifecycle, 'lifecycle', self._on_lifecycle),
            subscription(ControlAuthorityState, 'control/authority/state', self._on_authority),
            subscription(WrenchFeedback, 'control/wrench_feedback', self._on_feedback),
            self.create_subscription(ControlSetpoint, setpoint_topic, self._on_setpoint,
                                     topics.qos('setpoint', reader=True)),
            subscription(Odometry, 'odometry', self._on_state),
            subscription(Imu, 'imu', self._on_imu),
            subscription(String, 'robot_description', self._on_model)]

    # -- inputs ------------------------------------------------------------------------
    def _send_lease(self, update: lease.LeaseUpdate) -> None:
        for command in update.commands:
            self.authority_pub.publish(command.message())
        for event in update.events:
            if event.startswith('lost:'):
                self.counts['leases_lost'] += 1
                self.supervisor.on_authority_lost(event[5:])
                self.get_logger().warning(f'lease {event}; target discarded')
            elif event == 'generation_changed':
                self.supervisor.on_generation(self.lease.generation)
            elif event == 'acquired':
                self.get_logger().info(f'lease {self.lease.lease_id} owned')

    def _on_lifecycle(self, msg: VesselLifecycle) -> None:
        if self.supervisor.on_generation(msg.generation):
            self.get_logger().warning('generation changed: target discarded')
        self._send_lease(self.lease.on_lifecycle(msg.state, msg.vessel_id, msg.generation,
                                                 self.now()))

    def _on_authority(self, msg: ControlAuthorityState) -> None:
        self._send_lease(self.lease.on_authority(
            msg.state, msg.controller_id, msg.lease_id, msg.vessel_id, msg.reason,
            self.now(), msg.last_sequence or None))

    def _on_feedback(self, msg: WrenchFeedback) -> None:
        if (msg.controller_id, msg.lease_id) != self.lease.identity:
            return
        if msg.saturated:
            self.counts['saturated_feedback'] += 1
        self.feedback = control_law.Feedback(
            saturated=msg.saturated, saturation_ratio=msg.saturation_ratio,
            requested_force=_xyz(msg.requested.force),
            requested_torque=_xyz(msg.requested.torque),
            allocated_force=_xyz(msg.allocated.force),
            allocated_torque=_xyz(msg.allocated.torque))

    def _on_setpoint(self, msg: ControlSetpoint) -> None:
        now = self.now()
        frame = msg.header.frame_id
        if frame not in INERTIAL_FRAMES and frame != self.estimate_frame:
            sp, reason = None, f'unsupported_frame:{frame}'
        else:
            q, pos = msg.orientation, msg.position
            sp, reason = supervisor.validate_setpoint(
                msg.mode, (pos.x, pos.y, pos.z), (q.x, q.y, q.z, q.w),
                _xyz(msg.linear_velocity), _xyz(msg.angular_velocity))
        decision = self.supervisor.on_setpoint(sp, now, reason)
        if not decision.accepted:
            self.counts['setpoints_refused'] += 1
            self.last_refusal = decision.reason
            self.get_logger().warning(f'setpoint refused: {decision.reason}',
                                      throttle_duration_sec=2.0)

    def _state_time(self, msg: Odometry | Imu) -> float:
        """Return when a state input was true, on the loop's clock.

        On game time its stamp (KSP time, as the clock); on the steady clock, which stamps
        do not share, its arrival.
        """
        if not self.game_time:
            return self.now()
        return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9

    def _on_state(self, msg: Odometry) -> None:
        self.estimate = msg
        self.estimate_time = self._state_time(msg)
        self.estimate_frame = msg.header.frame_id
        self.supervisor.on_input(self.now())

    def _on_imu(self, msg: Imu) -> None:
        self.imu_rate = _xyz(msg.angular_velocity)
        self.imu_time = self._state_time(msg)
        setpoint = self.supervisor.setpoint
        if setpoint is not None and setpoint.mode == control_law.MODE_DETUMBLE:
            self.supervisor.on_input(self.now())

    def _on_model(self, msg: String) -> None:
        if not msg.data:
            return
        try:
            props = mass_properties(msg.data)
        except ValueError as exc:
            self.get_logger().warning(f'robot_description unusable: {exc}')
            return
        self.inertia, self.mass = props.inertia, props.mass

    # -- the loop ----------------------------------------------------------------------
    def _tick(self) -> None:
        now = self.now()
        dt = self.params['command_period_sec']
        if self.last_period is not None:
            self.periods = (self.periods + [now - self.last_period])[-200:]
            if self.game_time:       # the game time that passed: /clock moves in steps
                dt = min(max(now - self.last_period, 1e-3), MAX_GAME_STEP_SEC)
        self.last_period = now
        # on game time the steady clock beside it: a paused game stops game time, not the
        # mod's lease (lease.LeaseClient.tick)
        self._send_lease(self.lease.tick(now, time.monotonic() if self.game_time else None))
        was_armed = self.supervisor.armed
        setpoint, serial = self.supervisor.active(now)
        if was_armed and not self.supervisor.armed:
            self.get_logger().warning(f'disarmed: {self.supervisor.disarm_reason}; '
                                      'send MODE_IDLE to re-arm')
        if not self.lease.owns(now):
            return
        est = self.estimate
        detumble = setpoint.mode == control_law.MODE_DETUMBLE and self.imu_rate is not None
        # a state older than state_max_age_sec (its producer stalled, or this node did and
        # has not taken the newer ones yet) would steer the torque of a past moment: coast
        stale = now - (self.imu_time if detumble else self.estimate_time) > \
            self.params['state_max_age_sec'] and (detumble or est is not None)
        self.counts['stale_state_steps'] += stale
        if detumble and not stale:
            orientation, rate, position, velocity = (0.0, 0.0, 0.0, 1.0), self.imu_rate, \
                None, None                             # the rate is all DETUMBLE needs
        elif est is None or stale:
            setpoint = control_law.Setpoint()         # no (fresh) estimate: zeros only
            orientation, rate, position, velocity = (0.0, 0.0, 0.0, 1.0), (0.0,) * 3, \
                None, None
        else:
            o = est.pose.pose.orientation
            orientation = (o.x, o.y, o.z, o.w)
            rate = _xyz(est.twist.twist.angular)
            position = _xyz(est.pose.pose.position)
            body_v = np.array(_xyz(est.twist.twist.linear))
            velocity = tuple(rotations.to_matrix(orientation) @ body_v)
        inputs = control_law.ControlInputs(
            setpoint=setpoint, setpoint_serial=serial, orientation=orientation,
            body_rate=rate, position=position, velocity=velocity, inertia=self.inertia,
            mass=self.mass, feedback=self.feedback)
        self.feedback = None
        self.state, out = self.law.step(self.state, inputs, dt)
        self.last_output = out
        msg = BodyWrenchCommand(vessel_id=self.lease.vessel_id,
                                controller_id=self.lease.controller_id,
                                lease_id=self.lease.lease_id,
                                sequence=self.lease.next_sequence(),
                                timeout_sec=self.params['wrench_timeout_sec'])
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = frames.BASE_LINK
        msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = \
            (float(v) for v in out.force)
        msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = \
            (float(v) for v in out.torque)
        self.wrench_pub.publish(msg)
        self.counts['wrench_sent'] += 1

    def _diagnostics(self) -> None:
        out = self.last_output
        values = {'phase': self.lease.phase, 'lease_id': self.lease.lease_id,
                  'generation': self.lease.generation,
                  'armed': self.supervisor.armed,
                  'disarm_reason': self.supervisor.disarm_reason,
                  'mode': out.mode if out else '', 'deadband': out.deadband if out else '',
                  'saturation_limited': out.saturation_limited if out else '',
                  'attitude_error_deg': round(float(np.degrees(out.attitude_error_rad)), 4)
                  if out else '', 'last_refusal': self.last_refusal, **self.counts,
                  'clock': 'game' if self.game_time else 'steady',
                  'estimate_frame': self.estimate_frame,
                  'rate_limit_deg_s': self.params['attitude_hold_rate_limit_deg_s']}
        if len(self.periods) > 10:
            jitter = np.abs(np.array(self.periods) - self.params['command_period_sec'])
            values['period_jitter_p99_ms'] = round(float(np.percentile(jitter, 99)) * 1e3, 3)
            values['period_jitter_max_ms'] = round(float(jitter.max()) * 1e3, 3)
        level = DiagnosticStatus.OK if self.lease.phase == lease.OWNED else \
            DiagnosticStatus.WARN
        status = DiagnosticStatus(level=level, name='setpoint_controller',
                                  message=f'lease {self.lease.phase}',
                                  hardware_id=self.params['controller_id'],
                                  values=[KeyValue(key=k, value=str(v))
                                          for k, v in values.items()])
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        for pub in self.diag_pubs:
            pub.publish(array)

    def release(self) -> None:
        """Send ACTION_RELEASE when a lease is held (on shutdown)."""
        self._send_lease(self.lease.shutdown(self.now()))


def main() -> int:
    """Entry point of ``setpoint_controller``; SIGINT or SIGTERM release the lease first."""
    return node_main.run(ControllerNode, node_main.release_on_exit)
