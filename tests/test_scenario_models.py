"""Every scenario vessel's proxy model: xacro expands, and the URDF is a valid robot tree.

The URDF is checked by the protocol's strict allowlist validator (what udp_bridge accepts)
and read back as a robot: one root link, every joint naming existing links, every link
reachable, positive mass and a positive-definite inertia about the centre of mass.
"""

from pathlib import Path

import numpy as np
from pylon_protocol.urdf import validate_urdf
from pylon_sim.game.vessel import part_masses
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.mod import proxy_model
from pylon_vehicle_control.mass_properties import mass_properties
import pytest

ROOT = Path(__file__).resolve().parents[1]
VESSELS = [(path.stem, vessel.key)
           for path in sorted((ROOT / 'config' / 'scenarios').glob('*.yaml'))
           for vessel in load_scenario(path.stem).vessels]


@pytest.mark.parametrize('scenario,key', VESSELS)
@pytest.mark.parametrize('servo_joints', [False, True])
def test_proxy_model_of_every_scenario_vessel(scenario, key, servo_joints):
    spec = load_scenario(scenario).vessel(key).spec
    urdf = proxy_model.build_urdf(spec, part_masses(spec, spec.initial_resources()),
                                  servo_joints=servo_joints)
    structure = validate_urdf(urdf, vessel_id=spec.vessel_id,
                              allow_servo_joints=servo_joints)
    links = set(structure.links)
    children = [j.child for j in structure.joints]
    assert len(children) == len(set(children)) == len(links) - 1
    assert all(j.parent in links and j.child in links for j in structure.joints)
    root = (links - set(children)).pop()
    reached, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        for joint in structure.joints:
            if joint.parent == parent:
                reached.add(joint.child)
                frontier.append(joint.child)
    assert reached == links
    props = mass_properties(urdf)
    assert props.mass > 0 and np.all(np.linalg.eigvalsh(props.inertia) > 0)
    if not servo_joints:
        assert {j.type for j in structure.joints} <= {'fixed'}
