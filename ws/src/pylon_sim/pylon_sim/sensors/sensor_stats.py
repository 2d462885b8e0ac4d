"""What the simulator's sensors cost and how many samples they took or skipped (plain data)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
import time


@dataclass
class SensorStats:
    """CPU time and sample counts by sensor kind, shared by the sensors' loops."""

    cost: Counter = field(default_factory=Counter)      # s of CPU time, by sensor kind
    samples: Counter = field(default_factory=Counter)   # samples taken, by sensor kind
    skipped: Counter = field(default_factory=Counter)   # not taken, by (kind, reason)

    def count(self, kind: str, start: float) -> None:
        """Count one sample of ``kind`` that began at CPU time ``start``."""
        self.cost[kind] += time.process_time() - start
        self.samples[kind] += 1
