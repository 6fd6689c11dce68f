"""Vendors' URDFs as they come: what the kinematic chain does not need is left out before the
file is parsed, so that a broken part of it cannot stop a training or a solver.

Left out without a word: ``<transmission>`` blocks (ros_control's business), ``<gazebo>`` and
every other element that is not a link, a joint or a material. Left out with a warning: a
transmission that names a joint the file does not have, and a link's ``<inertial>``,
``<visual>`` or ``<collision>`` or a joint's ``<dynamics>``, ``<safety_controller>`` or
``<calibration>`` whose numbers do not read as numbers (an unexpanded xacro value such as
``${pi/2}`` or ``reduction``). Everything the chain is built from (a joint's type, parent,
child, origin, axis, limit and mimic) is kept as it is, so a real error there is still refused.
Blank lines before the XML declaration are forgiven.
"""

from __future__ import annotations

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


class VendorFileError(ValueError):
    """The file is not XML at all."""


def kinematic_only(text: str, source: str) -> str:
    """``text`` with the parts the chain does not need left out (see the module docstring)."""
    try:  # blank lines before the XML declaration: a common slip of vendors' generators
        root = ET.fromstring(text.lstrip())
    except ET.ParseError as err:
        raise VendorFileError(f"malformed URDF {source}: {err}") from err
    joints = {j.get("name") for j in root.findall("joint")}
    _check_chain(root, source)
    notes = []
    for element in list(root):
        if element.tag in KEPT:
            continue
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
    """The parts the chain is built from: numbers where numbers belong, and no cycle."""
    parent_of = {}
    for j in root.findall("joint"):
        for tag, names in (("origin", ("xyz", "rpy")), ("axis", ("xyz",)), ("limit", LIMITS)):
            element = j.find(tag)
            for name in names if element is not None else ():
                value = element.get(name)
                if value is not None and not _numbers(value):
                    raise VendorFileError(
                        f"malformed URDF {source}: joint '{j.get('name')}' has <{tag} "
                        f'{name}="{value}">, which is not numbers (an unexpanded xacro value?)'
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


def _numbers(value: str) -> bool:
    try:
        [float(v) for v in value.split()]
    except ValueError:
        return False
    return True


def _readable(part) -> bool:
    """Every number-holding attribute below ``part`` reads as numbers."""
    for element in part.iter():
        for name, value in element.attrib.items():
            if name in NUMBERS and not _numbers(value):
                return False
    return True
