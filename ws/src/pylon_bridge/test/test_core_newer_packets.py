"""BridgeCore without ROS: the mod's newer packets (flight, game state, health, results).

Flight state and control snapshots, the game state derived from heartbeats (and /clock),
power and thermal state, separation results with their cache and the service's answers,
and the refusal rules of each; the datagrams are the mod's (``mod_datagrams``).
"""

import json

from pylon_bridge import simulator_state
from pylon_common.stamps import to_seconds
from pylon_interfaces.msg import SimulatorState, VesselLifecycle
from pylon_interfaces.srv import GetSeparationResult
from pylon_testing import mod_datagrams as d
from pylon_testing.core_driver import Driver, started
import pytest

S = SimulatorState


def beat(driver, sequence, ut, realtime, paused=False, dt=0.1):
    """Feed a heartbeat with its own game wall time; return the SimulatorState published."""
    data = d.encode('pylon_session', d.ENV, vesselId=d.VESSEL, vesselName='Rover',
                    available=not paused, universalTime=ut, observationSequence=sequence,
                    realtimeSinceStartup=realtime, paused=paused, packed=False,
                    warpRate=1.0, physicsWarp=False)
    states = driver.published('simulator/state', driver.feed(data, dt=dt))
    return states[-1] if states else None


def test_simulator_state_follows_the_heartbeats():
    driver = Driver()
    first = beat(driver, 1, 100.0, 10.0)
    assert (first.state, first.communication_alive, first.simulation_advancing) == (
        S.STATE_INITIALIZING, True, False)
    assert (first.vessel_id, first.runtime_generation, first.universal_time) == (
        d.VESSEL, 3, 100.0)
    moving = beat(driver, 2, 100.1, 10.1)
    assert moving.state == S.STATE_ADVANCING and moving.simulation_advancing
    paused = beat(driver, 3, 100.1, 10.2, paused=True)
    assert paused.state == S.STATE_PAUSED and paused.seconds_since_progress == 0.0
    resumed = beat(driver, 4, 100.1, 10.3)
    assert resumed.state == S.STATE_INITIALIZING        # pause changed: a reset
    still = beat(driver, 5, 100.1, 10.9)
    assert still.state == S.STATE_STALLED
    assert still.seconds_since_progress == pytest.approx(0.6)
    assert driver.published('simulator/universal_time')[-1].data == 100.1


def test_simulator_state_skips_backwards_and_old_heartbeats():
    driver = Driver()
    beat(driver, 5, 100.0, 10.0)
    assert beat(driver, 6, 100.1, 9.0) is None           # game wall time went back
    assert driver.core.simulator.backwards == 1
    old = d.encode('pylon_session', d.ENV, vesselId=d.VESSEL, available=True,
                   universalTime=100.2)
    assert driver.published('simulator/state', driver.feed(old)) == []


def test_simulator_state_turns_stale_once_and_recovers():
    driver = Driver(topic_timeout_sec=3.0)
    beat(driver, 1, 100.0, 10.0)
    assert driver.published('simulator/state', driver.tick(2.9)) == []
    [stale] = driver.published('simulator/state', driver.tick(0.2))
    assert (stale.state, stale.communication_alive) == (S.STATE_STALE, False)
    assert stale.heartbeat_age_sec == pytest.approx(3.1)
    assert stale.universal_time == 100.0                 # the last values stay
    assert driver.published('simulator/state', driver.tick(1.0)) == []
    back = beat(driver, 2, 101.0, 11.0)
    assert back.state == S.STATE_INITIALIZING and back.communication_alive


def test_unavailable_without_a_vessel():
    tracker = simulator_state.SimulatorTracker()
    packet = {'runtimeInstance': d.INSTANCE, 'runtimeGeneration': 3, 'runtimeEpoch': d.EPOCH,
              'runtimeVesselId': '', 'vesselId': '', 'observationSequence': 1,
              'universalTime': 5.0, 'realtimeSinceStartup': 1.0, 'paused': False,
              'packed': False, 'physicsWarp': False, 'available': False, 'warpRate': 1.0}
    assert tracker.observe(packet, 0.0).state == S.STATE_UNAVAILABLE


def test_lifecycle_active_from_the_next_heartbeat():
    driver = started()
    assert driver.lifecycle().state == VesselLifecycle.STATE_CHANGED
    driver.feed(d.session(sequence=2, ut=d.UT + 0.1))
    active = driver.lifecycle()
    assert (active.state, active.generation, active.reason) == (
        VesselLifecycle.STATE_ACTIVE, 1, 'session_current')


def test_flight_state_fields_and_stamp():
    driver = started()
    driver.feed(d.ground_truth())                        # fixes the UT -> ROS offset
    [msg] = driver.published('ground_truth/flight', driver.feed(
        d.flight_state(ut=d.UT + 0.5, **d.APPLIED), dt=0.01))
    offset = to_seconds(driver.published('ground_truth/pose')[-1]) - d.UT
    assert to_seconds(msg) == pytest.approx(d.UT + 0.5 + offset)
    assert msg.header.frame_id == 'base_link' and msg.vessel_id == d.VESSEL
    assert (msg.runtime_instance, msg.runtime_generation, msg.observation_sequence) == (
        d.INSTANCE, 3, 10)
    assert (msg.body_name, msg.altitude_asl, msg.apoapsis) == ('Kerbin', 80000.0, 81000.0)
    assert (msg.gravitational_parameter, msg.time_to_apoapsis) == (3.5316e12, 600.0)
    assert (msg.orbital_velocity_body.x, msg.angular_velocity_body.z) == (2270.0, 0.01)
    assert (msg.applied_input_valid, msg.applied_input_sequence, msg.applied_yaw) == (
        True, 7, -0.5)


def test_flight_state_refusals():
    driver = started()
    fields = d.flight_fields()
    del fields['observationSequence']
    assert driver.feed(d.encode('pylon_flight_state', **fields)) == []
    assert driver.core.stats.dropped['missing_observation_sequence'] == 1
    partial = d.flight_state(appliedInputValid=True, appliedPitch=0.5)
    assert driver.feed(partial) == []
    assert driver.core.stats.dropped['incomplete_applied_inputs'] == 1
    negative_age = d.flight_state(**{**d.APPLIED, 'appliedInputAge': -1.0})
    assert driver.feed(negative_age) == []
    assert driver.core.stats.dropped['invalid_applied_inputs'] == 1
    weightless = {**d.ENV.to_wire(), 'type': 'pylon_flight_state', 'version': 1,
                  **d.flight_fields(mass=0.0)}
    assert driver.feed(json.dumps(weightless).encode()) == []
    assert not driver.published('ground_truth/flight')
    hidden = started(disable_ground_truth=True)
    assert hidden.feed(d.flight_state()) == []
    assert hidden.core.stats.dropped['ground_truth_disabled'] == 1


def test_control_snapshot_members_share_the_frame():
    driver = started()
    [msg] = driver.published('control/snapshot', driver.feed(d.control_snapshot(20)))
    [engine], [separator] = msg.engines, msg.separations
    stamps = {to_seconds(m) for m in (msg, msg.flight, engine, separator)}
    assert len(stamps) == 1
    assert (engine.id, engine.thrust, engine.runtime_epoch, engine.observation_sequence) == (
        'engine_5_0', 100.0, d.EPOCH, 20)
    assert (separator.mechanism, separator.available, msg.flight.mass) == (
        'decoupler', True, 5000.0)
    assert driver.feed(d.control_snapshot(20)) == []
    assert driver.feed(d.control_snapshot(19)) == []
    assert driver.core.stats.ignored['stale_control_snapshot'] == 2
    assert driver.published('control/snapshot', driver.feed(d.control_snapshot(21)))


def test_power_rate_from_successive_samples():
    driver = started()
    [first] = driver.published('health/power', driver.feed(d.vehicle_health(100.0)))
    assert (first.electric_charge, first.electric_capacity) == (100.0, 200.0)
    assert not first.net_charge_rate_valid and first.header.frame_id == ''
    [second] = driver.published('health/power', driver.feed(
        d.vehicle_health(99.0, ut=d.UT + 0.5, sequence=11)))
    assert second.net_charge_rate_valid
    assert second.net_charge_rate_estimate == pytest.approx(-2.0)
    assert second.rate_sample_interval_sec == pytest.approx(0.5)
    assert not second.generation_rate_valid and not second.consumption_rate_valid
    assert driver.feed(d.vehicle_health(98.0, ut=d.UT + 0.4, sequence=12)) == []
    assert driver.core.stats.ignored['stale_vehicle_health'] == 1
    [resized] = driver.published('health/power', driver.feed(
        d.vehicle_health(98.0, ut=d.UT + 1.0, sequence=13, capacity=300.0)))
    assert not resized.net_charge_rate_valid


def test_part_thermal_per_part_ordering():
    driver = started()
    out = driver.feed(d.part_thermal(1, 300.0), d.part_thermal(2, 310.0),
                      d.part_thermal(1, 305.0, sequence=9), d.part_thermal(1, 320.0, sequence=11))
    msgs = driver.published('health/thermal', out)
    assert [(m.part_flight_id, m.temperature) for m in msgs] == [
        (1, 300.0), (2, 310.0), (1, 320.0)]
    assert (msgs[0].part_persistent_id, msgs[0].skin_temperature) == (2, 305.0)
    assert driver.core.stats.ignored['stale_part_thermal_state'] == 1


def request(operation_id='op-1', env=d.ENV):
    return GetSeparationResult.Request(
        operation_id=operation_id, original_runtime_instance=env.runtime_instance,
        original_runtime_epoch=env.runtime_epoch, original_vessel_id=env.runtime_vessel_id)


def test_separation_results_are_cached_and_never_weakened():
    driver = started()
    [done] = driver.published('actuators/separation/result', driver.feed(d.separation_result()))
    assert (done.operation_id, done.id, done.success, done.reason) == (
        'op-1', 'decoupler_12_0', True, 'separated')
    assert done.resulting_vessel_ids == [d.VESSEL]
    repeat = driver.feed(d.separation_result(retentionRemainingSeconds=590.0))
    assert driver.published('actuators/separation/result', repeat)
    pending = d.separation_result(completed=False, success=False, reason='pending',
                                  resultEpoch='')
    assert driver.feed(pending) == []
    assert driver.feed(d.separation_result(retained=False)) == []
    assert driver.feed(d.separation_result(reason='actuator_unavailable', success=False)) == []
    dropped = driver.core.stats.dropped
    assert (dropped['separation_result_regressed'], dropped['separation_result_not_retained'],
            dropped['separation_result_changed']) == (1, 1, 1)


def test_get_result_from_the_cache_or_by_a_query():
    driver = started()
    driver.feed(d.separation_result(), dt=1.0)
    response, query = driver.core.separation_query(request(), driver.now + 10.0, 2000.0)
    assert (response.found, response.query_sent, response.reason, query) == (
        True, False, 'separated', b'')
    assert response.result.retention_remaining_sec == pytest.approx(590.0)
    response, query = driver.core.separation_query(request('op-2'), driver.now, 2000.0)
    assert (response.found, response.query_sent, response.reason) == (False, True, 'query_sent')
    sent = json.loads(query)
    assert sent['type'] == 'pylon_separation_query' and sent['operationId'] == 'op-2'
    assert sent['runtimeEpoch'] == d.EPOCH and sent['operationVesselId'] == d.VESSEL
    bad, query = driver.core.separation_query(request(' '), driver.now, 2000.0)
    assert (bad.found, bad.query_sent, query) == (False, False, b'')
    assert 'operationId' in bad.reason


def test_get_result_without_a_session_keeps_the_cache():
    driver = started(topic_timeout_sec=3.0)
    driver.feed(d.separation_result(completed=False, success=False, reason='pending',
                                    resultEpoch=''))
    response, query = driver.core.separation_query(request(), driver.now + 5.0, 2000.0)
    assert (response.found, response.query_sent, query) == (True, False, b'')
    assert response.reason == 'no fresh active flight session'
    assert response.result.reason == 'pending'


def test_not_retained_result_is_not_found_and_not_queried():
    driver = started()
    driver.feed(d.separation_result(retained=False, reason='result_not_retained',
                                    success=False, retentionRemainingSeconds=0.0))
    response, query = driver.core.separation_query(request(), driver.now + 0.5, 2000.0)
    assert (response.found, response.reason, query) == (False, 'result_not_retained', b'')


def test_clock_follows_mapped_ut_and_never_goes_back():
    driver = started(publish_clock=True)
    clocks = driver.published('clock')
    assert len(clocks) == 1
    driver.feed(d.imu(ut=d.UT + 1.0), dt=0.05)
    driver.feed(d.imu(ut=d.UT + 0.5), dt=0.05)      # older UT: dropped, no clock
    times = [to_seconds(c.clock) for c in driver.published('clock')]
    assert times[1] - times[0] == pytest.approx(1.0) and len(times) == 2
    rewound = d.envelope(generation=4)               # a revert: new session, earlier UT
    driver.feed(d.session(ut=d.UT - 100.0, env=rewound, sequence=5), dt=0.05)
    after = [to_seconds(c.clock) for c in driver.published('clock')]
    assert after == sorted(after)
    assert not started().published('clock')


def test_a_model_chunk_goes_through_the_handler_table_and_moves_no_clock():
    # its sentAtUt is not read: the chunk carries no universalTime, so no /clock
    driver = started(publish_clock=True)
    before = len(driver.published('clock'))
    actions = driver.feed(*d.model_chunks(), dt=0.05)
    assert driver.published('robot_description', actions)        # the model is handled
    assert len(driver.published('clock')) == before
    remote = started(publish_clock=True)          # the chunk's source still matters
    assert not remote.published('robot_description', remote.feed(
        *d.model_chunks(), source=('192.0.2.1', 49999)))
    assert remote.core.stats.dropped


def test_frame_prefix_names_the_sensor_frames():
    driver = started(frame_prefix='rover')
    [scan] = driver.published('lidar_2d', driver.feed(d.lidar_2d(ut=d.UT + 0.1)))
    assert scan.header.frame_id == f'rover_{d.VESSEL[:8]}_lidar_2d_front'


def test_model_tf_keeps_the_proxy_connected_without_ground_truth_or_sensors():
    driver = started(disable_ground_truth=True)
    driver.feed(*d.model_chunks())
    model = driver.core.shared.description.model
    assert model is not None and driver.core.model_tf(driver.now, 2000.0) == []  # no time yet
    driver.feed(d.vehicle_health(100.0, ut=d.UT + 1.0))       # a datagram with UT
    [tf] = driver.published('tf', driver.core.model_tf(driver.now, 2000.0))
    [root] = tf.transforms
    assert (root.header.frame_id, root.child_frame_id) == ('base_link', model.root_frame)
    assert driver.core.model_tf(driver.now, 2000.0) == []      # that stamp was sent


def test_a_star_trackers_inactive_notice_of_the_vessel_left_passes_the_gate():
    driver = started()
    switched = d.envelope(generation=4, vessel=d.OTHER)
    driver.feed(d.session(env=switched, sequence=2))
    left = d.star_tracker(env=switched, reason='inactive', vessel=d.VESSEL)
    [state] = driver.published('star_tracker/state', driver.feed(left))
    assert state.reason == 'inactive' and not state.valid
    tracking = d.star_tracker(env=switched, sequence=2, vessel=d.VESSEL)   # others must match
    assert driver.feed(tracking) == []
    assert driver.core.stats.dropped['vessel_id_mismatch'] == 1


def test_the_star_trackers_packed_notice_passes_while_the_vessel_is_on_rails():
    driver = started()
    driver.feed(d.session(sequence=2, available=False))           # packed: unavailable
    [state] = driver.published('star_tracker/state',
                               driver.feed(d.star_tracker(reason='packed')))
    assert state.reason == 'packed' and not state.valid
    assert driver.feed(d.imu()) == []                              # nothing else does
    assert driver.core.stats.dropped['session_unavailable'] == 1
