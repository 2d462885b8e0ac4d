"""A mission stack for the integration tests: the launch plan's processes, in their domains.

``mission_stack(vehicles, scenario, components=('bridge',), rate=1.0, deferred=(),
**options)`` starts
what ``pylon_components.mission_plan`` plans (the launch file and ``make demo`` start the
same), on UDP ports and ROS domains of the test session's own: the simulator (checking its
packets, at ``rate`` x real time), ``sim_manager`` and ``referee`` in the management
domain, and each vehicle's chosen components in its domain. It returns a ``MissionStack``
with the domains and the processes by name (``udp_bridge_2``: vehicle 2's bridge);
``revive()`` starts again those a test ended. The processes named in ``deferred`` are
planned but not started: a test starts each with ``start(name)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pylon_common import mission
from pylon_protocol import management
from pylon_testing.plan import load_components
import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class MissionStack:
    """A running mission: its domains, ports and processes."""

    base: int
    vehicles: int
    management_port: int
    planned: list
    processes: dict = field(default_factory=dict)
    commands: dict = field(default_factory=dict)      # name: (command line, environment)
    starter: Callable | None = None

    def domain(self, vehicle: int) -> int:
        """Return vehicle ``vehicle``'s ROS domain."""
        return mission.vehicle_domain(self.base, vehicle)

    def start(self, name: str) -> None:
        """Start the planned process ``name`` (again)."""
        cmd, env = self.commands[name]
        self.processes[name] = self.starter(cmd, name=name, env=env)

    def revive(self, *names: str) -> list[str]:
        """Start again each process of ``names`` (default: all) that exited; return those."""
        dead = [name for name in names or self.processes
                if self.processes[name].returncode is not None]
        for name in dead:
            self.start(name)
        return dead


@pytest.fixture(scope='module')
def mission_stack(module_ros_process, free_udp_port, free_udp_port_series,
                  module_ros_domain_block) -> Callable[..., MissionStack]:
    """Return ``start(vehicles, scenario, components, rate, deferred, **plan options)``."""
    pc = load_components(ROOT)

    def start(vehicles: int, scenario: str, components=('bridge',), rate: float = 1.0,
              deferred=(), **options) -> MissionStack:
        base = module_ros_domain_block(vehicles + 1)
        state = free_udp_port_series(vehicles, management.PORT_STRIDE)
        command = free_udp_port_series(vehicles, management.PORT_STRIDE)
        stack = MissionStack(base, vehicles, free_udp_port(), [], starter=module_ros_process)
        stack.planned = pc.mission_plan(
            vehicles, scenario=scenario, domain_base=base, ports=(state, command, 0),
            management_port=stack.management_port, vehicle_components=components, **options)
        for proc in stack.planned:
            cmd = pc.command_line(proc)
            if proc.node is None:
                cmd += ['--check-packets', '--rate', f'{rate:g}']
            name = proc.executable if proc.vehicle is None else \
                f'{proc.executable}_{proc.vehicle}'
            stack.commands[name] = (cmd, None if proc.domain is None else
                                    {'ROS_DOMAIN_ID': str(proc.domain)})
            if name not in deferred:
                stack.start(name)
        return stack
    return start
