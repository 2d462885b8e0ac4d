"""udp_bridge: PyLoN UDP datagrams to ROS 2 topics, and ROS 2 commands to datagrams."""
