"""A vessel on its wheels: a rigid body under gravity, the applied wrench and the wheels.

``step(state, wheel_state, inputs, commands, params, ground, body, dt)`` is pure. Instead of
being fixed to the planet (``physics``' landed path), a vessel with wheel modules near the
ground is integrated in the body-centred inertial frame under central gravity, the applied
force and torque, and the force of every wheel (``wheels.step``), in sub-steps of
at most ``MAX_SUBSTEP``, semi-implicit (symplectic) Euler: velocity and rate from the
forces at the start of the sub-step, then position and attitude from the new velocity
and rate. The ground is body-fixed: each sub-step sees the vessel in the body-fixed frame
of its instant (``bodies.body_fixed_rotation``), so the planet's spin is exact and no
fictitious force is needed.

The vessel is ``landed`` while any wheel is grounded; ``rest_altitude`` is kept for a
later touchdown of the flying path. A vessel whose centre of mass goes into the ground
(tipped over: no wheel holds it, and the other parts do not collide) is put down as a
vessel without wheels (``physics.touch_down``: at its resting height, turning with the
planet). The specific force is the mean over the sub-steps of
(applied + wheel forces) / mass in ``base_link``, what an accelerometer at the centre of
mass reads.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
import math

import numpy as np
from pylon_protocol import rotations

from pylon_sim.game import physics, wheels
from pylon_sim.game.bodies import Body, body_fixed_rotation
from pylon_sim.game.physics import RigidState

MAX_SUBSTEP = 0.004
"""s: the longest sub-step (a 0.02 s physics step is 5; physics warp takes more). The
stiffest mode (tyre and wheel spin) has about 50 rad/s, so ω h ≤ 0.2."""
REACH = 5.0
"""m: a wheeled vessel whose centre of mass is within this of its resting altitude is
integrated here even while no wheel touches (a hop), so it comes down on its wheels."""


@dataclass(frozen=True)
class Result:
    """One physics step of a vessel on wheels."""

    state: RigidState
    wheels: wheels.State
    specific_force: np.ndarray      # m/s², base_link, mean over the step


def near_ground(state: RigidState, body: Body) -> bool:
    """Tell whether a wheeled vessel belongs on this path (landed, or within ``REACH``)."""
    return state.landed or physics.altitude(body, state.position) <= state.rest_altitude + REACH


def kinematics(state: RigidState, body: Body, ut: float) -> wheels.Kinematics:
    """Return the vessel's motion relative to the ground in the body-fixed frame at ``ut``."""
    return _kinematics(state.position, state.velocity, rotations.to_matrix(state.attitude),
                       state.body_rate, body, ut)


def _kinematics(position: np.ndarray, velocity: np.ndarray, attitude: np.ndarray,
                body_rate: np.ndarray, body: Body, ut: float) -> wheels.Kinematics:
    """Return ``kinematics`` of an inertial pose and motion (``attitude``: base_link -> KCI)."""
    to_fixed = body_fixed_rotation(body, ut)
    spin = body.spin_vector()
    relative_rate = body_rate - attitude.T @ spin
    rotation = to_fixed @ attitude
    return wheels.Kinematics(
        position=to_fixed @ position,
        velocity=to_fixed @ (velocity - wheels.cross(spin, position)),
        rotation=rotation, rate=rotation @ relative_rate)


def step(state: RigidState, wheel_state: wheels.State, inputs: physics.Inputs,
         commands: wheels.Commands, params: wheels.Params, ground: wheels.Ground,
         body: Body, dt: float) -> Result:
    """Advance the vessel and its wheels by ``dt`` (one physics step, in sub-steps)."""
    substeps = max(1, math.ceil(dt / MAX_SUBSTEP - 1e-9))
    h = dt / substeps
    inertia = inputs.inertia
    inertia_inv = np.linalg.inv(inertia)
    force_body, torque_body = inputs.force_body(), inputs.torque_body()
    position, velocity = state.position, state.velocity
    attitude, rate = state.attitude, state.body_rate
    felt = np.zeros(3)
    for i in range(substeps):
        rot = rotations.to_matrix(attitude)
        motion = _kinematics(position, velocity, rot, rate, body, state.ut + i * h)
        if i == 0:
            planes = wheels.TangentPlanes.under(ground, wheels.probe_points(params, motion))
        wheel_state = wheels.step(wheel_state, wheels.Inputs(params, commands, motion, planes),
                                  h)
        to_body = motion.rotation.T
        wheel_force = to_body @ wheel_state.force.sum(axis=0)
        wheel_torque = to_body @ wheels.cross(wheel_state.arm, wheel_state.force).sum(axis=0)
        contact = force_body + wheel_force
        felt += contact / inputs.mass
        velocity = velocity + h * (physics.gravity(body, position) + rot @ contact / inputs.mass)
        position = position + h * velocity
        torque = torque_body + wheel_torque
        rate = rate + h * (inertia_inv @ (torque - wheels.cross(rate, inertia @ rate)))
        attitude = rotations.normalize(rotations.multiply(attitude,
                                                          rotations.from_rotvec(rate * h)))
    new = replace(state, ut=state.ut + dt, position=position, velocity=velocity,
                  attitude=attitude, body_rate=rate, landed=bool(np.any(wheel_state.grounded)))
    centre = body_fixed_rotation(body, new.ut) @ position
    if ground.ground(centre[None, :])[0][0] < 0.0:
        # its centre of mass went into the ground (on its side or back, no wheel holds it):
        # it rests there as a vessel without wheels does
        return Result(physics.touch_down(new, body), wheel_state, felt / substeps)
    return Result(new, wheel_state, felt / substeps)
