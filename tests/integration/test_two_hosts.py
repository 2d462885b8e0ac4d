"""A team's stack on another host of the network drives the kart (the competition's setting).

Two hosts on this machine (``pylon_testing.hosts``: network namespaces on one link, with no
shared memory transport between them: ``FASTDDS_BUILTIN_TRANSPORTS=UDPv4``). Host ``a`` is
the simulator's; the team's ``kart_driver`` (the competition's interface only: the mode
request, ``control_cmd``, the IMU, the mode and velocity statuses) runs on host ``b``.
Both ways the README's "A team's stack on another machine" describes:

- ``dds``: the bridge and ``kart_interface`` beside the simulator on ``a``, the UDP protocol
  on ``a``'s loopback; the vehicle's ROS domain crosses the link (DDS discovery on the
  subnet).
- ``udp``: the bridge and ``kart_interface`` on the team's host ``b``; the PyLoN UDP
  protocol crosses the link (the simulator sends state to ``b``'s address and takes
  commands on its own; the vessel model crosses too: the simulator's
  ``--allow-remote-urdf``, the bridge's ``--allow-remote-models``).
"""

from autoware_auto_vehicle_msgs.msg import ControlModeReport
from pylon_kart import sensing
from pylon_testing import hosts
from pylon_testing.scenarios import write_scenario
import pytest

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(hosts.unavailable()), reason=hosts.unavailable())]

ACROSS_A_NETWORK = {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET',
                    'FASTDDS_BUILTIN_TRANSPORTS': 'UDPv4'}
"""What each host sets besides its ROS_DOMAIN_ID (the session's)."""
TIMEOUT = 60.0


@pytest.fixture(scope='module')
def lan():
    """Return two hosts on one link for the module."""
    with hosts.TwoHosts() as two:
        yield two


@pytest.mark.parametrize('across', ['dds', 'udp'])
def test_a_team_on_another_host_drives_the_kart(lan, ros_process, tmp_path, across):
    bridge_host = 'a' if across == 'dds' else 'b'
    simulator, bridge = ('127.0.0.1', '127.0.0.1') if across == 'dds' else \
        (lan.addresses['a'], lan.addresses['b'])
    remote = across == 'udp'

    def run(host, cmd, name):
        return ros_process([*lan.prefix(host), *cmd], name=name, env=ACROSS_A_NETWORK)

    run('a', ['pylon_sim', '--scenario', write_scenario(tmp_path, 'kart'),
              '--state-host', bridge, '--command-host', simulator,
              *(['--allow-remote-urdf'] if remote else [])], 'sim')
    run(bridge_host, ['udp_bridge', '--host', bridge, '--command-host', simulator,
                      *(['--allow-remote-models'] if remote else []),
                      *sensing.bridge_arguments()], 'bridge')
    run(bridge_host, ['kart_interface', *sensing.interface_arguments()], 'kart_interface')
    driver = run('b', ['kart_driver', '1.0'], 'kart_driver')
    # AUTONOMOUS with the IMU reaching the team (its subscription may match after the mode's)
    autonomous = rf'imu ([1-9]\d*) mode {ControlModeReport.AUTONOMOUS} speed ([0-9.]+)'
    first = driver.wait_for_output(autonomous, TIMEOUT)
    moving = driver.wait_for_output(
        rf'imu (\d+) mode {ControlModeReport.AUTONOMOUS} speed ([1-9]\d*\.\d+)', TIMEOUT)
    assert int(moving.group(1)) > int(first.group(1))
    assert float(moving.group(2)) >= 1.0
