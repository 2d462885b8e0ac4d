"""The vehicle manager's collaborators on their own: the push audit's rule, the router's needs."""

import inspect

from pylon_sim.mod.command_router import Manager
from pylon_sim.mod.push_audit import PushAudit
from pylon_sim.mod.vehicle_manager import VehicleManager
import pytest


@pytest.mark.parametrize('quiet, in_force, live, unbacked', [
    (True, False, False, 0),      # nothing in force, nothing pushed: backed
    (False, False, True, 1),      # pushed with nothing in force: never backed
    (True, True, False, 1),       # a command in force without a live lease, even if quiet
    (False, True, True, 0),       # a live command pushing: backed
])
def test_a_step_is_backed_by_a_live_command_or_by_pushing_nothing(quiet, in_force, live,
                                                                  unbacked):
    audit = PushAudit()
    audit.step(1.0, quiet, in_force, live)
    assert audit.unbacked_steps == unbacked
    assert audit.unbacked_at == (1.0 if unbacked else None)
    assert audit.commanded_steps == int(in_force)
    assert (audit.pushed_steps, audit.pushed_at) == ((0, None) if quiet else (1, 1.0))


def test_a_pushing_run_starts_once_and_ends_with_a_quiet_step():
    audit = PushAudit()
    for now, quiet in ((1.0, False), (2.0, False), (3.0, True), (4.0, False)):
        audit.step(now, quiet, True, True)
        if now == 2.0:
            assert audit.pushing_since == 1.0
        if now == 3.0:
            assert audit.pushing_since is None and audit.pushed_at == 2.0
    assert audit.pushing_since == 4.0 and audit.pushed_steps == 3
    assert audit.status() == {'unbacked_steps': 0, 'unbacked_at': None, 'pushed_steps': 3,
                              'pushed_at': 4.0, 'pushing_since': 4.0, 'commanded_steps': 4}


def test_the_vehicle_manager_is_what_the_router_needs():
    control = VehicleManager()
    for name, member in vars(Manager).items():
        if inspect.isfunction(member) and not name.startswith('_'):
            own = getattr(VehicleManager, name)
            assert inspect.signature(own) == inspect.signature(member), name
    for name in Manager.__annotations__:
        assert hasattr(control, name), name
    assert control.router.manager is control and control.router.authority is control.authority


def test_what_the_collaborators_keep_is_read_only_on_the_manager():
    control = VehicleManager()
    assert control.refused is control.router.refused
    assert control.engine_thrust is control.actuation.engine_thrust
    assert control.pushed_steps == 0
    with pytest.raises(AttributeError):
        control.engine_thrust = {}
