"""Start pylon_sim and udp_bridge for a test, on the test's own ports and ROS domain."""


def start(ros_process, free_udp_port, scenario='orbit'):
    """Start the bridge and the simulator; return the simulator's admin port."""
    state_port, command_port, admin_port = free_udp_port(), free_udp_port(), free_udp_port()
    ros_process(['udp_bridge', '--host', '127.0.0.1', '--port', str(state_port),
                 '--command-port', str(command_port)], name='bridge')
    ros_process(['pylon_sim', '--scenario', scenario, '--state-port', str(state_port),
                 '--command-port', str(command_port), '--admin-port', str(admin_port)],
                name='sim')
    return admin_port


def subscriptions_of(node, name):
    """Return the topics a node of the graph subscribes to (empty until it is discovered)."""
    try:
        return {topic for topic, _ in node.get_subscriber_names_and_types_by_node(name, '/')}
    except Exception:      # rclpy raises NodeNameNonExistentError before discovery
        return set()
