"""A dependency-free line chart written as PNG (numpy raster, zlib, the PNG chunk format).

For machines without matplotlib (the PyPI ROS environment): one panel, white background,
grey grid lines at "nice" steps on both axes, one coloured polyline per series, and no
text (the evaluator prints the numbers and writes them as CSV next to the image). Colours
in series order: red, green, blue, black, orange, purple.
"""

from __future__ import annotations

from pathlib import Path
import struct
import zlib

import numpy as np

COLOURS = ((220, 40, 40), (40, 160, 40), (40, 80, 220), (0, 0, 0), (240, 150, 0),
           (150, 60, 200))
GRID = (225, 225, 225)
AXES = (120, 120, 120)
MARGIN = 20


def encode_png(rgb: np.ndarray) -> bytes:
    """Return the PNG bytes of an (H, W, 3) uint8 image."""
    height, width, _ = rgb.shape
    raw = b''.join(b'\x00' + rgb[row].tobytes() for row in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack('>I', len(data)) + kind + data + struct.pack(
            '>I', zlib.crc32(kind + data) & 0xFFFFFFFF)
    header = struct.pack('>IIBBBBB', width, height, 8, 2, 0, 0, 0)
    return b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', header) + \
        chunk(b'IDAT', zlib.compress(raw, 6)) + chunk(b'IEND', b'')


def _nice_step(span: float) -> float:
    raw = span / 6.0 if span > 0 else 1.0
    magnitude = 10 ** np.floor(np.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * magnitude:
            return float(factor * magnitude)
    return float(10 * magnitude)


def _line(img: np.ndarray, x0: float, y0: float, x1: float, y1: float, colour) -> None:
    steps = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
    xs = np.rint(np.linspace(x0, x1, steps + 1)).astype(int)
    ys = np.rint(np.linspace(y0, y1, steps + 1)).astype(int)
    keep = (xs >= 0) & (xs < img.shape[1]) & (ys >= 0) & (ys < img.shape[0])
    img[ys[keep], xs[keep]] = colour


def line_chart(times, series: list, width: int = 800, height: int = 400) -> np.ndarray:
    """Return the (H, W, 3) image of the series (each (N,)) over ``times`` (N,)."""
    t = np.asarray(times, dtype=float)
    img = np.full((height, width, 3), 255, dtype=np.uint8)
    values = [np.asarray(s, dtype=float) for s in series]
    finite = np.concatenate([v[np.isfinite(v)] for v in values]) if values else np.zeros(0)
    if t.size < 2 or finite.size == 0:
        return img
    lo, hi = float(min(finite.min(), 0.0)), float(finite.max())
    hi = hi if hi > lo else lo + 1.0
    t0, t1 = float(t.min()), float(t.max())
    t1 = t1 if t1 > t0 else t0 + 1.0
    w, h = width - 2 * MARGIN, height - 2 * MARGIN

    def px(tt, vv):
        return MARGIN + (tt - t0) / (t1 - t0) * w, MARGIN + (hi - vv) / (hi - lo) * h
    step = _nice_step(hi - lo)
    for v in np.arange(np.ceil(lo / step) * step, hi + 1e-12, step):
        y = px(t0, v)[1]
        _line(img, MARGIN, y, MARGIN + w, y, AXES if abs(v) < 1e-12 else GRID)
    tstep = _nice_step(t1 - t0)
    for tt in np.arange(np.ceil(t0 / tstep) * tstep, t1 + 1e-12, tstep):
        x = px(tt, lo)[0]
        _line(img, x, MARGIN, x, MARGIN + h, GRID)
    _line(img, MARGIN, MARGIN, MARGIN, MARGIN + h, AXES)
    for k, v in enumerate(values):
        colour = COLOURS[k % len(COLOURS)]
        xs, ys = px(t, v)
        for i in range(len(t) - 1):
            if np.isfinite(ys[i]) and np.isfinite(ys[i + 1]):
                _line(img, xs[i], ys[i], xs[i + 1], ys[i + 1], colour)
    return img


def write_line_chart(path: str | Path, times, series: list, **size) -> None:
    """Write the line chart of ``series`` over ``times`` to ``path`` as PNG."""
    Path(path).write_bytes(encode_png(line_chart(times, series, **size)))
