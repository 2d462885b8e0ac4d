"""BridgeCore without ROS: ground truth routed to another ROS domain (``--ground-truth-domain``).

With ``route_ground_truth`` the bridge core behaves as with ``--disable-ground-truth``, and
its truth core publishes, for the node in the other domain, exactly the ground-truth
messages one core with ground truth on would publish from the same datagrams.
"""

from diagnostic_msgs.msg import KeyValue
from pylon_bridge import diagnostics
from pylon_bridge.actions import Relayed
from pylon_bridge.core import BridgeCore, CoreConfig, GROUND_TRUTH_TYPES
from pylon_common.stamps import to_seconds
from pylon_common.topics import GROUND_TRUTH_KEYS
from pylon_interfaces.msg import VesselLifecycle
from pylon_protocol import frames
from pylon_testing import mod_datagrams as d
from pylon_testing.core_driver import Driver
import pytest

DT = 0.004            # the ROS clock moves between datagrams: the UT -> ROS offset matters
NEXT_ENV = d.envelope(generation=4, epoch='ab' * 16)


def frame(ut, env=d.ENV, origin=1, sequence=10):
    """Return one physics frame's datagrams as the mod sends them, the IMU first."""
    return [d.imu(ut, env), d.ground_truth(ut, env, origin=origin),
            d.nearby(ut, env, origin=origin), d.flight_state(ut, sequence, env),
            d.control_snapshot(sequence, ut, env)]


def flight():
    """Return a session's datagrams: model, frames, a new origin, a pause, a new epoch."""
    out = [d.session(), *d.model_chunks()]
    for i in range(3):
        out += frame(d.UT + 0.02 * i, sequence=10 + i)
    out += [d.session(ut=d.UT + 0.06, sequence=2), *frame(d.UT + 0.08, origin=2, sequence=13)]
    out += [d.nearby(d.UT + 0.08, origin=1)]                        # not after its truth
    out += [d.session(ut=d.UT + 0.1, sequence=3, paused=True), *frame(d.UT + 0.1, origin=2)]
    out += [d.session(ut=d.UT + 0.1, sequence=4), d.control_snapshot(13, d.UT + 0.12)]
    out += [d.session(ut=d.UT - 5.0, env=NEXT_ENV),                  # a revert: new epoch
            *frame(d.UT - 4.98, NEXT_ENV), *frame(d.UT - 4.96, NEXT_ENV, sequence=11)]
    return out


def fly(**config):
    """Return a driver fed ``flight()`` and then silence past the topic timeout."""
    driver = Driver(**config)
    driver.feed(*flight(), dt=DT)
    driver.tick(1.0)
    driver.tick(5.0)
    return driver


def local(driver):
    """Return the actions for the bridge's own domain."""
    return [a for a in driver.out if not isinstance(a, Relayed)]


def relayed(driver):
    """Return the actions for the ground-truth domain."""
    return [a.action for a in driver.out if isinstance(a, Relayed)]


def ground_truth(actions):
    """Return (kind, key, message) of every action on a ground-truth topic."""
    return [(type(a).__name__, a.key, getattr(a, 'msg', None)) for a in actions
            if a.key in GROUND_TRUTH_KEYS]


def test_the_bridge_domain_gets_exactly_what_disable_ground_truth_gives():
    routed, disabled = fly(route_ground_truth=True), fly(disable_ground_truth=True)
    assert local(routed) == disabled.out
    assert ground_truth(local(routed)) == []
    tf = routed.published('tf', local(routed))
    assert tf                                                  # base_link -> root at IMU stamps
    assert not [t for m in tf for t in m.transforms
                if frames.GROUND_TRUTH_ENU in (t.header.frame_id, t.child_frame_id)]
    lifecycles = routed.published('lifecycle', local(routed))
    assert {m.world_frame for m in lifecycles} == {''}
    assert VesselLifecycle.STATE_ACTIVE in {m.state for m in lifecycles}
    assert 'ground_truth_disabled' not in routed.core.stats.dropped


def test_the_truth_core_publishes_what_one_core_with_ground_truth_would():
    routed, single = fly(route_ground_truth=True), fly()
    expected = ground_truth(single.out)
    assert ground_truth(relayed(routed)) == expected
    assert {key for kind, key, _ in expected if kind == 'Publish'} == GROUND_TRUTH_KEYS
    assert {key for kind, key, _ in expected if kind == 'Destroy'} == GROUND_TRUTH_KEYS
    assert all(a.key in GROUND_TRUTH_KEYS for a in relayed(routed))     # no /tf, no lifecycle
    # each pose has its frame's IMU stamp (the same UT): one UT -> ROS mapping per session
    imu = [to_seconds(m) for m in routed.published('imu', local(routed))]
    pose = [to_seconds(m) for m in routed.published('ground_truth/pose', relayed(routed))]
    assert pose == imu and len(set(imu)) == len(imu) == 6
    # every drop and ignored datagram counted once, as by one core; none for routing
    assert routed.core.stats.dropped == single.core.stats.dropped
    assert routed.core.stats.dropped['paused'] > 0
    assert routed.core.stats.dropped['nearby_without_ground_truth'] == 1
    assert routed.core.stats.ignored == single.core.stats.ignored
    assert routed.core.stats.ignored['stale_control_snapshot'] == 2


def test_routed_datagrams_are_counted_by_type():
    routed = fly(route_ground_truth=True)
    sent = flight()
    stats = routed.core.stats
    assert stats.routed['pylon_ground_truth'] == stats.by_type['pylon_ground_truth'] == 7
    assert stats.routed['pylon_nearby_vessels'] == 8
    assert set(stats.routed) == GROUND_TRUTH_TYPES | {'pylon_session'}
    assert stats.routed['pylon_session'] == stats.by_type['pylon_session'] == 5
    assert stats.received == len(sent)
    values = diagnostics.datagrams(stats).values
    assert KeyValue(key='routed.pylon_flight_state', value='7') in values
    assert not any(v.key.startswith('dropped.ground_truth') for v in values)


def test_bad_datagrams_never_reach_the_truth_core():
    driver = Driver(route_ground_truth=True)
    driver.feed(b'\xff not json', b'{"type": "pylon_ground_truth"}', d.ground_truth(), dt=DT)
    driver.feed(d.session(), d.ground_truth(env=NEXT_ENV), dt=DT)
    assert relayed(driver) == []
    assert driver.core.stats.dropped['no_session'] == 1
    assert driver.core.stats.dropped['envelope_mismatch'] == 1
    assert dict(driver.core.stats.routed) == {'pylon_session': 1}
    assert driver.core.truth.stats.received == 0          # nothing decoded twice


def test_every_key_a_ground_truth_datagram_publishes_is_ground_truth_in_the_contract():
    core = BridgeCore(CoreConfig())
    core.handle(d.session(), None, 0.0, 0.0)
    for data in frame(d.UT):
        packet = core.decode(data)
        keys = {a.key for a in core.handle_packet(packet, None, 0.0, 0.0)}
        if packet['type'] in GROUND_TRUTH_TYPES:
            assert keys & GROUND_TRUTH_KEYS, packet['type']
            assert keys - {'tf', 'lifecycle', 'status'} <= GROUND_TRUTH_KEYS, packet['type']
        else:
            assert not keys & GROUND_TRUTH_KEYS, packet['type']


def test_ground_truth_cannot_be_both_disabled_and_routed():
    with pytest.raises(ValueError, match='disabled and routed'):
        BridgeCore(CoreConfig(disable_ground_truth=True, route_ground_truth=True))
