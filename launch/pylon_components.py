"""Which components of the PyLoN workspace exist and how each one starts.

This is the one source of truth shared by ``launch/pylon.launch.py`` (Docker, a ROS
install) and the native runner (``make demo``): package, executable, node name, base
parameter files, fixed arguments and remappings of every process, and the layering of
``config/overlays/<name>.yaml`` over the base files. It is plain Python (no ``launch``
import), so the native environment and the static tests import it as is.

Paths are resolved against the workspace root: the directory above ``launch/`` (the
repository, or ``/ws`` in the Docker image, which keeps the same layout), or
``$PYLON_WORKSPACE_ROOT`` when set.

Game time: ``plan(sim_rate=R)`` runs the simulator at ``--rate R`` (R x real time) and,
unless ``use_sim_time`` says otherwise, the control on game time whenever R is not 1: the
bridge publishes ``/clock`` (``publish_clock``) and the nodes of ``GAME_TIME_NODES``
(estimator, controller, chaser) run with ``use_sim_time``; a single vehicle's simulator
also lock-steps with its controller (``--lockstep-lead``, ``LOCKSTEP_LEAD_SEC``).
``use_sim_time=True`` asks for it at any rate (a real KSP under physics warp); the default
plan is unchanged.

The racing kart (``scenario='kart'``, ``is_kart``): the plan starts the kart's components
(``KART_COMPONENTS``: ``kart_interface``, the competition's vehicle interface, and the
reference stack ``kart_localizer``, ``trajectory_publisher``, ``pure_pursuit``) instead of the
spacecraft's (``SPACECRAFT_COMPONENTS``: the attitude estimator and controller, whose lease
would fight the interface's, and the ground-truth markers); any other scenario never starts
the kart's. The kart's domain is a team's: the bridge publishes no ground truth (and so no
world TF: ``map -> base_link`` is the localizer's), publishes ``/clock``, and puts the
kart's sensors at the competition's names (``pylon_kart.sensing.bridge_arguments``); the
interface reads the IMU there too; every kart node runs on game time (unless
``use_sim_time=False``), and faster than real time the game lock-steps with the interface's
wheel commands (``KART_LOCKSTEP_LEAD_SEC``), which then follow the reference stack's
``control_cmd`` (``lockstep_command_age_sec``): the game waits for the stack; its lease, on
game time, is scaled by the rate (``lease_for_rate``: a second of wall time). RViz opens
``rviz/kart.rviz``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
import math
import os
from pathlib import Path
import tempfile

from pylon_common import mission, topics
from pylon_common.parameters import section_node
from pylon_kart import sensing
from pylon_kart.interface_params import lease_for_rate, LOCKSTEP_COMMAND_AGE_SEC
from pylon_kart.interface_params import PARAMETERS as KART_INTERFACE_PARAMETERS
from pylon_protocol import management
from pylon_protocol.packets import COMMAND_PORT, STATE_PORT
from pylon_sim.loop.admin import ADMIN_PORT
from pylon_tools import viewer
from pylon_vehicle_control.controller_params import PARAMETERS as CONTROLLER_PARAMETERS
import yaml

ROOT = Path(os.environ.get('PYLON_WORKSPACE_ROOT') or Path(__file__).resolve().parents[1])
CONFIG_DIR = ROOT / 'config'
OVERLAY_DIR = CONFIG_DIR / 'overlays'
RVIZ_CONFIG = ROOT / 'rviz' / 'pylon.rviz'
KART_RVIZ_CONFIG = ROOT / 'rviz' / 'kart.rviz'
CONTROL_SAFETY = CONFIG_DIR / 'ControlSafety.cfg'

# The simulator and the bridge must agree on the ports (defined once, by the protocol and
# the simulator); config/pylon_bridge.yaml repeats them and a static test checks that it does.
LOOPBACK = '127.0.0.1'

SCENARIOS = ('orbit', 'surface', 'launchpad', 'docking', 'kart')
DEFAULT_SCENARIO = 'orbit'
KART_SCENARIO = 'kart'
LOCKSTEP_LEAD_SEC = next(row.default for row in CONTROLLER_PARAMETERS
                         if row.name == 'command_period_sec')
"""The simulator's ``--lockstep-lead`` in a single-vehicle plan faster than real time on game
time: one command period of the controller, so that the game waits for a late controller
instead of flying on its last torque (a busy machine made a 3x demo's slews diverge)."""
KART_LOCKSTEP_LEAD_SEC = round(3 * next(row.default for row in KART_INTERFACE_PARAMETERS
                                        if row.name == 'control_period_sec'), 6)
"""The kart's ``--lockstep-lead`` faster than real time: three control periods of the
interface (0.06 s), as the reference stack's lap test runs."""

# The live view: foxglove_bridge in the Docker image and pylon_viewer natively speak the
# Foxglove WebSocket protocol on this machine only (the Docker image uses host networking:
# the host's loopback), ws://127.0.0.1:8765; the port is pylon_viewer's default.
FOXGLOVE_PORT = viewer.DEFAULT_PORT

# The joint states robot_state_publisher animates (its own name for them is joint_states).
JOINT_STATES_TOPIC = topics.topic('joint_states').default_name()

# robot_state_publisher refuses to start with an empty robot_description; it starts on
# this one-link model (no joints, so no TF) until description_relay sets the real one.
PLACEHOLDER_URDF = '<robot name="pylon_waiting_for_model"><link name="pylon_placeholder"/></robot>'


@dataclass(frozen=True)
class Process:
    """One executable a component starts.

    ``node`` is the ROS node name (``-r __node:=``), ``None`` for a plain process (the
    simulator), which gets no ``--ros-args`` at all. ``parameter_files`` are relative to
    the workspace root. ``parameters`` are fixed values applied after every file.
    """

    package: str
    executable: str
    node: str | None
    parameter_files: tuple[str, ...] = ()
    arguments: tuple[str, ...] = ()
    remappings: tuple[tuple[str, str], ...] = ()
    parameters: tuple[tuple[str, object], ...] = ()

    @property
    def ros_node(self) -> bool:
        """Return whether this process is a ROS node (takes ``--ros-args``)."""
        return self.node is not None


@dataclass(frozen=True)
class Component:
    """A unit a user selects with ``components:=``: one or more processes."""

    name: str
    description: str
    processes: tuple[Process, ...]

    @property
    def node_names(self) -> tuple[str, ...]:
        """Return the ROS node names of the component's processes."""
        return tuple(p.node for p in self.processes if p.node is not None)

    @property
    def base_parameter_files(self) -> tuple[str, ...]:
        """Return every base parameter file of the component, in order, without repeats."""
        files: list[str] = []
        for process in self.processes:
            files += [f for f in process.parameter_files if f not in files]
        return tuple(files)


SIM = Component('sim', 'pylon_sim: KSP with the PyLoN mod, headless (not a ROS node)', (
    Process('pylon_sim', 'pylon_sim', None, arguments=(
        '--state-host', LOOPBACK, '--state-port', str(STATE_PORT),
        '--command-host', LOOPBACK, '--command-port', str(COMMAND_PORT),
        '--admin-port', str(ADMIN_PORT), '--servo-joints')),
))
BRIDGE = Component('bridge', 'udp_bridge: PyLoN UDP datagrams <-> ROS 2 topics', (
    Process('pylon_bridge', 'udp_bridge', topics.UDP_BRIDGE,
            parameter_files=('config/pylon_bridge.yaml',)),
))
RSP = Component('rsp', 'robot_state_publisher on the proxy model, fed by description_relay', (
    Process('robot_state_publisher', 'robot_state_publisher', topics.ROBOT_STATE_PUBLISHER,
            remappings=(('joint_states', JOINT_STATES_TOPIC),),
            parameters=(('robot_description', PLACEHOLDER_URDF),)),
    Process('pylon_bridge', 'description_relay', topics.DESCRIPTION_RELAY),
))
CONTROLLER = Component('controller', 'setpoint_controller: lease, attitude and rate loops', (
    Process('pylon_vehicle_control', 'setpoint_controller', topics.SETPOINT_CONTROLLER,
            parameter_files=('config/setpoint_controller.yaml',)),
))
ESTIMATOR = Component('estimator', 'attitude_estimator: demo attitude estimate from IMU', (
    Process('pylon_vehicle_control', 'attitude_estimator', topics.ATTITUDE_ESTIMATOR,
            parameter_files=('config/attitude_estimator.yaml',)),
))
MARKERS = Component('markers', 'nearby_markers: NearbyVessels -> MarkerArray for RViz', (
    Process('pylon_bridge', 'nearby_markers', topics.NEARBY_MARKERS),
))
RVIZ = Component('rviz', 'rviz2 with rviz/pylon.rviz', (
    Process('rviz2', 'rviz2', 'rviz2', arguments=('-d', str(RVIZ_CONFIG))),
))
FOXGLOVE_BRIDGE = Component(
    'foxglove_bridge', f'foxglove_bridge: live view for Foxglove or Lichtblick at '
    f'ws://{LOOPBACK}:{FOXGLOVE_PORT} (a ROS install or the Docker image; not on PyPI)', (
        Process('foxglove_bridge', 'foxglove_bridge', 'foxglove_bridge',
                parameters=(('address', LOOPBACK), ('port', FOXGLOVE_PORT))),
    ))
VIEWER = Component('viewer', f'pylon_viewer: the live view for Foxglove or Lichtblick '
                   f'(Foxglove WebSocket protocol, ws://{LOOPBACK}:{FOXGLOVE_PORT}; '
                   f'the native path, make demo starts it)', (
    Process('pylon_tools', 'pylon_viewer', topics.VIEWER,
            parameter_files=('config/pylon_viewer.yaml',)),
))

KART = Component('kart', "kart_interface: the competition's vehicle interface on the kart "
                 '(the kart scenario only)', (
                     Process('pylon_kart', 'kart_interface', topics.KART_INTERFACE),
                 ))
KART_STACK = Component(
    'kart_stack', 'the reference stack: kart_localizer, trajectory_publisher (also the path '
    'and the course for viewers), pure_pursuit (the kart scenario only)', (
        Process('pylon_kart', 'kart_localizer', topics.KART_LOCALIZER),
        Process('pylon_kart', 'trajectory_publisher', topics.TRAJECTORY_PUBLISHER),
        Process('pylon_kart', 'pure_pursuit', topics.PURE_PURSUIT),
    ))

COMPONENTS: dict[str, Component] = {c.name: c for c in (
    SIM, BRIDGE, RSP, CONTROLLER, ESTIMATOR, MARKERS, KART, KART_STACK, RVIZ, FOXGLOVE_BRIDGE,
    VIEWER)}
"""Every component, in start order."""

KART_COMPONENTS: tuple[str, ...] = (KART.name, KART_STACK.name)
"""What runs with the kart scenario only."""
SPACECRAFT_COMPONENTS: tuple[str, ...] = (CONTROLLER.name, ESTIMATOR.name, MARKERS.name)
"""What never runs with the kart scenario: the attitude control (its lease would fight the
kart interface's) and the nearby-vessel markers (from ground truth, which a kart's domain
has not)."""

VIEWERS: tuple[str, ...] = ('rviz', 'foxglove_bridge', 'viewer')
"""The components that only show data: chosen by name, never started by default."""

DEFAULT_COMPONENTS: tuple[str, ...] = tuple(n for n in COMPONENTS if n not in VIEWERS)
"""What ``components:=`` selects by default: everything that flies the demo, headless (RViz
needs a display; foxglove_bridge runs where a client can reach it, e.g. its compose service;
pylon_viewer is the native path's live view, which ``make demo`` names)."""

RECORD = Component('record', 'pylon_recorder: every topic into a rosbag2-compatible MCAP file '
                   '(record_output; never in the default selection)', (
                       Process('pylon_tools', 'pylon_recorder', topics.PYLON_RECORDER),
                   ))
COMPONENTS[RECORD.name] = RECORD      # after the default: a recording is asked for

ALIASES: dict[str, tuple[str, ...]] = {
    'all': tuple(COMPONENTS),
    'default': DEFAULT_COMPONENTS,
}


def select(text: str | Iterable[str]) -> tuple[str, ...]:
    """Return the components a ``components:=`` value names, in start order.

    ``text`` is a comma list (``'bridge,rsp'``), possibly with the aliases ``all`` and
    ``default``; an empty value means ``default``. An unknown name raises ``ValueError``.
    """
    names = [n.strip() for n in (text.split(',') if isinstance(text, str) else text)]
    names = [n for n in names if n] or ['default']
    chosen: set[str] = set()
    for name in names:
        if name in ALIASES:
            chosen.update(ALIASES[name])
        elif name in COMPONENTS:
            chosen.add(name)
        else:
            raise ValueError(f'unknown component {name!r}; components: '
                             f'{", ".join(COMPONENTS)} (or {", ".join(ALIASES)})')
    return tuple(n for n in COMPONENTS if n in chosen)


def effective(selected: Sequence[str], use_real_ksp: bool,
              scenario: str = DEFAULT_SCENARIO) -> tuple[str, ...]:
    """Return the selection that runs.

    Without the simulator when a real KSP is used; with the kart's components exactly for
    the kart scenario (``SPACECRAFT_COMPONENTS`` never with it).
    """
    drop = SPACECRAFT_COMPONENTS if is_kart(scenario) else KART_COMPONENTS
    return tuple(n for n in selected if not (use_real_ksp and n == 'sim') and n not in drop)


def is_kart(scenario: str) -> bool:
    """Tell whether ``scenario`` (a name or a YAML path) is the kart's: ``scenario: kart``."""
    if scenario == KART_SCENARIO:
        return True
    path = Path(scenario)
    if path.suffix not in ('.yaml', '.yml') or not path.is_file():
        return False
    data = yaml.safe_load(path.read_text(encoding='utf-8'))
    return isinstance(data, Mapping) and data.get('scenario') == KART_SCENARIO


def kart_remappings() -> tuple[tuple[str, str], ...]:
    """Return the bridge's (from, to) remaps for the kart (``pylon_kart.sensing``)."""
    return tuple(sensing.remapping().items())


def split_list(text: str) -> list[str]:
    """Return the non-empty items of a comma list."""
    return [item.strip() for item in text.split(',') if item.strip()]


def overlay_path(name: str) -> Path:
    """Return ``config/overlays/<name>.yaml``; ``name`` may also be a path to a YAML file."""
    path = Path(name)
    if path.suffix not in ('.yaml', '.yml'):
        path = OVERLAY_DIR / f'{name}.yaml'
    elif not path.is_absolute():
        path = path if path.exists() else OVERLAY_DIR / path.name
    if not path.is_file():
        available = ', '.join(sorted(p.stem for p in OVERLAY_DIR.glob('*.yaml')))
        raise FileNotFoundError(f'no overlay {name!r} ({path}); overlays: {available}')
    return path


def overlay_nodes(path: Path) -> set[str]:
    """Return the node names an overlay (a ROS parameter file) has sections for."""
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, Mapping):
        raise ValueError(f'{path}: not a ROS parameter file (a mapping of node names)')
    return {section_node(key) for key in data}


def overlay_parameters(path: Path) -> dict[str, dict[str, object]]:
    """Return ``{node: {parameter: value}}`` of an overlay (``ros__parameters`` flattened)."""
    data = yaml.safe_load(path.read_text()) or {}
    result: dict[str, dict[str, object]] = {}
    for node, section in data.items():
        params = (section or {}).get('ros__parameters', {}) or {}
        result[section_node(node)] = dict(_flatten(params))
    return result


def _flatten(params: Mapping, prefix: str = ''):
    for key, value in params.items():
        if isinstance(value, Mapping):
            yield from _flatten(value, f'{prefix}{key}.')
        else:
            yield f'{prefix}{key}', value


def _applies(nodes: set[str], process_nodes: Iterable[str]) -> bool:
    return bool({'**', '*'} & nodes) or any(n in nodes for n in process_nodes)


def parameter_files(component: str | Component, overlays: Sequence[str] = (),
                    process: Process | None = None) -> list[Path]:
    """Return the parameter files of a component: base files, then overlays in order.

    Later files win (ROS applies ``--params-file`` arguments in order). An overlay is
    included only when it has a section for one of the component's nodes (or ``/**``),
    so ``overlays:=fast_slew,no_ground_truth`` can be handed to every component. With
    ``process``, only that process's base files and the overlays for its node.
    """
    comp = COMPONENTS[component] if isinstance(component, str) else component
    if process is None:
        base, nodes = comp.base_parameter_files, comp.node_names
    else:
        base, nodes = process.parameter_files, tuple(filter(None, [process.node]))
    files = [ROOT / f for f in base]
    for name in overlays:
        path = overlay_path(name)
        if nodes and _applies(overlay_nodes(path), nodes):
            files.append(path)
    return files


GAME_TIME_NODES: frozenset[str] = frozenset({
    topics.ATTITUDE_ESTIMATOR, topics.SETPOINT_CONTROLLER, topics.RENDEZVOUS_CHASER})
"""The nodes a plan on game time runs with ``use_sim_time``: what times the control."""


def sim_rate_of(value: str | float | None) -> float:
    """Return a simulator rate (x real time): a finite number above 0; ''/None is 1.

    0 (pylon_sim's lock-stepped mode) is refused: it is for runs without ROS nodes.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return 1.0
    try:
        rate = float(value)
    except ValueError:
        raise ValueError(f'sim_rate: not a number: {value!r}') from None
    if not (math.isfinite(rate) and rate > 0.0):
        raise ValueError(f'sim_rate must be a finite number above 0 (x real time), not '
                         f'{value!r}; 0 (lock-stepped) is for runs without ROS nodes')
    return rate


def on_game_time(sim_rate: float = 1.0, use_sim_time: bool | None = None) -> bool:
    """Return whether a plan runs its control on game time: as asked, else at a rate not 1."""
    rate = sim_rate_of(sim_rate)
    return rate != 1.0 if use_sim_time is None else bool(use_sim_time)


def sim_arguments(scenario: str = DEFAULT_SCENARIO, ports: Sequence[int] | None = None,
                  sim_rate: float = 1.0, lockstep_lead: float | None = None) -> list[str]:
    """Return the simulator's command-line arguments after the executable.

    ``ports`` = (state, command, admin) replaces the default ports (tests, a second demo);
    ``sim_rate`` other than 1 adds ``--rate``; ``lockstep_lead`` adds ``--lockstep-lead``.
    """
    args = list(SIM.processes[0].arguments)
    if ports is not None:
        for flag, port in zip(('--state-port', '--command-port', '--admin-port'), ports):
            args[args.index(flag) + 1] = str(port)
    rate = sim_rate_of(sim_rate)
    return ['--scenario', scenario, *args, '--control-safety', str(CONTROL_SAFETY),
            *(['--rate', f'{rate:g}'] if rate != 1.0 else []),
            *(['--lockstep-lead', f'{lockstep_lead:g}'] if lockstep_lead is not None else [])]


def bridge_parameters(selected: Sequence[str], disable_ground_truth: bool | None = None,
                      use_real_ksp: bool = False, bridge_host: str = '0.0.0.0',
                      ksp_host: str = LOOPBACK, game_time: bool = False) -> dict[str, object]:
    """Return the bridge parameters the selection fixes, applied after every file.

    - ``publish_proxy_static_tf`` is false exactly when robot_state_publisher runs
      (``rsp`` selected): the proxy's fixed joints come from one publisher, never two.
    - ``disable_ground_truth`` only when given (``None`` leaves it to the files).
    - with a real KSP: the bridge binds ``bridge_host`` (every interface by default)
      and sends commands to ``ksp_host``.
    - ``game_time``: ``publish_clock`` (game time on ``/clock``; absent otherwise).
    """
    params: dict[str, object] = {'publish_proxy_static_tf': 'rsp' not in selected}
    if disable_ground_truth is not None:
        params['disable_ground_truth'] = disable_ground_truth
    if game_time:
        params['publish_clock'] = True
    if use_real_ksp:
        params['host'] = bridge_host
        params['command_host'] = ksp_host
    return params


@dataclass(frozen=True)
class Planned:
    """One process to start, fully resolved: what the launch file and the native runner run.

    ``parameter_files`` are absolute paths in order (base files, then overlays);
    ``parameters`` are fixed values applied after them; ``arguments`` come right after the
    executable (for a ROS node: before ``--ros-args``).
    """

    component: str
    package: str
    executable: str
    node: str | None
    arguments: tuple[str, ...]
    parameter_files: tuple[str, ...]
    parameters: tuple[tuple[str, object], ...]
    remappings: tuple[tuple[str, str], ...]
    domain: int | None = None         # its ROS_DOMAIN_ID (None: the environment's)
    vehicle: int | None = None        # the vehicle whose stack it belongs to (missions)


def plan(components: str | Iterable[str] = '', *, overlays: Sequence[str] = (),
         scenario: str = DEFAULT_SCENARIO, external: Sequence[str] = (),
         disable_ground_truth: bool | None = None, use_real_ksp: bool = False,
         bridge_host: str = '0.0.0.0', ksp_host: str = LOOPBACK,
         ports: Sequence[int] | None = None,
         record_output: str = '', sim_rate: float = 1.0,
         use_sim_time: bool | None = None) -> list[Planned]:
    """Return every process of the selected components, in start order, resolved.

    ``ports`` = (state, command, admin) replaces the default UDP ports for simulator and
    bridge alike (fixed bridge parameters after its files); None keeps the files' ports.
    ``record_output`` (a path) selects the ``record`` component too, writing there.
    ``sim_rate`` and ``use_sim_time``: game time (module doc); a rate needs the simulator.
    The kart scenario: see the module doc (``disable_ground_truth=False`` is refused there).
    """
    if record_output:
        components = (*select(components), RECORD.name)
    rate = sim_rate_of(sim_rate)
    if use_real_ksp and rate != 1.0:
        raise ValueError("sim_rate is the simulator's; with a real KSP use use_sim_time "
                         '(game time, e.g. under physics warp)')
    kart = is_kart(scenario)
    if kart and disable_ground_truth is False:
        raise ValueError("the kart's domain is a team's: it has no ground truth "
                         '(disable_ground_truth must not be false with the kart scenario)')
    game_time = use_sim_time is not False if kart else on_game_time(sim_rate, use_sim_time)
    lead = ((KART_LOCKSTEP_LEAD_SEC if kart else LOCKSTEP_LEAD_SEC)
            if game_time and rate != 1.0 else None)
    selected = effective(select(components), use_real_ksp, scenario)
    bridge = bridge_parameters((*selected, *external),
                               disable_ground_truth=True if kart else disable_ground_truth,
                               use_real_ksp=use_real_ksp, bridge_host=bridge_host,
                               ksp_host=ksp_host, game_time=game_time)
    if ports is not None:
        bridge.update(port=int(ports[0]), command_port=int(ports[1]))
    out = []
    for name in selected:
        for proc in COMPONENTS[name].processes:
            if not proc.ros_node:
                arguments = sim_arguments(scenario, ports, sim_rate, lead)
                out.append(Planned(name, proc.package, proc.executable, None,
                                   tuple(arguments), (), (), ()))
                continue
            fixed = dict(proc.parameters)
            if name == 'bridge':
                fixed.update(bridge)
                if kart:
                    fixed.update(sensing.BRIDGE_PARAMETERS)
            if game_time and (proc.node in GAME_TIME_NODES or name in KART_COMPONENTS):
                fixed['use_sim_time'] = True
            if kart and name == KART.name and lead is not None:
                fixed['lockstep_command_age_sec'] = LOCKSTEP_COMMAND_AGE_SEC
                fixed['lease_duration_sec'] = lease_for_rate(rate)
            if name == RECORD.name and record_output:
                fixed['output'] = record_output
            files = tuple(str(f) for f in parameter_files(name, overlays, proc))
            out.append(Planned(name, proc.package, proc.executable, proc.node,
                               _arguments(proc, kart), files, tuple(fixed.items()),
                               (*proc.remappings, *(_kart_remappings(name) if kart else ()))))
    return out


def _kart_remappings(component: str) -> tuple[tuple[str, str], ...]:
    """Return the kart's remappings of a component's nodes.

    The bridge's: its sensors at the competition's names; the interface's: it reads the
    IMU there (it measures its yaw rate with it).
    """
    if component == BRIDGE.name:
        return kart_remappings()
    if component == KART.name:
        return tuple(sensing.interface_remapping().items())
    return ()


def _arguments(proc: Process, kart: bool) -> tuple[str, ...]:
    """Return a ROS process's arguments: RViz opens ``rviz/kart.rviz`` for the kart."""
    if kart and proc.executable == 'rviz2':
        return ('-d', str(KART_RVIZ_CONFIG))
    return tuple(proc.arguments)


# -- missions: several vehicles, a ROS domain each -------------------------------------------
MANAGER = Component('manager', 'sim_manager: the mission management (management domain)', (
    Process('pylon_mission', 'sim_manager', topics.SIM_MANAGER),
))
REFEREE = Component('referee', "referee: scores every vehicle's task from ground truth", (
    Process('pylon_mission', 'referee', topics.REFEREE),
))
RACE_VIEW = Component('race_view', "race_view: the organisers' view of a race (the course "
                      'and every kart from its ground truth, in map; management domain)', (
                          Process('pylon_kart', 'race_view', topics.RACE_VIEW),
                      ))
CHASER = Component('chaser', 'rendezvous_chaser: an example autonomy flying the rendezvous', (
    Process('pylon_vehicle_control', 'rendezvous_chaser', topics.RENDEZVOUS_CHASER),
))
MISSION_COMPONENTS: dict[str, Component] = {c.name: c for c in (MANAGER, REFEREE)}
"""What runs in the management domain, besides the simulator."""
RACE_MISSION_COMPONENTS: dict[str, Component] = {c.name: c for c in (MANAGER, REFEREE,
                                                                     RACE_VIEW)}
"""What runs in the management domain of a race: the management, the referee (the race's
judge there: its ranking and result files) and the organisers' view."""
VEHICLE_COMPONENTS: dict[str, Component] = {c.name: c for c in (
    BRIDGE, ESTIMATOR, CONTROLLER, CHASER)}
"""What runs in each vehicle's domain (the chaser only for a vehicle with a task)."""
RACE_VEHICLE_COMPONENTS: dict[str, Component] = {c.name: c for c in (BRIDGE, KART, KART_STACK)}
"""What runs in each kart's domain in a race: its bridge (the kart's sensors at the
competition's names, ``/clock``), ``kart_interface`` and the reference stack."""
MISSION_VIEWERS = ('foxglove_bridge', 'viewer')
"""The live views a mission can run, in its management domain (where the organisers look)."""
MISSION_SCENARIOS = {2: 'rendezvous', 4: 'rendezvous4'}
"""The scenario a mission of that many vehicles flies unless one is named."""
RACE_SCENARIO = 'race'
"""The shipped race: four karts (``config/scenarios/race.yaml``); ``race_scenario`` keeps
its first N for a race of N."""
RACE_MODE_KEYS = ('laps', 'time_limit_sec')
"""The race's keys that the mode of its number of karts gives (``pylon_track.race``): a
race of another number of karts than its scenario's drops them from the task."""


@dataclass(frozen=True)
class VehicleFacts:
    """What a vehicle's stack needs to know of its vessel in the scenario."""

    key: str
    vessel_id: str
    star_tracker: str        # its first star tracker's sensor id ('' none)
    relative_nav: str        # its first relative-navigation sensor's id ('' none)
    scored: bool             # it has the scenario's task (every vehicle but the target)
    grid_slot: int | None = None     # its grid slot (a kart on a track's grid), else None


def vehicle_facts(scenario: str, vehicles: int) -> list[VehicleFacts]:
    """Return the facts of the scenario's vehicles; ValueError unless it has ``vehicles``."""
    from pylon_sim.loop.scenario import load_scenario
    loaded = load_scenario(scenario)
    if len(loaded.vehicles) != vehicles:
        raise ValueError(f'scenario {scenario!r} has {len(loaded.vehicles)} vehicles '
                         f'({", ".join(loaded.vehicles)}), not {vehicles}')
    out = []
    for key in loaded.vehicles:
        vessel = loaded.vessel(key)
        spec = vessel.spec
        sensors = {kind: next((m.get('sensor_id') for part in spec.parts
                               for m in part.modules if m.kind == kind), '')
                   for kind in ('star_tracker', 'relative_nav')}
        out.append(VehicleFacts(key, spec.vessel_id, sensors['star_tracker'],
                                sensors['relative_nav'],
                                loaded.task is not None and key != loaded.task.target,
                                getattr(vessel.start, 'grid', None)))
    return out


def _target_vessel_id(scenario: str) -> str:
    from pylon_sim.loop.scenario import load_scenario
    loaded = load_scenario(scenario)
    # a race task has no target ('')
    return loaded.vessel(loaded.task.target).spec.vessel_id \
        if loaded.task and loaded.task.target else ''


def race_of(scenario: str) -> tuple[str, int] | None:
    """Return (track, karts) of a scenario whose task is a race (``task: {kind: race}``).

    None for any other scenario (no task, a rendezvous); ``ScenarioError`` (a ValueError)
    for one that does not load.
    """
    from pylon_sim.loop.scenario import load_scenario
    loaded = load_scenario(scenario)
    if loaded.task is None or getattr(loaded.task, 'kind', '') != 'race':
        return None
    return loaded.task.track, len(loaded.vehicles)


def default_vehicles(scenario: str) -> int | None:
    """Return how many vehicles a mission of ``scenario`` has when none is asked for.

    A race of several karts (``race``: 4) is a mission of all of them; anything else None
    (the one-kart ``kart`` scenario stays the single kart's plan unless vehicles are asked
    for).
    """
    race = race_of(scenario) if scenario else None
    return race[1] if race is not None and race[1] > 1 else None


def race_scenario(scenario: str, vehicles: int, laps: int | None = None,
                  time_limit_sec: float | None = None) -> str:
    """Return the scenario of a race of ``vehicles`` karts from race ``scenario``.

    ``scenario`` itself when it has that many karts and no rule is changed; else a copy
    keeping its first ``vehicles`` karts (on their grid slots), with ``laps`` and
    ``time_limit_sec`` set when given (a short race) and, when the number of karts is not
    the scenario's, the mode's keys (``RACE_MODE_KEYS``) left to the mode of that number
    (one kart: 6 laps in 600 s; several: 6 in 420 s). The copy goes to
    ``<tmp>/pylon_race_<uid>/<name>_<N>karts[_<L>laps][_<T>s].yaml``: the same path every
    time (the launch file and the native runner start the same command lines), rewritten
    atomically; tracks named by a relative path are made absolute. ValueError for a
    scenario that is not a race, too few karts, or a rule that is not positive.
    """
    from pylon_sim.loop.scenario import load_scenario
    race = race_of(scenario)
    if race is None:
        raise ValueError(f'scenario {scenario!r} is not a race (task: {{kind: race}})')
    if not 1 <= vehicles <= race[1]:
        raise ValueError(f'scenario {scenario!r} has {race[1]} karts, not {vehicles}')
    if laps is not None and laps < 1:
        raise ValueError(f'race laps must be 1 or more, not {laps}')
    if time_limit_sec is not None and not (math.isfinite(time_limit_sec) and
                                           time_limit_sec > 0.0):
        raise ValueError(f'race time limit must be a number of s above 0, not {time_limit_sec}')
    if vehicles == race[1] and laps is None and time_limit_sec is None:
        return scenario
    source = Path(load_scenario(scenario).path)
    data = yaml.safe_load(source.read_text(encoding='utf-8'))
    keep = data['vehicles'][:vehicles]
    data['vehicles'] = keep
    data['vessels'] = [v for v in data['vessels'] if v['key'] in keep]
    task = {k: v for k, v in data['task'].items()
            if vehicles == race[1] or k not in RACE_MODE_KEYS}
    task.update({k: v for k, v in (('laps', laps), ('time_limit_sec', time_limit_sec))
                 if v is not None})
    data['task'] = task
    for block in (task, data.get('terrain') or {}, *(v.get('surface') or {}
                                                     for v in data['vessels'])):
        track = block.get('track')
        if isinstance(track, str) and ('/' in track or track.endswith(('.yaml', '.yml'))):
            block['track'] = str((source.parent / track).resolve())
    data['description'] = (f'{data.get("description", "")} (first {vehicles} of its karts'
                           + (f', {laps} laps' if laps else '')
                           + (f', {time_limit_sec:g} s' if time_limit_sec else '') + ')')
    folder = Path(tempfile.gettempdir()) / f'pylon_race_{os.getuid()}'
    folder.mkdir(exist_ok=True)
    name = (f'{source.stem}_{vehicles}karts' + (f'_{laps}laps' if laps else '')
            + (f'_{time_limit_sec:g}s' if time_limit_sec else '') + '.yaml')
    partial = folder / f'.{name}.{os.getpid()}'
    partial.write_text(yaml.safe_dump(data, sort_keys=False), encoding='utf-8')
    os.replace(partial, folder / name)
    return str(folder / name)


def _vehicle_parameters(component: str, k: int, facts: VehicleFacts, base: int,
                        ports: Sequence[int], target: str,
                        game_time: bool = False) -> dict[str, object]:
    """Return the fixed parameters of vehicle k's process of ``component``.

    On game time the bridge publishes ``/clock`` and the nodes of ``GAME_TIME_NODES`` use it.
    """
    if game_time and VEHICLE_COMPONENTS[component].processes[0].node in GAME_TIME_NODES:
        return {**_vehicle_parameters(component, k, facts, base, ports, target),
                'use_sim_time': True}
    if component == 'bridge':
        return {'port': management.vehicle_port(ports[0], k),
                'command_port': management.vehicle_port(ports[1], k),
                'ground_truth_domain': base,
                'ground_truth_prefix': mission.ground_truth_prefix(k),
                'control_snapshot_topic': mission.ground_truth_topic(k, 'control/snapshot'),
                'publish_proxy_static_tf': True,
                **({'publish_clock': True} if game_time else {})}
    if component == 'estimator' and facts.star_tracker:
        return {'star_tracker_id': facts.star_tracker}
    if component == 'controller':
        return {'controller_id': f'vehicle_{k}'}
    if component == 'chaser':
        return {'relative_nav_id': facts.relative_nav, 'target_vessel_id': target}
    return {}


def _kart_parameters(process: Process, k: int, facts: VehicleFacts, base: int,
                     ports: Sequence[int], game_time: bool) -> dict[str, object]:
    """Return the fixed parameters of kart k's ``process`` in a race.

    The bridge: a mission vehicle's (its ports, ground truth to the management domain) with
    the kart's sensing (``pylon_kart.sensing``) and ``/clock``; every kart node on game time
    (unless ``use_sim_time`` is false, as for the single kart); the localizer starts on the
    kart's own grid slot.
    """
    if process.executable == 'udp_bridge':
        return {**_vehicle_parameters(BRIDGE.name, k, facts, base, ports, ''),
                **sensing.BRIDGE_PARAMETERS, 'publish_clock': True}
    fixed: dict[str, object] = {'use_sim_time': True} if game_time else {}
    if process.node == topics.KART_LOCALIZER and facts.grid_slot is not None:
        fixed['grid_slot'] = facts.grid_slot
    return fixed


def _kart_process_remappings(process: Process, k: int) -> tuple[tuple[str, str], ...]:
    """Return kart k's remappings of ``process`` in a race: ground truth's names, sensing."""
    if process.executable == 'udp_bridge':
        return (*mission.ground_truth_remappings(k), *kart_remappings())
    if process.node == topics.KART_INTERFACE:
        return tuple(sensing.interface_remapping().items())
    return ()


def mission_plan(vehicles: int, *, scenario: str = '', overlays: Sequence[str] = (),
                 domain_base: int = mission.DEFAULT_DOMAIN_BASE,
                 ports: Sequence[int] | None = None,
                 management_port: int = management.MANAGEMENT_PORT, start_mode: str = 'count',
                 exit_on_finish: bool = False, results_path: str = '',
                 vehicle_components: Sequence[str] | None = None,
                 record_output: str = '', sim_rate: float = 1.0,
                 use_sim_time: bool | None = None, race_laps: int | None = None,
                 race_time_limit_sec: float | None = None,
                 viewers: Sequence[str] = ()) -> list[Planned]:
    """Return every process of a mission of ``vehicles`` vehicles, in start order.

    The simulator (``--management-port``; vehicle k on the first ``ports`` plus
    ``management.PORT_STRIDE`` x (k - 1)), then ``sim_manager`` and ``referee`` in the
    management domain ``domain_base``, then each vehicle's stack in domain
    ``domain_base + k``: its bridge (ground truth into the management domain under
    ``/d<k>/awsim/ground_truth``, ``pylon_common.mission``), estimator, controller and, for
    a vehicle with a task, the chaser. ``start_mode``: the manager's (``count`` starts by
    itself, ``sync`` waits for ``/admin/awsim/start``).
    ``scenario`` '' picks ``MISSION_SCENARIOS[vehicles]``. ``record_output`` (a path) adds a
    recorder to every domain, each writing its own file (``mission_record_path``).
    ``sim_rate``/``use_sim_time``: game time as in ``plan``; each vehicle's bridge publishes
    ``/clock`` in its own domain (the management domain has none: the manager and the
    referee judge on the simulator's UT and the stamps). ``vehicle_components`` (None: the
    scenario's) chooses what runs in each vehicle's domain.

    **A race** (``race_of``: ``race``, or ``kart`` as a one-kart mission): ``race_scenario``
    of ``vehicles`` karts, ``race_laps`` and ``race_time_limit_sec`` (a short race);
    ``RACE_MISSION_COMPONENTS`` in the management domain (the referee judges the race, its
    files beside ``results_path``); in each kart's ``RACE_VEHICLE_COMPONENTS``, every kart
    node on game time unless ``use_sim_time`` is false. ``viewers`` (``MISSION_VIEWERS``)
    run in the management domain.
    """
    game_time = on_game_time(sim_rate, use_sim_time)
    scenario = scenario or MISSION_SCENARIOS.get(vehicles, '')
    if not scenario:
        raise ValueError(f'no shipped scenario has {vehicles} vehicles '
                         f'({", ".join(f"{n}: {s}" for n, s in MISSION_SCENARIOS.items())}); '
                         'name one')
    race = race_of(scenario)
    if race is not None:
        scenario = race_scenario(scenario, vehicles, race_laps, race_time_limit_sec)
        game_time = use_sim_time is not False
    elif race_laps is not None or race_time_limit_sec is not None:
        raise ValueError(f'race laps and time limit need a race; {scenario!r} is not one')
    facts = vehicle_facts(scenario, vehicles)
    ports = tuple(ports) if ports is not None else (STATE_PORT, COMMAND_PORT, ADMIN_PORT)
    target = _target_vessel_id(scenario)
    sim = Planned('sim', 'pylon_sim', 'pylon_sim', None,
                  (*sim_arguments(scenario, ports, sim_rate), '--management-port',
                   str(management_port)),
                  (), (), (), None)
    fixed = {'manager': {'management_port': management_port, 'vehicles': vehicles,
                         'domain_base': domain_base, 'start_mode': start_mode,
                         'exit_on_finish': exit_on_finish},
             'referee': {'results_path': results_path, 'exit_on_finish': exit_on_finish},
             'race_view': {'track': race[0] if race else '', 'vehicles': vehicles,
                           'grid_slots': ','.join(str(f.grid_slot) for f in facts)},
             VIEWER.name: {}, FOXGLOVE_BRIDGE.name: {}}
    management_side = dict(RACE_MISSION_COMPONENTS if race else MISSION_COMPONENTS)
    for name in viewers:
        if name not in MISSION_VIEWERS:
            raise ValueError(f'a mission shows its management domain with '
                             f'{" or ".join(MISSION_VIEWERS)}, not {name!r}')
        management_side[name] = COMPONENTS[name]
    out = [sim, *(_planned(name, management_side[name], overlays, fixed[name],
                           domain_base, None) for name in management_side)]
    chosen = vehicle_components if vehicle_components is not None else \
        tuple(RACE_VEHICLE_COMPONENTS if race else VEHICLE_COMPONENTS)
    for k, vehicle in enumerate(facts, start=1):
        out += _vehicle_stack(chosen, k, vehicle, overlays, domain_base, ports, target,
                              game_time, race is not None)
    if record_output:
        out += [_planned(RECORD.name, RECORD, overlays,
                         {'output': mission_record_path(record_output, k)},
                         domain_base if k is None else mission.vehicle_domain(domain_base, k),
                         k) for k in (None, *range(1, vehicles + 1))]
    return out


def _vehicle_stack(components: Sequence[str], k: int, vehicle: VehicleFacts,
                   overlays: Sequence[str], base: int, ports: Sequence[int], target: str,
                   game_time: bool, race: bool) -> list[Planned]:
    """Return vehicle k's processes of ``components`` in its domain (a kart's in a race)."""
    domain = mission.vehicle_domain(base, k)
    out = []
    for name in components:
        if race:
            out += [_planned(name, RACE_VEHICLE_COMPONENTS[name], overlays,
                             _kart_parameters(proc, k, vehicle, base, ports, game_time),
                             domain, k, _kart_process_remappings(proc, k), proc)
                    for proc in RACE_VEHICLE_COMPONENTS[name].processes]
            continue
        if name == 'chaser' and not (vehicle.scored and vehicle.relative_nav):
            continue
        params = _vehicle_parameters(name, k, vehicle, base, ports, target, game_time)
        remappings = mission.ground_truth_remappings(k) if name == BRIDGE.name else ()
        out.append(_planned(name, VEHICLE_COMPONENTS[name], overlays, params, domain, k,
                            remappings))
    return out


def mission_record_path(output: str, vehicle: int | None) -> str:
    """Return the recording of a mission's management domain (None) or of vehicle k's.

    ``demo.mcap`` becomes ``demo_management.mcap`` and ``demo_vehicle_<k>.mcap``.
    """
    path = Path(output)
    stem = path.name[:-len('.mcap')] if path.name.endswith('.mcap') else path.name
    tail = 'management' if vehicle is None else f'vehicle_{vehicle}'
    return str(path.with_name(f'{stem}_{tail}.mcap'))


def _planned(name: str, component: Component, overlays: Sequence[str], fixed: dict,
             domain: int, vehicle: int | None,
             remappings: tuple[tuple[str, str], ...] = (),
             process: Process | None = None) -> Planned:
    """Return one ROS process of a mission component, resolved (``remappings`` added).

    ``process``: which of the component's processes (None: its only one).
    """
    if process is None:
        (process,) = component.processes
    files = parameter_files(component, overlays, process)
    return Planned(name, process.package, process.executable, process.node,
                   tuple(process.arguments), tuple(str(f) for f in files),
                   tuple({**dict(process.parameters), **fixed}.items()),
                   (*process.remappings, *remappings), domain, vehicle)


def _ros_value(value: object) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, str):
        return yaml.safe_dump(value, default_style="'").strip()   # always a string
    return str(value)


def command_line(planned: Planned) -> list[str]:
    """Return the command line of a planned process (its executable name first).

    A ROS node gets ``--ros-args -r __node:=<node>``, a ``--params-file`` per file, a
    ``-p name:=value`` per fixed parameter and a ``-r from:=to`` per remapping, which is
    what ``launch_ros`` passes for the same ``Node``.
    """
    cmd = [planned.executable, *planned.arguments]
    if planned.node is None:
        return cmd
    cmd += ['--ros-args', '-r', f'__node:={planned.node}']
    for path in planned.parameter_files:
        cmd += ['--params-file', path]
    for name, value in planned.parameters:
        cmd += ['-p', f'{name}:={_ros_value(value)}']
    for src, dst in planned.remappings:
        cmd += ['-r', f'{src}:={dst}']
    return cmd


def parse_bool(text: str | bool | None) -> bool | None:
    """Return a launch-argument boolean; ``''`` (not given) is ``None``."""
    if text is None or isinstance(text, bool):
        return text
    value = text.strip().lower()
    if value == '':
        return None
    if value in ('true', '1', 'yes', 'on'):
        return True
    if value in ('false', '0', 'no', 'off'):
        return False
    raise ValueError(f'not a boolean: {text!r} (true or false)')


def table() -> str:
    """Return the component table as Markdown (for READMEs and ``--show-args`` readers)."""
    lines = ['| component | package | executable | node | parameter files |',
             '|---|---|---|---|---|']
    for comp in COMPONENTS.values():
        for proc in comp.processes:
            files = ', '.join(f'`{f}`' for f in proc.parameter_files) or '—'
            lines.append(f'| `{comp.name}` | `{proc.package}` | `{proc.executable}` | '
                         f'{proc.node or "(plain process)"} | {files} |')
    return '\n'.join(lines) + '\n'
