"""The active vessel's actuators as the mod reports them: manifest, states and motor states.

Ids follow the mod: ``<kind>_<persistentId>_<moduleIndex>`` for wheels, engines, RCS and
separators (kind = mechanism for separators), the configured motor name for servos.
Until commands arrive (control authority), every actuator is at rest: engines off, RCS
idle, wheels still, separators armed, servos holding position 0. A wheel's grounded flag,
spin, torques and slip are the physics' (``wheels.State.fields``, merged by the vehicle
manager once the vessel rolls).
"""

from __future__ import annotations

from dataclasses import dataclass
import math

from pylon_protocol import names

from pylon_sim import wheels
from pylon_sim.allocation import nozzle_count
from pylon_sim.vessel import Module, Part, VesselSpec

SEPARATION_KINDS = ('decoupler', 'fairing', 'launch_clamp')


@dataclass(frozen=True)
class Actuator:
    """One actuator of the active vessel."""

    actuator_type: str     # wheel, engine, rcs, separation, motor
    name: str
    part: Part
    part_index: int
    module: Module


def servo_name(part, module) -> str:
    """Return a servo's motor name: its ``/ksp_vessel/joint_states`` entry."""
    raw = module.get('motor_name') or (
        f'servo_{part.persistent_id or part.flight_id}_{module.module_index}')
    return names.sanitize_name(str(raw), f'servo_{part.persistent_id}', max_length=64)


def actuators_of(spec: VesselSpec) -> list[Actuator]:
    """Return the vessel's actuators in part order."""
    found: list[Actuator] = []
    for index, part in enumerate(spec.parts):
        for module in part.modules:
            kind = module.kind
            if kind in ('wheel', 'engine', 'rcs') or kind in SEPARATION_KINDS:
                actuator_type = 'separation' if kind in SEPARATION_KINDS else kind
                name = names.actuator_name(kind, part.persistent_id, part.flight_id,
                                           module.module_index)
            elif kind == 'servo':
                actuator_type = 'motor'
                name = servo_name(part, module)
            else:
                continue
            found.append(Actuator(actuator_type, name, part, index, module))
    return found


def manifest(spec: VesselSpec) -> dict:
    """Return the ``pylon_actuator_manifest`` payload."""
    return {'vesselId': spec.vessel_id,
            'actuators': [{'actuatorType': a.actuator_type, 'name': a.name}
                          for a in actuators_of(spec)]}


def _common(actuator: Actuator, spec: VesselSpec, ut: float, observation_sequence: int) -> dict:
    return {
        'actuatorType': actuator.actuator_type, 'vesselId': spec.vessel_id,
        'observationSequence': observation_sequence, 'role': '', 'name': actuator.name,
        'vessel': spec.name, 'partFlightId': actuator.part.flight_id,
        'persistentId': actuator.part.persistent_id, 'universalTime': ut,
    }


def state(actuator: Actuator, spec: VesselSpec, ut: float, observation_sequence: int,
          com: tuple[float, float, float]) -> dict:
    """Return the ``pylon_actuator_state`` payload of a wheel, engine, RCS or separator."""
    payload = _common(actuator, spec, ut, observation_sequence)
    module = actuator.module
    if actuator.actuator_type == 'engine':
        payload.update({
            'enabled': False, 'operational': False, 'flameout': False, 'throttle': 0.0,
            'thrust': 0.0, 'maxThrust': float(module.get('max_thrust', 0.0)),
            'commandActive': False,
            'gimbalAvailable': float(module.get('gimbal_range_deg', 0.0)) > 0.0,
            'gimbalCommandActive': False, 'gimbalPitch': 0.0, 'gimbalYaw': 0.0,
            'gimbalRoll': 0.0})
    elif actuator.actuator_type == 'rcs':
        power = float(module.get('thruster_power', 0.0))
        nozzles = nozzle_count(module.settings)
        payload.update({
            'enabled': True, 'active': False, 'flameout': False, 'thrust': 0.0,
            'maxThrust': power * nozzles, 'thrustLimit': power, 'commandActive': False,
            'nozzleCount': nozzles})     # our extension: the bridge's unit conversion
    elif actuator.actuator_type == 'wheel':
        position = [p - c for p, c in zip(actuator.part.position, com)]
        radius = float(module.get('radius', wheels.SETTINGS['radius'][0]))
        payload.update({
            'enabled': True, 'wheelCount': 1, 'radius': radius, 'position': position,
            'rollingSign': 1, 'steeringSign': 1 if module.get('steerable') else 0,
            'steeringEnabled': bool(module.get('steerable', False)),
            'maxSteeringAngle': math.radians(float(module.get('max_steering_angle_deg', 0.0))),
            'bodyMin': [position[0] - radius, position[1] - 0.1, position[2] - radius],
            'bodyMax': [position[0] + radius, position[1] + 0.1, position[2] + radius],
            'grounded': False, 'angularPosition': 0.0, 'angularVelocity': 0.0,
            'steeringAngle': 0.0, 'driveTorque': 0.0, 'brakeTorque': 0.0, 'slip': 0.0,
            'maxDriveTorque': float(module.get('max_drive_torque',
                                               wheels.SETTINGS['max_drive_torque'][0])),
            'commandActive': False})
    else:
        payload.update({'mechanism': module.kind, 'available': True, 'separated': False})
    return payload


def motor_state(actuator: Actuator, spec: VesselSpec, ut: float) -> dict:
    """Return the ``pylon_motor_state`` payload of a servo."""
    module = actuator.module
    return {
        'name': actuator.name, 'jointType': str(module.get('joint', 'revolute')),
        'vessel': spec.name, 'partFlightId': actuator.part.flight_id, 'universalTime': ut,
        'position': 0.0, 'velocity': 0.0, 'effort': 0.0, 'current': 0.0, 'target': 0.0,
        'powered': True, 'engaged': True, 'locked': False, 'commandMode': 'position',
        'commandActive': False,
    }
