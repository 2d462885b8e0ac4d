"""Generate the README tables from the tables in the code, or check that they are current.

    ci/env.sh python ci/docs.py            # check: exit 1 naming each stale block
    ci/env.sh python ci/docs.py --write    # rewrite the stale blocks in place

A generated block in a Markdown file sits between ``<!-- generated: NAME -->`` and
``<!-- end generated -->``; ``BLOCKS`` says which function writes each NAME. The code is
the one source (the topic contract, the bridge's options, each node's parameter table);
the READMEs show it, and ``make test`` fails when one of them is stale.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from pathlib import Path
import re
import sys

ROOT = Path(__file__).resolve().parents[1]
BEGIN = '<!-- generated: {name} -->'
END = '<!-- end generated -->'


def _md(text: str) -> str:
    return text.replace('|', '\\|').replace('<', '&lt;')


def topic_contract() -> str:
    """Return every topic and service of the contract: owner, users, type and QoS."""
    from pylon_common import topics
    lines = ['| Topic (default name) | Key | Owner | Dir. | Type | QoS | Read by | Written by |',
             '|---|---|---|---|---|---|---|---|']
    for row in topics.TOPICS.values():
        profile = f'{row.qos}: {row.profile.title}' if row.profile else 'service'
        lines.append(f'| `{row.default_name()}` | `{row.key}` | {row.owner} | {row.direction} '
                     f'| `{row.type}` | {profile} | {", ".join(row.readers) or "–"} '
                     f'| {", ".join(row.writers) or "–"} |')
    return '\n'.join(lines)


def bridge_topics() -> str:
    """Return the bridge's topics with their names under its options, QoS and why."""
    from pylon_bridge import config
    from pylon_common import qos, topics
    words = {qos.RELIABLE: 'Reliable', qos.BEST_EFFORT: 'Best Effort',
             qos.VOLATILE: 'Volatile', qos.TRANSIENT_LOCAL: 'Transient Local'}
    lines = ['| Topic (default name) | Key | Dir. | Type | Reliability | Durability | Depth '
             '| Why |', '|---|---|---|---|---|---|---|---|']
    for row in topics.BRIDGE_TOPICS:
        p = row.profile
        qos_cells = (f'{words[p.reliability]} | {words[p.durability]} | {p.depth} | '
                     f'{row.qos}: ' if p else '– | – | – | ')
        lines.append(
            f'| `{config.defaults().topic(row.key, id="<id>")}` | `{row.key}` | '
            f'{row.direction} | `{row.type}` | {qos_cells}{row.why}'
            f'{"; **ground truth**" if row.ground_truth else ""} |')
    return '\n'.join(lines)


def bridge_options() -> str:
    """Return the bridge's flags and parameters with their defaults and ranges."""
    from pylon_bridge import config
    from pylon_common.parameters import TYPE_NAMES
    lines = ['| Flag | Parameter | Type | Default | Range | Meaning |',
             '|---|---|---|---|---|---|']
    for option in config.OPTIONS:
        if option.derived:
            default = f'`{option.template}` → `{getattr(config.defaults(), option.name)}`'
        else:
            default = f'`{config.default_text(option)}`'
        flag = f'`{option.flag}`'
        if option.type is bool:
            flag += f', `--no-{option.flag[2:]}`'
        lines.append(f'| {flag} | `{option.name}` | {TYPE_NAMES[option.type]} | {default} | '
                     f'{_md(option.range_text())} | {_md(option.description)} |')
    return '\n'.join(lines)


def parameter_table(rows: Iterable) -> str:
    """Return a node's parameters: name, type, default, range, meaning."""
    from pylon_common.parameters import TYPE_NAMES
    lines = ['| Parameter | Type | Default | Range | Meaning |', '|---|---|---|---|---|']
    for row in rows:
        default = str(row.default).lower() if isinstance(row.default, bool) else row.default
        lines.append(f'| `{row.name}` | {TYPE_NAMES[row.type]} | `{default}` | '
                     f'{_md(row.range_text())} | {_md(row.description)} |')
    return '\n'.join(lines)


def _node_parameters(module: str) -> Callable[[], str]:
    def generate() -> str:
        import importlib
        return parameter_table(importlib.import_module(module).PARAMETERS)
    generate.__doc__ = f'The parameters of {module}.'
    return generate


def mission_status() -> str:
    """Return the index table of a vehicle's status array (``pylon_common.mission``)."""
    from pylon_common import mission
    lines = ['| Index | Field | Meaning | In the rendezvous | In a race |',
             '|---|---|---|---|---|']
    for index, (name, meaning, rendezvous, race) in enumerate(mission.STATUS_FIELDS):
        lines.append(f'| {index} | `{name}` | {_md(meaning)} | {_md(rendezvous)} | '
                     f'{_md(race)} |')
    return '\n'.join(lines)


def _states(table_name: str) -> Callable[[], str]:
    def generate() -> str:
        from pylon_common import mission
        lines = ['| State | Meaning |', '|---|---|']
        for name, meaning in getattr(mission, table_name):
            lines.append(f'| `{name}` | {_md(meaning)} |')
        return '\n'.join(lines)
    generate.__doc__ = f'The states of pylon_common.mission.{table_name}, in order.'
    return generate


BLOCKS: dict[str, tuple[str, Callable[[], str]]] = {
    'topic-contract': ('ws/src/pylon_common/README.md', topic_contract),
    'bridge-options': ('ws/src/pylon_bridge/README.md', bridge_options),
    'bridge-topics': ('ws/src/pylon_bridge/README.md', bridge_topics),
    'controller-parameters': ('ws/src/pylon_vehicle_control/README.md',
                              _node_parameters('pylon_vehicle_control.controller_params')),
    'estimator-parameters': ('ws/src/pylon_vehicle_control/README.md',
                             _node_parameters('pylon_vehicle_control.estimator_params')),
    'evaluator-parameters': ('ws/src/pylon_vehicle_control/README.md',
                             _node_parameters('pylon_vehicle_control.evaluator_node')),
    'chaser-parameters': ('ws/src/pylon_vehicle_control/README.md',
                          _node_parameters('pylon_vehicle_control.chaser_node')),
    'manager-parameters': ('ws/src/pylon_mission/README.md',
                           _node_parameters('pylon_mission.manager_node')),
    'referee-parameters': ('ws/src/pylon_mission/README.md',
                           _node_parameters('pylon_mission.referee_node')),
    'mission-status': ('ws/src/pylon_mission/README.md', mission_status),
    'mission-admin-states': ('ws/src/pylon_mission/README.md', _states('ADMIN_STATES')),
    'mission-vehicle-states': ('ws/src/pylon_mission/README.md', _states('VEHICLE_STATES')),
    'kart-localizer-parameters': ('ws/src/pylon_kart/README.md',
                                  _node_parameters('pylon_kart.localizer_node')),
    'trajectory-publisher-parameters': ('ws/src/pylon_kart/README.md',
                                        _node_parameters('pylon_kart.trajectory_node')),
    'race-view-parameters': ('ws/src/pylon_kart/README.md',
                             _node_parameters('pylon_kart.race_view_node')),
    'pure-pursuit-parameters': ('ws/src/pylon_kart/README.md',
                                _node_parameters('pylon_kart.pure_pursuit_node')),
    'viewer-parameters': ('ws/src/pylon_tools/README.md',
                          _node_parameters('pylon_tools.viewer')),
    'recorder-parameters': ('ws/src/pylon_tools/README.md',
                            _node_parameters('pylon_tools.recorder_node')),
}


def _replace(text: str, name: str, body: str) -> str | None:
    pattern = re.compile(re.escape(BEGIN.format(name=name)) + r'\n.*?' + re.escape(END),
                         re.DOTALL)
    if not pattern.search(text):
        return None
    return pattern.sub(lambda _: f'{BEGIN.format(name=name)}\n{body}\n{END}', text, count=1)


def run(write: bool) -> list[str]:
    """Check (or rewrite) every block; return the problems left."""
    problems = []
    for name, (relative, generate) in BLOCKS.items():
        path = ROOT / relative
        text = path.read_text(encoding='utf-8')
        updated = _replace(text, name, generate())
        if updated is None:
            problems.append(f'{relative}: no block {BEGIN.format(name=name)}')
        elif updated != text:
            if write:
                path.write_text(updated, encoding='utf-8')
            else:
                problems.append(f'{relative}: block {name!r} is stale '
                                '(ci/env.sh python ci/docs.py --write)')
    return problems


def main(argv: list[str] | None = None) -> int:
    """Check or write the generated blocks; exit 1 when one is missing or stale."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--write', action='store_true', help='rewrite stale blocks')
    problems = run(parser.parse_args(argv).write)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
