"""The shape of the code: short functions, no import circle, topic names from the contract."""

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIP = {'.git', '.venv', 'build', 'install', 'log', '__pycache__', '.hypothesis'}
MAX_FUNCTION_LINES = 80
MAX_CLASS_LINES = 300
MAX_SIM_MODULE_LINES = 600
SIM_LAYERS = {'game': 0, 'mod': 1, 'sensors': 1, 'loop': 2}
"""pylon_sim's subpackages, bottom up: the game; the mod and its sensors beside each other
(neither imports the other); the frame loop that ties them."""
CONTRACT = ROOT / 'ws' / 'src' / 'pylon_common' / 'pylon_common' / 'topics.py'
SEED_PREFIX = '/ksp_vessel'


def python_files():
    for path in sorted(ROOT.rglob('*.py')):
        if not SKIP & set(path.relative_to(ROOT).parts):
            yield path


def is_test(path: Path) -> bool:
    parts = path.relative_to(ROOT).parts
    return parts[0] == 'tests' or 'test' in parts


def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding='utf-8'), filename=str(path))


def test_no_function_is_longer_than_80_lines():
    long = [f'{path.relative_to(ROOT)}:{node.lineno} {node.name} '
            f'({node.end_lineno - node.lineno + 1} lines)'
            for path in python_files() for node in ast.walk(parsed(path))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert long == []


def test_no_class_in_the_packages_is_longer_than_300_lines():
    long = [f'{path.relative_to(ROOT)}:{node.lineno} {node.name} '
            f'({node.end_lineno - node.lineno + 1} lines)'
            for path in python_files() if path.is_relative_to(ROOT / 'ws' / 'src')
            and not is_test(path) for node in ast.walk(parsed(path))
            if isinstance(node, ast.ClassDef)
            and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES]
    assert long == []


def test_no_simulator_module_is_longer_than_600_lines():
    package = ROOT / 'ws' / 'src' / 'pylon_sim' / 'pylon_sim'
    long = {str(path.relative_to(package)): lines for path in package.rglob('*.py')
            if (lines := len(path.read_text(encoding='utf-8').splitlines()))
            > MAX_SIM_MODULE_LINES}
    assert long == {}


def _module_name(path: Path) -> str | None:
    """Return ``pkg.module`` for a file of a workspace package (None elsewhere)."""
    parts = path.relative_to(ROOT).parts
    for i, part in enumerate(parts[:-1]):
        if part.startswith('pylon_') and (path.parents[len(parts) - 2 - i] / 'setup.py').exists():
            inner = parts[i + 1:]
            if inner and inner[0] == part:
                stem = '.'.join(inner)[:-3]
                return stem[:-len('.__init__')] if stem.endswith('.__init__') else stem
    return None


def _imports(tree: ast.Module, name: str, known: set[str]) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module in known:
                found.add(node.module)
            found |= {f'{node.module}.{a.name}' for a in node.names
                      if f'{node.module}.{a.name}' in known}
    return found - {name}


def import_graph() -> dict[str, set[str]]:
    """Return ``{module: modules of the workspace it imports}``, lazy imports included."""
    modules = {}
    for path in python_files():
        name = _module_name(path)
        if name is not None and not is_test(path):
            modules[name] = path
    known = set(modules)
    return {name: _imports(parsed(path), name, known) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_the_graph_reaches_every_package():
    graph = import_graph()
    packages = {name.split('.')[0] for name in graph}
    assert packages >= {'pylon_protocol', 'pylon_common', 'pylon_bridge', 'pylon_sim',
                        'pylon_vehicle_control', 'pylon_mission', 'pylon_testing'}
    assert 'pylon_bridge.qos' in graph['pylon_bridge.node']


def test_no_import_circle():
    assert _cycles(import_graph()) == []


def test_packages_import_only_what_lies_below_them():
    layers = {'pylon_protocol': set(), 'pylon_track': set(),
              'pylon_sim': {'pylon_protocol', 'pylon_description', 'pylon_track'},
              'pylon_common': {'pylon_protocol'},
              'pylon_bridge': {'pylon_protocol', 'pylon_common'},
              'pylon_vehicle_control': {'pylon_protocol', 'pylon_common'},
              'pylon_mission': {'pylon_protocol', 'pylon_common'},
              # pylon_plot evaluates the estimate as the evaluator does (evaluation.py)
              'pylon_tools': {'pylon_protocol', 'pylon_common', 'pylon_vehicle_control'},
              # the kart's interface takes the lease client and mass properties from there
              'pylon_kart': {'pylon_protocol', 'pylon_common', 'pylon_vehicle_control',
                             'pylon_track'}}
    wrong = [(module, target) for module, targets in import_graph().items()
             for target in targets
             if module.split('.')[0] in layers
             and target.split('.')[0] not in layers[module.split('.')[0]] | {module.split('.')[0]}]
    assert wrong == []


def test_the_simulator_imports_only_down_its_layers():
    graph = {name: targets for name, targets in import_graph().items()
             if name.split('.')[0] == 'pylon_sim'}
    outside = [name for name in graph if name != 'pylon_sim'
               and name.split('.')[1] not in SIM_LAYERS]
    assert outside == []                        # every module lives in a layer
    assert {name.split('.')[1] for name in graph if name != 'pylon_sim'} == set(SIM_LAYERS)
    wrong = [(name, target) for name, targets in graph.items() if name != 'pylon_sim'
             for target in targets if target.split('.')[0] == 'pylon_sim'
             and target.split('.')[1] != name.split('.')[1]
             and SIM_LAYERS[target.split('.')[1]] >= SIM_LAYERS[name.split('.')[1]]]
    assert wrong == []


def _docstrings(tree: ast.Module) -> set[int]:
    """Return the ids of the string nodes that are documentation (bare string statements)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)}


@pytest.mark.parametrize('root', ['ws/src', 'launch', 'bench', 'ci'])
def test_vessel_topic_names_come_from_the_contract(root):
    """No ``/ksp_vessel`` name in code outside the contract (tests and docstrings may say it)."""
    found = defaultdict(list)
    for path in python_files():
        if path == CONTRACT or is_test(path) or not path.is_relative_to(ROOT / root):
            continue
        tree = parsed(path)
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and SEED_PREFIX in node.value and id(node) not in docs:
                found[str(path.relative_to(ROOT))].append(node.lineno)
    assert dict(found) == {}
