"""Tuning plots from a recording: the series as plain data, the figures with matplotlib (Agg).

Each ``*_series(recording, names)`` function returns the data one figure draws (numpy
arrays over the recording's time, seconds since its first message, from the log times);
``draw(name, series, events, stem, formats)`` draws it, and ``make_figures`` does both for
every figure whose topics the recording has. The figures:

- ``attitude``: the estimate (``pylon_estimator/odometry``) against the controller's
  setpoint in force at each estimate (the newest ``/setpoint_controller/setpoint`` logged
  before it; none in IDLE or DETUMBLE), in degrees, as ``make demo`` shows it;
- ``rates``: the IMU's body rates (x, y, z and the magnitude) against the attitude loop's
  rate limit (the one the controller reports in its diagnostics, else the given one);
- ``wrench``: requested, allocated and achieved torque and force magnitudes and the
  saturation ratio from ``control/wrench_feedback``, saturated feedback marked;
- ``estimator``: the estimate against ground truth (``ground_truth/pose`` turned into the
  inertial frame with ``frame_angular_velocity``, ``pylon_vehicle_control.evaluation``),
  arc seconds about the body axes, when the recording has ground truth.

Lease and lifecycle events (``control/authority/state``, ``lifecycle``) are vertical
markers on every figure. Constants (modes, states) are read from the definitions the
recording carries, so nothing here needs ROS.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math
from pathlib import Path
from typing import Any

import numpy as np
from pylon_common import topics
from pylon_protocol import rotations
from pylon_vehicle_control import controller_params, evaluation

from pylon_tools.reading import constants, Recording, RecordingError, value_names

KEYS = ('odometry', 'setpoint', 'imu', 'control/wrench_feedback', 'ground_truth/pose',
        'ground_truth/frame_angular_velocity', 'control/authority/state', 'lifecycle',
        'controller/diagnostics')
"""The contract's topics the figures read."""
FIGURES: dict[str, tuple[str, ...]] = {
    'attitude': ('odometry', 'setpoint'),
    'rates': ('imu',),
    'wrench': ('control/wrench_feedback',),
    'estimator': ('odometry', 'ground_truth/pose', 'ground_truth/frame_angular_velocity'),
}
"""Every figure and the topics (contract keys) it needs."""
EVENT_KEYS = ('lifecycle', 'control/authority/state')
FORMATS = ('png', 'svg')
RATE_LIMIT_KEY = 'rate_limit_deg_s'
DEFAULT_RATE_LIMIT_DEG_S = next(row.default for row in controller_params.PARAMETERS
                                if row.name == 'attitude_hold_rate_limit_deg_s')
TRUTH_TOLERANCE_SEC = 0.005       # estimate/truth pairs: stamps this close (as the evaluator)
DEFAULT_ALIGN_SAMPLES = 100


def topic_names(topic_prefix: str = topics.DEFAULT_TOPIC_PREFIX) -> dict[str, str]:
    """Return the topic name of every key the figures read, vessel topics under the prefix."""
    return {key: (topics.name(key, topic_prefix) if topics.topic(key).namespace == topics.VESSEL
                  else topics.topic(key).default_name()) for key in KEYS}


@dataclass(frozen=True)
class Event:
    """A vertical marker: time (s) and what happened."""

    t: float
    label: str


@dataclass(frozen=True)
class AttitudeSeries:
    """Attitude error (deg) at each estimate; NaN where no attitude setpoint was in force."""

    t: np.ndarray
    error_deg: np.ndarray


@dataclass(frozen=True)
class RateSeries:
    """IMU body rates (deg/s, (N, 3) and the magnitude) and the rate limit (deg/s)."""

    t: np.ndarray
    rates_deg_s: np.ndarray
    magnitude_deg_s: np.ndarray
    limit_deg_s: float


@dataclass(frozen=True)
class WrenchSeries:
    """Wrench feedback: (N, 3) torques (N·m) and forces (N), saturation ratio and flag."""

    t: np.ndarray
    torque: dict[str, np.ndarray]        # requested, allocated, achieved
    force: dict[str, np.ndarray]
    saturation_ratio: np.ndarray
    saturated: np.ndarray


@dataclass(frozen=True)
class EstimatorSeries:
    """Estimate against ground truth: arc seconds about base_link x, y, z and the angle."""

    t: np.ndarray
    body_error_arcsec: np.ndarray
    angle_arcsec: np.ndarray


def _stamp(msg: Any) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def _quat(o: Any) -> list[float]:
    return [o.x, o.y, o.z, o.w]


def _vec(v: Any) -> list[float]:
    return [v.x, v.y, v.z]


def _times(rec: Recording, pairs: Sequence[tuple[int, Any]]) -> np.ndarray:
    return np.array([rec.seconds(t) for t, _ in pairs], dtype=float)


# -- series -----------------------------------------------------------------------------------

def attitude_series(rec: Recording, names: dict[str, str]) -> AttitudeSeries:
    """Return the attitude error of each estimate against the setpoint in force (deg)."""
    estimates, setpoints = rec.of(names['odometry']), rec.of(names['setpoint'])
    modes = constants(rec.schemas.get(names['setpoint'], ''))
    holding = {modes.get('MODE_ATTITUDE_HOLD', 2), modes.get('MODE_SIX_DOF', 3)}
    logged = np.array([t for t, _ in setpoints], dtype=np.int64)
    errors = []
    for t, msg in estimates:
        k = int(np.searchsorted(logged, t, side='right')) - 1
        if k < 0 or setpoints[k][1].mode not in holding:
            errors.append(math.nan)
            continue
        target = _quat(setpoints[k][1].orientation)
        errors.append(math.degrees(rotations.angle_between(
            _quat(msg.pose.pose.orientation), target)))
    return AttitudeSeries(_times(rec, estimates), np.array(errors, dtype=float))


def rate_limit(rec: Recording, names: dict[str, str], given: float | None = None) -> float:
    """Return the rate limit (deg/s): ``given``, the controller's reported one, or the default."""
    if given is not None:
        return float(given)
    reported = diagnostic_values(rec, names, RATE_LIMIT_KEY)
    return float(reported[-1] if reported else DEFAULT_RATE_LIMIT_DEG_S)


def diagnostic_values(rec: Recording, names: dict[str, str], key: str) -> list[str]:
    """Return the values the controller's diagnostics reported under ``key``, in log order."""
    return [kv.value for _, msg in rec.of(names['controller/diagnostics'])
            for status in msg.status for kv in status.values if kv.key == key]


def rate_series(rec: Recording, names: dict[str, str],
                limit_deg_s: float | None = None) -> RateSeries:
    """Return the IMU's body rates in deg/s and the rate limit."""
    imu = rec.of(names['imu'])
    rates = np.degrees(np.array([_vec(m.angular_velocity) for _, m in imu],
                                dtype=float).reshape(-1, 3))
    return RateSeries(_times(rec, imu), rates, np.linalg.norm(rates, axis=1),
                      rate_limit(rec, names, limit_deg_s))


def wrench_series(rec: Recording, names: dict[str, str]) -> WrenchSeries:
    """Return requested, allocated and achieved wrench and the saturation of the feedback."""
    feedback = rec.of(names['control/wrench_feedback'])
    kinds = ('requested', 'allocated', 'achieved')

    def stack(kind: str, part: str) -> np.ndarray:
        return np.array([_vec(getattr(getattr(m, kind), part)) for _, m in feedback],
                        dtype=float).reshape(-1, 3)
    return WrenchSeries(
        _times(rec, feedback), {k: stack(k, 'torque') for k in kinds},
        {k: stack(k, 'force') for k in kinds},
        np.array([m.saturation_ratio for _, m in feedback], dtype=float),
        np.array([bool(m.saturated) for _, m in feedback], dtype=bool))


def estimator_series(rec: Recording, names: dict[str, str],
                     align_samples: int = DEFAULT_ALIGN_SAMPLES) -> EstimatorSeries:
    """Return the estimate's error against ground truth (``evaluation.evaluate_attitude``).

    Pairs are matched on header stamps (KSP time through the bridge); each is drawn at the
    log time of its ground-truth message.
    """
    est = sorted(rec.of(names['odometry']), key=lambda pair: _stamp(pair[1]))
    truth = sorted(rec.of(names['ground_truth/pose']), key=lambda pair: _stamp(pair[1]))
    frame = sorted(rec.of(names['ground_truth/frame_angular_velocity']),
                   key=lambda pair: _stamp(pair[1]))
    result = evaluation.evaluate_attitude(
        [_stamp(m) for _, m in est], [_quat(m.pose.pose.orientation) for _, m in est],
        [_stamp(m) for _, m in truth], [_quat(m.pose.orientation) for _, m in truth],
        [_stamp(m) for _, m in frame], [_vec(m.vector) for _, m in frame],
        tolerance=TRUTH_TOLERANCE_SEC, n_align=align_samples)
    logged = {_stamp(m): rec.seconds(t) for t, m in truth}
    return EstimatorSeries(np.array([logged[t] for t in result.times], dtype=float),
                           result.body_error_arcsec.reshape(-1, 3), result.angle_arcsec)


def events(rec: Recording, names: dict[str, str]) -> list[Event]:
    """Return the lifecycle changes and the lease changes, in time order."""
    found = []
    topic = names['lifecycle']
    states = value_names(rec.schemas.get(topic, ''), 'STATE_')
    last = None
    for t, msg in rec.of(topic):
        key = (msg.state, msg.generation)
        if key != last:
            name = states.get(msg.state, str(msg.state))
            found.append(Event(rec.seconds(t), f'{name.lower()} (gen {msg.generation})'))
        last = key
    topic = names['control/authority/state']
    states = value_names(rec.schemas.get(topic, ''), 'STATE_')
    last = None
    for t, msg in rec.of(topic):
        key = (msg.state, msg.controller_id, msg.lease_id)
        if key != last:
            owner = msg.controller_id if msg.controller_id else \
                states.get(msg.state, str(msg.state)).lower()
            found.append(Event(rec.seconds(t), f'lease: {owner}'))
        last = key
    return sorted(found, key=lambda event: event.t)


# -- figures ----------------------------------------------------------------------------------

def _axes(rows: int, title: str) -> tuple[Any, list[Any]]:
    """Return a matplotlib Figure (Agg, no display) with ``rows`` panels sharing time."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(10, 2.6 * rows + 0.6), layout='constrained')
    axes = list(np.atleast_1d(fig.subplots(rows, 1, sharex=True)))
    axes[0].set_title(title)
    axes[-1].set_xlabel('time since the start of the recording [s]')
    for ax in axes:
        ax.grid(True, alpha=0.4)
    return fig, axes


LABEL_CHAR_FRACTION = 0.0075   # width of one label character, as a share of the panel width


def label_rows(found: Sequence[Event], span: float) -> list[int]:
    """Return a row for each event's label, the lowest free one, so that none overlap."""
    ends: list[float] = []            # per row: where its last label ends (s)
    rows = []
    for event in found:
        row = next((k for k, end in enumerate(ends) if end < event.t), len(ends))
        if row == len(ends):
            ends.append(0.0)
        ends[row] = event.t + (len(event.label) + 1) * LABEL_CHAR_FRACTION * span
        rows.append(row)
    return rows


def _mark(axes: Sequence[Any], found: Sequence[Event]) -> None:
    """Draw every event as a vertical line, labelled on the first panel (rows, no overlap)."""
    low, high = axes[0].get_xlim()
    for ax in axes:
        for event in found:
            ax.axvline(event.t, color='0.45', linestyle=':', linewidth=0.9)
    for event, row in zip(found, label_rows(found, high - low)):
        axes[0].annotate(f' {event.label}', (event.t, 0.97 - 0.09 * row),
                         xycoords=('data', 'axes fraction'), va='top', ha='left', fontsize=7,
                         color='0.3')


def _legend(ax: Any) -> None:
    """Put the legend beside the panel, clear of the lines and the event labels."""
    ax.legend(loc='upper left', bbox_to_anchor=(1.01, 1.0), fontsize=8)


def _save(fig: Any, stem: Path, formats: Sequence[str]) -> list[Path]:
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(f'.{fmt}') for fmt in formats]
    for path in paths:
        fig.savefig(path, format=path.suffix[1:])
    return paths


def _draw_attitude(series: AttitudeSeries, axes: list[Any]) -> None:
    axes[0].plot(series.t, series.error_deg, label='estimate vs setpoint in force')
    axes[0].set_ylabel('attitude error [deg]')
    _legend(axes[0])


def _draw_rates(series: RateSeries, axes: list[Any]) -> None:
    ax = axes[0]
    for k, axis in enumerate('xyz'):
        ax.plot(series.t, series.rates_deg_s[:, k], label=f'ω{axis}', linewidth=0.9)
    ax.plot(series.t, series.magnitude_deg_s, label='|ω|', color='k')
    for sign in (1.0, -1.0):
        ax.axhline(sign * series.limit_deg_s, color='r', linestyle='--',
                   label='rate limit' if sign > 0 else None)
    ax.set_ylabel('body rate [deg/s]')
    _legend(ax)


def _draw_wrench(series: WrenchSeries, axes: list[Any]) -> None:
    for ax, part, unit in ((axes[0], series.torque, 'torque [N·m]'),
                           (axes[1], series.force, 'force [N]')):
        for kind, values in part.items():
            ax.plot(series.t, np.linalg.norm(values, axis=1), label=kind)
        ax.set_ylabel(f'|{unit.split()[0]}| {unit.split()[1]}')
        _legend(ax)
    axes[2].plot(series.t, series.saturation_ratio, label='saturation ratio')
    axes[2].fill_between(series.t, 0.0, 1.0, where=series.saturated, color='r', alpha=0.15,
                         step='mid', label='saturated', transform=axes[2].get_xaxis_transform())
    axes[2].set_ylabel('saturation')
    _legend(axes[2])


def _draw_estimator(series: EstimatorSeries, axes: list[Any]) -> None:
    for k, axis in enumerate('xyz'):
        axes[0].plot(series.t, series.body_error_arcsec[:, k], label=f'about {axis}')
    axes[0].plot(series.t, series.angle_arcsec, label='angle', color='k')
    axes[0].set_ylabel('estimate - truth [arcsec]')
    _legend(axes[0])


DRAWERS = {
    'attitude': (1, 'Attitude error against the setpoint in force', _draw_attitude),
    'rates': (1, 'Body rates (IMU) against the rate limit', _draw_rates),
    'wrench': (3, 'Wrench: requested, allocated, achieved; saturation', _draw_wrench),
    'estimator': (1, 'Estimator error against ground truth', _draw_estimator),
}


def draw(name: str, series: Any, found: Sequence[Event], stem: Path,
         formats: Sequence[str] = FORMATS) -> list[Path]:
    """Draw figure ``name`` of ``series`` with the events; write ``stem.<format>``s."""
    rows, title, drawer = DRAWERS[name]
    fig, axes = _axes(rows, title)
    drawer(series, axes)
    _mark(axes, found)
    return _save(fig, stem, formats)


def missing(rec: Recording, name: str, names: dict[str, str]) -> list[str]:
    """Return the topics figure ``name`` needs that the recording has no message of."""
    return [names[key] for key in FIGURES[name] if not rec.of(names[key])]


@dataclass(frozen=True)
class Drawn:
    """One figure made: the data it plots and the files written."""

    series: Any
    files: list[Path]


def series_of(name: str, rec: Recording, names: dict[str, str],
              limit_deg_s: float | None = None,
              align_samples: int = DEFAULT_ALIGN_SAMPLES) -> Any:
    """Return the series figure ``name`` plots."""
    if name == 'rates':
        return rate_series(rec, names, limit_deg_s)
    if name == 'estimator':
        return estimator_series(rec, names, align_samples)
    return {'attitude': attitude_series, 'wrench': wrench_series}[name](rec, names)


def make_figures(rec: Recording, out_dir: Path, figures: Sequence[str] = (),
                 formats: Sequence[str] = FORMATS, names: dict[str, str] | None = None,
                 limit_deg_s: float | None = None,
                 align_samples: int = DEFAULT_ALIGN_SAMPLES) -> dict[str, Drawn]:
    """Make ``figures`` (default: every one whose topics the recording has) in ``out_dir``.

    RecordingError naming the missing topics when a figure asked for, or every figure,
    lacks its topics.
    """
    names = names or topic_names()
    asked = list(figures) or list(FIGURES)
    lacking = {name: missing(rec, name, names) for name in asked}
    chosen = [name for name in asked if not lacking[name]]
    if (figures and len(chosen) < len(asked)) or not chosen:
        text = '; '.join(f'{name} needs {", ".join(lacking[name])}'
                         for name in asked if lacking[name])
        raise RecordingError(f'{rec.path}: not enough recorded to plot ({text})')
    found = events(rec, names)
    out = {}
    for name in chosen:
        series = series_of(name, rec, names, limit_deg_s, align_samples)
        out[name] = Drawn(series, draw(name, series, found, Path(out_dir) / name, formats))
    return out
