"""The active vessel's proxy model: chunks in, ``robot_description`` and ``root_frame`` out.

The mod sends the model as gzip+base64 chunks of a ``pylon_active_vessel_proxy`` bundle
(``pylon_protocol.model_chunks``), refreshed every 2 s, and withdraws it with
``pylon_vessel_urdf_clear`` or by letting it expire. A model is accepted only for the
vessel of the session and, unless ``--allow-remote-models``, only from a loopback sender;
re-sent copies of the model in force only refresh it. Withdrawing it publishes empty
latched strings, so a late RViz or robot_state_publisher never gets a stale vessel.
"""

from __future__ import annotations

from typing import Any

from pylon_protocol.errors import ProtocolError
from pylon_protocol.model_chunks import Model, ModelAssembler
from std_msgs.msg import String

from pylon_bridge.actions import Publish


class ProxyDescription:
    """The model assembler and the model in force."""

    def __init__(self, allow_remote: bool, allow_servo_joints: bool) -> None:
        """Accept remote senders and the servo-joint extension only when told."""
        self.models = ModelAssembler(allow_remote=allow_remote,
                                     allow_servo_joints=allow_servo_joints)
        self.model: Model | None = None

    def add(self, packet: dict, source: Any, now: float, vessel_id: str) -> Model | None:
        """Add a chunk; return a model of ``vessel_id`` that replaces the one in force.

        Raise ProtocolError (its reason counted by the caller) for a bad chunk or a model
        of another vessel; a re-sent copy of the model in force only refreshes it.
        """
        address = source[0] if isinstance(source, tuple) else source
        model = self.models.add_decoded(packet, now, address)
        if model is None:
            return None
        if model.vessel_id != vessel_id:
            self.models.reset()         # so that a later copy is assembled and checked again
            raise ProtocolError('model_for_other_vessel',
                                f'model of {model.vessel_id} while {vessel_id} is active')
        same = self.model is not None and self.model.model_id == model.model_id
        self.model = model              # a copy of the same model only refreshes it
        return None if same else model

    def clear(self, session_id: str, now: float) -> bool:
        """Apply a clear of ``session_id``; return whether the model in force goes."""
        cleared_current = self.models.clear(session_id, now)
        return cleared_current or (self.model is not None
                                   and self.model.session_id == session_id)

    def expired(self, now: float) -> bool:
        """Expire old assemblies; return whether the model in force was not refreshed."""
        self.models.expire(now)
        return self.model is not None and not self.models.is_current(now)

    def withdraw(self) -> list:
        """Forget the model; return the empty latched strings if there was one."""
        had = self.model is not None
        self.model = None
        self.models.reset()
        return empty() if had else []


def published(model: Model) -> list:
    """Return the latched description and root frame of ``model``."""
    return [Publish('robot_description', String(data=model.urdf)),
            Publish('root_frame', String(data=model.root_frame))]


def empty() -> list:
    """Return the empty latched description and root frame (no model)."""
    return [Publish('robot_description', String(data='')),
            Publish('root_frame', String(data=''))]
