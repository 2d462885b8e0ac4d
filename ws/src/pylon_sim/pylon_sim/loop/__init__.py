"""The frame loop that ties the game, the mod and the sensors.

The runtime (``Simulator``: a frame's physics, packets and commands, in the mod's order),
topology changes, lockstep, admin requests, missions, the scenario loader and the entry
point. The top layer: it imports the others; nothing imports it.
"""
