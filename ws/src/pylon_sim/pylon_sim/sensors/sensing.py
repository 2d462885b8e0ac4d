"""The simulator's sensors in the loop: what each one sees of the world, sample by sample.

Star trackers, 2D/3D LiDARs, RGB cameras, the docking-port camera and the
relative-navigation sensor (``relative_nav``), the GNSS receiver (``gnss``) and the AHRS
(``ahrs``), our extensions: each sensor part of
each vessel gets its module settings from the scenario and samples at its own rate on the
simulator clock; only the active vessel's sensors sample. ``Sensing`` creates them and
hands each kind to the collaborator that runs it:

- ``tracker_loop.TrackerLoop``: the star trackers (``star_tracker``), their inputs from the
  world and their ElectricCharge; the runtime calls ``star_tracker_samples`` every frame
  and sends what it returns;
- ``imaging.Imaging``: the LiDARs (``lidar_scan``) and cameras (``render``) and the
  selected docking-port camera, cast and rendered in one scene of the world;
- ``nav_loop.NavLoop``: the relative-navigation sensors (``relative_nav_samples``);
- ``gnss_loop.GnssLoop``: the GNSS receivers (``gnss_samples``);
- ``ahrs_loop.AhrsLoop``: the AHRS sensors (``ahrs_samples``).

They share one ``sensor_stats.SensorStats`` (CPU cost, samples taken and skipped by kind).
Switches the player has in KSP are here too: ``set_enabled`` (the part's on/off switch) and
``power.set_electric_charge`` (fill or empty the vessel's batteries).
"""

from __future__ import annotations

import random

import numpy as np
from pylon_protocol import names

from pylon_sim.game.world import World
from pylon_sim.sensors import ahrs, gnss, imaging, relative_nav
from pylon_sim.sensors import star_tracker as st
from pylon_sim.sensors.ahrs_loop import AhrsLoop, Unit
from pylon_sim.sensors.gnss_loop import GnssLoop, noise_for, Receiver
from pylon_sim.sensors.imaging import Imaging
from pylon_sim.sensors.nav_loop import Navigator, NavLoop
from pylon_sim.sensors.sensor_stats import SensorStats
from pylon_sim.sensors.tracker_loop import TrackerLoop


class Sensing:
    """The sensors of the world's vessels."""

    def __init__(self, world: World, seed: int = 0,
                 sessions: random.Random | None = None) -> None:
        """Create every vessel's sensors (noise and generated sensor ids seeded from ``seed``).

        ``sessions`` draws the modules' session GUIDs (default: from ``seed`` too). A KSP
        started again loads its parts anew, so each module has a new ``sessionId``, and a
        receiver that remembers a sensor's last sequence takes its new samples at once.
        """
        self.world = world
        self.noise = np.random.default_rng(seed)
        self.ids = random.Random(seed)
        sessions = sessions if sessions is not None else self.ids
        self.stats = SensorStats()
        self.tracking = TrackerLoop(world, self.stats)
        self.navigation = NavLoop(world, self.stats, self.noise)
        self.gnss = GnssLoop(world, self.stats)
        self.ahrs = AhrsLoop(world, self.stats)
        imagers, navigators = [], self.navigation.units
        for vessel in world.vessels.values():
            for part in vessel.spec.parts:
                for module in part.modules_of(st.KIND):
                    config = st.StarTrackerConfig.from_part(part, module, rng=self.ids)
                    self.tracking.add(st.StarTracker(config, self.noise, sessions), vessel.key)
                for kind in imaging.IMAGING_KINDS:
                    for module in part.modules_of(kind):
                        imagers.append(imaging.make_imager(kind, part, module, vessel.key,
                                                           self.ids, sessions))
                for module in part.modules_of(relative_nav.KIND):
                    navigators.append(Navigator(
                        names.sensor_id(module.get('sensor_id'), relative_nav.KIND, self.ids),
                        vessel.key, part, relative_nav.Settings.from_module(module.settings)))
                for module in part.modules_of(gnss.KIND):
                    sensor = names.sensor_id(module.get('sensor_id'), gnss.KIND, self.ids)
                    self.gnss.units.append(Receiver(
                        sensor, vessel.key, part, gnss.Settings.from_module(module.settings),
                        names.new_guid_hex(sessions), noise_for(seed, sensor)))
                for module in part.modules_of(ahrs.KIND):
                    sensor = names.sensor_id(module.get('sensor_id'), ahrs.KIND, self.ids)
                    self.ahrs.units.append(Unit(
                        sensor, vessel.key, part, ahrs.Settings.from_module(module.settings),
                        names.new_guid_hex(sessions), noise_for(seed, sensor)))
        self.imaging = Imaging(world, self.stats, names.new_guid_hex(sessions))
        self.imaging.imagers = imagers

    @property
    def cost(self):
        """Return the s of CPU time spent sampling, by sensor kind."""
        return self.stats.cost

    @property
    def samples(self):
        """Return the samples taken, by sensor kind."""
        return self.stats.samples

    @property
    def skipped(self):
        """Return the samples not taken, by (sensor kind, reason)."""
        return self.stats.skipped

    @property
    def imagers(self) -> list[imaging.Imager]:
        """Return the LiDARs and cameras of every vessel."""
        return self.imaging.imagers

    def set_enabled(self, sensor_id: str, enabled: bool) -> bool:
        """Switch a star tracker, relative-navigation sensor, GNSS receiver or AHRS on or off.

        Say if there is one called ``sensor_id``.
        """
        tracker = self.tracking.set_enabled(sensor_id, enabled)
        receiver = self.gnss.set_enabled(sensor_id, enabled)
        unit = self.ahrs.set_enabled(sensor_id, enabled)
        return self.navigation.set_enabled(sensor_id, enabled) or tracker or receiver or unit

    def follow_parts(self, ut: float) -> list[tuple[str, dict]]:
        """Re-home every sensor to the vessel holding its part now (after a split).

        A sensor keeps its part (persistent id) and takes the part's pose in its new
        vessel's frame; one that left the active vessel sends what a vessel switch would
        make it send: its ``inactive`` star tracker sample or LiDAR/camera notice.
        """
        holders = {(p.persistent_id or p.flight_id): (vessel, p)
                   for vessel in self.world.vessels.values() for p in vessel.spec.parts}
        out = self.imaging.follow(holders)
        self.navigation.follow(holders)
        self.gnss.follow(holders)
        self.ahrs.follow(holders)
        return out + self.tracking.follow(holders, ut)

    def star_tracker_samples(self, clock: float, ut: float) -> list[dict]:
        """Return the ``pylon_star_tracker`` payloads due at ``clock`` (``TrackerLoop``)."""
        return self.tracking.samples(clock, ut)

    def relative_nav_samples(self, clock: float, ut: float) -> list[dict]:
        """Return the ``pylon_relative_nav`` payloads due at ``clock`` (``NavLoop``)."""
        return self.navigation.samples(clock, ut)

    def gnss_samples(self, clock: float, ut: float) -> list[dict]:
        """Return the ``pylon_gnss`` payloads due at ``clock`` (``GnssLoop``)."""
        return self.gnss.samples(clock, ut)

    def ahrs_samples(self, clock: float, ut: float) -> list[dict]:
        """Return the ``pylon_ahrs`` payloads due at ``clock`` (``AhrsLoop``)."""
        return self.ahrs.samples(clock, ut)

    def imaging_packets(self, clock: float, ut: float, docking_port: tuple | None,
                        ) -> list[tuple[str, dict]]:
        """Return the LiDAR scans, camera chunks and ``…_inactive`` notices due now.

        ``docking_port`` is ``(port id, Part)`` of the port whose camera is selected on the
        active vessel, or None (``Imaging.packets``).
        """
        return self.imaging.packets(clock, ut, docking_port)

    def _scene(self, ut: float) -> dict:
        """Return the world the imaging sensors see at ``ut`` (``imaging.scene``)."""
        return imaging.scene(self.world, ut)
