"""Pure helpers for an evaluator comparing the inertial estimate with the ENU ground truth.

No rclpy: an evaluator node converts messages into arrays and calls these functions.

Frames
------
* The estimate (and the controller's setpoints) are quaternions ``base_link -> kerbol_inertial``
  (``q_I_B``), xyzw.
* Ground truth (``/ksp_vessel/ground_truth/pose``, ``twist``) is in the planet-fixed ENU frame
  ``pylon_ground_truth_enu`` (``q_E_B``: ``base_link -> ENU``), which rotates with the planet.
  ``/ksp_vessel/ground_truth/frame_angular_velocity`` is ``ω_f``: the angular velocity of the
  ENU axes relative to the inertial frame, expressed in ENU axes (rad/s).
* ``q_I_E`` (``ENU -> kerbol_inertial``) is not published (the tracker has no position, so no
  TF between the two exists).  It obeys ``dq_I_E/dt = ½ q_I_E ⊗ [ω_f, 0]``, i.e.
  ``q_I_E(t + dt) = q_I_E(t) ⊗ exp(ω_f dt)`` (exact for constant ``ω_f``).

Alignment
---------
``q_I_E`` is estimated once from the first synchronised pair(s) of estimate and ground truth,
``q_I_E(t0) = q_I_B_est(t0) ⊗ q_E_B_true(t0)^-1``, and afterwards only carried forward by
integrating ``ω_f`` (:class:`EnuInertialAlignment`).  Consequence: the estimator's error at the
alignment instant becomes a constant offset of every later comparison (the evaluation
measures the error *relative to* the alignment instant).  Averaging ``n`` pairs (each carried
back to ``t0``, :meth:`EnuInertialAlignment.from_pairs`) divides that offset's noise by about
``√n``; align after the estimator has converged.  A constant mounting/definition offset
between the estimate and the truth is absorbed by the alignment and therefore invisible.

Velocities
----------
A velocity measured in the rotating ENU frame is transported to the inertial frame with
``v_I = R(q_I_E) (v_E + ω_f × r_E)``, where ``r_E`` is the position measured from a point on
the rotation axis (the planet centre), in ENU axes: add the ENU origin's position relative to
the planet centre to the ground-truth position before calling :func:`transport_velocity`.
For dead-reckoned *relative* positions compare ``R(q_I_E(t)) r_E(t) - R(q_I_E(t0)) r_E(t0)``
(:func:`relative_inertial_position`); the ENU origin offset does not cancel there either, so
``r_E`` must again be planet-centred.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math
from pathlib import Path

import numpy as np
from pylon_protocol import rotations

from .estimator import ARCSEC

__all__ = [
    'ARCSEC', 'EnuInertialAlignment', 'attitude_error_angle', 'attitude_error_arcsec',
    'attitude_error_deg', 'average_quaternions', 'body_axis_error', 'alignment_from_pair',
    'propagate_alignment', 'transport_velocity', 'relative_inertial_position',
    'synchronise', 'rms_statistics', 'AttitudeEvaluation', 'evaluate_attitude',
    'plot_error_series',
]


# ---- attitude errors --------------------------------------------------------------------------


def attitude_error_angle(q_a: Sequence[float], q_b: Sequence[float]) -> float:
    """Return the rotation angle (rad, in [0, π]) between two attitudes (xyzw, same frames)."""
    return rotations.angle_between(q_b, q_a)


def attitude_error_deg(q_a: Sequence[float], q_b: Sequence[float]) -> float:
    """Return :func:`attitude_error_angle` in degrees."""
    return math.degrees(attitude_error_angle(q_a, q_b))


def attitude_error_arcsec(q_a: Sequence[float], q_b: Sequence[float]) -> float:
    """Return :func:`attitude_error_angle` in arc seconds."""
    return attitude_error_angle(q_a, q_b) / ARCSEC


def body_axis_error(q_est: Sequence[float], q_ref: Sequence[float]) -> np.ndarray:
    """Return the rotation vector (rad) taking ``q_ref`` to ``q_est``, in the body axes.

    ``q_est = q_ref ⊗ exp(e)``: for small errors the components are the per-axis angle errors
    about base_link X, Y, Z (the same axes as the star tracker covariance).
    """
    return rotations.to_rotvec(rotations.multiply(rotations.conjugate(q_ref), q_est))


def average_quaternions(quats: Sequence[Sequence[float]],
                        weights: Sequence[float] | None = None) -> np.ndarray:
    """Return the (weighted) average attitude: principal eigenvector of Σ w q qᵀ (Markley)."""
    q = np.asarray(quats, dtype=float).reshape(-1, 4)
    w = np.ones(len(q)) if weights is None else np.asarray(weights, dtype=float)
    m = (q * w[:, None]).T @ q
    _, vectors = np.linalg.eigh(m)
    return rotations.canonical(vectors[:, -1])


# ---- ENU <-> inertial alignment ---------------------------------------------------------------


def alignment_from_pair(q_inertial_body: Sequence[float],
                        q_enu_body: Sequence[float]) -> np.ndarray:
    """Return ``q_I_E = q_I_B ⊗ q_E_B^-1`` (ENU -> kerbol_inertial) from one synchronised pair."""
    return rotations.canonical(rotations.multiply(q_inertial_body,
                                                  rotations.conjugate(q_enu_body)))


def propagate_alignment(q_inertial_enu: Sequence[float], omega_frame_enu: Sequence[float],
                        dt: float) -> np.ndarray:
    """Carry ``q_I_E`` over ``dt`` s with the ENU frame rate ``ω_f`` (rad/s, ENU axes)."""
    step = rotations.from_rotvec(np.asarray(omega_frame_enu, dtype=float) * dt)
    return rotations.canonical(rotations.multiply(q_inertial_enu, step))


class EnuInertialAlignment:
    """``q_I_E(t)``: fixed at an alignment instant, then carried forward by the frame rate."""

    def __init__(self, q_inertial_enu: Sequence[float], stamp: float,
                 omega_frame_enu: Sequence[float] | None = None) -> None:
        self.q = rotations.canonical(q_inertial_enu)
        self.stamp = float(stamp)
        self.omega = (np.zeros(3) if omega_frame_enu is None
                      else np.asarray(omega_frame_enu, dtype=float).copy())
        self.alignment_stamp = self.stamp

    @classmethod
    def from_pairs(cls, stamps: Sequence[float], q_inertial_body: Sequence[Sequence[float]],
                   q_enu_body: Sequence[Sequence[float]],
                   omega_frame_enu: Sequence[float]) -> EnuInertialAlignment:
        """Average the alignment of several synchronised pairs, each carried to ``stamps[0]``.

        ``omega_frame_enu`` is taken as constant over the pairs (the planet's rotation).
        """
        stamps = np.asarray(stamps, dtype=float)
        omega = np.asarray(omega_frame_enu, dtype=float)
        carried = [propagate_alignment(alignment_from_pair(qi, qe), omega, stamps[0] - t)
                   for t, qi, qe in zip(stamps, q_inertial_body, q_enu_body)]
        return cls(average_quaternions(carried), stamps[0], omega)

    def advance(self, stamp: float, omega_frame_enu: Sequence[float] | None = None) -> None:
        """Carry the alignment to ``stamp`` (forward or back) on the mean of the old/new rate."""
        new = self.omega if omega_frame_enu is None else np.asarray(omega_frame_enu, float)
        self.q = propagate_alignment(self.q, 0.5 * (self.omega + new), float(stamp) - self.stamp)
        self.omega = new.copy()
        self.stamp = float(stamp)

    def at(self, stamp: float) -> np.ndarray:
        """Return ``q_I_E`` at ``stamp`` on the current rate, without changing the object."""
        return propagate_alignment(self.q, self.omega, float(stamp) - self.stamp)

    def attitude_to_inertial(self, q_enu_body: Sequence[float],
                             stamp: float | None = None) -> np.ndarray:
        """Return the true attitude ``q_I_B = q_I_E ⊗ q_E_B`` (at ``stamp``, default now)."""
        q_ie = self.q if stamp is None else self.at(stamp)
        return rotations.canonical(rotations.multiply(q_ie, q_enu_body))

    def vector_to_inertial(self, v_enu: Sequence[float], stamp: float | None = None) -> np.ndarray:
        """Rotate a vector from ENU axes into kerbol_inertial axes (no transport term)."""
        q_ie = self.q if stamp is None else self.at(stamp)
        return rotations.rotate(q_ie, v_enu)


def transport_velocity(v_enu: Sequence[float], r_enu: Sequence[float],
                       omega_frame_enu: Sequence[float],
                       q_inertial_enu: Sequence[float] | None = None) -> np.ndarray:
    """Return the inertial velocity ``v_E + ω_f × r_E`` (m/s).

    ``r_enu`` is measured from a point on the rotation axis (planet centre), ENU axes.  The
    result is in ENU axes, or in kerbol_inertial axes when ``q_inertial_enu`` is given.
    """
    v = np.asarray(v_enu, float) + np.cross(np.asarray(omega_frame_enu, float),
                                             np.asarray(r_enu, float))
    return v if q_inertial_enu is None else rotations.rotate(q_inertial_enu, v)


def relative_inertial_position(r_enu: Sequence[float], q_inertial_enu: Sequence[float],
                               r_enu_ref: Sequence[float],
                               q_inertial_enu_ref: Sequence[float]) -> np.ndarray:
    """Return the inertial-axes displacement since a reference (planet-centred ``r`` in m)."""
    return (rotations.rotate(q_inertial_enu, r_enu)
            - rotations.rotate(q_inertial_enu_ref, r_enu_ref))


# ---- time series ------------------------------------------------------------------------------


def synchronise(times_a: Sequence[float], times_b: Sequence[float],
                tolerance: float) -> list[tuple[int, int]]:
    """Pair each ``a`` sample with the nearest ``b`` sample within ``tolerance`` s.

    Returns ``(i_a, i_b)`` index pairs in ``a`` order; ``times_b`` must be sorted.
    """
    tb = np.asarray(times_b, dtype=float)
    pairs = []
    if tb.size == 0:
        return pairs
    for i, t in enumerate(np.asarray(times_a, dtype=float)):
        j = int(np.searchsorted(tb, t))
        best = min((k for k in (j - 1, j) if 0 <= k < tb.size), key=lambda k: abs(tb[k] - t))
        if abs(tb[best] - t) <= tolerance:
            pairs.append((i, best))
    return pairs


def rms_statistics(values: Sequence, times: Sequence[float] | None = None,
                   t_min: float | None = None) -> dict:
    """Summarise an error series (N,) or (N, k): count, rms/mean/max_abs per column, rms_norm.

    With ``times`` and ``t_min`` only samples at ``t >= t_min`` count (skip convergence).
    """
    v = np.asarray(values, dtype=float)
    if v.ndim == 1:
        v = v[:, None]
    if times is not None and t_min is not None:
        v = v[np.asarray(times, dtype=float) >= t_min]
    if len(v) == 0:
        nan = np.full(v.shape[1], np.nan)
        return {'count': 0, 'rms': nan, 'mean': nan, 'max_abs': nan, 'rms_norm': math.nan}
    return {
        'count': int(len(v)),
        'rms': np.sqrt(np.mean(v ** 2, axis=0)),
        'mean': np.mean(v, axis=0),
        'max_abs': np.max(np.abs(v), axis=0),
        'rms_norm': float(np.sqrt(np.mean(np.sum(v ** 2, axis=1)))),
    }


@dataclass(frozen=True)
class AttitudeEvaluation:
    """Errors at synchronised instants.

    ``times`` (s, truth stamps), ``angle_arcsec`` (N,), ``body_error_arcsec`` (N, 3: estimate
    vs truth about base_link axes) and the alignment used (``None`` when nothing matched).
    """

    times: np.ndarray
    angle_arcsec: np.ndarray
    body_error_arcsec: np.ndarray
    alignment: EnuInertialAlignment | None


def _rate_at(frame_times: np.ndarray, frame_omega: np.ndarray, t: float) -> np.ndarray:
    """Return the last frame rate sample at or before ``t`` (the first one before the series)."""
    j = int(np.searchsorted(frame_times, t, side='right')) - 1
    return frame_omega[min(max(j, 0), len(frame_omega) - 1)]


def evaluate_attitude(est_times: Sequence[float], est_q: Sequence[Sequence[float]],
                      truth_times: Sequence[float], truth_q_enu: Sequence[Sequence[float]],
                      frame_times: Sequence[float], frame_omega_enu: Sequence[Sequence[float]],
                      tolerance: float = 0.02, n_align: int = 1,
                      reference: tuple | None = None) -> AttitudeEvaluation:
    """Compare an inertial attitude series with the ENU ground truth.

    ``est_q`` is the estimator output; the alignment between the inertial and the ENU
    frame is estimated from the first ``n_align`` synchronised estimate/truth pairs and
    then carried forward by the frame rate sampled at ``frame_times``. Without
    ``reference`` the errors are estimate vs truth; with ``reference = (times, q)`` (e.g.
    the setpoints, inertial) they are the reference in force at each pair (the last one at
    or before it; pairs before the first are skipped) vs the truth: the control error.
    Series must be sorted by time.
    """
    est_t = np.asarray(est_times, dtype=float)
    tr_t = np.asarray(truth_times, dtype=float)
    fr_t = np.asarray(frame_times, dtype=float)
    fr_w = np.asarray(frame_omega_enu, dtype=float).reshape(-1, 3)
    pairs = synchronise(est_t, tr_t, tolerance)
    if not pairs or fr_w.size == 0:
        empty = np.zeros(0)
        return AttitudeEvaluation(empty, empty, np.zeros((0, 3)), None)
    head = pairs[:max(1, n_align)]
    t0 = tr_t[head[0][1]]
    alignment = EnuInertialAlignment.from_pairs(
        [tr_t[j] for _, j in head], [est_q[i] for i, _ in head],
        [truth_q_enu[j] for _, j in head], _rate_at(fr_t, fr_w, t0))
    ref_t = np.asarray(reference[0], dtype=float) if reference is not None else None
    times, angles, body = [], [], []
    for i, j in pairs:
        t = tr_t[j]
        alignment.advance(t, _rate_at(fr_t, fr_w, t))
        q_true = alignment.attitude_to_inertial(truth_q_enu[j])
        if ref_t is None:
            q_compare = est_q[i]
        else:
            k = int(np.searchsorted(ref_t, t, side='right')) - 1
            if k < 0:
                continue
            q_compare = reference[1][k]
        e = body_axis_error(q_compare, q_true)
        times.append(t)
        angles.append(np.linalg.norm(e) / ARCSEC)
        body.append(e / ARCSEC)
    return AttitudeEvaluation(np.array(times), np.array(angles), np.array(body), alignment)


# ---- plotting ---------------------------------------------------------------------------------


def plot_error_series(path: str | Path, times: Sequence[float], series: dict,
                      ylabel: str = 'error [arcsec]', title: str = '') -> Path:
    """Write a PNG of one or more error series over time; return its path.

    ``series`` maps label -> (N,) or (N, k) (columns labelled x, y, z, ...). Drawn by
    matplotlib's Agg backend on a figure of its own: no display, no pyplot state.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 4), layout='constrained')
    ax = fig.subplots()
    t = np.asarray(times, dtype=float)
    for label, values in series.items():
        v = np.asarray(values, dtype=float)
        if v.ndim == 1:
            ax.plot(t, v, label=label)
        else:
            for k in range(v.shape[1]):
                ax.plot(t, v[:, k], label=f'{label}[{"xyz"[k] if k < 3 else k}]')
    ax.set_xlabel('time [s]')
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(True)
    ax.legend()
    fig.savefig(str(path), format='png')
    return Path(path)
