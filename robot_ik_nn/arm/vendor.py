"""Vendors' URDFs as they come: what the kinematic chain does not need is left out before the
file is parsed, so that a broken part of it cannot stop a training or a solver.

Left out without a word: ``<transmission>`` blocks (ros_control's business), ``<gazebo>`` and
every other element that is not a link, a joint or a material. Left out with a warning: a
transmission that names a joint the file does not have, and a link's ``<inertial>``,
``<visual>`` or ``<collision>`` or a joint's ``<dynamics>``, ``<safety_controller>`` or
``<calibration>`` whose numbers do not read as numbers (an unexpanded xacro value such as
``${pi/2}`` or ``reduction``), are not finite, or are too few or too many (a box size of two
numbers). Everything the chain is built from (a joint's type, parent, child, origin, axis, limit
and mimic) is kept as it is, and checked here, naming the joint: three finite numbers in an
origin or an axis, an axis that gives a direction (a prismatic joint's of length 1: ROS reads it
as a direction, PyBullet scales the travel by its length), finite limits with the effort and
velocity the format requires. An unexpanded xacro file (``<xacro:if>``, ``<xacro:macro>``,
``<xacro:include>`` ...) is refused: leaving those elements out would leave out the links and
joints inside them; a leftover ``<xacro:property>`` or ``<xacro:arg>`` is left out with a warning.
Blank lines before the XML declaration are forgiven.
"""

from __future__ import annotations

import math
import warnings
import xml.etree.ElementTree as ET

KEPT = ("link", "joint", "material")
OPTIONAL = {
    "link": ("inertial", "visual", "collision"),
    "joint": ("dynamics", "safety_controller", "calibration"),
}
NUMBERS = {  # attributes that hold numbers, in the optional parts
    "xyz", "rpy", "value", "ixx", "ixy", "ixz", "iyy", "iyz", "izz", "size", "radius",
    "length", "scale", "damping", "friction", "soft_lower_limit", "soft_upper_limit",
    "k_position", "k_velocity", "rising", "falling", "rgba",
}  # fmt: skip
LIMITS = ("lower", "upper", "effort", "velocity")
COUNTS = {"xyz": 3, "rpy": 3, "size": 3, "scale": 3, "rgba": 4}  # the others: one number
DECLARATIONS = {"property", "arg"}  # xacro's that hold no links or joints: left out, said so
SHORTEST_AXIS = 1e-4
# a prismatic axis this far from length 1 is refused (PyBullet scales the travel by the length,
# ROS and this package do not); "0.707 0 0.707" (1.5e-4 off) is a unit axis written short
PRISMATIC_AXIS = 1e-3  # urchin, which parses the file, turns a shorter axis into x without a word


class VendorFileError(ValueError):
    """The file is not XML at all."""


def kinematic_only(text: str, source: str) -> str:
    """``text`` with the parts the chain does not need left out (see the module docstring)."""
    try:  # blank lines before the XML declaration: a common slip of vendors' generators
        root = ET.fromstring(text.lstrip())
    except ET.ParseError as err:
        raise VendorFileError(f"malformed URDF {source}: {err}") from err
    joints = {j.get("name") for j in root.findall("joint")}
    xacro = sorted({e.tag.split("}")[1] for e in root.iter() if _is_xacro(e.tag)})
    if set(xacro) - DECLARATIONS:
        raise VendorFileError(
            f"{source} is an unexpanded xacro file (it has "
            + ", ".join(f"<xacro:{t}>" for t in xacro)
            + "): expand it first, e.g. `xacro FILE.urdf.xacro > FILE.urdf`"
        )
    _check_chain(root, source)
    notes = []
    for element in list(root):
        if element.tag in KEPT:
            continue
        if _is_xacro(element.tag):
            notes.append(f"<xacro:{element.tag.split('}')[1]} name='{element.get('name')}'>")
        if element.tag == "transmission":
            for j in element.findall("joint"):
                if j.get("name") not in joints:
                    notes.append(
                        f"transmission '{element.get('name')}' names joint '{j.get('name')}', "
                        "which the file does not have"
                    )
        root.remove(element)
    for owner in root:
        for part in list(owner):
            if part.tag in OPTIONAL.get(owner.tag, ()) and not _readable(part):
                notes.append(f"{owner.tag} '{owner.get('name')}': its <{part.tag}> is unreadable")
                owner.remove(part)
    if notes:
        warnings.warn(
            f"{source}: left out of the URDF (the kinematic chain does not need it): "
            + "; ".join(notes),
            stacklevel=3,
        )
    return ET.tostring(root, encoding="unicode")


def _check_chain(root, source: str) -> None:
    """The parts the chain is built from (see the module docstring), and no cycle."""
    parent_of = {}
    for j in root.findall("joint"):
        name = j.get("name")
        for tag, names in (("origin", ("xyz", "rpy")), ("axis", ("xyz",)), ("limit", LIMITS)):
            element = j.find(tag)
            for attr in names if element is not None else ():
                value = element.get(attr)
                if value is None:
                    if tag == "limit" and attr in ("effort", "velocity"):
                        raise VendorFileError(
                            f"malformed URDF {source}: joint '{name}' has a <limit> without "
                            f"{attr} (the URDF format requires effort and velocity)"
                        )
                    continue
                problem = _problem(attr, value)
                if problem:
                    raise VendorFileError(
                        f"malformed URDF {source}: joint '{name}' has <{tag} {attr}="
                        f'"{value}">: {problem}'
                    )
        limit = j.find("limit")
        if limit is not None and float(limit.get("velocity", 1)) < 0:
            raise VendorFileError(
                f"malformed URDF {source}: joint '{name}' has a negative velocity limit "
                f"{limit.get('velocity')}"
            )
        axis = j.find("axis")
        moves = j.get("type") in ("revolute", "continuous", "prismatic")  # else the axis is unused
        if moves and axis is not None and axis.get("xyz") is not None:
            length = math.sqrt(sum(float(v) ** 2 for v in axis.get("xyz").split()))
            if length < SHORTEST_AXIS:
                raise VendorFileError(
                    f"malformed URDF {source}: joint '{name}' has <axis xyz="
                    f'"{axis.get("xyz")}">, too short to give a direction (length {length:g})'
                )
            if j.get("type") == "prismatic" and abs(length - 1.0) > PRISMATIC_AXIS:
                raise VendorFileError(
                    f"malformed URDF {source}: prismatic joint '{name}' has <axis xyz="
                    f'"{axis.get("xyz")}"> of length {length:g}; write it as a unit vector '
                    "(ROS reads it as a direction, PyBullet scales the travel by its length)"
                )
        parent, child = j.find("parent"), j.find("child")
        if parent is not None and child is not None:
            parent_of[child.get("link")] = parent.get("link")
    for start in parent_of:
        seen, link = [start], parent_of[start]
        while link in parent_of and link not in seen:
            seen.append(link)
            link = parent_of[link]
        if link == start:
            loop = " -> ".join(reversed(seen + [start]))
            raise VendorFileError(f"malformed URDF {source}: the joints form a cycle: {loop}")


def _is_xacro(tag) -> bool:
    return isinstance(tag, str) and tag.startswith("{") and "xacro" in tag.split("}")[0]


def _problem(name: str, value: str) -> str:
    """What is wrong with the numbers of attribute ``name``, or "" when nothing is."""
    try:
        numbers = [float(v) for v in value.split()]
    except ValueError:
        return "not numbers (an unexpanded xacro value?)"
    if not all(math.isfinite(v) for v in numbers):
        return "not finite"
    count = COUNTS.get(name, 1)
    if len(numbers) != count and not (name == "scale" and len(numbers) == 1):
        return f"{len(numbers)} numbers where {count} belong"
    return ""


def _readable(part) -> bool:
    """Every number-holding attribute below ``part`` reads as finite numbers, as many as it
    should hold."""
    for element in part.iter():
        for name, value in element.attrib.items():
            if name in NUMBERS and _problem(name, value):
                return False
    return True
