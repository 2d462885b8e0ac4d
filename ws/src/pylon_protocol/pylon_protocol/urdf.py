"""The proxy URDF of the active vessel: its allowlist, its validator and a box builder.

The URDF inside a ``pylon_active_vessel_proxy`` bundle is a primitive-only proxy, checked
against one allowlist table (``URDF_ALLOWLIST``). Rows marked with a feature exist only
when that feature is enabled; ``allow_servo_joints`` enables revolute and prismatic joints
with one ``axis`` and one ``limit`` each, named like the joint_states entry of their servo
(a sanitised motor name, ``[a-z_][a-z0-9_]{0,63}``) or ``pylon_<vid8>_joint_NNNN``.
Everything not in the table is rejected; fixed joints keep the ``pylon_<vid8>_joint_NNNN``
names. ``vid8`` is the first 8 hex digits of the vessel id (``robot_name``, ``link_name``
and ``joint_name`` spell the names).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
import math
import re
import xml.etree.ElementTree as ET  # noqa: N817

from pylon_protocol.errors import ProtocolError
from pylon_protocol.names import HEX32_RE
from pylon_protocol.packets import MAX_MODEL_DECOMPRESSED_BYTES, MOTOR_JOINT_TYPES

MAX_LINKS = 2048
MAX_ELEMENTS = 20000
MAX_VISUALS = 48
MAX_COLLISIONS = 48
NAME_RE = re.compile(r'\A[A-Za-z_][A-Za-z0-9_]{0,127}\Z')
SERVO_JOINTS = 'servo_joints'
SERVO_JOINT_NAME_RE = re.compile(r'\A[a-z_][a-z0-9_]{0,63}\Z')
"""A servo joint (extension) is named as its ``/ksp_vessel/joint_states`` entry."""

_FEED_CHARS = 65536
_XML_SPACE = ' \t\r\n'
_NUMBER_RE = re.compile(r'\A[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z')
_ZERO3 = (0.0, 0.0, 0.0)


# -- names ---------------------------------------------------------------------------------

def robot_name(vessel_id: str) -> str:
    """Return the proxy URDF's robot name, ``pylon_<vid8>_active_vessel``."""
    return f'pylon_{vessel_id[:8]}_active_vessel'


def link_name(vessel_id: str, number: int) -> str:
    """Return the name of link ``number`` (0 = root part), ``pylon_<vid8>_link_NNNN``."""
    return f'pylon_{vessel_id[:8]}_link_{number:04d}'


def joint_name(vessel_id: str, number: int) -> str:
    """Return the name of the fixed joint whose child is link ``number``."""
    return f'pylon_{vessel_id[:8]}_joint_{number:04d}'


# -- the allowlist -------------------------------------------------------------------------

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


# -- the validator -------------------------------------------------------------------------

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


class _UrdfReader:
    """The events of one streamed URDF, checked against the allowlist as they come.

    It keeps the open elements and collects the robot's attributes, its link names and
    its joints (parent, child, origin, axis, limit) for ``_check_structure``.
    """

    def __init__(self, features: frozenset[str]) -> None:
        self.features = features
        self.rules = _effective_rules(features)
        self.stack: list[_Frame] = []
        self.elements = 0
        self.robot: dict | None = None
        self.links: list[str] = []
        self.joints: list[dict] = []
        self.finished = False

    def handle(self, event: str, item: object) -> None:
        """Check one pull-parser event."""
        if event == 'pi':
            raise _bad_urdf('processing instructions are not allowed')
        if event == 'start-ns':
            raise _bad_urdf('XML namespaces are not allowed')
        if not isinstance(item, ET.Element):
            raise _bad_urdf('unexpected parser event')
        if event == 'start':
            self._start(item)
        else:
            self._end(item)

    def _start(self, elem: ET.Element) -> None:
        self.elements += 1
        if self.elements > MAX_ELEMENTS:
            raise _bad_urdf(f'more than {MAX_ELEMENTS} elements')
        tag = elem.tag
        rule = self.rules.get(tag) if isinstance(tag, str) else None
        if rule is None:
            raise _bad_urdf(f'element <{str(tag)[:40]}> is not allowed')
        self._count_in_parent(tag)
        attrs = self._attributes(tag, rule, elem)
        self.stack.append(_Frame(tag, rule, attrs, elem))
        self._collect(tag, attrs)

    def _count_in_parent(self, tag: str) -> None:
        if not self.stack:
            if tag != 'robot':
                raise _bad_urdf('the root element must be <robot>')
            return
        parent = self.stack[-1]
        limits = parent.allowed().get(tag)
        if limits is None:
            raise _bad_urdf(f'<{tag}> is not allowed inside <{parent.tag}>')
        parent.counts[tag] += 1
        if parent.counts[tag] > limits[1]:
            raise _bad_urdf(f'too many <{tag}> in <{parent.tag}>')

    def _attributes(self, tag: str, rule: TagRule, elem: ET.Element) -> dict:
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
            attrs[name] = _check_value(attr, value, self.features, f'{tag}.{name}')
        return attrs

    def _collect(self, tag: str, attrs: dict) -> None:
        depth = len(self.stack)
        if tag == 'robot':
            self.robot = attrs
        elif tag == 'link' and depth == 2:
            self.links.append(attrs['name'])
        elif tag == 'joint':
            self.joints.append({'name': attrs['name'], 'type': attrs['type']})
        elif depth >= 2 and self.stack[-2].tag == 'joint':
            self._collect_joint_part(self.joints[-1], tag, attrs)

    @staticmethod
    def _collect_joint_part(joint: dict, tag: str, attrs: dict) -> None:
        if tag in ('parent', 'child'):
            joint[tag] = attrs['link']
        elif tag == 'origin':
            joint['xyz'] = attrs.get('xyz', _ZERO3)
            joint['rpy'] = attrs.get('rpy', _ZERO3)
        elif tag == 'axis':
            joint['axis'] = attrs['xyz']
        elif tag == 'limit':
            lower, upper = attrs['lower'], attrs['upper']
            if lower > upper:
                raise _bad_urdf('limit lower > upper', 'limit')
            joint['limit'] = (lower, upper, attrs['effort'], attrs['velocity'])

    def _end(self, elem: ET.Element) -> None:
        frame = self.stack.pop()
        if _has_text(elem.text) or any(_has_text(child.tail) for child in elem):
            raise _bad_urdf(f'text content in <{frame.tag}>')
        for child_tag, (low, _high) in frame.allowed().items():
            if frame.counts[child_tag] < low:
                raise _bad_urdf(f'<{frame.tag}> needs at least {low} <{child_tag}>')
        if frame.tag == 'geometry' and sum(frame.counts[p] for p in _PRIMITIVES) != 1:
            raise _bad_urdf('a geometry needs exactly one primitive', 'geometry')
        del elem[:]
        if not self.stack:
            self.finished = True


def _read(urdf: str, reader: _UrdfReader) -> None:
    """Stream ``urdf`` through a pull parser into ``reader``; parser errors are bad_urdf."""
    parser = ET.XMLPullParser(events=('start', 'end', 'pi', 'start-ns'))
    try:
        for start in range(0, len(urdf), _FEED_CHARS):
            parser.feed(urdf[start:start + _FEED_CHARS])
            for event, item in parser.read_events():
                reader.handle(event, item)
        parser.close()
        for event, item in parser.read_events():
            reader.handle(event, item)
    except ET.ParseError as error:
        raise _bad_urdf(f'XML parse error: {error}') from None
    except ProtocolError:
        raise
    except (RecursionError, ValueError, TypeError) as error:
        raise _bad_urdf(f'XML error: {type(error).__name__}') from None


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
    if len(urdf) > MAX_MODEL_DECOMPRESSED_BYTES:
        raise _bad_urdf('URDF text is too long')
    features = frozenset({SERVO_JOINTS} if allow_servo_joints else ())
    _reject_markup_declarations(urdf)
    reader = _UrdfReader(features)
    _read(urdf, reader)
    if not reader.finished or reader.robot is None:
        raise _bad_urdf('incomplete document')
    return _check_structure(reader.robot['name'], reader.links, reader.joints, vessel_id)


def _vid8(robot: str, vessel_id: str | None) -> str:
    """Return the name prefix digits, checking the robot name against the vessel id."""
    if vessel_id is not None:
        if not isinstance(vessel_id, str) or not HEX32_RE.match(vessel_id):
            raise _bad_urdf('vessel id must be 32 lowercase hex digits', 'vesselId')
        vid8 = vessel_id[:8]
        if robot != f'pylon_{vid8}_active_vessel':
            raise _bad_urdf(f'robot must be named pylon_{vid8}_active_vessel', 'robot.name')
        return vid8
    match = re.fullmatch(r'pylon_([0-9a-f]{8})_active_vessel', robot)
    if match is None:
        raise _bad_urdf('robot must be named pylon_<vid8>_active_vessel', 'robot.name')
    return match.group(1)


def _check_links(links: list[str], vid8: str) -> None:
    link_re = re.compile(rf'\Apylon_{vid8}_link_[0-9]{{4}}\Z')
    if not 1 <= len(links) <= MAX_LINKS:
        raise _bad_urdf(f'expected 1..{MAX_LINKS} links', 'link')
    if len(set(links)) != len(links):
        raise _bad_urdf('duplicate link name', 'link.name')
    for name in links:
        if not link_re.match(name):
            raise _bad_urdf(f'link name {name!r} does not follow pylon_{vid8}_link_NNNN')


def _check_joint_name(name: str, joint_type: str, joint_re: re.Pattern, vid8: str) -> None:
    servo = joint_type in MOTOR_JOINT_TYPES
    if servo and not (joint_re.match(name) or SERVO_JOINT_NAME_RE.match(name)):
        raise _bad_urdf(f'servo joint name {name!r} is neither pylon_{vid8}_joint_NNNN '
                        'nor a joint_states name ([a-z_][a-z0-9_]{0,63})')
    if not servo and not joint_re.match(name):
        raise _bad_urdf(f'joint name {name!r} does not follow pylon_{vid8}_joint_NNNN')


def _single_root(links: list[str], children: Mapping[str, list[str]],
                 has_parent: set[str]) -> str:
    """Return the one root link; raise unless every link hangs below it."""
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
    return roots[0]


def _check_structure(
    robot: str, links: list[str], joints: list[dict], vessel_id: str | None
) -> Urdf:
    vid8 = _vid8(robot, vessel_id)
    _check_links(links, vid8)
    link_set = set(links)
    joint_re = re.compile(rf'\Apylon_{vid8}_joint_[0-9]{{4}}\Z')
    joint_names = set()
    children: dict[str, list[str]] = {name: [] for name in links}
    has_parent: set[str] = set()
    result = []
    for joint in joints:
        name = joint['name']
        _check_joint_name(name, joint['type'], joint_re, vid8)
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
    root = _single_root(links, children, has_parent)
    return Urdf(robot, root, tuple(links), tuple(result))


# -- a builder of box proxies ---------------------------------------------------------------

@dataclass(frozen=True)
class ProxyPart:
    """One part of a proxy model: a box with a mass, placed in its parent part's frame."""

    parent: int | None
    size: tuple[float, float, float]
    mass: float
    xyz: tuple[float, float, float] = _ZERO3
    rpy: tuple[float, float, float] = _ZERO3


def box_inertia(mass: float, extent: Iterable[float]) -> tuple[float, float, float]:
    """Return (ixx, iyy, izz) of a solid box of this mass and size about its centre."""
    x, y, z = (float(v) for v in extent)
    return (mass * (y * y + z * z) / 12.0, mass * (x * x + z * z) / 12.0,
            mass * (x * x + y * y) / 12.0)


def _fmt(values: Iterable[float]) -> str:
    return ' '.join(repr(float(v)) for v in values)


def _box_link(vessel_id: str, index: int, part: ProxyPart) -> list[str]:
    size = tuple(float(v) for v in part.size)
    mass = float(part.mass)
    ixx, iyy, izz = box_inertia(mass, size)
    box = f'<geometry><box size="{_fmt(size)}"/></geometry>'
    return [
        f'  <link name="{link_name(vessel_id, index)}">',
        '    <inertial>',
        '      <origin xyz="0 0 0" rpy="0 0 0"/>',
        f'      <mass value="{mass!r}"/>',
        f'      <inertia ixx="{ixx!r}" ixy="0" ixz="0" iyy="{iyy!r}" iyz="0" izz="{izz!r}"/>',
        '    </inertial>',
        f'    <visual><origin xyz="0 0 0" rpy="0 0 0"/>{box}</visual>',
        f'    <collision><origin xyz="0 0 0" rpy="0 0 0"/>{box}</collision>',
        '  </link>',
    ]


def _fixed_joint(vessel_id: str, index: int, part: ProxyPart) -> list[str]:
    return [
        f'  <joint name="{joint_name(vessel_id, index)}" type="fixed">',
        f'    <parent link="{link_name(vessel_id, part.parent)}"/>',
        f'    <child link="{link_name(vessel_id, index)}"/>',
        f'    <origin xyz="{_fmt(part.xyz)}" rpy="{_fmt(part.rpy)}"/>',
        '  </joint>',
    ]


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
    lines = [
        '<?xml version="1.0"?>',
        '<!-- primitive proxy of the active vessel -->',
        f'<robot name="{robot_name(vessel_id)}">',
    ]
    for index, part in enumerate(parts):
        if (index == 0) != (part.parent is None) or (
            part.parent is not None and not 0 <= part.parent < index
        ):
            raise _bad_urdf('part 0 must be the root and parents must come first', 'parts')
        lines += _box_link(vessel_id, index, part)
    for index, part in enumerate(parts):
        if part.parent is not None:
            lines += _fixed_joint(vessel_id, index, part)
    lines.append('</robot>')
    text = '\n'.join(lines) + '\n'
    validate_urdf(text, vessel_id=vessel_id)
    return text
