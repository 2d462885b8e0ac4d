"""Two hosts on one machine: network namespaces joined by a veth pair, for tests of a LAN.

``TwoHosts()`` makes two namespaces (``a`` and ``b``, addresses ``A_ADDRESS`` and
``B_ADDRESS`` on one /24), each with its loopback up and a multicast route over the link
(DDS discovery is multicast: a host on a real LAN routes it by its default route, which
these hosts lack). ``prefix(host)`` is the command that runs a process on a host
(``ip netns exec NAME``); nothing crosses between the two but the link. The names carry
this process's id, so two suites side by side never share a namespace. Needs root and
iproute2: ``unavailable()`` says why not, for a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess

A_ADDRESS = '10.213.0.1'
B_ADDRESS = '10.213.0.2'
PREFIX_LENGTH = 24
MULTICAST = '224.0.0.0/4'


def _ip(*args: str) -> None:
    subprocess.run(['ip', *args], check=True, capture_output=True, text=True, timeout=10)


def unavailable() -> str:
    """Return why two namespaces cannot be made here ('' if they can)."""
    if shutil.which('ip') is None:
        return 'iproute2 (ip) is not installed'
    if os.geteuid() != 0:
        return 'network namespaces need root'
    return ''


class TwoHosts:
    """Two network namespaces on one link; a context manager that removes them."""

    def __init__(self) -> None:
        """Name them after this process (nothing is made before ``__enter__``)."""
        tag = os.getpid()
        self.names = {'a': f'pylon-a-{tag}', 'b': f'pylon-b-{tag}'}
        self.addresses = {'a': A_ADDRESS, 'b': B_ADDRESS}

    def prefix(self, host: str) -> list[str]:
        """Return the command prefix that runs a process on ``host`` ('a' or 'b')."""
        return ['ip', 'netns', 'exec', self.names[host]]

    def __enter__(self) -> TwoHosts:
        """Make the namespaces, the link, the addresses and the routes."""
        link = {'a': f'pa{os.getpid()}'[:15], 'b': f'pb{os.getpid()}'[:15]}
        try:
            for host in ('a', 'b'):
                _ip('netns', 'add', self.names[host])
            _ip('link', 'add', link['a'], 'type', 'veth', 'peer', 'name', link['b'])
            for host in ('a', 'b'):
                name = self.names[host]
                _ip('link', 'set', link[host], 'netns', name)
                _ip('-n', name, 'addr', 'add', f'{self.addresses[host]}/{PREFIX_LENGTH}',
                    'dev', link[host])
                _ip('-n', name, 'link', 'set', 'lo', 'up')
                _ip('-n', name, 'link', 'set', link[host], 'up')
                _ip('-n', name, 'route', 'add', MULTICAST, 'dev', link[host])
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Remove both namespaces (the link goes with them)."""
        for name in self.names.values():
            subprocess.run(['ip', 'netns', 'del', name], capture_output=True, timeout=10)
