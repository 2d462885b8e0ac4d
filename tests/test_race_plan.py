"""The race's plan, statically: what ``DEMO_SCENARIO=race make demo`` and ``scenario:=race`` start.

No process runs: the plan (``pylon_components.mission_plan`` of the race) is checked for
four karts (domains, remaps, parameters, ground truth only in the management domain), and
the races of one and two karts (``race_scenario``) for their karts and rules.
"""

from pathlib import Path

from pylon_common import mission, topics
from pylon_kart import sensing
from pylon_protocol import management
from pylon_sim.loop.scenario import load_scenario
from pylon_testing.plan import load_components
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
pc = load_components(ROOT)
KART_NODES = ('udp_bridge', 'kart_interface', 'kart_localizer', 'trajectory_publisher',
              'pure_pursuit')


def _race(vehicles: int = 4, base: int = 0, **options) -> list:
    return pc.mission_plan(vehicles, scenario='race', domain_base=base, **options)


def _by_domain(planned) -> dict:
    out: dict = {}
    for proc in planned:
        out.setdefault(proc.domain, []).append(proc)
    return out


def test_four_karts_each_in_its_domain_with_bridge_interface_and_stack():
    planned = _race(4, base=10, viewers=('viewer',))
    domains = _by_domain(planned)
    (sim,) = domains.pop(None)
    assert sim.executable == 'pylon_sim'
    assert sim.arguments[:2] == ('--scenario', 'race')        # the shipped four-kart race
    assert sim.arguments[-2:] == ('--management-port', str(management.MANAGEMENT_PORT))
    assert [p.executable for p in domains.pop(10)] == ['sim_manager', 'referee', 'race_view',
                                                        'pylon_viewer']
    assert sorted(domains) == [11, 12, 13, 14]
    for k, domain in enumerate(sorted(domains), start=1):
        procs = domains[domain]
        assert tuple(p.executable for p in procs) == KART_NODES, domain
        assert {p.vehicle for p in procs} == {k} and domain == mission.vehicle_domain(10, k)
    # the referee is the race's judge: its files beside results_path
    referee = dict(next(p for p in planned if p.executable == 'referee').parameters)
    assert referee == {'results_path': '', 'exit_on_finish': False}
    judged = _race(2, results_path='/tmp/race/results.json', exit_on_finish=True)
    assert dict(next(p for p in judged if p.executable == 'referee').parameters) == {
        'results_path': '/tmp/race/results.json', 'exit_on_finish': True}
    manager = dict(next(p for p in planned if p.executable == 'sim_manager').parameters)
    assert manager['vehicles'] == 4 and manager['domain_base'] == 10
    assert manager['start_mode'] == 'count' and manager['exit_on_finish'] is False


def test_every_bridge_relays_ground_truth_to_the_management_domain_only():
    planned = _race(4, base=10)
    bridges = [p for p in planned if p.executable == 'udp_bridge']
    assert [p.vehicle for p in bridges] == [1, 2, 3, 4]
    for bridge in bridges:
        k, fixed = bridge.vehicle, dict(bridge.parameters)
        assert bridge.domain == 10 + k != fixed['ground_truth_domain'] == 10
        assert fixed['ground_truth_prefix'] == mission.ground_truth_prefix(k) == \
            f'/d{k}/awsim/ground_truth'
        assert fixed['control_snapshot_topic'] == f'/d{k}/awsim/ground_truth/control/snapshot'
        assert fixed['port'] == management.vehicle_port(pc.STATE_PORT, k)
        assert fixed['command_port'] == management.vehicle_port(pc.COMMAND_PORT, k)
        assert 'disable_ground_truth' not in fixed        # ground_truth_domain disables it here
        # a team's domain: the competition's sensor names, /clock, the IMU's frame
        assert fixed['publish_clock'] is True
        assert fixed['imu_frame_id'] == sensing.IMU_FRAME
        remaps = dict(bridge.remappings)
        for source, target in sensing.remapping().items():
            assert remaps[source] == target
        for source, target in mission.ground_truth_remappings(k):
            assert remaps[source] == target and target.startswith(f'/d{k}/awsim/')
        assert remaps[f'/d{k}/awsim/ground_truth/kinematic_state'] == \
            f'/d{k}/awsim/ground_truth/localization/kinematic_state'
    # no process of a kart's domain names any ground truth but its bridge's relay prefix
    for proc in planned:
        if proc.vehicle is None or proc.executable == 'udp_bridge':
            continue
        text = ' '.join(pc.command_line(proc))
        assert 'ground_truth' not in text and '/d1/' not in text, text


def test_kart_nodes_run_on_game_time_and_start_on_their_own_grid_slot():
    planned = _race(4)
    for proc in planned:
        if proc.vehicle is not None and proc.executable != 'udp_bridge':
            assert dict(proc.parameters)['use_sim_time'] is True, proc
    slots = [dict(p.parameters)['grid_slot'] for p in planned
             if p.executable == 'kart_localizer']
    assert slots == [0, 1, 2, 3]
    loaded = load_scenario('race')
    assert slots == [loaded.vessel(key).start.grid for key in loaded.vehicles]
    interfaces = [p for p in planned if p.executable == 'kart_interface']
    assert all(dict(p.remappings) == sensing.interface_remapping() for p in interfaces)
    (view,) = [p for p in planned if p.executable == 'race_view']
    assert dict(view.parameters) == {'track': 'kart', 'vehicles': 4, 'grid_slots': '0,1,2,3'}
    assert view.domain == 0 and view.node == topics.RACE_VIEW
    # use_sim_time:=false leaves the karts on their steady clocks, as for the single kart
    steady = _race(4, use_sim_time=False)
    assert not any('use_sim_time' in dict(p.parameters) for p in steady if p.vehicle)


def test_the_same_race_planned_twice_is_the_same():
    assert [pc.command_line(p) for p in _race(2, race_laps=1)] == \
        [pc.command_line(p) for p in _race(2, race_laps=1)]


@pytest.mark.parametrize('karts, laps, limit', [(1, 6, 600.0), (2, 6, 420.0)])
def test_fewer_karts_race_in_their_mode_on_the_first_slots(karts, laps, limit):
    path = pc.race_scenario('race', karts)
    assert path != 'race' and Path(path).name == f'race_{karts}karts.yaml'
    loaded = load_scenario(path)
    assert loaded.vehicles == tuple(f'kart_{k}' for k in range(1, karts + 1))
    assert [loaded.vessel(key).start.grid for key in loaded.vehicles] == list(range(karts))
    assert (loaded.task.rules.laps, loaded.task.rules.time_limit_sec) == (laps, limit)
    assert pc.race_scenario('race', 4) == 'race'
    planned = _race(karts)
    assert planned[0].arguments[1] == path
    assert len([p for p in planned if p.executable == 'udp_bridge']) == karts


def test_a_short_race_changes_only_its_rules():
    path = pc.race_scenario('race', 2, laps=1, time_limit_sec=30.0)
    assert Path(path).name == 'race_2karts_1laps_30s.yaml'
    rules = load_scenario(path).task.rules
    assert (rules.laps, rules.time_limit_sec) == (1, 30.0)
    shipped = load_scenario('race').task.rules
    assert (rules.boosts, rules.boost_sec, rules.penalty_speed_mps) == (
        shipped.boosts, shipped.boost_sec, shipped.penalty_speed_mps)
    data = yaml.safe_load(Path(path).read_text(encoding='utf-8'))
    assert [v['key'] for v in data['vessels']] == ['kart_1', 'kart_2']
    four = load_scenario(pc.race_scenario('race', 4, laps=2)).task.rules
    assert (four.laps, four.time_limit_sec) == (2, 420.0)


def test_a_race_is_refused_what_it_cannot_be():
    with pytest.raises(ValueError, match='not a race'):
        pc.race_scenario('rendezvous', 2)
    with pytest.raises(ValueError, match='has 4 karts'):
        pc.race_scenario('race', 5)
    with pytest.raises(ValueError, match='laps'):
        pc.race_scenario('race', 2, laps=0)
    with pytest.raises(ValueError, match='time limit'):
        pc.race_scenario('race', 2, time_limit_sec=float('nan'))
    with pytest.raises(ValueError, match='need a race'):
        pc.mission_plan(2, race_laps=1)
    with pytest.raises(ValueError, match='not .rviz'):
        pc.mission_plan(4, scenario='race', viewers=('rviz',))


def test_a_race_scenario_is_a_mission_of_all_its_karts():
    assert pc.default_vehicles('race') == 4
    assert pc.race_of('race') == ('kart', 4) and pc.race_of('kart') == ('kart', 1)
    assert pc.default_vehicles('kart') is None          # the single kart's own plan
    assert pc.race_of('rendezvous') is None and pc.default_vehicles('orbit') is None
    # the kart scenario as a one-kart mission is the one-kart race, on slot 0
    planned = pc.mission_plan(1, scenario='kart')
    assert [p.executable for p in planned if p.domain == 1] == list(KART_NODES)
    assert dict(next(p for p in planned if p.executable == 'kart_localizer').parameters)[
        'grid_slot'] == 0
