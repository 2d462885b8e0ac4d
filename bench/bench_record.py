"""pylon_recorder recording everything of the orbit scenario, with a 640x480 camera.

pylon_sim (orbit at real time, every sensor aboard, its camera raised from 320x240 to
640x480 at its own 5 Hz: a copy of the scenario), udp_bridge, the estimator and the
controller run as processes (``pylon_testing.bench``, the harness of the tests);
``pylon_recorder`` records every topic of the graph. Once it has subscribed to the camera,
for ``SECONDS`` of wall time: the recorder's CPU (``utime + stime`` of its process, in
percent of one core), the file's growth on disk per second, and then, after SIGINT, the
file's size and what its summary says (messages, message bytes per second before
compression, camera frames per second against those a live subscriber of the bench saw in
the window, topics). Prints one JSON object.
"""

from __future__ import annotations

from pathlib import Path
import sys
import time

from pylon_common import topics
from pylon_testing.bench import BenchError, BenchNode, BenchSession, cpu_seconds, run
from pylon_testing.stack import start_stack
from pylon_testing.wait import subscriptions_of
import yaml

SECONDS = 30.0
WIDTH, HEIGHT = 640, 480
CAMERA_ID = 'camera_front'
START_SEC = 60.0          # the stack up and the recorder subscribed to the camera


def scenario(directory: Path) -> str:
    """Write the orbit scenario with its camera at WIDTH x HEIGHT; return the path."""
    from pylon_sim.loop.scenario import load_scenario
    data = yaml.safe_load(Path(load_scenario('orbit').path).read_text(encoding='utf-8'))
    cameras = [m for vessel in data['vessels'] for part in vessel['parts']
               for m in part.get('modules', ()) if m.get('sensor_id') == CAMERA_ID]
    if len(cameras) != 1:
        raise BenchError(f'the orbit scenario has {len(cameras)} cameras {CAMERA_ID}')
    cameras[0].update(width=WIDTH, height=HEIGHT)
    path = directory / 'orbit_640x480.yaml'
    path.write_text(yaml.safe_dump(data), encoding='utf-8')
    return str(path)


def summary_of(path: Path) -> dict:
    """Return what the finished recording's summary and messages say."""
    from mcap.reader import make_reader
    image = topics.name('camera', id=CAMERA_ID)
    with open(path, 'rb') as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        stats = summary.statistics
        data_bytes, frames = 0, []
        for _, channel, message in reader.iter_messages(log_time_order=False):
            data_bytes += len(message.data)
            if channel.topic == image:
                frames.append(message.log_time)
    span = (stats.message_end_time - stats.message_start_time) * 1e-9
    frame_span = (max(frames) - min(frames)) * 1e-9
    return {'recorded_s': round(span, 1), 'messages': stats.message_count,
            'topics': len(summary.channels), 'chunks': stats.chunk_count,
            'message_bytes_per_s': round(data_bytes / span),
            'camera_frames_per_s': round((len(frames) - 1) / frame_span, 2),
            'file_bytes': path.stat().st_size,
            'compression_ratio': round(data_bytes / path.stat().st_size, 2)}


def measure(session: BenchSession) -> dict:
    """Start the stack and the recorder, measure, stop; return the JSON object."""
    path = session.log_dir / 'bench.mcap'
    start_stack(session.group.start, session.take_port, scenario(session.log_dir),
                check_packets=False)
    session.group.start(['attitude_estimator'], name='estimator')
    session.group.start(['setpoint_controller'], name='controller')
    recorder = session.group.start(['pylon_recorder', '--ros-args', '-p', f'output:={path}'],
                                   name='recorder')
    image = topics.name('camera', id=CAMERA_ID)
    with BenchNode('bench_record') as bench:
        bench.until(session.group.guard(
            lambda: image in subscriptions_of(bench.node, topics.PYLON_RECORDER)),
            START_SEC, 'the recorder subscribed to the camera')
        frames = bench.recorder().add('image', image, topics.message_class('camera'),
                                      topics.qos('camera', reader=True))
        cpu0, size0, t0 = cpu_seconds(recorder.pid), path.stat().st_size, time.monotonic()
        bench.spin_for(SECONDS, session.group.check)
        wall = time.monotonic() - t0
        cpu, size = cpu_seconds(recorder.pid) - cpu0, path.stat().st_size - size0
        seen = len(frames.got['image']) / wall
    if recorder.stop() != 0:
        raise BenchError(f'the recorder did not end cleanly:\n{recorder.log_tail()}')
    return {'seconds': round(wall, 1), 'recorder_cpu_percent': round(100 * cpu / wall, 1),
            'file_bytes_per_s': round(size / wall), 'camera': f'{WIDTH}x{HEIGHT}',
            'camera_frames_per_s_live': round(seen, 2), **summary_of(path),
            'runtime_s': session.runtime_seconds()}


def main() -> int:
    """Run the benchmark."""
    return run('bench_record', measure)


if __name__ == '__main__':
    sys.exit(main())
