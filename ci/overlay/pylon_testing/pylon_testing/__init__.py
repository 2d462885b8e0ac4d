"""Test harness of the PyLoN workspace (pytest plugin, process control, waits)."""
