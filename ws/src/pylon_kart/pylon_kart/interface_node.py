"""``kart_interface``: the competition's vehicle interface on a KSP rover, as a node.

The logic is plain: ``vehicle.KartInterface`` (the command in force, the gear, the mode, the
timeout stop), ``longitudinal`` (acceleration to motors and brakes), ``geometry`` and
``actuation`` (Ackermann steering, the electronic differential, what the kart measures) and
``pylon_vehicle_control.lease.LeaseClient`` (the lease). This node wires them:

- the competition's topics and service (``topics.KART_TOPICS``): ``control_cmd``,
  ``actuation_cmd``, ``gear_cmd``, ``/control/control_mode_request`` and
  ``/awsim/control_mode_request_topic`` in; ``control_mode``, ``gear_status``,
  ``velocity_status``, ``steering_status``, ``actuation_status`` out, every control step;
- the bridge's (under ``topic_prefix``): the lifecycle, the authority state, the wheels'
  states (the geometry and the spin), the IMU (yaw rate) and ``robot_description`` (the
  mass) in; authority commands and one ``WheelCommand`` per wheel per step out.

The kart moves only while AUTONOMOUS: a mode request AUTONOMOUS starts a lease client (a
new lease), MANUAL releases the lease and stops sending; the wheels' stock settings (motor
idle, brakes off) return ``wheel_command_timeout_sec`` after the last wheel command. The
service answers once the lease is owned (``success`` true) or after
``mode_request_timeout_sec`` without it (false); it runs on its own node and thread so that
the lease's answers keep flowing while it waits.

Clocks: as ``setpoint_controller`` (``use_sim_time``: the loop, the command timeout and the
lease on game time, the bridge's ``/clock``; otherwise the steady clock), but on game time
the lease is also ticked by a steady timer: renewed every ``lease_duration_sec / 4`` of game
or wall time, whichever comes first, so that a game that stands still (paused, or
lock-stepped and waiting for a stalled stack) keeps the kart's lease, and the client never
finds it lapsed (``clock_stopped``) after such a stand-still.
"""

from __future__ import annotations

from collections.abc import Callable
import threading
import time

from autoware_auto_control_msgs.msg import AckermannControlCommand
from autoware_auto_vehicle_msgs.msg import (
    ControlModeReport,
    GearCommand,
    GearReport,
    SteeringReport,
    VelocityReport,
)
from autoware_auto_vehicle_msgs.srv import ControlModeCommand
from diagnostic_msgs.msg import DiagnosticArray
from pylon_common import diagnostics, node_main, topics
from pylon_common.parameters import declare
from pylon_common.stamps import to_seconds
from pylon_interfaces.msg import (
    ControlAuthorityCommand,
    ControlAuthorityState,
    VesselLifecycle,
    WheelCommand,
    WheelState,
)
from pylon_protocol import frames
from pylon_vehicle_control import lease
from pylon_vehicle_control.mass_properties import mass_properties
from rclpy.clock import Clock, ClockType
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import Imu
from std_msgs.msg import Bool, String
from tier4_vehicle_msgs.msg import ActuationCommandStamped, ActuationStatusStamped

from pylon_kart import actuation, interface_params, longitudinal, vehicle
from pylon_kart.geometry import Geometry, geometry_of, Wheel

DIAGNOSTICS_PERIOD_SEC = 1.0
STEADY = Clock(clock_type=ClockType.STEADY_TIME)
MIN_REACTION_SEC = 0.005
"""s of wall time between two control steps run at once on a control_cmd or actuation_cmd
(not at the next tick, up to a 20 ms physics step away); but the first command of a new
game instant always gets one, since a lock-stepped game may be waiting for it."""


def wheel_command(client: lease.LeaseClient, order: actuation.WheelOrder, stamp,
                  timeout: float) -> WheelCommand:
    """Return the WheelCommand of one wheel's order under the client's lease (next sequence)."""
    msg = WheelCommand(
        vessel_id=client.vessel_id, controller_id=client.controller_id,
        lease_id=client.lease_id, sequence=client.next_sequence(), id=order.id,
        enabled=order.enabled, target_angular_velocity=float(order.target_angular_velocity),
        steering_angle=float(order.steering_angle),
        max_drive_torque=float(order.max_drive_torque), timeout_sec=timeout,
        brake=float(order.brake))
    msg.header.stamp = stamp
    return msg


def newest_stamp(wheel_states):
    """Return the newest wheel state's stamp (what the speeds were measured at), if any."""
    return max((m.header.stamp for m in wheel_states), key=to_seconds, default=None)


def _wheel(msg: WheelState) -> Wheel:
    return Wheel(msg.id, msg.position.x, msg.position.y, msg.radius,
                 msg.steering_enabled, msg.max_steering_angle, msg.max_drive_torque,
                 msg.rolling_sign or 1.0, msg.steering_sign or 1.0)


class KartInterfaceNode(Node):
    """kart_interface's ROS plumbing."""

    def __init__(self) -> None:
        """Declare ``interface_params.PARAMETERS``; wire everything; start the mode service."""
        super().__init__(topics.KART_INTERFACE)
        self.params = p = declare(self, interface_params.PARAMETERS)
        self.game_time = bool(self.get_parameter('use_sim_time').value)
        self.clock = self.get_clock() if self.game_time else STEADY
        self.kart = vehicle.KartInterface(
            vehicle.Limits(p['command_timeout_sec'], p['max_acceleration'],
                           p['stop_deceleration'], p['park_speed'],
                           p['lockstep_command_age_sec']), None)
        self.lock = threading.RLock()        # the mode service's thread shares the state
        self.engaged = threading.Event()
        self.lease: lease.LeaseClient | None = None
        self.lifecycle: tuple[int, str, int] | None = None
        self.wheel_msgs: dict[str, WheelState] = {}
        self.geometry: Geometry | None = None
        self.mass: float | None = None
        self.yaw_rate = 0.0
        self.measured = actuation.Measurement(0.0, 0.0, 0.0, 0.0)
        self.applied: vehicle.Output | None = None
        self.last_step: float | None = None
        self.last_reaction = 0.0              # steady clock of the last step on a command
        self.counts = {'wheel_commands_sent': 0, 'leases_lost': 0, 'commands_refused': 0}
        self._wire(p['topic_prefix'])
        self.timer = self.create_timer(p['control_period_sec'], self._tick, clock=self.clock)
        # on game time the lease also ticks on the wall clock: a game standing still (paused,
        # or lock-stepped on a stalled stack) costs no lease
        self.lease_timer = self.create_timer(p['lease_duration_sec'] / 8.0, self._tick_lease,
                                             clock=STEADY) if self.game_time else None
        self.diag_timer = self.create_timer(DIAGNOSTICS_PERIOD_SEC, self._diagnostics,
                                            clock=self.clock)
        self.mode_service = ModeService(self)
        self._publish_status()

    def now(self) -> float:
        """Return the time of the loop, the timeout and the lease (s)."""
        if not self.game_time:
            return time.monotonic()
        return self.clock.now().nanoseconds * 1e-9

    def _wire(self, prefix: str) -> None:
        def publisher(msg_type, key):
            return self.create_publisher(msg_type, topics.name(key, prefix), topics.qos(key))

        def subscription(msg_type, key, callback):
            return self.create_subscription(msg_type, topics.name(key, prefix), callback,
                                            topics.qos(key, reader=True))
        self.authority_pub = publisher(ControlAuthorityCommand, 'control/authority/command')
        self.wheel_pub = publisher(WheelCommand, 'actuators/wheel/command')
        self.mode_pub = publisher(ControlModeReport, 'kart/control_mode')
        self.gear_pub = publisher(GearReport, 'kart/gear_status')
        self.velocity_pub = publisher(VelocityReport, 'kart/velocity_status')
        self.steering_pub = publisher(SteeringReport, 'kart/steering_status')
        self.actuation_pub = publisher(ActuationStatusStamped, 'kart/actuation_status')
        self.diag_pubs = (publisher(DiagnosticArray, 'kart/diagnostics'),
                          publisher(DiagnosticArray, topics.ROS_DIAGNOSTICS))
        self.subs = [
            subscription(VesselLifecycle, 'lifecycle', self._on_lifecycle),
            subscription(ControlAuthorityState, 'control/authority/state', self._on_authority),
            subscription(WheelState, 'actuators/wheel/state', self._on_wheel),
            subscription(Imu, 'imu', self._on_imu),
            subscription(String, 'robot_description', self._on_model),
            subscription(AckermannControlCommand, 'kart/control_cmd', self._on_control),
            subscription(ActuationCommandStamped, 'kart/actuation_cmd', self._on_actuation),
            subscription(GearCommand, 'kart/gear_cmd', self._on_gear),
            subscription(Bool, 'kart/control_mode_request_topic', self._on_mode_topic)]

    # -- the bridge's inputs -----------------------------------------------------------------
    def _send_lease(self, update: lease.LeaseUpdate) -> None:
        for command in update.commands:
            self.authority_pub.publish(command.message())
        for event in update.events:
            if event == 'acquired':
                self.kart.engage(self.measured.longitudinal_velocity)
                self.engaged.set()
                self.get_logger().info(f'AUTONOMOUS: lease {self.lease.lease_id} owned')
            elif event.startswith('lost:'):
                self.counts['leases_lost'] += 1
                self.engaged.clear()
                self.get_logger().warning(f'lease {event}: the kart is not driven')

    def _on_lifecycle(self, msg: VesselLifecycle) -> None:
        with self.lock:
            if self.lifecycle and self.lifecycle[1:] != (msg.vessel_id, msg.generation):
                self.wheel_msgs = {}          # a new session: no old wheel state counts
                if self.lifecycle[1] != msg.vessel_id:
                    self.geometry = None
            self.lifecycle = (msg.state, msg.vessel_id, msg.generation)
            if self.lease is not None:
                self._send_lease(self.lease.on_lifecycle(*self.lifecycle, self.now()))

    def _on_authority(self, msg: ControlAuthorityState) -> None:
        with self.lock:
            if self.lease is not None:
                self._send_lease(self.lease.on_authority(
                    msg.state, msg.controller_id, msg.lease_id, msg.vessel_id, msg.reason,
                    self.now(), msg.last_sequence or None))

    def _on_wheel(self, msg: WheelState) -> None:
        if msg.vessel_id and self.lifecycle and msg.vessel_id != self.lifecycle[1]:
            return
        known = msg.id in self.wheel_msgs
        self.wheel_msgs[msg.id] = msg
        if not known:
            try:
                self.geometry = geometry_of([_wheel(m) for m in self.wheel_msgs.values()])
            except ValueError:
                self.geometry = None
            self._update_model()

    def _on_imu(self, msg: Imu) -> None:
        self.yaw_rate = msg.angular_velocity.z

    def _on_model(self, msg: String) -> None:
        try:
            self.mass = mass_properties(msg.data).mass if msg.data else None
        except ValueError as exc:
            self.get_logger().warning(f'robot_description unusable: {exc}')
            self.mass = None
        self._update_model()

    def _update_model(self) -> None:
        """Give the longitudinal model the motors' deceleration (mass and wheels known)."""
        g = self.geometry
        if g is None or not self.mass:
            self.kart.params = None
            return
        self.kart.params = vehicle.longitudinal_params(
            g, self.mass, self.params['full_brake_deceleration'], self.params['max_speed'])

    @property
    def ready(self) -> bool:
        """Tell whether the kart can take control: session ACTIVE, wheels and mass known."""
        return (self.lifecycle is not None and self.lifecycle[0] in
                (lease.LIFECYCLE_ACTIVE, lease.LIFECYCLE_CHANGED)
                and self.kart.params is not None)

    # -- the competition's inputs ------------------------------------------------------------
    def _refused(self, what: str, reason: str) -> None:
        if reason:
            self.counts['commands_refused'] += 1
            self.get_logger().warning(f'{what} refused: {reason}', throttle_duration_sec=2.0)

    def _on_control(self, msg: AckermannControlCommand) -> None:
        c = msg.lateral.steering_tire_angle, msg.longitudinal.acceleration
        self._take('control_cmd', lambda now: self.kart.on_control(*c, now, self.geometry))

    def _on_actuation(self, msg: ActuationCommandStamped) -> None:
        a = msg.actuation
        self._take('actuation_cmd', lambda now: self.kart.on_actuation(
            a.accel_cmd, a.brake_cmd, a.steer_cmd, now, self.geometry))

    def _take(self, what: str, take: Callable[[float], str]) -> None:
        """Take a command and step at once (``MIN_REACTION_SEC``)."""
        with self.lock:
            now = self.now()
            self._refused(what, take(now))
            wall = time.monotonic()
            if wall - self.last_reaction >= MIN_REACTION_SEC or (
                    self.game_time and self.last_step is not None and now > self.last_step):
                self.last_reaction = wall
                self._step(now)

    def _on_gear(self, msg: GearCommand) -> None:
        with self.lock:
            self._refused('gear_cmd', self.kart.on_gear(msg.command,
                                                        self.measured.longitudinal_velocity))
            self._publish_status()

    def _on_mode_topic(self, msg: Bool) -> None:
        self.request_mode(vehicle.AUTONOMOUS if msg.data else vehicle.MANUAL)

    def request_mode(self, mode: int) -> str:
        """Take a mode request (from the topic or the service); return '' or why not."""
        with self.lock:
            if mode == vehicle.AUTONOMOUS and not self.ready:
                reason = self.kart.refuse('not_ready')
            else:
                reason = self.kart.request_mode(mode)
            self._refused('mode request', reason)
            if reason:
                return reason
            if mode == vehicle.AUTONOMOUS and self.lease is None:
                self.engaged.clear()
                self.lease = lease.LeaseClient(
                    self.params['controller_id'],
                    lease_duration_sec=self.params['lease_duration_sec'],
                    suppress_sas=False, acquire_on_tick=self.game_time)
                self._send_lease(self.lease.on_lifecycle(*self.lifecycle, self.now()))
            elif mode == vehicle.MANUAL and self.lease is not None:
                self._send_lease(self.lease.shutdown(self.now()))
                self.lease = None
                self.engaged.clear()
                self.get_logger().info('MANUAL: lease released')
            self._publish_status()
            return ''

    # -- the loop ----------------------------------------------------------------------------
    def _tick(self) -> None:
        with self.lock:
            self._tick_lease()
            self._step(self.now())

    def _tick_lease(self) -> None:
        with self.lock:
            if self.lease is not None:
                self._send_lease(self.lease.tick(self.now(), time.monotonic() if self.game_time
                                                 else None))

    def _step(self, now: float) -> None:
        g = self.geometry
        if g is not None:
            spin = {i: m.angular_velocity for i, m in self.wheel_msgs.items()}
            angles = {i: m.steering_angle for i, m in self.wheel_msgs.items()}
            self.measured = actuation.measure(g, spin, angles, self.yaw_rate)
        # the game time since the last step (0 within one physics step), however long: the
        # reference's band bounds what a long one can add
        dt = max(now - self.last_step, 0.0) if self.last_step else \
            self.params['control_period_sec']
        self.last_step = now
        self.applied = None
        if self.engaged_now(now) and g is not None and self.kart.params is not None:
            self.applied, orders = self.kart.control(now, g, self.measured, dt)
            if self.kart.sends(now):
                self._send_wheels(orders)
        self._publish_status()

    def engaged_now(self, now: float) -> bool:
        """Tell whether commands act: AUTONOMOUS requested and the lease owned."""
        return self.kart.requested == vehicle.AUTONOMOUS and self.lease is not None and \
            self.lease.owns(now)

    def _send_wheels(self, orders: list[actuation.WheelOrder]) -> None:
        stamp = self.get_clock().now().to_msg()
        for o in orders:
            self.wheel_pub.publish(wheel_command(self.lease, o, stamp,
                                                 self.params['wheel_command_timeout_sec']))
        self.counts['wheel_commands_sent'] += len(orders)

    def _publish_status(self) -> None:
        stamp = self.get_clock().now().to_msg()
        measured_at = newest_stamp(self.wheel_msgs.values()) or stamp
        m = self.measured
        mode = self.kart.report_mode(self.ready, self.engaged_now(self.now()))
        self.mode_pub.publish(ControlModeReport(stamp=stamp, mode=mode))
        self.gear_pub.publish(GearReport(stamp=stamp, report=vehicle.GEAR_VALUES[self.kart.gear]))
        velocity = VelocityReport(longitudinal_velocity=float(m.longitudinal_velocity),
                                  lateral_velocity=float(m.lateral_velocity),
                                  heading_rate=float(m.heading_rate))
        velocity.header.stamp, velocity.header.frame_id = measured_at, frames.BASE_LINK
        self.velocity_pub.publish(velocity)
        self.steering_pub.publish(SteeringReport(
            stamp=measured_at, steering_tire_angle=float(m.steering_tire_angle)))
        status = ActuationStatusStamped()
        status.header.stamp, status.header.frame_id = stamp, frames.BASE_LINK
        status.status.accel_status, status.status.brake_status = self._applied_accel_brake()
        status.status.steer_status = float(m.steering_tire_angle)
        self.actuation_pub.publish(status)

    def _applied_accel_brake(self) -> tuple[float, float]:
        """Return the motors' applied torque (fraction of their limit) and the brake."""
        if self.applied is None or self.geometry is None:
            return 0.0, 0.0
        torques = {i: m.drive_torque for i, m in self.wheel_msgs.items()}
        return (actuation.applied_drive(self.geometry, torques,
                                        longitudinal.DIRECTION[self.kart.gear]),
                float(self.applied.drive.brake))

    def _diagnostics(self) -> None:
        with self.lock:
            k = self.kart
            life = self.lifecycle or (0, '', -1)
            values = {'mode': k.report_mode(self.ready, self.engaged_now(self.now())),
                      'vessel_id': life[1], 'generation': life[2],
                      'requested': k.requested, 'gear': k.gear,
                      'lease': self.lease.phase if self.lease else 'none',
                      'source': self.applied.source if self.applied else '',
                      'last_refusal': k.last_refusal, **self.counts,
                      **{f'refused_{r}': n for r, n in sorted(k.refusals.items())},
                      'max_steering_tire_angle': round(self.geometry.max_steering_tire_angle,
                                                       5) if self.geometry else '',
                      'clock': 'game' if self.game_time else 'steady'}
        report = diagnostics.Report(diagnostics.OK if self.ready else diagnostics.WARN,
                                    'ready' if self.ready else 'not ready', values)
        array = DiagnosticArray(status=[diagnostics.status(
            topics.KART_INTERFACE, self.params['controller_id'], report)])
        array.header.stamp = self.get_clock().now().to_msg()
        for pub in self.diag_pubs:
            pub.publish(array)

    def release(self) -> None:
        """Release the lease (on shutdown) and stop the mode service's thread."""
        with self.lock:
            if self.lease is not None:
                self._send_lease(self.lease.shutdown(self.now()))
        self.mode_service.stop()


class ModeService:
    """``/control/control_mode_request`` on a node and thread of its own.

    Its answer waits for the lease (``KartInterfaceNode.engaged``), which the main node's
    callbacks confirm meanwhile.
    """

    def __init__(self, owner: KartInterfaceNode) -> None:
        """Create the service node in the owner's context and spin it in a daemon thread."""
        self.owner = owner
        self.node = Node(f'{topics.KART_INTERFACE}_mode_service',
                         context=owner.context)
        self.node.create_service(ControlModeCommand,
                                 topics.name('kart/control_mode_request'), self._on_request)
        self.executor = SingleThreadedExecutor(context=owner.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self) -> None:
        while self.owner.context.ok() and not node_main.stop_requested():
            try:
                self.executor.spin_once(timeout_sec=0.1)
            except Exception:          # noqa: BLE001 (shutdown under the executor's feet)
                if not self.owner.context.ok():
                    return
                raise

    def _on_request(self, request: ControlModeCommand.Request,
                    response: ControlModeCommand.Response) -> ControlModeCommand.Response:
        reason = self.owner.request_mode(request.mode)
        if reason or request.mode == vehicle.MANUAL:
            response.success = not reason
            return response
        response.success = self.owner.engaged.wait(
            self.owner.params['mode_request_timeout_sec'])
        return response

    def stop(self) -> None:
        """Stop spinning (the thread ends within its spin period)."""
        self.executor.shutdown(timeout_sec=0.5)
        self.node.destroy_node()


def main() -> int:
    """Entry point of ``kart_interface``; SIGINT or SIGTERM release the lease first."""
    return node_main.run(KartInterfaceNode, node_main.release_on_exit)
