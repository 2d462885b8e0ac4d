"""Settings of the property tests (hypothesis) under the two profiles of the plugin.

``make test`` loads ``ci``: derandomized, the examples each test names, so a run is
repeatable. ``make fuzz`` loads ``fuzz``: random seeds and ``FUZZ_FACTOR`` times the
examples, for as long as its time budget lasts. A test writes
``settings(max_examples=examples(150), ...)`` and leaves randomness to the profile.
"""

from __future__ import annotations

from hypothesis import settings

FUZZ_FACTOR = 10


def examples(count: int) -> int:
    """Return ``count`` under a derandomized profile, ``FUZZ_FACTOR`` x ``count`` otherwise."""
    return count if settings.default.derandomize else count * FUZZ_FACTOR
