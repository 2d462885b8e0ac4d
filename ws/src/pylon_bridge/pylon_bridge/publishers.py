"""The bridge's publishers, in its own ROS domain and in the ground-truth domain.

``Publishers`` applies the core's ``Publish``/``Destroy`` actions on one node: a topic's
publisher is created with its first message (the contract's QoS with the user's
``qos_overrides``) and destroyed when the core says its source fell silent.

``GroundTruthDomain`` is the second node of ``--ground-truth-domain``: an rclpy ``Context``
of its own initialised with that domain id, one publish-only node in it (no executor, no
parameter services), and the publishers of the relayed ground-truth topics. Its names
come already resolved by the bridge's node (namespace and remappings), so that every topic
has the name the bridge would give it in its own domain; the context itself gets no ROS
arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rclpy.node import Node

from pylon_bridge import qos as bridge_qos
from pylon_bridge.actions import Destroy, Publish

TopicName = Callable[[str, str], str]
"""``name(key, topic_id)``: the name of a contract topic in this configuration."""


class Publishers:
    """One node's publishers by (topic key, topic id)."""

    def __init__(self, node: Node, name: TopicName,
                 qos_overrides: Mapping[str, Mapping[str, Any]]) -> None:
        """Create publishers on ``node``, naming them with ``name``."""
        self.node = node
        self.name = name
        self.qos_overrides = qos_overrides
        self.by_key: dict[tuple[str, str], Any] = {}

    def __len__(self) -> int:
        """Return how many publishers exist."""
        return len(self.by_key)

    def publish(self, action: Publish) -> bool:
        """Publish ``action.msg``; return whether its publisher was created for it."""
        topic = (action.key, action.topic_id)
        publisher = self.by_key.get(topic)
        created = publisher is None
        if created:
            publisher = self.by_key[topic] = self.node.create_publisher(
                action.msg_type or type(action.msg), self.name(action.key, action.topic_id),
                bridge_qos.qos_for(action.key, self.qos_overrides))
        serialized = action.serialized
        publisher.publish(action.msg if serialized is None else serialized)
        return created

    def destroy(self, action: Destroy) -> str:
        """Destroy the publisher of ``action``'s topic; return its name ('' if none existed)."""
        publisher = self.by_key.pop((action.key, action.topic_id), None)
        if publisher is None:
            return ''
        name = publisher.topic_name
        self.node.destroy_publisher(publisher)
        return name


class GroundTruthDomain:
    """A node in another ROS domain that publishes the relayed ground-truth topics."""

    def __init__(self, domain_id: int, node_name: str, name: TopicName,
                 qos_overrides: Mapping[str, Mapping[str, Any]], program: str) -> None:
        """Join ``domain_id`` with a context of its own; ValueError if that fails."""
        import rclpy
        from rclpy.context import Context

        self.domain_id = domain_id
        self.context = Context()
        try:
            rclpy.init(args=[program], context=self.context, domain_id=domain_id)
            self.node = Node(node_name, context=self.context, start_parameter_services=False)
        except RuntimeError as exc:             # rclpy's RCLError and its own checks
            self.context.try_shutdown()
            raise ValueError(f'ground_truth_domain {domain_id}: cannot join that ROS domain '
                             f'({exc})') from exc
        self.publishers = Publishers(self.node, name, qos_overrides)

    def apply(self, action: Publish | Destroy) -> None:
        """Publish, or remove a topic that fell silent (logged in that domain)."""
        if isinstance(action, Publish):
            self.publishers.publish(action)
            return
        removed = self.publishers.destroy(action)
        if removed:
            self.node.get_logger().info(f'removed {removed}: its source fell silent')

    def close(self) -> None:
        """Destroy the node and shut the context down."""
        self.node.destroy_node()
        self.context.try_shutdown()
