"""The mod's sensors: star tracker, LiDAR and camera (rendering); ours: relative navigation, GNSS.

Each kind samples the game (``raycast`` for what a ray meets) on its own schedule and power.
Imports the game; never the mod or the frame loop.
"""
