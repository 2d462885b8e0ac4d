"""The game's state, universal time, flight truth and /clock through pylon_sim and udp_bridge.

Real processes over real DDS: the simulator flies the orbit scenario, the bridge publishes
``simulator/state``, ``simulator/universal_time``, ``ground_truth/flight`` and (with
``--publish-clock``) ``/clock``; a node of the test reads them, and a timer of a node on
``use_sim_time`` shows that game time drives ROS time: it ticks at its rate per second of
the simulator's UT, however busy the machine, and stops while the game is paused.
"""

import math

from pylon_interfaces.msg import FlightState, SimulatorState
from pylon_testing.recorder import stamp_of, TopicRecorder
import pytest
from rclpy.clock import JumpThreshold
from rclpy.duration import Duration
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Float64

pytestmark = pytest.mark.integration

SAT = '5a7e1f0c3b2d4e6f8a9b0c1d2e3f4a5b'
KERBIN_RADIUS, KERBIN_GM = 600_000.0, 3.5316e12
ORBIT_RADIUS = KERBIN_RADIUS + 100_000.0          # the orbit scenario's circular orbit
LATCHED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                     reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
STREAM = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=200,
                    reliability=ReliabilityPolicy.BEST_EFFORT)
RELIABLE = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=200,
                      reliability=ReliabilityPolicy.RELIABLE)
S = SimulatorState
TIMER_NS = 100_000_000            # the sim-time node's 10 Hz timer


def norm(v):
    return math.sqrt(v.x * v.x + v.y * v.y + v.z * v.z)


def test_flight_state_is_the_analytic_orbit(sim_stack, ros_node, lean_scenario):
    sim_stack(scenario=lean_scenario())
    rec = TopicRecorder(ros_node).add('flight', '/ksp_vessel/ground_truth/flight',
                                      FlightState, STREAM)
    msgs = rec.wait_stamp_span('flight', 2.0)
    speed = math.sqrt(KERBIN_GM / ORBIT_RADIUS)
    for msg in msgs:
        assert msg.vessel_id == SAT and msg.body_name == 'Kerbin'
        assert msg.header.frame_id == 'base_link' and msg.observation_sequence > 0
        assert msg.altitude_asl == pytest.approx(100_000.0, abs=1.0)
        assert msg.apoapsis == pytest.approx(100_000.0, abs=5.0)
        assert msg.periapsis == pytest.approx(100_000.0, abs=5.0)
        assert msg.gravity == pytest.approx(KERBIN_GM / ORBIT_RADIUS ** 2, rel=1e-4)
        assert msg.gravitational_parameter == KERBIN_GM and msg.body_radius == KERBIN_RADIUS
        assert norm(msg.orbital_velocity_body) == pytest.approx(speed, rel=1e-4)
        assert msg.orbital_velocity_body.x == pytest.approx(speed, rel=1e-3)   # prograde
        assert msg.up_body.z == pytest.approx(1.0, abs=1e-3)                    # radial out
        assert msg.vertical_speed == pytest.approx(0.0, abs=0.5)
        assert (msg.dynamic_pressure, msg.landed, msg.splashed) == (0.0, False, False)
        assert msg.mass > 0 and msg.electric_charge > 0
    stamps = [stamp_of(m) for m in msgs]
    uts = [m.universal_time for m in msgs]
    for (s0, u0), (s1, u1) in zip(zip(stamps, uts), zip(stamps[1:], uts[1:])):
        assert s1 - s0 == pytest.approx(u1 - u0, abs=1e-6)     # stamped on KSP time


def test_simulator_state_through_pause(sim_stack, ros_node, lean_scenario):
    stack = sim_stack(scenario=lean_scenario())
    rec = TopicRecorder(ros_node)
    rec.add('state', '/ksp_vessel/simulator/state', SimulatorState, LATCHED)
    rec.add('ut', '/ksp_vessel/simulator/universal_time', Float64, LATCHED)
    advancing = rec.wait_for('state', lambda m: m.state == S.STATE_ADVANCING)
    assert advancing.vessel_id == SAT and advancing.communication_alive
    assert advancing.control_available and not advancing.packed
    assert advancing.warp_rate == 1.0 and advancing.simulation_advancing
    since = rec.mark()
    stack.admin('pause')
    paused = rec.wait_for('state', lambda m: m.state == S.STATE_PAUSED, since)
    assert paused.paused and paused.seconds_since_progress == 0.0
    # heartbeats keep coming while paused: more PAUSED states, UT standing still
    more = rec.mark()
    held = rec.wait_count('state', 5, more)
    assert {m.state for m in held} == {S.STATE_PAUSED}
    assert len({m.universal_time for m in held}) == 1
    assert rec.last('ut').data == held[-1].universal_time
    since = rec.mark()
    stack.admin('resume')
    rec.wait_for('state', lambda m: m.state == S.STATE_ADVANCING, since)
    assert rec.last('ut').data > held[-1].universal_time


def test_stale_when_the_heartbeats_stop(sim_stack, ros_node, lean_scenario):
    stack = sim_stack(scenario=lean_scenario(), bridge_args=['--topic-timeout-sec', '1.0'])
    rec = TopicRecorder(ros_node).add('state', '/ksp_vessel/simulator/state', SimulatorState,
                                      LATCHED)
    rec.wait_for('state', lambda m: m.state == S.STATE_ADVANCING)
    since = rec.mark()
    stack.admin('heartbeat', enabled=False)
    stale = rec.wait_for('state', lambda m: m.state == S.STATE_STALE, since)
    assert not stale.communication_alive and stale.heartbeat_age_sec >= 1.0
    assert stale.vessel_id == SAT
    since = rec.mark()
    stack.admin('heartbeat', enabled=True)
    back = rec.wait_for('state', lambda m: m.communication_alive, since)
    assert back.state in (S.STATE_INITIALIZING, S.STATE_ADVANCING)


def nanoseconds(stamp) -> int:
    """Return a ``builtin_interfaces/Time`` in integer nanoseconds (exact, for matching)."""
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def timer_ticks(updates, fired, origin, begin, end) -> tuple[int, set, set]:
    """Return the timer's ticks in ``(begin, end]`` of the node's clock (ns), and why.

    rcl's timer is due at each mark ``origin + k TIMER_NS`` and fires at the first clock
    update at or past it. An update that passes several marks at once (the test process
    fell behind, and its depth-1 Best Effort ``/clock`` subscription kept only the newest
    time) fires it once and skips the other marks, by design; those are counted from the
    clock's own updates, so the count does not depend on how busy the machine is.
    ``begin`` and ``end`` are updates themselves, so the window's updates pass exactly the
    marks in it. Return (firings + skipped marks, the firing times, the updates that
    passed a mark).
    """
    first = updates.index(begin)
    last = updates.index(end)
    passing, skipped = set(), 0
    for before, after in zip(updates[first:last], updates[first + 1:last + 1]):
        marks = (after - origin) // TIMER_NS - (before - origin) // TIMER_NS
        if marks:
            passing.add(after)
            skipped += marks - 1
    firings = {t for t in fired if begin < t <= end}
    return sum(begin < t <= end for t in fired) + skipped, firings, passing


@pytest.mark.parametrize('rate', [1, 4])
def test_clock_drives_a_sim_time_node(sim_stack, ros_node, lean_scenario, rate):
    stack = sim_stack(scenario=lean_scenario(), bridge_args=['--publish-clock'],
                      sim_args=['--rate', str(rate)])
    ros_node.set_parameters([Parameter('use_sim_time', Parameter.Type.BOOL, True)])
    clock = ros_node.get_clock()
    updates = []           # the node's clock after each change (ns): what its timers see
    jumps = clock.create_jump_callback(
        JumpThreshold(min_forward=Duration(nanoseconds=1), min_backward=None,
                      on_clock_change=False),
        post_callback=lambda _: updates.append(clock.now().nanoseconds))
    origin = clock.now().nanoseconds          # the timer's marks: origin + k TIMER_NS
    fired = []
    ros_node.create_timer(TIMER_NS * 1e-9, lambda: fired.append(clock.now().nanoseconds))
    rec = TopicRecorder(ros_node).add('clock', '/clock', Clock, RELIABLE)
    rec.add('flight', '/ksp_vessel/ground_truth/flight', FlightState, STREAM)
    rec.wait_count('clock', 2)
    since = rec.mark()
    # ticks per simulated second, the simulated second taken from the simulator's UT: the
    # window runs between two updates of the node's clock that are flight states' stamps
    # (UT mapped), 2 s of UT apart, and not the newest update: the timer runs before the
    # executor takes the next /clock, so it has had its turn for every update in the window

    def stamped_updates() -> tuple[list[int], dict[int, float]]:
        ut = {nanoseconds(m.header.stamp): m.universal_time
              for m in rec.messages('flight', since)}
        return [u for u in updates[:-1] if u in ut], ut

    def spanned() -> bool:
        window, ut = stamped_updates()
        return len(window) > 1 and ut[window[-1]] - ut[window[0]] >= 2.0
    rec.until(spanned, "2 s of UT between updates of the node's clock that are flight stamps")
    window, ut = stamped_updates()
    begin, end = window[0], window[-1]
    seconds = ut[end] - ut[begin]
    assert (end - begin) * 1e-9 == pytest.approx(seconds, abs=1e-6)    # clock = UT
    ticks, firings, passing = timer_ticks(updates, fired, origin, begin, end)
    # it fires at every update that passes a mark, and only there
    assert firings == passing, (sorted(firings - passing), sorted(passing - firings))
    assert ticks / seconds == pytest.approx(1e9 / TIMER_NS, rel=0.1), (ticks, seconds)
    clocks = [stamp_of(m.clock) for m in rec.messages('clock')]
    assert clocks == sorted(clocks)
    # /clock is the stamps' time: a flight state's stamp is never ahead of the clock after it
    flight = rec.wait_for('flight')
    rec.until(lambda: stamp_of(rec.last('clock').clock) >= stamp_of(flight), 'the clock')
    # paused: neither the clock nor the timer passes the game time of the pause (messages
    # sent just before it may still arrive: the bound is the paused UT, mapped)
    rec.add('state', '/ksp_vessel/simulator/state', SimulatorState, LATCHED)
    since = rec.mark()
    stack.admin('pause')
    paused = rec.wait_for('state', lambda m: m.state == S.STATE_PAUSED, since, 'the pause')
    offset = stamp_of(flight) - flight.universal_time
    held = paused.universal_time + offset
    rec.until(stack.clock_reached(1.0 * rate), 'a second of pause')
    assert all(stamp_of(m.clock) <= held + 1e-6 for m in rec.messages('clock'))
    assert all(t * 1e-9 <= held + 1e-6 for t in fired)
    held_ticks = len(fired)
    stack.admin('resume')
    rec.until(lambda: len(fired) > held_ticks + 2, 'the timer again after the resume')
    assert fired[-1] * 1e-9 > held
    jumps.unregister()
