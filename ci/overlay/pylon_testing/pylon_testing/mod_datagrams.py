"""State datagrams written as the PyLoN mod writes them, for the bridge's tests and benches.

Each function returns one datagram (or the chunks of one model or camera frame) of the
vessel ``VESSEL`` in the runtime envelope ``ENV``, validated and in the mod's number forms
(``pylon_protocol.wire``). The bridge's tests feed them to a ``BridgeCore`` or a running
``udp_bridge``; ``bench_bridge.py`` and ``bench_sensors.py`` send them at their rates.
(``mod_datagrams.txt`` beside the bridge's replay test holds the mod's literal text.)
``relative_nav`` is the one type the mod never sends: our simulator's extension.
"""

from __future__ import annotations

import math

from pylon_protocol import packets, wire
from pylon_protocol.bundle import build_bundle
from pylon_protocol.envelope import Envelope
from pylon_protocol.model_chunks import chunk_model
from pylon_protocol.urdf import build_proxy_urdf, link_name, ProxyPart

VESSEL = '5f3c2a1b9d8e4f7a6b5c4d3e2f1a0b9c'
OTHER = '0a1b2c3d4e5f60718293a4b5c6d7e8f9'
INSTANCE = 'c0ffee00' * 4
EPOCH = 'e90c4e90' * 4
ENV = Envelope(INSTANCE, 3, EPOCH, VESSEL)
UT = 12345.5


def envelope(generation: int = 3, epoch: str = EPOCH, vessel: str = VESSEL,
             instance: str = INSTANCE) -> Envelope:
    """Return a runtime envelope."""
    return Envelope(instance, generation, epoch, vessel)


def encode(type_name: str, env: Envelope = ENV, **fields) -> bytes:
    """Return one state datagram (validated, in the mod's number forms)."""
    return wire.encode_state(packets.build_state(type_name, env, **fields))


def session(ut: float = UT, env: Envelope = ENV, available: bool = True, sequence: int = 1,
            **extra) -> bytes:
    """Return a ``pylon_session`` heartbeat of ``env``."""
    return encode('pylon_session', env, vesselId=env.runtime_vessel_id, vesselName='Rover',
                  available=available, universalTime=ut, observationSequence=sequence,
                  realtimeSinceStartup=float(sequence), paused=extra.pop('paused', False),
                  packed=not available, warpRate=1.0, physicsWarp=False, **extra)


def imu(ut: float = UT, env: Envelope = ENV, rate=(0.0, 0.0, 0.1),
        accel=(0.0, 0.0, 9.81)) -> bytes:
    """Return a ``pylon_imu`` sample."""
    return encode('pylon_imu', env, vesselId=env.runtime_vessel_id, universalTime=ut,
                  angularVelocity=list(rate), linearAcceleration=list(accel))


def ground_truth(ut: float = UT, env: Envelope = ENV, origin: int = 1,
                 position=(1.0, 2.0, 3.0), rotation=(0.0, 0.0, 0.0, 1.0),
                 velocity=(10.0, 0.0, 0.0), omega=(0.0, 0.0, 0.5), body: bool = True) -> bytes:
    """Return a ``pylon_ground_truth`` sample (without the body fields if not ``body``)."""
    fields = {'vesselId': env.runtime_vessel_id, 'vessel': 'Rover', 'originSequence': origin,
              'universalTime': ut, 'position': list(position), 'rotation': list(rotation),
              'linearVelocity': list(velocity), 'angularVelocity': list(omega),
              'frameAngularVelocity': [0.0, 2.9e-4, 0.0],
              'linearAcceleration': [0.0, 0.0, 0.0], 'angularAcceleration': [0.0, 0.0, 0.0]}
    if body:
        fields.update(linearVelocityBody=list(velocity), angularVelocityBody=list(omega))
    return encode('pylon_ground_truth', env, **fields)


def nearby(ut: float = UT, env: Envelope = ENV, origin: int = 1) -> bytes:
    """Return a ``pylon_nearby_vessels`` packet with one neighbour."""
    return encode('pylon_nearby_vessels', env, vesselId=env.runtime_vessel_id,
                  originSequence=origin, universalTime=ut, position=[1.0, 2.0, 3.0],
                  linearVelocity=[10.0, 0.0, 0.0],
                  vessels=[{'vesselId': OTHER, 'vessel': 'Debris', 'isDebris': True,
                            'position': [40.0, -3.0, 0.2], 'linearVelocity': [0.0, 0.0, 0.0]}])


def motor(name: str = 'arm_hinge', position: float = 0.5, ut: float = UT,
          env: Envelope = ENV) -> bytes:
    """Return a ``pylon_motor_state`` of a revolute servo."""
    return encode('pylon_motor_state', env, name=name, jointType='revolute', vessel='Rover',
                  partFlightId=4005, universalTime=ut, position=position, velocity=0.1,
                  effort=1.5, current=0.2, target=position, powered=True, engaged=True,
                  locked=False, commandMode='position', commandActive=True)


def model_chunks(vessel: str = VESSEL, session_id: str = 'ef' * 16, env: Envelope = ENV,
                 parts: int = 3) -> list[bytes]:
    """Return the ``pylon_vessel_urdf_chunk`` datagrams of a small box model of ``vessel``."""
    proxy = [ProxyPart(None, (1.0, 1.0, 2.0), 100.0)]
    proxy += [ProxyPart(i - 1, (0.5, 0.5, 0.5), 10.0, xyz=(0.0, 0.0, 1.5),
                        rpy=(0.0, 0.0, 0.3)) for i in range(1, parts)]
    urdf = build_proxy_urdf(vessel, proxy)
    frames = [(4000 + i, link_name(vessel, i)) for i in range(parts)]
    bundle = build_bundle(session_id=session_id, vessel_id=vessel, urdf=urdf,
                          base_to_root_position=[0.0, 0.0, -0.4],
                          base_to_root_rotation=[0.0, 0.0, 0.0, 1.0], part_frames=frames)
    return [encode('pylon_vessel_urdf_chunk', env, **chunk)
            for chunk in chunk_model(bundle, session_id=session_id, sent_at_ut=UT,
                                     chunk_bytes=256)]


def model_clear(session_id: str = 'ef' * 16, env: Envelope = ENV) -> bytes:
    """Return a ``pylon_vessel_urdf_clear``."""
    return encode('pylon_vessel_urdf_clear', env, sessionId=session_id)


def star_tracker(sequence: int = 1, ut: float = UT, env: Envelope = ENV,
                 sensor: str = 'star_tracker_main', reason: str = 'tracking',
                 orientation=(0.0, 0.0, 0.38268343236509, 0.923879532511287),
                 session_id: str = 'ab' * 16, vessel: str | None = None) -> bytes:
    """Return a ``pylon_star_tracker`` sample (valid exactly when ``reason`` is tracking).

    ``vessel`` is the tracker's vessel (default: the session's).
    """
    valid = reason == 'tracking'
    return encode('pylon_star_tracker', env, vesselId=vessel or env.runtime_vessel_id,
                  sensorId=sensor,
                  sessionId=session_id, sequence=sequence, universalTime=ut,
                  referenceFrame='kerbol_inertial', measuredFrame='base_link', valid=valid,
                  reason=reason, angularRateDegSec=0.5, noiseStdRad=9.696273622190799e-05,
                  orientation=list(orientation) if valid else None)


def lidar_2d(ut: float = UT, env: Envelope = ENV, ranges=(1.0, 2.0, -1.0, 50.0, 3.0),
             fov: float = 90.0, sensor: str = 'lidar_2d_front', part: int = 4002) -> bytes:
    """Return a 2D ``pylon_lidar_scan`` (``maxDistance`` 40 m; -1 is a miss)."""
    return encode('pylon_lidar_scan', env, mode='2D', sensorId=sensor, vessel='Rover',
                  partFlightId=part, universalTime=ut, rayCount=len(ranges),
                  horizontalCount=len(ranges), verticalCount=1, hemisphereDensity=0.0,
                  horizontalFovDeg=fov, verticalFovDeg=0.0, scanRateHz=10.0,
                  maxDistance=40.0, layout='vertical-major', coordinateFrame='ros_sensor',
                  hitCount=sum(1 for r in ranges if 0 <= r <= 40), origin=[0.0, 0.0, 0.0],
                  framePosition=[0.1, 0.0, 0.2], frameRotation=[0.0, 0.0, 0.0, 1.0],
                  ranges=list(ranges))


def lidar_3d(ut: float = UT, env: Envelope = ENV, ranges=(1.0, 2.0, -1.0, 4.0),
             sensor: str = 'lidar_3d_front', part: int = 4002, **extra) -> bytes:
    """Return a 3D ``pylon_lidar_scan`` in the Fibonacci layout (``maxDistance`` 40 m)."""
    return encode('pylon_lidar_scan', env, mode='3D', sensorId=sensor, vessel='Rover',
                  partFlightId=part, universalTime=ut, rayCount=len(ranges),
                  horizontalCount=len(ranges), verticalCount=1, hemisphereDensity=1.0,
                  horizontalFovDeg=360.0, verticalFovDeg=180.0, scanRateHz=10.0,
                  maxDistance=40.0, coordinateFrame='ros_sensor', hitCount=3,
                  origin=[0.0, 0.0, 0.0], framePosition=[0.0, 0.0, 0.5],
                  frameRotation=[0.0, 0.0, 0.0, 1.0], ranges=list(ranges),
                  **{'layout': 'fibonacci-hemisphere', **extra})


def camera_chunks(raw: bytes, width: int, height: int, sequence: int = 1, ut: float = UT,
                  env: Envelope = ENV, sensor: str = 'camera_front', part: int = 4002,
                  chunk_bytes: int = 512, source: str = 'rgb_camera') -> list[bytes]:
    """Return the ``pylon_camera_frame_chunk`` datagrams of one rgb8 frame."""
    from pylon_protocol import camera
    chunks = camera.chunk_frame(
        raw, width=width, height=height, session_id='12' * 16, sequence=sequence,
        sensor_id=sensor, source=source, part_flight_id=part, universal_time=ut,
        vertical_fov_deg=60.0, frame_position=[0.1, 0.0, -0.35],
        frame_rotation=[0.0, 0.0, 0.0, 1.0], vessel='Rover' if source == 'rgb_camera'
        else None, chunk_bytes=chunk_bytes)
    return [encode('pylon_camera_frame_chunk', env, **c) for c in chunks]


FLIGHT = {
    'bodyName': 'Kerbin', 'altitudeAsl': 80000.0, 'altitudeAgl': 80000.0, 'latitude': 0.5,
    'longitude': -74.5, 'mass': 5000.0, 'liquidFuel': 360.0, 'oxidizer': 440.0,
    'electricCharge': 150.0, 'gravity': 7.9, 'bodyRadius': 600000.0,
    'gravitationalParameter': 3.5316e12, 'atmosphereDepth': 70000.0, 'apoapsis': 81000.0,
    'periapsis': 79000.0, 'timeToApoapsis': 600.0, 'verticalSpeed': 1.5,
    'horizontalSpeed': 2100.0, 'dynamicPressure': 0.0, 'landed': False, 'splashed': False,
    'upBody': [0.0, 0.0, 1.0], 'eastBody': [1.0, 0.0, 0.0], 'northBody': [0.0, 1.0, 0.0],
    'surfaceVelocityBody': [2100.0, 0.0, 1.5], 'orbitalVelocityBody': [2270.0, 0.0, 1.5],
    'angularVelocityBody': [0.0, 0.0, 0.01],
}
"""A ``pylon_flight_state`` payload of a vessel in a low Kerbin orbit (no identity, no UT)."""
APPLIED = {'appliedInputValid': True, 'flightCommandActive': True, 'inputAtLimit': False,
           'appliedInputSequence': 7, 'appliedInputAge': 0.02, 'appliedPitch': 0.25,
           'appliedYaw': -0.5, 'appliedRoll': 0.0}
"""The applied-input block of a newer mod's flight state."""


def flight_fields(ut: float = UT, sequence: int = 10, env: Envelope = ENV, **overrides) -> dict:
    """Return the fields of a ``pylon_flight_state`` (``overrides`` replace any)."""
    return {'vesselId': env.runtime_vessel_id, 'observationSequence': sequence,
            'universalTime': ut, **FLIGHT, **overrides}


def flight_state(ut: float = UT, sequence: int = 10, env: Envelope = ENV, **overrides) -> bytes:
    """Return a ``pylon_flight_state`` datagram."""
    return encode('pylon_flight_state', env, **flight_fields(ut, sequence, env, **overrides))


def control_snapshot(sequence: int = 20, ut: float = UT, env: Envelope = ENV) -> bytes:
    """Return a ``pylon_control_snapshot``: flight state, one engine, one decoupler."""
    vessel = env.runtime_vessel_id
    flight = {'type': 'pylon_flight_state', 'version': 1, **flight_fields(ut, sequence, env)}
    engine = {'type': 'pylon_actuator_state', 'version': 1, 'actuatorType': 'engine',
              'name': 'engine_5_0', 'vesselId': vessel, 'observationSequence': sequence,
              'universalTime': ut, 'enabled': True, 'operational': True, 'flameout': False,
              'commandActive': True, 'gimbalAvailable': True, 'gimbalCommandActive': False,
              'throttle': 0.5, 'thrust': 100.0, 'maxThrust': 200.0, 'gimbalPitch': 0.0,
              'gimbalYaw': 0.0, 'gimbalRoll': 0.0}
    separator = {'type': 'pylon_actuator_state', 'version': 1, 'actuatorType': 'separation',
                 'name': 'decoupler_12_0', 'vesselId': vessel, 'mechanism': 'decoupler',
                 'observationSequence': sequence, 'universalTime': ut, 'available': True,
                 'separated': False}
    return encode('pylon_control_snapshot', env, vesselId=vessel, observationSequence=sequence,
                  flight=flight, engines=[engine], separations=[separator])


def vehicle_health(charge: float, ut: float = UT, sequence: int = 10, capacity: float = 200.0,
                   env: Envelope = ENV) -> bytes:
    """Return a ``pylon_vehicle_health`` datagram."""
    return encode('pylon_vehicle_health', env, vesselId=env.runtime_vessel_id,
                  observationSequence=sequence, universalTime=ut, electricCharge=charge,
                  electricCapacity=capacity)


def part_thermal(flight_id: int, temperature: float, ut: float = UT, sequence: int = 10,
                 env: Envelope = ENV) -> bytes:
    """Return a ``pylon_part_thermal_state`` datagram of part ``flight_id``."""
    return encode('pylon_part_thermal_state', env, vesselId=env.runtime_vessel_id,
                  observationSequence=sequence, universalTime=ut, electricCharge=0.0,
                  electricCapacity=0.0, partFlightId=flight_id, partPersistentId=flight_id + 1,
                  partName='liquidEngine2', temperature=temperature, maxTemperature=2000.0,
                  skinTemperature=temperature + 5.0, maxSkinTemperature=2400.0,
                  shieldedFromAirstream=False)


def separation_result(operation_id: str = 'op-1', env: Envelope = ENV, **overrides) -> bytes:
    """Return a completed, retained ``pylon_separation_result`` (``overrides`` replace any)."""
    fields = {'operationId': operation_id, 'operationInstance': env.runtime_instance,
              'operationEpoch': env.runtime_epoch, 'operationVesselId': env.runtime_vessel_id,
              'originalGeneration': env.runtime_generation, 'name': 'decoupler_12_0',
              'controllerId': 'ctl', 'sequence': 4, 'completed': True, 'success': True,
              'retained': True, 'reason': 'separated', 'resultEpoch': env.runtime_epoch,
              'resultGeneration': env.runtime_generation,
              'activeVesselId': env.runtime_vessel_id,
              'resultingVesselIds': [env.runtime_vessel_id],
              'retentionRemainingSeconds': 600.0, **overrides}
    return encode('pylon_separation_result', env, **fields)


def relative_nav(ut: float = UT, env: Envelope = ENV, sensor: str = 'relative_nav_main',
                 targets=((OTHER, (120.0, 90.0, 0.0), (0.0, -0.17, 0.0)),)) -> bytes:
    """Return a ``pylon_relative_nav`` sample: (vessel id, position, velocity) per target.

    Not the mod's: our simulator's extension (``packets.EXTENSION_STATE_TYPES``), in the
    same number forms.
    """
    listed = [{'vesselId': vessel, 'vesselName': 'Target Station', 'isDebris': False,
               'range': math.hypot(*position), 'position': list(position),
               'velocity': list(velocity)} for vessel, position, velocity in targets]
    return encode('pylon_relative_nav', env, vesselId=env.runtime_vessel_id, sensorId=sensor,
                  partFlightId=4009, universalTime=ut, maxRange=2000.0, rateHz=10.0,
                  positionSigmaBase=0.05, rangeSigmaFraction=0.001, velocitySigma=0.005,
                  coordinateFrame='base_link', targets=listed)


def gnss(sequence: int = 1, ut: float = UT, env: Envelope = ENV, sensor: str = 'gnss',
         session: str = 'c' * 32, fix: tuple | None = (-0.0486, -74.7247, 0.6),
         frame: str = '', part: int = 4010) -> bytes:
    """Return a ``pylon_gnss`` sample: ``fix`` is (lat deg, lon deg, alt m) or None (no fix).

    Not the mod's: our simulator's extension (``packets.EXTENSION_STATE_TYPES``), 0.2 m
    horizontal and 0.4 m vertical sigma.
    """
    lat, lon, alt = fix if fix is not None else (None, None, None)
    return encode('pylon_gnss', env, vesselId=env.runtime_vessel_id, sensorId=sensor,
                  partFlightId=part, sessionId=session, sequence=sequence, universalTime=ut,
                  rateHz=10.0, frameId=frame, bodyName='Kerbin',
                  status='no_fix' if fix is None else 'fix', latitude=lat, longitude=lon,
                  altitude=alt, positionCovariance=[0.04, 0.04, 0.16])


def ahrs(sequence: int = 1, ut: float = UT, env: Envelope = ENV, sensor: str = 'ahrs',
         session: str = 'd' * 32, orientation: tuple = (0.0, 0.0, 0.0, 1.0),
         covariance: tuple = (1.2e-5, 1.2e-5, 7.6e-5), part: int = 4011) -> bytes:
    """Return a ``pylon_ahrs`` sample: base_link in ENU ``orientation`` [x, y, z, w].

    Not the mod's: our simulator's extension (``packets.EXTENSION_STATE_TYPES``), the
    covariance about East, North, Up (rad^2).
    """
    return encode('pylon_ahrs', env, vesselId=env.runtime_vessel_id, sensorId=sensor,
                  partFlightId=part, sessionId=session, sequence=sequence, universalTime=ut,
                  rateHz=50.0, orientation=list(orientation),
                  orientationCovariance=list(covariance))
