"""kart_interface driving the kart: pylon_sim -> udp_bridge -> kart_interface, end to end.

The test node plays a team's stack: it requests the control mode (the service and the
topic), streams ``control_cmd`` (one per ``velocity_status`` the interface publishes, so
the stream keeps the interface's pace on game time), shifts gears, and judges the kart on
the simulator's ground truth (the interface never reads it). Every time it asserts on is
game time, from message stamps.

One simulator + bridge (the lean ``kart`` scenario: no LiDAR or camera) and one
``kart_interface`` for the module; the simulator at ``RATE`` x real time, lock-stepped to
the interface's wheel commands (``--lockstep-lead``), the interface on game time. Each test
starts from the scenario's start in a runtime session of its own (``session``) and ends
MANUAL.
"""

import math

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
from geometry_msgs.msg import TwistStamped
import numpy as np
from pylon_common import topics
from pylon_interfaces.msg import (
    ControlAuthorityCommand,
    ControlAuthorityState,
    VesselLifecycle,
    WheelCommand,
    WheelState,
)
from pylon_kart.interface_params import lease_for_rate
from pylon_testing.node_status import values_of
from pylon_testing.pilot import acquire, COMMAND, LATCHED, Pilot, send_authority, STREAM
from pylon_testing.recorder import stamp_of, TopicRecorder
from pylon_testing.scenarios import write_scenario
import pytest
from std_msgs.msg import Bool
from tier4_vehicle_msgs.msg import ActuationStatusStamped

pytestmark = pytest.mark.integration

KART = '4b415254000000000000000000000001'
RATE = 2
"""x real time. At 4 the interface (a 50 Hz loop on game time: 200 Hz of wall time) fell
behind a simulator fast enough to keep that pace, so the lock-step ran the game its full
lead past each command and the kart's speed control lagged (an acceleration of 2 m/s²
measured 1.64); before the wheels' arithmetic got cheaper the simulator itself ran at
about 2x here."""
LEAD = 0.06
"""Game s the simulator runs past the interface's last wheel command: three control steps."""
LOCKSTEP_WAIT = 5.0
"""Wall s a frame waits for the interface's next wheel command before the game runs free:
room for a process a busy machine stalls (pylon_sim's default is 1)."""
TIMEOUT = 1.0 * RATE
"""Game s without a command before the interface stops the kart: a second of wall time at
RATE (the default is 0.5 s). This test's command stream is paced by its own process, which
a busy machine stalls: with half a second of room a stall cut an acceleration short."""
WHEELBASE, REAR_AXLE = 1.05, 0.4503  # m; the rear axle behind the centre of mass


@pytest.fixture(scope='module')
def stack(module_sim_stack, tmp_path_factory):
    """Return the module's simulator and bridge: the lean kart, lock-stepped, with /clock."""
    return module_sim_stack(write_scenario(tmp_path_factory.mktemp('scenario'), 'kart'),
                            bridge_args=('--publish-clock',),
                            sim_args=('--rate', str(RATE), '--lockstep-lead', str(LEAD),
                                      '--lockstep-wait', str(LOCKSTEP_WAIT)))


@pytest.fixture(scope='module')
def interface(stack, module_ros_process):
    """Start the module's kart_interface on game time."""
    # room for a busy machine: the mod's lease runs on its wall clock (a stall of a second
    # must not cost it), and the command timeout on game time, RATE x the wall's (this
    # test's command stream, paced by the interface's statuses, may fall that far behind)
    return module_ros_process(['kart_interface', '--ros-args', '-p', 'use_sim_time:=true',
                               '-p', f'lease_duration_sec:={lease_for_rate(RATE)}',
                               '-p', f'command_timeout_sec:={TIMEOUT}'],
                              name='kart_interface')


@pytest.fixture
def ros_node(shared_ros_node):
    """Return the module's test node (``shared_ros_node``), in the shared stack's domain."""
    return shared_ros_node


class Team:
    """A team's stack, as small as a test needs: mode, gears, a control_cmd stream."""

    def __init__(self, node):
        self.node = node
        self.rec = rec = TopicRecorder(node)
        for name, key, msg_type, qos in (
                ('mode', 'kart/control_mode', ControlModeReport, LATCHED),
                ('gear', 'kart/gear_status', GearReport, LATCHED),
                ('velocity', 'kart/velocity_status', VelocityReport, COMMAND),
                ('steering', 'kart/steering_status', SteeringReport, COMMAND),
                ('actuation', 'kart/actuation_status', ActuationStatusStamped, COMMAND)):
            rec.add(name, topics.name(key), msg_type, qos)
        rec.add('diag', '/kart_interface/diagnostics', DiagnosticArray, COMMAND)
        rec.add('truth', topics.name('ground_truth/twist_body'), TwistStamped, STREAM)
        rec.add('authority', topics.name('control/authority/state'), ControlAuthorityState,
                LATCHED)
        rec.add('wheels', topics.name('actuators/wheel/command'), WheelCommand, COMMAND)
        self.control_pub = node.create_publisher(AckermannControlCommand,
                                                 topics.name('kart/control_cmd'), 1)
        self.gear_pub = node.create_publisher(GearCommand, topics.name('kart/gear_cmd'),
                                              COMMAND)
        self.mode_pub = node.create_publisher(Bool, topics.name('kart/control_mode_request_topic'),
                                              COMMAND)
        self.client = node.create_client(ControlModeCommand,
                                         topics.name('kart/control_mode_request'))
        self.command: tuple[float, float] | None = None
        self.sent = 0
        self.last_sent = 0.0        # game s: the stamp of the last command sent
        node.create_subscription(VelocityReport, topics.name('kart/velocity_status'),
                                 self._stream, 10)

    def _stream(self, status):
        """Send the command in force with each velocity status (the interface's pace)."""
        if self.command is None:
            return
        msg = AckermannControlCommand()
        msg.stamp = status.header.stamp
        msg.lateral.steering_tire_angle, msg.longitudinal.acceleration = self.command
        self.control_pub.publish(msg)
        self.sent += 1
        self.last_sent = stamp_of(status)

    def mode(self, mode: int) -> bool:
        """Call the mode service; return its ``success``."""
        self.rec.until(lambda: self.client.service_is_ready(), 'the mode service')
        future = self.client.call_async(ControlModeCommand.Request(mode=mode))
        self.rec.until(future.done, f'the answer to mode {mode}')
        return future.result().success

    def wait_mode(self, mode: int, what: str) -> None:
        self.rec.wait_for('mode', lambda m: m.mode == mode, self.rec.mark(), what)

    def gear(self, command: int) -> None:
        self.rec.until(lambda: self.gear_pub.get_subscription_count() > 0, 'the gear subscriber')
        self.gear_pub.publish(GearCommand(command=command))

    def drive_until(self, command, predicate, what, timeout=30.0):
        """Stream ``command`` (steering, acceleration) until a velocity status meets it."""
        self.command = command
        since = self.rec.mark()
        return self.rec.wait_for('velocity', predicate, since, what, timeout)

    def diagnostics(self) -> dict:
        msg = self.rec.wait_for('diag', what='kart_interface diagnostics',
                                since=self.rec.mark())
        return values_of(msg.status[0])

    def autonomous(self) -> None:
        assert self.mode(ControlModeCommand.Request.AUTONOMOUS)
        self.wait_mode(ControlModeReport.AUTONOMOUS, 'AUTONOMOUS reported')

    def stop_and_release(self) -> None:
        """Brake to a standstill and give the lease back (MANUAL)."""
        self.command = None
        assert self.mode(ControlModeCommand.Request.MANUAL)


@pytest.fixture
def team(interface, session, ros_node):
    """Return a team whose kart is ready (MANUAL reported in this session); MANUAL after."""
    team = Team(ros_node)
    team.rec.wait_for('diag', lambda m: values_of(m.status[0])['mode'] == str(
        ControlModeReport.MANUAL) and values_of(m.status[0])['generation'] == str(
        session.generation), what='the kart ready (MANUAL) in this session')
    yield team
    team.stop_and_release()


def speeds(team, since, low, high, start=-math.inf):
    """Return (stamps, speeds) of the truth after ``since`` (and ``start``) in [low, high].

    The simulator's own forward speed, stamped with its clock: the kart's response,
    whatever the pace at which a busy machine delivers the interface's statuses.
    """
    found = [m for m in team.rec.messages('truth', since)
             if low <= m.twist.linear.x <= high and stamp_of(m) >= start]
    return (np.array([stamp_of(m) for m in found]),
            np.array([m.twist.linear.x for m in found]))


def slope(stamps, values):
    """Return the least-squares slope of ``values`` over ``stamps`` (per game second)."""
    return float(np.polyfit(stamps - stamps[0], values, 1)[0])


def test_the_mode_service_and_topic_take_and_give_back_the_lease(team):
    rec = team.rec
    assert not team.mode(2) and not team.mode(7)      # STEER_ONLY; outside the enum
    since = rec.mark()
    assert team.mode(ControlModeCommand.Request.AUTONOMOUS)
    owned = rec.wait_for('authority', lambda m: m.state == ControlAuthorityState.STATE_OWNED,
                         since, 'kart_interface owning the lease')
    assert owned.controller_id == 'kart_interface' and owned.vessel_id == KART
    team.wait_mode(ControlModeReport.AUTONOMOUS, 'AUTONOMOUS reported')
    since = rec.mark()
    team.mode_pub.publish(Bool(data=False))
    rec.wait_for('authority', lambda m: m.state == ControlAuthorityState.STATE_UNOWNED,
                 since, 'the lease released')
    team.wait_mode(ControlModeReport.MANUAL, 'MANUAL reported')
    since = rec.mark()
    team.mode_pub.publish(Bool(data=True))
    again = rec.wait_for('authority', lambda m: m.state == ControlAuthorityState.STATE_OWNED,
                         since, 'the lease taken again by the topic')
    assert again.lease_id != owned.lease_id                  # a new lease each engagement
    team.wait_mode(ControlModeReport.AUTONOMOUS, 'AUTONOMOUS again')
    values = team.diagnostics()
    assert int(values['refused_unsupported_mode']) == 2


def test_acceleration_braking_and_the_timeout_stop(team):
    rec = team.rec
    team.autonomous()
    since = rec.mark()
    team.drive_until((0.0, 2.0), lambda m: m.longitudinal_velocity >= 4.0, 'speed 4 m/s')
    stamps, values = speeds(team, since, 1.0, 3.5)
    # (the servo's lag and the interface's pace on a busy machine: within 15-20 %)
    assert slope(stamps, values) == pytest.approx(2.0, rel=0.15)      # the velocity follows
    # what the kart measures against the simulator's truth at the same instants
    # (the truth is Best Effort: on a busy machine some samples drop, so it is interpolated)
    truth = rec.messages('truth', since)
    t_truth = np.array([stamp_of(m) for m in truth])
    v_truth = np.array([m.twist.linear.x for m in truth])
    pairs = [(m.longitudinal_velocity, float(np.interp(stamp_of(m), t_truth, v_truth)))
             for m in rec.messages('velocity', since)
             if t_truth[0] <= stamp_of(m) <= t_truth[-1]]
    assert len(pairs) > 20
    errors = [abs(a - b) for a, b in pairs]    # the rear tyres' slip under drive is in it
    assert np.mean(errors) < 0.08 and max(errors) < 0.25
    since = rec.mark()
    team.drive_until((0.0, -4.0), lambda m: m.longitudinal_velocity <= 0.05, 'stopped')
    stamps, values = speeds(team, since, 0.5, 3.5)
    assert slope(stamps, values) == pytest.approx(-4.0, rel=0.2)      # a braking stop
    held = team.rec.wait_stamp_span('velocity', 1.0, rec.mark())
    assert max(abs(m.longitudinal_velocity) for m in held) < 0.05     # held on the brakes
    team.drive_until((0.0, 2.0), lambda m: m.longitudinal_velocity >= 3.0, 'speed 3 m/s')
    team.command = (0.0, 0.0)            # the speed held, then the stack goes silent
    team.rec.wait_stamp_span('velocity', 0.5, rec.mark())
    since = rec.mark()
    team.command = None                  # the timeout stop
    rec.wait_for('velocity', lambda m: m.longitudinal_velocity <= 0.05, since, 'the stop')
    after = rec.messages('velocity', since)
    peak = max(after, key=lambda m: m.longitudinal_velocity)
    top = peak.longitudinal_velocity
    # the last command (hold the speed) acts until it is TIMEOUT old, then the stop begins:
    # never earlier (later by as long as a busy machine takes to deliver the last command).
    # Its age counts from its arrival, no earlier than the status it answered (its stamp),
    # which can be a stream period before the first status after the stream stopped.
    # 0.15 m/s below the top speed is 0.05 s into a stop at 3 m/s²
    slowing = next(m for m in after[after.index(peak):] if m.longitudinal_velocity < top - 0.15)
    assert stamp_of(slowing) - team.last_sent >= TIMEOUT, (top, TIMEOUT)
    stamps, values = speeds(team, since, 0.3, top - 0.3, start=stamp_of(slowing))
    assert slope(stamps, values) == pytest.approx(-3.0, rel=0.2)      # stop_deceleration
    assert rec.last('mode').mode == ControlModeReport.AUTONOMOUS      # still engaged
    assert team.diagnostics()['source'] == 'timeout'


def test_an_ackermann_turn_follows_the_geometry(team):
    delta = 0.25
    team.autonomous()
    team.drive_until((delta, 1.5), lambda m: m.longitudinal_velocity >= 2.0, 'speed 2 m/s')
    team.command = (delta, 0.0)
    since = team.rec.mark()
    steady = team.rec.wait_stamp_span('truth', 2.0, since)
    truth = steady[len(steady) // 2:]
    v = np.mean([math.hypot(m.twist.linear.x, m.twist.linear.y) for m in truth])
    yaw = np.mean([m.twist.angular.z for m in truth])
    # the rear axle's centre on a circle of L / tan δ; the centre of mass REAR_AXLE ahead
    expected = math.hypot(WHEELBASE / math.tan(delta), REAR_AXLE)
    assert v / yaw == pytest.approx(expected, rel=0.1)
    steering = team.rec.messages('steering', since)[-1]
    assert steering.steering_tire_angle == pytest.approx(delta, abs=0.005)
    velocity = team.rec.messages('velocity', since)[-1]
    assert velocity.heading_rate == pytest.approx(yaw, rel=0.1)


def test_every_gear_rule(team):
    rec = team.rec
    team.autonomous()
    team.command = (0.0, 0.0)
    since = rec.mark()
    team.gear(GearCommand.REVERSE)               # DRIVE -> REVERSE: refused
    rec.until(lambda: int(team.diagnostics().get('refused_drive_to_reverse_needs_neutral',
                                                 0)) == 1, 'the refusal counted')
    assert rec.last('gear').report == GearReport.DRIVE
    for gear in (GearCommand.NEUTRAL, GearCommand.REVERSE):
        team.gear(gear)
        rec.wait_for('gear', lambda m, g=gear: m.report == g, since, f'gear {gear}')
    team.drive_until((0.0, 1.0), lambda m: m.longitudinal_velocity <= -1.0, 'reversing')
    team.gear(GearCommand.PARK)                  # refused while moving
    rec.until(lambda: int(team.diagnostics().get('refused_park_while_moving', 0)) == 1,
              'PARK refused while moving')
    team.drive_until((0.0, -3.0), lambda m: abs(m.longitudinal_velocity) <= 0.05, 'stopped')
    team.gear(GearCommand.PARK)
    rec.wait_for('gear', lambda m: m.report == GearReport.PARK, since, 'PARK')
    team.command = (0.0, 2.0)                    # PARK holds against the throttle
    held = rec.wait_stamp_span('velocity', 1.0, rec.mark())
    assert max(abs(m.longitudinal_velocity) for m in held) < 0.05
    team.gear(GearCommand.DRIVE)
    rec.wait_for('gear', lambda m: m.report == GearReport.DRIVE, since, 'DRIVE from PARK')
    team.drive_until((0.0, 2.0), lambda m: m.longitudinal_velocity >= 1.0, 'forward again')


def test_bad_commands_are_refused_and_manual_commands_act_not_at_all(team):
    rec = team.rec
    since = rec.mark()
    team.command = (0.0, 3.0)                    # MANUAL: streamed, never acted on
    quiet = rec.wait_stamp_span('velocity', 1.0, since)
    assert max(abs(m.longitudinal_velocity) for m in quiet) < 0.02
    assert not rec.messages('wheels', since)     # not a single wheel command
    team.command = None                          # (no valid command may follow the switch)
    rec.wait_count('velocity', 5, rec.mark())
    team.autonomous()
    values = {}

    def counted(reason, count):
        values.update(team.diagnostics())
        return int(values.get(f'refused_{reason}', 0)) >= count
    for command, reason in (((0.0, math.nan), 'non_finite'),
                            ((0.5, 1.0), 'steering_out_of_range'),
                            ((0.0, 40.0), 'acceleration_out_of_range')):
        team.command = command
        rec.until(lambda r=reason: counted(r, 3), f'{reason} refusals counted')
    team.command = None
    team.gear(99)
    rec.until(lambda: counted('unknown_gear', 1), 'the unknown gear counted')
    assert values['last_refusal'] == 'unknown_gear:99'
    late = rec.wait_stamp_span('velocity', 0.5, rec.mark())
    assert max(abs(m.longitudinal_velocity) for m in late) < 0.02     # nothing moved


def test_the_emergency_stop_cuts_the_kart_loose(team):
    rec = team.rec
    team.autonomous()
    team.drive_until((0.0, 2.0), lambda m: m.longitudinal_velocity >= 2.0, 'speed 2 m/s')
    pilot = Pilot(team.node)
    since = send_authority(pilot, ControlAuthorityCommand.ACTION_EMERGENCY_STOP, 'safety',
                           'estop', vessel=KART)
    rec.wait_for('authority', lambda m: m.state == ControlAuthorityState.STATE_EMERGENCY_STOP,
                 since, 'the emergency stop latched')
    team.wait_mode(ControlModeReport.MANUAL, 'MANUAL after the emergency stop')
    after = rec.mark()
    rec.wait_stamp_span('velocity', 1.0, after)
    accepted = rec.messages('wheels', after)
    # the interface may still send until it learns of the loss; none acts (the mod zeroes
    # every override) and it stops sending
    assert len(accepted) <= 3 * 4
    pilot.close()


def test_a_game_waiting_past_the_session_timeout_keeps_its_session(stack, session, ros_node):
    """A lock-step wait longer than the bridge's session timeout (3 s) costs no session.

    A lease owner sends one wheel command and then nothing: the game runs ``LEAD`` past it
    and waits ``LOCKSTEP_WAIT`` (5 s) of wall time for the next, sending the mod's wall-kept
    packets (heartbeat, health) meanwhile, each heartbeat with a newer observation sequence.
    The bridge keeps the vessel ACTIVE in the same runtime session and the lease stays
    owned; once the wait runs out (the simulator counts a lapse) the game runs free.
    """
    pilot = Pilot(ros_node)
    pilot.add('wheel', topics.name('actuators/wheel/state'), WheelState, STREAM)
    publisher = ros_node.create_publisher(WheelCommand, topics.name('actuators/wheel/command'),
                                          COMMAND)
    pilot.ready()
    wheel = pilot.wait_for('wheel', what='a wheel state').id
    before = stack.status()['lockstep_lapses']
    lease = 'lease-wait'
    assert acquire(pilot, vessel=KART, controller='waiter', lease=lease,
                   duration=10.0)[0].reason == 'lease_acquired'
    pilot.until(lambda: publisher.get_subscription_count() > 0, 'the wheel command subscriber')
    since = pilot.mark()
    publisher.publish(WheelCommand(vessel_id=KART, controller_id='waiter', lease_id=lease,
                                   sequence=pilot.next_sequence('waiter', lease), id=wheel,
                                   enabled=True, brake=1.0, timeout_sec=1.0))
    assert stack.lockstep_lapses_past(before, pilot.until, LOCKSTEP_WAIT) == before + 1
    after = pilot.mark()
    owned = pilot.answer(after, lambda m: m.state == ControlAuthorityState.STATE_OWNED,
                         'the lease still owned once the game runs again')
    assert owned.controller_id == 'waiter' and owned.lease_id == lease
    assert not [m.reason for m in pilot.messages('authority', since)
                if m.state != ControlAuthorityState.STATE_OWNED]
    life = pilot.messages('life', since) + [pilot.last('life')]
    assert {(m.state, m.runtime_instance) for m in life} == {
        (VesselLifecycle.STATE_ACTIVE, session.runtime_instance)}
    pilot.close()
