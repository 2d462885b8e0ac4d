"""The shipped parameter files reach a node started in a namespace.

The topic contract advertises whole stacks under a namespace (``-r __ns:=/vehicle_2``);
the files key their sections ``/**/<node>`` (``pylon_common.parameters.ANY_NAMESPACE``), so
the controller in ``/vehicle_2`` still gets the overlay's slew limit (a section keyed
``setpoint_controller`` reaches only ``/setpoint_controller``).
"""

from pathlib import Path

from diagnostic_msgs.msg import DiagnosticArray
from pylon_common import topics
from pylon_testing.wait import spin_until, wait_for_messages
import pytest
from rcl_interfaces.srv import GetParameters

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[4]
BASE = ROOT / 'config' / 'setpoint_controller.yaml'
FAST_SLEW = ROOT / 'config' / 'overlays' / 'fast_slew.yaml'
NAMESPACE = '/vehicle_2'


def test_the_shipped_files_reach_the_controller_in_a_namespace(ros_process, ros_node):
    ros_process(['setpoint_controller', '--ros-args', '-r', f'__ns:={NAMESPACE}',
                 '--params-file', str(BASE), '--params-file', str(FAST_SLEW)],
                name='controller')
    node = f'{NAMESPACE}/{topics.SETPOINT_CONTROLLER}'
    client = ros_node.create_client(GetParameters, f'{node}/get_parameters')
    spin_until(ros_node, client.service_is_ready, 60.0, what=f'{node}/get_parameters')
    future = client.call_async(GetParameters.Request(
        names=['attitude_hold_rate_limit_deg_s', 'topic_prefix', 'controller_id']))
    spin_until(ros_node, future.done, 30.0, what='the parameters')
    values = future.result().values
    assert values[0].double_value == 10.0           # the overlay's; the default is 1.5
    assert (values[1].string_value, values[2].string_value) == (
        '/ksp_vessel', 'setpoint_controller')       # the base file's
    # and the law runs with it: the controller's diagnostics report its rate limit
    report = wait_for_messages(ros_node, DiagnosticArray, f'{node}/diagnostics',
                               topics.qos('controller/diagnostics', reader=True),
                               timeout=30.0)[0]
    assert {kv.key: kv.value for kv in report.status[0].values}['rate_limit_deg_s'] == '10.0'
