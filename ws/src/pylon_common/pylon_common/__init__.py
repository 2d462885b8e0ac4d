"""The ROS side every node of the workspace shares (topics, QoS, parameters, entry)."""
