"""The reference trajectory: the competition's CSV, and one built from a track (pure).

The competition's trajectory file is a CSV in the ``map`` frame with the header
``x,y,z,x_quat,y_quat,z_quat,w_quat,speed``: one row per point in the driving direction
(m, a unit quaternion whose yaw is the direction of travel, m/s). The circuit is closed:
the last point leads back to the first (the file does not repeat it).

``reference_from_track`` builds a racing-line-free reference: the track's centreline
sampled about every ``spacing`` metres from the start line, with a speed profile from the
kart's limits: ``v <= sqrt(lateral_acceleration / |curvature|)`` capped at ``max_speed``,
then a forward pass limiting the acceleration and a backward pass limiting the deceleration
(``v_next^2 <= v^2 + 2 a ds``), around the closed loop. ``kart_trajectory`` (``main``)
writes it for a track; the file for the ``kart`` track ships with this package
(``shipped_path('kart')``), and a test checks that it is what the tool writes.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from importlib import resources
import io
import math
from pathlib import Path
import sys

import numpy as np

from pylon_kart.kart_limits import G

HEADER = ('x', 'y', 'z', 'x_quat', 'y_quat', 'z_quat', 'w_quat', 'speed')
DECIMALS = 4
"""Digits after the point written for every value (0.1 mm, 0.1 mm/s)."""


class TrajectoryError(ValueError):
    """A trajectory file or array that cannot be used; the message says where and why."""


@dataclass(frozen=True)
class Trajectory:
    """Points of a closed trajectory in ``map``: x, y, z (m), yaw (rad, ENU), speed (m/s)."""

    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    yaw: np.ndarray
    speed: np.ndarray

    def __len__(self) -> int:
        return len(self.x)

    @property
    def xy(self) -> np.ndarray:
        """Return the points' (x, y) as an (N, 2) array (m, map)."""
        return np.stack([self.x, self.y], axis=-1)


@dataclass(frozen=True)
class ProfileLimits:
    """The speed profile's limits: a margin inside the kart's (``kart_limits.KART``)."""

    spacing: float = 1.0                        # m, the largest distance between points
    lateral_acceleration: float = 0.6 * G       # m/s²
    max_speed: float = 10.0                     # m/s
    acceleration: float = 2.5                   # m/s²
    deceleration: float = 4.0                   # m/s²


def speed_profile(curvature: np.ndarray, ds: float, limits: ProfileLimits) -> np.ndarray:
    """Return the speed (m/s) at points ``ds`` metres apart around a closed loop.

    Each point's speed is at most ``sqrt(lateral_acceleration / |curvature|)`` and
    ``max_speed``; between neighbours the speed rises by at most ``acceleration`` and falls
    by at most ``deceleration`` (m/s², over ``ds``). The passes start at the slowest point,
    which no pass can change, so one lap each way settles the closed loop.
    """
    k = np.abs(np.asarray(curvature, dtype=float))
    with np.errstate(divide='ignore'):
        v = np.minimum(np.sqrt(limits.lateral_acceleration / k), limits.max_speed)
    n, start = len(v), int(np.argmin(v))
    for step in range(1, n + 1):                        # forward: acceleration
        i, prev = (start + step) % n, (start + step - 1) % n
        v[i] = min(v[i], math.sqrt(v[prev] ** 2 + 2.0 * limits.acceleration * ds))
    for step in range(1, n + 1):                        # backward: deceleration
        i, nxt = (start - step) % n, (start - step + 1) % n
        v[i] = min(v[i], math.sqrt(v[nxt] ** 2 + 2.0 * limits.deceleration * ds))
    return v


def reference_from_track(track, limits: ProfileLimits = ProfileLimits()) -> Trajectory:
    """Return the centreline of a ``pylon_track.Track`` with its speed profile (map frame).

    Points start on the start line, ``length / round(length / spacing)`` metres apart; z is
    0 (the track's plane).
    """
    n = max(3, round(track.length / limits.spacing))
    ds = track.length / n
    s = ds * np.arange(n)
    xy = track.point_at(s)
    speed = speed_profile(track.curvature_at(s), ds, limits)
    return Trajectory(xy[:, 0], xy[:, 1], np.zeros(n), np.asarray(track.heading_at(s)), speed)


# -- the competition's CSV ------------------------------------------------------------------
def _number(value: float) -> str:
    text = f'{value:.{DECIMALS}f}'
    return text[1:] if text.startswith('-') and not text.strip('-0.') else text


def format_csv(traj: Trajectory) -> str:
    """Return the CSV text of a trajectory (``HEADER``, ``DECIMALS`` digits, yaw-only quat)."""
    out = io.StringIO()
    out.write(','.join(HEADER) + '\n')
    half = 0.5 * np.asarray(traj.yaw)
    rows = np.stack([traj.x, traj.y, traj.z, np.zeros(len(traj)), np.zeros(len(traj)),
                     np.sin(half), np.cos(half), traj.speed], axis=-1)
    for row in rows:
        out.write(','.join(_number(v) for v in row) + '\n')
    return out.getvalue()


def parse_csv(text: str, where: str = '(csv)') -> Trajectory:
    """Return the trajectory of CSV text; ``TrajectoryError`` naming ``where``, line and why.

    The header must be ``HEADER``; every value a finite number; speeds >= 0; quaternions
    of norm 1 (to 1e-3); at least 3 points.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or tuple(c.strip() for c in lines[0].split(',')) != HEADER:
        raise TrajectoryError(f'{where}: line 1: the header must be {",".join(HEADER)}')
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            values = [float(c) for c in line.split(',')]
        except ValueError:
            raise TrajectoryError(f'{where}: line {number}: not numbers: {line!r}') from None
        if len(values) != len(HEADER) or not all(math.isfinite(v) for v in values):
            raise TrajectoryError(f'{where}: line {number}: needs {len(HEADER)} finite '
                                  f'numbers: {line!r}')
        if values[7] < 0.0 or abs(math.hypot(*values[3:7]) - 1.0) > 1e-3:
            raise TrajectoryError(f'{where}: line {number}: a negative speed or a '
                                  f'quaternion of norm other than 1: {line!r}')
        rows.append(values)
    if len(rows) < 3:
        raise TrajectoryError(f'{where}: {len(rows)} points; at least 3 are needed')
    a = np.array(rows)
    qx, qy, qz, qw = a[:, 3], a[:, 4], a[:, 5], a[:, 6]
    yaw = np.arctan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz))
    return Trajectory(a[:, 0], a[:, 1], a[:, 2], yaw, a[:, 7])


def read_csv(path: str | Path) -> Trajectory:
    """Read a trajectory CSV file (``parse_csv``); ``TrajectoryError`` if unreadable."""
    try:
        text = Path(path).read_text(encoding='utf-8')
    except OSError as exc:
        raise TrajectoryError(f'{path}: cannot read: {exc}') from exc
    return parse_csv(text, str(path))


def write_csv(path: str | Path, traj: Trajectory) -> None:
    """Write a trajectory CSV file (``format_csv``)."""
    Path(path).write_text(format_csv(traj), encoding='utf-8')


def shipped_path(track_name: str = 'kart') -> Path:
    """Return the path of the trajectory shipped for a track (package data)."""
    return Path(str(resources.files('pylon_kart') / 'data' / f'{track_name}_trajectory.csv'))


# -- kart_trajectory --------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """Entry point of ``kart_trajectory``: write a track's reference trajectory CSV."""
    from pylon_track import load_track, TrackError
    d = ProfileLimits()
    parser = argparse.ArgumentParser(description='Write the reference trajectory (the '
                                     "competition's CSV, map frame) of a track's centreline.")
    parser.add_argument('--track', default='kart', help='track name or YAML path (kart)')
    parser.add_argument('--output', '-o', default='-', help='CSV path, - for stdout (-)')
    parser.add_argument('--spacing', type=float, default=d.spacing, help='m (%(default)s)')
    parser.add_argument('--lateral-acceleration', type=float, default=d.lateral_acceleration,
                        help='m/s^2 (%(default).4f: 0.6 g)')
    parser.add_argument('--max-speed', type=float, default=d.max_speed,
                        help='m/s (%(default)s)')
    parser.add_argument('--acceleration', type=float, default=d.acceleration,
                        help='m/s^2 (%(default)s)')
    parser.add_argument('--deceleration', type=float, default=d.deceleration,
                        help='m/s^2 (%(default)s)')
    args = parser.parse_args(argv)
    numbers = (args.spacing, args.lateral_acceleration, args.max_speed, args.acceleration,
               args.deceleration)
    if not all(math.isfinite(v) and v > 0.0 for v in numbers):
        parser.error('every limit must be a finite number > 0')
    try:
        track = load_track(args.track)
    except TrackError as exc:
        print(f'kart_trajectory: {exc}', file=sys.stderr)
        return 2
    text = format_csv(reference_from_track(track, ProfileLimits(*numbers)))
    if args.output == '-':
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, encoding='utf-8')
    return 0


if __name__ == '__main__':
    sys.exit(main())
