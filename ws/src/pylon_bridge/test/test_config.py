"""Flags, ROS parameters, derived topic names, QoS table and overrides of the bridge."""

import os
from pathlib import Path
import re
import subprocess
import sys

from pylon_bridge import config, qos
from pylon_bridge.config import OPTIONS, parse_args, resolve
from pylon_common.parameters import topic_name_problem
import pytest
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy

# seed 000's launch arguments with their defaults
SEED_DEFAULTS = {
    '--topic-prefix': '/ksp_vessel',
    '--bridge-prefix': '/pylon',
    '--diagnostics-topic': '/pylon/diagnostics',
    '--body-wrench-command-topic': '/ksp_vessel/control/wrench_command',
    '--control-authority-command-topic': '/ksp_vessel/control/authority/command',
    '--control-authority-state-topic': '/ksp_vessel/control/authority/state',
    '--wrench-feedback-topic': '/ksp_vessel/control/wrench_feedback',
    '--vessel-lifecycle-topic': '/ksp_vessel/lifecycle',
    '--ground-truth-prefix': '/ksp_vessel/ground_truth',
    '--actuators-prefix': '/ksp_vessel/actuators',
    '--docking-ports-prefix': '/ksp_vessel/docking_ports',
    '--joint-states-topic': '/ksp_vessel/joint_states',
    '--robot-description-topic': '/ksp_vessel/robot_description',
    '--root-frame-topic': '/ksp_vessel/root_frame',
    '--vehicle-command-timeout-sec': 0.5,
    '--topic-timeout-sec': 3.0,
    '--host': '0.0.0.0',
    '--port': 49010,
    '--command-host': '127.0.0.1',
    '--command-port': 49011,
    '--max-datagram-bytes': 65535,
    '--disable-ground-truth': False,
    '--allow-remote-models': False,
}


def test_every_seed_flag_with_its_default():
    defaults = config.defaults()
    flags = {option.flag: option for option in OPTIONS}
    for flag, value in SEED_DEFAULTS.items():
        assert getattr(defaults, flags[flag].name) == value, flag


def test_help_lists_every_flag_and_needs_no_ros():
    env = dict(os.environ, RMW_IMPLEMENTATION='rmw_that_does_not_exist')
    result = subprocess.run(['udp_bridge', '--help'], capture_output=True, text=True,
                            timeout=30, env=env, check=False)
    assert result.returncode == 0, result.stderr
    for option in OPTIONS:
        assert option.flag in result.stdout
    assert '/ksp_vessel/lifecycle' in result.stdout and '49010' in result.stdout


@pytest.mark.parametrize('name, ok', [
    ('/ksp_vessel/imu', True), ('imu/data_raw', True), ('~/status', True), ('/a_1/b', True),
    ('{node}/x', True), ('', False), ('/', False), ('/a//b', False), ('/a/', False),
    ('/1a', False), ('/a b', False), ('a~', False), ('~a', False), ('/a-b', False)])
def test_topic_names_follow_rcl(name, ok):
    assert (topic_name_problem(name) == '') == ok


def test_a_bad_flag_exits_2_with_the_reason():
    result = subprocess.run(['udp_bridge', '--vehicle-command-timeout-sec', '20'],
                            capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 2
    assert 'vehicle-command-timeout-sec' in result.stderr and '0.05–10' in result.stderr


def test_topics_follow_their_prefix_unless_set():
    cfg, ros = parse_args(['--topic-prefix', '/rover', '--joint-states-topic', '/js',
                           '--ros-args', '-r', '__ns:=/x'])
    assert cfg.vessel_lifecycle_topic == '/rover/lifecycle'
    assert cfg.ground_truth_prefix == '/rover/ground_truth'
    assert cfg.topic('ground_truth/pose') == '/rover/ground_truth/pose'
    assert cfg.joint_states_topic == '/js'
    assert cfg.diagnostics_topic == '/pylon/diagnostics'
    assert ros == ['--ros-args', '-r', '__ns:=/x']
    cfg, _ = parse_args(['--bridge-prefix', '/b'])
    assert (cfg.status_topic, cfg.diagnostics_topic) == ('/b/status', '/b/diagnostics')


def test_ground_truth_domain_is_off_by_default_and_excludes_disable_ground_truth():
    assert config.defaults().ground_truth_domain == -1
    cfg = resolve({'ground_truth_domain': 0, 'control_snapshot_topic': '/v1/control/snapshot'},
                  {'ground_truth_prefix': '/v1/ground_truth'})
    assert cfg.ground_truth_domain == 0                       # the management domain
    assert cfg.topic('ground_truth/flight') == '/v1/ground_truth/flight'
    assert cfg.topic('control/snapshot') == '/v1/control/snapshot'
    both = 'disable_ground_truth .*--disable-ground-truth.* ground_truth_domain ' \
           r'\(--ground-truth-domain\) exclude each other'
    with pytest.raises(ValueError, match=both):
        resolve({'disable_ground_truth': True}, {'ground_truth_domain': 3})
    with pytest.raises(ValueError, match=both):
        resolve({}, {'disable_ground_truth': True, 'ground_truth_domain': 0})
    resolve({'disable_ground_truth': True, 'ground_truth_domain': -1}, {})


def test_the_bridge_refuses_ground_truth_in_no_domain_or_its_own(ros_domain_id, free_udp_port):
    for args, words in (
            (['--disable-ground-truth', '--ground-truth-domain', '3'],
             ('--disable-ground-truth', '--ground-truth-domain', 'exclude each other')),
            (['--ground-truth-domain', str(ros_domain_id)],
             (f'ground_truth_domain {ros_domain_id} is the ROS domain of the bridge itself',))):
        result = subprocess.run(['udp_bridge', '--port', str(free_udp_port()), *args],
                                capture_output=True, text=True, timeout=30, check=False)
        assert result.returncode == 2, result.stderr
        for word in words:
            assert word in result.stderr, (word, result.stderr)


def test_flag_beats_parameter_beats_derived_default():
    cfg = resolve({'port': 50000}, {'port': 40000, 'topic_prefix': '/p', 'imu_topic': ''})
    assert cfg.port == 50000
    assert cfg.imu_topic == '/p/imu/data_raw'
    cfg = resolve({}, {'port': 40000, 'imu_topic': '/imu'})
    assert (cfg.port, cfg.imu_topic) == (40000, '/imu')


@pytest.mark.parametrize('explicit, message', [
    ({'port': 0}, re.escape('option port (--port): must be 1–65535')),
    ({'topic_timeout_sec': float('nan')}, 'topic_timeout_sec'),
    ({'imu_topic': 'bad topic'}, 'not a valid ROS topic name'),
    ({'host': ''}, 'must not be empty'),
    ({'port': '49010'}, 'expected a integer'),
    ({'ground_truth_domain': 233}, re.escape('(--ground-truth-domain): must be -1–232')),
    ({'imu_frame_id': 'imu link'}, re.escape("(--imu-frame-id): 'imu link' is not a frame")),
    ({'imu_frame_id': '/imu_link'}, re.escape("(--imu-frame-id): '/imu_link' is not a frame")),
])
def test_bad_values_are_named(explicit, message):
    with pytest.raises(ValueError, match=message):
        resolve(explicit, {})


def test_parameters_are_declared_read_only_and_read(ros_node):
    from rclpy.node import Node
    node = Node('bridge_parameters', context=ros_node.context, parameter_overrides=[
        Parameter('topic_prefix', value='/rover'),
        Parameter('topic_timeout_sec', value=5.0),
        Parameter('qos_overrides.imu.reliability', value='reliable'),
        Parameter('qos_overrides.joint_states.depth', value=50)])
    try:
        given = config.declare_parameters(node)
        assert given == {'topic_prefix': '/rover', 'topic_timeout_sec': 5.0}
        overrides = qos.declare_qos_parameters(node)
        assert overrides == {'imu': {'reliability': 'reliable'}, 'joint_states': {'depth': 50}}
        assert qos.qos_for('imu', overrides).reliability == ReliabilityPolicy.RELIABLE
        assert qos.qos_for('joint_states', overrides).depth == 50
        descriptor = node.describe_parameter('port')
        assert descriptor.read_only and descriptor.integer_range[0].to_value == 65535
        assert resolve({}, given).imu_topic == '/rover/imu/data_raw'
    finally:
        node.destroy_node()


def test_tf_durability_cannot_be_overridden():
    with pytest.raises(ValueError, match='cannot be overridden'):
        qos.qos_for('tf_static', {'tf_static': {'durability': 'volatile'}})
    with pytest.raises(ValueError, match='best_effort'):
        qos.qos_for('imu', {'imu': {'reliability': 'sometimes'}})


def test_seed_qos():
    assert qos.qos_for('imu').reliability == ReliabilityPolicy.BEST_EFFORT
    assert qos.qos_for('imu').depth == 10
    for key in ('status', 'lifecycle', 'robot_description', 'root_frame',
                'control/authority/state', 'tf_static'):
        latched = qos.qos_for(key)
        assert latched.reliability == ReliabilityPolicy.RELIABLE, key
        assert latched.durability == DurabilityPolicy.TRANSIENT_LOCAL, key
    for key in ('ground_truth/pose', 'ground_truth/twist', 'ground_truth/twist_body',
                'ground_truth/acceleration', 'ground_truth/kinematic_state'):
        assert qos.qos_for(key).reliability == ReliabilityPolicy.BEST_EFFORT, key
    tracker = qos.qos_for('star_tracker/state')
    assert (tracker.reliability, tracker.durability, tracker.depth) == (
        ReliabilityPolicy.RELIABLE, DurabilityPolicy.VOLATILE, 10)


def test_readme_tables_are_current():
    root = Path(__file__).resolve().parents[4]
    result = subprocess.run([sys.executable, str(root / 'ci' / 'docs.py')], capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr


def test_node_name_frame_prefix_model_tf_rate_and_clock_flags():
    explicit, _ = config.parse_cli(['--node-name', 'Rover Bridge', '--frame-prefix', 'rv',
                                    '--model-tf-rate', '20', '--publish-clock'])
    assert config.node_name(explicit) == 'rover_bridge'
    assert config.node_name({}) == 'udp_bridge'
    options = config.resolve(explicit, {})
    assert (options.frame_prefix, options.model_tf_rate, options.publish_clock) == (
        'rv', 20.0, True)
    assert config.defaults().publish_clock is False
    with pytest.raises(SystemExit):
        config.parse_cli(['--model-tf-rate', '100'])            # 0.5-60 Hz


def test_imu_frame_id_is_base_link_unless_set():
    assert config.defaults().imu_frame_id == ''
    explicit, _ = config.parse_cli(['--imu-frame-id', 'imu_link'])
    assert config.resolve(explicit, {}).imu_frame_id == 'imu_link'
    assert config.resolve({}, {'imu_frame_id': 'imu_link'}).imu_frame_id == 'imu_link'
