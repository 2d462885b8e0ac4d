"""setpoint_controller in the loop: a 90 degree slew and a detumble of the orbit sat.

pylon_sim (real time) -> udp_bridge -> attitude_estimator -> setpoint_controller, each a
process in a ROS domain of its own. The bench node sends the setpoints and judges on the
estimate (attitude error, settling, overshoot) and on ground truth (body rate; the
estimator's error through ``evaluation.evaluate_attitude``); the controller and the
estimator never read ground truth.

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
   dead-reckoned position change over 60 s windows (its drift: nothing pushes the vessel).

Also reported: the controller's command-period jitter (its diagnostics) and whether the
lease was ever lost. The last line of stdout is one JSON object.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
import sys
import tempfile
import time

import numpy as np
from pylon_protocol import rotations
import yaml

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from bench_bridge import BenchError, claim_ports, Processes  # noqa: E402

RATE_LIMIT_DEG_S = 1.5
SLEW_DEG = 90.0
SETTLE_DEG = 0.1
DETUMBLE_RATE = 0.3
DETUMBLE_DONE = 0.001


def torque_capacity_z() -> tuple[float, float]:
    """Return the sat's torque capacity about +Z (N·m) and its Izz (kg·m²)."""
    from pylon_sim import allocation
    from pylon_sim.scenario import load_scenario
    from pylon_sim.vessel import mass_properties
    spec = load_scenario('orbit').vessel('sat').spec
    props = mass_properties(spec, spec.initial_resources())
    nozzles, engines, wheels = allocation.geometry(spec, props.com)
    big = 1e9
    result = allocation.allocate(nozzles, [], wheels, np.zeros(3), [0.0, 0.0, big],
                                 force_scale=250000.0, torque_scale=100000.0,
                                 use_engines=False)
    return float(result.torque[2]), float(props.inertia[2, 2])


class Bench:
    """The bench's node and what it records."""

    def __init__(self) -> None:
        """Create the node and its subscriptions."""
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import PoseStamped, TwistStamped, Vector3Stamped
        from nav_msgs.msg import Odometry
        from pylon_interfaces.msg import ControlAuthorityState, ControlSetpoint
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import (
            DurabilityPolicy,
            qos_profile_sensor_data,
            QoSProfile,
            ReliabilityPolicy,
        )
        self.rclpy, self.Setpoint = rclpy, ControlSetpoint
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('bench_controller', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        reliable = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        latched = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.got = {k: [] for k in ('odom', 'pose', 'frame', 'twist', 'authority', 'diag')}

        def keep(name):
            return lambda m: self.got[name].append((time.monotonic(), m))
        n = self.node
        self.subs = [
            n.create_subscription(Odometry, '/pylon_estimator/odometry', keep('odom'),
                                  reliable),
            n.create_subscription(PoseStamped, '/ksp_vessel/ground_truth/pose', keep('pose'),
                                  qos_profile_sensor_data),
            n.create_subscription(Vector3Stamped,
                                  '/ksp_vessel/ground_truth/frame_angular_velocity',
                                  keep('frame'), reliable),
            n.create_subscription(TwistStamped, '/ksp_vessel/ground_truth/twist_body',
                                  keep('twist'), qos_profile_sensor_data),
            n.create_subscription(ControlAuthorityState, '/ksp_vessel/control/authority/state',
                                  keep('authority'), latched),
            n.create_subscription(DiagnosticArray, '/setpoint_controller/diagnostics',
                                  keep('diag'), reliable)]
        self.pub = n.create_publisher(ControlSetpoint, '/setpoint_controller/setpoint',
                                      reliable)

    def spin_for(self, seconds: float, check) -> None:
        """Spin for ``seconds``, calling ``check()`` each turn."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)
            check()

    def spin_until(self, condition, timeout: float, check, what: str) -> None:
        """Spin until ``condition()``; BenchError after ``timeout``."""
        end = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > end:
                counts = {k: len(v) for k, v in self.got.items()}
                raise BenchError(f'{what} did not happen within {timeout:g} s '
                                 f'(received: {counts})')
            self.executor.spin_once(timeout_sec=0.01)
            check()

    def owned(self) -> bool:
        """Tell whether the controller owns the lease (recent authority states)."""
        return any(m.state == 1 and m.controller_id == 'setpoint_controller'
                   for _, m in self.got['authority'][-3:])

    def attitude(self) -> np.ndarray:
        """Return the latest estimated attitude (x, y, z, w)."""
        o = self.got['odom'][-1][1].pose.pose.orientation
        return np.array([o.x, o.y, o.z, o.w])

    def send(self, mode: int, q=(0.0, 0.0, 0.0, 1.0)) -> None:
        """Publish one setpoint."""
        msg = self.Setpoint(mode=mode)
        msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = \
            (float(v) for v in q)
        self.pub.publish(msg)

    def stream(self, mode: int, q, seconds: float, check, sample=None) -> None:
        """Send a setpoint every 0.2 s for ``seconds``; call ``sample()`` after each."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.send(mode, q)
            self.spin_for(0.2, check)
            if sample is not None and sample():
                return

    def close(self) -> None:
        """Destroy the node."""
        self.executor.shutdown()
        self.node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)


def stamp(m) -> float:
    """Return a message's header stamp in seconds."""
    return m.header.stamp.sec + m.header.stamp.nanosec * 1e-9


def start_stack(procs: Processes, claims: list, scenario: str) -> dict:
    """Start bridge, simulator, estimator and controller on ports of their own."""
    state_port, command_port = claim_ports(claims, 2)
    running = {
        'bridge': procs.start('udp_bridge', ['udp_bridge', '--host', '127.0.0.1', '--port',
                                             str(state_port), '--command-port',
                                             str(command_port)]),
        'sim': procs.start('pylon_sim', ['pylon_sim', '--scenario', scenario,
                                         '--state-port', str(state_port), '--command-port',
                                         str(command_port), '--admin-port', '0']),
        'estimator': procs.start('attitude_estimator', ['attitude_estimator']),
        'controller': procs.start('setpoint_controller', ['setpoint_controller']),
    }
    return running


def phase_slew(procs: Processes, claims: list) -> dict:
    """Run the 90 degree slew; return its figures."""
    torque, izz = torque_capacity_z()
    rate = math.radians(RATE_LIMIT_DEG_S)
    accel = torque / izz
    bound = math.radians(SLEW_DEG) / rate + rate / accel
    running = start_stack(procs, claims, 'orbit')
    bench = Bench()
    try:
        def check():
            for name, proc in running.items():
                procs.check(name, proc)
        bench.spin_until(lambda: bench.owned() and len(bench.got['odom']) > 30, 60.0, check,
                         'the lease and the estimate')
        bench.stream(bench.Setpoint.MODE_IDLE, (0, 0, 0, 1), 1.0, check)
        start_q = bench.attitude()
        target = rotations.multiply(start_q,
                                    rotations.from_axis_angle((0, 0, 1), math.radians(SLEW_DEG)))
        t0 = time.monotonic()
        errors: list[tuple[float, float]] = []

        def sample() -> bool:
            error = math.degrees(rotations.angle_between(bench.attitude(), target))
            errors.append((time.monotonic() - t0, error))
            t = errors[-1][0]
            return t > bound * 1.2 + 15.0
        bench.stream(bench.Setpoint.MODE_ATTITUDE_HOLD, target, bound * 1.5 + 30.0, check,
                     sample)
        below = [i for i, (_, e) in enumerate(errors) if e < SETTLE_DEG]
        settled_at = None
        if below:
            last_above = max((i for i, (_, e) in enumerate(errors) if e >= SETTLE_DEG),
                             default=-1)
            settled_at = errors[last_above + 1][0] if last_above + 1 < len(errors) else None
        overshoot = max((e for i, (_, e) in enumerate(errors) if below and i >= below[0]),
                        default=None)
        rates = [math.sqrt(m.twist.angular.x ** 2 + m.twist.angular.y ** 2
                           + m.twist.angular.z ** 2) for t, m in bench.got['twist'] if t >= t0]
        from pylon_vehicle_control import evaluation
        odom = bench.got['odom']
        pose = sorted((m for _, m in bench.got['pose']), key=stamp)
        result = evaluation.evaluate_attitude(
            [stamp(m) for _, m in odom],
            [[m.pose.pose.orientation.x, m.pose.pose.orientation.y, m.pose.pose.orientation.z,
              m.pose.pose.orientation.w] for _, m in odom],
            [stamp(m) for m in pose],
            [[m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z,
              m.pose.orientation.w] for m in pose],
            [stamp(m) for _, m in bench.got['frame']],
            [[m.vector.x, m.vector.y, m.vector.z] for _, m in bench.got['frame']],
            tolerance=0.005, n_align=100)
        rms = np.sqrt(np.mean(result.body_error_arcsec ** 2, axis=0)) \
            if len(result.times) else None
        diag = {kv.key: kv.value for kv in bench.got['diag'][-1][1].status[0].values} \
            if bench.got['diag'] else {}
        lost = any(m.state != 1 for t, m in bench.got['authority'] if t >= t0)
        return {
            'slew_deg': SLEW_DEG, 'rate_limit_deg_s': RATE_LIMIT_DEG_S,
            'torque_capacity_z_nm': round(torque, 1), 'izz_kg_m2': round(izz, 1),
            'bound_s': round(bound, 2),
            'settle_time_s': round(settled_at, 2) if settled_at is not None else None,
            'settle_ratio': round(settled_at / bound, 3) if settled_at is not None else None,
            'final_error_deg': round(errors[-1][1], 4),
            'overshoot_deg': round(overshoot, 4) if overshoot is not None else None,
            'max_rate_ratio': round(max(rates) / rate, 4) if rates else None,
            'estimator_rms_arcsec': [round(float(v), 2) for v in rms] if rms is not None
            else None,
            'estimator_samples': int(len(result.times)),
            'period_jitter_p99_ms': float(diag['period_jitter_p99_ms'])
            if 'period_jitter_p99_ms' in diag else None,
            'leases_lost': int(diag.get('leases_lost', 0)), 'authority_lost': lost,
            'pass': settled_at is not None and settled_at <= 1.2 * bound
            and overshoot is not None and overshoot < 0.5 and bool(rates)
            and max(rates) <= 1.05 * rate,
        }
    finally:
        bench.close()
        for proc in reversed(list(running.values())):
            procs.stop(proc)


def phase_detumble(procs: Processes, claims: list, workdir: Path) -> dict:
    """Run the detumble from 0.3 rad/s; return its figures."""
    data = yaml.safe_load((ROOT / 'config' / 'scenarios' / 'orbit.yaml').read_text())
    for vessel in data['vessels']:
        if vessel['key'] == data.get('active', 'sat'):
            axis = np.array([0.4, -0.6, 0.7]) / np.linalg.norm([0.4, -0.6, 0.7])
            vessel['angular_velocity'] = [float(v) for v in DETUMBLE_RATE * axis]
    path = workdir / 'orbit_spinning.yaml'
    path.write_text(yaml.safe_dump(data))
    running = start_stack(procs, claims, str(path))
    bench = Bench()
    try:
        def check():
            for name, proc in running.items():
                procs.check(name, proc)
        # no estimate yet: the star tracker cannot track at this rate; DETUMBLE uses the IMU
        bench.spin_until(lambda: bench.owned() and bench.got['twist'], 60.0, check,
                         'the lease')

        def rate_now() -> float:
            m = bench.got['twist'][-1][1]
            return math.sqrt(m.twist.angular.x ** 2 + m.twist.angular.y ** 2
                             + m.twist.angular.z ** 2)
        initial = rate_now()
        bench.stream(bench.Setpoint.MODE_IDLE, (0, 0, 0, 1), 0.5, check)
        t0 = time.monotonic()
        bench.stream(bench.Setpoint.MODE_DETUMBLE, (0, 0, 0, 1), 180.0, check,
                     lambda: rate_now() < DETUMBLE_DONE)
        return {'initial_rate_rad_s': round(initial, 4), 'final_rate_rad_s': rate_now(),
                'seconds': round(time.monotonic() - t0, 1),
                'pass': rate_now() < DETUMBLE_DONE}
    finally:
        bench.close()
        for proc in reversed(list(running.values())):
            procs.stop(proc)


def phase_endurance(procs: Processes, claims: list, seconds: float) -> dict:
    """Hold the attitude for ``seconds``: lease losses, jitter, dead-reckoning drift.

    In orbit with no force commanded the vessel and a free-falling point that started with
    it stay together, so the estimator's dead-reckoned position change over a 60 s window
    is its drift.
    """
    running = start_stack(procs, claims, 'orbit')
    bench = Bench()
    try:
        def check():
            for name, proc in running.items():
                procs.check(name, proc)
        bench.spin_until(lambda: bench.owned() and len(bench.got['odom']) > 30, 60.0, check,
                         'the lease and the estimate')
        bench.stream(bench.Setpoint.MODE_IDLE, (0, 0, 0, 1), 1.0, check)
        target = bench.attitude()
        t0 = time.monotonic()
        owners = []

        def sample() -> bool:
            owners.append(bench.owned())
            return False
        bench.stream(bench.Setpoint.MODE_ATTITUDE_HOLD, target, seconds, check, sample)
        odom = [(t, m.pose.pose.position) for t, m in bench.got['odom'] if t >= t0]
        drifts = []
        for i, (t, p) in enumerate(odom):
            j = next((k for k in range(i, len(odom)) if odom[k][0] >= t + 60.0), None)
            if j is None:
                break
            q = odom[j][1]
            drifts.append(math.sqrt((q.x - p.x) ** 2 + (q.y - p.y) ** 2 + (q.z - p.z) ** 2))
        diag = {kv.key: kv.value for kv in bench.got['diag'][-1][1].status[0].values} \
            if bench.got['diag'] else {}
        return {'seconds': round(time.monotonic() - t0, 1),
                'leases_lost': int(diag.get('leases_lost', -1)),
                'not_owned_samples': owners.count(False),
                'period_jitter_p99_ms': float(diag['period_jitter_p99_ms'])
                if 'period_jitter_p99_ms' in diag else None,
                'final_error_deg': round(math.degrees(rotations.angle_between(bench.attitude(),
                                                                              target)), 4),
                'dead_reckoning_drift_60s_m_max': round(max(drifts), 6) if drifts else None,
                'dead_reckoning_drift_60s_m_median': round(float(np.median(drifts)), 6)
                if drifts else None}
    finally:
        bench.close()
        for proc in reversed(list(running.values())):
            procs.stop(proc)


def main() -> int:
    """Run the phases (all, or those named in argv[1]) and print one JSON object."""
    from pylon_testing.isolation import claim_domain_id
    wall = time.monotonic()
    domain_id, domain_claim = claim_domain_id()
    os.environ.update({'ROS_DOMAIN_ID': str(domain_id),
                       'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'})
    claims: list = [domain_claim]
    procs = Processes(dict(os.environ))
    only = set(sys.argv[1].split(',')) if len(sys.argv) > 1 else {'slew', 'detumble'}
    out: dict = {'benchmark': 'controller_slew'}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            if 'slew' in only:
                out.update(phase_slew(procs, claims))
            if 'detumble' in only:
                out['detumble'] = phase_detumble(procs, claims, Path(tmp))
            if 'endurance' in only:
                out['endurance'] = phase_endurance(
                    procs, claims, float(os.environ.get('ENDURANCE_SECONDS', '600')))
    except BenchError as exc:
        print(f'controller_slew: {exc}', file=sys.stderr)
        return 1
    finally:
        procs.stop_all()
        for claim in claims:
            claim.release()
    out['runtime_seconds'] = round(time.monotonic() - wall, 1)
    print(json.dumps(out))
    return 0


if __name__ == '__main__':
    sys.exit(main())
