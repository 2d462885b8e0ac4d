"""Replay the mod's own datagram forms (mod_datagrams.txt) into a real udp_bridge.

One bridge is fed the whole file once (the module's ``replay`` fixture: the file twice, a
model, a non-finite and a wrong-version IMU); each test then checks what one family of
messages became on ROS: session, IMU and ground truth; the vessel model; actuators;
docking ports; sensors; control; and the diagnostics' drop and ignore counters.
"""

from dataclasses import dataclass
import math
from pathlib import Path
import socket

from pylon_common import topics
from pylon_protocol import packets
from pylon_testing import mod_datagrams as d
from pylon_testing.recorder import TopicRecorder
import pytest

pytestmark = pytest.mark.integration

MOD_DATAGRAMS = Path(__file__).with_name('mod_datagrams.txt')
MOD_EPOCH = 'e90c4e90c4e90c4e90c4e90c4e90c4e9'     # the runtimeEpoch of the file
BRIDGED = {'pylon_session', 'pylon_imu', 'pylon_ground_truth', 'pylon_nearby_vessels',
           'pylon_motor_state', 'pylon_vessel_urdf_chunk', 'pylon_vessel_urdf_clear',
           'pylon_control_authority_state', 'pylon_wrench_status', 'pylon_actuator_state',
           'pylon_docking_port_state', 'pylon_star_tracker', 'pylon_lidar_scan',
           'pylon_lidar_inactive', 'pylon_camera_frame_chunk', 'pylon_camera_inactive',
           'pylon_flight_state', 'pylon_control_snapshot', 'pylon_vehicle_health',
           'pylon_part_thermal_state', 'pylon_separation_result', 'pylon_actuator_manifest',
           'pylon_docking_port_manifest'}
RECORDED = {       # name -> (topic key, sensor or port id in the file)
    'life': ('lifecycle', ''), 'imu': ('imu', ''), 'pose': ('ground_truth/pose', ''),
    'twist_body': ('ground_truth/twist_body', ''),
    'nearby': ('ground_truth/nearby_vessels', ''), 'joints': ('joint_states', ''),
    'root': ('root_frame', ''), 'diag': ('diagnostics', ''),
    'authority': ('control/authority/state', ''), 'feedback': ('control/wrench_feedback', ''),
    'engine': ('actuators/propulsion/state', ''), 'wheel': ('actuators/wheel/state', ''),
    'separation': ('actuators/separation/state', ''),
    'dock': ('docking_port/state', 'docking_port_3008_0'),
    'tracker': ('star_tracker/state', 'star_tracker_00c0ffee'),
    'scan': ('lidar_2d', 'lidar_2d_1a2b3c4d'), 'image': ('camera', 'camera_0badf00d'),
    'flight': ('ground_truth/flight', ''), 'snapshot': ('control/snapshot', ''),
    'power': ('health/power', ''), 'thermal': ('health/thermal', ''),
    'result': ('actuators/separation/result', ''), 'simulator': ('simulator/state', ''),
}
RECORDED_NAMES = {name: topics.name(key, id=sensor) for name, (key, sensor) in RECORDED.items()}


def mod_datagrams():
    cases = []
    for line in MOD_DATAGRAMS.read_text(encoding='utf-8').splitlines():
        if line and not line.startswith('#'):
            case, data = line.split('\t', 1)
            cases.append((case, data.encode('utf-8')))
    return cases


def test_the_replay_file_covers_every_state_type():
    types = {case.split('/')[0] for case, _ in mod_datagrams()}
    assert types | {'pylon_vessel_urdf_chunk', 'pylon_vessel_urdf_clear'} == \
        packets.STATE_TYPES - packets.EXTENSION_STATE_TYPES    # the mod never sends those
    raw = dict(mod_datagrams())
    assert raw['pylon_actuator_state/wheel'].count(b'"vesselId"') == 2
    assert raw['pylon_camera_frame_chunk'].count(b'"sensorId"') == 2
    assert b'1E-05,-0,' in raw['pylon_imu'] and b'\\"One\\"' in raw['pylon_ground_truth']


@dataclass
class Replay:
    """What the bridge published after the replay, and its last diagnostics values."""

    got: TopicRecorder
    cases: list[tuple[str, bytes]]
    diagnostics: dict[str, str]

    def first(self, name: str):
        return self.got.messages(name)[0]


class Sender:
    """A UDP socket to the bridge that counts what it sent."""

    def __init__(self, port: int) -> None:
        self.target = ('127.0.0.1', port)
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sent = 0

    def send(self, data: bytes) -> None:
        self.socket.sendto(data, self.target)
        self.sent += 1


def one_frame_later(data: bytes) -> bytes:
    """Return a datagram of the file 0.1 s later in UT and one frame later."""
    return data.replace(b'12345.5', b'12345.6').replace(
        b'"observationSequence":900', b'"observationSequence":901').replace(
        b'"sequence":12,', b'"sequence":13,')


def feed(sender: Sender, got: TopicRecorder, cases: list[tuple[str, bytes]]) -> None:
    """Open the session, send the file twice, a model and two bad IMU samples."""
    sender.send(dict(cases)['pylon_session'])
    got.wait_for('life', lambda m: m.vessel_id == d.VESSEL, what='the session opened')
    # The bridge creates a topic with its first message, which a subscriber that has not
    # matched the new publisher yet misses: the whole file goes out twice, the second time
    # 0.1 s later in UT and one frame later (the mod's own text otherwise), once every
    # recorded subscription has matched its publisher.
    for case, data in cases:
        if case != 'pylon_session':
            sender.send(data)
    try:
        got.until(lambda: not got.unmatched(), 'every recorded topic matched')
    except TimeoutError as exc:
        raise TimeoutError(f'{exc}: unmatched {got.unmatched()}') from exc
    for _, data in cases:
        sender.send(one_frame_later(data))
    for chunk in d.model_chunks(env=d.envelope(epoch=MOD_EPOCH)):
        sender.send(chunk)
    bad = dict(cases)['pylon_imu'].replace(b'9.81', b'NaN').replace(b'12345.5', b'12346')
    sender.send(bad)
    sender.send(b'{"type":"pylon_imu","version":1.0}')


def diagnostics_values(message) -> dict[str, str]:
    return {kv.key: kv.value for status in message.status for kv in status.values}


@pytest.fixture(scope='module')
def replay(module_ros_process, free_udp_port, module_ros_node):
    """Feed one bridge the file; wait for every bridged topic and every datagram counted."""
    port = free_udp_port()
    module_ros_process(['udp_bridge', '--host', '127.0.0.1', '--port', str(port),
                        '--diagnostics-period-sec', '0.2'], name='bridge')
    got = TopicRecorder(module_ros_node)
    for name, (key, _) in RECORDED.items():
        got.add(name, RECORDED_NAMES[name], topics.message_class(key),
                topics.qos(key, reader=True))
    got.wait_for('life', what='the bridge up')
    cases = mod_datagrams()
    sender = Sender(port)
    try:
        feed(sender, got, cases)
        def missing() -> list[str]:
            return [name for name in RECORDED if name not in ('life', 'root', 'diag')
                    and not got.messages(name)] + (
                [] if got.messages('root', predicate=lambda m: m.data) else ['root'])
        try:
            got.until(lambda: not missing(), 'every bridged topic')
        except TimeoutError as exc:
            raise TimeoutError(f'{exc}: none on {missing()}') from exc
        got.until(lambda: got.last('diag') is not None and int(
            diagnostics_values(got.last('diag')).get('received', 0)) == sender.sent,
            'diagnostics counting every datagram')
    finally:
        sender.socket.close()
    yield Replay(got, cases, diagnostics_values(got.last('diag')))
    got.close()


def test_session_imu_and_ground_truth(replay):
    imu = replay.first('imu')
    assert (imu.angular_velocity.x, imu.angular_velocity.y, imu.angular_velocity.z) == (
        1e-05, 0.0, 7.3e-05)
    assert imu.linear_acceleration.z == 9.81 and imu.header.frame_id == 'base_link'
    assert len(replay.got.messages('imu')) <= 2                  # the NaN sample dropped
    pose = replay.first('pose').pose
    assert (pose.position.x, pose.position.y, pose.position.z) == (1.0, 2.0, 0.5)
    assert replay.first('twist_body').twist.linear.x == 0.1
    nearby = replay.first('nearby')
    assert nearby.vessels[0].vessel_id == d.OTHER and nearby.vessels[0].is_debris
    assert nearby.vessels[0].vessel_name == 'Debris'
    assert replay.got.last('life').vessel_name == 'Rover'


def test_model(replay):
    assert replay.got.last('root').data == f'pylon_{d.VESSEL[:8]}_link_0000'
    assert replay.got.last('life').model_ready


def test_actuators(replay):
    joints = replay.first('joints')
    assert list(joints.name) == ['arm_hinge'] and list(joints.position) == [0.5]
    engine = replay.first('engine')
    assert engine.id == engine.name == 'engine_3001_0' and engine.header.frame_id == 'base_link'
    assert engine.runtime_generation == 3 and engine.observation_sequence in (900, 901)
    wheel = replay.first('wheel')
    assert (wheel.position.x, wheel.position.y, wheel.position.z) == (1.0, 0.8, -0.5)
    assert wheel.wheel_count == 1 and wheel.steering_sign == -1.0 and wheel.grounded
    assert replay.first('separation').mechanism == 'decoupler'


def test_docking_port(replay):
    dock = replay.first('dock')
    assert dock.state == 'Ready' and dock.camera_active and dock.part_flight_id == 4008


def test_sensors(replay):
    tracker = replay.first('tracker')
    assert tracker.valid and tracker.reason == 'tracking' and tracker.sequence in (12, 13)
    assert (tracker.orientation.z, tracker.orientation.w) == pytest.approx(
        (0.7071068, 0.7071068))
    assert tracker.header.frame_id == 'kerbol_inertial' and tracker.sensor_id == \
        'star_tracker_00c0ffee'
    scan = replay.first('scan')
    assert list(scan.ranges) == [5.0, math.inf, 7.5, math.inf]
    assert scan.angle_increment == pytest.approx(math.pi / 2)       # full circle: fov / N
    assert scan.header.frame_id == f'pylon_{d.VESSEL[:8]}_lidar_2d_1a2b3c4d'
    image = replay.first('image')
    assert (image.width, image.height, image.encoding) == (16, 16, 'rgb8')
    assert bytes(image.data)[:4] == bytes([0, 1, 2, 3])


def test_control(replay):
    authority = replay.first('authority')
    assert (authority.state, authority.controller_id, authority.lease_id, authority.priority,
            authority.reason) == (1, 'planner', 'lease-1', 10, 'lease_acquired')
    assert authority.sas_suppressed and authority.last_sequence == 7
    assert authority.lease_remaining_sec == 1.5 and authority.vessel_name == 'Rover'
    feedback = replay.first('feedback')
    assert feedback.header.frame_id == 'base_link' and feedback.saturated
    assert feedback.requested.force.x == 1000.0 and feedback.achieved.force.x == 750.0
    assert feedback.allocation_residual.force.x == 200.0
    assert feedback.reason == 'magnitude_limit,slew_rate_limit'


def test_flight_snapshot_health_and_separation_result(replay):
    # the first pass or the second (one frame later): a subscriber may miss a topic's first
    flight = replay.first('flight')
    assert (flight.vessel_id, flight.body_name) == (d.VESSEL, 'Kerbin')
    assert flight.observation_sequence in (900, 901)
    assert (flight.altitude_asl, flight.periapsis, flight.landed) == (75.2, -599000.0, True)
    assert (flight.gravitational_parameter, flight.orbital_velocity_body.x) == (3.5316e12, 174.5)
    assert flight.runtime_epoch == MOD_EPOCH and flight.header.frame_id == 'base_link'
    snapshot = replay.first('snapshot')
    assert snapshot.flight.observation_sequence in (900, 901)
    assert snapshot.header == snapshot.flight.header
    assert all(m.header == snapshot.header for m in (*snapshot.engines, *snapshot.separations))
    assert snapshot.engines and snapshot.engines[0].runtime_epoch == MOD_EPOCH
    sequences = [m.flight.observation_sequence for m in replay.got.messages('snapshot')]
    assert sequences == sorted(set(sequences))                    # never one twice
    power = replay.first('power')
    assert (power.electric_charge, power.electric_capacity) == (120.0, 150.0)
    assert power.net_charge_rate_estimate == 0.0          # the same charge 0.1 s later
    thermal = replay.first('thermal')
    assert (thermal.part_flight_id, thermal.part_persistent_id, thermal.part_name) == (
        4001, 3001, 'liquidEngine2')
    assert (thermal.temperature, thermal.skin_temperature, thermal.max_temperature) == (
        300.0, 295.0, 2000.0)
    result = replay.first('result')
    assert (result.operation_id, result.id, result.controller_id, result.sequence) == (
        'op-42', 'decoupler_3002_0', 'planner', 7)
    assert (result.completed, result.success, result.retained, result.reason) == (
        True, True, True, 'separated')
    assert (result.result_runtime_epoch, result.result_runtime_generation) == ('f' * 32, 4)
    assert result.resulting_vessel_ids == [d.VESSEL, d.OTHER]
    # repeats are republished (the second may still be on its way when the fixture is done)
    replay.got.until(lambda: len(replay.got.messages('result')) >= 2, 'the repeated result')
    assert len(replay.got.messages('result')) == 2
    simulator = replay.got.last('simulator')
    assert simulator.vessel_id == d.VESSEL and simulator.runtime_epoch == MOD_EPOCH


def test_diagnostics_count_drops_and_ignored_types(replay):
    values = replay.diagnostics
    dropped = {k: v for k, v in values.items() if k.startswith('dropped.')}
    assert dropped == {'dropped.non_finite': '1', 'dropped.bad_version': '1'}, dropped
    assert {case.split('/')[0] for case, _ in replay.cases} <= BRIDGED    # a topic for each
    # but a servo's actuator state: servos have pylon_motor_state
    assert int(values['ignored.pylon_actuator_state/motor']) == 2
    # the two manifests are handled (they remove what the vessel no longer has), not ignored
    for kind in ('pylon_actuator_manifest', 'pylon_docking_port_manifest'):
        assert int(values[f'received.{kind}']) == 2 and f'ignored.{kind}' not in values, kind
