"""The proxy part macros expand with xacro into allowlisted proxy URDF."""

from pathlib import Path
import re
import xml.etree.ElementTree as ET

from ament_index_python.packages import get_package_share_directory, PackageNotFoundError
from pylon_description import paths
import pytest
import xacro

SOURCE = Path(__file__).resolve().parents[1] / 'urdf' / 'proxy_parts.urdf.xacro'

# the proxy URDF allowlist: tag -> (allowed attributes, required attributes)
INERTIA = {'ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz'}
ALLOWED = {
    'robot': ({'name'}, {'name'}),
    'link': ({'name'}, {'name'}),
    'joint': ({'name', 'type'}, {'name', 'type'}),
    'parent': ({'link'}, {'link'}),
    'child': ({'link'}, {'link'}),
    'origin': ({'xyz', 'rpy'}, set()),
    'inertial': (set(), set()),
    'mass': ({'value'}, {'value'}),
    'inertia': (INERTIA, INERTIA),
    'visual': (set(), set()),
    'collision': (set(), set()),
    'geometry': (set(), set()),
    'box': ({'size'}, {'size'}),
    'cylinder': ({'radius', 'length'}, {'radius', 'length'}),
    'sphere': ({'radius'}, {'radius'}),
}
PRIMITIVES = ('box', 'cylinder', 'sphere')
NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]{0,127}$')


def allowlist_problems(robot: ET.Element) -> list[str]:
    """Return every way the tree breaks the proxy URDF allowlist (empty: it complies)."""
    problems = []
    for element in robot.iter():
        if element.tag not in ALLOWED:
            problems.append(f'tag <{element.tag}>')
            continue
        allowed, required = ALLOWED[element.tag]
        if set(element.attrib) - allowed:
            problems.append(f'<{element.tag}> attributes {set(element.attrib) - allowed}')
        if required - set(element.attrib):
            problems.append(f'<{element.tag}> lacks {required - set(element.attrib)}')
        if (element.text or '').strip() or (element.tail or '').strip():
            problems.append(f'text in <{element.tag}>')
        for key in ('name', 'link'):
            if key in element.attrib and not NAME.match(element.attrib[key]):
                problems.append(f'<{element.tag}> {key}={element.attrib[key]!r}')
    if robot.tag != 'robot':
        return problems + [f'root <{robot.tag}>']
    for child in robot:
        if child.tag == 'link':
            problems += link_problems(child)
        elif child.tag == 'joint':
            problems += joint_problems(child)
        else:
            problems.append(f'<{child.tag}> under <robot>')
    return problems


def counts(element: ET.Element) -> dict[str, int]:
    result: dict[str, int] = {}
    for child in element:
        result[child.tag] = result.get(child.tag, 0) + 1
    return result


def link_problems(link: ET.Element) -> list[str]:
    problems = []
    n = counts(link)
    if set(n) - {'inertial', 'visual', 'collision'}:
        problems.append(f'{link.get("name")}: children {set(n)}')
    if n.get('inertial') != 1:
        problems.append(f'{link.get("name")}: {n.get("inertial", 0)} inertials')
    for kind in ('visual', 'collision'):
        if not 1 <= n.get(kind, 0) <= 48:
            problems.append(f'{link.get("name")}: {n.get(kind, 0)} {kind}s')
    for inertial in link.findall('inertial'):
        m = counts(inertial)
        if m.get('mass') != 1 or m.get('inertia') != 1 or m.get('origin', 0) > 1 or (
                set(m) - {'origin', 'mass', 'inertia'}):
            problems.append(f'{link.get("name")}: inertial {m}')
        for mass in inertial.findall('mass'):
            if not float(mass.get('value', 'nan')) > 0:
                problems.append(f'{link.get("name")}: mass {mass.get("value")}')
    for owner in link.findall('visual') + link.findall('collision'):
        m = counts(owner)
        if m.get('geometry') != 1 or m.get('origin', 0) > 1 or set(m) - {'origin', 'geometry'}:
            problems.append(f'{link.get("name")}: {owner.tag} {m}')
        for geometry in owner.findall('geometry'):
            shapes = list(geometry)
            if len(shapes) != 1 or shapes[0].tag not in PRIMITIVES:
                problems.append(f'{link.get("name")}: geometry {[s.tag for s in shapes]}')
                continue
            values = [float(x) for value in shapes[0].attrib.values() for x in value.split()]
            if not values or not all(v > 0 for v in values):
                problems.append(f'{link.get("name")}: {shapes[0].tag} {shapes[0].attrib}')
    return problems


def joint_problems(joint: ET.Element) -> list[str]:
    problems = []
    if joint.get('type') != 'fixed':
        problems.append(f'{joint.get("name")}: type {joint.get("type")}')
    if counts(joint) != {'parent': 1, 'child': 1, 'origin': 1}:
        problems.append(f'{joint.get("name")}: children {counts(joint)}')
    return problems


def expand(body: str) -> ET.Element:
    """Expand macro calls after including the installed macro file; return the robot."""
    document = (f'<?xml version="1.0"?>\n<robot name="test_robot" '
                f'xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
                f'<xacro:include filename="{paths.xacro_file()}"/>\n{body}\n</robot>')
    doc = xacro.parse(document)
    xacro.init_stacks(None)
    xacro.process_doc(doc)
    return ET.fromstring(doc.toxml())


LINK = 'name="part" mass="12.5" ixx="1.5" iyy="2.5" izz="3.5"'
LINK_CALLS = {
    'part_link_box': f'<xacro:pylon_part_link {LINK} shape="box" size="1 2 3"/>',
    'part_link_cylinder': f'<xacro:pylon_part_link {LINK} shape="cylinder" radius="0.5" '
                          f'length="2" rpy="0 ${{pi/2}} 0"/>',
    'part_link_sphere': f'<xacro:pylon_part_link {LINK} shape="sphere" radius="0.4"/>',
    'box_link': f'<xacro:pylon_box_link {LINK} size="1 2 3" xyz="0.1 0 0"/>',
    'cylinder_link': f'<xacro:pylon_cylinder_link {LINK} radius="0.5" length="2"/>',
    'sphere_link': f'<xacro:pylon_sphere_link {LINK} radius="0.4" inertial_xyz="0 0 0.2"/>',
    'link_with_block': (f'<xacro:pylon_link {LINK}><primitives>'
                        f'<xacro:pylon_box size="1 1 1"/>'
                        f'<xacro:pylon_sphere radius="0.5" xyz="0 0 1"/>'
                        f'<xacro:pylon_cylinder radius="0.2" length="3" rpy="0 1.5 0"/>'
                        f'</primitives></xacro:pylon_link>'),
}


def test_xacro_file_is_found_and_is_the_source_file():
    path = paths.xacro_file()
    assert path.is_file() and path.name == 'proxy_parts.urdf.xacro'
    assert path.read_text() == SOURCE.read_text()
    assert paths.urdf_dir() == path.parent


def test_macro_file_alone_expands_to_an_empty_robot():
    doc = xacro.process_file(str(paths.xacro_file()))
    robot = ET.fromstring(doc.toxml())
    assert robot.tag == 'robot' and list(robot) == []


@pytest.mark.parametrize('call', LINK_CALLS.values(), ids=LINK_CALLS.keys())
def test_every_link_macro_yields_allowlisted_xml(call):
    robot = expand(call)
    assert allowlist_problems(robot) == []
    (link,) = robot
    assert link.tag == 'link' and link.get('name') == 'part'
    inertial = link.find('inertial')
    assert inertial.find('mass').get('value') == '12.5'
    assert inertial.find('inertia').attrib == {
        'ixx': '1.5', 'iyy': '2.5', 'izz': '3.5', 'ixy': '0', 'ixz': '0', 'iyz': '0'}
    # each primitive is one visual and one identical collision
    visuals, collisions = link.findall('visual'), link.findall('collision')
    assert len(visuals) == len(collisions) >= 1
    for visual, collision in zip(visuals, collisions, strict=True):
        assert ET.tostring(visual).replace(b'visual', b'x') == \
            ET.tostring(collision).replace(b'collision', b'x')


def test_part_link_puts_the_primitive_at_the_given_origin():
    robot = expand(f'<xacro:pylon_part_link {LINK} shape="cylinder" radius="0.5" length="2" '
                   f'xyz="0.1 0.2 0.3" rpy="0 ${{pi/2}} 0" inertial_xyz="0 0 0.5"/>')
    link = robot.find('link')
    assert link.find('inertial/origin').attrib == {'xyz': '0 0 0.5', 'rpy': '0 0 0'}
    for kind in ('visual', 'collision'):
        assert link.find(f'{kind}/origin').attrib == {'xyz': '0.1 0.2 0.3',
                                                      'rpy': '0 1.5707963267948966 0'}
        assert link.find(f'{kind}/geometry/cylinder').attrib == {'radius': '0.5', 'length': '2'}


def test_fixed_joint_yields_allowlisted_xml():
    robot = expand(f'<xacro:pylon_box_link {LINK.replace("part", "a")} size="1 1 1"/>'
                   f'<xacro:pylon_box_link {LINK.replace("part", "b")} size="1 1 1"/>'
                   '<xacro:pylon_fixed_joint name="a_to_b" parent="a" child="b" '
                   'xyz="1 2 3" rpy="0 0 1.5"/>')
    assert allowlist_problems(robot) == []
    joint = robot.find('joint')
    assert joint.attrib == {'name': 'a_to_b', 'type': 'fixed'}
    assert joint.find('parent').get('link') == 'a' and joint.find('child').get('link') == 'b'
    assert joint.find('origin').attrib == {'xyz': '1 2 3', 'rpy': '0 0 1.5'}


@pytest.mark.parametrize('joint_type', ['revolute', 'prismatic'])
def test_servo_joint_extension_adds_axis_and_limit(joint_type):
    robot = expand(f'<xacro:pylon_box_link {LINK.replace("part", "a")} size="1 1 1"/>'
                   f'<xacro:pylon_box_link {LINK.replace("part", "b")} size="1 1 1"/>'
                   f'<xacro:pylon_servo_joint name="hinge" type="{joint_type}" parent="a" '
                   'child="b" xyz="0 0 1" rpy="0 0 0" axis="0 1 0" lower="-1.5" upper="1.5" '
                   'effort="50" velocity="0.5"/>')
    joint = robot.find('joint')
    assert joint.get('type') == joint_type
    assert joint.find('axis').attrib == {'xyz': '0 1 0'}
    assert joint.find('limit').attrib == {'lower': '-1.5', 'upper': '1.5', 'effort': '50',
                                          'velocity': '0.5'}
    # outside the allowlist on purpose: the proxy allowlist rejects it
    problems = allowlist_problems(robot)
    assert 'tag <axis>' in problems and 'tag <limit>' in problems
    assert f'hinge: type {joint_type}' in problems


@pytest.mark.parametrize('call', [
    f'<xacro:pylon_part_link {LINK} shape="cone" radius="1"/>',
    f'<xacro:pylon_part_link {LINK} shape="box" size="1 0 1"/>',
    f'<xacro:pylon_part_link {LINK} shape="box" size="1 1"/>',
    f'<xacro:pylon_part_link {LINK} shape="cylinder" radius="0.5" length="-1"/>',
    f'<xacro:pylon_part_link {LINK} shape="sphere" radius="0"/>',
    '<xacro:pylon_box_link name="p" mass="0" ixx="1" iyy="1" izz="1" size="1 1 1"/>',
    '<xacro:pylon_box_link name="p" mass="nan" ixx="1" iyy="1" izz="1" size="1 1 1"/>',
    '<xacro:pylon_servo_joint name="j" type="continuous" parent="a" child="b" axis="0 0 1" '
    'lower="-1" upper="1" effort="1" velocity="1"/>',
    '<xacro:pylon_servo_joint name="j" type="revolute" parent="a" child="b" axis="0 0 1" '
    'lower="1" upper="-1" effort="1" velocity="1"/>',
], ids=['shape', 'box_zero', 'box_two_sizes', 'cylinder_length', 'sphere_radius', 'mass_zero',
        'mass_nan', 'servo_type', 'servo_limits'])
def test_macros_refuse_what_the_allowlist_would_reject(call):
    with pytest.raises(xacro.XacroException):
        expand(call)


def test_installed_share_is_preferred():
    share = Path(get_package_share_directory('pylon_description'))
    assert paths.xacro_file() == share / 'urdf' / 'proxy_parts.urdf.xacro'


def test_source_tree_is_the_fallback_without_an_installed_package(monkeypatch):
    def missing(package):
        raise PackageNotFoundError(package)

    monkeypatch.setattr(paths, 'get_package_share_directory', missing)
    assert paths.xacro_file() == SOURCE
