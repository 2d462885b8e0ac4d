"""The parameters of ``setpoint_controller``: its node's table and its control law's.

``NODE_PARAMETERS`` are what the node uses (identity, lease, timing, timeouts, the topic
prefix, the setpoint topic); ``LAW_PARAMETERS`` are the gains and limits of
``control_law.ControlParams`` (same names, units in the names). ``PARAMETERS`` is both: the
node declares every row as a read-only ROS parameter (``pylon_common.parameters.declare``), and
``config/setpoint_controller.yaml`` lists every row with its default (a test keeps the two
in step). ``RETIRED`` names the parameters that no longer exist and what replaced them.

All gains and limits stay below the KSP side's ``ControlSafety.cfg`` (250 kN, 100 kN·m,
0.35 rad/s, 50 kN/s, 10 kN·m/s): that filter is the last boundary, not the working limit.
"""

from __future__ import annotations

from pylon_common import topics
from pylon_common.parameters import Parameter, Retired
from pylon_protocol.packets import MAX_COMMAND_TIMEOUT_SEC, MAX_LEASE_SEC, MIN_COMMAND_TIMEOUT_SEC

INT32 = (-2**31, 2**31 - 1)

NODE_PARAMETERS: tuple[Parameter, ...] = (
    Parameter('controller_id', 'setpoint_controller',
              'controller_id of the lease and of every formal command (stable name)'),
    Parameter('priority', 0, 'lease priority; a higher one preempts a lower owner', *INT32),
    Parameter('lease_duration_sec', 1.0,
              's, lease lifetime of each acquire/renew (renewed every lease_duration_sec / 4)',
              0.1, MAX_LEASE_SEC),
    Parameter('suppress_sas', True, 'hold SAS off for the whole ownership of the lease'),
    Parameter('command_period_sec', 0.05, 's, period of the control step and wrench commands',
              0.01, 1.0),
    Parameter('wrench_timeout_sec', 0.5,
              's, BodyWrenchCommand.timeout_sec (KSP zeroes the wrench after it)',
              MIN_COMMAND_TIMEOUT_SEC, MAX_COMMAND_TIMEOUT_SEC),
    Parameter('setpoint_timeout_sec', 1.0,
              's, an active setpoint older than this disarms the controller (0: never)',
              0.0, 3600.0),
    Parameter('input_timeout_sec', 0.5,
              's, a state estimate older than this disarms the controller', 0.01, 10.0),
    Parameter('state_max_age_sec', 0.25,
              's, a step whose state (the estimate; the IMU rate in DETUMBLE) is older than '
              'this commands zeros and stays armed (game time: its stamp against the clock; '
              'steady clock: since it arrived)', 0.01, 10.0),
    Parameter('diagnostics_period_sec', 1.0, 's, period of the diagnostics messages',
              0.05, 60.0),
    topics.TOPIC_PREFIX,
    Parameter('setpoint_topic', topics.name('setpoint'),
              'the ControlSetpoint topic it flies (~/setpoint: /setpoint_controller/setpoint)',
              topic=True),
)
"""What the node uses: identity, lease, timing, timeouts, where the vessel's topics are."""

LAW_PARAMETERS: tuple[Parameter, ...] = (
    # -- attitude --------------------------------------------------------------------------
    Parameter('attitude_hold_rate_limit_deg_s', 1.5,
              'deg/s, largest body rate the attitude loop commands (ATTITUDE_HOLD, SIX_DOF)',
              0.01, 20.0),
    Parameter('attitude_gain', 0.8,
              '1/s, outer loop: target rate = attitude_gain * attitude error near the target',
              0.01, 10.0),
    Parameter('attitude_accel_fraction', 0.5,
              'share of the available angular acceleration the braking (sqrt) law plans with',
              0.05, 1.0),
    Parameter('rate_gain', 4.0, '1/s, inner rate loop: angular acceleration per rate error',
              0.01, 50.0),
    Parameter('max_gain_dt', 0.5,
              'upper bound of gain * dt of the rate and velocity loops (discrete stability)',
              0.05, 1.0),
    Parameter('detumble_gain', 1.0, '1/s, DETUMBLE torque = -detumble_gain * I * omega',
              0.01, 50.0),
    Parameter('detumble_rate_deadband_rad_s', 2.0e-4,
              'rad/s, DETUMBLE outputs exact zeros below this body rate', 0.0, 0.1),
    Parameter('max_angular_speed_rad_s', 0.3,
              'rad/s, above this torque that speeds the rotation up is removed (KSP: 0.35)',
              0.001, 0.35),
    Parameter('attitude_deadband_deg', 0.03,
              'deg, hold deadband: exact zero wrench below this attitude error (and rate)',
              0.0, 10.0),
    Parameter('rate_deadband_deg_s', 0.002,
              'deg/s, hold deadband: exact zero wrench below this body-rate error (and angle)',
              0.0, 10.0),
    Parameter('deadband_exit_factor', 2.0,
              'hysteresis: the deadband is left when an error exceeds factor * its threshold',
              1.0, 10.0),
    Parameter('rate_error_deadband_deg_s', 0.01,
              'deg/s, while coasting (target rate >= half the limit) the rate loop commands '
              'zero torque as long as the rate error is below this', 0.0, 1.0),
    # -- translation (SIX_DOF) -------------------------------------------------------------
    Parameter('position_gain', 0.2, '1/s, target velocity = position_gain * position error',
              0.001, 10.0),
    Parameter('velocity_gain', 1.0, '1/s, acceleration per velocity error', 0.001, 50.0),
    Parameter('velocity_limit_m_s', 0.5,
              'm/s, largest velocity the position loop commands (relative to the target)',
              0.001, 100.0),
    Parameter('translation_accel_fraction', 0.5,
              'share of the available linear acceleration the braking (sqrt) law plans with',
              0.05, 1.0),
    Parameter('position_deadband_m', 0.02,
              'm, SIX_DOF outputs zero force below this position error (and velocity)',
              0.0, 100.0),
    Parameter('velocity_deadband_m_s', 0.005,
              'm/s, SIX_DOF outputs zero force below this velocity error (and position)',
              0.0, 10.0),
    # -- wrench limits (below ControlSafety.cfg) ---------------------------------------------
    Parameter('max_force_n', 200000.0, 'N, force magnitude limit (KSP: 250000)', 0.0, 250000.0),
    Parameter('max_torque_nm', 80000.0, 'N·m, torque magnitude limit (KSP: 100000)',
              0.0, 100000.0),
    Parameter('max_force_slew_n_s', 40000.0, 'N/s, force change limit (KSP: 50000)',
              1.0, 50000.0),
    Parameter('max_torque_slew_nm_s', 8000.0, 'N·m/s, torque change limit (KSP: 10000)',
              1.0, 10000.0),
    Parameter('slew_margin', 0.8,
              'share of the slew limit the braking plan assumes when ramping a wrench down',
              0.1, 1.0),
    Parameter('max_continuous_actuation_sec', 25.0,
              's, after this much consecutive non-zero output send exact zeros for '
              'forced_idle_sec (KSP cuts after 30 s)', 1.0, 29.0),
    Parameter('forced_idle_sec', 0.6,
              's, exact zeros sent to reset the KSP continuous count (KSP needs 0.5 s)',
              0.5, 5.0),
    # -- saturation --------------------------------------------------------------------------
    Parameter('saturation_scale_floor', 0.2,
              'when WrenchFeedback reports saturation the wrench cap falls to the allocated '
              'magnitude, but never below floor * the requested magnitude', 0.0, 1.0),
    Parameter('saturation_recovery_per_sec', 0.2,
              '1/s, the reduced cap grows back by this relative rate per second', 0.0, 10.0),
    # -- vehicle model fall-backs --------------------------------------------------------------
    Parameter('fallback_mass_kg', 1000.0, 'kg, mass used when the input gives none',
              1e-3, 1e9),
    Parameter('fallback_inertia_kg_m2', 1000.0,
              'kg·m², diagonal inertia used when the input gives none', 1e-3, 1e12),
)
"""The control law's gains and limits (``control_law.ControlParams``)."""

PARAMETERS: tuple[Parameter, ...] = NODE_PARAMETERS + LAW_PARAMETERS
PARAMETER_NAMES = tuple(row.name for row in PARAMETERS)

_TOPICS = 'its topics come from the topic contract under topic_prefix; remap with --ros-args -r'
RETIRED = (
    Retired('state_topic', "the state input is the estimator's pylon_estimator/odometry; "
                           'remap it with --ros-args -r /pylon_estimator/odometry:=<yours>'),
    Retired('imu_topic', f'{_TOPICS} (<topic_prefix>/imu/data_raw)'),
)
