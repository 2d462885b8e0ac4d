"""The suite's tiers, groups and order (pylon_testing.schedule, the plugin's collection hook)."""

import json

from pylon_testing import schedule
import pytest


def test_the_heaviest_unit_goes_first_and_a_unit_keeps_its_tests_together():
    units = [('a.py::t1', 'a.py::t1', 1.0),
             ('b.py::t1', 'b.py', 4.0), ('b.py::t2', 'b.py', 4.0),
             ('c.py::t1', 'c.py::t1', 5.0),
             ('d.py::t1', 'd.py::t1', 1.0)]
    # b.py (8 s) before c (5 s) before the 1 s tests, which keep their collection order
    assert schedule.order(units) == ['b.py::t1', 'b.py::t2', 'c.py::t1', 'a.py::t1', 'd.py::t1']


def test_weights_come_from_the_record_or_the_tier_default():
    recorded = {'x.py::slow': 42.0}
    assert schedule.weight('x.py::slow', False, recorded) == 42.0
    assert schedule.weight('x.py::new', True, recorded) == schedule.DEFAULT_INTEGRATION_SEC
    assert schedule.weight('x.py::new', False, recorded) == schedule.DEFAULT_UNIT_SEC


def test_the_record_keeps_slow_tests_only_and_a_bad_file_reads_as_empty(tmp_path):
    kept = schedule.record({'b.py::t': 3.14159, 'a.py::t': 0.1, 'c.py::t': 0.5})
    assert kept == {'b.py::t': 3.14, 'c.py::t': 0.5}
    assert list(kept) == sorted(kept)
    path = tmp_path / 'durations.json'
    path.write_text(json.dumps(kept), encoding='utf-8')
    assert schedule.load_durations(path) == kept
    path.write_text('not json', encoding='utf-8')
    assert schedule.load_durations(path) == {}
    assert schedule.load_durations(tmp_path / 'missing.json') == {}


def test_module_of_a_test_id():
    assert schedule.module_of('ws/src/p/test/test_x.py::test_y[a::b]') == \
        'ws/src/p/test/test_x.py'


def test_a_test_without_process_fixtures_is_in_the_fast_tier(request):
    assert request.node.get_closest_marker('integration') is None
    assert request.node.get_closest_marker('xdist_group') is None


def test_a_test_with_a_ros_node_is_marked_integration(request, ros_node):
    assert request.node.get_closest_marker('integration') is not None
    assert request.node.get_closest_marker('xdist_group') is None      # nothing to share


@pytest.fixture(scope='module')
def shared(module_ros_node):
    return module_ros_node


def test_a_module_that_shares_a_node_runs_in_one_worker(request, shared):
    assert request.node.get_closest_marker('integration') is not None
    group = request.node.get_closest_marker('xdist_group')
    module = schedule.module_of(request.node.nodeid)
    assert group is not None and group.args == (module,)
    if hasattr(request.config, 'workerinput') and request.config.getvalue('loadgroup'):
        # a pytest-xdist worker (make test): the worker named the group from the mark in
        # the test id it reports, so the scheduler sends every test of the module to this
        # one worker (pytest 9.2 drops the name: ci/constraints.txt says why 9.1)
        assert request.node.nodeid.endswith(f'@{module}'), request.node.nodeid
