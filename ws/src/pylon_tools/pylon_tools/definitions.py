"""Complete message definitions in the ``ros2msg`` encoding, from the installed interfaces.

A recording (rosbag2's MCAP storage) and a Foxglove viewer carry, with each channel, the
*complete* definition of its message type: the type's own ``.msg`` text first, then every
message type it depends on (field types, their field types, ...; each once, depth first),
each preceded by a line of 80 ``=`` and a line ``MSG: <package>/msg/<Type>``. The texts are
read from the installed interface definitions (``share/<package>/msg/<Type>.msg``, found
through the ament index), the same files rosbag2 reads, so any message type installed
here (the workspace's own, ``tf2_msgs``, the standard ones) works.

``definition('geometry_msgs/msg/PoseStamped')`` returns that text; ``canonical`` turns
``pkg/Type`` or ``pkg/msg/Type`` into ``pkg/msg/Type``. Unknown types raise
``DefinitionError``.
"""

from __future__ import annotations

import functools
from pathlib import Path
import re

SEPARATOR = '=' * 80
PRIMITIVES = frozenset({
    'bool', 'byte', 'char', 'float32', 'float64', 'int8', 'uint8', 'int16', 'uint16',
    'int32', 'uint32', 'int64', 'uint64', 'string', 'wstring'})
_ARRAY = re.compile(r'\[[^\]]*\]$')
_BOUND = re.compile(r'<=\d+$')


class DefinitionError(LookupError):
    """A message type whose definition is not installed (or not a message type)."""


def canonical(type_name: str) -> str:
    """Return ``pkg/msg/Type`` for ``pkg/msg/Type`` or ``pkg/Type``."""
    parts = type_name.strip('/').split('/')
    if len(parts) == 2:
        parts = [parts[0], 'msg', parts[1]]
    if len(parts) != 3 or parts[1] != 'msg' or not all(parts):
        raise DefinitionError(f'{type_name!r} is not a message type (pkg/msg/Type)')
    return '/'.join(parts)


@functools.cache
def own_text(type_name: str) -> str:
    """Return the ``.msg`` text of one message type, as installed."""
    package, _, name = canonical(type_name).split('/')
    from ament_index_python.packages import get_package_share_directory, PackageNotFoundError
    try:
        share = Path(get_package_share_directory(package))
    except (PackageNotFoundError, ValueError) as exc:
        raise DefinitionError(f'package {package!r} is not installed') from exc
    path = share / 'msg' / f'{name}.msg'
    try:
        return path.read_text(encoding='utf-8')
    except OSError as exc:
        raise DefinitionError(f'{type_name}: no {path}') from exc


def field_types(text: str, package: str) -> list[str]:
    """Return the message types (``pkg/msg/Type``) the fields of a ``.msg`` text use, in order.

    Constants, primitive types (with or without bounds or arrays) and comments are
    skipped; a type without a package is in ``package``.
    """
    found: list[str] = []
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        kind, *rest = line.split()
        if not rest or '=' in rest[0]:           # a constant (NAME=value) or malformed
            continue
        base = _BOUND.sub('', _ARRAY.sub('', kind))
        if base in PRIMITIVES:
            continue
        full = canonical(base if '/' in base else f'{package}/{base}')
        if full not in found:
            found.append(full)
    return found


@functools.cache
def definition(type_name: str) -> str:
    """Return the complete ``ros2msg`` definition of a message type."""
    top = canonical(type_name)
    order: list[str] = []

    def visit(name: str) -> None:
        for dependency in field_types(own_text(name), name.split('/')[0]):
            if dependency != top and dependency not in order:
                order.append(dependency)
                visit(dependency)
    visit(top)
    pieces = [own_text(top).rstrip('\n')]
    for name in order:
        pieces += [SEPARATOR, f'MSG: {name}', own_text(name).rstrip('\n')]
    return '\n'.join(pieces) + '\n'
