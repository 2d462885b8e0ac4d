"""Demo attitude estimator: a multiplicative EKF on attitude plus specific-force dead reckoning.

Pure numpy code, no rclpy: the ROS node (written separately) converts messages into the plain
types used here and calls :class:`AttitudeEstimator`.

Frames and conventions
----------------------
* Quaternions are ``[x, y, z, w]`` (ROS order), unit norm, Hamilton product.
* The attitude ``q`` rotates ``base_link`` vectors into ``kerbol_inertial``:
  ``v_inertial = R(q) v_body``, the same meaning as ``StarTrackerState.orientation``.
* Gyro input: ``sensor_msgs/Imu.angular_velocity`` of ``/ksp_vessel/imu/data_raw``, the body
  rate relative to the inertial frame, in ``base_link`` axes, rad/s (REP-145 ``data_raw``).
* Accelerometer input: ``linear_acceleration``, specific force (inertial acceleration minus
  gravity) in ``base_link`` axes, m/s^2.  About 0 in free fall.
* Times are float seconds of the message stamps (the node converts ``builtin_interfaces/Time``).

Filter (MEKF)
-------------
Truth and estimate are related by a small body-axis rotation ``q_true = q ⊗ δq(δθ)`` (the same
axes as the star tracker covariance, ``σ² I`` about ``base_link``).  The error state is
``x = [δθ (3), δb (3)]`` with ``b`` the gyro bias (``ω_true = ω_gyro - b``).

Propagation over ``dt`` with ``ω = ω_gyro - b`` and ``φ = ω dt``::

    q   <- q ⊗ exp(φ)                   exact for a constant rate (no integration drift)
    Φ    = [[R(φ)^T, -I dt], [0, I]]
    Q    = [[σ_g² dt + σ_b² dt³/3, -σ_b² dt²/2 I], [-σ_b² dt²/2 I, σ_b² dt I]]
    P   <- Φ P Φ^T + Q

``exp(φ)`` is the rotation-vector exponential ``[sin(|φ|/2) φ/|φ|, cos(|φ|/2)]``.

Update with a tracker quaternion ``q_m`` and covariance ``R_m`` (rad², body axes)::

    r   = log(q^-1 ⊗ q_m)               body-axis residual, rad (w >= 0 branch)
    H   = [I 0],  S = H P H^T + R_m,  K = P H^T S^-1
    d²  = r^T S^-1 r                    (Mahalanobis; gate)
    δx  = K r;  q <- q ⊗ exp(δθ);  b <- b + δb
    P   <- (I - K H) P (I - K H)^T + K R_m K^T       (Joseph form)
    P   <- G P G^T,  G = blockdiag(I - [δθ/2 ×], I)  (attitude reset)

The KSP IMU adds no noise and no bias (spec), so bias estimation is off by default
(``estimate_gyro_bias``); with it off the bias block of ``P`` stays zero and ``b`` stays 0.
The gyro noise density only models the discretisation of a rate sampled at <= 30 Hz.

Time handling in :class:`AttitudeEstimator`
-------------------------------------------
* The filter time is the newest stamp the attitude has been propagated to.
* IMU sample at ``t``: older than or equal to the previous IMU stamp -> dropped
  (``out_of_order``).  Otherwise the attitude is propagated from the filter time to ``t`` with
  the mean of the held and the new rate (exact for a constant rate); if the filter time is
  already past ``t`` (a tracker sample moved it there) only the held rate is replaced.
* Tracker sample at ``t_s``: used only when ``valid`` is true, ``orientation_covariance[0]``
  is not negative, ``reason`` is ``tracking`` (or empty) and the quaternion has unit norm
  (an invalid all-zero quaternion is never normalised).  It must be newer than the last
  tracker sample used (``out_of_order`` otherwise) and not older than ``tracker_max_age_sec``
  relative to the filter time (``stale`` otherwise).

  - ``t_s`` newer than the filter time: the filter is propagated to ``t_s`` on the held gyro
    rate, then updated.  If the gap exceeds ``max_extrapolation_sec`` (gyro missing) the
    attitude is re-initialised from the sample instead of extrapolated.
  - ``t_s`` at or before the filter time: the sample is carried forward to the filter time
    by the gyro-only body rotation between ``t_s`` and now (kept in a short history,
    interpolated within an IMU interval), ``q_m(now) = q_m ⊗ D(t_s)^-1 ⊗ D(now)``, and the
    transport's process noise ``σ_g² (now - t_s)`` is added to ``R_m``.
* Gating: ``d² > innovation_gate_chi2`` rejects a sample (``gated``); after
  ``max_consecutive_rejections`` rejected samples in a row the attitude is re-initialised from
  the next valid sample.
* Outages: without tracker samples the attitude is propagated on the gyro alone and the
  covariance grows by ``σ_g² t``.
* Before the first accepted tracker sample the attitude is unknown: ``initialized`` is false,
  the output quaternion is ``None`` and dead reckoning is not integrated.
* :meth:`AttitudeEstimator.reset` clears everything (the node calls it when the vessel
  lifecycle generation changes).

Dead reckoning (translation)
----------------------------
The vessel is in free fall in orbit, so relative to a free-falling reference point that
coincided with the vessel (same position and velocity) at the reference time ``t_0``, the
relative acceleration is the specific force plus the gravity difference
``g(r) - g(r_ref) ≈ ∇g Δr``, which is second order for short times (Hill / Clohessy-Wiltshire
terms, ~n² Δr, ignored here).  So::

    Δv_I(t) = ∫_{t0}^{t} R(q(τ)) f_B(τ) dτ,   Δp_I(t) = ∫_{t0}^{t} Δv_I dτ

integrated per IMU interval with the rotated specific force linear in time (trapezoid for
``Δv``, exact cubic term for ``Δp``), in ``kerbol_inertial`` axes.  These are *relative*
position/velocity since :meth:`AttitudeEstimator.rezero_translation` (or since
initialisation), not an orbit estimate.  On the ground (specific force ≈ +g upwards) they are
meaningless, as the gravity term is not removed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
import math
from typing import Any

import numpy as np
from pylon_common.parameters import resolve
from pylon_protocol import rotations

from pylon_vehicle_control.estimator_params import FILTER_PARAMETERS

ARCSEC = math.pi / (180.0 * 3600.0)
"""One arc second in radians."""


def filter_parameters(values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Return the filter's parameters: ``FILTER_PARAMETERS`` defaults under ``values``.

    Names that are not the filter's (the node's own parameters) are ignored. Raise
    ValueError for a wrong type, a value out of range, or a history shorter than the
    oldest tracker sample it must carry forward.
    """
    names = {row.name for row in FILTER_PARAMETERS}
    merged = resolve(FILTER_PARAMETERS, {k: v for k, v in (values or {}).items()
                                         if k in names})
    if merged['history_sec'] < merged['tracker_max_age_sec']:
        raise ValueError('history_sec must be >= tracker_max_age_sec')
    return merged


# --------------------------------------------------------------------------------------------
# MEKF core (pure functions on an immutable state).
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NoiseModel:
    """Gyro noise: angle random walk (rad/s/√Hz) and bias random walk (rad/s²/√Hz)."""

    gyro_noise_density: float = 2.0e-5
    bias_random_walk: float = 0.0


@dataclass(frozen=True)
class MekfState:
    """Attitude ``q`` (base_link -> kerbol_inertial, xyzw), gyro bias (rad/s), 6x6 covariance.

    The covariance is of ``[δθ (rad, body axes), δb (rad/s)]``.
    """

    q: np.ndarray
    bias: np.ndarray
    P: np.ndarray

    @property
    def attitude_covariance(self) -> np.ndarray:
        """Return the 3x3 attitude error covariance (rad², body axes)."""
        return self.P[:3, :3].copy()


def initial_state(q_measured: Sequence[float], attitude_cov: np.ndarray,
                  bias_sigma: float = 0.0) -> MekfState:
    """Start the filter at a measured attitude with its 3x3 covariance (rad²)."""
    cov = np.zeros((6, 6))
    cov[:3, :3] = np.asarray(attitude_cov, dtype=float)
    cov[3:, 3:] = np.eye(3) * bias_sigma ** 2
    return MekfState(q=rotations.canonical(q_measured), bias=np.zeros(3), P=cov)


def propagate(state: MekfState, gyro_rad_s: Sequence[float], dt: float,
              noise: NoiseModel = NoiseModel()) -> MekfState:
    """Propagate over ``dt`` seconds with the inertial body rate ``gyro_rad_s`` (base_link, rad/s).

    The quaternion is integrated exactly for a constant rate (rotation-vector exponential).
    """
    if dt < 0.0:
        raise ValueError('dt must not be negative')
    omega = np.asarray(gyro_rad_s, dtype=float) - state.bias
    phi = omega * dt
    q = rotations.canonical(rotations.multiply(state.q, rotations.from_rotvec(phi)))
    transition = np.eye(6)
    transition[:3, :3] = rotations.to_matrix(rotations.from_rotvec(phi)).T
    transition[:3, 3:] = -np.eye(3) * dt
    sg2 = noise.gyro_noise_density ** 2
    sb2 = noise.bias_random_walk ** 2
    process = np.zeros((6, 6))
    process[:3, :3] = np.eye(3) * (sg2 * dt + sb2 * dt ** 3 / 3.0)
    process[:3, 3:] = process[3:, :3] = -np.eye(3) * (sb2 * dt ** 2 / 2.0)
    process[3:, 3:] = np.eye(3) * (sb2 * dt)
    cov = transition @ state.P @ transition.T + process
    return MekfState(q=q, bias=state.bias.copy(), P=0.5 * (cov + cov.T))


@dataclass(frozen=True)
class UpdateResult:
    """Result of :func:`update`: the new state, the residual (rad) and its squared Mahalanobis."""

    state: MekfState
    residual: np.ndarray
    mahalanobis2: float


def measurement_covariance(sigma_rad: float | np.ndarray) -> np.ndarray:
    """Return the 3x3 measurement covariance for a scalar sigma (rad) or a 3x3 matrix (rad²)."""
    arr = np.asarray(sigma_rad, dtype=float)
    if arr.ndim == 0:
        return np.eye(3) * float(arr) ** 2
    return arr.reshape(3, 3)


def update(state: MekfState, q_measured: Sequence[float],
           sigma_rad: float | np.ndarray) -> UpdateResult:
    """Fuse one attitude measurement (base_link -> kerbol_inertial).

    ``sigma_rad`` is the per-axis 1-sigma (rad) or a 3x3 covariance (rad², body axes).
    """
    r_cov = measurement_covariance(sigma_rad)
    r = rotations.to_rotvec(rotations.multiply(rotations.conjugate(state.q),
                                               rotations.canonical(q_measured)))
    h = np.zeros((3, 6))
    h[:, :3] = np.eye(3)
    s_inv = np.linalg.inv(h @ state.P @ h.T + r_cov)
    d2 = float(r @ s_inv @ r)
    gain = state.P @ h.T @ s_inv
    dx = gain @ r
    ikh = np.eye(6) - gain @ h
    cov = ikh @ state.P @ ikh.T + gain @ r_cov @ gain.T
    reset = np.eye(6)
    reset[:3, :3] = np.eye(3) - rotations.skew(0.5 * dx[:3])
    cov = reset @ cov @ reset.T
    q = rotations.canonical(rotations.multiply(state.q, rotations.from_rotvec(dx[:3])))
    new = MekfState(q=q, bias=state.bias + dx[3:], P=0.5 * (cov + cov.T))
    return UpdateResult(state=new, residual=r, mahalanobis2=d2)


# --------------------------------------------------------------------------------------------
# Time-stamped wrapper.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrackerResult:
    """What happened to one tracker sample.

    ``status`` is one of ``initialized``, ``accepted``, ``reinitialized``, ``invalid``,
    ``out_of_order``, ``stale`` or ``gated``.
    """

    status: str
    residual_rad: np.ndarray | None = None
    mahalanobis2: float | None = None

    @property
    def used(self) -> bool:
        """Return whether the sample changed the attitude."""
        return self.status in ('initialized', 'accepted', 'reinitialized')


@dataclass(frozen=True)
class EstimatorOutput:
    """Snapshot of the estimate at ``stamp`` (s).

    ``quaternion`` (xyzw, base_link -> kerbol_inertial) and ``attitude_covariance`` (3x3 rad²,
    body axes) are ``None`` until initialised.  ``angular_velocity`` is the latest gyro sample
    minus the bias estimate (rad/s, base_link).  ``position``/``velocity`` are the dead-reckoned
    relative position (m) / velocity (m/s) in kerbol_inertial axes since ``reference_stamp``
    (``None`` while not available).
    """

    stamp: float | None
    initialized: bool
    quaternion: np.ndarray | None
    angular_velocity: np.ndarray
    attitude_covariance: np.ndarray | None
    gyro_bias: np.ndarray
    position: np.ndarray | None
    velocity: np.ndarray | None
    reference_stamp: float | None
    last_tracker_stamp: float | None
    counters: dict[str, int] = field(default_factory=dict)


class AttitudeEstimator:
    """Time-stamped MEKF + dead reckoning; see the module docstring for the rules."""

    def __init__(self, parameters: Mapping[str, Any] | None = None) -> None:
        self.params = filter_parameters(parameters)
        self.noise = NoiseModel(
            gyro_noise_density=self.params['gyro_noise_density'],
            bias_random_walk=(self.params['gyro_bias_random_walk']
                              if self.params['estimate_gyro_bias'] else 0.0))
        self.reset()

    # ---- state ------------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget everything: attitude, time, history, dead reckoning and counters."""
        self._state: MekfState | None = None
        self._time: float | None = None
        self._last_imu_stamp: float | None = None
        self._gyro: np.ndarray | None = None
        self._force: np.ndarray | None = None
        self._last_tracker_stamp: float | None = None
        self._rejections = 0
        # Gyro-only body rotation since reset, D(t): entries (t, D).
        self._delta = np.array([0.0, 0.0, 0.0, 1.0])
        self._history: deque[tuple[float, np.ndarray]] = deque()
        self._dr_reference: float | None = None
        self._dr_position: np.ndarray | None = None
        self._dr_velocity: np.ndarray | None = None
        self._dr_accel: np.ndarray | None = None  # rotated specific force at the last IMU stamp
        self.counters = dict.fromkeys((
            'imu', 'imu_out_of_order', 'initialized', 'accepted', 'reinitialized', 'invalid',
            'out_of_order', 'stale', 'gated'), 0)

    @property
    def initialized(self) -> bool:
        """Return whether the attitude is known (a valid tracker sample has been used)."""
        return self._state is not None

    @property
    def time(self) -> float | None:
        """Return the filter time (s), or ``None`` before any sample."""
        return self._time

    @property
    def state(self) -> MekfState | None:
        """Return the MEKF state, or ``None`` before initialisation."""
        return self._state

    # ---- internals --------------------------------------------------------------------------

    def _rate(self) -> np.ndarray:
        return np.zeros(3) if self._gyro is None else self._gyro

    def _advance(self, t: float, rate: np.ndarray) -> None:
        """Propagate attitude and the gyro-only rotation history from the filter time to t."""
        if self._time is None:
            self._time = t
            self._history.append((t, self._delta.copy()))
            return
        dt = t - self._time
        if dt <= 0.0:
            return
        bias = self._state.bias if self._state is not None else np.zeros(3)
        step = rotations.from_rotvec((rate - bias) * dt)
        self._delta = rotations.canonical(rotations.multiply(self._delta, step))
        if self._state is not None:
            self._state = propagate(self._state, rate, dt, self.noise)
        self._time = t
        self._history.append((t, self._delta.copy()))
        horizon = t - self.params['history_sec']
        while len(self._history) > 2 and self._history[1][0] <= horizon:
            self._history.popleft()

    def _delta_at(self, t: float) -> np.ndarray | None:
        """Return D(t) interpolated from the history, or ``None`` when t is not covered."""
        hist = self._history
        if not hist or t < hist[0][0] or t > hist[-1][0]:
            return None
        for (t0, d0), (t1, d1) in zip(list(hist)[:-1], list(hist)[1:]):
            if t0 <= t <= t1:
                frac = 0.0 if t1 <= t0 else (t - t0) / (t1 - t0)
                return rotations.slerp(d0, d1, frac)
        return hist[-1][1]

    def _initialize(self, q: np.ndarray, cov: np.ndarray) -> None:
        bias_sigma = (self.params['gyro_bias_initial_sigma']
                      if self.params['estimate_gyro_bias'] else 0.0)
        self._state = initial_state(q, cov, bias_sigma)
        self._rejections = 0
        if self._dr_reference is None:
            self.rezero_translation()

    # ---- inputs -----------------------------------------------------------------------------

    def add_imu(self, stamp: float, angular_velocity: Sequence[float],
                linear_acceleration: Sequence[float] | None = None) -> bool:
        """Add one IMU sample: inertial body rate (rad/s) and specific force (m/s²), base_link.

        Returns ``False`` when the sample is dropped as out of order.
        """
        stamp = float(stamp)
        gyro = np.asarray(angular_velocity, dtype=float).reshape(3)
        force = None if linear_acceleration is None else np.asarray(
            linear_acceleration, dtype=float).reshape(3)
        if self._last_imu_stamp is not None and stamp <= self._last_imu_stamp:
            self.counters['imu_out_of_order'] += 1
            return False
        previous_imu = self._last_imu_stamp
        rate = gyro if self._gyro is None else 0.5 * (self._gyro + gyro)
        self._advance(stamp, rate)
        self._gyro = gyro
        if force is not None:
            self._force = force
        self._last_imu_stamp = stamp
        self.counters['imu'] += 1
        self._integrate_translation(previous_imu, stamp, force)
        return True

    def _integrate_translation(self, t0: float | None, t1: float,
                               force: np.ndarray | None) -> None:
        if self._state is None or force is None or self._dr_position is None:
            self._dr_accel = None
            return
        accel = rotations.rotate(self._state.q, force)
        if self._dr_reference is None:
            self._dr_reference = t1
        elif self._dr_accel is not None and t0 is not None and t1 > t0:
            start = max(t0, self._dr_reference)
            dt = t1 - start
            if dt > 0.0:
                a0 = self._dr_accel
                self._dr_position = (self._dr_position + self._dr_velocity * dt
                                     + dt * dt * (2.0 * a0 + accel) / 6.0)
                self._dr_velocity = self._dr_velocity + 0.5 * dt * (a0 + accel)
        self._dr_accel = accel

    def tracker_covariance(self, covariance: Sequence[float] | None) -> np.ndarray:
        """Return the 3x3 measurement covariance (rad²) for a tracker sample."""
        if self.params['use_tracker_covariance'] and covariance is not None:
            cov = np.asarray(covariance, dtype=float).reshape(3, 3)
            diag = np.diag(cov)
            if np.all(np.isfinite(cov)) and np.all(diag > 0.0):
                cov = 0.5 * (cov + cov.T)
                try:
                    np.linalg.cholesky(cov)
                    return cov
                except np.linalg.LinAlgError:
                    pass
        return np.eye(3) * (self.params['tracker_sigma_arcsec'] * ARCSEC) ** 2

    @staticmethod
    def sample_is_valid(valid: bool, quaternion: Sequence[float],
                        covariance: Sequence[float] | None, reason: str = 'tracking') -> bool:
        """Return whether a StarTrackerState sample may be used as an attitude measurement."""
        if not valid or reason not in ('tracking', ''):
            return False
        if covariance is not None and len(covariance) > 0 and not covariance[0] >= 0.0:
            return False
        q = np.asarray(quaternion, dtype=float)
        if q.shape != (4,) or not np.all(np.isfinite(q)):
            return False
        return abs(float(np.linalg.norm(q)) - 1.0) < 1e-3

    def add_star_tracker(self, stamp: float, quaternion: Sequence[float],
                         covariance: Sequence[float] | None = None, valid: bool = True,
                         reason: str = 'tracking') -> TrackerResult:
        """Add one StarTrackerState sample (quaternion xyzw base_link -> kerbol_inertial)."""
        stamp = float(stamp)
        result = self._add_star_tracker(stamp, quaternion, covariance, valid, reason)
        self.counters[result.status] += 1
        if result.used:
            self._last_tracker_stamp = stamp
        return result

    def _add_star_tracker(self, stamp, quaternion, covariance, valid, reason) -> TrackerResult:
        if not self.sample_is_valid(valid, quaternion, covariance, reason):
            return TrackerResult('invalid')
        if self._last_tracker_stamp is not None and stamp <= self._last_tracker_stamp:
            return TrackerResult('out_of_order')
        if self._time is not None and self._time - stamp > self.params['tracker_max_age_sec']:
            return TrackerResult('stale')
        r_cov = self.tracker_covariance(covariance)
        q_m = rotations.canonical(quaternion)
        if self._time is None or stamp >= self._time:
            if (self._time is not None
                    and stamp - self._time > self.params['max_extrapolation_sec']):
                # The gyro is missing: do not extrapolate, restart the attitude at the sample.
                self._time = None
                self._history.clear()
                self._advance(stamp, self._rate())
                was = self._state is not None
                self._state = None
                self._initialize(q_m, r_cov)
                return TrackerResult('reinitialized' if was else 'initialized')
            self._advance(stamp, self._rate())
        else:
            d_then = self._delta_at(stamp)
            if d_then is None:
                return TrackerResult('stale')
            transport = rotations.multiply(rotations.conjugate(d_then), self._delta)
            q_m = rotations.canonical(rotations.multiply(q_m, transport))
            r_cov = r_cov + np.eye(3) * self.noise.gyro_noise_density ** 2 * (self._time - stamp)
        if self._state is None:
            self._initialize(q_m, r_cov)
            return TrackerResult('initialized')
        if self._rejections >= self.params['max_consecutive_rejections']:
            self._initialize(q_m, r_cov)
            return TrackerResult('reinitialized')
        result = update(self._state, q_m, r_cov)
        if result.mahalanobis2 > self.params['innovation_gate_chi2']:
            self._rejections += 1
            return TrackerResult('gated', result.residual, result.mahalanobis2)
        self._rejections = 0
        self._state = result.state
        return TrackerResult('accepted', result.residual, result.mahalanobis2)

    # ---- dead reckoning ---------------------------------------------------------------------

    def rezero_translation(self) -> None:
        """Restart the relative position/velocity at zero at the current filter time."""
        self._dr_reference = self._time
        self._dr_position = np.zeros(3)
        self._dr_velocity = np.zeros(3)
        self._dr_accel = None
        if self._state is not None and self._force is not None:
            # Zero-order hold of the last specific force up to the next IMU sample.
            self._dr_accel = rotations.rotate(self._state.q, self._force)

    # ---- output -----------------------------------------------------------------------------

    def output(self) -> EstimatorOutput:
        """Return the current estimate (see :class:`EstimatorOutput`)."""
        st = self._state
        bias = st.bias.copy() if st is not None else np.zeros(3)
        rate = self._rate() - bias
        valid_dr = st is not None and self._dr_position is not None
        return EstimatorOutput(
            stamp=self._time,
            initialized=st is not None,
            quaternion=None if st is None else st.q.copy(),
            angular_velocity=rate,
            attitude_covariance=None if st is None else st.attitude_covariance,
            gyro_bias=bias,
            position=self._dr_position.copy() if valid_dr else None,
            velocity=self._dr_velocity.copy() if valid_dr else None,
            reference_stamp=self._dr_reference if valid_dr else None,
            last_tracker_stamp=self._last_tracker_stamp,
            counters=dict(self.counters),
        )
