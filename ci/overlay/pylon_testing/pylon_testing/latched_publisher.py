"""Publish one message of any type and keep it available to late subscribers.

``latched_publisher TOPIC TYPE FIELDS_JSON [--durability transient_local|volatile]``
publishes once, prints ``published TOPIC`` and then spins until SIGINT/SIGTERM, so a
Transient Local subscriber that joins later still receives the message. TYPE is spelled
``pkg/msg/Name``; FIELDS_JSON sets fields by name, nested messages as JSON objects.
"""

from __future__ import annotations

import argparse
import importlib
import json
import signal
import sys
from typing import Any

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy


def message_class(type_name: str) -> type:
    """Import the message class named ``pkg/msg/Name``."""
    try:
        package, kind, name = type_name.split('/')
    except ValueError as exc:
        raise ValueError(f'message type must be spelled pkg/msg/Name, not {type_name!r}') from exc
    return getattr(importlib.import_module(f'{package}.{kind}'), name)


def set_fields(message: Any, fields: dict[str, Any]) -> Any:
    """Set ``fields`` on ``message`` by name; dicts fill nested messages. Returns ``message``."""
    for key, value in fields.items():
        if key not in message.get_fields_and_field_types():
            raise ValueError(f'{type(message).__name__} has no field {key!r}')
        if isinstance(value, dict):
            set_fields(getattr(message, key), value)
        else:
            setattr(message, key, value)
    return message


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Read the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('topic')
    parser.add_argument('type', help='pkg/msg/Name')
    parser.add_argument('fields', nargs='?', default='{}', help='JSON object of field values')
    parser.add_argument('--durability', choices=('transient_local', 'volatile'),
                        default='transient_local')
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Publish the message once and spin until asked to stop."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    message = set_fields(message_class(args.type)(), json.loads(args.fields))
    qos = QoSProfile(
        history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
        durability=(DurabilityPolicy.TRANSIENT_LOCAL if args.durability == 'transient_local'
                    else DurabilityPolicy.VOLATILE))
    rclpy.init()
    signal.signal(signal.SIGTERM, lambda *_: rclpy.try_shutdown())
    node = rclpy.create_node('latched_publisher')
    try:
        node.create_publisher(type(message), args.topic, qos).publish(message)
        node.get_logger().info(f'published {args.topic}')
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
