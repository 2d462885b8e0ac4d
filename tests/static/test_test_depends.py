"""Every package declares what it imports, and what its tests import and start.

For each package (``ws/src/*`` and ``ci/overlay/*``) the modules ``test/*.py`` import, the
harness fixtures they use (``pylon_testing``) and the workspace executables they start
(``ros_process(['udp_bridge', ...])``, ``sim_stack``) must be rosdep keys the manifest lists
as ``test_depend`` or ``exec_depend`` (``depend`` counts as both). What the package's own
modules import (``<package>/**/*.py``; for ``pylon_testing``, test code the other packages
import) must be its ``exec_depend``; a module without a rosdep key (``PIP_ONLY``) must be
named, by its PyPI distribution, in a comment of the manifest. A module this file does not
know fails the test until it is added to ``THIRD_PARTY`` (with its rosdep key) or
``PIP_ONLY``, or is a workspace or ROS package.

``pylon_testing`` imports the packages it tests, which list it as a ``test_depend``; colcon
orders on test dependencies too, so ``make setup`` (and the devcontainer) build the
harness in a second pass, over the packages.

What has no apt package (``PIP_ONLY``, and the rosdep keys rosdep installs with pip,
``PIP_KEYS``) both environments install from PyPI at the versions of one list,
``ci/constraints.txt``: the native setup with ``uv pip -c`` or ``pip -c`` (``ci/setup.sh``),
the Docker image with ``pip -c`` over that file, mounted (the Dockerfile writes no version
itself).
"""

import ast
from pathlib import Path
import re
import sys

from catkin_pkg.package import parse_package
import pytest

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = sorted([*(ROOT / 'ws' / 'src').glob('*/package.xml'),
                    *(ROOT / 'ci' / 'overlay').glob('*/package.xml')])
WORKSPACE = {path.parent.name for path in MANIFESTS}

THIRD_PARTY = {       # module -> rosdep key (rosdep/python.yaml of ros/rosdistro)
    'catkin_pkg': 'python3-catkin-pkg',
    'hypothesis': 'python3-hypothesis',
    'matplotlib': 'python3-matplotlib',
    'mcap_ros2': 'mcap-ros2-support',    # a pip key: rosdep installs it with pip
    'numpy': 'python3-numpy',
    'pytest': 'python3-pytest',
    'scipy': 'python3-scipy',
    'websocket': 'python3-websocket',
    'yaml': 'python3-yaml',
}
PIP_KEYS = {          # rosdep key -> PyPI distribution: keys rosdep installs with pip
    'mcap-ros2-support': 'mcap-ros2-support',
}
PIP_ONLY = {          # module -> PyPI distribution: no rosdep key (Ubuntu 24.04, Jazzy); the
    'foxglove': 'foxglove-sdk',      # native environment has them from ci/requirements.txt,
    'mcap': 'mcap',                  # the Docker image from its pip install line; a
    'msgspec': 'msgspec',            # manifest names them in a comment
    'threadpoolctl': 'threadpoolctl',
    'zstandard': 'zstandard',
}
DEPENDENCIES = {'zstandard'}
"""PyPI distributions the native environment has as another one's dependency (pinned)."""
ROS_PACKAGES = {'ament_index_python', 'builtin_interfaces', 'launch', 'launch_ros',
                'rcl_interfaces', 'rclpy', 'rosidl_runtime_py', 'xacro'}
ROS_INTERFACES = re.compile(r'_(msgs|srvs|interfaces)$')

HARNESS_FIXTURES = {'ros_process', 'ros_node', 'ros_domain_id', 'ros_domain_block',
                    'module_ros_domain_block',
                    'free_udp_port', 'free_udp_port_series', 'sim_stack',
                    'module_ros_process', 'module_ros_node'}
STARTERS = {'ros_process', 'module_ros_process'}
FIXTURE_EXECUTABLES = {'sim_stack': ('udp_bridge', 'pylon_sim')}


def rosdep_key(module: str) -> str | None:
    """Return the rosdep key of a top-level module (None: the standard library; KeyError)."""
    if module in sys.stdlib_module_names or module == '__future__' or module in PIP_ONLY:
        return None
    if module in WORKSPACE or module in ROS_PACKAGES or ROS_INTERFACES.search(module):
        return module
    return THIRD_PARTY[module]


def imported(tree: ast.AST) -> set[str]:
    """Return the top-level modules a file imports (anywhere in it, absolute imports)."""
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name.split('.')[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.split('.')[0])
    return modules


def fixtures_used(tree: ast.AST) -> set[str]:
    """Return the harness fixtures the functions of a file take as arguments."""
    return {arg.arg for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            for arg in node.args.args if arg.arg in HARNESS_FIXTURES}


def started(tree: ast.AST) -> set[str]:
    """Return the executables started by name: ``ros_process(['name', ...])``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in STARTERS and node.args \
                and isinstance(node.args[0], ast.List) and node.args[0].elts \
                and isinstance(node.args[0].elts[0], ast.Constant):
            names.add(node.args[0].elts[0].value)
    return names


def executables() -> dict[str, str]:
    """Return every workspace executable (console script) -> its package."""
    owners = {}
    for manifest in MANIFESTS:
        setup = manifest.parent / 'setup.py'
        if setup.is_file():
            for name in re.findall(r"'(\w+) = [\w.]+:\w+'", setup.read_text()):
                owners[name] = manifest.parent.name
    return owners


def needs(files: list[Path]) -> tuple[dict[str, set[str]], set[str]]:
    """Return the rosdep keys ``files`` need (key -> why) and the modules not known."""
    owners = executables()
    keys: dict[str, set[str]] = {}
    unknown = set()
    for path in files:
        tree = ast.parse(path.read_text(encoding='utf-8'))
        for module in imported(tree):
            try:
                key = rosdep_key(module)
            except KeyError:
                unknown.add(f'{path.name}: {module}')
                continue
            if key:
                keys.setdefault(key, set()).add(f'{path.name} imports {module}')
        fixtures = fixtures_used(tree)
        for fixture in fixtures:
            keys.setdefault('pylon_testing', set()).add(f'{path.name} uses {fixture}')
        programs = started(tree) | {name for fixture in fixtures
                                    for name in FIXTURE_EXECUTABLES.get(fixture, ())}
        for program in programs & owners.keys():
            keys.setdefault(owners[program], set()).add(f'{path.name} starts {program}')
    return keys, unknown


def declared(manifest: Path, kinds: tuple[str, ...]) -> set[str]:
    package = parse_package(str(manifest))
    return {dep.name for kind in kinds for dep in getattr(package, kind)}


def check(manifest: Path, files: list[Path], kinds: tuple[str, ...]) -> None:
    keys, unknown = needs(files)
    assert not unknown, f'modules without a rosdep key here (add them to THIRD_PARTY): {unknown}'
    missing = {key: sorted(why) for key, why in keys.items()
               if key != manifest.parent.name and key not in declared(manifest, kinds)}
    assert not missing, f'{manifest.relative_to(ROOT)} lacks {" or ".join(kinds)}: {missing}'


@pytest.mark.parametrize('manifest', MANIFESTS, ids=lambda p: p.parent.name)
def test_manifest_declares_what_its_tests_import_and_start(manifest):
    check(manifest, sorted((manifest.parent / 'test').glob('*.py')),
          ('test_depends', 'exec_depends'))


def modules_of(manifest: Path) -> list[Path]:
    """Return the package's own Python modules (not its tests, not setup.py)."""
    return sorted((manifest.parent / manifest.parent.name).rglob('*.py'))


def pip_only(files: list[Path]) -> dict[str, set[str]]:
    """Return the PyPI distributions without a rosdep key ``files`` import (-> why)."""
    found: dict[str, set[str]] = {}
    for path in files:
        for module in imported(ast.parse(path.read_text(encoding='utf-8'))) & PIP_ONLY.keys():
            found.setdefault(PIP_ONLY[module], set()).add(f'{path.name} imports {module}')
    return found


def named_in_comments(manifest: Path, distribution: str) -> bool:
    """Return whether a comment of the manifest names the PyPI distribution."""
    comments = ' '.join(re.findall(r'<!--(.*?)-->', manifest.read_text(), re.DOTALL))
    return re.search(rf'(?<![\w-]){re.escape(distribution)}(?![\w-])', comments) is not None


@pytest.mark.parametrize('manifest', MANIFESTS, ids=lambda p: p.parent.name)
def test_manifest_declares_what_its_modules_import(manifest):
    files = modules_of(manifest)
    check(manifest, files, ('exec_depends',))
    unnamed = {name: sorted(why) for name, why in pip_only(files).items()
               if not named_in_comments(manifest, name)}
    assert not unnamed, (f'{manifest.relative_to(ROOT)}: no rosdep key, so a comment must '
                         f'name the PyPI distribution: {unnamed}')


def test_the_module_check_sees_pip_only_imports_and_their_comments(tmp_path):
    module = tmp_path / 'node.py'
    module.write_text('import mcap\nfrom mcap_ros2.decoder import DecoderFactory\n'
                      'def f():\n    import zstandard\n')
    assert pip_only([module]) == {'mcap': {'node.py imports mcap'},
                                  'zstandard': {'node.py imports zstandard'}}
    manifest = tmp_path / 'package.xml'
    manifest.write_text('<package><!-- mcap-ros2-support: a key --><!--\n  zstandard (pip) -->'
                        '</package>')
    assert named_in_comments(manifest, 'zstandard')
    assert not named_in_comments(manifest, 'mcap')      # mcap-ros2-support is another one


def test_the_check_sees_imports_fixtures_and_programs(tmp_path):
    sample = tmp_path / 'test_sample.py'
    sample.write_text('import os\nimport numpy as np\nfrom sensor_msgs.msg import Imu\n'
                      'def test_x(sim_stack, ros_process):\n'
                      "    import yaml\n    ros_process(['setpoint_controller', '-h'])\n")
    keys, unknown = needs([sample])
    assert set(keys) == {'python3-numpy', 'sensor_msgs', 'python3-yaml', 'pylon_testing',
                         'pylon_bridge', 'pylon_sim', 'pylon_vehicle_control'}
    assert unknown == set()
    sample.write_text('import some_unknown_module\n')
    assert needs([sample])[1] == {'test_sample.py: some_unknown_module'}


def test_no_test_or_benchmark_reaches_code_through_sys_path():
    files = [*ROOT.glob('ws/src/*/test/*.py'), *ROOT.glob('ci/overlay/*/test/*.py'),
             *ROOT.glob('tests/**/*.py'), *ROOT.glob('bench/*.py')]
    offenders = [str(path.relative_to(ROOT)) for path in files
                 if path != Path(__file__) and 'sys.path' in path.read_text(encoding='utf-8')]
    assert offenders == []


def test_what_has_no_apt_package_is_installed_from_pypi_at_one_list_of_versions():
    requirements = (ROOT / 'ci' / 'requirements.txt').read_text().split()
    setup = (ROOT / 'ci' / 'setup.sh').read_text()
    dockerfile = (ROOT / 'docker' / 'Dockerfile').read_text().replace('\\\n', ' ')
    pinned = dict(line.split('==') for line in
                  (ROOT / 'ci' / 'constraints.txt').read_text().splitlines()
                  if '==' in line)
    # the native setup installs the requirements under the constraints
    assert '-c "$ROOT/ci/constraints.txt"' in setup
    # the image installs them with pip under the same file, mounted, and pins nothing itself
    installs = [line for line in dockerfile.splitlines() if 'pip3 install' in line]
    assert installs and all(
        'source=ci/constraints.txt,target=/tmp/constraints.txt' in line
        and '-c /tmp/constraints.txt' in line for line in installs), installs
    assert not re.search(r'[\w-]==\d', dockerfile), 'a version written in the Dockerfile'
    assert 'ARG RUFF_VERSION' not in dockerfile
    docker_pip = {word for line in installs for word in line.split()}
    for distribution in (*PIP_ONLY.values(), *PIP_KEYS.values()):
        # named in the requirements, or the dependency of one (zstandard: of mcap)
        assert distribution in requirements or distribution in DEPENDENCIES, distribution
        assert distribution in pinned, distribution
        assert distribution in docker_pip, distribution
