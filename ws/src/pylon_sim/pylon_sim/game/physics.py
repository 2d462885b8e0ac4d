"""Rigid-body physics of one vessel around its central body: ``step(state, inputs, dt, body)``.

The state is the truth in the body-centred inertial frame (see ``bodies``): centre-of-mass
position and velocity, attitude ``base_link -> inertial`` and the inertial angular rate in
``base_link`` axes. ``step`` is pure: it returns a new state and the specific force (what an
accelerometer at the centre of mass reads), never mutating its arguments.

- In flight: central gravity plus the applied force; Euler's equations with the applied
  torque; fourth-order Runge-Kutta for translation and rotation rates, the attitude
  advanced by the exact rotation of the mid-step rate.
- Landed: the vessel rests on the ground and turns with the planet; the ground supplies
  whatever force keeps it there. It lifts off when the other forces would pull it away
  from the surface (the needed contact force points into the ground).
- Touchdown: a flying vessel whose centre of mass comes down to its ``rest_altitude``
  lands and takes the planet's motion at that point.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
import math

import numpy as np
from pylon_protocol import rotations

from pylon_sim.game.bodies import Body, body_fixed_rotation


@dataclass(frozen=True)
class RigidState:
    """The truth of one vessel at one UT."""

    ut: float                  # s
    position: np.ndarray       # m, centre of mass, inertial
    velocity: np.ndarray       # m/s, inertial
    attitude: np.ndarray       # quaternion x y z w, base_link -> inertial
    body_rate: np.ndarray      # rad/s, inertial rate in base_link axes
    landed: bool = False
    rest_altitude: float = 0.0  # m, centre-of-mass altitude when standing on the ground


@dataclass(frozen=True)
class Inputs:
    """What acts on the vessel during one step, besides gravity."""

    mass: float                        # kg
    inertia: np.ndarray                # kg m^2, base_link axes
    force: np.ndarray = None           # N, base_link
    torque: np.ndarray = None          # N m, base_link

    def force_body(self) -> np.ndarray:
        """Return the applied force (zero when not given)."""
        return np.zeros(3) if self.force is None else self.force

    def torque_body(self) -> np.ndarray:
        """Return the applied torque (zero when not given)."""
        return np.zeros(3) if self.torque is None else self.torque


def gravity(body: Body, position: np.ndarray) -> np.ndarray:
    """Return the gravitational acceleration at ``position`` (inertial), m/s^2."""
    r2 = float(position @ position)
    return -body.gm * position / (r2 * math.sqrt(r2))


def altitude(body: Body, position: np.ndarray) -> float:
    """Return the altitude above the body's sphere, m."""
    return float(np.linalg.norm(position)) - body.radius


def _euler_rate_derivative(rate: np.ndarray, inertia: np.ndarray, inertia_inv: np.ndarray,
                           torque: np.ndarray) -> np.ndarray:
    return inertia_inv @ (torque - np.cross(rate, inertia @ rate))


def step(state: RigidState, inputs: Inputs, dt: float, body: Body) -> tuple[RigidState,
                                                                          np.ndarray]:
    """Advance ``state`` by ``dt`` seconds; return the new state and the specific force.

    The specific force is in ``base_link`` axes, m/s^2 (applied plus contact force over
    mass), at the end of the step.
    """
    if state.landed:
        return _step_landed(state, inputs, dt, body)
    rot = rotations.to_matrix(state.attitude)
    force_inertial = rot @ inputs.force_body()
    accel_applied = force_inertial / inputs.mass

    # translation: RK4 with gravity plus the (step-constant) applied acceleration
    r0, v0 = state.position, state.velocity
    k1v = gravity(body, r0) + accel_applied
    k1r = v0
    k2v = gravity(body, r0 + 0.5 * dt * k1r) + accel_applied
    k2r = v0 + 0.5 * dt * k1v
    k3v = gravity(body, r0 + 0.5 * dt * k2r) + accel_applied
    k3r = v0 + 0.5 * dt * k2v
    k4v = gravity(body, r0 + dt * k3r) + accel_applied
    k4r = v0 + dt * k3v
    position = r0 + dt / 6.0 * (k1r + 2 * k2r + 2 * k3r + k4r)
    velocity = v0 + dt / 6.0 * (k1v + 2 * k2v + 2 * k3v + k4v)

    # rotation: RK4 on Euler's equations, attitude by the exact mid-step rotation
    w0 = state.body_rate
    torque = inputs.torque_body()
    inertia = inputs.inertia
    if np.any(torque) or not _is_principal_spin(w0, inertia):
        inertia_inv = np.linalg.inv(inertia)
        a1 = _euler_rate_derivative(w0, inertia, inertia_inv, torque)
        a2 = _euler_rate_derivative(w0 + 0.5 * dt * a1, inertia, inertia_inv, torque)
        a3 = _euler_rate_derivative(w0 + 0.5 * dt * a2, inertia, inertia_inv, torque)
        a4 = _euler_rate_derivative(w0 + dt * a3, inertia, inertia_inv, torque)
        rate = w0 + dt / 6.0 * (a1 + 2 * a2 + 2 * a3 + a4)
    else:
        rate = w0
    mid_rate = 0.5 * (w0 + rate)
    attitude = rotations.normalize(rotations.multiply(state.attitude,
                                                      rotations.from_rotvec(mid_rate * dt)))

    new = replace(state, ut=state.ut + dt, position=position, velocity=velocity,
                  attitude=attitude, body_rate=rate)
    specific_force = inputs.force_body() / inputs.mass
    descending = float(velocity @ position) - float(np.cross(body.spin_vector(), position)
                                                    @ position) < 0.0
    if (state.rest_altitude > 0 and descending
            and altitude(body, position) <= state.rest_altitude):
        return touch_down(new, body), specific_force
    return new, specific_force


def _is_principal_spin(rate: np.ndarray, inertia: np.ndarray) -> bool:
    """Tell whether torque-free motion keeps ``rate`` constant (no gyroscopic term)."""
    if not np.any(rate):
        return True
    return bool(np.allclose(np.cross(rate, inertia @ rate), 0.0, atol=1e-12))


def touch_down(state: RigidState, body: Body) -> RigidState:
    """Put the vessel on the ground at its current place, turning with the planet."""
    spin = body.spin_vector()
    up = state.position / np.linalg.norm(state.position)
    position = up * (body.radius + state.rest_altitude)
    rot = rotations.to_matrix(state.attitude)
    return replace(state, position=position, velocity=np.cross(spin, position),
                   body_rate=rot.T @ spin, landed=True)


def _step_landed(state: RigidState, inputs: Inputs, dt: float,
                 body: Body) -> tuple[RigidState, np.ndarray]:
    spin = body.spin_vector()
    # the vessel is fixed in the body-fixed frame: rotate position and attitude with it
    turn = body_fixed_rotation(body, state.ut + dt).T @ body_fixed_rotation(body, state.ut)
    position = turn @ state.position
    attitude = rotations.normalize(rotations.multiply(rotations.from_matrix(turn),
                                                      state.attitude))
    rot = rotations.to_matrix(attitude)
    needed = np.cross(spin, np.cross(spin, position))          # centripetal acceleration
    applied = rot @ inputs.force_body() / inputs.mass
    contact = needed - gravity(body, position) - applied
    up = position / np.linalg.norm(position)
    if float(contact @ up) < 0.0:
        # the ground would have to pull: lift off with the planet's motion as start
        flying = replace(state, ut=state.ut + dt, position=position,
                         velocity=np.cross(spin, position), attitude=attitude,
                         body_rate=rot.T @ spin, landed=False)
        return flying, rot.T @ applied
    new = replace(state, ut=state.ut + dt, position=position,
                  velocity=np.cross(spin, position), attitude=attitude,
                  body_rate=rot.T @ spin)
    return new, rot.T @ (applied + contact)
