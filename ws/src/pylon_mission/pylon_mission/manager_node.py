"""``sim_manager``: the simulator's management in ROS, one node in every domain of a mission.

In the management domain (its own, ``ROS_DOMAIN_ID``; ``domain_base``) it publishes
``/admin/pylon/state`` (``pylon_common.mission.ADMIN_STATES``) and the mission description
``/admin/pylon/mission`` (JSON: task, vehicles, game time), takes ``/admin/pylon/start``
(``std_msgs/Bool``, true) and ``/admin/pylon/reset`` (``std_msgs/Empty``), and reads the
referee's ``/admin/pylon/ranking``. In vehicle k's domain (``domain_base + k``) a node of
its own, in a context of its own, publishes that vehicle's ``/pylon/sim/state``
(``VEHICLE_STATES``) and ``/pylon/sim/status`` (``std_msgs/Float32MultiArray``, the index
table ``STATUS_FIELDS``): nothing else of the mission and nothing of another vehicle.

It talks to ``pylon_sim``'s management port (``pylon_protocol.management``) over UDP
without blocking: every ``poll_period_sec`` it reads the replies that came and asks for the
status again; the decisions are ``management.Management``'s. With ``exit_on_finish`` it
stops ``exit_delay_sec`` after the mission ended (Finish, FinishAll or Terminate), and it
says Terminate when it shuts down. Its status goes on ``/diagnostics`` in the management
domain every second (``pylon_common.diagnostics``, hardware id the simulator's management
address): the mission state, WARN until the simulator answered, ERROR once Terminate.
"""

from __future__ import annotations

import json
import socket
import time

from pylon_common import diagnostics, mission, node_main, topics
from pylon_common.parameters import declare, Parameter
from pylon_protocol import management as wire
from rclpy.node import Node
from std_msgs.msg import Bool, Empty, Float32MultiArray, String

from pylon_mission.management import Management

PARAMETERS: tuple[Parameter, ...] = (
    Parameter('management_host', '127.0.0.1', "address of pylon_sim's management port"),
    Parameter('management_port', wire.MANAGEMENT_PORT, "pylon_sim's management port",
              1, 65535),
    Parameter('vehicles', 1, 'vehicles of the mission: vehicle k runs in domain '
                             'domain_base + k', 1, wire.MAX_VEHICLES),
    Parameter('domain_base', -1, "the management domain (-1: this node's own, "
                                 'ROS_DOMAIN_ID); vehicle k runs in domain_base + k', -1, 231),
    Parameter('poll_period_sec', 0.1, 's between two status requests', 0.01, 5.0),
    Parameter('sim_timeout_sec', 3.0, 's of silence of the simulator (after it answered) '
                                      'that end the management: Terminate', 0.1, 600.0),
    Parameter('autostart', False, 'request the start once every vehicle is Ready'),
    Parameter('ready_timeout_sec', 120.0, 's autostart waits for every vehicle to be Ready '
                                          'before it gives up: Terminate', 1.0, 86400.0),
    Parameter('exit_on_finish', False, 'stop the node once the mission ended (Finish, '
                                       'FinishAll or Terminate): the end of an orchestrated run'),
    Parameter('exit_delay_sec', 2.0, 's the final state is held before exit_on_finish stops '
                                     'the node (subscribers receive it)', 0.0, 60.0),
)
MAX_REPLIES_PER_POLL = 64


class VehicleOutlet:
    """The node of vehicle k in its own domain: its state and status, nothing else."""

    def __init__(self, vehicle: int, domain: int) -> None:
        """Initialise a context on ``domain`` and a node with two publishers in it."""
        import rclpy
        from rclpy.context import Context
        self.vehicle, self.domain = vehicle, domain
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain)
        # a name of its own: the process's other nodes (one per domain) log apart
        self.node = Node(f'{topics.SIM_MANAGER}_vehicle_{vehicle}', context=self.context)
        self.state = self.node.create_publisher(String, topics.name('sim/state'),
                                                topics.qos('sim/state'))
        self.status = self.node.create_publisher(Float32MultiArray, topics.name('sim/status'),
                                                 topics.qos('sim/status'))
        self.last_state: str | None = None

    def publish(self, state: str | None, status: list[float] | None) -> None:
        """Publish the state when it changed, and the status array."""
        if state is not None and state != self.last_state:
            self.state.publish(String(data=state))
            self.last_state = state
        if status is not None:
            self.status.publish(Float32MultiArray(data=status))

    def close(self) -> None:
        """Destroy the node and shut its context down."""
        import rclpy
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


class SimManager(Node):
    """The management node: topics in the management domain, outlets in vehicle domains."""

    def __init__(self) -> None:
        """Declare the parameters, open the vehicle domains and the management socket."""
        super().__init__(topics.SIM_MANAGER)
        self.params = p = declare(self, PARAMETERS)
        base = p['domain_base'] if p['domain_base'] >= 0 else self.context.get_domain_id()
        self.outlets = [VehicleOutlet(k, mission.vehicle_domain(base, k))
                        for k in range(1, p['vehicles'] + 1)]
        self.management = Management(autostart=p['autostart'],
                                     sim_timeout_sec=p['sim_timeout_sec'],
                                     ready_timeout_sec=p['ready_timeout_sec'])
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

    def _report(self) -> diagnostics.Report:
        state = self.management.state
        values = {'state': state, 'vehicles': len(self.outlets),
                  'simulator_heard': self.management.heard is not None}
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
        if self.management.start():
            self.get_logger().info('start requested')
        self._flush_log()

    def _on_reset(self, _msg: Empty) -> None:
        self.management.reset()
        self.get_logger().info('reset requested')
        self._flush_log()

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
        report = self.management.step(self._replies(), self.ranking, time.monotonic())
        for request in report.requests:
            self._send(request)
        self._send({'cmd': 'status'})
        for line in report.log:
            self.get_logger().info(line)
        self._publish('admin/state', report.state)
        if report.mission:
            self._publish('admin/mission', json.dumps(report.mission, sort_keys=True))
        for k, outlet in enumerate(self.outlets):
            outlet.publish(report.vehicle_states[k] if k < len(report.vehicle_states) else
                           None,
                           report.status_arrays[k] if k < len(report.status_arrays) else None)
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
            self.get_logger().warning(line)

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
