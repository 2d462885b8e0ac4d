"""Wrench allocation speed: the orbit scenario's sat (16 RCS nozzles, engine, wheel).

Times ``Allocator.solve`` (matrices built once, one bounded least-squares solve per
command) for random wrenches, half of them feasible (built from actuator settings that
over-command no nozzle) and half scaled beyond the actuators, for the default active-set
solver and for scipy's bvls and trf, plus one full ``allocate`` call per
command (geometry matrices rebuilt, as a caller without a cached ``Allocator`` pays).
Prints the time per command (p50, p99, max, ms) and the allocation residual statistics.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
from pylon_sim.game.vessel import mass_properties
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.mod import allocation

COMMANDS = 2000
FORCE_SCALE, TORQUE_SCALE = 250000.0, 100000.0


def wrenches(solver: allocation.Allocator, rng: np.random.Generator) -> list[np.ndarray]:
    """Return COMMANDS wrenches: even ones feasible, odd ones 1.5-4 times too large."""
    out = []
    for i in range(COMMANDS):
        x = rng.uniform(solver.lower, solver.upper)
        demand = solver.response @ x[:12]
        x[:12] /= max(1.0, float(np.max(demand / solver.max_thrust)))
        b = solver.matrix @ x
        out.append(b if i % 2 == 0 else b * rng.uniform(1.5, 4.0))
    return out


def ms(values: list[float]) -> dict:
    """Return p50, p99 and max of seconds, in ms."""
    a = np.array(values) * 1e3
    return {'p50': round(float(np.percentile(a, 50)), 4),
            'p99': round(float(np.percentile(a, 99)), 4), 'max': round(float(a.max()), 4)}


def run(nozzles, engines, wheels, requests, method: str) -> tuple[dict, dict]:
    """Time one method; return timing and residual statistics."""
    solver = allocation.Allocator(nozzles, engines, wheels, force_scale=FORCE_SCALE,
                                  torque_scale=TORQUE_SCALE, method=method)
    for b in requests[:50]:   # warm up
        solver.solve(b[:3], b[3:])
    times, feasible, infeasible = [], [], []
    for i, b in enumerate(requests):
        start = time.perf_counter()
        result = solver.solve(b[:3], b[3:])
        times.append(time.perf_counter() - start)
        ratio = allocation.ratios((b[:3], b[3:]), (result.force, result.torque),
                                  (result.force, result.torque), FORCE_SCALE,
                                  TORQUE_SCALE)['saturationRatio']
        (feasible if i % 2 == 0 else infeasible).append(ratio)
    fallbacks = 0
    if method == 'active-set':   # commands on which bounded_lstsq did not converge
        for b in requests:
            target = np.concatenate([solver.weights * b * solver.row_scale, solver.tail])
            fallbacks += not allocation.bounded_lstsq(solver.system, target,
                                                      *solver.bounds)[1]
    return ms(times), {
        'fallbacks': fallbacks,
        'feasible_max': float(np.max(feasible)),
        'feasible_median': float(np.median(feasible)),
        'infeasible_median': round(float(np.median(infeasible)), 4),
        'infeasible_saturated_share': round(float(np.mean(np.array(infeasible) > 0.1)), 3)}


def main() -> None:
    """Run the benchmark and print one JSON object."""
    if hasattr(os, 'sched_setaffinity'):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    spec = load_scenario('orbit').vessel('sat').spec
    com = mass_properties(spec, spec.initial_resources()).com
    nozzles, engines, wheels = allocation.geometry(spec, com)
    rng = np.random.default_rng(1)
    probe = allocation.Allocator(nozzles, engines, wheels, force_scale=FORCE_SCALE,
                                 torque_scale=TORQUE_SCALE)
    requests = wrenches(probe, rng)
    methods = {}
    for method in allocation.METHODS:
        timing, residual = run(nozzles, engines, wheels, requests, method)
        methods[method] = {'solve_ms': timing, 'saturation_ratio': residual}
    full = []
    for b in requests:
        start = time.perf_counter()
        allocation.allocate(nozzles, engines, wheels, b[:3], b[3:], force_scale=FORCE_SCALE,
                            torque_scale=TORQUE_SCALE)
        full.append(time.perf_counter() - start)
    start = time.perf_counter()
    for _ in range(200):
        allocation.geometry(spec, com)
    geometry_ms = (time.perf_counter() - start) / 200 * 1e3
    print(json.dumps({
        'benchmark': 'allocation', 'scenario': 'orbit', 'vessel': 'sat',
        'nozzles': len(nozzles), 'engines': len(engines), 'wheels': len(wheels),
        'commands': COMMANDS, 'system_shape': list(probe.system.shape),
        'default_method': 'active-set', 'methods': methods,
        'allocate_with_matrix_build_ms': ms(full),
        'geometry_ms': round(geometry_ms, 4),
    }))


if __name__ == '__main__':
    main()
