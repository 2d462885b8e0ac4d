"""What a game does for each admin request (``admin.REQUESTS``): one handler per request.

``carry_out`` looks the request's ``cmd`` up in ``HANDLERS``; a handler raises
``ValueError`` for a request it cannot carry out, which ``admin.serve`` answers as an error.
After a request that may have changed the game, the runtime session looks at it at once.
"""

from __future__ import annotations

from collections.abc import Callable
import math
from typing import Protocol

from pylon_sim.game.power import set_electric_charge
from pylon_sim.game.world import WorldView
from pylon_sim.loop import admin
from pylon_sim.sensors.sensing import Sensing

#: requests that act on the whole world (only a game that owns its world takes them)
WORLD_REQUESTS = frozenset({'pause', 'resume', 'warp', 'revert', 'quit'})
#: requests after which the runtime session need not look at the game
UNOBSERVED = frozenset({'status', 'quit', 'heartbeat'})


class Game(Protocol):
    """What the admin requests act on (``runtime.Simulator``)."""

    world: WorldView
    owns_world: bool
    sensing: Sensing
    paused: bool
    heartbeat_enabled: bool
    stop_requested: bool

    def world_reset(self) -> None:
        """Follow the world back to the scenario's start."""

    def restart(self) -> None:
        """Begin as a freshly started KSP process."""

    def observe(self) -> bool:
        """Let the runtime session look at the game now."""


def _status(game: Game, request: dict) -> None:
    pass


def _pause(game: Game, request: dict) -> None:
    game.paused = True


def _resume(game: Game, request: dict) -> None:
    game.paused = False


def _warp(game: Game, request: dict) -> None:
    game.world.set_warp(float(request.get('rate', 1.0)), str(request.get('mode', 'physics')))


def _switch(game: Game, request: dict) -> None:
    world = game.world
    target = world.find(str(request['vessel']))
    if target.spec.is_debris:
        raise ValueError(f'{target.key} is debris and cannot be controlled')
    if target.key != world.active_key and target.key in world.focus:
        raise ValueError(f"{target.key} is another vehicle's active vessel")
    world.active_key = target.key


def _revert(game: Game, request: dict) -> None:
    game.world.reset()
    game.world_reset()


def _pack(game: Game, request: dict) -> None:
    game.world.active.packed = True


def _unpack(game: Game, request: dict) -> None:
    game.world.active.packed = False


def _sas(game: Game, request: dict) -> None:
    game.world.active.sas = bool(request.get('enabled', True))


def _sensor(game: Game, request: dict) -> None:
    if not game.sensing.set_enabled(str(request.get('id')),
                                    bool(request.get('enabled', True))):
        raise ValueError(f'no sensor {request.get("id")!r}')


def _electric_charge(game: Game, request: dict) -> None:
    amount = float(request.get('amount', 0.0))
    if not math.isfinite(amount):
        raise ValueError(f'electric_charge amount must be finite, got {amount}')
    set_electric_charge(game.world.active, amount)


def _heartbeat(game: Game, request: dict) -> None:
    game.heartbeat_enabled = bool(request.get('enabled', True))


def _restart(game: Game, request: dict) -> None:
    game.restart()


def _quit(game: Game, request: dict) -> None:
    game.stop_requested = True


#: ``cmd`` -> its handler, in the order of ``admin.REQUESTS``
HANDLERS: dict[str, Callable[[Game, dict], None]] = {
    'status': _status, 'pause': _pause, 'resume': _resume, 'warp': _warp,
    'switch': _switch, 'revert': _revert, 'pack': _pack, 'unpack': _unpack, 'sas': _sas,
    'sensor': _sensor, 'electric_charge': _electric_charge, 'heartbeat': _heartbeat,
    'restart': _restart, 'quit': _quit}


def carry_out(game: Game, request: dict) -> None:
    """Carry out one admin request on ``game``; raise ``ValueError`` if it cannot be."""
    cmd = request.get('cmd')
    if cmd in WORLD_REQUESTS and not game.owns_world:
        raise ValueError(f'{cmd} acts on the world every vehicle shares: send it to the '
                         'management port')
    handler = HANDLERS.get(cmd)
    if handler is None:
        raise ValueError(f'unknown admin cmd {cmd!r} ({", ".join(admin.REQUESTS)})')
    handler(game, request)
    if cmd not in UNOBSERVED:
        game.observe()
