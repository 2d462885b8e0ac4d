"""The controller's mass properties from the proxy URDF, against the simulator's own."""

import numpy as np
from pylon_protocol import rotations
from pylon_sim.game.vessel import mass_properties as sim_mass_properties
from pylon_sim.game.vessel import part_masses
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.mod import proxy_model
from pylon_vehicle_control.mass_properties import mass_properties
import pytest


@pytest.mark.parametrize('scenario,key', [('orbit', 'sat'), ('orbit', 'target'),
                                          ('surface', 'rover')])
def test_mass_properties_match_the_simulator(scenario, key):
    flown = load_scenario(scenario)
    keys = [v.key for v in flown.vessels]
    assert key in keys, (f'scenario {scenario!r} has no vessel {key!r} (renamed?): it has '
                         f'{keys}; name the vessel to check here')
    vessel = flown.vessel(key)
    spec = vessel.spec
    resources = spec.initial_resources()
    truth = sim_mass_properties(spec, resources)
    urdf = proxy_model.build_urdf(spec, part_masses(spec, resources))
    got = mass_properties(urdf)
    assert got.mass == pytest.approx(truth.mass, rel=1e-5)
    root = spec.parts[proxy_model.link_order(spec)[0]]
    # the URDF is in the root link's frame: compare in the vessel frame's axes
    rot = rotations.to_matrix(root.rotation)
    com_vessel = np.asarray(root.position) + rot @ got.com
    np.testing.assert_allclose(com_vessel, truth.com, atol=1e-4)
    # the proxy draws every part as a box (a cylinder as its bounding box): its moments
    # are the vessel's or somewhat larger, never smaller (the controller errs on the safe
    # side: it expects less angular acceleration than it gets)
    ratio = np.diag(rot @ got.inertia @ rot.T) / np.diag(truth.inertia)
    assert np.all(ratio >= 1.0 - 1e-6) and np.all(ratio <= 1.4), ratio


def test_unusable_models_are_refused():
    with pytest.raises(ValueError):
        mass_properties('<robot')
    with pytest.raises(ValueError):
        mass_properties('<robot name="x"><link name="a"/></robot>')
