"""The star trackers in the loop: their inputs from the world, their schedule and power.

``TrackerLoop`` owns the star trackers of every vessel (``star_tracker.StarTracker``),
builds their ``Inputs`` from the world (KCI positions of the vessel, the Sun, Kerbin and the
Mun; every loaded vessel's part shapes as occluders; the scenario's terrain site on its body,
else Kerbin's bare sphere, as the surface; the vessel's ElectricCharge) and draws the
ElectricCharge they use. A tracker samples at its own ``sampleRateHz`` on the simulator
clock (the mod's wall-time rate); only the active vessel's trackers sample, and when another
vessel becomes active, the trackers of the one left behind send ``inactive`` once.
"""

from __future__ import annotations

from dataclasses import replace
import time

import numpy as np
from pylon_protocol import rotations

from pylon_sim.game import raycast
from pylon_sim.game.bodies import (
    body_center,
    body_fixed_rotation,
    KERBIN,
    MUN,
    mun_position,
    sun_position,
)
from pylon_sim.game.environment import body_offset
from pylon_sim.game.power import draw_electric_charge, electric_charge
from pylon_sim.game.world import SimVessel, World
from pylon_sim.sensors import star_tracker as st
from pylon_sim.sensors.sensor_stats import SensorStats


class Tracker:
    """One tracker in the loop: the sensor, its owning vessel and its next sample time."""

    def __init__(self, sensor: st.StarTracker, vessel_key: str) -> None:
        self.sensor = sensor
        self.vessel_key = vessel_key
        self.next = 0.0
        self.last_ut: float | None = None
        self.enabled = True


def occluders(world: World, ut: float) -> list[raycast.Primitive]:
    """Return every vessel's part shapes in KCI, owned by (vessel id, persistent id)."""
    out: list[raycast.Primitive] = []
    for other in world.vessels.values():
        rot = rotations.to_matrix(other.state.attitude)
        origin = other.state.position + body_offset(other, ut) - rot @ other.mass.com
        out += raycast.vessel_primitives(
            other.spec.parts, origin, rot, other.vessel_id,
            part_key=lambda part: part.persistent_id or part.flight_id)
    return out


class TrackerLoop:
    """The star trackers of the world's vessels, sampled on the simulator clock."""

    def __init__(self, world: World, stats: SensorStats) -> None:
        self.world = world
        self.stats = stats
        self.trackers: list[Tracker] = []
        self.active_key = world.active.key

    def add(self, sensor: st.StarTracker, vessel_key: str) -> None:
        """Put a vessel's tracker in the loop."""
        self.trackers.append(Tracker(sensor, vessel_key))

    def set_enabled(self, sensor_id: str, enabled: bool) -> bool:
        """Switch the trackers called ``sensor_id`` on or off; say if there is one."""
        found = False
        for tracker in self.trackers:
            if tracker.sensor.config.sensor_id == sensor_id:
                tracker.enabled, found = enabled, True
        return found

    def inputs(self, vessel: SimVessel, tracker: Tracker, ut: float, active: bool,
               ) -> st.Inputs:
        """Return what ``tracker`` on ``vessel`` sees at ``ut``."""
        state = vessel.state
        bodies = [st.BodyDisc(KERBIN.name, np.zeros(3), KERBIN.radius,
                              KERBIN.atmosphere_depth),
                  st.BodyDisc(MUN.name, mun_position(ut), MUN.radius, MUN.atmosphere_depth)]
        return st.Inputs(
            ut=ut, attitude=np.asarray(state.attitude, dtype=float),
            position=np.asarray(state.position, dtype=float) + body_offset(vessel, ut),
            sun_position=sun_position(ut), body_rate=np.asarray(state.body_rate, dtype=float),
            bodies=bodies, occluders=occluders(self.world, ut),
            surface=self.surface(ut), com=vessel.mass.com,
            electric_charge=electric_charge(vessel), enabled=tracker.enabled,
            packed=self.world.is_packed(vessel), active=active, vessel_id=vessel.vessel_id)

    def surface(self, ut: float) -> st.Surface:
        """Return the ground a star tracker sees: the scenario's site, else bare Kerbin.

        The scenario's terrain (one site, boulders included) lies on its own body, centred
        where that body is at ``ut`` (the Mun moves) and turned with it.
        """
        site = self.world.scenario.terrain
        if site is None:
            return st.Surface(np.zeros(3), KERBIN.radius)
        name = site.spec.body
        body = self.world.scenario.bodies[name]
        return st.Surface(body_center(name, ut), body.radius,
                          site.in_frame(body_fixed_rotation(body, ut)))

    def follow(self, holders: dict, ut: float) -> list[tuple[str, dict]]:
        """Re-home every tracker to the vessel holding its part (see ``Sensing``)."""
        active = self.world.active.key
        out: list[tuple[str, dict]] = []
        for tracker in self.trackers:
            config = tracker.sensor.config
            vessel, part = holders[config.part_persistent_id]
            tracker.sensor.config = replace(
                config, mount_position=tuple(float(v) for v in part.position),
                mount_rotation=tuple(float(v) for v in part.rotation))
            if tracker.vessel_key == active != vessel.key:
                sample = tracker.sensor.step(self.inputs(vessel, tracker, ut, False), 0.0)
                if sample is not None:
                    out.append(('pylon_star_tracker', sample))
                tracker.next = 0.0
            tracker.vessel_key = vessel.key
        return out

    def samples(self, clock: float, ut: float) -> list[dict]:
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
                    sample = tracker.sensor.step(self.inputs(vessel, tracker, ut, False), 0.0)
                    if sample is not None:
                        out.append(sample)
                    tracker.next = 0.0
            self.active_key = active.key
        for tracker in self.trackers:
            if tracker.vessel_key != active.key or clock + 1e-9 < tracker.next:
                continue
            tracker.next = max(tracker.next + tracker.sensor.period, clock)
            dt = 0.0 if tracker.last_ut is None else max(0.0, ut - tracker.last_ut)
            start = time.process_time()
            sample = tracker.sensor.step(self.inputs(active, tracker, ut, True), dt)
            self.stats.count(st.KIND, start)
            if sample is None:        # UT has not advanced (paused): nothing is sent
                continue
            tracker.last_ut = ut
            draw_electric_charge(active, tracker.sensor.state.ec_drawn)
            out.append(sample)
        return out
