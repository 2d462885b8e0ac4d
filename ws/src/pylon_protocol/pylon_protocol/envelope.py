"""The runtime envelope: which KSP process, reset and vessel a datagram belongs to.

Four fields travel with every datagram. ``runtimeInstance`` is a GUID (32 lowercase hex
digits) made once per KSP process; ``runtimeGeneration`` counts the mod's runtime resets
(active vessel switch, part topology change, SOI change, pack/unpack, scene change, a
discontinuous relocation such as a quickload, or universal time going backwards) and
``runtimeEpoch`` is a fresh GUID at each of them; ``runtimeVesselId`` is the active vessel's
GUID, or ``""`` when there is none.

The mod writes the four fields before everything else in its state datagrams; the bridge
adds them after the payload of its commands (a dict update). The mod drops a command whose
envelope differs from its current one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pylon_protocol.errors import ProtocolError
from pylon_protocol.schema import short_int, UINT64_MAX

INSTANCE_KEY = 'runtimeInstance'
GENERATION_KEY = 'runtimeGeneration'
EPOCH_KEY = 'runtimeEpoch'
VESSEL_ID_KEY = 'runtimeVesselId'
ENVELOPE_KEYS = (INSTANCE_KEY, GENERATION_KEY, EPOCH_KEY, VESSEL_ID_KEY)
ENVELOPE_KEYS_SET = frozenset(ENVELOPE_KEYS)


@dataclass(frozen=True, slots=True)
class Envelope:
    """The runtime identity of a datagram; invalid values raise ``ProtocolError``."""

    runtime_instance: str
    runtime_generation: int
    runtime_epoch: str
    runtime_vessel_id: str

    def __post_init__(self) -> None:
        """Check the field types and ranges the bridge requires."""
        _check_token(self.runtime_instance, INSTANCE_KEY)
        _check_token(self.runtime_epoch, EPOCH_KEY)
        generation = self.runtime_generation
        if type(generation) is not int:
            raise ProtocolError('bad_type', f'{type(generation).__name__}, not int',
                                GENERATION_KEY)
        if not 0 <= generation <= UINT64_MAX:
            raise ProtocolError('out_of_range', f'{short_int(generation)} not in 0..2^64-1',
                                GENERATION_KEY)
        if type(self.runtime_vessel_id) is not str:
            raise ProtocolError('bad_type', f'{type(self.runtime_vessel_id).__name__}, not str',
                                VESSEL_ID_KEY)

    @classmethod
    def from_packet(cls, obj: dict) -> Envelope:
        """Read and check the four envelope fields of a decoded datagram."""
        try:
            return cls(obj[INSTANCE_KEY], obj[GENERATION_KEY], obj[EPOCH_KEY], obj[VESSEL_ID_KEY])
        except KeyError as exc:
            raise ProtocolError('missing_field', 'runtime envelope incomplete',
                                str(exc.args[0])) from None

    @classmethod
    def check_packet(cls, obj: dict) -> None:
        """Check the four envelope fields of a decoded datagram as ``from_packet`` does.

        The common case (every field present and valid) is checked in place, without
        building an ``Envelope``; anything else goes through ``from_packet`` for its error.
        """
        instance, epoch = obj.get(INSTANCE_KEY), obj.get(EPOCH_KEY)
        generation = obj.get(GENERATION_KEY)
        if not (type(instance) is str and instance and type(epoch) is str and epoch
                and type(generation) is int and 0 <= generation <= UINT64_MAX
                and type(obj.get(VESSEL_ID_KEY)) is str):
            cls.from_packet(obj)

    def to_wire(self) -> dict[str, Any]:
        """Return the four fields with their camelCase wire names, in wire order."""
        return {INSTANCE_KEY: self.runtime_instance, GENERATION_KEY: self.runtime_generation,
                EPOCH_KEY: self.runtime_epoch, VESSEL_ID_KEY: self.runtime_vessel_id}

    def matches(self, obj: dict) -> bool:
        """Return whether a datagram carries exactly this envelope."""
        return (obj.get(INSTANCE_KEY) == self.runtime_instance
                and type(obj.get(GENERATION_KEY)) is int
                and obj.get(GENERATION_KEY) == self.runtime_generation
                and obj.get(EPOCH_KEY) == self.runtime_epoch
                and obj.get(VESSEL_ID_KEY) == self.runtime_vessel_id)


def _check_token(value: object, key: str) -> None:
    if type(value) is not str:
        raise ProtocolError('bad_type', f'{type(value).__name__}, not str', key)
    if not value:
        raise ProtocolError('bad_value', 'empty string', key)


def prepend(envelope: Envelope, payload: dict) -> dict:
    """Return a new dict with the envelope first and the payload after, as the mod writes.

    Envelope keys already in ``payload`` are replaced by the envelope's values.
    """
    wire = envelope.to_wire()
    return {**wire, **payload, **wire}


def append(payload: dict, envelope: Envelope) -> dict:
    """Return a new dict with the payload first and the envelope last, as the bridge sends.

    Envelope keys already in ``payload`` are moved to the end with the envelope's values.
    """
    out = {key: value for key, value in payload.items() if key not in ENVELOPE_KEYS_SET}
    out.update(envelope.to_wire())
    return out
