"""pylon_plot: the series it plots equal what was recorded; the command line and bad input.

A recording with known values is written as the recorder writes one (``Recording`` and
rclpy's serialiser); the figures' series are then compared with those values.
"""

import math
import os
from pathlib import Path
import subprocess
import sys

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, Vector3Stamped
from nav_msgs.msg import Odometry
import numpy as np
from pylon_interfaces.msg import (
    ControlAuthorityState,
    ControlSetpoint,
    VesselLifecycle,
    WrenchFeedback,
)
from pylon_protocol import rotations
from pylon_tools import plot, plot_cli
from pylon_tools.definitions import definition
from pylon_tools.reading import read_recording, RecordingError
from pylon_tools.recorder import BEST_EFFORT, Offer, Recording, VOLATILE
import pytest
from rclpy.serialization import serialize_message
from sensor_msgs.msg import Imu

T0 = 1_700_000_000_000_000_000         # log time of the first message (ns)
STEP = 100_000_000                     # 0.1 s between samples
COUNT = 50
NAMES = plot.topic_names()
ARCSEC = math.pi / (180 * 3600)


def quat(axis, angle) -> list[float]:
    return rotations.from_axis_angle(axis, angle).tolist()


def stamped(msg, i: int):
    msg.header.stamp.sec, msg.header.stamp.nanosec = 1000 + i // 10, (i % 10) * STEP
    return msg


def setpoint(mode: int, q=(0.0, 0.0, 0.0, 1.0)) -> ControlSetpoint:
    msg = ControlSetpoint(mode=mode)
    msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = q
    return msg


def samples(i: int) -> dict:
    """Return the messages logged at sample ``i`` (topic key -> message)."""
    out = {}
    est = quat((0, 0, 1), 0.01 * i)
    truth = est if i < 25 else rotations.multiply(est, quat((1, 0, 0), -10 * ARCSEC)).tolist()
    odom = stamped(Odometry(), i)
    o = odom.pose.pose.orientation
    o.x, o.y, o.z, o.w = est
    pose = stamped(PoseStamped(), i)
    p = pose.pose.orientation
    p.x, p.y, p.z, p.w = truth
    imu = stamped(Imu(), i)
    imu.angular_velocity.x, imu.angular_velocity.y, imu.angular_velocity.z = \
        0.001 * i, -0.002 * i, 0.003
    feedback = stamped(WrenchFeedback(saturated=i % 5 == 0,
                                      saturation_ratio=0.5 if i % 5 == 0 else 0.0), i)
    feedback.requested.torque.x, feedback.allocated.torque.x = float(i), 0.5 * i
    feedback.achieved.torque.x, feedback.achieved.force.y = 0.4 * i, -2.0 * i
    out.update({'odometry': odom, 'ground_truth/pose': pose, 'imu': imu,
                'control/wrench_feedback': feedback,
                'ground_truth/frame_angular_velocity': stamped(Vector3Stamped(), i)})
    return out


def events_at(i: int) -> dict:
    """Return the messages logged just before sample ``i``: setpoints, lease, lifecycle."""
    out = {}
    if i in (0, 10, 40):
        out['setpoint'] = {0: setpoint(ControlSetpoint.MODE_IDLE),
                           10: setpoint(ControlSetpoint.MODE_ATTITUDE_HOLD,
                                        quat((0, 0, 1), 0.3)),
                           40: setpoint(ControlSetpoint.MODE_DETUMBLE)}[i]
    if i == 0:
        out['lifecycle'] = VesselLifecycle(state=VesselLifecycle.STATE_ACTIVE, generation=1)
        status = DiagnosticStatus(name='setpoint_controller',
                                  values=[KeyValue(key='rate_limit_deg_s', value='2.5')])
        out['controller/diagnostics'] = DiagnosticArray(status=[status])
    if i in (5, 6):
        out['control/authority/state'] = ControlAuthorityState(
            state=ControlAuthorityState.STATE_OWNED, controller_id='setpoint_controller',
            lease_id='l1')
    if i == 45:
        out['control/authority/state'] = ControlAuthorityState(
            state=ControlAuthorityState.STATE_PLAYER)
    return out


@pytest.fixture(scope='module')
def recording(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp('plot') / 'known.mcap'
    rec = Recording(path).open()
    for i in range(COUNT):
        for offset, messages in ((-1_000_000, events_at(i)), (0, samples(i))):
            for key, msg in messages.items():
                name = NAMES[key]
                kind = type(msg).__module__.split('.')[0] + '/msg/' + type(msg).__name__
                rec.add_topic(name, kind, definition(kind), [Offer(BEST_EFFORT, VOLATILE)])
                rec.write(name, serialize_message(msg), T0 + i * STEP + offset, 0)
    rec.close()
    return path


def test_every_figure_plots_the_recorded_values(recording, tmp_path):
    drawn = plot.make_figures(read_recording(recording, NAMES.values()), tmp_path,
                              names=NAMES, align_samples=5)
    assert set(drawn) == {'attitude', 'rates', 'wrench', 'estimator'}
    t = np.arange(COUNT) * 0.1 + 0.001            # the first message is a setpoint 1 ms early
    i = np.arange(COUNT)
    attitude = drawn['attitude'].series
    np.testing.assert_allclose(attitude.t, t, atol=1e-9)
    expected = np.where((i >= 10) & (i < 40), np.degrees(np.abs(0.3 - 0.01 * i)), np.nan)
    np.testing.assert_allclose(attitude.error_deg, expected, atol=1e-9)   # NaN: no target
    rates = drawn['rates'].series
    np.testing.assert_allclose(rates.rates_deg_s, np.degrees(
        np.stack([0.001 * i, -0.002 * i, np.full(COUNT, 0.003)], axis=1)), rtol=1e-12)
    assert rates.limit_deg_s == 2.5                       # from the controller's diagnostics
    wrench = drawn['wrench'].series
    np.testing.assert_array_equal(wrench.torque['requested'][:, 0], i)
    np.testing.assert_array_equal(wrench.torque['allocated'][:, 0], 0.5 * i)
    np.testing.assert_array_equal(wrench.force['achieved'][:, 1], -2.0 * i)
    np.testing.assert_array_equal(wrench.saturated, i % 5 == 0)
    estimator = drawn['estimator'].series
    np.testing.assert_allclose(estimator.t, t, atol=1e-9)
    np.testing.assert_allclose(estimator.angle_arcsec, np.where(i < 25, 0.0, 10.0), atol=1e-4)
    np.testing.assert_allclose(estimator.body_error_arcsec[-1], [10.0, 0.0, 0.0], atol=1e-4)
    for result in drawn.values():
        assert [f.suffix for f in result.files] == ['.png', '.svg']
        assert all(f.stat().st_size > 5000 for f in result.files)


def test_events_are_the_lifecycle_and_lease_changes(recording):
    found = plot.events(read_recording(recording, NAMES.values()), NAMES)
    assert [(round(e.t, 3), e.label) for e in found] == [
        (0.0, 'active (gen 1)'), (0.5, 'lease: setpoint_controller'), (4.5, 'lease: player')]


def test_event_labels_take_the_lowest_free_row():
    found = [plot.Event(0.0, 'a' * 9), plot.Event(0.05, 'b'), plot.Event(0.5, 'c'),
             plot.Event(0.52, 'd' * 30), plot.Event(9.0, 'e')]
    # 10 s span: a label of n characters takes (n + 1) * 0.075 s
    assert plot.label_rows(found, 10.0) == [0, 1, 1, 2, 0]


def test_the_command_line_writes_the_figures(recording, tmp_path):
    out = tmp_path / 'figures'
    assert plot_cli.main([str(recording), '-o', str(out), '--format', 'svg',
                          '--figures', 'attitude,wrench', '--rate-limit-deg-s', '3']) == 0
    assert sorted(p.name for p in out.iterdir()) == ['attitude.svg', 'wrench.svg']


def no_ros_environment() -> dict:
    """Return an environment with the workspace's Python path and nothing else of ROS."""
    keep = ('PATH', 'PYTHONPATH', 'HOME', 'LANG')
    return {k: v for k, v in os.environ.items() if k in keep}


def test_help_and_plotting_need_no_ros(recording, tmp_path):
    env = no_ros_environment()
    result = subprocess.run(['pylon_plot', '--help'], capture_output=True, text=True, env=env)
    assert result.returncode == 0 and 'usage: pylon_plot' in result.stdout
    code = ('import sys; from pylon_tools import plot_cli; '
            f'status = plot_cli.main([{str(recording)!r}, "-o", {str(tmp_path)!r}]); '
            'assert "rclpy" not in sys.modules, "rclpy imported"; sys.exit(status)')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / 'estimator.png').stat().st_size > 5000


def test_bad_input_is_a_clear_error_with_status_2(recording, tmp_path, capsys):
    text = tmp_path / 'notes.txt'
    text.write_text('hello')
    assert plot_cli.main([str(text)]) == 2
    assert 'is not an MCAP file' in capsys.readouterr().err
    assert plot_cli.main([str(tmp_path / 'missing.mcap')]) == 2
    assert 'No such file' in capsys.readouterr().err
    empty = tmp_path / 'empty.mcap'                 # a recording of other topics only
    rec = Recording(empty).open()
    rec.add_topic('/chatter', 'std_msgs/msg/String', definition('std_msgs/msg/String'), [])
    rec.close()
    assert plot_cli.main([str(empty), '-o', str(tmp_path / 'x')]) == 2
    err = capsys.readouterr().err
    assert 'not enough recorded to plot' in err and '/pylon_estimator/odometry' in err
    assert plot_cli.main([str(recording), '--topic-prefix', '/other', '--figures', 'rates',
                          '-o', str(tmp_path / 'y')]) == 2
    assert 'rates needs /other/imu/data_raw' in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        plot_cli.main([str(recording), '--figures', 'attitude,bogus'])
    assert exit_.value.code == 2
    with pytest.raises(RecordingError, match='not enough recorded'):
        plot.make_figures(read_recording(empty, NAMES.values()), tmp_path / 'z', ['rates'])
