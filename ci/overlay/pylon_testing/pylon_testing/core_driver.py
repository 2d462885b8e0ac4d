"""A ``BridgeCore`` driven without ROS: datagrams in on a simulated clock, actions kept.

The bridge's core tests feed mod datagrams (``mod_datagrams``) through ``Driver.feed`` and
read what the core would have published with ``Driver.published(key)``.
"""

from __future__ import annotations

from pylon_bridge.core import BridgeCore, CoreConfig, Publish

from pylon_testing import mod_datagrams as d

LOOPBACK = ('127.0.0.1', 49999)
ROS_T0 = 1000.0


class Driver:
    """Feeds datagrams to a core on a simulated clock and keeps what it publishes."""

    def __init__(self, **config):
        """Build a core with ``CoreConfig(**config)``; ``now`` starts at 0 (ROS time T0)."""
        self.core = BridgeCore(CoreConfig(**config))
        self.now = 0.0
        self.out = list(self.core.initial(ROS_T0))

    def feed(self, *datagrams, source=LOOPBACK, dt=0.0):
        """Hand datagrams to the core, ``dt`` seconds apart; return the actions."""
        actions = []
        for data in datagrams:
            self.now += dt
            actions += self.core.handle(data, source, self.now, ROS_T0 + self.now)
        self.out += actions
        return actions

    def tick(self, dt):
        """Advance the clock by ``dt`` and run the core's expiry; return the actions."""
        self.now += dt
        actions = self.core.tick(self.now, ROS_T0 + self.now)
        self.out += actions
        return actions

    def published(self, key, actions=None):
        """Return the messages published on ``key`` (in ``actions``, else all so far)."""
        return [a.msg for a in (self.out if actions is None else actions)
                if isinstance(a, Publish) and a.key == key]

    def lifecycle(self):
        """Return the last VesselLifecycle published."""
        return self.published('lifecycle')[-1]


def started(**config):
    """Return a driver whose core has seen one heartbeat of the test vessel."""
    driver = Driver(**config)
    driver.feed(d.session())
    return driver
