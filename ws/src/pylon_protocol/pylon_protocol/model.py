"""The active vessel's proxy model: URDF bundle, chunking, reassembly and validation.

The sender serialises a ``pylon_active_vessel_proxy`` bundle (JSON object with the URDF
and its part-to-link map) to UTF-8, gzips it, cuts the compressed bytes into chunks and
sends each base64-encoded in a ``pylon_vessel_urdf_chunk``. ``sha256`` is the digest of
all compressed bytes, ``modelId`` the digest of the URDF text (UTF-8). The whole model is
re-sent every ``refreshSeconds``; a receiver treats it as current for ``expiresAfterSec``
after the last complete reception.

The URDF is a primitive-only proxy, checked against one allowlist table
(``URDF_ALLOWLIST``). Rows marked with a feature exist only when that feature is enabled;
``allow_servo_joints`` enables revolute and prismatic joints with one ``axis`` and one
``limit`` each, named like the joint_states entry of their servo (a sanitised motor name,
``[a-z_][a-z0-9_]{0,63}``) or ``pylon_<vid8>_joint_NNNN``. Everything not in the table is
rejected; fixed joints keep the ``pylon_<vid8>_joint_NNNN`` names.
"""

from __future__ import annotations

import base64
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence
import dataclasses
from dataclasses import dataclass, field
import gzip
import hashlib
import ipaddress
import json
import math
import re
import xml.etree.ElementTree as ET  # noqa: N817
import zlib

from pylon_protocol.camera import decode_base64_strict
from pylon_protocol.errors import ProtocolError
from pylon_protocol.frames import quat, quat_normalize, vec3
from pylon_protocol.names import HEX32_RE, HEX64_RE

BUNDLE_TYPE = 'pylon_active_vessel_proxy'
CHUNK_TYPE = 'pylon_vessel_urdf_chunk'
CLEAR_TYPE = 'pylon_vessel_urdf_clear'
ENCODING = 'gzip+base64'
GEOMETRY_POLICY = 'primitive_proxy_only'
PERSISTENCE_POLICY = 'memory_only'

# Sender settings and their clamps.
DEFAULT_CHUNK_BYTES = 12000
MIN_CHUNK_BYTES = 128
MAX_CHUNK_BYTES = 48000
DEFAULT_MAX_CHUNKS = 256
MAX_MAX_CHUNKS = 512
DEFAULT_MAX_DATAGRAM_BYTES = 60000
DATAGRAM_OVERHEAD_BYTES = 1024
DEFAULT_REFRESH_SECONDS = 2.0
MIN_REFRESH_SECONDS = 0.5
MAX_REFRESH_SECONDS = 30.0
MIN_EXPIRES_AFTER_SEC = 3.0

# Receiver limits.
MAX_CHUNK_COUNT = 512
MIN_EXPIRES = 1.0
MAX_EXPIRES = 120.0
MAX_DATA_CHARS = 8 * 1024 * 1024
MAX_COMPRESSED_BYTES = 4 * 1024 * 1024
MAX_DECOMPRESSED_BYTES = 8 * 1024 * 1024
ASSEMBLY_PURGE_SECONDS = 10.0
CLEARED_TTL_SECONDS = 120.0
MAX_CLEARED_SESSIONS = 1024
MAX_ASSEMBLIES = 8
MAX_PART_FLIGHT_ID = 2**64 - 1

# URDF limits.
MAX_LINKS = 2048
MAX_ELEMENTS = 20000
MAX_VISUALS = 48
MAX_COLLISIONS = 48
NAME_RE = re.compile(r'\A[A-Za-z_][A-Za-z0-9_]{0,127}\Z')
SERVO_JOINTS = 'servo_joints'
SERVO_JOINT_NAME_RE = re.compile(r'\A[a-z_][a-z0-9_]{0,63}\Z')
"""A servo joint (extension) is named as its ``/ksp_vessel/joint_states`` entry."""

_FEED_CHARS = 65536
_INFLATE_PIECE = 1 << 20
_XML_SPACE = ' \t\r\n'
_NUMBER_RE = re.compile(r'\A[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z')

DROP_REASONS = (
    'remote_source',
    'bad_chunk',
    'cleared_session',
    'metadata_mismatch',
    'conflicting_chunk',
    'compressed_too_large',
    'sha256_mismatch',
    'bad_gzip',
    'decompressed_too_large',
    'bad_bundle',
    'bundle_mismatch',
    'bad_urdf',
    'evicted',
    'purged',
)
"""Every key ``ModelAssembler.drops`` can hold."""


# The URDF allowlist


@dataclass(frozen=True)
class Attr:
    """An allowed attribute: its value kind, whether it is required, enum features."""

    kind: str
    required: bool = True
    values: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class TagRule:
    """
    An allowed element.

    ``children`` maps child tags to (min, max) counts; ``by_type`` adds children for a
    given value of the element's ``type`` attribute. ``feature`` names the switch that
    must be on for the row to exist (None: always).
    """

    attributes: Mapping[str, Attr]
    children: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    by_type: Mapping[str, Mapping[str, tuple[int, int]]] = field(default_factory=dict)
    feature: str | None = None


_ONE = (1, 1)
_OPTIONAL = (0, 1)
_SERVO_CHILDREN = {'axis': _ONE, 'limit': _ONE}

URDF_ALLOWLIST: Mapping[str, TagRule] = {
    'robot': TagRule(
        {'name': Attr('name')}, {'link': (1, MAX_LINKS), 'joint': (0, MAX_LINKS - 1)}
    ),
    'link': TagRule(
        {'name': Attr('name')},
        {'inertial': _ONE, 'visual': (1, MAX_VISUALS), 'collision': (1, MAX_COLLISIONS)},
    ),
    'joint': TagRule(
        {
            'name': Attr('name'),
            'type': Attr(
                'enum', values={'fixed': None, 'revolute': SERVO_JOINTS,
                                'prismatic': SERVO_JOINTS}
            ),
        },
        {'parent': _ONE, 'child': _ONE, 'origin': _ONE},
        by_type={'revolute': _SERVO_CHILDREN, 'prismatic': _SERVO_CHILDREN},
    ),
    'parent': TagRule({'link': Attr('name')}),
    'child': TagRule({'link': Attr('name')}),
    'origin': TagRule({'xyz': Attr('vec3', False), 'rpy': Attr('vec3', False)}),
    'inertial': TagRule({}, {'origin': _OPTIONAL, 'mass': _ONE, 'inertia': _ONE}),
    'mass': TagRule({'value': Attr('positive')}),
    'inertia': TagRule({k: Attr('finite') for k in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')}),
    'visual': TagRule({}, {'origin': _OPTIONAL, 'geometry': _ONE}),
    'collision': TagRule({}, {'origin': _OPTIONAL, 'geometry': _ONE}),
    'geometry': TagRule({}, {'box': _OPTIONAL, 'cylinder': _OPTIONAL, 'sphere': _OPTIONAL}),
    'box': TagRule({'size': Attr('positive_vec3')}),
    'cylinder': TagRule({'radius': Attr('positive'), 'length': Attr('positive')}),
    'sphere': TagRule({'radius': Attr('positive')}),
    'axis': TagRule({'xyz': Attr('unit_axis')}, feature=SERVO_JOINTS),
    'limit': TagRule(
        {k: Attr('finite') for k in ('lower', 'upper', 'effort', 'velocity')},
        feature=SERVO_JOINTS,
    ),
}
"""The complete URDF allowlist: element -> attributes and child counts."""

_PRIMITIVES = ('box', 'cylinder', 'sphere')


def _bad_urdf(detail: str, field_name: str = 'urdf') -> ProtocolError:
    return ProtocolError('bad_urdf', detail, field_name)


def _bad_bundle(detail: str, field_name: str = '') -> ProtocolError:
    return ProtocolError('bad_bundle', detail, field_name)


def _numbers_attr(text: str, where: str) -> tuple[float, ...]:
    tokens = re.split(r'[ \t\r\n]+', text.strip(_XML_SPACE))
    values = []
    for token in tokens:
        if not _NUMBER_RE.match(token):
            raise _bad_urdf(f'not a number: {token[:32]!r}', where)
        value = float(token)
        if not math.isfinite(value):
            raise _bad_urdf('number is not finite', where)
        values.append(value)
    return tuple(values)


def _check_value(
    attr: Attr, value: str, features: frozenset[str], where: str
) -> str | float | tuple[float, ...]:
    kind = attr.kind
    if kind == 'name':
        if not NAME_RE.match(value):
            raise _bad_urdf('invalid name', where)
        return value
    if kind == 'enum':
        if value not in attr.values or (
            attr.values[value] is not None and attr.values[value] not in features
        ):
            raise _bad_urdf(f'value {value[:32]!r} not allowed', where)
        return value
    numbers = _numbers_attr(value, where)
    if kind in ('finite', 'positive'):
        if len(numbers) != 1:
            raise _bad_urdf('expected one number', where)
        if kind == 'positive' and numbers[0] <= 0.0:
            raise _bad_urdf('must be positive', where)
        return numbers[0]
    if len(numbers) != 3:
        raise _bad_urdf('expected three numbers', where)
    if kind == 'positive_vec3' and min(numbers) <= 0.0:
        raise _bad_urdf('must be positive', where)
    if kind == 'unit_axis' and math.sqrt(sum(v * v for v in numbers)) < 1e-9:
        raise _bad_urdf('axis has zero length', where)
    return numbers


def _effective_rules(features: frozenset[str]) -> dict[str, TagRule]:
    return {
        tag: rule
        for tag, rule in URDF_ALLOWLIST.items()
        if rule.feature is None or rule.feature in features
    }


@dataclass(frozen=True)
class UrdfJoint:
    """A joint of the proxy URDF, with its origin and (servo joints) axis and limit."""

    name: str
    type: str
    parent: str
    child: str
    xyz: tuple[float, float, float]
    rpy: tuple[float, float, float]
    axis: tuple[float, float, float] | None = None
    limit: tuple[float, float, float, float] | None = None


@dataclass(frozen=True)
class Urdf:
    """The validated structure of a proxy URDF."""

    robot_name: str
    root_link: str
    links: tuple[str, ...]
    joints: tuple[UrdfJoint, ...]


class _Frame:
    __slots__ = ('tag', 'rule', 'attrs', 'counts', 'elem', 'extra')

    def __init__(self, tag: str, rule: TagRule, attrs: dict, elem: ET.Element) -> None:
        self.tag = tag
        self.rule = rule
        self.attrs = attrs
        self.elem = elem
        self.counts: Counter[str] = Counter()
        self.extra = rule.by_type.get(attrs.get('type', ''), {})

    def allowed(self) -> Mapping[str, tuple[int, int]]:
        if not self.extra:
            return self.rule.children
        return {**self.rule.children, **self.extra}


def _reject_markup_declarations(urdf: str) -> None:
    position = urdf.find('<!')
    while position != -1:
        if not urdf.startswith('<!--', position):
            raise _bad_urdf('DTD, ENTITY and CDATA declarations are not allowed')
        end = urdf.find('-->', position + 4)
        if end == -1:
            raise _bad_urdf('unterminated comment')
        position = urdf.find('<!', end + 3)


def _has_text(value: str | None) -> bool:
    return value is not None and value.strip(_XML_SPACE) != ''


def validate_urdf(
    urdf: str, *, vessel_id: str | None = None, allow_servo_joints: bool = False
) -> Urdf:
    """
    Validate a proxy URDF against the allowlist and return its structure.

    Checks, in order: no DTD/ENTITY/CDATA (before any parsing), no processing
    instructions or namespaces (a leading ``<?xml ...?>`` declaration and comments are
    fine), at most 20000 elements, only allowlisted tags and attributes with valid values,
    child counts, no text content; then names (``pylon_<vid8>_active_vessel``,
    ``pylon_<vid8>_link_NNNN``, ``pylon_<vid8>_joint_NNNN``, unique), at most 2048 links,
    exactly one primitive per geometry, servo ``limit`` with ``lower <= upper``, and that
    the joints form a single tree over all links. ``vid8`` is the first 8 characters of
    ``vessel_id`` when given, otherwise taken from the robot name.
    """
    if not isinstance(urdf, str):
        raise _bad_urdf('expected a string')
    if len(urdf) > MAX_DECOMPRESSED_BYTES:
        raise _bad_urdf('URDF text is too long')
    features = frozenset({SERVO_JOINTS} if allow_servo_joints else ())
    rules = _effective_rules(features)
    _reject_markup_declarations(urdf)

    parser = ET.XMLPullParser(events=('start', 'end', 'pi', 'start-ns'))
    stack: list[_Frame] = []
    elements = 0
    robot: dict | None = None
    links: list[str] = []
    joints: list[dict] = []
    finished = False

    def handle(event: str, item: object) -> None:
        nonlocal elements, robot, finished
        if event == 'pi':
            raise _bad_urdf('processing instructions are not allowed')
        if event == 'start-ns':
            raise _bad_urdf('XML namespaces are not allowed')
        elem = item
        if not isinstance(elem, ET.Element):
            raise _bad_urdf('unexpected parser event')
        if event == 'start':
            elements += 1
            if elements > MAX_ELEMENTS:
                raise _bad_urdf(f'more than {MAX_ELEMENTS} elements')
            tag = elem.tag
            rule = rules.get(tag) if isinstance(tag, str) else None
            if rule is None:
                raise _bad_urdf(f'element <{str(tag)[:40]}> is not allowed')
            if stack:
                parent = stack[-1]
                limits = parent.allowed().get(tag)
                if limits is None:
                    raise _bad_urdf(f'<{tag}> is not allowed inside <{parent.tag}>')
                parent.counts[tag] += 1
                if parent.counts[tag] > limits[1]:
                    raise _bad_urdf(f'too many <{tag}> in <{parent.tag}>')
            elif tag != 'robot':
                raise _bad_urdf('the root element must be <robot>')
            for name in elem.attrib:
                if name not in rule.attributes:
                    raise _bad_urdf(f'attribute {str(name)[:40]!r} not allowed on <{tag}>')
            attrs = {}
            for name, attr in rule.attributes.items():
                value = elem.attrib.get(name)
                if value is None:
                    if attr.required:
                        raise _bad_urdf(f'<{tag}> needs attribute {name!r}')
                    continue
                attrs[name] = _check_value(attr, value, features, f'{tag}.{name}')
            frame = _Frame(tag, rule, attrs, elem)
            stack.append(frame)
            if tag == 'robot':
                robot = attrs
            elif tag == 'link' and len(stack) == 2:
                links.append(attrs['name'])
            elif tag == 'joint':
                joints.append({'name': attrs['name'], 'type': attrs['type']})
            elif len(stack) >= 2 and stack[-2].tag == 'joint':
                joint = joints[-1]
                if tag in ('parent', 'child'):
                    joint[tag] = attrs['link']
                elif tag == 'origin':
                    joint['xyz'] = attrs.get('xyz', (0.0, 0.0, 0.0))
                    joint['rpy'] = attrs.get('rpy', (0.0, 0.0, 0.0))
                elif tag == 'axis':
                    joint['axis'] = attrs['xyz']
                elif tag == 'limit':
                    lower, upper = attrs['lower'], attrs['upper']
                    if lower > upper:
                        raise _bad_urdf('limit lower > upper', 'limit')
                    joint['limit'] = (lower, upper, attrs['effort'], attrs['velocity'])
            return
        frame = stack.pop()
        if _has_text(elem.text) or any(_has_text(child.tail) for child in elem):
            raise _bad_urdf(f'text content in <{frame.tag}>')
        for child_tag, (low, _high) in frame.allowed().items():
            if frame.counts[child_tag] < low:
                raise _bad_urdf(f'<{frame.tag}> needs at least {low} <{child_tag}>')
        if frame.tag == 'geometry' and sum(frame.counts[p] for p in _PRIMITIVES) != 1:
            raise _bad_urdf('a geometry needs exactly one primitive', 'geometry')
        del elem[:]
        if not stack:
            finished = True

    try:
        for start in range(0, len(urdf), _FEED_CHARS):
            parser.feed(urdf[start:start + _FEED_CHARS])
            for event, item in parser.read_events():
                handle(event, item)
        parser.close()
        for event, item in parser.read_events():
            handle(event, item)
    except ET.ParseError as error:
        raise _bad_urdf(f'XML parse error: {error}') from None
    except ProtocolError:
        raise
    except (RecursionError, ValueError, TypeError) as error:
        raise _bad_urdf(f'XML error: {type(error).__name__}') from None
    if not finished or robot is None:
        raise _bad_urdf('incomplete document')
    return _check_structure(robot['name'], links, joints, vessel_id)


def _check_structure(
    robot_name: str, links: list[str], joints: list[dict], vessel_id: str | None
) -> Urdf:
    if vessel_id is not None:
        if not isinstance(vessel_id, str) or not HEX32_RE.match(vessel_id):
            raise _bad_urdf('vessel id must be 32 lowercase hex digits', 'vesselId')
        vid8 = vessel_id[:8]
        if robot_name != f'pylon_{vid8}_active_vessel':
            raise _bad_urdf(f'robot must be named pylon_{vid8}_active_vessel', 'robot.name')
    else:
        match = re.fullmatch(r'pylon_([0-9a-f]{8})_active_vessel', robot_name)
        if match is None:
            raise _bad_urdf('robot must be named pylon_<vid8>_active_vessel', 'robot.name')
        vid8 = match.group(1)
    link_re = re.compile(rf'\Apylon_{vid8}_link_[0-9]{{4}}\Z')
    joint_re = re.compile(rf'\Apylon_{vid8}_joint_[0-9]{{4}}\Z')
    if not 1 <= len(links) <= MAX_LINKS:
        raise _bad_urdf(f'expected 1..{MAX_LINKS} links', 'link')
    link_set = set(links)
    if len(link_set) != len(links):
        raise _bad_urdf('duplicate link name', 'link.name')
    for name in links:
        if not link_re.match(name):
            raise _bad_urdf(f'link name {name!r} does not follow pylon_{vid8}_link_NNNN')
    joint_names = set()
    children: dict[str, list[str]] = {name: [] for name in links}
    has_parent: set[str] = set()
    result = []
    for joint in joints:
        name = joint['name']
        servo = joint['type'] in ('revolute', 'prismatic')
        if servo and not (joint_re.match(name) or SERVO_JOINT_NAME_RE.match(name)):
            raise _bad_urdf(f'servo joint name {name!r} is neither pylon_{vid8}_joint_NNNN '
                            'nor a joint_states name ([a-z_][a-z0-9_]{0,63})')
        if not servo and not joint_re.match(name):
            raise _bad_urdf(f'joint name {name!r} does not follow pylon_{vid8}_joint_NNNN')
        if name in joint_names:
            raise _bad_urdf('duplicate joint name', 'joint.name')
        joint_names.add(name)
        parent, child = joint['parent'], joint['child']
        if parent not in link_set or child not in link_set:
            raise _bad_urdf(f'joint {name} references an unknown link', 'joint')
        if parent == child:
            raise _bad_urdf(f'joint {name} connects a link to itself', 'joint')
        if child in has_parent:
            raise _bad_urdf(f'link {child} has two parent joints', 'joint')
        has_parent.add(child)
        children[parent].append(child)
        result.append(UrdfJoint(name, joint['type'], parent, child, joint['xyz'], joint['rpy'],
                                joint.get('axis'), joint.get('limit')))
    roots = [name for name in links if name not in has_parent]
    if len(roots) != 1:
        raise _bad_urdf(f'expected exactly one root link, found {len(roots)}', 'joint')
    seen = {roots[0]}
    todo = [roots[0]]
    while todo:
        for child in children[todo.pop()]:
            if child not in seen:
                seen.add(child)
                todo.append(child)
    if len(seen) != len(links):
        raise _bad_urdf('links do not form a single connected tree', 'joint')
    return Urdf(robot_name, roots[0], tuple(links), tuple(result))


# Bundle


def _finite(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
    )


def _floats(value: object, size: int, field_name: str) -> list[float]:
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)) or len(value) != size:
        raise _bad_bundle(f'expected {size} numbers', field_name)
    if not all(_finite(v) for v in value):
        raise _bad_bundle('expected finite numbers', field_name)
    return [float(v) for v in value]


def model_id_for(urdf: str) -> str:
    """Return the model id of a URDF: the hex SHA-256 of its UTF-8 encoding."""
    try:
        return hashlib.sha256(urdf.encode('utf-8')).hexdigest()
    except (UnicodeEncodeError, AttributeError):
        raise _bad_bundle('URDF is not encodable as UTF-8', 'urdf') from None


def validate_bundle(
    bundle: Mapping[str, object],
    *,
    session_id: str | None = None,
    model_id: str | None = None,
    allow_servo_joints: bool = False,
) -> dict:
    """
    Validate a proxy bundle; return a normalised copy in wire order.

    ``session_id`` and ``model_id``, when given, are the chunk's and must match. The
    copy has float vectors, a normalised ``baseToRootRotation`` and ``partFrames`` as a
    list of ``{partFlightId, frame}``; unknown extra keys are dropped. Raise
    ProtocolError (``bad_bundle``, ``bundle_mismatch`` or ``bad_urdf``).
    """
    return _check_bundle(bundle, session_id, model_id, allow_servo_joints)[0]


def _check_bundle(
    bundle: Mapping[str, object],
    session_id: str | None,
    model_id: str | None,
    allow_servo_joints: bool,
) -> tuple[dict, Urdf]:
    if not isinstance(bundle, Mapping):
        raise _bad_bundle('expected a JSON object')
    if bundle.get('type') != BUNDLE_TYPE:
        raise _bad_bundle(f'type must be {BUNDLE_TYPE}', 'type')
    version = bundle.get('version')
    if type(version) is not int or version != 1:
        raise _bad_bundle('version must be the integer 1', 'version')
    sid = bundle.get('sessionId')
    if not isinstance(sid, str) or not HEX32_RE.match(sid):
        raise _bad_bundle('expected 32 lowercase hex digits', 'sessionId')
    if session_id is not None and sid != session_id:
        raise ProtocolError('bundle_mismatch', 'differs from the chunk', 'sessionId')
    vessel_id = bundle.get('vesselId')
    if not isinstance(vessel_id, str) or not HEX32_RE.match(vessel_id):
        raise _bad_bundle('expected 32 lowercase hex digits', 'vesselId')
    mid = bundle.get('modelId')
    if not isinstance(mid, str) or not HEX64_RE.match(mid):
        raise _bad_bundle('expected 64 lowercase hex digits', 'modelId')
    if model_id is not None and mid != model_id:
        raise ProtocolError('bundle_mismatch', 'differs from the chunk', 'modelId')
    if bundle.get('geometryPolicy') != GEOMETRY_POLICY:
        raise _bad_bundle(f'must be {GEOMETRY_POLICY}', 'geometryPolicy')
    if bundle.get('persistencePolicy') != PERSISTENCE_POLICY:
        raise _bad_bundle(f'must be {PERSISTENCE_POLICY}', 'persistencePolicy')
    urdf = bundle.get('urdf')
    if not isinstance(urdf, str):
        raise _bad_bundle('expected a string', 'urdf')
    if model_id_for(urdf) != mid:
        raise ProtocolError('bundle_mismatch', 'modelId is not sha256(urdf)', 'modelId')
    position = _floats(bundle.get('baseToRootPosition'), 3, 'baseToRootPosition')
    rotation = _floats(bundle.get('baseToRootRotation'), 4, 'baseToRootRotation')
    try:
        rotation = list(quat_normalize(rotation))
    except ProtocolError:
        raise _bad_bundle('quaternion norm is below 1e-9', 'baseToRootRotation') from None
    structure = validate_urdf(urdf, vessel_id=vessel_id, allow_servo_joints=allow_servo_joints)
    root = bundle.get('rootFrame')
    if root != structure.root_link:
        raise ProtocolError('bundle_mismatch', 'rootFrame is not the URDF root link',
                            'rootFrame')
    part_frames = bundle.get('partFrames')
    if not isinstance(part_frames, Sequence) or isinstance(part_frames, (str, bytes)):
        raise _bad_bundle('expected an array', 'partFrames')
    if len(part_frames) != len(structure.links):
        raise _bad_bundle('partFrames must map every link exactly once', 'partFrames')
    frames_out = []
    seen_ids: set[int] = set()
    seen_frames: set[str] = set()
    links = set(structure.links)
    for entry in part_frames:
        if not isinstance(entry, Mapping):
            raise _bad_bundle('expected objects', 'partFrames')
        part_id = entry.get('partFlightId')
        frame = entry.get('frame')
        if type(part_id) is not int or not 0 <= part_id <= MAX_PART_FLIGHT_ID:
            raise _bad_bundle('expected an integer 0..2^64-1', 'partFrames.partFlightId')
        if not isinstance(frame, str) or frame not in links:
            raise _bad_bundle('frame is not a URDF link', 'partFrames.frame')
        if frame in seen_frames or part_id in seen_ids:
            raise _bad_bundle('duplicate link or part', 'partFrames')
        seen_frames.add(frame)
        seen_ids.add(part_id)
        frames_out.append({'partFlightId': part_id, 'frame': frame})
    checked = {
        'type': BUNDLE_TYPE,
        'version': 1,
        'sessionId': sid,
        'vesselId': vessel_id,
        'modelId': mid,
        'geometryPolicy': GEOMETRY_POLICY,
        'persistencePolicy': PERSISTENCE_POLICY,
        'rootFrame': structure.root_link,
        'baseToRootPosition': position,
        'baseToRootRotation': rotation,
        'urdf': urdf,
        'partFrames': frames_out,
    }
    return checked, structure


def build_bundle(
    *,
    session_id: str,
    vessel_id: str,
    urdf: str,
    base_to_root_position: Sequence[float],
    base_to_root_rotation: Sequence[float],
    part_frames: Mapping[int, str] | Iterable[tuple[int, str]],
    root_frame: str | None = None,
    allow_servo_joints: bool = False,
) -> dict:
    """
    Build a validated ``pylon_active_vessel_proxy`` bundle in wire order.

    ``modelId`` is computed from the URDF; ``root_frame`` defaults to the URDF root link.
    ``part_frames`` maps part flight ids to link names. Raise ProtocolError if the result
    would not be accepted by a receiver.
    """
    pairs = part_frames.items() if isinstance(part_frames, Mapping) else part_frames
    if root_frame is None:
        root_frame = validate_urdf(
            urdf, vessel_id=vessel_id, allow_servo_joints=allow_servo_joints
        ).root_link
    bundle = {
        'type': BUNDLE_TYPE,
        'version': 1,
        'sessionId': session_id,
        'vesselId': vessel_id,
        'modelId': model_id_for(urdf),
        'geometryPolicy': GEOMETRY_POLICY,
        'persistencePolicy': PERSISTENCE_POLICY,
        'rootFrame': root_frame,
        'baseToRootPosition': list(vec3(base_to_root_position, 'baseToRootPosition')),
        'baseToRootRotation': list(quat(base_to_root_rotation, 'baseToRootRotation')),
        'urdf': urdf,
        'partFrames': [{'partFlightId': pid, 'frame': frame} for pid, frame in pairs],
    }
    validate_bundle(bundle, session_id=session_id, allow_servo_joints=allow_servo_joints)
    return bundle


@dataclass(frozen=True)
class ProxyPart:
    """One part of a proxy model: a box with a mass, placed in its parent part's frame."""

    parent: int | None
    size: tuple[float, float, float]
    mass: float
    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)


def _fmt(values: Iterable[float]) -> str:
    return ' '.join(repr(float(v)) for v in values)


def build_proxy_urdf(vessel_id: str, parts: Sequence[ProxyPart]) -> str:
    """
    Return a proxy URDF for ``parts`` (part 0 is the root, parents precede children).

    Link ``NNNN`` is part ``NNNN``; joint ``NNNN`` attaches it to its parent with the
    part's ``xyz``/``rpy`` origin. Each link has one box visual and collision and the
    box's inertia. The output passes ``validate_urdf``.
    """
    if not isinstance(vessel_id, str) or not HEX32_RE.match(vessel_id):
        raise _bad_urdf('vessel id must be 32 lowercase hex digits', 'vesselId')
    if not 1 <= len(parts) <= MAX_LINKS:
        raise _bad_urdf(f'expected 1..{MAX_LINKS} parts', 'parts')
    vid8 = vessel_id[:8]
    lines = [
        '<?xml version="1.0"?>',
        '<!-- primitive proxy of the active vessel -->',
        f'<robot name="pylon_{vid8}_active_vessel">',
    ]
    for index, part in enumerate(parts):
        if (index == 0) != (part.parent is None) or (
            part.parent is not None and not 0 <= part.parent < index
        ):
            raise _bad_urdf('part 0 must be the root and parents must come first', 'parts')
        sx, sy, sz = (float(v) for v in part.size)
        mass = float(part.mass)
        inertia = (
            mass * (sy * sy + sz * sz) / 12.0,
            mass * (sx * sx + sz * sz) / 12.0,
            mass * (sx * sx + sy * sy) / 12.0,
        )
        box = f'<geometry><box size="{_fmt((sx, sy, sz))}"/></geometry>'
        lines += [
            f'  <link name="pylon_{vid8}_link_{index:04d}">',
            '    <inertial>',
            '      <origin xyz="0 0 0" rpy="0 0 0"/>',
            f'      <mass value="{mass!r}"/>',
            f'      <inertia ixx="{inertia[0]!r}" ixy="0" ixz="0" iyy="{inertia[1]!r}" '
            f'iyz="0" izz="{inertia[2]!r}"/>',
            '    </inertial>',
            f'    <visual><origin xyz="0 0 0" rpy="0 0 0"/>{box}</visual>',
            f'    <collision><origin xyz="0 0 0" rpy="0 0 0"/>{box}</collision>',
            '  </link>',
        ]
    for index, part in enumerate(parts):
        if part.parent is None:
            continue
        lines += [
            f'  <joint name="pylon_{vid8}_joint_{index:04d}" type="fixed">',
            f'    <parent link="pylon_{vid8}_link_{part.parent:04d}"/>',
            f'    <child link="pylon_{vid8}_link_{index:04d}"/>',
            f'    <origin xyz="{_fmt(part.xyz)}" rpy="{_fmt(part.rpy)}"/>',
            '  </joint>',
        ]
    lines.append('</robot>')
    text = '\n'.join(lines) + '\n'
    validate_urdf(text, vessel_id=vessel_id)
    return text


# Chunking (sender side)


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def effective_chunk_bytes(chunk_bytes: int, max_datagram_bytes: int) -> int:
    """
    Return the compressed bytes per chunk the sender uses.

    ``chunk_bytes`` is clamped to 128..48000, then capped so that a chunk's base64 text
    plus 1024 bytes of other fields fits ``max_datagram_bytes``.
    """
    if type(chunk_bytes) is not int or type(max_datagram_bytes) is not int:
        raise ProtocolError('bad_limit', 'chunk_bytes and max_datagram_bytes must be ints')
    cap = (max_datagram_bytes - DATAGRAM_OVERHEAD_BYTES) * 3 // 4
    size = min(int(_clamp(chunk_bytes, MIN_CHUNK_BYTES, MAX_CHUNK_BYTES)), cap)
    if size < 1:
        raise ProtocolError('bad_limit', 'max_datagram_bytes leaves no room for data')
    return size


def expires_after_for(refresh_seconds: float) -> float:
    """Return ``expiresAfterSec`` for a refresh period (clamped to 0.5..30 s)."""
    refresh = float(refresh_seconds) if _finite(refresh_seconds) else DEFAULT_REFRESH_SECONDS
    refresh = _clamp(refresh, MIN_REFRESH_SECONDS, MAX_REFRESH_SECONDS)
    return max(MIN_EXPIRES_AFTER_SEC, refresh * 3.0)


def encode_bundle(bundle: Mapping[str, object]) -> bytes:
    """Serialise a bundle to compact UTF-8 JSON and gzip it (deterministic header)."""
    try:
        text = json.dumps(bundle, separators=(',', ':'), ensure_ascii=False, allow_nan=False)
        raw = text.encode('utf-8')
    except (TypeError, ValueError) as error:
        raise _bad_bundle(f'not serialisable: {error}') from None
    return gzip.compress(raw, mtime=0)


def chunk_model(
    bundle: Mapping[str, object],
    *,
    session_id: str,
    sent_at_ut: float,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_chunks: int = DEFAULT_MAX_CHUNKS,
    max_datagram_bytes: int = DEFAULT_MAX_DATAGRAM_BYTES,
    refresh_seconds: float = DEFAULT_REFRESH_SECONDS,
    allow_servo_joints: bool = False,
) -> list[dict]:
    """
    Compress a bundle and split it into ``pylon_vessel_urdf_chunk`` payloads.

    Payloads hold the chunk fields in wire order without ``type``, ``version`` or the
    runtime envelope. The bundle is validated first. ``max_chunks`` is clamped to 1..512;
    raise ProtocolError(``too_many_chunks``) when the model needs more (it is not sent).
    """
    validated = validate_bundle(
        bundle, session_id=session_id, allow_servo_joints=allow_servo_joints
    )
    if not _finite(sent_at_ut):
        raise ProtocolError('bad_field', 'expected a finite number', 'sentAtUt')
    if type(max_chunks) is not int:
        raise ProtocolError('bad_limit', 'max_chunks must be an int', 'max_chunks')
    piece = effective_chunk_bytes(chunk_bytes, max_datagram_bytes)
    limit = int(_clamp(max_chunks, 1, MAX_MAX_CHUNKS))
    compressed = encode_bundle(bundle)
    count = (len(compressed) + piece - 1) // piece
    if count > limit:
        raise ProtocolError('too_many_chunks', f'{count} chunks exceed {limit}', 'chunkCount')
    digest = hashlib.sha256(compressed).hexdigest()
    expires = expires_after_for(refresh_seconds)
    return [
        {
            'sessionId': session_id,
            'modelId': validated['modelId'],
            'chunkIndex': index,
            'chunkCount': count,
            'encoding': ENCODING,
            'sha256': digest,
            'expiresAfterSec': expires,
            'sentAtUt': float(sent_at_ut),
            'data': base64.b64encode(compressed[index * piece:(index + 1) * piece]).decode(),
        }
        for index in range(count)
    ]


def clear_payload(session_id: str) -> dict:
    """Return the ``pylon_vessel_urdf_clear`` payload for a model session."""
    if not isinstance(session_id, str) or not HEX32_RE.match(session_id):
        raise ProtocolError('bad_field', 'expected 32 lowercase hex digits', 'sessionId')
    return {'sessionId': session_id}


# Reassembly (receiver side)


def is_loopback_source(address: object) -> bool:
    """
    Return True for an IPv4 loopback address or an IPv4-mapped IPv6 loopback.

    ``address`` is a host string or a socket address tuple. ``::1`` also counts as
    loopback. Anything unparsable is not loopback.
    """
    host = address[0] if isinstance(address, tuple) and address else address
    if not isinstance(host, str) or len(host) > 128:
        return False
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        mapped = ip.ipv4_mapped
        return mapped.is_loopback if mapped is not None else ip == ipaddress.IPv6Address('::1')
    return ip.is_loopback


def gunzip_bounded(data: bytes, limit: int) -> bytes:
    """
    Decompress one gzip member, never producing more than ``limit + 1`` bytes.

    Raise ProtocolError ``decompressed_too_large`` past ``limit``, ``bad_gzip`` for a
    corrupt, truncated or trailing-garbage stream.
    """
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    parts: list[bytes] = []
    total = 0
    pending = data
    try:
        while True:
            piece = inflater.decompress(pending, min(_INFLATE_PIECE, limit + 1 - total))
            total += len(piece)
            if total > limit:
                raise ProtocolError('decompressed_too_large', f'more than {limit} bytes')
            parts.append(piece)
            pending = inflater.unconsumed_tail
            if inflater.eof or (not pending and not piece):
                break
    except zlib.error as error:
        raise ProtocolError('bad_gzip', str(error)) from None
    if not inflater.eof:
        raise ProtocolError('bad_gzip', 'truncated gzip stream')
    if inflater.unused_data:
        raise ProtocolError('bad_gzip', 'data after the gzip stream')
    return b''.join(parts)


@dataclass(frozen=True)
class Model:
    """A complete, validated proxy model."""

    session_id: str
    model_id: str
    vessel_id: str
    root_frame: str
    base_to_root_position: tuple[float, float, float]
    base_to_root_rotation: tuple[float, float, float, float]
    urdf: str
    part_frames: tuple[tuple[int, str], ...]
    expires_after_sec: float
    sha256: str
    received_at: float
    structure: Urdf

    def frame_for_part(self, part_flight_id: int) -> str | None:
        """Return the link name of a part, or None."""
        for part, frame in self.part_frames:
            if part == part_flight_id:
                return frame
        return None


class _Assembly:
    __slots__ = ('count', 'sha256', 'expires', 'parts', 'size', 'touched')

    def __init__(self, count: int, sha256: str, expires: float, now: float) -> None:
        self.count = count
        self.sha256 = sha256
        self.expires = expires
        self.parts: dict[int, bytes] = {}
        self.size = 0
        self.touched = now


def _parse_chunk(chunk: Mapping[str, object]) -> tuple[str, str, int, int, str, float, bytes]:
    def bad(detail: str, field_name: str) -> ProtocolError:
        return ProtocolError('bad_chunk', detail, field_name)

    if not isinstance(chunk, Mapping):
        raise bad('expected a JSON object', '')
    session = chunk.get('sessionId')
    if not isinstance(session, str) or not HEX32_RE.match(session):
        raise bad('expected 32 lowercase hex digits', 'sessionId')
    model = chunk.get('modelId')
    if not isinstance(model, str) or not HEX64_RE.match(model):
        raise bad('expected 64 lowercase hex digits', 'modelId')
    count = chunk.get('chunkCount')
    if type(count) is not int or not 1 <= count <= MAX_CHUNK_COUNT:
        raise bad(f'expected an integer 1..{MAX_CHUNK_COUNT}', 'chunkCount')
    index = chunk.get('chunkIndex')
    if type(index) is not int or not 0 <= index < count:
        raise bad('expected an integer 0..chunkCount-1', 'chunkIndex')
    if chunk.get('encoding') != ENCODING:
        raise bad(f'expected {ENCODING}', 'encoding')
    digest = chunk.get('sha256')
    if not isinstance(digest, str) or not HEX64_RE.match(digest):
        raise bad('expected 64 lowercase hex digits', 'sha256')
    expires = chunk.get('expiresAfterSec')
    if not _finite(expires) or not MIN_EXPIRES <= expires <= MAX_EXPIRES:
        raise bad(f'expected {MIN_EXPIRES:g}..{MAX_EXPIRES:g}', 'expiresAfterSec')
    try:
        data = decode_base64_strict(chunk.get('data'), 'data', MAX_DATA_CHARS)
    except ProtocolError as error:
        raise bad(error.detail, 'data') from None
    if not data:
        raise bad('empty chunk', 'data')
    return session, model, index, count, digest, float(expires), data


class ModelAssembler:
    """
    Reassemble and validate proxy models under the receiver rules.

    ``add`` returns a new ``Model`` when a chunk completes one, None while incomplete, for
    an identical duplicate chunk, or when the completed model only refreshes the current
    one (same vessel and model id while still current). Every drop raises ProtocolError
    after being counted in ``drops``; purges and evictions are counted silently.

    Memory bounds: ``max_assemblies`` concurrent assemblies (least recently touched
    evicted), each at most 4 MiB compressed; ``max_cleared`` remembered cleared sessions.
    """

    def __init__(
        self,
        *,
        allow_remote: bool = False,
        allow_servo_joints: bool = False,
        purge_after: float = ASSEMBLY_PURGE_SECONDS,
        cleared_ttl: float = CLEARED_TTL_SECONDS,
        max_cleared: int = MAX_CLEARED_SESSIONS,
        max_assemblies: int = MAX_ASSEMBLIES,
        max_compressed_bytes: int = MAX_COMPRESSED_BYTES,
        max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES,
    ) -> None:
        for name, value in (('max_cleared', max_cleared), ('max_assemblies', max_assemblies),
                            ('max_compressed_bytes', max_compressed_bytes),
                            ('max_decompressed_bytes', max_decompressed_bytes)):
            if type(value) is not int or value < 1:
                raise ProtocolError('bad_limit', 'must be an int >= 1', name)
        self.allow_remote = bool(allow_remote)
        self.allow_servo_joints = bool(allow_servo_joints)
        self.purge_after = float(purge_after)
        self.cleared_ttl = float(cleared_ttl)
        self.max_cleared = max_cleared
        self.max_assemblies = max_assemblies
        self.max_compressed_bytes = max_compressed_bytes
        self.max_decompressed_bytes = max_decompressed_bytes
        self._assemblies: OrderedDict[tuple[str, str], _Assembly] = OrderedDict()
        self._cleared: OrderedDict[str, float] = OrderedDict()
        self._model: Model | None = None
        self.drops: Counter[str] = Counter()
        self.duplicates = 0
        self.refreshes = 0
        self.completed = 0

    @property
    def model(self) -> Model | None:
        """Return the active model (current or not), or None."""
        return self._model

    @property
    def pending_count(self) -> int:
        """Return the number of assemblies in progress."""
        return len(self._assemblies)

    def is_current(self, now: float) -> bool:
        """Return True while the active model's last reception is within its expiry."""
        model = self._model
        return model is not None and now - model.received_at < model.expires_after_sec

    def current(self, now: float) -> Model | None:
        """Return the active model while it is current, else None."""
        return self._model if self.is_current(now) else None

    def is_cleared(self, session_id: str, now: float) -> bool:
        """Return True when chunks of ``session_id`` are being ignored after a clear."""
        cleared_at = self._cleared.get(session_id)
        return cleared_at is not None and now - cleared_at <= self.cleared_ttl

    def expire(self, now: float) -> int:
        """Purge assemblies untouched for ``purge_after`` s and old clears; return purges."""
        stale = [k for k, a in self._assemblies.items() if now - a.touched > self.purge_after]
        for key in stale:
            del self._assemblies[key]
        if stale:
            self.drops['purged'] += len(stale)
        old = [s for s, t in self._cleared.items() if now - t > self.cleared_ttl]
        for session in old:
            del self._cleared[session]
        return len(stale)

    def reset(self) -> None:
        """Drop assemblies in progress and the active model (on a session change)."""
        self._assemblies.clear()
        self._model = None

    def clear(self, session_id: str, now: float) -> bool:
        """
        Apply ``pylon_vessel_urdf_clear``: ignore the session's chunks from now on.

        Return True when the active model belonged to that session and was removed.
        """
        if not isinstance(session_id, str) or not HEX32_RE.match(session_id):
            raise ProtocolError('bad_field', 'expected 32 lowercase hex digits', 'sessionId')
        self.expire(now)
        self._cleared.pop(session_id, None)
        self._cleared[session_id] = now
        while len(self._cleared) > self.max_cleared:
            self._cleared.popitem(last=False)
        for key in [k for k in self._assemblies if k[0] == session_id]:
            del self._assemblies[key]
        if self._model is not None and self._model.session_id == session_id:
            self._model = None
            return True
        return False

    def _drop(
        self, reason: str, detail: str, field_name: str = '', key: tuple | None = None
    ) -> ProtocolError:
        if key is not None:
            self._assemblies.pop(key, None)
        self.drops[reason if reason in DROP_REASONS else 'bad_bundle'] += 1
        return ProtocolError(reason, detail, field_name)

    def add(self, chunk: Mapping[str, object], now: float, source_address: object) -> Model | None:
        """Add one chunk received at monotonic ``now`` from ``source_address``."""
        self.expire(now)
        if not self.allow_remote and not is_loopback_source(source_address):
            raise self._drop('remote_source', 'models are accepted from loopback only')
        try:
            session, model_id, index, count, digest, expires, data = _parse_chunk(chunk)
        except ProtocolError as error:
            raise self._drop('bad_chunk', error.detail, error.field) from None
        if self.is_cleared(session, now):
            raise self._drop('cleared_session', 'model session was cleared', 'sessionId')
        key = (session, model_id)
        assembly = self._assemblies.get(key)
        if assembly is None:
            while len(self._assemblies) >= self.max_assemblies:
                self._assemblies.popitem(last=False)
                self.drops['evicted'] += 1
            assembly = _Assembly(count, digest, expires, now)
            self._assemblies[key] = assembly
        elif assembly.count != count or assembly.sha256 != digest:
            raise self._drop('metadata_mismatch', 'chunkCount or sha256 changed', '', key)
        self._assemblies.move_to_end(key)
        assembly.touched = now
        assembly.expires = expires
        held = assembly.parts.get(index)
        if held is not None:
            if held == data:
                self.duplicates += 1
                return None
            raise self._drop('conflicting_chunk', 'different data for a chunk index',
                             'chunkIndex', key)
        if assembly.size + len(data) > self.max_compressed_bytes:
            raise self._drop('compressed_too_large', 'compressed model too large', 'data', key)
        assembly.parts[index] = data
        assembly.size += len(data)
        if len(assembly.parts) < assembly.count:
            return None
        del self._assemblies[key]
        return self._complete(session, model_id, assembly, now)

    def _complete(
        self, session: str, model_id: str, assembly: _Assembly, now: float
    ) -> Model | None:
        compressed = b''.join(assembly.parts[i] for i in range(assembly.count))
        if hashlib.sha256(compressed).hexdigest() != assembly.sha256:
            raise self._drop('sha256_mismatch', 'compressed digest differs', 'sha256')
        active = self._model
        if (
            active is not None
            and self.is_current(now)
            and active.sha256 == assembly.sha256
            and active.session_id == session
            and active.model_id == model_id
        ):
            return self._refresh(active, session, assembly.expires, now)
        try:
            raw = gunzip_bounded(compressed, self.max_decompressed_bytes)
            try:
                bundle = json.loads(raw.decode('utf-8'))
            except (UnicodeDecodeError, ValueError, RecursionError) as error:
                raise _bad_bundle(f'not UTF-8 JSON: {type(error).__name__}') from None
            checked, structure = _check_bundle(bundle, session, model_id,
                                               self.allow_servo_joints)
        except ProtocolError as error:
            raise self._drop(error.reason, error.detail, error.field) from None
        if (
            active is not None
            and self.is_current(now)
            and active.vessel_id == checked['vesselId']
            and active.model_id == model_id
        ):
            return self._refresh(active, session, assembly.expires, now)
        self.completed += 1
        self._model = Model(
            session_id=session,
            model_id=model_id,
            vessel_id=checked['vesselId'],
            root_frame=checked['rootFrame'],
            base_to_root_position=tuple(checked['baseToRootPosition']),
            base_to_root_rotation=tuple(checked['baseToRootRotation']),
            urdf=checked['urdf'],
            part_frames=tuple((p['partFlightId'], p['frame']) for p in checked['partFrames']),
            expires_after_sec=assembly.expires,
            sha256=assembly.sha256,
            received_at=now,
            structure=structure,
        )
        return self._model

    def _refresh(self, active: Model, session: str, expires: float, now: float) -> None:
        self.refreshes += 1
        self._model = dataclasses.replace(
            active, session_id=session, expires_after_sec=expires, received_at=now
        )
