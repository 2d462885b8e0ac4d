"""The active vessel's proxy model: URDF and ``pylon_active_vessel_proxy`` bundle.

The URDF is what the mod builds, produced by expanding the xacro macros of
``pylon_description`` (``proxy_parts.urdf.xacro``):

* ``<robot name="pylon_<vesselId[:8]>_active_vessel">`` with only links and joints;
* one link per part, ``pylon_<vid8>_link_NNNN``: 0000 is the root part, the others follow
  in part order;
* one fixed joint per other part, ``pylon_<vid8>_joint_NNNN`` (NNNN = its child's link),
  from the part's parent part (the root when it has none) to the part, with the part's
  pose in its parent part's frame as origin (ROS axes, metres, URDF roll-pitch-yaw);
* per link one inertial (the part's mass in kg, at least 1 g; the box inertia of the
  primitive's bounding box about its centre, the part origin) and one visual and one
  identical collision holding the part's primitive at the part origin. A cylinder's
  axis is the part's +X, so its URDF cylinder (along +Z) is turned by pitch = pi/2.

The document starts with ``<?xml version="1.0"?>`` and one comment. With
``servo_joints=True`` the joint above a part with a ``servo`` module becomes a revolute or
prismatic joint with axis and limits (``pylon_servo_joint``): an extension the mod never
sends and the proxy allowlist rejects, for consumers that ask for it.

The names, the box inertia and the bundle are the protocol's (``pylon_protocol.urdf``,
``pylon_protocol.bundle``); only the xacro expansion and the vessel geometry are here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
import math
import threading
from typing import NamedTuple
import xml.dom
import xml.dom.minidom
from xml.sax.saxutils import escape

import numpy as np
from pylon_description.paths import xacro_file
from pylon_protocol import bundle as proxy_bundle
from pylon_protocol import rotations
from pylon_protocol.packets import MOTOR_JOINT_TYPES
from pylon_protocol.urdf import box_inertia, joint_name, link_name, robot_name
import xacro

from pylon_sim.game.parts import servo_name
from pylon_sim.game.vessel import Module, VesselSpec

MIN_MASS_KG = 0.001           # the mod's floor for a part's mass
MIN_EXTENT_M = 0.01           # the mod's floor for primitive sizes and bounding boxes
MASS_SIGNIFICANT_DIGITS = 6   # masses are rounded to this before building (and caching)
CACHE_SIZE = 32
# limits of a servo module that does not set them: (lower, upper, effort, velocity)
SERVO_DEFAULT_LIMITS = {
    'revolute': (-math.pi, math.pi, 100.0, 1.0),     # rad, rad, N m, rad/s
    'prismatic': (0.0, 1.0, 1000.0, 0.5),            # m, m, N, m/s
}

XML_DECLARATION = '<?xml version="1.0"?>'
HEADER_COMMENT = (' Runtime-only primitive proxy of the active vessel: no meshes, textures, '
                  'part names or asset paths. ')
XACRO_NAMESPACE = 'http://www.ros.org/wiki/xacro'
_CYLINDER_RPY = (0.0, math.pi / 2.0, 0.0)   # URDF cylinder +Z onto the part's +X
_GIMBAL_LOCK_COS = 1e-9
_ZERO = 1e-12
_ATTRIBUTE_ORDER = {
    'joint': ('name', 'type'),
    'origin': ('xyz', 'rpy'),
    'inertia': ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz'),
    'cylinder': ('radius', 'length'),
    'limit': ('lower', 'upper', 'effort', 'velocity'),
}

_xacro_lock = threading.Lock()   # the xacro package keeps its state in module globals


class _Servo(NamedTuple):
    name: str                    # the joint's name = the motor's joint_states name
    joint_type: str
    axis: tuple[float, float, float]
    lower: float
    upper: float
    effort: float
    velocity: float


class _PartKey(NamedTuple):
    flight_id: int
    parent_link: int | None      # link number of the parent part; None for the root
    position: tuple[float, float, float]
    rotation: tuple[float, float, float, float]
    shape: str
    size: tuple[float, ...]
    mass: float
    servo: _Servo | None


class _ModelKey(NamedTuple):
    vessel_id: str
    parts: tuple[_PartKey, ...]   # in link order
    servo_joints: bool


def root_index(spec: VesselSpec) -> int:
    """Return the index of the root part: the first part without a parent."""
    for index, part in enumerate(spec.parts):
        if part.parent is None:
            return index
    raise ValueError(f'vessel {spec.vessel_id} has no root part (every part has a parent)')


def link_order(spec: VesselSpec) -> list[int]:
    """Return part indices in link order: the root part, then the others in part order."""
    if not spec.parts:
        raise ValueError(f'vessel {spec.vessel_id} has no parts')
    root = root_index(spec)
    return [root] + [i for i in range(len(spec.parts)) if i != root]


def parent_index(spec: VesselSpec, index: int, root: int | None = None) -> int | None:
    """Return the index of a part's parent part, None for the root.

    A non-root part without a valid parent hangs on the root part, as in the mod.
    """
    root = root_index(spec) if root is None else root
    if index == root:
        return None
    parent = spec.parts[index].parent
    if parent is None or not 0 <= parent < len(spec.parts) or parent == index:
        return root
    return parent


def relative_pose(parent_position: Sequence[float], parent_rotation: Sequence[float],
                  child_position: Sequence[float],
                  child_rotation: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Return the child's position (m) and rotation matrix in the parent's frame.

    Both poses are given in one common frame (the vessel frame), rotations as
    quaternions (x, y, z, w) from the part frame to that frame.
    """
    r_parent = rotations.to_matrix(parent_rotation)
    r_child = rotations.to_matrix(child_rotation)
    offset = np.asarray(child_position, dtype=float) - np.asarray(parent_position, dtype=float)
    return r_parent.T @ offset, r_parent.T @ r_child


def rpy_from_matrix(rotation: np.ndarray) -> tuple[float, float, float]:
    """Return URDF roll, pitch, yaw (rad) of a rotation matrix: R = Rz(yaw) Ry(pitch) Rx(roll).

    At pitch = +-pi/2 only roll -+ yaw is defined; yaw is then 0.
    """
    r = np.asarray(rotation, dtype=float)
    cos_pitch = math.hypot(r[0, 0], r[1, 0])
    pitch = math.atan2(-r[2, 0], cos_pitch)
    if cos_pitch > _GIMBAL_LOCK_COS:
        return math.atan2(r[2, 1], r[2, 2]), pitch, math.atan2(r[1, 0], r[0, 0])
    return math.atan2(-r[1, 2], r[1, 1]), pitch, 0.0


def _num(value: float) -> str:
    """Format a number for URDF: shortest round-trip text of 12 significant digits."""
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f'non-finite number {v} in the proxy model')
    if abs(v) < _ZERO:
        return '0'
    text = repr(float(f'{v:.12g}'))
    return text[:-2] if text.endswith('.0') else text


def _vec(values: Sequence[float]) -> str:
    return ' '.join(_num(v) for v in values)


def _finite(values: Sequence[float], what: str) -> tuple[float, ...]:
    result = tuple(float(v) for v in values)
    if not all(math.isfinite(v) for v in result):
        raise ValueError(f'{what} must be finite, got {list(result)}')
    return result


def _servo(part, module: Module) -> _Servo:
    joint_type = str(module.get('joint', 'revolute'))
    if joint_type not in MOTOR_JOINT_TYPES:
        raise ValueError(
            f'servo joint type must be one of {MOTOR_JOINT_TYPES}, got {joint_type!r}')
    lower, upper, effort, velocity = SERVO_DEFAULT_LIMITS[joint_type]
    axis = np.asarray(_finite(module.get('axis', (0.0, 0.0, 1.0)), 'servo axis'), dtype=float)
    norm = float(np.linalg.norm(axis)) if axis.shape == (3,) else 0.0
    if norm < 1e-9:
        raise ValueError(f'servo axis must be a non-zero 3-vector, got {list(axis)}')
    lower, upper, effort, velocity = _finite(
        (module.get('lower', lower), module.get('upper', upper), module.get('effort', effort),
         module.get('velocity', velocity)), 'servo limits')
    if lower > upper or effort < 0.0 or velocity < 0.0:
        raise ValueError('servo limits need lower <= upper and effort, velocity >= 0')
    return _Servo(servo_name(part, module), joint_type, tuple(float(v) for v in axis / norm),
                  lower, upper, effort, velocity)


def _round_mass(mass: float) -> float:
    m = float(mass)
    if not math.isfinite(m):
        raise ValueError(f'part mass must be finite, got {m}')
    return float(f'{max(MIN_MASS_KG, m):.{MASS_SIGNIFICANT_DIGITS}g}')


def _model_key(spec: VesselSpec, masses: Sequence[float], servo_joints: bool) -> _ModelKey:
    """Return everything the URDF depends on, hashable, with parts in link order."""
    masses = np.asarray(masses, dtype=float).reshape(-1)
    if len(masses) != len(spec.parts):
        raise ValueError(f'{len(masses)} masses for {len(spec.parts)} parts')
    order = link_order(spec)
    number_of = {index: number for number, index in enumerate(order)}
    parts = []
    for index in order:
        part = spec.parts[index]
        parent = parent_index(spec, index, order[0])
        servos = part.modules_of('servo')
        servo = _servo(part, servos[0]) if servo_joints and servos and parent is not None \
            else None
        parts.append(_PartKey(
            flight_id=int(part.flight_id),
            parent_link=None if parent is None else number_of[parent],
            position=_finite(part.position, f'position of part {index}'),
            rotation=tuple(rotations.normalize(part.rotation).tolist()),
            shape=part.shape.kind,
            size=_finite(part.shape.size, f'shape size of part {index}'),
            mass=_round_mass(masses[index]),
            servo=servo))
    _check_tree(parts, spec.vessel_id)
    return _ModelKey(spec.vessel_id, tuple(parts), bool(servo_joints))


def _check_tree(parts: Sequence[_PartKey], vessel_id: str) -> None:
    """Raise ValueError unless every link reaches link 0 through its parents."""
    rooted = {0}
    for number in range(len(parts)):
        path: set[int] = set()
        current: int | None = number
        while current is not None and current not in rooted:
            if current in path:
                raise ValueError(f'the part tree of vessel {vessel_id} has a cycle')
            path.add(current)
            current = parts[current].parent_link
        rooted.update(path)


def _primitive(shape: str, size: tuple[float, ...]) -> tuple[str, dict[str, str], np.ndarray]:
    """Return a part's primitive macro, its arguments and its bounding box (part axes)."""
    if shape == 'box':
        if len(size) != 3:
            raise ValueError(f'a box needs 3 sizes, got {list(size)}')
        extent = np.maximum(np.abs(np.asarray(size, dtype=float)), MIN_EXTENT_M)
        return 'pylon_box', {'size': _vec(extent), 'rpy': '0 0 0'}, extent
    if shape == 'cylinder':
        if len(size) != 2:
            raise ValueError(f'a cylinder needs radius and length, got {list(size)}')
        radius = max(MIN_EXTENT_M, abs(size[0]))
        length = max(MIN_EXTENT_M, abs(size[1]))
        return ('pylon_cylinder',
                {'radius': _num(radius), 'length': _num(length), 'rpy': _vec(_CYLINDER_RPY)},
                np.array([length, 2.0 * radius, 2.0 * radius]))
    if shape == 'sphere':
        if len(size) != 1:
            raise ValueError(f'a sphere needs one radius, got {list(size)}')
        radius = max(MIN_EXTENT_M, abs(size[0]))
        return 'pylon_sphere', {'radius': _num(radius), 'rpy': '0 0 0'}, np.full(3, 2 * radius)
    raise ValueError(f'unknown shape {shape!r} (box, cylinder or sphere)')


def _attr(value: str) -> str:
    return escape(value, {'"': '&quot;'})


def _call(macro: str, attributes: Mapping[str, str], body: str = '') -> str:
    text = ' '.join(f'{k}="{_attr(v)}"' for k, v in attributes.items())
    if not body:
        return f'<xacro:{macro} {text}/>'
    return f'<xacro:{macro} {text}>{body}</xacro:{macro}>'


def _document(key: _ModelKey) -> str:
    """Return the top-level xacro document of a model key."""
    include = str(xacro_file()).replace('${', '$${').replace('$(', '$$(')
    lines = [XML_DECLARATION,
             f'<robot name="{robot_name(key.vessel_id)}" xmlns:xacro="{XACRO_NAMESPACE}">',
             f'  <xacro:include filename="{_attr(include)}"/>']
    for number, part in enumerate(key.parts):
        macro, attributes, extent = _primitive(part.shape, part.size)
        ixx, iyy, izz = box_inertia(part.mass, extent)
        primitives = f'<primitives>{_call(macro, attributes)}</primitives>'
        lines.append('  ' + _call('pylon_link', {
            'name': link_name(key.vessel_id, number), 'mass': _num(part.mass),
            'ixx': _num(ixx), 'iyy': _num(iyy), 'izz': _num(izz)}, primitives))
    for number, part in enumerate(key.parts):
        if part.parent_link is None:
            continue
        parent = key.parts[part.parent_link]
        xyz, rotation = relative_pose(parent.position, parent.rotation, part.position,
                                      part.rotation)
        attributes = {'name': joint_name(key.vessel_id, number),
                      'parent': link_name(key.vessel_id, part.parent_link),
                      'child': link_name(key.vessel_id, number),
                      'xyz': _vec(xyz), 'rpy': _vec(rpy_from_matrix(rotation))}
        if key.servo_joints and part.servo is not None:
            servo = part.servo
            attributes.update({'name': servo.name, 'type': servo.joint_type,
                               'axis': _vec(servo.axis),
                               'lower': _num(servo.lower), 'upper': _num(servo.upper),
                               'effort': _num(servo.effort),
                               'velocity': _num(servo.velocity)})
            lines.append('  ' + _call('pylon_servo_joint', attributes))
        else:
            lines.append('  ' + _call('pylon_fixed_joint', attributes))
    lines.append('</robot>')
    return '\n'.join(lines) + '\n'


def xacro_document(spec: VesselSpec, masses: Sequence[float], servo_joints: bool = False) -> str:
    """Return the top-level xacro document that ``build_urdf`` expands."""
    return _document(_model_key(spec, masses, servo_joints))


def expand(document: str) -> str:
    """Expand a xacro document with the xacro package and return it as proxy URDF text.

    Comments and whitespace are dropped and attributes put in a fixed order; text content
    raises ValueError, as does a xacro error.
    """
    with _xacro_lock:
        includes = len(xacro.all_includes)
        try:
            doc = xacro.parse(document)
            xacro.init_stacks(None)
            xacro.process_doc(doc)
        except xacro.XacroException as exc:
            raise ValueError(f'xacro expansion of the proxy model failed: {exc}') from exc
        finally:
            del xacro.all_includes[includes:]
    lines = [XML_DECLARATION, f'<!--{HEADER_COMMENT}-->']
    _write(doc.documentElement, 0, lines)
    return '\n'.join(lines) + '\n'


def _write(node: xml.dom.minidom.Element, depth: int, lines: list[str]) -> None:
    order = _ATTRIBUTE_ORDER.get(node.tagName, ())
    attributes = sorted(
        ((k, v) for k, v in node.attributes.items() if k != 'xmlns' and
         not k.startswith('xmlns:')),
        key=lambda item: (order.index(item[0]) if item[0] in order else len(order), item[0]))
    head = node.tagName + ''.join(f' {k}="{_attr(v)}"' for k, v in attributes)
    children = []
    for child in node.childNodes:
        if child.nodeType == xml.dom.Node.ELEMENT_NODE:
            children.append(child)
        elif child.nodeType in (xml.dom.Node.TEXT_NODE, xml.dom.Node.CDATA_SECTION_NODE):
            if child.data.strip():
                raise ValueError(f'text content {child.data.strip()!r} in <{node.tagName}>')
    indent = '  ' * depth
    if not children:
        lines.append(f'{indent}<{head}/>')
        return
    lines.append(f'{indent}<{head}>')
    for child in children:
        _write(child, depth + 1, lines)
    lines.append(f'{indent}</{node.tagName}>')


@lru_cache(maxsize=CACHE_SIZE)
def _cached_urdf(key: _ModelKey) -> str:
    return expand(_document(key))


def build_urdf(spec: VesselSpec, masses: Sequence[float], servo_joints: bool = False) -> str:
    """Return the vessel's proxy URDF, expanded from the pylon_description xacro macros.

    ``masses`` are the parts' current masses in kg, in part order (``part_masses``); they
    are rounded to 6 significant digits. Results are cached by vessel, part geometry and
    rounded masses. ``servo_joints`` turns the joints above servo parts into revolute or
    prismatic joints (an extension; the mod sends fixed joints only).
    """
    return _cached_urdf(_model_key(spec, masses, servo_joints))


def build_bundle(spec: VesselSpec, com: np.ndarray, session_id: str, urdf: str,
                 servo_joints: bool = False) -> dict:
    """Return the ``pylon_active_vessel_proxy`` bundle of a URDF built by ``build_urdf``.

    ``com`` is the centre of mass in the vessel frame (m). ``base_link`` is the centre of
    mass with the vessel frame's axes, so the root link's pose in it is the root part's
    vessel-frame pose shifted by minus the centre of mass. The bundle is built and
    validated by ``pylon_protocol.bundle.build_bundle`` (ProtocolError, a ValueError, when
    the URDF is not this vessel's); ``servo_joints`` must match ``build_urdf``'s.
    """
    order = link_order(spec)
    root = spec.parts[order[0]]
    centre = np.asarray(_finite(np.asarray(com, dtype=float).reshape(3), 'centre of mass'))
    position = np.asarray(root.position, dtype=float) - centre
    return proxy_bundle.build_bundle(
        session_id=session_id, vessel_id=spec.vessel_id, urdf=urdf,
        base_to_root_position=[float(v) + 0.0 for v in position],
        base_to_root_rotation=[v + 0.0 for v in rotations.normalize(root.rotation).tolist()],
        part_frames=[(int(spec.parts[index].flight_id), link_name(spec.vessel_id, number))
                     for number, index in enumerate(order)],
        root_frame=link_name(spec.vessel_id, 0), allow_servo_joints=servo_joints)
