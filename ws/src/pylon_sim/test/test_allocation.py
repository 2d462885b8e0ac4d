"""Wrench allocation: geometry, exact feasible solves, optimal infeasible ones, ratios."""

import math
import subprocess
import sys

import numpy as np
from pylon_sim.game import rcs_geometry
from pylon_sim.game.vessel import mass_properties
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.mod import allocation as al
from pylon_sim.mod import box_lstsq
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
    # each nozzle where it sits: 0.1 m out from the block along its exhaust axis
    np.testing.assert_allclose([n.position for n in top],
                               np.array([[-0.9, 0, 0.7], [-1.1, 0, 0.7], [-1.0, 0.1, 0.7],
                                         [-1.0, -0.1, 0.7]]) - com, atol=1e-12)
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
        # the opposite channel fires the opposite nozzles: nearly the opposite wrench (the
        # nozzles sit 0.1 m out from their blocks, so their arms differ a little)
        opposite = a.matrix[:, column + 1]
        assert np.argmax(np.abs(opposite)) == axis
        assert opposite[axis] == pytest.approx(-torque[axis], rel=0.05)


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
    # X force only as a side effect of pitch/yaw nozzle pairs (whose arms differ by the
    # 0.2 m spread of each quad): well short of the 1000 N the x channel would give
    assert abs(r.force[0]) < 200.0
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



def test_ratios_of_a_huge_finite_request_are_finite():
    # found by the fuzz bench: a torque of -1.8e308 squared to inf, the saturation ratio
    # was inf / inf = NaN and the wrench status could not be built
    r = al.ratios(([0, 0, 0], [0, -1.7976931348623157e308, 10.0]), ([0, 0, 0], [0, -5.0, 10.0]),
                  ([0, 0, 0], [0, 0, 0]), 1000.0, 100.0)
    assert r['saturationRatio'] == pytest.approx(1.0) and r['saturated'] is True
    assert r['trackingErrorRatio'] == pytest.approx(1.0)

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
        x, converged = box_lstsq.bounded_lstsq(m, t, lo, hi)
        assert converged
        assert np.all(x >= lo) and np.all(x <= hi)
        cost = float(np.sum((m @ x - t) ** 2))
        assert cost <= _scipy_cost(m, t, lo, hi) * (1 + 1e-9) + 1e-12, trial


def test_bounded_lstsq_known_answers():
    m = np.eye(3)
    x, ok = box_lstsq.bounded_lstsq(m, np.array([2.0, -2.0, 0.25]), np.full(3, -1.0), np.ones(3))
    assert ok
    np.testing.assert_allclose(x, [1.0, -1.0, 0.25], atol=1e-15)
    # an unconstrained optimum inside the box is the plain least-squares solution
    m = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]])
    t = m @ np.array([0.3, -0.2])
    x, ok = box_lstsq.bounded_lstsq(m, t, np.full(2, -1.0), np.ones(2))
    assert ok
    np.testing.assert_allclose(x, [0.3, -0.2], atol=1e-12)


def test_bounded_lstsq_reports_no_convergence_when_stopped_early():
    rng = np.random.default_rng(5)
    m = np.vstack([rng.normal(size=(10, 8)), 1e-6 * np.eye(8)])
    t = rng.normal(size=18) * 10.0
    x, ok = box_lstsq.bounded_lstsq(m, t, np.zeros(8), np.ones(8), max_iter=0)
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


# -- where engines and nozzles sit -------------------------------------------------------------
def _part(pid, position, modules, rpy_deg=(0.0, 0.0, 0.0)):
    from pylon_protocol import rotations
    from pylon_sim.game.vessel import Module, Part, Shape
    return Part(name=f'part.{pid}', title=f'Part {pid}', persistent_id=pid, flight_id=pid,
                parent=0 if pid > 1 else None, position=tuple(position),
                rotation=tuple(rotations.from_rpy(*np.radians(rpy_deg))), dry_mass=100.0,
                shape=Shape('box', (0.5, 0.5, 0.5)),
                modules=tuple(Module(kind, 0, dict(settings)) for kind, settings in modules))


def _spec(*parts):
    from pylon_sim.game.vessel import VesselSpec
    return VesselSpec('0' * 32, 'geometry', (_part(1, (0.0, 0.0, 0.0), ()),) + parts)


GIMBAL_DEG = 5.0
CLUSTER = ((-3.0, 0.8, 0.0), (-3.0, -0.8, 0.0), (-3.0, 0.0, 0.8), (-3.0, 0.0, -0.8))


def _cluster(com, gimbal_deg=GIMBAL_DEG):
    spec = _spec(*(_part(10 + i, p, [('engine', {'max_thrust': 1e5,
                                                  'gimbal_range_deg': gimbal_deg})])
                   for i, p in enumerate(CLUSTER)))
    return al.geometry(spec, com)[1]


def _thrust_wrench(engines, thrust, inputs):
    force, torque = np.zeros(3), np.zeros(3)
    for engine in engines:
        f, t = al.engine_wrench(engine, thrust, inputs)
        force, torque = force + f, torque + t
    return force, torque


@pytest.mark.parametrize('roll', [1.0, 0.35, -0.6])
def test_a_gimballed_cluster_rolls_by_its_geometry(roll):
    # four engines 0.8 m off the roll axis, 2 m behind the centre of mass, 100 kN each:
    # each thrust turns by roll x 5 deg towards its tangent, sum r_perp x F_tangential
    com = np.array([-1.0, 0.0, 0.0])
    engines = _cluster(com)
    force, torque = _thrust_wrench(engines, 1e5, (0.0, 0.0, roll))
    angle = math.radians(GIMBAL_DEG) * roll
    np.testing.assert_allclose(torque, [4 * 0.8 * 1e5 * math.sin(angle), 0.0, 0.0],
                               rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(force[1:], [0.0, 0.0], atol=1e-9)     # no net side force
    assert force[0] == pytest.approx(4e5 * math.cos(angle), rel=1e-12)
    for engine, position in zip(engines, CLUSTER):    # each tilts tangentially
        tangent = np.cross([1.0, 0.0, 0.0], np.array(position) * [0, 1, 1] / 0.8)
        direction = al.gimbal_direction(engine, (0.0, 0.0, roll))
        assert direction @ tangent == pytest.approx(math.sin(angle), abs=1e-12)


def test_a_cluster_off_centre_rolls_about_the_centre_of_mass():
    # the centre of mass 0.2 m above the cluster's axis: the arms are measured from it
    com = np.array([-1.0, 0.0, 0.2])
    engines = _cluster(com)
    _, torque = _thrust_wrench(engines, 1e5, (0.0, 0.0, 1.0))
    s = math.sin(math.radians(GIMBAL_DEG))
    arms = [np.hypot(p[1] - com[1], p[2] - com[2]) for p in CLUSTER]
    expected = 0.0
    for engine, position, arm in zip(engines, CLUSTER, arms):
        radial = (np.array(position) - com) * [0, 1, 1] / arm
        force = 1e5 * al.gimbal_direction(engine, (0.0, 0.0, 1.0))
        assert force @ np.cross([1.0, 0, 0], radial) == pytest.approx(1e5 * s, rel=1e-12)
        expected += arm * 1e5 * s
    assert torque[0] == pytest.approx(expected, rel=1e-12)


def test_a_single_centred_engine_gives_no_roll():
    spec = _spec(_part(10, (-3.0, 0.0, 0.0), [('engine', {'max_thrust': 1e5,
                                                          'gimbal_range_deg': 5.0})]))
    [engine] = al.geometry(spec, (-1.0, 0.0, 0.0))[1]
    force, torque = al.engine_wrench(engine, 1e5, (0.0, 0.0, 1.0))
    np.testing.assert_allclose(force, [1e5, 0.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(torque, 0.0, atol=1e-9)
    # pitch and yaw tilt it as before: pitch about +Y, yaw about +Z by input x range
    s = 1e5 * math.sin(math.radians(5.0 * 0.5))
    force, torque = al.engine_wrench(engine, 1e5, (0.5, 0.0, 0.0))
    np.testing.assert_allclose(force, [1e5 * math.cos(math.radians(2.5)), 0.0, -s])
    np.testing.assert_allclose(torque, [0.0, -2.0 * s, 0.0], atol=1e-9)
    force, torque = al.engine_wrench(engine, 1e5, (0.0, 0.5, 0.0))
    np.testing.assert_allclose(torque, [0.0, 0.0, -2.0 * s], atol=1e-9)


def test_an_engine_near_the_axis_answers_roll_in_proportion_to_its_offset():
    # the centre of mass a few millimetres off the engine's line (propellant burning):
    # the roll tilt fades with the offset, so a roll input gives no yaw worth the name
    spec = _spec(_part(10, (-3.0, 0.0, 0.0), [('engine', {'max_thrust': 1e5,
                                                          'gimbal_range_deg': 5.0})]))
    for offset in (0.00126, 0.05, 0.1, 0.3):
        [engine] = al.geometry(spec, (-1.0, offset, 0.0))[1]
        force, torque = al.engine_wrench(engine, 1e5, (0.0, 0.0, 1.0))
        tilt = math.radians(5.0) * min(1.0, offset / al.ROLL_FULL_ARM)
        # the thrust turns about +Y (r_perp = -offset Y): its force gains -Z, a +X torque
        np.testing.assert_allclose(force, [1e5 * math.cos(tilt), 0.0, -1e5 * math.sin(tilt)],
                                   atol=1e-6)
        np.testing.assert_allclose(torque[0], offset * 1e5 * math.sin(tilt), rtol=1e-9)
    [engine] = al.geometry(spec, (-1.0, 0.00126, 0.0))[1]
    _, torque = al.engine_wrench(engine, 1e5, (0.0, 0.0, 1.0))
    _, pitched = al.engine_wrench(engine, 1e5, (1.0, 0.0, 0.0))
    assert abs(torque[2]) < 0.02 * abs(pitched[1])


def test_a_tilted_engine_mount_tilts_about_its_own_axes():
    # canted 20 deg about base_link +Z: its pitch axis is the part's +Y, not base_link's
    spec = _spec(_part(10, (-3.0, 0.0, 0.0), [('engine', {'max_thrust': 1e5,
                                                          'gimbal_range_deg': 5.0})],
                       rpy_deg=(0.0, 0.0, 20.0)))
    [engine] = al.geometry(spec, (0.0, 0.0, 0.0))[1]
    c, s = math.cos(math.radians(20.0)), math.sin(math.radians(20.0))
    np.testing.assert_allclose(engine.direction, [c, s, 0.0], atol=1e-12)
    np.testing.assert_allclose(engine.gimbal_axes, [[-s, c, 0.0], [0.0, 0.0, 1.0]],
                               atol=1e-12)
    turned = al.gimbal_direction(engine, (1.0, 0.0, 0.0))
    assert turned @ engine.gimbal_axes[0] == pytest.approx(0.0, abs=1e-12)   # about part Y
    # the base_link pitch demand projected on the mount's pitch axis: 5 deg x cos 20 deg
    angle = math.radians(5.0) * c
    assert math.acos(turned @ engine.direction) == pytest.approx(angle, rel=1e-9)
    np.testing.assert_allclose(turned, [c * math.cos(angle), s * math.cos(angle),
                                        -math.sin(angle)], atol=1e-12)
    # a mount rolled 90 deg about the thrust axis gives the same vessel-frame pitch tilt
    rolled = _spec(_part(10, (-3.0, 0.0, 0.0), [('engine', {'max_thrust': 1e5,
                                                            'gimbal_range_deg': 5.0})],
                         rpy_deg=(90.0, 0.0, 0.0)))
    [engine] = al.geometry(rolled, (0.0, 0.0, 0.0))[1]
    np.testing.assert_allclose(al.gimbal_direction(engine, (0.6, 0.0, 0.0)),
                               [math.cos(math.radians(3.0)), 0.0, -math.sin(math.radians(3.0))],
                               atol=1e-12)


def test_gimbal_tilt_is_clamped_to_the_range_per_mount_axis():
    [engine, *_] = _cluster(np.array([-1.0, 0.0, 0.0]))     # at +Y: roll tilts about -Y
    turned = al.gimbal_direction(engine, (1.0, 0.0, 1.0))    # pitch + roll cancel about Y
    np.testing.assert_allclose(turned, [1.0, 0.0, 0.0], atol=1e-12)
    turned = al.gimbal_direction(engine, (-1.0, 0.0, 1.0))   # 2 x range asked: range given
    assert math.acos(turned[0]) == pytest.approx(math.radians(GIMBAL_DEG), rel=1e-12)
    [fixed] = al.geometry(_spec(_part(10, (-3.0, 0.8, 0.0), [('engine', {'max_thrust': 1e5})])),
                          (0.0, 0.0, 0.0))[1]
    np.testing.assert_allclose(al.gimbal_direction(fixed, (1.0, 1.0, 1.0)), [1.0, 0.0, 0.0])


# RCS quads: the sat's top block (part axes = base_link) and a block rolled by -90 deg
QUAD = {'thruster_power': 1000.0}


def _quad_torque(nozzles, thrust=1000.0):
    return sum(np.cross(n.position, thrust * n.direction) for n in nozzles)


def test_rcs_torque_comes_from_each_nozzle_position():
    spec = _spec(_part(20, (-1.0, 0.0, 0.7), [('rcs', QUAD)]),
                 _part(21, (-1.0, 0.7, 0.0), [('rcs', QUAD)], rpy_deg=(-90.0, 0.0, 0.0)))
    com = np.array([-0.5, 0.0, 0.0])
    nozzles, _, _ = al.geometry(spec, com)
    top, side = nozzles[:4], nozzles[4:]
    # the default layout: the RV-105 cross, 0.1 m out along each exhaust (part +X -X +Y -Y)
    np.testing.assert_allclose([n.position for n in top],
                               [[-0.4, 0, 0.7], [-0.6, 0, 0.7], [-0.5, 0.1, 0.7],
                                [-0.5, -0.1, 0.7]], atol=1e-12)
    np.testing.assert_allclose([n.direction for n in top],
                               [[-1, 0, 0], [1, 0, 0], [0, -1, 0], [0, 1, 0]], atol=1e-12)
    # rolled -90 deg about X: part +Y is base_link -Z, so the +Y nozzle sits 0.1 m below
    np.testing.assert_allclose(side[2].position, [-0.5, 0.7, -0.1], atol=1e-12)
    np.testing.assert_allclose(side[2].direction, [0.0, 0.0, 1.0], atol=1e-12)
    # the +X nozzle of the top block alone (force -X at (-0.4, 0, 0.7) from the com):
    # torque r x F = (-0.4, 0, 0.7) x (-1000, 0, 0) = (0, -700, 0)
    np.testing.assert_allclose(_quad_torque(top[:1]), [0.0, -700.0, 0.0], atol=1e-9)
    # the top block's +Y nozzle: (-0.5, 0.1, 0.7) x (0, -1000, 0) = (700, 0, 500)
    np.testing.assert_allclose(_quad_torque(top[2:3]), [700.0, 0.0, 500.0], atol=1e-9)
    # the side block's part -X nozzle sits at (-0.6, 0.7, 0) from the origin, force +X:
    # (-0.1, 0.7, 0) x (1000, 0, 0) = (0, 0, -700)
    np.testing.assert_allclose(_quad_torque(side[1:2]), [0.0, 0.0, -700.0], atol=1e-9)
    # the allocation's columns use the same arms: +x fires the two part -X nozzles (force
    # +X), at (-0.6, 0, 0.7) and (-0.6, 0.7, 0): torques (0, 700, 0) and (0, 0, -700)
    a = al.Allocator(nozzles, [], [], force_scale=FS, torque_scale=TS)
    np.testing.assert_allclose(a.matrix[:, 6], [2000, 0, 0, 0, 700, -700], atol=1e-9)


def test_rcs_moment_arms_follow_the_centre_of_mass():
    spec = _spec(_part(20, (-1.0, 0.0, 0.7), [('rcs', QUAD)]))
    for com in ((-0.5, 0.0, 0.0), (-1.5, 0.0, 0.3), (-1.0, 0.2, 0.0)):
        nozzles, _, _ = al.geometry(spec, com)
        for nozzle, offset in zip(nozzles, ((0.1, 0, 0), (-0.1, 0, 0), (0, 0.1, 0),
                                            (0, -0.1, 0))):
            arm = np.array([-1.0, 0.0, 0.7]) + offset - com
            np.testing.assert_allclose(nozzle.position, arm, atol=1e-12)
        # the +X nozzle: torque (arm) x (-1000, 0, 0) = (0, -1000 arm_z, 1000 arm_y)
        arm = np.array([-0.9, 0.0, 0.7]) - com
        np.testing.assert_allclose(_quad_torque(nozzles[:1]),
                                   [0.0, -1000 * arm[2], 1000 * arm[1]], atol=1e-9)


def test_listed_nozzles_and_bad_layouts():
    listed = {'thruster_power': 500.0, 'nozzles': [
        {'position': [0.0, 0.05, 0.02], 'direction': [0.0, 2.0, 0.0]},
        {'position': [0.0, 0.0, 0.3], 'direction': [0, 0, 1]}]}
    spec = _spec(_part(20, (1.0, 0.0, 0.0), [('rcs', listed)]))
    nozzles, _, _ = al.geometry(spec, (0.0, 0.0, 0.0))
    np.testing.assert_allclose([n.position for n in nozzles], [[1, 0.05, 0.02], [1, 0, 0.3]])
    np.testing.assert_allclose([n.direction for n in nozzles], [[0, -1, 0], [0, 0, -1]])
    assert len(rcs_geometry.rcs_layout({'thrust_directions': [[0, 0, 1]], 'nozzle_arm': 0.2})) == 1
    np.testing.assert_allclose(rcs_geometry.rcs_layout({'thrust_directions': [[0, 0, 3]],
                                                        'nozzle_arm': 0.2})[0][0],
                               [0, 0, 0.2])
    for bad, reason in (({'nozzles': []}, 'non-empty'),
                        ({'nozzles': [{'position': [0, 0], 'direction': [1, 0, 0]}]},
                         'position'),
                        ({'nozzles': [{'position': [0, 0, 0], 'direction': [0, 0, 0]}]},
                         'zero'),
                        ({'nozzles': [{'position': [0, 0, 0], 'direction': ['x', 0, 0]}]},
                         'direction'),
                        ({'thrust_directions': 'up'}, 'thrust_directions'),
                        ({'thrust_directions': []}, 'non-empty list of 3-vectors'),
                        ({'nozzle_arm': -0.1}, 'nozzle_arm'),
                        ({'nozzle_arm': 'far'}, 'nozzle_arm')):
        with pytest.raises(ValueError, match=reason):
            rcs_geometry.rcs_layout(bad)


def test_the_allocator_meets_a_feasible_torque_with_nozzles_where_they_sit(sat):
    nozzles, _, _ = al.geometry(*sat)
    wheelless = al.Allocator(nozzles, [], [], force_scale=FS, torque_scale=TS)
    # a torque the RCS alone can give: half of +roll and a quarter of -yaw, no force asked
    target = 0.5 * wheelless.matrix[:, 4] + 0.25 * wheelless.matrix[:, 3]
    r = wheelless.solve(target[:3], target[3:])
    np.testing.assert_allclose(np.concatenate([r.force, r.torque]), target, atol=1e-6)
    # the wrench is the one of the nozzle thrusts at their own positions
    force = sum(t * n.direction for t, n in zip(r.nozzle_thrust, nozzles))
    torque = sum(np.cross(n.position, t * n.direction) for t, n in zip(r.nozzle_thrust,
                                                                       nozzles))
    np.testing.assert_allclose(force, r.force, atol=1e-9)
    np.testing.assert_allclose(torque, r.torque, atol=1e-9)
    # a pure roll torque the nozzles can make
    pure = wheelless.solve([0.0, 0.0, 0.0], [150.0, 0.0, 0.0])
    np.testing.assert_allclose(pure.torque, [150.0, 0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(pure.force, 0.0, atol=1e-6)


def test_a_scenario_with_a_bad_nozzle_layout_does_not_load(tmp_path):
    from pylon_sim.loop.scenario import ScenarioError
    from pylon_testing.scenarios import write_scenario
    parts = [{'name': 'probe', 'mass': 100, 'shape': {'sphere': 0.5},
              'modules': [{'kind': 'rcs', 'index': 0, 'thruster_power': 1000,
                           'nozzles': [{'position': [0, 0, 0], 'direction': [0, 0, 0]}]}]}]
    path = write_scenario(tmp_path, 'orbit', changes={'sat': {'parts': parts}})
    with pytest.raises(ScenarioError, match=r'modules\[0\]\.nozzles: a nozzle direction is zero'):
        load_scenario(path)


def test_the_orbit_rcs_blocks_list_the_default_rv105_layout():
    """The nozzles orbit.yaml writes out are the default layout (its comment says so)."""
    spec = load_scenario('orbit').vessel('sat').spec
    modules = [m for part in spec.parts for m in part.modules_of('rcs')]
    assert len(modules) == 4
    default = rcs_geometry.rcs_layout({})
    assert [d.tolist() for _, d in default] == [list(e) for e in rcs_geometry.RV105_EXHAUSTS]
    for module in modules:
        listed = rcs_geometry.rcs_layout(module.settings)
        assert len(listed) == len(default) == 4
        for (position, direction), (want_p, want_d) in zip(listed, default):
            np.testing.assert_allclose(direction, want_d, atol=1e-15)
            np.testing.assert_allclose(position, rcs_geometry.NOZZLE_ARM * want_d, atol=1e-15)
            np.testing.assert_allclose(position, want_p, atol=1e-15)
    # with use_z_axis the listed positions stay, the default is one nozzle at the origin
    z_listed = rcs_geometry.rcs_layout({**modules[0].settings, 'use_z_axis': True})
    assert [p.tolist() for p, _ in z_listed] == [p.tolist() for p, _ in default]
    [(origin, _)] = rcs_geometry.rcs_layout({'use_z_axis': True})
    assert origin.tolist() == [0.0, 0.0, 0.0]


def test_scipy_optimize_is_loaded_only_for_the_fallback():
    # the active-set solver is the default: its fallback's import waits until it is needed
    code = ('import sys, pylon_sim.mod.allocation, pylon_sim.loop.runtime; '
            'print("scipy.optimize" in sys.modules)')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            check=True, timeout=60)
    assert result.stdout.strip() == 'False'
