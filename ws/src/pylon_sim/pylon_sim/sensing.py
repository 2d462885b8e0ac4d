"""The simulator's sensors in the loop: what each one sees of the world, sample by sample.

``Sensing`` owns the star trackers of every vessel (``star_tracker.StarTracker``), builds
their ``Inputs`` from the world (KCI positions of the vessel, the Sun, Kerbin and the Mun;
every other loaded vessel's part shapes as occluders; Kerbin's sphere as the terrain;
the vessel's ElectricCharge) and draws the ElectricCharge they use. The runtime calls
``star_tracker_samples`` every frame and sends what it returns; a tracker samples at its
own ``sampleRateHz`` on the simulator clock (the mod's wall-time rate). When another vessel
becomes active, the trackers of the one left behind send ``inactive`` once.

Switches the player has in KSP are here too: ``set_enabled`` (the part's on/off switch) and
``set_electric_charge`` (fill or empty the vessel's batteries).
"""

from __future__ import annotations

import random

import numpy as np

from pylon_sim import star_tracker as st
from pylon_sim.bodies import KERBIN, MUN, mun_position, sun_position
from pylon_sim.world import SimVessel, World

ELECTRIC_CHARGE = 'ElectricCharge'


def body_offset(vessel: SimVessel, ut: float) -> np.ndarray:
    """Return the KCI position of the body the vessel's state is relative to."""
    return mun_position(ut) if vessel.body.name == MUN.name else np.zeros(3)


def electric_charge(vessel: SimVessel) -> float:
    """Return the ElectricCharge the vessel holds."""
    return float(sum(v for (_, name), v in vessel.resources.items()
                     if name == ELECTRIC_CHARGE))


def draw_electric_charge(vessel: SimVessel, amount: float) -> None:
    """Take ``amount`` of ElectricCharge from the parts that hold it, in part order."""
    for key in sorted(k for k in vessel.resources if k[1] == ELECTRIC_CHARGE):
        if amount <= 0.0:
            return
        take = min(amount, vessel.resources[key])
        vessel.resources[key] -= take
        amount -= take


def set_electric_charge(vessel: SimVessel, amount: float) -> None:
    """Set the vessel's ElectricCharge to ``amount`` (spread over its parts, capped)."""
    draw_electric_charge(vessel, electric_charge(vessel))
    for index, part in enumerate(vessel.spec.parts):
        key = (index, ELECTRIC_CHARGE)
        if key in vessel.resources and amount > 0.0:
            capacity = float(part.capacity.get(ELECTRIC_CHARGE, amount))
            vessel.resources[key] = min(amount, capacity)
            amount -= vessel.resources[key]


class _Tracker:
    """One tracker in the loop: the sensor, its owning vessel and its next sample time."""

    def __init__(self, sensor: st.StarTracker, vessel_key: str) -> None:
        self.sensor = sensor
        self.vessel_key = vessel_key
        self.next = 0.0
        self.last_ut: float | None = None
        self.enabled = True


class Sensing:
    """The sensors of the world's vessels."""

    def __init__(self, world: World, seed: int = 0) -> None:
        """Create every vessel's star trackers (noise seeded from ``seed``)."""
        self.world = world
        self.noise = np.random.default_rng(seed)
        self.ids = random.Random(seed)
        self.trackers: list[_Tracker] = []
        for vessel in world.vessels.values():
            for part in vessel.spec.parts:
                for module in part.modules_of(st.KIND):
                    config = st.StarTrackerConfig.from_part(part, module, rng=self.ids)
                    sensor = st.StarTracker(config, self.noise, self.ids)
                    self.trackers.append(_Tracker(sensor, vessel.key))
        self.active_key = world.active.key

    def set_enabled(self, sensor_id: str, enabled: bool) -> bool:
        """Switch a star tracker on or off; return whether the id is known."""
        found = False
        for tracker in self.trackers:
            if tracker.sensor.config.sensor_id == sensor_id:
                tracker.enabled, found = enabled, True
        return found

    def _inputs(self, vessel: SimVessel, tracker: _Tracker, ut: float,
                active: bool) -> st.Inputs:
        offset = body_offset(vessel, ut)
        state = vessel.state
        occluders: list[st.Primitive] = []
        for other in self.world.vessels.values():
            occluders += st.vessel_primitives(
                other.spec.parts, other.state.position + body_offset(other, ut),
                other.state.attitude, other.mass.com, other.vessel_id)
        bodies = [st.BodyDisc(KERBIN.name, np.zeros(3), KERBIN.radius,
                              KERBIN.atmosphere_depth),
                  st.BodyDisc(MUN.name, mun_position(ut), MUN.radius, MUN.atmosphere_depth)]
        return st.Inputs(
            ut=ut, attitude=np.asarray(state.attitude, dtype=float),
            position=np.asarray(state.position, dtype=float) + offset,
            sun_position=sun_position(ut), body_rate=np.asarray(state.body_rate, dtype=float),
            bodies=bodies, occluders=occluders,
            terrain=st.Terrain(np.zeros(3), KERBIN.radius), com=vessel.mass.com,
            electric_charge=electric_charge(vessel), enabled=tracker.enabled,
            packed=self.world.is_packed(vessel), active=active, vessel_id=vessel.vessel_id)

    def star_tracker_samples(self, clock: float, ut: float) -> list[dict]:
        """Return the ``pylon_star_tracker`` payloads due at ``clock`` (simulator seconds).

        Only the active vessel's trackers sample; those of a vessel that stopped being the
        active one send one ``inactive`` sample first.
        """
        out: list[dict] = []
        active = self.world.active
        if active.key != self.active_key:
            for tracker in self.trackers:
                if tracker.vessel_key == self.active_key:
                    vessel = self.world.find(tracker.vessel_key)
                    sample = tracker.sensor.step(self._inputs(vessel, tracker, ut, False), 0.0)
                    if sample is not None:
                        out.append(sample)
                    tracker.next = 0.0
            self.active_key = active.key
        for tracker in self.trackers:
            if tracker.vessel_key != active.key or clock + 1e-9 < tracker.next:
                continue
            tracker.next = max(tracker.next + tracker.sensor.period, clock)
            dt = 0.0 if tracker.last_ut is None else max(0.0, ut - tracker.last_ut)
            sample = tracker.sensor.step(self._inputs(active, tracker, ut, True), dt)
            if sample is None:        # UT has not advanced (paused): nothing is sent
                continue
            tracker.last_ut = ut
            draw_electric_charge(active, tracker.sensor.state.ec_drawn)
            out.append(sample)
        return out
