"""``pylon_sim_admin``: send one admin request to a running ``pylon_sim`` and print the reply.

Examples::

    pylon_sim_admin --port 49012 status
    pylon_sim_admin --port 49012 pause
    pylon_sim_admin --port 49012 warp rate=4 mode=physics
    pylon_sim_admin --port 49012 switch vessel=target
    pylon_sim_admin --port 49012 heartbeat enabled=false
    pylon_sim_admin --port 49012 sensor id=star_tracker_main enabled=false
    pylon_sim_admin --port 49012 electric_charge amount=0
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
import json
import socket
import sys

ADMIN_PORT = 49012
"""The admin port the launch plan, the demo and the examples use (``--admin-port``)."""

MAX_REQUESTS_PER_FRAME = 16

REQUESTS = ('status', 'pause', 'resume', 'warp', 'switch', 'revert', 'pack', 'unpack',
            'sas', 'sensor', 'electric_charge', 'heartbeat', 'restart', 'quit')


def request(port: int, payload: dict, host: str = '127.0.0.1', timeout: float = 5.0) -> dict:
    """Send ``payload`` to the admin port and return the simulator's reply."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        sock.sendto(json.dumps(payload).encode(), (host, port))
        data, _ = sock.recvfrom(65535)
    return json.loads(data.decode())


def serve(sock: socket.socket | None, handle: Callable[[dict], dict],
          limit: int = MAX_REQUESTS_PER_FRAME) -> None:
    """Answer the admin requests waiting on ``sock`` (at most ``limit``), without blocking.

    Each request is a JSON object; the reply is ``{"ok": true, ...handle(request)}``, or
    ``{"ok": false, "error": ...}`` when ``handle`` raises ``ValueError``, ``KeyError`` or
    ``TypeError`` or the request is not a JSON object (or nested too deep to decode).
    """
    if sock is None:
        return
    for _ in range(limit):
        try:
            data, peer = sock.recvfrom(65535)
        except OSError:          # nothing waiting (BlockingIOError), or the socket failed
            return
        try:
            request = json.loads(data.decode('utf-8'))
            if not isinstance(request, dict):
                raise ValueError('an admin request is a JSON object')
            reply = {'ok': True, **handle(request)}
        except (ValueError, KeyError, TypeError, UnicodeDecodeError, RecursionError) as exc:
            reply = {'ok': False, 'error': str(exc)}      # RecursionError: nested too deep
        try:
            sock.sendto(json.dumps(reply).encode(), peer)
        except OSError:
            pass


def _value(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def main(argv: list[str] | None = None) -> int:
    """Parse ``CMD key=value ...``, send it, print the JSON reply."""
    p = argparse.ArgumentParser(prog='pylon_sim_admin', description=__doc__.splitlines()[0])
    p.add_argument('--host', default='127.0.0.1')
    p.add_argument('--port', type=int, required=True, help='pylon_sim --admin-port')
    p.add_argument('cmd', choices=REQUESTS)
    p.add_argument('args', nargs='*', metavar='KEY=VALUE')
    args = p.parse_args(argv)
    payload: dict = {'cmd': args.cmd}
    for item in args.args:
        key, sep, value = item.partition('=')
        if not sep:
            p.error(f'expected KEY=VALUE, got {item!r}')
        payload[key] = _value(value)
    try:
        reply = request(args.port, payload, args.host)
    except (OSError, TimeoutError) as exc:
        print(f'pylon_sim_admin: no reply from {args.host}:{args.port}: {exc}', file=sys.stderr)
        return 1
    print(json.dumps(reply, indent=2))
    return 0 if reply.get('ok') else 1


if __name__ == '__main__':
    sys.exit(main())
