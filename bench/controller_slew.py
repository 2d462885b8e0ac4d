"""setpoint_controller in the loop: a 90 degree slew and a detumble of the orbit sat.

pylon_sim (real time) -> udp_bridge -> attitude_estimator -> setpoint_controller, each a
process in a ROS domain of its own (``pylon_testing.bench``, the harness of the tests).
The bench node sends the setpoints and judges on the estimate (attitude error, settling,
overshoot) and on ground truth (body rate; the estimator's error through
``evaluation.evaluate_attitude``); the controller and the estimator never read ground
truth.

1. **slew**: ATTITUDE_HOLD 90 degrees about body +Z from rest. ``bound_s`` is the
   rate-limited minimum time: angle / rate limit + rate limit / angular acceleration,
   the acceleration being the sat's torque capacity about Z (reaction wheel and RCS, from
   the simulator's allocation) over its inertia. ``settle_time_s`` is when the error last
   went below 0.1 degree; ``overshoot_deg`` the largest error after it first did;
   ``max_rate_ratio`` the peak true body rate over the limit.
2. **detumble**: the sat starts spinning at 0.3 rad/s (a scenario copy with that initial
   rate); DETUMBLE until the true rate is below 0.001 rad/s.
3. **endurance** (only when named: ``controller_slew.py endurance``): ATTITUDE_HOLD for
   ``ENDURANCE_SECONDS`` (600): lease losses, command-period jitter, and the estimator's
   dead-reckoned position change over 60 s windows of its stamps (its drift: nothing
   pushes the vessel).

Also reported: the controller's command-period jitter (its diagnostics) and whether the
lease was ever lost. The last line of stdout is one JSON object.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
import sys
import tempfile
import time

import numpy as np
from pylon_common import topics
from pylon_common.stamps import to_seconds as stamp
from pylon_protocol import rotations
from pylon_testing.bench import BenchError, BenchNode, BenchSession, run
from pylon_testing.stack import start_stack
import yaml

ROOT = Path(__file__).resolve().parent.parent

RATE_LIMIT_DEG_S = 1.5
SLEW_DEG = 90.0
SETTLE_DEG = 0.1
DETUMBLE_RATE = 0.3
DETUMBLE_DONE = 0.001
STACK_TIMEOUT_SEC = 60.0
SETPOINT_PERIOD_SEC = 0.2
RECORDED = {'odom': 'odometry', 'pose': 'ground_truth/pose',
            'frame': 'ground_truth/frame_angular_velocity', 'twist': 'ground_truth/twist_body',
            'authority': 'control/authority/state', 'diag': 'controller/diagnostics'}
"""What the bench records: its name -> the topic contract's key."""


def torque_capacity_z() -> tuple[float, float]:
    """Return the sat's torque capacity about +Z (N·m) and its Izz (kg·m²)."""
    from pylon_sim.game.vessel import mass_properties
    from pylon_sim.loop.scenario import load_scenario
    from pylon_sim.mod import allocation
    spec = load_scenario('orbit').vessel('sat').spec
    props = mass_properties(spec, spec.initial_resources())
    nozzles, engines, wheels = allocation.geometry(spec, props.com)
    big = 1e9
    result = allocation.allocate(nozzles, [], wheels, np.zeros(3), [0.0, 0.0, big],
                                 force_scale=250000.0, torque_scale=100000.0,
                                 use_engines=False)
    return float(result.torque[2]), float(props.inertia[2, 2])


def topic_name(key: str) -> str:
    """Return the fully qualified default name of topic ``key`` as its owner resolves it."""
    return topics.resolved(key, topics.topic(key).owner)


class Bench(BenchNode):
    """The bench's node: what it records of the loop, and the setpoints it sends."""

    def __init__(self, session: BenchSession) -> None:
        """Record the loop's topics; create the setpoint publisher."""
        super().__init__('bench_controller')
        self.session = session
        self.Setpoint = topics.message_class('setpoint')
        self.got = self.recorder()
        for name, key in RECORDED.items():
            self.got.add(name, topic_name(key), topics.message_class(key),
                         topics.qos(key, reader=True))
        self.pub = self.node.create_publisher(self.Setpoint, topic_name('setpoint'),
                                              topics.qos('setpoint'))

    def check(self) -> None:
        """Raise ``ProcessError`` if a process of the stack died."""
        self.session.group.check()

    def wait(self, condition, timeout: float, what: str) -> None:
        """Spin until ``condition()``; BenchError with what was received after ``timeout``."""
        try:
            self.until(self.session.group.guard(condition), timeout, what)
        except TimeoutError:
            raise BenchError(f'{what} did not happen within {timeout:g} s '
                             f'(received: {self.got.mark()})') from None

    def owned(self) -> bool:
        """Tell whether the controller owns the lease (recent authority states)."""
        return any(m.state == 1 and m.controller_id == topics.SETPOINT_CONTROLLER
                   for m in self.got.messages('authority')[-3:])

    def attitude(self) -> np.ndarray:
        """Return the latest estimated attitude (x, y, z, w)."""
        o = self.got.last('odom').pose.pose.orientation
        return np.array([o.x, o.y, o.z, o.w])

    def body_rate(self) -> float:
        """Return the latest true body rate (rad/s)."""
        w = self.got.last('twist').twist.angular
        return math.sqrt(w.x ** 2 + w.y ** 2 + w.z ** 2)

    def diagnostics(self) -> dict:
        """Return the controller's latest diagnostics values ({} before the first)."""
        diag = self.got.last('diag')
        return {kv.key: kv.value for kv in diag.status[0].values} if diag else {}

    def send(self, mode: int, q=(0.0, 0.0, 0.0, 1.0)) -> None:
        """Publish one setpoint."""
        msg = self.Setpoint(mode=mode)
        msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = \
            (float(v) for v in q)
        self.pub.publish(msg)

    def stream(self, mode: int, q, seconds: float, sample=None) -> None:
        """Send a setpoint every 0.2 s for ``seconds``; stop early once ``sample()`` is true."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.send(mode, q)
            self.spin_for(SETPOINT_PERIOD_SEC, self.check)
            if sample is not None and sample():
                return

    def armed(self) -> None:
        """Wait for the lease and the estimate, then arm the controller (MODE_IDLE)."""
        self.wait(lambda: self.owned() and len(self.got.messages('odom')) > 30,
                  STACK_TIMEOUT_SEC, 'the lease and the estimate')
        self.stream(self.Setpoint.MODE_IDLE, (0, 0, 0, 1), 1.0)


def start_loop(session: BenchSession, scenario: str) -> Bench:
    """Start simulator, bridge, estimator and controller; return the bench's node."""
    start_stack(session.group.start, session.take_port, scenario,
                check_packets=False)
    session.group.start(['attitude_estimator'])
    session.group.start(['setpoint_controller'])
    return Bench(session)


def settling(errors: list[tuple[float, float]]) -> tuple[float | None, float | None]:
    """Return when the error last went below SETTLE_DEG, and the overshoot after it first did."""
    below = [i for i, (_, e) in enumerate(errors) if e < SETTLE_DEG]
    settled_at = None
    if below:
        last_above = max((i for i, (_, e) in enumerate(errors) if e >= SETTLE_DEG), default=-1)
        settled_at = errors[last_above + 1][0] if last_above + 1 < len(errors) else None
    overshoot = max((e for i, (_, e) in enumerate(errors) if below and i >= below[0]),
                    default=None)
    return settled_at, overshoot


def estimator_rms_arcsec(bench: Bench) -> tuple[list[float] | None, int]:
    """Return the estimator's RMS error against ground truth per axis, and the pairs used."""
    from pylon_vehicle_control import evaluation

    def xyzw(q) -> list[float]:
        return [q.x, q.y, q.z, q.w]
    odom = bench.got.messages('odom')
    pose = sorted(bench.got.messages('pose'), key=stamp)
    frame = bench.got.messages('frame')
    result = evaluation.evaluate_attitude(
        [stamp(m) for m in odom], [xyzw(m.pose.pose.orientation) for m in odom],
        [stamp(m) for m in pose], [xyzw(m.pose.orientation) for m in pose],
        [stamp(m) for m in frame], [[m.vector.x, m.vector.y, m.vector.z] for m in frame],
        tolerance=0.005, n_align=100)
    if not len(result.times):
        return None, 0
    rms = np.sqrt(np.mean(result.body_error_arcsec ** 2, axis=0))
    return [round(float(v), 2) for v in rms], int(len(result.times))


def phase_slew(session: BenchSession) -> dict:
    """Run the 90 degree slew; return its figures."""
    torque, izz = torque_capacity_z()
    rate = math.radians(RATE_LIMIT_DEG_S)
    bound = math.radians(SLEW_DEG) / rate + rate / (torque / izz)
    with start_loop(session, 'orbit') as bench:
        bench.armed()
        target = rotations.multiply(bench.attitude(), rotations.from_axis_angle(
            (0, 0, 1), math.radians(SLEW_DEG)))
        t0, since = time.monotonic(), bench.got.mark()
        errors: list[tuple[float, float]] = []

        def sample() -> bool:
            error = math.degrees(rotations.angle_between(bench.attitude(), target))
            errors.append((time.monotonic() - t0, error))
            return errors[-1][0] > bound * 1.2 + 15.0
        bench.stream(bench.Setpoint.MODE_ATTITUDE_HOLD, target, bound * 1.5 + 30.0, sample)
        settled_at, overshoot = settling(errors)
        rates = [math.sqrt(m.twist.angular.x ** 2 + m.twist.angular.y ** 2
                           + m.twist.angular.z ** 2) for m in bench.got.messages('twist', since)]
        rms, pairs = estimator_rms_arcsec(bench)
        diag = bench.diagnostics()
        lost = any(m.state != 1 for m in bench.got.messages('authority', since))
    session.group.stop_all()
    return {
        'slew_deg': SLEW_DEG, 'rate_limit_deg_s': RATE_LIMIT_DEG_S,
        'torque_capacity_z_nm': round(torque, 1), 'izz_kg_m2': round(izz, 1),
        'bound_s': round(bound, 2),
        'settle_time_s': round(settled_at, 2) if settled_at is not None else None,
        'settle_ratio': round(settled_at / bound, 3) if settled_at is not None else None,
        'final_error_deg': round(errors[-1][1], 4),
        'overshoot_deg': round(overshoot, 4) if overshoot is not None else None,
        'max_rate_ratio': round(max(rates) / rate, 4) if rates else None,
        'estimator_rms_arcsec': rms, 'estimator_samples': pairs,
        'period_jitter_p99_ms': float(diag['period_jitter_p99_ms'])
        if 'period_jitter_p99_ms' in diag else None,
        'leases_lost': int(diag.get('leases_lost', 0)), 'authority_lost': lost,
        'pass': settled_at is not None and settled_at <= 1.2 * bound
        and overshoot is not None and overshoot < 0.5 and bool(rates)
        and max(rates) <= 1.05 * rate,
    }


def phase_detumble(session: BenchSession, workdir: Path) -> dict:
    """Run the detumble from 0.3 rad/s; return its figures."""
    data = yaml.safe_load((ROOT / 'config' / 'scenarios' / 'orbit.yaml').read_text())
    for vessel in data['vessels']:
        if vessel['key'] == data.get('active', 'sat'):
            axis = np.array([0.4, -0.6, 0.7]) / np.linalg.norm([0.4, -0.6, 0.7])
            vessel['angular_velocity'] = [float(v) for v in DETUMBLE_RATE * axis]
    path = workdir / 'orbit_spinning.yaml'
    path.write_text(yaml.safe_dump(data))
    with start_loop(session, str(path)) as bench:
        # no estimate yet: the star tracker cannot track at this rate; DETUMBLE uses the IMU
        bench.wait(lambda: bench.owned() and bench.got.messages('twist'), STACK_TIMEOUT_SEC,
                   'the lease')
        initial = bench.body_rate()
        bench.stream(bench.Setpoint.MODE_IDLE, (0, 0, 0, 1), 0.5)
        t0 = time.monotonic()
        bench.stream(bench.Setpoint.MODE_DETUMBLE, (0, 0, 0, 1), 180.0,
                     lambda: bench.body_rate() < DETUMBLE_DONE)
        final = bench.body_rate()
        seconds = round(time.monotonic() - t0, 1)
    session.group.stop_all()
    return {'initial_rate_rad_s': round(initial, 4), 'final_rate_rad_s': final,
            'seconds': seconds, 'pass': final < DETUMBLE_DONE}


def drifts_60s(odom: list) -> list[float]:
    """Return the estimated position change over every 60 s window of the odometry's stamps."""
    points = [(stamp(m), m.pose.pose.position) for m in odom]
    drifts = []
    for i, (t, p) in enumerate(points):
        j = next((k for k in range(i, len(points)) if points[k][0] >= t + 60.0), None)
        if j is None:
            break
        q = points[j][1]
        drifts.append(math.sqrt((q.x - p.x) ** 2 + (q.y - p.y) ** 2 + (q.z - p.z) ** 2))
    return drifts


def phase_endurance(session: BenchSession, seconds: float) -> dict:
    """Hold the attitude for ``seconds``: lease losses, jitter, dead-reckoning drift.

    In orbit with no force commanded the vessel and a free-falling point that started with
    it stay together, so the estimator's dead-reckoned position change over a 60 s window
    is its drift.
    """
    with start_loop(session, 'orbit') as bench:
        bench.armed()
        target = bench.attitude()
        t0, since = time.monotonic(), bench.got.mark()
        owners = []

        def sample() -> bool:
            owners.append(bench.owned())
            return False
        bench.stream(bench.Setpoint.MODE_ATTITUDE_HOLD, target, seconds, sample)
        drifts = drifts_60s(bench.got.messages('odom', since))
        diag = bench.diagnostics()
        final_error = math.degrees(rotations.angle_between(bench.attitude(), target))
        held = round(time.monotonic() - t0, 1)
    session.group.stop_all()
    return {'seconds': held,
            'leases_lost': int(diag.get('leases_lost', -1)),
            'not_owned_samples': owners.count(False),
            'period_jitter_p99_ms': float(diag['period_jitter_p99_ms'])
            if 'period_jitter_p99_ms' in diag else None,
            'final_error_deg': round(final_error, 4),
            'dead_reckoning_drift_60s_m_max': round(max(drifts), 6) if drifts else None,
            'dead_reckoning_drift_60s_m_median': round(float(np.median(drifts)), 6)
            if drifts else None}


def measure(session: BenchSession, only: set[str]) -> dict:
    """Run the phases in ``only``; return the benchmark's JSON object."""
    out: dict = {'benchmark': 'controller_slew'}
    with tempfile.TemporaryDirectory() as tmp:
        if 'slew' in only:
            out.update(phase_slew(session))
        if 'detumble' in only:
            out['detumble'] = phase_detumble(session, Path(tmp))
        if 'endurance' in only:
            out['endurance'] = phase_endurance(
                session, float(os.environ.get('ENDURANCE_SECONDS', '600')))
    out['runtime_seconds'] = session.runtime_seconds()
    return out


def main() -> int:
    """Run the phases (all, or those named in argv[1]) and print one JSON object."""
    only = set(sys.argv[1].split(',')) if len(sys.argv) > 1 else {'slew', 'detumble'}
    return run('controller_slew', lambda session: measure(session, only))


if __name__ == '__main__':
    sys.exit(main())
