"""``pylon_control_batch``: checked whole, sequence once, applied in one physics step."""

from pylon_protocol import packets
import pytest

ENGINE = 'engine_9900004_0'            # the launchpad rocket's main engine mode
DECOUPLER = 'decoupler_9900002_0'
CLAMP = 'launch_clamp_9900005_0'
WHEEL = 1000.0                         # N·m, the pod's reaction wheel


def batch_fields(h, *, renew=False, flight=None, engines=(), separation=None, **outer):
    """Return the fields of a batch from ``h``'s controller, members built as the bridge does."""
    ident = h.identity(**outer)
    fields = {**ident, 'renewLease': renew, 'leaseDurationSeconds': 4.0, 'suppressSas': False,
              'hasFlight': flight is not None, 'hasSeparation': separation is not None,
              'engineJson': [packets.build_batch_member(
                  'pylon_actuator_command', actuatorType='engine', **ident,
                  **{'enabled': True, 'timeoutSeconds': 0.5, **engine})
                  for engine in engines]}
    if flight is not None:
        fields['flightJson'] = packets.build_batch_member(
            'pylon_flight_control_command', **ident,
            **{'landingGear': False, 'timeoutSeconds': 0.5, 'pitch': 0.0, 'yaw': 0.0,
               'roll': 0.0, **flight})
    if separation is not None:
        fields['separationJson'] = packets.build_batch_member(
            'pylon_actuator_command', actuatorType='separation', **ident,
            **{'separate': True, 'enabled': True, 'timeoutSeconds': 0.5, 'operationId': '',
               'operationInstance': '', 'operationEpoch': '', 'operationVesselId': '',
               **separation})
    return fields


def test_every_member_acts_in_the_same_frame(harness):
    h = harness('launchpad')
    h.acquire(duration=1.0)
    h.capture.clear()
    h.send('pylon_control_batch', **batch_fields(
        h, renew=True, flight={'roll': 1.0},
        engines=[{'name': ENGINE, 'targetThrust': 100000.0}],
        separation={'name': CLAMP, 'operationId': 'stage-1'}))
    h.frames(1)
    control = h.sim.control
    # the renewal, answered first; the clamp's split then resets the runtime session,
    # which ends the lease, and the separation's result follows in the new session
    answers = [(p['type'], p.get('reason')) for p in h.capture.packets
               if p['type'] in ('pylon_control_authority_state', 'pylon_separation_result')]
    assert answers[:3] == [('pylon_control_authority_state', 'lease_renewed'),
                           ('pylon_control_authority_state', 'runtime_session_changed'),
                           ('pylon_separation_result', 'separated')]
    assert control.authority.owner is None
    # flight, engine and separation all acted in the physics step of that frame
    assert control.wheel_torque[0] == pytest.approx(WHEEL)
    rocket = h.sim.world.active         # the engine burned propellant in that step
    burned = 180.0 - rocket.spec.resource_totals(rocket.resources)['LiquidFuel']
    assert burned == pytest.approx(100000.0 / (320.0 * 9.80665) * 0.02 * 0.45 / 5.0, rel=1e-6)
    assert 9900005 not in {p.persistent_id for p in h.sim.world.active.spec.parts}
    assert control.flight.applied is None     # the split's reset began a new flight session
    assert h.sim.stats.commands['pylon_control_batch'] == 1


def test_engines_apply_in_array_order_as_single_commands(harness):
    h = harness('launchpad')
    h.acquire()
    second = 'engine_9900004_1'               # not ignited at the start; enabled ignites it
    h.send('pylon_control_batch', **batch_fields(h, engines=[
        {'name': ENGINE, 'targetThrust': 50000.0},
        {'name': second, 'targetThrust': 83500.0}]))
    h.frames(1)
    thrust = h.sim.control.engine_thrust
    assert thrust[ENGINE] == pytest.approx(50000.0) and thrust[second] == pytest.approx(83500.0)


def test_a_batch_with_a_bad_member_does_nothing(harness):
    h = harness('launchpad')
    h.acquire()
    fields = batch_fields(h, renew=True, flight={'roll': 1.0},
                          engines=[{'name': ENGINE, 'targetThrust': 100000.0}],
                          separation={'name': DECOUPLER})
    sequence = fields['sequence']
    bad_engine = packets.build_batch_member(
        'pylon_actuator_command', actuatorType='engine', name='engine_9900004_1',
        **{**h.identity(), 'sequence': sequence + 100}, enabled=True, timeoutSeconds=0.5,
        targetThrust=1.0)                     # another sequence than the batch's
    h.send_raw({'type': 'pylon_control_batch', 'version': 1, **fields,
                'engineJson': fields['engineJson'] + [bad_engine]})
    h.send_raw({'type': 'pylon_control_batch', 'version': 1, **fields,
                'engineJson': ['{"actuatorType": "engine"']})          # not JSON
    h.send_raw({'type': 'pylon_control_batch', 'version': 1, **fields,
                'flightJson': fields['flightJson'].replace('"roll":1.0', '"roll":NaN')})
    h.frames(1)
    control = h.sim.control
    assert sum(h.sim.stats.command_rejected.values()) == 3
    assert control.flight.command is None and not control.engine_thrust
    assert control.typed(h.sim.world.active).separated_ids() == set()
    assert control.authority.last_sequence(('ctl', 'lease-1')) == 1       # the acquire's
    # the same batch without the bad member is then accepted with that sequence
    h.send_raw({'type': 'pylon_control_batch', 'version': 1, **fields})
    h.frames(1)
    assert h.of('pylon_separation_result')[-1]['reason'] == 'separated'
    assert len(h.sim.world.vessels) == 2
    assert control.authority.last_sequence(('ctl', 'lease-1')) == sequence


def test_the_batch_sequence_is_checked_once_and_refusals_answered(harness):
    h = harness('launchpad')
    h.acquire()
    h.send('pylon_control_batch', **batch_fields(h, flight={'roll': 1.0}))
    h.frames(1)
    h.capture.clear()
    h.sequence = 1                                 # the next batch repeats sequence 2
    h.send('pylon_control_batch', **batch_fields(
        h, flight={'roll': -1.0}, separation={'name': DECOUPLER, 'operationId': 'op-7'}))
    h.frames(1)
    [state] = h.of('pylon_control_authority_state')
    [result] = h.of('pylon_separation_result')
    assert state['reason'] == 'stale_sequence'
    assert (result['operationId'], result['reason'], result['completed'], result['success'],
            result['retained']) == ('op-7', 'stale_sequence', True, False, False)
    assert h.sim.control.flight.command.roll == 1.0
    assert h.sim.control.refused[('pylon_control_batch', 'stale_sequence')] == 1
    # without the lease nothing acts
    h.controller = 'intruder'
    h.send('pylon_control_batch', **batch_fields(h, flight={'roll': -1.0}))
    h.frames(1)
    assert h.sim.control.refused[('pylon_control_batch', 'lease_not_owned')] == 1
