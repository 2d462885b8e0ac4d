"""The settings of a sensor module of ours (``relative_nav``, ``gnss``): checked at load.

A scenario gives a module its settings as snake-case keys; each sensor kind lists its keys
with their allowed ranges (its ``LIMITS``) and fills in its defaults. ``check_keys`` refuses
a key the kind does not have (a misspelt setting would silently keep its default),
``check_number`` a value out of its range; both raise ``SettingError`` with the key named,
which the scenario reader reports.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
import math

#: The allowed values of a number setting: (low, high, low excluded).
Limits = tuple[float, float, bool]


class SettingError(ValueError):
    """A module setting that cannot be used: ``key`` and what is wrong with it."""

    def __init__(self, key: str, what: str) -> None:
        """Keep the key and the reason apart (the scenario reader names the key)."""
        super().__init__(f'{key}: {what}')
        self.key, self.what = key, what


def check_keys(values: Mapping[str, object], allowed: Iterable[str]) -> None:
    """Refuse the first key of ``values`` (sorted) that is neither allowed nor ``sensor_id``.

    ``sensor_id`` is the sensor's, not a setting, and is let through.
    """
    allowed = tuple(allowed)
    unknown = sorted(str(key) for key in values if key not in allowed and key != 'sensor_id')
    if unknown:
        raise SettingError(unknown[0], f'unknown setting (allowed: {", ".join(allowed)}, '
                                       'sensor_id)')


def check_number(key: str, value: object, limits: Limits) -> float:
    """Return ``value`` as a float if it is a finite number within ``limits``."""
    low, high, low_open = limits
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value):
        raise SettingError(key, f'must be a finite number, got {value!r}')
    if value < low or value > high or (low_open and value == low):
        bounds = f'{"(" if low_open else "["}{low:g}, {high:g}]'
        raise SettingError(key, f'must be within {bounds}, got {value!r}')
    return float(value)
