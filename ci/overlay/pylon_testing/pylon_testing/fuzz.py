"""Seeded hostile traffic: state datagrams for ``udp_bridge``, commands and admin for pylon_sim.

The fuzz benchmark (``bench/bench_fuzz.py``) and its tests share this module. Everything is
drawn from one ``random.Random(seed)``: the same seed, corpus and live session give the
same datagrams in the same order.

**The corpus** is real packets: every datagram a ``pylon_sim`` of the scenario sends in its
first seconds, lock-stepped in this process (``simulator_corpus``), every state sample of
``pylon_testing.packet_samples`` (the types the scenario does not send: wheels, servos,
docking ports, separation results, ...) and the mod's own forms of ``mod_datagrams``.
``StateFuzzer`` re-keys each to the live session (its runtime envelope and vessel id, read
from the running simulator's admin status) or to a foreign one, then mutates it:

- bytes: random bytes, bit flips, truncation, spliced garbage, ``NaN``/``Infinity`` tokens;
- fields: deletion, a value of another type, NaN or infinity, huge numbers (1e308, 1E+400,
  2^64, a 5000-digit integer), huge arrays and strings, many unknown keys, a new id where
  the packet names a sensor, port or servo (a topic of its own in the bridge);
- the envelope: another runtime instance, epoch, generation or vessel, a field missing;
- whole datagrams: the largest UDP payload, deeply nested JSON, JSON that is no object;
- sequences of model and camera chunks: out of order, duplicated, overlapping, conflicting,
  never finished, with huge declared totals, of another vessel.

A datagram the bridge could not tell from the game's is not hostile but authentic, and the
protocol has no way to refuse it: a well-formed ``pylon_session`` heartbeat of a new runtime
instance or generation takes the session over (a new KSP process wins), and a well-formed
IMU sample of the live session with a later UT would make the game's own samples stale.
So a ``pylon_session`` or ``pylon_imu`` datagram that decodes is re-keyed, before it is sent,
to the live instance and generation with another epoch, which the session rules ignore
(``conflicting_generation``, ``envelope_mismatch``); they are counted as ``neutralised``.
Every other type of the live session that decodes is sent as it is (it reaches the
collaborator that handles it: that is where a mutation can still hurt).

``CommandFuzzer`` does the same with ``packet_samples.COMMAND_SAMPLES`` (every command type
and actuator kind) for the simulator's command port, and ``admin_requests`` makes admin
requests that must all be refused (malformed, unknown, mistyped, out of range: never a
valid request, which would act, ``quit`` included).

``python -m pylon_testing.fuzz state|sim ...`` sends them from a process of its own (the
benchmark's and the tests' sender), with flow control on the receiver's socket queue so
that the kernel never drops a datagram, the simulator's valid ones included; it prints one
``done {json}`` line with what it sent.
"""

from __future__ import annotations

import argparse
import base64
from collections import Counter
from collections.abc import Callable, Iterator
import hashlib
import json
import math
import random
import socket
import sys
import time
from typing import Any

from pylon_protocol import packets
from pylon_protocol.envelope import Envelope, ENVELOPE_KEYS
from pylon_protocol.errors import ProtocolError

from pylon_testing import mod_datagrams, packet_samples

MAX_UDP_PAYLOAD = 65507                 # IPv4: 65535 - 20 (IP) - 8 (UDP)
CORPUS_SECONDS = 3.0                    # simulator seconds captured for the corpus
CORPUS_PER_TYPE = 40                    # at most this many captured datagrams of each type
QUEUE_HIGH_BYTES = 192 << 10            # pause while the receiver has this much queued
QUEUE_CHECK_EVERY = 32                  # datagrams between two looks at the queue
QUEUE_PAUSE_SEC = 0.005
PROGRESS_EVERY = 50_000                 # the sender prints ``progress SENT SECONDS`` this often
STALL_LIMIT_SEC = 30.0                  # a receiver that drains nothing this long: give up
MEASURED_TYPES = frozenset({'pylon_session', 'pylon_imu'})
ID_FIELDS = ('sensorId', 'name', 'sessionId', 'source')
FOREIGN_EPOCH = '0ddba11' + '0' * 25

STATE_WEIGHTS: dict[str, float] = {
    'random_bytes': 6, 'bit_flip': 10, 'truncate': 6, 'splice': 3, 'token': 3,
    'delete_field': 8, 'type_swap': 10, 'non_finite': 8, 'huge_number': 8, 'huge_array': 2,
    'huge_string': 1, 'extra_fields': 2, 'new_id': 4, 'foreign_envelope': 8,
    'wrong_type': 3, 'as_is': 4, 'oversize': 0.3, 'deep_nesting': 0.3, 'not_object': 1,
    'model_sequence': 1.5, 'camera_sequence': 1.0,
}
"""How often each kind is drawn (relative)."""

_SWAP_VALUES: tuple[Any, ...] = (
    None, True, False, 0, -1, 1, 1.5, -0.0, '', 'x', 'pylon_imu', '0' * 32, [], [0, 0],
    [None], {}, {'x': 1}, [[1, 2], [3]], 2**31, -2**31 - 1)
_NUMBER_TOKENS = (b'1E+400', b'-1E+400', b'1e308', b'-1.7976931348623157e308', b'5e-324',
                  b'18446744073709551616', b'-9223372036854775809', b'1' + b'0' * 5000,
                  b'123456789012345678901234567890', b'-0', b'0.0000000000000000000001')
_NON_FINITE = (math.nan, math.inf, -math.inf)
_RAW = '\x00raw:{}\x00'                  # a placeholder the encoder leaves for a raw token


# -- the corpus ---------------------------------------------------------------------------------
def simulator_corpus(scenario: str = 'orbit', seconds: float = CORPUS_SECONDS,
                     per_type: int = CORPUS_PER_TYPE, seed: int = 0) -> list[dict]:
    """Return decoded packets a ``pylon_sim`` of ``scenario`` sends in its first ``seconds``.

    At most ``per_type`` of each type (actuator states per kind), the first ones: every
    kind the scenario sends is there, models and camera frames whole.
    """
    from pylon_sim.loop.runtime import Simulator
    from pylon_sim.loop.scenario import load_scenario
    kept: list[dict] = []
    counts: Counter = Counter()

    def capture(data: bytes) -> None:
        packet = packets.decode_state(data)
        kind = (packet['type'], packet.get('actuatorType'))
        counts[kind] += 1
        if counts[kind] <= per_type or packet['type'] in (
                'pylon_vessel_urdf_chunk', 'pylon_camera_frame_chunk'):
            kept.append(packet)
    sim = Simulator(load_scenario(scenario, seed=seed), send=capture, seed=seed)
    try:
        sim.run(rate=0, duration=seconds)
    finally:
        sim.close()
    return kept


def sample_corpus() -> list[dict]:
    """Return every state sample (``packet_samples``) and the mod's forms (``mod_datagrams``)."""
    out = [packet_samples.state_packet(case) for case in packet_samples.STATE_SAMPLES]
    d = mod_datagrams
    for data in (d.session(), d.imu(), d.ground_truth(), d.nearby(), d.motor(),
                 d.star_tracker(), d.star_tracker(reason='inactive'), d.lidar_2d(),
                 d.lidar_3d(), d.flight_state(), d.control_snapshot(), d.vehicle_health(5.0),
                 d.part_thermal(4001, 300.0), d.separation_result(), d.relative_nav(),
                 d.gnss(), d.gnss(fix=None), d.ahrs(),
                 d.model_clear(), *d.model_chunks()[:2]):
        out.append(packets.decode_state(data))
    return out


def live_session(admin_port: int, host: str = '127.0.0.1') -> Envelope:
    """Return the runtime envelope a running simulator sends now (its admin ``status``)."""
    from pylon_sim.loop.admin import request
    status = request(admin_port, {'cmd': 'status'}, host)
    return Envelope(*(status[key] for key in ENVELOPE_KEYS))


# -- encoding -----------------------------------------------------------------------------------
def encode(obj: Any) -> bytes:
    """Return compact JSON with NaN tokens; ``raw(token)`` placeholders become the token."""
    text = json.dumps(obj, separators=(',', ':'), allow_nan=True, ensure_ascii=False)
    data = text.encode('utf-8', 'surrogatepass')
    if b'\\u0000raw:' not in data:
        return data
    pieces = data.split(b'"\\u0000raw:')
    out = [pieces[0]]
    for piece in pieces[1:]:
        token, _, rest = piece.partition(b'\\u0000"')
        out += [token, rest]
    return b''.join(out)


def raw(token: bytes) -> str:
    """Return a placeholder that ``encode`` writes as the bare JSON ``token``."""
    return _RAW.format(token.decode('ascii'))


def rekey(packet: dict, envelope: Envelope, vessel_ids: frozenset[str]) -> dict:
    """Return ``packet`` in ``envelope``: its four fields, and its vessel id if one of ours."""
    out = {**packet, **envelope.to_wire()}
    if out.get('vesselId') in vessel_ids:
        out['vesselId'] = envelope.runtime_vessel_id
    return out


def _guid(rng: random.Random) -> str:
    return f'{rng.getrandbits(128):032x}'


# -- the state fuzzer ---------------------------------------------------------------------------
class StateFuzzer:
    """Hostile state datagrams around a corpus of real ones, for one live session."""

    def __init__(self, seed: int, corpus: list[dict], live: Envelope) -> None:
        """Index the corpus by type; prepare the model and camera chunk sets."""
        self.rng = random.Random(seed)
        self.live = live
        self.corpus = corpus
        self.vessel_ids = frozenset(
            {p['runtimeVesselId'] for p in corpus if p.get('runtimeVesselId')}
            | {packet_samples.VESSEL_ID, mod_datagrams.VESSEL})
        self.kinds = list(STATE_WEIGHTS)
        self.weights = [STATE_WEIGHTS[k] for k in self.kinds]
        self.pending: list[tuple[str, bytes]] = []
        self.neutralised = 0
        self.models = [self._model(parts, vessel) for parts, vessel in (
            (2, live.runtime_vessel_id), (5, live.runtime_vessel_id),
            (12, live.runtime_vessel_id), (3, mod_datagrams.OTHER))]
        self.frames = [self._frame(size) for size in ((8, 8), (32, 24), (64, 64))]

    # -- drawing ------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[tuple[str, bytes]]:
        """Yield (kind, datagram) for ever."""
        while True:
            yield self.next()

    def next(self) -> tuple[str, bytes]:
        """Return the next (kind, datagram)."""
        if not self.pending:
            kind = self.rng.choices(self.kinds, self.weights)[0]
            self.pending = list(reversed(getattr(self, f'_kind_{kind}')()))
        return self.pending.pop()

    def _packet(self, live: bool = True) -> dict:
        """Return a corpus packet in the live session (or a foreign one), a shallow copy."""
        packet = self.rng.choice(self.corpus)
        return rekey(packet, self.live if live else self._foreign_envelope(), self.vessel_ids)

    def _foreign_envelope(self) -> Envelope:
        live, rng = self.live, self.rng
        which = rng.randrange(4)
        return Envelope(
            _guid(rng) if which == 0 else live.runtime_instance,
            max(0, live.runtime_generation + rng.choice((-1, 1, 7))) if which == 1
            else live.runtime_generation,
            _guid(rng) if which == 2 else live.runtime_epoch,
            _guid(rng) if which == 3 else live.runtime_vessel_id)

    def _out(self, kind: str, packet: dict) -> list[tuple[str, bytes]]:
        """Return the datagram of a mutated packet, neutralised if it is authentic."""
        if _text(packet.get('type')) in MEASURED_TYPES:
            packet = self._neutralise(packet)
        data = encode(packet)
        return [(kind, data if len(data) <= MAX_UDP_PAYLOAD else data[:MAX_UDP_PAYLOAD])]

    def _neutralise(self, packet: dict) -> dict:
        """Re-key a heartbeat or IMU sample the bridge would take as the game's."""
        try:
            packets.decode_state(encode(packet))
        except ProtocolError:
            return packet
        if packet['type'] == 'pylon_imu' and not self.live.matches(packet):
            return packet
        self.neutralised += 1
        return {**packet, 'runtimeInstance': self.live.runtime_instance,
                'runtimeGeneration': self.live.runtime_generation,
                'runtimeEpoch': FOREIGN_EPOCH}

    # -- a slot of a packet -------------------------------------------------------------------
    def _slot(self, root: dict, want: Callable[[Any], bool] | None = None,
              tries: int = 8) -> tuple[dict | list, Any]:
        """Return (container, key) of a random value in ``root``, copying the way down.

        ``root`` itself is a copy; containers on the way are copied before they are
        entered, so the corpus is never changed. With ``want`` the value must pass it
        (the last try's slot otherwise).
        """
        node, key = root, None
        for _ in range(tries):
            node = root
            while True:
                key = (self.rng.choice(list(node)) if isinstance(node, dict)
                       else self.rng.randrange(len(node)))
                value = node[key]
                if isinstance(value, dict | list) and value and self.rng.random() < 0.5:
                    node[key] = dict(value) if isinstance(value, dict) else list(value)
                    node = node[key]
                    continue
                break
            if want is None or want(node[key]):
                break
        return node, key

    def _mutated(self, kind: str, change: Callable[[dict | list, Any], None],
                 want: Callable[[Any], bool] | None = None) -> list[tuple[str, bytes]]:
        root = self._packet(live=self.rng.random() < 0.75)
        node, key = self._slot(root, want)
        change(node, key)
        return self._out(kind, root)

    # -- kinds: fields ------------------------------------------------------------------------
    def _kind_delete_field(self):
        return self._mutated('delete_field', lambda node, key: node.pop(key))

    def _kind_type_swap(self):
        def swap(node, key):
            node[key] = self.rng.choice(_SWAP_VALUES)
        return self._mutated('type_swap', swap)

    def _kind_non_finite(self):
        def put(node, key):
            value = self.rng.choice(_NON_FINITE)
            node[key] = [value] * 3 if isinstance(node[key], list) else value
        return self._mutated('non_finite', put, _is_number_or_vector)

    def _kind_huge_number(self):
        def put(node, key):
            node[key] = raw(self.rng.choice(_NUMBER_TOKENS))
        return self._mutated('huge_number', put, _is_number)

    def _kind_huge_array(self):
        def put(node, key):
            count = self.rng.choice((100, 1000, 10_000, 30_000))
            node[key] = [self.rng.choice((0, 1.5, None, 'x'))] * count
        return self._mutated('huge_array', put, lambda v: isinstance(v, list))

    def _kind_huge_string(self):
        def put(node, key):
            node[key] = self.rng.choice(('x', '\u00e9', '\\', '"')) * self.rng.choice(
                (200, 5000, 30_000))
        return self._mutated('huge_string', put, lambda v: isinstance(v, str))

    def _kind_extra_fields(self):
        root = self._packet()
        for i in range(self.rng.choice((10, 500, 3000))):
            root[f'x{i}'] = i
        return self._out('extra_fields', root)

    def _kind_new_id(self):
        """Name a sensor, port or servo never seen before in a packet of the live session."""
        root = self._packet()
        present = [f for f in ID_FIELDS if isinstance(root.get(f), str)]
        if present:
            field = self.rng.choice(present)
            root[field] = (_guid(self.rng) if field == 'sessionId'
                           else f'fz_{self.rng.getrandbits(40):010x}')
        return self._out('new_id', root)

    def _kind_foreign_envelope(self):
        root = self._packet(live=False)
        if self.rng.random() < 0.2:
            root.pop(self.rng.choice(ENVELOPE_KEYS))
        return self._out('foreign_envelope', root)

    def _kind_wrong_type(self):
        root = self._packet()
        root['type'] = self.rng.choice((*packets.STATE_TYPES, 'pylon_', 'pylon_future',
                                        'imu', 'pylon_' + 'x' * 300))
        return self._out('wrong_type', root)

    def _kind_as_is(self):
        return self._out('as_is', self._packet(live=self.rng.random() < 0.5))

    # -- kinds: bytes -------------------------------------------------------------------------
    def _valid_bytes(self) -> bytes:
        return self._out('as_is', self._packet())[0][1]

    def _raw(self, kind: str, data: bytes) -> list[tuple[str, bytes]]:
        """Return a byte-mutated datagram; one that still decodes goes through ``_out``.

        A bit flip in a heartbeat's runtime instance is a well-formed heartbeat of another
        KSP process: it is neutralised like a mutated field would be.
        """
        try:
            packet = packets.decode_state(data)
        except ProtocolError:
            return [(kind, data)]
        return self._out(kind, packet) if packet['type'] in MEASURED_TYPES else [(kind, data)]

    def _kind_random_bytes(self):
        size = self.rng.choice((0, 1, 2, 8, 64, 512, 1400, 9000))
        return [('random_bytes', self.rng.randbytes(size))]

    def _kind_bit_flip(self):
        data = bytearray(self._valid_bytes())
        for _ in range(self.rng.choice((1, 1, 2, 8))):
            position = self.rng.randrange(len(data) * 8)
            data[position // 8] ^= 1 << (position % 8)
        return self._raw('bit_flip', bytes(data))

    def _kind_truncate(self):
        data = self._valid_bytes()
        return self._raw('truncate', data[:self.rng.randrange(len(data))])

    def _kind_splice(self):
        data = self._valid_bytes()
        at = self.rng.randrange(len(data))
        return self._raw('splice', data[:at] + self.rng.randbytes(self.rng.randint(1, 16))
                         + data[at:])

    def _kind_token(self):
        data = self._valid_bytes()
        token = self.rng.choice((b'NaN', b'Infinity', b'-Infinity', b'1E+400', b'null'))
        for number in (b'0', b'1', b'9', b'5'):
            if number in data[40:]:
                at = data.index(number, 40)
                return self._raw('token', data[:at] + token + data[at + 1:])
        return [('token', data)]

    # -- kinds: whole datagrams ---------------------------------------------------------------
    def _kind_oversize(self):
        packet = self._packet()
        if packet['type'] in MEASURED_TYPES:           # the bridge may take it whole
            packet = self._neutralise(packet)
        head = encode(packet)[:-1] + b',"pad":"'
        return [('oversize', head + b'x' * (MAX_UDP_PAYLOAD - len(head) - 2) + b'"}')]

    def _kind_deep_nesting(self):
        opener, closer = self.rng.choice(((b'[', b']'), (b'{"a":', b'}')))
        depth = min(self.rng.choice((100, 1000, 10_000, 30_000)),    # one datagram still
                    (MAX_UDP_PAYLOAD - 40) // (len(opener) + len(closer)))
        return [('deep_nesting', b'{"type":"pylon_imu","x":' + opener * depth + b'1'
                 + closer * depth + b'}')]

    def _kind_not_object(self):
        return [('not_object', self.rng.choice((
            b'[]', b'null', b'42', b'"pylon_imu"', b'true', b'[' + self._valid_bytes() + b']',
            b'', b' ', b'\xef\xbb\xbf{}', b'{}', b'{"type":"pylon_imu"}')))]

    # -- kinds: chunk sequences ---------------------------------------------------------------
    def _model(self, parts: int, vessel: str) -> list[dict]:
        session = _guid(self.rng)
        chunks = mod_datagrams.model_chunks(vessel=vessel, session_id=session, parts=parts,
                                            env=self.live)
        return [packets.decode_state(c) for c in chunks]

    def _frame(self, size: tuple[int, int]) -> list[dict]:
        width, height = size
        image = self.rng.randbytes(width * height * 3)
        chunks = mod_datagrams.camera_chunks(image, width, height, env=self.live,
                                             sensor='camera_fuzz', chunk_bytes=512)
        return [packets.decode_state(c) for c in chunks]

    def _kind_model_sequence(self):
        return self._sequence('model_sequence', self.rng.choice(self.models), 'chunkCount',
                              packets.MAX_MODEL_CHUNKS)

    def _kind_camera_sequence(self):
        return self._sequence('camera_sequence', self.rng.choice(self.frames), 'chunkCount',
                              packets.MAX_CAMERA_CHUNKS)

    def _sequence(self, kind: str, chunks: list[dict], count_key: str,
                  most: int) -> list[tuple[str, bytes]]:
        """Return a hostile ordering of one model's or frame's chunks."""
        rng = self.rng
        chunks = [dict(c) for c in chunks]
        ident = 'sessionId' if 'modelId' in chunks[0] else 'sequence'
        fresh = _guid(rng) if ident == 'sessionId' else rng.randrange(1, 2**31)
        how = rng.randrange(7)
        if how == 0:                                      # out of order
            rng.shuffle(chunks)
        elif how == 1:                                    # duplicates
            chunks = [c for c in chunks for _ in range(rng.randint(1, 3))]
        elif how == 2:                                    # never finished
            chunks = chunks[:-1] or chunks
            for c in chunks:
                c[ident] = fresh
        elif how == 3:                                    # huge declared total
            for c in chunks:
                c[count_key] = most
                c[ident] = fresh
        elif how == 4:                                    # conflicting duplicate
            twin = dict(chunks[0])
            twin['data'] = base64.b64encode(rng.randbytes(48)).decode()
            chunks.insert(rng.randrange(len(chunks) + 1), twin)
        elif how == 5:                                    # overlapping with another one
            other = [dict(c) for c in rng.choice(self.models if ident == 'sessionId'
                                                  else self.frames)]
            for c in other:
                c[ident] = chunks[0][ident]
            chunks = [c for pair in zip(chunks, other) for c in pair]
        else:                                             # a wrong digest
            for c in chunks:
                c['sha256'] = hashlib.sha256(rng.randbytes(8)).hexdigest()
                c[ident] = fresh
        return [(kind, encode(c)) for c in chunks]



def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def _is_number_or_vector(value: Any) -> bool:
    return _is_number(value) or (isinstance(value, list) and bool(value)
                                 and all(_is_number(v) for v in value[:4]))


# -- the command fuzzer -------------------------------------------------------------------------
COMMAND_WEIGHTS: dict[str, float] = {
    'random_bytes': 4, 'bit_flip': 8, 'truncate': 4, 'delete_field': 8, 'type_swap': 8,
    'non_finite': 8, 'huge_number': 8, 'huge_array': 1, 'foreign_envelope': 8,
    'foreign_identity': 8, 'out_of_range': 8, 'as_is': 4, 'oversize': 0.2,
    'deep_nesting': 0.3, 'not_object': 1,
}
"""How often each kind of command datagram is drawn (relative)."""

_OUT_OF_RANGE: dict[str, tuple[Any, ...]] = {
    'timeoutSeconds': (0.0, -1.0, 0.001, 11.0, 1e9), 'leaseDurationSeconds': (0.0, -2.0, 1e6),
    'priority': (-2**31 - 1, 2**63), 'sequence': (0, -1, 2**63, 2**64),
    'targetThrust': (-1.0, -1e9), 'gimbalPitch': (1.5, -7.0), 'gimbalYaw': (2.0,),
    'thrustLimit': (-5.0,), 'brake': (1.5, -0.1), 'maxDriveTorque': (-1.0,),
    'pitch': (1.01, -3.0), 'yaw': (9.0,), 'roll': (-1.5,), 'action': (0, 9, 'explode', -1),
    'mode': ('warp', 7), 'partFlightId': (-1, 2**32),
}


class CommandFuzzer(StateFuzzer):
    """Hostile command datagrams for a simulator's command port, around every command type."""

    def __init__(self, seed: int, live: Envelope) -> None:
        """Build every command sample in the live session."""
        self.rng = random.Random(seed)
        self.live = live
        self.vessel_ids = frozenset({packet_samples.VESSEL_ID})
        self.corpus = [self._command(case) for case in packet_samples.COMMAND_SAMPLES]
        self.kinds = list(COMMAND_WEIGHTS)
        self.weights = [COMMAND_WEIGHTS[k] for k in self.kinds]
        self.pending = []
        self.neutralised = 0

    def _command(self, case: str) -> dict:
        """Return a command sample in the live session (batch members too)."""
        type_name, fields = packet_samples.command_sample(case)
        packet = packets.build_command(type_name, self.live, **fields)
        text = json.dumps(packet).replace(packet_samples.VESSEL_ID, self.live.runtime_vessel_id)
        return json.loads(text)

    def _packet(self, live: bool = True) -> dict:
        packet = dict(self.rng.choice(self.corpus))
        return packet if live else {**packet, **self._foreign_envelope().to_wire()}

    def _out(self, kind: str, packet: dict) -> list[tuple[str, bytes]]:
        data = encode(packet)
        return [(kind, data[:MAX_UDP_PAYLOAD])]

    def _kind_foreign_identity(self):
        """Give a well-formed command another vessel, controller or lease, or an old sequence."""
        root = self._packet()
        field, values = self.rng.choice((
            ('vesselId', (mod_datagrams.OTHER, _guid(self.rng), '')),
            ('controllerId', ('intruder', 'x' * 200, '')),
            ('leaseId', ('lease-666', '', ' ')),
            ('sequence', (1, 2, 7))))
        root[field] = self.rng.choice(values)
        return self._out('foreign_identity', root)

    def _kind_out_of_range(self):
        root = self._packet()
        present = [key for key in _OUT_OF_RANGE if key in root]
        if present:
            key = self.rng.choice(present)
            root[key] = self.rng.choice(_OUT_OF_RANGE[key])
        return self._out('out_of_range', root)


# -- admin requests that must be refused --------------------------------------------------------
def admin_requests(rng: random.Random) -> Iterator[tuple[str, bytes]]:
    """Yield (kind, datagram) admin requests that a simulator must all refuse.

    Malformed datagrams, unknown or mistyped commands and values out of range: never a
    request that would act (no valid ``quit``, ``pause``, ``switch``, ...).
    """
    def request(**fields: Any) -> bytes:
        return encode(fields)
    bad = (
        ('not_json', lambda: rng.randbytes(rng.choice((0, 1, 30, 900)))),
        ('not_json', lambda: b'{"cmd": "status"'),
        ('invalid_utf8', lambda: b'{"cmd": "\xff\xfe"}'),
        ('not_object', lambda: rng.choice((b'[]', b'"status"', b'null', b'7', b'["quit"]'))),
        ('deep_nesting', lambda: b'{"cmd":' + b'[' * rng.choice((1000, 20_000)) + b'}'),
        ('deep_nesting', lambda: b'[' * 50_000),
        ('unknown_cmd', lambda: request(cmd=rng.choice((
            '', 'QUIT', 'quit ', 'shutdown', 'x' * 5000, None, 5, True, 1.5)))),
        ('unknown_cmd', lambda: request()),
        ('mistyped_cmd', lambda: request(cmd=rng.choice((['quit'], {'cmd': 'quit'}, [])))),
        ('bad_value', lambda: request(cmd='warp', rate=rng.choice(
            ('fast', None, [], math.nan, math.inf, -1.0, 2.5, 1e9, raw(b'1E+400'))))),
        ('bad_value', lambda: request(cmd='warp', rate=2.0, mode=rng.choice(
            ('sideways', '', 5, None)))),
        ('bad_value', lambda: request(cmd='switch', vessel=rng.choice(
            ('no_such_vessel', '', _guid(rng), None, {'key': 'x'})))),
        ('bad_value', lambda: request(cmd='switch')),
        ('bad_value', lambda: request(cmd='sensor', id=rng.choice(('no_such_sensor', None, 7)))),
        ('bad_value', lambda: request(cmd='electric_charge', amount=rng.choice(
            ('lots', None, [], math.nan, math.inf, -math.inf, raw(b'1E+400'))))),
    )
    while True:
        kind, make = rng.choice(bad)
        yield kind, make()


# -- sending ------------------------------------------------------------------------------------
def wait_for_queue(port: int, high: int, stall_limit: float = STALL_LIMIT_SEC) -> int:
    """Wait while the socket bound to 127.0.0.1:``port`` has more than ``high`` queued.

    Return how many times it waited; raise TimeoutError when the queue did not go down
    within ``stall_limit`` (the receiver stopped reading).
    """
    from pylon_testing.bench import udp_socket_state
    pauses = 0
    deadline = time.monotonic() + stall_limit
    state = udp_socket_state(port)
    while state is not None and state[0] > high:
        if time.monotonic() > deadline:
            raise TimeoutError(f'the receiver on port {port} drained nothing for '
                               f'{stall_limit:g} s ({state[0]} bytes queued)')
        pauses += 1
        time.sleep(QUEUE_PAUSE_SEC)
        state = udp_socket_state(port)
    return pauses


class Sender:
    """One UDP socket that sends datagrams, counting them by kind, with flow control."""

    def __init__(self, high: int = QUEUE_HIGH_BYTES) -> None:
        """Open the socket (bound, so that replies can come back)."""
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(('127.0.0.1', 0))
        self.sock.setblocking(False)
        self.high = high
        self.sent: Counter = Counter()
        self.errors: Counter = Counter()
        self.pauses = 0
        self._since_check: Counter = Counter()
        self._bytes_since_check: Counter = Counter()    # large datagrams: look sooner

    def send(self, kind: str, data: bytes, target: tuple[str, int]) -> None:
        """Send one datagram; look at the target's queue every ``QUEUE_CHECK_EVERY``.

        Or sooner, once half of ``high`` was sent since the last look: the queue then never
        holds more than 1.5 ``high`` of payload, and the kernel drops nothing.
        """
        try:
            self.sock.sendto(data, target)
        except BlockingIOError:
            self.pauses += wait_for_queue(target[1], self.high)
            self.sock.setblocking(True)
            self.sock.sendto(data, target)
            self.sock.setblocking(False)
        except OSError as exc:
            self.errors[f'{kind}: {exc.strerror or exc}'] += 1
            return
        self.sent[kind] += 1
        self._since_check[target] += 1
        self._bytes_since_check[target] += len(data)
        if (self._since_check[target] >= QUEUE_CHECK_EVERY
                or self._bytes_since_check[target] >= self.high // 2):
            self._since_check[target] = self._bytes_since_check[target] = 0
            self.pauses += wait_for_queue(target[1], self.high)

    def replies(self) -> list[bytes]:
        """Return the datagrams that came back so far."""
        out = []
        while True:
            try:
                out.append(self.sock.recv(65535))
            except BlockingIOError:
                return out

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()


def fuzz_bridge(port: int, admin_port: int, count: int, seed: int,
                scenario: str = 'orbit') -> dict:
    """Send ``count`` hostile state datagrams to a bridge on ``port``; return what was sent.

    The live session is the simulator's on ``admin_port``; the corpus is ``scenario``'s.
    One oversized datagram (70 000 bytes, which the kernel refuses) is tried first.
    """
    live = live_session(admin_port)
    corpus = simulator_corpus(scenario) + sample_corpus()
    fuzzer = StateFuzzer(seed, corpus, live)
    sender = Sender()
    target = ('127.0.0.1', port)
    sender.send('oversize_70000', b'{"pad":"' + b'x' * 70_000 + b'"}', target)
    start = time.monotonic()
    for sent in range(1, count + 1):
        sender.send(*fuzzer.next(), target)
        if sent % PROGRESS_EVERY == 0:
            print(f'progress {sent} {time.monotonic() - start:.1f}', flush=True)
    end = time.monotonic()
    sender.close()
    return {'seed': seed, 'live_envelope': live.to_wire(), 'corpus_packets': len(corpus),
            'corpus_types': sorted({p['type'] for p in corpus}), 'start': start, 'end': end,
            'sent': sum(sender.sent.values()), 'by_kind': dict(sorted(sender.sent.items())),
            'send_errors': dict(sender.errors), 'neutralised': fuzzer.neutralised,
            'pauses': sender.pauses}


def fuzz_simulator(command_port: int, admin_port: int, count: int, seed: int,
                   admin_share: float = 0.1, reply_timeout: float = 30.0) -> dict:
    """Send ``count`` hostile datagrams to a simulator's command and admin ports.

    A share ``admin_share`` goes to the admin port; every admin request must be answered
    with a refusal, and the replies are read back (until all came or ``reply_timeout``).
    """
    from pylon_testing.bench import udp_socket_state
    live = live_session(admin_port)
    fuzzer = CommandFuzzer(seed, live)
    ports = {'command': command_port, 'admin': admin_port}
    drops_before = {name: (udp_socket_state(port) or (0, 0))[1] for name, port in ports.items()}
    admin = admin_requests(random.Random(seed + 1))
    sender = Sender(high=64 << 10)
    command_target, admin_target = ('127.0.0.1', command_port), ('127.0.0.1', admin_port)
    replies: list[bytes] = []
    start = time.monotonic()
    for _ in range(count):
        if fuzzer.rng.random() < admin_share:
            kind, data = next(admin)
            sender.send('admin.' + kind, data, admin_target)
            replies += sender.replies()
        else:
            sender.send(*fuzzer.next(), command_target)
    end = time.monotonic()
    admin_sent = sum(n for kind, n in sender.sent.items() if kind.startswith('admin.'))
    deadline = time.monotonic() + reply_timeout
    while len(replies) < admin_sent and time.monotonic() < deadline:
        replies += sender.replies()
        time.sleep(0.01)
    sender.close()
    answers = Counter('refused' if not json.loads(r).get('ok') else 'accepted' for r in replies)
    return {'seed': seed, 'live_envelope': live.to_wire(), 'start': start, 'end': end,
            'sent': sum(sender.sent.values()), 'admin_sent': admin_sent,
            'command_sent': sum(sender.sent.values()) - admin_sent,
            'by_kind': dict(sorted(sender.sent.items())), 'send_errors': dict(sender.errors),
            'admin_replies': dict(answers), 'pauses': sender.pauses,
            'kernel_drops': {name: (udp_socket_state(port) or (0, 0))[1] - drops_before[name]
                             for name, port in ports.items()}}


def main(argv: list[str] | None = None) -> int:
    """``state`` or ``sim``: fuzz a bridge or a simulator; print ``done {json}``."""
    from pylon_protocol.threads import limit_threads
    limit_threads()
    p = argparse.ArgumentParser(prog='python -m pylon_testing.fuzz', description=__doc__
                                .splitlines()[0])
    p.add_argument('target', choices=('state', 'sim'))
    p.add_argument('--port', type=int, help="state: the bridge's state port")
    p.add_argument('--command-port', type=int, help="sim: the simulator's command port")
    p.add_argument('--admin-port', type=int, required=True, help="the simulator's admin port")
    p.add_argument('--count', type=int, required=True)
    p.add_argument('--seed', type=int, default=1)
    p.add_argument('--scenario', default='orbit', help='state: the corpus scenario')
    args = p.parse_args(argv)
    if args.target == 'state':
        result = fuzz_bridge(args.port, args.admin_port, args.count, args.seed, args.scenario)
    else:
        result = fuzz_simulator(args.command_port, args.admin_port, args.count, args.seed)
    print('done ' + json.dumps(result), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
