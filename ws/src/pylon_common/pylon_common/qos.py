"""The workspace's named QoS profiles, each with the reason it is what it is.

Every topic of the contract (``pylon_common.topics``) names one of these profiles. Where
the topic specification gives a QoS, the profile is that one; where it gives none, the
profile is ``DEFAULT_STREAM``: a Reliable publisher, because a Reliable publisher matches
both Reliable subscriptions (RViz's default, ``ros2 topic echo``) and Best Effort ones
(``qos_profile_sensor_data``), while a Best Effort publisher would never match RViz's
default Reliable subscription.

The profiles are plain data here (``--help`` and the documentation need no ROS);
``qos_profile`` turns one into an ``rclpy.qos.QoSProfile``. A node subscribing to a topic
uses the topic's own profile with at least ``READER_DEPTH`` of history, so that no change
of a latched state is lost between two spins of a busy reader.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

RELIABLE = 'reliable'
BEST_EFFORT = 'best_effort'
VOLATILE = 'volatile'
TRANSIENT_LOCAL = 'transient_local'
RELIABILITIES = (RELIABLE, BEST_EFFORT)
DURABILITIES = (VOLATILE, TRANSIENT_LOCAL)
READER_DEPTH = 10
MAX_DEPTH = 10000


@dataclass(frozen=True)
class Profile:
    """A keep-last QoS profile: reliability, durability, depth, and why."""

    reliability: str
    durability: str
    depth: int
    why: str = ''

    @property
    def title(self) -> str:
        """Return the profile in words, e.g. ``Best Effort / Volatile / depth 10``."""
        words = {RELIABLE: 'Reliable', BEST_EFFORT: 'Best Effort', VOLATILE: 'Volatile',
                 TRANSIENT_LOCAL: 'Transient Local'}
        return f'{words[self.reliability]} / {words[self.durability]} / depth {self.depth}'


LATCHED = Profile(RELIABLE, TRANSIENT_LOCAL, 1, 'latched state (status, lifecycle, authority '
                  'state, robot_description, root_frame): only the current value matters, '
                  'and a subscriber started later (RViz, robot_state_publisher, a '
                  'controller) must get it at once')
IMU = Profile(BEST_EFFORT, VOLATILE, 10, 'the IMU stream, as specified: the newest sample '
              'beats a resent one')
GROUND_TRUTH = Profile(BEST_EFFORT, VOLATILE, 10, 'ground truth pose, twist, twist_body and '
                       'acceleration, as specified: newest sample wins')
STAR_TRACKER = Profile(RELIABLE, VOLATILE, 10, 'star tracker state and attitude, as '
                       'specified: a 5 Hz stream whose invalid and stale states must reach '
                       'the estimator')
COMMAND = Profile(RELIABLE, VOLATILE, 10, 'commands, as specified: none may be lost, and none '
                  'is replayed to a late joiner, so an old command never acts')
ACTUATOR_STATE = Profile(BEST_EFFORT, VOLATILE, 10, 'typed actuator state (servo, wheel, '
                         'propulsion, RCS), as specified: newest sample wins')
SEPARATION_STATE = Profile(RELIABLE, TRANSIENT_LOCAL, 10, 'decoupler and fairing state, as '
                           'specified: separations cannot be undone, so a late subscriber '
                           'still gets the recent results')
CONTROL_SNAPSHOT = Profile(RELIABLE, VOLATILE, 10, 'control snapshots, as the public PyLoN '
                           'bridge publishes them: every frame of a tuning run arrives')
HEALTH = Profile(BEST_EFFORT, VOLATILE, 100, 'power and part temperatures, as the public '
                 'PyLoN bridge publishes them: one message per part, a deep history so that '
                 "a reader's burst of parts is not cut")
SEPARATION_RESULT = Profile(RELIABLE, TRANSIENT_LOCAL, 128, 'separation results, as the '
                            'public PyLoN bridge publishes them: a late subscriber still gets '
                            'the receipts of the last 128 operations')
CLOCK = Profile(RELIABLE, VOLATILE, 1, '/clock: only the newest time matters; a Reliable '
                "publisher also reaches rclpy's Best Effort /clock subscription")
TF = Profile(RELIABLE, VOLATILE, 100, '/tf: what tf2_ros.TransformBroadcaster uses, so every '
             'tf2 listener matches')
TF_STATIC = Profile(RELIABLE, TRANSIENT_LOCAL, 1, '/tf_static: what '
                    'tf2_ros.StaticTransformBroadcaster uses; depth 1: every static transform '
                    'goes in one message, the only one a late joiner receives')
LATEST_COMMAND = Profile(BEST_EFFORT, VOLATILE, 1, 'a stream of commands where only the newest '
                        "counts (the kart's control_cmd): a Best Effort reader matches the "
                        'Reliable writers of Autoware stacks and Best Effort ones alike')
SENSOR_READER = Profile(BEST_EFFORT, VOLATILE, 10, 'a subscription to a stream whose publisher '
                        "may not be ours (the competition's /sensing topics, a kinematic state "
                        'or trajectory from another stack): Best Effort matches Reliable and '
                        'Best Effort publishers alike')
DEFAULT_STREAM = Profile(RELIABLE, VOLATILE, 10, 'streams the specification gives no QoS for: '
                         'a Reliable publisher reaches Reliable (RViz) and Best Effort '
                         '(sensor-data) subscribers alike; Volatile: a stream has no state '
                         'worth replaying')

PROFILES: dict[str, Profile] = {
    'LATCHED': LATCHED, 'IMU': IMU, 'GROUND_TRUTH': GROUND_TRUTH,
    'STAR_TRACKER': STAR_TRACKER, 'COMMAND': COMMAND, 'ACTUATOR_STATE': ACTUATOR_STATE,
    'SEPARATION_STATE': SEPARATION_STATE, 'TF': TF, 'TF_STATIC': TF_STATIC,
    'DEFAULT_STREAM': DEFAULT_STREAM, 'CONTROL_SNAPSHOT': CONTROL_SNAPSHOT, 'HEALTH': HEALTH,
    'SEPARATION_RESULT': SEPARATION_RESULT, 'CLOCK': CLOCK, 'LATEST_COMMAND': LATEST_COMMAND,
    'SENSOR_READER': SENSOR_READER,
}


def for_reader(profile: Profile) -> Profile:
    """Return ``profile`` with at least ``READER_DEPTH`` of history (for a subscription)."""
    return replace(profile, depth=max(profile.depth, READER_DEPTH))


def qos_profile(profile: Profile | str, depth: int | None = None) -> Any:
    """Return the ``rclpy.qos.QoSProfile`` of a profile (or profile name), keep-last.

    ``depth`` replaces the profile's depth when given.
    """
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    if isinstance(profile, str):
        profile = PROFILES[profile]
    reliability = {RELIABLE: ReliabilityPolicy.RELIABLE,
                   BEST_EFFORT: ReliabilityPolicy.BEST_EFFORT}[profile.reliability]
    durability = {VOLATILE: DurabilityPolicy.VOLATILE,
                  TRANSIENT_LOCAL: DurabilityPolicy.TRANSIENT_LOCAL}[profile.durability]
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth or profile.depth,
                      reliability=reliability, durability=durability)
