"""The PyLoN mod: what the mod adds to the game and the packets it sends.

Control authority, ControlSafety, allocation, typed actuators (one module a family), stock
flight inputs, the vehicle manager and its collaborators, the packets it builds (reports,
telemetry, actuators, the proxy model), the outbox, the runtime session and the separation
journal. Imports the game; never the sensors or the frame loop.
"""
