"""A mission of several vehicles on the ROS side: domains, states and the status table.

The names, layouts and states are those of the AI Challenge's simulator interface (one
ROS domain per vehicle, the simulator's management in domain 0): the management node
(``pylon_mission``'s ``sim_manager``) and the referee run in the management domain,
vehicle k's stack (its ``udp_bridge``, estimator, controller and the user's nodes) in
domain ``base + k``. What concerns vehicle k in the management domain lives under
``vehicle_prefix(k)`` (``/d<k>``): its ground truth (``/d<k>/awsim/ground_truth/...``) and
the mirrors of its state and status (``/d<k>/awsim/state``, ``/d<k>/awsim/status``). The
topics are rows of the topic contract (``topics.MISSION_TOPICS``); this module holds the
values they carry. Plain data: nothing here imports rclpy.
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


def vehicle_prefix(vehicle: int | str) -> str:
    """Return the namespace of vehicle ``vehicle``'s topics in the management domain.

    ``vehicle`` may be the topic contract's placeholder ``'{id}'``.
    """
    return f'/d{vehicle}'


def in_management(vehicle: int | str, name: str) -> str:
    """Return the management domain's name of vehicle ``vehicle``'s topic ``name``.

    ``/awsim/state`` of vehicle 2 is ``/d2/awsim/state`` there.
    """
    return vehicle_prefix(vehicle) + name


GROUND_TRUTH = '/awsim/ground_truth'
"""Where a vehicle's ground truth goes, under its prefix (``in_management``)."""
GROUND_TRUTH_NAMES = {
    'ground_truth/pose': 'vehicle/pose',
    'ground_truth/kinematic_state': 'localization/kinematic_state',
}
"""The bridge's ground-truth topics (contract keys) that take the interface's names under
``GROUND_TRUTH``; the bridge's other ground-truth topics keep theirs there."""


def ground_truth_prefix(vehicle: int) -> str:
    """Return the prefix of vehicle ``vehicle``'s ground truth in the management domain."""
    return in_management(vehicle, GROUND_TRUTH)


def _below(key: str) -> str:
    """Return a ground-truth key's name below the ground-truth prefix (pose, control/...)."""
    return key.split('/', 1)[1] if key.startswith('ground_truth/') else key


def ground_truth_topic(vehicle: int, key: str) -> str:
    """Return the management domain's name of vehicle ``vehicle``'s ground-truth topic ``key``.

    ``key`` is a bridge ground-truth key of the topic contract (``ground_truth/pose``,
    ``control/snapshot``): ``/d1/awsim/ground_truth/vehicle/pose``,
    ``/d1/awsim/ground_truth/control/snapshot``.
    """
    return f'{ground_truth_prefix(vehicle)}/{GROUND_TRUTH_NAMES.get(key, _below(key))}'


def ground_truth_remappings(vehicle: int) -> tuple[tuple[str, str], ...]:
    """Return the ROS remappings that give vehicle ``vehicle``'s bridge the interface's names.

    Its bridge publishes its ground truth under ``ground_truth_prefix(vehicle)``; these
    move the topics of ``GROUND_TRUTH_NAMES`` to their names there.
    """
    return tuple((f'{ground_truth_prefix(vehicle)}/{_below(key)}',
                  ground_truth_topic(vehicle, key)) for key in GROUND_TRUTH_NAMES)


# -- the management domain's state (/admin/awsim/state) ----------------------------------------
SELECT_MODE = 'SelectMode'
PLAY_START = 'PlayStart'
READY = 'Ready'
WAIT_START = 'WaitStart'
START = 'Start'
FINISH = 'Finish'
LAP_COMPLETE = 'LapComplete'
FINISH_ALL = 'FinishAll'
TERMINATE = 'Terminate'
ADMIN_STATES = (
    (SELECT_MODE, 'the management is up; no mission loaded yet (the simulator has not '
                  'answered)'),
    (PLAY_START, 'the mission is loaded, its vehicles spawn: not every vehicle is Ready yet'),
    (READY, 'every vehicle is Ready: a start is accepted (only here)'),
    (WAIT_START, 'the countdown after the start request (countdown_sec of game time); '
                 'commands do not act yet'),
    (START, "the mission runs: the vehicles' commands act, the session time counts down"),
    (FINISH, 'over: the session time ran out before every scored vehicle completed'),
    (LAP_COMPLETE, 'a first scored vehicle completed (reached the lap target) while the '
                   'others go on: the mission still runs'),
    (FINISH_ALL, 'over: every scored vehicle completed (before or at the time limit)'),
    (TERMINATE, 'the management ended: it shut down, lost the simulator, or gave up '
                'waiting for the vehicles (final)'),
)
"""The management states, in the interface's order, with what each means here."""
ADMIN_STATE_NAMES = tuple(name for name, _ in ADMIN_STATES)
RUNNING_STATES = (START, LAP_COMPLETE)
FINAL_STATES = (FINISH, FINISH_ALL, TERMINATE)

# -- each vehicle's state (/awsim/state in its own domain) -------------------------------------
SPAWNED = 'Spawned'
GROUNDED = 'Grounded'
VEHICLE_READY = 'Ready'
VEHICLE_START = 'Start'
VEHICLE_FINISH = 'Finish'
VEHICLE_STATES = (
    (SPAWNED, 'the simulator serves the vehicle: its vessel exists in the world'),
    (GROUNDED, 'the vessel is settled: a vessel in orbit as soon as its physics is loaded '
               '(in flight, not packed), so it passes straight through; a surface vehicle '
               'once it rests on its wheels'),
    (VEHICLE_READY, 'settled, and its runtime session ACTIVE on its own bridge: a '
                    'controller can take control now (whether one holds it does not '
                    'matter)'),
    (VEHICLE_START, 'the mission runs (WaitStart over): its commands act'),
    (VEHICLE_FINISH, 'it completed its task (the lap target), or the mission is over'),
)
"""Each vehicle's states, in order, with what each means here."""
VEHICLE_STATE_NAMES = tuple(name for name, _ in VEHICLE_STATES)


def states_on_the_way(last: str | None, new: str) -> list[str]:
    """Return the vehicle states to publish to go from ``last`` to ``new``, in order.

    Forward, every state skipped within one look is said on the way, so that the states
    come in the interface's order: from ``last`` (Spawned -> Ready says Grounded too), or
    from Spawned when nothing was said yet (``last`` None: the first look, or a reset,
    which puts every vehicle back to Spawned). Back (Ready -> Grounded: its bridge went
    away): ``new`` alone. Unchanged: nothing.
    """
    if new == last:
        return []
    order = VEHICLE_STATE_NAMES
    end = order.index(new)
    if last is not None and order.index(last) > end:
        return [new]
    begin = 0 if last is None else order.index(last) + 1
    return list(order[begin:end + 1])


# -- each vehicle's status (/awsim/status, std_msgs/Float32MultiArray) -------------------------
STATUS_FIELDS = (
    ('sessionTime', 's of the session left, counting down (the time limit before the start; '
                    '-1: no limit)', "the task's time limit minus the elapsed time",
     "the race's: the limit on the grid, 0 once it ran out; it stops when every kart "
     'finished'),
    ('lapCount', 'laps completed', '1 once the vehicle completed its task, else 0',
     'laps counted'),
    ('thisLapTime', 's of game time of the lap in progress', 'the elapsed time until the '
                    'vehicle completed, then its completion time',
     'as the race says: 0 before its first crossing of the line, after backing over it '
     'and after its finish'),
    ('section', 'the section of the track the vehicle is in', '0 (no sections)',
     'the section whose gate it passed last (0-based; the last section before its first '
     'lap)'),
    ('timeScale', 'game seconds per wall-clock second, measured over the last second',
     'as measured', 'as measured'),
    ('boostRemaining', 'boosts left', '0 (no boost)', 'boosts left'),
    ('isBoosting', '1.0 while a boost acts, else 0.0', '0', '1.0 while its boost acts'),
    ('elapsed_sec', 's of game time since the start; 0 before it', 'as measured (UT)',
     "the race's time since the start (it stops when the race is over)"),
    ('task_progress', "0..1: the vehicle's progress in its task", 'the hold so far over '
                      'hold_sec', 'laps counted over the lap target'),
    ('score', "the vehicle's score (0 until it completed)", 's to spare',
     's to spare: the time limit minus its finish time'),
    ('propellant_left_kg', 'kg of propellant aboard', 'as measured', 'as measured (a kart: '
                                                                     'none)'),
    ('propellant_used_kg', 'kg of propellant used since the start (or the last reset)',
     'as measured', 'as measured'),
    ('completed', '1.0 once the vehicle completed its task, else 0.0', 'as the referee says',
     'once it reached the lap target'),
    ('rank', 'its place in the ranking (1 first; 0: not ranked)', "the referee's rank (the "
                                                                  'target: 0)',
     "the judge's ranking (pylon_mission.judge.rank): laps, then the race time the last lap "
     'ended, then the vehicle number'),
    ('penalty_count', 'penalties so far', '0 (no penalties)', 'track-limit penalties (each '
                                                              'exit off the track)'),
    ('penalty_active', '1.0 while a penalty acts on the vehicle, else 0.0', '0',
     '1.0 while a track-limit penalty caps its speed'),
    ('best_lap_sec', 's of its fastest lap (0: none yet)', '0', 'its fastest counted lap'),
    ('last_lap_end_sec', 's of race time at which its last lap ended (0: none yet)', '0',
     'the race time its last counted lap ended (what the ranking compares among equal '
     'laps)'),
    ('collision_count', 'collisions it began since the start (or the last reset)',
     '0 (no contact in orbit)', "the race's count (the contact model's events)"),
)
"""The fixed index table of the status array: index i is ``STATUS_FIELDS[i]`` (name,
meaning, its value in the rendezvous, its value in a race). Indices 0-6 are the
interface's seven values in its order; the mission's own follow."""
STATUS_INDEX = {row[0]: index for index, row in enumerate(STATUS_FIELDS)}
STATUS_NAMES = tuple(row[0] for row in STATUS_FIELDS)
INTERFACE_FIELDS = 7
"""The interface's own values: indices 0 .. 6 of the status array."""
RACE_FIELDS = ('sessionTime', 'lapCount', 'thisLapTime', 'section', 'boostRemaining',
               'isBoosting')
"""The interface's fields a race fills from the simulator, by these names (the vehicle's
``race`` entry in the management status); ``timeScale`` is measured for every mission."""
NO_LIMIT = -1.0
