"""The kart's measured limits and the cost of its sensors, in process (no ROS, no UDP).

The kart scenario's vessel is driven on ``rover.step`` (``pylon_sim.game.drive_limits``, on
flat ground: the track is kept free of craters and boulders): top speed, standing start,
braking from 10 m/s, the full-lock turn at 2 m/s, the lateral grip on a 12 m circle.
Then ``longitudinal``: kart_interface's longitudinal model on the same physics, its own
control step every ``control_period_sec`` (0.02 s, one physics step of the scenario's 0.02)
from the wheels' measured spin to each wheel's order (``pylon_testing.kart_response``): for
each acceleration step (0 for 1 s, then the command held), the rise to 90 % of the command
(on the simulator's forward speed differenced every control step, centred 0.1 s mean), the
mean and RMS error of the acceleration from 0.5 s after the step to its end, the speed's
error against the integrated command at the end, and the rear motors' saturation (a share
of 0.98 of the torque they have at their spin). Measured (6 December 2026):

    step (held)               rise    error mean / RMS     speed error  torque  saturated
    +1 m/s² 3 s from rest     0.31 s  −0.03 / 0.03 m/s²    −0.23 m/s    0.29    no
    +2 m/s² 3 s from rest     0.31 s  −0.11 / 0.11 m/s²    −0.58 m/s    0.65    no
    +3 m/s² 3 s from rest     0.31 s  −0.32 / 0.35 m/s²    −1.26 m/s    1.00    0.7 s, over 6 m/s
    −2 m/s² 3 s from 8 m/s    0.55 s  −0.04 / 0.07 m/s²    +0.32 m/s    0.39    no
    −4 m/s² 1.5 s from 8 m/s  0.53 s  −0.10 / 0.23 m/s²    +0.74 m/s    0.86    no
    0 m/s² 3 s at 8 m/s       —       −0.001 / 0.001 m/s²  −0.004 m/s   0.08    no

The rise is the motors' servo lag, the shortfall the tyres' slip (pylon_kart's README, The
kart's model; ``test_kart_step_response.py`` checks the bounds).

Then, on the grid over the kart scenario's terrain, the CPU time of one 2D LiDAR scan and
one camera frame (``imaging.lidar_fields`` and ``imaging.frame``, median of repeats).
Prints one JSON object; ``python bench/bench_kart.py``.
"""

from __future__ import annotations

import json
import statistics
import time

import numpy as np
from pylon_protocol.threads import limit_threads
from pylon_sim.game import drive_limits
from pylon_sim.game.vessel import mass_properties
from pylon_sim.game.world import World
from pylon_sim.loop.scenario import load_scenario
from pylon_sim.sensors import imaging
from pylon_sim.sensors.sensing import Sensing
from pylon_testing import kart_response

REPEATS = 9


def kart_figures(rig: drive_limits.Rig, scenario) -> dict:
    """Return the kart's mass, centre of mass and wheel settings as the physics uses them."""
    spec = scenario.vessels[0].spec
    mass = mass_properties(spec, spec.initial_resources())
    p = rig.params
    return {'mass_kg': mass.mass,
            'com_in_chassis_m': [round(float(v), 6) for v in mass.com],
            'hubs_base_link_m': {name: [round(float(v), 6) for v in hub]
                                 for name, hub in zip(p.names, p.hub)},
            'wheel_radius_m': float(p.radius[0]),
            'max_drive_torque_nm': [float(v) for v in p.max_torque],
            'max_speed_mps': float(p.max_speed[0]),
            'brake_torque_nm': float(p.brake_torque[0]),
            'wheelbase_m': rig.wheelbase, 'track_m': rig.track}


def sensor_costs(scenario) -> dict:
    """Return the median CPU ms of one LiDAR scan and one camera frame on the grid."""
    world = World(scenario)
    sensing = Sensing(world)
    scene = imaging.scene(world, world.ut)
    vessel = world.active
    out = {}
    for imager in sensing.imagers:
        times = []
        for _ in range(REPEATS):
            start = time.process_time()
            if imager.kind == 'camera':
                raw = imaging.frame(scene, vessel, imager.part, imager.settings,
                                    (0, 0, 0), (0, 0, 0, 1))
            else:
                fields = imaging.lidar_fields(imager, scene, vessel, world.ut)
            times.append(time.process_time() - start)
        out[f'{imager.kind}_ms'] = round(1e3 * statistics.median(times), 2)
        if imager.kind == 'camera':
            image = np.frombuffer(raw, dtype=np.uint8)
            out['camera_bytes'] = len(image)
        else:
            out['lidar_rays'] = len(fields['ranges'])
            out['lidar_hits'] = int(sum(fields['hitMask']))
    return out


def main() -> int:
    """Measure and print one JSON object."""
    limit_threads()
    scenario = load_scenario('kart')
    rig = drive_limits.Rig(scenario)
    result = {'kart': kart_figures(rig, scenario)}
    start = time.process_time()
    for manoeuvre in (drive_limits.top_speed, drive_limits.standing_start,
                      drive_limits.braking, drive_limits.full_lock_radius,
                      drive_limits.lateral_grip):
        result.update({k: round(v, 4) if isinstance(v, float) else v
                       for k, v in manoeuvre(rig).items()})
    result['physics_cpu_s'] = round(time.process_time() - start, 2)
    start = time.process_time()
    result['longitudinal'] = kart_response.longitudinal(rig, scenario.physics_step)
    result['longitudinal']['cpu_s'] = round(time.process_time() - start, 2)
    result.update(sensor_costs(scenario))
    print(json.dumps(result))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
