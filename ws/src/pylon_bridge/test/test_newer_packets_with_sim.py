"""The mod's newer packets end to end: pylon_sim and udp_bridge as real processes over DDS.

Flight inputs and batches commanded through the bridge and seen acting in the simulator
(flight state, ground truth, snapshots); power in eclipse and sun; an engine part heating
while it burns; and what a vessel switch must deliver at once (the new session's
notices).

The orbit tests share one simulator and bridge (``stack``: the lean orbit scenario, at real
time: most play a controller whose inputs time out on the simulator's clock); each starts
from the scenario's start in a runtime session of its own (``session``) under a lease id of
its own, and counts the bridge's refusals from what it found. The eclipse test starts its
stack in a ROS domain of its own (``own_stack``). The separation result fetched through the
service is checked in test_separation_with_sim, on the launchpad stack.
"""

import itertools

from geometry_msgs.msg import TwistStamped
from pylon_interfaces.msg import (
    ControlAuthorityState,
    ControlBatch,
    ControlSnapshot,
    EngineCommand,
    FlightControlCommand,
    FlightState,
    PartThermalState,
    StarTrackerState,
    VehicleHealth,
)
from pylon_testing.pilot import acquire, COMMAND, Pilot, SAT, STREAM
from pylon_testing.recorder import stamp_of
from pylon_testing.scenarios import write_scenario
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy

pytestmark = pytest.mark.integration

ENGINE, ENGINE_PART = 'engine_1100004_0', 4100004
RELIABLE = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE)
HEALTH = QoSProfile(depth=200, reliability=ReliabilityPolicy.BEST_EFFORT)
LEASES = itertools.count(1)


@pytest.fixture(scope='module')
def stack(module_sim_stack, tmp_path_factory):
    """Return the module's simulator and bridge: the orbit scenario without LiDAR and camera."""
    return module_sim_stack(write_scenario(tmp_path_factory.mktemp('scenario'), 'orbit'))


@pytest.fixture
def ros_node(shared_ros_node):
    """Return the module's test node (``shared_ros_node``), in the shared stack's domain."""
    return shared_ros_node


class Flyer(Pilot):
    """A pilot with the flight, batch and engine command topics and the new reports.

    It commands as ``ctl`` under a lease id of its own.
    """

    def __init__(self, node):
        super().__init__(node)
        self.lease = f'lease-{next(LEASES)}'
        self.add('flight', '/ksp_vessel/ground_truth/flight', FlightState,
                 STREAM)
        self.add('snapshot', '/ksp_vessel/control/snapshot', ControlSnapshot, RELIABLE)
        self.add('rates', '/ksp_vessel/ground_truth/twist_body', TwistStamped,
                 STREAM)
        self.flight_pub = node.create_publisher(
            FlightControlCommand, '/ksp_vessel/control/flight_command', COMMAND)
        self.batch_pub = node.create_publisher(ControlBatch, '/ksp_vessel/control/batch',
                                               COMMAND)
        self.engine_pub = node.create_publisher(
            EngineCommand, '/ksp_vessel/actuators/propulsion/command', COMMAND)

    def identity(self, msg, vessel=SAT):
        msg.vessel_id, msg.controller_id, msg.lease_id = vessel, 'ctl', self.lease
        msg.sequence = self.next_sequence('ctl', self.lease)
        return msg

    def acquire(self, **kwargs):
        """Acquire the lease as ``ctl`` (``pilot.acquire``); return the answer and command."""
        return acquire(self, lease=self.lease, **kwargs)

    def refusals(self, message=None):
        """Return the bridge's count of commands refused as invalid (in ``message``: newest).

        It counts from the bridge's start: a test compares it with what it found.
        """
        return int(self.diagnostics('pylon_bridge: commands', message).get(
            'refused.invalid_command', 0))

    def flight_command(self, **inputs):
        msg = self.identity(FlightControlCommand(**{'timeout_sec': 0.3, **inputs}))
        self.until(lambda: self.flight_pub.get_subscription_count() > 0, 'the bridge')
        self.flight_pub.publish(msg)
        return msg


# -- the eclipse test, with a stack of its own ----------------------------------------

def test_charge_falls_in_eclipse_and_rises_in_sun(own_stack, lean_scenario):
    # 72 degrees along the orbit the sat is about 13 s of game time before sunrise
    _, node = own_stack(lean_scenario(changes={'sat': {'orbit': {
        'body': 'Kerbin', 'altitude': 100000, 'true_anomaly': 72.0}}}), sim_args=['--rate', '4'])
    pilot = Pilot(node)
    pilot.add('power', '/ksp_vessel/health/power', VehicleHealth, HEALTH)
    pilot.add('flight', '/ksp_vessel/ground_truth/flight', FlightState, STREAM)
    night = pilot.wait_for('power', lambda m: m.net_charge_rate_valid and
                           m.net_charge_rate_estimate < 0.0, what='discharging in eclipse')
    assert night.vessel_id == SAT and night.electric_capacity == 150.0
    # 2 Hz of the game's wall clock, which here is also UT (no warp)
    assert night.rate_sample_interval_sec == pytest.approx(0.5, abs=0.05)
    day = pilot.wait_for('power', lambda m: m.net_charge_rate_valid and
                         m.net_charge_rate_estimate > 0.0, pilot.after('power', night),
                         'charging in sunlight')
    assert day.universal_time > night.universal_time
    assert day.electric_charge > min(m.electric_charge for m in pilot.messages('power'))
    assert not day.generation_rate_valid and not day.consumption_rate_valid
    # the flight state reports the same charge for the same game time
    flight = pilot.wait_for('flight', lambda m: m.universal_time >= day.universal_time)
    assert flight.electric_charge == pytest.approx(day.electric_charge, abs=0.2)


# -- the orbit tests, on the shared stack --------------------------------------------

def test_flight_inputs_roll_the_vessel_and_stop_at_their_timeout(session, ros_node):
    flyer = Flyer(ros_node)
    flyer.ready()
    assert flyer.acquire(duration=5.0)[0].reason == 'lease_acquired'
    before = flyer.wait_for('rates').twist.angular.x
    sent = flyer.flight_command(roll=1.0)
    applied = flyer.wait_for('flight', lambda m: m.applied_input_sequence == sent.sequence,
                             what='the roll input applied')
    assert (applied.applied_input_valid, applied.flight_command_active) == (True, True)
    assert (applied.applied_roll, applied.applied_pitch, applied.input_at_limit) == (
        1.0, 0.0, True)
    # the stock path (wheel, then RCS) turns the vessel about +X, the roll axis
    spun = flyer.wait_for('rates', lambda m: m.twist.angular.x > before + 1e-3,
                          what='a roll rate')
    assert abs(spun.twist.angular.y) < abs(spun.twist.angular.x)
    # no new command: after 0.3 s the input ends (measured on the stamps, KSP time)
    ended = flyer.wait_for('flight', lambda m: m.applied_input_valid and
                           not m.flight_command_active, what='the input timing out')
    assert stamp_of(ended) - stamp_of(applied) < 0.3 + 0.1
    # a refused command (timeout 0: flight inputs have no default) sends nothing
    counted = flyer.refusals(flyer.wait_for('diag', what='the diagnostics'))
    refused = flyer.mark()
    flyer.flight_command(roll=0.5, timeout_sec=0.0)
    flyer.wait_for('diag', lambda m: flyer.refusals(m) > counted, refused,
                   'the refusal counted')
    assert all(m.applied_roll == 1.0 for m in flyer.messages('flight', refused))


def test_a_batch_acts_in_one_physics_step(session, ros_node):
    flyer = Flyer(ros_node)
    flyer.ready()
    assert flyer.acquire(duration=2.0)[0].reason == 'lease_acquired'
    since = flyer.mark()
    batch = flyer.identity(ControlBatch(renew_lease=True, lease_duration_sec=3.0,
                                        has_flight=True))
    batch.flight = FlightControlCommand(pitch=0.5, timeout_sec=0.5)
    batch.engines = [EngineCommand(id=ENGINE, enabled=True, target_thrust=6000.0,
                                   timeout_sec=0.5)]
    flyer.until(lambda: flyer.batch_pub.get_subscription_count() > 0, 'the bridge')
    flyer.batch_pub.publish(batch)
    renewed = flyer.answer(since, lambda m: m.reason == 'lease_renewed', 'the renewal')
    assert renewed.state == ControlAuthorityState.STATE_OWNED
    # the first snapshot in which the flight input is applied has the engine override too
    snapshot = flyer.wait_for('snapshot', lambda m: m.flight.applied_input_sequence ==
                              batch.sequence, since, 'the batch applied')
    [engine] = [e for e in snapshot.engines if e.id == ENGINE]
    assert engine.command_active and engine.thrust == pytest.approx(6000.0)
    assert snapshot.flight.applied_pitch == 0.5
    assert {stamp_of(m) for m in (snapshot, snapshot.flight, engine)} == {stamp_of(snapshot)}
    # one bad member refuses the whole batch: nothing of it acts
    bad = flyer.identity(ControlBatch(has_flight=True))
    bad.flight = FlightControlCommand(pitch=0.9, timeout_sec=0.5)
    bad.engines = [EngineCommand(id=ENGINE, enabled=True, target_thrust=-1.0, timeout_sec=0.5)]
    counted = flyer.refusals(flyer.wait_for('diag', what='the diagnostics'))
    refused = flyer.mark()
    flyer.batch_pub.publish(bad)
    flyer.wait_for('diag', lambda m: flyer.refusals(m) > counted, refused,
                   'the refusal counted')
    assert all(m.applied_pitch != 0.9 for m in flyer.messages('flight', refused))


def test_an_engine_part_heats_while_it_burns(session, ros_node):
    flyer = Flyer(ros_node)
    flyer.add('thermal', '/ksp_vessel/health/thermal', PartThermalState, HEALTH)
    flyer.ready()
    cold = flyer.wait_for('thermal', lambda m: m.part_flight_id == ENGINE_PART)
    assert (cold.part_name, cold.max_temperature) == ('liquidEngine3.v2', 2000.0)
    assert flyer.acquire(duration=10.0)[0].reason == 'lease_acquired'

    def burn():
        msg = flyer.identity(EngineCommand(id=ENGINE, enabled=True, target_thrust=60000.0,
                                           timeout_sec=0.5))
        flyer.engine_pub.publish(msg)
        return False
    since = flyer.mark()
    heated = []

    def hotter():
        burn()
        heated[:] = [m for m in flyer.messages('thermal', since)
                     if m.part_flight_id == ENGINE_PART and m.temperature > cold.temperature + 1.0]
        return bool(heated)
    flyer.until(hotter, 'the engine part heating')
    hot = heated[0]
    # about 1.2 K per second of full thrust: one kelvin needs most of a second of game time
    assert hot.universal_time - cold.universal_time > 0.5
    tank = [m for m in flyer.messages('thermal', since) if m.part_flight_id == 4100003]
    assert tank and all(m.temperature < hot.temperature for m in tank)


def tracker_pilot(ros_node):
    """Return a pilot that has seen the orbit sat's star tracker state."""
    pilot = Pilot(ros_node)
    pilot.add('tracker', '/ksp_vessel/star_tracker/star_tracker_main/state', StarTrackerState,
              QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE))
    pilot.ready()
    pilot.wait_for('tracker')
    return pilot


def test_a_vessel_switch_delivers_the_new_sessions_notices_at_once(stack, session, ros_node):
    pilot = tracker_pilot(ros_node)
    since = pilot.mark()
    stack.admin('switch', vessel='target')
    changed = pilot.wait_for('life', lambda m: m.vessel_id != SAT, since, 'the switch')
    authority = pilot.wait_for('authority', lambda m: m.reason == 'active_vessel_changed',
                               since, 'the authority notice')
    inactive = pilot.wait_for('tracker', lambda m: m.reason == 'inactive', since,
                              'the star tracker inactive notice')
    # all three are stamped on the bridge's receipt: within 0.2 s of each other
    for notice in (authority, inactive):
        assert abs(stamp_of(notice) - stamp_of(changed)) < 0.2
    assert not inactive.valid


def test_the_star_tracker_says_packed_on_rails(stack, session, ros_node):
    pilot = tracker_pilot(ros_node)
    since = pilot.mark()
    stack.admin('pack')
    packed = pilot.wait_for('tracker', lambda m: m.reason == 'packed', since,
                            'the packed reason')
    assert not packed.valid and packed.header.frame_id == 'kerbol_inertial'
