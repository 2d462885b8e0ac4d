"""The two manifests without ROS: actuators removed, separators latched, ports withdrawn."""

import json

from pylon_bridge import commands
from pylon_bridge.commands import CommandError
from pylon_bridge.core import Destroy
from pylon_bridge.manifests import absent_ports, ActuatorManifest
from pylon_interfaces.msg import RcsCommand
from pylon_testing import mod_datagrams as d
from pylon_testing.core_driver import started
import pytest

DECOUPLER, FAIRING = 'decoupler_3002_0', 'fairing_3004_0'
IDENTITY = {'vessel_id': d.VESSEL, 'controller_id': 'ctl', 'lease_id': 'lease',
            'sequence': 1}


def manifest(*entries, vessel=d.VESSEL, env=d.ENV):
    return d.encode('pylon_actuator_manifest', env, vesselId=vessel, actuators=[
        {'actuatorType': kind, 'name': name} for kind, name in entries])


def separator(name=DECOUPLER, separated=False, env=d.ENV):
    return d.encode('pylon_actuator_state', env, actuatorType='separation', name=name,
                    vesselId=d.VESSEL, universalTime=d.UT, mechanism='decoupler',
                    available=not separated, separated=separated)


def port_state(name):
    return d.encode('pylon_docking_port_state', name=name, state='Ready', docked=False,
                    acquiring=False, releasable=False, cameraActive=False)


def ports(*names):
    return d.encode('pylon_docking_port_manifest', ports=[
        {'name': name, 'partFlightId': 4000 + k, 'moduleIndex': 0}
        for k, name in enumerate(names)])


# -- the plain classes ----------------------------------------------------------------------

def packet(vessel, *entries):
    return {'vesselId': vessel, 'runtimeInstance': 'i', 'runtimeGeneration': 4,
            'runtimeEpoch': 'e', 'actuators': [{'actuatorType': kind, 'name': name}
                                               for kind, name in entries]}


def test_an_actuator_left_out_is_removed_and_a_separator_latched():
    tracker = ActuatorManifest()
    tracker.observe({'actuatorType': 'separation', 'name': DECOUPLER, 'vesselId': 'v',
                     'separated': False, 'available': True, 'runtimeGeneration': 3})
    first = tracker.update(packet('v', ('separation', DECOUPLER), ('motor', 'hinge')),
                           {'motor': ['hinge'], 'rcs': ['rcs_1_0']})
    assert (first.removed, first.latched) == ({'rcs': frozenset({'rcs_1_0'})}, ())
    staged = tracker.update(packet('v', ('engine', 'engine_1_0')), {'motor': ['hinge']})
    assert staged.of('motor') == {'hinge'} and staged.of('separation') == {DECOUPLER}
    [latched] = staged.latched
    assert (latched['name'], latched['separated'], latched['available']) == (
        DECOUPLER, True, False)
    assert (latched['runtimeGeneration'], latched['runtimeInstance']) == (4, 'i')
    # latched once: the next manifest has nothing more to say of it
    assert tracker.update(packet('v'), {}).latched == ()


def test_a_new_vessel_resets_everything_and_latches_nothing():
    tracker = ActuatorManifest()
    tracker.observe({'actuatorType': 'separation', 'name': DECOUPLER, 'vesselId': 'v',
                     'separated': False, 'available': True})
    switched = tracker.update(packet('w'), {})
    assert (switched.removed, switched.latched, tracker.vessel_id) == ({}, (), 'w')
    assert tracker.separators == {}


def test_absent_ports_are_the_topic_ids_the_manifest_leaves_out():
    listed = {'ports': [{'name': 'Docking Port(2)'}, {'name': 'docking_port_1_0'}]}
    assert absent_ports(listed, {'docking_port_2', 'docking_port_1_0', 'docking_port_9_0'}) \
        == ['docking_port_9_0']
    assert absent_ports({'ports': []}, {'docking_port_1_0'}) == ['docking_port_1_0']


# -- through the core --------------------------------------------------------------------

def test_the_manifests_are_handled_not_ignored():
    driver = started()
    driver.feed(manifest(('separation', DECOUPLER)), ports())
    assert driver.core.stats.ignored == {}
    assert driver.core.stats.by_type['pylon_actuator_manifest'] == 1
    assert driver.core.stats.by_type['pylon_docking_port_manifest'] == 1


def test_a_separator_that_left_with_a_stage_is_latched_separated_in_the_new_run():
    driver = started()
    driver.feed(manifest(('separation', DECOUPLER), ('separation', FAIRING)),
                separator(), separator(FAIRING))
    staged = d.envelope(generation=4)
    driver.feed(d.session(env=staged, sequence=2))
    actions = driver.feed(manifest(('separation', FAIRING), env=staged))
    [latched] = driver.published('actuators/separation/state', actions)
    assert (latched.id, latched.separated, latched.available) == (DECOUPLER, True, False)
    assert (latched.runtime_generation, latched.vessel_id) == (4, d.VESSEL)
    assert latched.mechanism == 'decoupler'
    # the fairing stayed: nothing more, and the next manifest latches nothing again
    assert driver.published('actuators/separation/state',
                            driver.feed(manifest(('separation', FAIRING), env=staged))) == []


def test_a_servo_left_out_leaves_the_joint_states():
    driver = started()
    driver.feed(manifest(('motor', 'arm_hinge'), ('motor', 'mast_hinge')),
                d.motor('arm_hinge', 0.5), d.motor('mast_hinge', 0.25))
    assert list(driver.published('joint_states')[-1].name) == ['arm_hinge', 'mast_hinge']
    driver.feed(manifest(('motor', 'mast_hinge')))
    driver.feed(d.motor('mast_hinge', 0.3, ut=d.UT + 0.1))
    assert list(driver.published('joint_states')[-1].name) == ['mast_hinge']


def test_an_rcs_module_left_out_takes_commands_no_more():
    driver = started()
    driver.feed(d.encode('pylon_actuator_state', actuatorType='rcs', name='rcs_1_0',
                         vesselId=d.VESSEL, enabled=True, active=False, flameout=False,
                         thrust=0.0, maxThrust=4000.0, thrustLimit=500.0,
                         commandActive=False, nozzleCount=4))
    limit = commands.rcs_command(RcsCommand(**IDENTITY, id='rcs_1_0', enabled=True,
                                            thrust_limit=2000.0), 0.5)
    assert json.loads(driver.core.command(limit, driver.now))['thrustLimit'] == 500.0
    driver.feed(manifest(('engine', 'engine_1_0')))
    with pytest.raises(CommandError) as info:
        driver.core.command(limit, driver.now)
    assert info.value.reason == 'rcs_module_unknown'


def test_a_docking_port_left_out_loses_its_topics_at_once():
    driver = started()
    driver.feed(ports('docking_port_3008_0', 'docking_port_3009_1'),
                port_state('docking_port_3008_0'), port_state('docking_port_3009_1'))
    removed = driver.feed(ports('docking_port_3009_1'))
    assert removed == [Destroy('docking_port/state', 'docking_port_3008_0')]
    # on vessel change the mod sends an empty list: every port goes
    assert driver.feed(ports()) == [Destroy('docking_port/state', 'docking_port_3009_1')]
    assert driver.feed(ports()) == []
