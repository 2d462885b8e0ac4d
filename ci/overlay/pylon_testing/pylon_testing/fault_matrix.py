"""The fault matrix: the controller flies a slew, a fault hits, what happens and when safe.

``FaultFlight`` starts the flight stack with the fault relay (``faults.Relay``) between
simulator and bridge: ``pylon_sim --rate 1`` (the lean orbit scenario, every packet
checked), ``udp_bridge``, ``attitude_estimator`` and ``setpoint_controller``, with a test
node that streams setpoints (MODE_IDLE to arm, ATTITUDE_HOLD to slew) and reads the
controller's diagnostics. ``run(row)`` flies a slew, injects the row's fault
(``ROWS``), waits for its outcome and returns an ``Outcome``: the simulator clock of the
fault, when nothing commanded acted any more (``safe_at``, polled from the simulator's
control status), the last command the simulator accepted before, whether the controller
disarmed, whether the audit of the simulator (``unbacked_steps``: a step that pushed
without a live lease and a command in force) stayed 0, and whether the controller flew
again after a fresh MODE_IDLE (and not before). The tests assert each row's expectations;
``bench/bench_faults.py`` repeats the rows for the time to safe.

Times asserted come from the simulator's clock (its admin status); waits are conditions
with timeouts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
import math
from pathlib import Path
import signal

from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from pylon_common import topics
from pylon_interfaces.msg import ControlAuthorityCommand, ControlSetpoint, VesselLifecycle
from pylon_protocol import rotations
from pylon_sim.admin import request

from pylon_testing import faults
from pylon_testing.recorder import TopicRecorder
from pylon_testing.scenarios import write_scenario
from pylon_testing.stack import SimStack

SETPOINT_PERIOD_SEC = 0.2
SLEW_DEG = 30.0
TICK_SEC = 0.02
WRENCH_TIMEOUT_SEC = 0.5            # setpoint_controller's wrench_timeout_sec (default)
WAIT_SEC = 60.0
STILL_DEG_S = 0.5                   # a vessel turning slower than this counts as still
ADMIN_TIMEOUT_SEC = 0.5
ROWS = ('loss_10', 'loss_30_reorder', 'duplication', 'partition_5s', 'sim_killed',
        'sim_restarted', 'bridge_restarted', 'controller_killed', 'estimator_killed',
        'revert', 'pause', 'physics_warp', 'vessel_switch', 'estop_idle', 'estop_detumble',
        'estop_slew', 'estop_six_dof')
"""Every row of the matrix, in the order the README's table lists them."""


@dataclass
class Outcome:
    """What one row did."""

    row: str
    fault_at: float                       # simulator clock when the fault was injected
    last_command_at: float | None = None  # clock of the last wrench accepted before
    safe_at: float | None = None          # clock from which nothing commanded acted
    disarmed: str = ''                    # the controller's disarm reason ('' kept flying)
    unbacked_steps: int = 0               # the simulator's audit (must stay 0)
    refused_before_idle: bool = False     # setpoints refused until the fresh MODE_IDLE
    flew_again: bool = False
    notes: dict = field(default_factory=dict)

    @property
    def time_to_safe(self) -> float | None:
        """Return s of simulator clock from the fault to safe (0 if already safe)."""
        if self.safe_at is None:
            return None
        return max(0.0, self.safe_at - self.fault_at)


class FaultFlight:
    """The flight stack with a fault relay, and a node to fly and watch it."""

    def __init__(self, start: Callable[..., object], take_port: Callable[[], int], node,
                 folder: Path, seed: int = 1, executor=None) -> None:
        """Start simulator, relay, bridge, estimator and controller; arm nothing yet.

        ``start`` starts a process (the ``ros_process`` fixture, a bench's group), ``node``
        is the watching node, spun by ``executor`` if given (else by a temporary one).
        """
        self.start_process, self.take_port, self.node = start, take_port, node
        self.scenario = write_scenario(folder, 'orbit')
        self.bridge_port, sim_command = take_port(), take_port()
        self.relay = faults.Relay(('127.0.0.1', self.bridge_port), ('127.0.0.1', sim_command),
                                  seed=seed)
        self.stack = SimStack(self.relay.state_port, sim_command, take_port())
        self.processes: dict = {}
        for name in ('sim', 'bridge', 'estimator', 'controller'):
            self.restart(name)
        self.view = TopicRecorder(node, executor)
        self.view.add('diag', topics.resolved('controller/diagnostics',
                                              topics.SETPOINT_CONTROLLER),
                      DiagnosticArray, topics.qos('controller/diagnostics', reader=True))
        self.view.add('odom', topics.resolved('odometry', topics.ATTITUDE_ESTIMATOR),
                      Odometry, topics.qos('odometry', reader=True))
        self.view.add('life', topics.name('lifecycle'), VesselLifecycle,
                      topics.qos('lifecycle', reader=True))
        self.setpoint: ControlSetpoint | None = None
        self.setpoint_pub = node.create_publisher(
            ControlSetpoint, topics.resolved('setpoint', topics.SETPOINT_CONTROLLER),
            topics.qos('setpoint'))
        self.authority_pub = node.create_publisher(
            ControlAuthorityCommand, topics.name('control/authority/command'),
            topics.qos('control/authority/command'))
        self.timer = node.create_timer(SETPOINT_PERIOD_SEC, self._stream)
        self.estop_sequence = 0

    def commands(self, name: str) -> list[str]:
        """Return the command line of one of the stack's processes."""
        return {
            'sim': ['pylon_sim', '--scenario', self.scenario, '--rate', '1',
                    '--state-port', str(self.relay.state_port),
                    '--command-port', str(self.stack.command_port),
                    '--admin-port', str(self.stack.admin_port), '--check-packets'],
            'bridge': ['udp_bridge', '--host', '127.0.0.1', '--port', str(self.bridge_port),
                       '--command-port', str(self.relay.command_port)],
            'estimator': ['attitude_estimator'],
            'controller': ['setpoint_controller']}[name]

    def restart(self, name: str) -> None:
        """Start (again) one process of the stack (the simulator: until it answers)."""
        self.processes[name] = self.start_process(self.commands(name), name=name)
        if name == 'sim':
            for _ in range(int(WAIT_SEC / ADMIN_TIMEOUT_SEC)):
                try:
                    request(self.stack.admin_port, {'cmd': 'status'},
                            timeout=ADMIN_TIMEOUT_SEC)
                    return
                except TimeoutError:      # not bound yet: the request was lost
                    self.processes[name].check()
            raise TimeoutError('the simulator never answered its admin port')

    def kill(self, name: str) -> None:
        """SIGKILL one process of the stack and wait for its end."""
        process = self.processes[name]
        process.popen.send_signal(signal.SIGKILL)
        process.wait(timeout=10.0)

    # -- watching ---------------------------------------------------------------------------
    def control(self) -> dict:
        """Return the simulator's control status, with its clock."""
        status = self.stack.status()
        return {**status['control'], 'clock': status['clock'], 'ut': status['ut']}

    def diagnostics(self, message: DiagnosticArray | None = None) -> dict:
        """Return the values of a diagnostics message (default the newest; {} before any)."""
        message = message or self.view.last('diag')
        if message is None or not message.status:
            return {}
        return {kv.key: kv.value for kv in message.status[0].values}

    def wait_diagnostics(self, predicate: Callable[[dict], bool], what: str) -> dict:
        """Return the values of the first diagnostics sent from now on that ``predicate`` takes.

        "From now on" is the controller's stamp against this node's clock (both the system
        clock): a report the controller sent before now but that arrives only now (the node
        did not spin while a process restarted) says what it thought before.
        """
        since, now = self.view.mark(), self.node.get_clock().now().nanoseconds

        def fresh(message: DiagnosticArray) -> bool:
            stamp = message.header.stamp
            return stamp.sec * 10**9 + stamp.nanosec >= now and \
                predicate(self.diagnostics(message))
        return self.diagnostics(self.view.wait_for('diag', fresh, since, what))

    def until(self, condition: Callable[[], bool], what: str, timeout: float = WAIT_SEC):
        """Spin (streaming setpoints) until ``condition()``."""
        self.view.until(condition, what, timeout)

    def _stream(self) -> None:
        if self.setpoint is not None:
            self.setpoint.header.stamp = self.node.get_clock().now().to_msg()
            self.setpoint_pub.publish(self.setpoint)

    def pushing(self) -> bool:
        """Tell whether the simulator applies a commanded torque now (the slew runs)."""
        control = self.control()
        return any(abs(v) > 1e-6 for v in control['applied_torque'])

    def quiet(self) -> float | None:
        """Return the clock if nothing commanded acts on the vessel now, else None."""
        control = self.control()
        zero = not any(control['applied_force']) and not any(
            a - s for a, s in zip(control['applied_torque'], control['sas_torque']))
        return control['clock'] if zero else None

    # -- flying -----------------------------------------------------------------------------
    def arm(self) -> None:
        """Send MODE_IDLE until the controller owns the lease and is armed."""
        self.setpoint = ControlSetpoint(mode=ControlSetpoint.MODE_IDLE)
        self.setpoint.orientation.w = 1.0
        self.wait_diagnostics(lambda d: d.get('armed') == 'True' and d.get('phase') == 'owned',
                              'the controller armed')

    def slew(self, mode: int = ControlSetpoint.MODE_ATTITUDE_HOLD,
             degrees: float = SLEW_DEG) -> None:
        """Hold an attitude ``degrees`` about +Z from the estimate; wait until it pushes."""
        odom = self.view.wait_for('odom', since=self.view.mark(), what='a fresh estimate')
        o = odom.pose.pose.orientation
        turn = rotations.from_axis_angle((0.0, 0.0, 1.0), math.radians(degrees))
        target = rotations.multiply((o.x, o.y, o.z, o.w), turn)
        setpoint = ControlSetpoint(mode=mode)
        setpoint.header.frame_id = odom.header.frame_id
        q = setpoint.orientation
        q.x, q.y, q.z, q.w = (float(v) for v in target)
        self.setpoint = setpoint
        self.until(self.pushing, 'the slew pushing')

    def emergency_stop(self, action: int) -> None:
        """Send an e-stop (or its clearing) as the safety officer of the tests."""
        self.estop_sequence += 1
        self.authority_pub.publish(ControlAuthorityCommand(
            action=action, vessel_id=self.view.last('life').vessel_id,
            controller_id='safety_officer', lease_id='estop', priority=0,
            lease_duration_sec=1.0, sequence=self.estop_sequence))

    def close(self) -> None:
        """Stop the relay (the processes end with their group)."""
        self.relay.close()


# -- the rows -------------------------------------------------------------------------------
A = ControlAuthorityCommand
DEGRADED_SEC = 5.0                # how long a degraded network lasts (simulator clock)


class Matrix(FaultFlight):
    """``FaultFlight`` with the rows: ``run(row)`` flies, injects, watches, recovers."""

    def run(self, row: str) -> Outcome:
        """Fly a slew (or the row's phase), inject the row's fault, recover; the outcome."""
        if row not in ROWS:
            raise ValueError(f'unknown row {row!r}')
        self.prepare()
        audit = self.control()['unbacked_steps']
        self.fly(row)
        before = self.control()
        outcome = Outcome(row, fault_at=before['clock'],
                          last_command_at=before['wrench_received_at'])
        getattr(self, f'_{row}')(outcome)
        self._recover(outcome)
        outcome.unbacked_steps = self.control()['unbacked_steps'] - audit
        return outcome

    def fly(self, row: str) -> None:
        """Put the controller in the phase the row's fault hits (a slew unless e-stop)."""
        self.arm()
        if row == 'estop_idle':
            return
        if row == 'estop_six_dof':
            self.slew(ControlSetpoint.MODE_SIX_DOF)
            return
        self.slew()
        if row == 'estop_detumble':          # braking a real rotation
            self.setpoint = ControlSetpoint(mode=ControlSetpoint.MODE_DETUMBLE)
            self.setpoint.orientation.w = 1.0
            self.until(self.pushing, 'the detumble pushing')

    def _safe(self, outcome: Outcome, what: str) -> None:
        """Wait until nothing commanded acts; note when (the simulator's own clock)."""
        found: list[float] = []

        def quiet() -> bool:
            clock = self.quiet()
            if clock is not None:
                found.append(clock)
            return bool(found)
        self.until(quiet, what)
        control = self.control()
        zeroed = control['zeroed_at']
        exact = zeroed is not None and zeroed >= outcome.fault_at - TICK_SEC
        outcome.safe_at = zeroed if exact else found[0]
        outcome.last_command_at = control['wrench_received_at']   # the last one before

    def _degraded(self, outcome: Outcome, faults_in_force: faults.Faults) -> None:
        self.relay.set(faults_in_force)
        end = outcome.fault_at + DEGRADED_SEC
        self.until(lambda: self.control()['clock'] >= end, 'the degraded network')
        self.relay.heal()
        outcome.notes['relay'] = dict(self.relay.stats)

    def _loss_10(self, outcome: Outcome) -> None:
        self._degraded(outcome, faults.Faults(loss=0.1))

    def _loss_30_reorder(self, outcome: Outcome) -> None:
        self._degraded(outcome, faults.Faults(loss=0.3, reorder=0.2, reorder_delay=0.05))

    def _duplication(self, outcome: Outcome) -> None:
        self._degraded(outcome, faults.Faults(duplicate=1.0))

    def _partition_5s(self, outcome: Outcome) -> None:
        self.relay.partition(5.0)
        self._safe(outcome, 'the output cut during the partition')
        self.until(lambda: not self.relay.partitioned, 'the partition over')

    def _sim_killed(self, outcome: Outcome) -> None:
        self.kill('sim')
        outcome.safe_at = outcome.fault_at          # no simulator, nothing acts
        self.restart('sim')

    def _sim_restarted(self, outcome: Outcome) -> None:
        self.stack.admin('restart')
        self._safe(outcome, 'the output cut by the new runtime session')

    def _bridge_restarted(self, outcome: Outcome) -> None:
        self.kill('bridge')
        self._safe(outcome, 'the output cut without a bridge')
        self.restart('bridge')

    def _controller_killed(self, outcome: Outcome) -> None:
        self.kill('controller')
        self._safe(outcome, 'the output cut without a controller')
        self.restart('controller')

    def _estimator_killed(self, outcome: Outcome) -> None:
        self.kill('estimator')
        self._safe(outcome, 'the output cut without an estimate')
        self.restart('estimator')

    def _revert(self, outcome: Outcome) -> None:
        self.stack.admin('revert')
        self._safe(outcome, 'the output cut by the revert')

    def _pause(self, outcome: Outcome) -> None:
        self.stack.admin('pause')
        outcome.safe_at = outcome.fault_at          # a paused game applies nothing
        clock = self.control()['clock']
        self.until(lambda: self.control()['clock'] >= clock + 3.0, '3 s of pause')
        self.stack.admin('resume')

    def _physics_warp(self, outcome: Outcome) -> None:
        self.stack.admin('warp', rate=2, mode='physics')
        end = outcome.fault_at + DEGRADED_SEC
        self.until(lambda: self.control()['clock'] >= end, 'the warp')
        self.stack.admin('warp', rate=1, mode='physics')

    def _vessel_switch(self, outcome: Outcome) -> None:
        self.stack.admin('switch', vessel='target')
        self._safe(outcome, 'the output cut by the switch')
        self.until(lambda: self.view.last('life').vessel_name == 'Target Station',
                   'the target active')
        self.stack.admin('switch', vessel='sat')

    def _estop(self, outcome: Outcome) -> None:
        self.emergency_stop(A.ACTION_EMERGENCY_STOP)
        self._safe(outcome, 'the output cut by the emergency stop')
        self.until(lambda: self.control()['emergency_stop'], 'the stop latched')
        self.wait_diagnostics(lambda d: d.get('phase') != 'owned', 'the controller unleased')
        self.clear_emergency_stop()

    def clear_emergency_stop(self) -> None:
        """Clear a latched e-stop (as the safety officer) and wait until it is."""
        self.emergency_stop(A.ACTION_CLEAR_EMERGENCY_STOP)
        self.until(lambda: not self.control()['emergency_stop'], 'the stop cleared')

    _estop_idle = _estop_detumble = _estop_slew = _estop_six_dof = _estop

    def _recover(self, outcome: Outcome) -> None:
        """Note a disarm; check flying is refused until MODE_IDLE; detumble, fly again."""
        diagnostics = self.wait_diagnostics(lambda d: d.get('phase') == 'owned',
                                            'the lease again')
        if diagnostics.get('armed') == 'False':
            outcome.disarmed = diagnostics.get('disarm_reason') or 'disarmed'
            refused = int(diagnostics.get('setpoints_refused', 0))
            self.setpoint = ControlSetpoint(mode=ControlSetpoint.MODE_DETUMBLE)
            self.setpoint.orientation.w = 1.0
            after = self.wait_diagnostics(
                lambda d: int(d.get('setpoints_refused', 0)) > refused, 'the setpoint refused')
            outcome.refused_before_idle = (after.get('last_refusal') == 'not_armed_send_idle'
                                           and after.get('armed') == 'False'
                                           and self.quiet() is not None)
        self.arm()
        self.detumble()
        self.slew()
        outcome.flew_again = True

    def detumble(self) -> None:
        """Brake the rotation a cut left (DETUMBLE, on the IMU) until the estimate is back.

        A vessel cut off mid-slew keeps turning; above the star tracker's slew limit the
        tracker is blind, so a restarted estimator cannot initialise until it is braked.
        """
        detumble = ControlSetpoint(mode=ControlSetpoint.MODE_DETUMBLE)
        idle = ControlSetpoint(mode=ControlSetpoint.MODE_IDLE)
        detumble.orientation.w = idle.orientation.w = 1.0
        self.setpoint = detumble
        since = self.view.mark()

        def still(odom: Odometry) -> bool:
            w = odom.twist.twist.angular
            return math.degrees(math.sqrt(w.x ** 2 + w.y ** 2 + w.z ** 2)) < STILL_DEG_S

        def braked() -> bool:
            # a disarm on the way (an estimate starved on a busy machine) is answered as an
            # operator would: MODE_IDLE until armed, then DETUMBLE again
            armed = self.diagnostics().get('armed')
            if armed == 'False':
                self.setpoint = idle
            elif armed == 'True' and self.setpoint is idle:
                self.setpoint = detumble
            return self.setpoint is detumble and any(
                still(m) for m in self.view.messages('odom', since))
        self.until(braked, 'an estimate of a still vessel')

    def prepare(self) -> None:
        """Undo what a failed row may have left: dead processes, a latched e-stop."""
        for name, process in list(self.processes.items()):
            if process.popen.poll() is not None:
                self.restart(name)
        if self.control()['emergency_stop']:
            self.clear_emergency_stop()
