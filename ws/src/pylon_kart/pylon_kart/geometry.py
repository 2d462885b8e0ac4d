"""The kart's steering geometry, read from its wheels (pure; no ROS).

Frames: ``base_link`` (x forward, y left, z up, at the centre of mass), as the bridge's
``WheelState.position`` reports each hub. A positive steering angle turns the wheel's heading
to the left (counter-clockwise about z), as the simulator's wheels and REP 103 have it.

Ackermann geometry
    The competition's ``steering_tire_angle`` δ is the angle of a single front wheel on the
    kart's centre line (the bicycle model): the rear axle's centre then runs on a circle of
    curvature ``κ = tan δ / L`` (L the wheelbase, from the front to the rear axle). Each
    front wheel, at lateral offset ``y_i`` (+ left), is turned so that it rolls on its own
    circle about the same centre: ``tan δ_i = L κ / (1 − y_i κ)``; the inner wheel turns
    more. Back from the wheels' measured angles each gives ``κ_i = tan δ_i / (L + y_i tan
    δ_i)``; the kart's angle is ``atan(L · mean κ_i)``.

Electronic differential
    The rear wheels have a motor each and no shaft between them: each is driven at the rim
    speed of its own path, ``v (1 − y_i κ)`` for a rear-axle-centre speed ``v``, so the
    tyres do not scrub in a turn.

Limits
    ``max_steering_tire_angle``: the largest δ whose inner wheel stays within its own
    steering limit ``δ_w``: ``tan δ = L / (L / tan δ_w + t / 2)`` (t: the front track).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math


@dataclass(frozen=True)
class Wheel:
    """One wheel as the bridge reports it (``WheelState``)."""

    id: str
    x: float                    # m, hub in base_link
    y: float
    radius: float               # m
    steerable: bool
    max_steering_angle: float   # rad (0: fixed)
    max_drive_torque: float     # N·m (0: no motor)
    rolling_sign: float = 1.0   # +1: a positive spin rolls forward
    steering_sign: float = 1.0  # +1: a positive command turns left


@dataclass(frozen=True)
class Geometry:
    """The kart's wheels sorted by role, and the geometry that follows from them."""

    front: tuple[Wheel, ...]       # steerable wheels
    rear: tuple[Wheel, ...]        # fixed wheels
    wheelbase: float               # m, front axle to rear axle
    rear_axle_x: float             # m, rear axle in base_link (negative: behind the CoM)

    @property
    def wheels(self) -> tuple[Wheel, ...]:
        """Return every wheel, front first."""
        return self.front + self.rear

    @property
    def driven(self) -> tuple[Wheel, ...]:
        """Return the wheels with a motor."""
        return tuple(w for w in self.wheels if w.max_drive_torque > 0.0)

    @property
    def track(self) -> float:
        """Return the front track (m): the lateral distance between the front wheels."""
        ys = [w.y for w in self.front]
        return max(ys) - min(ys)

    @property
    def radius(self) -> float:
        """Return the driven wheels' mean radius (m)."""
        driven = self.driven or self.wheels
        return sum(w.radius for w in driven) / len(driven)

    @property
    def max_steering_tire_angle(self) -> float:
        """Return the largest kart steering angle (rad) every front wheel can follow."""
        limit = min(w.max_steering_angle for w in self.front)
        if limit <= 0.0:
            return 0.0
        inner = max(abs(w.y) for w in self.front)
        return math.atan(self.wheelbase / (self.wheelbase / math.tan(limit) + inner))

    def curvature(self, steering_tire_angle: float) -> float:
        """Return the rear axle centre's path curvature (1/m, + left) for an angle (rad)."""
        return math.tan(steering_tire_angle) / self.wheelbase

    def front_angles(self, steering_tire_angle: float) -> tuple[float, ...]:
        """Return each front wheel's angle (rad, + left) for the kart's angle, Ackermann."""
        kappa = self.curvature(steering_tire_angle)
        return tuple(math.atan2(self.wheelbase * kappa, 1.0 - w.y * kappa) for w in self.front)

    def rear_speed_ratios(self, steering_tire_angle: float) -> tuple[float, ...]:
        """Return each rear wheel's rim speed over the rear axle centre's speed."""
        kappa = self.curvature(steering_tire_angle)
        return tuple(1.0 - w.y * kappa for w in self.rear)

    def steering_tire_angle(self, front_angles: Sequence[float]) -> float:
        """Return the kart's steering angle (rad) from the front wheels' measured angles."""
        kappas = [math.tan(a) / (self.wheelbase + w.y * math.tan(a))
                  for w, a in zip(self.front, front_angles)]
        return math.atan(self.wheelbase * sum(kappas) / len(kappas))


def geometry_of(wheels: Sequence[Wheel]) -> Geometry:
    """Return the geometry of a kart's wheels; ValueError when they are not a kart's.

    A kart here has two or more steerable front wheels ahead of two or more fixed rear
    wheels, and at least one motor.
    """
    front = tuple(sorted((w for w in wheels if w.steerable and w.max_steering_angle > 0.0),
                         key=lambda w: -w.y))
    rear = tuple(sorted((w for w in wheels if not (w.steerable and w.max_steering_angle > 0.0)),
                        key=lambda w: -w.y))
    if len(front) < 2 or len(rear) < 2:
        raise ValueError(f'a kart needs two steerable and two fixed wheels, got '
                         f'{len(front)} steerable and {len(rear)} fixed')
    front_x = sum(w.x for w in front) / len(front)
    rear_x = sum(w.x for w in rear) / len(rear)
    if front_x - rear_x <= 0.1:
        raise ValueError(f'the steerable wheels are not ahead of the fixed ones '
                         f'(front axle x {front_x:.3f} m, rear {rear_x:.3f} m)')
    if not any(w.max_drive_torque > 0.0 for w in wheels):
        raise ValueError('no wheel has a motor')
    return Geometry(front, rear, front_x - rear_x, rear_x)
