"""The active vessel's actuators as the mod reports them: manifest, states and motor states.

Ids follow the mod: ``<kind>_<persistentId>_<moduleIndex>`` for wheels, engines, RCS and
separators (kind = mechanism for separators), the configured motor name for servos.
Until commands arrive (control authority), every actuator is at rest: engines off, RCS
idle, wheels still, separators armed, servos holding position 0. A wheel's grounded flag,
spin, torques and slip are the physics' (``wheels.State.fields``, merged by the vehicle
manager once the vessel rolls).
"""

from __future__ import annotations

import math

from pylon_sim.game import wheels
from pylon_sim.game.parts import Actuator, actuators_of
from pylon_sim.game.rcs_geometry import nozzle_count
from pylon_sim.game.vessel import VesselSpec


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
            'thrust': 0.0, 'maxThrust': module.number('max_thrust', 0.0),
            'commandActive': False,
            'gimbalAvailable': module.number('gimbal_range_deg', 0.0) > 0.0,
            'gimbalCommandActive': False, 'gimbalPitch': 0.0, 'gimbalYaw': 0.0,
            'gimbalRoll': 0.0})
    elif actuator.actuator_type == 'rcs':
        power = module.number('thruster_power', 0.0)
        nozzles = nozzle_count(module.settings)
        payload.update({
            'enabled': True, 'active': False, 'flameout': False, 'thrust': 0.0,
            'maxThrust': power * nozzles, 'thrustLimit': power, 'commandActive': False,
            'nozzleCount': nozzles})     # our extension: the bridge's unit conversion
    elif actuator.actuator_type == 'wheel':
        position = [p - c for p, c in zip(actuator.part.position, com)]
        radius = module.number('radius', wheels.SETTINGS['radius'][0])
        steerable = module.flag('steerable', False)
        payload.update({
            'enabled': True, 'wheelCount': 1, 'radius': radius, 'position': position,
            'rollingSign': 1, 'steeringSign': 1 if steerable else 0,
            'steeringEnabled': steerable,
            'maxSteeringAngle': math.radians(module.number('max_steering_angle_deg', 0.0)),
            'bodyMin': [position[0] - radius, position[1] - 0.1, position[2] - radius],
            'bodyMax': [position[0] + radius, position[1] + 0.1, position[2] + radius],
            'grounded': False, 'angularPosition': 0.0, 'angularVelocity': 0.0,
            'steeringAngle': 0.0, 'driveTorque': 0.0, 'brakeTorque': 0.0, 'slip': 0.0,
            'maxDriveTorque': module.number('max_drive_torque',
                                            wheels.SETTINGS['max_drive_torque'][0]),
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
