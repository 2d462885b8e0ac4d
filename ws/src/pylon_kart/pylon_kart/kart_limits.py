"""What the reference stack knows of the kart: its size and limits (the defaults of its nodes).

The kart of the ``kart`` scenario (``kart_interface``'s README): a bicycle-model wheelbase
of 1.05 m; a ``steering_tire_angle`` limit of 0.3644 rad (20.9°: the inner front wheel at
its own 25° with a 1.0 m track; the interface refuses a command beyond it, so the
controller clamps to it); a top speed of about 15 m/s; about 4 m/s² of acceleration, 6 m/s²
of braking and 1 g of lateral grip. The stack drives well inside them (``trajectory``'s
profile). Frames: ``MAP`` is the track's ENU frame (``pylon_track``), ``base_link`` the
kart's body frame (x forward, y left, z up).
"""

from __future__ import annotations

from dataclasses import dataclass

G = 9.80665
"""m/s², standard gravity (the lateral limits are given in g)."""
MAP = 'map'
"""The track's frame (``pylon_track``: East-North-Up at the track's origin)."""


@dataclass(frozen=True)
class KartLimits:
    """The kart's geometry and limits (m, rad, m/s, m/s²)."""

    wheelbase: float = 1.05
    rear_axle: float = 0.45        # m, from base_link (the centre of mass) back to the rear axle
    max_steering_tire_angle: float = 0.3644
    max_speed: float = 15.0
    max_acceleration: float = 4.0
    max_deceleration: float = 6.0
    max_lateral_acceleration: float = 1.0 * G


KART = KartLimits()
"""The ``kart`` scenario's kart."""
