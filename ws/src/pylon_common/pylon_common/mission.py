"""A mission of several vehicles on the ROS side: domains, states and the status table.

Modelled on a simulator interface for several teams (one ROS domain per vehicle, the
simulator's management in its own domain): the management node (``pylon_mission``'s
``sim_manager``) and the referee run in the management domain, vehicle k's stack (its
``udp_bridge``, estimator, controller and the user's nodes) in domain ``base + k``. Ground
truth of every vehicle exists in the management domain only, under ``vehicle_prefix(k)``.
The topics are rows of the topic contract (``topics.MISSION_TOPICS``); this module holds
the values they carry. Plain data: nothing here imports rclpy.
"""

from __future__ import annotations

# -- domains -----------------------------------------------------------------------------------
DEFAULT_DOMAIN_BASE = 0
"""The management domain; vehicle k's is this + k."""


def vehicle_domain(base: int, vehicle: int) -> int:
    """Return vehicle ``vehicle``'s (1-based) ROS domain when management is in ``base``."""
    domain = base + vehicle
    if vehicle < 1 or not 0 <= base < domain <= 232:
        raise ValueError(f'vehicle {vehicle} with domain base {base} is outside 0..232')
    return domain


def vehicle_prefix(vehicle: int) -> str:
    """Return the namespace of vehicle ``vehicle``'s ground truth in the management domain."""
    return f'/vehicle_{vehicle}'


# -- the management domain's state (/admin/pylon/state) ----------------------------------------
WAIT_START = 'WaitStart'     # the simulator is up; not every vehicle is Ready yet
READY = 'Ready'              # every vehicle is Ready: start is accepted
START = 'Start'              # running: the vehicles' commands act, the clock counts
FINISH = 'Finish'            # over: the time limit passed before every vehicle completed
FINISH_ALL = 'FinishAll'     # over: every scored vehicle completed its task
TERMINATE = 'Terminate'      # the management is shutting down (or lost the simulator)
ADMIN_STATES = (WAIT_START, READY, START, FINISH, FINISH_ALL, TERMINATE)
FINAL_STATES = (FINISH, FINISH_ALL, TERMINATE)

# -- each vehicle's state (/pylon/sim/state in its own domain) ----------------------------------
SPAWNED = 'Spawned'          # its vessel flies (held); no controller holds its lease yet
VEHICLE_READY = 'Ready'      # a controller holds its lease: the stack is up
VEHICLE_START = 'Start'      # the mission runs; its commands act
VEHICLE_FINISH = 'Finish'    # it completed its task, or the mission is over
VEHICLE_STATES = (SPAWNED, VEHICLE_READY, VEHICLE_START, VEHICLE_FINISH)

# -- each vehicle's status (/pylon/sim/status, std_msgs/Float32MultiArray) ---------------------
STATUS_FIELDS = (
    ('time_left_sec', 's of the time limit left (the limit before the start; -1: no limit)'),
    ('elapsed_sec', 's of game time (UT) since the start; 0 before it'),
    ('time_scale', 'game seconds per wall-clock second, measured over the last second'),
    ('task_progress', "0..1: the referee's progress of the vehicle's task"),
    ('score', "the referee's score of the vehicle (0 until it completed)"),
    ('propellant_left_kg', 'kg of propellant aboard'),
    ('propellant_used_kg', 'kg of propellant used since the start (or the last reset)'),
    ('completed', '1.0 once the vehicle completed its task, else 0.0'),
)
"""The fixed index table of the status array: index i is ``STATUS_FIELDS[i]``."""
STATUS_INDEX = {name: index for index, (name, _) in enumerate(STATUS_FIELDS)}
NO_LIMIT = -1.0
