"""The recording as rosbag2 writes it, without a ROS graph: layout, metadata, interruption.

Messages are serialised by rclpy (``serialize_message``, what a subscription with
``raw=True`` hands over) and read back with mcap-ros2-support's reader, which knows only
the definitions the file carries.
"""

import warnings

from geometry_msgs.msg import TransformStamped
from mcap.exceptions import EndOfFile
from mcap.reader import make_reader, NonSeekingReader
from pylon_interfaces.msg import ControlSetpoint
from pylon_tools import recorder
from pylon_tools.reading import plain, read_recording, RecordingError
import pytest
from rclpy.serialization import serialize_message
from sensor_msgs.msg import Imu
from std_msgs.msg import Header, String
from tf2_msgs.msg import TFMessage
import yaml

with warnings.catch_warnings():            # mcap_ros2.reader warns that it is deprecated
    warnings.simplefilter('ignore', DeprecationWarning)
    from mcap_ros2.reader import read_ros2_messages

IMU = '/ksp_vessel/imu/data_raw'
DESCRIPTION = '/ksp_vessel/robot_description'
TF = '/tf'
SENSOR = recorder.Offer(recorder.BEST_EFFORT, recorder.VOLATILE)
LATCHED = recorder.Offer(recorder.RELIABLE, recorder.TRANSIENT_LOCAL, lifespan_ns=10 ** 10)
STREAM = recorder.Offer(recorder.RELIABLE, recorder.VOLATILE)


def imu(k: int) -> Imu:
    msg = Imu()
    msg.header.stamp.sec, msg.header.stamp.nanosec = 1000 + k, 5_000_000 * k
    msg.header.frame_id = 'base_link'
    msg.angular_velocity.z = 0.01 * k
    msg.linear_acceleration.x = -0.5 * k
    return msg


def write_sample(path, messages=20, close=True) -> recorder.Recording:
    """Write IMU, a latched description and TF (no header) to ``path``."""
    from pylon_tools.definitions import definition
    rec = recorder.Recording(path, chunk_size=4096).open()
    rec.add_topic(IMU, 'sensor_msgs/msg/Imu', definition('sensor_msgs/msg/Imu'), [SENSOR],
                  'RIHS01_' + '1' * 64)
    rec.add_topic(DESCRIPTION, 'std_msgs/msg/String', definition('std_msgs/msg/String'),
                  [LATCHED])
    rec.add_topic(TF, 'tf2_msgs/msg/TFMessage', definition('tf2_msgs/msg/TFMessage'),
                  [STREAM, STREAM])
    rec.write(DESCRIPTION, serialize_message(String(data='<robot name="sat"/>')), 10, 10)
    for k in range(messages):
        log = 2_000_000_000 + k * 1_000_000
        data = serialize_message(imu(k))
        rec.write(IMU, data, log, recorder.header_stamp_ns(data) or log)
        rec.write(TF, serialize_message(TFMessage(transforms=[TransformStamped()])), log + 1,
                  log + 1)
    if close:
        rec.close()
    return rec


def test_offers_and_the_requested_qos_are_rosbag2s():
    assert yaml.safe_load(recorder.offers_yaml([LATCHED])) == [{
        'history': 'unknown', 'depth': 0, 'reliability': 'reliable',
        'durability': 'transient_local', 'deadline': {'sec': 9223372036, 'nsec': 854775807},
        'lifespan': {'sec': 10, 'nsec': 0}, 'liveliness': 'automatic',
        'liveliness_lease_duration': {'sec': 9223372036, 'nsec': 854775807},
        'avoid_ros_namespace_conventions': False}]
    assert recorder.requested([LATCHED, LATCHED]) == ('reliable', 'transient_local')
    assert recorder.requested([LATCHED, SENSOR]) == ('best_effort', 'volatile')
    assert recorder.requested([STREAM]) == ('reliable', 'volatile')
    assert recorder.compatible(('reliable', 'volatile'), LATCHED)
    assert not recorder.compatible(('reliable', 'volatile'), SENSOR)
    assert not recorder.compatible(('best_effort', 'transient_local'), STREAM)


def test_publish_time_is_the_header_stamp_of_types_that_start_with_one():
    from pylon_tools.definitions import definition
    assert recorder.header_stamp_ns(serialize_message(imu(3))) == 1003_015_000_000
    for name, stamped in (('sensor_msgs/msg/Imu', True), ('tf2_msgs/msg/TFMessage', False),
                          ('std_msgs/msg/String', False), ('std_msgs/msg/Header', False),
                          ('pylon_interfaces/msg/ControlSetpoint', True),
                          ('geometry_msgs/msg/Vector3', False)):
        assert recorder.starts_with_header(definition(name), name) is stamped, name
    header = Header(frame_id='x')
    header.stamp.sec = 7
    setpoint = ControlSetpoint(header=header, mode=2)
    assert recorder.header_stamp_ns(serialize_message(setpoint)) == 7_000_000_000


def test_the_layout_is_rosbag2s_and_mcap_ros2_reads_every_message_back(tmp_path):
    path = tmp_path / 'run.mcap'
    write_sample(path)
    with open(path, 'rb') as f:
        reader = make_reader(f)
        header, summary = reader.get_header(), reader.get_summary()
        metadata = list(reader.iter_metadata())
    assert header.profile == 'ros2' and header.library.startswith('pylon_recorder')
    schemas = {s.name: s for s in summary.schemas.values()}
    assert set(schemas) == {'sensor_msgs/msg/Imu', 'std_msgs/msg/String',
                            'tf2_msgs/msg/TFMessage'}
    assert all(s.encoding == 'ros2msg' for s in schemas.values())
    assert 'MSG: geometry_msgs/msg/Quaternion' in schemas['sensor_msgs/msg/Imu'].data.decode()
    channels = {c.topic: c for c in summary.channels.values()}
    assert all(c.message_encoding == 'cdr' for c in channels.values())
    assert yaml.safe_load(channels[IMU].metadata['offered_qos_profiles'])[0]['reliability'] \
        == 'best_effort'
    assert len(yaml.safe_load(channels[TF].metadata['offered_qos_profiles'])) == 2
    assert channels[IMU].metadata['topic_type_hash'] == 'RIHS01_' + '1' * 64
    assert summary.chunk_indexes and all(c.compression == 'lz4' for c in summary.chunk_indexes)
    # the bag metadata, as rosbag2 writes it: once at opening, once at closing
    assert [m.name for m in metadata] == ['rosbag2', 'rosbag2']
    first, final = (yaml.safe_load(m.metadata['serialized_metadata']) for m in metadata)
    assert first['message_count'] == 0 and first['topics_with_message_count'] == []
    assert first['starting_time']['nanoseconds_since_epoch'] == 2 ** 63 - 1
    stats = summary.statistics
    counts = {t['topic_metadata']['name']: t['message_count']
              for t in final['topics_with_message_count']}
    assert counts == {c.topic: stats.channel_message_counts.get(c.id, 0)
                      for c in channels.values()} == {IMU: 20, DESCRIPTION: 1, TF: 20}
    assert final['version'] == 9 and final['storage_identifier'] == 'mcap'
    assert final['message_count'] == stats.message_count == 41
    assert final['starting_time']['nanoseconds_since_epoch'] == stats.message_start_time
    assert final['duration']['nanoseconds'] == stats.message_end_time - stats.message_start_time
    assert final['relative_file_paths'] == ['run.mcap']
    assert final['files'][0]['message_count'] == 41
    # every message decodes to what was serialised; publish time from the header stamp
    read = list(read_ros2_messages(str(path), topics=[IMU]))
    assert [plain(m.ros_msg) for m in read] == [plain(imu(k)) for k in range(20)]
    assert [m.publish_time_ns for m in read] == [(1000 + k) * 10 ** 9 + 5_000_000 * k
                                                 for k in range(20)]
    (tf,) = {m.publish_time_ns - m.log_time_ns for m in read_ros2_messages(str(path),
                                                                             topics=[TF])}
    assert tf == 0                                   # no header: the receive time


def test_an_interrupted_recording_keeps_what_was_flushed(tmp_path):
    path = tmp_path / 'killed.mcap'
    rec = write_sample(path, messages=10, close=False)
    rec.flush()                                       # what the flush timer does
    for k in range(10, 15):                           # in the open chunk when killed
        rec.write(IMU, serialize_message(imu(k)), 3_000_000_000 + k, 0)
    copy = tmp_path / 'copy.mcap'                     # the file as SIGKILL leaves it
    copy.write_bytes(path.read_bytes())
    with open(copy, 'rb') as f:
        found = []
        with pytest.raises(EndOfFile):                # no data end, no summary, no footer
            for _, channel, _ in NonSeekingReader(f).iter_messages(log_time_order=False):
                found.append(channel.topic)
    assert found.count(IMU) == 10 and found.count(DESCRIPTION) == 1
    back = read_recording(copy, [IMU, DESCRIPTION])
    assert not back.complete
    assert [plain(m) for _, m in back.of(IMU)] == [plain(imu(k)) for k in range(10)]
    rec.close()
    assert read_recording(path, [IMU]).complete


def test_bad_outputs_are_refused(tmp_path):
    path = tmp_path / 'x.mcap'
    path.write_bytes(b'keep me')
    with pytest.raises(recorder.RecordingError, match='exists'):
        recorder.Recording(path).open()
    assert path.read_bytes() == b'keep me'
    with pytest.raises(recorder.RecordingError, match='one of lz4'):
        recorder.Recording(tmp_path / 'y.mcap', compression='gzip').open()
    assert recorder.output_path('runs/a', '20250101_000000').as_posix() == 'runs/a.mcap'
    assert recorder.output_path('', '20250101_000000').name == 'pylon_20250101_000000.mcap'
    assert recorder.hidden('/_action/status') and recorder.hidden('/a/_b')
    assert not recorder.hidden('/ksp_vessel/imu/data_raw')


def test_reading_refuses_what_is_not_a_recording(tmp_path):
    text = tmp_path / 'notes.mcap'
    text.write_text('not a recording')
    with pytest.raises(RecordingError, match='not an MCAP file'):
        read_recording(text, [IMU])
    with pytest.raises(RecordingError, match='No such file'):
        read_recording(tmp_path / 'missing.mcap', [IMU])
