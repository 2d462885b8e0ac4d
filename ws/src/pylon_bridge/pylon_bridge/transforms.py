"""What the bridge keeps to publish /tf and /tf_static.

- ``/tf`` carries ``pylon_ground_truth_enu -> base_link`` from ground truth and
  ``base_link -> proxy root`` from the model, one stamp at a time and never a stamp twice
  (compared in whole nanoseconds, as the message holds it). A sensor sample newer than the
  last pose gets the pose carried forward to its stamp (at most 0.1 s), so a listener
  never has to extrapolate; without ground truth only ``base_link -> proxy root`` is sent.
- ``/tf_static`` is one message with everything static: the ``pylon_root`` alias under
  the proxy root link, the proxy's fixed joints (unless robot_state_publisher publishes
  them), the IMU's frame under base_link when it has one of its own (``imu_frame_id``,
  identity) and every sensor mount under its part's link.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pylon_common import stamps
from pylon_protocol import frames
from pylon_protocol.errors import ProtocolError
from tf2_msgs.msg import TFMessage

from pylon_bridge import convert, sensor_messages
from pylon_bridge.actions import Publish, TopicLifetimes

MOVING_JOINTS = ('revolute', 'prismatic')


class Transforms:
    """The last ground-truth pose, the newest /tf stamp, and the sensor mounts."""

    def __init__(self, config: Any, topics: TopicLifetimes) -> None:
        """Use ``config``'s frames and TF options; publish /tf through ``topics``."""
        self.config = config
        self.topics = topics
        self.sensor_mounts: dict[str, tuple] = {}   # frame -> (part flight id, xyz, xyzw)
        self.new_session()

    def new_session(self) -> None:
        """Forget the pose, the /tf stamps and the mounts of the previous session."""
        self.last_gt: Mapping | None = None
        self.last_gt_stamp: float | None = None
        self.last_tf_ns: int | None = None
        self.sensor_mounts.clear()

    def _claim(self, stamp: float) -> bool:
        """Return whether ``stamp`` is newer than every stamp on /tf so far (and take it)."""
        stamp_ns = stamps.to_nanoseconds(stamp)
        if self.last_tf_ns is not None and stamp_ns <= self.last_tf_ns:
            return False
        self.last_tf_ns = stamp_ns
        return True

    def _message(self, world_tf: Any, stamp: float, model: Any) -> TFMessage:
        transforms = [world_tf] if world_tf is not None else []
        if model is not None:
            transforms.append(convert.base_to_root_transform(model, stamp,
                                                             self.config.body_frame))
        return TFMessage(transforms=transforms)

    def ground_truth(self, packet: Mapping, stamp: float, now: float, model: Any) -> list:
        """Remember a ground-truth pose; return its /tf unless that stamp was sent."""
        self.last_gt, self.last_gt_stamp = packet, stamp
        if not self._claim(stamp):
            return []
        tf = convert.world_transform(packet, stamp, world_frame=self.config.world_frame,
                                     body_frame=self.config.body_frame)
        return [self.topics.publish('tf', self._message(tf, stamp, model), now)]

    def cover(self, stamp: float, now: float, model: Any) -> list:
        """Return the /tf that covers a sensor stamp newer than the last one sent."""
        if not self.config.ground_truth_here:
            if model is None or not self._claim(stamp):
                return []
            return [self.topics.publish('tf', self._message(None, stamp, model), now)]
        if self.last_gt is None:
            return []
        tf = convert.world_transform(self.last_gt, self.last_gt_stamp, stamp,
                                     world_frame=self.config.world_frame,
                                     body_frame=self.config.body_frame)
        covered = stamps.to_seconds(tf.header.stamp)
        if not self._claim(covered):
            return []                # capped at a stamp already sent: nothing new
        return [self.topics.publish('tf', self._message(tf, covered, model), now)]

    def servo_joints(self, model: Any, motors: Mapping[str, Mapping], stamp: float,
                     now: float) -> list:
        """Return /tf of the model's servo joints (the extension), unless rsp animates them."""
        if model is None or not self.config.publish_proxy_static_tf:
            return []
        moving = [j for j in model.structure.joints
                  if j.type in MOVING_JOINTS and j.name in motors]
        if not moving:
            return []
        return [self.topics.publish('tf', TFMessage(transforms=[
            convert.servo_joint_transform(j, motors[j.name]['position'], stamp)
            for j in moving]), now)]

    def forget_mounts(self) -> None:
        """Forget the sensor mounts (the model they hang on was withdrawn)."""
        self.sensor_mounts.clear()

    def static(self, model: Any, stamp: float) -> list:
        """Return /tf_static with everything static the bridge knows, in one message."""
        if model is None:
            return []
        transforms = [convert.transform(stamp, model.root_frame, frames.ROOT_ALIAS,
                                        (0.0, 0.0, 0.0), frames.IDENTITY_QUATERNION)]
        if self.config.publish_proxy_static_tf:
            transforms += convert.proxy_static_transforms(model, stamp)
        imu = self.config.imu_frame_id
        if imu != self.config.body_frame:        # the IMU at the centre of mass, base_link axes
            transforms.append(convert.transform(stamp, self.config.body_frame, imu,
                                                (0.0, 0.0, 0.0), frames.IDENTITY_QUATERNION))
        for frame, (part, position, rotation) in sorted(self.sensor_mounts.items()):
            link = model.frame_for_part(part)
            if link is not None:
                transforms.append(convert.transform(stamp, link, frame, position, rotation))
        return [Publish('tf_static', TFMessage(transforms=transforms))]

    def mounts(self, model: Any, entries: Iterable[tuple], stamp: float) -> list:
        """Remember sensor mounts ``(frame, part, xyz, xyzw)``; /tf_static if one is new."""
        changed = False
        for frame, part, position, rotation in entries:
            try:
                position, rotation = sensor_messages.mount(position, rotation)
            except ProtocolError:
                continue
            entry = (part, position, rotation)
            if self.sensor_mounts.get(frame) != entry:
                self.sensor_mounts[frame] = entry
                changed = True
        return self.static(model, stamp) if changed else []
