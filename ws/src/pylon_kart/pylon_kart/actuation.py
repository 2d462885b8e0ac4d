"""From the kart's steering and drive to each wheel, and from the wheels back (pure).

``wheel_orders`` turns one control step (``vehicle.Output``) into the four ``WheelCommand``
fields: the front wheels steered by Ackermann geometry (``geometry.Geometry.front_angles``),
motors off; the driven rear wheels servoed to the rim speed of their own path (the
electronic differential) with the drive's share of their torque; the brake on every wheel.

``measure`` is what the kart itself measures (never ground truth): the wheels' spin and
steering angles and the IMU's yaw rate.

- Longitudinal velocity (m/s, base_link x at the centre of mass): each wheel's rim speed
  ``s_i = ω_i r_i`` rolls along its heading ``δ_i``; without side slip its contact point moves
  at ``s_i (cos δ_i, sin δ_i)``, and a rigid body's points share ``v_x − ω_z y_i`` along x,
  so ``v_x = mean_i (s_i cos δ_i + ω_z y_i)`` (ω_z: the IMU's yaw rate).
- Lateral velocity: the rear axle does not slide sideways, so at the centre of mass
  ``v_y = −ω_z x_rear`` (x_rear < 0: the rear axle is behind it).
- Heading rate: the IMU's yaw rate.
- Steering angle: ``Geometry.steering_tire_angle`` of the front wheels' measured angles.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
import math

from pylon_kart.geometry import Geometry
from pylon_kart.longitudinal import Drive


@dataclass(frozen=True)
class WheelOrder:
    """The fields of one WheelCommand."""

    id: str
    enabled: bool                     # motor on
    target_angular_velocity: float    # rad/s
    steering_angle: float             # rad
    max_drive_torque: float           # N·m (only read with the motor on)
    brake: float                      # 0..1


@dataclass(frozen=True)
class Measurement:
    """What the kart measures of its own motion."""

    longitudinal_velocity: float      # m/s
    lateral_velocity: float           # m/s
    heading_rate: float               # rad/s
    steering_tire_angle: float        # rad


def wheel_orders(geometry: Geometry, steering: float, drive: Drive) -> list[WheelOrder]:
    """Return the command of every wheel for the kart's steering angle and drive."""
    orders = [WheelOrder(w.id, False, 0.0, w.steering_sign * angle, 0.0, drive.brake)
              for w, angle in zip(geometry.front, geometry.front_angles(steering))]
    for w, ratio in zip(geometry.rear, geometry.rear_speed_ratios(steering)):
        on = drive.motors_on and w.max_drive_torque > 0.0
        orders.append(WheelOrder(
            w.id, on, w.rolling_sign * drive.speed * ratio / w.radius if on else 0.0, 0.0,
            drive.torque_fraction * w.max_drive_torque if on else 0.0, drive.brake))
    return orders


def measure(geometry: Geometry, spin: Mapping[str, float], steering: Mapping[str, float],
            yaw_rate: float) -> Measurement:
    """Return the kart's motion from each wheel's spin and angle (by id) and the yaw rate."""
    wheels = [w for w in geometry.wheels if w.id in spin]
    if not wheels:
        return Measurement(0.0, 0.0, yaw_rate, 0.0)
    speeds = []
    for w in wheels:
        angle = w.steering_sign * steering.get(w.id, 0.0)
        rim = w.rolling_sign * spin[w.id] * w.radius
        speeds.append(rim * math.cos(angle) + yaw_rate * w.y)
    front = [w.steering_sign * steering.get(w.id, 0.0) for w in geometry.front]
    return Measurement(sum(speeds) / len(speeds), -yaw_rate * geometry.rear_axle_x, yaw_rate,
                       geometry.steering_tire_angle(front))


def applied_drive(geometry: Geometry, torques: Mapping[str, float], direction: float) -> float:
    """Return the driven wheels' torque along the gear's direction, a fraction 0..1 of their limit.

    ``torques``: each wheel's applied drive torque (N·m, ``WheelState.drive_torque``) by id;
    ``direction``: +1 DRIVE, -1 REVERSE, 0 without drive.
    """
    driven = [w for w in geometry.driven if w.id in torques]
    torque = sum(direction * w.rolling_sign * torques[w.id] for w in driven)
    limit = sum(w.max_drive_torque for w in driven) or 1.0
    return min(max(torque / limit, 0.0), 1.0)
