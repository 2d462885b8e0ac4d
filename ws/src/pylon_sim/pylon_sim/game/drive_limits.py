"""A wheeled vessel's measured limits: manoeuvres driven on ``rover.step`` (pure, no I/O).

``Rig`` puts a scenario's active vessel on the bare sphere of its body (flat ground: the
track is kept free of craters and boulders) and steps ``rover.step`` with
``wheels.Commands``; each manoeuvre returns what it measured. Speeds are relative to the
ground (m/s), accelerations m/s², radii m. ``bench/bench_kart.py`` prints them and
``test_kart.py`` checks them against the physics.

- ``top_speed``: full drive on the driven wheels until the speed settles.
- ``standing_start``: from rest at full drive: the largest acceleration (0.25 s mean: the
  first steps carry the tyres' and the suspension's start-up) and the time to 10 m/s.
- ``braking``: from 10 m/s, full brake on every wheel: the mean deceleration down to
  1 m/s and the distance to the stop.
- ``full_lock_radius``: Ackermann steering with the inner front wheel at its limit, each
  rear wheel at the spin of its path, at 2 m/s: the radius of the rear axle's midpoint.
- ``lateral_grip``: on a circle (Ackermann for 12 m) the speed rises slowly; the largest
  steady lateral acceleration (speed × yaw rate) before the kart slides off the circle.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
import math

import numpy as np
from pylon_protocol import rotations

from pylon_sim.game import physics, rover, wheels
from pylon_sim.game.world import World

STEP = 0.02
"""s, the physics step (the scenarios')."""


@dataclass(frozen=True)
class Motion:
    """The vessel after a step: speed, forward speed, yaw rate, rear axle midpoint."""

    t: float                 # s since the manoeuvre began
    speed: float             # m/s over the ground
    forward: float           # m/s along base_link +X
    yaw_rate: float          # rad/s about the vessel's up axis (relative to the ground)
    rear_axle: np.ndarray    # (3,) m, body-fixed


class Rig:
    """A scenario's active vessel alone on its body's bare sphere, stepped in process."""

    def __init__(self, scenario) -> None:
        """Place the vessel as the scenario starts it (``World``), on the bare sphere."""
        world = World(scenario)
        vessel = world.active
        self.body, self.mass = vessel.body, vessel.mass.mass
        self.g = self.body.surface_gravity()
        self.params = wheels.params(vessel.spec, vessel.mass.com, vessel.mass.mass, self.g)
        self.inputs = physics.Inputs(vessel.mass.mass, vessel.mass.inertia)
        self.ground = wheels.SphereGround(self.body.radius)
        self.start = vessel.state
        hub = self.params.hub
        self.driven = self.params.max_torque > 0.0
        self.steered = self.params.steer_max > 0.0
        self.wheelbase = float(hub[self.steered, 0].mean() - hub[~self.steered, 0].mean())
        self.track = float(np.ptp(hub[~self.steered, 1]))
        self.reset()

    def reset(self) -> None:
        """Put the vessel back at its start, at rest, wheels still; settle 1 s."""
        self.state = self.start
        self.wheels = wheels.State.initial(self.params.names)
        self.run(1.0, self.commands())

    def commands(self, spins=0.0, steering=0.0, brake=0.0, drive=None) -> wheels.Commands:
        """Return commands: per-wheel (or one) target spin rad/s, steering rad, brake 0-1."""
        n = self.params.count
        on = np.full(n, False) if drive is None else np.broadcast_to(drive, n)
        steer = np.clip(np.broadcast_to(np.asarray(steering, float), n),
                        -self.params.steer_max, self.params.steer_max)
        return wheels.Commands(np.array(on, dtype=bool), np.broadcast_to(
            np.asarray(spins, float), n).copy(), steer, np.zeros(n),
            np.full(n, float(brake)))

    def run(self, seconds: float, commands, until=None) -> list[Motion]:
        """Step ``seconds`` (``commands`` fixed, or a function of the last Motion).

        Stop early when ``until(motion)`` is true.
        """
        out: list[Motion] = []
        for i in range(int(round(seconds / STEP))):
            given = commands(out[-1] if out else None) if callable(commands) else commands
            result = rover.step(self.state, self.wheels, self.inputs, given, self.params,
                                self.ground, self.body, STEP)
            self.state, self.wheels = result.state, result.wheels
            out.append(self.motion((i + 1) * STEP))
            if until is not None and until(out[-1]):
                break
        return out

    def motion(self, t: float) -> Motion:
        """Return the vessel's motion relative to the ground now."""
        k = rover.kinematics(self.state, self.body, self.state.ut)
        rear = k.position + k.rotation @ np.array([self.params.hub[~self.steered, 0].mean(),
                                                   0.0, 0.0])
        return Motion(t, float(np.linalg.norm(k.velocity)), float(k.velocity @ k.rotation[:, 0]),
                      float(k.rate @ k.rotation[:, 2]), rear)

    def set_rolling(self, speed: float) -> None:
        """Give the vessel ``speed`` (m/s) along its heading, its wheels rolling with it."""
        heading = rotations.to_matrix(self.state.attitude)[:, 0]
        self.state = replace(self.state, velocity=self.state.velocity + speed * heading)
        self.wheels = replace(self.wheels, omega=speed / self.params.radius)

    def ackermann(self, radius: float) -> tuple[np.ndarray, np.ndarray]:
        """Return per-wheel steering (rad) and spin per m/s for a left turn of ``radius``.

        ``radius`` is that of the rear axle's midpoint; every wheel points at the turn's
        centre and spins for its own path.
        """
        hub = self.params.hub
        rear_x = hub[~self.steered, 0].mean()
        centre = np.array([rear_x, radius])
        along = hub[:, 0] - centre[0]
        across = centre[1] - hub[:, 1]
        steering = np.where(self.steered, np.arctan2(along, across), 0.0)
        paths = np.hypot(along, across)
        return steering, paths / radius / self.params.radius


def top_speed(rig: Rig, seconds: float = 20.0, start: float = 0.0) -> dict:
    """Return the speed the vessel settles at on full drive from ``start`` m/s.

    With how much it still changed over the last second.
    """
    rig.reset()
    rig.set_rolling(start)
    motion = rig.run(seconds, rig.commands(spins=1000.0, drive=rig.driven))
    return {'top_speed_mps': motion[-1].speed,
            'settled_change_mps_last_s': abs(motion[-1].speed - motion[-int(1 / STEP)].speed)}


def standing_start(rig: Rig, target: float = 10.0) -> dict:
    """Return the largest 0.25 s mean acceleration from rest and the time to ``target``."""
    rig.reset()
    motion = rig.run(10.0, rig.commands(spins=1000.0, drive=rig.driven),
                     until=lambda m: m.speed >= target)
    speeds = np.array([0.0] + [m.speed for m in motion])
    window = int(round(0.25 / STEP))
    accel = (speeds[window:] - speeds[:-window]) / (window * STEP)
    last, before = motion[-1], motion[-2] if len(motion) > 1 else motion[-1]
    # the crossing of the target, interpolated within the last step
    crossing = before.t + STEP * (target - before.speed) / max(last.speed - before.speed,
                                                               1e-9)
    return {'max_accel_mps2': float(accel.max()), 'time_0_to_10_s': float(crossing)}


def braking(rig: Rig, speed: float = 10.0) -> dict:
    """Return the mean deceleration from ``speed`` to 1 m/s and the distance to the stop.

    Full brake on every wheel. The stop is the first minimum of the speed (the locked
    tyres' deflection then rocks the vessel a little on its suspension).
    """
    rig.reset()
    rig.set_rolling(speed)
    start = rig.motion(0.0).rear_axle
    motion = rig.run(4.0, rig.commands(brake=1.0))
    speeds = np.array([m.speed for m in motion])
    slow = int(np.argmax(speeds < 1.0))
    stop = next((i for i in range(1, len(speeds) - 1) if speeds[i] <= speeds[i + 1]),
                len(speeds) - 1)
    return {'brake_decel_mps2': (speed - speeds[slow]) / motion[slow].t,
            'brake_distance_m': float(np.linalg.norm(motion[stop].rear_axle - start))}


def full_lock_radius(rig: Rig, speed: float = 2.0, seconds: float = 8.0) -> dict:
    """Return the rear axle midpoint's turn radius with the inner wheel at full lock."""
    rig.reset()
    inner = float(rig.params.steer_max.max())
    radius = rig.wheelbase / math.tan(inner) + 0.5 * rig.track
    steering, per_speed = rig.ackermann(radius)
    rig.set_rolling(speed)
    rig.wheels = replace(rig.wheels, omega=per_speed * speed)
    motion = rig.run(seconds, rig.commands(spins=per_speed * speed, steering=steering,
                                           drive=rig.driven))
    points = np.array([m.rear_axle for m in motion[len(motion) // 2:]])
    return {'full_lock_radius_m': _circle_radius(points), 'full_lock_geometric_m': radius,
            'full_lock_inner_deg': math.degrees(inner),
            'full_lock_outer_deg': math.degrees(float(np.abs(steering[rig.steered]).min()))}


def lateral_grip(rig: Rig, radius: float = 12.0, ramp: float = 0.25,
                 start: float = 3.0) -> dict:
    """Return the largest steady lateral acceleration on a circle before sliding off it.

    Steering holds an Ackermann turn of ``radius``; every driven wheel's target spin is
    that of its path at a speed rising by ``ramp`` m/s² from ``start`` m/s. Lateral
    acceleration is speed × yaw rate (1 s means); the run ends when the path's radius
    (speed / yaw rate) passes 1.25 × ``radius`` (the tyres slide).
    """
    rig.reset()
    steering, per_speed = rig.ackermann(radius)
    rig.set_rolling(start)
    rig.wheels = replace(rig.wheels, omega=per_speed * start)

    def given(m: Motion | None):
        v = start + ramp * (m.t if m else 0.0)
        return rig.commands(spins=per_speed * v, steering=steering, drive=rig.driven)

    motion = rig.run(60.0, given, until=lambda m: m.t > 2.0
                     and m.speed / max(abs(m.yaw_rate), 1e-6) > 1.25 * radius)
    lateral = np.array([m.speed * m.yaw_rate for m in motion])
    window = int(round(1.0 / STEP))
    smooth = np.convolve(lateral, np.ones(window) / window, mode='valid')
    best = int(np.argmax(smooth))
    return {'max_lateral_accel_mps2': float(smooth[best]),
            'max_lateral_speed_mps': motion[best + window // 2].speed,
            'grip_circle_radius_m': radius}


def _circle_radius(points: np.ndarray) -> float:
    """Return the radius of the circle fitted (least squares) to 3D points near a plane."""
    centre = points.mean(axis=0)
    rel = points - centre
    _, _, axes = np.linalg.svd(rel)
    plane = rel @ axes[:2].T
    a = np.column_stack([2.0 * plane, np.ones(len(plane))])
    b = (plane ** 2).sum(axis=1)
    cx, cy, c = np.linalg.lstsq(a, b, rcond=None)[0]
    return float(math.sqrt(c + cx * cx + cy * cy))
