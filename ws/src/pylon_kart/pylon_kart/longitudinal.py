"""The kart's longitudinal model: a commanded acceleration to motor and brake (pure).

The competition commands an acceleration (m/s², along the direction the gear drives: forward
in DRIVE, backward in REVERSE). The kart's rear wheels each have a motor that servoes its
spin to a target with a torque limit (the simulator's wheel motor, like KSP's: full torque
for a spin error of 1 rad/s), and every wheel has a brake. ``step`` turns the command into
both, each control step:

Reference speed
    The commanded acceleration is integrated into a reference speed ``u_ref`` (m/s along the
    gear's direction, never negative: a gear does not drive the other way), kept within
    ``band`` of the measured speed ``u`` (the integrator's anti-windup: a command beyond
    what the tyres and motors can give leaves the motors at full torque, not a reference
    running away). When the command's sign turns, a positive command starts from the
    measured speed if the reference is behind it, a negative one if it is ahead (a stop
    never waits for a reference that ran ahead). The motors servo the rear wheels to
    ``u_ref`` at full torque: the
    kart then accelerates at the commanded rate as long as the motors can give it, and an
    acceleration of 0 holds the speed (the motors make up for rolling resistance).

Brakes
    A deceleration beyond what the motors give (``motor_deceleration``: their torque
    against the spin) adds the brakes in proportion:
    ``brake = (−a − motor_deceleration) / full_brake_deceleration`` within 0–1. With the
    reference at 0 and the kart below ``hold_speed``, the brakes hold it (brake 1).

Gears
    DRIVE and REVERSE as above; NEUTRAL: motors off, a negative command brakes
    (``−a / full_brake_deceleration``), a positive one does nothing; PARK: motors off,
    brake 1 (the parking brake).

Direct actuation (``actuation_cmd``: accel 0–1, brake 0–1): the motors drive toward the
gear's ``max_speed`` with ``accel`` × their torque (off at accel 0), the brakes at ``brake``.
"""

from __future__ import annotations

from dataclasses import dataclass

DRIVE = 'drive'
REVERSE = 'reverse'
NEUTRAL = 'neutral'
PARK = 'park'
DIRECTION = {DRIVE: 1.0, REVERSE: -1.0, NEUTRAL: 0.0, PARK: 0.0}


@dataclass(frozen=True)
class Params:
    """What the model knows of the kart (SI units)."""

    motor_deceleration: float        # m/s², what the motors alone give against the spin
    full_brake_deceleration: float   # m/s², what brake 1 gives (measured on the kart)
    max_speed: float = 20.0          # m/s, the highest reference speed
    band: float = 1.0                # m/s, the reference stays within this of the speed
    hold_speed: float = 0.3          # m/s, below it a stopped reference holds on the brakes


@dataclass(frozen=True)
class Drive:
    """What the wheels are told: the rear axle centre's speed and the actuators."""

    speed: float = 0.0               # m/s, signed along base_link x (the motors' target)
    torque_fraction: float = 0.0     # 0..1 of each motor's torque; 0: motors off
    brake: float = 0.0               # 0..1

    @property
    def motors_on(self) -> bool:
        """Tell whether the motors are driving (a torque limit above 0)."""
        return self.torque_fraction > 0.0


def _clip(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


def step(u_ref: float, acceleration: float, speed: float, gear: str, params: Params,
         dt: float, turned: bool = False) -> tuple[float, Drive]:
    """Return the new reference speed and the drive for one step of ``dt`` (s).

    ``speed``: the measured longitudinal speed (m/s, + forward); ``acceleration`` the
    command (m/s², along the gear's direction); ``turned``: the command's sign differs from
    the previous step's (the reference then starts from the speed if it lags a raise or
    leads a stop; only then: a measured speed's noise must not ratchet it every step).
    """
    direction = DIRECTION[gear]
    if gear == PARK:
        return 0.0, Drive(brake=1.0)
    if gear == NEUTRAL:
        return 0.0, Drive(brake=_clip(-acceleration / params.full_brake_deceleration, 0.0, 1.0))
    u = direction * speed
    if turned and acceleration > 0.0:      # a raise does not wait for a reference behind,
        u_ref = max(u_ref, u)
    elif turned and acceleration < 0.0:    # nor a stop for one that ran ahead
        u_ref = min(u_ref, u)
    u_ref = _clip(u_ref + acceleration * dt, max(0.0, u - params.band),
                  min(params.max_speed, max(0.0, u + params.band)))
    brake = _clip((-acceleration - params.motor_deceleration) / params.full_brake_deceleration,
                  0.0, 1.0)
    if u_ref == 0.0 and acceleration <= 0.0 and abs(u) < params.hold_speed:
        brake = 1.0
    return u_ref, Drive(direction * u_ref, 1.0, brake)


def actuation(accel: float, brake: float, gear: str, params: Params) -> Drive:
    """Return the drive of a direct actuation command (``accel``, ``brake`` in 0..1)."""
    direction = DIRECTION[gear]
    if gear == PARK:
        return Drive(brake=1.0)
    if direction == 0.0:
        accel = 0.0
    return Drive(direction * params.max_speed if accel > 0.0 else 0.0, accel, brake)
