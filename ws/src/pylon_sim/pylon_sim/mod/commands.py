"""The mod's command port: read command datagrams, drop the bad ones, pass on the rest.

A datagram that does not decode, or has a non-finite, out-of-range or mistyped field, is
dropped whole and counted by reason (``Stats.command_rejected``); so is one while the mod
is unavailable or for another runtime session (``session_mismatch``). The control acts on
the commands that pass (``VehicleManager.command``).
"""

from __future__ import annotations

from collections.abc import Callable
import socket

from pylon_protocol import packets, wire
from pylon_protocol.errors import ProtocolError
from pylon_protocol.session import RuntimeSession

from pylon_sim.mod.outbox import Stats, Throttle

MAX_COMMANDS_PER_FRAME = 256


class CommandIntake:
    """Read, decode and check one game's command datagrams; count what it drops."""

    def __init__(self, stats: Stats, throttle: Throttle) -> None:
        """Count in ``stats``; log through ``throttle``."""
        self.stats = stats
        self._throttle = throttle

    def drain(self, sock: socket.socket | None, handle: Callable[[bytes], None]) -> None:
        """Read at most ``MAX_COMMANDS_PER_FRAME`` datagrams from ``sock``; handle each."""
        if sock is None:
            return
        for _ in range(MAX_COMMANDS_PER_FRAME):
            try:
                data, _ = sock.recvfrom(wire.MAX_DATAGRAM_BYTES)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                self._throttle.log('recv', f'command socket: {exc}')
                return
            handle(data)

    def accept(self, data: bytes, runtime: RuntimeSession | None) -> dict | None:
        """Return the command in ``data`` if ``runtime`` takes it; None if it was dropped.

        ``runtime`` is None while the mod is unavailable (every command is dropped).
        """
        try:
            command = packets.decode_command(data)
        except ProtocolError as exc:
            self.stats.command_rejected[exc.reason] += 1
            if exc.reason != 'unknown_type':
                self._throttle.log(
                    f'command:{exc.reason}',
                    f'dropped a malformed command datagram ({len(data)} B): {exc}'
                    f' [{sum(self.stats.command_rejected.values())} dropped]')
            return None
        if runtime is None or not runtime.accept_command(command):
            self.stats.command_rejected['session_mismatch'] += 1
            return None
        self.stats.commands[command['type']] += 1
        return command
