"""``make demo`` for real: the native runner flies the orbit sat and exits 0 with a summary.

It runs until the slew has settled (judged on KSP time), not for a fixed number of
seconds; ``DEMO_SECONDS`` only bounds a broken run. The first test is the canary of the
shipped configuration (real time, every node on its default clock); the second runs the
simulator at ``RATE`` x real time with the control on game time (``DEMO_RATE``).
"""

import json
import os
from pathlib import Path
import subprocess
import sys

import numpy as np
from pylon_testing.plan import room_for_stalls
from pylon_testing.recorder import stamp_of
import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
RATE = 3



def test_native_demo_flies_and_summarises(free_udp_port, tmp_path):
    """The canary of the shipped configuration: real time, the controller on its steady clock.

    Every other controller-in-the-loop test runs faster than real time on game time.
    """
    assert os.environ.get('ROS_DOMAIN_ID'), 'the test session has its own ROS domain'
    ports = ','.join(str(free_udp_port()) for _ in range(3))
    # the fast_slew overlay (10 deg/s): the demo's wiring, overlays included, in less time
    viewer_port = free_udp_port()         # a number no other session was given, for TCP
    # and recorded (DEMO_RECORD), the recording plotted at the end (DEMO_PLOT)
    record, plots = tmp_path / 'demo.mcap', tmp_path / 'plots'
    env = dict(os.environ, DEMO_SECONDS='240', DEMO_LOG_DIR=str(tmp_path),
               DEMO_OVERLAYS='fast_slew', DEMO_VIEWER_PORT=str(viewer_port),
               DEMO_RECORD=str(record), DEMO_PLOT=str(plots))
    result = subprocess.run([sys.executable, str(ROOT / 'launch' / 'native_demo.py'),
                             '--ports', ports, '--until-settled'], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert any(line.startswith('session ACTIVE') and 'lease setpoint_controller' in line
               for line in lines), result.stdout[-2000:]
    summary = json.loads(next(line for line in lines
                              if line.startswith('demo summary: '))[len('demo summary: '):])
    assert summary['first_active_s'] is not None and summary['lease_owned_s'] is not None
    assert summary['phase'] == 'slew/hold' and summary['processes_exited'] == []
    assert summary['final_attitude_error_deg'] < 0.1, json.dumps(summary)
    # 30 degrees at fast_slew's 10 deg/s: rate-limited time plus margin
    assert summary['settled_s'] < 30.0 / 10.0 * 1.2 + 10.0, json.dumps(summary)
    for name in ('pylon_sim', 'udp_bridge', 'attitude_estimator', 'setpoint_controller',
                 'pylon_viewer', 'pylon_recorder'):
        assert (tmp_path / f'{name}.log').exists()
    assert f'demo: live view on ws://127.0.0.1:{viewer_port} ' in result.stdout
    assert f'live view on ws://127.0.0.1:{viewer_port} ' in \
        (tmp_path / 'pylon_viewer.log').read_text()
    check_recording(record, plots, result.stdout)


def check_recording(record: Path, plots: Path, stdout: str) -> None:
    """Check that the demo's recording is complete and its plots show the flight it flew."""
    from pylon_tools import plot
    from pylon_tools.reading import read_recording
    assert f'demo: recorded {record}' in stdout, stdout[-2000:]
    for name in ('attitude', 'rates', 'wrench', 'estimator'):
        for suffix in ('png', 'svg'):
            assert (plots / f'{name}.{suffix}').stat().st_size > 1000, name
    names = plot.topic_names()
    recording = read_recording(record, names.values())
    assert recording.complete
    attitude = plot.attitude_series(recording, names)
    held = attitude.error_deg[np.isfinite(attitude.error_deg)]
    assert held[0] > 25.0 and held[-1] < 0.1          # the 30 degree slew, settled
    rates = plot.rate_series(recording, names)
    assert rates.limit_deg_s == 10.0                   # fast_slew's, from the diagnostics
    # within 5 % of the limit, plus what the controller's lateness explains: at real time on
    # the steady clock a command period late is that much longer at full angular
    # acceleration (on a machine running the suite: p99 late by 93 ms, 1.1 deg/s over 10; on
    # a slower day by 614 ms: real time is not kept there, and only causality is checked).
    # The largest lateness, not the p99: a fresh .ci/run saw 11.591 deg/s against the 11.584
    # that a p99 of 29 ms explains
    late_s = max(float(value) for value in plot.diagnostic_values(
        recording, names, 'period_jitter_max_ms')) / 1e3
    stamps = np.array([stamp_of(m) for _, m in recording.of(names['imu'])])
    peak = peak_acceleration(stamps, rates.magnitude_deg_s)
    assert peak < 100.0                                        # a rotation, no jump
    allowed = rates.limit_deg_s * 1.05 + peak * late_s
    assert rates.magnitude_deg_s.max() <= allowed, (rates.magnitude_deg_s.max(), late_s)
    labels = [event.label for event in plot.events(recording, names)]
    assert 'lease: setpoint_controller' in labels and any('active' in x for x in labels)


def peak_acceleration(stamps: np.ndarray, rates: np.ndarray, span: float = 0.1) -> float:
    """Return the largest rise of ``rates`` (deg/s) per second over ``span`` s of ``stamps``."""
    later = np.searchsorted(stamps, stamps + span)
    inside = later < len(stamps)
    rise = rates[later[inside]] - rates[inside]
    return float(np.max(rise / (stamps[later[inside]] - stamps[inside]), initial=0.0))


def test_native_demo_slews_every_period(free_udp_port, tmp_path):
    """``--slew-every``: after the first slew, another one back, each settled, the lease kept.

    The run ends once two slews have settled (``--until-slews 2``, KSP time); DEMO_SECONDS
    only bounds a broken run. ``DEMO_RATE``: the simulator at ``RATE`` x real time, the
    control on game time, every figure asserted in KSP time.
    """
    ports = ','.join(str(free_udp_port()) for _ in range(3))
    env = dict(os.environ, DEMO_SECONDS='240', DEMO_LOG_DIR=str(tmp_path),
               DEMO_OVERLAYS=f'fast_slew,{room_for_stalls(tmp_path, RATE)}',
               DEMO_VIEWER_PORT=str(free_udp_port()), DEMO_RATE=str(RATE))
    result = subprocess.run([sys.executable, str(ROOT / 'launch' / 'native_demo.py'),
                             '--ports', ports, '--slew-every', '12', '--until-slews', '2'],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert f'demo: simulator at {RATE}x real time; control on game time' in result.stdout
    lines = result.stdout.splitlines()
    started = [line for line in lines if line.startswith('demo: starting ')]
    assert any(f' --rate {RATE} --lockstep-lead 0.05' in line and 'pylon_sim' in line
               for line in started), started
    for name, setting in (('udp_bridge', 'publish_clock:=true'),
                          ('attitude_estimator', 'use_sim_time:=true'),
                          ('setpoint_controller', 'use_sim_time:=true')):
        assert any(line.startswith(f'demo: starting {name} ') and setting in line
                   for line in started), (name, started)
    summary = json.loads(next(line for line in lines
                              if line.startswith('demo summary: '))[len('demo summary: '):])
    assert summary['slew_every_s'] == 12.0 and summary['slews'] == 2, json.dumps(summary)
    assert summary['slews_settled'] == 2 and None not in summary['settle_s'], json.dumps(summary)
    # 30 degrees at fast_slew's 10 deg/s, each way: rate-limited time plus margin
    assert summary['max_settle_s'] < 30.0 / 10.0 * 1.2 + 10.0, json.dumps(summary)
    assert summary['final_attitude_error_deg'] < 0.1, json.dumps(summary)
    assert summary['lease_losses'] == 0 and summary['processes_exited'] == [], json.dumps(summary)
    assert summary['max_stamp_gap_s']['imu'] > 0.0, summary       # both topics were seen
    assert summary['max_stamp_gap_s']['odometry'] > 0.0, json.dumps(summary)


def test_native_demo_drives_the_kart(free_udp_port, tmp_path):
    """``DEMO_SCENARIO=kart``: the kart engaged AUTONOMOUS once ready, driving, a summary.

    A short run (``DEMO_SECONDS`` of wall time) at ``DEMO_RATE=RATE``: the game lock-stepped
    to the interface, whose wheel commands follow the reference stack's ``control_cmd``; the
    status lines and the summary come from the localizer's estimate; the lap counting itself
    is tested in pylon_kart's unit tests. (The race demo's karts run at real time.)
    """
    ports = ','.join(str(free_udp_port()) for _ in range(3))
    env = dict(os.environ, DEMO_SCENARIO='kart', DEMO_SECONDS='10', DEMO_LOG_DIR=str(tmp_path),
               DEMO_VIEWER_PORT=str(free_udp_port()), DEMO_RATE=str(RATE))
    result = subprocess.run([sys.executable, str(ROOT / 'launch' / 'native_demo.py'),
                             '--ports', ports], env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    started = [line.split()[2] for line in lines if line.startswith('demo: starting ')]
    assert started == ['pylon_sim', 'udp_bridge', 'kart_interface', 'kart_localizer',
                       'trajectory_publisher', 'pure_pursuit', 'pylon_viewer']
    assert 'layout: import foxglove/kart_layout.json' in result.stdout
    starting = [line for line in lines if line.startswith('demo: starting ')]
    assert f'--rate {RATE} --lockstep-lead 0.06' in starting[0], starting[0]
    assert 'lockstep_command_age_sec:=0.01' in starting[2], starting[2]
    assert f'lease_duration_sec:={float(RATE)}' in starting[2], starting[2]
    # (a line before the localizer's first estimate says ``speed   -``)
    said = [line.split(' speed ')[1].split()[0] for line in lines
            if line.startswith('mode AUTONOMOUS ') and ' speed ' in line]
    driving = [float(speed) for speed in said if speed != '-']
    assert driving and max(driving) > 1.0, result.stdout[-2000:]
    summary = json.loads(next(line for line in lines
                              if line.startswith('demo summary: '))[len('demo summary: '):])
    assert summary['processes_exited'] == [], summary
    # AUTONOMOUS from then on, but for a lease lost and taken again: the mod ends a lease
    # renewed late (a real-time run on a busy machine; the lease is 1 s, renewed every
    # 0.25 s), and kart_interface takes a new one at once while the team asks for AUTONOMOUS:
    # at most a lease's length undriven in all
    assert summary['disengaged_s'] <= 1.0, summary
    assert summary['ready_s'] <= summary['autonomous_s'], summary
    # driving: up to 30 m a second of wall time at 10 m/s and RATE x, but a busy machine
    # slows the game, lock-stepped to the stack, below real time (9.3 m in a 9 s run under
    # two suites side by side): the bounds of a real-time run
    assert summary['progress_m'] > 5.0 and summary['max_speed_mps'] > 1.0, summary
    assert summary['estimates'] > 0 and summary['estimates_refused'] == 0, summary
