"""Laps, lap times and the cross-track error of a kart from its positions (pure).

``LapCounter`` projects each position (m, ``map``) on the track's centreline
(``pylon_track.Track.project``) and unwraps the arc length into the progress driven since
the first position. A kart starts on the grid, behind the start/finish line: the first
crossing of the line starts lap 1, each later crossing ends a lap (its time interpolated
between the two positions either side of the line). Driving backwards over the line and
forwards again counts no lap twice: a crossing counts only when the progress passes a
multiple of the track length it never passed before. Between two positions the kart must
have moved less than half a lap (positions at a few Hz or more).
"""

from __future__ import annotations

from dataclasses import dataclass, field
import math

from pylon_track import Track


@dataclass(frozen=True)
class LapStatus:
    """Where the kart is: ``lap`` 0 on the grid (before the line), 1 on the first lap, ...

    ``s`` (m, [0, length)) and ``lateral`` (m, + left of the driving direction) are the
    projection of the newest position; ``progress`` (m) is the arc length driven since the
    first one; ``lap_times`` (s, of the clock given) of every completed lap.
    """

    lap: int
    s: float
    lateral: float
    progress: float
    lap_times: tuple[float, ...]

    @property
    def laps(self) -> int:
        """Return the number of completed laps."""
        return len(self.lap_times)

    @property
    def best_lap(self) -> float | None:
        """Return the best lap time (s), None before the first completed lap."""
        return min(self.lap_times) if self.lap_times else None


@dataclass
class LapCounter:
    """Counts the laps of one kart on ``track`` (see the module docstring)."""

    track: Track
    _start_s: float | None = None            # the first position's arc length (m)
    _s: float = 0.0                          # the newest position's arc length (m)
    _t: float = 0.0                          # the newest position's time (s)
    _progress: float = 0.0                   # m driven since the first position (unwrapped)
    _crossings: list[float] = field(default_factory=list)   # times the line was crossed (s)
    status: LapStatus | None = None

    def update(self, t: float, x: float, y: float) -> LapStatus:
        """Take the position (m, ``map``) at time ``t`` (s); return the status.

        ValueError for a non-finite number or a time before the previous one.
        """
        if not all(math.isfinite(v) for v in (t, x, y)):
            raise ValueError(f'a position needs finite numbers, not t={t}, x={x}, y={y}')
        if self._start_s is not None and t < self._t:
            raise ValueError(f'time went back: {t} s after {self._t} s')
        where = self.track.project((x, y))
        length = self.track.length
        if self._start_s is None:
            self._start_s = where.s
        else:
            step = where.s - self._s
            step -= length * round(step / length)         # the short way round
            before = self._start_s + self._progress
            self._progress += step
            after = before + step
            # the line is at every multiple of the length of (start_s + progress)
            while math.floor(after / length) > len(self._crossings):
                line = (len(self._crossings) + 1) * length
                share = (line - before) / step if step else 1.0
                self._crossings.append(self._t + min(max(share, 0.0), 1.0) * (t - self._t))
        self._s, self._t = where.s, t
        times = tuple(b - a for a, b in zip(self._crossings, self._crossings[1:]))
        self.status = LapStatus(len(self._crossings), where.s, where.lateral, self._progress,
                                times)
        return self.status
