"""The vessel's own measurements: IMU, ground truth and nearby vessels, to ROS.

- IMU (REP-145 ``imu/data_raw``): a sample whose KSP time is not newer than the last one
  of the session is dropped (``stale_imu``); the /tf that covers its stamp goes out first.
  Without ground truth here (disabled, or in another domain), the first IMU sample of a
  generation makes it ACTIVE. Its ``header.frame_id`` is ``imu_frame_id`` (else base_link).
- AHRS (``pylon_ahrs``, our simulator's extension; the mod sends none): no topic of its
  own; the newest sample of the runtime session (by KSP time; an older one is dropped,
  ``stale_ahrs``) fills the IMU's ``orientation`` and ``orientation_covariance`` while it
  is fresh: within ``AHRS_MAX_AGE_SEC`` of KSP time of the IMU sample. Otherwise the IMU
  says it has no orientation (``orientation_covariance[0] = -1``), as without an AHRS.
- Ground truth: pose, twist (ENU and body), acceleration and the ENU frame's rate, the
  world /tf at the pose's own stamp; a new mod origin bumps the origin sequence; the first
  sample of a generation makes it ACTIVE.
- Nearby vessels: only after their own ground-truth sample (same vessel and origin).

The pause and ground-truth gates are the core's; these see admitted datagrams.
"""

from __future__ import annotations

from typing import Any

from sensor_msgs.msg import Imu

from pylon_bridge import convert, vessel_session
from pylon_bridge.context import Shared

AHRS_MAX_AGE_SEC = 0.1
"""KSP s an AHRS sample stays fresh for the IMU (either side of the IMU sample's UT): five
samples at the default 50 Hz, one at the slowest 10 Hz (``SEND_RATE_RANGES_HZ``)."""


class Measurements:
    """IMU, ground truth and nearby vessels of the active vessel."""

    def __init__(self, shared: Shared) -> None:
        """Work on the core's shared state."""
        self.s = shared
        self._imu_msg = None
        self.new_session()

    def new_session(self) -> None:
        """Forget the last IMU time and AHRS sample of the previous session."""
        self.last_imu_ut: float | None = None
        self.ahrs_ut: float | None = None
        self.ahrs_orientation: convert.Orientation | None = None

    def ahrs(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Keep an AHRS sample for the IMU messages (nothing is published)."""
        ut = packet['universalTime']
        if self.ahrs_ut is not None and ut <= self.ahrs_ut:
            return self.s.stats.drop('stale_ahrs', f'pylon_ahrs UT {ut} <= {self.ahrs_ut}')
        self.s.stamp(packet, ros_now)           # a UT no stamp holds is refused here too
        self.ahrs_ut = ut
        self.ahrs_orientation = (packet['orientation'], packet['orientationCovariance'])
        return []

    def orientation(self, ut: float) -> convert.Orientation | None:
        """Return the AHRS sample fresh at KSP time ``ut`` (``AHRS_MAX_AGE_SEC``), or None."""
        if self.ahrs_ut is None or abs(ut - self.ahrs_ut) > AHRS_MAX_AGE_SEC:
            return None
        return self.ahrs_orientation

    def imu(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Publish an IMU sample (after the /tf covering it)."""
        s = self.s
        ut = packet['universalTime']
        if self.last_imu_ut is not None and ut <= self.last_imu_ut:
            return s.stats.drop('stale_imu', f'pylon_imu UT {ut} <= {self.last_imu_ut}')
        stamp = s.stamp(packet, ros_now)        # first: a UT no stamp holds is not noted
        self.last_imu_ut = ut
        out = s.transforms.cover(stamp, now, s.description.model)
        config = s.config
        orientation = self.orientation(ut)
        data = convert.imu_serialized(packet, stamp, config.imu_frame_id, orientation) \
            if config.serialize_imu else None
        if data is not None:                    # the bytes alone: no message is built
            out.append(s.topics.publish('imu', None, now, '', data, Imu))
        else:
            msg = convert.imu(packet, stamp, config.imu_frame_id, into=self._imu_msg,
                              orientation=orientation)
            if config.reuse_messages:
                self._imu_msg = msg
            out.append(s.topics.publish('imu', msg, now))
        if not s.config.ground_truth_here:
            out += vessel_session.changed(s.vessel.measured(), ros_now, status=True)
        return out

    def ground_truth(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Publish a ground-truth sample and its /tf."""
        s = self.s
        stamp = s.stamp(packet, ros_now)
        out = vessel_session.changed(s.vessel.mod_origin(packet['originSequence']), ros_now)
        gt = convert.ground_truth(packet, stamp, s.config.world_frame, s.config.body_frame)
        out += [s.topics.publish('ground_truth/pose', gt.pose, now),
                s.topics.publish('ground_truth/twist', gt.twist, now),
                s.topics.publish('ground_truth/twist_body', gt.twist_body, now),
                s.topics.publish('ground_truth/acceleration', gt.accel, now),
                s.topics.publish('ground_truth/kinematic_state', gt.kinematic_state, now)]
        if gt.frame_angular_velocity is not None:
            out.append(s.topics.publish('ground_truth/frame_angular_velocity',
                                        gt.frame_angular_velocity, now))
        out += s.transforms.ground_truth(packet, stamp, now, s.description.model)
        return out + vessel_session.changed(s.vessel.measured(), ros_now, status=True)

    def nearby(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Publish the nearby vessels of the last ground-truth sample."""
        s = self.s
        gt = s.transforms.last_gt
        if (gt is None or gt['vesselId'] != packet['vesselId']
                or gt['originSequence'] != packet['originSequence']):
            return s.stats.drop('nearby_without_ground_truth',
                                'pylon_nearby_vessels does not follow its ground truth')
        msg = convert.nearby(packet, s.stamp(packet, ros_now), s.config.world_frame)
        msg.origin_sequence = s.vessel.current.origin_sequence
        return [s.topics.publish('ground_truth/nearby_vessels', msg, now)]
