"""The mod's state packets, computed the way the mod computes them, as wire payloads.

Each function takes KSP's view of the active vessel (``ksp_view``) and returns the payload
fields (camelCase, as on the wire) of one packet type; ``runtime`` adds the envelope and
sends them. Conversions from Unity to ROS axes go through ``pylon_protocol.frames``, the
same functions the rest of the workspace uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import math
from types import MappingProxyType

import numpy as np
from pylon_protocol import frames, rotations

from pylon_sim.game import power, thermal
from pylon_sim.game.bodies import (
    air_density,
    body_fixed_rotation,
    enu_rotation,
    geodetic_from_fixed,
)
from pylon_sim.game.ksp_view import KspView
from pylon_sim.game.vessel import LOADED_RANGE_M
from pylon_sim.game.wheels import cross
from pylon_sim.game.world import SimVessel, World

NEARBY_RANGE_M = LOADED_RANGE_M
NEARBY_MAX = 32
NO_APPLIED_INPUT = MappingProxyType({
    'appliedInputValid': False, 'flightCommandActive': False, 'inputAtLimit': False,
    'appliedInputSequence': 0, 'appliedInputAge': 0.0,
    'appliedPitch': 0.0, 'appliedYaw': 0.0, 'appliedRoll': 0.0})


def vec(values) -> list[float]:
    """Return a JSON-ready list of floats."""
    return [float(v) for v in values]


def _dot(a, b) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def base_axes(view: KspView) -> tuple[tuple, tuple, tuple]:
    """Return base_link +X, +Y, +Z as Unity world vectors."""
    up, right, forward = view.up, view.right, view.forward
    return up, tuple(-v for v in right), tuple(-v for v in forward)


def to_base(view: KspView, world_unity) -> list[float]:
    """Convert a Unity world polar vector to base_link, as the mod does."""
    return vec(frames.world_to_base_link_polar(world_unity, view.up, view.right, view.forward))


def _add(a, b) -> list[float]:
    return [a[0] + b[0], a[1] + b[1], a[2] + b[2]]


def _sub(a, b) -> list[float]:
    return [a[0] - b[0], a[1] - b[1], a[2] - b[2]]


def imu(view: KspView) -> dict:
    """Return the ``pylon_imu`` payload: inertial rates and specific force in base_link."""
    rate = list(frames.vessel_angular_velocity_to_body(view.angular_velocity_local))
    if view.rotating:   # KSP's rate lacks the planet's spin in its rotating frame
        rate = _add(rate, frames.world_to_base_link_axial(
            view.planet_angular_velocity, view.up, view.right, view.forward))
    return {'angularVelocity': rate, 'linearAcceleration': to_base(view, view.perturbation)}


@dataclass
class GroundTruthAnchor:
    """The ENU origin of ground truth and the history for finite differences."""

    origin_sequence: int = 0
    fixed_position: np.ndarray | None = None      # anchor, body-fixed, m
    enu_from_fixed: np.ndarray = field(default_factory=lambda: np.eye(3))
    body_name: str = ''
    last_ut: float | None = None
    last_velocity: np.ndarray | None = None
    last_rate: np.ndarray | None = None

    def reset(self, vessel: SimVessel, ut: float) -> None:
        """Move the origin to the vessel's current place and forget the history."""
        fixed = body_fixed_rotation(vessel.body, ut) @ vessel.state.position
        lat, lon, _ = geodetic_from_fixed(vessel.body, fixed)
        self.origin_sequence += 1
        self.fixed_position = fixed
        self.enu_from_fixed = enu_rotation(lat, lon)
        self.body_name = vessel.body.name
        self.last_ut = self.last_velocity = self.last_rate = None


def enu_axes_unity(anchor: GroundTruthAnchor, view: KspView, vessel: SimVessel,
                   ut: float) -> list[tuple]:
    """Return the anchor's East, North, Up axes as Unity world vectors."""
    inertial_from_fixed = body_fixed_rotation(vessel.body, ut).T
    return [view.world_unity(inertial_from_fixed @ axis) for axis in anchor.enu_from_fixed]


def ground_truth(anchor: GroundTruthAnchor, view: KspView, vessel: SimVessel,
                 ut: float) -> dict:
    """Return the ``pylon_ground_truth`` payload (ENU at the anchor, planet-fixed axes)."""
    body = vessel.body
    fixed = body_fixed_rotation(body, ut) @ vessel.state.position
    lat, lon, alt = geodetic_from_fixed(body, fixed)
    # positions come from latitude, longitude and altitude on the body's sphere
    lat_r, lon_r = math.radians(lat), math.radians(lon)
    r = body.radius + alt
    geodetic = r * np.array([math.cos(lat_r) * math.cos(lon_r),
                             math.cos(lat_r) * math.sin(lon_r), math.sin(lat_r)])
    position = anchor.enu_from_fixed @ (geodetic - anchor.fixed_position)
    enu = enu_axes_unity(anchor, view, vessel, ut)
    axes = base_axes(view)
    matrix = np.array([[_dot(e, b) for b in axes] for e in enu])
    rotation = rotations.from_matrix(matrix)
    velocity = np.array([_dot(view.srf_velocity, e) for e in enu])
    body_rate = np.array(frames.vessel_angular_velocity_to_body(view.angular_velocity_local))
    spin_body = np.array(frames.world_to_base_link_axial(
        view.planet_angular_velocity, view.up, view.right, view.forward))
    if not view.rotating:   # inertial frame: remove the planet's spin
        body_rate = body_rate - spin_body
    rate_enu = matrix @ body_rate
    frame_rate = matrix @ spin_body
    if anchor.last_ut is None or ut <= anchor.last_ut:
        accel, angular_accel = np.zeros(3), np.zeros(3)
    else:
        dt = ut - anchor.last_ut
        accel = (velocity - anchor.last_velocity) / dt
        angular_accel = (rate_enu - anchor.last_rate) / dt
    anchor.last_ut, anchor.last_velocity, anchor.last_rate = ut, velocity, rate_enu
    return {
        'vesselId': vessel.vessel_id, 'vessel': vessel.spec.name,
        'originSequence': anchor.origin_sequence, 'universalTime': ut,
        'position': vec(position), 'rotation': vec(rotation),
        'linearVelocity': vec(velocity), 'angularVelocity': vec(rate_enu),
        'linearVelocityBody': vec(matrix.T @ velocity), 'angularVelocityBody': vec(body_rate),
        'frameAngularVelocity': vec(frame_rate),
        'linearAcceleration': vec(accel), 'angularAcceleration': vec(angular_accel),
    }


def nearby_vessels(world: World, anchor: GroundTruthAnchor, view: KspView,
                   gt: dict, loaded_range: float = NEARBY_RANGE_M) -> dict:
    """Return the ``pylon_nearby_vessels`` payload that follows ``gt``.

    Loaded, unpacked vessels on the same body within 2500 m, nearest first, at most 32;
    their positions and velocities are absolute in the same ENU as the observer's.
    """
    observer = world.active
    ut = world.ut
    enu = enu_axes_unity(anchor, view, observer, ut)
    spin = observer.body.spin_vector()
    obs_srf = observer.state.velocity - cross(spin, observer.state.position)
    candidates = []
    for other in world.vessels.values():
        if other is observer or other.body is not observer.body or world.is_packed(other):
            continue
        offset = other.state.position - observer.state.position
        distance = float(np.linalg.norm(offset))
        if distance > loaded_range:
            continue
        srf = other.state.velocity - cross(spin, other.state.position)
        offset_u = view.world_unity(offset)
        dv_u = view.world_unity(srf - obs_srf)
        candidates.append((distance, {
            'vesselId': other.vessel_id, 'vessel': other.spec.name,
            'isDebris': other.spec.is_debris,
            'position': vec(np.array(gt['position'])
                            + np.array([_dot(offset_u, e) for e in enu])),
            'linearVelocity': vec(np.array(gt['linearVelocity'])
                                  + np.array([_dot(dv_u, e) for e in enu])),
        }))
    candidates.sort(key=lambda item: item[0])
    return {
        'vesselId': observer.vessel_id, 'originSequence': gt['originSequence'],
        'universalTime': ut, 'position': gt['position'],
        'linearVelocity': gt['linearVelocity'],
        'vessels': [entry for _, entry in candidates[:NEARBY_MAX]],
    }


def flight_state(world: World, view: KspView, observation_sequence: int,
                 applied: dict | None = None) -> dict:
    """Return the ``pylon_flight_state`` payload of the active vessel.

    ``applied`` holds the applied-input fields (``VehicleManager.flight_fields``); without
    it they say that no input was applied.
    """
    vessel = world.active
    body = vessel.body
    state = vessel.state
    ut = world.ut
    fixed = body_fixed_rotation(body, ut) @ state.position
    lat, lon, alt = geodetic_from_fixed(body, fixed)
    # the orbit and surface figures on 3-tuples (numpy calls on 3-vectors cost more)
    position, velocity = state.position.tolist(), state.velocity.tolist()
    r = math.hypot(*position)
    srf = _sub(velocity, frames.cross(body.spin_vector().tolist(), position))
    up_i = np.array(position) / r
    enu_inertial = body_fixed_rotation(body, ut).T @ enu_rotation(lat, lon).T
    east_i, north_i = enu_inertial[:, 0], enu_inertial[:, 1]
    up = up_i.tolist()
    vertical = _dot(srf, up)
    horizontal = math.hypot(*_sub(srf, [vertical * c for c in up]))
    energy = 0.5 * _dot(velocity, velocity) - body.gm / r
    h = frames.cross(position, velocity)
    a = -body.gm / (2 * energy) if energy < 0 else math.inf
    ecc = math.hypot(*_sub([c / body.gm for c in frames.cross(velocity, h)], up))
    apoapsis = a * (1 + ecc) - body.radius if math.isfinite(a) else -1.0
    periapsis = (_dot(h, h) / body.gm / (1 + ecc)) - body.radius
    time_to_ap = _time_to_apoapsis(body.gm, a, ecc, state.position, state.velocity)
    totals = vessel.spec.resource_totals(vessel.resources)
    density = air_density(body, alt)
    return {
        'vesselId': vessel.vessel_id, 'observationSequence': observation_sequence,
        'bodyName': body.name, 'universalTime': ut,
        'altitudeAsl': alt, 'altitudeAgl': altitude_agl(world, vessel, fixed, alt),
        'latitude': lat, 'longitude': lon, 'mass': vessel.mass.mass,
        'liquidFuel': totals.get('LiquidFuel', 0.0), 'oxidizer': totals.get('Oxidizer', 0.0),
        'electricCharge': totals.get('ElectricCharge', 0.0),
        'gravity': body.gm / (r * r), 'bodyRadius': body.radius,
        'gravitationalParameter': body.gm, 'atmosphereDepth': body.atmosphere_depth,
        'apoapsis': apoapsis, 'periapsis': periapsis, 'timeToApoapsis': time_to_ap,
        'verticalSpeed': vertical, 'horizontalSpeed': horizontal,
        'dynamicPressure': 0.5 * density * _dot(srf, srf),
        'landed': state.landed, 'splashed': False,
        **(applied or NO_APPLIED_INPUT),
        'upBody': to_base(view, view.world_unity(up_i)),
        'eastBody': to_base(view, view.world_unity(east_i)),
        'northBody': to_base(view, view.world_unity(north_i)),
        'surfaceVelocityBody': to_base(view, view.srf_velocity),
        'orbitalVelocityBody': to_base(view, view.obt_velocity),
        'angularVelocityBody': vec(frames.vessel_angular_velocity_to_body(
            view.angular_velocity_local)),
    }


def altitude_agl(world: World, vessel: SimVessel, fixed: np.ndarray, alt: float) -> float:
    """Return the centre of mass's height above the ground under it (m, never negative).

    ``fixed`` is the centre of mass in the body-fixed frame, ``alt`` its altitude. Over
    the scenario's terrain it is the clearance to the terrain (its craters and boulders);
    elsewhere the altitude, less the resting height of a landed vessel.
    """
    terrain = world.terrain_of(vessel.body.name)
    if terrain is not None:
        return max(0.0, float(terrain.ground(fixed[None, :])[0][0]))
    state = vessel.state
    return max(0.0, alt - (state.rest_altitude if state.landed else 0.0))


def _time_to_apoapsis(mu: float, a: float, ecc: float, position: np.ndarray,
                      velocity: np.ndarray) -> float:
    if not math.isfinite(a) or ecc < 1e-9 or ecc >= 1:
        return 0.0
    r = float(np.linalg.norm(position))
    cos_e = (1 - r / a) / ecc
    ecc_anomaly = math.acos(max(-1.0, min(1.0, cos_e)))
    if float(position @ velocity) < 0:
        ecc_anomaly = 2 * math.pi - ecc_anomaly
    mean = ecc_anomaly - ecc * math.sin(ecc_anomaly)
    n = math.sqrt(mu / a ** 3)
    return ((math.pi - mean) % (2 * math.pi)) / n


def vehicle_health(vessel: SimVessel, ut: float, observation_sequence: int) -> dict:
    """Return the ``pylon_vehicle_health`` payload: the vessel's ElectricCharge."""
    return {'vesselId': vessel.vessel_id, 'observationSequence': observation_sequence,
            'universalTime': ut, 'electricCharge': max(0.0, power.electric_charge(vessel)),
            'electricCapacity': power.electric_capacity(vessel.spec)}


def part_thermal_states(vessel: SimVessel, ut: float, observation_sequence: int) -> list[dict]:
    """Return one ``pylon_part_thermal_state`` payload per part of the vessel."""
    temperatures = vessel.thermal or thermal.initial_state(len(vessel.spec.parts))
    out = []
    for index, part in enumerate(vessel.spec.parts):
        out.append({
            'vesselId': vessel.vessel_id, 'observationSequence': observation_sequence,
            'universalTime': ut,
            'electricCharge': max(0.0, power.part_charge(vessel.resources, index)),
            'electricCapacity': float(part.capacity.get(power.ELECTRIC_CHARGE, 0.0)),
            'partFlightId': part.flight_id, 'partPersistentId': part.persistent_id,
            'partName': part.name, 'temperature': float(temperatures.internal[index]),
            'maxTemperature': float(part.max_temp),
            'skinTemperature': float(temperatures.skin[index]),
            'maxSkinTemperature': float(part.skin_max_temp),
            'shieldedFromAirstream': False})
    return out


def session(world: World, envelope_vessel_id: str, available: bool, paused: bool,
            packed: bool, observation_sequence: int, realtime: float) -> dict:
    """Return the ``pylon_session`` heartbeat payload."""
    active = world.vessels.get(world.active_key)
    return {
        'vesselId': envelope_vessel_id,
        'vesselName': active.spec.name if active and envelope_vessel_id else '',
        'available': available, 'universalTime': world.ut,
        'observationSequence': observation_sequence, 'realtimeSinceStartup': realtime,
        'paused': paused, 'packed': packed, 'warpRate': world.warp_rate,
        'physicsWarp': world.warp_mode == 'physics' and world.warp_rate > 1.0,
    }
