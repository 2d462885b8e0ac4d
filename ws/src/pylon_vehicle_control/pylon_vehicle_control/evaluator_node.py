"""``attitude_evaluator``: the estimate and the achieved attitude against ground truth.

The only node of the stack that reads ground truth, for users tuning gains. It records
the estimator's odometry, the ground-truth pose (``pylon_ground_truth_enu``, which turns
with the planet), the ENU frame's angular velocity and the controller's setpoints, and
compares in the inertial frame: the rotation between ``kerbol_inertial`` and the ENU frame
is taken from the first ``align_samples`` estimate/truth pairs and then carried forward by
integrating ``frame_angular_velocity`` (``evaluation.EnuInertialAlignment``), as a
comparison between an inertial estimate and planet-fixed truth must. (Velocities would
also need the transport term ``ω × r``: ``evaluation.transport_velocity``.)

Every ``print_period_sec`` it prints the latest errors; at the end (``duration_sec``, or
Ctrl-C) it prints RMS per body axis and writes ``attitude_errors.csv`` and
``attitude_errors.png`` into ``output_dir``: the estimation error about x, y, z (arcsec)
and the control error (achieved vs the setpoint in force, arcsec). Its status goes on
``/diagnostics`` every second (``pylon_common.diagnostics``): the samples recorded, WARN
until it has both an estimate and ground truth to compare.
"""

from __future__ import annotations

import csv
from pathlib import Path
import time

from geometry_msgs.msg import PoseStamped, Vector3Stamped
from nav_msgs.msg import Odometry
import numpy as np
from pylon_common import diagnostics, node_main, topics
from pylon_common.parameters import declare, Parameter, Retired
from pylon_common.stamps import to_seconds as _t
from pylon_interfaces.msg import ControlSetpoint
from rclpy.node import Node

from pylon_vehicle_control import evaluation

PARAMETERS: tuple[Parameter, ...] = (
    topics.TOPIC_PREFIX,
    Parameter('duration_sec', 0.0, 's, stop and write the results after this long (0: at '
                                   'Ctrl-C)', 0.0, 1e9),
    Parameter('print_period_sec', 2.0, 's, period of the printed errors (0: never)', 0.0, 3600.0),
    Parameter('output_dir', '.', 'where attitude_errors.csv and attitude_errors.png go'),
    Parameter('align_samples', 100, 'estimate/truth pairs that fix the ENU -> inertial '
                                    'alignment', 1, 100000),
)
RETIRED = (
    Retired('estimate_topic', 'the estimate is pylon_estimator/odometry; remap it with '
                              '--ros-args -r /pylon_estimator/odometry:=<yours>'),
    Retired('setpoint_topic', "the setpoints are the controller's "
                              '(/setpoint_controller/setpoint); remap with --ros-args -r'),
)
READER_DEPTH = 100


def _q(o) -> list[float]:
    return [o.x, o.y, o.z, o.w]


class Evaluator(Node):
    """Record estimate, truth and setpoints; evaluate on demand."""

    def __init__(self) -> None:
        """Declare the parameters and subscribe."""
        super().__init__(topics.ATTITUDE_EVALUATOR)
        self.params = p = declare(self, PARAMETERS, RETIRED)
        self.estimate: list = []
        self.truth: list = []
        self.frame: list = []
        self.setpoints: list = []
        prefix = p['topic_prefix']

        def subscription(msg_type, key, callback, name=None):
            qos = topics.qos(key, reader=True)
            qos.depth = max(qos.depth, READER_DEPTH)
            return self.create_subscription(msg_type, name or topics.name(key, prefix),
                                            callback, qos)
        self.subs = [
            subscription(Odometry, 'odometry', self.estimate.append),
            subscription(PoseStamped, 'ground_truth/pose', self.truth.append),
            subscription(Vector3Stamped, 'ground_truth/frame_angular_velocity',
                         self.frame.append),
            subscription(ControlSetpoint, 'setpoint', self._on_setpoint,
                         topics.topic('setpoint').default_name())]
        self.started = time.monotonic()
        self.diagnostics = diagnostics.NodeDiagnostics(self, prefix, self._report)
        if p['print_period_sec'] > 0:
            self.create_timer(p['print_period_sec'], self._print)

    def _report(self) -> diagnostics.Report:
        values = {'estimates': len(self.estimate), 'truth_poses': len(self.truth),
                  'frame_rates': len(self.frame), 'setpoints': len(self.setpoints)}
        if self.estimate and self.truth:
            return diagnostics.Report(diagnostics.OK, 'recording', values)
        return diagnostics.Report(diagnostics.WARN, 'waiting for the estimate and ground truth',
                                  values)

    def _on_setpoint(self, msg: ControlSetpoint) -> None:
        if msg.mode in (ControlSetpoint.MODE_ATTITUDE_HOLD, ControlSetpoint.MODE_SIX_DOF):
            # stamped on receipt, on the ROS clock the bridge's stamps share
            now = self.get_clock().now().nanoseconds * 1e-9
            self.setpoints.append((now, _q(msg.orientation)))

    def evaluate(self) -> dict:
        """Return the estimation and control errors so far."""
        truth = sorted(self.truth, key=_t)
        args = ([_t(m) for m in truth], [_q(m.pose.orientation) for m in truth],
                [_t(m) for m in self.frame],
                [[m.vector.x, m.vector.y, m.vector.z] for m in self.frame])
        est = evaluation.evaluate_attitude(
            [_t(m) for m in self.estimate], [_q(m.pose.pose.orientation) for m in self.estimate],
            *args, tolerance=0.005, n_align=int(self.params['align_samples']))
        out = {'estimate': est, 'control': None}
        if self.setpoints:
            setpoints = sorted(self.setpoints, key=lambda pair: pair[0])
            out['control'] = evaluation.evaluate_attitude(
                [_t(m) for m in self.estimate],
                [_q(m.pose.pose.orientation) for m in self.estimate], *args,
                tolerance=0.005, n_align=int(self.params['align_samples']),
                reference=([t for t, _ in setpoints], [q for _, q in setpoints]))
        return out

    def _print(self) -> None:
        result = self.evaluate()['estimate']
        if len(result.times):
            err = result.body_error_arcsec[-1]
            self.get_logger().info(
                f'estimate error [arcsec] x {err[0]:8.2f} y {err[1]:8.2f} z {err[2]:8.2f} '
                f'({len(result.times)} samples)')
        duration = self.params['duration_sec']
        if duration > 0 and time.monotonic() - self.started >= duration:
            node_main.request_stop()

    def finish(self) -> None:
        """Print the RMS and write the CSV and the PNG."""
        result = self.evaluate()
        est = result['estimate']
        directory = Path(self.params['output_dir'])
        directory.mkdir(parents=True, exist_ok=True)
        if not len(est.times):
            print('attitude_evaluator: no estimate/truth pairs recorded')
            return
        rms = np.sqrt(np.mean(est.body_error_arcsec ** 2, axis=0))
        print(f'estimate RMS [arcsec]: x {rms[0]:.2f} y {rms[1]:.2f} z {rms[2]:.2f} '
              f'over {len(est.times)} samples')
        t0 = est.times[0]
        with open(directory / 'attitude_errors.csv', 'w', newline='') as f:
            writer = csv.writer(f)
            writer.writerow(['t_s', 'estimate_x_arcsec', 'estimate_y_arcsec',
                             'estimate_z_arcsec', 'estimate_angle_arcsec'])
            for t, e, a in zip(est.times, est.body_error_arcsec, est.angle_arcsec):
                writer.writerow([f'{t - t0:.3f}', *(f'{v:.3f}' for v in e), f'{a:.3f}'])
        series = {'estimate': est.body_error_arcsec}
        control = result['control']
        if control is not None and len(control.times):
            print(f'control error at the end: {control.angle_arcsec[-1]:.1f} arcsec')
            series['control'] = np.interp(est.times, control.times, control.angle_arcsec)
        evaluation.plot_error_series(directory / 'attitude_errors.png', est.times - t0,
                                     series, ylabel='error [arcsec]')
        print(f'wrote {directory / "attitude_errors.csv"} and attitude_errors.png')


def main() -> int:
    """Entry point of ``attitude_evaluator``."""
    return node_main.run(Evaluator, Evaluator.finish)
