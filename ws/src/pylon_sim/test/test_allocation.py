"""Wrench allocation: geometry, exact feasible solves, optimal infeasible ones, ratios."""

import numpy as np
from pylon_sim import allocation as al
from pylon_sim.scenario import load_scenario
from pylon_sim.vessel import mass_properties
import pytest
from scipy.optimize import minimize

FS, TS = 250000.0, 100000.0
RCS_TOP = 'rcs_1100005_0'


@pytest.fixture(scope='module')
def sat():
    spec = load_scenario('orbit').vessel('sat').spec
    return spec, mass_properties(spec, spec.initial_resources()).com


def test_geometry_of_the_sat(sat):
    spec, com = sat
    nozzles, engines, wheels = al.geometry(spec, com)
    assert len(nozzles) == 16 and len(engines) == 1 and len(wheels) == 1
    for n in nozzles:
        assert np.isclose(np.linalg.norm(n.direction), 1.0)
        assert n.max_thrust == 1000.0 and n.enables == (True,) * 6
    top = [n for n in nozzles if n.module == RCS_TOP]
    assert len(top) == 4
    np.testing.assert_allclose(top[0].position, np.array([-1.0, 0.0, 0.7]) - com)
    # exhaust along part +X -> force on the vessel along -X (part axes = base_link here)
    np.testing.assert_allclose(top[0].direction, [-1.0, 0.0, 0.0], atol=1e-12)
    # the block rolled by -90 deg: part +Y exhaust -> force along base_link +Z... rotated
    side = [n for n in nozzles if n.module == 'rcs_1100006_0']
    np.testing.assert_allclose(side[2].direction, [0.0, 0.0, 1.0], atol=1e-12)
    assert engines[0].id == 'engine_1100004_0' and engines[0].max_thrust == 60000.0
    np.testing.assert_allclose(engines[0].direction, [1.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(engines[0].position, np.array([-1.9, 0, 0]) - com)
    assert wheels[0].max_torque == 5000.0


def test_channel_columns_follow_the_axis_mapping(sat):
    nozzles, engines, wheels = al.geometry(*sat)
    a = al.Allocator(nozzles, engines, wheels, force_scale=FS, torque_scale=TS)
    # +x: the four +X nozzles at full thrust; -z: the two -Z nozzles
    np.testing.assert_allclose(a.matrix[:3, 6], [4000.0, 0, 0], atol=1e-9)
    np.testing.assert_allclose(a.matrix[:3, 11], [0, 0, -2000.0], atol=1e-9)
    # +pitch torque about +Y, +yaw about +Z, +roll about +X (dominant component, positive)
    for column, axis in ((0, 4), (2, 5), (4, 3)):
        torque = a.matrix[:, column]
        assert torque[axis] > 1000.0
        assert np.argmax(np.abs(torque)) == axis
        np.testing.assert_allclose(a.matrix[:, column + 1], -torque, atol=1e-9)


def test_use_z_axis_and_exhaust_sign(sat):
    spec, com = sat
    nozzles, _, _ = al.geometry(spec, com, {RCS_TOP: {'use_z_axis': True}})
    top = [n for n in nozzles if n.module == RCS_TOP]
    assert len(top) == 4
    for n in top:  # exhaust along part +Z (base_link +Z for this block) -> force down
        np.testing.assert_allclose(n.direction, [0.0, 0.0, -1.0], atol=1e-12)


def _allocator(sat, **kw):
    nozzles, engines, wheels = al.geometry(*sat, kw.pop('settings', None))
    return al.Allocator(nozzles, engines, wheels, force_scale=FS, torque_scale=TS, **kw)


def _feasible(a, rng):
    """Return a wrench the actuators produce without over-commanding any nozzle."""
    x = rng.uniform(a.lower, a.upper)
    x[12:13] *= rng.uniform() < 0.5   # half of them without the engine
    demand = a.response @ x[:12]
    x[:12] /= max(1.0, float(np.max(demand / a.max_thrust)))
    return a.matrix @ x


def _cost(a, b, wrench):
    return al.weighted_norm(b[:3] - wrench[:3], b[3:] - wrench[3:], FS, TS) ** 2


def test_feasible_wrenches_are_met_exactly(sat):
    a = _allocator(sat)
    rng = np.random.default_rng(7)
    for _ in range(300):
        b = _feasible(a, rng)
        r = a.solve(b[:3], b[3:])
        rel = al.weighted_norm(b[:3] - r.force, b[3:] - r.torque, FS, TS) \
            / al.weighted_norm(b[:3], b[3:], FS, TS)
        assert rel < 1e-6
        assert np.all(r.channels >= 0) and np.all(r.channels <= 1)
        assert np.all(r.nozzle_thrust >= 0) and np.all(r.nozzle_thrust <= 1000.0 + 1e-9)
        assert np.all(np.abs(r.wheel_torque) <= 5000.0 + 1e-9)
        # the reported wrench is the one of the commanded thrusts
        f, t = al.wrench_of(a.nozzles, r.nozzle_thrust, a.engines,
                            r.engine_throttle * 60000.0)
        np.testing.assert_allclose(f, r.force, atol=1e-6)
        np.testing.assert_allclose(t + r.wheel_torque, r.torque, atol=1e-6)
        np.testing.assert_allclose(
            r.nozzle_thrust, np.minimum(a.response @ r.channels, 1000.0), atol=1e-9)


def _reference_cost(a, b):
    """Return the optimum of the constrained problem solved independently (SLSQP)."""
    w = np.repeat([1 / FS, 1 / TS], 3)
    unit = np.maximum(np.abs(a.lower), np.abs(a.upper))
    m = w[:, None] * a.matrix * unit
    wb = w * b
    frac = a.response / a.max_thrust[:, None]
    best = np.inf
    for start in (np.zeros(16), np.full(16, 0.3)):
        res = minimize(lambda x: float(np.sum((m @ x - wb) ** 2)), start,
                       jac=lambda x: 2 * m.T @ (m @ x - wb), method='SLSQP',
                       bounds=list(zip(a.lower / unit, a.upper / unit)),
                       constraints=[{'type': 'ineq', 'fun': lambda x: 1 - frac @ x[:12],
                                     'jac': lambda x: np.hstack([-frac, np.zeros((16, 4))])}],
                       options={'ftol': 1e-16, 'maxiter': 1000})
        if np.all(frac @ res.x[:12] <= 1 + 1e-9):   # a feasible point: an upper bound
            best = min(best, res.fun)
    return best


def test_infeasible_wrenches_reach_the_least_squares_optimum(sat):
    a = _allocator(sat)
    rng = np.random.default_rng(11)
    infeasible = 0
    for _ in range(40):
        b = _feasible(a, rng) * rng.uniform(1.5, 4.0) \
            + rng.normal(size=6) * np.repeat([3e3, 0.0], 3)
        r = a.solve(b[:3], b[3:])
        cost = _cost(a, b, np.concatenate([r.force, r.torque]))
        reference = _reference_cost(a, b)
        infeasible += reference > 1e-9 * al.weighted_norm(b[:3], b[3:], FS, TS) ** 2
        assert cost <= reference * (1 + 1e-4) + 1e-14
    assert infeasible >= 30


def test_zero_request_gives_exactly_zero(sat):
    r = _allocator(sat).solve(np.zeros(3), np.zeros(3))
    for value in (r.channels, r.nozzle_thrust, r.engine_throttle, r.wheel_torque, r.force,
                  r.torque):
        assert not np.any(value)


def test_engines_are_not_used_when_disabled(sat):
    nozzles, engines, wheels = al.geometry(*sat)
    b = np.array([30000.0, 0, 0, 0, 0, 0])
    used = al.allocate(nozzles, engines, wheels, b[:3], b[3:], force_scale=FS,
                       torque_scale=TS)
    assert used.engine_throttle[0] > 0.4
    r = al.allocate(nozzles, engines, wheels, b[:3], b[3:], force_scale=FS, torque_scale=TS,
                    use_engines=False)
    assert r.engine_throttle[0] == 0.0
    assert r.force[0] == pytest.approx(4000.0, rel=1e-6)   # all four +X nozzles


def test_disabled_module_contributes_nothing(sat):
    a = _allocator(sat, settings={RCS_TOP: {'enabled': False}})
    mine = np.array([n.module == RCS_TOP for n in a.nozzles])
    rng = np.random.default_rng(3)
    for _ in range(50):
        b = rng.normal(size=6) * np.repeat([2000.0, 1000.0], 3)
        r = a.solve(b[:3], b[3:])
        assert not np.any(r.nozzle_thrust[mine])
        assert np.any(r.nozzle_thrust[~mine])
    limited = _allocator(sat, settings={RCS_TOP: {'thrust_limit': 250.0}})
    assert {n.max_thrust for n in limited.nozzles if n.module == RCS_TOP} == {250.0}


def test_axis_enables_are_respected(sat):
    a = _allocator(sat, settings={m: {'enable_x': False, 'enable_roll': False}
                                  for m in ('rcs_1100005_0', 'rcs_1100006_0',
                                            'rcs_1100007_0', 'rcs_1100008_0')},
                   use_engines=False)
    assert not np.any(a.matrix[:, 4:8])
    r = a.solve([1000.0, 0, 0], [2000.0, 0, 0])
    assert not np.any(r.channels[4:8])
    assert abs(r.force[0]) < 10.0          # only the pitch/yaw nozzles' small X component
    assert r.torque[0] == pytest.approx(2000.0, rel=1e-6)   # the wheel rolls


def test_wheels_give_torque_only(sat):
    a = _allocator(sat)
    r = a.solve(np.zeros(3), [100.0, -200.0, 300.0])
    np.testing.assert_allclose(r.torque, [100.0, -200.0, 300.0], atol=1e-6)
    np.testing.assert_allclose(r.force, 0.0, atol=1e-3)
    # wheels alone cannot push
    nozzles, engines, wheels = al.geometry(*sat)
    only = al.allocate([], [], wheels, [100.0, 0, 0], [0, 0, 9000.0], force_scale=FS,
                       torque_scale=TS)
    assert not np.any(only.force)
    np.testing.assert_allclose(only.wheel_torque, [0, 0, 5000.0])
    np.testing.assert_allclose(only.torque, [0, 0, 5000.0])


def test_ratios_of_a_known_case():
    r = al.ratios(([1000.0, 0, 0], [0, 0, 0]), ([800.0, 0, 0], [0, 0, 0]),
                  ([1000.0, 0, 0], [0, 0, 100.0]), 1000.0, 100.0)
    np.testing.assert_allclose(r['allocationResidual'][0], [200.0, 0, 0])
    np.testing.assert_allclose(r['trackingResidual'][1], [0, 0, -100.0])
    assert r['saturationRatio'] == pytest.approx(0.2)
    assert r['trackingErrorRatio'] == pytest.approx(1.0)
    assert r['saturated'] is True
    small = al.ratios(([1000.0, 0, 0], [0, 0, 0]), ([950.0, 0, 0], [0, 0, 0]),
                      ([0.0, 0, 0], [0, 0, 0]), 1000.0, 100.0)
    assert small['saturationRatio'] == pytest.approx(0.05) and small['saturated'] is False
    zero = al.ratios((np.zeros(3), np.zeros(3)), ([5.0, 0, 0], np.zeros(3)),
                     (np.zeros(3), np.zeros(3)), 1000.0, 100.0)
    assert zero['saturationRatio'] == 0.0 and zero['trackingErrorRatio'] == 0.0
    assert al.weighted_norm([3.0, 0, 0], [0, 4.0, 0], 1.0, 1.0) == pytest.approx(5.0)


def test_a_request_on_which_bvls_divides_by_zero_still_allocates(sat):
    b = np.array([106265.18164247206, -2022.6370311719438, 1046.0638226618,
                  -5416.435358074844, 2146.0400382797498, 17340.56900506145])
    a = _allocator(sat)
    r = a.solve(b[:3], b[3:])
    for value in (r.channels, r.nozzle_thrust, r.engine_throttle, r.wheel_torque, r.force,
                  r.torque):
        assert np.all(np.isfinite(value))
    assert _cost(a, b, np.concatenate([r.force, r.torque])) <= \
        _reference_cost(a, b) * (1 + 1e-4) + 1e-14


def _scipy_cost(m, t, lo, hi):
    from scipy.optimize import lsq_linear
    best = np.inf
    for method in ('bvls', 'trf'):
        with np.errstate(divide='ignore', invalid='ignore'):
            x = lsq_linear(m, t, bounds=(lo, hi), method=method, lsq_solver='exact',
                           tol=1e-14).x
        if np.all(np.isfinite(x)):
            best = min(best, float(np.sum((m @ x - t) ** 2)))
    return best


def test_bounded_lstsq_matches_scipy_on_random_problems():
    rng = np.random.default_rng(3)
    for trial in range(200):
        rows, cols = rng.integers(3, 30), rng.integers(1, 20)
        m = rng.normal(size=(rows + cols, cols))
        m[rows:] = np.eye(cols) * 1e-6             # full column rank, as the solver needs
        t = rng.normal(size=rows + cols) * 3.0
        lo = rng.uniform(-1.0, 0.5, cols)
        hi = lo + rng.uniform(0.0, 1.5, cols)      # some unknowns fixed (lo == hi)
        x, converged = al.bounded_lstsq(m, t, lo, hi)
        assert converged
        assert np.all(x >= lo) and np.all(x <= hi)
        cost = float(np.sum((m @ x - t) ** 2))
        assert cost <= _scipy_cost(m, t, lo, hi) * (1 + 1e-9) + 1e-12, trial


def test_bounded_lstsq_known_answers():
    m = np.eye(3)
    x, ok = al.bounded_lstsq(m, np.array([2.0, -2.0, 0.25]), np.full(3, -1.0), np.ones(3))
    assert ok
    np.testing.assert_allclose(x, [1.0, -1.0, 0.25], atol=1e-15)
    # an unconstrained optimum inside the box is the plain least-squares solution
    m = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]])
    t = m @ np.array([0.3, -0.2])
    x, ok = al.bounded_lstsq(m, t, np.full(2, -1.0), np.ones(2))
    assert ok
    np.testing.assert_allclose(x, [0.3, -0.2], atol=1e-12)


def test_bounded_lstsq_reports_no_convergence_when_stopped_early():
    rng = np.random.default_rng(5)
    m = np.vstack([rng.normal(size=(10, 8)), 1e-6 * np.eye(8)])
    t = rng.normal(size=18) * 10.0
    x, ok = al.bounded_lstsq(m, t, np.zeros(8), np.ones(8), max_iter=0)
    assert not ok
    assert np.all(x >= 0.0) and np.all(x <= 1.0)


@pytest.mark.parametrize('method', ['bvls', 'trf'])
def test_scipy_methods_give_the_same_allocation(sat, method):
    ours, theirs = _allocator(sat), _allocator(sat, method=method)
    rng = np.random.default_rng(13)
    for _ in range(30):
        b = _feasible(ours, rng) * rng.uniform(0.5, 3.0)
        mine = ours.solve(b[:3], b[3:])
        ref = theirs.solve(b[:3], b[3:])
        assert _cost(ours, b, np.concatenate([mine.force, mine.torque])) <= \
            _cost(ours, b, np.concatenate([ref.force, ref.torque])) * (1 + 1e-4) + 1e-12


def test_unknown_method_is_refused(sat):
    with pytest.raises(ValueError, match='method'):
        _allocator(sat, method='simplex')
