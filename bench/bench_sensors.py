"""udp_bridge with sensor data: 3D LiDAR CPU, a 640x480 camera at 15 Hz, cloud throughput.

Every process runs in a ROS domain and on UDP ports of its own, discovery on localhost
(the helpers of ``bench_bridge.py``); the bench process subscribes to what the bridge
publishes, with the bridge's QoS.

1. **lidar_cpu**: a child sends ``pylon_session`` heartbeats and 3D scans of ``LIDAR_RAYS``
   rays (the mod's form: ranges only, Fibonacci layout) at 10 Hz for ``SECONDS``; the
   bridge's CPU (``utime + stime`` of its process) over the window, in percent of one core,
   and the clouds received. Target: under 10 %.
2. **camera**: a child sends a 640x480 ``rgb8`` frame at 15 Hz, chunked as the mod chunks
   (12 000-byte pieces); images received against frames sent. Target: no drops.
3. **cloud_throughput**: a child floods the bridge with the same scans as fast as the
   bridge empties its socket queue (``/proc/net/udp``); the bridge's cloud publish rate
   (its diagnostics) against a bare rclpy publisher of the same prebuilt PointCloud2.

Prints one JSON object on the last line of stdout.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import socket
import statistics
import sys
import time

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / 'ws' / 'src' / 'pylon_bridge' / 'test'))

from bench_bridge import (  # noqa: E402
    _float,
    BenchError,
    claim_ports,
    cpu_ticks,
    drop_counters,
    FLOOD_QUEUE_HIGH_BYTES,
    LineReader,
    Monitor,
    Processes,
    start_bridge,
    START_TIMEOUT_SEC,
    TOPICS_STATUS,
    udp_socket_state,
)

SECONDS = 12.0
LIDAR_RAYS = 4096
LIDAR_RATE_HZ = 10.0
CAMERA_WIDTH, CAMERA_HEIGHT, CAMERA_RATE_HZ = 640, 480, 15.0
FLOOD_SECONDS = 8.0
CLOUD_TOPIC = '/ksp_vessel/lidar_3d/lidar_3d_bench/points'
IMAGE_TOPIC = '/ksp_vessel/camera/camera_bench/image_raw'
BASELINE_TOPIC = '/bench/cloud_baseline'
HEARTBEAT_PERIOD_SEC = 0.1


class Traffic:
    """The mod's datagrams for one session: heartbeats, 3D scans and camera frames."""

    def __init__(self) -> None:
        """Prepare one session's envelope and a scan's ranges."""
        import bridge_datagrams as bd
        from pylon_protocol import camera
        self.bd = bd
        self.chunk_bytes = camera.DEFAULT_CHUNK_BYTES    # as the mod chunks by default
        self.ut = bd.UT
        self.heartbeats = 0
        rng = np.random.default_rng(1)
        self.ranges = [round(float(r), 3) for r in rng.uniform(1.0, 150.0, LIDAR_RAYS)]
        self.frame = rng.integers(0, 256, CAMERA_WIDTH * CAMERA_HEIGHT * 3,
                                  dtype=np.uint8).tobytes()

    def heartbeat(self) -> bytes:
        """Return the next heartbeat (UT as the latest data)."""
        self.heartbeats += 1
        return self.bd.session(ut=self.ut, sequence=self.heartbeats)

    def scan(self, dt: float) -> bytes:
        """Return a 3D scan ``dt`` later in UT."""
        self.ut += dt
        return self.bd.encode(
            'pylon_lidar_scan', mode='3D', sensorId='lidar_3d_bench', vessel='Bench',
            partFlightId=4002, universalTime=self.ut, rayCount=LIDAR_RAYS,
            horizontalCount=LIDAR_RAYS, verticalCount=1,
            hemisphereDensity=LIDAR_RAYS / (2 * np.pi), horizontalFovDeg=360.0,
            verticalFovDeg=180.0, scanRateHz=LIDAR_RATE_HZ, maxDistance=200.0,
            layout='fibonacci-hemisphere', coordinateFrame='ros_sensor', hitCount=LIDAR_RAYS,
            origin=[0.0, 0.0, 0.0], framePosition=[0.0, 0.0, 0.5],
            frameRotation=[0.0, 0.0, 0.0, 1.0], ranges=self.ranges)

    def camera(self, sequence: int, dt: float) -> list[bytes]:
        """Return the chunks of the next camera frame."""
        self.ut += dt
        return self.bd.camera_chunks(self.frame, CAMERA_WIDTH, CAMERA_HEIGHT,
                                     sequence=sequence, ut=self.ut, sensor='camera_bench',
                                     chunk_bytes=self.chunk_bytes)


def child_paced(port: int, kind: str, seconds: float) -> None:
    """Child: heartbeats plus scans or camera frames at their rate for ``seconds``."""
    traffic = Traffic()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    target = ('127.0.0.1', port)
    rate = LIDAR_RATE_HZ if kind == 'lidar' else CAMERA_RATE_HZ
    sock.sendto(traffic.heartbeat(), target)
    print('ready', flush=True)
    sys.stdin.readline()
    start = time.monotonic()
    next_item, next_beat, sent = start, start, 0
    while True:
        now = time.monotonic()
        if now - start >= seconds:
            break
        if now >= next_beat:
            sock.sendto(traffic.heartbeat(), target)
            next_beat += HEARTBEAT_PERIOD_SEC
        if now >= next_item:
            sent += 1
            if kind == 'lidar':
                sock.sendto(traffic.scan(1.0 / rate), target)
            else:
                for chunk in traffic.camera(sent, 1.0 / rate):
                    sock.sendto(chunk, target)
            next_item += 1.0 / rate
        time.sleep(max(0.0, min(next_item, next_beat) - time.monotonic()))
    print(json.dumps({'start': start, 'end': time.monotonic(), 'sent': sent}), flush=True)


def child_flood(port: int, seconds: float) -> None:
    """Child: scans as fast as the bridge drains its queue, heartbeats every 0.1 s."""
    traffic = Traffic()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    target = ('127.0.0.1', port)
    sock.sendto(traffic.heartbeat(), target)
    print('ready', flush=True)
    sys.stdin.readline()
    start = time.monotonic()
    next_beat, sent = start, 0
    while time.monotonic() - start < seconds:
        if time.monotonic() >= next_beat:
            sock.sendto(traffic.heartbeat(), target)
            next_beat += HEARTBEAT_PERIOD_SEC
        state = udp_socket_state(port)
        if state is not None and state[0] > FLOOD_QUEUE_HIGH_BYTES:
            time.sleep(0.0005)
            continue
        for _ in range(4):
            sock.sendto(traffic.scan(1e-3), target)
        sent += 4
    print(json.dumps({'start': start, 'end': time.monotonic(), 'sent': sent}), flush=True)


def child_baseline(seconds: float) -> None:
    """Child: publish one prebuilt PointCloud2 of the same scan in a tight loop."""
    import bridge_datagrams as bd
    from pylon_bridge import qos as bridge_qos
    from pylon_bridge import sensor_messages as sensors
    from pylon_protocol import packets
    import rclpy
    from sensor_msgs.msg import PointCloud2
    rclpy.init()
    node = rclpy.create_node('bench_cloud_baseline')
    try:
        publisher = node.create_publisher(PointCloud2, BASELINE_TOPIC,
                                          bridge_qos.qos_for('lidar_3d', {}))
        scan = packets.decode_state(Traffic().scan(0.1), 1 << 20)
        msg = sensors.point_cloud(sensors.scan_points(scan), time.time(), 'bench')
        deadline = time.monotonic() + START_TIMEOUT_SEC
        while publisher.get_subscription_count() == 0:
            if time.monotonic() > deadline:
                raise SystemExit('baseline: the bench subscriber never matched')
            time.sleep(0.01)
        del bd
        count, start = 0, time.monotonic()
        while time.monotonic() - start < seconds:
            publisher.publish(msg)
            count += 1
        print(json.dumps({'start': start, 'end': time.monotonic(), 'published': count}),
              flush=True)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


class Counter:
    """Messages of one topic received by the bench's node (with the bridge's QoS)."""

    def __init__(self, monitor: Monitor, msg_type, topic: str, key: str) -> None:
        """Subscribe to ``topic`` with the QoS of the bridge's topic ``key``."""
        from pylon_bridge import qos as bridge_qos
        self.times: list[float] = []
        self.sub = monitor.node.create_subscription(
            msg_type, topic, lambda _: self.times.append(time.monotonic()),
            bridge_qos.qos_for(key, {}))

    def between(self, start: float, end: float) -> int:
        """Return how many arrived in [start, end]."""
        return sum(1 for t in self.times if start <= t <= end)


def run_sender(procs: Processes, monitor: Monitor, argv: list[str], check, until=None,
               timeout: float = 60.0) -> dict:
    """Start a sender child, let it go when the bridge is ready, return its JSON result."""
    proc = procs.start('sender', [sys.executable, __file__, *argv], pipes=True)
    reader = LineReader(proc)
    lines: list[str] = []

    def every() -> None:
        lines.extend(reader.lines())
        check()
    if not monitor.spin_until(lambda: 'ready' in lines, START_TIMEOUT_SEC, every):
        raise BenchError(f'sender never ready:\n{procs.log_tail(proc)}')
    monitor.spin_for(1.0, every)                 # the heartbeat opened the session
    proc.stdin.write(b'go\n')
    proc.stdin.flush()
    if until is not None:
        until()
    if not monitor.spin_until(lambda: any(x.startswith('{') for x in lines), timeout, every):
        raise BenchError(f'sender did not finish:\n{procs.log_tail(proc)}')
    procs.stop(proc)
    return json.loads(next(x for x in lines if x.startswith('{')))


def phase_lidar_cpu(procs: Processes, monitor: Monitor, claims: list) -> dict:
    """Bridge CPU for a 4096-ray 3D LiDAR at 10 Hz."""
    from sensor_msgs.msg import PointCloud2
    port, command_port = claim_ports(claims, 2)
    bridge, pid = start_bridge(procs, monitor, port, command_port)
    clouds = Counter(monitor, PointCloud2, CLOUD_TOPIC, 'lidar_3d')
    check = lambda: procs.check('udp_bridge', bridge)  # noqa: E731
    ticks = []
    result = run_sender(procs, monitor, ['paced', str(port), 'lidar', str(SECONDS)], check,
                        until=lambda: ticks.append((time.monotonic(), cpu_ticks(pid))))
    ticks.append((time.monotonic(), cpu_ticks(pid)))
    monitor.spin_for(0.5, check)
    (t0, c0), (t1, c1) = ticks
    cpu = 100.0 * (c1 - c0) / os.sysconf('SC_CLK_TCK') / (t1 - t0)
    received = clouds.between(result['start'], result['end'] + 0.5)
    statuses = monitor.reports[-1][1] if monitor.reports else {}
    procs.stop(bridge)
    return {'rays': LIDAR_RAYS, 'rate_hz': LIDAR_RATE_HZ, 'seconds': round(t1 - t0, 2),
            'scans_sent': result['sent'], 'clouds_received': received,
            'bridge_cpu_percent_of_one_core': round(cpu, 1),
            'bridge_datagrams': drop_counters(statuses),
            'target_percent': 10.0, 'pass': cpu < 10.0 and received >= result['sent'] - 1}


def phase_camera(procs: Processes, monitor: Monitor, claims: list) -> dict:
    """Send a 640x480 camera at 15 Hz through the bridge; count frames received."""
    from sensor_msgs.msg import Image
    port, command_port = claim_ports(claims, 2)
    bridge, pid = start_bridge(procs, monitor, port, command_port)
    images = Counter(monitor, Image, IMAGE_TOPIC, 'camera')
    check = lambda: procs.check('udp_bridge', bridge)  # noqa: E731
    ticks = []
    result = run_sender(procs, monitor, ['paced', str(port), 'camera', str(SECONDS)], check,
                        until=lambda: ticks.append((time.monotonic(), cpu_ticks(pid))))
    ticks.append((time.monotonic(), cpu_ticks(pid)))
    monitor.spin_for(1.0, check)
    (t0, c0), (t1, c1) = ticks
    received = images.between(result['start'], result['end'] + 1.0)
    statuses = monitor.reports[-1][1] if monitor.reports else {}
    socket_state = udp_socket_state(port)
    procs.stop(bridge)
    return {'width': CAMERA_WIDTH, 'height': CAMERA_HEIGHT, 'rate_hz': CAMERA_RATE_HZ,
            'frames_sent': result['sent'], 'images_received': received,
            'dropped': result['sent'] - received,
            'bridge_cpu_percent_of_one_core': round(
                100.0 * (c1 - c0) / os.sysconf('SC_CLK_TCK') / (t1 - t0), 1),
            'bridge_datagrams': drop_counters(statuses),
            'kernel_drops': socket_state[1] if socket_state else None,
            'pass': received >= result['sent']}


def phase_cloud_throughput(procs: Processes, monitor: Monitor, claims: list) -> dict:
    """Clouds per second of a flooded bridge against a bare rclpy publisher."""
    from sensor_msgs.msg import PointCloud2
    port, command_port = claim_ports(claims, 2)
    bridge, pid = start_bridge(procs, monitor, port, command_port)
    check = lambda: procs.check('udp_bridge', bridge)  # noqa: E731
    result = run_sender(procs, monitor, ['flood', str(port), str(FLOOD_SECONDS)], check)
    monitor.spin_for(1.2, check)
    key = 'rate_hz./ksp_vessel/lidar_3d/<id>/points'      # per key, all sensors
    inside = [s for t, s in monitor.reports
              if t - 1.05 >= result['start'] + 0.5 and t <= result['end'] + 0.05]
    rates = [r for r in (_float(s.get(TOPICS_STATUS, {}), key) for s in inside)
             if r is not None]
    procs.stop(bridge)
    if not rates:
        raise BenchError(f'no {key} in the diagnostics during the flood')
    baseline = Counter(monitor, PointCloud2, BASELINE_TOPIC, 'lidar_3d')
    proc = procs.start('baseline', [sys.executable, __file__, 'baseline',
                                    str(FLOOD_SECONDS)], pipes=True)
    reader = LineReader(proc)
    lines: list[str] = []
    if not monitor.spin_until(lambda: lines, FLOOD_SECONDS + START_TIMEOUT_SEC,
                              lambda: lines.extend(reader.lines())):
        raise BenchError(f'baseline did not finish:\n{procs.log_tail(proc)}')
    procs.stop(proc)
    base = json.loads(lines[-1])
    base_rate = base['published'] / (base['end'] - base['start'])
    bridge_rate = statistics.fmean(rates)
    return {'rays': LIDAR_RAYS, 'flood_seconds': FLOOD_SECONDS,
            'scans_sent': result['sent'],
            'bridge_clouds_per_s': round(bridge_rate, 1),
            'baseline_clouds_per_s': round(base_rate, 1),
            'baseline_received_per_s': round(
                baseline.between(base['start'], base['end']) / (base['end'] - base['start']),
                1),
            'ratio': round(bridge_rate / base_rate, 4),
            'ratio_to_baseline_received': round(
                bridge_rate * (base['end'] - base['start'])
                / max(1, baseline.between(base['start'], base['end'])), 4)}


def main() -> int:
    """Run the phases and print one JSON object."""
    from pylon_testing.isolation import claim_domain_id
    wall = time.monotonic()
    domain_id, domain_claim = claim_domain_id()
    os.environ.update({'ROS_DOMAIN_ID': str(domain_id),
                       'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'})
    claims: list = [domain_claim]
    procs = Processes(dict(os.environ))
    monitor = None
    try:
        monitor = Monitor()
        lidar = phase_lidar_cpu(procs, monitor, claims)
        camera = phase_camera(procs, monitor, claims)
        throughput = phase_cloud_throughput(procs, monitor, claims)
    except BenchError as exc:
        print(f'bench_sensors: {exc}', file=sys.stderr)
        return 1
    finally:
        procs.stop_all()
        if monitor is not None:
            monitor.close()
        for claim in claims:
            claim.release()
    print(json.dumps({'benchmark': 'sensors', 'cpus': os.cpu_count(),
                      'lidar_cpu': lidar, 'camera': camera, 'cloud_throughput': throughput,
                      'runtime_seconds': round(time.monotonic() - wall, 1)}))
    return 0


if __name__ == '__main__':
    MODE = sys.argv[1:2]
    if MODE == ['paced']:
        child_paced(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]))
    elif MODE == ['flood']:
        child_flood(int(sys.argv[2]), float(sys.argv[3]))
    elif MODE == ['baseline']:
        child_baseline(float(sys.argv[2]))
    else:
        sys.exit(main())
