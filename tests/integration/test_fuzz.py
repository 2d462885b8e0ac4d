"""Hostile input, live: the bridge, the simulator's ports and every ROS command topic.

udp_bridge is fuzzed beside pylon_sim's valid stream, pylon_sim's own command and admin
ports are fuzzed, and hostile ROS commands go to every command topic of the bridge.

The fuzz is ``pylon_testing.fuzz`` (seeded; the benchmark ``bench/bench_fuzz.py`` sends a
million of the same kinds) from a sender process of its own. The bridge must stay alive
with no traceback in its log, keep one ACTIVE generation, keep publishing the IMU with no
gap (on its stamps) as long as the topic timeout, read every datagram and count its drops
by reason. The simulator must stay alive, refuse every admin request of the fuzz and never
push without a live lease and a command in force (its audit, ``unbacked_steps``). A command
the bridge refuses (non-finite, out of range, a wrong frame) never reaches the simulator,
and the bridge says why; one of a foreign identity reaches it and is refused there.

The fuzzed bridge has a stack of its own in a ROS domain of its own (its valid stream must
be the only one it sees). The fuzzed simulator and the hostile ROS commands share one
simulator and bridge (the module's ``shared`` stack); each of those tests starts from the
scenario's start in a new runtime session (a revert and a restart), with a lease of its own.
"""

from collections.abc import Iterator
import contextlib
from dataclasses import dataclass
import json
import math
import sys

from pylon_common import topics
from pylon_interfaces.msg import (
    BodyWrenchCommand,
    ControlAuthorityCommand,
    ControlBatch,
    DockingPortCommand,
    EngineCommand,
    FlightControlCommand,
    MotorCommand,
    RcsCommand,
    RcsState,
    SeparationCommand,
    VesselLifecycle,
    WheelCommand,
)
from pylon_testing.fuzz import STATE_WEIGHTS
from pylon_testing.fuzz_stack import BridgeFuzz, passed, RSS_GROWTH_LIMIT_MB, tracebacks
from pylon_testing.pilot import acquire, COMMAND, Pilot, SAT, send_authority
from pylon_testing.processes import RosProcess
from pylon_testing.recorder import TopicRecorder
from pylon_testing.stack import SimStack, start_stack
from pylon_testing.wait import spin_until
import pytest
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data

pytestmark = pytest.mark.integration

BRIDGE_DATAGRAMS = 6_000     # every kind at least ~19 times (bench/bench_fuzz.py: a million)
SIM_DATAGRAMS = 20_000
SEED = 11
TIMEOUT_SEC = 60.0
SENDER_TIMEOUT_SEC = 240.0      # the sender builds its corpus, then waits on the receiver


@dataclass
class Shared:
    """The module's simulator (its packets checked) and bridge, and the test node."""

    stack: SimStack
    sim: RosProcess
    node: Node

    def fresh(self) -> None:
        """Go back to the scenario's start in a new runtime session; wait until it is ACTIVE.

        A revert (what an earlier test changed in the world goes) and a restart (a new KSP
        process: no lease, no sequence, no refusal of an earlier test is left in the game).
        """
        self.stack.admin('revert')
        instance = self.stack.admin('restart')['runtimeInstance']
        rec = TopicRecorder(self.node).add('life', topics.name('lifecycle'), VesselLifecycle,
                                           topics.qos('lifecycle', reader=True))
        try:
            rec.wait_for('life', lambda m: m.state == VesselLifecycle.STATE_ACTIVE and
                         m.runtime_instance == instance, what='the new runtime session ACTIVE')
        finally:
            rec.close()

    @contextlib.contextmanager
    def pilot(self) -> Iterator[Pilot]:
        """Yield a Pilot in a fresh session; remove every endpoint the test made after it."""
        self.fresh()
        publishers, subscriptions = set(self.node.publishers), set(self.node.subscriptions)
        try:
            yield Pilot(self.node)
        finally:
            for publisher in set(self.node.publishers) - publishers:
                self.node.destroy_publisher(publisher)
            for subscription in set(self.node.subscriptions) - subscriptions:
                self.node.destroy_subscription(subscription)


@pytest.fixture(scope='module')
def shared(module_ros_process, free_udp_port, module_ros_node) -> Shared:
    """Start the simulator (packets checked) and the bridge the module's tests share."""
    processes = {}

    def keep(cmd, name=None, **kwargs):
        processes[name] = module_ros_process(cmd, name=name, **kwargs)
        return processes[name]
    stack = start_stack(keep, free_udp_port)
    _sim_ready(stack, module_ros_node)
    return Shared(stack, processes['sim'], module_ros_node)


def test_a_fuzzed_bridge_keeps_publishing_the_valid_stream(ros_process, free_udp_port,
                                                           ros_domain_block, ros_node_in):
    # a domain of its own: the shared stack's bridge publishes the same topics in the
    # session's domain while this module runs
    domain = ros_domain_block(1)

    def start(cmd, **kwargs):
        return ros_process(cmd, env={'ROS_DOMAIN_ID': str(domain)}, **kwargs)
    fuzz = BridgeFuzz(start, free_udp_port, TopicRecorder(ros_node_in(domain)))
    result = fuzz.run(BRIDGE_DATAGRAMS, SEED)
    checks = passed(result, RSS_GROWTH_LIMIT_MB)
    assert all(checks.values()), (checks, result)
    assert result['datagrams'] >= BRIDGE_DATAGRAMS - 5       # the kernel refuses > 65 507 B
    assert set(result['by_kind']) == set(STATE_WEIGHTS), result['by_kind']   # every kind
    bridge = result['bridge']
    assert bridge['received'] >= result['datagrams']          # the valid stream's too
    assert {'invalid_json', 'invalid_utf8', 'not_object', 'missing_field', 'bad_type',
            'non_finite', 'out_of_range', 'envelope_mismatch', 'conflicting_generation',
            'too_deep'} <= set(bridge['dropped']), bridge['dropped']
    assert result['imu']['received'] > 0


def _sim_ready(stack, node):
    def answers() -> bool:
        try:
            stack.status()
        except (OSError, AssertionError):       # not bound yet (a timeout is an OSError)
            return False
        return True
    spin_until(node, answers, TIMEOUT_SEC, what='pylon_sim answering on its admin port')


def test_a_fuzzed_simulator_refuses_it_all_and_never_pushes_unbacked(shared, ros_process):
    shared.fresh()
    stack = shared.stack
    rejected_before = sum(stack.status()['command_rejected'].values())
    sender = ros_process([sys.executable, '-m', 'pylon_testing.fuzz', 'sim', '--command-port',
                          str(stack.command_port), '--admin-port', str(stack.admin_port),
                          '--count', str(SIM_DATAGRAMS), '--seed', str(SEED)],
                         name='fuzz_sender', pipes=True)
    line = sender.wait_for_line('^done ', SENDER_TIMEOUT_SEC)
    result = json.loads(line[len('done '):])
    shared.sim.check()
    status = stack.status()                 # after every datagram: admin is answered in turn
    assert result['sent'] == SIM_DATAGRAMS - sum(result['send_errors'].values())
    assert result['admin_sent'] > 0
    # the sender bounds the simulator's socket queue; on a busy machine a burst of large
    # datagrams may still overflow it now and then: a lost fuzz datagram, not a failure
    assert result['kernel_drops']['admin'] == 0, result['kernel_drops']
    assert result['kernel_drops']['command'] <= SIM_DATAGRAMS // 1000, result['kernel_drops']
    assert result['admin_replies'] == {'refused': result['admin_sent']}, result
    control = status['control']
    assert control['unbacked_steps'] == 0, control         # the restart's game: this fuzz
    assert sum(status['command_rejected'].values()) - rejected_before > SIM_DATAGRAMS // 4
    assert control['refused'], control
    assert not tracebacks(shared.sim.log())


# -- hostile ROS commands on every command topic ----------------------------------------------
def _identity(controller='rogue', lease='none', sequence=1, vessel=SAT):
    return {'vessel_id': vessel, 'controller_id': controller, 'lease_id': lease,
            'sequence': sequence}


def _wrench(frame='base_link', force=0.0, torque=0.0, timeout=0.5, **identity):
    msg = BodyWrenchCommand(**_identity(**identity), timeout_sec=timeout)
    msg.header.frame_id = frame
    msg.wrench.force.x, msg.wrench.torque.z = force, torque
    return msg


def _flight(**fields):
    return FlightControlCommand(**{**_identity(), 'pitch': 0.1, 'timeout_sec': 0.2, **fields})


def _engine(**fields):
    return EngineCommand(**{**_identity(), 'id': 'engine_1', 'enabled': True,
                            'target_thrust': 10.0, 'timeout_sec': 0.5, **fields})


def _batch(**fields):
    return ControlBatch(**{**_identity(), 'has_flight': True, 'flight': _flight(), **fields})


A = ControlAuthorityCommand
HOSTILE = {         # command key: [(message, the bridge's reason), ...]
    'control/authority/command': [
        (A(**_identity(), action=A.ACTION_ACQUIRE, lease_duration_sec=math.nan),
         'invalid_lease'),
        (A(**_identity(), action=A.ACTION_ACQUIRE, lease_duration_sec=1e300), 'invalid_lease'),
        (A(**_identity(sequence=0), action=A.ACTION_ACQUIRE, lease_duration_sec=1.0),
         'invalid_lease'),
        (A(**_identity(), action=77), 'unsupported_authority_action')],
    'control/wrench_command': [
        (_wrench(force=math.nan), 'non_finite_command'),
        (_wrench(torque=-math.inf), 'non_finite_command'),
        (_wrench(frame='odom', torque=1.0), 'unsupported_wrench_frame'),
        (_wrench(timeout=1e9), 'invalid_wrench')],
    'control/flight_command': [
        (_flight(pitch=math.nan), 'non_finite_command'),
        (_flight(yaw=1e300), 'invalid_command'),
        (_flight(timeout_sec=math.inf), 'non_finite_command')],
    'control/batch': [
        (_batch(engines=[_engine(target_thrust=math.nan)]), 'non_finite_command'),
        (_batch(renew_lease=True, lease_duration_sec=1e9), 'invalid_lease'),
        (_batch(sequence=2**63), 'invalid_lease')],
    'actuators/propulsion/command': [
        (_engine(target_thrust=math.inf), 'non_finite_command'),
        (_engine(target_thrust=-1e300), 'invalid_command'),
        (_engine(gimbal_roll=5.0), 'invalid_command')],
    'actuators/rcs/command': [
        (RcsCommand(**_identity(), id='rcs_1', enabled=True, thrust_limit=math.nan),
         'non_finite_command'),
        (RcsCommand(**_identity(), id='rcs_1', enabled=True, thrust_limit=-5.0),
         'invalid_command')],
    'actuators/wheel/command': [
        (WheelCommand(**_identity(), id='wheel_1', brake=2.0), 'invalid_command'),
        (WheelCommand(**_identity(), id='wheel_1', target_angular_velocity=math.inf),
         'non_finite_command')],
    'actuators/servo/command': [
        (MotorCommand(**_identity(), id='servo_1', mode=9), 'invalid_command'),
        (MotorCommand(**_identity(), id='', mode=MotorCommand.MODE_VELOCITY),
         'invalid_command')],
    'actuators/separation/command': [
        (SeparationCommand(**_identity(), id='', separate=True), 'invalid_command')],
    'docking_port/command': [
        (DockingPortCommand(**_identity(), action=99), 'invalid_command')],
}
TYPES = {           # command key: the type of its datagram (the simulator counts by type)
    'control/authority/command': A, 'control/wrench_command': BodyWrenchCommand,
    'control/flight_command': FlightControlCommand, 'control/batch': ControlBatch,
    'actuators/propulsion/command': EngineCommand, 'actuators/rcs/command': RcsCommand,
    'actuators/wheel/command': WheelCommand, 'actuators/servo/command': MotorCommand,
    'actuators/separation/command': SeparationCommand,
    'docking_port/command': DockingPortCommand,
}
FOREIGN = {         # command key: a well-formed command of an identity without a lease
    'control/wrench_command': _wrench(torque=50.0, controller='intruder', sequence=3),
    'control/flight_command': _flight(controller='intruder', sequence=3),
    'control/batch': _batch(controller='intruder', sequence=3),
    'actuators/propulsion/command': _engine(controller='intruder', sequence=3),
    'actuators/separation/command': SeparationCommand(
        **_identity(controller='intruder', sequence=3), id='decoupler_1', separate=True,
        operation_id='op-fuzz'),
    'docking_port/command': DockingPortCommand(**_identity(controller='intruder', sequence=3),
                                               action=DockingPortCommand.ACTION_RELEASE),
}
COMMANDS_STATUS = 'pylon_bridge: commands'


def _counts(pilot, prefix):
    report = pilot.last('diag')
    if report is None:
        return {}
    values = {kv.key: kv.value for s in report.status if s.name == COMMANDS_STATUS
              for kv in s.values}
    return {k[len(prefix):]: int(v) for k, v in values.items() if k.startswith(prefix)}


def _command_publishers(pilot, ros_node, keys) -> dict:
    """Return a publisher per command key, once the bridge subscribed to each.

    ``docking_port/command`` is the first docking port's, found from its state topic.
    """
    ports = []

    def docking_port() -> bool:
        ports[:] = [name.split('/')[-2] for name, _ in ros_node.get_topic_names_and_types()
                    if name.startswith(topics.name('docking_port/state', id='X')[:-len('X/state')])
                    and name.endswith('/state')]
        return bool(ports)
    pilot.until(docking_port, "a docking port's state topic")
    publishers = {key: ros_node.create_publisher(
        TYPES[key], topics.name(key, id=ports[0]), COMMAND) for key in keys}
    pilot.until(lambda: all(p.get_subscription_count() > 0 for p in publishers.values()),
                "the bridge's subscriptions to every command topic")
    return publishers


def test_hostile_ros_commands_on_every_topic_are_refused_and_never_reach_the_game(shared):
    assert set(HOSTILE) == set(TYPES) == {     # every topic the bridge takes commands on
        t.key for t in topics.BRIDGE_TOPICS if t.direction == topics.SUBSCRIBES}
    with shared.pilot() as pilot:
        _hostile_commands(shared.stack, pilot, shared.node)


def _hostile_commands(stack, pilot, ros_node):
    pilot.ready()
    publishers = _command_publishers(pilot, ros_node, HOSTILE)
    # the bridge's counters go on from earlier tests: the acquire is counted after these
    pilot.until(lambda: pilot.last('diag') is not None, "the bridge's diagnostics")
    acquires = _counts(pilot, 'sent.').get('pylon_control_authority_command', 0)
    # the owner holds a lease throughout: a foreign command is refused for its identity
    owner, _ = acquire(pilot, controller='owner', lease='owned-hostile', duration=10.0)
    assert owner.reason == 'lease_acquired'
    pilot.until(lambda: _counts(pilot, 'sent.').get('pylon_control_authority_command',
                                                    0) > acquires,
                "the bridge's diagnostics counting the acquire")
    refused_before, sent_before = _counts(pilot, 'refused.'), _counts(pilot, 'sent.')
    sim_before = stack.status()['commands']
    expected = {}
    for key, cases in HOSTILE.items():
        for msg, reason in cases:
            publishers[key].publish(msg)
            expected[reason] = expected.get(reason, 0) + 1

    def refused() -> dict:
        now = _counts(pilot, 'refused.')
        return {r: now.get(r, 0) - refused_before.get(r, 0) for r in now
                if now.get(r, 0) != refused_before.get(r, 0)}
    pilot.until(lambda: refused() == expected or sum(refused().values()) >= sum(
        expected.values()), 'the bridge refusing every hostile command')
    assert refused() == expected
    assert _counts(pilot, 'sent.') == sent_before          # nothing went to the game
    assert stack.status()['commands'] == sim_before
    # a well-formed command of a foreign identity reaches the game, which refuses it
    before = stack.control()['refused']
    for key, msg in FOREIGN.items():
        publishers[key].publish(msg)

    def refused_by_sim() -> int:
        after = stack.control()['refused']
        return sum(after.get(k, 0) - before.get(k, 0) for k in after)
    pilot.until(lambda: refused_by_sim() >= len(FOREIGN), 'the game refusing every foreign '
                'command')
    control = stack.control()
    new = {k for k in control['refused'] if control['refused'][k] != before.get(k)}
    assert all(k.endswith(':lease_not_owned') for k in new), control['refused']
    assert control['owner'] == ['owner', 'owned-hostile']
    assert control['unbacked_steps'] == 0
    assert control['applied_torque'] == [0.0, 0.0, 0.0]



ENGINE, RCS = 'engine_1100004_0', 'rcs_1100005_0'      # parts of the orbit scenario's vessel


def _replayable(lease: str) -> dict:
    """Command key: a harmless command of the lease owner ``owner``/``lease`` (zero output)."""
    owner = {'controller': 'owner', 'lease': lease}

    def who(sequence):
        return _identity(**owner, sequence=sequence)
    return {
        'control/wrench_command': lambda s: _wrench(**owner, sequence=s),
        'control/flight_command': lambda s: _flight(**who(s), pitch=0.0),
        'control/batch': lambda s: _batch(**who(s), flight=_flight(**who(s), pitch=0.0)),
        'actuators/propulsion/command': lambda s: _engine(**who(s), id=ENGINE, enabled=False,
                                                          target_thrust=0.0),
        'actuators/rcs/command': lambda s: RcsCommand(**who(s), id=RCS, enabled=False),
        'actuators/wheel/command': lambda s: WheelCommand(**who(s), id='wheel_1', brake=1.0),
        'actuators/servo/command': lambda s: MotorCommand(
            **who(s), id='servo_1', mode=MotorCommand.MODE_VELOCITY),
        'actuators/separation/command': lambda s: SeparationCommand(
            **who(s), id='decoupler_1', separate=False),
        'docking_port/command': lambda s: DockingPortCommand(
            **who(s), action=DockingPortCommand.ACTION_SELECT_CAMERA),
    }


def test_a_replayed_command_on_every_topic_is_stale_in_the_game(shared):
    """The game keeps one sequence counter per identity: the same command twice is stale."""
    with shared.pilot() as pilot:
        _replayed_commands(shared.stack, pilot, shared.node)


def _replayed_commands(stack, pilot, ros_node):
    pilot.ready()
    lease = 'owned-replay'
    replayable = _replayable(lease)
    # every command topic but the authority one, whose replay test_control_with_sim covers
    assert set(replayable) == set(TYPES) - {'control/authority/command'}
    rcs = TopicRecorder(ros_node).add('rcs', topics.name('actuators/rcs/state'), RcsState,
                                      qos_profile_sensor_data)
    rcs.wait_for('rcs', lambda m: m.id == RCS)     # the bridge knows the module's nozzles
    publishers = _command_publishers(pilot, ros_node, replayable)
    owner, _ = acquire(pilot, controller='owner', lease=lease, duration=10.0)
    assert owner.reason == 'lease_acquired'

    def received() -> int:
        return sum(stack.status()['commands'].values())

    def stale() -> int:
        return sum(v for k, v in stack.control()['refused'].items()
                   if k.endswith(':stale_sequence'))
    for key, build in replayable.items():     # one at a time: topics do not keep order
        since = send_authority(pilot, A.ACTION_RENEW, 'owner', lease, duration=10.0)
        pilot.answer(since, lambda m: m.reason == 'lease_renewed', 'the lease renewed')
        sequence = pilot.next_sequence('owner', lease)
        before, stale_before = received(), stale()
        publishers[key].publish(build(sequence))
        pilot.until(lambda b=before: received() > b, f'the game receiving {key}')
        assert stale() == stale_before, key                              # fresh: not stale
        publishers[key].publish(build(sequence))                         # the replay
        pilot.until(lambda b=stale_before: stale() > b,
                    f'the game refusing the replayed {key} as stale')
        assert stale() == stale_before + 1, key
    assert stack.control()['owner'] == ['owner', lease]      # a replay changes nothing else
