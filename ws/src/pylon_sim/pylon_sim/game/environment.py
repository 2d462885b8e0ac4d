"""What a vessel's surroundings do to it each physics step: sunlight, shadow, power, heat.

``sun_exposure`` says whether the Sun's centre is visible from a vessel (no body's sphere
in the way: Kerbin and the Mun cast umbrae, with no penumbra) and how strong sunlight is
there relative to Kerbin's mean distance. ``step`` advances a vessel's ElectricCharge
(``power``: solar panels in, reaction wheels and rover wheel motors out) and its parts'
temperatures (``thermal``) by one step of UT; the runtime calls it for every vessel while UT
advances (on rails too: KSP keeps the active vessel's resources going during warp), every
``PERIOD_UT`` of UT rather than every physics frame: ``Pending`` gathers the frames' time,
wheel torque and engine thrust in between, and both flows are linear in them, so the
means over the period give the same charge and heat (sunlight and attitude are taken at
the period's end: they change little in 0.1 s).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pylon_sim.game import power, raycast, thermal
from pylon_sim.game.bodies import (
    air_density,
    KERBIN,
    KERBIN_ORBIT,
    MUN,
    mun_position,
    sun_position,
)
from pylon_sim.game.parts import actuators_of
from pylon_sim.game.physics import altitude
from pylon_sim.game.vessel import part_masses, VesselSpec
from pylon_sim.game.world import SimVessel

ZERO = np.zeros(3)
PERIOD_UT = 0.1
"""s of UT between two power and heat updates of a vessel."""


class Pending:
    """The frames since a vessel's last power and heat update: time, |torque|, thrust."""

    def __init__(self) -> None:
        """Start empty."""
        self.dt = 0.0
        self.torque = np.zeros(3)                 # integral of |wheel torque| per axis, N·m·s
        self.thrust: dict[str, float] = {}        # integral of thrust per engine, N·s
        self.motor = 0.0                          # ElectricCharge of rover wheel motors

    def add(self, dt: float, wheel_torque=ZERO, engine_thrust: Mapping[str, float] | None = None,
            motor_draw: float = 0.0) -> bool:
        """Add one frame; return whether ``PERIOD_UT`` has gathered (time to ``flush``).

        ``motor_draw`` is the EC/s of the vessel's rover wheel motors in that frame.
        """
        self.dt += dt
        self.motor += max(0.0, float(motor_draw)) * dt
        self.torque += np.abs(np.asarray(wheel_torque, dtype=float)) * dt
        for name, value in (engine_thrust or {}).items():
            self.thrust[name] = self.thrust.get(name, 0.0) + float(value) * dt
        return self.dt >= PERIOD_UT - 1e-9

    def flush(self, vessel: SimVessel, ut: float) -> None:
        """Step the vessel's power and heat over the gathered time with its means; reset."""
        if self.dt > 0.0:
            step(vessel, ut, self.dt, wheel_torque=self.torque / self.dt,
                 engine_thrust={k: v / self.dt for k, v in self.thrust.items()},
                 motor_draw=self.motor / self.dt)
        self.__init__()


def body_offset(vessel: SimVessel, ut: float) -> np.ndarray:
    """Return the KCI position of the body the vessel's state is relative to."""
    return mun_position(ut) if vessel.body.name == MUN.name else np.zeros(3)


@dataclass(frozen=True)
class Exposure:
    """Sunlight at a vessel."""

    lit: bool                  # the Sun's centre is visible
    direction: np.ndarray      # unit vector towards the Sun, KCI
    flux_scale: float          # sunlight relative to Kerbin's distance; 0 when hidden


def sun_exposure(vessel: SimVessel, ut: float) -> Exposure:
    """Return whether the Sun shines on the vessel, from where, and how strongly."""
    position = np.asarray(vessel.state.position, dtype=float) + body_offset(vessel, ut)
    to_sun = sun_position(ut) - position
    distance = float(np.linalg.norm(to_sun))
    direction = to_sun / distance
    for center, radius in ((np.zeros(3), KERBIN.radius), (mun_position(ut), MUN.radius)):
        hit = raycast.cast(position[None, :], direction[None, :], distance, (), center, radius)
        if np.isfinite(hit[0]):
            return Exposure(False, direction, 0.0)
    return Exposure(True, direction, (KERBIN_ORBIT.semi_major_axis / distance) ** 2)


def engine_heat(spec: VesselSpec, engine_thrust: Mapping[str, float]) -> np.ndarray:
    """Return the W each part's interior gets from its burning engines."""
    heat = np.zeros(len(spec.parts))
    for actuator in actuators_of(spec):
        thrust = float(engine_thrust.get(actuator.name, 0.0))
        if actuator.actuator_type == 'engine' and thrust > 0.0:
            rate = actuator.module.get('heat_per_newton', thermal.ENGINE_HEAT_PER_NEWTON)
            if isinstance(rate, bool) or not isinstance(rate, int | float) or rate < 0:
                rate = thermal.ENGINE_HEAT_PER_NEWTON
            heat[actuator.part_index] += float(rate) * thrust
    return heat


def step(vessel: SimVessel, ut: float, dt: float, *, wheel_torque=ZERO,
         engine_thrust: Mapping[str, float] | None = None, motor_draw: float = 0.0
         ) -> Exposure:
    """Advance the vessel's ElectricCharge and part temperatures by ``dt`` s of UT.

    ``wheel_torque`` is what its reaction wheels delivered (N·m, base_link),
    ``engine_thrust`` the thrust of its engines (N by actuator id) and ``motor_draw`` the
    EC/s of its rover wheel motors during the step. Returns the sunlight used.
    """
    spec = vessel.spec
    exposure = sun_exposure(vessel, ut)
    flows = power.Flows(
        produced=power.solar_rate(power.solar_panels(spec), vessel.state.attitude,
                                  exposure.direction, exposure.flux_scale),
        consumed=power.wheel_draw_rate(wheel_torque, power.wheel_rating(spec))
        + max(0.0, motor_draw))
    vessel.resources.update(power.step(vessel.resources, spec, flows, dt))
    inputs = thermal.Inputs(
        solar_flux=thermal.SOLAR_FLUX_AT_KERBIN * exposure.flux_scale,
        engine_heat=engine_heat(spec, engine_thrust or {}),
        air_density=air_density(vessel.body, altitude(vessel.body, vessel.state.position)))
    state = vessel.thermal or thermal.initial_state(len(spec.parts))
    vessel.thermal = thermal.step(state, thermal.params(spec, part_masses(spec,
                                                                          vessel.resources)),
                                  inputs, dt)
    return exposure
