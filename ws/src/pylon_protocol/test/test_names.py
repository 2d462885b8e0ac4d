"""Tests for identifier conventions."""

import random
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st
from pylon_protocol.errors import ProtocolError
from pylon_protocol.names import (
    actuator_name,
    docking_port_name,
    HEX32_RE,
    HEX64_RE,
    is_hex32,
    is_hex64,
    new_guid_hex,
    sanitize_name,
    sensor_id,
    vessel_id_hex,
)
from pylon_testing.properties import examples
import pytest

FAST = settings(max_examples=examples(150), deadline=None)


@pytest.mark.parametrize(
    ('raw', 'expected'),
    [
        ('Wheel', 'wheel'),  # lower case
        ('a-b.c d', 'a_b_c_d'),  # invalid characters become _
        ('a--__..b', 'a_b'),  # runs collapse
        ('__a__', 'a'),  # strip leading / trailing _
        ('  Engine 7 ', 'engine_7'),
        ('7up', '_7up'),  # leading digit gets a prefix
        ('__7', '_7'),  # prefix applied after stripping
        ('Ünïcode', 'n_code'),  # non-ASCII always becomes _
        ('\u212a', 'fb'),  # Kelvin sign is not folded to k
        ('ok_name_1', 'ok_name_1'),
    ],
)
def test_sanitize_rules(raw, expected):
    assert sanitize_name(raw, 'fb') == expected


@pytest.mark.parametrize('raw', ['', '___', '---', '  ', None, 12, 'äöü'])
def test_sanitize_uses_fallback_when_empty(raw):
    assert sanitize_name(raw, 'Fall back') == 'fall_back'


def test_sanitize_fallback_leading_digit():
    assert sanitize_name('', '9lives') == '_9lives'


def test_sanitize_both_empty_raises():
    with pytest.raises(ProtocolError) as info:
        sanitize_name('__', '--')
    assert info.value.reason == 'bad_name'


@pytest.mark.parametrize(('raw', 'limit', 'expected'), [
    ('abcdef', 3, 'abc'),
    ('ab_cdef', 3, 'ab'),  # no trailing _ after truncation
    ('12345', 3, '_12'),  # prefix counts towards the limit
])
def test_sanitize_max_length(raw, limit, expected):
    assert sanitize_name(raw, 'x', max_length=limit) == expected


@FAST
@given(st.text(max_size=80), st.integers(min_value=2, max_value=100))
def test_sanitize_properties(raw, limit):
    out = sanitize_name(raw, 'fallback', max_length=limit)
    assert out and len(out) <= limit
    assert out[0] == '_' or out[0].isalpha()
    assert all(c in 'abcdefghijklmnopqrstuvwxyz0123456789_' for c in out)
    assert '__' not in out.lstrip('_') and not out.endswith('_')
    assert sanitize_name(out, 'fallback') == out  # idempotent


@pytest.mark.parametrize(
    ('args', 'expected'),
    [
        (('wheel', 1234, 99, 0), 'wheel_1234_0'),
        (('engine', 0, 99, 2), 'engine_99_2'),  # flight id when persistent id is 0
        (('rcs', 7, 0, 1), 'rcs_7_1'),
        (('launch_clamp', 5, 6, 0), 'launch_clamp_5_0'),
        (('Servo Motor', 5, 6, 0), 'servo_motor_5_0'),
    ],
)
def test_actuator_name(args, expected):
    assert actuator_name(*args) == expected


@pytest.mark.parametrize(
    'args',
    [('', 1, 1, 0), ('wheel', -1, 1, 0), ('wheel', 2**32, 1, 0), ('wheel', 1, 1, -1),
     ('wheel', True, 1, 0), ('wheel', 1.0, 1, 0), (None, 1, 1, 0)],
)
def test_actuator_name_rejects(args):
    with pytest.raises(ProtocolError):
        actuator_name(*args)


def test_docking_port_name():
    assert docking_port_name(4000000000, 3) == 'docking_port_4000000000_3'
    with pytest.raises(ProtocolError):
        docking_port_name(-1, 0)


def test_sensor_id_default_is_kind_and_8_hex():
    value = sensor_id(None, 'lidar_2d', random.Random(1))
    assert value.startswith('lidar_2d_')
    suffix = value[len('lidar_2d_'):]
    assert len(suffix) == 8 and int(suffix, 16) >= 0
    assert value == sensor_id('  ', 'lidar_2d', random.Random(1))  # deterministic rng


def test_sensor_id_sanitises_and_limits():
    assert sensor_id('Front Cam', 'camera', random.Random(0)) == 'front_cam'
    long = sensor_id('x' * 200, 'camera', random.Random(0))
    assert long == 'x' * 64
    default = sensor_id(None, 'k' * 100, random.Random(0))
    assert len(default) == 64 and default.startswith('k' * 55 + '_')


def test_hex_regexes():
    assert is_hex32('0' * 32) and not is_hex32('0' * 31) and not is_hex32('A' * 32)
    assert not is_hex32('0' * 32 + '\n') and not HEX32_RE.match('0' * 32 + '\n')
    assert is_hex64('f' * 64) and not is_hex64('f' * 65) and not is_hex64(None)
    assert HEX64_RE.match('a' * 64)


@pytest.mark.parametrize('form', [
    '12345678-9ABC-DEF0-1234-56789ABCDEF0',
    '{12345678-9abc-def0-1234-56789abcdef0}',
    '123456789abcdef0123456789abcdef0',
    uuid.UUID('12345678-9abc-def0-1234-56789abcdef0'),
])
def test_vessel_id_hex(form):
    assert vessel_id_hex(form) == '123456789abcdef0123456789abcdef0'


@pytest.mark.parametrize('bad', ['', 'xyz', 12, None, '1' * 33, '1' * 1000])
def test_vessel_id_hex_rejects(bad):
    with pytest.raises(ProtocolError):
        vessel_id_hex(bad)


def test_new_guid_hex_is_v4_and_deterministic():
    a = new_guid_hex(random.Random(5))
    assert is_hex32(a) and a[12] == '4' and a[16] in '89ab'
    assert a == new_guid_hex(random.Random(5))
