"""ROS commands to PyLoN datagrams: mapping, validation and the reasons of refusals."""

import json
import math

from pylon_bridge import commands
from pylon_bridge.commands import CommandError
from pylon_bridge.core import BridgeCore, CoreConfig, Publish
from pylon_interfaces.msg import (
    BodyWrenchCommand,
    ControlAuthorityCommand,
    ControlBatch,
    DockingPortCommand,
    EngineCommand,
    FlightControlCommand,
    MotorCommand,
    RcsCommand,
    SeparationCommand,
    WheelCommand,
)
from pylon_protocol import names, packets
from pylon_testing import mod_datagrams as d
import pytest

IDENTITY = {'vessel_id': d.VESSEL, 'controller_id': 'ctl', 'lease_id': 'lease-1',
            'sequence': 7}


def wrench(**changes):
    msg = BodyWrenchCommand(**IDENTITY, timeout_sec=0.5)
    msg.wrench.force.x, msg.wrench.torque.z = 100.0, -2.5
    for name, value in changes.items():
        if name == 'frame_id':
            msg.header.frame_id = value
        elif name in ('fx', 'tz'):
            setattr(msg.wrench.force if name == 'fx' else msg.wrench.torque,
                    'x' if name == 'fx' else 'z', value)
        else:
            setattr(msg, name, value)
    return msg


def reason_of(build, *args):
    with pytest.raises(CommandError) as info:
        build(*args)
    return info.value.reason


def test_authority_actions_map_to_the_wire():
    msg = ControlAuthorityCommand(action=ControlAuthorityCommand.ACTION_ACQUIRE, priority=3,
                                  lease_duration_sec=1.0, suppress_sas=True, **IDENTITY)
    out = commands.authority_command(msg)
    assert out.type_name == 'pylon_control_authority_command'
    assert out.fields == {'action': 'acquire', 'vesselId': d.VESSEL, 'controllerId': 'ctl',
                          'leaseId': 'lease-1', 'sequence': 7, 'priority': 3,
                          'suppressSas': True, 'leaseDurationSeconds': 1.0}
    for action, name in commands.AUTHORITY_ACTIONS.items():
        msg.action = action
        assert commands.authority_command(msg).fields['action'] == name
    msg.action = ControlAuthorityCommand.ACTION_RELEASE
    assert 'leaseDurationSeconds' not in commands.authority_command(msg).fields


@pytest.mark.parametrize('changes, reason', [
    ({'action': 9}, 'unsupported_authority_action'),
    ({'lease_duration_sec': 20.0}, 'invalid_lease'),
    ({'lease_duration_sec': math.nan}, 'invalid_lease'),
    ({'controller_id': ' '}, 'invalid_lease'),
    ({'lease_id': ''}, 'invalid_lease'),
    ({'sequence': 0}, 'invalid_lease'),
])
def test_bad_authority_commands(changes, reason):
    fields = {**IDENTITY, 'action': 1, 'lease_duration_sec': 1.0, **changes}
    assert reason_of(commands.authority_command, ControlAuthorityCommand(**fields)) == reason


def test_wrench_command_fields():
    out = commands.wrench_command(wrench(frame_id='base_link'))
    assert out.fields == {'frame': 'base_link', 'vesselId': d.VESSEL, 'controllerId': 'ctl',
                          'leaseId': 'lease-1', 'sequence': 7, 'force': [100.0, 0.0, 0.0],
                          'torque': [0.0, 0.0, -2.5], 'timeoutSeconds': 0.5}
    assert commands.wrench_command(wrench()).fields['frame'] == 'base_link'


@pytest.mark.parametrize('changes, reason', [
    ({'frame_id': 'odom'}, 'unsupported_wrench_frame'),
    ({'fx': math.inf}, 'non_finite_command'),
    ({'tz': math.nan}, 'non_finite_command'),
    ({'timeout_sec': 0.0}, 'invalid_wrench'),
    ({'timeout_sec': 11.0}, 'invalid_wrench'),
    ({'timeout_sec': math.nan}, 'non_finite_command'),
])
def test_bad_wrench_commands(changes, reason):
    assert reason_of(commands.wrench_command, wrench(**changes)) == reason


def test_typed_commands_use_the_default_timeout_for_zero():
    engine = EngineCommand(**IDENTITY, id='engine_1_0', enabled=True, target_thrust=5e4,
                           has_gimbal_command=True, gimbal_pitch=0.2, gimbal_yaw=-1.0)
    out = commands.engine_command(engine, 0.5)
    assert out.fields['timeoutSeconds'] == 0.5 and out.fields['actuatorType'] == 'engine'
    assert (out.fields['targetThrust'], out.fields['gimbalPitch'], out.fields['gimbalYaw']) == (
        5e4, 0.2, -1.0)
    engine.timeout_sec = 2.0
    assert commands.engine_command(engine, 0.5).fields['timeoutSeconds'] == 2.0
    rcs = commands.rcs_command(RcsCommand(**IDENTITY, id='rcs_1_0', enabled=True,
                                          thrust_limit=500.0), 0.7)
    assert rcs.fields['thrustLimit'] == 500.0 and rcs.fields['timeoutSeconds'] == 0.7
    wheel = commands.wheel_command(WheelCommand(**IDENTITY, id='wheel_1_0', enabled=True,
                                                target_angular_velocity=3.0, brake=0.5), 0.5)
    assert wheel.fields['brake'] == 0.5 and wheel.fields['targetAngularVelocity'] == 3.0
    motor = commands.motor_command(MotorCommand(**IDENTITY, id='mast_hinge', enabled=True,
                                                mode=MotorCommand.MODE_VELOCITY, velocity=0.3),
                                   0.5)
    assert (motor.fields['hasPosition'], motor.fields['hasVelocity'],
            motor.fields['hasEffort']) == (False, True, False)
    separation = commands.separation_command(SeparationCommand(
        **IDENTITY, id='decoupler_1_0', separate=True, operation_id='op-1'), 0.5)
    assert separation.fields['separate'] and separation.fields['operationId'] == 'op-1'
    dock = commands.docking_command(DockingPortCommand(**IDENTITY, action=3), 'docking_port_1_0')
    assert dock.fields['name'] == 'docking_port_1_0' and dock.fields['action'] == 3
    for out in (commands.engine_command(engine, 0.5), rcs, wheel, motor, separation,
                dock):
        packets.build_command(out.type_name, None, **out.fields)      # the codec agrees


@pytest.mark.parametrize('build, msg', [
    (commands.engine_command, EngineCommand(**IDENTITY, id='e', target_thrust=-1.0)),
    (commands.engine_command, EngineCommand(**IDENTITY, id='e', gimbal_roll=1.5)),
    (commands.engine_command, EngineCommand(**IDENTITY, id='e', target_thrust=math.nan)),
    (commands.engine_command, EngineCommand(**IDENTITY, id='', target_thrust=1.0)),
    (commands.engine_command, EngineCommand(**IDENTITY, id='e', timeout_sec=20.0)),
    (commands.rcs_command, RcsCommand(**IDENTITY, id='r', thrust_limit=-5.0)),
    (commands.wheel_command, WheelCommand(**IDENTITY, id='w', brake=2.0)),
    (commands.motor_command, MotorCommand(**IDENTITY, id='m', mode=7)),
])
def test_bad_typed_commands(build, msg):
    assert reason_of(build, msg, 0.5) in ('invalid_command', 'non_finite_command')


def opened_core():
    core = BridgeCore(CoreConfig())
    core.handle(d.session(), ('127.0.0.1', 1), 0.0, 100.0)
    return core


def test_core_appends_the_session_envelope_last():
    data = opened_core().command(commands.wrench_command(wrench()), 0.1)
    packet = json.loads(data)
    assert list(packet)[-4:] == ['runtimeInstance', 'runtimeGeneration', 'runtimeEpoch',
                                 'runtimeVesselId']
    assert packet['runtimeEpoch'] == d.EPOCH and packet['type'] == 'pylon_body_wrench_command'
    assert packets.decode_command(data)['force'] == [100.0, 0.0, 0.0]


def test_no_command_without_a_fresh_session():
    assert reason_of(BridgeCore(CoreConfig()).command,
                     commands.wrench_command(wrench()), 0.0) == 'control_unavailable'
    assert reason_of(opened_core().command, commands.wrench_command(wrench()),
                     10.0) == 'control_unavailable'


def test_refusals_are_reported_to_the_sender():
    core = opened_core()
    error = CommandError('unsupported_wrench_frame', 'odom')
    [feedback] = core.command_rejected('control/wrench_command', wrench(frame_id='odom'),
                                       error, 100.0)
    assert isinstance(feedback, Publish) and feedback.key == 'control/wrench_feedback'
    assert not feedback.msg.accepted and feedback.msg.reason == 'unsupported_wrench_frame'
    assert feedback.msg.sequence == 7 and feedback.msg.requested.force.x == 100.0
    [state] = core.command_rejected('control/authority/command',
                                    ControlAuthorityCommand(**IDENTITY, action=9),
                                    CommandError('unsupported_authority_action', '9'), 100.0)
    assert state.msg.reason == 'unsupported_authority_action'
    assert state.msg.vessel_id == d.VESSEL and state.msg.state == 0
    assert core.command_rejected('actuators/rcs/command', None,
                                 CommandError('invalid_command', 'x'), 100.0) == []
    assert core.stats.commands_rejected == {'unsupported_wrench_frame': 1,
                                            'unsupported_authority_action': 1,
                                            'invalid_command': 1}


def flight(**changes):
    return FlightControlCommand(**{**IDENTITY, 'pitch': 0.5, 'yaw': -0.25, 'roll': 1.0,
                                   'landing_gear': True, 'timeout_sec': 0.2, **changes})


def test_flight_command_fields():
    out = commands.flight_command(flight())
    assert out.type_name == 'pylon_flight_control_command'
    assert out.fields == {'vesselId': d.VESSEL, 'controllerId': 'ctl', 'leaseId': 'lease-1',
                          'sequence': 7, 'landingGear': True, 'timeoutSeconds': 0.2,
                          'pitch': 0.5, 'yaw': -0.25, 'roll': 1.0}
    packets.build_command(out.type_name, None, **out.fields)


@pytest.mark.parametrize('changes, reason', [
    ({'timeout_sec': 0.0}, 'invalid_command'),          # no default for flight inputs
    ({'timeout_sec': 1.5}, 'invalid_command'),
    ({'timeout_sec': math.inf}, 'non_finite_command'),
    ({'pitch': 1.01}, 'invalid_command'),
    ({'roll': math.nan}, 'non_finite_command'),
    ({'lease_id': ''}, 'invalid_lease'),
    ({'sequence': 0}, 'invalid_lease'),
])
def test_bad_flight_commands(changes, reason):
    assert reason_of(commands.flight_command, flight(**changes)) == reason


def batch(**changes):
    engines = [EngineCommand(id='engine_1_0', enabled=True, target_thrust=1000.0,
                             timeout_sec=0.5, sequence=99, lease_id='ignored'),
               EngineCommand(id='engine_2_0', enabled=True, target_thrust=0.0,
                             timeout_sec=0.3, has_gimbal_command=True, gimbal_yaw=0.5)]
    msg = ControlBatch(**IDENTITY, renew_lease=True, lease_duration_sec=2.0,
                       has_flight=True, flight=flight(sequence=1, lease_id='other'),
                       engines=engines, has_separation=True,
                       separation=SeparationCommand(id='decoupler_3_0', separate=True))
    for name, value in changes.items():
        setattr(msg, name, value)
    return msg


def test_batch_members_carry_the_batch_identity_and_travel_as_strings():
    core = opened_core()
    packet = packets.decode_command(core.command(commands.control_batch(batch()), 0.1))
    assert (packet['renewLease'], packet['leaseDurationSeconds'], packet['hasFlight']) == (
        True, 2.0, True)
    members = packets.batch_members(packet)
    identity = ('vesselId', 'controllerId', 'leaseId', 'sequence')
    for member in (members['flight'], members['separation'], *members['engines']):
        assert tuple(member[k] for k in identity) == (d.VESSEL, 'ctl', 'lease-1', 7)
    assert [e['name'] for e in members['engines']] == ['engine_1_0', 'engine_2_0']
    assert members['engines'][1]['gimbalYaw'] == 0.5 and members['flight']['roll'] == 1.0
    separation = members['separation']
    assert separation['operationId'] == names.legacy_operation_id(
        'ctl', 'lease-1', 'decoupler_3_0', 7)
    assert (separation['operationInstance'], separation['operationEpoch'],
            separation['operationVesselId']) == (d.INSTANCE, d.EPOCH, d.VESSEL)
    assert all(isinstance(text, str) for text in json.loads(
        core.command(commands.control_batch(batch(sequence=8)), 0.1))['engineJson'])


def bad_engine(**changes):
    msg = batch()
    engines = list(msg.engines)
    for name, value in changes.items():
        setattr(engines[1], name, value)
    msg.engines = engines
    return msg


@pytest.mark.parametrize('msg, reason', [
    (bad_engine(timeout_sec=0.0), 'invalid_command'),   # no default in a batch
    (bad_engine(timeout_sec=2.0), 'invalid_command'),   # batch engines: at most 1 s
    (bad_engine(id='Engine 1 0'), 'invalid_command'),   # repeats engine_1_0 once sanitised
    (bad_engine(target_thrust=math.nan), 'non_finite_command'),
    (bad_engine(gimbal_pitch=-1.5), 'invalid_command'),
    (batch(lease_duration_sec=20.0), 'invalid_lease'),
    (batch(sequence=2**63), 'invalid_lease'),
    (batch(flight=flight(timeout_sec=0.0)), 'invalid_command'),
    (batch(separation=SeparationCommand(id='decoupler_3_0', separate=False)),
     'invalid_command'),
])
def test_a_batch_with_one_bad_member_is_refused_whole(msg, reason):
    assert reason_of(commands.control_batch, msg) == reason


def test_separation_command_operation_identity_is_filled_once_the_session_is_known():
    core = opened_core()
    given = SeparationCommand(**IDENTITY, id='decoupler_1_0', separate=True, operation_id='op-9')
    packet = json.loads(core.command(commands.separation_command(given, 0.5), 0.1))
    assert (packet['operationId'], packet['operationEpoch']) == ('op-9', d.EPOCH)
    empty = SeparationCommand(**IDENTITY, id='decoupler_1_0', separate=True)
    packet = json.loads(core.command(commands.separation_command(empty, 0.5), 0.1))
    assert packet['operationId'].startswith('legacy-') and len(packet['operationId']) == 71
    assert packet['operationVesselId'] == d.VESSEL


def rcs_state(name='rcs_1_0', limit=1000.0, **extra):
    return d.encode('pylon_actuator_state', actuatorType='rcs', name=name, vesselId=d.VESSEL,
                    enabled=True, active=False, flameout=False, thrust=0.0, maxThrust=4000.0,
                    thrustLimit=limit, commandActive=False, **extra)


def test_rcs_limits_are_per_module_in_ros_and_per_nozzle_on_the_wire():
    core = opened_core()
    limit = RcsCommand(**IDENTITY, id='rcs_1_0', enabled=True, thrust_limit=2000.0)
    with pytest.raises(CommandError) as info:          # no state yet: nozzles unknown
        core.command(commands.rcs_command(limit, 0.5), 0.1)
    assert info.value.reason == 'rcs_module_unknown'
    [state] = [a.msg for a in core.handle(rcs_state(limit=500.0, nozzleCount=4),
                                          ('127.0.0.1', 1), 0.1, 100.1)
               if a.key == 'actuators/rcs/state']
    assert (state.thrust_limit, state.max_thrust) == (2000.0, 4000.0)     # N per module
    packet = json.loads(core.command(commands.rcs_command(limit, 0.5), 0.1))
    assert packet['thrustLimit'] == 500.0                                 # N per nozzle


def test_rcs_nozzles_are_estimated_safely_without_the_extension():
    core = opened_core()
    core.handle(rcs_state(limit=1000.0), ('127.0.0.1', 1), 0.1, 100.1)   # stock 100 %
    core.handle(rcs_state(limit=250.0), ('127.0.0.1', 1), 0.1, 100.1)    # limiter 25 %
    assert core.actuation.rcs.nozzles['rcs_1_0'] == 4
    low = opened_core()                     # a limiter never seen at 100 %: more nozzles
    low.handle(rcs_state(limit=500.0), ('127.0.0.1', 1), 0.1, 100.1)
    packet = json.loads(low.command(commands.rcs_command(
        RcsCommand(**IDENTITY, id='rcs_1_0', enabled=True, thrust_limit=2000.0), 0.5), 0.1))
    assert packet['thrustLimit'] == 250.0   # limits more than asked (8 nozzles), never less


def test_the_rcs_nozzle_table_stops_learning_at_its_bound():
    core = opened_core()
    core.actuation.rcs.max_modules = 3
    for k in range(5):
        core.handle(rcs_state(name=f'rcs_{k}_0', limit=500.0, nozzleCount=4),
                    ('127.0.0.1', 1), 0.1, 100.1)
    assert sorted(core.actuation.rcs.nozzles) == ['rcs_0_0', 'rcs_1_0', 'rcs_2_0']
    core.handle(rcs_state(name='rcs_1_0', limit=500.0, nozzleCount=2), ('127.0.0.1', 1),
                0.1, 100.1)
    assert core.actuation.rcs.nozzles['rcs_1_0'] == 2          # a known module still updates
    with pytest.raises(CommandError) as info:
        core.command(commands.rcs_command(RcsCommand(
            **IDENTITY, id='rcs_4_0', enabled=True, thrust_limit=2000.0), 0.5), 0.1)
    assert info.value.reason == 'rcs_module_unknown'
