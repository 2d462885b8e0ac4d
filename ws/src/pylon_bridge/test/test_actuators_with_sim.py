"""Typed actuators end to end: each commanded through udp_bridge, its state observed.

The orbit tests share one simulator and bridge (``stack``: the lean orbit scenario, at real
time: the test plays a controller whose overrides and leases run on the simulator's clock);
each starts from the scenario's start in a runtime session of its own (``session``) under a
lease id of its own. The servo joint extension (surface, with its options) starts its
stack in a ROS domain of its own (``own_stack``). The servo and wheel commands on the
surface are in test_rover_with_sim, the decoupler firing in test_separation_with_sim, on
those modules' shared stacks.
"""

import itertools
import xml.etree.ElementTree as ET  # noqa: N817

from pylon_interfaces.msg import (
    DockingPortCommand,
    DockingPortState,
    EngineCommand,
    EngineState,
    MotorCommand,
    MotorState,
    RcsCommand,
    RcsState,
    SeparationCommand,
    SeparationState,
    WheelCommand,
    WheelState,
)
from pylon_protocol import rotations
from pylon_testing.pilot import (
    A,
    acquire,
    COMMAND,
    LATCHED,
    Pilot,
    SAT,
    send_authority,
    STREAM,
    TARGET,
)
from pylon_testing.scenarios import write_scenario
import pytest
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

pytestmark = pytest.mark.integration

ROVER = '7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a29'
ENGINE, RCS, DOCK = 'engine_1100004_0', 'rcs_1100005_0', 'docking_port_1100010_0'
LEASES = itertools.count(1)


@pytest.fixture(scope='module')
def stack(module_sim_stack, tmp_path_factory):
    """Return the module's simulator and bridge: the orbit scenario without LiDAR and camera."""
    return module_sim_stack(write_scenario(tmp_path_factory.mktemp('scenario'), 'orbit'))


@pytest.fixture
def ros_node(shared_ros_node):
    """Return the module's test node (``shared_ros_node``), in the shared stack's domain."""
    return shared_ros_node


class Actuators(Pilot):
    """A pilot with the typed actuator topics, commanding under a lease id of its own."""

    def __init__(self, node):
        super().__init__(node)
        self.lease = f'lease-{next(LEASES)}'
        self.publishers = {}
        for name, kind, topic, state, qos in (
                ('engine', EngineCommand, 'propulsion', EngineState, STREAM),
                ('rcs', RcsCommand, 'rcs', RcsState, STREAM),
                ('wheel', WheelCommand, 'wheel', WheelState, STREAM),
                ('servo', MotorCommand, 'servo', MotorState, STREAM),
                ('separation', SeparationCommand, 'separation', SeparationState, LATCHED)):
            self.add(name, f'/ksp_vessel/actuators/{topic}/state', state, qos)
            self.publishers[name] = node.create_publisher(
                kind, f'/ksp_vessel/actuators/{topic}/command', COMMAND)
        self.add('joints', '/ksp_vessel/joint_states', JointState, STREAM)

    def send(self, name, msg, vessel=SAT):
        """Publish a typed command under the test's lease; return the mark before it."""
        publisher = self.publishers[name]
        self.until(lambda: publisher.get_subscription_count() > 0, f'{name} command subscriber')
        msg.vessel_id, msg.controller_id, msg.lease_id = vessel, 'ctl', self.lease
        msg.sequence = self.next_sequence('ctl', self.lease)
        since = self.mark()
        publisher.publish(msg)
        return since

    def acquire(self, **kwargs):
        """Acquire the lease as ``ctl`` (``pilot.acquire``); return the answer and command."""
        return acquire(self, lease=self.lease, **kwargs)


# -- the servo joint extension, with a stack of its own --------------------------------

def test_servo_joint_extension_moves_the_proxy_on_tf(own_stack, lean_scenario):
    _, node = own_stack(lean_scenario('surface'), sim_args=['--servo-joints'],
                        bridge_args=['--allow-servo-joints'])
    pilot = Actuators(node)
    pilot.add('model', '/ksp_vessel/robot_description', String, LATCHED)
    pilot.add('tf', '/tf', TFMessage, QoSProfile(depth=200,
                                                 reliability=ReliabilityPolicy.RELIABLE))
    pilot.ready()
    urdf = pilot.wait_for('model', lambda m: m.data, what='the proxy model').data
    joint = ET.fromstring(urdf).find("joint[@name='mast_hinge']")
    assert joint is not None and joint.get('type') == 'revolute'
    child = joint.find('child').get('link')
    axis = [float(v) for v in joint.find('axis').get('xyz').split()]
    assert pilot.acquire(vessel=ROVER, duration=5.0)[0].reason == 'lease_acquired'
    since = pilot.send('servo', MotorCommand(id='mast_hinge', enabled=True,
                                             mode=MotorCommand.MODE_POSITION, position=0.3,
                                             timeout_sec=5.0), vessel=ROVER)
    pilot.wait_for('joints', lambda m: m.position[0] == pytest.approx(0.3, abs=1e-3),
                   since, 'the joint at 0.3 rad')

    rpy = [float(v) for v in joint.find('origin').get('rpy').split()]
    expected = rotations.multiply(rotations.from_rpy(*rpy), rotations.from_axis_angle(axis, 0.3))

    def hinge():
        for msg in reversed(pilot.got['tf']):
            for t in msg.transforms:
                if t.child_frame_id == child:
                    return t
        return None

    def turned():
        t = hinge()
        if t is None:
            return False
        q = t.transform.rotation
        return abs(abs(q.x * expected[0] + q.y * expected[1] + q.z * expected[2]
                       + q.w * expected[3]) - 1.0) < 1e-4
    pilot.until(turned, 'the hinge link turned by 0.3 rad on /tf')
    assert hinge().header.frame_id == joint.find('parent').get('link')


# -- the orbit tests, on the shared stack --------------------------------------------

def test_engine_thrust_and_tvc_then_timeout(stack, session, ros_node):
    pilot = Actuators(ros_node)
    pilot.ready()
    assert pilot.acquire(duration=10.0)[0].reason == 'lease_acquired'
    # an override long enough that it is still in force when the test reads the simulator
    # on a busy machine; its end is waited for as a condition
    since = pilot.send('engine', EngineCommand(id=ENGINE, enabled=True, target_thrust=30000.0,
                                               has_gimbal_command=True, gimbal_pitch=0.5,
                                               timeout_sec=5.0))
    state = pilot.wait_for('engine', lambda m: m.id == ENGINE and m.command_active, since,
                           'the engine override')
    assert (state.throttle, state.thrust, state.max_thrust) == (0.5, 30000.0, 60000.0)
    assert state.gimbal_available and state.gimbal_command_active and state.gimbal_pitch == 0.5
    assert state.name == ENGINE and state.header.frame_id == 'base_link'
    control = stack.control()
    force, torque = control['applied_force'], control['applied_torque']
    assert force[0] == pytest.approx(30000.0, rel=0.01)       # along +X, the engine's axis
    assert abs(torque[1]) > 100.0                              # TVC pitches the vessel
    assert torque[0] == pytest.approx(0.0, abs=1e-6)           # no roll from one engine
    # after its timeout the override ends: stock throttle (0) and a neutral gimbal
    ended = pilot.wait_for('engine', lambda m: m.id == ENGINE and not m.command_active,
                           pilot.after('engine', state), 'the engine back to stock')
    assert ended.thrust == 0.0 and not ended.gimbal_command_active
    assert stack.control()['applied_force'] == [0.0, 0.0, 0.0]


def test_rcs_module_limit_and_restore(session, ros_node):
    pilot = Actuators(ros_node)
    pilot.ready()
    pilot.acquire(duration=5.0)
    # N per module (the RV-105: 4 nozzles of 1 kN): half the module is 500 N per nozzle in
    # the game, and the state says 2 kN again; sent per nozzle, 2 kN would limit nothing
    since = pilot.send('rcs', RcsCommand(id=RCS, enabled=True, thrust_limit=2000.0,
                                         timeout_sec=3.0))
    limited = pilot.wait_for('rcs', lambda m: m.id == RCS and m.command_active, since,
                             'the RCS override')
    assert limited.thrust_limit == 2000.0 and limited.enabled and limited.max_thrust == 4000.0
    restored = pilot.wait_for('rcs', lambda m: m.id == RCS and not m.command_active,
                              pilot.after('rcs', limited), 'the RCS back to stock')
    assert restored.thrust_limit == 4000.0


def test_docking_port_camera_selection(session, ros_node):
    pilot = Actuators(ros_node)
    pilot.ready()
    pilot.acquire(duration=5.0)
    pilot.add('dock', f'/ksp_vessel/docking_ports/{DOCK}/state', DockingPortState, COMMAND)
    state = pilot.wait_for('dock', what='the docking port state')
    assert state.name == DOCK and not state.camera_active
    publisher = ros_node.create_publisher(DockingPortCommand,
                                          f'/ksp_vessel/docking_ports/{DOCK}/command', COMMAND)
    pilot.until(lambda: publisher.get_subscription_count() > 0, 'docking command subscriber')
    since = pilot.mark()
    publisher.publish(DockingPortCommand(action=DockingPortCommand.ACTION_SELECT_CAMERA,
                                         vessel_id=SAT, controller_id='ctl',
                                         lease_id=pilot.lease,
                                         sequence=pilot.next_sequence('ctl', pilot.lease)))
    pilot.wait_for('dock', lambda m: m.camera_active, since, 'camera selected')
    image_topic = f'/ksp_vessel/docking_ports/{DOCK}/camera/image_raw'
    pilot.add('image', image_topic, Image, qos_profile_sensor_data)
    image = pilot.wait_for('image', what='a docking-port camera frame')
    assert (image.width, image.height, image.encoding) == (320, 240, 'rgb8')
    assert image.header.frame_id.endswith(f'_{DOCK}_camera_optical')
    publisher.publish(DockingPortCommand(action=DockingPortCommand.ACTION_STOP_CAMERA,
                                         vessel_id=SAT, controller_id='ctl',
                                         lease_id=pilot.lease,
                                         sequence=pilot.next_sequence('ctl', pilot.lease)))
    pilot.until(lambda: ros_node.count_publishers(image_topic) == 0,
                'the docking camera topic removed on camera_inactive')


# -- typed overrides end with the lease, at an emergency stop and at a vessel switch --------

OVERRIDE_SEC = 10.0     # every override outlives the test's fault: only the fault ends it


def _override_throttle_tvc_and_rcs(pilot, stack):
    """Put the engine (throttle and TVC) and an RCS module under typed overrides.

    Return the simulator's clock before they were sent: they run out no earlier than
    ``OVERRIDE_SEC`` after it.
    """
    sent_after = stack.status()['clock']
    since = pilot.send('engine', EngineCommand(id=ENGINE, enabled=True, target_thrust=30000.0,
                                               has_gimbal_command=True, gimbal_pitch=0.5,
                                               timeout_sec=OVERRIDE_SEC))
    pilot.send('rcs', RcsCommand(id=RCS, enabled=True, thrust_limit=2000.0,
                                 timeout_sec=OVERRIDE_SEC))
    engine = pilot.wait_for('engine', lambda m: m.id == ENGINE and m.command_active and
                            m.gimbal_command_active, since, 'the throttle and TVC overrides')
    rcs = pilot.wait_for('rcs', lambda m: m.id == RCS and m.command_active, since,
                         'the RCS override')
    assert (engine.thrust, engine.gimbal_pitch, rcs.thrust_limit) == (30000.0, 0.5, 2000.0)
    status = stack.status()
    assert status['control']['overriding'] == [SAT]
    assert status['control']['applied_force'][0] == pytest.approx(30000.0, rel=0.01)
    return sent_after


def _back_to_stock(pilot, stack, since, sent_after):
    """Check the engine and the RCS module are stock again, before any override timed out."""
    engine = pilot.wait_for('engine', lambda m: m.id == ENGINE and not m.command_active,
                            since, 'the engine back to stock')
    rcs = pilot.wait_for('rcs', lambda m: m.id == RCS and not m.command_active, since,
                         'the RCS back to stock')
    status = stack.status()
    control = status['control']
    # not by their timeouts: read after the stock state, a clock that came before them
    assert status['clock'] < sent_after + OVERRIDE_SEC, (status['clock'], sent_after)
    # stock: the independent throttle (0), the gimbal neutral, the module's full limit
    assert (engine.thrust, engine.throttle) == (0.0, 0.0)
    assert not engine.gimbal_command_active and engine.gimbal_pitch == 0.0
    assert rcs.enabled and rcs.thrust_limit == rcs.max_thrust == 4000.0
    assert control['overriding'] == [] and control['unbacked_steps'] == 0
    assert control['applied_force'] == [0.0, 0.0, 0.0]


@pytest.mark.parametrize('fault', ['emergency_stop', 'lease_expired', 'preempted',
                                   'vessel_switch'])
def test_typed_overrides_go_back_to_stock(stack, session, ros_node, fault):
    pilot = Actuators(ros_node)
    pilot.ready()
    lease = 2.0 if fault == 'lease_expired' else 10.0     # never renewed
    assert pilot.acquire(duration=lease)[0].reason == 'lease_acquired'
    sent_after = _override_throttle_tvc_and_rcs(pilot, stack)
    since = pilot.mark()
    if fault == 'emergency_stop':
        send_authority(pilot, A.ACTION_EMERGENCY_STOP, 'safety_operator', 'stop-1')
        pilot.answer(since, lambda m: m.reason == 'emergency_stop', 'the emergency stop')
    elif fault == 'lease_expired':
        pilot.answer(since, lambda m: m.reason == 'lease_expired', 'the lease run out')
    elif fault == 'preempted':
        boss, _ = acquire(pilot, controller='boss', lease='b', priority=5, duration=10.0)
        assert boss.controller_id == 'boss'
    else:
        # the overrides of the vessel left end at once (it is no longer active: its state
        # comes again when it is active again, stock)
        assert stack.admin('switch', vessel='target')['control']['overriding'] == []
        pilot.wait_for('life', lambda m: m.vessel_id == TARGET, since, 'the target active')
        since = pilot.mark()
        stack.admin('switch', vessel='sat')
        pilot.wait_for('life', lambda m: m.vessel_id == SAT, since, 'the sat active again')
    _back_to_stock(pilot, stack, since, sent_after)
