"""The rover driven end to end: WheelCommand through udp_bridge moves it on ground truth."""

from geometry_msgs.msg import PoseStamped
import numpy as np
from pylon_common import topics
from pylon_interfaces.msg import WheelCommand, WheelState
from pylon_testing.pilot import acquire, COMMAND, Pilot
import pytest
from rclpy.qos import qos_profile_sensor_data

pytestmark = pytest.mark.integration

ROVER = '7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a29'
WHEELS = ('wheel_7700002_0', 'wheel_7700003_0', 'wheel_7700004_0', 'wheel_7700005_0')


def position(pose: PoseStamped) -> np.ndarray:
    p = pose.pose.position
    return np.array([p.x, p.y, p.z])


def test_wheel_commands_drive_the_rover_on_ground_truth(sim_stack, ros_node, lean_scenario):
    sim_stack(scenario=lean_scenario('surface'))
    pilot = Pilot(ros_node)
    pilot.add('wheel', topics.name('actuators/wheel/state'), WheelState, qos_profile_sensor_data)
    pilot.add('pose', topics.name('ground_truth/pose'), PoseStamped, qos_profile_sensor_data)
    publisher = ros_node.create_publisher(WheelCommand, topics.name('actuators/wheel/command'),
                                          COMMAND)
    pilot.ready()
    still = pilot.wait_for('wheel', lambda m: m.id == WHEELS[0], what='a wheel state')
    assert still.grounded and still.angular_velocity == pytest.approx(0.0, abs=1e-3)
    start = position(pilot.wait_for('pose', what='ground truth'))
    assert acquire(pilot, vessel=ROVER, duration=5.0)[0].reason == 'lease_acquired'
    pilot.until(lambda: publisher.get_subscription_count() > 0, 'the wheel command subscriber')
    since = pilot.mark()
    for wheel in WHEELS:
        publisher.publish(WheelCommand(
            vessel_id=ROVER, controller_id='ctl', lease_id='lease-1',
            sequence=pilot.next_sequence('ctl', 'lease-1'), id=wheel, enabled=True,
            target_angular_velocity=10.0, max_drive_torque=0.0, timeout_sec=4.0))
    driving = pilot.wait_for('wheel', lambda m: m.id == WHEELS[0] and m.angular_velocity > 1.0,
                             since, 'the wheel spinning')
    assert driving.grounded and driving.drive_torque > 0.0 and driving.enabled
    moved = pilot.wait_for('pose', lambda m: np.linalg.norm(position(m) - start) > 1.0, since,
                           'the rover 1 m from where it stood')
    # it drove forward: east, along the ENU x axis it was heading
    assert position(moved)[0] - start[0] > 0.9
