"""The vessel's flight truth: ``FlightState`` and ``ControlSnapshot``, to ROS.

Both are ground truth (the core drops them with ``--disable-ground-truth``) and both carry
the UT-mapped stamp and ``base_link``: the mod already sends SI units in ``base_link``, so
fields are copied by name (``altitudeAsl`` -> ``altitude_asl``), nothing converted.

- Flight state (30 Hz): the latest wins, no ordering check. Refused besides the codec's
  rules: a packet without ``observationSequence`` (``missing_observation_sequence``), an
  applied-input block given in part (``incomplete_applied_inputs``), a negative
  ``appliedInputAge`` or an ``appliedInputSequence`` of 2^63 or more
  (``invalid_applied_inputs``).
- Control snapshot (30 Hz): one frame's flight, engines and separators in one message; the
  members inherit the outer runtime envelope and the flight's stamp. A snapshot whose
  ``observationSequence`` is not newer than the last one of the same runtime instance and
  epoch is skipped (counted as ignored, not logged).
"""

from __future__ import annotations

from typing import Any

from pylon_interfaces.msg import ControlSnapshot, FlightState
from pylon_protocol import envelope as wire_envelope
from pylon_protocol.schema import INT64_MAX

from pylon_bridge import convert
from pylon_bridge.context import Shared

APPLIED_INPUT_KEYS = ('appliedInputValid', 'flightCommandActive', 'inputAtLimit',
                      'appliedInputSequence', 'appliedInputAge', 'appliedPitch', 'appliedYaw',
                      'appliedRoll')


def applied_inputs_problem(packet: dict) -> tuple[str, str] | None:
    """Return (reason, detail) when the flight state's applied-input block is refused."""
    if 'observationSequence' not in packet:
        return 'missing_observation_sequence', 'pylon_flight_state needs observationSequence'
    given = [key for key in APPLIED_INPUT_KEYS if key in packet]
    if 'appliedInputValid' not in packet:
        return None if not given else (
            'incomplete_applied_inputs', f'{given[0]} without appliedInputValid')
    missing = [key for key in APPLIED_INPUT_KEYS if key not in packet]
    if missing:
        return 'incomplete_applied_inputs', f'appliedInputValid without {missing[0]}'
    if packet['appliedInputAge'] < 0:
        return 'invalid_applied_inputs', f'appliedInputAge {packet["appliedInputAge"]} < 0'
    if not 0 <= packet['appliedInputSequence'] <= INT64_MAX:
        return 'invalid_applied_inputs', 'appliedInputSequence outside 0..2^63-1'
    return None


def flight_state(packet: dict, stamp: float, body_frame: str) -> FlightState:
    """Return a validated ``pylon_flight_state`` as ``FlightState``."""
    msg = convert.copy_fields(FlightState(), packet)
    msg.vessel_id = packet.get('runtimeVesselId', packet['vesselId'])
    return convert.header(msg, stamp, body_frame)


class Flight:
    """Flight state and control snapshots of the active vessel."""

    def __init__(self, shared: Shared) -> None:
        """Work on the core's shared state."""
        self.s = shared
        self.new_session()

    def new_session(self) -> None:
        """Forget the last snapshot sequence of every epoch."""
        self.snapshot_sequence: dict[tuple[str, str], int] = {}

    def flight_state(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Publish a flight state on ``ground_truth/flight``."""
        s = self.s
        problem = applied_inputs_problem(packet)
        if problem is not None:
            return s.stats.drop(*problem)
        msg = flight_state(packet, s.stamp(packet, ros_now), s.config.body_frame)
        return [s.topics.publish('ground_truth/flight', msg, now)]

    def snapshot(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Publish a control snapshot on ``control/snapshot`` (newest of its epoch only)."""
        s = self.s
        key = (packet['runtimeInstance'], packet['runtimeEpoch'])
        sequence = packet['observationSequence']
        last = self.snapshot_sequence.get(key)
        if last is not None and sequence <= last:
            s.stats.ignored['stale_control_snapshot'] += 1
            return []
        envelope = {k: packet[k] for k in wire_envelope.ENVELOPE_KEYS}
        flight = dict(packet['flight'], **envelope)
        problem = applied_inputs_problem(flight)
        if problem is not None:
            return s.stats.drop(problem[0], f'control snapshot flight: {problem[1]}')
        self.snapshot_sequence[key] = sequence
        stamp = s.stamp(flight, ros_now)
        frame = s.config.body_frame
        msg = ControlSnapshot()
        msg.flight = flight_state(flight, stamp, frame)
        msg.header = msg.flight.header
        msg.engines = [convert.actuator_state(dict(member, **envelope), stamp, frame)
                       for member in packet['engines']]
        msg.separations = [convert.actuator_state(dict(member, **envelope), stamp, frame)
                           for member in packet['separations']]
        return [s.topics.publish('control/snapshot', msg, now)]
