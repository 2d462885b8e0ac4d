"""Rendezvous guidance without ROS: a relative-navigation fix in, a SIX_DOF setpoint out.

The chaser knows the target only from its own sensor: the target's position and velocity
relative to the chaser, in the chaser's ``base_link`` (the relative-navigation sensor of
the simulator), and itself from its own estimate (``attitude_estimator``'s odometry: the
attitude ``base_link`` -> the estimate's frame, and the dead-reckoned velocity in that
frame). ``setpoint(...)`` turns them into what ``setpoint_controller``'s SIX_DOF takes
(position relative to where the vessel is when the setpoint is accepted, plus a velocity
that moves the target point on, both in the estimate's frame):

- the aim point is ``standoff_m`` short of the target along the line of sight (no closer,
  so the approach never aims at the target's hull);
- it moves with the target: its velocity is the chaser's own plus the relative velocity;
- the attitude is held where it was when the approach began.

The controller re-anchors its SIX_DOF origin at every new setpoint, so a stream of fresh
fixes steers the approach; its ``velocity_limit_m_s`` bounds the closing speed, and its
braking law stops at the aim point. Rotations come from ``pylon_protocol.rotations``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math

import numpy as np
from pylon_protocol import rotations

Vector = tuple[float, float, float]


@dataclass(frozen=True)
class Fix:
    """One relative-navigation fix of the target, in the chaser's base_link."""

    position: Vector        # m, target centre of mass - chaser's
    velocity: Vector        # m/s, target's inertial velocity - chaser's
    stamp: float            # s, the fix's stamp


@dataclass(frozen=True)
class SixDof:
    """A SIX_DOF setpoint in the estimate's frame."""

    position: Vector
    orientation: tuple[float, float, float, float]
    linear_velocity: Vector


def aim(fix: Fix, standoff_m: float) -> np.ndarray:
    """Return the aim point relative to the chaser, base_link: short of the target."""
    p = np.asarray(fix.position, dtype=float)
    distance = float(np.linalg.norm(p))
    if distance <= standoff_m or distance == 0.0:
        return np.zeros(3)          # within the standoff already: hold here, move with it
    return p * (1.0 - standoff_m / distance)


def setpoint(fix: Fix, orientation: Sequence[float], velocity: Sequence[float],
             hold: Sequence[float], standoff_m: float) -> SixDof:
    """Return the SIX_DOF setpoint that approaches the target of ``fix``.

    ``orientation``: the chaser's attitude (base_link -> estimate frame, x y z w);
    ``velocity``: its estimated velocity in the estimate's frame; ``hold``: the attitude to
    keep.
    """
    to_frame = rotations.to_matrix(orientation)
    position = to_frame @ aim(fix, standoff_m)
    moving = np.asarray(velocity, dtype=float) + to_frame @ np.asarray(fix.velocity, float)
    return SixDof(tuple(float(v) for v in position), tuple(float(v) for v in hold),
                  tuple(float(v) for v in moving))


def nearest(targets: Sequence[tuple[str, bool, Vector, Vector]],
            wanted: str = '') -> tuple[Vector, Vector] | None:
    """Return (position, velocity) of the wanted vessel id, else of the nearest non-debris.

    ``targets``: (vessel id, is debris, position, velocity) of one fix; None when none fits.
    """
    chosen = [t for t in targets if (t[0] == wanted if wanted else not t[1])]
    if not chosen:
        return None
    best = min(chosen, key=lambda t: math.hypot(*t[2]))
    return best[2], best[3]
