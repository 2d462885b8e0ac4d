"""Topology changes end to end through udp_bridge: a decoupler splits, two ports dock."""

import xml.etree.ElementTree as ET  # noqa: N817

from pylon_common import topics
from pylon_interfaces.msg import SeparationCommand
from pylon_testing.pilot import acquire, LATCHED, Pilot
import pytest
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy

pytestmark = pytest.mark.integration

ROCKET = '3d2c1b0a9f8e7d6c5b4a392817061f2e'
CHASER = '6c1a5e0b2d3f4a9b8c7d6e5f4a3b2c1d'
CHASER_PORT = 'docking_port_3300002_0'
DECOUPLER = 'decoupler_9900002_0'
RESULTS = QoSProfile(depth=128, reliability=ReliabilityPolicy.RELIABLE,
                     durability=LATCHED.durability)


def links(urdf: str) -> set[str]:
    return {link.get('name') for link in ET.fromstring(urdf).findall('link')}


def test_a_fired_decoupler_makes_a_new_nearby_vessel_and_a_new_model(sim_stack, ros_node,
                                                                       lean_scenario):
    sim_stack(scenario=lean_scenario('launchpad'))
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
                          lambda m: m.operation_id == 'stage-1' and m.completed, since,
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


def test_the_scripted_approach_shows_the_port_states_in_order(sim_stack, ros_node):
    stack = sim_stack(scenario='docking', sim_args=['--rate', '3'])   # no controller: 3x
    pilot = Pilot(ros_node)
    key = 'docking_port/state'
    pilot.add('port', topics.name(key, id=CHASER_PORT), topics.message_class(key),
              topics.qos(key, reader=True))
    pilot.ready()
    pilot.wait_for('port', what='the chaser port state')
    reverted = stack.admin('revert')['runtimeGeneration']   # from the start, now we listen
    since = pilot.mark()
    pilot.wait_for('port', lambda m: m.state == 'Ready', since, 'the port ready after revert')
    docked = pilot.wait_for('port', lambda m: m.docked, since, 'the ports docked')
    assert docked.state == 'Docked (docker)' and docked.partner_name == 'docking_port_4400002_0'
    states = []
    for message in pilot.messages('port', since):
        if not states or states[-1] != message.state:
            states.append(message.state)
    assert states[states.index('Ready'):] == ['Ready', 'Acquire', 'Docked (docker)']
    # the capture changed the chaser's topology: the lifecycle steps to the next generation
    pilot.wait_for('life', lambda m: m.vessel_id == CHASER and
                   m.runtime_generation == reverted + 1, since, 'the lifecycle after capture')
