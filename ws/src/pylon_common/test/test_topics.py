"""The topic contract: complete, consistent, and resolving names as ROS does."""

from pylon_common import mission, qos, topics
import pytest
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy


def test_every_row_names_a_real_type_a_profile_and_an_owner():
    nodes = {topics.UDP_BRIDGE, topics.SETPOINT_CONTROLLER, topics.ATTITUDE_ESTIMATOR,
             topics.ATTITUDE_EVALUATOR, topics.DESCRIPTION_RELAY, topics.NEARBY_MARKERS,
             topics.ROBOT_STATE_PUBLISHER, topics.SIM_MANAGER, topics.REFEREE,
             topics.RENDEZVOUS_CHASER, topics.VIEWER, topics.PYLON_RECORDER,
             topics.KART_INTERFACE, topics.KART_LOCALIZER, topics.TRAJECTORY_PUBLISHER,
             topics.PURE_PURSUIT, topics.RACE_VIEW}
    for key, row in topics.TOPICS.items():
        assert row.key == key
        assert topics.message_class(key).__name__ == row.type.rsplit('/', 1)[1]
        assert row.owner in nodes and set(row.users) <= nodes and row.owner not in row.users
        assert row.direction in (topics.PUBLISHES, topics.SUBSCRIBES, topics.SERVES)
        if row.direction == topics.SERVES:
            assert '/srv/' in row.type and row.profile is None
        else:
            assert '/msg/' in row.type and row.profile is qos.PROFILES[row.qos], key
        assert row.why


def test_one_latched_profile_for_every_latched_state():
    latched = {key for key, row in topics.TOPICS.items() if row.qos == 'LATCHED'}
    assert latched == {'status', 'lifecycle', 'robot_description', 'root_frame',
                       'control/authority/state', 'simulator/state',
                       'simulator/universal_time', 'admin/state', 'admin/mission',
                       'admin/ranking', 'admin/vehicle_state', 'awsim/state',
                       'kart/control_mode', 'kart/gear_status',
                       'stack/trajectory', 'stack/trajectory_path', 'stack/course_markers',
                       'race/course_markers'}
    depth_one_transient = [name for name, p in qos.PROFILES.items()
                           if p.durability == qos.TRANSIENT_LOCAL and p.depth == 1]
    assert sorted(depth_one_transient) == ['LATCHED', 'TF_STATIC']


def test_the_race_view_publishes_in_the_management_domain_for_viewers():
    assert set(topics.published_by(topics.RACE_VIEW)) == {'race/course_markers',
                                                          'race/kart_markers'}
    for key in topics.published_by(topics.RACE_VIEW):
        row = topics.topic(key)
        assert row.name.startswith('/race/') and row.namespace == topics.GLOBAL
        assert row.type == 'visualization_msgs/msg/MarkerArray'


def test_the_kart_serves_the_competitions_names_and_types():
    expected = {
        '/control/command/control_cmd': 'autoware_auto_control_msgs/msg/AckermannControlCommand',
        '/control/command/actuation_cmd': 'tier4_vehicle_msgs/msg/ActuationCommandStamped',
        '/control/command/gear_cmd': 'autoware_auto_vehicle_msgs/msg/GearCommand',
        '/control/control_mode_request': 'autoware_auto_vehicle_msgs/srv/ControlModeCommand',
        '/awsim/control_mode_request_topic': 'std_msgs/msg/Bool',
        '/vehicle/status/control_mode': 'autoware_auto_vehicle_msgs/msg/ControlModeReport',
        '/vehicle/status/gear_status': 'autoware_auto_vehicle_msgs/msg/GearReport',
        '/vehicle/status/velocity_status': 'autoware_auto_vehicle_msgs/msg/VelocityReport',
        '/vehicle/status/steering_status': 'autoware_auto_vehicle_msgs/msg/SteeringReport',
        '/vehicle/status/actuation_status': 'tier4_vehicle_msgs/msg/ActuationStatusStamped',
    }
    served = {topics.name(row.key): row.type for row in topics.KART_TOPICS
              if row.namespace == topics.GLOBAL}
    assert served == expected
    assert all(row.owner == topics.KART_INTERFACE for row in topics.KART_TOPICS)


def test_the_stack_uses_the_competitions_names_and_types():
    expected = {
        '/planning/scenario_planning/trajectory': (
            'autoware_auto_planning_msgs/msg/Trajectory', topics.TRAJECTORY_PUBLISHER),
        '/planning/scenario_planning/trajectory/path': ('nav_msgs/msg/Path',
                                                        topics.TRAJECTORY_PUBLISHER),
        '/planning/course_markers': ('visualization_msgs/msg/MarkerArray',
                                     topics.TRAJECTORY_PUBLISHER),
        '/localization/kinematic_state': ('nav_msgs/msg/Odometry', topics.KART_LOCALIZER),
        '/sensing/gnss/nav_sat_fix': ('sensor_msgs/msg/NavSatFix', topics.KART_LOCALIZER),
        '/sensing/imu/imu_raw': ('sensor_msgs/msg/Imu', topics.KART_LOCALIZER),
        '/set_initial_pose': ('std_srvs/srv/Trigger', topics.KART_LOCALIZER),
    }
    assert {topics.name(row.key): (row.type, row.owner) for row in topics.STACK_TOPICS} == \
        expected
    assert set(topics.subscribed_by(topics.KART_LOCALIZER)) == {
        'stack/gnss', 'stack/imu', 'kart/velocity_status'}
    assert set(topics.published_by(topics.KART_LOCALIZER)) == {
        'stack/kinematic_state', 'tf', topics.ROS_DIAGNOSTICS}
    assert set(topics.subscribed_by(topics.PURE_PURSUIT)) == {
        'stack/trajectory', 'stack/kinematic_state'}
    assert set(topics.published_by(topics.PURE_PURSUIT)) == {
        'kart/control_cmd', topics.ROS_DIAGNOSTICS}
    assert set(topics.published_by(topics.TRAJECTORY_PUBLISHER)) == {
        'stack/trajectory', 'stack/trajectory_path', 'stack/course_markers'}
    reader = qos.SENSOR_READER          # matches Reliable and Best Effort publishers
    assert (reader.reliability, reader.durability) == (qos.BEST_EFFORT, qos.VOLATILE)


def test_names_resolve_under_the_prefixes():
    assert topics.name('imu') == '/ksp_vessel/imu/data_raw'
    assert topics.name('imu', '/rover') == '/rover/imu/data_raw'
    assert topics.name('imu', 'ksp_vessel') == 'ksp_vessel/imu/data_raw'   # in the namespace
    assert topics.name('status') == '/pylon/status'
    assert topics.name('nearby_markers', bridge_prefix='/b') == '/b/nearby_markers'
    assert topics.name('tf', '/rover') == '/tf'
    assert topics.name('setpoint') == '~/setpoint'
    assert topics.name('odometry') == 'pylon_estimator/odometry'
    assert topics.name('star_tracker/state', id='st_1') == '/ksp_vessel/star_tracker/st_1/state'
    assert topics.topic('setpoint').default_name() == '/setpoint_controller/setpoint'
    assert topics.topic('odometry').default_name() == '/pylon_estimator/odometry'
    assert topics.topic('lidar_3d').default_name() == '/ksp_vessel/lidar_3d/<id>/points'
    with pytest.raises(KeyError, match='keys: status'):
        topics.topic('imu_raw')


def test_qos_profiles_as_rclpy_makes_them():
    imu = topics.qos('imu')
    assert (imu.reliability, imu.durability, imu.depth) == (
        ReliabilityPolicy.BEST_EFFORT, DurabilityPolicy.VOLATILE, 10)
    latched = topics.qos('lifecycle')
    assert (latched.reliability, latched.durability, latched.depth) == (
        ReliabilityPolicy.RELIABLE, DurabilityPolicy.TRANSIENT_LOCAL, 1)
    assert topics.qos('lifecycle', reader=True).depth == qos.READER_DEPTH
    assert topics.qos('tf', reader=True).depth == 100
    assert qos.LATCHED.title == 'Reliable / Transient Local / depth 1'


def test_the_seed_topics_and_qos():
    specified = {
        'imu': ('/ksp_vessel/imu/data_raw', qos.IMU),
        'lifecycle': ('/ksp_vessel/lifecycle', qos.LATCHED),
        'control/authority/state': ('/ksp_vessel/control/authority/state', qos.LATCHED),
        'robot_description': ('/ksp_vessel/robot_description', qos.LATCHED),
        'root_frame': ('/ksp_vessel/root_frame', qos.LATCHED),
        'ground_truth/pose': ('/ksp_vessel/ground_truth/pose', qos.GROUND_TRUTH),
        'star_tracker/state': ('/ksp_vessel/star_tracker/<id>/state', qos.STAR_TRACKER),
        'actuators/separation/state': ('/ksp_vessel/actuators/separation/state',
                                       qos.SEPARATION_STATE),
        'actuators/wheel/command': ('/ksp_vessel/actuators/wheel/command', qos.COMMAND),
        'status': ('/pylon/status', qos.LATCHED),
    }
    for key, (name, profile) in specified.items():
        row = topics.topic(key)
        assert (row.default_name(), row.profile) == (name, profile), key


def test_who_publishes_and_subscribes_what():
    assert set(topics.subscribed_by(topics.SETPOINT_CONTROLLER)) == {
        'lifecycle', 'imu', 'robot_description', 'control/authority/state',
        'control/wrench_feedback', 'setpoint', 'odometry'}
    assert set(topics.published_by(topics.SETPOINT_CONTROLLER)) == {
        'control/authority/command', 'control/wrench_command', 'controller/diagnostics',
        topics.ROS_DIAGNOSTICS}
    assert set(topics.published_by(topics.UDP_BRIDGE)) >= {'diagnostics', topics.ROS_DIAGNOSTICS}
    assert topics.name(topics.ROS_DIAGNOSTICS, 'ksp_vessel', 'pylon') == '/diagnostics'
    assert set(topics.subscribed_by(topics.ATTITUDE_ESTIMATOR)) == {
        'lifecycle', 'imu', 'star_tracker/state'}
    assert set(topics.published_by(topics.ATTITUDE_ESTIMATOR)) == {'odometry', 'tf',
                                                                    topics.ROS_DIAGNOSTICS}
    for node in (topics.ATTITUDE_EVALUATOR, topics.RENDEZVOUS_CHASER, topics.DESCRIPTION_RELAY,
                 topics.NEARBY_MARKERS, topics.VIEWER, topics.PYLON_RECORDER,
                 topics.SIM_MANAGER, topics.REFEREE):       # every node's status there
        assert topics.ROS_DIAGNOSTICS in topics.published_by(node), node


def test_resolved_names_follow_rcl_in_a_namespace():
    node = topics.SETPOINT_CONTROLLER
    assert topics.resolved('setpoint', node) == '/setpoint_controller/setpoint'
    assert topics.resolved('setpoint', node, '/vehicle_2') == \
        '/vehicle_2/setpoint_controller/setpoint'
    assert topics.resolved('imu', node, '/vehicle_2', 'ksp_vessel') == \
        '/vehicle_2/ksp_vessel/imu/data_raw'
    assert topics.resolved('imu', node, '/vehicle_2') == '/ksp_vessel/imu/data_raw'
    assert topics.resolved('odometry', node, '/vehicle_2') == '/vehicle_2/pylon_estimator/odometry'
    assert topics.resolved('tf', node, '/vehicle_2', 'ksp_vessel') == '/tf'


def test_the_mission_uses_the_interfaces_names_and_types():
    interface = {
        '/admin/awsim/state': ('std_msgs/msg/String', 'LATCHED'),
        '/admin/awsim/start': ('std_msgs/msg/Bool', 'COMMAND'),
        '/admin/awsim/reset': ('std_msgs/msg/Empty', 'COMMAND'),
        '/awsim/state': ('std_msgs/msg/String', 'LATCHED'),
        '/awsim/status': ('std_msgs/msg/Float32MultiArray', 'DEFAULT_STREAM'),
        '/awsim/cmd': ('std_msgs/msg/Float32MultiArray', 'SENSOR_READER'),
    }
    rows = {topics.name(row.key): (row.type, row.qos) for row in topics.MISSION_TOPICS}
    assert {name: rows[name] for name in interface} == interface
    # ours, beside the interface's, under its prefix: the description and the ranking
    assert {'/admin/awsim/mission', '/admin/awsim/ranking'} < set(rows)
    assert all(name.startswith(('/admin/awsim/', '/awsim/', '/d{id}/awsim/')) for name in rows)
    # vehicle k's in the management domain: one prefix, /d<k>
    assert topics.name('admin/vehicle_state', id='3') == '/d3/awsim/state'
    assert topics.name('admin/vehicle_status', id='3') == '/d3/awsim/status'
    assert mission.in_management(3, topics.name('awsim/state')) == '/d3/awsim/state'
    assert mission.ground_truth_topic(2, 'ground_truth/pose') == \
        '/d2/awsim/ground_truth/vehicle/pose'
    assert mission.ground_truth_topic(2, 'ground_truth/kinematic_state') == \
        '/d2/awsim/ground_truth/localization/kinematic_state'
    assert mission.ground_truth_topic(2, 'control/snapshot') == \
        '/d2/awsim/ground_truth/control/snapshot'
    assert mission.ground_truth_remappings(1) == (
        ('/d1/awsim/ground_truth/pose', '/d1/awsim/ground_truth/vehicle/pose'),
        ('/d1/awsim/ground_truth/kinematic_state',
         '/d1/awsim/ground_truth/localization/kinematic_state'))
    assert [name for name, _ in mission.ADMIN_STATES] == [
        'SelectMode', 'PlayStart', 'Ready', 'WaitStart', 'Start', 'Finish', 'LapComplete',
        'FinishAll', 'Terminate']
    assert [name for name, _ in mission.VEHICLE_STATES] == [
        'Spawned', 'Grounded', 'Ready', 'Start', 'Finish']
