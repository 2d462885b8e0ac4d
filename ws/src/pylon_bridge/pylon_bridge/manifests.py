"""The vessel's actuators and docking ports as the mod lists them: its two manifests.

``pylon_actuator_manifest`` (1 Hz, and at once after a runtime reset) names the active
vessel's actuators by kind; ``pylon_docking_port_manifest`` (1 Hz) its docking ports, an
empty list on vessel change. The bridge does with them what the public PyLoN bridge does:

- an actuator absent from the actuator manifest is removed: the bridge forgets what it
  keeps of it (a servo's joint state entry and joint on /tf, an RCS module's nozzle count,
  a separator's last state);
- a separator absent from it is instead latched as separated: it left with a spent stage,
  so its last state goes out once more on the latched separation topic, ``separated`` and
  no longer ``available``, under the manifest's runtime envelope (the new generation);
- a manifest of another ``vesselId`` resets everything: the previous vessel's separators
  are forgotten, none latched;
- a docking port absent from the docking port manifest has its topics (state, camera,
  camera info; the node drops its command subscription with the state) removed at once,
  not after ``--topic-timeout-sec`` of silence.

A state that comes later for an actuator or port the manifest left out is published as
usual (the mod sends none; the next manifest removes it again).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pylon_protocol.names import sanitize_name

from pylon_bridge.actions import topic_segment

ENVELOPE = ('runtimeInstance', 'runtimeGeneration', 'runtimeEpoch')
"""The runtime envelope fields a latched separator takes from the manifest."""
DOCKING_PORT_KEYS = ('docking_port/state', 'docking_port/camera', 'docking_port/camera_info')
"""The topics of one docking port (its id in the topic name)."""
MAX_SEPARATORS = 1024
"""Separators whose last state is kept at most (bounds the memory a sender costs); one
beyond them is not latched when it leaves."""


@dataclass(frozen=True)
class ActuatorChanges:
    """What an actuator manifest removed: names by kind, and the separators it latched."""

    removed: dict[str, frozenset[str]]
    latched: tuple[dict, ...] = ()

    def of(self, kind: str) -> frozenset[str]:
        """Return the removed names of one kind (``motor``, ``rcs``, ...)."""
        return self.removed.get(kind, frozenset())


class ActuatorManifest:
    """The vessel of the last manifest, and its separators' last states."""

    def __init__(self) -> None:
        """Know no vessel and no separator."""
        self.vessel_id: str | None = None
        self.separators: dict[str, dict] = {}     # name -> its last state packet

    def observe(self, packet: dict) -> None:
        """Note an actuator state (a separator's is kept for latching)."""
        name = packet['name']
        if packet['actuatorType'] == 'separation' and (
                name in self.separators or len(self.separators) < MAX_SEPARATORS):
            self.separators[name] = packet

    def update(self, packet: dict, kept: dict[str, Iterable[str]]) -> ActuatorChanges:
        """Apply a manifest; return what it removed of ``kept`` (kind -> names the bridge keeps).

        On a new ``vesselId`` everything is reset: the separators known of another vessel
        are forgotten, none latched.
        """
        listed: dict[str, set[str]] = {}
        for entry in packet['actuators']:
            listed.setdefault(entry['actuatorType'], set()).add(
                sanitize_name(entry['name'], entry['actuatorType']))
        if packet['vesselId'] != self.vessel_id:
            self.vessel_id = packet['vesselId']
            self.separators = {name: state for name, state in self.separators.items()
                               if state.get('vesselId') == self.vessel_id}
        removed = {kind: frozenset(n for n in names
                                   if sanitize_name(n, kind) not in listed.get(kind, set()))
                   for kind, names in kept.items()}
        gone = [name for name in self.separators
                if sanitize_name(name, 'separation') not in listed.get('separation', set())]
        latched = tuple(self._latched(self.separators.pop(name), packet) for name in gone)
        removed['separation'] = frozenset(gone)
        return ActuatorChanges({k: v for k, v in removed.items() if v}, latched)

    @staticmethod
    def _latched(state: dict, manifest: dict) -> dict:
        """Return a separator's last state, separated and unavailable, in the manifest's run."""
        return {**state, **{key: manifest[key] for key in ENVELOPE if key in manifest},
                'vesselId': manifest['vesselId'], 'separated': True, 'available': False}


def absent_ports(packet: dict, present: Iterable[str]) -> list[str]:
    """Return the ports (topic ids) of ``present`` a docking port manifest leaves out."""
    listed = {topic_segment(port['name']) for port in packet['ports']}
    return sorted(set(present) - listed)
