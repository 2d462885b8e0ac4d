"""The game: what KSP itself does.

Bodies, orbits, rigid-body physics, vessels and their parts, wheels, terrain, docking,
topology, power, thermal, propellant, the environment and the one ray-casting kernel
(``raycast``, over ``shapes`` and ``heightfield``). Imports nothing else of ``pylon_sim``.
"""
