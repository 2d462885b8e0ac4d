"""Mass properties of the vessel from its proxy URDF (the ``robot_description`` topic).

The proxy model gives every part as a link with ``<inertial>`` (mass, inertia about the
link's inertial origin) and places links with joint origins (``xyz``, ``rpy``; moving
joints are taken at zero). ``mass_properties`` sums them into the vessel's mass, centre
of mass and inertia about it, in the root link's axes. The proxy draws every part as a
box (a cylinder as its bounding box), so the moments come out equal to the vessel's or up
to about a third larger: the controller then expects less angular acceleration than it
gets, the safe side. The controller uses that inertia
as base_link's: the two frames have the same axes when the vessel is controlled from its
root part (the simulator's vessels, and most craft); otherwise the inertia is expressed in
slightly wrong axes, which the rate loop tolerates.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
import xml.etree.ElementTree as ElementTree

import numpy as np


@dataclass(frozen=True)
class MassProperties:
    """Mass (kg), centre of mass (m, root link frame) and inertia about it (kg·m²)."""

    mass: float
    com: np.ndarray
    inertia: np.ndarray


def _vector(text: str | None, size: int = 3) -> np.ndarray:
    values = [float(v) for v in (text or '').split()] or [0.0] * size
    if len(values) != size or not all(math.isfinite(v) for v in values):
        raise ValueError(f'expected {size} finite numbers, got {text!r}')
    return np.array(values)


def rpy_matrix(rpy: np.ndarray) -> np.ndarray:
    """Return the rotation of URDF roll-pitch-yaw (fixed axes X, then Y, then Z)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p),
                              math.cos(y), math.sin(y))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _origin(element) -> tuple[np.ndarray, np.ndarray]:
    origin = element.find('origin') if element is not None else None
    if origin is None:
        return np.zeros(3), np.eye(3)
    return _vector(origin.get('xyz')), rpy_matrix(_vector(origin.get('rpy')))


def mass_properties(urdf: str) -> MassProperties:
    """Return the vessel's mass properties from a proxy URDF (ValueError if unusable)."""
    try:
        robot = ElementTree.fromstring(urdf)
    except ElementTree.ParseError as exc:
        raise ValueError(f'not XML: {exc}') from None
    links = {link.get('name'): link for link in robot.findall('link')}
    parent_of = {}
    for joint in robot.findall('joint'):
        parent, child = joint.find('parent'), joint.find('child')
        if parent is None or child is None:
            raise ValueError('a joint without parent or child')
        parent_of[child.get('link')] = (parent.get('link'), _origin(joint))
    roots = [name for name in links if name not in parent_of]
    if len(roots) != 1:
        raise ValueError(f'expected one root link, found {len(roots)}')
    poses: dict[str, tuple[np.ndarray, np.ndarray]] = {roots[0]: (np.zeros(3), np.eye(3))}

    def pose(name: str, depth: int = 0) -> tuple[np.ndarray, np.ndarray]:
        if name in poses:
            return poses[name]
        if depth > len(links) or name not in parent_of:
            raise ValueError(f'link {name!r} is not connected to the root')
        parent, (xyz, rot) = parent_of[name]
        p_pos, p_rot = pose(parent, depth + 1)
        poses[name] = (p_pos + p_rot @ xyz, p_rot @ rot)
        return poses[name]

    items = []
    for name, link in links.items():
        inertial = link.find('inertial')
        if inertial is None:
            continue
        mass = float(inertial.find('mass').get('value'))
        i = inertial.find('inertia')
        ixx, ixy, ixz, iyy, iyz, izz = (float(i.get(k)) for k in
                                        ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz'))
        local = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        link_pos, link_rot = pose(name)
        xyz, rot = _origin(inertial)
        items.append((mass, link_pos + link_rot @ xyz, link_rot @ rot @ local
                      @ (link_rot @ rot).T))
    total = sum(m for m, _, _ in items)
    if not total > 0.0:
        raise ValueError('the model has no mass')
    com = sum(m * c for m, c, _ in items) / total
    inertia = np.zeros((3, 3))
    for m, c, local in items:
        r = c - com
        inertia += local + m * (float(r @ r) * np.eye(3) - np.outer(r, r))
    return MassProperties(float(total), com, inertia)
