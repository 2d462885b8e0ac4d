"""Stock flight inputs (``pylon_flight_control_command``) as the mod writes them into KSP.

A flight command carries KSP's normalised stock inputs ``pitch``, ``yaw``, ``roll`` in
−1…1 (not angles, not torques) and the ``landingGear`` switch. The caller has checked
the authority (stream ``attitude``, shared with the body wrench: the newer accepted one
of the two cancels the other). ``FlightControl`` keeps the command in force until its
``timeoutSeconds`` (0.05–1 s, checked on decoding), a newer flight command, a body
wrench, the end of the lease, an emergency stop or a vessel switch; ``landingGear``
sets the vessel's gear flag, which stays after the command ends.

Inputs to torque (``stock_input_wrench``), as KSP's flight controls act: every torque
provider takes the same normalised input. With the body-axis convention +X rotation =
roll +, +Y rotation = pitch −, +Z rotation = yaw − (base_link +X forward, +Y left, +Z up)
the demand per base_link axis is ``d = (roll, −pitch, −yaw)``:

- the reaction wheels give ``d × W`` (W: their summed torque per axis; none without
  ElectricCharge);
- the RCS fires the rotation channel of each axis's sign at ``|d_axis|`` with KSP's
  channel rule (``allocation``), up to each nozzle's maximum: about ``|d_axis| × R_axis``
  about that axis (R_axis: the RCS torque of that channel at full input), with the side
  forces and cross torques the nozzles really make.

So each axis gets its input times the vessel's available torque about it, wheels and
RCS together. Engines, gimbals and SAS are not moved by these inputs (SAS adds its own
damping torque when it is on).

The applied-input record (``fields``) reports what was last written: the command's
sequence and inputs, the simulator-clock age since the last physics step that wrote them,
whether a command is still in force under the lease, and whether any input is at its
bound (``|x| ≥ INPUT_LIMIT``). It is empty again after a runtime reset.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pylon_sim.mod import allocation

INPUT_LIMIT = 0.999
# (base_link axis of the demand, channel index for a positive demand, for a negative one)
_AXIS_CHANNELS = ((1, 0, 1), (2, 2, 3), (0, 4, 5))   # pitch about Y, yaw about Z, roll about X


@dataclass(frozen=True)
class FlightCommand:
    """An accepted flight command: whose, which, its inputs and when it ends."""

    identity: tuple[str, str]       # (controllerId, leaseId)
    sequence: int
    pitch: float
    yaw: float
    roll: float
    expires: float                  # simulator clock


@dataclass(frozen=True)
class Applied:
    """The inputs last written into the vessel's controls."""

    sequence: int
    pitch: float
    yaw: float
    roll: float
    at: float                       # simulator clock of the last physics step that wrote them


@dataclass(frozen=True)
class StockWrench:
    """What the stock inputs make the torque providers do."""

    force: np.ndarray               # N, base_link (RCS side forces)
    torque: np.ndarray              # N·m, base_link, wheels and RCS
    wheel_torque: np.ndarray        # N·m, the reaction wheels' share
    nozzle_thrust: np.ndarray       # N per nozzle of the allocator


def demand(pitch: float, yaw: float, roll: float) -> np.ndarray:
    """Return the normalised torque demand per base_link axis: (roll, −pitch, −yaw)."""
    return np.array([roll, -pitch, -yaw], dtype=float)


def stock_input_wrench(pitch: float, yaw: float, roll: float,
                       allocator: allocation.Allocator) -> StockWrench:
    """Return the wrench of stock inputs through the allocator's wheels and RCS nozzles."""
    d = demand(pitch, yaw, roll)
    wheel = d * allocator.wheel_max
    channels = np.zeros(len(allocation.CHANNELS))
    for axis, positive, negative in _AXIS_CHANNELS:
        channels[positive if d[axis] > 0.0 else negative] = abs(d[axis])
    thrust = allocator.channel_thrust(channels)
    force, torque = allocation.wrench_of(allocator.nozzles, thrust, [], [])
    return StockWrench(force, torque + wheel, wheel, thrust)


class FlightControl:
    """The flight command in force, the gear switches and the applied-input record."""

    def __init__(self) -> None:
        """Start with no command, no record and every gear switch off."""
        self.command: FlightCommand | None = None
        self.applied: Applied | None = None
        self.gear: dict[str, bool] = {}          # landing gear switch per vessel id

    def accept(self, packet: dict, vessel_id: str, now: float) -> FlightCommand:
        """Put a decoded, authority-checked flight command in force at ``now``."""
        self.command = FlightCommand(
            (packet['controllerId'], packet['leaseId']), packet['sequence'],
            float(packet['pitch']), float(packet['yaw']), float(packet['roll']),
            now + float(packet['timeoutSeconds']))
        self.gear[vessel_id] = bool(packet['landingGear'])
        return self.command

    def clear(self) -> None:
        """End the command in force (the record stays)."""
        self.command = None

    def new_session(self) -> None:
        """Forget the command and the record (runtime reset: nothing applied yet)."""
        self.command = None
        self.applied = None

    def expire(self, now: float) -> bool:
        """End the command once ``now`` reaches its timeout; return whether it ended."""
        if self.command is not None and now >= self.command.expires:
            self.command = None
            return True
        return False

    def write(self, now: float) -> FlightCommand | None:
        """Return the command to apply in this physics step and record it as applied."""
        command = self.command
        if command is not None:
            self.applied = Applied(command.sequence, command.pitch, command.yaw, command.roll,
                                   now)
        return command

    def fields(self, now: float, active: bool) -> dict:
        """Return the applied-input fields of ``pylon_flight_state``.

        ``active``: the command in force is under the owned lease and not timed out.
        """
        applied = self.applied
        if applied is None:
            return {'appliedInputValid': False, 'flightCommandActive': False,
                    'appliedInputSequence': 0, 'appliedInputAge': 0.0,
                    'appliedPitch': 0.0, 'appliedYaw': 0.0, 'appliedRoll': 0.0,
                    'inputAtLimit': False}
        inputs = (applied.pitch, applied.yaw, applied.roll)
        return {'appliedInputValid': True, 'flightCommandActive': active,
                'appliedInputSequence': applied.sequence,
                'appliedInputAge': max(0.0, now - applied.at),
                'appliedPitch': applied.pitch, 'appliedYaw': applied.yaw,
                'appliedRoll': applied.roll,
                'inputAtLimit': any(abs(x) >= INPUT_LIMIT for x in inputs)}
