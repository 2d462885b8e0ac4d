"""One row type for every node parameter of the workspace, and one ``declare()``.

Each node keeps its table of ``Parameter`` rows beside the node (``udp_bridge``'s in
``pylon_bridge.config``, the controller's in ``controller_params``, the estimator's in
``estimator_params``, ...). A row says everything about one parameter: name, default (its
Python type is the parameter's type), description, range, whether it is read-only, and,
for the bridge's command line, its flag group and metavar. ``declare(node, rows)`` declares
every row with a ``ParameterDescriptor`` carrying the description, the range and the
read-only flag (``ros2 param describe`` shows them, and a value out of range is refused),
checks the values it got, and fails with the new name when a user's parameter file still
sets a parameter that was renamed or removed (``Retired``).

Nothing here needs ``rclpy`` except ``declare`` and ``descriptor`` (imported there), so a
command's ``--help`` works without ROS.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
import math
import re
from typing import Any

Value = bool | int | float | str
TYPE_NAMES = {str: 'string', int: 'integer', float: 'float', bool: 'bool'}


@dataclass(frozen=True)
class Parameter:
    """One node parameter.

    ``topic``: the value is a ROS topic name and is checked as one. ``derived_from`` and
    ``suffix``: a topic whose default is ``<value of derived_from>/<suffix>``; its declared
    default is ``''``, meaning "derive it". ``group`` and ``metavar`` place it in a
    command line's ``--help`` (``udp_bridge``: every parameter is also a flag).
    """

    name: str
    default: Value
    description: str
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    read_only: bool = True
    topic: bool = False
    derived_from: str | None = None
    suffix: str = ''
    group: str = ''
    metavar: str | None = None

    @property
    def type(self) -> type:
        """Return the parameter's Python type (the default's)."""
        return type(self.default)

    @property
    def flag(self) -> str:
        """Return the command-line spelling, e.g. ``--topic-prefix``."""
        return '--' + self.name.replace('_', '-')

    @property
    def label(self) -> str:
        """Return how error messages name the parameter: name and flag."""
        return f'option {self.name} ({self.flag})'

    @property
    def derived(self) -> bool:
        """Return whether the default is derived from a prefix parameter."""
        return self.derived_from is not None

    @property
    def template(self) -> str:
        """Return the derived default as text, e.g. ``<topic-prefix>/lifecycle``."""
        if self.derived_from is None:
            return ''
        return f'<{self.derived_from.replace("_", "-")}>/{self.suffix}'

    def range_text(self) -> str:
        """Return the allowed range in words, or ``''`` when any value of the type goes."""
        if self.minimum is None and self.maximum is None:
            return ''
        def text(value: float) -> str:
            return str(int(value)) if self.type is int else f'{value:g}'
        low = '' if self.minimum is None else text(self.minimum)
        high = '' if self.maximum is None else text(self.maximum)
        if self.maximum is None:
            return f'> {low}' if self.exclusive_minimum else f'>= {low}'
        if self.minimum is None:
            return f'<= {high}'
        if self.exclusive_minimum:
            return f'> {low} and <= {high}'
        return f'{low}–{high}'


@dataclass(frozen=True)
class Retired:
    """A parameter that no longer exists, and what to use instead (named in the error)."""

    name: str
    instead: str


# -- values -------------------------------------------------------------------------------

def coerce(row: Parameter, value: Any) -> Value:
    """Return ``value`` as the row's type; ValueError naming the parameter if it is not.

    An integer is accepted for a float parameter; a bool is never a number.
    """
    kind = row.type
    if kind is bool:
        ok = isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    else:
        ok = isinstance(value, str)
    if not ok:
        raise ValueError(f'{row.label}: expected a {TYPE_NAMES[kind]}, got {value!r}')
    return float(value) if kind is float else value


def check(row: Parameter, value: Value) -> None:
    """Raise ValueError naming the parameter if ``value`` is out of range or not a topic name.

    ``''`` is accepted for a derived topic (it means "derive from the prefix") and for a
    string whose default is ``''``; any other string parameter must not be empty.
    """
    if row.type in (int, float):
        low, high = row.minimum, row.maximum
        bad = (not math.isfinite(value)
               or (low is not None and (value <= low if row.exclusive_minimum
                                        else value < low))
               or (high is not None and value > high))
        if bad:
            raise ValueError(f'{row.label}: must be {row.range_text()}, got {value!r}')
    elif row.topic and not (row.derived and value == ''):
        problem = topic_name_problem(value)
        if problem:
            raise ValueError(f'{row.label}: {value!r} is not a valid ROS topic name '
                             f'({problem})')
    elif row.type is str and row.default and not value:
        raise ValueError(f'{row.label}: must not be empty')


def checked(row: Parameter, value: Any) -> Value:
    """Return ``value`` coerced to the row's type and checked against its range."""
    value = coerce(row, value)
    check(row, value)
    return value


def resolve(rows: Iterable[Parameter], values: Mapping[str, Any] | None = None,
            ) -> dict[str, Value]:
    """Return every row's value: its default, overridden by the checked ``values``."""
    by_name = {row.name: row for row in rows}
    unknown = sorted(set(values or {}) - set(by_name))
    if unknown:
        raise ValueError(f'unknown parameter(s): {", ".join(unknown)}')
    out = {name: row.default for name, row in by_name.items()}
    for name, value in (values or {}).items():
        out[name] = checked(by_name[name], value)
    return out


_TOKEN = re.compile(r'^(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})+$')


def topic_name_problem(name: str) -> str:
    """Return why ``name`` is not a valid absolute or relative ROS topic name, or ``''``.

    rcl's rules, checked without loading rclpy (so that ``--help`` needs no ROS): not
    empty; ``~`` only as the first character and followed by ``/`` or nothing; tokens
    between slashes non-empty, made of letters, digits and underscores (or a ``{sub}``
    substitution) and not starting with a digit; no trailing slash.
    """
    if not name:
        return 'topic name must not be empty'
    body = name
    if body.startswith('~'):
        body = body[1:]
        if body and not body.startswith('/'):
            return "'~' must be followed by '/'"
        if not body:
            return ''
    if body.startswith('/'):
        body = body[1:]
    if not body:
        return 'topic name must not be only a slash'
    if body.endswith('/'):
        return 'topic name must not end with a slash'
    for token in body.split('/'):
        if not token:
            return 'topic name must not contain repeated slashes'
        if not _TOKEN.match(token):
            return (f'token {token!r} must contain only letters, digits and underscores '
                    'and must not start with a digit')
    return ''


# -- parameter files ------------------------------------------------------------------------

ANY_NAMESPACE = '/**/'
"""How a shipped parameter file keys a node's section: ``/**/setpoint_controller``.

ROS matches a section's key against the node's fully qualified name: a bare
``setpoint_controller`` is ``/setpoint_controller`` and misses the same node started under
a namespace (``-r __ns:=/vehicle_2``, as the topic contract advertises), which then runs on
its defaults without a word. ``/**/<node>`` matches the node in every namespace (the root
one too) and still only that node; ``/**`` alone would hand every section of an overlay
(which may address the bridge and the controller at once) to every node given the file."""


def file_section(node: str) -> str:
    """Return the key of ``node``'s section in a parameter file (``ANY_NAMESPACE``)."""
    return ANY_NAMESPACE + node


def section_node(key: object) -> str:
    """Return the node name a parameter file's section key addresses.

    ``/**/setpoint_controller``, ``/vehicle_2/setpoint_controller`` and
    ``setpoint_controller`` give ``setpoint_controller``; ``/**`` gives ``**`` (every node).
    """
    return str(key).rstrip('/').rsplit('/', 1)[-1]


# -- ROS ------------------------------------------------------------------------------------

def descriptor(row: Parameter) -> Any:
    """Return the ``ParameterDescriptor`` of a row: description, range, read-only."""
    from rcl_interfaces.msg import (
        FloatingPointRange,
        IntegerRange,
        ParameterDescriptor,
        ParameterType,
    )
    kinds = {str: ParameterType.PARAMETER_STRING, int: ParameterType.PARAMETER_INTEGER,
             float: ParameterType.PARAMETER_DOUBLE, bool: ParameterType.PARAMETER_BOOL}
    result = ParameterDescriptor(name=row.name, type=kinds[row.type],
                                 description=row.description, read_only=row.read_only)
    constraints = [row.range_text()] if row.range_text() else []
    if row.type is int and row.minimum is not None and row.maximum is not None:
        result.integer_range = [IntegerRange(from_value=int(row.minimum),
                                             to_value=int(row.maximum), step=1)]
    elif row.type is float and row.minimum is not None:
        result.floating_point_range = [FloatingPointRange(
            from_value=float(row.minimum),
            to_value=math.inf if row.maximum is None else float(row.maximum), step=0.0)]
    if row.topic:
        constraints.append('a valid ROS topic name')
    if row.derived:
        constraints.append(f"'' = {row.template}")
    result.additional_constraints = '; '.join(constraints)
    return result


def declare(node: Any, rows: Iterable[Parameter],
            retired: Iterable[Retired] = ()) -> dict[str, Value]:
    """Declare every row as a parameter of ``node``; return the checked values in force.

    Raise ValueError naming the parameter for a wrong type or a value out of range, and
    naming what to use instead for a parameter the user still sets that was ``retired``.
    A set parameter that no row declares is logged as a warning (it has no effect).
    """
    from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
    rows = tuple(rows)
    _refuse_retired(node, rows, retired)
    values: dict[str, Value] = {}
    for row in rows:
        try:
            value = node.declare_parameter(row.name, row.default, descriptor(row)).value
        except InvalidParameterTypeException as exc:
            hint = ' (write a decimal point, e.g. 5.0)' if row.type is float else ''
            raise ValueError(f'{row.label}: the parameter must be a '
                             f'{TYPE_NAMES[row.type]}{hint}: {exc}') from exc
        except InvalidParameterValueException as exc:
            raise ValueError(f'{row.label}: must be {row.range_text()}: {exc}') from exc
        values[row.name] = checked(row, value)
    return values


def _overrides(node: Any) -> set[str]:
    """Return the names of the parameters the node was given (files, ``-p``)."""
    return set(getattr(node, '_parameter_overrides', {}) or {})


def _refuse_retired(node: Any, rows: tuple[Parameter, ...], retired: Iterable[Retired]) -> None:
    given = _overrides(node)
    for old in retired:
        if old.name in given:
            raise ValueError(f'parameter {old.name!r} of {node.get_name()} no longer exists: '
                             f'{old.instead}')
    known = {row.name for row in rows} | {'use_sim_time', 'start_type_description_service'}
    unknown = sorted(name for name in given - known if not name.startswith('qos_overrides.'))
    if unknown:
        node.get_logger().warning(f'ignoring parameters {node.get_name()} does not have: '
                                  f'{", ".join(unknown)}')
