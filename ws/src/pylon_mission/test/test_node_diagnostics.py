"""sim_manager and referee each say how they are on /diagnostics (the management domain).

No simulator and no mission: the manager waits for the simulator's first answer and the
referee for the mission description, both WARN. They run in a block of domains of their
own (the manager opens vehicle 1's domain beside its management domain).
"""

from pylon_common import diagnostics, topics
from pylon_testing.node_status import node_status
import pytest

pytestmark = pytest.mark.integration


@pytest.mark.parametrize('node', [topics.SIM_MANAGER, topics.REFEREE])
def test_the_mission_node_reports_on_diagnostics(ros_process, ros_node_in, ros_domain_block,
                                                 free_udp_port, node):
    domain = ros_domain_block(2)
    port = free_udp_port()            # nothing answers there
    args = ['--ros-args', '-p', f'management_port:={port}', '-p', 'vehicles:=1'] \
        if node == topics.SIM_MANAGER else []
    ros_process([node, *args], name=node, env={'ROS_DOMAIN_ID': str(domain)})
    status = node_status(ros_node_in(domain), node)
    assert status.level == diagnostics.WARN
    if node == topics.SIM_MANAGER:
        assert status.hardware_id == f'127.0.0.1:{port}'
        assert status.message.endswith('no answer from the simulator yet')
    else:
        assert status.hardware_id == topics.name('admin/mission')
        assert status.message == 'waiting for the mission description'
