"""The fault relay breaks the network as asked, reproducibly, in both directions."""

import socket

from pylon_testing.faults import COMMAND, Faults, Relay, STATE
import pytest


def endpoint() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)   # holds every burst
    sock.bind(('127.0.0.1', 0))
    sock.settimeout(0.5)
    return sock


@pytest.fixture
def ends():
    bridge, sim = endpoint(), endpoint()
    made = []

    def relay(seed: int = 1) -> Relay:
        made.append(Relay(bridge.getsockname(), sim.getsockname(), seed=seed))
        return made[-1]
    yield relay, bridge, sim
    for r in made:
        r.close()
    bridge.close()
    sim.close()


def send(relay: Relay, direction: str, count: int) -> None:
    port = relay.state_port if direction == STATE else relay.command_port
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as out:
        for i in range(count):
            out.sendto(str(i).encode(), ('127.0.0.1', port))


def receive(sock: socket.socket, expected: int | None = None) -> list[int]:
    """Return what arrives until ``expected`` came, or nothing for half a second."""
    got = []
    while expected is None or len(got) < expected:
        try:
            got.append(int(sock.recv(100)))
        except TimeoutError:
            break
    return got


def decided(relay: Relay, direction: str, count: int, timeout: float = 30.0) -> None:
    """Wait until the relay has judged ``count`` datagrams of ``direction``.

    Judged: forwarded, dropped, partitioned or unreachable. A relay thread that a busy
    machine stalls is then still waited for, and what it forwarded is in the receiver's
    socket.
    """
    outcomes = [f'{direction}.{k}' for k in ('forwarded', 'dropped', 'partitioned',
                                             'unreachable')]
    relay.wait_for(lambda stats: sum(stats[k] for k in outcomes) >= count, timeout,
                   f'{count} {direction} datagrams judged')


def test_without_faults_everything_arrives_in_order_both_ways(ends):
    make, bridge, sim = ends
    relay = make()
    send(relay, STATE, 200)
    send(relay, COMMAND, 50)
    decided(relay, STATE, 200)
    decided(relay, COMMAND, 50)
    assert receive(bridge, 200) == list(range(200))
    assert receive(sim, 50) == list(range(50))
    assert relay.stats['state.forwarded'] == 200 and relay.stats['command.forwarded'] == 50


def test_loss_is_seeded_and_reproducible(ends):
    make, bridge, _ = ends
    runs = []
    for _ in range(2):
        relay = make(seed=7)
        relay.set(Faults(loss=0.3), STATE)
        send(relay, STATE, 1000)
        decided(relay, STATE, 1000)
        runs.append(receive(bridge, relay.stats['state.forwarded']))
        assert relay.stats['state.received'] == 1000
        assert relay.stats['state.dropped'] + len(runs[-1]) == 1000
    assert runs[0] == runs[1] and 600 < len(runs[0]) < 800


def test_duplication_reordering_and_delay(ends):
    make, bridge, sim = ends
    relay = make()
    relay.set(Faults(duplicate=1.0), COMMAND)
    send(relay, COMMAND, 20)
    assert sorted(receive(sim, 40)) == sorted(list(range(20)) * 2)
    relay.set(Faults(reorder=0.3, reorder_delay=0.05, delay=0.01, jitter=0.005), STATE)
    send(relay, STATE, 300)
    got = receive(bridge, 300)
    assert sorted(got) == list(range(300)) and got != list(range(300))
    assert relay.stats['state.held_back'] > 0


def test_a_partition_drops_both_ways_until_it_ends(ends):
    make, bridge, sim = ends
    relay = make()
    relay.partition(60.0)
    send(relay, STATE, 10)
    send(relay, COMMAND, 10)
    decided(relay, STATE, 10)
    decided(relay, COMMAND, 10)
    assert receive(bridge) == [] and receive(sim) == []
    assert relay.stats['state.partitioned'] == 10 and relay.stats['command.partitioned'] == 10
    relay.heal()
    send(relay, STATE, 5)
    assert receive(bridge, 5) == list(range(5))
    relay.partition(0.2)                        # a short one ends by itself
    for _ in range(20):                         # each turn waits up to 0.5 s for nothing
        if not relay.partitioned:
            break
        receive(bridge)
    assert not relay.partitioned
    send(relay, STATE, 3)
    assert receive(bridge, 3) == [0, 1, 2]
