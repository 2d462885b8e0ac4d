"""The vessel's sensor parts: star trackers, LiDARs, cameras, relative navigation, GNSS.

- Star trackers (seed 003): one state topic and one attitude topic per sensor id; a sample
  not newer (by sequence, within the tracker's session) than the last is dropped; an
  invalid sample publishes no attitude. A tracker silent for ``--topic-timeout-sec`` gets
  a ``stale`` state at 4 Hz; one silent for max(30 s, 3 x the timeout) is removed.
- LiDARs: one topic per sensor id and mode; a scan not newer (KSP time) than the last of
  the same sensor is dropped; ``pylon_lidar_inactive`` removes the topic.
- Cameras (RGB and docking-port): chunks are reassembled (``pylon_protocol.camera``), a
  frame is published with its CameraInfo in its optical frame; ``pylon_camera_inactive``
  removes the topics.
- Relative navigation (``pylon_relative_nav``, our simulator's extension; the mod sends
  none): one ``NearbyVessels`` topic per sensor id, relative values in the body frame; a
  sample not newer (KSP time) than the last of the same sensor is dropped
  (``stale_relative_nav``); the topic goes after ``--topic-timeout-sec`` of silence (there
  is no notice).
- GNSS receivers (``pylon_gnss``, our simulator's extension; the mod sends none): one
  ``NavSatFix`` topic per sensor id, in the packet's ``frameId`` or, when that is empty,
  the sensor frame ``<prefix>_<vid8>_<sensor id>``, mounted at its part's origin; a sample
  not newer (by sequence, within the receiver's session) than the last is dropped
  (``stale_sequence``, as a star tracker's); the topic goes after ``--topic-timeout-sec``.

Every sensor stamp is covered on /tf before the data goes out, and a sensor's mount goes
to /tf_static under its part's link when it is new or moved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pylon_protocol.camera import FrameAssembler
from pylon_protocol.errors import ProtocolError

from pylon_bridge import convert, sensor_messages
from pylon_bridge.actions import Destroy, Publish
from pylon_bridge.context import Shared

STAR_TRACKER_STALE_PERIOD_SEC = 0.25     # the 4 Hz ``stale`` heartbeat of a silent tracker
STAR_TRACKER_MIN_LIFETIME_SEC = 30.0     # removal: max(this, 3 x topic timeout) of silence
STAR_TRACKER_KEYS = ('star_tracker/state', 'star_tracker/attitude')
LIDAR_KEYS = {'2D': 'lidar_2d', '3D': 'lidar_3d'}
_ORIGIN, _IDENTITY = [0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]   # a GNSS antenna: the part origin
CAMERA_KEYS = {'docking_port': ('docking_port/camera', 'docking_port/camera_info'),
               'rgb_camera': ('camera', 'camera_info')}


@dataclass
class StarTrackerTopic:
    """What the bridge remembers of one star tracker (by sensor id)."""

    session_id: str
    sequence: int
    last: Any                 # the last StarTrackerState published from a sample
    seen: float               # monotonic time of the last sample
    heartbeat: float = 0.0    # monotonic time of the last stale heartbeat


class SensorStreams:
    """Star trackers, LiDAR scans and camera frames of the active vessel."""

    def __init__(self, shared: Shared) -> None:
        """Work on the core's shared state."""
        self.s = shared
        self.star_trackers: dict[str, StarTrackerTopic] = {}
        self.camera_frames = FrameAssembler()
        self.new_session()

    def new_session(self) -> None:
        """Forget the sample times and partial frames of the previous session."""
        self.last_ut: dict[tuple[str, str], float] = {}     # (kind, sensor id) -> KSP time
        self.gnss_last: dict[str, tuple[str, int]] = {}      # sensor id -> session, sequence
        self.camera_frames.reset()

    def _stale(self, kind: str, sensor: str, ut: float | None, reason: str) -> bool:
        """Tell (and count as ``reason``) whether a sample is not newer than the sensor's last.

        A sample without a KSP time is never stale; a newer one becomes the sensor's last.
        """
        if ut is None:
            return False
        last = self.last_ut.get((kind, sensor))
        if last is not None and ut <= last:
            self.s.stats.drop(reason, f'{kind} {sensor}: UT {ut} <= {last}')
            return True
        self.last_ut[kind, sensor] = ut
        return False

    # -- star trackers ------------------------------------------------------------------------
    def star_tracker(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Publish a star tracker sample: state, and attitude when valid."""
        sensor = packet['sensorId']
        if not self.s.topics.admit('star_tracker', sensor, 'pylon_star_tracker'):
            return []
        known = self.star_trackers.get(sensor)
        if known is not None and known.session_id == packet['sessionId'] \
                and packet['sequence'] <= known.sequence:
            return self.s.stats.drop(
                'stale_sequence', f'pylon_star_tracker {sensor}: sequence '
                f'{packet["sequence"]} <= {known.sequence}')
        state = convert.star_tracker_state(packet, self.s.stamp(packet, ros_now))
        self.star_trackers[sensor] = StarTrackerTopic(packet['sessionId'], packet['sequence'],
                                                      state, now)
        out = [self._count(Publish('star_tracker/state', state, sensor))]
        if state.valid:
            out.append(self._count(Publish('star_tracker/attitude',
                                           convert.star_tracker_attitude(state), sensor)))
        return out

    def _count(self, action: Publish) -> Publish:
        """Count a star tracker publication (its lifetime is its own, not the topic's)."""
        self.s.stats.published[action.key] += 1
        return action

    def expire_star_trackers(self, now: float, ros_now: float) -> list:
        """Send the 4 Hz ``stale`` heartbeat of silent trackers; remove long-silent ones."""
        timeout = self.s.config.topic_timeout_sec
        lifetime = max(STAR_TRACKER_MIN_LIFETIME_SEC, 3.0 * timeout)
        out: list = []
        for sensor, tracker in list(self.star_trackers.items()):
            silent = now - tracker.seen
            if silent > lifetime:
                del self.star_trackers[sensor]
                out += [Destroy(key, sensor) for key in STAR_TRACKER_KEYS]
            elif silent > timeout and now - tracker.heartbeat >= \
                    STAR_TRACKER_STALE_PERIOD_SEC - 1e-3:
                tracker.heartbeat = now
                out.append(self._count(Publish(
                    'star_tracker/state', convert.star_tracker_stale(tracker.last, ros_now),
                    sensor)))
        return out

    # -- LiDAR -----------------------------------------------------------------------------------
    def lidar(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Publish a 2D scan or a 3D cloud, after its /tf and its mount."""
        s = self.s
        mode, sensor = packet['mode'], packet['sensorId']
        if not s.topics.admit(LIDAR_KEYS[mode], sensor, 'pylon_lidar_scan'):
            return []
        if self._stale(LIDAR_KEYS[mode], sensor, packet.get('universalTime'), 'stale_scan'):
            return []
        stamp = s.stamp(packet, ros_now)
        frame = sensor_messages.sensor_frame(s.vessel_id(), sensor,
                                              prefix=s.config.frame_prefix)
        try:
            msg = sensor_messages.lidar_message(packet, stamp, frame)
        except ValueError as exc:
            return s.stats.drop('bad_layout', f'pylon_lidar_scan {sensor}: {exc}')
        out = s.transforms.cover(stamp, now, s.description.model)
        if 'framePosition' in packet and 'frameRotation' in packet:
            out += s.transforms.mounts(s.description.model, [
                (frame, packet.get('partFlightId', 0), packet['framePosition'],
                 packet['frameRotation'])], ros_now)
        out.append(s.topics.publish(LIDAR_KEYS[mode], msg, now, topic_id=sensor))
        return out

    def lidar_inactive(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Remove the topic of a LiDAR the mod says is gone."""
        return self.s.topics.remove((LIDAR_KEYS[packet['mode']],), packet['sensorId'])

    # -- relative navigation ---------------------------------------------------------------------
    def relative_nav(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Publish a relative-navigation sample (after the /tf covering its stamp)."""
        s = self.s
        sensor = packet['sensorId']
        if not s.topics.admit('relative_nav', sensor, 'pylon_relative_nav'):
            return []
        if self._stale('relative_nav', sensor, packet['universalTime'], 'stale_relative_nav'):
            return []
        stamp = s.stamp(packet, ros_now)
        out = s.transforms.cover(stamp, now, s.description.model)
        out.append(s.topics.publish('relative_nav', convert.relative_nav(
            packet, stamp, s.config.body_frame), now, topic_id=sensor))
        return out

    # -- GNSS -----------------------------------------------------------------------------------
    def gnss(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Publish a GNSS fix as ``NavSatFix`` (after the /tf covering its stamp and its mount)."""
        s = self.s
        sensor = packet['sensorId']
        if not s.topics.admit('gnss', sensor, 'pylon_gnss'):
            return []
        known = self.gnss_last.get(sensor)
        if known is not None and known[0] == packet['sessionId'] \
                and packet['sequence'] <= known[1]:
            return s.stats.drop('stale_sequence', f'pylon_gnss {sensor}: sequence '
                                f'{packet["sequence"]} <= {known[1]}')
        self.gnss_last[sensor] = (packet['sessionId'], packet['sequence'])
        stamp = s.stamp(packet, ros_now)
        frame = packet.get('frameId') or sensor_messages.sensor_frame(
            s.vessel_id(), sensor, prefix=s.config.frame_prefix)
        out = s.transforms.cover(stamp, now, s.description.model)
        out += s.transforms.mounts(s.description.model, [
            (frame, packet['partFlightId'], _ORIGIN, _IDENTITY)], ros_now)
        out.append(s.topics.publish('gnss', convert.gnss_fix(packet, stamp, frame), now,
                                    topic_id=sensor))
        return out

    # -- cameras ---------------------------------------------------------------------------------
    def camera_chunk(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Add a camera chunk; publish the frame and its CameraInfo once it is complete."""
        s = self.s
        try:
            frame = self.camera_frames.add_decoded(packet, now)
        except ProtocolError as exc:
            return s.stats.drop(f'camera_{exc.reason}', f'pylon_camera_frame_chunk: {exc}')
        if frame is None:
            return []
        image_key, info_key = CAMERA_KEYS[frame.source]
        if not s.topics.admit(image_key, frame.sensor_id, 'pylon_camera_frame_chunk'):
            return []
        stamp = s.stamp({'universalTime': frame.universal_time}, ros_now)
        base = sensor_messages.sensor_frame(s.vessel_id(), frame.sensor_id, frame.source,
                                           s.config.frame_prefix)
        optical = base + sensor_messages.OPTICAL_SUFFIX
        out = s.transforms.cover(stamp, now, s.description.model)
        out += s.transforms.mounts(s.description.model, [
            (base, frame.part_flight_id, frame.frame_position, frame.frame_rotation),
            (optical, frame.part_flight_id, frame.frame_position, frame.optical_rotation)],
            ros_now)
        out.append(s.topics.publish(info_key, sensor_messages.camera_info(frame, stamp, optical),
                                    now, topic_id=frame.sensor_id))
        out.append(s.topics.publish(image_key, sensor_messages.image(frame, stamp, optical),
                                    now, topic_id=frame.sensor_id))
        return out

    def camera_inactive(self, packet: dict, source: Any, now: float, ros_now: float) -> list:
        """Remove the topics of a camera the mod says is gone."""
        source = 'docking_port' if packet.get('source') == 'docking_port' else 'rgb_camera'
        return self.s.topics.remove(CAMERA_KEYS[source], packet['sensorId'])

    def expire(self, now: float) -> None:
        """Drop partial camera frames that will never complete."""
        self.camera_frames.expire(now)
