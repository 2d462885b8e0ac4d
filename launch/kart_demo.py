"""``DEMO_SCENARIO=kart make demo``: the racing kart natively, from the same plan.

``native_demo`` starts ``pylon_components.plan`` of its components with the kart scenario:
the simulator (the kart with its GNSS receiver and AHRS), the bridge (the kart's sensors at
the competition's names, ``/clock``, no ground truth), ``kart_interface`` and the reference
stack (``kart_localizer``, ``trajectory_publisher``, ``pure_pursuit``), all on game time, and
the live view; the launch file's ``scenario:=kart`` starts the same. This module then plays
the competition's orchestrator: once the kart reports MANUAL (ready) and the interface
listens on the mode topic, it publishes ``true`` on ``/awsim/control_mode_request_topic``
(AUTONOMOUS; again every ``ENGAGE_RETRY_SEC`` while the kart is still MANUAL).

Every second it prints a status line: control mode, lap (0 on the grid, 1 from the first
crossing of the start line), completed laps and the best lap time, speed, cross-track
error and the arc length along the centreline. Position, speed and laps come from the
localizer's estimate (``/localization/kinematic_state``, the team's own view; the kart's
domain has no ground truth, the demo reads none), projected on the track
(``pylon_kart.laps.LapCounter``); lap times are on the estimate's stamps (game time).
With ``DEMO_SECONDS=N`` it stops after N seconds with a summary (``demo summary: {json}``:
laps, lap times, the best, cross-track RMS and maximum once 20 m from the grid, top speed,
wall seconds to ready and to AUTONOMOUS, the times it left AUTONOMOUS once engaged and
the wall seconds it spent so); without, Ctrl-C stops it. Exit status 0 unless a
process died or the kart never drove AUTONOMOUS.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
import signal
import sys
import threading
import time

from pylon_common import topics
from pylon_kart.laps import LapCounter
from pylon_track import load_track

LAYOUT = 'foxglove/kart_layout.json'
TRACK_NAME = 'kart'
ENGAGE_RETRY_SEC = 2.0           # wall time between two AUTONOMOUS requests while MANUAL
DRIVING_FROM_M = 20.0            # cross-track figures once this far from the grid slot
SPIN_SEC = 0.1
SOURCE = 'localizer estimate (/localization/kinematic_state)'


def spin_in_thread(executor, name: str) -> threading.Thread:
    """Start a daemon thread spinning ``executor`` until its context shuts down; return it."""
    def spin() -> None:
        from rclpy.executors import ExternalShutdownException
        try:
            executor.spin()
        except ExternalShutdownException:
            pass
    thread = threading.Thread(target=spin, daemon=True, name=name)
    thread.start()
    return thread


class KartPilot:
    """The demo's ROS node: the mode report and the estimate in, the mode request out.

    In a context of its own on ROS domain ``domain`` (None: the environment's). As the
    competition's orchestrator plays it in a race, ``engage_states`` (e.g. Ready, Start)
    also waits for the vehicle's ``/awsim/state`` to be one of them (subscribed with the
    default profile, as that tool does) and, before the first request, calls the
    localizer's ``/set_initial_pose`` when it is there. ``estimate`` False leaves the
    localizer's estimate (and the laps from it) out.
    """

    def __init__(self, domain: int | None = None, name: str = 'pylon_kart_demo',
                 engage_states: tuple[str, ...] = (), estimate: bool = True) -> None:
        """Create the context, the node, its subscriptions and the mode publisher."""
        from autoware_auto_vehicle_msgs.msg import ControlModeReport
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from std_msgs.msg import Bool, String
        self.rclpy, self.Bool, self.Report = rclpy, Bool, ControlModeReport
        self.modes = {getattr(ControlModeReport, n): n for n in dir(ControlModeReport)
                      if n.isupper() and isinstance(getattr(ControlModeReport, n), int)}
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread: threading.Thread | None = None
        self.mode: int | None = None
        self.state = ''                            # the vehicle's /awsim/state (engage_states)
        self.engage_states = engage_states
        self.laps = LapCounter(load_track(TRACK_NAME))
        self.speed = self.max_speed = 0.0
        self.lateral: list[float] = []             # |cross-track| (m) once driving
        self.odometry = 0
        self.refused = 0                           # estimates the lap counter refused
        self.t0 = time.monotonic()
        self.ready_s = self.autonomous_s = None
        self.left_s: float | None = None           # when it last left AUTONOMOUS
        self.disengagements = 0                    # times it left AUTONOMOUS once engaged
        self._disengaged = 0.0                     # s not AUTONOMOUS since, closed spells
        self.requests = 0
        wanted = [('kart/control_mode', self._on_mode)]
        if estimate:
            wanted.append(('stack/kinematic_state', self._on_state))
        self.subs = [
            self.node.create_subscription(topics.message_class(key), topics.name(key), callback,
                                          topics.qos(key, reader=True))
            for key, callback in wanted]
        if engage_states:          # the competition's orchestrator: the default profile
            self.subs.append(self.node.create_subscription(
                String, topics.name('awsim/state'), self._on_vehicle_state, 10))
        key = 'kart/control_mode_request_topic'
        self.request = self.node.create_publisher(Bool, topics.name(key), topics.qos(key))
        key = 'stack/set_initial_pose'      # the localizer's: back on the kart's grid slot
        self.initial_pose = self.node.create_client(
            topics.message_class(key), topics.name(key)) if engage_states else None
        self.initial_pose_call = None
        self.requested_at: float | None = None

    def _on_mode(self, msg) -> None:
        self.mode = msg.mode
        now = time.monotonic() - self.t0
        if msg.mode == self.Report.MANUAL and self.ready_s is None:
            self.ready_s = now
        if msg.mode == self.Report.AUTONOMOUS:
            if self.autonomous_s is None:
                self.autonomous_s = now
            if self.left_s is not None:
                self._disengaged += now - self.left_s
                self.left_s = None
        elif self.autonomous_s is not None and self.left_s is None:
            self.left_s = now
            self.disengagements += 1

    def disengaged_s(self) -> float:
        """Return the s not AUTONOMOUS since first engaged (a lease lost and taken again)."""
        open_spell = 0.0 if self.left_s is None else time.monotonic() - self.t0 - self.left_s
        return self._disengaged + open_spell

    def _on_vehicle_state(self, msg) -> None:
        self.state = msg.data

    def _on_state(self, msg) -> None:
        self.odometry += 1
        p, v = msg.pose.pose.position, msg.twist.twist.linear
        self.speed = math.hypot(v.x, v.y)
        try:
            status = self.laps.update(msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec,
                                      p.x, p.y)
        except ValueError:
            self.refused += 1
            return
        self.max_speed = max(self.max_speed, self.speed)
        if status.progress >= DRIVING_FROM_M:
            self.lateral.append(abs(status.lateral))

    def engage(self) -> None:
        """Ask for AUTONOMOUS when the kart is MANUAL (ready) and the interface listens.

        With ``engage_states``: once the vehicle's state is one of them, and after the
        localizer answered ``/set_initial_pose`` (when it serves it).
        """
        if self.mode != self.Report.MANUAL or self.request.get_subscription_count() == 0:
            return
        if self.engage_states and self.state not in self.engage_states:
            return
        if self.initial_pose is not None and self.initial_pose.service_is_ready():
            if self.initial_pose_call is None:
                self.initial_pose_call = self.initial_pose.call_async(
                    self.initial_pose.srv_type.Request())
            if not self.initial_pose_call.done():
                return
        now = time.monotonic()
        if self.requested_at is None or now - self.requested_at >= ENGAGE_RETRY_SEC:
            self.request.publish(self.Bool(data=True))
            self.requested_at = now
            self.requests += 1

    def spin(self, seconds: float) -> None:
        """Process callbacks for ``seconds`` (when not spinning in a thread of its own)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=max(0.0, end - time.monotonic()))

    def spin_in_thread(self) -> None:
        """Process callbacks in a thread of its own from now on, until ``close``."""
        self.thread = spin_in_thread(self.executor, self.node.get_name())

    def mode_name(self) -> str:
        """Return the control mode's name, ``waiting`` before the first report."""
        return 'waiting' if self.mode is None else self.modes.get(self.mode, str(self.mode))

    def close(self) -> None:
        """Destroy the node and its context (the spinning thread ends with it)."""
        self.executor.shutdown()
        self.node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)
        if self.thread is not None:
            self.thread.join(timeout=2.0)


def status_line(pilot: KartPilot, odometry_hz: float) -> str:
    """Return one line of demo status (figures from the localizer's estimate)."""
    status = pilot.laps.status
    if status is None:
        where = 'lap -  laps 0 best    -   speed   -  m/s  cross-track   -   m  s    -  m'
    else:
        best = f'{status.best_lap:6.2f}s' if status.best_lap is not None else '   -   '
        where = (f'lap {status.lap:<2} laps {status.laps} best {best} '
                 f'speed {pilot.speed:5.2f} m/s  cross-track {status.lateral:+6.2f} m  '
                 f's {status.s:6.1f} m')
    return f'mode {pilot.mode_name():<10} {where} | estimate {odometry_hz:4.1f}Hz'


def summary(pilot: KartPilot, processes, started: float, log_dir: Path) -> dict:
    """Return the demo's summary (times in s, distances in m, speeds in m/s)."""
    status = pilot.laps.status
    lateral = pilot.lateral

    def rounded(value, digits=2):
        return None if value is None else round(value, digits)
    return {'seconds': round(time.monotonic() - started, 1), 'source': SOURCE,
            'mode': pilot.mode_name(), 'ready_s': rounded(pilot.ready_s),
            'autonomous_s': rounded(pilot.autonomous_s),
            'disengagements': pilot.disengagements,
            'disengaged_s': rounded(pilot.disengaged_s()),
            'laps': status.laps if status else 0, 'lap': status.lap if status else 0,
            'lap_times_s': [round(t, 2) for t in status.lap_times] if status else [],
            'best_lap_s': rounded(status.best_lap if status else None),
            'progress_m': rounded(status.progress if status else 0.0, 1),
            'max_speed_mps': round(pilot.max_speed, 2),
            'cross_track_rms_m': rounded(math.sqrt(sum(x * x for x in lateral) / len(lateral))
                                         if lateral else None, 3),
            'cross_track_max_m': rounded(max(lateral) if lateral else None, 3),
            'estimates': pilot.odometry, 'estimates_refused': pilot.refused,
            'processes_exited': processes.dead(), 'logs': str(log_dir)}


def run(seconds: float | None, processes, log_dir: Path) -> int:
    """Watch the started kart, engage it, print; stop everything; return the exit status.

    ``processes`` (a ``native_demo.Processes``) runs the plan already; ``seconds`` (wall
    clock; None: until Ctrl-C) bounds the run.
    """
    pilot = KartPilot()
    stopping: list[bool] = []
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    started = last_print = time.monotonic()
    last_count, status = 0, 0
    try:
        while not stopping:
            if seconds is not None and time.monotonic() - started >= seconds:
                break
            dead = processes.dead()
            if dead:
                print(f'\ndemo: {", ".join(dead)} exited; see {log_dir}', flush=True)
                status = 1
                break
            pilot.engage()
            pilot.spin(SPIN_SEC)
            if time.monotonic() - last_print >= 1.0:
                hz = (pilot.odometry - last_count) / (time.monotonic() - last_print)
                last_print, last_count = time.monotonic(), pilot.odometry
                end = '\r' if sys.stdout.isatty() else '\n'
                print(status_line(pilot, hz), end=end, flush=True)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        result = summary(pilot, processes, started, log_dir)
        pilot.close()
        processes.stop()
    if status == 0 and pilot.autonomous_s is None:
        status = 1
    print(f'\ndemo summary: {json.dumps(result)}', flush=True)
    return status

