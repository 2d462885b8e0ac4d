"""Diagnostic statuses built from what the mod reports: servos and the wrench allocation.

Pure functions: packets in, ``diagnostic_msgs/DiagnosticStatus`` out. The node adds them
to ``/pylon/diagnostics`` next to its own counters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
import math

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

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
    return math.sqrt(sum(float(v) ** 2 for v in wrench[part]))


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
