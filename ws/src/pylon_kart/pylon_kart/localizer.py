"""The kart's localizer: an extended Kalman filter on GNSS, yaw rate and speed (pure, numpy).

State (``map`` frame, base_link): ``[x, y, yaw, v, b]``: position (m, ENU), heading (rad,
ENU yaw, wrapped to [-pi, pi)), longitudinal speed (m/s) and the gyro's yaw-rate bias
(rad/s). It never reads ground truth.

Model (``predict``), over ``dt`` with the gyro's yaw rate ``w`` held (zero-order)::

    x' = x + v cos(yaw) dt      y' = y + v sin(yaw) dt      yaw' = yaw + (w - b) dt
    v' = v                       b' = b

with white process noise (``Noise``; continuous densities, integrated over ``dt``): the
position wanders by ``position_walk`` m/sqrt(s) (slip, the antenna not on base_link), the
heading by ``gyro_noise`` rad/sqrt(s), the speed by ``acceleration_noise`` (m/s²)·sqrt(s)
(the kart accelerates at up to 4 m/s² between speed measurements), the bias by
``bias_walk`` rad/s/sqrt(s). A long step is integrated in sub-steps of ``MAX_SUBSTEP_SEC``.

Measurements:

- **GNSS** (``update_position``): the fix in ``map`` (``Track.map_from_geodetic``), with the
  fix's horizontal covariance (``NavSatFix.position_covariance``'s east/north block; its
  own ``gnss_sigma`` when the fix has none). A fix with a non-finite number or a status < 0
  is refused; one whose squared Mahalanobis distance exceeds ``gnss_gate`` (chi² with 2
  degrees of freedom; 13.8 is 99.9 %) is rejected as an outlier. After
  ``REINIT_AFTER_REJECTS`` outliers in a row the filter believes the fixes over itself:
  the position is reset to the fix (the heading's variance widened), counted. A fix taken
  ``age`` s before it reaches the filter (its stamp, when the caller's clock is the one the
  stamps are on) is first carried forward over that age along the believed motion
  (``carried_forward``; back, for a negative age), and refused as ``gnss_stale`` beyond
  ``MAX_INPUT_AGE_SEC`` either way: a fix
  delivered late would otherwise pull the estimate back by the distance driven meanwhile
  (at 10 m/s, 1 m for every 0.1 s of delay). A gyro reading taken ``age`` s before it
  reaches the filter corrects the heading the filter integrated meanwhile at the previous
  rate (``late_rate_correction``).
- **Speed** (``update_speed``): ``VelocityReport.longitudinal_velocity``, variance
  ``speed_sigma``².

``Localizer`` holds a ``Belief`` and the time (s, one clock), advances it to each input's
time and counts what it refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import math

import numpy as np

X, Y, YAW, V, B = range(5)
MAX_SUBSTEP_SEC = 0.02
MAX_GAP_SEC = 1.0
"""s: a longer silence is predicted over only this long (and counted)."""
REINIT_AFTER_REJECTS = 3
"""Outlier fixes in a row after which the filter is reset to the next one (0.3 s at 10 Hz):
a filter that has drifted (late or lost gyro readings on a loaded machine drifted one 3.6 m
in a second at 10 m/s) must not drive the kart on its own belief for long; one bad fix
between good ones is still refused."""
MAX_INPUT_AGE_SEC = 0.5
"""s: a fix measured longer ago (or later) is refused (``gnss_stale``), not carried; a late
gyro reading corrects the heading over this long at most."""


@dataclass(frozen=True)
class Noise:
    """Process and measurement noise (SI units; see the module docstring)."""

    position_walk: float = 0.05          # m/sqrt(s)
    gyro_noise: float = 0.02             # rad/sqrt(s)
    acceleration_noise: float = 2.0      # m/s / sqrt(s)
    bias_walk: float = 0.002             # rad/s/sqrt(s)
    speed_sigma: float = 0.1             # m/s, the velocity report's
    gnss_sigma: float = 0.5              # m, a fix without covariance
    gnss_gate: float = 13.8              # chi^2 (2 dof), squared Mahalanobis distance
    initial_position_sigma: float = 0.5  # m
    initial_yaw_sigma: float = math.radians(5.0)
    initial_speed_sigma: float = 0.2     # m/s
    initial_bias_sigma: float = 0.02     # rad/s


@dataclass(frozen=True)
class Belief:
    """Mean ``[x, y, yaw, v, b]`` (m, m, rad, m/s, rad/s) and its 5x5 covariance."""

    mean: np.ndarray
    cov: np.ndarray


def initial(x: float, y: float, yaw: float, noise: Noise = Noise(), speed: float = 0.0
            ) -> Belief:
    """Return the belief at a pose (m, rad; e.g. a grid slot), at ``speed`` m/s, bias 0."""
    sig = (noise.initial_position_sigma, noise.initial_position_sigma, noise.initial_yaw_sigma,
           noise.initial_speed_sigma, noise.initial_bias_sigma)
    return Belief(np.array([x, y, _wrap(yaw), speed, 0.0]), np.diag(np.square(sig)))


def _wrap(angle: float) -> float:
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def predict(belief: Belief, yaw_rate: float, dt: float, noise: Noise = Noise()) -> Belief:
    """Return the belief ``dt`` s later, the gyro reading ``yaw_rate`` rad/s meanwhile."""
    m = belief.mean
    c, s = math.cos(m[YAW]), math.sin(m[YAW])
    mean = m.copy()
    mean[X] += m[V] * c * dt
    mean[Y] += m[V] * s * dt
    mean[YAW] = _wrap(m[YAW] + (yaw_rate - m[B]) * dt)
    f = np.eye(5)                                       # the Jacobian of the model
    f[X, YAW], f[X, V] = -m[V] * s * dt, c * dt
    f[Y, YAW], f[Y, V] = m[V] * c * dt, s * dt
    f[YAW, B] = -dt
    q = np.array([noise.position_walk ** 2, noise.position_walk ** 2, noise.gyro_noise ** 2,
                  noise.acceleration_noise ** 2, noise.bias_walk ** 2]) * dt
    return Belief(mean, f @ belief.cov @ f.T + np.diag(q))


def _update(belief: Belief, h: np.ndarray, residual: np.ndarray, r: np.ndarray) -> Belief:
    """Return the Kalman update of a linear measurement ``h``'s residual (covariance r)."""
    p = belief.cov
    gain = p @ h.T @ np.linalg.inv(h @ p @ h.T + r)
    mean = belief.mean + gain @ residual
    mean[YAW] = _wrap(mean[YAW])
    keep = np.eye(5) - gain @ h
    cov = keep @ p @ keep.T + gain @ r @ gain.T         # Joseph form: stays symmetric
    return Belief(mean, 0.5 * (cov + cov.T))


POSITION_H = np.array([[1.0, 0, 0, 0, 0], [0, 1.0, 0, 0, 0]])
SPEED_H = np.array([[0, 0, 0, 1.0, 0]])


def carried_forward(belief: Belief, yaw_rate: float, xy, age: float) -> np.ndarray:
    """Return fix ``xy`` (m) measured ``age`` s ago, moved to now along the believed motion.

    The chord of an arc at the believed speed and turn rate (``yaw_rate`` less the bias):
    ``v·age`` along the heading at the middle of the interval. A negative ``age`` (a fix
    measured after the filter's time: the caller's clock behind the stamps) moves it back.
    """
    xy = np.asarray(xy, dtype=float)
    _, _, yaw, v, bias = belief.mean
    heading = yaw - 0.5 * (yaw_rate - bias) * age
    return xy + v * age * np.array([math.cos(heading), math.sin(heading)])


def late_rate_correction(belief: Belief, rate_change: float, age: float) -> Belief:
    """Return ``belief`` corrected for a gyro reading that came ``age`` s late.

    The filter turned at the previous rate over the last ``age`` s; the reading says the rate
    was ``rate_change`` rad/s more: the heading is ``rate_change·age`` more, and the position
    moved to the side of the heading by ``v·age·rate_change·age / 2`` (the heading's error
    grew linearly over the interval).
    """
    mean = belief.mean.copy()
    turn = rate_change * age
    side = 0.5 * mean[V] * age * turn
    mean[X] -= side * math.sin(mean[YAW])
    mean[Y] += side * math.cos(mean[YAW])
    mean[YAW] = _wrap(mean[YAW] + turn)
    return Belief(mean, belief.cov)


def position_residual(belief: Belief, xy, r: np.ndarray) -> float:
    """Return the squared Mahalanobis distance of a position fix (m, map; covariance r m²)."""
    residual = np.asarray(xy, dtype=float) - belief.mean[:2]
    return float(residual @ np.linalg.solve(belief.cov[:2, :2] + r, residual))


def update_position(belief: Belief, xy, r: np.ndarray) -> Belief:
    """Return the belief after a position fix (m, map) of covariance ``r`` (2x2, m²)."""
    residual = np.asarray(xy, dtype=float) - belief.mean[:2]
    return _update(belief, POSITION_H, residual, r)


def update_speed(belief: Belief, speed: float, sigma: float) -> Belief:
    """Return the belief after a longitudinal speed (m/s) of standard deviation ``sigma``."""
    residual = np.array([speed - belief.mean[V]])
    return _update(belief, SPEED_H, residual, np.array([[sigma ** 2]]))


def fix_covariance(position_covariance, noise: Noise = Noise()) -> np.ndarray:
    """Return the east/north 2x2 covariance (m²) of a NavSatFix's ``position_covariance``.

    The fix's own (row-major 3x3, ENU) when it is finite and positive definite; otherwise
    ``gnss_sigma``² on the diagonal.
    """
    c = np.asarray(position_covariance, dtype=float).reshape(3, 3)[:2, :2]
    if np.all(np.isfinite(c)) and c[0, 0] > 0 and np.linalg.det(c) > 0:
        return 0.5 * (c + c.T)
    return np.eye(2) * noise.gnss_sigma ** 2


@dataclass
class Localizer:
    """The filter with its clock (s) and counts; every ``on_*`` first advances to ``t``."""

    belief: Belief
    t: float | None = None
    noise: Noise = Noise()
    yaw_rate: float = 0.0                       # rad/s, the newest gyro reading
    rejected_in_a_row: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def advance(self, t: float) -> None:
        """Predict up to time ``t`` (s); a time before the last one only moves the clock."""
        if self.t is None or t <= self.t:
            if self.t is not None and t < self.t:
                self._count('time_backwards')
            self.t = t
            return
        dt = t - self.t
        if dt > MAX_GAP_SEC:
            self._count('gaps')
            dt = MAX_GAP_SEC
        steps = math.ceil(dt / MAX_SUBSTEP_SEC)
        for _ in range(steps):
            self.belief = predict(self.belief, self.yaw_rate, dt / steps, self.noise)
        self.t = t

    def on_yaw_rate(self, t: float, yaw_rate: float, age: float = 0.0) -> str:
        """Take a gyro yaw rate (rad/s, base_link z) at ``t``; return '' or why refused.

        ``age``: s between the reading and ``t`` (0: unknown, or none). The filter held the
        previous reading over that time; the heading (and the position, to first order) is
        corrected by the difference (``late_rate_correction``), over ``MAX_INPUT_AGE_SEC`` at
        most.
        """
        if not (math.isfinite(yaw_rate) and math.isfinite(age)):
            return self._refuse('imu_not_finite')
        self.advance(t)
        if age > 0.0:
            self.belief = late_rate_correction(self.belief, yaw_rate - self.yaw_rate,
                                               min(age, MAX_INPUT_AGE_SEC))
        self.yaw_rate = float(yaw_rate)
        return ''

    def on_speed(self, t: float, speed: float) -> str:
        """Take a longitudinal speed (m/s) at ``t``; return '' or why refused."""
        if not math.isfinite(speed):
            return self._refuse('speed_not_finite')
        self.advance(t)
        self.belief = update_speed(self.belief, speed, self.noise.speed_sigma)
        return ''

    def on_fix(self, t: float, xy, r: np.ndarray, status: int = 0, age: float = 0.0) -> str:
        """Take a GNSS fix (m, map; r 2x2 m²; NavSatStatus status) at ``t``; '' or why not.

        ``age``: s between the fix's measurement and ``t`` (0: unknown, or none).
        """
        if status < 0:
            return self._refuse('gnss_no_fix')
        if not (np.all(np.isfinite(xy)) and np.all(np.isfinite(r)) and math.isfinite(age)):
            return self._refuse('gnss_not_finite')
        if abs(age) > MAX_INPUT_AGE_SEC:
            return self._refuse('gnss_stale')
        self.advance(t)
        xy = carried_forward(self.belief, self.yaw_rate, xy, age)
        if position_residual(self.belief, xy, r) > self.noise.gnss_gate:
            self.rejected_in_a_row += 1
            if self.rejected_in_a_row < REINIT_AFTER_REJECTS:
                return self._refuse('gnss_outlier')
            self._reset_to(xy, r)
            return ''
        self.rejected_in_a_row = 0
        self.belief = update_position(self.belief, xy, r)
        return ''

    def _refuse(self, reason: str) -> str:
        self._count(reason)
        return reason

    def restart(self, t: float, belief: Belief) -> None:
        """Start again from ``belief`` at ``t`` (the initial pose set again)."""
        self.belief, self.t, self.rejected_in_a_row = belief, t, 0

    def _reset_to(self, xy, r: np.ndarray) -> None:
        """Believe the fix: position from it, heading uncertain, cross terms dropped."""
        self._count('reinitialized')
        self.rejected_in_a_row = 0
        mean = self.belief.mean.copy()
        mean[:2] = xy
        cov = np.diag(np.diag(self.belief.cov))
        cov[:2, :2] = r
        cov[YAW, YAW] = max(cov[YAW, YAW], math.pi ** 2)
        self.belief = Belief(mean, cov)


UNKNOWN_VARIANCE = 1e6
"""The variance given what the filter does not estimate (z, roll, pitch; lateral and
vertical speed, roll and pitch rates): a large number, as ROS marks an unknown."""


def odometry_covariances(belief: Belief, noise: Noise = Noise()) -> tuple[list, list]:
    """Return the row-major 6x6 pose and twist covariances of ``nav_msgs/Odometry``.

    Pose (map; x, y, z, roll, pitch, yaw): the filter's x, y, yaw block. Twist (base_link;
    vx, vy, vz, wx, wy, wz): vx from the speed's variance, wz from the bias's plus the
    gyro's noise over one second. Everything else ``UNKNOWN_VARIANCE``.
    """
    pose = np.diag([0.0, 0.0, UNKNOWN_VARIANCE, UNKNOWN_VARIANCE, UNKNOWN_VARIANCE, 0.0])
    index = [0, 1, 5]
    for i, a in zip(index, (X, Y, YAW)):
        for j, b in zip(index, (X, Y, YAW)):
            pose[i, j] = belief.cov[a, b]
    twist = np.diag([belief.cov[V, V], UNKNOWN_VARIANCE, UNKNOWN_VARIANCE, UNKNOWN_VARIANCE,
                     UNKNOWN_VARIANCE, belief.cov[B, B] + noise.gyro_noise ** 2])
    return [float(v) for v in pose.ravel()], [float(v) for v in twist.ravel()]
