"""The course as lines to draw: the track's edges, centreline and start line (pure).

Every line is an (N, 2) array of points (m, ``map``): the closed ones (``CLOSED``) end
with their first point repeated, so that a line strip draws the loop shut.
"""

from __future__ import annotations

import math

import numpy as np
from pylon_track import Track

CLOSED = ('left_edge', 'right_edge', 'centreline')
"""The closed lines; ``start_line`` is the open segment across the track at s = 0."""


def course_lines(track: Track, spacing: float = 1.0) -> dict[str, np.ndarray]:
    """Return ``{name: (N, 2) points}``: edges, centreline and start line (m, map).

    The edges lie width / 2 either side of the centreline, whose points are at most
    ``spacing`` m apart along it; the start line goes from edge to edge.

    ValueError unless ``spacing`` is a finite number above 0.
    """
    if not (math.isfinite(spacing) and spacing > 0.0):
        raise ValueError(f'spacing must be a finite number of metres above 0, not {spacing}')
    count = max(3, math.ceil(track.length / spacing))
    s = track.length * np.arange(count + 1) / count          # the last one is s = length
    centre, normal = track.point_at(s), track.normal_at(s)
    half = 0.5 * track.width
    start, start_normal = track.point_at(0.0), track.normal_at(0.0)
    return {'left_edge': centre + half * normal, 'right_edge': centre - half * normal,
            'centreline': centre,
            'start_line': np.stack([start - half * start_normal, start + half * start_normal])}
