"""Two-body orbits: state vectors from elements, and exact propagation for on-rails vessels."""

from __future__ import annotations

import math

import numpy as np

from pylon_sim.game.bodies import Body


def state_from_elements(body: Body, semi_major_axis: float, eccentricity: float,
                        inclination_deg: float, lan_deg: float, arg_periapsis_deg: float,
                        true_anomaly_deg: float) -> tuple[np.ndarray, np.ndarray]:
    """Return inertial position (m) and velocity (m/s) of classical orbital elements."""
    a, e = semi_major_axis, eccentricity
    i, raan = math.radians(inclination_deg), math.radians(lan_deg)
    argp, nu = math.radians(arg_periapsis_deg), math.radians(true_anomaly_deg)
    p = a * (1.0 - e * e)
    r = p / (1.0 + e * math.cos(nu))
    pos_pf = np.array([r * math.cos(nu), r * math.sin(nu), 0.0])
    vel_pf = math.sqrt(body.gm / p) * np.array([-math.sin(nu), e + math.cos(nu), 0.0])
    cr, sr = math.cos(raan), math.sin(raan)
    ci, si = math.cos(i), math.sin(i)
    cw, sw = math.cos(argp), math.sin(argp)
    rot = np.array([
        [cr * cw - sr * sw * ci, -cr * sw - sr * cw * ci, sr * si],
        [sr * cw + cr * sw * ci, -sr * sw + cr * cw * ci, -cr * si],
        [sw * si, cw * si, ci],
    ])
    return rot @ pos_pf, rot @ vel_pf


def _stumpff(z: float) -> tuple[float, float]:
    if z > 1e-6:
        s = math.sqrt(z)
        return (1.0 - math.cos(s)) / z, (s - math.sin(s)) / (s ** 3)
    if z < -1e-6:
        s = math.sqrt(-z)
        return (math.cosh(s) - 1.0) / (-z), (math.sinh(s) - s) / (s ** 3)
    return 0.5 - z / 24.0, 1.0 / 6.0 - z / 120.0


def propagate(body: Body, position: np.ndarray, velocity: np.ndarray,
              dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Return position and velocity ``dt`` seconds later on the two-body orbit (exact)."""
    mu = body.gm
    r0 = float(np.linalg.norm(position))
    v0 = float(np.linalg.norm(velocity))
    vr0 = float(position @ velocity) / r0
    alpha = 2.0 / r0 - v0 * v0 / mu
    sqrt_mu = math.sqrt(mu)
    chi = sqrt_mu * abs(alpha) * dt if alpha > 1e-12 else sqrt_mu * dt / r0
    for _ in range(60):
        z = alpha * chi * chi
        c, s = _stumpff(z)
        f = (r0 * vr0 / sqrt_mu * chi * chi * c + (1 - alpha * r0) * chi ** 3 * s
             + r0 * chi - sqrt_mu * dt)
        df = (r0 * vr0 / sqrt_mu * chi * (1 - alpha * chi * chi * s)
              + (1 - alpha * r0) * chi * chi * c + r0)
        delta = f / df
        chi -= delta
        if abs(delta) < 1e-9:
            break
    z = alpha * chi * chi
    c, s = _stumpff(z)
    f = 1 - chi * chi / r0 * c
    g = dt - chi ** 3 / sqrt_mu * s
    new_pos = f * position + g * velocity
    r = float(np.linalg.norm(new_pos))
    fdot = sqrt_mu / (r * r0) * (alpha * chi ** 3 * s - chi)
    gdot = 1 - chi * chi / r * c
    return new_pos, fdot * position + gdot * velocity
