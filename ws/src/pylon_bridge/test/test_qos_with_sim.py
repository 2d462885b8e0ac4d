"""The QoS of the typed actuator and star tracker topics on the ROS graph, with pylon_sim.

For each such topic of the bridge (its typed actuator commands and states, the star
tracker's state and attitude) the endpoint the bridge has in the graph offers or requests
what its row of the topic contract (``pylon_common.topics``) says; a reader or writer that
asks for what the other side does not give does not match (the incompatible-QoS event
fires, nothing is matched, no message goes through), and one with the contract's profile
matches, and a reader gets the data. Every profile comes from the contract: the refused
ones are derived from it.

No controller is in the loop and no image or scan is read: each scenario runs lean (no
LiDAR, no camera) at four times real time.
"""

from collections import defaultdict

from pylon_common import topics
from pylon_testing.recorder import TopicRecorder
import pytest
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.qos import DurabilityPolicy, QoSPolicyKind, QoSProfile, ReliabilityPolicy

pytestmark = pytest.mark.integration

TRACKER = 'star_tracker_main'
TYPED = tuple(key for key in topics.TOPICS if key.startswith('actuators/')
              and key.endswith(('/command', '/state')))
"""The typed actuator topics of the contract: servo, wheel, propulsion, RCS, separation."""
COMMANDS = tuple(key for key in TYPED if key in topics.subscribed_by(topics.UDP_BRIDGE))
STATES = {  # scenario: the state topics (and ids) of its active vessel's actuators and sensors
    'orbit': (('actuators/propulsion/state', ''), ('actuators/rcs/state', ''),
              ('star_tracker/state', TRACKER), ('star_tracker/attitude', TRACKER)),
    'surface': (('actuators/servo/state', ''), ('actuators/wheel/state', '')),
    'launchpad': (('actuators/separation/state', ''),),
}
STRONGER = ((ReliabilityPolicy.BEST_EFFORT, ReliabilityPolicy.RELIABLE,
             QoSPolicyKind.RELIABILITY),
            (DurabilityPolicy.VOLATILE, DurabilityPolicy.TRANSIENT_LOCAL,
             QoSPolicyKind.DURABILITY))
"""(weaker, stronger, policy): a reader asking for the stronger is refused by a writer that
offers the weaker, and a writer offering the weaker by a reader asking for the stronger."""
RATE = 4


def _changed(profile, **policies):
    return QoSProfile(**{'history': profile.history, 'depth': profile.depth,
                         'reliability': profile.reliability,
                         'durability': profile.durability, **policies})


def refused_reader(writer):
    """Return (a reader profile ``writer`` does not serve, the policy), or (None, None)."""
    for weak, strong, kind in STRONGER:
        name = kind.name.lower()
        if getattr(writer, name) == weak:
            return _changed(writer, **{name: strong}), kind
    return None, None


def refused_writer(reader):
    """Return (a writer profile ``reader`` does not take, the policy), or (None, None)."""
    for weak, strong, kind in STRONGER:
        name = kind.name.lower()
        if getattr(reader, name) == strong:
            return _changed(reader, **{name: weak}), kind
    return None, None


def _policies(profile):
    return profile.reliability, profile.durability


def _bridge_endpoint(infos):
    found = [info for info in infos if info.node_name == topics.UDP_BRIDGE]
    return found[0] if found else None


def test_every_typed_actuator_state_is_checked():
    assert {key for states in STATES.values() for key, _ in states} >= set(TYPED) - set(
        COMMANDS)


def _readers(rec, node, published, events):
    """Subscribe to each topic with its contract's profile and with the refused one.

    Return the subscriptions of the first, and of the second with the policy it fails on.
    """
    compatible, refused = {}, {}
    for key, sensor in published:
        name = topics.name(key, id=sensor)
        rec.until(lambda n=name: _bridge_endpoint(node.get_publishers_info_by_topic(n)),
                  f'the bridge publishing {name}')
        offered = _bridge_endpoint(node.get_publishers_info_by_topic(name)).qos_profile
        assert _policies(offered) == _policies(topics.qos(key)), key
        rec.add(key, name, topics.message_class(key), topics.qos(key, reader=True))
        compatible[key] = rec.subscriptions[-1]
        profile, kind = refused_reader(topics.qos(key))
        if profile is not None:
            callbacks = SubscriptionEventCallbacks(
                incompatible_qos=lambda e, k=key: events[k].append(e.last_policy_kind))
            rec.add(f'{key} refused', name, topics.message_class(key), profile,
                    event_callbacks=callbacks)
            refused[key] = (rec.subscriptions[-1], kind)
    return compatible, refused


def _writers(node, events):
    """Publish on each command topic with its contract's profile and with the refused one."""
    writers = {}
    for key in COMMANDS:
        name = topics.name(key)
        requested = _bridge_endpoint(node.get_subscriptions_info_by_topic(name))
        assert requested is not None, f'the bridge subscribes to {name} from the start'
        assert _policies(requested.qos_profile) == _policies(topics.qos(key)), key
        profile, kind = refused_writer(topics.qos(key, reader=True))
        callbacks = PublisherEventCallbacks(
            incompatible_qos=lambda e, k=key: events[k].append(e.last_policy_kind))
        writers[key] = (node.create_publisher(topics.message_class(key), name, topics.qos(key)),
                        node.create_publisher(topics.message_class(key), name, profile,
                                              event_callbacks=callbacks), kind)
    return writers


@pytest.mark.parametrize('scenario', sorted(STATES))
def test_only_the_contract_s_qos_matches_typed_actuator_and_star_tracker_topics(
        sim_stack, ros_node, lean_scenario, scenario):
    sim_stack(scenario=lean_scenario(scenario), sim_args=['--rate', str(RATE)])
    rec = TopicRecorder(ros_node)
    events = defaultdict(list)
    compatible, refused = _readers(rec, ros_node, STATES[scenario], events)
    writers = _writers(ros_node, events)

    def settled():
        return (all(len(rec.got[key]) >= 3 for key, _ in STATES[scenario])
                and all(events[key] for key in [*refused, *writers])
                and all(w.get_subscription_count() == 1 for w, _, _ in writers.values()))
    rec.until(settled, 'data on every topic, each refusal, each command writer matched')
    for key, (subscription, kind) in refused.items():
        assert rec.got[f'{key} refused'] == [], key
        assert subscription.get_publisher_count() == 0, key
        assert {QoSPolicyKind(k) for k in events[key]} == {kind}, key
    for key, (_, writer, kind) in writers.items():
        assert writer.get_subscription_count() == 0, key
        assert {QoSPolicyKind(k) for k in events[key]} == {kind}, key
    for key, subscription in compatible.items():
        assert subscription.get_publisher_count() == 1, key
