"""``referee``: scores every vehicle's task, in the management domain: a rendezvous, a race.

**A rendezvous** (from ground truth). It reads the management's mission description
(``/admin/awsim/mission``: the task, the vehicles, the start) and, for each vehicle k, the
ground truth its ``udp_bridge`` relays to the management domain under
``/d<k>/awsim/ground_truth`` (``pylon_common.mission.ground_truth_topic``): the
``NearbyVessels`` (the target's position and velocity and the vehicle's own, one instant)
and the ``FlightState`` (its ``universal_time`` beside its stamp gives the game time of
the vehicle's stamps). ``referee.Referee`` scores them; the ranking goes on
``/admin/awsim/ranking`` (latched JSON, ``Referee.ranking``) when it changes, and, when the
mission ends (Finish, FinishAll or Terminate), into ``results_path`` (JSON) and the log.

**A race** (the description's task ``kind: race``): the simulator counts the laps, the
description carries every kart's race, and ``judge.RaceJudge`` ranks them (laps, then the
race time of the last lap's end); the ranking goes on ``/admin/awsim/ranking`` when it
changes; at Finish and at FinishAll, once per race end (a reset, a new start arm it
again), the judge's result files (``d<N>-result-details.json``, ``result-summary.json``)
go into the folder of ``results_path``, the final ranking to ``results_path`` itself, and
the ranking to the log. No ground truth is read for a race.

With ``exit_on_finish`` it stops once it has written the results of an ended mission and its
subscribers acknowledged the final ranking (``FINAL_ACK_TIMEOUT_SEC`` at most).
No vehicle domain is touched: this node lives in the management domain only. Its status
goes on ``/diagnostics`` there every second (``pylon_common.diagnostics``, hardware id the
mission topic): the mission state and the vehicles scored, how many of them have
game time (``timed``) and ground-truth samples (``sampled``), WARN until a mission is known.
"""

from __future__ import annotations

import json
from pathlib import Path

from pylon_common import diagnostics, mission, node_main, topics
from pylon_common.parameters import declare, Parameter
from pylon_common.stamps import to_seconds
from pylon_interfaces.msg import FlightState, NearbyVessels
from rclpy.duration import Duration
from rclpy.node import Node
from std_msgs.msg import String

from pylon_mission import judge
from pylon_mission.referee import Referee

PARAMETERS: tuple[Parameter, ...] = (
    Parameter('results_path', '', 'write the ranking here (JSON) when the mission ends '
                                  '(Finish, FinishAll; a rendezvous also at Terminate); a '
                                  "race's result files go into its folder; '' writes "
                                  'nothing'),
    Parameter('exit_on_finish', False, 'stop the node once it wrote the results of an ended '
                                       'mission and its subscribers acknowledged the final '
                                       'ranking (2 s at most)'),
    Parameter('publish_period_sec', 0.5, 's between two looks at the ranking (published when '
                                         'it changed)', 0.05, 60.0),
)
FINAL_ACK_TIMEOUT_SEC = 2.0
"""s (wall) ``exit_on_finish`` waits at most for the final ranking's acknowledgements."""


def relative(msg: NearbyVessels, target_id: str) -> tuple[tuple, tuple] | tuple[None, None]:
    """Return the target's position and velocity relative to the observer, or (None, None)."""
    for vessel in msg.vessels:
        if vessel.vessel_id == target_id:
            o, v = msg.observer_position, msg.observer_linear_velocity
            p, w = vessel.position, vessel.linear_velocity
            return (p.x - o.x, p.y - o.y, p.z - o.z), (w.x - v.x, w.y - v.y, w.z - v.z)
    return None, None


class RefereeNode(Node):
    """The referee's ROS plumbing."""

    def __init__(self) -> None:
        """Declare the parameters and wait for the mission description."""
        super().__init__(topics.REFEREE)
        self.params = declare(self, PARAMETERS)
        self.referee = Referee()
        self.judge = judge.RaceJudge()
        self.race = False                       # the mission is a race (the judge's)
        self.offsets: dict[int, float] = {}     # stamp - UT of each vehicle's bridge
        self.vehicle_subs: dict[int, list] = {}
        self.published = ''
        self.written = ''
        self.pub = self.create_publisher(String, topics.name('admin/ranking'),
                                         topics.qos('admin/ranking'))
        self.mission_sub = self.create_subscription(
            String, topics.name('admin/mission'), self._on_mission,
            topics.qos('admin/mission', reader=True))
        self.timer = self.create_timer(self.params['publish_period_sec'], self._tick)
        self.diagnostics = diagnostics.NodeDiagnostics(self, topics.name('admin/mission'),
                                                       self._report)

    def _report(self) -> diagnostics.Report:
        if self.race:
            karts = self.judge.records()
            values = {'vehicles': ','.join(str(r.vehicle) for r in karts),
                      'kind': 'race', 'laps': ','.join(str(r.laps) for r in karts)}
            return diagnostics.Report(diagnostics.OK, f'judging the race of {len(karts)} '
                                      f"karts ({self.judge.description.get('state', '')})",
                                      values)
        vehicles = sorted(self.vehicle_subs)
        values = {'vehicles': ','.join(map(str, vehicles)), 'timed': len(self.offsets),
                  'sampled': sum(1 for samples in self.referee.backlog.values() if samples)}
        if not vehicles:
            return diagnostics.Report(diagnostics.WARN, 'waiting for the mission description',
                                      values)
        state = json.loads(self.published).get('state', '') if self.published else ''
        return diagnostics.Report(diagnostics.OK, f'scoring {len(vehicles)} vehicles '
                                  f'({state or "no ranking yet"})', values)

    def _on_mission(self, msg: String) -> None:
        try:
            description = json.loads(msg.data)
            if not isinstance(description, dict):
                raise ValueError('not a JSON object')
        except ValueError as exc:
            self.get_logger().warning(f'mission description ignored: {exc}',
                                      throttle_duration_sec=5.0)
            return
        self.race = judge.is_race(description)
        if self.race:
            self.judge.mission(description)
            end = self.judge.due()
            if end is not None:
                self._race_over(end)
            return
        self.referee.mission(description)
        for vehicle in self.referee.scored():
            if vehicle not in self.vehicle_subs:
                self._watch(vehicle)

    def _watch(self, vehicle: int) -> None:
        """Subscribe to vehicle k's relayed ground truth in the management domain."""
        self.vehicle_subs[vehicle] = [
            self.create_subscription(
                NearbyVessels, mission.ground_truth_topic(vehicle, 'ground_truth/nearby_vessels'),
                lambda msg, k=vehicle: self._on_nearby(k, msg),
                topics.qos('ground_truth/nearby_vessels', reader=True)),
            self.create_subscription(
                FlightState, mission.ground_truth_topic(vehicle, 'ground_truth/flight'),
                lambda msg, k=vehicle: self._on_flight(k, msg),
                topics.qos('ground_truth/flight', reader=True))]

    def _on_flight(self, vehicle: int, msg: FlightState) -> None:
        self.offsets[vehicle] = to_seconds(msg.header.stamp) - msg.universal_time

    def _on_nearby(self, vehicle: int, msg: NearbyVessels) -> None:
        offset = self.offsets.get(vehicle)
        if offset is None:
            return                  # no game time for this vehicle's stamps yet
        position, velocity = relative(msg, self.referee.target_vessel_id())
        if self.referee.sample(vehicle, to_seconds(msg.header.stamp) - offset, position,
                               velocity):
            self.get_logger().info(f'vehicle {vehicle} completed its task')
            self._tick()

    def _tick(self) -> None:
        if self.race:
            self._publish(self.judge.ranking())
            return
        ranking = self.referee.ranking()
        text = self._publish(ranking)
        if ranking['state'] in mission.FINAL_STATES and text != self.written:
            self._write(ranking, text)

    def _publish(self, ranking: dict) -> str:
        """Publish the ranking if it changed; return its text."""
        text = json.dumps(ranking, sort_keys=True)
        if text != self.published:
            self.pub.publish(String(data=text))
            self.published = text
        return text

    def _race_over(self, end: str) -> None:
        """Publish, log and write the race's final ranking and result files; stop if asked to."""
        ranking = self.judge.ranking()
        self._publish(ranking)
        self.get_logger().info(f'race {end}: lap target {ranking["lap_target"]}, time limit '
                               f'{ranking["time_limit_sec"]} s')
        for entry in ranking['vehicles']:
            best = entry['best_lap_sec']
            self.get_logger().info(
                f"rank {entry['rank']}: vehicle {entry['vehicle']} {entry['name']}: "
                f"{entry['laps']} laps{' (finished)' if entry['finished'] else ''}, "
                f"total {entry['total_time_sec']} s, best lap "
                f"{'-' if best is None else f'{best:.3f} s'}, penalties "
                f"{entry['penalty_count']}, boosts {entry['boosts_used']}")
        path = self.params['results_path']
        if path:
            try:
                files = self.judge.write(Path(path).parent, end)
                Path(path).write_text(json.dumps(ranking, indent=2, sort_keys=True) + '\n',
                                      encoding='utf-8')
                self.get_logger().info(f'results written to {path} and '
                                       f'{", ".join(f.name for f in files)} beside it')
            except OSError as exc:
                self.get_logger().error(f'cannot write the results to {path}: {exc}')
        if self.params['exit_on_finish']:
            self._stop()

    def _write(self, ranking: dict, text: str) -> None:
        """Log the final ranking; write it to ``results_path``; stop if asked to."""
        self.written = text
        for entry in sorted(ranking['vehicles'], key=lambda e: e['rank'] or 99):
            if entry['scored']:
                time_text = (f"{entry['completion_time_sec']:.1f} s" if entry['completed']
                             else 'not completed')
                self.get_logger().info(
                    f"rank {entry['rank']}: vehicle {entry['vehicle']} {entry['name']}: "
                    f"{time_text}, score {entry['score']:.1f}, propellant "
                    f"{entry['propellant_used_kg']:.2f} kg")
        path = self.params['results_path']
        if path:
            try:
                Path(path).write_text(json.dumps(ranking, indent=2, sort_keys=True) + '\n',
                                      encoding='utf-8')
                self.get_logger().info(f'results written to {path}')
            except OSError as exc:
                self.get_logger().error(f'cannot write the results to {path}: {exc}')
        if self.params['exit_on_finish']:
            self._stop()

    def _stop(self) -> None:
        """Stop the node once its subscribers acknowledged the final ranking (at most 2 s).

        The ranking is Reliable and Transient Local: a publisher destroyed before its readers
        acknowledged its last message takes that message with it.
        """
        if not self.pub.wait_for_all_acked(Duration(seconds=FINAL_ACK_TIMEOUT_SEC)):
            self.get_logger().warning('the final ranking was not acknowledged by every '
                                      f'subscriber within {FINAL_ACK_TIMEOUT_SEC:g} s')
        node_main.request_stop()


def main() -> int:
    """Entry point of ``referee``."""
    return node_main.run(RefereeNode)
