"""A small declarative toolkit to validate decoded JSON objects field by field.

A *check* is a callable that takes one decoded JSON value and returns its normalised form
(ints accepted as numbers become floats, quaternions may be normalised, vectors become new
lists) or raises ``ProtocolError``. The factories below build checks; ``Schema`` combines
named fields and whole-object checks; ``Variant`` picks a schema by a tag field.

Validation never mutates its input: it returns a new dict that keeps unknown fields as they
are (newer mods add optional fields) and holds the normalised value of every known one.
Errors carry a dotted path (``vessels[3].position``) in ``field`` and a reason from
``REASONS``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
import math
import re
from typing import Any, NamedTuple

from pylon_protocol.errors import ProtocolError

Check = Callable[[Any], Any]
ObjectCheck = Callable[[dict], None]

#: Every reason a field or object check raises.
FIELD_REASONS = frozenset({
    'missing_field',   # a required field is absent
    'bad_type',        # wrong JSON type (bool is neither int nor number)
    'out_of_range',    # a number or integer outside its range
    'non_finite',      # NaN or +-Infinity where a finite number is needed
    'bad_value',       # wrong constant, not in an allowlist, pattern mismatch, zero quaternion
    'bad_length',      # string length or vector length
    'too_many',        # an array longer than its limit
    'duplicate',       # ids that must be unique are not
    'inconsistent',    # fields that contradict each other
})

#: The ranges of the integer types the wire carries (uint32/uint64 ids, int64 sequences).
UINT32_MAX = 2**32 - 1
UINT64_MAX = 2**64 - 1
INT64_MAX = 2**63 - 1


class _Missing:
    def __repr__(self) -> str:
        return 'MISSING'


#: Marks an optional field without a default (an absent field stays absent).
MISSING: Any = _Missing()
#: The largest integer that ``float()`` converts without overflow (it rounds to DBL_MAX).
_FLOAT_INT_MAX = 2**1024 - 2**970 - 1
_INF = math.inf
_isfinite = math.isfinite


def _type_name(value: object) -> str:
    return 'null' if value is None else type(value).__name__


def _bad_type(value: object, expected: str) -> ProtocolError:
    return ProtocolError('bad_type', f'{_type_name(value)}, expected {expected}')


def _join(prefix: str, inner: str) -> str:
    if not inner:
        return prefix
    return prefix + inner if inner.startswith('[') else f'{prefix}.{inner}'


def relocate(error: ProtocolError, prefix: str) -> ProtocolError:
    """Return a copy of ``error`` whose field path is below ``prefix``."""
    return ProtocolError(error.reason, error.detail, _join(prefix, error.field))


# -- scalar checks ------------------------------------------------------------------------

def boolean() -> Check:
    """Return a check for a strict JSON bool (0/1 and strings are rejected)."""
    def check(value: Any) -> bool:
        if value is True or value is False:
            return value
        raise _bad_type(value, 'bool')
    return check


def integer(lo: int | None = None, hi: int | None = None,
            choices: Iterable[int] | None = None) -> Check:
    """Return a check for a JSON integer in ``lo..hi`` (inclusive); bool and 1.0 rejected."""
    allowed = frozenset(choices) if choices is not None else None
    low = -_INF if lo is None else lo
    high = _INF if hi is None else hi

    def check(value: Any) -> int:
        if type(value) is not int:
            raise _bad_type(value, 'int')
        if not low <= value <= high:
            raise ProtocolError('out_of_range', f'{short_int(value)} not in {lo}..{hi}')
        if allowed is not None and value not in allowed:
            raise ProtocolError('bad_value', f'{value} not in {sorted(allowed)}')
        return value
    return check


def short_int(value: int) -> str:
    """Return an integer as text for a message, without huge numbers of digits."""
    return str(value) if value.bit_length() <= 128 else f'an integer of {value.bit_length()} bits'


def _as_float(value: Any) -> float:
    """Return a JSON number as a float; raise for other types, overflow and non-finite."""
    kind = type(value)
    if kind is float:
        if not _isfinite(value):
            raise ProtocolError('non_finite', repr(value))
        return value
    if kind is int:
        try:
            return float(value)
        except OverflowError:
            raise ProtocolError('out_of_range', 'integer too large for a double') from None
    raise _bad_type(value, 'number')


def number(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
           hi_open: bool = False, clamp_lo: bool = False) -> Check:
    """Return a check for a finite JSON number (int or float, not bool), as a float.

    ``lo``/``hi`` bound it (inclusive unless ``lo_open``/``hi_open``). With ``clamp_lo``
    a value below ``lo`` is raised to ``lo`` instead of being rejected.
    """
    low = -_INF if lo is None else lo
    high = _INF if hi is None else hi
    if lo is None and hi is None:
        return _as_float
    text = f'{"(" if lo_open else "["}{lo}, {hi}{")" if hi_open else "]"}'

    def check(value: Any) -> float:
        value = _as_float(value)
        if value < low or (lo_open and value == low):
            if clamp_lo:
                return float(low)
            raise ProtocolError('out_of_range', f'{value!r} not in {text}')
        if value > high or (hi_open and value == high):
            raise ProtocolError('out_of_range', f'{value!r} not in {text}')
        return value
    return check


def number_choice(choices: Iterable[int]) -> Check:
    """Return a check for a JSON number equal to one of a few integers; returns the int."""
    allowed = frozenset(choices)

    def check(value: Any) -> int:
        value = _as_float(value)
        if value not in allowed:
            raise ProtocolError('bad_value', f'{value!r} not in {sorted(allowed)}')
        return int(value)
    return check


def string(*, min_len: int = 0, max_len: int | None = None, pattern: str | None = None,
           choices: Iterable[str] | None = None, non_blank: bool = False,
           normalise: Callable[[str], str] | None = None, empty_default: str | None = None
           ) -> Check:
    """Return a check for a JSON string.

    The order is: ``empty_default`` replaces ``""``; ``normalise`` (for example
    ``str.upper``) transforms the text; then length (``bad_length``), ``non_blank``,
    ``pattern`` (full match) and ``choices`` (``bad_value``) are checked.
    """
    regex = re.compile(pattern) if pattern is not None else None
    allowed = frozenset(choices) if choices is not None else None
    high = max_len if max_len is not None else _INF

    def check(value: Any) -> str:
        if type(value) is not str:
            raise _bad_type(value, 'string')
        if empty_default is not None and not value:
            value = empty_default
        if normalise is not None:
            value = normalise(value)
        if not min_len <= len(value) <= high:
            raise ProtocolError('bad_length', f'{len(value)} chars not in {min_len}..{max_len}')
        if non_blank and not value.strip():
            raise ProtocolError('bad_value', 'blank string')
        if regex is not None and regex.fullmatch(value) is None:
            raise ProtocolError('bad_value', f'{value!r:.80} does not match {pattern}')
        if allowed is not None and value not in allowed:
            raise ProtocolError('bad_value', f'{value!r:.80} not in {sorted(allowed)}')
        return value
    return check


_BASE64 = re.compile(r'[A-Za-z0-9+/]*={0,2}')
_BASE64_VALUES = {c: i for i, c in enumerate(
    'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/')}


def _unused_bits_are_zero(text: str) -> bool:
    """Tell whether the bits padding discards are 0, so the text is the canonical encoding."""
    if text.endswith('=='):
        return _BASE64_VALUES[text[-3]] & 0b1111 == 0
    if text.endswith('='):
        return _BASE64_VALUES[text[-2]] & 0b11 == 0
    return True


def base64_string(*, min_bytes: int = 0, max_bytes: int | None = None) -> Check:
    """Return a check for strict base64 text: padded, standard alphabet, canonical.

    Whitespace, the URL-safe alphabet, missing padding and non-zero pad bits are rejected
    (``bad_value``); the decoded size must lie in ``min_bytes..max_bytes``
    (``bad_length``). The text is returned unchanged; ``base64_size`` gives the decoded
    size without decoding.
    """
    high = max_bytes if max_bytes is not None else _INF

    def check(value: Any) -> str:
        if type(value) is not str:
            raise _bad_type(value, 'base64 string')
        if len(value) % 4 or _BASE64.fullmatch(value) is None:
            raise ProtocolError('bad_value', 'not strict padded base64')
        if not _unused_bits_are_zero(value):
            raise ProtocolError('bad_value', 'non-canonical base64 (non-zero pad bits)')
        size = base64_size(value)
        if not min_bytes <= size <= high:
            raise ProtocolError('bad_length', f'{size} decoded bytes not in '
                                f'{min_bytes}..{max_bytes}')
        return value
    return check


def base64_size(text: str) -> int:
    """Return the decoded size of valid padded base64 text."""
    return len(text) // 4 * 3 - (len(text) - len(text.rstrip('=')))


def constant(value: str) -> Check:
    """Return a check for a string that must equal ``value`` exactly."""
    return string(choices=(value,))


def nullable(inner: Check) -> Check:
    """Return a check that lets JSON ``null`` through as ``None`` and applies ``inner``."""
    def check(value: Any) -> Any:
        return None if value is None else inner(value)
    return check


def any_value() -> Check:
    """Return a check that accepts any JSON value unchanged (declared but unchecked)."""
    return lambda value: value


# -- arrays and vectors -------------------------------------------------------------------

def vector(length: int = 3) -> Check:
    """Return a check for an array of exactly ``length`` finite numbers; returns floats."""
    def check(value: Any) -> list[float]:
        kind = type(value)
        if (kind is list or kind is tuple) and len(value) == length:
            out = []                        # the common case: no call per element
            append = out.append
            for item in value:
                kind = type(item)
                if kind is float and item - item == 0.0:        # finite (not NaN, not inf)
                    append(item)
                elif kind is int and -_FLOAT_INT_MAX <= item <= _FLOAT_INT_MAX:
                    append(float(item))
                else:
                    break                   # the loop below says what is wrong
            else:
                return out
        if type(value) is not list and type(value) is not tuple:
            raise _bad_type(value, f'array of {length} numbers')
        if len(value) != length:
            raise ProtocolError('bad_length', f'{len(value)} elements, expected {length}')
        out = []
        for index, item in enumerate(value):
            try:
                out.append(_as_float(item))
            except ProtocolError as exc:
                raise relocate(exc, f'[{index}]') from None
        return out
    return check


def quaternion(*, normalise: bool = True, unit_tolerance: float | None = None) -> Check:
    """Return a check for a quaternion ``[x, y, z, w]``.

    It must be 4 finite numbers with a norm of at least 1e-9 (``bad_value`` otherwise).
    ``normalise`` divides by the norm; ``unit_tolerance`` instead requires
    ``|norm - 1| <= unit_tolerance``.
    """
    as_vector = vector(4)

    def check(value: Any) -> list[float]:
        q = as_vector(value)
        norm = math.hypot(*q)
        if not norm >= 1e-9 or not _isfinite(norm):
            raise ProtocolError('bad_value', f'quaternion norm {norm!r} unusable')
        if unit_tolerance is not None and abs(norm - 1.0) > unit_tolerance:
            raise ProtocolError('bad_value', f'quaternion norm {norm!r} is not 1')
        if normalise:
            return [q[0] / norm, q[1] / norm, q[2] / norm, q[3] / norm]
        return q
    return check


def flat_array(*, max_len: int | None = None, multiple_of: int = 1, allow_null: bool = False,
               allow_non_finite: bool = False) -> Check:
    """Return a check for a flat array of numbers (nested arrays rejected); returns floats.

    ``allow_null`` keeps JSON ``null`` elements as ``None``; ``allow_non_finite`` keeps NaN
    and infinities (for data the consumer filters itself).
    """
    high = max_len if max_len is not None else _INF

    def check(value: Any) -> list:
        if type(value) is not list and type(value) is not tuple:
            raise _bad_type(value, 'array of numbers')
        if len(value) > high:
            raise ProtocolError('too_many', f'{len(value)} elements > {max_len}')
        if len(value) % multiple_of:
            raise ProtocolError('bad_length', f'{len(value)} elements, not a multiple of '
                                f'{multiple_of}')
        out = []
        append = out.append
        for index, item in enumerate(value):
            kind = type(item)
            if kind is float and (allow_non_finite or _isfinite(item)):
                append(item)
            elif item is None and allow_null:
                append(None)
            else:
                try:
                    append(_as_float(item))
                except ProtocolError as exc:
                    raise relocate(exc, f'[{index}]') from None
        return out
    return check


def wrench() -> Check:
    """Return a check for ``{"force": [3], "torque": [3]}``; other keys are kept."""
    three = vector(3)

    def check(value: Any) -> dict:
        if type(value) is not dict:
            raise _bad_type(value, 'wrench object')
        out = dict(value)
        for key in ('force', 'torque'):
            if key not in value:
                raise ProtocolError('missing_field', 'wrench needs force and torque', key)
            try:
                out[key] = three(value[key])
            except ProtocolError as exc:
                raise relocate(exc, key) from None
        return out
    return check


def array(item: Check, *, max_count: int | None = None, min_count: int = 0) -> Check:
    """Return a check for an array whose elements all pass ``item``; returns a new list."""
    high = max_count if max_count is not None else _INF

    def check(value: Any) -> list:
        if type(value) is not list and type(value) is not tuple:
            raise _bad_type(value, 'array')
        if len(value) > high:
            raise ProtocolError('too_many', f'{len(value)} elements > {max_count}')
        if len(value) < min_count:
            raise ProtocolError('bad_length', f'{len(value)} elements < {min_count}')
        out = []
        for index, element in enumerate(value):
            try:
                out.append(item(element))
            except ProtocolError as exc:
                raise relocate(exc, f'[{index}]') from None
        return out
    return check


# -- objects ------------------------------------------------------------------------------

class Field(NamedTuple):
    """One named field of a schema."""

    check: Check
    required: bool
    default: Any


def required(check: Check) -> Field:
    """Declare a field that must be present."""
    return Field(check, True, MISSING)


def optional(check: Check, default: Any = MISSING) -> Field:
    """Declare a field that may be absent; an absent one gets ``default`` unless MISSING.

    A list default is copied for every object, so results never share it.
    """
    return Field(check, False, default)


class Schema:
    """Named fields plus whole-object checks; callable as a check of a sub-object."""

    __slots__ = ('name', 'fields', '_plan', '_object_checks')

    def __init__(self, name: str, fields: Mapping[str, Field],
                 object_checks: Sequence[ObjectCheck] = ()) -> None:
        """Precompile the field list; ``object_checks`` run on the normalised result."""
        self.name = name
        self.fields = dict(fields)
        self._plan = tuple((key, spec.check, spec.required, spec.default,
                            type(spec.default) is list) for key, spec in self.fields.items())
        self._object_checks = tuple(object_checks)

    def extend(self, name: str, fields: Mapping[str, Field],
               object_checks: Sequence[ObjectCheck] = ()) -> Schema:
        """Return a new schema with more (or replaced) fields and more object checks."""
        return Schema(name, {**self.fields, **fields}, self._object_checks + tuple(object_checks))

    def __call__(self, value: Any) -> dict:
        """Validate ``value`` and return the new normalised dict."""
        if type(value) is not dict:
            raise _bad_type(value, 'object')
        out = dict(value)
        key = ''
        try:
            for key, check, needed, default, copy_default in self._plan:
                if key in value:
                    out[key] = check(value[key])
                elif needed:
                    raise ProtocolError('missing_field', f'{self.name} needs it')
                elif default is not MISSING:
                    out[key] = list(default) if copy_default else default
        except ProtocolError as exc:
            raise relocate(exc, key) from None
        for object_check in self._object_checks:
            object_check(out)
        return out

    validate = __call__


class Variant:
    """A family of schemas selected by the string value of a tag field."""

    __slots__ = ('name', 'tag', 'schemas')

    def __init__(self, name: str, tag: str, schemas: Mapping[str, Schema]) -> None:
        """Select ``schemas[obj[tag]]`` for each object."""
        self.name = name
        self.tag = tag
        self.schemas = dict(schemas)

    def __call__(self, value: Any) -> dict:
        """Validate ``value`` with the schema its tag names."""
        if type(value) is not dict:
            raise _bad_type(value, 'object')
        tag = value.get(self.tag, MISSING)
        if tag is MISSING:
            raise ProtocolError('missing_field', f'{self.name} needs it', self.tag)
        if type(tag) is not str:
            raise ProtocolError('bad_type', f'{_type_name(tag)}, expected string', self.tag)
        schema = self.schemas.get(tag)
        if schema is None:
            raise ProtocolError('bad_value', f'{tag!r:.80} not in {sorted(self.schemas)}',
                                self.tag)
        return schema(value)

    validate = __call__


# -- helpers for object checks ------------------------------------------------------------

def inconsistent(detail: str, field: str = '') -> ProtocolError:
    """Return the error for fields that contradict each other."""
    return ProtocolError('inconsistent', detail, field)


def require_unique(values: Iterable[Any], field: str, what: str = 'id') -> None:
    """Raise ``duplicate`` if any value occurs twice."""
    seen = set()
    for value in values:
        if value in seen:
            raise ProtocolError('duplicate', f'{what} {value!r:.80} occurs twice', field)
        seen.add(value)
