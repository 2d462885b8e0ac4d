"""Start pylon_sim and udp_bridge on UDP ports of their own, and talk to the simulator.

``start_stack(start, take_port, ...)`` works with any process starter of the shape
``start(cmd, name=...)``: the ``ros_process`` fixture in tests, ``ProcessGroup.start`` in
benchmarks. The returned ``SimStack`` sends admin requests (``pylon_sim_admin``'s JSON)
and reads the simulator's own clock, the clock tests measure time on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pylon_sim.loop.admin import request

FRESH_SESSION_ADMIN = (('resume', {}), ('heartbeat', {'enabled': True}), ('revert', {}))
"""What ``fresh_session`` sends before its restart: running, heartbeats on, the start."""


@dataclass(frozen=True)
class SimStack:
    """The ports of a running simulator (and bridge), and its admin interface."""

    state_port: int
    command_port: int
    admin_port: int

    def admin(self, cmd: str, **fields: object) -> dict:
        """Send ``{'cmd': cmd, **fields}``; return the reply, AssertionError if refused."""
        reply = request(self.admin_port, {'cmd': cmd, **fields})
        assert reply.get('ok'), f'pylon_sim refused {cmd} {fields}: {reply}'
        return reply

    def status(self) -> dict:
        """Return the simulator's status (UT, clock, session, control, counters)."""
        return self.admin('status')

    def lockstep_lapses_past(self, before: int, until: Callable[..., None],
                             wait: float) -> int:
        """Return the simulator's lock-step lapses once they are more than ``before``.

        ``until(condition, what, timeout=...)`` spins the test's node meanwhile (a recorder's
        ``until``); ``wait`` is the simulator's ``--lockstep-wait``. The admin port answers
        between frames: a request sent during a lock-step wait is answered by the first frame
        after it, so each request runs in a thread while the node keeps spinning.
        """
        with ThreadPoolExecutor(1) as pool:
            def ask():
                return pool.submit(request, self.admin_port, {'cmd': 'status'},
                                   timeout=3 * wait)
            asked = ask()

            def lapsed() -> bool:
                nonlocal asked
                if not asked.done():
                    return False
                if asked.result()['lockstep_lapses'] > before:
                    return True
                asked = ask()
                return False
            until(lapsed, 'a lock-step wait that ran out', timeout=6 * wait)
        return asked.result()['lockstep_lapses']

    def control(self) -> dict:
        """Return the control part of the status (owner, applied wrench, timings)."""
        return self.status()['control']

    def clock(self) -> float:
        """Return the simulator's clock (s): it runs at ``--rate`` x real time."""
        return float(self.status()['clock'])

    def fresh_session(self, node: object, ready: Callable[[object], bool] = lambda m: True,
                      what: str = 'the new session ACTIVE') -> tuple[object, object]:
        """Start a test sharing this stack at the scenario's start, as a new KSP process.

        The simulator is resumed with its heartbeat on, reverted to the scenario's start and
        restarted (no lease, override, emergency stop or sensor switch left); ``node`` (the
        test node, in the stack's domain) waits for the new runtime session's ACTIVE
        lifecycle that also meets ``ready``. Return ``(before, active)``: the bridge's
        lifecycle as the test found it, and the new session's.
        """
        from pylon_common import topics  # ROS imports: benchmarks use the rest
        from pylon_interfaces.msg import VesselLifecycle

        from pylon_testing.recorder import TopicRecorder

        rec = TopicRecorder(node).add('life', topics.name('lifecycle'), VesselLifecycle,
                                      topics.qos('lifecycle', reader=True))
        try:
            before = rec.wait_for('life', lambda m: m.runtime_instance != '',
                                  what='the simulator seen by the bridge')
            for command, fields in FRESH_SESSION_ADMIN:
                self.admin(command, **fields)
            instance = self.admin('restart')['runtimeInstance']
            active = rec.wait_for('life', lambda m: m.runtime_instance == instance and
                                  m.state == VesselLifecycle.STATE_ACTIVE and ready(m),
                                  what=what)
            return before, active
        finally:
            rec.close()

    def clock_reached(self, seconds: float) -> Callable[[], bool]:
        """Return a condition that holds once ``seconds`` more of simulator clock passed."""
        end = self.clock() + seconds
        return lambda: self.clock() >= end


def start_stack(start: Callable[..., object], take_port: Callable[[], int],
                scenario: str = 'orbit', bridge_args: Sequence[str] = (),
                sim_args: Sequence[str] = (), bridge: bool = True,
                check_packets: bool = True) -> SimStack:
    """Start ``udp_bridge`` (unless ``bridge`` is false) and ``pylon_sim`` on fresh ports.

    The simulator validates every packet it sends (``--check-packets``) unless
    ``check_packets`` is false, as the benchmarks run it: the production setting.
    """
    stack = SimStack(take_port(), take_port(), take_port())
    if bridge:
        start(['udp_bridge', '--host', '127.0.0.1', '--port', str(stack.state_port),
               '--command-port', str(stack.command_port), *bridge_args], name='bridge')
    start(['pylon_sim', '--scenario', scenario, '--state-port', str(stack.state_port),
           '--command-port', str(stack.command_port), '--admin-port', str(stack.admin_port),
           *(['--check-packets'] if check_packets else []), *sim_args], name='sim')
    return stack
