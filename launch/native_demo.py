"""``make demo``: the demo natively, without ``launch`` (not on PyPI), from the same plan.

Starts ``DEMO_COMPONENTS`` (simulator, bridge, estimator, controller, the live view) with
exactly the command lines ``pylon_components.plan`` gives (the launch file starts the same
plan), then flies a manoeuvre as a user would, through the controller's setpoint topic:
MODE_IDLE (arms the controller), DETUMBLE until the body rate is below 0.001 rad/s (or
10 s), then ATTITUDE_HOLD to a target ``SLEW_DEG`` about body +Z from where the vessel points, held
(phases timed on KSP time, the IMU's stamps). Every second it prints a status line:
session state, vessel, lease owner, phase, attitude error to the target (from the
estimate), and topic rates. With ``DEMO_SECONDS=N`` it stops after N seconds, with
``--until-settled`` once the slew has settled, and prints a summary (time to the first
ACTIVE lifecycle and to the lease, KSP seconds from the slew to settling, the final
attitude error); without either, Ctrl-C stops it. Exit status 0 unless a process died,
nothing came up, or ``--until-settled`` ended before the slew settled. Process logs go
to ``$DEMO_LOG_DIR`` (default: a temporary directory, printed). ``DEMO_OVERLAYS`` (comma
list) and ``DEMO_SCENARIO`` select overlays and the scenario; ``--ports
STATE,COMMAND,ADMIN`` moves the UDP ports. ``DEMO_VEHICLES=N`` runs a mission of N vehicles
instead, each in its own ROS domain (``DEMO_DOMAIN_BASE``; see ``mission_demo.py``).
The live view (``pylon_viewer``) serves Foxglove or Lichtblick on ``ws://127.0.0.1:8765``
(``DEMO_VIEWER_PORT`` moves it), printed at the start.
``DEMO_RATE=R`` runs the simulator at R x real time and the control on game time
(``pylon_components.plan``'s ``sim_rate``: the bridge publishes ``/clock``, the estimator,
controller and chaser run with ``use_sim_time``; the demo sends its setpoints every
``SETPOINT_PERIOD_SEC`` of game time); ``DEMO_USE_SIM_TIME=true|false`` asks for game time
or not at any rate (default: exactly when the rate is not 1).
``DEMO_RECORD=path.mcap`` also starts the plan's ``record`` component (``pylon_recorder``)
writing everything there (an existing file is refused); ``DEMO_PLOT=dir`` then runs
``pylon_plot`` on it at the end (recording to ``demo.mcap`` in the log directory when
``DEMO_RECORD`` is not set).
``DEMO_SCENARIO=kart`` runs the racing kart instead (its interface and reference stack
instead of the estimator and controller; ``kart_demo.py``): engaged AUTONOMOUS once ready,
a status line of laps, speed, cross-track error and control mode, a summary with the laps
and the best lap time (no ``--until-settled``, ``--slew-every`` or ``DEMO_PLOT`` there).
``DEMO_SCENARIO=race`` runs the race (``race_demo.py``): every kart of it (four; or
``DEMO_VEHICLES`` of them, 1, 2 or 4) in a domain of its own with its bridge, interface and
reference stack, the management and the organisers' view in domain ``DEMO_DOMAIN_BASE``,
the competition's handshake (``DEMO_START_MODE=count|sync``), the race to its end
(``DEMO_RACE_LAPS``, ``DEMO_RACE_TIME_LIMIT`` shorten it) and the result printed.
``--slew-every SECONDS`` (a soak, ``bench/bench_soak.py``) keeps flying once the first
slew has settled: every SECONDS of KSP time from the start of the previous slew (and not
before it settled) another slew of ``SLEW_DEG``, back and forth (-, +, -, ...) about body +Z
from the previous target; ``--until-slews N`` stops once N slews have settled. The summary
then also counts the slews flown and settled and gives each one's settling time (KSP s) and
the longest. Every summary has the lease losses (the authority state leaving OWNED, or
another owner, after it was first owned; when, s after the start) and the largest gap
between consecutive header stamps (KSP s) of the IMU and of the estimate (odometry) the
demo node received.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
import json
import math
import os
from pathlib import Path
import signal
import subprocess
import sys
import tempfile
import time

from pylon_bridge.vessel_session import ACTIVE, CHANGED, STATE_NAMES
from pylon_common import mission, stamps, topics
from pylon_common.children import die_with_parent
from pylon_interfaces.msg import ControlAuthorityState
from pylon_protocol import rotations
from pylon_protocol.threads import limit_threads
from pylon_tools import viewer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kart_demo  # noqa: E402
import mission_demo  # noqa: E402
import pylon_components as pc  # noqa: E402
import race_demo  # noqa: E402

DEMO_COMPONENTS = ('sim', 'bridge', 'estimator', 'controller', 'kart', 'kart_stack', 'viewer')
"""What the demo starts: the plan drops the kart's components but for the kart scenario and
the estimator and controller for it (``pylon_components.effective``)."""
LAYOUT = 'foxglove/pylon_layout.json'
SLEW_DEG = 30.0
ACTIVE_STATES = (ACTIVE, CHANGED)
OWNED = ControlAuthorityState.STATE_OWNED
DETUMBLE_DONE_RAD_S = 0.001
DETUMBLE_MAX_SEC = 10.0           # KSP time
SETTLED_DEG = 0.1
SETTLED_HOLD_SEC = 3.0            # KSP time below SETTLED_DEG that counts as settled
SETPOINT_PERIOD_SEC = 0.2        # KSP time (the demo loop waits SETPOINT_PERIOD_SEC / rate)


def planned(overlays=(), scenario=pc.DEFAULT_SCENARIO, ports=None, record: str = '',
            sim_rate: float = 1.0, use_sim_time: bool | None = None) -> list:
    """Return the demo's processes: ``pylon_components.plan`` of ``DEMO_COMPONENTS``.

    ``$DEMO_VIEWER_PORT`` sets the live view's port (a fixed parameter after its files);
    ``record`` (``DEMO_RECORD``, a path) adds the ``record`` component writing there;
    ``sim_rate`` (``DEMO_RATE``) and ``use_sim_time`` (``DEMO_USE_SIM_TIME``): game time.
    """
    out = pc.plan(DEMO_COMPONENTS, overlays=overlays, scenario=scenario, ports=ports,
                  record_output=record, sim_rate=sim_rate, use_sim_time=use_sim_time)
    port = os.environ.get('DEMO_VIEWER_PORT')
    return [replace(p, parameters=(*p.parameters, ('port', int(port))))
            if port and p.component == 'viewer' else p for p in out]


def viewer_url() -> str:
    """Return the address the live view serves (``$DEMO_VIEWER_PORT`` or its default)."""
    port = os.environ.get('DEMO_VIEWER_PORT')
    return viewer.url(viewer.DEFAULT_ADDRESS, int(port) if port else viewer.DEFAULT_PORT)


def command_lines(overlays=(), scenario=pc.DEFAULT_SCENARIO, ports=None,
                  record: str = '', sim_rate: float = 1.0,
                  use_sim_time: bool | None = None) -> list[list[str]]:
    """Return the command line of every demo process, in start order."""
    return [pc.command_line(p)
            for p in planned(overlays, scenario, ports, record, sim_rate, use_sim_time)]


class Processes:
    """The demo's child processes, each in its own process group with a log file."""

    def __init__(self, log_dir: Path) -> None:
        """Log into ``log_dir``."""
        self.log_dir = log_dir
        self.running: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, cmd: list[str], domain: int | None = None) -> None:
        """Start one process (in ROS domain ``domain``; None: the environment's)."""
        log = open(self.log_dir / f'{name}.log', 'wb')
        env = dict(os.environ) if domain is None else {**os.environ,
                                                       'ROS_DOMAIN_ID': str(domain)}
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=die_with_parent)
        log.close()
        self.running.append((name, proc))

    def dead(self) -> list[str]:
        """Return the names of processes that exited."""
        return [name for name, proc in self.running if proc.poll() is not None]

    def stop(self) -> None:
        """SIGINT every process (newest first), then SIGTERM, then SIGKILL."""
        for sig, wait in ((signal.SIGINT, 5.0), (signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
            alive = [(n, p) for n, p in reversed(self.running) if p.poll() is None]
            for _, proc in alive:
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    pass
            end = time.monotonic() + wait
            while any(p.poll() is None for _, p in alive) and time.monotonic() < end:
                time.sleep(0.05)


class Pilot:
    """The demo's ROS node: setpoints out, status in."""

    def __init__(self) -> None:
        """Create the node and its subscriptions."""
        from pylon_common import topics
        from pylon_interfaces.msg import ControlAuthorityState, ControlSetpoint
        import rclpy
        self.rclpy, self.Setpoint = rclpy, ControlSetpoint
        rclpy.init()
        self.node = rclpy.create_node('pylon_demo')
        self.lifecycle = self.authority = self.odom = self.imu = None
        self.ksp_time: float | None = None        # stamp of the newest IMU sample (KSP time)
        self.counts = {'imu': 0, 'odometry': 0, 'wrench_feedback': 0}
        self.first_active = self.first_owned = None
        self.lease_lost_at: list[float] = []      # s since start: OWNED, then not
        self.stamps: dict[str, float] = {}        # newest header stamp (s) per topic
        self.max_gap: dict[str, float] = {'imu': 0.0, 'odometry': 0.0}
        self.controller: dict[str, str] = {}      # the controller's newest diagnostics
        self.t0 = time.monotonic()

        def on_life(msg):
            self.lifecycle = msg
            if msg.state in ACTIVE_STATES and self.first_active is None:
                self.first_active = time.monotonic() - self.t0

        def on_authority(msg):
            was = self.authority
            self.authority = msg
            if msg.state == ControlAuthorityState.STATE_OWNED and self.first_owned is None:
                self.first_owned = time.monotonic() - self.t0
            if was is not None and was.state == OWNED and self.first_owned is not None and \
                    (msg.state != OWNED or msg.controller_id != was.controller_id):
                self.lease_lost_at.append(time.monotonic() - self.t0)

        def on_controller(msg):
            if msg.status:
                self.controller = {kv.key: kv.value for kv in msg.status[0].values}

        def count(name, attr=None):
            def callback(msg):
                self.counts[name] += 1
                if attr:
                    setattr(self, attr, msg)
                if name in self.max_gap:
                    stamp = stamps.to_seconds(msg)
                    if name in self.stamps:
                        self.max_gap[name] = max(self.max_gap[name], stamp - self.stamps[name])
                    self.stamps[name] = stamp
                if name == 'imu':
                    self.ksp_time = stamps.to_seconds(msg)
            return callback
        self.subs = [
            self.node.create_subscription(topics.message_class(key),
                                          topics.topic(key).default_name(), callback,
                                          topics.qos(key, reader=True))
            for key, callback in (('lifecycle', on_life),
                                  ('control/authority/state', on_authority),
                                  ('odometry', count('odometry', 'odom')),
                                  ('imu', count('imu', 'imu')),
                                  ('control/wrench_feedback', count('wrench_feedback')),
                                  ('controller/diagnostics', on_controller))]
        self.pub = self.node.create_publisher(ControlSetpoint,
                                              topics.topic('setpoint').default_name(),
                                              topics.qos('setpoint'))

    def spin(self, seconds: float) -> None:
        """Process callbacks for ``seconds``."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.rclpy.spin_once(self.node, timeout_sec=max(0.0, end - time.monotonic()))

    def send(self, mode: int, q=(0.0, 0.0, 0.0, 1.0)) -> None:
        """Publish one setpoint."""
        msg = self.Setpoint(mode=mode)
        msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = q
        self.pub.publish(msg)

    def body_rate(self) -> float | None:
        """Return the IMU's body rate magnitude (rad/s)."""
        if self.imu is None:
            return None
        w = self.imu.angular_velocity
        return math.sqrt(w.x ** 2 + w.y ** 2 + w.z ** 2)

    def attitude(self):
        """Return the estimated attitude (x, y, z, w), or None."""
        if self.odom is None:
            return None
        o = self.odom.pose.pose.orientation
        return (o.x, o.y, o.z, o.w)

    def close(self) -> None:
        """Destroy the node."""
        self.node.destroy_node()
        self.rclpy.try_shutdown()




def status_line(pilot: Pilot, flight: Flight, rates: dict) -> str:
    """Return one line of demo status."""
    life = pilot.lifecycle
    session = STATE_NAMES.get(life.state, '?') if life else 'waiting'
    vessel = f'{life.vessel_name or "-"}' if life else '-'
    owner = pilot.authority.controller_id or '-' if pilot.authority else '-'
    error = flight.error
    err = f'{error:7.3f}°' if error is not None else '    -  '
    rate_text = ' '.join(f'{k} {v:4.1f}Hz' for k, v in rates.items())
    return (f'session {session:<11} vessel {vessel:<10} lease {owner:<20} {flight.phase:<13} '
            f'error {err} | {rate_text}')


class Flight:
    """The manoeuvre as a user flies it, timed on KSP time (the IMU's stamps).

    starting → arming (MODE_IDLE once the controller owns the lease) → detumble (1 s after
    arming, until the body rate is below ``DETUMBLE_DONE_RAD_S`` or ``DETUMBLE_MAX_SEC``
    passed) → slew/hold (ATTITUDE_HOLD ``SLEW_DEG`` about body +Z, held). ``settled_s`` is
    the KSP time from the start of the slew until the error stayed below ``SETTLED_DEG``
    for ``SETTLED_HOLD_SEC``. When the controller disarms on the way (it does when its
    input stops for longer than its timeouts, e.g. on a machine too busy to keep up) and so
    refuses the setpoints, the demo does what a user must: it sends MODE_IDLE again and
    goes on (``rearmed`` lists why it had to).

    With ``slew_every`` (KSP s) the hold does not end the flight: once the slew has settled
    and ``slew_every`` passed since it started, the next one starts, ``SLEW_DEG`` the other
    way about body +Z from the previous target; ``settle_times`` has each slew's settling
    time (None while it has not settled), ``settled_s`` the current slew's.
    """

    def __init__(self, slew_every: float | None = None) -> None:
        """Start before the lease."""
        self.phase = 'starting'
        self.slew_every = slew_every
        self.target = self.error = self.settled_s = None
        self.detumble_at = self.slew_at = self.below_since = None
        self.rearmed: list[str] = []
        self.settle_times: list[float | None] = []
        self._refusals_seen = 0

    def step(self, pilot: Pilot) -> None:
        """Send this period's setpoint and move on to the next phase when it is due."""
        now = pilot.ksp_time
        if self.phase in ('detumble', 'slew/hold') and self._disarmed(pilot):
            pilot.send(pilot.Setpoint.MODE_IDLE)
            return
        owned = pilot.authority is not None and pilot.authority.state == OWNED and \
            pilot.authority.controller_id == topics.SETPOINT_CONTROLLER
        if self.phase == 'starting' and owned and now is not None:
            self.phase = 'arming'
        elif self.phase == 'arming':
            pilot.send(pilot.Setpoint.MODE_IDLE)
            self.phase, self.detumble_at = 'detumble', now + 1.0
        elif self.phase == 'detumble':
            self._detumble(pilot, now)
        elif self.phase == 'slew/hold':
            if self._next_slew_due(now):
                self._slew(pilot.attitude() if self.target is None else self.target,
                           -SLEW_DEG if len(self.settle_times) % 2 else SLEW_DEG, now)
            pilot.send(pilot.Setpoint.MODE_ATTITUDE_HOLD, self.target)
            self.error = math.degrees(rotations.angle_between(pilot.attitude(), self.target))
            self._note_settling(now)

    def _disarmed(self, pilot: Pilot) -> bool:
        """Tell whether the controller refused setpoints since the last look: not armed."""
        refused = int(pilot.controller.get('setpoints_refused') or 0)
        if refused <= self._refusals_seen:
            return False
        self._refusals_seen = refused
        if pilot.controller.get('last_refusal') != 'not_armed_send_idle':
            return False
        self.rearmed.append(pilot.controller.get('disarm_reason', ''))
        return True

    def _detumble(self, pilot: Pilot, now: float) -> None:
        if now < self.detumble_at:
            pilot.send(pilot.Setpoint.MODE_IDLE)
            return
        pilot.send(pilot.Setpoint.MODE_DETUMBLE)
        rate = pilot.body_rate()
        calm = rate is not None and rate < DETUMBLE_DONE_RAD_S
        if pilot.attitude() and (calm or now - self.detumble_at > DETUMBLE_MAX_SEC):
            self._slew(pilot.attitude(), SLEW_DEG, now)
            self.phase = 'slew/hold'

    def _slew(self, start, degrees: float, now: float) -> None:
        """Aim ``degrees`` about body +Z from the attitude ``start``; the slew starts now."""
        turn = rotations.from_axis_angle((0, 0, 1), math.radians(degrees))
        self.target = tuple(rotations.multiply(start, turn).tolist())
        self.slew_at, self.below_since, self.settled_s = now, None, None
        self.settle_times.append(None)

    def _next_slew_due(self, now: float) -> bool:
        """Tell whether ``slew_every`` asks for the next slew: the current one settled."""
        return self.slew_every is not None and self.settled_s is not None and \
            now - self.slew_at >= self.slew_every

    def _note_settling(self, now: float) -> None:
        if self.error >= SETTLED_DEG:
            self.below_since = self.settled_s = None
        elif self.below_since is None:
            self.below_since = now
        elif self.settled_s is None and now - self.below_since >= SETTLED_HOLD_SEC:
            self.settled_s = self.below_since - self.slew_at
            if self.settle_times[-1] is None:
                self.settle_times[-1] = self.settled_s


def _start(procs: Processes, overlays: list[str], scenario: str, ports, record: str,
           sim_rate: float = 1.0, use_sim_time: bool | None = None) -> None:
    if sim_rate != 1.0 or use_sim_time is not None:
        game = pc.on_game_time(sim_rate, use_sim_time)
        print(f'demo: simulator at {sim_rate:g}x real time; control on '
              f'{"game time (/clock)" if game else "the steady clock"}', flush=True)
    for proc in planned(overlays, scenario, ports, record, sim_rate, use_sim_time):
        cmd = pc.command_line(proc)
        print(f'demo: starting {" ".join(cmd)}', flush=True)
        procs.start(proc.executable, cmd)
    if 'viewer' in DEMO_COMPONENTS:
        layout = kart_demo.LAYOUT if pc.is_kart(scenario) else LAYOUT
        print(f'demo: live view on {viewer_url()} (Foxglove or Lichtblick: Open connection → '
              f'Foxglove WebSocket; layout: import {layout})', flush=True)


def _summary(pilot: Pilot, flight: Flight, procs: Processes, started: float,
             log_dir: Path) -> dict:
    def rounded(value, digits):
        return None if value is None else round(value, digits)
    return {'seconds': round(time.monotonic() - started, 1),
            'first_active_s': rounded(pilot.first_active, 2),
            'lease_owned_s': rounded(pilot.first_owned, 2),
            'phase': flight.phase, 'settled_s': rounded(flight.settled_s, 2),
            'rearmed': flight.rearmed,
            'final_attitude_error_deg': rounded(flight.error, 4),
            'processes_exited': procs.dead(), 'logs': str(log_dir),
            **_soak_figures(pilot, flight)}


def _soak_figures(pilot: Pilot, flight: Flight) -> dict:
    """Return the summary's figures of a long run: lease losses, stamp gaps, the slews."""
    settled = [t for t in flight.settle_times if t is not None]
    out = {'lease_losses': len(pilot.lease_lost_at),
           'lease_lost_at_s': [round(t, 1) for t in pilot.lease_lost_at],
           'max_stamp_gap_s': {k: round(v, 3) for k, v in pilot.max_gap.items()}}
    if flight.slew_every is not None:
        out.update({'slew_every_s': flight.slew_every, 'slews': len(flight.settle_times),
                    'slews_settled': len(settled),
                    'settle_s': [None if t is None else round(t, 2)
                                 for t in flight.settle_times],
                    'max_settle_s': round(max(settled), 2) if settled else None})
    return out


def run(seconds: float | None, overlays: list[str], scenario: str, ports, log_dir: Path,
        until_settled: bool = False, record: str = '', plot_dir: str = '',
        slew_every: float | None = None, until_slews: int | None = None,
        sim_rate: float = 1.0, use_sim_time: bool | None = None) -> int:
    """Start the processes, fly, print; return the exit status.

    Stops after ``seconds`` (wall clock; None: until Ctrl-C) or, with ``until_settled``, as
    soon as the slew has settled (with ``until_slews``, once that many slews have). With
    ``record`` the recorder writes everything there; with ``plot_dir`` ``pylon_plot`` draws
    it there at the end. ``slew_every``: see ``Flight``. ``sim_rate``, ``use_sim_time``:
    see ``planned``.
    """
    procs = Processes(log_dir)
    print(f'demo: logs in {log_dir}', flush=True)
    _start(procs, overlays, scenario, ports, record, sim_rate, use_sim_time)
    if pc.is_kart(scenario):
        status = kart_demo.run(seconds, procs, log_dir)
        return status if not record or recorded(record, '') else status or 1
    pilot, flight = Pilot(), Flight(slew_every)
    started = last_print = time.monotonic()
    last_counts = dict(pilot.counts)
    stopping = []
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    status = 0
    try:
        while not stopping and not (until_settled and done(flight, until_slews)):
            if seconds is not None and time.monotonic() - started >= seconds:
                break
            dead = procs.dead()
            if dead:
                print(f'\ndemo: {", ".join(dead)} exited; see {log_dir}', flush=True)
                status = 1
                break
            flight.step(pilot)
            pilot.spin(SETPOINT_PERIOD_SEC / sim_rate)
            if time.monotonic() - last_print >= 1.0:
                span = time.monotonic() - last_print
                rates = {k: (pilot.counts[k] - last_counts[k]) / span for k in pilot.counts}
                last_print, last_counts = time.monotonic(), dict(pilot.counts)
                end = '\r' if sys.stdout.isatty() else '\n'
                print(status_line(pilot, flight, rates), end=end, flush=True)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        summary = _summary(pilot, flight, procs, started, log_dir)
        pilot.close()
        procs.stop()
    if status == 0 and (pilot.first_active is None or pilot.first_owned is None or
                        (until_settled and not done(flight, until_slews))):
        status = 1
    print(f'\ndemo summary: {json.dumps(summary)}', flush=True)
    if record and not recorded(record, plot_dir):
        status = status or 1
    return status


def done(flight: Flight, slews: int | None) -> bool:
    """Tell whether the slew has settled (with ``slews``: that many slews have)."""
    if slews is None:
        return flight.settled_s is not None
    return sum(t is not None for t in flight.settle_times) >= slews


def recorded(record: str, plot_dir: str) -> bool:
    """Say where the recording is and how to see it; plot it into ``plot_dir`` if given.

    Return False when the recording is missing or ``pylon_plot`` failed.
    """
    if not Path(record).is_file():
        print(f'demo: no recording at {record}; see the pylon_recorder log', flush=True)
        return False
    print(f'demo: recorded {record} (Foxglove: File > Open local file; '
          f'ros2 bag play -s mcap {record}; plots: ci/env.sh pylon_plot {record})', flush=True)
    if not plot_dir:
        return True
    result = subprocess.run(['pylon_plot', record, '-o', plot_dir], capture_output=True,
                            text=True)
    print(f'demo: pylon_plot: {(result.stdout + result.stderr).strip()}', flush=True)
    return result.returncode == 0


def main(argv: list[str] | None = None) -> int:
    """Parse the options and run the demo."""
    limit_threads()
    parser = argparse.ArgumentParser(prog='make demo', description=__doc__.splitlines()[0])
    parser.add_argument('--ports', help='STATE,COMMAND,ADMIN UDP ports (default 49010-49012; '
                        "with DEMO_VEHICLES: the first vehicle's, then a fourth, the "
                        'management port, default 49000)')
    parser.add_argument('--print-commands', action='store_true',
                        help='print the command lines as JSON and exit')
    parser.add_argument('--until-settled', action='store_true',
                        help='stop once the slew has settled (error below 0.1 degree for 3 s '
                             'of KSP time); DEMO_SECONDS still bounds the run')
    parser.add_argument('--slew-every', type=float, metavar='SECONDS',
                        help='after the first slew has settled, slew SLEW_DEG back and forth '
                             'every SECONDS of KSP time (each once the previous settled); '
                             'the summary counts slews, settling, lease losses, stamp gaps')
    parser.add_argument('--until-slews', type=int, metavar='N',
                        help='stop once N slews have settled (--until-settled for N slews)')
    args = parser.parse_args(argv)
    if args.slew_every is not None and args.slew_every <= 0:
        parser.error('--slew-every must be positive')
    if args.until_slews is not None and args.slew_every is None:
        parser.error('--until-slews needs --slew-every')
    until_settled = args.until_settled or args.until_slews is not None
    ports = tuple(int(p) for p in args.ports.split(',')) if args.ports else None
    overlays = pc.split_list(os.environ.get('DEMO_OVERLAYS', ''))
    vehicles = mission_demo.vehicles_from_env()
    base = int(os.environ.get('DEMO_DOMAIN_BASE') or mission.DEFAULT_DOMAIN_BASE)
    scenario = os.environ.get('DEMO_SCENARIO', '' if vehicles else pc.DEFAULT_SCENARIO)
    vehicles = vehicles or (pc.default_vehicles(scenario) if scenario else None)
    race = race_demo.options_from_env() if vehicles and scenario and pc.race_of(scenario) \
        else None
    record, plot_dir = os.environ.get('DEMO_RECORD', ''), os.environ.get('DEMO_PLOT', '')
    sim_rate = pc.sim_rate_of(os.environ.get('DEMO_RATE'))
    use_sim_time = pc.parse_bool(os.environ.get('DEMO_USE_SIM_TIME'))
    if args.print_commands:
        if race is not None:
            planned_ = race_demo.plan(vehicles, overlays, scenario, ports, base, record=record,
                                      sim_rate=sim_rate, use_sim_time=use_sim_time, **race)
        elif vehicles:
            planned_ = mission_demo.plan(vehicles, overlays, scenario, ports, base,
                                         record=record, sim_rate=sim_rate,
                                         use_sim_time=use_sim_time)
        else:
            planned_ = planned(overlays, scenario, ports, record, sim_rate, use_sim_time)
        print(json.dumps([pc.command_line(p) for p in planned_]))
        return 0
    seconds = float(os.environ['DEMO_SECONDS']) if os.environ.get('DEMO_SECONDS') else None
    log_dir = Path(os.environ.get('DEMO_LOG_DIR') or tempfile.mkdtemp(prefix='pylon_demo_'))
    log_dir.mkdir(parents=True, exist_ok=True)
    record = record or (str(log_dir / 'demo.mcap') if plot_dir and not vehicles else '')
    if record and not vehicles and Path(record).exists():
        print(f'demo: DEMO_RECORD={record} exists; the recorder never overwrites a recording',
              file=sys.stderr)
        return 2
    if pc.is_kart(scenario) and not vehicles and (until_settled or args.slew_every is not None
                                                  or plot_dir):
        print('demo: the kart flies no slew (--until-settled, --slew-every) and has no plots '
              '(DEMO_PLOT); use DEMO_SECONDS', file=sys.stderr)
        return 2
    if vehicles and args.slew_every is not None:
        print('demo: --slew-every flies one vehicle; unset DEMO_VEHICLES', file=sys.stderr)
        return 2
    if race is not None:
        return race_demo.run(vehicles, seconds, overlays, scenario, ports, base, log_dir,
                             Processes(log_dir), record, sim_rate, use_sim_time, **race)
    if vehicles:
        return mission_demo.run(vehicles, seconds, overlays, scenario, ports, base, log_dir,
                                Processes(log_dir), record, sim_rate=sim_rate,
                                use_sim_time=use_sim_time)
    return run(seconds, overlays, scenario, ports, log_dir, until_settled, record,
               plot_dir, args.slew_every, args.until_slews, sim_rate, use_sim_time)


if __name__ == '__main__':
    sys.exit(main())
