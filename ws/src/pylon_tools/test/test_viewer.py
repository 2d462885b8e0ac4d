"""The live view's decisions without ROS: channels, interest, QoS, the allowlist, the inbox."""

from pathlib import Path
import threading

from pylon_common import qos, topics
from pylon_common.parameters import checked, file_section
from pylon_tools import viewer
from pylon_tools.viewer import Allowlist, Catalogue, Event, Inbox, Interest, Offered, Throttle
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[4]
SETPOINT = topics.resolved('setpoint', topics.SETPOINT_CONTROLLER)
SETPOINT_TYPE = 'pylon_interfaces/msg/ControlSetpoint'


def test_yaml_lists_every_parameter_with_its_default():
    data = yaml.safe_load((ROOT / 'config' / 'pylon_viewer.yaml').read_text(encoding='utf-8'))
    values = data[file_section(topics.VIEWER)]['ros__parameters']
    assert list(values) == [row.name for row in viewer.PARAMETERS]
    for row in viewer.PARAMETERS:
        assert type(values[row.name]) is type(row.default), row.name
        assert values[row.name] == row.default, row.name
        assert row.description.strip() and checked(row, row.default) == row.default


def test_defaults_serve_localhost_8765_and_let_in_the_setpoint_only():
    defaults = {row.name: row.default for row in viewer.PARAMETERS}
    assert (defaults['address'], defaults['port']) == ('127.0.0.1', 8765)
    assert defaults['client_publish_topics'] == SETPOINT == '/setpoint_controller/setpoint'
    allowlist = Allowlist(defaults['client_publish_topics'])
    assert list(allowlist.topics) == [SETPOINT]
    assert allowlist.topics[SETPOINT].type == SETPOINT_TYPE
    assert allowlist.topics[SETPOINT].profile is qos.COMMAND
    assert viewer.url('127.0.0.1', 8765) == 'ws://127.0.0.1:8765'
    assert viewer.url('::1', 9000) == 'ws://[::1]:9000'


def test_the_catalogue_follows_topics_as_they_come_and_go():
    catalogue = Catalogue()
    graph = [('/tf', ['tf2_msgs/msg/TFMessage']), ('/a', ['std_msgs/msg/String']),
             ('/odd', ['no_msgs/msg/Thing'])]
    changes = catalogue.changes(graph)
    assert changes.added == (('/a', 'std_msgs/msg/String'), ('/odd', 'no_msgs/msg/Thing'),
                             ('/tf', 'tf2_msgs/msg/TFMessage'))
    assert changes.removed == ()
    catalogue.advertise(('/a', 'std_msgs/msg/String'))
    catalogue.advertise(('/tf', 'tf2_msgs/msg/TFMessage'))
    catalogue.refuse(('/odd', 'no_msgs/msg/Thing'), 'not installed')
    assert catalogue.changes(graph) == viewer.Changes((), ())       # not retried every poll
    # /a goes, /a gets a second type, /odd goes and comes back: offered again
    changes = catalogue.changes([('/tf', ['tf2_msgs/msg/TFMessage'])])
    assert changes.removed == (('/a', 'std_msgs/msg/String'),)
    catalogue.remove(('/a', 'std_msgs/msg/String'))
    changes = catalogue.changes([('/tf', ['tf2_msgs/msg/TFMessage']),
                                 ('/a', ['std_msgs/msg/String', 'std_msgs/msg/Bool']),
                                 ('/odd', ['no_msgs/msg/Thing'])])
    assert changes.added == (('/a', 'std_msgs/msg/Bool'), ('/a', 'std_msgs/msg/String'),
                             ('/odd', 'no_msgs/msg/Thing'))


def test_interest_counts_clients_per_channel():
    interest = Interest()
    assert interest.subscribe(7, client=1) is True          # first: subscribe in ROS
    assert interest.subscribe(7, client=2) is False
    assert interest.subscribe(7, client=2) is False          # the same client again
    assert interest.unsubscribe(7, client=1) is False
    assert interest.unsubscribe(7, client=3) is False        # never subscribed
    assert interest.unsubscribe(7, client=2) is True         # last: unsubscribe in ROS
    assert interest.unsubscribe(7, client=2) is False and not interest.wanted(7)
    interest.subscribe(8, client=1)
    interest.drop(8)
    assert not interest.wanted(8) and interest.unsubscribe(8, client=1) is False


R, BE, V, TL = qos.RELIABLE, qos.BEST_EFFORT, qos.VOLATILE, qos.TRANSIENT_LOCAL


@pytest.mark.parametrize('offers, expected', [
    ([], (R, V, qos.READER_DEPTH)),
    ([Offered(R, TL, 1)], (R, TL, qos.READER_DEPTH)),                 # latched state
    ([Offered(BE, V, 10)], (BE, V, 10)),                                # the IMU
    ([Offered(R, V, 100), Offered(BE, V, 10)], (BE, V, 100)),          # one best effort
    ([Offered(R, TL, 1), Offered(R, V, 100)], (R, V, 100)),            # /tf_static + a volatile
    ([Offered(R, TL, 128)], (R, TL, 128)),                             # a latched history
    ([Offered(R, V, 0)], (R, V, qos.READER_DEPTH)),                    # depth not reported
])
def test_the_reader_matches_every_publisher(offers, expected):
    profile = viewer.reader_profile(offers)
    assert (profile.reliability, profile.durability, profile.depth) == expected
    assert profile.why


def test_the_reader_matches_the_contract_profiles():
    for key, row in topics.TOPICS.items():
        if row.profile is None:
            continue
        offered = Offered(row.profile.reliability, row.profile.durability, row.profile.depth)
        profile = viewer.reader_profile([offered])
        assert (profile.reliability, profile.durability) == (
            row.profile.reliability, row.profile.durability), key


def test_the_allowlist_lets_in_its_topics_with_their_type_and_cdr_only():
    allowlist = Allowlist(f'{SETPOINT}, /my/flag:std_msgs/Bool')
    assert allowlist.refusal(SETPOINT, 'cdr', SETPOINT_TYPE) == ''
    assert allowlist.refusal(SETPOINT, 'cdr', 'pylon_interfaces/ControlSetpoint') == ''
    assert allowlist.refusal('/my/flag', 'cdr', 'std_msgs/msg/Bool') == ''
    assert allowlist.topics['/my/flag'].profile is qos.COMMAND
    wrench = topics.name('control/wrench_command')
    assert 'not open to clients' in allowlist.refusal(wrench, 'cdr',
                                                      'pylon_interfaces/msg/BodyWrenchCommand')
    assert 'not ' + SETPOINT_TYPE in allowlist.refusal(SETPOINT, 'cdr', 'std_msgs/msg/String')
    assert 'is not' in allowlist.refusal(SETPOINT, 'cdr', 'nonsense')
    assert "encoding 'json'" in allowlist.refusal(SETPOINT, 'json', SETPOINT_TYPE)
    assert Allowlist('').topics == {}
    assert 'none' in Allowlist('').refusal(SETPOINT, 'cdr', SETPOINT_TYPE)


def test_allowlist_names_come_from_the_contract_or_carry_their_type():
    camera = topics.name('docking_port/command', id='port_1')
    allowlist = Allowlist(camera)
    assert allowlist.topics[camera].type == 'pylon_interfaces/msg/DockingPortCommand'
    assert viewer.contract_row(topics.name('tf')).key == 'tf'
    assert viewer.contract_row('/not/in/the/contract') is None
    for bad, why in (('relative/name', 'absolute'), ('/bad name', 'token'),
                     ('/not/in/the/contract', 'not in the topic contract'),
                     ('/x:std_msgs/srv/Empty', 'not a message type')):
        with pytest.raises(ValueError, match=why):
            Allowlist(bad)


def test_accepted_client_channels_are_per_client():
    channels = viewer.ClientChannels()
    channels.accept(1, 5, SETPOINT)
    assert channels.topic_of(1, 5) == SETPOINT and channels.topic_of(2, 5) is None
    channels.forget(1, 5)
    assert channels.topic_of(1, 5) is None


def test_the_inbox_keeps_control_events_and_bounds_data():
    inbox = Inbox(limit=3)
    assert all(inbox.put(Event('data', 1, 1, data=b'x')) for _ in range(3))
    assert inbox.put(Event('data', 1, 1, data=b'x')) is False
    assert inbox.put(Event('subscribe', 1, 9)) is True      # never dropped
    events = inbox.drain()
    assert [e.kind for e in events] == ['data'] * 3 + ['subscribe'] and inbox.dropped == 1
    assert inbox.put(Event('data', 1, 1)) is True and len(inbox.drain()) == 1


def test_the_inbox_is_safe_across_threads():
    inbox = Inbox(limit=10_000)
    writers = [threading.Thread(target=lambda: [inbox.put(Event('data', 1, 1))
                                                for _ in range(1000)]) for _ in range(4)]
    got = []
    for writer in writers:
        writer.start()
    while any(w.is_alive() for w in writers):
        got += inbox.drain()
    got += inbox.drain()
    assert len(got) == 4000 and inbox.dropped == 0


def test_the_throttle_holds_lines_back_and_counts_them():
    throttle = Throttle(period=5.0)
    assert throttle.allow('a', 0.0) == 0
    assert throttle.allow('a', 1.0) is None and throttle.allow('a', 2.0) is None
    assert throttle.allow('b', 2.0) == 0                  # another kind is not held
    assert throttle.allow('a', 5.5) == 2
    assert viewer.log_key('Invalid message from 127.0.0.1:56954: opcode 7') == \
        viewer.log_key('Invalid message from 127.0.0.1:40022: opcode 9')
