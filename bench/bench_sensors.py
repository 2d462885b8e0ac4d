"""udp_bridge with sensor data: 3D LiDAR CPU, a 640x480 camera at 15 Hz, cloud throughput.

Every process runs in a ROS domain and on UDP ports of its own, discovery on localhost
(``pylon_testing.bench``, the harness ``bench_bridge.py`` and the tests use); the bench
process subscribes to what the bridge publishes, with the bridge's QoS.

1. **lidar_cpu**: a child sends ``pylon_session`` heartbeats and 3D scans of ``LIDAR_RAYS``
   rays (the mod's form: ranges only, Fibonacci layout) at 10 Hz for ``SECONDS``; the
   bridge's CPU (``utime + stime`` of its process) over the window, in percent of one core,
   and the clouds received. Target: under 10 %.
2. **camera**: a child sends a 640x480 ``rgb8`` frame at 15 Hz, chunked as the mod chunks
   (12 000-byte pieces); images received against frames sent. Target: no drops.
3. **scan_remap**: a child sends the kart's 2D scans (1080 rays over 270°, 40 Hz) for
   ``REMAP_SECONDS`` through a bridge on its own topic name, then through a bridge started
   with the kart's remaps (``pylon_kart.sensing``: the scan on ``/sensing/lidar/scan``); the
   latency from each datagram's send to its LaserScan's arrival here (one monotonic clock,
   matched by KSP time), p50/p99 for both: remapping renames the bridge's publisher, so
   the two must not differ beyond noise.
4. **cloud_throughput**: a child floods the bridge with the same scans as fast as the
   bridge empties its socket queue (``/proc/net/udp``); the bridge's cloud publish rate
   (its diagnostics) against a bare rclpy publisher of the same prebuilt PointCloud2.

Prints one JSON object on the last line of stdout.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import sys
import time

import numpy as np
from pylon_common import topics
from pylon_kart import sensing
from pylon_testing import mod_datagrams
from pylon_testing.bench import (
    BenchError,
    BenchNode,
    BenchSession,
    BridgeMonitor,
    cpu_seconds,
    drop_counters,
    FLOOD_QUEUE_HIGH_BYTES,
    number,
    percentile,
    run,
    start_bridge,
    START_TIMEOUT_SEC,
    TOPICS_STATUS,
    udp_socket_state,
    wait_for_line,
)

SECONDS = 12.0
LIDAR_RAYS = 4096
LIDAR_RATE_HZ = 10.0
CAMERA_WIDTH, CAMERA_HEIGHT, CAMERA_RATE_HZ = 640, 480, 15.0
FLOOD_SECONDS = 8.0
CLOUD_TOPIC = topics.name('lidar_3d', id='lidar_3d_bench')
IMAGE_TOPIC = topics.name('camera', id='camera_bench')
CLOUD_RATE_KEY = f"rate_hz.{topics.name('lidar_3d', id='<id>')}"       # per key, all sensors
BASELINE_TOPIC = '/bench/cloud_baseline'
HEARTBEAT_PERIOD_SEC = 0.1
KART_SCAN_RAYS, KART_SCAN_FOV_DEG, KART_SCAN_RATE_HZ = 1080, 270.0, 40.0
SCAN_TOPIC = topics.name('lidar_2d', id=sensing.LIDAR)
REMAP_SECONDS = 8.0


class Traffic:
    """The mod's datagrams for one session: heartbeats, 3D scans and camera frames."""

    def __init__(self) -> None:
        """Prepare one session's envelope and a scan's ranges."""
        from pylon_protocol import camera
        bd = self.bd = mod_datagrams
        self.chunk_bytes = camera.DEFAULT_CHUNK_BYTES    # as the mod chunks by default
        self.ut = bd.UT
        self.heartbeats = 0
        rng = np.random.default_rng(1)
        self.ranges = [round(float(r), 3) for r in rng.uniform(1.0, 150.0, LIDAR_RAYS)]
        self.ranges_2d = [round(float(r), 3) for r in rng.uniform(1.0, 30.0, KART_SCAN_RAYS)]
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

    def scan_2d(self, dt: float) -> bytes:
        """Return the kart's 2D scan ``dt`` later in UT (sensor ``lidar``, 1080 rays)."""
        self.ut += dt
        return self.bd.lidar_2d(ut=self.ut, ranges=self.ranges_2d, fov=KART_SCAN_FOV_DEG,
                                sensor=sensing.LIDAR)

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
    rate = {'lidar': LIDAR_RATE_HZ, 'lidar2d': KART_SCAN_RATE_HZ}.get(kind, CAMERA_RATE_HZ)
    sends = []
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
            elif kind == 'lidar2d':
                datagram = traffic.scan_2d(1.0 / rate)
                sends.append((traffic.ut, time.monotonic()))
                sock.sendto(datagram, target)
            else:
                for chunk in traffic.camera(sent, 1.0 / rate):
                    sock.sendto(chunk, target)
            next_item += 1.0 / rate
        time.sleep(max(0.0, min(next_item, next_beat) - time.monotonic()))
    print(json.dumps({'start': start, 'end': time.monotonic(), 'sent': sent, 'sends': sends}),
          flush=True)


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
    from pylon_bridge import sensor_messages as sensors
    from pylon_protocol import packets
    import rclpy
    from sensor_msgs.msg import PointCloud2
    rclpy.init()
    node = rclpy.create_node('bench_cloud_baseline')
    try:
        publisher = node.create_publisher(PointCloud2, BASELINE_TOPIC, topics.qos('lidar_3d'))
        scan = packets.decode_state(Traffic().scan(0.1), 1 << 20)
        msg = sensors.point_cloud(sensors.scan_points(scan), time.time(), 'bench')
        deadline = time.monotonic() + START_TIMEOUT_SEC
        while publisher.get_subscription_count() == 0:
            if time.monotonic() > deadline:
                raise SystemExit('baseline: the bench subscriber never matched')
            time.sleep(0.01)
        count, start = 0, time.monotonic()
        while time.monotonic() - start < seconds:
            publisher.publish(msg)
            count += 1
        print(json.dumps({'start': start, 'end': time.monotonic(), 'published': count}),
              flush=True)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


class Arrivals:
    """When the bench's node received the messages of one topic (with the bridge's QoS)."""

    def __init__(self, bench: BenchNode, msg_type, topic: str, key: str) -> None:
        """Subscribe to ``topic`` with the QoS of the bridge's topic ``key``."""
        self.times: list[float] = []
        self.subscription = bench.node.create_subscription(
            msg_type, topic, lambda _: self.times.append(time.monotonic()),
            topics.qos(key, reader=True))

    def between(self, start: float, end: float) -> int:
        """Return how many arrived in [start, end]."""
        return sum(1 for t in self.times if start <= t <= end)


def run_sender(session: BenchSession, bench: BenchNode, argv: list[str], check, until=None,
               timeout: float = 60.0) -> dict:
    """Start a sender child, let it go when the bridge is ready, return its JSON result."""
    sender = session.group.start([sys.executable, __file__, *argv], name='sender', pipes=True)
    wait_for_line(bench, sender, '^ready$', START_TIMEOUT_SEC, check)
    bench.spin_for(1.0, check)                   # the heartbeat opened the session
    sender.send_line('go')
    if until is not None:
        until()
    result = wait_for_line(bench, sender, r'^\{', timeout, check)
    session.group.stop(sender)
    return json.loads(result)


def paced(session: BenchSession, bench: BenchNode, monitor: BridgeMonitor, kind: str,
          key: str, msg_type, topic: str, settle: float) -> dict:
    """Send ``kind`` at its rate through a fresh bridge: what went, what came, its CPU."""
    bridge, port = start_bridge(session, bench, monitor)
    arrivals = Arrivals(bench, msg_type, topic, key)
    cpu = []
    result = run_sender(session, bench, ['paced', str(port), kind, str(SECONDS)], bridge.check,
                        until=lambda: cpu.append((time.monotonic(), cpu_seconds(bridge.pid))))
    cpu.append((time.monotonic(), cpu_seconds(bridge.pid)))
    bench.spin_for(settle, bridge.check)
    (t0, c0), (t1, c1) = cpu
    socket_state = udp_socket_state(port)
    session.group.stop(bridge)
    return {'sent': result['sent'],
            'received': arrivals.between(result['start'], result['end'] + settle),
            'seconds': t1 - t0, 'cpu_percent': 100.0 * (c1 - c0) / (t1 - t0),
            'bridge_datagrams': drop_counters(monitor.latest()),
            'kernel_drops': socket_state[1] if socket_state else None}


def phase_lidar_cpu(session: BenchSession, bench: BenchNode, monitor: BridgeMonitor) -> dict:
    """Bridge CPU for a 4096-ray 3D LiDAR at 10 Hz."""
    from sensor_msgs.msg import PointCloud2
    got = paced(session, bench, monitor, 'lidar', 'lidar_3d', PointCloud2, CLOUD_TOPIC, 0.5)
    cpu = got['cpu_percent']
    return {'rays': LIDAR_RAYS, 'rate_hz': LIDAR_RATE_HZ, 'seconds': round(got['seconds'], 2),
            'scans_sent': got['sent'], 'clouds_received': got['received'],
            'bridge_cpu_percent_of_one_core': round(cpu, 1),
            'bridge_datagrams': got['bridge_datagrams'],
            'target_percent': 10.0, 'pass': cpu < 10.0 and got['received'] >= got['sent'] - 1}


def phase_camera(session: BenchSession, bench: BenchNode, monitor: BridgeMonitor) -> dict:
    """Send a 640x480 camera at 15 Hz through the bridge; count frames received."""
    from sensor_msgs.msg import Image
    got = paced(session, bench, monitor, 'camera', 'camera', Image, IMAGE_TOPIC, 1.0)
    return {'width': CAMERA_WIDTH, 'height': CAMERA_HEIGHT, 'rate_hz': CAMERA_RATE_HZ,
            'frames_sent': got['sent'], 'images_received': got['received'],
            'dropped': got['sent'] - got['received'],
            'bridge_cpu_percent_of_one_core': round(got['cpu_percent'], 1),
            'bridge_datagrams': got['bridge_datagrams'],
            'kernel_drops': got['kernel_drops'],
            'pass': got['received'] >= got['sent']}


def scan_latencies(session: BenchSession, bench: BenchNode, monitor: BridgeMonitor,
                   remapped: bool) -> list[float]:
    """Send the kart's scans through a fresh bridge; return each scan's latency (ms)."""
    from sensor_msgs.msg import LaserScan
    extra = sensing.bridge_arguments() if remapped else ()
    topic = sensing.remapping()[SCAN_TOPIC] if remapped else SCAN_TOPIC
    bridge, port = start_bridge(session, bench, monitor, extra)
    arrivals: list[tuple[float, float]] = []
    bench.node.create_subscription(
        LaserScan, topic, lambda m: arrivals.append((
            time.monotonic(), m.header.stamp.sec + m.header.stamp.nanosec * 1e-9)),
        topics.qos('lidar_2d', reader=True))
    result = run_sender(session, bench, ['paced', str(port), 'lidar2d', str(REMAP_SECONDS)],
                        bridge.check)
    bench.spin_for(0.5, bridge.check)
    session.group.stop(bridge)
    sends = result['sends']
    if not arrivals:
        raise BenchError(f'no scan on {topic}')
    # the bridge stamps KSP time + one offset per session: of the offsets that would match
    # the first scan to arrive with one sent, the one whose latencies are all >= 0 and least
    by_ut = {round(ut, 6): sent_at for ut, sent_at in sends}
    best: list[float] = []
    for ut, _ in sends:
        offset = arrivals[0][1] - ut
        matched = [(received - by_ut[round(stamp - offset, 6)]) * 1e3
                   for received, stamp in arrivals if round(stamp - offset, 6) in by_ut]
        if matched and min(matched) >= 0.0 and (not best or max(matched) < max(best)):
            best = matched
    out = best
    return out


def phase_scan_remap(session: BenchSession, bench: BenchNode, monitor: BridgeMonitor) -> dict:
    """Time the kart's scan on the bridge's own name and on the competition's."""
    result = {'rays': KART_SCAN_RAYS, 'rate_hz': KART_SCAN_RATE_HZ}
    for name, remapped in (('own_name', False), ('remapped', True)):
        latencies = scan_latencies(session, bench, monitor, remapped)
        result[name] = {'scans': len(latencies),
                        'p50_ms': round(percentile(latencies, 0.5), 3),
                        'p99_ms': round(percentile(latencies, 0.99), 3)}
    result['p50_ratio'] = round(result['remapped']['p50_ms'] / result['own_name']['p50_ms'], 3)
    return result


def phase_cloud_throughput(session: BenchSession, bench: BenchNode,
                           monitor: BridgeMonitor) -> dict:
    """Clouds per second of a flooded bridge against a bare rclpy publisher."""
    from sensor_msgs.msg import PointCloud2
    bridge, port = start_bridge(session, bench, monitor)
    result = run_sender(session, bench, ['flood', str(port), str(FLOOD_SECONDS)], bridge.check)
    bench.spin_for(1.2, bridge.check)
    inside = [s for t, s in monitor.reports
              if t - 1.05 >= result['start'] + 0.5 and t <= result['end'] + 0.05]
    rates = [r for r in (number(s.get(TOPICS_STATUS, {}), CLOUD_RATE_KEY) for s in inside)
             if r is not None]
    session.group.stop(bridge)
    if not rates:
        raise BenchError(f'no {CLOUD_RATE_KEY} in the diagnostics during the flood')
    baseline = Arrivals(bench, PointCloud2, BASELINE_TOPIC, 'lidar_3d')
    child = session.group.start([sys.executable, __file__, 'baseline', str(FLOOD_SECONDS)],
                                name='baseline', pipes=True)
    base = json.loads(wait_for_line(bench, child, r'^\{', FLOOD_SECONDS + START_TIMEOUT_SEC))
    session.group.stop(child)
    base_seconds = base['end'] - base['start']
    base_rate = base['published'] / base_seconds
    bridge_rate = statistics.fmean(rates)
    base_received = baseline.between(base['start'], base['end'])
    return {'rays': LIDAR_RAYS, 'flood_seconds': FLOOD_SECONDS,
            'scans_sent': result['sent'],
            'bridge_clouds_per_s': round(bridge_rate, 1),
            'baseline_clouds_per_s': round(base_rate, 1),
            'baseline_received_per_s': round(base_received / base_seconds, 1),
            'ratio': round(bridge_rate / base_rate, 4),
            'ratio_to_baseline_received': round(bridge_rate * base_seconds
                                                / max(1, base_received), 4)}


def measure(session: BenchSession) -> dict:
    """Run the phases; return the benchmark's JSON object."""
    with BenchNode('bench_sensors') as bench:
        monitor = BridgeMonitor(bench)
        lidar = phase_lidar_cpu(session, bench, monitor)
        camera = phase_camera(session, bench, monitor)
        scan = phase_scan_remap(session, bench, monitor)
        throughput = phase_cloud_throughput(session, bench, monitor)
    return {'benchmark': 'sensors', 'cpus': os.cpu_count(),
            'lidar_cpu': lidar, 'camera': camera, 'scan_remap': scan,
            'cloud_throughput': throughput,
            'runtime_seconds': session.runtime_seconds()}


def main() -> int:
    """Run the phases and print one JSON object."""
    return run('bench_sensors', measure)


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
