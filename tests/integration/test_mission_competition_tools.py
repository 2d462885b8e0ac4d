"""The rendezvous driven by clients that behave as the AI Challenge's own tools do.

Two small clients, written from how the competition's tools use the interface:

- a **state manager** in the management domain: it subscribes to ``/admin/awsim/state``
  Reliable + Transient Local, depth 1, after the state was set; waits for ``Ready``;
  publishes ``/admin/awsim/start`` ``true`` once; and stops at Finish, FinishAll or
  Terminate;
- a **per-vehicle orchestrator** in each vehicle's domain: it subscribes to ``/awsim/state``
  with the default profile (Reliable, Volatile, depth 10), after the state was set; waits
  for ``Ready`` or ``Start``; requests control; and stops at ``Finish``. A Volatile
  subscriber gets no stored sample: it learns the state from the manager saying it again
  every second.

The competition's orchestrator requests control with ``/awsim/control_mode_request_topic``
(``std_msgs/Bool`` true). The rendezvous stack serves no such topic (the kart's interface
does): its ``setpoint_controller`` takes the vessel's lease by itself once it runs. So the
orchestrator publishes the request as the tool does (nobody subscribes to it here) and acts
on what the rendezvous has: it starts its vehicle's controller (and the chaser's autonomy),
which take control. Ready therefore comes without any controller, as it must: the
competition's orchestrator asks for control only after Ready.

The mission (start mode ``sync``) is the demo's quick rendezvous: the chaser 60 m behind the
target, a hold of 10 s, a controller closing at up to 2 m/s, the simulator at ``RATE`` x
real time with the control on game time. It runs to its end: FinishAll.
"""

import json
import statistics
import time

from pylon_common import mission, topics
from pylon_testing.plan import room_for_stalls
from pylon_testing.recorder import TopicRecorder
from pylon_testing.scenarios import write_scenario
import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool, String

pytestmark = pytest.mark.integration

RATE = 3.0
HOLD_SEC = 10.0
REPUBLISH_SEC = 1.0             # the manager's state_republish_sec (its default)
# the manager's poll (0.1 s: a republish comes at the first poll a period after the last)
# and the lateness of its timer on a busy machine
REPUBLISH_SLACK_SEC = 0.5
CONTROL = ('setpoint_controller', 'rendezvous_chaser')
STATE_MANAGER_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                               durability=DurabilityPolicy.TRANSIENT_LOCAL)
DEFAULT_QOS = 10                # rclpy's default profile: Reliable, Volatile, depth 10
ORCHESTRATOR_STATES = (mission.VEHICLE_READY, mission.VEHICLE_START)


@pytest.fixture(scope='module')
def stack(mission_stack, tmp_path_factory):
    folder = tmp_path_factory.mktemp('tools')
    scenario = write_scenario(folder, 'rendezvous', lean=False, changes={
        'chaser': {'orbit': {'body': 'Kerbin', 'altitude': 100000, 'along_track': -60}}},
        task={'hold_sec': HOLD_SEC})
    return mission_stack(
        2, scenario, components=('bridge', 'estimator', 'controller', 'chaser'), rate=RATE,
        sim_rate=RATE, start_mode='sync', results_path=str(folder / 'results.json'),
        overlays=('fast_rendezvous', room_for_stalls(folder, RATE)),
        deferred=('setpoint_controller_1', 'setpoint_controller_2', 'rendezvous_chaser_1'))


def orchestrator(stack, node, vehicle: int) -> TopicRecorder:
    """Subscribe as the competition's orchestrator does, after the state was set.

    Return its recorder once it learned the state (Ready or Start); ``subscribed_at`` and
    ``matched_at`` say when (the system clock, as the publication stamps).
    """
    view = TopicRecorder(node)
    view.subscribed_at = time.time()
    view.add('state', topics.name('awsim/state'), String, DEFAULT_QOS)
    view.until(lambda: view.by_name['state'].get_publisher_count() > 0,
               f"vehicle {vehicle}'s orchestrator matched /awsim/state")
    view.matched_at = time.time()
    view.wait_for('state', lambda m: m.data in ORCHESTRATOR_STATES,
                  what=f'vehicle {vehicle} Ready or Start')
    return view


def test_the_competitions_tools_start_the_rendezvous_and_see_its_end(stack, ros_node_in):
    manager = stack.processes['sim_manager']
    # every vehicle Ready, no controller running: the states are set before anyone listens
    for k in (1, 2):
        manager.wait_for_output(f'vehicle {k} Ready', timeout=60.0)
    manager.wait_for_output('state Ready', timeout=60.0)
    assert not [name for name in stack.processes if name.startswith(CONTROL)]
    # each vehicle's orchestrator, Volatile, learns its state from a republication
    orchestrators = {k: orchestrator(stack, ros_node_in(stack.domain(k)), k) for k in (1, 2)}
    for k, view in orchestrators.items():
        assert view.got['state'][0].data == mission.VEHICLE_READY, k
        assert view.sent['state'][0] >= view.subscribed_at, k   # said after it subscribed
    # each requests control: the tool's request (no one serves it in the rendezvous stack),
    # then what the rendezvous has: its controller (and autonomy) comes up and takes the lease
    for k, view in orchestrators.items():
        request = view.node.create_publisher(Bool, topics.name('kart/control_mode_request_topic'),
                                             topics.qos('kart/control_mode_request_topic'))
        request.publish(Bool(data=True))
        assert request.get_subscription_count() == 0
        for name in CONTROL:
            if f'{name}_{k}' in stack.commands:
                stack.start(f'{name}_{k}')
    # the state manager, Transient Local depth 1, gets Ready stored and starts once
    admin = TopicRecorder(ros_node_in(stack.base))
    admin.add('state', topics.name('admin/state'), String, STATE_MANAGER_QOS)
    admin.add('ranking', topics.name('admin/ranking'), String,
              topics.qos('admin/ranking', reader=True))
    first = admin.wait_for('state', what='the stored management state')
    assert first.data == mission.READY
    start = admin.node.create_publisher(Bool, topics.name('admin/start'),
                                        topics.qos('admin/start'))
    admin.until(lambda: start.get_subscription_count() > 0, 'the manager subscribed to start')
    start.publish(Bool(data=True))
    # the mission runs to its end: the state manager sees FinishAll, vehicle 1's
    # orchestrator Finish; every state on the way, in order
    end = admin.wait_for('state', lambda m: m.data in mission.FINAL_STATES,
                         what='the end of the mission', timeout=240.0)
    assert end.data == mission.FINISH_ALL
    said = [m.data for m in admin.messages('state')]
    assert said == [mission.READY, mission.WAIT_START, mission.START, mission.FINISH_ALL], said
    for k, view in orchestrators.items():
        view.wait_for('state', lambda m: m.data == mission.VEHICLE_FINISH,
                      what=f'vehicle {k} Finish')
        states = [m.data for m in view.messages('state')]
        changes = [s for i, s in enumerate(states) if i == 0 or s != states[i - 1]]
        assert changes == [mission.VEHICLE_READY, mission.VEHICLE_START,
                           mission.VEHICLE_FINISH], (k, states)
    ranking = json.loads(admin.wait_for('ranking', lambda m: json.loads(m.data)[
        'all_completed'], what='the final ranking').data)
    chaser = ranking['vehicles'][0]
    assert chaser['completed'] and chaser['rank'] == 1
    # each learned its state from the first republication after it matched: no later than
    # the manager's longest gap between two publications it saw (the period, or longer
    # while the machine stalled the manager), and the republications keep the period
    for k, view in orchestrators.items():
        stamps = view.sent['state']
        gaps = [b - a for a, b in zip(stamps, stamps[1:])]
        period = REPUBLISH_SEC + REPUBLISH_SLACK_SEC
        assert len(gaps) >= 3 and statistics.median(gaps) <= period, (k, gaps)
        learned = stamps[0] - view.matched_at
        assert learned <= max(REPUBLISH_SEC, max(gaps)) + REPUBLISH_SLACK_SEC, (k, learned, gaps)
    # the start was refused by nobody: the state manager's one start was enough
    assert 'start refused' not in manager.log()
