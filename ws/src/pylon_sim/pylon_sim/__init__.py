"""A stand-in for KSP with the PyLoN mod, speaking the PyLoN UDP protocol v1 (no rclpy)."""
