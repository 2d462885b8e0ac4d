"""Pure pursuit with the competition's reference controller's rules, for the kart (pure).

Given the kart's pose in ``map`` (base_link: x, y in m, yaw in rad, ENU) and its
longitudinal speed (m/s), and a closed trajectory (``trajectory.Trajectory``):

- the nearest trajectory point to base_link gives the target speed ``v_ref``;
- ``lookahead = max(min_lookahead, lookahead_gain * v)`` (m);
- the lookahead point is the first point from the nearest one on, in the driving
  direction and around the loop, at least ``lookahead`` from the rear axle (``rear_offset``
  metres behind base_link);
- ``alpha`` is the angle from the kart's heading to that point, seen from the rear axle;
  ``steering = steering_gain * atan(2 L sin(alpha) / lookahead)`` (rad, +left), clamped to
  ``max_steering`` (the kart's interface refuses anything beyond its limit);
- ``acceleration = speed_gain * (v_ref - v)`` (m/s²), clamped to ``±max_acceleration``.

The competition's simulation setting uses ``steering_gain`` 1.5; our default is 1.0 (the
README's "Reference stack" says why).
"""

from __future__ import annotations

from dataclasses import dataclass
import math

import numpy as np

from pylon_kart.kart_limits import KART
from pylon_kart.trajectory import Trajectory


@dataclass(frozen=True)
class PursuitParams:
    """The controller's gains and limits (m, s, rad, m/s²)."""

    wheelbase: float = KART.wheelbase
    rear_offset: float = KART.rear_axle                # m, base_link to the rear axle
    min_lookahead: float = 3.5                          # m
    lookahead_gain: float = 0.5                         # s (lookahead per m/s)
    steering_gain: float = 1.0
    max_steering: float = KART.max_steering_tire_angle  # rad
    speed_gain: float = 1.0                             # 1/s
    max_acceleration: float = 3.0                       # m/s²


@dataclass(frozen=True)
class KartState:
    """The kart's pose in ``map`` (base_link; m, rad ENU) and longitudinal speed (m/s)."""

    x: float
    y: float
    yaw: float
    speed: float


@dataclass(frozen=True)
class Command:
    """What the controller asks: steering_tire_angle (rad, +left), acceleration (m/s²).

    ``nearest`` and ``target`` are trajectory indices (the speed's and the lookahead
    point's); ``target_speed`` m/s; ``lookahead`` m; ``clamped``: the steering was cut.
    """

    steering: float
    acceleration: float
    target_speed: float
    lookahead: float
    nearest: int
    target: int
    clamped: bool


def nearest_index(xy: np.ndarray, x: float, y: float) -> int:
    """Return the index of the trajectory point (rows of ``xy``, m) nearest to (x, y)."""
    return int(np.argmin((xy[:, 0] - x) ** 2 + (xy[:, 1] - y) ** 2))


def lookahead_index(xy: np.ndarray, start: int, x: float, y: float, distance: float) -> int:
    """Return the first point from ``start`` on (wrapping) at least ``distance`` m from (x, y).

    The farthest point when none is that far (a trajectory smaller than the lookahead).
    """
    order = (start + np.arange(len(xy))) % len(xy)
    d = np.hypot(xy[order, 0] - x, xy[order, 1] - y)
    far = np.flatnonzero(d >= distance)
    return int(order[far[0]] if len(far) else order[int(np.argmax(d))])


def control(traj: Trajectory, state: KartState, params: PursuitParams = PursuitParams(),
            xy: np.ndarray | None = None) -> Command:
    """Return the command for ``state`` on ``traj`` (``xy``: ``traj.xy``, precomputed)."""
    xy = traj.xy if xy is None else xy
    nearest = nearest_index(xy, state.x, state.y)
    target_speed = float(traj.speed[nearest])
    accel = params.speed_gain * (target_speed - state.speed)
    accel = min(max(accel, -params.max_acceleration), params.max_acceleration)
    lookahead = max(params.min_lookahead, params.lookahead_gain * state.speed)
    rx = state.x - params.rear_offset * math.cos(state.yaw)
    ry = state.y - params.rear_offset * math.sin(state.yaw)
    target = lookahead_index(xy, nearest, rx, ry, lookahead)
    alpha = math.atan2(xy[target, 1] - ry, xy[target, 0] - rx) - state.yaw
    steering = params.steering_gain * math.atan2(
        2.0 * params.wheelbase * math.sin(alpha), lookahead)
    clamped = abs(steering) > params.max_steering
    steering = min(max(steering, -params.max_steering), params.max_steering)
    return Command(steering, accel, target_speed, lookahead, nearest, target, clamped)
