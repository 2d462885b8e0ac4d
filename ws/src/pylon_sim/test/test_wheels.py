"""The wheel model alone: ground, sprung masses, suspension, tyre, motor, brake, commands."""

from dataclasses import replace
import math

import numpy as np
from pylon_sim.game import power, wheels
from pylon_sim.game.vessel import Module, Part, Shape, VesselSpec
import pytest

MASS = 400.0
G = 9.81
H = 0.004


def wheel_part(pid: int, position, **settings) -> Part:
    return Part(f'w{pid}', 'wheel', pid, pid, 0, position, (0.0, 0.0, 0.0, 1.0), 10.0,
                Shape('cylinder', (0.3, 0.2)), modules=(Module('wheel', 0, settings),))


def rig(**settings) -> wheels.Params:
    """Four wheels on a 1.2 m x 1.3 m rectangle about the centre of mass."""
    parts = tuple(wheel_part(100 + i, (x, y, -0.2), **settings)
                  for i, (x, y) in enumerate([(0.6, 0.65), (0.6, -0.65), (-0.6, 0.65),
                                              (-0.6, -0.65)]))
    spec = VesselSpec('0' * 32, 'rig', parts)
    return wheels.params(spec, np.zeros(3), MASS, G)


class Flat:
    """The plane z = 0 with its normal +Z."""

    def ground(self, points):
        return points[:, 2].copy(), np.tile([0.0, 0.0, 1.0], (len(points), 1))


def at_height(z: float, velocity=(0.0, 0.0, 0.0)) -> wheels.Kinematics:
    return wheels.Kinematics(np.array([0.0, 0.0, z]), np.array(velocity, dtype=float),
                             np.eye(3), np.zeros(3))


def drive(p: wheels.Params, target=0.0, brake=0.0, steering=0.0, on=True) -> wheels.Commands:
    n = p.count
    return wheels.Commands(np.full(n, on), np.full(n, float(target)), np.full(n, steering),
                           np.zeros(n), np.full(n, float(brake)))


def test_sphere_ground_gives_height_and_outward_normal():
    clearance, normal = wheels.SphereGround(100.0).ground(np.array([[0.0, 0.0, 103.0],
                                                                    [60.0, 80.0, 0.0]]))
    assert clearance == pytest.approx([3.0, 0.0])
    assert normal == pytest.approx(np.array([[0, 0, 1.0], [0.6, 0.8, 0.0]]))


def test_tangent_planes_answer_as_the_ground_at_the_points_and_linearly_nearby():
    sphere = wheels.SphereGround(100.0)
    points = np.array([[0.0, 0.0, 101.0], [0.0, 60.6, 80.8]])
    planes = wheels.TangentPlanes.under(sphere, points)
    clearance, normal = planes.ground(points)
    assert clearance == pytest.approx(sphere.ground(points)[0])
    assert normal == pytest.approx(sphere.ground(points)[1])
    moved, _ = planes.ground(points + np.array([[0.3, 0.0, -0.2], [0.0, 0.0, 0.0]]))
    assert moved == pytest.approx([0.8, 1.0])           # 0.2 m down, sideways is level


def test_sprung_masses_carry_the_weight_without_a_moment():
    hub = np.array([[1.0, 0.5, 0], [1.0, -0.5, 0], [-0.5, 0.5, 0], [-0.5, -0.5, 0]])
    split = wheels.sprung_masses(hub, 300.0)
    assert split.sum() == pytest.approx(300.0)
    assert split @ hub[:, 0] == pytest.approx(0.0, abs=1e-9)
    assert split @ hub[:, 1] == pytest.approx(0.0, abs=1e-9)
    assert split[2] == pytest.approx(2 * split[0])     # twice as close to the rear


def test_defaults_come_from_settings_and_modules_override_them():
    p = rig()
    assert p.radius == pytest.approx([wheels.SETTINGS['radius'][0]] * 4)
    assert p.max_torque == pytest.approx([wheels.SETTINGS['max_drive_torque'][0]] * 4)
    assert not np.any(p.steer_max)                            # not steerable
    # each wheel rests at the target compression under its quarter of the weight
    assert p.stiffness * p.extension == pytest.approx([MASS * G / 4] * 4)
    q = rig(radius=0.5, brake_torque=900, steerable=True, max_steering_angle_deg=20,
            max_drive_torque=float('nan'))
    assert q.radius[0] == 0.5 and q.brake_torque[0] == 900.0
    assert q.steer_max[0] == pytest.approx(math.radians(20))
    assert q.max_torque[0] == wheels.SETTINGS['max_drive_torque'][0]   # unusable: default


def test_commands_drive_only_under_a_command_with_power_and_clamp_steering():
    p = rig(steerable=True, max_steering_angle_deg=30)
    settings = {name: {'enabled': True, 'target_angular_velocity': 5.0, 'steering_angle': 1.0,
                       'max_drive_torque': 80.0, 'brake': 0.5, 'commanded': True}
                for name in p.names}
    settings[p.names[1]]['commanded'] = False
    c = wheels.Commands.of(p, settings, powered=True)
    assert list(c.drive) == [True, False, True, True]
    assert c.steering == pytest.approx([math.radians(30)] * 4)
    assert c.brake == pytest.approx([0.5] * 4) and c.target[0] == 5.0
    assert not np.any(wheels.Commands.of(p, settings, powered=False).drive)
    idle = wheels.Commands.of(p, {}, powered=True)
    assert not np.any(idle.drive) and not np.any(idle.brake)


def spin_in_the_air(p, commands, omega, steps=1):
    state = replace(wheels.State.initial(p.names), omega=np.full(p.count, float(omega)))
    inputs = wheels.Inputs(p, commands, at_height(5.0), Flat())
    for _ in range(steps):
        state = wheels.step(state, inputs, H)
    return state


def test_motor_follows_the_torque_curve():
    p = rig()
    top = p.max_speed[0] / p.radius[0]                     # rad/s where the curve ends
    for fraction in (0.0, 0.5, 0.9):
        state = spin_in_the_air(p, drive(p, target=1000.0), fraction * top)
        assert not np.any(state.grounded)
        expected = p.max_torque[0] * (1.0 - fraction)
        assert state.drive_torque == pytest.approx([expected] * 4)
        assert state.omega[0] == pytest.approx(fraction * top + H * expected / p.inertia[0])
    # braking against the spin it has its full torque; no command, no torque
    assert spin_in_the_air(p, drive(p, target=-1000.0), top).drive_torque[0] == pytest.approx(
        -p.max_torque[0])
    assert not np.any(spin_in_the_air(p, drive(p, 1000.0, on=False), 0.0).drive_torque)


def test_a_light_wheels_motor_reaches_its_target_without_swinging():
    # a kart's wheel: 5 kg, 0.14 m (I = 0.049 kg m^2), 56 N m. Full torque turns it by
    # 4.6 rad/s in one sub-step: with a band of 1 rad/s the explicit step would overshoot
    # and swing between full drive and full braking; the band widens to that step instead
    p = rig(radius=0.14, wheel_mass=5.0, max_drive_torque=56.0, rolling_resistance=0.0)
    band = 56.0 * H / p.inertia[0]
    assert p.inertia[0] == pytest.approx(0.049) and band == pytest.approx(4.571, abs=1e-3)
    state = replace(wheels.State.initial(p.names), omega=np.zeros(p.count))
    inputs = wheels.Inputs(p, drive(p, target=20.0), at_height(5.0), Flat())
    spins, torques = [], []
    for _ in range(40):
        state = wheels.step(state, inputs, H)
        spins.append(state.omega[0])
        torques.append(state.drive_torque[0])
    assert all(b >= a for a, b in zip(spins, spins[1:]))          # never back: no swing
    assert max(spins) <= 20.0 + 1e-9 and spins[-1] == pytest.approx(20.0, abs=1e-3)
    assert min(torques) >= 0.0                                    # never braking on the way
    # far from the target it still has its full torque (the curve at this spin)
    assert torques[0] == pytest.approx(56.0 * min(1.0, 20.0 / band))


def test_brake_stops_the_spin_and_holds_it_without_reversing():
    p = rig()
    state = spin_in_the_air(p, drive(p, brake=1.0, on=False), 10.0)
    assert state.omega[0] == pytest.approx(10.0 - H * p.brake_torque[0] / p.inertia[0])
    assert state.brake_torque[0] == pytest.approx(p.brake_torque[0])
    stopped = spin_in_the_air(p, drive(p, brake=1.0, on=False), 10.0, steps=200)
    assert not np.any(stopped.omega) and not np.any(stopped.brake_torque)


def test_suspension_force_is_the_spring_at_its_compression():
    p = rig()
    hub_free = -0.2 - p.extension[0]                      # hub at full extension, z
    x = 0.03
    z = -(hub_free) + p.radius[0] - x                     # tyre 3 cm into the ground
    state = wheels.step(wheels.State.initial(p.names),
                        wheels.Inputs(p, drive(p, on=False), at_height(z), Flat()), H)
    assert np.all(state.grounded)
    assert state.load == pytest.approx(p.stiffness * x)
    assert state.force[:, 2] == pytest.approx(p.stiffness * x)
    assert state.force[:, :2] == pytest.approx(np.zeros((4, 2)), abs=1e-9)   # no slip
    assert state.arm[:, 2] == pytest.approx([-z] * 4)      # contact on the ground


def test_a_locked_wheel_slides_with_mu_n_against_the_motion():
    p = rig(brake_torque=1e5)
    hub_free = -0.2 - p.extension[0]
    z = -hub_free + p.radius[0] - p.extension[0]           # at the rest compression
    inputs = wheels.Inputs(p, drive(p, brake=1.0, on=False), at_height(z, (5.0, 0.0, 0.0)),
                           Flat())
    state = wheels.State.initial(p.names)
    for _ in range(20):
        state = wheels.step(state, inputs, H)
    assert not np.any(state.omega)
    assert state.force[:, 0] == pytest.approx(-p.friction * state.load)
    assert state.slip == pytest.approx([1.0] * 4)          # |v − ωr| / |v|


def test_rolling_resistance_is_the_only_drag_of_a_free_wheel():
    p = rig()
    hub_free = -0.2 - p.extension[0]
    z = -hub_free + p.radius[0] - p.extension[0]
    v = 2.0
    inputs = wheels.Inputs(p, drive(p, on=False), at_height(z, (v, 0.0, 0.0)), Flat())
    state = replace(wheels.State.initial(p.names), omega=np.full(4, v / p.radius[0]))
    for _ in range(500):
        state = wheels.step(state, inputs, H)
    # steady: the spin slows until the tyre's pull balances C_rr N r (wheel inertia settled)
    assert state.force[:, 0] == pytest.approx(-p.rolling * state.load, rel=0.02)
    assert np.all(state.slip < 0.1)


def test_motor_draw_is_proportional_to_torque():
    p = rig()
    torque = np.array([150.0, 75.0, 0.0, -150.0])
    assert power.rover_wheel_draw_rate(torque, p.max_torque, p.ec_rate) == pytest.approx(
        wheels.SETTINGS['electric_charge_per_second'][0] * 2.5)
