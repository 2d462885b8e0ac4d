"""A race of two karts through the management and the judge: real processes, the race's clock.

One mission for the module (the launch plan's processes, ``conftest.mission_stack``): the
simulator running a race of two lean karts on the tests' ring (``write_ring_race``: a
circle of 10 m that a kart held at one steering angle laps, so no controller is in the
loop), ``sim_manager`` (start mode ``sync``, a countdown of ``COUNTDOWN_SEC``) and the
referee (the race's judge) in the management domain, each kart's bridge in its domain. A
lap is 63 m; the race is one lap within ``TIME_LIMIT_SEC``, one boost of ``BOOST_SEC`` per
kart; the simulator runs at ``RATE`` x real time. Test lease clients (``wheel_driver``, a
process per kart) drive the karts by their wheels. Every time checked is the race's own
(game time).

- ``test_two_karts_lap_to_finish_all``: both karts lap, kart 1 faster: LapComplete while
  kart 2 is still on its lap, then FinishAll; each kart's ``/awsim/status`` against the
  simulator's race (carried by the mission description of the same poll); the ranking on
  ``/admin/awsim/ranking`` and the judge's result files.
- ``test_boosts_through_awsim_cmd_then_finish_at_the_time_limit``: kart 1 stands on the
  grid; its ``/awsim/cmd``: an empty array and a NaN (dropped, counted, nothing sent), a
  boost (on for ``BOOST_SEC`` of the race's time), a second one refused (none left).
  Kart 2, on the slot behind it in the same lane, is driven into it: the collision on
  both karts' ``/d{N}/.../on_collision`` in the management domain, in their status
  arrays, the race and the judge's files. The session runs out: Finish, and the files
  again (a reset re-armed the judge).
"""

import json
import math
from pathlib import Path

from pylon_common import mission, topics
from pylon_common.parameters import file_section
from pylon_sim.loop.scenario import load_scenario
from pylon_testing.node_status import node_status
from pylon_testing.recorder import TopicRecorder
from pylon_testing.scenarios import ring_steering, write_ring_race
from pylon_testing.wait import throttled
import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool, Empty, Float32MultiArray, String
import yaml

pytestmark = pytest.mark.integration

RATE = 3.0                      # the simulator's --rate
TIME_LIMIT_SEC = 22.0           # the race's session (game time): kart 2's lap ends at ~15 s
COUNTDOWN_SEC = 1.0
BOOSTS = 1
BOOST_SEC = 2.0
WHEEL_RADIUS_M = 0.14           # the kart's
SPINS = (46.0, 42.0)            # rad/s: kart 1 at 6.4 m/s, kart 2 at 5.9 m/s (laps of ~10 s)
GRID = (0, 2)                   # the karts' slots: one lane, kart 2 8 m behind kart 1
# every message kept, also while the test process looks elsewhere (10 a second)
STREAM = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
INDEX = mission.STATUS_INDEX
F32 = 1e-6                      # relative: a status array is float32


@pytest.fixture(scope='module')
def race(mission_stack, tmp_path_factory):
    folder = tmp_path_factory.mktemp('race')
    scenario = write_ring_race(folder, 2, grid=GRID, task={
        'laps': 1, 'time_limit_sec': TIME_LIMIT_SEC, 'boosts': BOOSTS, 'boost_sec': BOOST_SEC})
    results = folder / 'results' / 'ranking.json'
    countdown = folder / 'countdown.yaml'
    countdown.write_text(yaml.safe_dump({file_section(topics.SIM_MANAGER): {
        'ros__parameters': {'countdown_sec': COUNTDOWN_SEC}}}), encoding='utf-8')
    stack = mission_stack(2, scenario, rate=RATE, start_mode='sync', results_path=str(results),
                          overlays=(str(countdown),))
    loaded = load_scenario(scenario)
    return stack, results, [loaded.vessel(key).spec.vessel_id for key in loaded.vehicles]


def admin_view(node) -> TopicRecorder:
    """Record the management domain (state, description, ranking); start and reset."""
    view = TopicRecorder(node)
    for key in ('admin/state', 'admin/mission', 'admin/ranking'):
        view.add(key, topics.name(key), String, LATCHED)
    view.start = node.create_publisher(Bool, topics.name('admin/start'),
                                       topics.qos('admin/start'))
    view.reset = node.create_publisher(Empty, topics.name('admin/reset'),
                                       topics.qos('admin/reset'))
    view.until(lambda: view.start.get_subscription_count() > 0 and
               view.reset.get_subscription_count() > 0, 'the manager subscribed to start/reset')
    return view


def kart_view(node) -> TopicRecorder:
    """Record a kart's domain: its state and status; its /awsim/cmd publisher."""
    view = TopicRecorder(node)
    view.add('state', topics.name('awsim/state'), String, LATCHED)
    view.add('status', topics.name('awsim/status'), Float32MultiArray, STREAM)
    view.cmd = node.create_publisher(Float32MultiArray, topics.name('awsim/cmd'),
                                     topics.qos('awsim/cmd'))
    view.until(lambda: view.cmd.get_subscription_count() > 0, 'the manager took /awsim/cmd')
    return view


def descriptions(view: TopicRecorder, since=None) -> list[dict]:
    return [json.loads(m.data) for m in view.messages('admin/mission', since)]


def ready(view: TopicRecorder) -> dict:
    """Bring the race to Ready on the grid (a reset if it is anywhere else); return it.

    ``view.at_ready`` marks that description (what came before it may be of before the
    reset).
    """
    def waiting(m) -> bool:
        d = json.loads(m.data)
        return d['state'] == mission.READY and d['race']['phase'] == 'grid' and all(
            v['state'] == mission.VEHICLE_READY for v in d['vehicles'])
    last = view.wait_for('admin/mission', what='the mission description')
    if not waiting(last):
        since = view.mark()
        if json.loads(last.data)['state'] != mission.PLAY_START:
            view.reset.publish(Empty())
        last = view.wait_for('admin/mission', waiting, since, 'the race Ready')
    view.at_ready = view.after('admin/mission', last)
    view.at_ready['admin/mission'] -= 1           # that description itself included
    return json.loads(last.data)


def marks_at_ready(karts: list[TopicRecorder]) -> list[dict]:
    """Return a mark of each kart's view once it took its Ready (the states before it too)."""
    for kart in karts:
        kart.wait_for('state', lambda m: m.data == mission.VEHICLE_READY, what='Ready')
        kart.until(lambda kart=kart: kart.last('state').data == mission.VEHICLE_READY,
                   'the newest state Ready')
    return [kart.mark() for kart in karts]


def start(view: TopicRecorder) -> dict:
    """Publish the start; return the mark before it once the race runs (Start)."""
    since = view.mark()
    view.start.publish(Bool(data=True))
    view.wait_for('admin/state', lambda m: m.data == mission.START, since, 'the start')
    return since


def changes(view: TopicRecorder, key: str, since=None, first: str | None = None) -> list[str]:
    """Return the states said after ``since``, each once (the states are said again).

    ``first``: from the first time that state was said (what was said before the test
    took the topic may come after the mark).
    """
    said = [m.data for m in view.messages(key, since)]
    said = said[said.index(first):] if first in said else said
    return [s for i, s in enumerate(said) if i == 0 or s != said[i - 1]]


def check_status(statuses: list, described: list[dict], vehicle: int) -> int:
    """Check each status array against the race of the description of the same poll.

    The manager publishes both from one reply of the simulator: a status array and a
    description with the same race time (``elapsed_sec``) belong together (the race time
    moves between two polls while it runs). The seven interface values must be the race's;
    the session time is always the limit less the race time. Return how many matched.
    """
    by_time: dict[float, list[dict]] = {}
    for d in described:
        by_time.setdefault(d['race']['elapsed'], []).append(d)
    matched = 0
    for msg in statuses:
        values = dict(zip(mission.STATUS_NAMES, msg.data))
        t = values['elapsed_sec']
        assert values['sessionTime'] == pytest.approx(max(0.0, TIME_LIMIT_SEC - t),
                                                      rel=F32, abs=1e-5), values
        # measured over the manager's last wall second, it swings while a stalled simulator
        # catches up; test_mission judges it against its window (time_scale_misfits)
        assert math.isfinite(values['timeScale']) and values['timeScale'] >= 0.0, values
        found = [d for time, ds in by_time.items() if time == pytest.approx(t, rel=F32)
                 for d in ds]
        if not found:
            continue                 # (a description the test did not take in time)
        race = [d['vehicles'][vehicle - 1]['race'] for d in found]
        assert any([values[name] for name in mission.RACE_FIELDS] == pytest.approx(
            [float(r[name]) for name in mission.RACE_FIELDS], rel=F32, abs=1e-5)
            for r in race), (values, race)
        matched += 1
    return matched


def results(path: Path, end: str, view: TopicRecorder) -> tuple[dict, list[dict]]:
    """Wait for the judge's files of the race's ``end``; return the summary and details."""
    summary = path.parent / 'result-summary.json'

    def written() -> bool:
        try:
            return json.loads(summary.read_text(encoding='utf-8'))['end'] == end
        except (OSError, ValueError):
            return False
    view.until(throttled(written), f'the result files of {end}')
    return (json.loads(summary.read_text(encoding='utf-8')),
            [json.loads((path.parent / f'd{k}-result-details.json').read_text(
                encoding='utf-8')) for k in (1, 2)])


def check_results(stack, path: Path, admin: TopicRecorder, since, races) -> None:
    """Check the ranking and the judge's files of the two-kart race (both finished)."""
    one, two = races
    # the ranking and the judge's files: laps, then who ended the last lap first
    summary, details = results(path, mission.FINISH_ALL, admin)
    assert (summary['lap_target'], summary['time_limit_sec']) == (1, TIME_LIMIT_SEC)
    assert [(e['rank'], e['vehicle'], e['laps'], e['finished']) for e in summary['ranking']] \
        == [(1, 1, 1, True), (2, 2, 1, True)]
    for k, (entry, race_k) in enumerate(zip(details, (one, two)), start=1):
        assert (entry['vehicle'], entry['rank'], entry['laps']) == (k, k, 1)
        assert entry['lap_times_sec'] == [round(race_k['lapTimes'][0], 3)]
        assert entry['total_time_sec'] == round(race_k['finishTime'], 3)
        assert len(entry['section_times_sec'][0]) == 3
        assert sum(entry['section_times_sec'][0]) == pytest.approx(
            entry['lap_times_sec'][0], abs=0.01)
        assert (entry['boosts_used'], entry['penalty_count'], entry['collisions']) == (
            0, race_k['penalties']['count'], [])
    ranking = json.loads(admin.wait_for('admin/ranking', lambda m: json.loads(m.data).get(
        'end') == mission.FINISH_ALL, since, 'the final ranking').data)
    assert [(e['vehicle'], e['rank']) for e in ranking['vehicles']] == [(1, 1), (2, 2)]
    assert ranking['all_completed'] and ranking['kind'] == 'race'
    assert json.loads(path.read_text(encoding='utf-8'))['end'] == mission.FINISH_ALL
    log = stack.processes['referee'].log()
    assert 'race FinishAll' in log and 'rank 1: vehicle 1' in log


def test_two_karts_lap_to_finish_all(race, ros_node_in):
    stack, path, vessels = race
    # each kart's driver: its lease held (again after a reset), then its wheels at the start
    drivers = [stack.starter(['wheel_driver', vessel, f'{spin:g}',
                              f'{ring_steering(GRID[k - 1], spin * WHEEL_RADIUS_M):.6f}'],
                             name=f'wheel_driver_{k}', env={'ROS_DOMAIN_ID': str(stack.domain(k))})
               for k, (vessel, spin) in enumerate(zip(vessels, SPINS), start=1)]
    admin = admin_view(ros_node_in(stack.base))
    for k in (1, 2):
        admin.add(f'on_collision/{k}', topics.name('admin/on_collision', id=str(k)), Bool,
                  STREAM)
    karts = [kart_view(ros_node_in(stack.domain(k))) for k in (1, 2)]
    grid = ready(admin)
    assert [v['race']['lapCount'] for v in grid['vehicles']] == [0, 0]
    admin.wait_for('admin/mission', lambda m: all(
        v['lease_owned'] and v['state'] == mission.VEHICLE_READY
        for v in json.loads(m.data)['vehicles']), admin.at_ready, 'both drivers in control')
    kart_marks = marks_at_ready(karts)
    since = start(admin)
    end = admin.wait_for('admin/state', lambda m: m.data in mission.FINAL_STATES, since,
                         'the end of the race', timeout=120.0)
    for driver in drivers:
        driver.stop()
    assert end.data == mission.FINISH_ALL
    assert changes(admin, 'admin/state', since, mission.WAIT_START) == [
        mission.WAIT_START, mission.START, mission.LAP_COMPLETE, mission.FINISH_ALL]
    # kart 1 finished first: its Finish while kart 2 raced on (LapComplete)
    for kart, mark in zip(karts, kart_marks):
        kart.wait_for('state', lambda m: m.data == mission.VEHICLE_FINISH, mark, 'Finish')
    described = descriptions(admin, since)
    first = next(d for d in described if d['vehicles'][0]['state'] == mission.VEHICLE_FINISH)
    assert first['state'] == mission.LAP_COMPLETE
    assert first['vehicles'][1]['state'] == mission.VEHICLE_START
    assert [changes(kart, 'state', mark)[-2:] for kart, mark in zip(karts, kart_marks)] == [
        [mission.VEHICLE_START, mission.VEHICLE_FINISH]] * 2
    final = json.loads(admin.wait_for('admin/mission', lambda m: json.loads(m.data)[
        'state'] == mission.FINISH_ALL, since, 'the race over').data)
    one, two = (v['race'] for v in final['vehicles'])
    assert (one['lapCount'], one['finished'], two['lapCount'], two['finished']) == (
        1, True, 1, True)
    assert one['finishTime'] < two['finishTime'] < TIME_LIMIT_SEC
    # the race time is the mission's game time while it runs
    running = [d for d in described if d['race']['phase'] == 'running']
    assert all(d['race']['elapsed'] == pytest.approx(d['elapsed'], abs=1e-6) for d in running)
    # each kart's status: the race's values, lap, section and lap time moving on the way
    for k, (kart, mark) in enumerate(zip(karts, kart_marks), start=1):
        kart.wait_for('status', lambda m: m.data[INDEX['completed']] == 1.0, mark,
                      f'kart {k} completed in its status')
        statuses = kart.messages('status', mark)
        assert check_status(statuses, descriptions(admin), k) >= 20
        assert {m.data[INDEX['section']] for m in statuses} == {0.0, 1.0, 2.0}
        done = next(m for m in statuses if m.data[INDEX['completed']] == 1.0)
        values = dict(zip(mission.STATUS_NAMES, done.data))
        race_k = final['vehicles'][k - 1]['race']
        assert (values['lapCount'], values['task_progress'], values['rank']) == (1.0, 1.0, k)
        assert values['last_lap_end_sec'] == pytest.approx(race_k['finishTime'], rel=F32)
        assert values['best_lap_sec'] == pytest.approx(race_k['lapTimes'][0], rel=F32)
        assert values['score'] == pytest.approx(TIME_LIMIT_SEC - race_k['finishTime'],
                                                rel=F32)
        assert values['collision_count'] == race_k['collisions'] == 0     # the slower behind
        # the organisers' on_collision: every poll, never true without a collision
        said = [m.data for m in admin.messages(f'on_collision/{k}', since)]
        assert len(said) >= 20 and not any(said)
    check_results(stack, path, admin, since, (one, two))


def manager_counts(node, holds=None) -> dict:
    """Return the manager's values on /diagnostics (the first report satisfying ``holds``)."""
    def ints(values: dict) -> dict:
        return {k: int(v) if v.isdigit() else v for k, v in values.items()}
    status = node_status(node, topics.SIM_MANAGER,
                         lambda values: holds is None or holds(ints(values)))
    return ints({item.key: item.value for item in status.values})


def check_boost(kart: TopicRecorder, admin: TopicRecorder, mark, since) -> None:
    """Check kart 1's boost (fired by the test): on for ``BOOST_SEC`` of the race's time."""
    on = kart.wait_for('status', lambda m: m.data[INDEX['isBoosting']] == 1.0, mark,
                       'the boost on')
    assert on.data[INDEX['boostRemaining']] == BOOSTS - 1
    off = kart.wait_for('status', lambda m: m.data[INDEX['isBoosting']] == 0.0,
                        kart.after('status', on), 'the boost over')
    boosting = json.loads(admin.wait_for('admin/mission', lambda m: json.loads(m.data)[
        'vehicles'][0]['race']['isBoosting'], since, 'the boost described').data)
    ends = boosting['race']['elapsed'] + boosting['vehicles'][0]['race']['boostEndsIn']
    fired = ends - BOOST_SEC
    statuses = kart.messages('status', mark)
    before_on = [m for m in statuses[:statuses.index(on)]
                 if m.data[INDEX['elapsed_sec']] > 0.0]
    last_on = statuses[statuses.index(off) - 1]
    # the status said it between the polls around the boost's start and end (race time)
    assert (before_on[-1].data[INDEX['elapsed_sec']] if before_on else 0.0) <= fired + 1e-5
    assert fired <= on.data[INDEX['elapsed_sec']] + 1e-5
    assert last_on.data[INDEX['elapsed_sec']] < ends + 1e-5
    assert ends <= off.data[INDEX['elapsed_sec']] + 1e-5


def check_collision(admin: TopicRecorder, final: dict, karts, since) -> list[int]:
    """Check kart 2's collision with kart 1 in every source; return each kart's count.

    One contact or a few (the karts bounce, restitution 0.3), the same on both and in each
    source: the race, each kart's status array (``karts``: its view and mark), and the
    organisers' ``on_collision``, true at most once per collision begun.
    """
    hits = [v['race']['collisions'] for v in final['vehicles']]
    assert hits[0] == hits[1] >= 1, hits
    assert [entry['with'] for entry in final['vehicles'][0]['race']['collisionLog']] == \
        [2] * hits[0]
    for k, (view, at) in enumerate(karts, start=1):
        said = [m.data for m in admin.messages(f'on_collision/{k}', since)]
        assert 1 <= sum(said) <= hits[k - 1], (k, said)
        count = float(hits[k - 1])
        view.wait_for('status', lambda m, count=count: m.data[INDEX['collision_count']] == count,
                      at, f'kart {k} collisions in its status')
    return hits


def test_boosts_through_awsim_cmd_then_finish_at_the_time_limit(race, ros_node_in):
    stack, path, vessels = race
    # kart 2 driven along its lane into kart 1, which stands on the slot ahead
    spin = SPINS[1]
    rammer = stack.starter(['wheel_driver', vessels[1], f'{spin:g}',
                            f'{ring_steering(GRID[1], spin * WHEEL_RADIUS_M):.6f}'],
                           name='rammer_2', env={'ROS_DOMAIN_ID': str(stack.domain(2))})
    admin = admin_view(ros_node_in(stack.base))
    for k in (1, 2):
        admin.add(f'on_collision/{k}', topics.name('admin/on_collision', id=str(k)), Bool,
                  STREAM)
    kart = kart_view(ros_node_in(stack.domain(1)))
    rammed = kart_view(ros_node_in(stack.domain(2)))
    ready(admin)
    admin.wait_for('admin/mission', lambda m: json.loads(m.data)['vehicles'][1]['lease_owned'],
                   admin.at_ready, "kart 2's driver in control")
    before = manager_counts(admin.node)
    (mark, mark_2) = marks_at_ready([kart, rammed])
    since = start(admin)
    manager = stack.processes['sim_manager']
    # the collision, for the organisers: both karts on_collision (then the driver lets go)
    for k in (1, 2):
        admin.wait_for(f'on_collision/{k}', lambda m: m.data, since, f'kart {k} on_collision')
    rammer.stop()

    def publish(*values) -> None:
        kart.cmd.publish(Float32MultiArray(data=list(values)))

    # bad input: dropped, counted, logged; nothing reaches the simulator (counts below)
    publish()
    publish(math.nan, 1.0)
    manager.wait_for_output(r'/awsim/cmd of vehicle 1 dropped \(\d+ so far\): an empty array; '
                            'nothing sent')
    # a boost: a rising edge to 1; on for BOOST_SEC of the race's time, one less left
    publish(0.0)
    publish(1.0)
    check_boost(kart, admin, mark, since)
    # a second edge: none left, refused by the race, counted by the manager
    publish(0.0)
    publish(1.0)
    manager.wait_for_output(r'vehicle 1 boost refused: none_left \(\d+ refused so far\)')
    # the session runs out: Finish, every kart Finish
    end = admin.wait_for('admin/state', lambda m: m.data in mission.FINAL_STATES, since,
                         'the end of the race', timeout=120.0)
    assert end.data == mission.FINISH
    assert changes(admin, 'admin/state', since, mission.WAIT_START) == [
        mission.WAIT_START, mission.START, mission.FINISH]
    kart.wait_for('state', lambda m: m.data == mission.VEHICLE_FINISH, mark, 'Finish')
    final = json.loads(admin.wait_for('admin/mission', lambda m: json.loads(m.data)[
        'state'] == mission.FINISH, since, 'the race over').data)
    race_1 = final['vehicles'][0]['race']
    # (shoved by kart 2, kart 1 may leave the ring: each exit is judged, a penalty)
    events = dict(race_1['events'])
    assert events.pop('off_track', 0) == race_1['penalties']['count']
    assert events == {'boost_fired': 1, 'boost_refused_none_left': 1}
    hits = check_collision(admin, final, ((kart, mark), (rammed, mark_2)), since)
    assert final['race']['requests'] == {} and final['race']['sessionTime'] == 0.0
    assert check_status(kart.messages('status', mark), descriptions(admin), 1) >= 20
    counted = ('awsim_cmd_empty', 'awsim_cmd_not_finite', 'awsim_cmd_forwarded',
               'boosts_fired', 'boosts_refused')
    after = manager_counts(admin.node, lambda v: all(v[key] > before[key] for key in counted))
    assert [after[key] - before[key] for key in counted] == [1, 1, 4, 1, 1]
    # the judge wrote this race's end (a reset armed it again)
    summary, details = results(path, mission.FINISH, admin)
    assert [(e['vehicle'], e['laps'], e['finished']) for e in summary['ranking']] == [
        (1, 0, False), (2, 0, False)]
    assert [(d['boosts_used'], d['total_time_sec']) for d in details] == [(1, None),
                                                                            (0, None)]
    assert [len(d['collisions']) for d in details] == hits, details
    assert details[0]['events'] == race_1['events']
