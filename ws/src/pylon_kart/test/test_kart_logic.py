"""The kart's plain logic: Ackermann geometry, the longitudinal model, gears, modes, wheels.

A kart like the ``kart`` scenario's: wheelbase 1.05 m, track 1.0 m, wheels of 0.14 m, front
wheels steering ±25°, a motor of 60 N·m on each rear wheel.
"""

import math

from autoware_auto_vehicle_msgs.msg import GearCommand
from pylon_kart import actuation, longitudinal, vehicle
from pylon_kart.geometry import geometry_of, Wheel
import pytest

L, T, R = 1.05, 1.0, 0.14
STEER = math.radians(25.0)
WHEELS = [Wheel('fl', 0.6, 0.5, R, True, STEER, 0.0), Wheel('fr', 0.6, -0.5, R, True, STEER, 0.0),
          Wheel('rl', -0.45, 0.5, R, False, 0.0, 60.0),
          Wheel('rr', -0.45, -0.5, R, False, 0.0, 60.0)]
GEOMETRY = geometry_of(WHEELS)
PARAMS = longitudinal.Params(motor_deceleration=4.0, full_brake_deceleration=6.0)


def test_geometry_from_the_wheels():
    g = GEOMETRY
    assert [w.id for w in g.front] == ['fl', 'fr'] and [w.id for w in g.rear] == ['rl', 'rr']
    assert g.wheelbase == pytest.approx(L) and g.track == pytest.approx(T)
    assert g.rear_axle_x == pytest.approx(-0.45) and [w.id for w in g.driven] == ['rl', 'rr']
    # the inner wheel at its own 25° limit: tan δ = L / (L / tan 25° + T / 2)
    assert g.max_steering_tire_angle == pytest.approx(
        math.atan(L / (L / math.tan(STEER) + T / 2)))
    assert math.degrees(g.max_steering_tire_angle) == pytest.approx(20.88, abs=0.01)


@pytest.mark.parametrize('wheels, why', [
    (WHEELS[:3], 'two steerable and two fixed'),
    ([Wheel(w.id, -w.x, w.y, R, w.steerable, w.max_steering_angle, w.max_drive_torque)
      for w in WHEELS], 'not ahead'),
    ([Wheel(w.id, w.x, w.y, R, w.steerable, w.max_steering_angle, 0.0) for w in WHEELS],
     'no wheel has a motor')])
def test_geometry_refuses_what_is_not_a_kart(wheels, why):
    with pytest.raises(ValueError, match=why):
        geometry_of(wheels)


def test_ackermann_each_wheel_on_its_own_circle():
    delta = 0.3
    radius = L / math.tan(delta)                    # the rear axle centre's circle
    left, right = GEOMETRY.front_angles(delta)
    # the inner (left) wheel turns more; each points square to the line to the centre
    assert left == pytest.approx(math.atan(L / (radius - T / 2)))
    assert right == pytest.approx(math.atan(L / (radius + T / 2)))
    assert left > delta > right
    assert GEOMETRY.steering_tire_angle((left, right)) == pytest.approx(delta)
    assert GEOMETRY.front_angles(-delta) == pytest.approx((-right, -left))
    assert GEOMETRY.front_angles(0.0) == (0.0, 0.0)
    # the electronic differential: rim speeds in proportion to each rear wheel's radius
    inner, outer = GEOMETRY.rear_speed_ratios(delta)
    assert inner == pytest.approx((radius - T / 2) / radius)
    assert outer == pytest.approx((radius + T / 2) / radius)


def test_longitudinal_integrates_the_acceleration_within_the_band():
    u_ref, speed = 0.0, 0.0
    for _ in range(50):                             # 1 s of 2 m/s² with the kart following
        u_ref, drive = longitudinal.step(u_ref, 2.0, speed, longitudinal.DRIVE, PARAMS, 0.02)
        speed = u_ref
    assert u_ref == pytest.approx(2.0) and drive.speed == pytest.approx(2.0)
    assert drive.torque_fraction == 1.0 and drive.brake == 0.0
    # the kart does not follow (stuck): the reference stops half a metre per second ahead
    for _ in range(100):
        u_ref, drive = longitudinal.step(u_ref, 2.0, 2.0, longitudinal.DRIVE, PARAMS, 0.02)
    assert u_ref == pytest.approx(2.0 + PARAMS.band)
    # a deceleration starts from the speed, not from a reference that ran ahead
    u_ref, drive = longitudinal.step(u_ref, -3.0, 2.0, longitudinal.DRIVE, PARAMS, 0.02,
                                     turned=True)
    assert u_ref == pytest.approx(2.0 - 0.06)
    # while it keeps its sign, the measured speed's noise does not ratchet the reference
    u_ref, drive = longitudinal.step(1.5, 2.0, 1.8, longitudinal.DRIVE, PARAMS, 0.02)
    assert u_ref == pytest.approx(1.54)
    # an acceleration of 0 holds the speed
    u_ref, drive = longitudinal.step(5.0, 0.0, 5.0, longitudinal.DRIVE, PARAMS, 0.02)
    assert drive.speed == 5.0 and drive.brake == 0.0


def test_longitudinal_brakes_beyond_the_motors_and_holds_at_rest():
    _, drive = longitudinal.step(5.0, -3.0, 5.0, longitudinal.DRIVE, PARAMS, 0.02)
    assert drive.brake == 0.0 and drive.speed == pytest.approx(4.94)      # motors only
    _, drive = longitudinal.step(5.0, -7.0, 5.0, longitudinal.DRIVE, PARAMS, 0.02)
    assert drive.brake == pytest.approx((7.0 - 4.0) / 6.0)
    _, drive = longitudinal.step(5.0, -40.0, 5.0, longitudinal.DRIVE, PARAMS, 0.02)
    assert drive.brake == 1.0
    u_ref, drive = longitudinal.step(0.1, -1.0, 0.1, longitudinal.DRIVE, PARAMS, 0.2)
    assert u_ref == 0.0 and drive.brake == 1.0                             # held
    # never driven backward in DRIVE
    u_ref, drive = longitudinal.step(0.0, -1.0, -2.0, longitudinal.DRIVE, PARAMS, 0.02)
    assert u_ref == 0.0 and drive.speed == 0.0


def test_longitudinal_gears():
    u_ref, drive = longitudinal.step(0.0, 2.0, 0.0, longitudinal.REVERSE, PARAMS, 0.1)
    assert u_ref == pytest.approx(0.2) and drive.speed == pytest.approx(-0.2)   # backward
    _, drive = longitudinal.step(3.0, 2.0, 3.0, longitudinal.NEUTRAL, PARAMS, 0.1)
    assert drive == longitudinal.Drive()                                        # coasts
    _, drive = longitudinal.step(3.0, -3.0, 3.0, longitudinal.NEUTRAL, PARAMS, 0.1)
    assert drive.brake == pytest.approx(0.5) and not drive.motors_on
    _, drive = longitudinal.step(3.0, 2.0, 3.0, longitudinal.PARK, PARAMS, 0.1)
    assert drive == longitudinal.Drive(brake=1.0)
    drive = longitudinal.actuation(0.4, 0.1, longitudinal.REVERSE, PARAMS)
    assert drive == longitudinal.Drive(-PARAMS.max_speed, 0.4, 0.1)
    assert not longitudinal.actuation(0.0, 0.0, longitudinal.DRIVE, PARAMS).motors_on


@pytest.mark.parametrize('current, requested, speed, gear, reason', [
    ('drive', GearCommand.REVERSE, 0.0, 'drive', 'drive_to_reverse_needs_neutral'),
    ('reverse', GearCommand.DRIVE, 0.0, 'reverse', 'reverse_to_drive_needs_neutral'),
    ('drive', GearCommand.NEUTRAL, 5.0, 'neutral', ''),
    ('neutral', GearCommand.REVERSE, 0.0, 'reverse', ''),
    ('drive', GearCommand.PARK, 1.0, 'drive', 'park_while_moving:1.00m/s'),
    ('drive', GearCommand.PARK, 0.1, 'park', ''),
    ('park', GearCommand.DRIVE, 0.0, 'drive', ''),
    ('drive', GearCommand.NONE, 3.0, 'drive', ''),
    ('drive', GearCommand.DRIVE_2, 0.0, 'drive', 'unknown_gear:3'),
    ('drive', 99, 0.0, 'drive', 'unknown_gear:99')])
def test_gear_rules(current, requested, speed, gear, reason):
    assert vehicle.shift(current, requested, speed, 0.3) == (gear, reason)


def kart() -> vehicle.KartInterface:
    return vehicle.KartInterface(vehicle.Limits(), PARAMS)


@pytest.mark.parametrize('steer, accel, reason', [
    (math.nan, 1.0, 'non_finite'), (0.0, math.inf, 'non_finite'),
    (0.5, 1.0, 'steering_out_of_range'), (-0.37, 1.0, 'steering_out_of_range'),
    (0.1, 10.5, 'acceleration_out_of_range')])
def test_bad_control_commands_are_refused_and_the_last_one_holds(steer, accel, reason):
    k = kart()
    assert k.on_control(0.1, 1.0, 0.0, GEOMETRY) == ''
    assert k.on_control(steer, accel, 0.1, GEOMETRY).startswith(reason)
    assert k.refusals[reason] == 1 and k.command.steering == 0.1 and k.command.at == 0.0
    assert k.on_control(0.1, 1.0, 0.2, None) == 'no_wheels_yet'


@pytest.mark.parametrize('accel, brake, steer, reason', [
    (1.2, 0.0, 0.0, 'actuation_out_of_range'), (0.5, -0.1, 0.0, 'actuation_out_of_range'),
    (math.nan, 0.0, 0.0, 'non_finite'), (0.5, 0.0, 1.0, 'steering_out_of_range')])
def test_bad_actuation_commands_are_refused(accel, brake, steer, reason):
    k = kart()
    assert k.on_actuation(accel, brake, steer, 0.0, GEOMETRY).startswith(reason)
    assert k.command is None


def test_modes_and_the_report():
    k = kart()
    assert k.report_mode(False, False) == vehicle.NOT_READY
    assert k.report_mode(True, True) == vehicle.MANUAL           # not requested
    assert k.request_mode(vehicle.AUTONOMOUS) == ''
    assert k.report_mode(True, False) == vehicle.MANUAL          # lease not yet owned
    assert k.report_mode(True, True) == vehicle.AUTONOMOUS
    assert k.request_mode(2) == 'unsupported_mode:2' and k.requested == vehicle.AUTONOMOUS
    assert k.request_mode(7) == 'unsupported_mode:7'
    assert k.request_mode(vehicle.MANUAL) == '' and k.report_mode(True, True) == vehicle.MANUAL


def test_the_timeout_stops_the_kart():
    k = kart()
    k.on_control(0.1, 2.0, 0.0, GEOMETRY)
    k.engage(5.0)
    out = k.step(0.4, 5.0, 0.02)
    assert out.source == 'control' and out.drive.speed == pytest.approx(5.04)
    out = k.step(0.51, 5.0, 0.02)
    assert out.source == 'timeout' and out.steering == 0.1
    assert out.drive.speed == pytest.approx(5.0 - 3.0 * 0.02)    # from the speed, at 3 m/s²
    assert k.timed_out(0.51) and not k.timed_out(0.49)


def test_every_step_sends_unless_the_game_is_paced_on_the_stack():
    k = kart()
    assert k.sends(0.0)                                          # nothing yet: the stop
    k.on_control(0.1, 2.0, 1.0, GEOMETRY)
    assert k.sends(1.0) and k.sends(1.3)                         # paced by the steps
    paced = vehicle.KartInterface(vehicle.Limits(lockstep_command_age=0.01), PARAMS)
    assert paced.sends(0.0)                                      # no command: the stop
    paced.on_control(0.1, 2.0, 1.0, GEOMETRY)
    assert paced.sends(1.0) and paced.sends(1.01)                # the command of this step
    assert not paced.sends(1.02) and not paced.sends(1.5)        # waits for the stack
    assert paced.sends(1.51)                                     # timed out: its own stop
    paced.on_actuation(0.5, 0.0, 0.0, 1.6, GEOMETRY)
    assert paced.sends(1.6) and not paced.sends(1.62)            # actuation_cmd alike


def test_wheel_orders_and_what_the_kart_measures():
    delta = 0.2
    drive = longitudinal.Drive(4.0, 1.0, 0.25)
    orders = {o.id: o for o in actuation.wheel_orders(GEOMETRY, delta, drive)}
    left, right = GEOMETRY.front_angles(delta)
    assert orders['fl'].steering_angle == left and orders['fr'].steering_angle == right
    assert not orders['fl'].enabled and orders['fl'].brake == 0.25
    radius = L / math.tan(delta)
    assert orders['rl'].target_angular_velocity == pytest.approx(4.0 * (radius - 0.5) / radius / R)
    assert orders['rr'].max_drive_torque == 60.0 and orders['rr'].enabled
    # a kart turning on the rear axle centre's circle at 4 m/s: what its wheels would read
    yaw = 4.0 / radius
    spin = {'rl': 4.0 * (radius - 0.5) / radius / R, 'rr': 4.0 * (radius + 0.5) / radius / R}
    for w in GEOMETRY.front:
        path = math.hypot(radius - w.y, L)              # the front wheel's own circle
        spin[w.id] = yaw * path / R
    m = actuation.measure(GEOMETRY, spin, {'fl': left, 'fr': right}, yaw)
    assert m.longitudinal_velocity == pytest.approx(4.0)
    assert m.lateral_velocity == pytest.approx(yaw * 0.45)
    assert m.steering_tire_angle == pytest.approx(delta) and m.heading_rate == yaw


def test_the_applied_drive_is_the_motors_torque_along_the_gear():
    torques = {'fl': 0.0, 'fr': 0.0, 'rl': 28.0, 'rr': 14.0}
    assert actuation.applied_drive(GEOMETRY, torques, 1.0) == pytest.approx(42.0 / 120.0)
    assert actuation.applied_drive(GEOMETRY, torques, -1.0) == 0.0     # braking in REVERSE
    assert actuation.applied_drive(GEOMETRY, {'rl': 60.0, 'rr': 70.0}, 1.0) == 1.0
