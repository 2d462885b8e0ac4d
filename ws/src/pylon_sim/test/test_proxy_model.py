"""The proxy model: URDF through the xacro macros, and the pylon_active_vessel_proxy bundle."""

from dataclasses import replace
import hashlib
import json
import math
import re
import xml.etree.ElementTree as ET

import numpy as np
from pylon_protocol import rotations
from pylon_sim.game.vessel import (
    mass_properties,
    Module,
    Part,
    part_masses,
    Shape,
    VesselSpec,
)
from pylon_sim.mod import proxy_model
from pylon_testing.cost import cpu_seconds
import pytest

VESSEL_ID = '5a1e0c3b9d8f47e6a2b4c6d8e0f1a2b3'
PREFIX = 'pylon_5a1e0c3b'
SESSION_ID = '0f' * 16
NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]{0,127}$')
ALLOWED = {
    'robot': {'name'}, 'link': {'name'}, 'joint': {'name', 'type'}, 'parent': {'link'},
    'child': {'link'}, 'origin': {'xyz', 'rpy'}, 'inertial': set(), 'mass': {'value'},
    'inertia': {'ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz'}, 'visual': set(),
    'collision': set(), 'geometry': set(), 'box': {'size'},
    'cylinder': {'radius', 'length'}, 'sphere': {'radius'},
}


def part(index, parent, position, rpy, mass, shape, modules=()):
    return Part(name=f'part.{index}', title=f'Part {index}', persistent_id=4000 + index,
                flight_id=9000 + index, parent=parent, position=position,
                rotation=tuple(rotations.from_rpy(*rpy).tolist()), dry_mass=mass, shape=shape,
                modules=tuple(modules))


SERVO = Module('servo', 0, {'joint': 'revolute', 'motor_name': 'arm', 'axis': [0, 2, 0],
                            'lower': -1.5, 'upper': 1.5, 'effort': 50, 'velocity': 0.5})


def make_spec(root_at: int = 0) -> VesselSpec:
    """Return a 5-part vessel: a stack with a radial branch, tilted parts and one servo.

    ``root_at`` is the index the root part gets; parent indices follow it.
    """
    parts = [
        part(0, None, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 800.0, Shape('cylinder', (0.625, 1.2))),
        part(1, 0, (-1.4, 0.0, 0.0), (0.0, 0.0, 0.0), 2000.0, Shape('cylinder', (0.625, 1.6))),
        part(2, 1, (-1.4, 0.8, 0.1), (0.2, -0.1, math.pi / 2), 50.0, Shape('box', (0.2, 0.4, 0.6)),
             [SERVO]),
        part(3, 2, (-1.5, 1.3, 0.4), (math.pi, 0.25, -2.0), 10.0, Shape('sphere', (0.3,))),
        # pitch = pi/2 relative to its parent: URDF rpy in gimbal lock
        part(4, 1, (-2.6, -0.2, -0.3), (0.3, math.pi / 2, 0.4), 1500.0,
             Shape('box', (0.5, 1.25, 1.25))),
    ]
    if root_at:
        # move the root part to index root_at and renumber the parents
        order = list(range(1, root_at + 1)) + [0] + list(range(root_at + 1, len(parts)))
        new_index = {old: new for new, old in enumerate(order)}
        parts = [replace(parts[old], parent=None if parts[old].parent is None
                         else new_index[parts[old].parent]) for old in order]
    return VesselSpec(VESSEL_ID, 'Proxy Test', tuple(parts))


SPEC = make_spec()
MASSES = np.array([812.5, 2000.0, 50.0, 10.0, 1234.5])


def parse(urdf: str) -> ET.Element:
    return ET.fromstring(urdf)


def links_of(robot):
    return {link.get('name'): link for link in robot.findall('link')}


def joints_by_child(robot):
    return {joint.find('child').get('link'): joint for joint in robot.findall('joint')}


def content(element: ET.Element) -> list:
    return [(e.tag, e.attrib) for e in element.iter()][1:]


def floats(text: str) -> np.ndarray:
    return np.array([float(v) for v in text.split()])


def rpy_matrix(roll, pitch, yaw) -> np.ndarray:
    cr, sr, cp, sp, cy, sy = (math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch),
                              math.cos(yaw), math.sin(yaw))
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def transform(xyz, rotation) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = rotation
    t[:3, 3] = xyz
    return t


def part_transform(p: Part) -> np.ndarray:
    return transform(p.position, rotations.to_matrix(p.rotation))


def test_urdf_is_a_declared_xml_document_with_the_mod_names():
    urdf = proxy_model.build_urdf(SPEC, MASSES)
    assert urdf.startswith('<?xml version="1.0"?>\n<!--')
    robot = parse(urdf)
    assert robot.tag == 'robot' and robot.attrib == {'name': f'{PREFIX}_active_vessel'}
    assert [c.tag for c in robot] == ['link'] * 5 + ['joint'] * 4
    assert [link.get('name') for link in robot.findall('link')] == [
        f'{PREFIX}_link_{n:04d}' for n in range(5)]
    assert [joint.get('name') for joint in robot.findall('joint')] == [
        f'{PREFIX}_joint_{n:04d}' for n in range(1, 5)]
    assert {joint.get('type') for joint in robot.findall('joint')} == {'fixed'}


def test_urdf_uses_only_the_allowlist():
    urdf = proxy_model.build_urdf(SPEC, MASSES)
    robot = parse(urdf)
    assert sum(1 for _ in robot.iter()) <= 20000
    for element in robot.iter():
        assert element.tag in ALLOWED, element.tag
        assert set(element.attrib) <= ALLOWED[element.tag], element.tag
        assert not (element.text or '').strip() and not (element.tail or '').strip()
        for key in ('name', 'link'):
            if key in element.attrib:
                assert NAME.match(element.attrib[key])
    for link in robot.findall('link'):
        assert [c.tag for c in link] == ['inertial', 'visual', 'collision']
        assert [c.tag for c in link.find('inertial')] == ['origin', 'mass', 'inertia']
        for owner in (link.find('visual'), link.find('collision')):
            assert [c.tag for c in owner] == ['origin', 'geometry']
            assert len(owner.find('geometry')) == 1
    for joint in robot.findall('joint'):
        assert [c.tag for c in joint] == ['parent', 'child', 'origin']
    assert '<!DOCTYPE' not in urdf and '<!ENTITY' not in urdf


def test_links_follow_the_root_then_part_order():
    spec = make_spec(root_at=2)
    assert spec.parts[2].parent is None
    masses = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    robot = parse(proxy_model.build_urdf(spec, masses))
    order = [2, 0, 1, 3, 4]
    values = [float(link.find('inertial/mass').get('value')) for link in robot.findall('link')]
    assert values == [masses[i] for i in order]
    bundle = proxy_model.build_bundle(spec, np.zeros(3), SESSION_ID,
                                      proxy_model.build_urdf(spec, masses))
    assert [f['partFlightId'] for f in bundle['partFrames']] == [
        spec.parts[i].flight_id for i in order]


def test_joints_form_the_part_tree():
    robot = parse(proxy_model.build_urdf(SPEC, MASSES))
    links = [link.get('name') for link in robot.findall('link')]
    by_child = joints_by_child(robot)
    assert links[0] not in by_child                     # the root is nobody's child
    assert set(by_child) == set(links[1:])               # every other link exactly once
    for number in range(1, 5):
        joint = by_child[links[number]]
        assert joint.get('name') == f'{PREFIX}_joint_{number:04d}'
        assert joint.find('parent').get('link') == links[SPEC.parts[number].parent]


def test_joint_origins_compose_to_the_part_poses():
    robot = parse(proxy_model.build_urdf(SPEC, MASSES))
    by_child = joints_by_child(robot)
    root_inverse = np.linalg.inv(part_transform(SPEC.parts[0]))
    for number, p in enumerate(SPEC.parts):
        # walk from the link up to the root, composing joint origins
        pose = np.eye(4)
        name = f'{PREFIX}_link_{number:04d}'
        while name in by_child:
            joint = by_child[name]
            origin = joint.find('origin')
            pose = transform(floats(origin.get('xyz')),
                             rpy_matrix(*floats(origin.get('rpy')))) @ pose
            name = joint.find('parent').get('link')
        assert name == f'{PREFIX}_link_0000'
        expected = root_inverse @ part_transform(p)
        np.testing.assert_allclose(pose, expected, atol=1e-9, err_msg=f'part {number}')


def test_each_joint_origin_is_the_child_pose_in_its_parent_frame():
    robot = parse(proxy_model.build_urdf(SPEC, MASSES))
    by_child = joints_by_child(robot)
    for number in range(1, 5):
        child = SPEC.parts[number]
        parent = SPEC.parts[child.parent]
        origin = by_child[f'{PREFIX}_link_{number:04d}'].find('origin')
        relative = np.linalg.inv(part_transform(parent)) @ part_transform(child)
        np.testing.assert_allclose(floats(origin.get('xyz')), relative[:3, 3], atol=1e-9)
        np.testing.assert_allclose(rpy_matrix(*floats(origin.get('rpy'))), relative[:3, :3],
                                   atol=1e-9)


def test_masses_and_box_inertia_of_the_primitive_bounds():
    robot = parse(proxy_model.build_urdf(SPEC, MASSES))
    extents = [(1.2, 1.25, 1.25), (1.6, 1.25, 1.25), (0.2, 0.4, 0.6), (0.6, 0.6, 0.6),
               (0.5, 1.25, 1.25)]
    for link, mass, (x, y, z) in zip(robot.findall('link'), MASSES, extents, strict=True):
        inertial = link.find('inertial')
        assert float(inertial.find('mass').get('value')) == pytest.approx(mass, rel=1e-12)
        assert inertial.find('origin').attrib == {'xyz': '0 0 0', 'rpy': '0 0 0'}
        inertia = {k: float(v) for k, v in inertial.find('inertia').attrib.items()}
        assert inertia['ixy'] == inertia['ixz'] == inertia['iyz'] == 0.0
        assert inertia['ixx'] > 0 and inertia['iyy'] > 0 and inertia['izz'] > 0
        assert inertia['ixx'] == pytest.approx(mass * (y * y + z * z) / 12, rel=1e-9)
        assert inertia['iyy'] == pytest.approx(mass * (x * x + z * z) / 12, rel=1e-9)
        assert inertia['izz'] == pytest.approx(mass * (x * x + y * y) / 12, rel=1e-9)


def test_tiny_and_real_masses():
    masses = part_masses(SPEC, {})
    robot = parse(proxy_model.build_urdf(SPEC, masses))
    values = [float(link.find('inertial/mass').get('value')) for link in robot.findall('link')]
    assert values == pytest.approx(list(masses))
    zero = parse(proxy_model.build_urdf(SPEC, [0.0, 1.0, 1.0, 1.0, 1.0]))
    assert zero.find('link/inertial/mass').get('value') == '0.001'


def test_primitives_sit_at_the_part_origin_with_cylinders_along_x():
    robot = parse(proxy_model.build_urdf(SPEC, MASSES))
    links = robot.findall('link')
    for link in links:
        visual, collision = link.find('visual'), link.find('collision')
        assert content(visual) == content(collision)
        assert visual.find('origin').get('xyz') == '0 0 0'
    cylinder = links[0].find('visual')
    assert cylinder.find('geometry/cylinder').attrib == {'radius': '0.625', 'length': '1.2'}
    axis = rpy_matrix(*floats(cylinder.find('origin').get('rpy'))) @ [0, 0, 1]
    np.testing.assert_allclose(axis, [1, 0, 0], atol=1e-9)
    assert links[2].find('visual/geometry/box').get('size') == '0.2 0.4 0.6'
    assert links[2].find('visual/origin').get('rpy') == '0 0 0'
    assert links[3].find('visual/geometry/sphere').get('radius') == '0.3'


def test_urdf_is_built_through_the_xacro_macros():
    document = proxy_model.xacro_document(SPEC, MASSES)
    assert 'xacro:include filename=' in document and 'proxy_parts.urdf.xacro' in document
    assert document.count('<xacro:pylon_link ') == 5
    assert document.count('<xacro:pylon_fixed_joint ') == 4
    assert proxy_model.expand(document) == proxy_model.build_urdf(SPEC, MASSES)


def test_servo_joints_are_an_opt_in_extension():
    fixed = parse(proxy_model.build_urdf(SPEC, MASSES))
    assert {j.get('type') for j in fixed.findall('joint')} == {'fixed'}
    servo = parse(proxy_model.build_urdf(SPEC, MASSES, servo_joints=True))
    joint = joints_by_child(servo)[f'{PREFIX}_link_0002']
    assert joint.get('type') == 'revolute'
    # named as the servo's joint_states entry (its motor name)
    from pylon_sim.game.parts import actuators_of
    motors = [a.name for a in actuators_of(SPEC) if a.actuator_type == 'motor']
    assert joint.get('name') in motors
    assert [c.tag for c in joint] == ['parent', 'child', 'origin', 'axis', 'limit']
    assert joint.find('axis').get('xyz') == '0 1 0'
    assert joint.find('limit').attrib == {'lower': '-1.5', 'upper': '1.5', 'effort': '50',
                                          'velocity': '0.5'}
    # the other joints and the links are untouched
    others = [j for j in servo.findall('joint') if j is not joint]
    assert {j.get('type') for j in others} == {'fixed'}
    assert ET.tostring(servo.find('link')) == ET.tostring(fixed.find('link'))


def test_bundle_fields():
    urdf = proxy_model.build_urdf(SPEC, MASSES)
    com = np.array([-1.1, 0.05, -0.02])
    bundle = proxy_model.build_bundle(SPEC, com, SESSION_ID, urdf)
    assert list(bundle) == ['type', 'version', 'sessionId', 'vesselId', 'modelId',
                            'geometryPolicy', 'persistencePolicy', 'rootFrame',
                            'baseToRootPosition', 'baseToRootRotation', 'urdf', 'partFrames']
    assert bundle['type'] == 'pylon_active_vessel_proxy'
    assert bundle['version'] == 1 and type(bundle['version']) is int
    assert bundle['sessionId'] == SESSION_ID
    assert bundle['vesselId'] == VESSEL_ID
    assert bundle['modelId'] == hashlib.sha256(urdf.encode('utf-8')).hexdigest()
    assert bundle['geometryPolicy'] == 'primitive_proxy_only'
    assert bundle['persistencePolicy'] == 'memory_only'
    assert bundle['rootFrame'] == f'{PREFIX}_link_0000' == parse(urdf).find('link').get('name')
    assert bundle['baseToRootPosition'] == pytest.approx([1.1, -0.05, 0.02])
    assert bundle['baseToRootRotation'] == [0.0, 0.0, 0.0, 1.0]
    assert bundle['urdf'] is urdf
    # JSON as the mod sends it: strict numbers only
    assert json.loads(json.dumps(bundle, allow_nan=False)) == bundle


def test_bundle_maps_every_link_to_its_part_once():
    urdf = proxy_model.build_urdf(SPEC, MASSES)
    bundle = proxy_model.build_bundle(SPEC, mass_properties(SPEC, {}).com, SESSION_ID, urdf)
    frames = bundle['partFrames']
    links = [link.get('name') for link in parse(urdf).findall('link')]
    assert [f['frame'] for f in frames] == links
    assert [f['partFlightId'] for f in frames] == [p.flight_id for p in SPEC.parts]
    assert all(type(f['partFlightId']) is int for f in frames)


def test_bundle_base_pose_follows_the_centre_of_mass():
    urdf = proxy_model.build_urdf(SPEC, MASSES)
    props = mass_properties(SPEC, {})
    bundle = proxy_model.build_bundle(SPEC, props.com, SESSION_ID, urdf)
    # base_link -> root link, composed with root link -> part, gives the part about the CoM
    base_to_root = transform(bundle['baseToRootPosition'], np.eye(3))
    for p in SPEC.parts:
        np.testing.assert_allclose((base_to_root @ part_transform(p))[:3, 3],
                                   np.asarray(p.position) - props.com, atol=1e-12)


def test_bundle_refuses_another_vessels_urdf():
    other = VesselSpec('ffffffff' + VESSEL_ID[8:], 'Other', SPEC.parts)
    urdf = proxy_model.build_urdf(other, MASSES)
    with pytest.raises(ValueError):
        proxy_model.build_bundle(SPEC, np.zeros(3), SESSION_ID, urdf)


def test_bad_input_raises_value_error():
    with pytest.raises(ValueError):
        proxy_model.build_urdf(SPEC, MASSES[:4])
    with pytest.raises(ValueError):
        proxy_model.build_urdf(SPEC, [1.0, float('nan'), 1.0, 1.0, 1.0])
    looped = VesselSpec(VESSEL_ID, 'Loop', (
        SPEC.parts[0], replace(SPEC.parts[1], parent=2), replace(SPEC.parts[2], parent=1)))
    with pytest.raises(ValueError):
        proxy_model.build_urdf(looped, [1.0, 1.0, 1.0])


def test_parts_without_a_valid_parent_hang_on_the_root():
    spec = VesselSpec(VESSEL_ID, 'Loose', (
        SPEC.parts[0], replace(SPEC.parts[1], parent=None), replace(SPEC.parts[2], parent=7)))
    robot = parse(proxy_model.build_urdf(spec, [1.0, 1.0, 1.0]))
    assert [j.find('parent').get('link') for j in robot.findall('joint')] == [
        f'{PREFIX}_link_0000'] * 2


def test_results_are_cached_by_geometry_and_rounded_masses():
    first = proxy_model.build_urdf(SPEC, MASSES)
    assert proxy_model.build_urdf(SPEC, MASSES.copy()) is first
    assert proxy_model.build_urdf(SPEC, MASSES * (1 + 1e-9)) is first
    changed = proxy_model.build_urdf(SPEC, MASSES * 1.01)
    assert changed != first
    assert proxy_model.build_urdf(SPEC, MASSES, servo_joints=True) != first


def test_thirty_parts_build_in_under_200_ms():
    parts = [part(0, None, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 100.0, Shape('cylinder', (0.6, 1.0)))]
    for i in range(1, 30):
        shape = (Shape('box', (0.3, 0.4, 0.5)), Shape('cylinder', (0.6, 1.0)),
                 Shape('sphere', (0.2,)))[i % 3]
        parts.append(part(i, (i - 1) // 2, (-1.0 * i, 0.1 * i, 0.0), (0.1 * i, 0.0, 0.2), 100.0,
                          shape))
    spec = VesselSpec(VESSEL_ID, 'Thirty', tuple(parts))
    built = []

    def build():
        masses = np.full(30, 100.0 + len(built) + 0.123)     # new masses: no cache hit
        built.append(proxy_model.build_urdf(spec, masses))
    assert cpu_seconds(build, repeat=3) < 0.2                # CPU time
    assert len(parse(built[-1]).findall('link')) == 30


@pytest.mark.parametrize('root_at', [0, 2])
def test_bundle_passes_the_protocol_validator(root_at):
    from pylon_protocol.bundle import validate_bundle
    from pylon_protocol.urdf import validate_urdf

    spec = make_spec(root_at)
    urdf = proxy_model.build_urdf(spec, MASSES)
    bundle = proxy_model.build_bundle(spec, mass_properties(spec, {}).com, SESSION_ID, urdf)
    validate_urdf(urdf, vessel_id=VESSEL_ID)
    validate_urdf(urdf, vessel_id=VESSEL_ID, allow_servo_joints=False)
    checked = validate_bundle(bundle, session_id=SESSION_ID, model_id=bundle['modelId'])
    assert checked == bundle


def test_servo_urdf_passes_the_validator_only_when_servo_joints_are_allowed():
    from pylon_protocol.urdf import validate_urdf

    urdf = proxy_model.build_urdf(SPEC, MASSES, servo_joints=True)
    validate_urdf(urdf, vessel_id=VESSEL_ID, allow_servo_joints=True)
    with pytest.raises(ValueError):
        validate_urdf(urdf, vessel_id=VESSEL_ID, allow_servo_joints=False)
    with pytest.raises(ValueError):
        validate_urdf(urdf)
