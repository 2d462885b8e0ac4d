"""What the bridge core's collaborators share: the options, counters, session, vessel, TF.

``BridgeCore`` builds one ``Shared`` and hands it to every collaborator (measurements,
sensor streams, actuation, the proxy description), so that each can stamp a datagram,
publish through the topic lifetimes, count a drop, or cover a sensor stamp on /tf
without knowing how the others are wired.
"""

from __future__ import annotations

from dataclasses import dataclass

from pylon_protocol import frames, wire

from pylon_bridge.actions import Stats, TopicLifetimes
from pylon_bridge.description import ProxyDescription
from pylon_bridge.session_time import MappedTime, SessionTime
from pylon_bridge.transforms import Transforms
from pylon_bridge.vessel_session import VesselSession


@dataclass
class CoreConfig:
    """The options the core needs (a subset of the bridge's configuration)."""

    topic_timeout_sec: float = 3.0
    disable_ground_truth: bool = False
    route_ground_truth: bool = False   # hand ground truth to the truth core (not published here)
    allow_remote_models: bool = False
    allow_servo_joints: bool = False
    publish_proxy_static_tf: bool = True
    max_datagram_bytes: int = wire.MAX_DATAGRAM_BYTES
    world_frame: str = frames.GROUND_TRUTH_ENU
    body_frame: str = frames.BASE_LINK
    reuse_messages: bool = False   # refill one IMU message (the node publishes at once)
    serialize_imu: bool = False    # hand the node the IMU's CDR bytes, no message (Publish)
    publish_clock: bool = False    # publish /clock from the UT-mapped time
    frame_prefix: str = 'pylon'    # first word of sensor frame names
    imu_frame: str = ''            # the IMU's frame ('': body_frame), static under body_frame

    @property
    def imu_frame_id(self) -> str:
        """Return the IMU messages' ``header.frame_id``: ``imu_frame``, else ``body_frame``."""
        return self.imu_frame or self.body_frame

    @property
    def ground_truth_here(self) -> bool:
        """Return whether this core publishes ground truth and the world TF itself.

        Not with ``disable_ground_truth`` (nothing anywhere), nor with
        ``route_ground_truth`` (``--ground-truth-domain``: another ROS domain has it).
        """
        return not (self.disable_ground_truth or self.route_ground_truth)


class Shared:
    """The bridge's state every collaborator reads or writes, wired once."""

    def __init__(self, config: CoreConfig, mapped: MappedTime | None = None) -> None:
        """Start with no session: the vessel session is UNAVAILABLE, no model, no TF.

        ``mapped``: stamp on another core's UT -> ROS mapping (``SessionTime``).
        """
        self.config = config
        self.stats = Stats()
        self.topics = TopicLifetimes(self.stats)
        self.time = SessionTime(mapped)
        self.vessel = VesselSession(config.world_frame if config.ground_truth_here else '')
        self.description = ProxyDescription(config.allow_remote_models,
                                            config.allow_servo_joints)
        self.transforms = Transforms(config, self.topics)

    def stamp(self, packet: dict, ros_now: float) -> float:
        """Return the ROS stamp of a datagram: its KSP time mapped, else ``ros_now``."""
        ut = packet.get('universalTime')
        stamp = self.time.mapped.stamp(ut, ros_now)  # ProtocolError: no stamp holds ``ut``
        if ut is not None:
            self.vessel.note_ut(ut)
        return stamp

    def vessel_id(self) -> str:
        """Return the id of the vessel the session serves ('' before any)."""
        return self.vessel.current.vessel_id
