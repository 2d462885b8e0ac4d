"""The audit of the safety invariant: whether a physics step pushed without backing.

The invariant every fault must keep: a command in force (a body wrench, stock flight inputs
or a typed override) has a live lease, no emergency stop, and has not timed out; with none
in force, nothing commanded acts (the engine wrench is only what no command decides: stock
and throttle-locked engines; the reaction wheels give only the SAS's torque).
``unbacked_steps`` must stay 0; the control law keeps it so, this checks it independently
of how.

It also counts the steps with a command in force (``commanded_steps``, zeros included),
and notes each step that pushed (a commanded output acted): ``pushed_steps``,
``pushed_at`` (the last such step) and ``pushing_since`` (the first of the steps pushing
up to now; None once a step did not). A paused or unavailable frame runs no step: it
pushes nothing and changes none of them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class PushAudit:
    """The counts and clocks of the steps that pushed, were commanded or were unbacked."""

    unbacked_steps: int = 0               # steps that pushed without backing
    unbacked_at: float | None = None      # clock of the first such step
    pushed_steps: int = 0                 # steps that pushed
    pushed_at: float | None = None        # clock of the last step that pushed
    pushing_since: float | None = None    # first step of the pushing run (None: quiet)
    commanded_steps: int = 0              # steps with a command in force

    def step(self, now: float, quiet: bool, in_force: bool, live: bool) -> None:
        """Count one physics step at ``now``.

        ``quiet``: nothing commanded acted; ``in_force``: a command was in force;
        ``live``: its lease is live, no emergency stop, and a body wrench has not timed out.
        A step is backed when a command in force is live, or when none is and it is quiet.
        """
        if quiet:
            self.pushing_since = None
        else:
            self.pushed_steps += 1
            self.pushed_at = now
            self.pushing_since = now if self.pushing_since is None else self.pushing_since
        if in_force:
            self.commanded_steps += 1
        if not (live if in_force else quiet):
            self.unbacked_steps += 1
            self.unbacked_at = self.unbacked_at if self.unbacked_at is not None else now

    def status(self) -> dict:
        """Return the counts and clocks (JSON-ready)."""
        return asdict(self)
