"""The referee scores a scripted mission: one chaser completes, one stays out of range.

A three-vehicle mission from the launch plan (``conftest.mission_stack``) on a copy of the
``rendezvous4`` scenario: a target, a chaser 5 m behind it on the same orbit (inside the
10 m zone and moving with the target, so it completes after the hold without a command:
the script is to do nothing) and one 60 m behind (never in range). The hold is 10 s and the
limit 20 s of game time instead of the scenario's 30 s and 900 s: the rules are the same,
the simulation a third as long. Test nodes hold each vehicle's lease (its stack in control),
the management starts by itself (start mode ``count``), says LapComplete when chaser 1
completed while chaser 2 tries on, and the mission ends at the time limit: Finish, not
FinishAll. No controller is in the loop: the simulator runs at ``RATE`` x real time (the
limit takes 7 s).
"""

import json
from pathlib import Path

from pylon_common import mission, topics
from pylon_interfaces.msg import ControlAuthorityCommand as A
from pylon_testing.node_status import node_status
from pylon_testing.pilot import Pilot
from pylon_testing.recorder import TopicRecorder
from pylon_testing.scenarios import write_scenario
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float32MultiArray, String
import yaml

pytestmark = pytest.mark.integration

HOLD_SEC = 10.0
TIME_LIMIT_SEC = 20.0
RATE = 3.0                                  # the simulator's --rate
# every status array kept (10 a second), also while the test process looks elsewhere
STATUS_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
VESSELS = {'chaser_1': '6c1a2b3c4d5e6f708192a3b4c5d6e7f8',
           'chaser_2': '8e3c4d5e6f708192a3b4c5d6e7f8091a',
           'target': '7d2b3c4d5e6f708192a3b4c5d6e7f809'}


def scripted(folder: Path) -> str:
    """Write the scenario: chaser_1 5 m and chaser_2 60 m behind the target; 10 s, 20 s."""
    path = Path(write_scenario(folder, 'rendezvous4', changes={
        'chaser_1': {'orbit': {'body': 'Kerbin', 'altitude': 100000, 'along_track': -5}},
        'chaser_2': {'orbit': {'body': 'Kerbin', 'altitude': 100000, 'along_track': -60}}},
        task={'time_limit_sec': TIME_LIMIT_SEC, 'hold_sec': HOLD_SEC}))
    data = yaml.safe_load(path.read_text(encoding='utf-8'))
    data['vessels'] = [v for v in data['vessels'] if v['key'] != 'chaser_3']
    data['vehicles'] = ['chaser_1', 'chaser_2', 'target']
    path.write_text(yaml.safe_dump(data), encoding='utf-8')
    return str(path)


@pytest.fixture(scope='module')
def run(mission_stack, tmp_path_factory):
    folder = tmp_path_factory.mktemp('referee')
    results = folder / 'results.json'
    stack = mission_stack(3, scripted(folder), rate=RATE, start_mode='count',
                          exit_on_finish=True, results_path=str(results),
                          deferred=('sim_manager',))
    # count starts once every stack holds its lease, which this test takes once it sees
    # Ready: the default 30 s of game time without control (10 s of wall time at RATE) is
    # less than a busy machine can take to get there, and the start would come without it
    cmd, env = stack.commands['sim_manager']
    stack.commands['sim_manager'] = ([*cmd, '-p', 'control_timeout_sec:=600.0'], env)
    stack.start('sim_manager')
    return stack, results


def hold_lease(pilot: Pilot, vessel: str) -> None:
    """Take a 10 s lease of the vessel (its stack is in control); wait until owned."""
    since = pilot.mark()
    pilot.authority_pub.publish(A(
        action=A.ACTION_ACQUIRE, vessel_id=vessel, controller_id='script', lease_id='l',
        priority=0, lease_duration_sec=10.0, suppress_sas=True,
        sequence=pilot.next_sequence('script', 'l')))
    pilot.answer(since, lambda m: m.controller_id == 'script', 'the lease held')


def test_the_referee_scores_a_scripted_run_and_the_mission_ends_at_its_limit(
        run, ros_node_in):
    stack, results = run
    view = TopicRecorder(ros_node_in(stack.base))
    for key in ('admin/state', 'admin/ranking'):
        view.add(key, topics.name(key), String, topics.qos(key, reader=True))
    vehicles = []
    for k in range(1, len(VESSELS) + 1):
        pilot = Pilot(ros_node_in(stack.domain(k)))
        pilot.add('state', topics.name('awsim/state'), String,
                  topics.qos('awsim/state', reader=True))
        pilot.add('status', topics.name('awsim/status'), Float32MultiArray, STATUS_QOS)
        pilot.ready()
        vehicles.append(pilot)
    # the vehicles are Ready (their bridges are up) and the management starts once every
    # stack is in control (the leases): first the referee must hear each scored vehicle's
    # ground truth, or the samples before it did are not scored
    node_status(ros_node_in(stack.base), topics.REFEREE,
                lambda values: values.get('sampled') == '2',
                what="the referee's ground truth of both chasers")
    # the view has the management's Ready (latched) before anything moves it on: a view
    # that matched later, on a busy machine, would only see WaitStart onwards
    view.wait_for('admin/state', lambda m: m.data == mission.READY, what='the Ready')
    for pilot, vessel in zip(vehicles, VESSELS.values()):
        hold_lease(pilot, vessel)
    view.wait_for('admin/state', lambda m: m.data == mission.START, what='the start (count)')
    near, far, _ = vehicles
    near.wait_for('state', lambda m: m.data == mission.VEHICLE_FINISH, what='chaser 1 done',
                  timeout=120.0)
    status = near.wait_for('status', lambda m: m.data[mission.STATUS_INDEX['completed']],
                           what='its status saying completed')
    done_at = status.data[mission.STATUS_INDEX['elapsed_sec']]
    assert status.data[mission.STATUS_INDEX['task_progress']] == 1.0
    far.wait_for('state', lambda m: m.data == mission.VEHICLE_START, what='chaser 2 on')
    end = view.wait_for('admin/state', lambda m: m.data in mission.FINAL_STATES,
                        what='the end of the mission', timeout=120.0)
    assert end.data == mission.FINISH                  # time up, chaser 2 never completed
    states = [m.data for m in view.messages('admin/state')]
    run = states[states.index(mission.READY):]
    assert run == [mission.READY, mission.WAIT_START, mission.START, mission.LAP_COMPLETE,
                   mission.FINISH], states
    over = far.wait_for('state', lambda m: m.data == mission.VEHICLE_FINISH,
                        what='chaser 2 over')
    # chaser 2 tried on after chaser 1 was done: its state turned Finish only at the time
    # limit (the status the manager published with it says the game time)
    turned = far.sent_at('state', over)
    far.until(lambda: far.sent_after('status', turned), 'a status after Finish')
    elapsed = far.sent_after('status', turned)[0].data[mission.STATUS_INDEX['elapsed_sec']]
    assert elapsed >= TIME_LIMIT_SEC > done_at + 5.0
    assert stack.processes['referee'].wait(timeout=30.0) == 0      # results written, exited
    ranking = json.loads(results.read_text(encoding='utf-8'))
    first, second, target = ranking['vehicles']
    assert (first['key'], first['rank'], first['completed']) == ('chaser_1', 1, True)
    # in the zone from the start: the hold completes HOLD_SEC of game time after it, within a
    # few samples (30 Hz on 0.02 s physics steps: 0.02-0.04 s apart; the first one after
    # the start and the one completing are each up to one late, and a relayed Best Effort
    # sample may be lost), however late the referee heard of the start (it keeps the
    # samples of the last referee.BACKLOG_SEC of game time and scores them once it knows)
    assert HOLD_SEC <= first['completion_time_sec'] <= HOLD_SEC + 5 * 0.04 + 1e-6, first
    assert first['score'] == pytest.approx(TIME_LIMIT_SEC - first['completion_time_sec'])
    assert first['distance_m'] == pytest.approx(5.0, abs=0.2)
    assert first['relative_speed_mps'] < 0.2 and first['propellant_used_kg'] == 0.0
    assert (second['key'], second['rank'], second['completed']) == ('chaser_2', 2, False)
    assert second['score'] == 0.0 and second['progress'] == 0.0
    assert second['distance_m'] == pytest.approx(60.0, abs=0.5)
    assert not target['scored'] and not ranking['all_completed']
    assert ranking['state'] == mission.FINISH
