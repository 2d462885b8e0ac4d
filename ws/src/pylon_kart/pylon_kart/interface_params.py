"""The parameters of ``kart_interface`` (one table; the node declares every row read-only)."""

from __future__ import annotations

from pylon_common import topics
from pylon_common.parameters import Parameter
from pylon_protocol.packets import MAX_LEASE_SEC

LOCKSTEP_COMMAND_AGE_SEC = 0.01
"""``lockstep_command_age_sec`` for a run lock-stepped on the interface's wheel commands: under
one physics step (0.02 s), so that only a command of the game's current step paces it."""

LEASE_DURATION_SEC = 1.0
"""``lease_duration_sec``'s default: a lease of one second of the game's clock."""

PARAMETERS: tuple[Parameter, ...] = (
    Parameter('controller_id', 'kart_interface',
              'controller_id of the lease and of every wheel command (stable name)'),
    Parameter('lease_duration_sec', LEASE_DURATION_SEC,
              's, lease lifetime of each acquire/renew (renewed every lease_duration_sec / 4)',
              0.1, MAX_LEASE_SEC),
    Parameter('control_period_sec', 0.02,
              's, the control step (also run at once on each control_cmd, at most every 5 ms)',
              0.005, 0.2),
    Parameter('command_timeout_sec', 0.5,
              's, without a control_cmd or actuation_cmd for this long the kart brakes to a '
              'stop', 0.05, 10.0),
    Parameter('wheel_command_timeout_sec', 0.25,
              "s, WheelCommand.timeout_sec: the wheels' stock settings return after it if "
              'this node stops', 0.05, 10.0),
    Parameter('lockstep_command_age_sec', 0.0,
              "s of game time; 0: every control step sends the wheels' orders. Above 0 (for a "
              'game lock-stepped on them, pylon_sim --lockstep-lead): only while the last '
              'control_cmd or actuation_cmd is at most this old, or once it has timed out, so '
              'that the game waits for the stack too', 0.0, 1.0),
    Parameter('max_acceleration', 10.0, 'm/s^2, the largest |acceleration| accepted',
              0.1, 50.0),
    Parameter('stop_deceleration', 3.0,
              'm/s^2, the deceleration of the stop after a command timeout', 0.1, 20.0),
    Parameter('full_brake_deceleration', 9.5,
              'm/s^2, what brake 1 gives the kart (measured: pylon_kart README)', 0.1, 30.0),
    Parameter('max_speed', 20.0, 'm/s, the highest speed the interface drives toward',
              0.1, 100.0),
    Parameter('park_speed', 0.3, 'm/s, PARK is refused above this speed', 0.0, 5.0),
    Parameter('mode_request_timeout_sec', 2.0,
              's (steady clock), how long the mode service waits for the lease', 0.1, 30.0),
    topics.TOPIC_PREFIX,
)


def lease_for_rate(rate: float) -> float:
    """Return ``lease_duration_sec`` for a game at ``rate`` x real time (0: back to back).

    On game time the lease runs on the game's clock (``pylon_sim`` times leases on its own,
    at ``rate``): scaled by the rate, it lasts the default's wall time, so that the delays
    of a busy machine (wall time) cost no more of it than at real time; ``MAX_LEASE_SEC`` at
    most, and for a game with no pace.
    """
    if rate <= 0.0:
        return MAX_LEASE_SEC
    return min(LEASE_DURATION_SEC * max(rate, 1.0), MAX_LEASE_SEC)
