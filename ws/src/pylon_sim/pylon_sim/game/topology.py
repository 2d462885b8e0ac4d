"""Part-tree topology changes as pure functions: a separator splits a vessel in two.

KSP facts modelled (see the README, Separation operations):

- a separator part (module ``decoupler``, ``fairing``, ``launch_clamp``) detaches itself
  from its parent, as a stack decoupler's explosive top node does: the separator and every
  part below it in the tree ("beyond" it, seen from the root) become a new vessel; the
  root part, the control-from part, stays with the vessel that keeps its id;
- a separator that is the root part has nothing beyond it (``NothingBeyondError``);
- the new vessel's root part is the separator; its vessel frame is the separator part's
  frame, so its part poses are re-expressed in that frame; parts keep their persistent
  and flight ids, resources and modules;
- it is debris unless it holds a part with a ``command`` module (a probe core or a pod).

Mass and momentum (``separate_states``): both pieces move on from the shared rigid state
(every point of the whole moved with v + ω × r), then the separator's ejection impulse J
acts at the separator part, along its stack axis (part +X), +J on the piece beyond and −J
on the kept piece. Total mass, linear momentum and angular momentum about the common
centre of mass are conserved: the orbital and spin parts of the impulse's moment cancel.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from pylon_protocol import rotations

from pylon_sim.game.physics import RigidState
from pylon_sim.game.vessel import MassProperties, Module, Part, VesselSpec

CONTROL_MODULE = 'command'
DEFAULT_EJECTION_FORCE_KN = 100.0   # a separator's ``ejection_force`` without a setting


def push_impulse(force_kn: float, dt: float) -> float:
    """Return the impulse, N s, of a push of ``force_kn`` (kN) for one integrated step.

    ``dt`` is the step the frame integrates (``World.frame_step``: ``physics_step`` x the
    physics warp rate), so a push gives the same momentum at every warp rate.
    """
    return float(force_kn) * 1000.0 * dt


def ejection_impulse(module: Module, dt: float) -> float:
    """Return a separator's impulse, N s: its ``ejection_force`` (kN) for one step ``dt``."""
    force = module.number('ejection_force', DEFAULT_EJECTION_FORCE_KN)
    if force < 0.0:
        force = DEFAULT_EJECTION_FORCE_KN
    return push_impulse(force, dt)


class NothingBeyondError(ValueError):
    """The separator has no parent: nothing lies beyond it to separate."""


@dataclass(frozen=True)
class Split:
    """A vessel divided at a separator part."""

    kept: VesselSpec
    beyond: VesselSpec
    kept_indices: tuple[int, ...]      # original part indices, in the kept spec's order
    beyond_indices: tuple[int, ...]    # original part indices, in the beyond spec's order
    origin: np.ndarray                 # the beyond vessel frame's origin, original frame
    rotation: np.ndarray               # beyond frame -> original frame, quaternion x y z w


def subtree(spec: VesselSpec, index: int) -> tuple[int, ...]:
    """Return ``index`` and every part below it in the part tree, in part order."""
    inside = {index}
    for i, part in enumerate(spec.parts):   # parents come before their children
        if part.parent is not None and part.parent in inside:
            inside.add(i)
    return tuple(sorted(inside))


def has_control(parts: tuple[Part, ...] | list[Part]) -> bool:
    """Tell whether any part carries a command module (a pod or a probe core)."""
    return any(part.modules_of(CONTROL_MODULE) for part in parts)


def beyond_indices(spec: VesselSpec, separator: int) -> tuple[int, ...]:
    """Return the parts that leave with a separator (empty if it is the root part)."""
    if spec.parts[separator].parent is None:
        return ()
    return subtree(spec, separator)


def _reindexed(parts: list[Part], indices: tuple[int, ...]) -> tuple[Part, ...]:
    """Return the parts at ``indices`` with their parent indices renumbered."""
    new_index = {old: new for new, old in enumerate(indices)}
    return tuple(replace(part, parent=new_index.get(part.parent))
                 for part in (parts[i] for i in indices))


def split(spec: VesselSpec, separator: int, new_vessel_id: str) -> Split:
    """Split ``spec`` at part index ``separator``; raise NothingBeyondError at the root."""
    leaving = beyond_indices(spec, separator)
    if not leaving:
        raise NothingBeyondError(f'{spec.parts[separator].name} is the root part')
    staying = tuple(i for i in range(len(spec.parts)) if i not in set(leaving))
    sep = spec.parts[separator]
    origin = np.array(sep.position, dtype=float)
    to_sep = rotations.conjugate(sep.rotation)
    moved = []
    for i in leaving:
        part = spec.parts[i]
        position = rotations.rotate(to_sep, np.array(part.position, dtype=float) - origin)
        moved.append(replace(part, position=tuple(float(v) for v in position),
                             rotation=tuple(float(v) for v in rotations.normalize(
                                 rotations.multiply(to_sep, part.rotation)))))
    all_parts = list(spec.parts)
    for i, part in zip(leaving, moved):
        all_parts[i] = part
    beyond_parts = _reindexed(all_parts, leaving)
    debris = not has_control(beyond_parts)
    name = f'{spec.name} Debris' if debris else f'{spec.name} {_control_title(beyond_parts)}'
    kept = replace(spec, parts=_reindexed(list(spec.parts), staying))
    beyond = VesselSpec(new_vessel_id, name, beyond_parts, is_debris=debris)
    return Split(kept, beyond, staying, leaving, origin,
                 rotations.normalize(sep.rotation))


def _control_title(parts: tuple[Part, ...]) -> str:
    return next(p.title or p.name for p in parts if p.modules_of(CONTROL_MODULE))


def split_resources(resources: dict[tuple[int, str], float], indices: tuple[int, ...]
                    ) -> dict[tuple[int, str], float]:
    """Return the resource amounts of the parts at ``indices``, renumbered in that order."""
    new_index = {old: new for new, old in enumerate(indices)}
    return {(new_index[i], name): amount for (i, name), amount in resources.items()
            if i in new_index}


def in_frame(mass: MassProperties, origin: np.ndarray, rotation: np.ndarray
             ) -> MassProperties:
    """Return mass properties given in a frame (origin, rotation) in the enclosing frame."""
    rot = rotations.to_matrix(rotation)
    return MassProperties(mass.mass, origin + rot @ mass.com, rot @ mass.inertia @ rot.T)


@dataclass(frozen=True)
class Piece:
    """One piece of a split, in the original vessel frame."""

    mass: MassProperties          # com and inertia in the original vessel frame
    rotation: np.ndarray          # the piece's base_link axes -> original base_link axes
    sign: float                   # +1: the impulse pushes it along the axis, -1: against


def separate_states(state: RigidState, pieces: tuple[Piece, Piece], point: np.ndarray,
                    axis: np.ndarray, impulse: float) -> tuple[RigidState, RigidState]:
    """Return the rigid states of two pieces just after they separate.

    ``state`` is the whole vessel's (centre of mass = the pieces' common one); ``point``
    and ``axis`` are the separator's position and stack axis in the original vessel
    frame; ``impulse`` (N s) acts +axis on a piece of sign +1 and -axis on the other.
    On the ground (``state.landed``) both pieces stay landed, turning with the planet,
    and the ground takes the impulse.
    """
    rot = rotations.to_matrix(state.attitude)
    total = sum(p.mass.mass for p in pieces)
    com = sum(p.mass.mass * p.mass.com for p in pieces) / total
    omega = rot @ state.body_rate
    push = rot @ (np.asarray(axis, dtype=float) / np.linalg.norm(axis)) * impulse
    out = []
    for piece in pieces:
        r = rot @ (piece.mass.com - com)
        attitude = rotations.normalize(rotations.multiply(state.attitude, piece.rotation))
        piece_rot = rotations.to_matrix(attitude)
        position = state.position + r
        if state.landed:
            up = state.position / np.linalg.norm(state.position)
            out.append(replace(state, position=position,
                               velocity=state.velocity + np.cross(omega, r),
                               attitude=attitude, body_rate=piece_rot.T @ omega,
                               rest_altitude=state.rest_altitude + float(up @ r)))
            continue
        j = piece.sign * push
        inertia = rot @ piece.mass.inertia @ rot.T
        lever = rot @ (np.asarray(point, dtype=float) - piece.mass.com)
        spin = omega + np.linalg.solve(inertia, np.cross(lever, j))
        out.append(replace(state, position=position,
                           velocity=state.velocity + np.cross(omega, r) + j / piece.mass.mass,
                           attitude=attitude, body_rate=piece_rot.T @ spin))
    return out[0], out[1]


# -- docking: two vessels become one ------------------------------------------------------

@dataclass(frozen=True)
class Merged:
    """Two vessels joined at two docking ports, in the first one's vessel frame."""

    spec: VesselSpec
    order: tuple[int, ...]     # the second vessel's part indices, in their new order


def rerooted(spec: VesselSpec, root: int) -> tuple[tuple[int, ...], dict[int, int]]:
    """Return the part indices breadth-first from ``root`` and each one's new parent."""
    neighbours: dict[int, list[int]] = {i: [] for i in range(len(spec.parts))}
    for i, part in enumerate(spec.parts):
        if part.parent is not None:
            neighbours[i].append(part.parent)
            neighbours[part.parent].append(i)
    order, parent = [root], {}
    for index in order:
        for other in sorted(neighbours[index]):
            if other != root and other not in parent:
                parent[other] = index
                order.append(other)
    return tuple(order), parent


def merge(a: VesselSpec, b: VesselSpec, a_port: int, b_port: int, origin: np.ndarray,
          rotation: np.ndarray) -> Merged:
    """Join ``b`` to ``a``: ``b``'s port part becomes a child of ``a``'s port part.

    ``origin`` and ``rotation`` are ``b``'s vessel frame in ``a``'s; ``b``'s parts are
    re-expressed in ``a``'s frame and its tree re-rooted at its port, so every parent
    still comes before its children. The result keeps ``a``'s id, name and root.
    """
    order, parent = rerooted(b, b_port)
    new_index = {old: len(a.parts) + new for new, old in enumerate(order)}
    moved = []
    for i in order:
        part = b.parts[i]
        position = np.asarray(origin, dtype=float) + rotations.rotate(rotation, part.position)
        moved.append(replace(part, parent=a_port if i == b_port else new_index[parent[i]],
                             position=tuple(float(v) for v in position),
                             rotation=tuple(float(v) for v in rotations.normalize(
                                 rotations.multiply(rotation, part.rotation)))))
    return Merged(replace(a, parts=a.parts + tuple(moved)), order)


def merge_resources(a: dict[tuple[int, str], float], b: dict[tuple[int, str], float],
                    a_count: int, order: tuple[int, ...]) -> dict[tuple[int, str], float]:
    """Return the merged vessel's resource amounts (``b``'s parts renumbered)."""
    new_index = {old: a_count + new for new, old in enumerate(order)}
    return {**a, **{(new_index[i], name): amount for (i, name), amount in b.items()}}


def merge_states(a: RigidState, a_mass: MassProperties, b: RigidState, b_mass: MassProperties,
                 merged: MassProperties) -> RigidState:
    """Return the rigid state of two vessels joined rigidly (a perfectly inelastic capture).

    Linear momentum and angular momentum about the common centre of mass are kept; the
    merged body turns with ``merged.inertia`` (``a``'s axes) and keeps ``a``'s attitude.
    """
    total = a_mass.mass + b_mass.mass
    position = (a_mass.mass * a.position + b_mass.mass * b.position) / total
    velocity = (a_mass.mass * a.velocity + b_mass.mass * b.velocity) / total
    angular = np.zeros(3)
    for state, mass in ((a, a_mass), (b, b_mass)):
        rot = rotations.to_matrix(state.attitude)
        angular += rot @ mass.inertia @ state.body_rate
        angular += mass.mass * np.cross(state.position - position, state.velocity - velocity)
    rot = rotations.to_matrix(a.attitude)
    rate = np.linalg.solve(merged.inertia, rot.T @ angular)
    return replace(a, position=position, velocity=velocity, body_rate=rate)
