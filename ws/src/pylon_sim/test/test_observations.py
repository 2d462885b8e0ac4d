"""Flight state against the orbit, the control snapshot, and what a reset sends first."""

import math

import numpy as np
from pylon_protocol import packets
from pylon_protocol.envelope import ENVELOPE_KEYS
from pylon_sim.game.bodies import KERBIN
import pytest

R, MU = KERBIN.radius, KERBIN.gm


def envelope_of(packet: dict) -> tuple:
    return tuple(packet[k] for k in ENVELOPE_KEYS)


def unwrapped(packet: dict) -> dict:
    return {k: v for k, v in packet.items() if k not in ENVELOPE_KEYS}


def test_flight_state_matches_the_analytic_orbit(harness):
    e, periapsis, nu = 0.2, 100000.0, math.radians(60.0)
    h = harness(changes={'sat': {'orbit': {'body': 'Kerbin', 'altitude': periapsis,
                                           'eccentricity': e, 'true_anomaly': 60.0}}})
    h.frames(1)
    [state] = h.of('pylon_flight_state')
    a = (R + periapsis) / (1 - e)
    p = a * (1 - e * e)
    r = p / (1 + e * math.cos(nu))
    big_e = 2 * math.atan(math.sqrt((1 - e) / (1 + e)) * math.tan(nu / 2))
    mean = big_e - e * math.sin(big_e)
    dt = 0.02                                   # the sample is one physics step later
    assert state['apoapsis'] == pytest.approx(a * (1 + e) - R, abs=1.0)
    assert state['periapsis'] == pytest.approx(periapsis, abs=1.0)
    radial_speed = math.sqrt(MU / p) * e * math.sin(nu)
    assert state['altitudeAsl'] == pytest.approx(r - R + radial_speed * dt, abs=1.0)
    assert state['altitudeAgl'] == pytest.approx(state['altitudeAsl'])
    assert state['verticalSpeed'] == pytest.approx(radial_speed, rel=1e-3)
    assert state['timeToApoapsis'] == pytest.approx((math.pi - mean) / math.sqrt(MU / a ** 3)
                                                    - dt, abs=0.05)
    assert state['gravity'] == pytest.approx(MU / (r + radial_speed * dt) ** 2, rel=1e-4)
    assert state['dynamicPressure'] == 0.0 and not state['landed']
    assert (state['bodyName'], state['bodyRadius'], state['gravitationalParameter'],
            state['atmosphereDepth']) == ('Kerbin', R, MU, 70000.0)


def test_dynamic_pressure_follows_the_exponential_atmosphere(harness):
    altitude = 50000.0
    h = harness(changes={'sat': {'orbit': {'body': 'Kerbin', 'altitude': altitude}}})
    h.frames(1)
    [state] = h.of('pylon_flight_state')
    r = R + altitude
    surface_speed = math.sqrt(MU / r) - KERBIN.angular_velocity * r   # prograde, equatorial
    density = 1.225 * math.exp(-state['altitudeAsl'] / 5600.0)
    assert state['horizontalSpeed'] == pytest.approx(surface_speed, rel=1e-4)
    assert state['dynamicPressure'] == pytest.approx(0.5 * density * surface_speed ** 2,
                                                     rel=1e-3)
    assert 1.0 < state['dynamicPressure'] < 1e4


@pytest.mark.parametrize('name', ['launchpad', 'surface'])
def test_a_vessel_on_the_ground_is_landed(harness, name):
    h = harness(name)
    h.run(0.5)
    state = h.of('pylon_flight_state')[-1]
    assert state['landed'] and not state['splashed']
    # the rocket is fixed to the ground (AGL from its resting height); the rover rests on
    # its wheels' springs over the terrain's flat middle: AGL = its CoM's height above it
    tolerance = 1e-3 if name == 'surface' else 1e-6
    if name == 'surface':
        assert state['altitudeAgl'] == pytest.approx(state['altitudeAsl'], abs=1e-6)
        assert state['altitudeAgl'] == pytest.approx(0.444, abs=0.01)    # the scenario's
    else:
        assert state['altitudeAgl'] == pytest.approx(0.0, abs=tolerance)
    assert abs(state['verticalSpeed']) < tolerance and state['dynamicPressure'] < 1e-6
    assert state['periapsis'] < 0.0                      # a ground track is no orbit


def test_snapshot_members_are_the_packets_sent_in_that_frame(harness):
    h = harness('launchpad')
    h.run(1.0)
    snapshots = h.of('pylon_control_snapshot')
    assert len(snapshots) == pytest.approx(30, abs=1)
    flights = {p['observationSequence']: p for p in h.of('pylon_flight_state')}
    states = {}
    for p in h.of('pylon_actuator_state'):
        states.setdefault(p['observationSequence'], []).append(p)
    for snapshot in snapshots:
        sequence = snapshot['observationSequence']
        assert snapshot['flight'] == unwrapped(flights[sequence])
        sent = states[sequence]
        assert snapshot['engines'] == [unwrapped(s) for s in sent
                                       if s['actuatorType'] == 'engine']
        assert snapshot['separations'] == [unwrapped(s) for s in sent
                                           if s['actuatorType'] == 'separation']
        assert envelope_of(snapshot) == envelope_of(flights[sequence])
    last = snapshots[-1]
    assert len(last['engines']) == 2 and len(last['separations']) == 2
    assert {m['universalTime'] for m in last['engines'] + last['separations']} == {
        last['flight']['universalTime']}


def test_an_oversize_snapshot_is_omitted(harness, monkeypatch):
    monkeypatch.setattr(packets, 'MOD_MAX_DATAGRAM_BYTES', 2000)
    h = harness('launchpad')
    h.run(0.5)
    assert h.of('pylon_control_snapshot') == []
    assert h.sim.stats.oversize['pylon_control_snapshot'] == len(h.of('pylon_flight_state'))


def test_the_new_sessions_heartbeat_goes_first_after_a_switch(harness):
    h = harness(lean=False)                     # with its LiDAR and camera
    h.acquire()
    h.run(0.5)
    old = envelope_of(h.capture.packets[-1])
    h.capture.clear()
    h.sim.admin({'cmd': 'switch', 'vessel': 'target'})
    h.run(0.3)
    new = [p for p in h.capture.packets if envelope_of(p) != old]
    assert new and len(new) == len(h.capture.packets)
    assert new[0]['type'] == 'pylon_session' and new[0]['vesselId'] == \
        h.sim.world.vessels['target'].vessel_id
    types = {p['type']: p for p in new[1:]}
    for notice in ('pylon_lidar_inactive', 'pylon_camera_inactive', 'pylon_vessel_urdf_clear',
                   'pylon_control_authority_state', 'pylon_star_tracker'):
        assert notice in types, notice
    assert types['pylon_star_tracker']['reason'] == 'inactive'
    states = [p['reason'] for p in new if p['type'] == 'pylon_control_authority_state']
    assert states[0] == 'active_vessel_changed'
    # and the regular heartbeats keep their 10 Hz from there
    beats = [i for i, p in enumerate(new) if p['type'] == 'pylon_session']
    assert len(beats) == pytest.approx(3, abs=1)


@pytest.mark.parametrize('event', [{'cmd': 'revert'}, {'cmd': 'pack'}])
def test_the_heartbeat_goes_first_after_other_resets(harness, event):
    h = harness()
    h.run(0.3)
    old = envelope_of(h.capture.packets[-1])
    h.capture.clear()
    h.sim.admin(event)
    h.run(0.3)
    assert h.capture.packets[0]['type'] == 'pylon_session'
    assert envelope_of(h.capture.packets[0]) != old


def test_the_star_tracker_says_packed_while_on_rails(harness):
    h = harness()
    h.run(0.5)
    h.capture.clear()
    h.sim.admin({'cmd': 'pack'})
    h.run(1.0)
    samples = h.of('pylon_star_tracker')
    assert len(samples) == pytest.approx(5, abs=1)
    assert {(p['reason'], p['valid']) for p in samples} == {('packed', False)}
    assert all(p['orientation'] is None for p in samples)
    h.sim.admin({'cmd': 'unpack'})
    h.sim.admin({'cmd': 'warp', 'rate': 10, 'mode': 'rails'})
    h.capture.clear()
    h.run(0.5)
    assert {p['reason'] for p in h.of('pylon_star_tracker')} == {'packed'}
    assert not any(p['available'] for p in h.of('pylon_session'))


def test_every_newer_packet_validates_in_a_long_orbit_run(harness):
    h = harness()
    h.acquire()
    for _ in range(3):
        h.send('pylon_flight_control_command', landingGear=True, timeoutSeconds=0.3,
               pitch=0.2, yaw=0.1, roll=-0.3, **h.identity())
        h.run(1.0)
    types = {p['type'] for p in h.capture.packets}
    assert {'pylon_control_snapshot', 'pylon_vehicle_health',
            'pylon_part_thermal_state'} <= types
    rate = np.linalg.norm(h.sim.world.active.state.body_rate)
    assert rate > 0.0
