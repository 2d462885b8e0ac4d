"""Proxy vessel model: xacro macros for proxy parts, expanded into URDF."""
