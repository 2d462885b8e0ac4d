"""The mod's runtime session in one KSP process: its envelope, heartbeat and resets.

Every KSP start is a new runtime instance (``RuntimeSession``). The session looks at the
game after each frame and each admin request (``Lifecycle.observe``); when it resets (a
vessel switch, pack or unpack, a topology change, a new main body, UT going backwards, ...)
the new session's heartbeat goes out before anything else of it, as the mod does (the
bridge drops every other packet of a session it has not seen), the producers start again
(``Reports.reset``) and the control follows the new session or vessel.
"""

from __future__ import annotations

import numpy as np
from pylon_protocol.envelope import Envelope
from pylon_protocol.session import RuntimeSession

from pylon_sim.game.world import WorldView
from pylon_sim.mod.reports import Moment, Reports
from pylon_sim.mod.vehicle_manager import VehicleManager


class Lifecycle:
    """The runtime session of one KSP process and what its resets mean for the mod."""

    def __init__(self, runtime: RuntimeSession, world: WorldView, control: VehicleManager,
                 reports: Reports) -> None:
        """Follow ``world``'s active vessel with ``runtime``, ``control`` and ``reports``."""
        self.runtime = runtime
        self.world = world
        self.control = control
        self.reports = reports
        self._envelope: Envelope | None = None
        self._envelope_key: tuple | None = None
        self.announced: Envelope | None = None   # the session the last heartbeat announced
        self.control_vessel = world.active.vessel_id

    @property
    def envelope(self) -> Envelope:
        """Return the current runtime envelope."""
        rt = self.runtime
        key = (rt.instance, rt.generation, rt.epoch, rt.vessel_id)
        if self._envelope is None or self._envelope_key != key:
            self._envelope, self._envelope_key = Envelope(*key), key
        return self._envelope

    @property
    def unannounced(self) -> bool:
        """Tell whether the current runtime session has had no heartbeat yet."""
        return self.announced != self.envelope

    def heartbeat(self, now: Moment) -> None:
        """Send the session heartbeat; remember the runtime session it announced."""
        self.reports.heartbeat(self.runtime.vessel_id, now)
        self.announced = self.envelope

    def observe(self, now: Moment, heartbeat: bool, first: bool = False) -> bool:
        """Let the runtime session look at the game; handle a reset if it made one.

        ``heartbeat``: the heartbeat is enabled (a reset announces the new session at
        once). ``first``: the process has just started (nothing is sent). Return whether
        the session reset.
        """
        vessel = self.world.active
        speed = float(np.linalg.norm(vessel.state.velocity))
        relative = vessel.state.position
        reset = self.runtime.observe(
            active_vessel_id=vessel.vessel_id, topology_hash=vessel.spec.topology_hash(),
            main_body=vessel.body.name, available=now.available,
            body_relative_position=(float(relative[0]), float(relative[1]),
                                    float(relative[2])),
            max_speed=speed, dt=self.world.frame_step,
            ut=self.world.ut)
        if reset or first:
            self._on_reset(now, heartbeat, first)
        return reset

    def _on_reset(self, now: Moment, heartbeat: bool, first: bool) -> None:
        """Apply what a runtime reset means for the mod's producers and its control."""
        self.reports.reset()
        if first:
            return
        if heartbeat:
            self.heartbeat(now)
            self.reports.schedules['session'].restart(now.clock, now.wall)
        vessel = self.world.active
        if vessel.vessel_id != self.control_vessel:
            answers = self.control.vessel_changed(vessel, now.clock)
        else:
            answers = self.control.session_changed(vessel, now.clock)
        self.control_vessel = vessel.vessel_id
        if now.available:
            for type_name, payload in answers:
                self.reports.emit(type_name, payload)
