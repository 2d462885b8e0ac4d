"""``sim_manager``: the simulator's management in ROS, one node in every domain of a mission.

In the management domain (its own, ``ROS_DOMAIN_ID``; ``domain_base``) it publishes
``/admin/awsim/state`` (``pylon_common.mission.ADMIN_STATES``, latched) and the mission
description ``/admin/awsim/mission`` (JSON: task, vehicles, game time), takes
``/admin/awsim/start`` (``std_msgs/Bool``, true) and ``/admin/awsim/reset``
(``std_msgs/Empty``), reads the referee's ``/admin/awsim/ranking``, and mirrors each
vehicle's state and status as ``/d<k>/awsim/state`` and ``/d<k>/awsim/status``. In vehicle
k's domain (``domain_base + k``) a node of its own, in a context of its own, publishes that
vehicle's ``/awsim/state`` (``VEHICLE_STATES``, latched, and again every
``state_republish_sec`` for subscribers that are not) and ``/awsim/status``
(``std_msgs/Float32MultiArray``, the index table ``STATUS_FIELDS``), reads its
bridge's lifecycle (which runtime session is ACTIVE there: Ready needs the simulator's
current one) and takes its ``/awsim/cmd`` (``std_msgs/Float32MultiArray``, index 0 the
boost command: ``Management.command``; what it drops is logged, throttled, and counted):
nothing else of the mission and nothing of another vehicle.

It talks to ``pylon_sim``'s management port (``pylon_protocol.management``) over UDP
without blocking: every ``poll_period_sec`` it reads the replies that came and asks for the
status again; the decisions are ``management.Management``'s. With ``exit_on_finish`` it
stops ``exit_delay_sec`` after the mission ended (Finish, FinishAll or Terminate), and it
says Terminate when it shuts down. Its status goes on ``/diagnostics`` in the management
domain every second (``pylon_common.diagnostics``, hardware id the simulator's management
address): the mission state, WARN until the simulator answered, ERROR once Terminate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
import json
import socket
import time

from pylon_common import diagnostics, mission, node_main, topics
from pylon_common.parameters import declare, Parameter
from pylon_interfaces.msg import VesselLifecycle
from pylon_protocol import management as wire
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import Bool, Empty, Float32MultiArray, String

from pylon_mission.management import Management, Session, START_MODES

PARAMETERS: tuple[Parameter, ...] = (
    Parameter('management_host', '127.0.0.1', "address of pylon_sim's management port"),
    Parameter('management_port', wire.MANAGEMENT_PORT, "pylon_sim's management port",
              1, 65535),
    Parameter('vehicles', 1, 'vehicles of the mission: vehicle k runs in domain '
                             'domain_base + k', 1, wire.MAX_VEHICLES),
    Parameter('domain_base', -1, "the management domain (-1: this node's own, "
                                 'ROS_DOMAIN_ID); vehicle k runs in domain_base + k', -1, 231),
    replace(topics.TOPIC_PREFIX, description="prefix of the vehicle stacks' vessel topics: "
            "each vehicle's bridge's lifecycle is read there, in its domain"),
    Parameter('poll_period_sec', 0.1, 's between two status requests', 0.01, 5.0),
    Parameter('sim_timeout_sec', 3.0, 's of silence of the simulator (after it answered) '
                                      'that end the management: Terminate', 0.1, 600.0),
    Parameter('start_mode', 'sync', f'{" or ".join(START_MODES)}: sync waits for '
                                    '/admin/awsim/start in Ready; count starts by itself once '
                                    'every vehicle is Ready and in control (or after '
                                    'control_timeout_sec)'),
    Parameter('countdown_sec', 3.0, 's of game time from an accepted start (WaitStart) to '
                                    'the start', 0.0, 600.0),
    Parameter('control_timeout_sec', 30.0, 'count: s of game time, from every vehicle Ready, '
                                           "after which it starts even if a vehicle's stack "
                                           'took no control', 0.0, 86400.0),
    Parameter('ready_timeout_sec', 120.0, 's count waits for every vehicle to be Ready '
                                          'before it gives up: Terminate', 1.0, 86400.0),
    Parameter('state_republish_sec', 1.0, "s between two publications of a vehicle's "
                                          'unchanged state (a Volatile subscriber started '
                                          'later learns it within that)', 0.1, 60.0),
    Parameter('exit_on_finish', False, 'stop the node once the mission ended (Finish, '
                                       'FinishAll or Terminate): the end of an orchestrated run'),
    Parameter('exit_delay_sec', 2.0, 's the final state is held before exit_on_finish stops '
                                     'the node (subscribers receive it)', 0.0, 60.0),
)
MAX_REPLIES_PER_POLL = 64
MAX_CALLBACKS_PER_POLL = 64
"""Callbacks one look at a vehicle domain takes at most (its lifecycle, its commands)."""


def active_session(msg: VesselLifecycle) -> Session | None:
    """Return the runtime session a lifecycle message says is ACTIVE (None: not ACTIVE)."""
    if msg.state != VesselLifecycle.STATE_ACTIVE:
        return None
    return (msg.runtime_instance, int(msg.runtime_generation), msg.runtime_epoch)


class VehicleOutlet:
    """Vehicle k's node in its own domain (state, status, lifecycle, commands), and mirrors.

    ``mirrors`` are the management domain's publishers of its state and status, and of its
    ``on_collision`` (``collision``); ``on_command(vehicle, data)`` takes each
    ``/awsim/cmd`` array.
    """

    def __init__(self, vehicle: int, domain: int, topic_prefix: str,
                 mirrors: tuple, on_command: Callable[[int, list[float]], None]) -> None:
        """Initialise a context on ``domain`` and a node with its publishers in it."""
        import rclpy
        from rclpy.context import Context
        self.vehicle, self.domain = vehicle, domain
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain)
        # a name of its own: the process's other nodes (one per domain) log apart
        self.node = Node(f'{topics.SIM_MANAGER}_vehicle_{vehicle}', context=self.context)
        self.states = (self.node.create_publisher(String, topics.name('awsim/state'),
                                                  topics.qos('awsim/state')), mirrors[0])
        self.statuses = (self.node.create_publisher(
            Float32MultiArray, topics.name('awsim/status'), topics.qos('awsim/status')),
            mirrors[1])
        self.collision = mirrors[2]
        self.lifecycle_topic = topics.name('lifecycle', topic_prefix)
        # depth 1: only the newest lifecycle counts, so one look per poll takes it
        self.lifecycle = self.node.create_subscription(
            VesselLifecycle, self.lifecycle_topic, self._on_lifecycle, topics.qos('lifecycle'))
        self.on_command = on_command
        self.commands = self.node.create_subscription(
            Float32MultiArray, topics.name('awsim/cmd'), self._on_command,
            topics.qos('awsim/cmd', reader=True))
        self.taken = 0                        # callbacks run (a look ends when none came)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.bridge_session: Session | None = None
        self.last_state: str | None = None
        self.said_at = 0.0

    def _on_lifecycle(self, msg: VesselLifecycle) -> None:
        self.taken += 1
        self.bridge_session = active_session(msg)

    def _on_command(self, msg: Float32MultiArray) -> None:
        self.taken += 1
        self.on_command(self.vehicle, list(msg.data))

    def session(self) -> Session | None:
        """Return the session its bridge says is ACTIVE (None: none, or the bridge is gone)."""
        if self.bridge_session is None or \
                self.node.count_publishers(self.lifecycle_topic) == 0:
            return None
        return self.bridge_session

    def publish(self, state: str | None, status: list[float] | None, now: float,
                period: float, respawned: bool = False) -> str:
        """Say the next state on the way to ``state``; say it again once ``period`` passed.

        One state per call, in the interface's order (``mission.states_on_the_way``): the
        latched publisher keeps only its newest sample, so each state skipped within one
        look is said one poll after the other, and a reliable subscriber gets each.
        ``respawned``: a reset put the vehicle back, its states are said from Spawned.
        Publish the status array. Return the state said anew ('' none).
        """
        said = ''
        if respawned:
            self.last_state = None
        if state is not None:
            path = mission.states_on_the_way(self.last_state, state)
            if path:
                said = self.last_state = path[0]
            if said or now - self.said_at >= period:
                for publisher in self.states:
                    publisher.publish(String(data=self.last_state))
                self.said_at = now
        if status is not None:
            for publisher in self.statuses:
                publisher.publish(Float32MultiArray(data=status))
        return said

    def spin(self) -> None:
        """Take what came in its domain (lifecycle, commands), without waiting."""
        for _ in range(MAX_CALLBACKS_PER_POLL):
            before = self.taken
            self.executor.spin_once(timeout_sec=0.0)
            if self.taken == before:
                break

    def close(self) -> None:
        """Destroy the node and shut its context down."""
        import rclpy
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


class SimManager(Node):
    """The management node: topics in the management domain, outlets in vehicle domains."""

    def __init__(self) -> None:
        """Declare the parameters, open the vehicle domains and the management socket."""
        super().__init__(topics.SIM_MANAGER)
        self.params = p = declare(self, PARAMETERS)
        base = p['domain_base'] if p['domain_base'] >= 0 else self.context.get_domain_id()
        self.management = Management(start_mode=p['start_mode'],
                                     countdown_sec=p['countdown_sec'],
                                     control_timeout_sec=p['control_timeout_sec'],
                                     sim_timeout_sec=p['sim_timeout_sec'],
                                     ready_timeout_sec=p['ready_timeout_sec'])
        self.outlets = [VehicleOutlet(k, mission.vehicle_domain(base, k), p['topic_prefix'],
                                      self._mirrors(k), self._on_command)
                        for k in range(1, p['vehicles'] + 1)]
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        self.address = (p['management_host'], p['management_port'])
        self.ranking: dict | None = None
        self.published: dict[str, str] = {}
        self.ended_at: float | None = None
        self.pub = {key: self.create_publisher(String, topics.name(key), topics.qos(key))
                    for key in ('admin/state', 'admin/mission')}
        self.subs = [
            self.create_subscription(Bool, topics.name('admin/start'), self._on_start,
                                     topics.qos('admin/start', reader=True)),
            self.create_subscription(Empty, topics.name('admin/reset'), self._on_reset,
                                     topics.qos('admin/reset', reader=True)),
            self.create_subscription(String, topics.name('admin/ranking'), self._on_ranking,
                                     topics.qos('admin/ranking', reader=True))]
        self.timer = self.create_timer(p['poll_period_sec'], self._poll)
        self.diagnostics = diagnostics.NodeDiagnostics(
            self, f'{self.address[0]}:{self.address[1]}', self._report)
        self.get_logger().info(
            f'managing pylon_sim at {self.address[0]}:{self.address[1]}: management domain '
            f'{base}, vehicles in domains {[o.domain for o in self.outlets]}')

    def _mirrors(self, vehicle: int) -> tuple:
        """Return the management domain's publishers of vehicle k's state and status.

        And of its ``on_collision`` (ground truth: the management domain only).
        """
        k = str(vehicle)
        return (self.create_publisher(String, topics.name('admin/vehicle_state', id=k),
                                      topics.qos('admin/vehicle_state')),
                self.create_publisher(Float32MultiArray,
                                      topics.name('admin/vehicle_status', id=k),
                                      topics.qos('admin/vehicle_status')),
                self.create_publisher(Bool, topics.name('admin/on_collision', id=k),
                                      topics.qos('admin/on_collision')))

    def _report(self) -> diagnostics.Report:
        m = self.management
        state = m.state
        values = {'state': state, 'vehicles': len(self.outlets),
                  'simulator_heard': m.heard is not None, 'start_mode': m.start_mode,
                  'vehicles_ready': sum(m.ready), 'starts_refused': m.refused,
                  **{f'awsim_cmd_{name}': n for name, n in m.commands.items()},
                  'boosts_fired': m.boosts['fired'], 'boosts_refused': m.boosts_refused()}
        if state == mission.TERMINATE:
            return diagnostics.Report(diagnostics.ERROR, f'mission {state}', values)
        if self.management.heard is None:
            return diagnostics.Report(diagnostics.WARN, f'mission {state}: no answer from '
                                      'the simulator yet', values)
        return diagnostics.Report(diagnostics.OK, f'mission {state}', values)

    # -- topics in ----------------------------------------------------------------------------
    def _on_start(self, msg: Bool) -> None:
        if not msg.data:
            self.get_logger().warning('start with data false ignored (true starts)')
            return
        self.management.start()
        self._flush_log()

    def _on_reset(self, _msg: Empty) -> None:
        self.management.reset()
        self.get_logger().info('reset requested')
        self._flush_log()

    def _on_command(self, vehicle: int, data: list[float]) -> None:
        why = self.management.command(vehicle, data)
        if why:
            self.get_logger().warning(
                f'/awsim/cmd of vehicle {vehicle} dropped ({self.management.dropped()} so '
                f'far): {why}; nothing sent', throttle_duration_sec=5.0)

    def _on_ranking(self, msg: String) -> None:
        try:
            ranking = json.loads(msg.data)
            if not isinstance(ranking, dict):
                raise ValueError('not a JSON object')
        except ValueError as exc:
            self.get_logger().warning(f'ranking ignored: {exc}', throttle_duration_sec=5.0)
            return
        self.ranking = ranking

    # -- the poll -------------------------------------------------------------------------------
    def _poll(self) -> None:
        for outlet in self.outlets:
            outlet.spin()
        report = self.management.step(self._replies(), self.ranking, time.monotonic(),
                                      [outlet.session() for outlet in self.outlets])
        for request in report.requests:
            self._send(request)
        self._send({'cmd': 'status'})
        for line in report.log:
            self.get_logger().info(line)
        self._publish('admin/state', report.state)
        if report.mission:
            self._publish('admin/mission', json.dumps(report.mission, sort_keys=True))
        now = time.monotonic()
        for k, outlet in enumerate(self.outlets):
            said = outlet.publish(
                report.vehicle_states[k] if k < len(report.vehicle_states) else None,
                report.status_arrays[k] if k < len(report.status_arrays) else None,
                now, self.params['state_republish_sec'], report.respawned)
            if said:
                self.get_logger().info(f'vehicle {outlet.vehicle} {said}')
            if k < len(report.collided):
                outlet.collision.publish(Bool(data=report.collided[k]))
        self._maybe_exit(report.state)

    def _replies(self) -> dict | None:
        """Return the newest status the simulator sent since the last poll (None: none)."""
        newest = None
        for _ in range(MAX_REPLIES_PER_POLL):
            try:
                data = self.sock.recv(65535)
            except OSError:                  # nothing more (or refused: nobody listens)
                break
            try:
                reply = json.loads(data)
            except ValueError:
                continue
            if reply.get('ok') and 'phase' in reply:
                newest = reply
                if isinstance(reply.get('boost'), dict):
                    self.management.boost_answered(reply['boost'])
            elif not reply.get('ok'):
                self.get_logger().warning(f"pylon_sim refused: {reply.get('error')}")
        return newest

    def _send(self, request: dict) -> None:
        try:
            self.sock.sendto(json.dumps(request).encode(), self.address)
        except OSError as exc:
            self.get_logger().warning(f'cannot reach pylon_sim: {exc}',
                                      throttle_duration_sec=5.0)

    def _publish(self, key: str, text: str) -> None:
        if self.published.get(key) != text:
            self.pub[key].publish(String(data=text))
            self.published[key] = text
            if key == 'admin/state':
                self.get_logger().info(f'state {text}')

    def _flush_log(self) -> None:
        for line in self.management.take_log():
            if 'refused' in line:
                self.get_logger().warning(line)
            else:
                self.get_logger().info(line)

    def _maybe_exit(self, state: str) -> None:
        if not self.params['exit_on_finish'] or state not in mission.FINAL_STATES:
            self.ended_at = None
            return
        now = time.monotonic()
        self.ended_at = self.ended_at or now
        if now - self.ended_at >= self.params['exit_delay_sec']:
            node_main.request_stop()

    def close(self) -> None:
        """Say Terminate, then close the vehicle domains and the socket."""
        self._publish('admin/state', self.management.terminate().state)
        for outlet in self.outlets:
            outlet.close()
        self.sock.close()


def main() -> int:
    """Entry point of ``sim_manager``."""
    return node_main.run(SimManager, SimManager.close)
