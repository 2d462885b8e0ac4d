"""Linear least squares with a lower and an upper bound on each unknown, by an active set.

``bounded_lstsq`` is the allocation's solver (``allocation.Allocator``): about twice as fast
as ``scipy.optimize.lsq_linear``'s bvls on its systems and at least as close to the
optimum. Pure numerics: no simulator type appears here.
"""

from __future__ import annotations

import functools

import numpy as np

KKT_TOLERANCE = 1.0e-11  # bounded_lstsq: gradient tolerance, relative to its scale
ALPHA_TIE = 1.0e-12      # bounded_lstsq: a step this short is no step
TIE_SLACK = 1.0e4        # bounded_lstsq: see its docstring


def bounded_lstsq(matrix: np.ndarray, target: np.ndarray, lower: np.ndarray,
                  upper: np.ndarray, *, tol: float = KKT_TOLERANCE,
                  max_iter: int | None = None) -> tuple[np.ndarray, bool]:
    """
    Minimise ``|| matrix x - target ||`` over ``lower <= x <= upper`` by an active set.

    Lawson and Hanson's NNLS extended to two bounds. Starts at ``clip(0, lower, upper)``
    with the unknowns strictly inside their bounds free. Then, repeatedly: the held unknown
    whose gradient most wants to leave its bound is freed; the least-squares point of the
    free unknowns (the held ones fixed) is approached along the segment from the current
    point until an unknown meets a bound and is held there, until the point is reached.
    An unknown freed only to leave its bound again at once (a numerical tie) is set aside
    until the next real step, and after ``2 n`` frees the lowest-index candidate is taken
    instead of the largest (Bland's rule): the method cannot cycle.

    Returns ``(x, converged)``; ``converged`` is false when the Karush-Kuhn-Tucker
    conditions do not hold to ``tol`` (relative to the gradient's scale) within
    ``max_iter`` frees (default ``4 n + 8``): the caller then solves another way.
    Unknowns set aside still wanting to leave their bound by at most ``TIE_SLACK`` times
    the tolerance at the end count as converged. ``matrix`` must have full column rank
    (add regularisation rows).
    """
    n = matrix.shape[1]
    max_iter = 4 * n + 8 if max_iter is None else max_iter
    x = np.clip(np.zeros(n), lower, upper)
    free = (x > lower) & (x < upper)
    side = np.where(free, 0.0, np.where(x <= lower, 1.0, -1.0))  # +1 at lower, -1 at upper
    set_aside = np.zeros(n, dtype=bool)
    limit = tol * (float(np.abs(matrix.T @ target).max(initial=0.0))
                   + float(np.abs(matrix).max(initial=0.0)))
    freed = -1
    for iteration in range(max_iter + 1):
        if free.any():
            _descend(matrix, target, lower, upper, x, free, side, set_aside, freed)
        want = side * (matrix.T @ (target - matrix @ x))  # > 0: leaving the bound helps
        if float(want.max(initial=0.0)) <= limit:
            return x, True
        worst = float(want.max())
        want[set_aside] = 0.0
        candidates = np.flatnonzero(want > limit)
        if not candidates.size:     # only ties set aside remain: numerical noise if small
            return x, worst <= TIE_SLACK * limit
        if iteration == max_iter:
            return x, False
        freed = int(candidates[0] if iteration >= 2 * n else np.argmax(want))
        free[freed], side[freed] = True, 0.0
    return x, False


def _descend(matrix: np.ndarray, target: np.ndarray, lower: np.ndarray, upper: np.ndarray,
             x: np.ndarray, free: np.ndarray, side: np.ndarray, set_aside: np.ndarray,
             freed: int) -> None:
    """Move ``x`` to the least-squares point of the free unknowns, holding those it meets."""
    first = True
    while free.any():
        cols = np.flatnonzero(free)
        z = _lstsq(matrix[:, cols], target - matrix @ np.where(free, 0.0, x))
        lo, up = lower[cols], upper[cols]
        below, above = z < lo, z > up
        out = below | above
        if not out.any():
            x[cols] = z
            set_aside[:] = False
            return
        step = z - x[cols]
        with np.errstate(divide='ignore', invalid='ignore'):
            reach = np.where(below, (lo - x[cols]) / step,
                             np.where(above, (up - x[cols]) / step, np.inf))
        alpha = min(1.0, max(0.0, float(reach.min())))
        if first and alpha <= ALPHA_TIE and freed >= 0 and out[cols == freed].any():
            free[freed] = False     # freed in vain: x is still the optimum without it
            side[freed] = 1.0 if x[freed] <= lower[freed] else -1.0
            set_aside[freed] = True
            return
        first = False
        x[cols] += alpha * step
        hit = out & (reach <= alpha + ALPHA_TIE)
        idx = cols[hit]
        x[idx] = np.where(below[hit], lower[idx], upper[idx])
        side[idx] = np.where(below[hit], 1.0, -1.0)
        free[idx] = False
        if alpha > ALPHA_TIE:
            set_aside[:] = False


@functools.cache
def _gels():
    """Return LAPACK's ``dgels``, importing ``scipy.linalg`` on the first allocation.

    The import costs a simulator's start about 0.35 s of CPU (a third of it), and a rover
    or a kart never allocates a wrench.
    """
    from scipy.linalg import lapack
    return lapack.get_lapack_funcs('gels', dtype=np.float64)


def _lstsq(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least squares of a full-column-rank system by Householder QR (LAPACK gels)."""
    _, solution, info = _gels()(a, b)
    if info != 0:
        raise np.linalg.LinAlgError(f'gels failed (info {info})')
    return solution[:a.shape[1]]
