"""Complete message definitions: what rosbag2 and Foxglove carry, read from the install.

Each definition is checked by a decoder that knows nothing but the text (mcap-ros2-support's
dynamic CDR decoder): a message serialised by rclpy decodes back to the same values.
"""

from geometry_msgs.msg import PoseStamped
from mcap_ros2._dynamic import generate_dynamic
from pylon_common import topics
from pylon_interfaces.msg import NearbyVessel, NearbyVessels
from pylon_tools import definitions
import pytest
from rclpy.serialization import serialize_message
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import Float32MultiArray, MultiArrayDimension


def test_the_definition_is_the_type_then_each_dependency_once():
    text = definitions.definition('geometry_msgs/PoseStamped')
    assert text.startswith(definitions.own_text('geometry_msgs/msg/PoseStamped'))
    headers = [line for line in text.splitlines() if line.startswith('MSG: ')]
    assert headers == ['MSG: std_msgs/msg/Header', 'MSG: builtin_interfaces/msg/Time',
                       'MSG: geometry_msgs/msg/Pose', 'MSG: geometry_msgs/msg/Point',
                       'MSG: geometry_msgs/msg/Quaternion']
    assert text.count(definitions.SEPARATOR) == len(headers)
    bool_text = definitions.definition('std_msgs/msg/Bool')      # comments kept, as installed
    assert bool_text.endswith('bool data\n') and 'MSG:' not in bool_text


def test_field_types_skip_constants_primitives_and_comments():
    text = ('# comment\nuint8 MODE_IDLE=0\nstring<=8 name\nint32[] values\nHeader header\n'
            'geometry_msgs/Point[<=4] points # trailing\nbyte[16] raw\n')
    assert definitions.field_types(text, 'std_msgs') == [
        'std_msgs/msg/Header', 'geometry_msgs/msg/Point']


def test_unknown_types_are_refused():
    with pytest.raises(definitions.DefinitionError, match='not installed'):
        definitions.definition('no_such_msgs/msg/Thing')
    with pytest.raises(definitions.DefinitionError, match='no '):
        definitions.definition('std_msgs/msg/NoSuchType')
    with pytest.raises(definitions.DefinitionError, match='not a message type'):
        definitions.canonical('pylon_interfaces/srv/GetSeparationResult')


def decode(type_name: str, msg) -> object:
    decoder = generate_dynamic(type_name, definitions.definition(type_name))[type_name]
    return decoder(serialize_message(msg))


def test_a_decoder_that_knows_only_the_text_reads_what_rclpy_wrote():
    pose = PoseStamped()
    pose.header.frame_id, pose.header.stamp.sec = 'pylon_root', 42
    pose.pose.position.x, pose.pose.orientation.w = 1.5, 0.5
    back = decode('geometry_msgs/msg/PoseStamped', pose)
    assert (back.header.frame_id, back.header.stamp.sec) == ('pylon_root', 42)
    assert (back.pose.position.x, back.pose.orientation.w) == (1.5, 0.5)
    cloud = PointCloud2(height=1, width=2, fields=[PointField(name='x', offset=0, datatype=7,
                                                              count=1)], data=b'\x01' * 8)
    back = decode('sensor_msgs/msg/PointCloud2', cloud)
    assert back.fields[0].name == 'x' and bytes(back.data) == b'\x01' * 8
    nearby = NearbyVessels(observer_vessel_id='a' * 32, vessels=[
        NearbyVessel(vessel_id='b' * 32, is_debris=True)])
    back = decode('pylon_interfaces/msg/NearbyVessels', nearby)
    assert back.vessels[0].vessel_id == 'b' * 32 and back.vessels[0].is_debris
    status = Float32MultiArray(data=[1.0, 2.5])
    status.layout.dim = [MultiArrayDimension(label='fields', size=2, stride=2)]
    back = decode('std_msgs/msg/Float32MultiArray', status)
    assert list(back.data) == [1.0, 2.5] and back.layout.dim[0].label == 'fields'


@pytest.mark.parametrize('key', sorted(k for k, row in topics.TOPICS.items()
                                       if '/msg/' in row.type))
def test_every_message_type_of_the_contract_has_a_definition_a_decoder_reads(key):
    type_name = topics.topic(key).type
    generate_dynamic(type_name, definitions.definition(type_name))
