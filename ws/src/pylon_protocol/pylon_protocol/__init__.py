"""The PyLoN UDP protocol v1 in pure Python, shared by udp_bridge and pylon_sim (no rclpy)."""
