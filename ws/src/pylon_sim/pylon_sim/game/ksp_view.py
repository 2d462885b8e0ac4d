"""What KSP itself would report about a vessel, in Unity's left-handed world.

The PyLoN mod reads KSP values (Unity vectors in KSP's world frame) and converts them to
ROS axes. To exercise the same conversions, the simulator first turns its truth into
those KSP values:

- KSP's world frame turns with the planet while the vessel is below the body's
  ``rotating_frame_altitude`` and is inertial above it;
- ``vessel.angularVelocity`` is relative to that world frame, in the vessel
  ReferenceTransform's local Unity axes, so it lacks the planet's spin while rotating;
- the ReferenceTransform's ``up``/``right``/``forward`` are base_link +X, -Y and -Z;
- ``perturbation`` is the specific force as a Unity world vector.

Unity world vector ``u`` and right-handed vector ``w`` relate as ``w = (u.z, -u.x, u.y)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pylon_protocol import rotations

from pylon_sim.game.bodies import Body, body_fixed_rotation
from pylon_sim.game.physics import altitude
from pylon_sim.game.wheels import cross
from pylon_sim.game.world import SimVessel


def to_unity(w: np.ndarray) -> tuple[float, float, float]:
    """Return the Unity representation of a right-handed polar vector."""
    return (-float(w[1]), float(w[2]), float(w[0]))


def to_unity_axial(w: np.ndarray) -> tuple[float, float, float]:
    """Return the Unity representation of a right-handed axial vector (handedness flip)."""
    return (float(w[1]), -float(w[2]), -float(w[0]))


@dataclass(frozen=True)
class KspView:
    """KSP's values for one vessel at one instant (Unity vectors in KSP's world frame)."""

    rotating: bool                                  # KSP integrates in the rotating frame
    world_from_inertial: np.ndarray                 # 3x3, inertial -> KSP world (right-handed)
    up: tuple[float, float, float]                  # ReferenceTransform.up
    right: tuple[float, float, float]               # ReferenceTransform.right
    forward: tuple[float, float, float]             # ReferenceTransform.forward
    angular_velocity_local: tuple[float, float, float]  # vessel.angularVelocity
    perturbation: tuple[float, float, float]        # specific force, world
    srf_velocity: tuple[float, float, float]        # surface-relative velocity, world
    obt_velocity: tuple[float, float, float]        # orbital velocity, world
    planet_angular_velocity: tuple[float, float, float]  # body spin, world (axial)

    def world_unity(self, inertial: np.ndarray) -> tuple[float, float, float]:
        """Return an inertial polar vector as a Unity world vector."""
        return to_unity(self.world_from_inertial @ inertial)


def observe(vessel: SimVessel, ut: float) -> KspView:
    """Return KSP's view of ``vessel`` at ``ut``."""
    body: Body = vessel.body
    state = vessel.state
    rotating = altitude(body, state.position) < body.rotating_frame_altitude
    world = body_fixed_rotation(body, ut) if rotating else np.eye(3)
    body_to_inertial = rotations.to_matrix(state.attitude)
    axes = world @ body_to_inertial                 # columns: base_link axes in world
    spin = body.spin_vector()
    rate = state.body_rate - (body_to_inertial.T @ spin if rotating else 0.0)
    # vessel.angularVelocity: base_link (x, y, z) = (-v.y, v.x, v.z)
    local = (float(rate[1]), -float(rate[0]), float(rate[2]))
    srf = state.velocity - cross(spin, state.position)
    return KspView(
        rotating=rotating, world_from_inertial=world,
        up=to_unity(axes[:, 0]), right=to_unity(-axes[:, 1]), forward=to_unity(-axes[:, 2]),
        angular_velocity_local=local,
        perturbation=to_unity(axes @ vessel.specific_force),
        srf_velocity=to_unity(world @ srf), obt_velocity=to_unity(world @ state.velocity),
        planet_angular_velocity=to_unity_axial(world @ spin))
