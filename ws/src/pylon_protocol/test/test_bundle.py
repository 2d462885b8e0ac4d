"""Tests for the pylon_active_vessel_proxy bundle: build and validate."""

import hashlib
import math

from hypothesis import given
from hypothesis import strategies as st
from pylon_protocol.bundle import validate_bundle
from pylon_protocol.errors import ProtocolError
from pylon_testing.model_samples import (
    bundle,
    FAST,
    json_values,
    OTHER_SESSION,
    P,
    raw_bundle,
    reason_of,
    SESSION,
    URDF,
    VID,
)
import pytest

# Build


def test_build_bundle_wire_order_and_root_default():
    b = bundle()
    assert list(b) == ['type', 'version', 'sessionId', 'vesselId', 'modelId',
                       'geometryPolicy', 'persistencePolicy', 'rootFrame',
                       'baseToRootPosition', 'baseToRootRotation', 'urdf', 'partFrames']
    assert b['rootFrame'] == f'{P}_link_0000'


# Bundle validation


@pytest.mark.parametrize(
    ('change', 'reason'),
    [
        ({'type': 'ksp_active_vessel_proxy'}, 'bad_bundle'),
        ({'version': True}, 'bad_bundle'), ({'version': 1.0}, 'bad_bundle'),
        ({'version': 2}, 'bad_bundle'),
        ({'sessionId': 'AB' * 16}, 'bad_bundle'),
        ({'vesselId': VID.upper()}, 'bad_bundle'), ({'vesselId': ''}, 'bad_bundle'),
        ({'vesselId': 'f' * 32}, 'bad_urdf'),  # robot/link names carry vesselId[:8]
        ({'modelId': 'e' * 64}, 'bundle_mismatch'), ({'modelId': 'e'}, 'bad_bundle'),
        ({'geometryPolicy': 'mesh'}, 'bad_bundle'),
        ({'persistencePolicy': 'write_to_disk'}, 'bad_bundle'),
        ({'rootFrame': f'{P}_link_0001'}, 'bundle_mismatch'),
        ({'rootFrame': None}, 'bundle_mismatch'),
        ({'baseToRootPosition': [0, 0]}, 'bad_bundle'),
        ({'baseToRootPosition': [0, 0, math.nan]}, 'bad_bundle'),
        ({'baseToRootPosition': None}, 'bad_bundle'),
        ({'baseToRootRotation': [0, 0, 0, 0]}, 'bad_bundle'),
        ({'baseToRootRotation': [0, 0, 1]}, 'bad_bundle'),
        ({'baseToRootRotation': [0, 0, 0, True]}, 'bad_bundle'),
        ({'urdf': 5}, 'bad_bundle'),
        ({'partFrames': None}, 'bad_bundle'),
        ({'partFrames': 'abc'}, 'bad_bundle'),
        ({'partFrames': []}, 'bad_bundle'),
        ({'partFrames': [{'partFlightId': 1, 'frame': f'{P}_link_0000'},
                          {'partFlightId': 2, 'frame': f'{P}_link_0001'}]}, 'bad_bundle'),
        ({'partFrames': [{'partFlightId': 1, 'frame': f'{P}_link_0000'},
                          {'partFlightId': 2, 'frame': f'{P}_link_0000'},
                          {'partFlightId': 3, 'frame': f'{P}_link_0002'}]}, 'bad_bundle'),
        ({'partFrames': [{'partFlightId': 1, 'frame': f'{P}_link_0000'},
                          {'partFlightId': 1, 'frame': f'{P}_link_0001'},
                          {'partFlightId': 3, 'frame': f'{P}_link_0002'}]}, 'bad_bundle'),
        ({'partFrames': [{'partFlightId': 1, 'frame': f'{P}_link_0000'},
                          {'partFlightId': 2, 'frame': f'{P}_link_0001'},
                          {'partFlightId': 3, 'frame': f'{P}_link_0009'}]}, 'bad_bundle'),
        ({'partFrames': [{'partFlightId': -1, 'frame': f'{P}_link_0000'}, 1, 2]},
         'bad_bundle'),
        ({'partFrames': [{'partFlightId': 2**64, 'frame': f'{P}_link_0000'}, 1, 2]},
         'bad_bundle'),
        ({'partFrames': [{'partFlightId': True, 'frame': f'{P}_link_0000'}, 1, 2]},
         'bad_bundle'),
        ({'partFrames': [1, 2, 3]}, 'bad_bundle'),
    ],
)
def test_bundle_rules(change, reason):
    assert reason_of(validate_bundle, raw_bundle(**change)) == reason


@pytest.mark.parametrize('field', ['type', 'version', 'sessionId', 'vesselId', 'modelId',
                                   'geometryPolicy', 'persistencePolicy', 'rootFrame',
                                   'baseToRootPosition', 'baseToRootRotation', 'urdf',
                                   'partFrames'])
def test_bundle_fields_required(field):
    b = raw_bundle()
    del b[field]
    with pytest.raises(ProtocolError):
        validate_bundle(b)


def test_bundle_ids_must_match_chunk():
    assert validate_bundle(raw_bundle(), session_id=SESSION)['sessionId'] == SESSION
    assert reason_of(validate_bundle, raw_bundle(), session_id=OTHER_SESSION) == \
        'bundle_mismatch'
    assert reason_of(validate_bundle, raw_bundle(), model_id='f' * 64) == 'bundle_mismatch'
    assert reason_of(validate_bundle, [1]) == 'bad_bundle'


def test_bundle_normalised_copy():
    b = raw_bundle(baseToRootRotation=[0, 0, 3, 4], extra='ignored')
    out = validate_bundle(b)
    assert out['baseToRootRotation'] == [0.0, 0.0, 0.6, 0.8] and 'extra' not in out
    assert out['partFrames'][2] == {'partFlightId': 102, 'frame': f'{P}_link_0002'}


def test_model_id_over_utf8():
    urdf = URDF.replace('PyLoN primitive proxy', 'Kerbal Größe 🚀')
    b = raw_bundle(urdf=urdf, modelId=hashlib.sha256(urdf.encode('utf-8')).hexdigest())
    assert validate_bundle(b)['urdf'] == urdf
    lone = raw_bundle(urdf=URDF + '\ud800')
    assert reason_of(validate_bundle, lone) == 'bad_bundle'


# Robustness


@FAST
@given(st.dictionaries(st.sampled_from(list(raw_bundle())), json_values, max_size=4))
def test_random_bundles_only_raise_protocol_error(change):
    try:
        validate_bundle(raw_bundle(**change))
    except ProtocolError:
        pass
