"""Docking ports as pure functions: capture geometry and KSP's ModuleDockingNode states.

A port's contact point is its part's origin and its forward axis the part's +X (the
stack axis), both carried into the inertial frame by the vessel's pose. Two ports of the
same ``node_type`` on different vessels face each other when ``fwd_dot`` = −(axis_a ·
axis_b) is near 1. The states and limits are KSP's ModuleDockingNode defaults:

- ``Ready`` → ``Acquire`` within ``ACQUIRE_RANGE`` (0.5 m) and ``fwd_dot`` ≥
  ``ACQUIRE_MIN_FWD_DOT`` (0.7, about 45°); back to ``Ready`` when that no longer holds;
- ``Acquire`` → docked within ``CAPTURE_RANGE`` (0.06 m), ``fwd_dot`` ≥
  ``CAPTURE_MIN_FWD_DOT`` (0.998, about 3.6°) and a relative speed of the contact points
  below ``CAPTURE_MAX_RVEL`` (0.3 m/s): ``Docked (docker)`` on the active vessel's port,
  ``Docked (dockee)`` on the other;
- undocking pushes the two apart with ``UNDOCK_EJECTION_FORCE`` (10 kN for the frame's
  integrated step, ``topology.push_impulse``) and leaves both ports in ``Disengage``
  until they are more than ``MIN_DISTANCE_TO_REENGAGE`` (1 m) apart, then ``Ready``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pylon_protocol import rotations

from pylon_sim.game.physics import RigidState
from pylon_sim.game.vessel import MassProperties, Part

ACQUIRE_RANGE = 0.5            # m
ACQUIRE_MIN_FWD_DOT = 0.7
CAPTURE_RANGE = 0.06           # m
CAPTURE_MIN_FWD_DOT = 0.998
CAPTURE_MAX_RVEL = 0.3         # m/s
UNDOCK_EJECTION_FORCE = 10.0   # kN
MIN_DISTANCE_TO_REENGAGE = 1.0  # m

READY, ACQUIRE, DISENGAGE = 'Ready', 'Acquire', 'Disengage'
DOCKER, DOCKEE = 'Docked (docker)', 'Docked (dockee)'
DOCKED_STATES = (DOCKER, DOCKEE)


@dataclass(frozen=True)
class PortPose:
    """A port's contact point, forward axis and contact-point velocity, inertial."""

    position: np.ndarray
    axis: np.ndarray
    velocity: np.ndarray


def port_pose(state: RigidState, mass: MassProperties, part: Part) -> PortPose:
    """Return where a vessel's port is and how its contact point moves."""
    rot = rotations.to_matrix(state.attitude)
    r = rot @ (np.asarray(part.position, dtype=float) - mass.com)
    axis = rot @ rotations.rotate(part.rotation, (1.0, 0.0, 0.0))
    velocity = state.velocity + np.cross(rot @ state.body_rate, r)
    return PortPose(state.position + r, axis, velocity)


@dataclass(frozen=True)
class Contact:
    """How two ports stand to each other."""

    distance: float          # m, between the contact points
    fwd_dot: float           # −(axis_a · axis_b): 1 when they face each other
    speed: float             # m/s, relative speed of the contact points


def contact(a: PortPose, b: PortPose) -> Contact:
    """Return the contact geometry of two ports."""
    return Contact(float(np.linalg.norm(a.position - b.position)), float(-(a.axis @ b.axis)),
                   float(np.linalg.norm(a.velocity - b.velocity)))


def next_state(state: str, seen: Contact | None) -> str:
    """Return a free port's next state given its nearest compatible partner (or None).

    A return of ``DOCKER`` means the pair captures: the caller merges the two vessels.
    """
    if state in DOCKED_STATES:
        return state
    if state == DISENGAGE:
        return READY if seen is None or seen.distance > MIN_DISTANCE_TO_REENGAGE else state
    if seen is None or seen.distance > ACQUIRE_RANGE or seen.fwd_dot < ACQUIRE_MIN_FWD_DOT:
        return READY
    if state == ACQUIRE and seen.distance <= CAPTURE_RANGE and \
            seen.fwd_dot >= CAPTURE_MIN_FWD_DOT and seen.speed < CAPTURE_MAX_RVEL:
        return DOCKER
    return ACQUIRE
