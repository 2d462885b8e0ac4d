"""Separation results: the mod's receipts, cached, published, and served on request.

The mod repeats a result every 0.5 s while it is pending and for 10 s after completion,
always under the *current* runtime envelope, so a receipt survives the epoch change its
own separation causes. The bridge keeps the newest result of each operation
(``CAPACITY`` entries; the least recently stored goes first), keyed by the operation's
original identity (instance, epoch, vessel, operation id). An entry lives for its
``retentionRemainingSeconds`` when the mod retains it, else 1 s.

A result is published on ``actuators/separation/result`` and stored, except when an
unexpired retained entry of the same operation would be weakened by it: the new one is
not retained (``separation_result_not_retained``), or the cached one is completed and the
new one is not (``separation_result_regressed``) or differs in anything but the remaining
retention (``separation_result_changed``). Identical completed repeats are republished.

``get`` answers ``actuators/separation/get_result``: a cached completed result at once; a
miss, or a pending one, asks the mod with ``pylon_separation_query`` (the answer comes on
the result topic: call again). Plain logic: the core sends the query and the node serves.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from pylon_common.stamps import to_time
from pylon_interfaces.msg import SeparationResult
from pylon_interfaces.srv import GetSeparationResult
from pylon_protocol import packets
from pylon_protocol.errors import ProtocolError

from pylon_bridge.commands import Outgoing

CAPACITY = packets.SEPARATION_RESULT_CAPACITY
NOT_RETAINED_SEC = 1.0
"""How long a result the mod does not retain stays cached."""
QUERY_SENT = 'query_sent'
OPERATION_KEYS = ('operationInstance', 'operationEpoch', 'operationVesselId', 'operationId')


def message(packet: dict, stamp: float) -> SeparationResult:
    """Return a validated ``pylon_separation_result`` as ``SeparationResult``."""
    msg = SeparationResult()
    msg.header.stamp = to_time(stamp)
    msg.operation_id = packet['operationId']
    msg.original_runtime_instance = packet['operationInstance']
    msg.original_runtime_epoch = packet['operationEpoch']
    msg.original_vessel_id = packet['operationVesselId']
    msg.original_runtime_generation = packet['originalGeneration']
    msg.id = packet['name']
    msg.controller_id = packet['controllerId']
    msg.sequence = max(0, packet['sequence'])
    msg.completed, msg.success = packet['completed'], packet['success']
    msg.retained, msg.reason = packet['retained'], packet['reason']
    msg.result_runtime_epoch = packet['resultEpoch']
    msg.result_runtime_generation = packet['resultGeneration']
    msg.active_vessel_id = packet['activeVesselId']
    msg.resulting_vessel_ids = list(packet['resultingVesselIds'])
    msg.retention_remaining_sec = float(packet['retentionRemainingSeconds'])
    return msg


@dataclass
class Entry:
    """One cached result: the packet, and when it expires (monotonic seconds)."""

    packet: dict
    expires: float


def _outcome(packet: dict) -> dict:
    """Return the result's fields but the remaining retention and the envelope."""
    return {key: value for key, value in packet.items()
            if key != 'retentionRemainingSeconds' and not key.startswith('runtime')}


def refusal(cached: Entry | None, packet: dict, now: float) -> str | None:
    """Return why ``packet`` may not replace the cached result, or None."""
    if cached is None or now >= cached.expires or not cached.packet['retained']:
        return None
    old = cached.packet
    if not packet['retained']:
        return 'separation_result_not_retained'
    if old['completed'] and not packet['completed']:
        return 'separation_result_regressed'
    if old['completed'] and _outcome(old) != _outcome(packet):
        return 'separation_result_changed'
    return None


class SeparationResults:
    """The cache of separation results and the service that reads it."""

    def __init__(self, stats) -> None:
        """Start empty; count refusals in ``stats``."""
        self.stats = stats
        self.entries: OrderedDict[tuple, Entry] = OrderedDict()

    def result(self, packet: dict, now: float, ros_now: float) -> SeparationResult | None:
        """Store a result and return its message, or None (counted) when it is refused."""
        key = tuple(packet[k] for k in OPERATION_KEYS)
        reason = refusal(self.entries.get(key), packet, now)
        if reason is not None:
            self.stats.drop(reason, f'operation {packet["operationId"]}: {reason}')
            return None
        keep = packet['retentionRemainingSeconds'] if packet['retained'] else NOT_RETAINED_SEC
        self.entries.pop(key, None)
        self.entries[key] = Entry(packet, now + keep)
        while len(self.entries) > CAPACITY:
            self.entries.popitem(last=False)
        return message(packet, ros_now)

    def get(self, request, now: float, ros_now: float
            ) -> tuple[GetSeparationResult.Response, Outgoing | None]:
        """Return the answer to a request and the query to send to the mod (or None)."""
        response = GetSeparationResult.Response()
        fields = {'operationId': request.operation_id,
                  'operationInstance': request.original_runtime_instance,
                  'operationEpoch': request.original_runtime_epoch,
                  'operationVesselId': request.original_vessel_id}
        try:
            packets.build_command('pylon_separation_query', None, **fields)
        except ProtocolError as exc:
            response.reason = str(exc)
            return response, None
        entry = self.entries.get(tuple(fields[k] for k in OPERATION_KEYS))
        if entry is not None and now < entry.expires:
            packet = entry.packet
            response.found, response.reason = packet['retained'], packet['reason']
            response.result = message(packet, ros_now)
            if packet['retained']:
                response.result.retention_remaining_sec = max(0.0, entry.expires - now)
            if packet['completed']:
                return response, None
        return response, Outgoing('pylon_separation_query', fields)
