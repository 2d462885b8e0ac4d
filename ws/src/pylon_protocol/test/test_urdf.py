"""Tests for the proxy URDF: the allowlist, the validator and the box builder."""


from hypothesis import given
from hypothesis import strategies as st
from pylon_protocol import urdf as urdf_module
from pylon_protocol.errors import ProtocolError
from pylon_protocol.urdf import build_proxy_urdf, ProxyPart, URDF_ALLOWLIST, validate_urdf
from pylon_testing.cost import cpu_seconds
from pylon_testing.model_samples import (
    COLLISION,
    FAST,
    INERTIAL,
    joint,
    link,
    P,
    reason_of,
    SERVO_CHILDREN,
    URDF,
    urdf_text,
    VID,
    VISUAL,
)
import pytest

# Builder


def test_build_proxy_urdf_is_valid():
    urdf = build_proxy_urdf(VID, [ProxyPart(None, (1, 2, 3), 10.0),
                                  ProxyPart(0, (1, 1, 1), 1.0, (0, 0, 2), (0.1, 0.2, 0.3))])
    assert urdf.startswith('<?xml version="1.0"?>\n<!--')
    structure = validate_urdf(urdf, vessel_id=VID)
    assert structure.joints[0].xyz == (0.0, 0.0, 2.0)
    assert structure.joints[0].rpy == (0.1, 0.2, 0.3)
    with pytest.raises(ProtocolError):
        build_proxy_urdf(VID, [ProxyPart(0, (1, 1, 1), 1.0)])
    with pytest.raises(ProtocolError):
        build_proxy_urdf(VID, [ProxyPart(None, (1, 1, 1), 0.0)])  # mass must be > 0


# URDF allowlist


def test_base_urdf_valid():
    structure = validate_urdf(URDF, vessel_id=VID)
    assert structure.robot_name == f'{P}_active_vessel'
    assert structure.links == tuple(f'{P}_link_{i:04d}' for i in range(3))
    assert structure.root_link == f'{P}_link_0000'
    assert structure.joints[0].rpy == (0.0, 0.0, 1.5707963267948966)
    assert validate_urdf(URDF) == structure  # vid8 from the robot name


@pytest.mark.parametrize(
    'text',
    [
        URDF.replace('<?xml version="1.0"?>\n', ''),  # declaration optional
        URDF.replace('<inertial>', '<!-- comment --><inertial>'),  # comments anywhere
        urdf_text(joints=[joint(2, 1), joint(1, 0)]),  # any joint order
        urdf_text(links=[link(2), link(0), link(1)]),
        urdf_text(links=[link(0), link(1), link(2)] , joints=[joint(1, 2), joint(2, 0)]),
        urdf_text(links=[link(0, INERTIAL + VISUAL * 48 + COLLISION * 48)], joints=[]),
        URDF.replace('<origin xyz="0 0 0"/>', ''),  # optional origin in collision
        URDF.replace('<origin xyz="0 0 0" rpy="0 0 0"/><mass', '<mass'),
        URDF.replace('<box size="1 2 3"/>', '<cylinder radius="0.5" length="2"/>'),
        URDF.replace('size="1 2 3"', 'size=" 1E-05\t2.5e+3\n.5 "'),
        URDF.replace('xyz="1 2 3"', 'xyz="-0 +1 -1.5E+16"'),
        URDF.replace('ixy="0"', 'ixy="-0.25"'),
    ],
)
def test_urdf_accepted_variants(text):
    validate_urdf(text, vessel_id=VID)


def _sub(old, new, text=URDF, count=1):
    assert old in text
    return text.replace(old, new, count)


BAD_URDFS = {
    'doctype': _sub('<robot', '<!DOCTYPE robot>\n<robot'),
    'entity': _sub('<?xml version="1.0"?>\n', '<?xml version="1.0"?>\n<!DOCTYPE r [\n'
                   '<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>\n'),
    'cdata': _sub('<inertial>', '<![CDATA[x]]><inertial>'),
    'undefined_entity': _sub('<inertial>', '&foo;<inertial>'),
    'pi': _sub('<inertial>', '<?php echo 1 ?><inertial>'),
    'top_pi': _sub('<robot', '<?xml-stylesheet href="x"?><robot'),
    'namespace': _sub('<robot ', '<robot xmlns="http://x" '),
    'prefixed_ns': _sub('<robot ', '<robot xmlns:x="http://x" '),
    'mesh': _sub('<box size="1 2 3"/>', '<mesh filename="package://x.dae"/>'),
    'material': _sub('<geometry>', '<material name="red"/><geometry>'),
    'transmission': _sub('</robot>', '<transmission name="t"/></robot>'),
    'gazebo': _sub('</robot>', '<gazebo/></robot>'),
    'root_not_robot': '<link name="x"/>',
    'nested_robot': _sub('</robot>', '<robot name="x"/></robot>'),
    'link_in_link': _sub('<inertial>', f'<link name="{P}_link_0009"/><inertial>'),
    'visual_name': _sub('<visual>', '<visual name="v">'),
    'extra_attribute': _sub('<mass value="1"/>', '<mass value="1" unit="kg"/>'),
    'ns_attribute': _sub('<mass value="1"/>', '<mass value="1" xml:lang="en"/>'),
    'text_in_link': _sub('<inertial>', 'hello<inertial>'),
    'tail_text': _sub('</inertial>', '</inertial>tail'),
    'text_in_robot': _sub('</robot>', 'x</robot>'),
    'robot_name': urdf_text(robot='pylon_ffffffff_active_vessel'),
    'robot_name_format': urdf_text(robot='vessel'),
    'link_prefix': URDF.replace(f'{P}_link_0002', 'pylon_ffffffff_link_0002'),
    'link_digits': URDF.replace(f'{P}_link_0002', f'{P}_link_002'),
    'link_name_chars': URDF.replace(f'{P}_link_0002', f'{P}-link-0002'),
    'joint_name': _sub(f'{P}_joint_0001', f'{P}_jnt_0001'),
    'long_name': _sub(f'{P}_joint_0001', 'j' * 129),
    'missing_name': _sub(f' name="{P}_joint_0001"', ''),
    'revolute': _sub('type="fixed"', 'type="revolute"'),
    'continuous': _sub('type="fixed"', 'type="continuous"'),
    'missing_type': _sub(' type="fixed"', ''),
    'axis_on_fixed': _sub('</joint>', '<axis xyz="0 0 1"/></joint>'),
    'missing_parent': _sub(f'<parent link="{P}_link_0000"/>', ''),
    'missing_child': _sub(f'<child link="{P}_link_0001"/>', ''),
    'missing_origin': _sub('<origin xyz="1 2 3" rpy="0 0 1.5707963267948966"/>', ''),
    'two_parents': _sub(f'<parent link="{P}_link_0000"/>',
                        f'<parent link="{P}_link_0000"/><parent link="{P}_link_0000"/>'),
    'two_origins': _sub('<origin xyz="1 2 3"', '<origin/><origin xyz="1 2 3"'),
    'no_inertial': urdf_text(links=[link(0, VISUAL + COLLISION), link(1), link(2)]),
    'two_inertials': urdf_text(links=[link(0, INERTIAL * 2 + VISUAL + COLLISION), link(1),
                                      link(2)]),
    'no_visual': urdf_text(links=[link(0, INERTIAL + COLLISION), link(1), link(2)]),
    'no_collision': urdf_text(links=[link(0, INERTIAL + VISUAL), link(1), link(2)]),
    '49_visuals': urdf_text(links=[link(0, INERTIAL + VISUAL * 49 + COLLISION)], joints=[]),
    '49_collisions': urdf_text(links=[link(0, INERTIAL + VISUAL + COLLISION * 49)], joints=[]),
    'no_mass': _sub('<mass value="1"/>', ''),
    'no_inertia': _sub('<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>', ''),
    'no_geometry': _sub('<geometry><box size="1 2 3"/></geometry>', ''),
    'empty_geometry': _sub('<box size="1 2 3"/>', ''),
    'two_primitives': _sub('<box size="1 2 3"/>', '<box size="1 2 3"/><sphere radius="1"/>'),
    'box_in_visual': _sub('<geometry><box size="1 2 3"/></geometry>', '<box size="1 2 3"/>'),
    'box_children': _sub('<box size="1 2 3"/>', '<box size="1 2 3"><origin/></box>'),
    'box_zero': _sub('size="1 2 3"', 'size="1 0 3"'),
    'box_negative': _sub('size="1 2 3"', 'size="1 -2 3"'),
    'box_two_numbers': _sub('size="1 2 3"', 'size="1 2"'),
    'box_nan': _sub('size="1 2 3"', 'size="1 nan 3"'),
    'box_inf': _sub('size="1 2 3"', 'size="1 inf 3"'),
    'box_overflow': _sub('size="1 2 3"', 'size="1 1e400 3"'),
    'box_underscore': _sub('size="1 2 3"', 'size="1 2_0 3"'),
    'box_hex': _sub('size="1 2 3"', 'size="1 0x2 3"'),
    'box_comma': _sub('size="1 2 3"', 'size="1,2,3"'),
    'box_missing': _sub('<box size="1 2 3"/>', '<box/>'),
    'cylinder_zero': _sub('<box size="1 2 3"/>', '<cylinder radius="0" length="2"/>'),
    'cylinder_missing_length': _sub('<box size="1 2 3"/>', '<cylinder radius="1"/>'),
    'sphere_negative': _sub('radius="0.5"', 'radius="-0.5"'),
    'mass_zero': _sub('<mass value="1"/>', '<mass value="0"/>'),
    'mass_two': _sub('<mass value="1"/>', '<mass value="1 2"/>'),
    'inertia_missing_izz': _sub(' izz="1"', ''),
    'inertia_nan': _sub('ixy="0"', 'ixy="NaN"'),
    'origin_two_numbers': _sub('xyz="1 2 3"', 'xyz="1 2"'),
    'origin_garbage': _sub('rpy="0 0 1.5707963267948966"', 'rpy="a b c"'),
    'two_roots': urdf_text(joints=[joint(1, 0)]),
    'cycle': urdf_text(joints=[joint(1, 0), joint(2, 1), joint(3, 2, child=0)]),
    'detached_cycle': urdf_text(links=[link(i) for i in range(4)],
                                joints=[joint(1, 0), joint(2, 3, child=2), joint(3, 2, child=3)]),
    'self_loop': urdf_text(links=[link(0), link(1)], joints=[joint(1, 0), joint(2, 1, 1)]),
    'unknown_link': urdf_text(joints=[joint(1, 0), joint(2, 1, child=7)]),
    'duplicate_link': urdf_text(links=[link(0), link(1), link(1)], joints=[joint(1, 0)]),
    'duplicate_joint': urdf_text(joints=[joint(1, 0), joint(1, 1, child=2)]),
    'two_parent_joints': urdf_text(joints=[joint(1, 0), joint(2, 1), joint(3, 0, child=2)]),
    'no_links': urdf_text(links=[], joints=[]),
    'not_xml': 'robot',
    'empty': '',
    'unclosed': URDF.replace('</robot>', ''),
    'two_roots_xml': URDF + '<robot name="x"/>',
}


@pytest.mark.parametrize('name', sorted(BAD_URDFS))
def test_urdf_rejected(name):
    assert reason_of(validate_urdf, BAD_URDFS[name], vessel_id=VID) == 'bad_urdf'


def test_urdf_rejects_non_strings_and_bad_vessel():
    assert reason_of(validate_urdf, b'<robot/>') == 'bad_urdf'
    assert reason_of(validate_urdf, URDF, vessel_id='XYZ') == 'bad_urdf'


def test_dtd_rejected_before_parsing():
    laughs = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
              + ''.join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i else "&lol;" * 10}">'
                        for i in range(9))
              + ']><robot name="&lol8;"/>')
    reasons = []
    assert cpu_seconds(lambda: reasons.append(reason_of(validate_urdf, laughs))) < 0.1
    assert reasons == ['bad_urdf']


def test_element_limit():
    links = [link(i) for i in range(2001)]  # 10 elements each: 20011 in all
    joints = [joint(i, i - 1) for i in range(1, 2)]
    with pytest.raises(ProtocolError) as info:
        validate_urdf(urdf_text(links=links, joints=joints), vessel_id=VID)
    assert 'elements' in info.value.detail


@pytest.mark.parametrize(('count', 'ok'), [(2048, True), (2049, False)])
def test_link_limit(monkeypatch, count, ok):
    monkeypatch.setattr(urdf_module, 'MAX_ELEMENTS', 10**6)  # isolate the link limit
    minimal = INERTIAL + VISUAL + COLLISION
    text = urdf_text(links=[link(i, minimal) for i in range(count)],
                     joints=[joint(i, i - 1) for i in range(1, count)])
    if ok:
        assert len(validate_urdf(text, vessel_id=VID).links) == 2048
    else:
        assert reason_of(validate_urdf, text, vessel_id=VID) == 'bad_urdf'


# Servo joint extension

@pytest.mark.parametrize('jtype', ['revolute', 'prismatic'])
def test_servo_joints_behind_flag(jtype):
    text = urdf_text(joints=[joint(1, 0, jtype=jtype, extra=SERVO_CHILDREN), joint(2, 1)])
    assert reason_of(validate_urdf, text, vessel_id=VID) == 'bad_urdf'
    structure = validate_urdf(text, vessel_id=VID, allow_servo_joints=True)
    servo = structure.joints[0]
    assert servo.type == jtype and servo.axis == (0.0, 0.0, 1.0)
    assert servo.limit == (-1.5, 1.5, 10.0, 2.0)
    assert structure.joints[1].axis is None and structure.joints[1].limit is None


@pytest.mark.parametrize(
    'extra',
    [
        '',  # axis and limit are required
        '<axis xyz="0 0 1"/>',
        '<limit lower="0" upper="1" effort="1" velocity="1"/>',
        '<axis xyz="0 0 1"/>' + SERVO_CHILDREN,
        SERVO_CHILDREN + '<limit lower="0" upper="1" effort="1" velocity="1"/>',
        '<axis xyz="0 0 0"/><limit lower="0" upper="1" effort="1" velocity="1"/>',
        '<axis xyz="0 1"/><limit lower="0" upper="1" effort="1" velocity="1"/>',
        '<axis/><limit lower="0" upper="1" effort="1" velocity="1"/>',
        '<axis xyz="0 0 1"/><limit lower="2" upper="1" effort="1" velocity="1"/>',
        '<axis xyz="0 0 1"/><limit lower="0" upper="inf" effort="1" velocity="1"/>',
        '<axis xyz="0 0 1"/><limit lower="0" upper="1" effort="1"/>',
        '<axis xyz="0 0 1"/><limit lower="0" upper="1" effort="1" velocity="1" soft="1"/>',
        '<axis xyz="0 0 1" rpy="0 0 0"/><limit lower="0" upper="1" effort="1" velocity="1"/>',
    ],
)
def test_servo_joint_rules(extra):
    text = urdf_text(joints=[joint(1, 0, jtype='revolute', extra=extra), joint(2, 1)])
    assert reason_of(validate_urdf, text, vessel_id=VID, allow_servo_joints=True) == 'bad_urdf'


def test_servo_flag_keeps_other_rules():
    for name in ('continuous', 'axis_on_fixed', 'mesh'):
        assert reason_of(validate_urdf, BAD_URDFS[name], vessel_id=VID,
                         allow_servo_joints=True) == 'bad_urdf'


def test_allowlist_is_one_table_with_feature_rows():
    gated = {tag for tag, rule in URDF_ALLOWLIST.items() if rule.feature}
    assert gated == {'axis', 'limit'}
    assert set(URDF_ALLOWLIST) == {
        'robot', 'link', 'joint', 'parent', 'child', 'origin', 'inertial', 'mass',
        'inertia', 'visual', 'collision', 'geometry', 'box', 'cylinder', 'sphere', 'axis',
        'limit'}


# Robustness


@FAST
@given(st.text(alphabet=st.sampled_from(list('<>/="! ?-[]&;abrotlinkjyxz01')), max_size=120))
def test_random_xml_only_raises_protocol_error(text):
    for candidate in (text, URDF.replace('<inertial>', text, 1)):
        try:
            validate_urdf(candidate)
        except ProtocolError:
            pass


@pytest.mark.parametrize('name,ok', [('mast_hinge', True), ('_arm2', True),
                                     ('Mast_Hinge', False), ('mast-hinge', False),
                                     ('2arm', False), ('a' * 65, False)])
def test_servo_joint_may_carry_its_joint_states_name(name, ok):
    servo = joint(1, 0, jtype='revolute', extra=SERVO_CHILDREN).replace(
        f'{P}_joint_0001', name)
    text = urdf_text(joints=[servo, joint(2, 1)])
    if ok:
        structure = validate_urdf(text, vessel_id=VID, allow_servo_joints=True)
        assert structure.joints[0].name == name
    else:
        assert reason_of(validate_urdf, text, vessel_id=VID,
                         allow_servo_joints=True) == 'bad_urdf'
    # never without the flag, and a fixed joint keeps the pylon name rule
    assert reason_of(validate_urdf, text, vessel_id=VID) == 'bad_urdf'
    fixed = urdf_text(joints=[joint(1, 0).replace(f'{P}_joint_0001', 'mast_hinge'),
                              joint(2, 1)])
    assert reason_of(validate_urdf, fixed, vessel_id=VID, allow_servo_joints=True) == \
        'bad_urdf'
