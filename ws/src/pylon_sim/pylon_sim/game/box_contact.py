"""Where two boxes, or a box and a sphere, touch: the narrow phase of ``contact`` (pure numpy).

A ``Box`` is placed in one frame: centre, axes (the columns of a rotation matrix) and half
sizes. ``box_box`` is the separating-axis test of two boxes over their 3 + 3 face normals
and the 9 cross products of their edges: the axis of least overlap is the contact normal
(a face's unless an edge's overlap is below ``EDGE_BIAS`` × the best face's), its overlap
the depth. The contact acts at one point, half way between the surfaces: a face contact at
the middle of the other box's incident face clipped to the reference face (the mean of
the clipped corners that penetrate; Sutherland-Hodgman against the reference face's four
side planes), an edge contact between the two edges' closest points. ``box_sphere`` takes
the point of the box nearest the sphere's centre; a centre inside the box leaves by the
nearest face.

Both take the boxes at the start of the step (``before``): a pair apart then keeps the
axis that separated it (a sphere's centre that went inside, the face it came through), so
a box that went deep into the other in one step is pushed back the way it came. Both
return ``(normal from the first to the second, point, depth)``, or None when the shapes are
more than ``margin`` apart.
"""

from __future__ import annotations

from dataclasses import dataclass
import math

import numpy as np

from pylon_sim.game.wheels import cross

EDGE_BIAS = 0.95
"""An edge axis is the normal only when its overlap is below this × the best face's."""
PARALLEL = 1e-6
"""Two edges whose cross product is shorter than this are parallel (no edge axis)."""


@dataclass(frozen=True)
class Box:
    """A box placed in the frame: centre, axes (columns) and half sizes."""

    centre: np.ndarray
    axes: np.ndarray
    half: np.ndarray



def _axes(ra: np.ndarray, rb: np.ndarray) -> np.ndarray:
    """Return the 15 candidate axes (rows): A's, B's and the edges' cross products.

    A cross product of parallel edges is a zero row (not an axis).
    """
    edges = cross(ra.T[:, None, :], rb.T[None, :, :]).reshape(9, 3)
    length = np.sqrt((edges * edges).sum(axis=1))
    edges = np.where((length > PARALLEL)[:, None],
                     edges / np.where(length > PARALLEL, length, 1.0)[:, None], 0.0)
    return np.vstack([ra.T, rb.T, edges])


def _overlaps(a: Box, b: Box) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the 15 axes, the boxes' overlap along each (inf: no axis) and b - a on each."""
    axes = _axes(a.axes, b.axes)
    offset = axes @ (b.centre - a.centre)
    reach = np.abs(axes @ a.axes) @ a.half + np.abs(axes @ b.axes) @ b.half
    overlap = reach - np.abs(offset)
    valid = (axes * axes).sum(axis=1) > 0.5
    return axes, np.where(valid, overlap, math.inf), offset


def _choose(overlap: np.ndarray) -> int:
    """Return the axis of least overlap, a face's unless an edge's is clearly less."""
    face = int(np.argmin(overlap[:6]))
    edge = 6 + int(np.argmin(overlap[6:]))
    return edge if overlap[edge] < EDGE_BIAS * overlap[face] - 1e-6 else face


def box_box(a: Box, b: Box, before: tuple[Box, Box] | None, margin: float):
    """Return (normal, point, depth) of two boxes within ``margin``, else None."""
    axes, overlap, offset = _overlaps(a, b)
    if overlap.min() < -margin:
        return None
    index = _choose(overlap)
    side = offset
    if before is not None and overlap[index] > 0.0:
        _, was, was_offset = _overlaps(*before)
        came = int(np.argmin(was))
        if was[came] < 0.0 and math.isfinite(overlap[came]):   # apart: the way they came
            index, side = came, was_offset
    depth = float(overlap[index])
    normal = axes[index] * (1.0 if side[index] >= 0.0 else -1.0)
    if index < 3:
        return (normal, *_face(a, b, index, normal, depth))
    if index < 6:
        return (normal, *_face(b, a, index - 3, -normal, depth))
    return normal, _edges(a, b, (index - 6) // 3, (index - 6) % 3, normal), depth


def _face(ref: Box, inc: Box, k: int, normal: np.ndarray, depth: float):
    """Return the point and depth of a face contact: the middle of the clipped face.

    The point is the mean of the clipped incident face's points that penetrate (the
    deepest one when none does).
    """
    points, depths = _clip(ref, inc, k, normal)
    if not len(depths):          # a clip left empty by rounding: inc's deepest point
        return inc.centre - normal * (_support(inc, -normal) - 0.5 * depth), depth
    inside = depths > 0.0
    if not inside.any():
        return points[int(np.argmax(depths))], float(depths.max())
    return points[inside].mean(axis=0), float(depths.max())


def _support(box: Box, direction: np.ndarray) -> float:
    """Return how far the box reaches from its centre along a unit direction."""
    return float(np.abs(direction @ box.axes) @ box.half)


def _clip(ref: Box, inc: Box, k: int, normal: np.ndarray):
    """Return the points of ``inc``'s incident face clipped to ``ref``'s face ``k``.

    ``normal`` points from ``ref`` to ``inc`` (the reference face's outward normal).
    Each point is half way between the incident point and the reference face.
    """
    along = normal @ inc.axes
    j = int(np.argmax(np.abs(along)))
    sign = -1.0 if along[j] > 0.0 else 1.0         # the face of inc looking back at ref
    u, v = [m for m in range(3) if m != j]
    ru, rv = inc.axes[:, u] * inc.half[u], inc.axes[:, v] * inc.half[v]
    face = inc.centre + sign * inc.half[j] * inc.axes[:, j]
    polygon = [face + ru + rv, face - ru + rv, face - ru - rv, face + ru - rv]
    for m in range(3):
        if m == k:
            continue
        axis, half = ref.axes[:, m], ref.half[m]
        for side in (1.0, -1.0):
            polygon = _clip_plane(polygon, side * axis, side * float(axis @ ref.centre) + half)
            if not polygon:
                return np.zeros((0, 3)), np.zeros(0)
    points = np.array(polygon)
    depths = ref.half[k] - (points - ref.centre) @ normal
    return points + 0.5 * depths[:, None] * normal, depths


def _clip_plane(polygon: list[np.ndarray], normal: np.ndarray, limit: float) -> list:
    """Return the polygon's part where ``normal · p <= limit`` (Sutherland-Hodgman)."""
    out: list[np.ndarray] = []
    count = len(polygon)
    for i in range(count):
        p, q = polygon[i], polygon[(i + 1) % count]
        dp, dq = float(normal @ p) - limit, float(normal @ q) - limit
        if dp <= 0.0:
            out.append(p)
        if dp * dq < 0.0:
            out.append(p + (q - p) * (dp / (dp - dq)))
    return out


def _edges(a: Box, b: Box, i: int, j: int, normal: np.ndarray) -> np.ndarray:
    """Return the point of an edge-edge contact: between the edges' closest points."""
    def edge(box: Box, m: int, direction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        corner = box.centre.copy()
        for k in range(3):
            if k != m:
                axis = box.axes[:, k]
                corner += (1.0 if axis @ direction >= 0.0 else -1.0) * box.half[k] * axis
        return corner, box.axes[:, m] * box.half[m]
    pa, ea = edge(a, i, normal)
    pb, eb = edge(b, j, -normal)
    # closest points of the segments pa + s ea, pb + t eb, s, t in [-1, 1]
    w = pa - pb
    aa, bb, ab = float(ea @ ea), float(eb @ eb), float(ea @ eb)
    da, db = float(ea @ w), float(eb @ w)
    det = aa * bb - ab * ab
    s = 0.0 if det < 1e-12 else float(np.clip((ab * db - bb * da) / det, -1.0, 1.0))
    t = float(np.clip((ab * s + db) / bb, -1.0, 1.0))
    s = float(np.clip((ab * t - da) / aa, -1.0, 1.0))
    return 0.5 * (pa + s * ea + pb + t * eb)


def box_sphere(a: Box, centre: np.ndarray, radius: float, before: Box | None,
               margin: float):
    """Return (normal, point, depth) of a box and a sphere within ``margin``, else None."""
    local = a.axes.T @ (centre - a.centre)
    half = a.half
    nearest = np.clip(local, -half, half)
    outside = local - nearest
    distance = float(np.linalg.norm(outside))
    if distance > 1e-9:
        depth = radius - distance
        if depth < -margin:
            return None
        normal = a.axes @ (outside / distance)
        on_box = a.centre + a.axes @ nearest
    else:                                    # the centre is inside the box
        k, sign = _entry_face(local, half, before, centre)
        depth = half[k] - sign * local[k] + radius
        normal = sign * a.axes[:, k]
        face = local.copy()
        face[k] = sign * half[k]
        on_box = a.centre + a.axes @ face
    return normal, 0.5 * (on_box + centre - normal * radius), float(depth)


def _entry_face(local: np.ndarray, half: np.ndarray, before: Box | None,
                centre: np.ndarray) -> tuple[int, float]:
    """Return the face (axis, sign) a sphere's centre inside the box is pushed out through.

    The face it came in through when ``before`` had it outside, else the nearest face.
    """
    if before is not None:
        was = before.axes.T @ (centre - before.centre)
        beyond = np.abs(was) - before.half
        if beyond.max() > 0.0:
            k = int(np.argmax(beyond))
            return k, 1.0 if was[k] >= 0.0 else -1.0
    k = int(np.argmin(half - np.abs(local)))
    return k, 1.0 if local[k] >= 0.0 else -1.0
