"""Typed access to a scenario file's YAML that names the file and the key in every error."""

from __future__ import annotations

import math
from pathlib import Path
import re
from typing import Any


class ScenarioError(ValueError):
    """A scenario file that cannot be flown; the message names file, key and problem."""


class Reader:
    """Typed access to a YAML mapping that reports errors with file and key path."""

    def __init__(self, path: Path, data: Any, where: str = '') -> None:
        self.path, self.data, self.where = path, data, where
        if not isinstance(data, dict):
            self.fail('', f'must be a mapping, got {type(data).__name__}')

    def fail(self, key: str, what: str) -> None:
        """Raise ScenarioError naming the file, this block's key path + ``key`` and ``what``."""
        location = '.'.join(p for p in (self.where, key) if p) or '(top level)'
        raise ScenarioError(f'{self.path}: {location}: {what}')

    def has(self, key: str) -> bool:
        """Tell whether the block has ``key``."""
        return key in self.data

    def sub(self, key: str) -> Reader:
        """Return the required mapping under ``key``."""
        if key not in self.data:
            self.fail(key, 'is required')
        return Reader(self.path, self.data[key], '.'.join(p for p in (self.where, key) if p))

    def items(self, key: str) -> list[Reader]:
        """Return the required non-empty list of mappings under ``key``."""
        value = self.data.get(key)
        if not isinstance(value, list) or not value:
            self.fail(key, 'must be a non-empty list')
        prefix = '.'.join(p for p in (self.where, key) if p)
        return [Reader(self.path, item, f'{prefix}[{i}]') for i, item in enumerate(value)]

    def optional_items(self, key: str) -> list[Reader]:
        """Return the list of mappings under ``key``, empty when absent."""
        return self.items(key) if self.data.get(key) else []

    def number(self, key: str, default: float | None = None, low: float = -math.inf,
               high: float = math.inf, positive: bool = False) -> float:
        """Return a finite number within [low, high] (> 0 if ``positive``), or the default."""
        if key not in self.data:
            if default is None:
                self.fail(key, 'is required')
            return default
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(key, f'must be a number, got {value!r}')
        value = float(value)
        if not math.isfinite(value):
            self.fail(key, f'must be finite, got {value!r}')
        if positive and value <= 0:
            self.fail(key, f'must be > 0, got {value!r}')
        if not low <= value <= high:
            self.fail(key, f'must be within [{low}, {high}], got {value!r}')
        return value

    def integer(self, key: str, default: int | None = None, low: int = 0,
                high: int = 2 ** 32 - 1) -> int:
        """Return an integer within [low, high], or the default."""
        if key not in self.data:
            if default is None:
                self.fail(key, 'is required')
            return default
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f'must be an integer, got {value!r}')
        if not low <= value <= high:
            self.fail(key, f'must be within [{low}, {high}], got {value!r}')
        return value

    def string(self, key: str, default: str | None = None, pattern: re.Pattern | None = None,
               choices: tuple[str, ...] | None = None) -> str:
        """Return a non-empty string (matching ``pattern``, one of ``choices``), or the default."""
        if key not in self.data:
            if default is None:
                self.fail(key, 'is required')
            return default
        value = self.data[key]
        if not isinstance(value, str) or not value.strip():
            self.fail(key, f'must be a non-empty string, got {value!r}')
        if pattern is not None and not pattern.match(value):
            self.fail(key, f'{value!r} does not match {pattern.pattern}')
        if choices is not None and value not in choices:
            self.fail(key, f'{value!r} is not one of {", ".join(choices)}')
        return value

    def boolean(self, key: str, default: bool) -> bool:
        """Return a YAML true/false, or the default."""
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            self.fail(key, f'must be true or false, got {value!r}')
        return value

    def vector(self, key: str, length: int, default: tuple | None = None) -> tuple:
        """Return a list of ``length`` finite numbers as a tuple, or the default."""
        if key not in self.data:
            if default is None:
                self.fail(key, 'is required')
            return default
        value = self.data[key]
        if (not isinstance(value, list) or len(value) != length
                or any(isinstance(v, bool) or not isinstance(v, (int, float))
                       or not math.isfinite(v) for v in value)):
            self.fail(key, f'must be a list of {length} finite numbers, got {value!r}')
        return tuple(float(v) for v in value)

    def check_keys(self, allowed: tuple[str, ...]) -> None:
        """Refuse any key of the block not in ``allowed``."""
        for key in self.data:
            if key not in allowed:
                self.fail(str(key), f'unknown key (allowed: {", ".join(allowed)})')
