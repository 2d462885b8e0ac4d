"""TypedActuators: typed engine, RCS, wheel, servo, separation and docking port overrides."""

import math

from pylon_sim.game.vessel import Module, Part, Shape, VesselSpec
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.mod.typed_actuators import TypedActuators
from pylon_sim.mod.typed_common import clamp_timeout
import pytest

VESSEL_ID = '5a1e0c3b9d8f47e6a2b4c6d8e0f1a2b3'
FULL = {'LiquidFuel': 100.0, 'Oxidizer': 100.0, 'SolidFuel': 100.0, 'ElectricCharge': 100.0}
OK = 'command_accepted'

MAIN = 'engine_101_0'        # gimballed, instant response
PLAIN = 'engine_102_0'       # no gimbal
SOLID = 'engine_103_0'       # throttle locked
MODE_A, MODE_B = 'engine_104_0', 'engine_104_1'   # two modes, one gimbal
SLOW = 'engine_105_0'        # limiter, yaw disabled, slewing
LOCKED = 'engine_106_0'      # gimbal locked
ONESHOT = 'engine_107_0'     # cannot restart
RCS = 'rcs_108_0'
WHEEL = 'wheel_109_0'
SERVO = 'arm'
DECOUPLER = 'decoupler_111_0'
DOCKED = 'docking_port_112_0'
FREE = 'docking_port_113_0'
COLD = 'engine_114_0'        # cannot restart, not ignited at start


def part(pid, *modules):
    return Part(name=f'part.{pid}', title=f'Part {pid}', persistent_id=pid,
                flight_id=9000 + pid, parent=0 if pid > 100 else None,
                position=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0, 1.0),
                dry_mass=10.0, shape=Shape('box', (0.5, 0.5, 0.5)), modules=tuple(modules))


def engine(index=0, **settings):
    return Module('engine', index, settings)


def make_spec():
    return VesselSpec(VESSEL_ID, 'Test Vessel', (
        part(100, Module('command', 0)),
        part(101, engine(max_thrust=60000.0, gimbal_range_deg=4.0)),
        part(102, engine(max_thrust=20000.0)),
        part(103, engine(max_thrust=100000.0, throttle_locked=True)),
        part(104, engine(0, max_thrust=100000.0, gimbal_range_deg=3.0, gimbal_group='rapier'),
             engine(1, max_thrust=80000.0, gimbal_range_deg=3.0, gimbal_group='rapier')),
        part(105, engine(max_thrust=50000.0, gimbal_range_deg=5.0, gimbal_limit=0.5,
                         gimbal_enable_yaw=False, gimbal_response_deg_per_sec=10.0)),
        part(106, engine(max_thrust=50000.0, gimbal_range_deg=5.0, gimbal_locked=True)),
        part(107, engine(max_thrust=40000.0, restartable=False)),
        part(108, Module('rcs', 0, {'thruster_power': 1000.0, 'thrust_directions': [
            [1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0]]})),
        part(109, Module('wheel', 0, {'radius': 0.3, 'max_drive_torque': 150.0,
                                      'steerable': True, 'max_steering_angle_deg': 30.0})),
        part(110, Module('servo', 0, {'joint': 'revolute', 'motor_name': 'arm', 'lower': -1.0,
                                      'upper': 1.0, 'velocity': 0.5, 'effort': 50.0})),
        part(111, Module('decoupler', 0)),
        part(112, Module('docking_port', 0, {'node_type': 'size1', 'docked': True,
                                             'partner_name': 'docking_port_2200002_0',
                                             'partner_part_flight_id': 5200002})),
        part(113, Module('docking_port', 0, {'node_type': 'size1'})),
        part(114, engine(max_thrust=40000.0, restartable=False, ignited=False)),
    ))


@pytest.fixture
def typed():
    return TypedActuators(make_spec())


def eng(name, sequence=2, thrust=0.0, enabled=True, gimbal=None, timeout=0.5):
    packet = {'type': 'pylon_actuator_command', 'actuatorType': 'engine', 'name': name,
              'vesselId': VESSEL_ID, 'controllerId': 'ctl', 'leaseId': 'l1',
              'sequence': sequence, 'enabled': enabled, 'targetThrust': thrust,
              'timeoutSeconds': timeout, 'hasGimbalCommand': gimbal is not None,
              'gimbalPitch': 0.0, 'gimbalYaw': 0.0, 'gimbalRoll': 0.0}
    if gimbal is not None:
        packet['gimbalPitch'], packet['gimbalYaw'], packet['gimbalRoll'] = gimbal
    return packet


def rcs(limit, enabled=True, sequence=2, timeout=0.5):
    return {'actuatorType': 'rcs', 'name': RCS, 'sequence': sequence, 'enabled': enabled,
            'thrustLimit': limit, 'timeoutSeconds': timeout}


def wheel(sequence=2, timeout=0.5, **fields):
    base = {'enabled': True, 'targetAngularVelocity': 0.0, 'steeringAngle': 0.0,
            'maxDriveTorque': 0.0, 'brake': 0.0}
    return {'actuatorType': 'wheel', 'name': WHEEL, 'sequence': sequence,
            'timeoutSeconds': timeout, **base, **fields}


def motor(mode, value, sequence=2, timeout=2.0, enabled=True, **extra):
    packet = {'type': 'pylon_motor_command', 'name': SERVO, 'partFlightId': 0, 'mode': mode,
              'hasEnabled': True, 'enabled': enabled, 'hasPosition': False, 'position': 0.0,
              'hasVelocity': False, 'velocity': 0.0, 'hasEffort': False, 'effort': 0.0,
              'timeoutSeconds': timeout, 'sequence': sequence}
    if enabled:
        packet['has' + mode.capitalize()] = True
        packet[mode] = value
    packet.update(extra)
    return packet


def separate(value=True, sequence=2):
    return {'actuatorType': 'separation', 'name': DECOUPLER, 'separate': value,
            'sequence': sequence, 'timeoutSeconds': 0.5, 'enabled': True}


def dock(name, action, sequence=2):
    return {'type': 'pylon_docking_port_command', 'name': name, 'action': action,
            'sequence': sequence, 'vesselId': VESSEL_ID, 'controllerId': 'ctl',
            'leaseId': 'l1'}


# ---------------------------------------------------------------- engines: thrust


def test_target_thrust_sets_the_independent_throttle_until_the_timeout(typed):
    assert MAIN in typed.allocatable_engines()
    assert typed.command(eng(MAIN, thrust=15000.0, timeout=0.5), 10.0) == OK
    assert typed.independent_throttle(MAIN) == pytest.approx(0.25)
    assert typed.engine_thrust()[MAIN] == pytest.approx(15000.0)
    assert MAIN not in typed.allocatable_engines()
    fields = typed.state_fields(MAIN)
    assert fields['commandActive'] is True
    assert fields['throttle'] == pytest.approx(0.25)
    assert fields['thrust'] == pytest.approx(15000.0)
    assert fields['maxThrust'] == 60000.0
    typed.tick(10.49, 0.02, FULL)
    assert typed.engine_thrust()[MAIN] == pytest.approx(15000.0)
    typed.tick(10.5, 0.01, FULL)
    assert MAIN not in typed.engine_thrust()
    assert typed.independent_throttle(MAIN) == 0.0
    assert MAIN in typed.allocatable_engines()
    fields = typed.state_fields(MAIN)
    assert fields['commandActive'] is False and 'throttle' not in fields


def test_thrust_beyond_max_thrust_clamps_the_throttle_to_one(typed):
    assert typed.command(eng(MAIN, thrust=90000.0), 0.0) == OK
    assert typed.independent_throttle(MAIN) == 1.0
    assert typed.engine_thrust()[MAIN] == 60000.0


def test_a_newer_command_replaces_the_override_and_its_timeout(typed):
    typed.command(eng(MAIN, sequence=2, thrust=6000.0, timeout=0.5), 0.0)
    typed.command(eng(MAIN, sequence=3, thrust=12000.0, timeout=1.0), 0.3)
    typed.tick(0.6, 0.02, FULL)
    assert typed.engine_thrust()[MAIN] == pytest.approx(12000.0)
    assert typed.override_sequence(MAIN) == 3
    typed.tick(1.3, 0.02, FULL)
    assert MAIN not in typed.engine_thrust()
    assert typed.override_sequence(MAIN) is None


@pytest.mark.parametrize('given, applied', [(0.0, 0.5), (-1.0, 0.5), (math.nan, 0.5),
                                            (None, 0.5), (0.01, 0.05), (3.0, 3.0),
                                            (100.0, 10.0), (0.2, 0.2), (True, 0.5)])
def test_timeout_clamp(given, applied):
    assert clamp_timeout(given) == applied


def test_a_clamped_timeout_is_the_one_enforced(typed):
    typed.command(eng(MAIN, thrust=6000.0, timeout=0.01), 0.0)
    typed.tick(0.04, 0.02, FULL)
    assert MAIN in typed.engine_thrust()
    typed.tick(0.05, 0.01, FULL)
    assert MAIN not in typed.engine_thrust()


def test_enable_only_sets_the_switch_without_a_timeout(typed):
    assert typed.state_fields(MAIN)['enabled'] is True
    assert typed.command(eng(MAIN, enabled=False), 0.0) == OK
    typed.tick(100.0, 0.02, FULL)
    fields = typed.state_fields(MAIN)
    assert fields['enabled'] is False and fields['operational'] is False
    assert fields['commandActive'] is False
    assert MAIN not in typed.allocatable_engines()
    assert typed.command(eng(MAIN, sequence=3, enabled=True), 100.0) == OK
    typed.tick(200.0, 0.02, FULL)
    assert typed.state_fields(MAIN)['enabled'] is True
    assert MAIN in typed.allocatable_engines()


def test_enable_only_ends_an_earlier_thrust_override(typed):
    typed.command(eng(MAIN, sequence=2, thrust=30000.0, timeout=5.0), 0.0)
    typed.command(eng(MAIN, sequence=3), 0.1)
    assert MAIN not in typed.engine_thrust()
    assert typed.state_fields(MAIN)['commandActive'] is False


def test_thrust_of_a_shut_down_engine_is_zero(typed):
    typed.command(eng(MAIN, thrust=30000.0, enabled=False), 0.0)
    assert typed.engine_thrust()[MAIN] == 0.0
    assert typed.independent_throttle(MAIN) == pytest.approx(0.5)


def test_an_engine_that_cannot_restart_refuses_a_second_ignition(typed):
    assert typed.command(eng(ONESHOT, enabled=False), 0.0) == OK
    assert typed.command(eng(ONESHOT, sequence=3, enabled=True), 1.0) == 'engine_cannot_restart'
    assert typed.command(eng(ONESHOT, sequence=4, thrust=1000.0), 1.0) == 'engine_cannot_restart'
    assert typed.state_fields(ONESHOT)['enabled'] is False
    assert ONESHOT not in typed.engine_thrust()


def test_an_engine_that_cannot_restart_ignites_once(typed):
    assert typed.state_fields(COLD)['enabled'] is False
    assert typed.command(eng(COLD, thrust=4000.0), 0.0) == OK
    assert typed.engine_thrust()[COLD] == pytest.approx(4000.0)
    assert typed.command(eng(COLD, sequence=3, enabled=False), 0.1) == OK
    assert typed.command(eng(COLD, sequence=4), 0.2) == 'engine_cannot_restart'
    assert typed.state_fields(COLD)['enabled'] is False


def test_a_solid_ignites_once_burns_at_full_thrust_and_refuses_throttle_and_shutdown(typed):
    assert typed.state_fields(SOLID)['enabled'] is False
    assert typed.engine_thrust()[SOLID] == 0.0
    assert SOLID not in typed.allocatable_engines()
    assert typed.command(eng(SOLID), 0.0) == OK
    assert typed.engine_thrust()[SOLID] == 100000.0
    assert typed.state_fields(SOLID)['throttle'] == 1.0
    assert typed.command(eng(SOLID, sequence=3, thrust=5000.0), 0.1) == 'throttle_locked'
    assert typed.command(eng(SOLID, sequence=4, enabled=False), 0.2) == 'engine_cannot_shut_down'
    assert typed.engine_thrust()[SOLID] == 100000.0
    assert SOLID not in typed.allocatable_engines()


def test_a_refused_command_changes_nothing(typed):
    typed.command(eng(SOLID), 0.0)
    assert typed.command(eng(SOLID, sequence=3, thrust=5.0, gimbal=(0.5, 0.5, 0.5)),
                         0.1) == 'throttle_locked'
    assert typed.state_fields(SOLID)['commandActive'] is False


@pytest.mark.parametrize('change', [
    {'targetThrust': -1.0}, {'targetThrust': math.nan}, {'targetThrust': math.inf},
    {'gimbalPitch': 1.5}, {'gimbalRoll': -1.01}, {'gimbalYaw': math.nan},
    {'enabled': 1}, {'targetThrust': '10'}, {'hasGimbalCommand': 'yes'}, {'sequence': 2.0}])
def test_invalid_engine_fields_are_refused(typed, change):
    packet = {**eng(MAIN, thrust=1000.0), **change}
    assert typed.command(packet, 0.0) == 'invalid_command'
    assert MAIN not in typed.engine_thrust()


def test_unknown_ids_and_kind_mismatches_are_refused(typed):
    assert typed.command(eng('engine_999_0', thrust=1.0), 0.0) == 'unknown_actuator'
    assert typed.command({**eng(MAIN), 'name': 5}, 0.0) == 'unknown_actuator'
    assert typed.command({**rcs(10.0), 'name': MAIN}, 0.0) == 'actuator_kind_mismatch'
    assert typed.command({**eng(RCS, thrust=1.0)}, 0.0) == 'actuator_kind_mismatch'
    assert typed.command(motor('position', 0.5, name=MAIN), 0.0) == 'actuator_kind_mismatch'
    assert typed.command({**eng(SERVO), 'actuatorType': 'engine'}, 0.0) == \
        'actuator_kind_mismatch'


def test_flameout_when_a_burned_resource_is_exhausted_and_recovery(typed):
    typed.command(eng(MAIN, thrust=30000.0, timeout=10.0), 0.0)
    typed.tick(0.02, 0.02, {**FULL, 'Oxidizer': 0.0})
    fields = typed.state_fields(MAIN)
    assert fields['flameout'] is True and fields['operational'] is False
    assert typed.engine_thrust()[MAIN] == 0.0
    assert PLAIN not in typed.allocatable_engines()        # burns the same propellants
    assert SOLID not in typed.allocatable_engines()
    typed.tick(0.04, 0.02, FULL)
    assert typed.state_fields(MAIN)['flameout'] is False
    assert typed.engine_thrust()[MAIN] == pytest.approx(30000.0)


def test_missing_resource_counts_as_exhausted_and_an_oneshot_engine_stays_out(typed):
    typed.tick(0.02, 0.02, {})
    assert typed.state_fields(ONESHOT)['flameout'] is True
    assert typed.state_fields(SOLID)['flameout'] is False   # not ignited
    assert typed.state_fields(COLD)['flameout'] is False    # not ignited
    typed.tick(0.04, 0.02, FULL)
    assert typed.state_fields(ONESHOT)['flameout'] is True
    assert typed.state_fields(MAIN)['flameout'] is False


# ---------------------------------------------------------------- engines: gimbal


def test_tvc_moves_only_the_named_engines_gimbal(typed):
    assert typed.command(eng(MAIN, thrust=6000.0, gimbal=(0.2, -0.1, 0.3)), 0.0) == OK
    gimbals = typed.engine_gimbal()
    assert gimbals[MAIN] == pytest.approx((0.2, -0.1, 0.3))
    for other in (MODE_A, MODE_B, SLOW, LOCKED):
        assert gimbals[other] == (0.0, 0.0, 0.0)
        assert typed.state_fields(other)['gimbalCommandActive'] is False
    fields = typed.state_fields(MAIN)
    assert fields['gimbalAvailable'] is True and fields['gimbalCommandActive'] is True
    assert (fields['gimbalPitch'], fields['gimbalYaw'], fields['gimbalRoll']) == \
        pytest.approx((0.2, -0.1, 0.3))
    typed.tick(0.49, 0.02, FULL)
    assert typed.engine_gimbal()[MAIN] == pytest.approx((0.2, -0.1, 0.3))
    typed.tick(0.5, 0.01, FULL)
    assert typed.engine_gimbal()[MAIN] == (0.0, 0.0, 0.0)
    fields = typed.state_fields(MAIN)
    assert fields['gimbalCommandActive'] is False and fields['gimbalPitch'] == 0.0


def test_has_gimbal_command_false_releases_an_earlier_tvc_override(typed):
    typed.command(eng(MAIN, sequence=2, thrust=6000.0, gimbal=(0.5, 0.5, 0.0), timeout=5.0), 0)
    typed.command(eng(MAIN, sequence=3, thrust=6000.0, timeout=5.0), 0.1)
    assert typed.engine_gimbal()[MAIN] == (0.0, 0.0, 0.0)
    fields = typed.state_fields(MAIN)
    assert fields['gimbalCommandActive'] is False and fields['commandActive'] is True


def test_tvc_with_zero_thrust_holds_throttle_zero_with_a_timeout(typed):
    assert typed.command(eng(MAIN, gimbal=(0.1, 0.0, 0.0)), 0.0) == OK
    assert typed.engine_thrust()[MAIN] == 0.0
    assert MAIN not in typed.allocatable_engines()
    typed.tick(0.5, 0.02, FULL)
    assert MAIN in typed.allocatable_engines()


def test_limiter_axis_enables_and_response_speed(typed):
    # range 5 deg, response 10 deg/s -> 2 input units per second; limiter 0.5; yaw off
    assert typed.command(eng(SLOW, thrust=1000.0, gimbal=(1.0, 1.0, -0.4), timeout=1.0),
                         0.0) == OK
    assert typed.engine_gimbal()[SLOW] == (0.0, 0.0, 0.0)
    typed.tick(0.1, 0.1, FULL)
    assert typed.engine_gimbal()[SLOW] == pytest.approx((0.2, 0.0, -0.2))
    typed.tick(0.2, 0.1, FULL)
    assert typed.engine_gimbal()[SLOW] == pytest.approx((0.4, 0.0, -0.2))
    typed.tick(0.3, 0.1, FULL)
    assert typed.engine_gimbal()[SLOW] == pytest.approx((0.5, 0.0, -0.2))
    fields = typed.state_fields(SLOW)     # the command as passed, not the deflection
    assert (fields['gimbalPitch'], fields['gimbalYaw'], fields['gimbalRoll']) == \
        pytest.approx((1.0, 1.0, -0.4))
    typed.tick(1.0, 0.1, FULL)            # expires; back to neutral at the response speed
    assert typed.engine_gimbal()[SLOW] == pytest.approx((0.5, 0.0, -0.2))
    typed.tick(1.1, 0.1, FULL)
    assert typed.engine_gimbal()[SLOW] == pytest.approx((0.3, 0.0, 0.0))
    typed.tick(1.3, 0.2, FULL)
    assert typed.engine_gimbal()[SLOW] == pytest.approx((0.0, 0.0, 0.0))


def test_a_locked_gimbal_stays_neutral(typed):
    assert typed.command(eng(LOCKED, thrust=1000.0, gimbal=(0.7, -0.7, 0.7)), 0.0) == OK
    typed.tick(0.1, 0.1, FULL)
    assert typed.engine_gimbal()[LOCKED] == (0.0, 0.0, 0.0)
    assert typed.state_fields(LOCKED)['gimbalCommandActive'] is True


def test_an_engine_without_gimbal_takes_thrust_and_ignores_tvc(typed):
    assert typed.command(eng(PLAIN, thrust=10000.0, gimbal=(0.5, 0.0, 0.0)), 0.0) == OK
    assert typed.engine_thrust()[PLAIN] == pytest.approx(10000.0)
    assert PLAIN not in typed.engine_gimbal()
    fields = typed.state_fields(PLAIN)
    assert fields['gimbalAvailable'] is False and fields['gimbalCommandActive'] is False
    assert fields['gimbalPitch'] == 0.0


def test_a_shared_gimbal_follows_the_valid_command_with_the_highest_sequence(typed):
    typed.command(eng(MODE_A, sequence=5, thrust=1000.0, gimbal=(0.1, 0.0, 0.0),
                      timeout=1.0), 0.0)
    typed.command(eng(MODE_B, sequence=7, thrust=1000.0, gimbal=(0.6, 0.0, 0.0),
                      timeout=0.2), 0.0)
    for member in (MODE_A, MODE_B):
        assert typed.engine_gimbal()[member] == pytest.approx((0.6, 0.0, 0.0))
        fields = typed.state_fields(member)
        assert fields['gimbalPitch'] == pytest.approx(0.6)
        assert fields['gimbalCommandActive'] is True
    typed.tick(0.2, 0.02, FULL)         # mode B's command expires; mode A's is still valid
    for member in (MODE_A, MODE_B):
        assert typed.engine_gimbal()[member] == pytest.approx((0.1, 0.0, 0.0))
        assert typed.state_fields(member)['gimbalPitch'] == pytest.approx(0.1)
    typed.command(eng(MODE_B, sequence=9, thrust=1000.0, gimbal=(-0.3, 0.0, 0.0)), 0.3)
    assert typed.engine_gimbal()[MODE_A] == pytest.approx((-0.3, 0.0, 0.0))
    typed.command(eng(MODE_A, sequence=6, thrust=1000.0, gimbal=(0.9, 0.0, 0.0)), 0.4)
    assert typed.engine_gimbal()[MODE_A] == pytest.approx((-0.3, 0.0, 0.0))


# ---------------------------------------------------------------- RCS


def test_rcs_limit_enable_clamp_and_restore(typed):
    assert typed.rcs_settings()[RCS] == {'enabled': True, 'thrust_limit': 1000.0}
    assert typed.command(rcs(250.0, timeout=0.5), 0.0) == OK
    assert typed.rcs_settings()[RCS] == {'enabled': True, 'thrust_limit': pytest.approx(250.0)}
    fields = typed.state_fields(RCS)
    assert fields['thrustLimit'] == pytest.approx(250.0)
    assert fields['maxThrust'] == 4000.0 and fields['commandActive'] is True
    typed.command(rcs(5000.0, sequence=3), 0.1)
    assert typed.rcs_settings()[RCS]['thrust_limit'] == 1000.0
    typed.command(rcs(-3.0, sequence=4), 0.1)
    assert typed.rcs_settings()[RCS]['thrust_limit'] == 0.0
    typed.command(rcs(400.0, enabled=False, sequence=5, timeout=0.5), 0.2)
    assert typed.rcs_settings()[RCS] == {'enabled': False, 'thrust_limit': pytest.approx(400.0)}
    assert typed.state_fields(RCS)['enabled'] is False
    typed.tick(0.69, 0.02, FULL)
    assert typed.rcs_settings()[RCS]['enabled'] is False
    typed.tick(0.7, 0.01, FULL)
    assert typed.rcs_settings()[RCS] == {'enabled': True, 'thrust_limit': 1000.0}
    assert typed.state_fields(RCS)['commandActive'] is False


def test_rcs_invalid_limit_is_refused(typed):
    assert typed.command(rcs(math.nan), 0.0) == 'invalid_command'
    assert typed.state_fields(RCS)['commandActive'] is False


# ---------------------------------------------------------------- wheels


def test_wheel_override_clamps_steering_and_restores_on_timeout(typed):
    assert typed.command(wheel(targetAngularVelocity=4.0, steeringAngle=1.0, brake=0.25,
                               timeout=0.5), 0.0) == OK
    settings = typed.wheel_settings()[WHEEL]
    assert settings['target_angular_velocity'] == 4.0
    assert settings['steering_angle'] == pytest.approx(math.radians(30.0))
    assert settings['max_drive_torque'] == 150.0          # 0 keeps the stock torque
    assert settings['brake'] == 0.25
    assert typed.state_fields(WHEEL)['commandActive'] is True
    typed.command(wheel(sequence=3, maxDriveTorque=80.0, enabled=False), 0.1)
    assert typed.wheel_settings()[WHEEL]['max_drive_torque'] == 80.0
    assert typed.state_fields(WHEEL)['enabled'] is False
    typed.tick(0.59, 0.02, FULL)
    assert typed.state_fields(WHEEL)['commandActive'] is True
    typed.tick(0.6, 0.01, FULL)
    assert typed.wheel_settings()[WHEEL] == {
        'enabled': True, 'target_angular_velocity': 0.0, 'steering_angle': 0.0,
        'brake': 0.0, 'max_drive_torque': 150.0}
    assert typed.state_fields(WHEEL)['commandActive'] is False


@pytest.mark.parametrize('change', [{'brake': 1.5}, {'brake': -0.1},
                                    {'maxDriveTorque': -1.0}, {'steeringAngle': math.inf}])
def test_invalid_wheel_fields_are_refused(typed, change):
    assert typed.command(wheel(**change), 0.0) == 'invalid_command'
    assert typed.state_fields(WHEEL)['commandActive'] is False


# ---------------------------------------------------------------- servos


def test_servo_position_mode_moves_at_its_speed_and_holds_after_timeout(typed):
    assert typed.command(motor('position', 0.8, timeout=2.0), 0.0) == OK
    typed.tick(0.5, 0.5, FULL)
    assert typed.servo_positions()[SERVO] == pytest.approx(0.25)
    fields = typed.state_fields(SERVO)
    assert fields['velocity'] == pytest.approx(0.5) and fields['target'] == pytest.approx(0.8)
    assert fields['commandMode'] == 'position' and fields['commandActive'] is True
    typed.tick(1.5, 1.0, FULL)
    assert typed.servo_positions()[SERVO] == pytest.approx(0.75)
    typed.tick(2.0, 0.5, FULL)                 # reaches 0.8, then the command times out
    assert typed.servo_positions()[SERVO] == pytest.approx(0.8)
    fields = typed.state_fields(SERVO)
    assert fields['commandActive'] is False and fields['velocity'] == 0.0
    typed.tick(3.0, 1.0, FULL)
    assert typed.servo_positions()[SERVO] == pytest.approx(0.8)


def test_servo_position_target_is_clamped_to_the_limits(typed):
    typed.command(motor('position', 5.0, timeout=10.0), 0.0)
    assert typed.state_fields(SERVO)['target'] == 1.0
    typed.tick(4.0, 4.0, FULL)
    assert typed.servo_positions()[SERVO] == pytest.approx(1.0)


def test_servo_velocity_and_effort_modes(typed):
    typed.command(motor('velocity', -2.0), 0.0)      # clamped to -0.5 rad/s
    typed.tick(1.0, 1.0, FULL)
    assert typed.servo_positions()[SERVO] == pytest.approx(-0.5)
    typed.tick(3.0, 2.0, FULL)                       # stops at the lower limit
    assert typed.servo_positions()[SERVO] == pytest.approx(-1.0)
    typed.command(motor('effort', 25.0, sequence=3, timeout=5.0), 3.0)   # half effort
    typed.tick(4.0, 1.0, FULL)
    assert typed.servo_positions()[SERVO] == pytest.approx(-0.75)
    fields = typed.state_fields(SERVO)
    assert fields['commandMode'] == 'effort' and fields['effort'] == 25.0
    assert fields['velocity'] == pytest.approx(0.25)


def test_servo_disabled_holds_and_bad_motor_commands_are_refused(typed):
    assert typed.command(motor('velocity', 0.0, enabled=False), 0.0) == OK
    typed.tick(1.0, 1.0, FULL)
    assert typed.servo_positions()[SERVO] == 0.0
    assert typed.state_fields(SERVO)['engaged'] is False
    assert typed.command(motor('position', 0.5, hasPosition=False), 1.0) == 'invalid_command'
    assert typed.command(motor('torque', 0.5), 1.0) == 'invalid_command'
    assert typed.command(motor('position', 0.5, partFlightId=1), 1.0) == 'unknown_actuator'
    assert typed.command(motor('position', 0.5, partFlightId=9110), 1.0) == OK


def test_servo_command_active_while_in_force_in_every_mode(typed):
    for sequence, (mode, value) in enumerate((('position', 0.4), ('velocity', 0.2),
                                              ('effort', -10.0)), start=2):
        start = 10.0 * sequence
        assert typed.command(motor(mode, value, sequence=sequence, timeout=1.0), start) == OK
        assert typed.state_fields(SERVO)['commandActive'] is True       # at once
        typed.tick(start + 0.98, 0.98, FULL)
        fields = typed.state_fields(SERVO)
        assert fields['commandActive'] is True and fields['commandMode'] == mode
        assert fields['engaged'] is True and fields['velocity'] != 0.0
        typed.tick(start + 1.0, 0.02, FULL)                             # its timeout
        fields = typed.state_fields(SERVO)
        assert fields['commandActive'] is False and fields['velocity'] == 0.0


def test_servo_motor_state_on_the_wire_follows_the_command(harness):
    h = harness('surface')
    h.frames(3)
    h.acquire()
    h.capture.clear()
    start = h.sim.world.ut
    h.send('pylon_motor_command', name='mast_hinge', mode='position', hasEnabled=True,
           enabled=True, hasPosition=True, position=0.3, hasVelocity=False,
           hasEffort=False, timeoutSeconds=1.0, **h.identity())
    h.run(2.0)
    states = h.of('pylon_motor_state')
    during = [s for s in states if s['universalTime'] < start + 0.98]
    after = [s for s in states if s['universalTime'] > start + 1.04]
    assert len(during) >= 15 and len(after) >= 15      # 20 Hz
    assert all(s['commandActive'] and s['target'] == pytest.approx(0.3) for s in during)
    assert all(s['commandMode'] == 'position' and s['engaged'] for s in during)
    # 0.5 rad/s towards 0.3 rad: moving, then there, held after the timeout
    assert during[0]['position'] < during[-1]['position'] == pytest.approx(0.3)
    assert not any(s['commandActive'] for s in after)
    assert all(s['position'] == pytest.approx(0.3) and s['velocity'] == 0.0 for s in after)
    assert not h.sim.control.refused


def test_a_motor_command_for_a_missing_servo_is_answered_with_the_reason(harness):
    h = harness('surface')
    h.frames(3)
    h.acquire()
    h.capture.clear()
    h.send('pylon_motor_command', name='no_such_joint', mode='velocity', hasEnabled=True,
           enabled=True, hasVelocity=True, velocity=0.1, hasPosition=False,
           hasEffort=False, timeoutSeconds=1.0, **h.identity())
    h.frames(2)
    reasons = [s['reason'] for s in h.of('pylon_control_authority_state')]
    assert 'unknown_actuator' in reasons
    assert h.sim.control.refused[('pylon_motor_command', 'unknown_actuator')] == 1
    assert not any(s['commandActive'] for s in h.of('pylon_motor_state'))


# ---------------------------------------------------------------- separation, docking


def test_separation_fires_once(typed):
    assert typed.state_fields(DECOUPLER) == {'separated': False, 'available': True}
    assert typed.command(separate(False), 0.0) == OK
    assert typed.state_fields(DECOUPLER) == {'separated': False, 'available': True}
    assert typed.command(separate(True, sequence=3), 0.1) == OK
    assert typed.state_fields(DECOUPLER) == {'separated': True, 'available': False}
    assert typed.separated_ids() == {DECOUPLER}
    assert typed.command(separate(True, sequence=4), 0.2) == 'already_separated'
    typed.release_all()
    typed.tick(100.0, 0.02, FULL)
    assert typed.state_fields(DECOUPLER) == {'separated': True, 'available': False}


def test_only_one_docking_camera_at_a_time(typed):
    assert typed.docking(dock(DOCKED, 1), 0.0) == OK
    assert typed.docking_fields(DOCKED)['cameraActive'] is True
    assert typed.docking(dock(FREE, 1, sequence=3), 0.1) == OK
    assert typed.docking_fields(DOCKED)['cameraActive'] is False
    assert typed.docking_fields(FREE)['cameraActive'] is True
    assert typed.docking(dock(DOCKED, 2, sequence=4), 0.2) == OK   # not streaming: no-op
    assert typed.camera_port() == FREE
    assert typed.docking(dock(FREE, 2, sequence=5), 0.3) == OK
    assert typed.camera_port() is None
    assert typed.docking_fields(FREE)['cameraActive'] is False


def test_docking_release(typed):
    fields = typed.docking_fields(DOCKED)
    assert fields['docked'] is True and fields['releasable'] is True
    assert fields['partnerName'] == 'docking_port_2200002_0'
    assert fields['partnerPartFlightId'] == 5200002 and fields['partFlightId'] == 9112
    assert typed.docking(dock(FREE, 3), 0.0) == 'not_docked'
    assert typed.docking(dock(DOCKED, 3), 0.0) == OK
    fields = typed.docking_fields(DOCKED)
    assert fields['docked'] is False and fields['partnerName'] == ''
    assert fields['state'] == 'Disengage' and fields['partnerPartFlightId'] == 0
    assert typed.undocked_ports() == {DOCKED}
    assert typed.docking(dock(DOCKED, 3, sequence=3), 0.1) == 'not_docked'


def test_bad_docking_commands(typed):
    assert typed.docking(dock('docking_port_1_0', 1), 0.0) == 'unknown_docking_port'
    assert typed.docking(dock(FREE, 4), 0.0) == 'invalid_command'
    assert typed.docking(dock(FREE, True), 0.0) == 'invalid_command'
    assert typed.camera_port() is None


# ---------------------------------------------------------------- release_all


def test_release_all_restores_every_override_at_once(typed):
    typed.command(eng(MAIN, thrust=30000.0, gimbal=(0.4, 0.4, 0.4), timeout=10.0), 0.0)
    typed.command(eng(SLOW, thrust=1000.0, gimbal=(1.0, 0.0, 0.0), timeout=10.0), 0.0)
    typed.command(eng(PLAIN, enabled=False), 0.0)
    typed.command(rcs(100.0, enabled=False, timeout=10.0), 0.0)
    typed.command(wheel(targetAngularVelocity=3.0, timeout=10.0), 0.0)
    typed.command(motor('velocity', 0.5, timeout=10.0), 0.0)
    typed.tick(0.2, 0.2, FULL)
    assert typed.engine_gimbal()[SLOW] == pytest.approx((0.4, 0.0, 0.0))
    typed.release_all()
    assert typed.engine_thrust() == {SOLID: 0.0}
    assert typed.independent_throttle(MAIN) == 0.0
    assert all(g == (0.0, 0.0, 0.0) for g in typed.engine_gimbal().values())
    assert typed.rcs_settings()[RCS] == {'enabled': True, 'thrust_limit': 1000.0}
    assert typed.wheel_settings()[WHEEL]['target_angular_velocity'] == 0.0
    for ident in (MAIN, SLOW, RCS, WHEEL, SERVO):
        assert typed.state_fields(ident)['commandActive'] is False
    assert typed.state_fields(PLAIN)['enabled'] is False     # the switch is not an override
    assert MAIN in typed.allocatable_engines() and SLOW in typed.allocatable_engines()
    typed.tick(1.0, 0.8, FULL)
    assert typed.servo_positions()[SERVO] == pytest.approx(0.1)
    assert typed.engine_gimbal()[SLOW] == (0.0, 0.0, 0.0)


# ---------------------------------------------------------------- scenario


def test_orbit_scenario_engine_and_rcs_ids():
    typed = TypedActuators(load_scenario('orbit').vessel('sat').spec)
    assert typed.command(eng('engine_1100004_0', thrust=30000.0, gimbal=(0.0, 0.5, 0.0)),
                         0.0) == OK
    assert typed.engine_thrust() == {'engine_1100004_0': pytest.approx(30000.0)}
    assert typed.engine_gimbal()['engine_1100004_0'] == pytest.approx((0.0, 0.5, 0.0))
    assert set(typed.rcs_settings()) == {f'rcs_110000{i}_0' for i in (5, 6, 7, 8)}
    assert typed.docking_fields('docking_port_1100010_0')['nodeType'] == 'size1'
    assert typed.docking_fields('docking_port_1100010_0')['docked'] is False


def test_the_launchpad_engine_modes_share_one_gimbal():
    rocket = load_scenario('launchpad').vessel('rocket').spec
    typed = TypedActuators(rocket)
    common = {'type': 'pylon_actuator_command', 'actuatorType': 'engine',
              'vesselId': rocket.vessel_id, 'controllerId': 'c', 'leaseId': 'l',
              'enabled': True, 'timeoutSeconds': 5.0, 'targetThrust': 0.0,
              'hasGimbalCommand': True, 'gimbalYaw': 0.0, 'gimbalRoll': 0.0}
    assert typed.command({**common, 'name': 'engine_9900004_0', 'sequence': 3,
                          'gimbalPitch': 0.5}, 0.0) == 'command_accepted'
    assert typed.command({**common, 'name': 'engine_9900004_1', 'sequence': 4,
                          'gimbalPitch': -0.25}, 0.1) == 'command_accepted'
    for mode in ('engine_9900004_0', 'engine_9900004_1'):
        fields = typed.state_fields(mode)
        assert fields['gimbalCommandActive'] and fields['gimbalPitch'] == -0.25
