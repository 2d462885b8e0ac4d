"""The one table of setpoint_controller parameters: name, default, description, range.

The ROS node declares one ROS parameter per row of ``PARAMETERS`` (type from the default,
range from ``minimum``/``maximum`` when they are numbers) and
``config/setpoint_controller.yaml`` lists every row with its default (a test keeps the two
in step). Rows with ``scope='node'`` are used by the node only (topics, lease, timeouts);
rows with ``scope='control'`` feed ``control_law.ControlParams``.

All gains and limits stay below the KSP side's ``ControlSafety.cfg`` (250 kN, 100 kN·m,
0.35 rad/s, 50 kN/s, 10 kN·m/s): that filter is the last boundary, not the working limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
import math

Value = bool | int | float | str


@dataclass(frozen=True)
class Param:
    """One parameter: name, default (its type is the parameter's type), text, range."""

    name: str
    default: Value
    description: str
    minimum: float | None = None
    maximum: float | None = None
    scope: str = 'control'


PARAMETERS: tuple[Param, ...] = (
    # -- node level (the node uses these; listed here so the YAML and the node agree) ----
    Param('controller_id', 'setpoint_controller',
          'controller_id of the lease and of every formal command (stable name)',
          scope='node'),
    Param('setpoint_topic', '/setpoint_controller/setpoint',
          'ControlSetpoint input topic', scope='node'),
    Param('priority', 0, 'lease priority; a higher one preempts a lower owner',
          -2147483648, 2147483647, scope='node'),
    Param('lease_duration_sec', 1.0,
          's, lease lifetime of each acquire/renew (renewed every lease_duration_sec / 4)',
          0.1, 10.0, scope='node'),
    Param('suppress_sas', True, 'hold SAS off for the whole ownership of the lease',
          scope='node'),
    Param('command_period_sec', 0.05, 's, period of the control step and wrench commands',
          0.01, 1.0, scope='node'),
    Param('wrench_timeout_sec', 0.5,
          's, BodyWrenchCommand.timeout_sec (KSP zeroes the wrench after it)', 0.05, 10.0,
          scope='node'),
    Param('setpoint_timeout_sec', 1.0,
          's, an active setpoint older than this disarms the controller (0: never)',
          0.0, 3600.0, scope='node'),
    Param('input_timeout_sec', 0.5,
          's, a state estimate older than this disarms the controller', 0.01, 10.0,
          scope='node'),
    Param('state_topic', '',
          'nav_msgs/Odometry state input; empty: the estimator /pylon_estimator/odometry',
          scope='node'),
    Param('imu_topic', '/ksp_vessel/imu/data_raw',
          'sensor_msgs/Imu input: the body rate DETUMBLE uses (before any estimate)',
          scope='node'),
    # -- attitude --------------------------------------------------------------------------
    Param('attitude_hold_rate_limit_deg_s', 1.5,
          'deg/s, largest body rate the attitude loop commands (ATTITUDE_HOLD, SIX_DOF)',
          0.01, 20.0),
    Param('attitude_gain', 0.8,
          '1/s, outer loop: target rate = attitude_gain * attitude error near the target',
          0.01, 10.0),
    Param('attitude_accel_fraction', 0.5,
          'share of the available angular acceleration the braking (sqrt) law plans with',
          0.05, 1.0),
    Param('rate_gain', 4.0, '1/s, inner rate loop: angular acceleration per rate error',
          0.01, 50.0),
    Param('max_gain_dt', 0.5,
          'upper bound of gain * dt of the rate and velocity loops (discrete stability)',
          0.05, 1.0),
    Param('detumble_gain', 1.0, '1/s, DETUMBLE torque = -detumble_gain * I * omega',
          0.01, 50.0),
    Param('detumble_rate_deadband_rad_s', 2.0e-4,
          'rad/s, DETUMBLE outputs exact zeros below this body rate', 0.0, 0.1),
    Param('max_angular_speed_rad_s', 0.3,
          'rad/s, above this torque that speeds the rotation up is removed (KSP: 0.35)',
          0.001, 0.35),
    Param('attitude_deadband_deg', 0.03,
          'deg, hold deadband: exact zero wrench below this attitude error (and rate)',
          0.0, 10.0),
    Param('rate_deadband_deg_s', 0.002,
          'deg/s, hold deadband: exact zero wrench below this body-rate error (and angle)',
          0.0, 10.0),
    Param('deadband_exit_factor', 2.0,
          'hysteresis: the deadband is left when an error exceeds factor * its threshold',
          1.0, 10.0),
    Param('rate_error_deadband_deg_s', 0.01,
          'deg/s, while coasting (target rate >= half the limit) the rate loop commands '
          'zero torque as long as the rate error is below this', 0.0, 1.0),
    # -- translation (SIX_DOF) -------------------------------------------------------------
    Param('position_gain', 0.2, '1/s, target velocity = position_gain * position error',
          0.001, 10.0),
    Param('velocity_gain', 1.0, '1/s, acceleration per velocity error', 0.001, 50.0),
    Param('velocity_limit_m_s', 0.5,
          'm/s, largest velocity the position loop commands (relative to the target)',
          0.001, 100.0),
    Param('translation_accel_fraction', 0.5,
          'share of the available linear acceleration the braking (sqrt) law plans with',
          0.05, 1.0),
    Param('position_deadband_m', 0.02,
          'm, SIX_DOF outputs zero force below this position error (and velocity)',
          0.0, 100.0),
    Param('velocity_deadband_m_s', 0.005,
          'm/s, SIX_DOF outputs zero force below this velocity error (and position)',
          0.0, 10.0),
    # -- wrench limits (below ControlSafety.cfg) ---------------------------------------------
    Param('max_force_n', 200000.0, 'N, force magnitude limit (KSP: 250000)', 0.0, 250000.0),
    Param('max_torque_nm', 80000.0, 'N·m, torque magnitude limit (KSP: 100000)',
          0.0, 100000.0),
    Param('max_force_slew_n_s', 40000.0, 'N/s, force change limit (KSP: 50000)',
          1.0, 50000.0),
    Param('max_torque_slew_nm_s', 8000.0, 'N·m/s, torque change limit (KSP: 10000)',
          1.0, 10000.0),
    Param('slew_margin', 0.8,
          'share of the slew limit the braking plan assumes when ramping a wrench down',
          0.1, 1.0),
    Param('max_continuous_actuation_sec', 25.0,
          's, after this much consecutive non-zero output send exact zeros for '
          'forced_idle_sec (KSP cuts after 30 s)', 1.0, 29.0),
    Param('forced_idle_sec', 0.6,
          's, exact zeros sent to reset the KSP continuous count (KSP needs 0.5 s)',
          0.5, 5.0),
    # -- saturation --------------------------------------------------------------------------
    Param('saturation_scale_floor', 0.2,
          'when WrenchFeedback reports saturation the wrench cap falls to the allocated '
          'magnitude, but never below floor * the requested magnitude', 0.0, 1.0),
    Param('saturation_recovery_per_sec', 0.2,
          '1/s, the reduced cap grows back by this relative rate per second', 0.0, 10.0),
    # -- vehicle model fall-backs --------------------------------------------------------------
    Param('fallback_mass_kg', 1000.0, 'kg, mass used when the input gives none',
          1e-3, 1e9),
    Param('fallback_inertia_kg_m2', 1000.0,
          'kg·m², diagonal inertia used when the input gives none', 1e-3, 1e12),
)

PARAMETER_NAMES = tuple(p.name for p in PARAMETERS)
_BY_NAME = {p.name: p for p in PARAMETERS}


def defaults(scope: str | None = None) -> dict[str, Value]:
    """Return ``{name: default}`` of every parameter (or only those of ``scope``)."""
    return {p.name: p.default for p in PARAMETERS if scope is None or p.scope == scope}


def param(name: str) -> Param:
    """Return the row named ``name`` (KeyError when there is none)."""
    return _BY_NAME[name]


def check_value(name: str, value: object) -> Value:
    """Return ``value`` converted to the row's type; raise ValueError when it does not fit.

    Ints are accepted for float rows; bools never stand for numbers.
    """
    row = _BY_NAME.get(name)
    if row is None:
        raise ValueError(f'unknown parameter {name!r}')
    kind = type(row.default)
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f'{name} must be a bool, got {value!r}')
        return value
    if kind is str:
        if not isinstance(value, str):
            raise ValueError(f'{name} must be a string, got {value!r}')
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f'{name} must be a number, got {value!r}')
    if kind is int and not isinstance(value, int):
        raise ValueError(f'{name} must be an integer, got {value!r}')
    number = kind(value)
    if not math.isfinite(number):
        raise ValueError(f'{name} must be finite, got {value!r}')
    if row.minimum is not None and number < row.minimum:
        raise ValueError(f'{name} must be >= {row.minimum}, got {value!r}')
    if row.maximum is not None and number > row.maximum:
        raise ValueError(f'{name} must be <= {row.maximum}, got {value!r}')
    return number


def resolve(values: Mapping[str, object] | None = None) -> dict[str, Value]:
    """Return every parameter: the defaults overridden by checked ``values``."""
    out = defaults()
    for name, value in (values or {}).items():
        out[name] = check_value(name, value)
    return out
