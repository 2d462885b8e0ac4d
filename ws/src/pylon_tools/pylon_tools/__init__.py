"""Seeing and keeping data: a Foxglove live view, MCAP recordings, tuning plots."""
