"""``pylon_plot``: tuning plots (PNG and SVG) from a recording; see ``pylon_tools.plot``.

    pylon_plot demo.mcap                    # every figure the recording has topics for
    pylon_plot demo.mcap -o plots --figures attitude,rates --format png

Exit status 0 when every figure was written; 2 for bad input (not a file, not an MCAP
recording, a figure asked for whose topics were not recorded), with the reason on one line.
Nothing here needs ROS: ``--help`` works anywhere, and the recording is decoded from the
definitions it carries.
"""

from __future__ import annotations

import argparse
from pathlib import Path
import sys

from pylon_common import topics

FIGURE_NAMES = ('attitude', 'rates', 'wrench', 'estimator')


def parser() -> argparse.ArgumentParser:
    """Return the command line's parser."""
    p = argparse.ArgumentParser(
        prog='pylon_plot', description='Tuning plots (PNG and SVG) from a recording: attitude '
        'error against the setpoint in force, body rates against the rate limit, requested / '
        'allocated / achieved wrench and saturation, the estimate against ground truth when '
        'it was recorded; lease and lifecycle events as vertical markers.')
    p.add_argument('recording', type=Path, help='an MCAP file (pylon_recorder, ros2 bag)')
    p.add_argument('-o', '--output-dir', type=Path,
                   help='where the figures go (default: <recording>_plots beside it)')
    p.add_argument('--figures', default='',
                   help=f'comma list of {", ".join(FIGURE_NAMES)} (default: every figure '
                        'whose topics were recorded)')
    p.add_argument('--format', default='png,svg', help='comma list of png, svg (default both)')
    p.add_argument('--topic-prefix', default=topics.DEFAULT_TOPIC_PREFIX, metavar='PREFIX',
                   help='prefix of the vessel topics in the recording (default %(default)s)')
    p.add_argument('--rate-limit-deg-s', type=float, default=None, metavar='DEG_S',
                   help="rate limit to draw (default: the controller's, from its recorded "
                        'diagnostics, else the default of setpoint_controller)')
    p.add_argument('--align-samples', type=int, default=100, metavar='N',
                   help='estimate/truth pairs that fix the ENU -> inertial alignment '
                        '(default %(default)s)')
    return p


def _list(text: str, allowed: tuple[str, ...], what: str,
          p: argparse.ArgumentParser) -> list[str]:
    items = [item.strip() for item in text.split(',') if item.strip()]
    unknown = [item for item in items if item not in allowed]
    if unknown:
        p.error(f'unknown {what} {", ".join(unknown)} (one of {", ".join(allowed)})')
    return items


def summary_line(name: str, series: object) -> str:
    """Return one line of numbers about a figure's series."""
    import numpy as np
    if name == 'attitude':
        held = series.error_deg[np.isfinite(series.error_deg)]
        return (f'final error {held[-1]:.4f} deg' if held.size else 'no attitude setpoint')
    if name == 'rates':
        peak = float(series.magnitude_deg_s.max()) if series.t.size else 0.0
        return f'peak |ω| {peak:.3f} deg/s (limit {series.limit_deg_s:g})'
    if name == 'wrench':
        share = float(series.saturated.mean()) if series.t.size else 0.0
        return f'{series.t.size} feedbacks, {100 * share:.1f} % saturated'
    rms = float(np.sqrt(np.mean(series.angle_arcsec ** 2))) if series.t.size else float('nan')
    return f'RMS {rms:.2f} arcsec over {series.t.size} pairs'


def main(argv: list[str] | None = None) -> int:
    """Plot a recording; return the exit status."""
    p = parser()
    args = p.parse_args(argv)
    figures = _list(args.figures, FIGURE_NAMES, 'figure', p)
    formats = _list(args.format, ('png', 'svg'), 'format', p) or ['png', 'svg']
    from pylon_tools import plot
    from pylon_tools.reading import read_recording, RecordingError
    names = plot.topic_names(args.topic_prefix)
    out_dir = args.output_dir or args.recording.with_name(args.recording.stem + '_plots')
    try:
        recording = read_recording(args.recording, names.values())
        drawn = plot.make_figures(recording, out_dir, figures, formats, names,
                                  args.rate_limit_deg_s, args.align_samples)
    except RecordingError as exc:
        print(f'pylon_plot: error: {exc}', file=sys.stderr)
        return 2
    if not recording.complete:
        print(f'pylon_plot: {args.recording} has no summary (the recorder was killed): '
              'plotted what it holds up to its last complete chunk', file=sys.stderr)
    for name, result in drawn.items():
        print(f'{name}: {", ".join(str(f) for f in result.files)} '
              f'({summary_line(name, result.series)})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
