"""The fault matrix: the controller flies a slew, a fault hits, what happens and when safe.

``FaultFlight`` starts the flight stack with the fault relay (``faults.Relay``) between
simulator and bridge: ``pylon_sim --rate 1`` (the lean orbit scenario, every packet
checked), ``udp_bridge``, ``attitude_estimator`` and ``setpoint_controller``, with a test
node that streams setpoints (MODE_IDLE to arm, ATTITUDE_HOLD to slew) and reads the
controller's diagnostics. ``run(row)`` flies a slew, injects the row's fault
(``ROWS``), waits for its outcome and returns an ``Outcome`` of what the simulator's audit
and the controller's diagnostics say:

- ``pushing_at_fault``: whether a commanded output acted when the fault hit;
- ``safe_at``: the first frame after the fault in which nothing commanded acted: the frame
  after the last physics step that pushed (the audit's ``pushed_at``), the fault's own
  clock if nothing pushed from it on. A restarted runtime instance has a new control and
  audit: its first frame if it pushed nothing since; a killed simulator's last steps are
  unknowable after SIGKILL, so that row is measured on the restarted simulator's clock,
  counted from its first frame (``counted_from``). ``pushed_before_idle``: the steps that
  pushed from then until the fresh MODE_IDLE;
- the last command the simulator accepted before, whether and why the controller
  disarmed, and whether a setpoint was refused until the fresh MODE_IDLE;
- ``unbacked_steps``: the audit's count of steps that pushed without a live lease and a
  command in force (must stay 0);
- ``kept`` for the rows that keep flying (a degraded network, physics warp): whether the
  controller stayed armed and owned the lease through the window, in how many of its
  physics steps a command was in force and how many pushed (a rate-limited slew coasts
  with exact zeros between its corrections), and how far the slew went toward its target;
- ``armed_at`` and ``flew_again_at``: when the controller was seen armed after the fresh
  MODE_IDLE with nothing pushing, and the first step that pushed after it (the slew again);
- ``rearms``: each disarm the recovery's DETUMBLE met and answered with MODE_IDLE.

The tests assert each row's expectations; ``bench/bench_faults.py`` repeats the rows for
the time to safe. Times come from the simulator's clock (its admin status, the audit's
step clocks); waits are conditions with timeouts.
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
from pylon_sim.loop.admin import request

from pylon_testing import faults
from pylon_testing.node_status import values_of
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
ROOM_FOR_STALLS = {'input_timeout_sec': 1.5, 'setpoint_timeout_sec': 3.0,
                   'lease_duration_sec': 3.0}
"""The controller's supervision given room for a busy machine's stalls (``room=True``).

At real time the controller judges its inputs, its setpoints and its lease on the steady
clock: a test process or a controller that a machine running two suites stalls for half a
second disarms it (``input_stale``) or lets the lease lapse in a row that must keep flying.
With room, three times the default input timeout, setpoint timeout and lease (a lease of
2 s lapsed in loss_10 on a fresh stack, twice, once in a suite alone), a network fault
still trips them (a 5 s partition, a 3 s pause, a dead process), and the rows judge the
cut, which the simulator times with the wrench timeout (kept at its default).
``bench/bench_faults.py`` measures the shipped defaults (no room)."""
FLIGHT_REARMS = 2
"""Times the flight before a fault arms the controller again after a disarm (a stall)."""
DIAGNOSTICS_PERIOD_SEC = 0.1
"""The controller's ``diagnostics_period_sec`` here: the rows read its state (armed, the
lease, refusals) from a fresh report, so each wait costs half a period on average (at the
default 1 s, about 3 s a row)."""
WARM_UP_SEC = 3.0
"""Simulator seconds a new stack holds the controller armed before its first row. A stack
just started shares the machine with its processes' start-up; with the fast reports the
first row would fly into that (a fresh .ci/run saw loss_10, the first row after a fresh
stack, disarm on a stale input)."""
ROWS = ('loss_10', 'loss_30_reorder', 'duplication', 'partition_5s', 'sim_killed',
        'sim_restarted', 'bridge_restarted', 'controller_killed', 'estimator_killed',
        'revert', 'pause', 'physics_warp', 'vessel_switch', 'estop_idle', 'estop_detumble',
        'estop_slew', 'estop_six_dof')
"""Every row of the matrix, in the order the README's table lists them."""


@dataclass
class Outcome:
    """What one row did (clocks: the simulator's, s)."""

    row: str
    fault_at: float                       # simulator clock when the fault was injected
    pushing_at_fault: bool = False        # a commanded output acted when it hit
    last_command_at: float | None = None  # clock of the last wrench accepted before
    safe_at: float | None = None          # first frame with nothing commanded acting
    counted_from: float | None = None     # a restarted simulator's first frame (else fault_at)
    pushed_before_idle: int | None = None  # steps that pushed from safe_at to armed_at
    disarmed: str = ''                    # the controller's disarm reason ('' kept flying)
    unbacked_steps: int = 0               # the simulator's audit (must stay 0)
    refused_before_idle: bool = False     # setpoints refused until the fresh MODE_IDLE
    kept: dict = field(default_factory=dict)  # what a row that keeps flying kept
    armed_at: float | None = None         # armed after the fresh MODE_IDLE, nothing pushing
    flew_again_at: float | None = None    # the first step that pushed after armed_at
    rearms: list = field(default_factory=list)  # (disarm reason, clock) in the recovery
    notes: dict = field(default_factory=dict)

    @property
    def time_to_safe(self) -> float | None:
        """Return s of simulator clock from the fault (or restart) to safe (0: already)."""
        if self.safe_at is None:
            return None
        start = self.fault_at if self.counted_from is None else self.counted_from
        return self.safe_at - start

    @property
    def flew_again(self) -> bool:
        """Tell whether the simulator pushed again after the fresh MODE_IDLE."""
        return self.armed_at is not None and self.flew_again_at is not None and \
            self.flew_again_at >= self.armed_at


class FaultFlight:
    """The flight stack with a fault relay, and a node to fly and watch it."""

    def __init__(self, start: Callable[..., object], take_port: Callable[[], int], node,
                 folder: Path, seed: int = 1, executor=None, room: bool = False) -> None:
        """Start simulator, relay, bridge, estimator and controller; arm nothing yet.

        ``start`` starts a process (the ``ros_process`` fixture, a bench's group), ``node``
        is the watching node, spun by ``executor`` if given (else by a temporary one);
        ``room``: the controller with ``ROOM_FOR_STALLS`` (else its defaults).
        """
        self.start_process, self.take_port, self.node = start, take_port, node
        self.controller_parameters = {'diagnostics_period_sec': DIAGNOSTICS_PERIOD_SEC,
                                      **(ROOM_FOR_STALLS if room else {})}
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
        self.target: tuple[float, ...] | None = None    # the slew's attitude (x, y, z, w)
        self.flight_rearms: list[str] = []    # disarms before the fault (``slew(rearm=)``)

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
            'controller': ['setpoint_controller', '--ros-args', *(
                x for key, value in self.controller_parameters.items()
                for x in ('-p', f'{key}:={value}'))]}[name]

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
        """Return the simulator's control status, with its clock, frames and whether it runs.

        The status is answered at the start of a frame (clock already that frame's), before
        its physics step: the audit's step clocks are at most the previous frame's.
        """
        status = self.stack.status()
        return {**status['control'], **{k: status[k] for k in (
            'clock', 'ut', 'frames', 'paused', 'available')}}

    def diagnostics(self, message: DiagnosticArray | None = None) -> dict:
        """Return the values of a diagnostics message (default the newest; {} before any)."""
        message = message or self.view.last('diag')
        if message is None or not message.status:
            return {}
        return values_of(message.status[0])

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

    def wait_disarmed(self, why: str) -> dict:
        """Return the values of the first fresh report of the controller disarmed."""
        return self.wait_diagnostics(lambda d: d.get('armed') == 'False',
                                     f'the controller disarmed {why}')

    def until(self, condition: Callable[[], bool], what: str, timeout: float = WAIT_SEC):
        """Spin (streaming setpoints) until ``condition()``."""
        self.view.until(condition, what, timeout)

    def _stream(self) -> None:
        if self.setpoint is not None:
            self.setpoint.header.stamp = self.node.get_clock().now().to_msg()
            self.setpoint_pub.publish(self.setpoint)

    @staticmethod
    def is_pushing(control: dict) -> bool:
        """Tell whether a commanded output acted in the latest frame (of ``control()``).

        The status is answered before its frame's physics step: the latest is the frame
        before, and it pushed if the audit's last pushing step is that frame's. A frame
        without physics (paused, the vessel unavailable) pushes nothing.
        """
        pushed = control['pushed_at']
        return pushed is not None and control['clock'] - pushed < 1.5 * TICK_SEC

    def pushing(self) -> dict | None:
        """Return the control status if a commanded output acts now (the slew runs)."""
        control = self.control()
        return control if self.is_pushing(control) else None

    def quiet(self) -> dict | None:
        """Return the control status if nothing commanded acts on the vessel now."""
        control = self.control()
        return None if self.is_pushing(control) else control

    def error_deg(self) -> float | None:
        """Return the angle (degrees) from the newest estimate to the slew's target."""
        odom = self.view.last('odom')
        if odom is None or self.target is None:
            return None
        o = odom.pose.pose.orientation
        dot = abs(sum(a * b for a, b in zip((o.x, o.y, o.z, o.w), self.target)))
        return math.degrees(2.0 * math.acos(min(1.0, dot)))

    # -- flying -----------------------------------------------------------------------------
    def arm(self) -> None:
        """Send MODE_IDLE until the controller owns the lease and is armed."""
        self.setpoint = ControlSetpoint(mode=ControlSetpoint.MODE_IDLE)
        self.setpoint.orientation.w = 1.0
        self.wait_diagnostics(lambda d: d.get('armed') == 'True' and d.get('phase') == 'owned',
                              'the controller armed')

    def slew(self, mode: int = ControlSetpoint.MODE_ATTITUDE_HOLD,
             degrees: float = SLEW_DEG, rearm: bool = False) -> dict:
        """Hold an attitude ``degrees`` about +Z from the estimate; wait until it pushes.

        Return the simulator's control status that saw a step push since the setpoint (a
        short push between two looks included). ``rearm`` (the flight before a fault): a
        controller reported disarmed meanwhile is armed again and the slew sent again, at
        most ``FLIGHT_REARMS`` times, each noted in ``flight_rearms``.
        """
        # the setpoint names the estimate's frame: the controller takes it once it has an
        # estimate (before, it refuses it, and the MODE_IDLE in force times out)
        odom = self.on_estimate()
        o = odom.pose.pose.orientation
        turn = rotations.from_axis_angle((0.0, 0.0, 1.0), math.radians(degrees))
        target = rotations.multiply((o.x, o.y, o.z, o.w), turn)
        setpoint = ControlSetpoint(mode=mode)
        setpoint.header.frame_id = odom.header.frame_id
        q = setpoint.orientation
        q.x, q.y, q.z, q.w = (float(v) for v in target)
        self.target = (q.x, q.y, q.z, q.w)
        for _ in range(FLIGHT_REARMS + 1):
            pushed = self.control()['pushed_steps']
            self.setpoint = setpoint
            seen = self.wait(lambda pushed=pushed: self.pushed_since(pushed) or (
                self.disarmed_now() if rearm else None), 'the slew pushing')
            if 'pushed_steps' in seen:
                return seen
            # a stall before any fault (the controller's inputs late at real time): armed
            # again and noted (``flight_rearms``), the row's fault still to come
            self.flight_rearms.append(seen.get('disarm_reason', ''))
            self.arm()
        raise AssertionError(f'the slew disarmed {FLIGHT_REARMS + 1} times before its push: '
                             f'{self.flight_rearms}')

    def disarmed_now(self) -> dict | None:
        """Return the newest diagnostics if they report the controller disarmed."""
        values = self.diagnostics()
        return values if values.get('armed') == 'False' else None

    def on_estimate(self, armed: bool = False) -> Odometry:
        """Wait for a fresh estimate and a report of the controller reading its frame.

        ``armed``: a report of it armed too. Return the estimate.
        """
        odom = self.view.wait_for('odom', since=self.view.mark(), what='a fresh estimate')
        self.wait_diagnostics(lambda d: d.get('estimate_frame') == odom.header.frame_id
                              and (not armed or d.get('armed') == 'True'),
                              'the controller reading the estimate'
                              + (', armed' if armed else ''))
        return odom

    def pushed_since(self, pushed_steps: int) -> dict | None:
        """Return the control status if a step pushed since it counted ``pushed_steps``."""
        control = self.control()
        return control if control['pushed_steps'] > pushed_steps else None

    def wait(self, probe: Callable[[], dict | None], what: str) -> dict:
        """Spin until ``probe()`` returns a value; return it."""
        found: list[dict] = []

        def seen() -> bool:
            value = probe()
            if value is not None:
                found.append(value)
            return bool(found)
        self.until(seen, what)
        return found[0]

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

    audit_start = 0        # the simulator's unbacked_steps when the row began
    before: dict = {}      # the simulator's control status when the fault hit
    failed = False         # the last row did not end well: what it left is not to be trusted
    fresh_starts = 0       # how often the whole stack started again after a failed row
    warm = False           # the stack has flown its warm-up (``warm_up``)

    def run(self, row: str, at_push: bool = False) -> Outcome:
        """Fly a slew (or the row's phase), inject the row's fault, recover; the outcome.

        ``at_push``: inject it while a commanded output acts (for a row whose check is the
        cut of a push), waiting for the slew's next push if the one seen is over.

        After a row that failed (``failed``: an exception here, or the caller's checks
        said so) the whole stack starts again first, so that one failure stays one.
        """
        if row not in ROWS:
            raise ValueError(f'unknown row {row!r}')
        if self.failed:
            self.fresh()
        self.failed = True            # until the row came through
        self.prepare()
        if not self.warm:
            self.warm_up()
        self.audit_start = self.control()['unbacked_steps']
        self.flight_rearms = []
        self.fly(row)
        before = self.control()
        if at_push and not self.is_pushing(before):
            # the slew's push seen since its setpoint is over (a test process that fell
            # behind; a rate-limited slew coasts with exact zeros): its next push, so that
            # the fault cuts a push (its braking at the latest)
            before = self.wait(self.pushing, 'the slew pushing at the fault')
        outcome = Outcome(row, fault_at=before['clock'], pushing_at_fault=self.is_pushing(before),
                          last_command_at=before['wrench_received_at'],
                          notes={'flight_rearms': list(self.flight_rearms)})
        self.before = before
        self.life_before = self.view.last('life')
        getattr(self, f'_{row}')(outcome)
        self._recover(outcome)
        outcome.unbacked_steps = self.control()['unbacked_steps'] - self.audit_start
        self.failed = False
        return outcome

    def fresh(self) -> None:
        """Start every process of the stack again, the network healed, nothing commanded."""
        self.relay.heal()
        self.setpoint = None
        for name in ('controller', 'estimator', 'bridge', 'sim'):
            if self.processes[name].popen.poll() is None:
                self.kill(name)
        for name in ('sim', 'bridge', 'estimator', 'controller'):
            self.restart(name)
        self.fresh_starts += 1
        self.warm = False

    def warm_up(self) -> None:
        """Hold the controller armed for ``WARM_UP_SEC`` of simulator time, on estimates.

        The vessel stays still (MODE_IDLE), as the rows expect it at their start.
        """
        self.arm()
        start = self.control()['clock']
        self.until(lambda: self.control()['clock'] - start >= WARM_UP_SEC, 'the warm-up')
        self.on_estimate(armed=True)
        self.warm = True

    def fly(self, row: str) -> None:
        """Put the controller in the phase the row's fault hits (a slew unless e-stop)."""
        self.arm()
        if row == 'estop_idle':
            return
        if row == 'estop_six_dof':
            self.slew(ControlSetpoint.MODE_SIX_DOF, rearm=True)
            return
        self.slew(rearm=True)
        if row == 'estop_detumble':          # braking a real rotation
            self.setpoint = ControlSetpoint(mode=ControlSetpoint.MODE_DETUMBLE)
            self.setpoint.orientation.w = 1.0
            self.until(self.pushing, 'the detumble pushing')

    def _safe(self, outcome: Outcome, what: str, audit_from: float | None = None) -> dict:
        """Wait until nothing commanded acts; note from which frame (the audit's clocks).

        That is the frame after the last step that pushed: a physics step that pushed
        nothing, or a frame without physics (paused). ``audit_from``: the first frame of a
        control restarted after the fault (a new audit), if one was. Return the control
        status seen quiet.
        """
        control = self.wait(self.quiet, what)
        start = outcome.fault_at if outcome.counted_from is None else outcome.counted_from
        start = start if audit_from is None else audit_from
        pushed = control['pushed_at']
        after = pushed + TICK_SEC if pushed is not None else None
        outcome.safe_at = after if after is not None and after > start else start
        outcome.last_command_at = control['wrench_received_at']   # the last one before
        outcome.notes['pushed_steps_at_safe'] = control['pushed_steps']
        return control

    def _keep_flying(self, outcome: Outcome, what: str) -> dict:
        """Fly through ``DEGRADED_SEC`` of the fault; note what the flight kept.

        Return the values of the controller's newest report from before the fault (the
        caller ends the fault, then ``_kept`` compares a report from after).
        """
        before = self.diagnostics()
        outcome.kept['error_deg'] = [self.error_deg()]
        start = self.before
        end = outcome.fault_at + DEGRADED_SEC
        owners: set = set()

        def over() -> bool:
            control = self.control()
            owners.add(tuple(control['owner'] or ()))
            return control['clock'] >= end
        self.until(over, what)
        control = self.control()
        outcome.kept['error_deg'].append(self.error_deg())
        outcome.kept['window_s'] = control['clock'] - outcome.fault_at
        # the physics steps from the fault's status to this one (each answers before its
        # frame's step), those with a command in force, those that pushed
        for key, name in (('steps', 'frames'), ('commanded_steps', 'commanded_steps'),
                          ('pushed_steps', 'pushed_steps')):
            outcome.kept[key] = control[name] - start[name]
        outcome.kept['last_push_at'] = control['pushed_at']
        outcome.kept['owners'] = sorted(owners)
        return before

    def _kept(self, outcome: Outcome, before: dict) -> None:
        """Note whether the controller stayed armed and owned the lease through the window.

        A disarm lasts until a MODE_IDLE (none was sent) and a lease lost counts in
        ``leases_lost``: a report from after the window says whether either happened.
        """
        after = self.wait_diagnostics(lambda d: True, 'a report after the window')

        def flying(values: dict) -> bool:
            return values.get('armed') == 'True' and values.get('phase') == 'owned'
        outcome.kept['leases_lost'] = int(after['leases_lost']) - int(before['leases_lost'])
        outcome.kept['armed_through'] = flying(before) and flying(after) and \
            outcome.kept['leases_lost'] == 0

    def _degraded(self, outcome: Outcome, faults_in_force: faults.Faults) -> None:
        self.relay.set(faults_in_force)
        before = self._keep_flying(outcome, 'the degraded network')
        self.relay.heal()
        self._kept(outcome, before)
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
        # the killed simulator's last steps are unknowable after SIGKILL: its audit counts
        # up to just before; the restarted one is measured from its first frame
        killed = self.control()
        self.kill('sim')
        self.restart('sim')
        self.audit_start -= killed['unbacked_steps']     # carried over to the new count
        first = self.control()
        outcome.counted_from = first['clock'] - (first['frames'] - 1) * TICK_SEC
        outcome.notes['killed_at'] = killed['clock']
        self._safe(outcome, 'nothing pushing on the restarted simulator')
        self.new_generation('the restarted simulator')

    def _sim_restarted(self, outcome: Outcome) -> None:
        # a new runtime instance has a new control: the old one's audit counts up to the
        # fault's status (the frames until the restart are unknowable), the new one from
        # the frame that restarted (the reply's)
        restarted = self.stack.admin('restart')
        self.audit_start -= self.before['unbacked_steps']
        outcome.notes['restarted_at'] = restarted['clock']
        self._safe(outcome, 'the output cut by the new runtime session',
                   audit_from=restarted['clock'])
        self.new_generation('the new runtime session')

    def _bridge_restarted(self, outcome: Outcome) -> None:
        self.kill('bridge')
        self._safe(outcome, 'the output cut without a bridge')
        # the bridge comes back after the controller judged its inputs gone, whatever its
        # input timeout: a restart quicker than that is another row
        self.wait_disarmed('without a bridge')
        # nothing renews the lease without a bridge: it lapses on the simulator's side
        # before the bridge comes back, however long it is, so that the recovery starts
        # from a fresh acquisition (a lease outliving a quick restart lapsed in the
        # recovery's DETUMBLE)
        self.until(lambda: not self.control()['owner'], 'the lease lapsed without a bridge')
        since = self.view.mark()
        self.restart('bridge')
        self.view.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE, since,
                           "the restarted bridge's lifecycle")

    def _controller_killed(self, outcome: Outcome) -> None:
        self.kill('controller')
        self._safe(outcome, 'the output cut without a controller')
        self.restart('controller')

    def _estimator_killed(self, outcome: Outcome) -> None:
        # the controller flies on its last estimate until the input timeout: a quiet frame
        # before it (a rate-limited slew coasts with exact zeros) is not the cut
        self.kill('estimator')
        self.wait_disarmed('without an estimate')
        self._safe(outcome, 'the output cut without an estimate')
        self.restart('estimator')

    def _revert(self, outcome: Outcome) -> None:
        self.stack.admin('revert')
        self._safe(outcome, 'the output cut by the revert')
        self.new_generation('the revert')

    def _pause(self, outcome: Outcome) -> None:
        self.stack.admin('pause')
        paused = self._safe(outcome, 'the game paused')
        clock = paused['clock']
        self.until(lambda: self.control()['clock'] >= clock + 3.0, '3 s of pause')
        control = self.control()
        outcome.notes['pushed_while_paused'] = control['pushed_steps'] - paused['pushed_steps']
        self.stack.admin('resume')

    def _physics_warp(self, outcome: Outcome) -> None:
        self.stack.admin('warp', rate=2, mode='physics')
        before = self._keep_flying(outcome, 'the warp')
        self.stack.admin('warp', rate=1, mode='physics')
        self._kept(outcome, before)

    def _vessel_switch(self, outcome: Outcome) -> None:
        self.stack.admin('switch', vessel='target')
        self._safe(outcome, 'the output cut by the switch')
        self.until(lambda: self.view.last('life').vessel_name == 'Target Station',
                   'the target active')
        self.stack.admin('switch', vessel='sat')
        self.until(lambda: self.view.last('life').vessel_name == self.life_before.vessel_name,
                   'the sat active again')

    def new_generation(self, what: str) -> None:
        """Wait until this node sees the vessel ACTIVE in a generation after the fault's."""
        def seen() -> bool:
            life = self.view.last('life')
            return life.generation != self.life_before.generation and \
                life.state == VesselLifecycle.STATE_ACTIVE
        self.until(seen, f'a new generation after {what}')

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
        """Note a disarm; check flying is refused until MODE_IDLE; detumble, fly again.

        After the fresh MODE_IDLE: the clock once armed with nothing pushing, the steps
        that pushed since safe, and the first step that pushed after (the slew again).
        """
        # a report from a controller that already knows the generation this node knows: the
        # rows that change it wait until this node sees the new one, so that a report sent
        # before the controller learnt of it does not pass for its answer
        diagnostics = self.wait_diagnostics(
            lambda d: d.get('phase') == 'owned'
            and d.get('generation') == str(self.view.last('life').generation),
            'the lease again')
        if diagnostics.get('armed') == 'False':
            outcome.disarmed = diagnostics.get('disarm_reason') or 'disarmed'
            refused = int(diagnostics.get('setpoints_refused', 0))
            self.setpoint = ControlSetpoint(mode=ControlSetpoint.MODE_DETUMBLE)
            self.setpoint.orientation.w = 1.0
            # the DETUMBLE refused as not armed, or taken (armed: the check fails). A slew
            # streamed before it can be refused first for another reason: a restarted
            # controller without an estimate yet does not know the slew's frame
            # (unsupported_frame), which says nothing about arming
            after = self.wait_diagnostics(
                lambda d: d.get('armed') == 'True' or (
                    int(d.get('setpoints_refused', 0)) > refused
                    and d.get('last_refusal') == 'not_armed_send_idle'),
                'the DETUMBLE refused as not armed, or taken')
            quiet = self.quiet() is not None
            # what the check rests on, shown in the outcome when it fails
            outcome.notes['refusal'] = (after.get('last_refusal'), after.get('armed'), quiet)
            outcome.refused_before_idle = (after.get('last_refusal') == 'not_armed_send_idle'
                                           and after.get('armed') == 'False' and quiet)
        self.arm()
        armed = self.wait(self.quiet, 'nothing pushing in MODE_IDLE')
        outcome.armed_at = armed['clock']
        if outcome.safe_at is not None:
            outcome.pushed_before_idle = (armed['pushed_steps']
                                          - outcome.notes['pushed_steps_at_safe'])
        self.detumble(outcome)
        flying = self.slew()
        # the first step of the push going on, or the last of one already over: after
        # armed_at either way (nothing pushed then, and the count rose since)
        outcome.flew_again_at = flying['pushing_since'] or flying['pushed_at']

    def detumble(self, outcome: Outcome) -> None:
        """Brake the rotation a cut left (DETUMBLE, on the IMU) until the estimate is back.

        A vessel cut off mid-slew keeps turning; above the star tracker's slew limit the
        tracker is blind, so a restarted estimator cannot initialise until it is braked.
        A disarm on the way is answered as an operator would (MODE_IDLE until armed, then
        DETUMBLE again) and noted in ``outcome.rearms`` (reason, clock).
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
            diagnostics = self.diagnostics()
            armed = diagnostics.get('armed')
            if armed == 'False' and self.setpoint is detumble:
                outcome.rearms.append((diagnostics.get('disarm_reason') or 'disarmed',
                                       self.control()['clock']))
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
