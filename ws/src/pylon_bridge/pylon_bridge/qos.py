"""QoS of the bridge's topics: the contract's profile, and the user's overrides of it.

Each topic's profile comes from the topic contract (``pylon_common.topics``: the profile
name, ``pylon_common.qos``: what it is and why). Every topic key of the bridge has three
read-only ROS parameters that override its profile:
``qos_overrides.<key>.reliability`` (``reliable`` | ``best_effort``),
``qos_overrides.<key>.durability`` (``volatile`` | ``transient_local``) and
``qos_overrides.<key>.depth`` (1-10000), e.g. ``-p qos_overrides.imu.depth:=50``.
The durability of ``tf`` and ``tf_static`` is fixed: tf2's static listener subscribes
Transient Local and never matches a Volatile ``/tf_static`` publisher, and ``/tf`` must
stay Volatile so that no outdated dynamic transform is replayed to a late joiner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, TYPE_CHECKING

from pylon_common import qos as profiles
from pylon_common import topics

if TYPE_CHECKING:
    from rclpy.node import Node
    from rclpy.qos import QoSProfile

POLICIES = ('reliability', 'durability', 'depth')
FIXED_DURABILITY = frozenset({'tf', 'tf_static'})
BRIDGE_KEYS = tuple(row.key for row in topics.BRIDGE_TOPICS if row.direction != topics.SERVES)

Overrides = Mapping[str, Mapping[str, Any]]


def parameter_name(key: str, policy: str) -> str:
    """Return the name of the ROS parameter that overrides ``policy`` of topic ``key``."""
    return f'qos_overrides.{key}.{policy}'


def _check_override(key: str, policy: str, value: Any) -> None:
    name = parameter_name(key, policy)
    if policy == 'reliability':
        if value not in profiles.RELIABILITIES:
            raise ValueError(f"{name}: must be 'reliable' or 'best_effort', got {value!r}")
    elif policy == 'durability':
        if value not in profiles.DURABILITIES:
            raise ValueError(f"{name}: must be 'volatile' or 'transient_local', got {value!r}")
        if key in FIXED_DURABILITY and value != topics.topic(key).profile.durability:
            raise ValueError(f'{name}: the durability of {key} cannot be overridden '
                             '(tf2 listeners rely on it)')
    elif policy == 'depth':
        if isinstance(value, bool) or not isinstance(value, int) or \
                not 1 <= value <= profiles.MAX_DEPTH:
            raise ValueError(f'{name}: must be an integer 1-{profiles.MAX_DEPTH}, '
                             f'got {value!r}')
    else:
        raise ValueError(f'{name}: unknown QoS policy {policy!r}; one of {", ".join(POLICIES)}')


def qos_for(key: str, overrides: Overrides | None = None) -> QoSProfile:
    """Return a new profile for topic ``key``, with ``overrides[key]`` applied.

    ``overrides`` maps topic key to ``{policy: value}`` as ``declare_qos_parameters``
    returns it. Raise KeyError for an unknown key and ValueError for a bad override.
    """
    changes = dict((overrides or {}).get(key) or {})
    for policy, value in changes.items():
        _check_override(key, policy, value)
    return profiles.qos_profile(replace(topics.topic(key).profile, **changes))


def declare_qos_parameters(node: Node) -> dict[str, dict[str, str | int]]:
    """Declare the read-only ``qos_overrides.<key>.<policy>`` parameters; return the given.

    Each parameter is declared with the topic's profile as default; the result holds,
    per topic key, the policies whose value differs from it. Raise ValueError naming
    the parameter for a wrong value, including any change of tf or tf_static durability.
    """
    from rcl_interfaces.msg import IntegerRange, ParameterDescriptor, ParameterType
    from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
    overrides: dict[str, dict[str, str | int]] = {}
    for key in BRIDGE_KEYS:
        row = topics.topic(key)
        for policy in POLICIES:
            name = parameter_name(key, policy)
            default = getattr(row.profile, policy)
            descriptor = ParameterDescriptor(
                name=name, read_only=True,
                description=f'QoS {policy} of {row.default_name()} ({row.qos})')
            if policy == 'depth':
                descriptor.type = ParameterType.PARAMETER_INTEGER
                descriptor.integer_range = [IntegerRange(from_value=1,
                                                         to_value=profiles.MAX_DEPTH, step=1)]
                descriptor.additional_constraints = f'1-{profiles.MAX_DEPTH}'
            else:
                descriptor.type = ParameterType.PARAMETER_STRING
                names = profiles.RELIABILITIES if policy == 'reliability' \
                    else profiles.DURABILITIES
                descriptor.additional_constraints = ' or '.join(names)
                if policy == 'durability' and key in FIXED_DURABILITY:
                    descriptor.additional_constraints = f'fixed: {default} (tf2 relies on it)'
            try:
                value = node.declare_parameter(name, default, descriptor).value
            except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
                raise ValueError(f'{name}: {descriptor.additional_constraints}: {exc}') from exc
            _check_override(key, policy, value)
            if value != default:
                overrides.setdefault(key, {})[policy] = value
    return overrides
