"""pylon_recorder on a real graph: pylon_sim, udp_bridge, the estimator and the controller.

The recording read back equals what a live subscriber received, message for message
(Best Effort IMU, Reliable estimate and star tracker, the latched robot_description); its
bag metadata is rosbag2's; SIGINT leaves a complete file, SIGKILL one readable up to its
last written chunk; a type without an installed definition is skipped, the rest recorded;
pylon_plot draws the recording. Waits are conditions on message stamps (KSP time).

One stack serves the module (the ``stack`` fixture), the game at twice real time: the
controller renews its lease every quarter of the lease's length of wall time, which stays
well inside the lease at that rate. One test node serves the tests on that stack too
(``node``: what a test subscribed or advertised on it ends with the test).
"""

import os
from pathlib import Path
import re
import signal
import subprocess
import warnings

from mcap.reader import make_reader
from nav_msgs.msg import Odometry
import numpy as np
from pylon_interfaces.msg import StarTrackerState
from pylon_testing.recorder import stamp_of, TopicRecorder
from pylon_testing.scenarios import write_scenario
from pylon_testing.stack import start_stack
from pylon_testing.wait import throttled
from pylon_tools import plot
from pylon_tools.reading import plain, read_recording
import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Imu
from std_msgs.msg import String
import yaml

with warnings.catch_warnings():            # mcap_ros2.reader warns that it is deprecated
    warnings.simplefilter('ignore', DeprecationWarning)
    from mcap_ros2.reader import read_ros2_messages

pytestmark = pytest.mark.integration

IMU = '/ksp_vessel/imu/data_raw'
ODOMETRY = '/pylon_estimator/odometry'
TRACKER = '/ksp_vessel/star_tracker/star_tracker_main/state'
DESCRIPTION = '/ksp_vessel/robot_description'
LIFECYCLE = '/ksp_vessel/lifecycle'
DEEP = 1000                                 # the live side never drops for want of a queue
BEST_EFFORT = QoSProfile(depth=DEEP, reliability=ReliabilityPolicy.BEST_EFFORT)
RELIABLE = QoSProfile(depth=DEEP, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
RECORDED_SEC = 3.0                          # KSP time the recorders record before they end
RATE = 2                                    # the game's speed: the controller's lease holds


@pytest.fixture(scope='module')
def stack(module_ros_process, free_udp_port, tmp_path_factory):
    """Start the simulator (orbit, no LiDAR or camera), the bridge, estimator, controller."""
    scenario = write_scenario(tmp_path_factory.mktemp('scenario'), 'orbit')
    start_stack(module_ros_process, free_udp_port, scenario, sim_args=('--rate', str(RATE)))
    module_ros_process(['attitude_estimator'], name='estimator')
    module_ros_process(['setpoint_controller'], name='controller')


@pytest.fixture
def node(module_ros_node):
    """Yield the module's test node; the endpoints a test makes on it end with the test."""
    subscriptions = set(module_ros_node.subscriptions)
    publishers = set(module_ros_node.publishers)
    yield module_ros_node
    for subscription in set(module_ros_node.subscriptions) - subscriptions:
        module_ros_node.destroy_subscription(subscription)
    for publisher in set(module_ros_node.publishers) - publishers:
        module_ros_node.destroy_publisher(publisher)


def live(ros_node) -> TopicRecorder:
    """Subscribe as a user would, with deep queues; return once the IMU flows."""
    rec = TopicRecorder(ros_node)
    rec.add('imu', IMU, Imu, BEST_EFFORT)
    rec.add('odometry', ODOMETRY, Odometry, RELIABLE)
    rec.add('tracker', TRACKER, StarTrackerState, RELIABLE)
    rec.add('description', DESCRIPTION, String, LATCHED)
    rec.wait_count('odometry', 1)
    rec.wait_count('imu', 1)
    return rec


def recorder_name(path: Path) -> str:
    """Return the node name of the recorder writing ``path``.

    A name per recording: a recorder killed by an earlier test stays in the shared test
    node's graph until its DDS lease ends, and must not pass for the next one.
    """
    return f'pylon_recorder_{path.stem}'


def start_recorder(ros_process, path: Path, *args: str, env=None):
    """Start pylon_recorder writing to ``path``."""
    return ros_process(['pylon_recorder', '--ros-args', '-r', f'__node:={recorder_name(path)}',
                        '-p', f'output:={path}', *(x for arg in args for x in ('-p', arg))],
                       name='recorder', env=env)


def subscribed(recorder, topic: str) -> None:
    """Wait until the recorder logs that it subscribed to ``topic``."""
    recorder.wait_for_output(rf'{re.escape(topic)}: subscribed as ', timeout=60.0)


def record(ros_process, ros_node, path: Path, *args: str, env=None,
           topics=(IMU, ODOMETRY, TRACKER)):
    """Start a live subscriber and a recorder; return both once RECORDED_SEC were recorded.

    Recorded: the recorder said it subscribed to ``topics`` (its own log), the file holds a
    message of each (the subscriptions matched: not this node's view of the graph, which a
    busy machine can leave behind), then the live IMU reached RECORDED_SEC (KSP time) past
    the newest IMU sample in the file then: the recorder was subscribed all that while.
    The file is read at most every ``LOOK_PERIOD_SEC`` (``throttled``): the live side keeps up.
    """
    rec = live(ros_node)
    recorder = start_recorder(ros_process, path, *args, env=env)
    for topic in topics:
        subscribed(recorder, topic)
    newest_imu: list[float] = []
    counts: dict[str, int] = {}              # messages per topic in the file at the last look

    def each_in_file() -> bool:
        recorder.check()
        found = read_recording(path, topics)
        counts.update({topic: len(found.of(topic)) for topic in topics})
        if not all(counts.values()):
            return False
        newest_imu.append(stamp_of(found.of(IMU)[-1][1]))
        return True
    try:
        rec.until(throttled(each_in_file), f'a message of each of {", ".join(topics)} in the file')
    except TimeoutError as exc:
        raise TimeoutError(f'{exc}; in the file at the last look: {counts}') from None
    rec.until(lambda: stamp_of(rec.last('imu')) >= newest_imu[0] + RECORDED_SEC,
              f'{RECORDED_SEC} s of IMU recorded')
    return rec, recorder


def recorded(path: Path, topic: str) -> list:
    """Return the decoded messages of ``topic`` in the (complete) recording."""
    return list(read_ros2_messages(str(path), topics=[topic]))


def same_window(live_messages: list, recorded_messages: list) -> tuple[list, list]:
    """Return both as plain data over the recorded stamps' span."""
    first, last = (stamp_of(recorded_messages[i].ros_msg) for i in (0, -1))
    mine = [plain(m) for m in live_messages if first <= stamp_of(m) <= last]
    return mine, [plain(m.ros_msg) for m in recorded_messages]


def by_stamp(messages: list[dict]) -> dict:
    """Return plain messages keyed by their header stamp."""
    return {(m['header']['stamp']['sec'], m['header']['stamp']['nanosec']): m for m in messages}


def test_a_recording_holds_what_a_live_subscriber_received(stack, ros_process, node, tmp_path):
    path = tmp_path / 'run.mcap'
    rec, recorder = record(ros_process, node, path, 'flush_period_sec:=0.5')
    assert recorder.stop() == 0                        # SIGINT: the file is finished
    assert 'wrote ' in recorder.log()
    imu = recorded(path, IMU)
    rec.until(lambda: stamp_of(rec.last('imu')) > stamp_of(imu[-1].ros_msg) and
              stamp_of(rec.last('odometry')) > stamp_of(recorded(path, ODOMETRY)[-1].ros_msg),
              'the live side past the end of the recording')
    # message for message on the Reliable topics; Best Effort IMU may lose a sample on
    # either side of a busy machine: every sample both hold is the same, and few are missing
    for name, topic in (('odometry', ODOMETRY), ('tracker', TRACKER)):
        mine, theirs = same_window(rec.got[name], recorded(path, topic))
        assert len(theirs) > 5 and mine == theirs, name
    mine, theirs = (by_stamp(x) for x in same_window(rec.got['imu'], imu))
    both = mine.keys() & theirs.keys()
    assert [mine[t] for t in sorted(both)] == [theirs[t] for t in sorted(both)]
    assert len(both) > 0.95 * len(mine.keys() | theirs.keys()) > 5, (len(mine), len(theirs))
    (description,) = recorded(path, DESCRIPTION)
    assert description.ros_msg.data == rec.last('description').data != ''
    assert [m.publish_time_ns for m in imu] == [
        m.ros_msg.header.stamp.sec * 10 ** 9 + m.ros_msg.header.stamp.nanosec for m in imu]
    check_rosbag2_metadata(path)
    check_plots(path, tmp_path / 'plots')


def check_rosbag2_metadata(path: Path) -> None:
    """Check that the last ``rosbag2`` record describes the file as rosbag2 would."""
    with open(path, 'rb') as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        final = [m for m in reader.iter_metadata() if m.name == 'rosbag2'][-1]
        counted = {}
        for _, channel, _ in reader.iter_messages():
            counted[channel.topic] = counted.get(channel.topic, 0) + 1
    bag = yaml.safe_load(final.metadata['serialized_metadata'])
    channels = {c.topic: c for c in summary.channels.values()}
    topics = {t['topic_metadata']['name']: t for t in bag['topics_with_message_count']}
    assert set(topics) == set(channels) >= {IMU, ODOMETRY, TRACKER, DESCRIPTION, LIFECYCLE}
    for name, entry in topics.items():
        meta, channel = entry['topic_metadata'], channels[name]
        assert meta['type'] == summary.schemas[channel.schema_id].name
        assert meta['serialization_format'] == 'cdr'
        assert meta['offered_qos_profiles'] == yaml.safe_load(
            channel.metadata['offered_qos_profiles'])
        assert meta['type_description_hash'] == channel.metadata['topic_type_hash']
        assert entry['message_count'] == counted.get(name, 0) == \
            summary.statistics.channel_message_counts.get(channel.id, 0)
    offered = {name: topics[name]['topic_metadata']['offered_qos_profiles'][0]
               for name in (IMU, DESCRIPTION)}
    assert (offered[IMU]['reliability'], offered[IMU]['durability']) == \
        ('best_effort', 'volatile')
    assert (offered[DESCRIPTION]['reliability'], offered[DESCRIPTION]['durability']) == \
        ('reliable', 'transient_local')
    assert bag['message_count'] == sum(counted.values()) == summary.statistics.message_count
    assert bag['topics_with_message_count'] and bag['version'] == 9


def check_plots(path: Path, out: Path) -> None:
    """pylon_plot draws what the recording holds (no setpoint was sent: no attitude figure)."""
    result = subprocess.run(['pylon_plot', str(path), '-o', str(out)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    for name in ('rates', 'wrench', 'estimator'):
        for suffix in ('png', 'svg'):
            assert (out / f'{name}.{suffix}').stat().st_size > 1000, (name, suffix)
    assert not (out / 'attitude.png').exists()
    names = plot.topic_names()
    drawn = plot.make_figures(read_recording(path, names.values()), out / 'again',
                              ['rates', 'estimator'], ['png'], names)
    imu = [m.ros_msg.angular_velocity for m in recorded(path, IMU)]
    rates = drawn['rates'].series
    np.testing.assert_allclose(rates.rates_deg_s,
                               np.degrees([[w.x, w.y, w.z] for w in imu]), rtol=1e-12)
    assert rates.limit_deg_s == 1.5                # the controller's, from its diagnostics
    assert drawn['estimator'].series.t.size > 30
    assert float(abs(drawn['estimator'].series.angle_arcsec).max()) < 120.0


def test_sigkill_leaves_a_file_readable_up_to_its_last_chunk(stack, ros_process, node,
                                                             tmp_path):
    path = tmp_path / 'killed.mcap'
    rec, recorder = record(ros_process, node, path, 'flush_period_sec:=0.5')

    def flushed() -> list:
        return [m for _, m in read_recording(path, [IMU]).of(IMU)]
    # the recorder flushes its chunk every 0.5 s: wait (a condition, not a time) until the
    # file holds RECORDED_SEC - 1 of IMU, then kill it; what was flushed must stay readable
    rec.until(lambda: len(imu := flushed()) > 1 and
              stamp_of(imu[-1]) - stamp_of(imu[0]) >= RECORDED_SEC - 1.0,
              'the recorder flushing its first chunks')
    before_kill = stamp_of(flushed()[-1])
    os.killpg(recorder.pid, signal.SIGKILL)
    assert recorder.popen.wait(timeout=10) == -signal.SIGKILL
    back = read_recording(path, [IMU, DESCRIPTION])
    assert not back.complete                           # no summary, no final metadata
    imu = [m for _, m in back.of(IMU)]
    assert stamp_of(imu[-1]) - stamp_of(imu[0]) >= RECORDED_SEC - 1.0
    # lost: at most what was not flushed yet, never what was
    assert stamp_of(imu[-1]) >= before_kill
    assert len(back.of(DESCRIPTION)) == 1
    result = subprocess.run(['pylon_plot', str(path), '-o', str(tmp_path / 'plots'),
                             '--figures', 'rates'], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and 'has no summary' in result.stderr, result.stderr


def test_a_type_without_an_installed_definition_is_skipped(stack, ros_process, node,
                                                          tmp_path):
    prefixes = os.environ['AMENT_PREFIX_PATH'].split(os.pathsep)
    kept = [p for p in prefixes if Path(p).name != 'pylon_interfaces']
    assert len(kept) == len(prefixes) - 1
    path = tmp_path / 'partial.mcap'
    _, recorder = record(ros_process, node, path, topics=(IMU, ODOMETRY),
                         env={'AMENT_PREFIX_PATH': os.pathsep.join(kept)})
    recorder.wait_for_output(f'not recording {LIFECYCLE}: package .pylon_interfaces. is not '
                             'installed', 30.0)
    assert recorder.stop() == 0
    log = recorder.log()
    assert log.count(f'not recording {LIFECYCLE}:') == 1          # once, not every poll
    with open(path, 'rb') as f:
        summary = make_reader(f).get_summary()
    types = {s.name for s in summary.schemas.values()}
    assert 'sensor_msgs/msg/Imu' in types and 'nav_msgs/msg/Odometry' in types
    assert not any(t.startswith('pylon_interfaces/') for t in types)
    assert len(recorded(path, IMU)) > 30


def test_a_publisher_the_subscription_cannot_match_makes_it_subscribe_again(
        ros_process, ros_node, tmp_path):
    """A topic that appears later is found; a Volatile publisher joining a latched one."""
    topic, path = '/pylon_test/chatter', tmp_path / 'chatter.mcap'
    recorder = start_recorder(ros_process, path, f'topics:={topic}',
                              'discovery_period_sec:=0.2', 'flush_period_sec:=0.2')
    ros_process(['latched_publisher', topic, 'std_msgs/msg/String', '{"data": "latched"}'],
                name='latched')
    rec = TopicRecorder(ros_node)

    def in_file(text: str):
        def found() -> bool:
            recorder.check()
            return any(m.data == text for _, m in read_recording(path, [topic]).of(topic))
        return found
    subscribed(recorder, topic)                           # the file exists from its start
    rec.until(in_file('latched'), 'the latched message in the file')
    stream = ros_node.create_publisher(String, topic, QoSProfile(
        depth=10, reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.VOLATILE))
    rec.until(lambda: stream.get_subscription_count() >= 1,
              'the recorder subscribed again, Volatile')
    for k in range(5):
        stream.publish(String(data=f'stream {k}'))
    rec.until(in_file('stream 4'), 'the stream in the file')
    assert recorder.stop() == 0
    assert f'{topic}: subscribing again as reliable/volatile for 2 publishers' in recorder.log()
    data = [m.ros_msg.data for m in recorded(path, topic)]
    assert data == ['latched'] + [f'stream {k}' for k in range(5)]      # no replay
