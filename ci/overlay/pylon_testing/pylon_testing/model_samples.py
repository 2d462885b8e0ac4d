"""Samples of the vessel model tests (pylon_protocol): URDF texts, bundles, hypothesis settings.

The proxy URDF of vessel ``VID`` with links and joints named as the mod names them
(``pylon_<first 8 hex digits>_link_NNNN``), its model bundle, and ``json_values`` for the
hypothesis tests of the decoders.
"""

import hashlib

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from pylon_protocol.bundle import build_bundle
from pylon_protocol.errors import ProtocolError
import pytest

from pylon_testing.properties import examples

FAST = settings(max_examples=examples(40), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

VID = '0123456789abcdef' * 2
V8 = VID[:8]
SESSION = 'ab' * 16
OTHER_SESSION = 'cd' * 16
P = f'pylon_{V8}'

INERTIAL = ('<inertial><origin xyz="0 0 0" rpy="0 0 0"/><mass value="1"/>'
            '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>')
VISUAL = ('<visual><origin xyz="0 0 0" rpy="0 0 0"/><geometry><box size="1 2 3"/></geometry>'
          '</visual>')
COLLISION = ('<collision><origin xyz="0 0 0"/><geometry><sphere radius="0.5"/></geometry>'
             '</collision>')


def link(index, body=None):
    """Return link ``index`` of the proxy (inertial, visual and collision unless ``body``)."""
    body = INERTIAL + VISUAL + COLLISION if body is None else body
    return f'<link name="{P}_link_{index:04d}">{body}</link>'


def joint(index, parent, child=None, jtype='fixed', extra=''):
    """Return joint ``index`` from link ``parent`` to link ``child`` (default ``index``)."""
    child = index if child is None else child
    return (f'<joint name="{P}_joint_{index:04d}" type="{jtype}">'
            f'<parent link="{P}_link_{parent:04d}"/><child link="{P}_link_{child:04d}"/>'
            f'<origin xyz="1 2 3" rpy="0 0 1.5707963267948966"/>{extra}</joint>')


def urdf_text(links=None, joints=None, robot=None):
    """Return a proxy URDF document (three links in a chain unless given)."""
    links = [link(0), link(1), link(2)] if links is None else links
    joints = [joint(1, 0), joint(2, 1)] if joints is None else joints
    robot = f'{P}_active_vessel' if robot is None else robot
    return ('<?xml version="1.0"?>\n<!-- PyLoN primitive proxy -->\n'
            f'<robot name="{robot}">\n' + '\n'.join(links + joints) + '\n</robot>\n')


URDF = urdf_text()
PART_FRAMES = {100: f'{P}_link_0000', 101: f'{P}_link_0001', 102: f'{P}_link_0002'}


def bundle(urdf=URDF, **change):
    """Return a validated model bundle of ``urdf`` with ``change`` applied afterwards."""
    value = build_bundle(
        session_id=SESSION, vessel_id=VID, urdf=urdf, base_to_root_position=[0.5, 0, -1],
        base_to_root_rotation=[0, 0, 0, 2], part_frames=PART_FRAMES,
    )
    value.update(change)
    return value


def raw_bundle(**change):
    """Return a bundle dict built by hand (no validation) with ``change`` applied."""
    value = {
        'type': 'pylon_active_vessel_proxy', 'version': 1, 'sessionId': SESSION,
        'vesselId': VID, 'modelId': hashlib.sha256(URDF.encode()).hexdigest(),
        'geometryPolicy': 'primitive_proxy_only', 'persistencePolicy': 'memory_only',
        'rootFrame': f'{P}_link_0000', 'baseToRootPosition': [0, 0, 0],
        'baseToRootRotation': [0, 0, 0, 1], 'urdf': URDF,
        'partFrames': [{'partFlightId': k, 'frame': v} for k, v in PART_FRAMES.items()],
    }
    value.update(change)
    return value


def reason_of(call, *args, **kwargs):
    """Return the ``ProtocolError`` reason ``call(*args, **kwargs)`` raises (it must raise)."""
    with pytest.raises(ProtocolError) as info:
        call(*args, **kwargs)
    return info.value.reason


SERVO_CHILDREN = '<axis xyz="0 0 1"/><limit lower="-1.5" upper="1.5" effort="10" velocity="2"/>'

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats()
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=8,
)
