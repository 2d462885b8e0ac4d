"""Everything ``/pylon/diagnostics`` reports, built in one place.

Pure functions: the core's counters, the vessel session, the topic rates, the latency
samples and what the mod reports of servos and the wrench allocation in;
``diagnostic_msgs/DiagnosticStatus`` out. ``report`` assembles the whole array the node
publishes every ``--diagnostics-period-sec``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
import math

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from pylon_bridge.actions import Stats
from pylon_bridge.vessel_session import ACTIVE, CHANGED, STATE_NAMES, VesselSessionState

HARDWARE_ID = 'udp_bridge'
MOTOR_FIELDS = ('jointType', 'position', 'velocity', 'effort', 'target', 'current',
                'powered', 'engaged', 'locked', 'commandMode', 'commandActive')


def _values(pairs: Iterable[tuple[str, object]]) -> list[KeyValue]:
    return [KeyValue(key=key, value=str(value)) for key, value in pairs]


def motor_statuses(motors: Iterable[Mapping]) -> list[DiagnosticStatus]:
    """Return one status per servo: WARN when unpowered or locked, OK otherwise."""
    out = []
    for motor in sorted(motors, key=lambda m: m['name']):
        problems = [word for word, bad in (('no power', not motor.get('powered', True)),
                                           ('locked', motor.get('locked', False))) if bad]
        out.append(DiagnosticStatus(
            level=DiagnosticStatus.WARN if problems else DiagnosticStatus.OK,
            name=f'pylon_bridge: motor {motor["name"]}',
            message=', '.join(problems) or 'ok', hardware_id=HARDWARE_ID,
            values=_values((key, motor[key]) for key in MOTOR_FIELDS if key in motor)))
    return out


def _norm(wrench: Mapping, part: str) -> float:
    # hypot, not sqrt(sum(v ** 2)): a finite 1e200 squared raises OverflowError (the fuzz
    # bench's huge numbers stopped the diagnostics timer, and the bridge, with it)
    return math.hypot(*(float(v) for v in wrench[part]))


def wrench_status(packet: Mapping | None) -> DiagnosticStatus:
    """Return the last wrench allocation: residuals, ratios and the mod's reason.

    WARN when the command was refused or saturated; OK otherwise (also before any).
    """
    if packet is None:
        return DiagnosticStatus(level=DiagnosticStatus.OK, name='pylon_bridge: wrench allocation',
                                message='no wrench command yet', hardware_id=HARDWARE_ID)
    warn = not packet['accepted'] or packet.get('saturated', False)
    pairs = [('controller_id', packet.get('controllerId', '')),
             ('sequence', packet.get('sequence', 0)), ('accepted', packet['accepted']),
             ('reason', packet.get('reason', '')),
             ('saturation_ratio', f'{float(packet.get("saturationRatio", 0.0)):.6g}'),
             ('tracking_error_ratio', f'{float(packet.get("trackingErrorRatio", 0.0)):.6g}'),
             ('saturated', packet.get('saturated', False))]
    for field in ('allocationResidual', 'trackingResidual'):
        for part in ('force', 'torque'):
            pairs.append((f'{field}.{part}_norm', f'{_norm(packet[field], part):.6g}'))
    return DiagnosticStatus(
        level=DiagnosticStatus.WARN if warn else DiagnosticStatus.OK,
        name='pylon_bridge: wrench allocation',
        message=packet.get('reason', '') or ('accepted' if packet['accepted'] else 'refused'),
        hardware_id=HARDWARE_ID, values=_values(pairs))


def _status(name: str, message: str, values: list[KeyValue],
            level: bytes = DiagnosticStatus.OK) -> DiagnosticStatus:
    return DiagnosticStatus(level=level, name=f'pylon_bridge: {name}', message=message,
                            hardware_id=HARDWARE_ID, values=values)


def _counted(prefix: str, counts: Mapping[str, int]) -> list[KeyValue]:
    return [KeyValue(key=f'{prefix}.{name}', value=str(count))
            for name, count in sorted(counts.items())]


def datagrams(stats: Stats) -> DiagnosticStatus:
    """Return the datagram counters: received, accepted, dropped, ignored and routed.

    ``routed.<type>``: handed to the ground-truth domain's core (``--ground-truth-domain``).
    """
    return _status(
        'datagrams', f'{stats.received} received, {sum(stats.dropped.values())} dropped',
        _values((('received', stats.received), ('accepted', stats.accepted)))
        + _counted('dropped', stats.dropped) + _counted('ignored', stats.ignored)
        + _counted('routed', stats.routed) + _counted('received', stats.by_type))


def session(state: VesselSessionState, paused: bool) -> DiagnosticStatus:
    """Return the vessel session: WARN unless it is ACTIVE or CHANGED."""
    healthy = state.state in (ACTIVE, CHANGED)
    return _status(
        'session', f'{STATE_NAMES[state.state]} ({state.reason})',
        _values((('state', STATE_NAMES[state.state]), ('vessel_id', state.vessel_id),
                 ('vessel_name', state.vessel_name), ('generation', state.generation),
                 ('runtime_instance', state.runtime_instance),
                 ('runtime_generation', state.runtime_generation),
                 ('runtime_epoch', state.runtime_epoch), ('model_ready', state.model_ready),
                 ('paused', paused))),
        DiagnosticStatus.OK if healthy else DiagnosticStatus.WARN)


def topics(rates: Mapping[str, float], topic_count: int,
           topic_name: Callable[[str], str]) -> DiagnosticStatus:
    """Return the publication rate (Hz) of every topic key since the last report."""
    return _status('topics', f'{topic_count} topics',
                   [KeyValue(key=f'rate_hz.{topic_name(key)}', value=f'{rate:.1f}')
                    for key, rate in sorted(rates.items())])


def commands(stats: Stats) -> DiagnosticStatus:
    """Return the commands sent by type and refused by reason."""
    return _status('commands', f'{stats.commands_sent.total()} sent, '
                               f'{stats.commands_rejected.total()} refused',
                   _counted('sent', stats.commands_sent)
                   + _counted('refused', stats.commands_rejected))


def latency(samples: Mapping[str, Sequence[float]]) -> DiagnosticStatus:
    """Return p50, p99, max and count of each kind's latency samples (ms)."""
    values = []
    for kind, taken in sorted(samples.items()):
        ordered = sorted(taken)
        if not ordered:
            continue
        for name, fraction in (('p50', 0.5), ('p99', 0.99)):
            index = min(len(ordered) - 1, int(fraction * len(ordered)))
            values.append(KeyValue(key=f'{kind}.{name}_ms', value=f'{ordered[index]:.3f}'))
        values += _values(((f'{kind}.max_ms', f'{ordered[-1]:.3f}'),
                           (f'{kind}.count', len(ordered))))
    return _status('latency', 'datagram arrival to publish returned, since the last report '
                              '(ms)', values)


def report(core, rates: Mapping[str, float], topic_count: int,
           topic_name: Callable[[str], str],
           latency_samples: Mapping[str, Sequence[float]]) -> DiagnosticArray:
    """Return the whole diagnostics array of a ``BridgeCore`` (header stamp left to set)."""
    actuation = core.actuation
    return DiagnosticArray(status=[
        datagrams(core.stats), session(core.vessel, core.paused),
        topics(rates, topic_count, topic_name), commands(core.stats), latency(latency_samples),
        wrench_status(actuation.last_wrench_status),
        *motor_statuses(actuation.motors.values())])
