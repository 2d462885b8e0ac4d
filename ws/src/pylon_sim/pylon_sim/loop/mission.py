"""Several vehicles in one world: a game of its own for each, one management port.

A scenario's ``vehicles`` are its controllable vessels. Each is served as its own "KSP with
the PyLoN mod": a ``runtime.Simulator`` on its view of the shared ``World``
(``World.view``), with its own state, command and admin ports (the first vehicle's, then
``management.PORT_STRIDE`` more per vehicle), its own runtime session, leases, sensors and
packets: exactly the protocol of one vessel, so each vehicle's ``udp_bridge`` is the
single-vessel bridge and would work the same against one real game per vehicle. They share
one world: one UT, one physics step for every vessel (each game's control acting on its
own vessel), and each game sees the others as nearby vessels, in its LiDARs and cameras.
Two vehicles do not dock with each other (their games would have to merge).

A frame of the mission is one frame of every game: management requests, then each game's
commands and control, one physics step of the world, then each game's docking, runtime
session and packets; every game's packets leave when the frame ends.

The mission starts ``held`` (``management.HELD``): physics runs (vessels coast, nothing
commanded acts), sensors and models flow, leases can be taken, and every other command is
refused with ``simulation_held``. ``start`` on the management port makes commands act,
``finish`` holds again, ``reset`` puts every vessel back at the scenario's start with new
runtime sessions (leases dropped) and holds. Pause, warp and quit act on the shared world,
so they go to the management port; a vehicle's admin port refuses them.

A scenario with a race task (``save.RaceTask``) has a race (``racing.Racing``): ``start``
starts it, ``finish`` ends it, ``reset`` puts it back on the grid, ``boost`` fires a
vehicle's boost, and ``status`` carries it (``race``, and each vehicle's ``race``). Its
drive modifiers act on the karts before each physics step; it follows them after it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
import logging
import socket

from pylon_protocol import management

from pylon_sim.game.save import RaceTask, Scenario
from pylon_sim.game.vessel import propellant_mass
from pylon_sim.game.world import World
from pylon_sim.loop import admin
from pylon_sim.loop.racing import Racing
from pylon_sim.loop.runtime import advance, pace, Simulator

LOG = logging.getLogger('pylon_sim')


@dataclass(frozen=True)
class Ports:
    """The UDP ports of one vehicle (0: none)."""

    state: int
    command: int
    admin: int


class Mission:
    """The games of a scenario's vehicles on one world, and their management."""

    def __init__(self, scenario: Scenario, games: list[Simulator], world: World,
                 ports: list[Ports] | None = None,
                 management_sock: socket.socket | None = None, rate: float = 1.0) -> None:
        """Take the games (``build`` makes them); start held."""
        self.scenario = scenario
        self.world = world
        self.games = games
        self.ports = ports or [Ports(0, 0, 0) for _ in games]
        self.management_sock = management_sock
        self.rate = rate
        self.clock = 0.0
        self.paused = False
        self.stop_requested = False
        self.phase = management.HELD
        self.started_ut: float | None = None
        self.propellant_start = [self._propellant(game) for game in games]
        self.racing = Racing(scenario.task, world, scenario.vehicles) \
            if isinstance(scenario.task, RaceTask) else None
        for game in games:
            game.set_held(True)

    # -- the loop -----------------------------------------------------------------------
    def frame(self) -> None:
        """Run one frame of every game around one physics step of the shared world."""
        for game in self.games:
            game.begin_sending()
        try:
            self.clock += self.world.physics_step
            admin.serve(self.management_sock, self.manage)
            acting = [found for found in (game.begin_frame() for game in self.games)
                      if found is not None]
            if not self.paused:
                if self.racing is not None:
                    self.racing.apply()
                dt = advance(self.world, self.games[0].environment, acting)
                if self.racing is not None:
                    self.racing.follow(dt)
            for game in self.games:
                game.end_frame()
        finally:
            for game in self.games:
                game.end_sending()
        self.stop_requested = self.stop_requested or any(g.stop_requested for g in self.games)

    def hold(self) -> float:
        """Never wait: a mission's games run free (``Simulator.hold`` is single-game)."""
        return 0.0

    def run(self, rate: float = 1.0, duration: float | None = None) -> None:
        """Run frames at ``rate`` x real time until ``duration`` s of its clock or a stop."""
        self.rate = rate
        pace(self, rate, duration)

    def log_status(self) -> None:
        """Log one line for the mission, then one per vehicle."""
        LOG.info('mission %s | UT %.2f clock %.1f s%s', self.phase, self.world.ut, self.clock,
                 ' | paused' if self.paused else '')
        for game in self.games:
            game.log_status()

    def close(self) -> None:
        """Close every game's sockets and the management socket."""
        for game in self.games:
            game.close()
        if self.management_sock is not None:
            self.management_sock.close()

    # -- management ---------------------------------------------------------------------
    def manage(self, request: dict) -> dict:
        """Carry out one management request (``management.REQUESTS``); return the status."""
        cmd = request.get('cmd')
        if cmd == 'start':
            if self.phase == management.RUNNING:
                raise ValueError('the mission is running already (reset it to start again)')
            if self.racing is not None:
                self.racing.start()          # ValueError for a race over: reset it first
            self._hold(False)
            self.started_ut = self.world.ut
        elif cmd == 'finish':
            self._hold(True)
            if self.racing is not None:
                self.racing.finish()
        elif cmd == 'reset':
            self.reset()
        elif cmd == 'boost':
            if self.racing is None:
                raise ValueError('boost: this mission has no race')
            boost = self.racing.boost(request)
            return {**self.status(), 'boost': boost}
        elif cmd in ('pause', 'resume'):
            self.paused = cmd == 'pause'
            for game in self.games:
                game.paused = self.paused
        elif cmd == 'warp':
            self.world.set_warp(float(request.get('rate', 1.0)),
                                str(request.get('mode', 'physics')))
        elif cmd == 'quit':
            self.stop_requested = True
        elif cmd != 'status':
            raise ValueError(f'unknown management cmd {cmd!r} '
                             f'({", ".join(management.REQUESTS)})')
        if cmd not in ('status', 'quit'):
            LOG.info('management: %s -> %s', cmd, self.phase)
        return self.status()

    def _hold(self, held: bool) -> None:
        self.phase = management.HELD if held else management.RUNNING
        for game in self.games:
            game.set_held(held)

    def reset(self) -> None:
        """Put every vessel back at the scenario's start; new runtime sessions; held.

        A race goes back on the grid (every kart on its slot: the scenario's starts).
        """
        self.world.reset()
        self._hold(True)
        self.started_ut = None
        for game in self.games:
            game.world_reset()
            game.observe()          # UT went backwards: a new runtime session, lease gone
        self.propellant_start = [self._propellant(game) for game in self.games]
        if self.racing is not None:
            self.racing.reset()     # on the grid: no laps, every boost back, no penalty

    def status(self) -> dict:
        """Return the mission and every vehicle as JSON-ready data."""
        world = self.world
        task = self.scenario.task
        return {
            'phase': self.phase, 'ut': world.ut, 'clock': self.clock, 'rate': self.rate,
            'warp': [world.warp_rate, world.warp_mode], 'paused': self.paused,
            'started_ut': self.started_ut,
            'elapsed': 0.0 if self.started_ut is None else world.ut - self.started_ut,
            'task': None if task is None else {
                **task.to_dict(), 'target_vessel_id': world.vessels[task.target].vessel_id
                if task.target in world.vessels else ''},
            'vehicles': [self._vehicle(k, game) for k, game in enumerate(self.games)],
            **({'race': self.racing.status()} if self.racing is not None else {}),
        }

    def _vehicle(self, index: int, game: Simulator) -> dict:
        vessel = game.world.active
        owner = game.control.authority.owner
        ports = self.ports[index]
        left = self._propellant(game)
        runtime = game.runtime
        return {
            'vehicle': index + 1, 'key': vessel.key, 'vessel_id': vessel.vessel_id,
            'name': vessel.spec.name, 'available': game.available,
            'settled': self.settled(game),
            'session': [runtime.instance, runtime.generation, runtime.epoch],
            'lease_owned': owner is not None,
            'controller_id': owner[0] if owner is not None else '',
            'state_port': ports.state, 'command_port': ports.command,
            'admin_port': ports.admin, 'propellant_kg': left,
            'propellant_used_kg': max(0.0, self.propellant_start[index] - left),
            **({'race': self.racing.vehicle(index)} if self.racing is not None else {}),
        }

    @staticmethod
    def settled(game: Simulator) -> bool:
        """Tell whether a vehicle's vessel is settled: its physics is loaded (not packed).

        A vessel in orbit is settled as soon as it is; a surface vehicle resting on its
        wheels is the race's to add.
        """
        return game.available

    @staticmethod
    def _propellant(game: Simulator) -> float:
        return propellant_mass(game.world.active.resources)


def build(scenario: Scenario, first: Ports, bind: Callable[[str, int], socket.socket], *,
          state_host: str = '127.0.0.1', command_host: str = '127.0.0.1',
          management_port: int = 0, stride: int = management.PORT_STRIDE,
          rate: float = 1.0, seed: int = 0,
          senders: Sequence[Callable[[bytes], None]] | None = None,
          instance_seed: int | None = None, **game_options) -> Mission:
    """Return the mission of a scenario's vehicles, each on its own ports.

    ``first`` holds the first vehicle's ports; vehicle k's are ``first`` + (k - 1) x
    ``stride`` (a 0 port stays none). ``bind(host, port)`` returns a bound non-blocking UDP
    socket (the command, admin and management sockets). ``instance_seed`` (+ k) seeds each
    game's runtime GUIDs apart from ``seed``. ``senders[k - 1]``, when given,
    takes vehicle k's datagrams instead of UDP to its state port; ``game_options`` go to
    every ``Simulator``. Raise ``OSError`` when a port cannot be bound (the sockets bound
    so far are closed).
    """
    world = World(scenario)
    environment: dict = {}
    games, ports, sockets = [], [], []
    try:
        management_sock = bind(command_host, management_port) if management_port else None
        if management_sock is not None:
            sockets.append(management_sock)
        for k, key in enumerate(scenario.vehicles, start=1):
            mine = Ports(*(management.vehicle_port(p, k, stride)
                           for p in (first.state, first.command, first.admin)))
            command_sock = bind(command_host, mine.command) if mine.command else None
            admin_sock = bind(command_host, mine.admin) if mine.admin else None
            sockets += [s for s in (command_sock, admin_sock) if s is not None]
            games.append(Simulator(
                scenario, state_addr=(state_host, mine.state), command_sock=command_sock,
                admin_sock=admin_sock, seed=seed * 1000 + k, world=world.view(key),
                environment_state=environment,
                send=senders[k - 1] if senders is not None else None,
                instance_seed=None if instance_seed is None else instance_seed + k,
                **game_options))
            ports.append(mine)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return Mission(scenario, games, world, ports, management_sock, rate)
