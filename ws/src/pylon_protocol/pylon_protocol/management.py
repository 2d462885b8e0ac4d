"""The management interface of a mission of several vehicles: an extension of ``pylon_sim``.

The PyLoN mod serves one game; a mission (``pylon_sim`` with a scenario that lists several
``vehicles``, or with ``--management-port``) serves each vehicle as its own game on its own
ports and adds one management port for what concerns them all. Requests are JSON objects
over UDP, as on the admin port (``{"cmd": "status"}``), each answered with one JSON object
``{"ok": true, ...}`` or ``{"ok": false, "error": "..."}``:

- ``status``: the mission (``phase``, UT, clock, time scale, warp, pause, the start and
  elapsed UT, the task; a race's ``race``) and each vehicle (its vessel, ports,
  availability, ``settled`` (its vessel at rest where it begins: for a vessel in orbit, its
  physics loaded), its runtime ``session`` [instance, generation, epoch], lease owner,
  propellant; in a race, its ``race``: laps, times, boosts, penalties);
- ``start``: the vehicles' commands act from now on (``phase`` ``running``); refused while
  running;
- ``finish``: commands are refused again (``phase`` ``held``), the mission is over;
- ``reset``: every vessel back to the scenario's start (UT included), every vehicle's
  runtime session new and its lease gone, ``phase`` ``held``;
- ``pause``, ``resume``, ``warp`` (``rate``, ``mode``): as on a single game's admin port,
  for the whole world;
- ``boost`` (``vehicle``: 1-based, ``value``: the boost command's value): a race's boost
  command for that vehicle (a rising edge to >= 1.0 fires one); the reply's ``boost``
  says what became of it (``outcome``: ``fired``, ``ignored`` without an edge, or the
  refusal's reason); an error for a mission without a race, a vehicle not in it, or a
  value that is not a finite number;
- ``quit``: the simulator stops.

While ``held`` (from the start of the simulator until ``start``, and after ``finish`` or
``reset``) physics runs, every vehicle's sensors and model flow, leases can be taken, and
every other command is refused with ``packets.SIMULATION_HELD``.
"""

from __future__ import annotations

MANAGEMENT_PORT = 49000
"""The management port the launch plan and the demo use (``pylon_sim --management-port``)."""
PORT_STRIDE = 10
"""Vehicle k's state, command and admin ports are the first vehicle's + (k - 1) x this."""
MAX_VEHICLES = 20
"""Vehicles a mission serves at most: 20 x ``PORT_STRIDE`` ports above the first ones."""

HELD = 'held'
RUNNING = 'running'
PHASES = (HELD, RUNNING)

REQUESTS = ('status', 'start', 'finish', 'reset', 'pause', 'resume', 'warp', 'boost', 'quit')


def vehicle_port(first: int, vehicle: int, stride: int = PORT_STRIDE) -> int:
    """Return vehicle ``vehicle``'s (1-based) port, from the first vehicle's ``first``.

    0 (no port) stays 0.
    """
    if not 1 <= vehicle <= MAX_VEHICLES:
        raise ValueError(f'vehicle {vehicle} is not within 1..{MAX_VEHICLES}')
    if first == 0:
        return 0
    port = first + (vehicle - 1) * stride
    if not 1 <= port <= 65535:
        raise ValueError(f'vehicle {vehicle} would use port {port}, outside 1..65535')
    return port
