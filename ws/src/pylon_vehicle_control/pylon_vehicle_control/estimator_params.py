"""The parameters of ``attitude_estimator``: its node's table and its filter's.

``NODE_PARAMETERS`` are what the node uses (where the vessel's topics are, which star
tracker, the output frames, whether to broadcast /tf); ``FILTER_PARAMETERS`` configure the
MEKF (``estimator.AttitudeEstimator``). ``PARAMETERS`` is both: the node declares every row
as a read-only ROS parameter, and ``config/attitude_estimator.yaml`` lists every row with
its default (a test keeps the two in step). ``RETIRED`` names what no longer exists.
"""

from __future__ import annotations

from pylon_common import topics
from pylon_common.parameters import Parameter, Retired

NODE_PARAMETERS: tuple[Parameter, ...] = (
    topics.TOPIC_PREFIX,
    Parameter('star_tracker_id', 'star_tracker_main',
              'the star tracker whose StarTrackerState the filter reads '
              '(<topic_prefix>/star_tracker/<id>/state)'),
    Parameter('odom_frame_id', 'pylon_estimate_inertial',
              'Odometry header.frame_id: kerbol_inertial axes, origin at the DR reference'),
    Parameter('base_frame_id', 'pylon_estimate_base_link',
              'Odometry child_frame_id (base_link axes)'),
    Parameter('publish_tf', True, 'Broadcast odom_frame_id -> base_frame_id on /tf'),
)
"""What the node uses: its inputs, its output frames, /tf."""

FILTER_PARAMETERS: tuple[Parameter, ...] = (
    Parameter('tracker_max_age_sec', 0.5,
              'Ignore tracker samples older than this relative to the filter time (s)',
              0.0, 10.0),
    Parameter('max_extrapolation_sec', 0.5,
              'A tracker sample newer than the filter time by more than this re-initialises '
              'the attitude instead of extrapolating on the held gyro rate (s)', 0.0, 10.0),
    Parameter('tracker_sigma_arcsec', 20.0,
              'Tracker 1-sigma per axis, used when the message covariance is not usable '
              'or use_tracker_covariance is false (arcsec)', 0.01, 36000.0),
    Parameter('use_tracker_covariance', True,
              'Use StarTrackerState.orientation_covariance as the measurement covariance'),
    Parameter('gyro_noise_density', 2.0e-5,
              'Gyro angle random walk, rad/s/sqrt(Hz); models rate sampling only, the KSP '
              'IMU adds no noise', 0.0, 1.0),
    Parameter('estimate_gyro_bias', False,
              'Estimate a gyro bias (the KSP IMU has none, so off by default)'),
    Parameter('gyro_bias_random_walk', 1.0e-7,
              'Gyro bias random walk, rad/s^2/sqrt(Hz)', 0.0, 1.0),
    Parameter('gyro_bias_initial_sigma', 1.0e-4,
              'Initial gyro bias 1-sigma when estimate_gyro_bias (rad/s)', 0.0, 1.0),
    Parameter('innovation_gate_chi2', 100.0,
              'Reject a tracker sample whose squared Mahalanobis residual exceeds this',
              1.0, 1.0e12),
    Parameter('max_consecutive_rejections', 3,
              'Re-initialise from the tracker after this many gated samples in a row',
              1, 1000),
    Parameter('history_sec', 2.0,
              'Length of the gyro rotation history used to carry older tracker samples '
              'forward (s); must be >= tracker_max_age_sec', 0.0, 60.0),
)
"""The MEKF's noise, gating and history settings."""

PARAMETERS: tuple[Parameter, ...] = NODE_PARAMETERS + FILTER_PARAMETERS

_TOPICS = 'its topics come from the topic contract under topic_prefix; remap with --ros-args -r'
RETIRED = (
    Retired('imu_topic', f'{_TOPICS} (<topic_prefix>/imu/data_raw)'),
    Retired('star_tracker_topic', 'use star_tracker_id (the topic is '
                                  '<topic_prefix>/star_tracker/<star_tracker_id>/state)'),
    Retired('lifecycle_topic', f'{_TOPICS} (<topic_prefix>/lifecycle)'),
    Retired('odometry_topic', 'the output is pylon_estimator/odometry (relative to the node '
                              'namespace); remap with --ros-args -r'),
)
