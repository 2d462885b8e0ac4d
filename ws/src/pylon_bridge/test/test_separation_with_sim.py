"""Topology changes end to end through udp_bridge: a decoupler splits, two ports dock.

The launchpad tests share one simulator and bridge (``stack``: at real time, the test
holds the lease), each from the scenario's start (the rocket whole again) in a runtime
session of its own (``session``) under a lease and operation ids of its own; what they read
from the latched separation topics is of that session. The scripted docking approach runs
in a stack and ROS domain of its own (``own_stack``), at 3x real time.
"""

import xml.etree.ElementTree as ET  # noqa: N817

from pylon_common import topics
from pylon_interfaces.msg import (
    SeparationCommand,
    SeparationResult,
    SeparationState,
)
from pylon_interfaces.srv import GetSeparationResult
from pylon_testing.pilot import acquire, LATCHED, Pilot
from pylon_testing.scenarios import write_scenario
from pylon_testing.wait import spin_until
import pytest
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy

pytestmark = pytest.mark.integration

ROCKET = '3d2c1b0a9f8e7d6c5b4a392817061f2e'
CHASER = '6c1a5e0b2d3f4a9b8c7d6e5f4a3b2c1d'
CHASER_PORT = 'docking_port_3300002_0'
DECOUPLER = 'decoupler_9900002_0'
POD_PORT, ENGINE_PORT = 'docking_port_9900001_2', 'docking_port_9900004_2'
SILENCE_SEC = 120.0
RESULTS = QoSProfile(depth=128, reliability=ReliabilityPolicy.RELIABLE,
                     durability=LATCHED.durability)


@pytest.fixture(scope='module')
def stack(module_sim_stack, tmp_path_factory):
    """Return the module's simulator and bridge: the launchpad scenario (no LiDAR or camera).

    The rocket has a docking port on its pod (it stays) and one on its engine (it leaves
    with the spent stage). Topics fall silent for 120 s before the bridge removes them: a
    topic gone sooner was removed by what the game said.
    """
    scenario = write_scenario(tmp_path_factory.mktemp('scenario'), 'launchpad', modules={
        'rocket': {'mk1pod.v2': [{'kind': 'docking_port', 'index': 2, 'node_type': 'size1'}],
                   'liquidEngine2.v2': [{'kind': 'docking_port', 'index': 2,
                                         'node_type': 'size1'}]}})
    return module_sim_stack(scenario, bridge_args=['--topic-timeout-sec', str(SILENCE_SEC)])


@pytest.fixture
def ros_node(shared_ros_node):
    """Return the module's test node (``shared_ros_node``), in the shared stack's domain."""
    return shared_ros_node


@pytest.fixture
def session(stack, ros_node):
    """Start the test in a runtime session of its own; return its ACTIVE lifecycle.

    The shared simulator goes back to the scenario's start (revert, resumed, heartbeat on:
    the rocket whole) and starts as a new KSP process (restart: no lease left). It returns
    once the whole rocket's model is ready, so that the latched robot_description a test
    subscribes to after it is that model.
    """
    return stack.fresh_session(ros_node, lambda m: m.model_ready,
                               'the new session ACTIVE with its model')[1]


def links(urdf: str) -> set[str]:
    return {link.get('name') for link in ET.fromstring(urdf).findall('link')}


# -- the scripted docking approach, with a stack of its own ---------------------------

def test_the_scripted_approach_shows_the_port_states_in_order(own_stack):
    stack, ros_node = own_stack('docking', sim_args=['--rate', '3'])   # no controller: 3x
    pilot = Pilot(ros_node)
    key = 'docking_port/state'
    pilot.add('port', topics.name(key, id=CHASER_PORT), topics.message_class(key),
              topics.qos(key, reader=True))
    pilot.ready()
    pilot.wait_for('port', what='the chaser port state')
    reverted = stack.admin('revert')['runtimeGeneration']   # from the start, now we listen
    since = pilot.mark()
    # the capture changed the chaser's topology: the lifecycle steps to the next generation
    pilot.wait_for('life', lambda m: m.vessel_id == CHASER and
                   m.runtime_generation == reverted + 1, since, 'the lifecycle after capture')
    # port states sent before the revert may still arrive after the mark, a whole approach
    # of them on a slow machine (the first run at 3x): this run's approach is what follows
    # the last Ready, up to its first docked state

    def approach() -> list:
        messages = pilot.messages('port', since)
        ready = [i for i, m in enumerate(messages) if m.state == 'Ready']
        return messages[ready[-1]:] if ready else []
    pilot.until(lambda: any(m.docked for m in approach()), 'the ports docked after Ready')
    states, docked = [], None
    for message in approach():
        if not states or states[-1] != message.state:
            states.append(message.state)
        if message.docked:
            docked = message
            break
    assert states == ['Ready', 'Acquire', 'Docked (docker)']
    assert docked.state == 'Docked (docker)' and docked.partner_name == 'docking_port_4400002_0'


# -- the launchpad tests, on the shared stack ---------------------------------------

def test_a_fired_decoupler_makes_a_new_nearby_vessel_and_a_new_model(session, ros_node):
    pilot = Pilot(ros_node)
    for key, qos in (('robot_description', LATCHED), ('actuators/separation/result', RESULTS),
                     ('ground_truth/nearby_vessels', qos_profile_sensor_data)):
        pilot.add(key, topics.name(key), topics.message_class(key), qos)
    before = pilot.ready()
    whole = pilot.wait_for('robot_description', lambda m: m.data, what='the rocket model')
    assert acquire(pilot, vessel=ROCKET, duration=5.0)[0].reason == 'lease_acquired'
    since = pilot.mark()
    command = SeparationCommand(id=DECOUPLER, separate=True, operation_id='stage-1',
                                vessel_id=ROCKET, controller_id='ctl', lease_id='lease-1',
                                sequence=pilot.next_sequence('ctl', 'lease-1'))
    pilot.separation_pub.publish(command)
    done = pilot.wait_for('actuators/separation/result',
                          lambda m: m.operation_id == 'stage-1' and m.completed and
                          m.original_runtime_instance == session.runtime_instance, since,
                          'the separation result')
    assert (done.success, done.reason, done.active_vessel_id) == (True, 'separated', ROCKET)
    assert done.result_runtime_generation == before.runtime_generation + 1
    [kept, debris] = done.resulting_vessel_ids
    assert kept == ROCKET and debris != ROCKET
    # the lifecycle steps to the new runtime generation of the same vessel
    pilot.wait_for('life', lambda m: m.runtime_generation == done.result_runtime_generation
                   and m.vessel_id == ROCKET, since, 'the lifecycle of the new topology')
    # the spent stage is a new nearby vessel, marked as debris
    nearby = pilot.wait_for('ground_truth/nearby_vessels', lambda m: any(
        v.vessel_id == debris for v in m.vessels), since, 'the debris among nearby vessels')
    [entry] = [v for v in nearby.vessels if v.vessel_id == debris]
    assert entry.is_debris and entry.vessel_name == 'PyLoN Rocket Debris'
    # a new model of the pod alone
    pod = pilot.wait_for('robot_description', lambda m: m.data and m.data != whole.data, since,
                         'the new model')
    assert (len(links(whole.data)), len(links(pod.data))) == (5, 1)     # one link per part


def test_separation_fires_once_under_a_lease(session, ros_node):
    lease = 'lease-fire'
    pilot = Pilot(ros_node)
    pilot.add('separation', topics.name('actuators/separation/state'), SeparationState,
              LATCHED)
    pilot.ready()
    assert acquire(pilot, vessel=ROCKET, lease=lease, duration=5.0)[0].reason == \
        'lease_acquired'
    pilot.until(lambda: pilot.separation_pub.get_subscription_count() > 0, 'the bridge')
    since = pilot.mark()
    pilot.separation_pub.publish(SeparationCommand(
        id=DECOUPLER, separate=True, operation_id='op-1', vessel_id=ROCKET,
        controller_id='ctl', lease_id=lease, sequence=pilot.next_sequence('ctl', lease)))
    # the latched topic keeps the states of the sessions before: this session's is the one
    fired = pilot.wait_for('separation', lambda m: m.id == DECOUPLER and m.separated and
                           m.runtime_instance == session.runtime_instance, since,
                           'the decoupler fired')
    assert not fired.available and fired.mechanism == 'decoupler'


def test_a_missed_separation_result_is_fetched_through_the_service(session, ros_node):
    lease, operation = 'lease-service', 'stage-service'
    pilot = Pilot(ros_node)
    pilot.add('result', topics.name('actuators/separation/result'), SeparationResult, RESULTS)
    pilot.ready()
    assert acquire(pilot, vessel=ROCKET, lease=lease, duration=5.0)[0].reason == \
        'lease_acquired'
    command = SeparationCommand(id=DECOUPLER, separate=True, operation_id=operation,
                                vessel_id=ROCKET, controller_id='ctl', lease_id=lease,
                                sequence=pilot.next_sequence('ctl', lease))
    pilot.until(lambda: pilot.separation_pub.get_subscription_count() > 0, 'the bridge')
    pilot.separation_pub.publish(command)

    def ours(message):
        return message.original_runtime_instance == session.runtime_instance
    done = pilot.wait_for('result', lambda m: m.operation_id == operation and m.completed and
                          ours(m), what='the separation result')
    assert (done.success, done.retained, done.reason, done.id) == (
        True, True, 'separated', DECOUPLER)
    # a client that missed the topic asks the service: the cached receipt, no query
    client = ros_node.create_client(GetSeparationResult,
                                    topics.name('actuators/separation/get_result'))
    assert client.wait_for_service(timeout_sec=60.0)

    def call(operation_id):
        future = client.call_async(GetSeparationResult.Request(
            operation_id=operation_id, original_runtime_instance=done.original_runtime_instance,
            original_runtime_epoch=done.original_runtime_epoch,
            original_vessel_id=done.original_vessel_id))
        spin_until(ros_node, future.done, 60.0, pilot.executor, what='the service answer')
        return future.result()
    cached = call(operation)
    assert (cached.found, cached.query_sent, cached.reason) == (True, False, 'separated')
    assert cached.result.success and cached.result.sequence == command.sequence
    assert 0.0 < cached.result.retention_remaining_sec <= 600.0
    # an operation the bridge never saw: a query goes to the game, the answer on the topic
    unknown = call('never-sent')
    assert (unknown.found, unknown.query_sent, unknown.reason) == (False, True, 'query_sent')
    answer = pilot.wait_for('result', lambda m: m.operation_id == 'never-sent' and ours(m),
                            what="the game's answer to the query")
    assert (answer.completed, answer.retained, answer.reason) == (
        True, False, 'result_not_retained')


def test_after_a_separation_the_ros_side_offers_what_the_vessel_still_has(
        stack, session, ros_node):
    # the manifests: the engine's port leaves, its topics with it; the decoupler is latched
    # separated in the new runtime generation; neither manifest counted as ignored
    pilot = Pilot(ros_node)
    pilot.add('separation', topics.name('actuators/separation/state'), SeparationState,
              LATCHED)
    pilot.add('diagnostics', topics.name('diagnostics'), topics.message_class('diagnostics'),
              topics.qos('diagnostics', reader=True))
    before = pilot.ready()
    port_topics = {port: topics.name('docking_port/state', id=port)
                   for port in (POD_PORT, ENGINE_PORT)}
    pilot.until(lambda: all(ros_node.count_publishers(name) for name in port_topics.values()),
                'both docking port topics offered')
    assert acquire(pilot, vessel=ROCKET, lease='lease-manifest', duration=5.0)[0].reason == \
        'lease_acquired'
    pilot.until(lambda: pilot.separation_pub.get_subscription_count() > 0, 'the bridge')
    since = pilot.mark()
    pilot.separation_pub.publish(SeparationCommand(
        id=DECOUPLER, separate=True, operation_id='stage-manifest', vessel_id=ROCKET,
        controller_id='ctl', lease_id='lease-manifest',
        sequence=pilot.next_sequence('ctl', 'lease-manifest')))
    # this test's runtime session only: an earlier test's session on the shared stack may
    # have had a generation of the same number, and the latched topic's history of it can
    # reach this new subscription late on a busy machine (seen in a full run)
    instance = session.runtime_instance
    staged = pilot.wait_for('life', lambda m: m.vessel_id == ROCKET and
                            m.runtime_instance == instance and
                            m.runtime_generation > before.runtime_generation, since,
                            'the lifecycle of the new topology').runtime_generation
    latched = pilot.wait_for('separation', lambda m: m.id == DECOUPLER and
                             m.runtime_instance == instance and
                             m.runtime_generation == staged, since,
                             'the decoupler latched in the new generation')
    assert (latched.separated, latched.available, latched.vessel_id) == (True, False, ROCKET)
    # the port manifest comes once a simulated second: long before 120 s of silence
    soon = stack.clock_reached(5.0)
    pilot.until(lambda: not ros_node.count_publishers(port_topics[ENGINE_PORT]) or soon(),
                "the engine's port withdrawn or 5 s of game time")
    assert ros_node.count_publishers(port_topics[ENGINE_PORT]) == 0
    assert ros_node.count_publishers(port_topics[POD_PORT]) == 1
    diagnostics = pilot.wait_for('diagnostics', lambda m: any(
        kv.key == 'received.pylon_docking_port_manifest' for s in m.status for kv in s.values),
        since, 'the datagram counters')
    keys = {kv.key for status in diagnostics.status for kv in status.values}
    assert {'received.pylon_actuator_manifest', 'received.pylon_docking_port_manifest'} <= keys
    assert not keys & {'ignored.pylon_actuator_manifest', 'ignored.pylon_docking_port_manifest'}
