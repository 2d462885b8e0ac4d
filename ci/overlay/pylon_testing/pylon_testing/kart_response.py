"""The kart's longitudinal step response in process: bench_kart.py prints it, a test checks it.

``kart_interface``'s own logic drives the ``kart`` scenario's vessel on ``rover.step``
(``drive_limits.Rig``: flat ground, no ROS, no UDP), every control step as the node does it
(``KartInterfaceNode._step``): the wheels' spin and steering angles and the yaw rate
measured (``actuation.measure``), the command in force stepped (``KartInterface.control``:
``longitudinal.step``, then ``actuation.wheel_orders``), each wheel's order handed to the
physics as the simulator takes a ``WheelCommand`` (``wheels.Commands.of``). The control
period is ``kart_interface``'s (``control_period_sec``), the physics step the scenario's; the
model's parameters are the node's (``vehicle.longitudinal_params`` of the kart's wheels and
mass, ``full_brake_deceleration`` and ``max_speed`` at their defaults). In process the order
computed after a physics step acts on the next one: no transport delay.

Each ``Step`` commands 0 for ``LEAD`` s (at rest the brakes hold, at speed the speed holds),
then its acceleration for ``hold`` s. ``figures`` measures it on the simulator's truth, the
kart's forward speed sampled every control step: the acceleration is its difference over
one period, smoothed by a centred moving average of ``WINDOW`` samples (0.1 s: the smoothing
shifts no time), and gives

- ``rise_s``: the first time after the step the smoothed acceleration reaches 90 % of the
  command (null for a command of 0, or when it never does);
- ``mean_error_mps2``, ``rms_error_mps2``: measured minus commanded acceleration over the
  held part, from ``HELD_FROM`` s after the step to its end;
- ``speed_error_mps``: the speed at the end (``end_speed_mps``) minus the integrated
  command's, the speed at the step (``speed_at_step_mps``) + command × ``hold``;
- ``max_torque_share``: the largest share a rear motor gave of the torque it has at its spin
  (``wheels.torque_curve``; full torque against the spin), ``saturated_s`` how long one gave
  at least ``SATURATED`` of it and ``motors_saturated`` whether one ever did.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
import math

import numpy as np
from pylon_kart import actuation, interface_params, vehicle
from pylon_kart.geometry import Geometry, geometry_of, Wheel
from pylon_sim.game import drive_limits, wheels

LEAD = 1.0              # s of a command 0 before the step
WINDOW = 5              # samples of the centred moving average (0.1 s at 50 Hz)
RISE = 0.9              # of the command
HELD_FROM = 0.5         # s after the step: the held part begins
SATURATED = 0.98        # of the torque available at the spin


@dataclass(frozen=True)
class Step:
    """An acceleration step: from ``start_speed`` (m/s), ``acceleration`` for ``hold`` s."""

    name: str
    start_speed: float
    acceleration: float
    hold: float


STEPS = (Step('accel_1', 0.0, 1.0, 3.0), Step('accel_2', 0.0, 2.0, 3.0),
         Step('accel_3', 0.0, 3.0, 3.0), Step('brake_2_from_8', 8.0, -2.0, 3.0),
         Step('brake_4_from_8', 8.0, -4.0, 1.5), Step('hold_8', 8.0, 0.0, 3.0))
"""The steps ``bench_kart.py`` measures (the braking ones end at 2 m/s, before a stop)."""


@dataclass(frozen=True)
class Trace:
    """One run, sampled every control step (t = 0: the step's first control step)."""

    period: float               # s, the control period
    t: np.ndarray               # s
    speed: np.ndarray           # m/s, forward, the simulator's truth
    torque_share: np.ndarray    # the rear motors' largest share of their available torque


def default(name: str):
    """Return the default of one of ``kart_interface``'s parameters."""
    return next(row.default for row in interface_params.PARAMETERS if row.name == name)


def kart_geometry(rig: drive_limits.Rig) -> Geometry:
    """Return the kart's geometry as kart_interface builds it (from the scenario's wheels)."""
    p = rig.params
    return geometry_of([Wheel(name, float(hub[0]), float(hub[1]), float(r), bool(steer > 0),
                              float(steer), float(torque))
                        for name, hub, r, steer, torque in zip(p.names, p.hub, p.radius,
                                                               p.steer_max, p.max_torque)])


def kart_interface(rig: drive_limits.Rig, geometry: Geometry) -> vehicle.KartInterface:
    """Return kart_interface's logic for the rig's kart with the node's defaults, engaged."""
    limits = vehicle.Limits(default('command_timeout_sec'), default('max_acceleration'),
                            default('stop_deceleration'), default('park_speed'))
    kart = vehicle.KartInterface(limits, vehicle.longitudinal_params(
        geometry, rig.mass, default('full_brake_deceleration'), default('max_speed')))
    kart.request_mode(vehicle.AUTONOMOUS)
    return kart


def physics_commands(rig: drive_limits.Rig, orders: list[actuation.WheelOrder]
                     ) -> wheels.Commands:
    """Return the physics' commands for the wheels' orders, each a WheelCommand in force."""
    return wheels.Commands.of(rig.params, {o.id: {**asdict(o), 'commanded': True}
                                           for o in orders}, True)


def torque_share(rig: drive_limits.Rig) -> float:
    """Return the driven wheels' largest |drive torque| over what their motors have now."""
    p, state = rig.params, rig.wheels
    available = p.max_torque * np.where(state.drive_torque * state.omega > 0.0,
                                        wheels.torque_curve(p, state.omega), 1.0)
    driven = p.max_torque > 0.0
    return float(np.max(np.abs(state.drive_torque[driven]) /
                        np.maximum(available[driven], 1e-9)))


def run(rig: drive_limits.Rig, step: Step, period: float, physics_step: float) -> Trace:
    """Drive ``step`` with kart_interface's logic every ``period`` s; return the trace.

    ``physics_step``: the scenario's; the rig steps ``drive_limits.STEP`` and ``period``
    must be a whole number of them.
    """
    if not math.isclose(physics_step, drive_limits.STEP):
        raise ValueError(f'the rig steps {drive_limits.STEP} s, the scenario {physics_step} s')
    if not math.isclose(period / physics_step, round(period / physics_step)):
        raise ValueError(f'a control period of {period} s is no whole number of physics steps')
    rig.reset()
    if step.start_speed:
        rig.set_rolling(step.start_speed)
    geometry = kart_geometry(rig)
    kart = kart_interface(rig, geometry)
    names = rig.params.names
    lead = int(round(LEAD / period))
    ticks = lead + int(round(step.hold / period))
    motion = rig.motion(0.0)
    t, speed, share = [], [], []
    for i in range(ticks + 1):
        now = (i - lead) * period
        t.append(now)
        speed.append(motion.forward)
        share.append(torque_share(rig))
        if i == ticks:
            break
        measured = actuation.measure(geometry, dict(zip(names, rig.wheels.omega)),
                                     dict(zip(names, rig.wheels.steering)), motion.yaw_rate)
        if i == 0:
            kart.engage(measured.longitudinal_velocity)   # the lease acquired at the speed
        kart.on_control(0.0, step.acceleration if now >= 0.0 else 0.0, now, geometry)
        _, orders = kart.control(now, geometry, measured, period)
        motion = rig.run(period, physics_commands(rig, orders))[-1]
    return Trace(period, np.array(t), np.array(speed), np.array(share))


def smoothed_acceleration(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Return (t, the acceleration over one period, centred moving average of WINDOW)."""
    accel = np.diff(trace.speed) / trace.period
    mid = 0.5 * (trace.t[1:] + trace.t[:-1])
    kernel = np.ones(WINDOW) / WINDOW
    return (np.convolve(mid, kernel, mode='valid'), np.convolve(accel, kernel, mode='valid'))


def figures(trace: Trace, step: Step) -> dict:
    """Return the step's rise time, tracking errors, end speed error and saturation."""
    t, accel = smoothed_acceleration(trace)
    a = step.acceleration
    after = t >= 0.0
    reached = after & (np.sign(a) * accel >= RISE * abs(a)) if a else np.zeros_like(after)
    held = t >= HELD_FROM
    error = accel[held] - a
    start = int(np.argmin(np.abs(trace.t)))
    saturated = (trace.t > 0.0) & (trace.torque_share >= SATURATED)
    return {
        'speed_at_step_mps': round(float(trace.speed[start]), 3) + 0.0,   # never -0.0
        'command_mps2': a, 'hold_s': step.hold,
        'rise_s': round(float(t[np.argmax(reached)]), 3) if reached.any() else None,
        'mean_error_mps2': round(float(error.mean()), 4),
        'rms_error_mps2': round(float(np.sqrt(np.mean(error ** 2))), 4),
        'speed_error_mps': round(float(trace.speed[-1] - trace.speed[start] - a * step.hold), 4),
        'end_speed_mps': round(float(trace.speed[-1]), 3),
        'max_torque_share': round(float(trace.torque_share[trace.t > 0.0].max()), 2),
        'motors_saturated': bool(saturated.any()),
        'saturated_s': round(float(saturated.sum() * trace.period), 3)}


def longitudinal(rig: drive_limits.Rig, physics_step: float, steps=STEPS) -> dict:
    """Return every step's figures by name, at kart_interface's control period."""
    period = default('control_period_sec')
    out = {'control_period_s': period, 'physics_step_s': physics_step,
           'smoothing_s': round(WINDOW * period, 3), 'held_from_s': HELD_FROM}
    for step in steps:
        out[step.name] = figures(run(rig, step, period, physics_step), step)
    return out
