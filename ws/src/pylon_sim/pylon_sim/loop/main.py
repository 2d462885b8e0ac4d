"""``pylon_sim``: KSP with the PyLoN mod, headless, speaking the PyLoN UDP protocol v1.

Sends state datagrams to ``--state-host:--state-port`` (default 127.0.0.1:49010, where
``udp_bridge`` listens) and reads commands on ``--command-port`` (default 49011). An
optional admin port takes JSON requests (``pylon_sim_admin``) to pause, warp, switch
vessels, revert, pack, stop the heartbeat or restart, as a player would in KSP.

A scenario with several ``vehicles`` (or any scenario with ``--management-port``) runs as
a mission (``mission.py``): every vehicle a game of its own on the ports above plus
``--port-stride`` per vehicle, one shared world, and a management port.
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
import secrets
import signal
import socket
import sys
import time

from pylon_protocol.management import MANAGEMENT_PORT, PORT_STRIDE
from pylon_protocol.packets import COMMAND_PORT, STATE_PORT
from pylon_protocol.threads import limit_threads

from pylon_sim.loop import mission
from pylon_sim.loop.runtime import LOG, Simulator
from pylon_sim.loop.scenario import load_scenario, ScenarioError
from pylon_sim.mod.safety import load_limits, SafetyLimits

CONTROL_SAFETY_ENV = 'PYLON_CONTROL_SAFETY'


def port(text: str) -> int:
    """Parse a UDP port (1-65535; 0 = none for the admin port)."""
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f'port must be 0-65535, got {value}')
    return value


def non_negative(text: str) -> float:
    """Parse a finite number >= 0."""
    value = float(text)
    if not value >= 0 or value == float('inf'):
        raise argparse.ArgumentTypeError(f'must be a finite number >= 0, got {text}')
    return value


def positive(text: str) -> float:
    """Parse a finite number > 0."""
    value = non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f'must be a finite number > 0, got {text}')
    return value


def parser() -> argparse.ArgumentParser:
    """Return the command-line parser."""
    p = argparse.ArgumentParser(
        prog='pylon_sim', description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument('--scenario', default='orbit',
                   help='scenario name (config/scenarios/NAME.yaml) or path to a YAML file')
    p.add_argument('--state-host', default='127.0.0.1', help='where udp_bridge listens')
    p.add_argument('--state-port', type=port, default=STATE_PORT, help='udp_bridge state port')
    p.add_argument('--command-host', default='127.0.0.1',
                   help='address to take commands on (0.0.0.0: every interface)')
    p.add_argument('--command-port', type=port, default=COMMAND_PORT, help='command port')
    p.add_argument('--admin-port', type=port, default=0,
                   help='UDP port for admin requests on --command-host (0: none)')
    p.add_argument('--management-port', type=port, default=0,
                   help='UDP port of the mission management (start, finish, reset, status) on '
                        '--command-host; 0: none, unless the scenario has several vehicles '
                        f'(then {MANAGEMENT_PORT})')
    p.add_argument('--port-stride', type=stride, default=PORT_STRIDE,
                   help='vehicle k uses the state, command and admin ports above plus '
                        '(k - 1) x this')
    p.add_argument('--rate', type=non_negative, default=1.0,
                   help='simulator clock speed as a multiple of real time; 0 = as fast as '
                        'possible (simulator-only runs)')
    p.add_argument('--lockstep-lead', type=positive, default=None, metavar='SECONDS',
                   help="wait for the lease owner's controller: the clock runs at most this "
                        'many game seconds past its last body wrench, then waits (up to 1 s '
                        'of wall time) for the next; for controllers on game time faster '
                        'than real time (one commanding every 0.05 s: 0.1). Single vehicle')
    p.add_argument('--lockstep-wait', type=positive, default=None, metavar='SECONDS',
                   help='with --lockstep-lead: the most wall time a frame waits for the '
                        'controller before the game runs free (default 1); a test on a busy '
                        'machine gives its controller more')
    p.add_argument('--duration', type=non_negative, default=None,
                   help='stop after this many simulator-clock seconds (default: run until '
                        'SIGINT/SIGTERM)')
    p.add_argument('--seed', type=int, default=0,
                   help='seed of ids the scenario leaves open and of runtime GUIDs')
    p.add_argument('--allow-remote-urdf', action='store_true',
                   help='also send the vessel model to a non-loopback --state-host')
    p.add_argument('--servo-joints', action='store_true',
                   help='send servo parts on revolute/prismatic joints named as their '
                        'joint_states entries (an extension the mod does not send; '
                        'udp_bridge needs --allow-servo-joints)')
    p.add_argument('--control-safety', default=None, metavar='PATH',
                   help='ControlSafety.cfg with the KSP-side safety limits (default: '
                        f'${CONTROL_SAFETY_ENV}, else config/ControlSafety.cfg of the '
                        'workspace, else the built-in defaults)')
    p.add_argument('--check-packets', action='store_true',
                   help='validate every packet against the protocol schema before sending '
                        '(the test harness does; costs about a tenth of the CPU)')
    p.add_argument('--log-level', default='INFO',
                   choices=('DEBUG', 'INFO', 'WARNING', 'ERROR'))
    return p


def stride(text: str) -> int:
    """Parse the port stride between vehicles (1-1000)."""
    value = int(text)
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f'port stride must be 1-1000, got {value}')
    return value


def default_safety_path() -> Path | None:
    """Return the ControlSafety.cfg to use when none is given, or None for the defaults."""
    configured = os.environ.get(CONTROL_SAFETY_ENV)
    if configured:
        return Path(configured)
    candidate = Path(__file__).resolve().parents[5] / 'config' / 'ControlSafety.cfg'
    return candidate if candidate.is_file() else None


def bind_udp(host: str, number: int) -> socket.socket:
    """Return a non-blocking UDP socket bound to host:number."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((host, number))
    sock.setblocking(False)
    return sock


def main(argv: list[str] | None = None) -> int:
    """Run the simulator until the duration ends or a signal arrives."""
    args = parser().parse_args(argv)
    limit_threads()
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format='[pylon_sim] %(levelname)s %(message)s')
    try:
        scenario = load_scenario(args.scenario, args.seed)
    except ScenarioError as exc:
        LOG.error('scenario rejected: %s', exc)
        return 2
    try:
        path = args.control_safety or default_safety_path()
        limits = load_limits(path) if path is not None else SafetyLimits()
    except (OSError, ValueError) as exc:
        LOG.error('control safety limits rejected: %s', exc)
        return 2
    # every process is a new KSP start: a runtimeInstance of its own, whatever --seed says;
    # its heartbeat, model refresh and slow reports keep wall time too, as the mod's
    # (Simulator's ``wall``, reports.WALL_KEPT)
    options = {'allow_remote_model': args.allow_remote_urdf, 'limits': limits,
               'servo_joints': args.servo_joints, 'check_packets': args.check_packets,
               'instance_seed': secrets.randbits(64), 'wall': time.monotonic}
    several = len(scenario.vehicles) > 1 or bool(args.management_port)
    if several and args.lockstep_lead is not None:
        LOG.error('--lockstep-lead holds one game for one controller; a mission of %d '
                  'vehicles runs free', len(scenario.vehicles))
        return 2
    try:
        if several:
            runner = _mission(args, scenario, options)
        else:
            runner = _single(args, scenario, options)
    except (OSError, ValueError) as exc:
        LOG.error('cannot serve the scenario on %s: %s', args.command_host, exc)
        return 2

    def stop(signum, _frame) -> None:
        runner.stop_requested = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    LOG.info('safety limits: %s', path or 'built-in defaults')
    try:
        runner.run(rate=args.rate, duration=args.duration)
    finally:
        runner.log_status()
        runner.close()
    LOG.info('stopped')
    return 0


def _single(args: argparse.Namespace, scenario, options: dict) -> Simulator:
    """Return the one game of a single-vehicle scenario on the flags' ports."""
    command_sock = bind_udp(args.command_host, args.command_port)
    admin_sock = None
    try:
        admin_sock = bind_udp(args.command_host, args.admin_port) if args.admin_port else None
    except OSError:
        command_sock.close()
        raise
    sim = Simulator(scenario, state_addr=(args.state_host, args.state_port),
                    command_sock=command_sock, admin_sock=admin_sock, seed=args.seed,
                    lockstep_lead=args.lockstep_lead,
                    lockstep_wait=args.lockstep_wait, **options)
    LOG.info('scenario %s (%s), active %s; state to %s:%d, commands on %s:%d%s, rate %g',
             scenario.name, scenario.path, scenario.active, args.state_host, args.state_port,
             args.command_host, args.command_port,
             f', admin on {args.admin_port}' if args.admin_port else '', args.rate)
    return sim


def _mission(args: argparse.Namespace, scenario, options: dict) -> mission.Mission:
    """Return the mission of the scenario's vehicles, each on its own ports."""
    first = mission.Ports(args.state_port, args.command_port, args.admin_port)
    run = mission.build(scenario, first, bind_udp, state_host=args.state_host,
                        command_host=args.command_host,
                        management_port=args.management_port or MANAGEMENT_PORT,
                        stride=args.port_stride, rate=args.rate, seed=args.seed, **options)
    LOG.info('scenario %s (%s): mission of %d vehicles, management on %s:%d, rate %g',
             scenario.name, scenario.path, len(run.games), args.command_host,
             args.management_port or MANAGEMENT_PORT, args.rate)
    for k, (key, ports) in enumerate(zip(scenario.vehicles, run.ports), start=1):
        LOG.info('vehicle %d: %s; state to %s:%d, commands on %d%s', k, key, args.state_host,
                 ports.state, ports.command, f', admin on {ports.admin}' if ports.admin else '')
    return run


if __name__ == '__main__':
    sys.exit(main())
