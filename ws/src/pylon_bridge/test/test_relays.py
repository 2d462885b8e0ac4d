"""description_relay and nearby_markers, with the simulator and the bridge running.

The game runs lean (no LiDAR or camera: neither relay reads them) at four times real time
(no controller in the loop).
"""

from pylon_bridge.relays import markers
from pylon_interfaces.msg import NearbyVessel, NearbyVessels
from pylon_testing.recorder import DEFAULT_TIMEOUT_SEC
from pylon_testing.wait import spin_until
import pytest
from visualization_msgs.msg import Marker, MarkerArray

pytestmark = pytest.mark.integration


def test_markers_of_nearby_vessels_and_their_removal():
    msg = NearbyVessels()
    msg.header.frame_id = 'pylon_ground_truth_enu'
    a = NearbyVessel(vessel_id='0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e', vessel_name='Station')
    a.position.x = 150.0
    b = NearbyVessel(vessel_id='ffff2d3e4f5a6b7c8d9e0f1a2b3c4d5e', vessel_name='Debris',
                     is_debris=True)
    msg.vessels = [a, b]
    array, shown = markers(msg, 5.0, set())
    assert shown == {a.vessel_id, b.vessel_id}
    spheres = [m for m in array.markers if m.type == Marker.SPHERE]
    assert [m.pose.position.x for m in spheres] == [150.0, 0.0]
    assert all(m.header.frame_id == 'pylon_ground_truth_enu' for m in array.markers)
    assert spheres[1].color.r == spheres[1].color.g == spheres[1].color.b  # debris grey
    assert [m.text for m in array.markers if m.type == Marker.TEXT_VIEW_FACING] == \
        ['Station', 'Debris']
    msg.vessels = [a]
    array, shown = markers(msg, 5.0, shown)
    deleted = [m for m in array.markers if m.action == Marker.DELETE]
    assert len(deleted) == 2 and shown == {a.vessel_id}


def test_relay_pushes_the_model_and_markers_follow_the_target(sim_stack, ros_process,
                                                             ros_node, lean_scenario):
    sim_stack(lean_scenario(), sim_args=['--rate', '4'])
    # the test node stands in for robot_state_publisher's parameter interface
    ros_node.declare_parameter('robot_description', '<robot name="placeholder"/>')
    ros_process(['description_relay', '--ros-args', '-p',
                 f'target_node:=/{ros_node.get_name()}'], name='relay')
    ros_process(['nearby_markers'], name='markers')
    got = []
    sub = ros_node.create_subscription(MarkerArray, '/pylon/nearby_markers', got.append, 10)
    spin_until(ros_node, lambda: 'pylon_5a7e1f0c_active_vessel' in
               ros_node.get_parameter('robot_description').value, DEFAULT_TIMEOUT_SEC,
               what='the proxy URDF in the robot_description parameter')
    spin_until(ros_node, lambda: any(m.text == 'Target Station' for a in got
                                     for m in a.markers), DEFAULT_TIMEOUT_SEC,
               what='a marker for the target')
    ros_node.destroy_subscription(sub)
