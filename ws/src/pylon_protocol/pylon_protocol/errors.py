"""The one exception type of pylon_protocol.

Every rejection of input (a datagram, a field, a chunk, a model) raises ``ProtocolError``
and nothing else. ``reason`` is a short snake_case word a caller can count in diagnostics
(``invalid_json``, ``bad_version``, ``missing_field``, ``bad_field``, ...); ``str(error)``
says what was wrong and where, for a log line.
"""

from __future__ import annotations


class ProtocolError(ValueError):
    """Input that does not follow the PyLoN protocol v1."""

    def __init__(self, reason: str, detail: str = '', field: str = '') -> None:
        """Record the countable ``reason``, a human ``detail`` and the offending ``field``."""
        self.reason = reason
        self.detail = detail
        self.field = field
        where = f' at {field}' if field else ''
        super().__init__(f'{reason}{where}: {detail}' if detail else f'{reason}{where}')
