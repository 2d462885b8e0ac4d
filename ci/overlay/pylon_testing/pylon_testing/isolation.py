"""Per-session isolation: a ROS domain and UDP ports no other test session on this host uses.

Two copies of the suite may run at once (two clones, or CI beside a developer, or a
benchmark beside the suite). Each session claims its domain id and its ports with an
exclusive ``flock`` on a file under a shared lock directory, holds the locks until it
ends, and the kernel drops them if the session dies, so a crashed run never leaks a claim.
``isolate(domain_id, log_dir)`` sets the environment every process the session starts
inherits: its domain, discovery on this host only, ROS logs under ``log_dir``.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
import random
import socket
import tempfile

LOCK_DIR = Path(tempfile.gettempdir()) / 'pylon-test-locks'

# A port handed to a test must stay free until the process it is for binds it, which may be
# seconds later. Two kinds of binds could take it first:
# - Fast DDS binds domain d's UDP ports at 7400 + 250 d + offsets below 250 (RTPS well-known
#   ports: discovery, then 10 + 2 i and 11 + 2 i for participant i). Tests use domains
#   1-100 (domain 0 is the ROS default, left to whatever else runs on the host), whose
#   ports all lie below DDS_PORT_CEILING;
# - every bind to port 0 (a DDS participant's sending sockets, a simulator's or a bridge's
#   own sockets) gets a port of the kernel's ephemeral range (Linux: 32768-60999).
# So test ports come from above DDS_PORT_CEILING and outside the ephemeral range
# (61000-65535 on a default Linux host). CI once lost a simulator's command port to each.
DDS_PORT_BASE, DDS_DOMAIN_GAIN = 7400, 250
DOMAIN_IDS = range(1, 101)
DDS_PORT_CEILING = DDS_PORT_BASE + DDS_DOMAIN_GAIN * DOMAIN_IDS.stop
"""No DDS participant of a test domain binds a UDP port at or above this one."""
EPHEMERAL_RANGE_FILE = Path('/proc/sys/net/ipv4/ip_local_port_range')
PORT_ATTEMPTS = 200


def ephemeral_range() -> tuple[int, int]:
    """Return the kernel's ephemeral port range (first, last), Linux's default if unreadable."""
    try:
        first, last = (int(word) for word in EPHEMERAL_RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return 32768, 60999
    return first, last


def usable_ports() -> list[int]:
    """Return the UDP ports tests may be handed: above DDS's, outside the ephemeral range."""
    first, last = ephemeral_range()
    return [port for port in range(DDS_PORT_CEILING, 65536) if not first <= port <= last]


class Claim:
    """An exclusive, process-lifetime claim on one named resource."""

    def __init__(self, name: str) -> None:
        """Try to claim ``name``; raise ``BlockingIOError`` when another session holds it."""
        LOCK_DIR.mkdir(mode=0o777, parents=True, exist_ok=True)
        self.path = LOCK_DIR / f'{name}.lock'
        self._fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o666)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise
        os.ftruncate(self._fd, 0)
        os.write(self._fd, f'{os.getpid()}\n'.encode())

    def release(self) -> None:
        """Give the claim back (also happens when the process exits)."""
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1


def claim_domain_id(rng: random.Random | None = None) -> tuple[int, Claim]:
    """Claim a ROS domain id that no other live session on this host holds."""
    candidates = list(DOMAIN_IDS)
    (rng or random.Random()).shuffle(candidates)
    for domain_id in candidates:
        try:
            return domain_id, Claim(f'domain-{domain_id}')
        except BlockingIOError:
            continue
    raise RuntimeError(f'all ROS domain ids {DOMAIN_IDS.start}..{DOMAIN_IDS.stop - 1} are claimed')


def claim_domain_block(count: int, rng: random.Random | None = None
                       ) -> tuple[int, list[Claim]]:
    """Claim ``count`` consecutive ROS domain ids no other live session holds; return the first.

    For a stack that spans domains (simulator management in the first, a vehicle in each of
    the next): every id of the block is claimed, or none is.
    """
    if not 1 <= count <= len(DOMAIN_IDS):
        raise ValueError(f'a block of {count} domain ids is not possible')
    starts = list(range(DOMAIN_IDS.start, DOMAIN_IDS.stop - count + 1))
    (rng or random.Random()).shuffle(starts)
    for base in starts:
        claims: list[Claim] = []
        try:
            for domain_id in range(base, base + count):
                claims.append(Claim(f'domain-{domain_id}'))
        except BlockingIOError:
            for claim in claims:
                claim.release()
            continue
        return base, claims
    raise RuntimeError(f'no {count} consecutive ROS domain ids are free')


def _claim_free(port: int, host: str) -> Claim | None:
    """Claim ``port`` if no other session holds it and nothing has it bound now."""
    try:
        claim = Claim(f'udp-{port}')
    except BlockingIOError:
        return None
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.bind((host, port))                  # free now (OSError: taken)
    except OSError:
        claim.release()
        return None
    return claim


def claim_udp_port(host: str = '127.0.0.1', rng: random.Random | None = None
                   ) -> tuple[int, Claim]:
    """Claim a UDP port of ``usable_ports()`` that is free now and no other live session holds."""
    first, claims = claim_udp_port_series(1, 1, host, rng)
    return first, claims[0]


def claim_udp_port_series(count: int, stride: int, host: str = '127.0.0.1',
                          rng: random.Random | None = None) -> tuple[int, list[Claim]]:
    """Claim ``count`` UDP ports ``first + k * stride`` (k < count), all free now; return first.

    For a simulator that serves several vehicles on ports a stride apart. Every port is one
    of ``usable_ports()``, so no bind to port 0 and no DDS participant of a test domain can
    take it before the process it is for binds it.
    """
    pool = usable_ports()
    allowed = set(pool)
    starts = [port for port in pool
              if all(port + k * stride in allowed for k in range(1, count))]
    if not starts:
        raise RuntimeError(f'no series of {count} test ports {stride} apart: the ephemeral '
                           f'range {ephemeral_range()} leaves too few above {DDS_PORT_CEILING}')
    rng = rng or random.Random()
    for first in rng.sample(starts, min(PORT_ATTEMPTS, len(starts))):
        claims: list[Claim] = []
        for k in range(count):
            claim = _claim_free(first + k * stride, host)
            if claim is None:
                break
            claims.append(claim)
        if len(claims) == count:
            return first, claims
        for taken in claims:
            taken.release()
    raise RuntimeError(f'no series of {count} free UDP ports {stride} apart '
                       f'after {PORT_ATTEMPTS} attempts')


def isolate(domain_id: int, log_dir: Path) -> None:
    """Put this process, and every process it starts, on ``domain_id`` with logs in ``log_dir``.

    Discovery stays on this host (``LOCALHOST``, no static peers); ROS console output is
    plain and unbuffered, as is Python's, so that a log read while a process runs is
    complete.
    """
    os.environ.update({
        'ROS_DOMAIN_ID': str(domain_id),
        'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST',
        'ROS_STATIC_PEERS': '',
        'ROS_LOG_DIR': str(log_dir / 'ros'),
        'RCUTILS_COLORIZED_OUTPUT': '0',
        'RCUTILS_LOGGING_BUFFERED_STREAM': '0',
        'PYTHONUNBUFFERED': '1',
    })
    os.environ.pop('ROS_LOCALHOST_ONLY', None)
