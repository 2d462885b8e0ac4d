"""The race on a track: laps through sections, times, boosts and track limits (pure).

No clock, no I/O: ``Race.step(state, inputs, dt)`` advances an immutable ``RaceState`` by
``dt`` seconds of the caller's clock (the simulator's game time), from each kart's centre
in the track's ``map`` frame. The simulator steps it every physics frame from its truth; a
judge can replay it from recorded positions and get the same laps.

Phases
    ``grid`` until ``start`` (positions are followed, nothing is judged, the session clock
    stands at 0), ``running``, then ``over`` once the session time limit is reached, every
    kart has finished, or ``finish`` is called. ``t`` (s) is the time since the start.

Gates and laps
    Every section start of the track (``Track.sections``) is a gate: a straight line across
    the track at that arc length, along the normal, reaching ``gate_runoff_m`` beyond each
    edge (checked at construction to lie wholly nearer its own centreline point than any
    other part of the track). Gate 0 is the start/finish line. A kart passes a gate when
    the straight path of its centre between two steps crosses it; the direction (forward:
    the driving direction) and the time (interpolated along the path, on the step's clock)
    come from that crossing.

    A lap begins when the kart crosses the line forward (from the grid, the first time)
    and counts when it crosses the line forward again after gates 1, 2, ..., n-1 in that
    order, each forward. Backing over the last gate passed undoes that passage (driving
    it forward again is not a second passage): a kart that backs over the line has no lap
    in progress, and its next forward crossing begins one instead of counting one. A
    forward crossing of a gate out of order (a section skipped: cut across the infield)
    or a backward crossing of any other gate (wrong way) spoils the lap in progress: it
    does not count when the line ends it (``invalid_lap``), and the next one begins
    there. Lap times run from line to line; section ``i``'s time from gate ``i`` to the
    next gate (the line for the last). A kart that has counted ``laps`` laps has finished
    (``finishTime``: the time since the start); from then on nothing of it is judged.

Boost
    ``boost(state, kart, value)`` takes the value of the kart's boost command (the
    competition's ``/awsim/cmd`` index 0): a rising edge to ``>= 1.0`` (the previous value
    below it) fires a boost, which lasts ``boost_sec``: the drive torque times
    ``boost_torque_gain`` and the top speed times ``boost_speed_gain`` (``drive``). An
    edge is refused (and counted by reason) before the start (``not_started``), after the
    kart's finish or the session's end (``finished``), when none is left (``none_left``)
    or while boosting (``boosting``). Any finite value updates the edge's memory, a
    refused edge included (a held command does not fire when the refusal clears); a value
    that is not a finite number is counted (``malformed_boost``) and changes nothing.

Track limits
    A kart is off the track when its centre is more than ``off_track_margin_m`` beyond an
    edge (``|lateral| > width / 2 + margin``: with the default 0.5 m, the kart's half
    track, all its wheels are beyond the edge line) and back on once within the edge
    (``|lateral| <= width / 2``). Each exit counts one penalty; while off the track and
    for ``penalty_sec`` after it is back, its speed is capped at ``penalty_speed_mps``
    (``drive``), a boost's gains included.

Bad input
    A position that is not two finite numbers is counted (``malformed_position``) and
    skipped (the kart's last position is kept); a ``dt`` that is not finite or is negative
    is counted on the race (``malformed_dt``) and changes nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
import math

from pylon_track.track import Track

GRID = 'grid'
RUNNING = 'running'
OVER = 'over'
PHASES = (GRID, RUNNING, OVER)

BOOST_LEVEL = 1.0
"""A boost command value at or above this is 'pressed' (a rising edge to it fires)."""
MODES = {1: {'laps': 6, 'time_limit_sec': 600.0}, 4: {'laps': 6, 'time_limit_sec': 420.0}}
"""The competition's modes: one kart alone (evaluation), several karts with a synchronised
start (finals; two karts race under the four-kart mode's rules)."""
GATE_CHECK_STEP = 0.25
"""m between the points of a gate checked against the track's other parts."""

# what ``Race.boost`` answers
FIRED = 'fired'
IGNORED = 'ignored'          # no rising edge (the value stays below, or stays pressed)
REFUSAL_REASONS = ('not_started', 'finished', 'none_left', 'boosting')
MALFORMED = 'malformed_boost'


RULE_NAMES = ('laps', 'time_limit_sec', 'boosts', 'boost_sec', 'boost_torque_gain',
              'boost_speed_gain', 'penalty_speed_mps', 'penalty_sec', 'off_track_margin_m',
              'gate_runoff_m')
"""The rules of a race, ``RaceRules``' fields (a scenario's race ``task:`` takes them)."""
WHOLE_RULES = ('laps', 'boosts')
POSITIVE_RULES = ('laps', 'time_limit_sec', 'boost_sec', 'boost_torque_gain',
                  'boost_speed_gain')


@dataclass(frozen=True)
class RaceRules:
    """The rules of one race (every number documented in the module docstring).

    Defaults: the one-kart mode; ``mode_rules`` gives a mode's.
    """

    laps: int = 6                       # laps to finish
    time_limit_sec: float = 600.0       # s of session from the start
    boosts: int = 3                     # boosts per kart and race
    boost_sec: float = 5.0              # s a boost lasts
    boost_torque_gain: float = 1.5      # x the drive torque while boosting
    boost_speed_gain: float = 1.2       # x the top speed while boosting
    penalty_speed_mps: float = 2.0      # m/s, the speed cap of a track-limit penalty
    penalty_sec: float = 3.0            # s the cap lasts after the kart is back on track
    off_track_margin_m: float = 0.5     # m beyond an edge the kart's centre is off track
    gate_runoff_m: float = 3.0          # m each gate reaches beyond each edge

    def __post_init__(self) -> None:
        """Refuse rules that cannot run a race (ValueError naming the rule)."""
        for name in RULE_NAMES:
            value = getattr(self, name)
            if not _finite(value) or (name in WHOLE_RULES and not isinstance(value, int)):
                raise ValueError(f'race rule {name}: must be a finite '
                                 f'{"whole " if name in WHOLE_RULES else ""}number, '
                                 f'got {value!r}')
            if value < 0 or (value == 0 and name in POSITIVE_RULES):
                raise ValueError(f'race rule {name}: must be '
                                 f'{"> 0" if name in POSITIVE_RULES else ">= 0"}, got {value!r}')

    def to_dict(self) -> dict:
        """Return the rules as JSON-ready data."""
        return {name: getattr(self, name) for name in RULE_NAMES}




def mode_rules(karts: int, **settings) -> RaceRules:
    """Return the rules of the mode of ``karts`` karts (``MODES``), ``settings`` over them."""
    if karts < 1:
        raise ValueError(f'a race needs a kart, got {karts}')
    return RaceRules(**{**MODES[1 if karts == 1 else 4], **settings})


@dataclass(frozen=True)
class Gate:
    """A timing line across the track at a section start (``map`` frame, m)."""

    index: int
    s: float                # m, arc length of its centre
    x: float                # m, its centre on the centreline
    y: float
    tx: float               # the driving direction there (unit)
    ty: float
    half: float             # m, from its centre to each end


def track_gates(track: Track, runoff: float) -> tuple[Gate, ...]:
    """Return the gate of every section start; ValueError if one reaches another part."""
    half = 0.5 * track.width + runoff
    out = []
    for index, s in enumerate(track.sections):
        x, y = (float(v) for v in track.point_at(s))
        heading = float(track.heading_at(s))
        gate = Gate(index, s, x, y, math.cos(heading), math.sin(heading), half)
        count = max(2, math.ceil(2.0 * half / GATE_CHECK_STEP) + 1)
        offsets = [-half + 2.0 * half * i / (count - 1) for i in range(count)]
        points = [(x - o * gate.ty, y + o * gate.tx) for o in offsets]
        found = track.project(points).s
        for o, s_found in zip(offsets, found):
            gap = abs((float(s_found) - s + 0.5 * track.length) % track.length
                      - 0.5 * track.length)
            if gap > 1e-3:
                raise ValueError(f'track {track.name!r}: gate {index} (s = {s:.2f} m) reaches '
                                 f'another part of the track {o:+.2f} m from its centre '
                                 f'(gate_runoff_m {runoff} is too long)')
        out.append(gate)
    return tuple(out)


def crossings(gates: Sequence[Gate], p0: tuple[float, float],
              p1: tuple[float, float]) -> list[tuple[float, int, bool]]:
    """Return the gates the path p0 -> p1 crosses: (fraction along it, gate, forward), in order.

    Forward: from behind the gate (against the driving direction) to on or beyond it;
    backward: from on or beyond it to behind it. The crossing point must lie within the
    gate's length.
    """
    out = []
    for gate in gates:
        d0 = (p0[0] - gate.x) * gate.tx + (p0[1] - gate.y) * gate.ty
        d1 = (p1[0] - gate.x) * gate.tx + (p1[1] - gate.y) * gate.ty
        forward = d0 < 0.0 <= d1
        if not (forward or d1 < 0.0 <= d0):
            continue
        share = d0 / (d0 - d1)
        cx = p0[0] + share * (p1[0] - p0[0]) - gate.x
        cy = p0[1] + share * (p1[1] - p0[1]) - gate.y
        if abs(-cx * gate.ty + cy * gate.tx) <= gate.half:
            out.append((share, gate.index, forward))
    out.sort()
    return out


@dataclass(frozen=True)
class Passage:
    """A forward passage of a gate in the lap in progress, at race time ``t`` (s)."""

    gate: int
    t: float


@dataclass(frozen=True)
class Lap:
    """A counted lap: its time and its sections' times (s), and when it ended (race s)."""

    time: float
    sections: tuple[float, ...]
    end: float


@dataclass(frozen=True)
class Inputs:
    """One kart's step: its centre in ``map`` (m) at the step's end, its boost command."""

    x: float
    y: float
    boost: float | None = None      # the command's value at the step's start (None: none)


@dataclass(frozen=True)
class Kart:
    """One kart's race so far (see the module docstring)."""

    boosts_left: int
    position: tuple[float, float] | None = None   # m, map, at the race's ``t``
    passages: tuple[Passage, ...] = ()            # the lap in progress (from the line)
    clean: bool = True                            # the lap in progress can count
    laps: tuple[Lap, ...] = ()                    # counted laps
    finished_at: float | None = None              # race s of its last lap's end
    command: float = 0.0                          # the boost command's last value
    boost_until: float | None = None              # race s its boost ends
    lateral: float | None = None                  # m, + left, of its last position
    off_track: bool = False
    penalty_until: float | None = None            # race s the cap ends once back on track
    penalties: int = 0
    counts: dict = field(default_factory=dict)    # events and refusals by name

    def counted(self, name: str, by: int = 1) -> Kart:
        """Return the kart with one more ``name`` event."""
        return replace(self, counts={**self.counts, name: self.counts.get(name, 0) + by})


@dataclass(frozen=True)
class RaceState:
    """The race at ``t`` s since the start (0 on the grid)."""

    phase: str
    t: float
    karts: tuple[Kart, ...]
    counts: dict = field(default_factory=dict)    # race-wide events (``malformed_dt``)


def _finite(*values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
               for v in values)


def boosting(kart: Kart, t: float) -> bool:
    """Tell whether the kart's boost is on at race time ``t``."""
    return kart.finished_at is None and kart.boost_until is not None and t < kart.boost_until


def penalised(kart: Kart, t: float) -> bool:
    """Tell whether the kart's track-limit speed cap is on at race time ``t``."""
    return kart.finished_at is None and (
        kart.off_track or (kart.penalty_until is not None and t < kart.penalty_until))


def press(kart: Kart, value, phase: str, t: float, rules: RaceRules) -> tuple[Kart, str]:
    """Take a boost command's value at race time ``t``; return the kart and the outcome.

    The outcome: ``FIRED``, ``IGNORED`` (no rising edge), a refusal reason
    (``REFUSAL_REASONS``) or ``MALFORMED`` (see the module docstring).
    """
    if not _finite(value):
        return kart.counted(MALFORMED), MALFORMED
    value = float(value)
    edge = kart.command < BOOST_LEVEL <= value
    kart = replace(kart, command=value)
    if not edge:
        return kart, IGNORED
    if phase == GRID:
        reason = 'not_started'
    elif phase == OVER or kart.finished_at is not None:
        reason = 'finished'
    elif kart.boosts_left <= 0:
        reason = 'none_left'
    elif boosting(kart, t):
        reason = 'boosting'
    else:
        return replace(kart.counted('boost_fired'), boosts_left=kart.boosts_left - 1,
                       boost_until=t + rules.boost_sec), FIRED
    return kart.counted(f'boost_refused_{reason}'), reason


class Race:
    """The rules of one race on one track; every method is pure (see the module docstring)."""

    def __init__(self, track: Track, rules: RaceRules | None = None) -> None:
        """Take the track and the rules (default: the one-kart mode); make the gates."""
        self.track = track
        self.rules = rules or RaceRules()
        self.gates = track_gates(track, self.rules.gate_runoff_m)

    # -- the race ------------------------------------------------------------------------
    def initial(self, karts: int) -> RaceState:
        """Return the race of ``karts`` karts on the grid, before the start."""
        return RaceState(GRID, 0.0, tuple(Kart(self.rules.boosts) for _ in range(karts)))

    def start(self, state: RaceState) -> RaceState:
        """Return the race started now (``t`` 0); ValueError unless it is on the grid."""
        if state.phase != GRID:
            raise ValueError(f'the race is {state.phase}, not on the grid (reset it first)')
        return replace(state, phase=RUNNING, t=0.0)

    def finish(self, state: RaceState) -> RaceState:
        """Return the race over now (a race not started ends without a lap)."""
        return replace(state, phase=OVER)

    def step(self, state: RaceState, inputs: Sequence[Inputs | None], dt: float) -> RaceState:
        """Advance the race by ``dt`` s with each kart's inputs (None: nothing of it)."""
        if not _finite(dt) or dt < 0.0:
            return replace(state, counts={**state.counts,
                                          'malformed_dt': state.counts.get('malformed_dt', 0) + 1})
        if len(inputs) != len(state.karts):
            raise ValueError(f'{len(inputs)} inputs for {len(state.karts)} karts')
        running = state.phase == RUNNING
        t1 = state.t + dt if running else state.t
        limit = self.rules.time_limit_sec
        karts = tuple(self.step_kart(kart, given, state.phase, state.t, t1 - state.t)
                      if given is not None else kart
                      for kart, given in zip(state.karts, inputs))
        phase = state.phase
        if running and (t1 >= limit or all(k.finished_at is not None for k in karts)):
            phase, t1 = OVER, min(t1, limit)
        return replace(state, phase=phase, t=t1, karts=karts)

    def step_kart(self, kart: Kart, inputs: Inputs, phase: str, t0: float, dt: float) -> Kart:
        """Advance one kart from race time ``t0`` by ``dt`` (0 off the ``running`` phase)."""
        if inputs.boost is not None:
            kart, _ = press(kart, inputs.boost, phase, t0, self.rules)
        if not _finite(inputs.x, inputs.y):
            return kart.counted('malformed_position')
        before, now = kart.position, (float(inputs.x), float(inputs.y))
        kart = replace(kart, position=now, lateral=float(self.track.project(now).lateral))
        if phase != RUNNING or kart.finished_at is not None:
            return kart
        if before is not None:
            for share, gate, forward in crossings(self.gates, before, now):
                when = t0 + share * dt
                if when > self.rules.time_limit_sec:
                    break
                kart = self._passed(kart, gate, forward, when)
                if kart.finished_at is not None:
                    return kart
        return self._judged(kart, t0 + dt)

    def boost(self, state: RaceState, kart: int, value) -> tuple[RaceState, str]:
        """Take kart ``kart``'s (0-based) boost command value now; return the race, outcome."""
        changed, outcome = press(state.karts[kart], value, state.phase, state.t, self.rules)
        karts = state.karts[:kart] + (changed,) + state.karts[kart + 1:]
        return replace(state, karts=karts), outcome

    def drive(self, state: RaceState, kart: int) -> tuple[float, float, float | None]:
        """Return kart ``kart``'s drive now: (torque gain, top-speed gain, speed cap m/s or None).

        (1, 1, None) off the running phase and once the kart has finished.
        """
        one, t = state.karts[kart], state.t
        if state.phase != RUNNING or one.finished_at is not None:
            return 1.0, 1.0, None
        gains = ((self.rules.boost_torque_gain, self.rules.boost_speed_gain)
                 if boosting(one, t) else (1.0, 1.0))
        return (*gains, self.rules.penalty_speed_mps if penalised(one, t) else None)

    # -- one kart's judging --------------------------------------------------------------
    def _passed(self, kart: Kart, gate: int, forward: bool, when: float) -> Kart:
        """Return the kart after crossing ``gate`` (forward or not) at race time ``when``."""
        if forward and gate == 0:
            return self._line(kart, when)
        last = kart.passages[-1].gate if kart.passages else None
        if forward:
            if last is None:
                return kart.counted('gate_outside_lap')
            if gate != last + 1:
                kart = replace(kart.counted('skipped_section'), clean=False)
            return replace(kart, passages=kart.passages + (Passage(gate, when),))
        if gate == last:
            rest = kart.passages[:-1]
            return replace(kart.counted('backed_over_gate'), passages=rest,
                           clean=kart.clean if rest else True)
        kart = kart.counted('wrong_way')
        return replace(kart, clean=False) if kart.passages else kart

    def _line(self, kart: Kart, when: float) -> Kart:
        """Return the kart after crossing the line forward: a lap counted, spoilt, or begun."""
        if kart.passages:
            gates = tuple(p.gate for p in kart.passages)
            if kart.clean and gates == tuple(range(len(self.gates))):
                times = [p.t for p in kart.passages] + [when]
                lap = Lap(when - times[0], tuple(b - a for a, b in zip(times, times[1:])), when)
                kart = replace(kart, laps=kart.laps + (lap,))
                if len(kart.laps) >= self.rules.laps:
                    kart = replace(kart, finished_at=when)
            else:
                kart = kart.counted('invalid_lap')
        return replace(kart, passages=(Passage(0, when),), clean=True)

    def _judged(self, kart: Kart, t: float) -> Kart:
        """Return the kart with its track limits judged at race time ``t``."""
        lateral, edge = abs(kart.lateral), 0.5 * self.track.width
        if not kart.off_track and lateral > edge + self.rules.off_track_margin_m:
            return replace(kart.counted('off_track'), off_track=True,
                           penalties=kart.penalties + 1)
        if kart.off_track and lateral <= edge:
            return replace(kart, off_track=False, penalty_until=t + self.rules.penalty_sec)
        return kart

    # -- what it reports -----------------------------------------------------------------
    def session_left(self, state: RaceState) -> float:
        """Return the session time left (s): the limit on the grid, 0 once it ran out."""
        return max(0.0, self.rules.time_limit_sec - state.t)

    def status(self, state: RaceState) -> dict:
        """Return the race as JSON-ready data (every kart's in ``kart_status``)."""
        return {'phase': state.phase, 'elapsed': state.t,
                'sessionTime': self.session_left(state), 'track': self.track.name,
                'sections': len(self.gates), 'rules': self.rules.to_dict(),
                'events': dict(state.counts)}

    def kart_status(self, state: RaceState, index: int) -> dict:
        """Return kart ``index``'s race as JSON-ready data (the module docstring's terms).

        The competition's status values by their names (``sessionTime``, ``lapCount``:
        counted laps, ``thisLapTime``: 0 without a lap in progress, ``section``: the
        section whose gate it passed last in the lap in progress, the last section before
        its first lap and after backing over the line, ``boostRemaining``,
        ``isBoosting``), then the laps (``lapEnds``: the race time each counted lap
        ended, what a ranking compares), sections, boosts and penalties in full.
        """
        kart, t = state.karts[index], state.t
        racing = bool(kart.passages) and kart.finished_at is None
        marks = [p.t for p in kart.passages]
        times = [lap.time for lap in kart.laps]
        return {
            'sessionTime': self.session_left(state), 'lapCount': len(kart.laps),
            'thisLapTime': t - marks[0] if racing else 0.0,
            'section': kart.passages[-1].gate if kart.passages else len(self.gates) - 1,
            'boostRemaining': kart.boosts_left, 'isBoosting': boosting(kart, t),
            'lapTimes': times, 'sectionTimes': [list(lap.sections) for lap in kart.laps],
            'lapEnds': [lap.end for lap in kart.laps],
            'currentSectionTimes': [b - a for a, b in zip(marks, marks[1:])] if racing else [],
            'bestLap': min(times) if times else None,
            'finished': kart.finished_at is not None, 'finishTime': kart.finished_at,
            'boostsUsed': self.rules.boosts - kart.boosts_left,
            'boostEndsIn': kart.boost_until - t if boosting(kart, t) else 0.0,
            'penalties': {'count': kart.penalties, 'active': penalised(kart, t),
                          'offTrack': kart.off_track,
                          'endsIn': None if kart.off_track else
                          max(0.0, (kart.penalty_until or 0.0) - t) if penalised(kart, t)
                          else 0.0},
            'lateral': kart.lateral, 'events': dict(kart.counts),
        }
