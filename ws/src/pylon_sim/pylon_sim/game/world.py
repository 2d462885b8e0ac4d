"""The simulated universe: every vessel of a scenario, the clock of physics and time warp.

``World`` owns the vessels' truth and advances it with ``physics.step`` (the active vessel
and anything landed), ``rover.step`` (a vessel with wheel modules on or near the ground,
not packed: it rolls on its wheels instead of being fixed to the planet) or exact two-body
propagation (other vessels in flight, and everything during on-rails warp). KSP facts it
models:

- physics runs in fixed steps (``physics_step``, 0.02 s); physics warp (x2..x4) lengthens
  the step; on-rails warp packs every vessel and propagates orbits exactly;
- a paused game does not advance UT;
- revert restores the scenario's start, so UT goes backwards;
- a fired separator splits a vessel (``separate``): the parts beyond it become a new
  vessel with its own mass properties and state (``topology``), which then flies on its
  own (two-body while it is not the active one, as any other vessel in flight);
- docking joins two vessels into one (``dock``); undocking is a split at the port.

After every vessel has advanced, ``collisions`` resolves the contacts of the vessels on the
ground (``collisions.Collisions``, the model in ``contact``) and logs each contact that
begins (``collisions``, ``drain_collisions``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
import math

import numpy as np
from pylon_protocol import rotations

from pylon_sim.game import collisions, kepler, physics, power, rover, thermal, topology, wheels
from pylon_sim.game.bodies import Body, body_fixed_rotation, enu_rotation, fixed_from_geodetic
from pylon_sim.game.physics import RigidState
from pylon_sim.game.save import OrbitStart, Scenario, SurfaceStart, VesselStart
from pylon_sim.game.terrain import SiteTerrain
from pylon_sim.game.vessel import mass_properties, MassProperties, VesselSpec

PHYSICS_WARP_RATES = (1.0, 2.0, 3.0, 4.0)
RAILS_WARP_RATES = (1.0, 5.0, 10.0, 50.0, 100.0, 1000.0, 10000.0, 100000.0)


@dataclass
class SimVessel:
    """One vessel's description and current truth."""

    key: str
    spec: VesselSpec
    body: Body
    state: RigidState
    resources: dict[tuple[int, str], float]
    mass: MassProperties
    packed: bool = False
    specific_force: np.ndarray = field(default_factory=lambda: np.zeros(3))
    sas: bool = False           # the player's SAS switch
    thermal: thermal.State | None = None   # part temperatures (``environment.step``)
    wheel_state: wheels.State | None = None   # its wheels once they roll (``rover``)
    wheel_draw: float = 0.0     # EC/s the wheel motors drew in the last physics step
    drive: wheels.Drive = wheels.NORMAL   # its wheels' drive modifier (a race sets it)

    @property
    def vessel_id(self) -> str:
        """Return the KSP vessel id (32 hex)."""
        return self.spec.vessel_id


def initial_state(start: VesselStart, body: Body, ut: float) -> RigidState:
    """Return the scenario start of one vessel as truth at ``ut``."""
    roll, pitch, yaw = (math.radians(v) for v in start.attitude_rpy)
    local = rotations.to_matrix(rotations.from_rpy(roll, pitch, yaw))
    rate = np.array(start.angular_velocity, dtype=float)
    where = start.start
    if isinstance(where, OrbitStart):
        a = (body.radius + where.altitude) / (1.0 - where.eccentricity)
        anomaly = where.true_anomaly + math.degrees(
            where.along_track / (body.radius + where.altitude))
        position, velocity = kepler.state_from_elements(
            body, a, where.eccentricity, where.inclination, where.lan, where.arg_periapsis,
            anomaly)
        z = position / np.linalg.norm(position)
        y = np.cross(z, velocity)
        y /= np.linalg.norm(y)
        x = np.cross(y, z)
        reference = np.column_stack([x, y, z])   # prograde, orbit normal, radial out
        attitude = rotations.from_matrix(reference @ local)
        return RigidState(ut, position, velocity, attitude, rate)
    assert isinstance(where, SurfaceStart)
    to_inertial = body_fixed_rotation(body, ut).T
    position = to_inertial @ fixed_from_geodetic(body, where.latitude, where.longitude,
                                                 where.altitude)
    reference = to_inertial @ enu_rotation(where.latitude, where.longitude).T
    attitude = rotations.from_matrix(reference @ local)
    rot = rotations.to_matrix(attitude)
    spin = body.spin_vector()
    return RigidState(ut, position, np.cross(spin, position), attitude, rot.T @ spin,
                      landed=True, rest_altitude=where.altitude)


class World:
    """All vessels of a scenario and the game clock (UT).

    ``active_key`` is the active vessel of the one game that uses the world directly (a
    single vehicle). Several games share one world through views (``view``), each with an
    active vessel of its own; every game's active vessel is physically simulated
    (``focus``), and none of them can be removed.
    """

    def __init__(self, scenario: Scenario) -> None:
        """Place every vessel at the scenario's start."""
        self.scenario = scenario
        self.physics_step = scenario.physics_step
        self._views: list[WorldView] = []
        self.reset()

    def reset(self) -> None:
        """Put everything back at the scenario's start (UT included)."""
        self.ut = self.scenario.start_ut
        self.vessels: dict[str, SimVessel] = {}
        for start in self.scenario.vessels:
            body = self.scenario.bodies[self._body_name(start)]
            resources = start.spec.initial_resources()
            self.vessels[start.key] = SimVessel(
                start.key, start.spec, body, initial_state(start, body, self.ut), resources,
                mass_properties(start.spec, resources), packed=start.packed, sas=start.sas)
        self.active_key = self.scenario.active
        for view in self._views:
            view.active_key = view.home
        self._wheel_params: dict[str, tuple[tuple, wheels.Params | None]] = {}
        self._grounds: dict[str, wheels.Ground] = {}
        self._wheeled: dict[str, tuple[VesselSpec, bool]] = {}   # key -> (spec, wheels?)
        self.warp_rate = 1.0
        self.warp_mode = 'physics'
        self.contacts = collisions.Collisions()
        self._rolling: set[str] = set()         # vessels on their wheels in this step

    @staticmethod
    def _body_name(start: VesselStart) -> str:
        return start.start.body

    @property
    def active(self) -> SimVessel:
        """Return the active vessel."""
        return self.vessels[self.active_key]

    @property
    def focus(self) -> set[str]:
        """Return the keys of the active vessels of every game (simulated with physics)."""
        return {self.active_key, *(view.active_key for view in self._views)}

    def view(self, home: str) -> WorldView:
        """Return a game's view of this world, its active vessel ``home`` (also after reset)."""
        if home not in self.vessels:
            raise KeyError(home)
        view = WorldView(self, home)
        self._views.append(view)
        return view

    def find(self, key_or_id: str) -> SimVessel:
        """Return a vessel by scenario key or vessel id."""
        for vessel in self.vessels.values():
            if key_or_id in (vessel.key, vessel.vessel_id):
                return vessel
        raise KeyError(key_or_id)

    def terrain_of(self, body_name: str) -> SiteTerrain | None:
        """Return the body's terrain (body-fixed, the scenario's ``terrain:``) or None."""
        site = self.scenario.terrain
        return site if site is not None and site.spec.body == body_name else None

    @property
    def frame_step(self) -> float:
        """Return the time one physics frame integrates, s: ``physics_step`` x warp rate."""
        return self.physics_step * self.warp_rate

    @property
    def on_rails(self) -> bool:
        """Tell whether on-rails warp packs every vessel."""
        return self.warp_mode == 'rails' and self.warp_rate > 1.0

    def set_warp(self, rate: float, mode: str) -> None:
        """Select a time-warp rate; physics warp x1..x4, rails warp x1..x100000."""
        rates = PHYSICS_WARP_RATES if mode == 'physics' else RAILS_WARP_RATES
        if mode not in ('physics', 'rails') or rate not in rates:
            raise ValueError(f'{mode} warp rate must be one of {rates}, got {rate}')
        self.warp_rate, self.warp_mode = float(rate), mode

    def is_packed(self, vessel: SimVessel) -> bool:
        """Tell whether KSP has the vessel on rails (not physically simulated)."""
        return vessel.packed or self.on_rails

    def add(self, vessel: SimVessel) -> None:
        """Add a vessel (a piece of a split); its key must be new."""
        if vessel.key in self.vessels:
            raise ValueError(f'a vessel {vessel.key!r} exists already')
        self.vessels[vessel.key] = vessel

    def remove(self, key: str) -> SimVessel:
        """Remove a vessel that is no game's active one; return it."""
        if key in self.focus:
            raise ValueError(f'{key!r} is an active vessel')
        return self.vessels.pop(key)

    def separate(self, key: str, separator: int, new_key: str, new_vessel_id: str,
                 impulse: float, identity: VesselSpec | None = None) -> SimVessel:
        """Split vessel ``key`` at part index ``separator``; return the new vessel.

        The vessel keeps its key, id and root part; the separator and the parts beyond it
        leave as the new vessel (``topology.split``), both moving on from the shared state
        with ``impulse`` N s along the separator's stack axis (``topology.separate_states``).
        Raise ``topology.NothingBeyondError`` when nothing lies beyond the separator.
        ``identity`` (an undocked vessel's former spec) gives the new vessel's name and
        debris flag.
        """
        vessel = self.vessels[key]
        cut = topology.split(vessel.spec, separator, new_vessel_id)
        if identity is not None:
            cut = replace(cut, beyond=replace(cut.beyond, name=identity.name,
                                              is_debris=identity.is_debris))
        kept_res = topology.split_resources(vessel.resources, cut.kept_indices)
        beyond_res = topology.split_resources(vessel.resources, cut.beyond_indices)
        kept_mass = mass_properties(cut.kept, kept_res)
        beyond_mass = mass_properties(cut.beyond, beyond_res)
        unrotated = np.array([0.0, 0.0, 0.0, 1.0])    # the kept piece keeps its axes
        pieces = (topology.Piece(kept_mass, unrotated, -1.0),
                  topology.Piece(topology.in_frame(beyond_mass, cut.origin, cut.rotation),
                                 cut.rotation, 1.0))
        axis = rotations.rotate(cut.rotation, (1.0, 0.0, 0.0))
        kept_state, beyond_state = topology.separate_states(vessel.state, pieces, cut.origin,
                                                            axis, impulse)
        temperatures = vessel.thermal
        vessel.spec, vessel.resources, vessel.mass = cut.kept, kept_res, kept_mass
        vessel.state = kept_state
        new = SimVessel(new_key, cut.beyond, vessel.body, beyond_state, beyond_res,
                        beyond_mass, packed=vessel.packed)
        if temperatures is not None:
            vessel.thermal = _thermal_of(temperatures, cut.kept_indices)
            new.thermal = _thermal_of(temperatures, cut.beyond_indices)
        self.add(new)
        return new

    def dock(self, key: str, other_key: str, port: int, other_port: int) -> SimVessel:
        """Join vessel ``other_key`` to ``key`` at their port parts; return the removed one.

        The joined vessel keeps ``key``'s id, name and root part; the parts of the other
        stay where they are (``topology.merge``) and the two move on as one rigid body
        with their momentum (``topology.merge_states``).
        """
        a, b = self.vessels[key], self.vessels[other_key]
        rot_a = rotations.to_matrix(a.state.attitude)
        b_frame = b.state.position - rotations.to_matrix(b.state.attitude) @ b.mass.com
        origin = a.mass.com + rot_a.T @ (b_frame - a.state.position)
        rotation = rotations.multiply(rotations.conjugate(a.state.attitude), b.state.attitude)
        merged = topology.merge(a.spec, b.spec, port, other_port, origin, rotation)
        resources = topology.merge_resources(a.resources, b.resources, len(a.spec.parts),
                                             merged.order)
        mass = mass_properties(merged.spec, resources)
        state = topology.merge_states(a.state, a.mass, b.state, b.mass, mass)
        if a.thermal is not None and b.thermal is not None:
            b_thermal = _thermal_of(b.thermal, merged.order)
            a.thermal = thermal.State(np.concatenate([a.thermal.skin, b_thermal.skin]),
                                      np.concatenate([a.thermal.internal, b_thermal.internal]))
        else:
            a.thermal = None
        a.spec, a.resources, a.mass, a.state = merged.spec, resources, mass, state
        return self.remove(other_key)

    def step(self, forces: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
             wheel_commands: dict[str, dict[str, dict]] | None = None) -> float:
        """Advance UT by one physics step (scaled by warp); return the step length.

        ``forces`` maps a vessel key to its applied (force, torque) in base_link;
        ``wheel_commands`` a vessel key to ``TypedActuators.wheel_inputs`` (stock wheels
        when absent).
        """
        dt = self.frame_step
        forces = forces or {}
        wheel_commands = wheel_commands or {}
        focus = self.focus
        before = {key: vessel.state for key, vessel in self.vessels.items()}
        self._rolling = set()
        for vessel in self.vessels.values():
            vessel.state, vessel.specific_force = self._advance(
                vessel, dt, forces, wheel_commands.get(vessel.key, {}), vessel.key in focus)
        self.ut += dt
        if self._rolling:
            self.contacts.step(self.vessels.values(), self._rolling, self.is_packed,
                               self.terrain_of, before, self.ut, dt)
        return dt

    @property
    def collisions(self) -> list[collisions.Collision]:
        """Return every contact that began since the reset, one per vessel in it."""
        return self.contacts.events

    def drain_collisions(self, key: str) -> list[collisions.Collision]:
        """Return vessel ``key``'s collisions not drained before (its game reports them)."""
        return self.contacts.drain(key)

    def ground_of(self, body: Body) -> wheels.Ground:
        """Return the ground wheels roll on: the body's terrain, else its bare sphere."""
        terrain = self.terrain_of(body.name)
        if terrain is not None:
            return terrain
        return self._grounds.setdefault(body.name, wheels.SphereGround(body.radius))

    def wheel_params(self, vessel: SimVessel) -> wheels.Params | None:
        """Return the vessel's wheel parameters for its current mass (None: no wheels)."""
        if not self._has_wheels(vessel):
            return None
        weight = round(self._felt_gravity(vessel), 4)
        key = (vessel.vessel_id, round(vessel.mass.mass, 3), tuple(np.round(vessel.mass.com, 4)),
               weight)
        cached = self._wheel_params.get(vessel.key)
        if cached is None or cached[0] != key:
            cached = (key, wheels.params(vessel.spec, vessel.mass.com, vessel.mass.mass, weight))
            self._wheel_params[vessel.key] = cached
        return cached[1]

    def _has_wheels(self, vessel: SimVessel) -> bool:
        """Tell whether a vessel has wheel modules (kept until its description changes)."""
        found = self._wheeled.get(vessel.key)
        if found is None or found[0] is not vessel.spec:
            found = (vessel.spec, bool(wheels.wheel_modules(vessel.spec)))
            self._wheeled[vessel.key] = found
        return found[1]

    @staticmethod
    def _felt_gravity(vessel: SimVessel) -> float:
        """Return the gravity a vessel at rest on the ground feels (less the centrifugal)."""
        position = vessel.state.position
        spin = vessel.body.spin_vector()
        gravity = physics.gravity(vessel.body, position)
        felt = wheels.cross(spin, wheels.cross(spin, position)) - gravity
        return float(np.linalg.norm(felt))

    def _advance(self, vessel: SimVessel, dt: float,
                 forces: dict[str, tuple[np.ndarray, np.ndarray]], wheel_commands: dict,
                 active: bool):
        state = vessel.state
        packed = self.is_packed(vessel)
        simulate = (active or state.landed or vessel.key in forces) and not packed
        force, torque = forces.get(vessel.key, (None, None))
        inputs = physics.Inputs(vessel.mass.mass, vessel.mass.inertia, force, torque)
        params = None if packed else self.wheel_params(vessel)
        if params is not None and rover.near_ground(state, vessel.body):
            self._rolling.add(vessel.key)
            return self._roll(vessel, params, inputs, wheel_commands, dt)
        vessel.wheel_draw = 0.0
        if simulate or state.landed:
            return physics.step(state, inputs, dt, vessel.body)
        position, velocity = kepler.propagate(vessel.body, state.position, state.velocity, dt)
        attitude = rotations.normalize(rotations.multiply(
            state.attitude, rotations.from_rotvec(state.body_rate * dt)))
        return replace(state, ut=state.ut + dt, position=position, velocity=velocity,
                       attitude=attitude), np.zeros(3)

    def _roll(self, vessel: SimVessel, params: wheels.Params, inputs: physics.Inputs,
              wheel_commands: dict, dt: float):
        """Advance a vessel on its wheels; keep the wheels' state and their motors' draw."""
        powered = power.electric_charge(vessel) > power.EMPTY
        commands = wheels.Commands.of(params, wheel_commands, powered, vessel.drive)
        start = vessel.wheel_state
        if start is None or start.names != params.names:
            start = wheels.State.initial(params.names)
        result = rover.step(vessel.state, start, inputs, commands, params,
                            self.ground_of(vessel.body), vessel.body, dt)
        vessel.wheel_state = result.wheels
        vessel.wheel_draw = power.rover_wheel_draw_rate(result.wheels.drive_torque,
                                                        params.max_torque, params.ec_rate)
        return result.state, result.specific_force


class WorldView:
    """One game's view of a shared world: the world, with the game's own active vessel.

    Everything but ``active_key`` and ``active`` is the world's (vessels, UT, warp, the
    physics step, terrain), passed through by the properties and methods below, the part
    of ``World`` a game uses; the world's ``reset`` puts the view back on its ``home``.
    """

    def __init__(self, world: World, home: str) -> None:
        """View ``world`` from the game whose vessel is ``home``."""
        self.world = world
        self.home = home
        self.active_key = home

    @property
    def active(self) -> SimVessel:
        """Return this game's active vessel."""
        return self.world.vessels[self.active_key]

    @property
    def scenario(self) -> Scenario:
        """Return the shared world's scenario."""
        return self.world.scenario

    @property
    def physics_step(self) -> float:
        """Return the shared world's physics step, s."""
        return self.world.physics_step

    @property
    def frame_step(self) -> float:
        """Return the time one physics frame integrates, s (``World.frame_step``)."""
        return self.world.frame_step

    @property
    def ut(self) -> float:
        """Return the shared world's UT."""
        return self.world.ut

    @property
    def vessels(self) -> dict[str, SimVessel]:
        """Return every vessel of the shared world by key."""
        return self.world.vessels

    @property
    def warp_rate(self) -> float:
        """Return the shared world's warp rate."""
        return self.world.warp_rate

    @property
    def warp_mode(self) -> str:
        """Return the shared world's warp mode (``physics`` or ``rails``)."""
        return self.world.warp_mode

    @property
    def focus(self) -> set[str]:
        """Return the keys of every game's active vessel (``World.focus``)."""
        return self.world.focus

    @property
    def on_rails(self) -> bool:
        """Tell whether on-rails warp packs every vessel (``World.on_rails``)."""
        return self.world.on_rails

    def find(self, key_or_id: str) -> SimVessel:
        """Return a vessel by scenario key or vessel id (``World.find``)."""
        return self.world.find(key_or_id)

    def terrain_of(self, body_name: str) -> SiteTerrain | None:
        """Return the body's terrain or None (``World.terrain_of``)."""
        return self.world.terrain_of(body_name)

    def is_packed(self, vessel: SimVessel) -> bool:
        """Tell whether KSP has the vessel on rails (``World.is_packed``)."""
        return self.world.is_packed(vessel)

    def set_warp(self, rate: float, mode: str) -> None:
        """Select the shared world's warp (``World.set_warp``)."""
        self.world.set_warp(rate, mode)

    def reset(self) -> None:
        """Put the shared world back at the scenario's start (``World.reset``)."""
        self.world.reset()

    def separate(self, key: str, separator: int, new_key: str, new_vessel_id: str,
                 impulse: float, identity: VesselSpec | None = None) -> SimVessel:
        """Split a vessel of the shared world (``World.separate``)."""
        return self.world.separate(key, separator, new_key, new_vessel_id, impulse, identity)

    def dock(self, key: str, other_key: str, port: int, other_port: int) -> SimVessel:
        """Join two vessels of the shared world (``World.dock``)."""
        return self.world.dock(key, other_key, port, other_port)

    @property
    def collisions(self) -> list[collisions.Collision]:
        """Return the shared world's collision log (``World.collisions``)."""
        return self.world.collisions

    def drain_collisions(self, key: str | None = None) -> list[collisions.Collision]:
        """Return a vessel's undrained collisions, this game's own by default."""
        return self.world.drain_collisions(self.active_key if key is None else key)


def _thermal_of(state: thermal.State, indices: tuple[int, ...]) -> thermal.State:
    """Return the temperatures of the parts at ``indices``, in that order."""
    chosen = list(indices)
    return thermal.State(state.skin[chosen].copy(), state.internal[chosen].copy())
