"""pytest plugin of the PyLoN workspace (enabled with ``-p pylon_testing.plugin``).

At session start it claims a ROS domain id no other session on this host uses and keeps
DDS discovery on localhost, so two copies of the suite never see each other's graph.
Fixtures:

- ``ros_domain_id``: the session's domain id (also exported as ``ROS_DOMAIN_ID``).
- ``ros_domain_block``: call it with a count for that many consecutive domain ids no other
  session holds (a multi-vehicle stack: management in the first, a vehicle in each next),
  given back when the test ends (``module_ros_domain_block``: when the module ends).
- ``free_udp_port``: call it for a UDP port no other session was given.
- ``free_udp_port_series``: call it with (count, stride) for that many such ports a stride
  apart (a simulator serving several vehicles), first one returned.
- ``ros_process``: call it to start a workspace executable as a real process (the
  ``start`` of a ``ProcessGroup`` of the test); its log is shown when the test fails, and
  it is always ended (SIGINT, SIGTERM, SIGKILL) at teardown.
- ``ros_node``: an rclpy node in the test process on the session's domain, in its own context.
- ``ros_node_in``: call it with a domain id (of ``ros_domain_block``) for such a node in that
  domain; each call makes a node of its own, ended at teardown.
- ``sim_stack``: call it to start ``pylon_sim`` and ``udp_bridge`` on ports of their own
  (``pylon_testing.stack.start_stack``); it returns the ``SimStack`` (admin, simulator clock).
- ``module_ros_process``, ``module_ros_node`` and ``module_sim_stack``: the same as
  ``ros_process``, ``ros_node`` and ``sim_stack`` for a module-scoped fixture that several
  tests share (one bridge fed once, checked by a test per message family); the logs go with
  every failing test of the module, and the module's tests run in one parallel worker.
- ``shared_ros_node``: ``module_ros_node`` for one test: what the test added to it
  (subscriptions, publishers, clients) is destroyed after it. A module whose tests share a
  stack (its ``stack`` fixture) makes it its ``ros_node``; ``session`` then starts a test
  in a fresh runtime session of that stack (``SimStack.fresh_session``).
- ``own_domain`` and ``own_stack``: for the tests of such a module that need another stack
  (another scenario or options) in a ROS domain of their own, one at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
import contextlib
import itertools
import json
import os
from pathlib import Path
import tempfile

from pylon_protocol.threads import limit_threads
import pytest

from pylon_testing import schedule
from pylon_testing.isolation import (
    Claim,
    claim_domain_block,
    claim_domain_id,
    claim_udp_port,
    claim_udp_port_series,
    isolate,
)
from pylon_testing.processes import ProcessGroup, RosProcess, stop_all
from pylon_testing.stack import SimStack, start_stack

_PROCESSES = pytest.StashKey[list]()
_SESSION = pytest.StashKey[dict]()
_counter = itertools.count()
DURATIONS_FILE = 'ci/test_durations.json'
"""Recorded seconds per slow test (from the root): the order parallel workers get work in."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--record-durations PATH``: write every test's seconds there at the end."""
    parser.addoption('--record-durations', default='', metavar='PATH',
                     help='write the seconds of every test slower than '
                          f'{schedule.MIN_RECORDED_SEC} s to PATH (JSON) at the end')


def pytest_configure(config: pytest.Config) -> None:
    """Claim the session's ROS domain and set the environment every process inherits."""
    config.addinivalue_line('markers', 'xdist_group(name): run in one worker (pytest-xdist)')
    path = config.getoption('record_durations')
    if path and not hasattr(config, 'workerinput'):
        config.pluginmanager.register(DurationRecorder(path), 'pylon-durations')
    _load_hypothesis_profile(config)
    limit_threads()       # this process and, through the environment, every process it starts
    domain_id, claim = claim_domain_id()
    log_dir = Path(tempfile.mkdtemp(prefix=f'pylon-test-{os.getpid()}-'))
    config.stash[_SESSION] = {
        'domain_id': domain_id, 'claims': [claim], 'groups': [], 'log_dir': log_dir}
    isolate(domain_id, log_dir)


def pytest_report_header(config: pytest.Config) -> str:
    """Say which isolated domain this session uses."""
    session = config.stash[_SESSION]
    return (f"ROS_DOMAIN_ID={session['domain_id']} (claimed), discovery LOCALHOST, "
            f"process logs in {session['log_dir']}")


def pytest_unconfigure(config: pytest.Config) -> None:
    """End every process still running and give back the session's claims."""
    session = config.stash.get(_SESSION, None)
    if session is None:
        return
    stop_all([p for group in reversed(session['groups']) for p in reversed(group.processes)])
    for claim in session['claims']:
        claim.release()


@pytest.fixture(scope='session')
def ros_domain_id(pytestconfig: pytest.Config) -> int:
    """Return the ROS domain id this test session owns."""
    return pytestconfig.stash[_SESSION]['domain_id']


@pytest.fixture(scope='session')
def free_udp_port(pytestconfig: pytest.Config) -> Callable[[], int]:
    """Return a function that hands out UDP ports no other session on this host was given."""
    claims: list[Claim] = pytestconfig.stash[_SESSION]['claims']

    def take() -> int:
        port, claim = claim_udp_port()
        claims.append(claim)
        return port

    return take


def _released_at_teardown() -> Iterator[list[Claim]]:
    claims: list[Claim] = []
    yield claims
    for claim in claims:
        claim.release()


_test_domain_claims = pytest.fixture(_released_at_teardown, name='_test_domain_claims')
"""The domain ids a test claimed, given back at its end: ``ros_process`` and ``ros_node_in``
depend on it, so the test's processes and nodes end before their domains are free again."""
_module_domain_claims = pytest.fixture(_released_at_teardown, scope='module',
                                       name='_module_domain_claims')
"""The domain ids a module claimed, given back after ``module_ros_process``'s processes."""


def _block_taker(claims: list[Claim]) -> Callable[[int], int]:
    def take(count: int) -> int:
        base, taken = claim_domain_block(count)
        claims.extend(taken)
        return base
    return take


@pytest.fixture
def ros_domain_block(_test_domain_claims: list[Claim]) -> Callable[[int], int]:
    """Return ``take(count) -> first``: ``count`` consecutive domain ids held until the test ends.

    Given back at the test's end, not the session's: a session holding every block its tests
    took ran the 100 test domains out when two copies of the suite ran side by side.
    """
    return _block_taker(_test_domain_claims)


@pytest.fixture(scope='module')
def module_ros_domain_block(_module_domain_claims: list[Claim]) -> Callable[[int], int]:
    """Return ``ros_domain_block`` for a module-scoped fixture: held until the module ends."""
    return _block_taker(_module_domain_claims)


@pytest.fixture(scope='session')
def free_udp_port_series(pytestconfig: pytest.Config) -> Callable[[int, int], int]:
    """Return ``take(count, stride) -> first``: UDP ports ``first + k * stride``, held."""
    claims: list[Claim] = pytestconfig.stash[_SESSION]['claims']

    def take(count: int, stride: int) -> int:
        first, taken = claim_udp_port_series(count, stride)
        claims.extend(taken)
        return first

    return take


def _process_group(request: pytest.FixtureRequest,
                   tmp_path_factory: pytest.TempPathFactory) -> ProcessGroup:
    """Return a process group whose processes the session ends at the latest."""
    group = ProcessGroup(tmp_path_factory.mktemp('processes'))
    request.config.stash[_SESSION]['groups'].append(group)
    request.node.stash[_PROCESSES] = group.processes
    return group


@pytest.fixture
def ros_process(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                _test_domain_claims: list[Claim]) -> Iterator[Callable[..., RosProcess]]:
    """Return a function that starts a process and ends it at teardown.

    ``ros_process(cmd, name=None, env=None, cwd=None, pipes=False)``: ``cmd`` is an
    executable on PATH (a workspace executable under ``ci/env.sh``) and its arguments;
    ``env`` entries are added to the session's environment (``ProcessGroup.start``).
    """
    with _process_group(request, tmp_path_factory) as group:
        yield group.start


@pytest.fixture(scope='module')
def module_ros_process(request: pytest.FixtureRequest,
                       tmp_path_factory: pytest.TempPathFactory,
                       _module_domain_claims: list[Claim]
                       ) -> Iterator[Callable[..., RosProcess]]:
    """Return ``ros_process`` for a module-scoped fixture: the processes end with the module."""
    with _process_group(request, tmp_path_factory) as group:
        yield group.start


def _load_hypothesis_profile(config: pytest.Config) -> None:
    """Register the property tests' profiles and load ``ci`` unless one was asked for.

    ``ci`` (``make test``): derandomized, so a run is repeatable and a failure is the code's;
    ``fuzz`` (``make fuzz``): random seeds, every example found kept in ``.hypothesis/``.
    """
    from hypothesis import settings

    settings.register_profile('ci', derandomize=True, database=None, deadline=None)
    settings.register_profile('fuzz', derandomize=False, deadline=None, print_blob=True)
    if not config.getoption('hypothesis_profile', None):
        settings.load_profile('ci')


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the integration tests, group modules that share a stack, heaviest work first.

    ``pylon_testing.schedule`` says why; this runs before pytest-xdist names the groups.
    """
    durations = schedule.load_durations(config.rootpath / DURATIONS_FILE)
    units = []
    for item in items:
        fixtures = set(item.fixturenames)
        integration = bool(fixtures & schedule.PROCESS_FIXTURES) or \
            item.get_closest_marker('integration') is not None
        if integration and item.get_closest_marker('integration') is None:
            item.add_marker(pytest.mark.integration)
        unit = item.nodeid
        if fixtures & schedule.MODULE_FIXTURES:
            unit = schedule.module_of(item.nodeid)
            item.add_marker(pytest.mark.xdist_group(unit))
        units.append((item.nodeid, unit, schedule.weight(item.nodeid, integration, durations)))
    rank = {nodeid: i for i, nodeid in enumerate(schedule.order(units))}
    items.sort(key=lambda item: rank[item.nodeid])


class DurationRecorder:
    """Add up each test's setup, call and teardown seconds; write them at the end.

    Registered in the controlling process only (with pytest-xdist it gets every worker's
    reports), when ``--record-durations PATH`` is given.
    """

    def __init__(self, path: str) -> None:
        """Write to ``path`` at the end of the session."""
        self.path = Path(path)
        self.totals: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Add the report's seconds to its test's total."""
        nodeid = report.nodeid.split('@', 1)[0]         # pytest-xdist's group suffix
        self.totals[nodeid] = self.totals.get(nodeid, 0.0) + (report.duration or 0.0)

    def pytest_sessionfinish(self) -> None:
        """Write the slow tests' seconds (``schedule.record``)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(schedule.record(self.totals), indent=0) + '\n',
                             encoding='utf-8')


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Attach the log of every process the test started to a failed report."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    module = item.getparent(pytest.Module)
    started = [*(module.stash.get(_PROCESSES, []) if module else []),
               *item.stash.get(_PROCESSES, [])]
    for process in started:
        status = process.returncode
        state = 'running' if status is None else f'exited with {status}'
        report.sections.append(
            (f'process {process.name} ({state}): {" ".join(process.cmd)}', process.log()))


@contextlib.contextmanager
def _node_in_own_context(domain_id: int) -> Iterator[object]:
    import rclpy
    from rclpy.context import Context

    context = Context()
    rclpy.init(context=context, domain_id=domain_id)
    node = rclpy.create_node(f'pylon_test_{os.getpid()}_{next(_counter)}', context=context)
    try:
        yield node
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)


@pytest.fixture
def ros_node(ros_domain_id: int) -> Iterator[object]:
    """Yield an rclpy node in the test process, in a context of its own on the session's domain."""
    with _node_in_own_context(ros_domain_id) as node:
        yield node


@pytest.fixture
def ros_node_in(_test_domain_claims: list[Claim]) -> Iterator[Callable[[int], object]]:
    """Return ``make(domain_id) -> node``: rclpy nodes in contexts of their own, in any domain."""
    with contextlib.ExitStack() as stack:
        yield lambda domain_id: stack.enter_context(_node_in_own_context(domain_id))


@pytest.fixture(scope='module')
def module_ros_node(ros_domain_id: int) -> Iterator[object]:
    """Yield ``ros_node`` for a module-scoped fixture: the node lives until the module ends."""
    with _node_in_own_context(ros_domain_id) as node:
        yield node


@pytest.fixture
def shared_ros_node(module_ros_node: object) -> Iterator[object]:
    """Yield the module's test node; what a test added to it is destroyed after the test."""
    node = module_ros_node
    kinds = {'subscriptions': node.destroy_subscription, 'publishers': node.destroy_publisher,
             'clients': node.destroy_client}
    kept = {kind: set(getattr(node, kind)) for kind in kinds}
    yield node
    for kind, destroy in kinds.items():
        for entity in set(getattr(node, kind)) - kept[kind]:
            destroy(entity)


@pytest.fixture
def session(stack: SimStack, ros_node: object) -> object:
    """Start the test in a runtime session of its own; return its ACTIVE lifecycle.

    For a module whose tests share its ``stack`` (a fixture of ``module_sim_stack``) and
    whose ``ros_node`` is ``shared_ros_node``: ``SimStack.fresh_session``, the scenario's
    start in a new KSP process (no lease, override, emergency stop or sensor switch left).
    """
    return stack.fresh_session(ros_node)[1]


@pytest.fixture(scope='module')
def own_domain(module_ros_domain_block: Callable[[int], int], module_ros_node: object) -> int:
    """Return a ROS domain id for the module's tests with a stack of their own, one at a time.

    It takes ``module_ros_node`` only to keep those tests in the module's worker, in the
    file's order (``pylon_testing.schedule``): above the shared stack's tests, they run
    before it starts, and no stack idles while another one works.
    """
    return module_ros_domain_block(1)


@pytest.fixture
def own_stack(own_domain: int, ros_node_in: Callable[[int], object],
              ros_process: Callable[..., RosProcess],
              free_udp_port: Callable[[], int]) -> Callable[..., tuple[SimStack, object]]:
    """Return ``start(scenario, bridge_args, sim_args) -> (stack, node)`` in ``own_domain``.

    For a test that needs another stack than the module's: its processes and test node see
    only each other, and it ends with the test.
    """
    def start(scenario: str = 'orbit', bridge_args: Sequence[str] = (),
              sim_args: Sequence[str] = ()) -> tuple[SimStack, object]:
        def run(cmd: Sequence[str], name: str | None = None) -> RosProcess:
            return ros_process(cmd, name=name, env={'ROS_DOMAIN_ID': str(own_domain)})
        return (start_stack(run, free_udp_port, scenario, bridge_args, sim_args),
                ros_node_in(own_domain))
    return start


@pytest.fixture
def sim_stack(ros_process: Callable[..., RosProcess],
              free_udp_port: Callable[[], int]) -> Callable[..., SimStack]:
    """Return a function that starts the simulator and the bridge (``start_stack``)."""
    def start(scenario: str = 'orbit', bridge_args: Sequence[str] = (),
              sim_args: Sequence[str] = (), bridge: bool = True) -> SimStack:
        return start_stack(ros_process, free_udp_port, scenario, bridge_args, sim_args, bridge)
    return start


@pytest.fixture(scope='module')
def module_sim_stack(module_ros_process: Callable[..., RosProcess],
                     free_udp_port: Callable[[], int]) -> Callable[..., SimStack]:
    """Return ``sim_stack``'s starter for a module-scoped fixture: one stack for the module.

    The tests that share it start each from a fresh runtime session where they need one
    (``SimStack.admin('restart')``), with lease ids of their own, and check generations
    relative to what they found.
    """
    def start(scenario: str = 'orbit', bridge_args: Sequence[str] = (),
              sim_args: Sequence[str] = (), bridge: bool = True) -> SimStack:
        return start_stack(module_ros_process, free_udp_port, scenario, bridge_args, sim_args,
                           bridge)
    return start


@pytest.fixture
def lean_scenario(tmp_path: Path) -> Callable[..., str]:
    """Return ``make(name='orbit', changes=None) -> path``: the scenario without LiDAR and camera.

    For tests that do not look at scans or images (``scenarios.write_scenario``).
    """
    from pylon_testing.scenarios import write_scenario

    def make(name: str = 'orbit', changes: dict | None = None) -> str:
        return write_scenario(tmp_path, name, changes=changes)
    return make
