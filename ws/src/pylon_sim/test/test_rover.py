"""The surface scenario's rover on its wheels: analytic checks of driving, turning, braking.

Each test drives ``rover.step`` with the shipped rover (its parts, mass and wheel
modules) on Kerbin and compares what it does with what its torque, steering geometry and
friction predict. ``World`` and the simulator put it in the loop (last tests).
"""

from dataclasses import replace
import json
import math

import numpy as np
from pylon_protocol import packets, rotations
from pylon_sim.game import contact, physics, power, rover, wheels
from pylon_sim.game.bodies import body_fixed_rotation, enu_rotation
from pylon_sim.game.world import World
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.mod.typed_actuators import TypedActuators
import pytest

STEP = 0.02
FRONT, REAR = slice(0, 2), slice(2, 4)          # the scenario's wheel order


class PlaneGround:
    """A plane through ``point`` with unit ``normal`` (body-fixed): a uniform slope."""

    def __init__(self, point, normal):
        self.point, self.normal = np.asarray(point, float), np.asarray(normal, float)

    def ground(self, points):
        clearance = (np.asarray(points) - self.point) @ self.normal
        return clearance, np.tile(self.normal, (len(points), 1))


class Rig:
    """The surface rover alone on a ground, stepped by ``rover.step``."""

    def __init__(self, slope: float = 0.0, **param_changes):
        world = World(load_scenario('surface'))
        vessel = world.active
        self.body, self.mass = vessel.body, vessel.mass.mass
        self.g = self.body.surface_gravity()
        self.params = replace(wheels.params(vessel.spec, vessel.mass.com, vessel.mass.mass,
                                            self.g), **param_changes)
        self.inputs = physics.Inputs(vessel.mass.mass, vessel.mass.inertia)
        self.wheels = wheels.State.initial(self.params.names)
        start = load_scenario('surface').vessels[0].start
        east, north, up = enu_rotation(start.latitude, start.longitude)
        normal = math.cos(slope) * up + math.sin(slope) * east    # downhill towards east
        foot = up * self.body.radius
        self.ground = PlaneGround(foot, normal) if slope else wheels.SphereGround(
            self.body.radius)
        self.state = self._placed(vessel.state, foot, north, normal, slope, start.altitude)

    def _placed(self, state, foot, north, normal, slope, height):
        to_fixed = body_fixed_rotation(self.body, state.ut)
        tilt = rotations.to_matrix(rotations.from_axis_angle(north, slope))
        attitude = to_fixed.T @ tilt @ to_fixed @ rotations.to_matrix(state.attitude)
        position = to_fixed.T @ (foot + normal * height)
        spin = self.body.spin_vector()
        return replace(state, position=position, velocity=np.cross(spin, position),
                       attitude=rotations.from_matrix(attitude), body_rate=attitude.T @ spin)

    def commands(self, target=0.0, steering=0.0, brake=0.0, drive=True) -> wheels.Commands:
        n = self.params.count
        steer = np.clip(np.full(n, float(steering)), -self.params.steer_max,
                        self.params.steer_max)
        return wheels.Commands(np.full(n, drive), np.full(n, float(target)), steer,
                               np.zeros(n), np.full(n, float(brake)))

    def run(self, seconds: float, commands: wheels.Commands) -> list[wheels.Kinematics]:
        """Step for ``seconds``; return the motion relative to the ground after each step."""
        out = []
        for _ in range(int(round(seconds / STEP))):
            result = rover.step(self.state, self.wheels, self.inputs, commands, self.params,
                                self.ground, self.body, STEP)
            self.state, self.wheels = result.state, result.wheels
            out.append(rover.kinematics(self.state, self.body, self.state.ut))
        return out

    def set_rolling(self, speed: float) -> None:
        """Give the rover ``speed`` along its heading, its wheels rolling with it."""
        attitude = rotations.to_matrix(self.state.attitude)
        self.state = replace(self.state, velocity=self.state.velocity + speed * attitude[:, 0])
        self.wheels = replace(self.wheels, omega=np.full(self.params.count,
                                                         speed / self.params.radius[0]))

    def effective_mass(self) -> float:
        return self.mass + float(np.sum(self.params.inertia / self.params.radius ** 2))


def test_terminal_speed_is_where_the_torque_curve_meets_rolling_resistance():
    rig = Rig()
    p = rig.params
    motion = rig.run(30.0, rig.commands(target=1000.0))
    # n T (1 - v / v_max) / r = C_rr m g
    expected = p.max_speed[0] * (1.0 - p.rolling[0] * rig.mass * rig.g * p.radius[0]
                                 / float(np.sum(p.max_torque)))
    speeds = [float(np.linalg.norm(k.velocity)) for k in motion]
    assert speeds[-1] == pytest.approx(expected, rel=0.1)
    assert abs(speeds[-1] - speeds[-50]) < 0.05                   # it has levelled off
    heading = motion[-1].rotation[:, 0]
    assert motion[-1].velocity @ heading == pytest.approx(speeds[-1], rel=1e-3)   # straight
    assert np.all(rig.wheels.grounded) and np.all(rig.wheels.slip < 0.05)
    assert rig.wheels.omega == pytest.approx([speeds[-1] / p.radius[0]] * 4, rel=0.02)


def ackermann_turn(one_spin: bool = False) -> tuple[float, list[float], np.ndarray]:
    """Turn left with Ackermann steering at 1 m/s for 12 s (rear axle radius 3.88 m).

    Return the bicycle's radius, the last 100 measured radii of the rear axle's midpoint
    and the commanded steering. The wheels get the spins of their paths, or
    (``one_spin``) all the rear axle's.
    """
    rig = Rig()
    p = rig.params
    delta = 0.3                                           # the bicycle's steering angle
    wheelbase = p.hub[0, 0] - p.hub[2, 0]
    track = p.hub[0, 1] - p.hub[1, 1]
    radius = wheelbase / math.tan(delta)                  # of the rear axle's midpoint
    # wheel order: front left (inner in a left turn), front right, rear left, rear right
    lateral = np.array([radius - track / 2, radius + track / 2] * 2)
    along = np.array([wheelbase, wheelbase, 0.0, 0.0])
    steering = np.arctan2(along, lateral)
    spin = np.hypot(lateral, along) / radius * 1.0 / p.radius
    if one_spin:
        spin = np.full(p.count, 1.0 / p.radius[0])
    commands = replace(rig.commands(), steering=steering, target=spin)
    motion = rig.run(12.0, commands)
    assert rig.wheels.steering == pytest.approx(steering)
    rear_axle = 0.5 * (p.hub[2] + p.hub[3])
    radii = []
    for k in motion[-100:]:
        arm = k.rotation @ rear_axle
        velocity = k.velocity + np.cross(k.rate, arm)
        yaw_rate = k.rate @ k.rotation[:, 2]
        radii.append(float(np.linalg.norm(velocity)) / yaw_rate)   # > 0: turning left
    return radius, radii, steering


def test_turn_radius_is_wheelbase_over_tan_steering():
    """Ackermann steering and per-wheel spins (the bicycle model's wheels) at 1 m/s."""
    radius, radii, _ = ackermann_turn()
    assert np.mean(radii) == pytest.approx(radius, rel=0.1)
    assert np.std(radii) < 0.01 * radius                           # a steady circle


def one_spin_radius(rig: Rig, steering: np.ndarray, rim_speed: float = 1.0,
                    stiff_motors: bool = False) -> float:
    """Return the steady turn radius of the rear axle's midpoint with one spin for all wheels.

    Derived from the geometry and the documented tyre and motor laws (``wheels``), not
    from a run. The turn is slow (1 m/s on about 4 m: 0.03 g, which takes a sideways slip
    of 0.3 % of the speed, neglected) and steady, so the wheels' forces balance: no net
    force, no yaw moment. The rover moves as a rigid body, contact velocity
    ``v_i = V + Ω ẑ × p_i`` (``p_i`` the hub's x, y), split along the wheel's heading
    (``v_x``) and its left (``v_y``).

    - Tyre: the steady deflection is ``d = σ u / |v_x|``, so the force is
      ``F = -C_i u`` with ``C_i = μ N_i (1 / |v_x| + τ / σ) / PEAK_SLIP`` (linear below
      the peak slip; ``u = (v_x - ω r, v_y)``), the same stiffness both ways.
    - Motor: its torque ``K (ω_t - ω)``, ``K = max_torque × (1 - ω_t r / max_speed) /
      DRIVE_BAND``, balances the tyre's ``r F_x`` (and the rolling resistance, the same
      on every wheel to within the load split: it scales the motion, not its radius). The
      rim speed therefore gives way by ``r² F_x / K``: along the heading the tyre and the
      motor are springs in series, ``1 / k_x = 1 / C_i + r² / K``; sideways only the tyre,
      ``k_y = C_i``.
    - ``F_x = -k_x (v_x - s)``, ``F_y = -k_y v_y`` with ``s = ω_t r`` are the gradient of
      ``E = ½ Σ k_x (v_x - s)² + k_y v_y²`` with respect to each contact velocity, so no
      net force and no moment (the gradient with respect to ``V`` and ``Ω``) is the
      weighted least-squares fit of the rigid motion to the wheels' rim velocities.
      ``C_i`` depends on ``v_x``: a few fixed-point rounds.
    - Loads ``N_i``: the lever rule between the axles (the weight's moment about the
      centre of mass is zero, left and right alike).

    ``K / r²`` (1.5 kN s/m) is 8 times softer than the tyre (11.6 kN s/m): the motors give
    way, the turn widens by about 11 %. ``stiff_motors`` (``k_x = C_i``: the tyres locked
    to the spin) is the stiffest bound, about twice the bicycle's radius.
    """
    p = rig.params
    x, y = p.hub[:, 0], p.hub[:, 1]
    front = x > 0.0
    x_front, x_rear = x[front].mean(), x[~front].mean()
    share = np.where(front, -x_rear, x_front) / (x_front - x_rear) / 2.0     # lever rule
    load = share * rig.mass * rig.g
    heading = np.column_stack([np.cos(steering), np.sin(steering)])
    left = np.column_stack([-np.sin(steering), np.cos(steering)])
    spin = rim_speed / p.radius
    motor = p.max_torque * (1.0 - rim_speed / p.max_speed) / wheels.DRIVE_BAND / p.radius ** 2
    # rows: the contact velocity's component along a unit vector e, linear in (Vx, Vy, Ω)
    along = np.column_stack([heading, x * heading[:, 1] - y * heading[:, 0]])
    side = np.column_stack([left, x * left[:, 1] - y * left[:, 0]])
    vx = np.full(p.count, rim_speed)
    for _ in range(10):
        tyre = p.friction * load / wheels.PEAK_SLIP * (
            1.0 / np.abs(vx) + wheels.TYRE_DAMPING_TIME / wheels.RELAXATION_LENGTH)
        k_x = tyre if stiff_motors else 1.0 / (1.0 / tyre + 1.0 / motor)
        weights = np.sqrt(np.concatenate([k_x, tyre]))
        rows = np.vstack([along, side]) * weights[:, None]
        target = np.concatenate([spin * p.radius, np.zeros(p.count)]) * weights
        motion = np.linalg.lstsq(rows, target, rcond=None)[0]
        vx = along @ motion
    vel_x, vel_y, yaw_rate = motion
    mid = 0.5 * (p.hub[2] + p.hub[3])
    return math.hypot(vel_x - yaw_rate * mid[1], vel_y + yaw_rate * mid[0]) / yaw_rate


def test_one_spin_for_every_wheel_widens_the_turn():
    """The same spin on all four wheels fights the steering (a locked differential)."""
    radius, radii, steering = ackermann_turn(one_spin=True)
    assert radius == pytest.approx(3.88, abs=0.005)
    rig = Rig()
    expected = one_spin_radius(rig, steering)
    # what the derivation says, and that it lies between the bicycle's radius (motors
    # that give way entirely) and the tyres locked to the spin
    assert radius * 1.05 < expected < one_spin_radius(rig, steering, stiff_motors=True)
    # the neglected terms (centripetal force, load transfer, the torque curve's absence on
    # the outer wheels, which spin faster than told) move it by 0.1 %
    assert np.mean(radii) == pytest.approx(expected, rel=0.005)
    assert np.std(radii) < 0.01 * radius


def test_steering_is_clamped_to_the_range_and_fixed_wheels_stay_straight():
    rig = Rig()
    commands = rig.commands(steering=1.0)
    assert commands.steering[FRONT] == pytest.approx([math.radians(30.0)] * 2)
    assert not np.any(commands.steering[REAR])


def test_a_locked_rover_stops_within_the_friction_braking_distance():
    rig = Rig(brake_torque=np.full(4, 5000.0))                  # enough to lock the wheels
    rig.run(0.5, rig.commands(drive=False))
    rig.set_rolling(8.0)
    start = rig.run(STEP, rig.commands(drive=False))[-1]
    v0 = float(np.linalg.norm(start.velocity))
    motion = rig.run(3.0, rig.commands(brake=1.0, drive=False))
    distance = float(np.linalg.norm(motion[-1].position - start.position))
    friction = v0 ** 2 / (2.0 * rig.params.friction[0] * rig.g)
    assert float(np.linalg.norm(motion[-1].velocity)) < 0.01
    assert 0.9 * friction < distance < 1.1 * friction
    assert not np.any(rig.wheels.omega)


@pytest.mark.parametrize('slope', [math.radians(8.0)])
def test_unbraked_it_rolls_down_a_slope_braked_it_stays(slope):
    rig = Rig(slope=slope)
    rolling = rig.run(5.0, rig.commands(drive=False))
    speeds = [float(np.linalg.norm(k.velocity)) for k in rolling]
    acceleration = (speeds[-1] - speeds[49]) / (len(speeds) - 50) / STEP
    c_rr = rig.params.rolling[0]
    expected = rig.g * (math.sin(slope) - c_rr * math.cos(slope)) * rig.mass / (
        rig.effective_mass())
    assert acceleration == pytest.approx(expected, rel=0.1)
    assert rolling[-1].velocity @ rig.ground.normal == pytest.approx(0.0, abs=0.01)  # on it

    held = Rig(slope=slope)
    settle = held.run(2.0, held.commands(brake=1.0, drive=False))[-1]
    after = held.run(10.0, held.commands(brake=1.0, drive=False))[-1]
    assert np.linalg.norm(after.position - settle.position) < 0.01
    assert np.all(held.wheels.grounded) and not np.any(held.wheels.omega)


def test_a_dropped_rover_settles_without_gaining_energy():
    rig = Rig()
    up = rig.state.position / np.linalg.norm(rig.state.position)
    rig.state = replace(rig.state, position=rig.state.position + 0.2 * up)
    start = rover.kinematics(rig.state, rig.body, rig.state.ut)

    def energy(k):
        height = float(np.linalg.norm(k.position)) - float(np.linalg.norm(start.position))
        return 0.5 * rig.mass * float(k.velocity @ k.velocity) + rig.mass * rig.g * height
    motion = rig.run(5.0, rig.commands(drive=False))
    energies = [energy(k) for k in motion]
    assert max(energies) < energy(start) + 1.0                  # J: never above the drop
    assert energies[-1] == pytest.approx(-0.2 * rig.mass * rig.g, rel=0.05)   # back at rest
    assert float(np.linalg.norm(motion[-1].velocity)) < 1e-3


def test_the_surface_rover_stands_still_in_the_world():
    world = World(load_scenario('surface'))
    vessel = world.active

    def fixed():
        return body_fixed_rotation(vessel.body, world.ut) @ vessel.state.position
    for _ in range(50):
        world.step()
    before = fixed()
    for _ in range(int(60.0 / STEP)):
        world.step()
    assert np.linalg.norm(fixed() - before) < 0.01
    assert vessel.state.landed and np.all(vessel.wheel_state.grounded)
    # it rests on its wheels at the scenario's altitude, feeling g less the planet's spin
    assert physics.altitude(vessel.body, vessel.state.position) == pytest.approx(
        vessel.state.rest_altitude, abs=0.005)
    assert vessel.specific_force[2] == pytest.approx(9.807 - 0.051, abs=0.01)
    assert vessel.wheel_draw == 0.0


def test_world_drives_the_rover_under_commands_and_draws_charge():
    world = World(load_scenario('surface'))
    vessel = world.active
    names = world.wheel_params(vessel).names
    start = body_fixed_rotation(vessel.body, world.ut) @ vessel.state.position
    command = {name: {'enabled': True, 'target_angular_velocity': 10.0, 'steering_angle': 0.0,
                      'max_drive_torque': 0.0, 'brake': 0.0, 'commanded': True}
               for name in names}
    for _ in range(100):
        world.step(wheel_commands={vessel.key: command})
    moved = body_fixed_rotation(vessel.body, world.ut) @ vessel.state.position - start
    assert np.linalg.norm(moved) > 1.0
    assert vessel.wheel_draw == pytest.approx(power.rover_wheel_draw_rate(
        vessel.wheel_state.drive_torque, world.wheel_params(vessel).max_torque,
        world.wheel_params(vessel).ec_rate))
    assert vessel.wheel_draw > 0.0
    power.set_electric_charge(vessel, 0.0)                   # no charge: the motors stop
    world.step(wheel_commands={vessel.key: command})
    assert not np.any(vessel.wheel_state.drive_torque) and vessel.wheel_draw == 0.0


def wheel_command(h, name, **bad):
    """Queue a wheel command; ``bad`` fields are put in after building (not validated)."""
    packet = packets.build_command(
        'pylon_actuator_command', h.sim.envelope, actuatorType='wheel', name=name,
        enabled=True, timeoutSeconds=2.0, targetAngularVelocity=10.0, steeringAngle=0.0,
        maxDriveTorque=0.0, brake=0.0, **h.identity())
    h.port.queue.append(json.dumps({**packet, **bad}).encode())


def test_commanded_wheels_report_what_they_do_and_bad_commands_are_refused(harness):
    h = harness('surface')
    h.run(0.5)
    [still] = [p for p in h.of('pylon_actuator_state') if p['name'] == 'wheel_7700002_0'][-1:]
    assert still['grounded'] and still['angularVelocity'] == pytest.approx(0.0, abs=1e-3)
    assert still['driveTorque'] == 0.0
    h.acquire()
    charge = power.electric_charge(h.sim.world.active)
    for name in ('wheel_7700002_0', 'wheel_7700003_0', 'wheel_7700004_0', 'wheel_7700005_0'):
        wheel_command(h, name)
    wheel_command(h, 'wheel_9999999_0')                               # no such wheel
    wheel_command(h, 'wheel_7700004_0', brake=1.5)                    # out of range
    wheel_command(h, 'wheel_7700004_0', targetAngularVelocity=float('nan'))   # not a number
    h.capture.clear()
    h.run(1.0)
    refused = h.sim.control.refused
    assert refused[('pylon_actuator_command', 'unknown_actuator')] == 1
    # out of range and not a number: dropped on decoding, counted by reason
    assert dict(h.sim.stats.command_rejected) == {'out_of_range': 1, 'non_finite': 1}
    state = [p for p in h.of('pylon_actuator_state') if p['name'] == 'wheel_7700002_0'][-1]
    assert state['grounded'] and state['commandActive']
    assert 1.0 < state['angularVelocity'] <= 10.0 and state['driveTorque'] > 0.0
    assert 0.0 <= state['slip'] < 0.5 and state['brakeTorque'] >= 0.0
    truth = h.of('pylon_ground_truth')
    east = truth[-1]['position'][0] - truth[0]['position'][0]          # ENU, heading east
    assert east > 0.5 and truth[-1]['linearVelocityBody'][0] > 1.0
    # the IMU feels the push forward (about 3.5 m/s² from standstill) and the ground's support
    imu = h.of('pylon_imu')
    assert max(p['linearAcceleration'][0] for p in imu) > 2.0
    assert imu[-1]['linearAcceleration'][2] == pytest.approx(9.76, abs=0.3)
    assert power.electric_charge(h.sim.world.active) < charge        # the motors drew


def test_physics_warp_takes_more_sub_steps_and_stays_stable():
    world = World(load_scenario('surface'))
    vessel = world.active
    world.set_warp(4.0, 'physics')                           # 0.08 s steps: 20 sub-steps
    start = body_fixed_rotation(vessel.body, world.ut) @ vessel.state.position
    for _ in range(int(8.0 / 0.08)):
        world.step()
    moved = body_fixed_rotation(vessel.body, world.ut) @ vessel.state.position - start
    assert np.linalg.norm(moved) < 0.01 and vessel.state.landed
    speed = rover.kinematics(vessel.state, vessel.body, world.ut).velocity
    assert np.linalg.norm(speed) < 1e-3


def test_driving_into_the_boulder_stops_the_rover_without_blowing_up():
    world = World(load_scenario('surface'))          # a 1 m boulder 8 m ahead (terrain)
    vessel = world.active
    names = world.wheel_params(vessel).names
    command = {name: {'enabled': True, 'target_angular_velocity': 15.0, 'steering_angle': 0.0,
                      'max_drive_torque': 0.0, 'brake': 0.0, 'commanded': True}
               for name in names}
    start = body_fixed_rotation(vessel.body, world.ut) @ vessel.state.position
    for _ in range(int(6.0 / STEP)):
        world.step(wheel_commands={vessel.key: command})
        assert np.all(np.isfinite(vessel.state.position)) and np.all(
            np.isfinite(vessel.state.body_rate))
        # never through the ground: the suspension is capped, a tipped rover is put down
        assert physics.altitude(vessel.body, vessel.state.position) > -0.1
    moved = body_fixed_rotation(vessel.body, world.ut) @ vessel.state.position - start
    assert 6.0 < np.linalg.norm(moved) < 8.0                   # it stopped at the rock


WHEEL_IDS = ('wheel_7700002_0', 'wheel_7700003_0', 'wheel_7700004_0', 'wheel_7700005_0')


def parts_clearance(world, vessel, centre, radius) -> float:
    """Return the least distance from the rover's parts to a sphere (m, < 0: inside it).

    Every part counts as its box (a cylinder or sphere as the box around it, so the
    clearance is never overstated): the sphere's centre is clamped into each box in the
    part's axes.
    """
    to_fixed = body_fixed_rotation(vessel.body, world.ut)
    rot = to_fixed @ rotations.to_matrix(vessel.state.attitude)
    origin = to_fixed @ vessel.state.position - rot @ np.asarray(vessel.mass.com)
    least = math.inf
    for part in vessel.spec.parts:
        part_rot = rot @ rotations.to_matrix(part.rotation)
        local = part_rot.T @ (centre - origin - rot @ np.asarray(part.position))
        size = np.asarray(part.shape.size, dtype=float)
        half = {'box': size / 2.0, 'cylinder': np.array([size[1] / 2.0, size[0], size[0]]),
                'sphere': np.full(3, size[0])}[part.shape.kind]
        least = min(least, float(np.linalg.norm(local - np.clip(local, -half, half))) - radius)
    return least


def drive_past_the_boulder(plan, spin=10.0):
    """Drive the surface rover by typed wheel commands (``plan``: (seconds, steering rad)).

    Every wheel gets the command again each physics step (a 50 Hz controller); return the
    least clearance of the rover's parts to the placed boulder and where it ends (east,
    north of the site, m).
    """
    world = World(load_scenario('surface'))
    vessel = world.active
    site = world.terrain_of('Kerbin')
    typed = TypedActuators(vessel.spec)
    boulder, centre = site.boulders[-1], site.boulder_centers[-1]
    assert (boulder.east, boulder.north, boulder.radius) == (8.0, 0.0, 1.0)
    sequence, now, least = 1, 0.0, math.inf
    for seconds, steering in plan:
        for _ in range(int(round(seconds / STEP))):
            for name in WHEEL_IDS:
                sequence += 1
                assert typed.command({
                    'type': 'pylon_actuator_command', 'actuatorType': 'wheel', 'name': name,
                    'enabled': True, 'timeoutSeconds': 0.5, 'sequence': sequence,
                    'targetAngularVelocity': spin, 'steeringAngle': steering,
                    'maxDriveTorque': 0.0, 'brake': 0.0}, now) == 'command_accepted'
            world.step(wheel_commands={vessel.key: typed.wheel_inputs()})
            now += STEP
            least = min(least, parts_clearance(world, vessel, centre, boulder.radius))
    fixed = body_fixed_rotation(vessel.body, world.ut) @ vessel.state.position
    east, north = site.local(fixed[None, :])[0][0]
    return least, float(east), float(north)


def test_a_rover_steered_left_drives_around_the_boulder_and_straight_on_hits_it():
    # 1 s at 0.3 rad to the left, then straight on, at 10 rad/s (3 m/s)
    least, east, north = drive_past_the_boulder([(1.0, 0.3), (6.0, 0.0)])
    assert least > 0.3                      # never touched the boulder
    assert east > 8.0 + 1.0 + 2.0 and north > 2.0   # beyond it, having passed north of it
    least, east, north = drive_past_the_boulder([(7.0, 0.0)])
    # straight ahead it runs into the boulder, its parts no deeper than the contact slop
    assert -contact.SLOP - 1e-9 <= least < 0.0
    assert east < 8.0 - 0.5 and abs(north) < 0.5    # and stops before it
