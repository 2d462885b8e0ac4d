"""Datagrams to dicts and back: the byte-level rules of PyLoN protocol v1.

A datagram is one UTF-8 JSON object of at most 65535 bytes. Decoding follows the bridge:
``json.loads`` of the UTF-8 text, which also takes the non-standard ``NaN``, ``Infinity`` and
``-Infinity`` tokens (the per-field validators reject them where a finite number is needed)
and keeps the last value of a duplicated key (the mod writes some keys twice), at the place of
its first occurrence. Every datagram has a ``type`` starting with ``pylon_`` and ``version``
equal to the JSON integer ``1``.

When ``msgspec`` is installed, ``decode_json`` first tries its JSON decoder, about five times
as fast as ``json.loads``: on what it accepts it returns what ``json.loads`` returns (same
types, values, key order, last duplicate kept; the tests check it). Everything it refuses
(NaN and Infinity tokens, numbers beyond a double or beyond 64-bit integers, invalid UTF-8
or JSON, lone surrogate escapes) is decoded again by the reference path, ``json.loads``,
which gives the result or the error. Text with ``FAST_PATH_MAX_OPENINGS`` or more ``[`` and
``{`` bytes always takes the reference path, so that how deep ``json.loads`` may nest (it
raises ``too_deep`` a few levels before msgspec would) never differs between the paths.

Two encoders exist because the two peers write JSON differently:

* commands (bridge to mod) are compact ``json.dumps`` output without NaN or Infinity;
* state (mod to bridge) is compact JSON whose numbers look like C#'s round-trip format:
  an integral double has no fractional part (``1``, ``-0``) and exponents are upper case
  with a sign and at least two digits (``1E-05``, ``1.5E+16``). Non-ASCII text is written
  as raw UTF-8, as the mod does. The switch to exponent form stays Python's (at 1e16 and
  below 1e-4), so a value in [1e15, 1e16) may be written in full where C# would use an
  exponent; every form parses to the same double.
"""

from __future__ import annotations

import json
import re

from pylon_protocol.errors import ProtocolError

try:
    from msgspec.json import decode as _fast_loads
except ImportError:         # the reference path alone (msgspec is optional)
    _fast_loads = None

MAX_DATAGRAM_BYTES = 65535
#: Text with this many ``[`` and ``{`` bytes (or more) skips the msgspec decoder.
FAST_PATH_MAX_OPENINGS = 256
TYPE_PREFIX = 'pylon_'
PROTOCOL_VERSION = 1

#: Every reason ``decode_json``, ``check_header`` and the encoders raise.
WIRE_REASONS = frozenset({
    'too_large', 'invalid_utf8', 'invalid_json', 'too_deep', 'not_object',
    'bad_packet_type', 'bad_version', 'non_finite', 'bad_type', 'bad_value',
})

# A float in compact json.dumps output differs from C#'s round-trip form in two ways: an
# integral value ends in '.0' (always followed by ',', ']' or '}': repr has no other
# trailing zero), and the exponent marker is a lower-case 'e' (always followed by its sign,
# which never follows the 'e' of true or false). Both are fixed outside strings only.
_STATE_NUMBER_FIXES = re.compile(r'("[^"\\]*(?:\\.[^"\\]*)*")|(\.0(?=[,\]}]))|(e(?=[+-]))')
_FIX_REPLACEMENTS = (None, None, '', 'E')


def _fix_number(match: re.Match) -> str:
    index = match.lastindex
    return match.group(1) if index == 1 else _FIX_REPLACEMENTS[index]


def _csharp_numbers(text: str) -> str:
    """Rewrite the floats of compact JSON text in C# round-trip form, leaving strings alone."""
    if '\\' in text:
        # an escape may hide a quote: scan string by string
        return _STATE_NUMBER_FIXES.sub(_fix_number, text)
    # without backslashes every '"' delimits a string, so the even pieces are the text
    # outside strings; fix them all at once with plain replacements
    pieces = text.split('"')
    outside = ('"'.join(pieces[::2]).replace('.0,', ',').replace('.0]', ']')
               .replace('.0}', '}').replace('e+', 'E+').replace('e-', 'E-'))
    pieces[::2] = outside.split('"')
    return '"'.join(pieces)


def decode_json(data: bytes, max_bytes: int = MAX_DATAGRAM_BYTES) -> dict:
    """Parse one datagram into a dict, as the bridge does.

    The size is checked before any parsing. The root must be a JSON object. Raises
    ``ProtocolError`` with reason ``too_large``, ``invalid_utf8``, ``invalid_json``,
    ``too_deep`` or ``not_object``.
    """
    size = len(data)
    if size > max_bytes:
        raise ProtocolError('too_large', f'{size} bytes > {max_bytes}')
    obj = None
    if _fast_loads is not None:
        try:
            if data.count(b'[') + data.count(b'{') < FAST_PATH_MAX_OPENINGS:
                obj = _fast_loads(data)
        except Exception:   # refused, or not bytes: the reference path judges
            obj = None
    if obj is None:
        obj = decode_json_reference(data)
    if type(obj) is not dict:
        raise ProtocolError('not_object', f'root is a JSON {type(obj).__name__}')
    return obj


def decode_json_reference(data: bytes) -> object:
    """Parse a datagram's bytes with ``json.loads`` (any root): the reference decoder.

    Raises ``ProtocolError`` with reason ``invalid_utf8``, ``invalid_json`` or ``too_deep``.
    """
    try:
        text = bytes(data).decode('utf-8')
    except UnicodeDecodeError as exc:
        raise ProtocolError('invalid_utf8', str(exc)) from None
    try:
        obj = json.loads(text)
    except RecursionError:
        raise ProtocolError('too_deep', 'JSON nested too deeply') from None
    except ValueError as exc:   # JSONDecodeError, and integers beyond the digit limit
        raise ProtocolError('invalid_json', str(exc)) from None
    return obj


def check_header(obj: dict) -> str:
    """Check ``type`` and ``version`` of a decoded datagram and return the type name.

    ``type`` must be a string starting with ``pylon_`` (reason ``bad_packet_type``);
    ``version`` must be the JSON integer 1, so ``true``, ``1.0``, ``0`` and ``2`` are all
    rejected (reason ``bad_version``).
    """
    if type(obj) is not dict:
        raise ProtocolError('not_object', f'a {type(obj).__name__}, not an object')
    type_name = obj.get('type')
    if type(type_name) is not str or not type_name.startswith(TYPE_PREFIX):
        raise ProtocolError('bad_packet_type', f'type {type_name!r:.80}', 'type')
    version = obj.get('version')
    if type(version) is not int or version != PROTOCOL_VERSION:
        raise ProtocolError('bad_version', f'version {version!r:.40}', 'version')
    return type_name


# one compact encoder per (allow_nan, ensure_ascii): json.dumps with any argument builds a
# new JSONEncoder on every call, and the encoders keep no state between calls
_ENCODERS = {(allow_nan, ensure_ascii): json.JSONEncoder(
    separators=(',', ':'), allow_nan=allow_nan, ensure_ascii=ensure_ascii)
    for allow_nan in (False, True) for ensure_ascii in (False, True)}


def _dumps(obj: dict, *, allow_nan: bool, ensure_ascii: bool) -> str:
    if type(obj) is not dict:
        raise ProtocolError('not_object', f'cannot send a {type(obj).__name__} as a datagram')
    try:
        return _ENCODERS[allow_nan, ensure_ascii].encode(obj)
    except RecursionError:
        raise ProtocolError('too_deep', 'object nested too deeply') from None
    except ValueError as exc:   # NaN or Infinity with allow_nan=False, or a circular reference
        reason = 'bad_value' if 'ircular' in str(exc) else 'non_finite'
        raise ProtocolError(reason, str(exc)) from None
    except TypeError as exc:
        raise ProtocolError('bad_type', str(exc)) from None


def _to_bytes(text: str, max_bytes: int) -> bytes:
    try:
        data = text.encode('utf-8')
    except UnicodeEncodeError as exc:   # a lone surrogate in a string
        raise ProtocolError('bad_value', str(exc)) from None
    if len(data) > max_bytes:
        raise ProtocolError('too_large', f'{len(data)} bytes > {max_bytes}')
    return data


def encode_command(obj: dict, max_bytes: int = MAX_DATAGRAM_BYTES) -> bytes:
    """Encode a command as the bridge does: compact, ASCII, no NaN or Infinity.

    Raises ``ProtocolError`` (``non_finite``, ``bad_type``, ``too_deep``, ``too_large``,
    ``not_object``) instead of sending something the mod could not read.
    """
    return _to_bytes(_dumps(obj, allow_nan=False, ensure_ascii=True), max_bytes)


def encode_state(obj: dict, max_bytes: int = MAX_DATAGRAM_BYTES, *,
                 allow_nan: bool = False) -> bytes:
    """Encode a state packet the way the mod writes it.

    Compact JSON, raw UTF-8 text, numbers in C# round-trip form (``1``, ``-0``, ``1E-05``,
    ``1.5E+16``); text inside strings is never altered. Non-finite numbers are refused
    unless ``allow_nan`` is true, in which case they are written as the ``NaN``,
    ``Infinity`` and ``-Infinity`` tokens the mod can produce.
    """
    text = _dumps(obj, allow_nan=allow_nan, ensure_ascii=False)
    return _to_bytes(_csharp_numbers(text), max_bytes)


_BASE64_ALPHABET = b'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/='
_PLACEHOLDER = '\x00'
_PLACEHOLDER_JSON = '"\\u0000"'


def encode_state_with_base64(obj: dict, key: str, max_bytes: int = MAX_DATAGRAM_BYTES, *,
                             allow_nan: bool = False) -> bytes:
    """Return ``encode_state(obj)``, copying the base64 text at ``obj[key]`` in unscanned.

    A camera or model chunk is mostly one long base64 string, which no JSON escape touches:
    the rest of the object is encoded around a placeholder and the text is put in its place,
    so the encoder does not scan 16 KB per chunk. When ``obj[key]`` is not a string of the
    base64 alphabet, or the placeholder's text is not unique, this is ``encode_state``.
    """
    text = obj.get(key) if type(obj) is dict else None
    if (type(text) is not str or not text.isascii()
            or text.encode('ascii').translate(None, _BASE64_ALPHABET)):
        return encode_state(obj, max_bytes, allow_nan=allow_nan)
    marker = _dumps({key: _PLACEHOLDER}, allow_nan=False, ensure_ascii=False)[1:-1]
    name = marker[:-len(_PLACEHOLDER_JSON)]     # '"key":'
    around = _csharp_numbers(_dumps({**obj, key: _PLACEHOLDER}, allow_nan=allow_nan,
                                    ensure_ascii=False))
    pieces = around.split(marker)
    if len(pieces) != 2:
        return encode_state(obj, max_bytes, allow_nan=allow_nan)
    return _to_bytes(f'{pieces[0]}{name}"{text}"{pieces[1]}', max_bytes)
