"""The packets a game's frame sends after its physics step, in the order the mod sends them.

First what the frame's commands and splits answer (in the runtime session the frame ended
in), then every packet whose period has elapsed on the simulator clock: the frame's
measurements (the AHRS, our extension, then IMU, ground truth, nearby vessels: an IMU
sample finds the orientation of its own frame at the bridge) go first, as soon as physics
produced them, so that the periodic reports of the same frame do not delay them at the receiver;
only a runtime session's first heartbeat goes before them, since the bridge takes nothing
of a session it has not seen. The outbox sends them in this order when the frame ends
(``outbox.Outbox.sending``). While a lock-step holds the next frame, ``wall_kept`` sends
what the mod keeps on wall time alone (the heartbeat, the model, manifests, health).
"""

from __future__ import annotations

from pylon_sim.game import ksp_view
from pylon_sim.game.world import WorldView
from pylon_sim.mod.lifecycle import Lifecycle
from pylon_sim.mod.outbox import Emit
from pylon_sim.mod.reports import Moment, Reports
from pylon_sim.mod.vehicle_manager import Packet, VehicleManager
from pylon_sim.sensors.sensing import Sensing


class FramePackets:
    """Send a frame's answers and the packets due, the mod's and the sensors', in order."""

    def __init__(self, world: WorldView, control: VehicleManager, sensing: Sensing,
                 reports: Reports, lifecycle: Lifecycle, emit: Emit) -> None:
        """Send what these parts of one runtime instance produce through ``emit``."""
        self.world = world
        self.control = control
        self.sensing = sensing
        self.reports = reports
        self.lifecycle = lifecycle
        self.emit = emit

    def answers(self, answers: list[Packet], separated: list[tuple[str, list[str]]],
                clock: float) -> None:
        """Send the frame's command answers, then the results of its separations."""
        for type_name, payload in answers:
            self.emit(type_name, payload)
        for name, resulting in separated:   # in the session the split reset to
            for type_name, payload in self.control.separated(
                    name, resulting, self.lifecycle.envelope, clock):
                self.emit(type_name, payload)

    def due(self, now: Moment, heartbeat_enabled: bool) -> None:
        """Send every packet whose period has elapsed at ``now.clock``."""
        reports, lifecycle, ut = self.reports, self.lifecycle, self.world.ut
        due = reports.due(now.clock, now.wall)
        heartbeat = due['session'] and heartbeat_enabled
        measuring = now.available and not now.paused
        if heartbeat and (not measuring or lifecycle.unannounced):
            lifecycle.heartbeat(now)
            heartbeat = False
        view = None
        if measuring:
            view = ksp_view.observe(self.world.active, ut)
            for payload in self.sensing.ahrs_samples(now.clock, ut):   # before the IMU
                self.emit('pylon_ahrs', payload)
            reports.motion(due, view)
        if heartbeat:
            lifecycle.heartbeat(now)
        if not now.paused:       # also while packed: the tracker then says ``packed``
            for sample in self.sensing.star_tracker_samples(now.clock, ut):
                self.emit('pylon_star_tracker', sample)
        if not now.available:
            return
        reports.vessel(due, lifecycle.runtime.epoch, now)
        if now.paused:
            return
        reports.control_state(due, view, now)
        reports.health(due, now)
        for type_name, payload in self.sensing.imaging_packets(now.clock, ut,
                                                               reports.camera_port()):
            self.emit(type_name, payload)
        for payload in self.sensing.relative_nav_samples(now.clock, ut):
            self.emit('pylon_relative_nav', payload)
        for payload in self.sensing.gnss_samples(now.clock, ut):
            self.emit('pylon_gnss', payload)
        reports.docking(due)

    def wall_kept(self, now: Moment, heartbeat_enabled: bool) -> None:
        """Send what is due on the wall clock alone while no frame runs (a lock-step wait).

        Unity's ``Update`` goes on between physics steps: the session heartbeat, the model,
        the manifests, health and thermal (``reports.WALL_KEPT``) once their period of wall
        time has passed. The clock stands, so nothing measured is due.
        """
        reports = self.reports
        due = reports.due(now.clock, now.wall)
        if due['session'] and heartbeat_enabled:
            self.lifecycle.heartbeat(now)
        if not now.available:
            return
        reports.model_and_manifest(due, self.lifecycle.runtime.epoch)
        if now.paused:
            return
        reports.health(due, now)
        reports.docking(due)
