"""The arm's URDF for the page: loaded with yourdfpy (what viser draws URDFs from), with the
solver's joints mapped onto yourdfpy's actuated joints."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np


def _filename_handler(mesh_dirs):
    """Mesh file names (package://, relative or absolute) -> the first file that exists: the
    package's one lookup first (yourdfpy's alone took ``package://meshes/...`` for a ROS
    package called meshes and drew no Panda), then yourdfpy's."""
    import yourdfpy

    from ..arm.resources import find_mesh

    def handle(fname: str) -> str:
        found = find_mesh(fname, mesh_dirs)
        if found is not None:
            return str(found)
        for folder in mesh_dirs:
            found = yourdfpy.filename_handler_magic(fname, dir=folder)
            if Path(found).is_file():
                return found
        return fname

    return handle


def load_urdf(arm):
    """A yourdfpy URDF with its visual shapes (primitives, and meshes where the files are)."""
    import yourdfpy

    buffer = io.StringIO(arm.urdf_text)
    return yourdfpy.URDF.load(
        buffer,
        build_scene_graph=True,
        load_meshes=True,
        build_collision_scene_graph=False,
        load_collision_meshes=False,
        filename_handler=_filename_handler(list(arm.mesh_dirs) or ["."]),
    )


class JointMap:
    """Puts the solver's joint vector into yourdfpy's configuration (other joints at zero)."""

    def __init__(self, urdf, arm):
        names = list(urdf.actuated_joint_names)
        missing = [n for n in arm.joint_names if n not in names]
        if missing:
            raise ValueError(f"joints {missing} of the arm are not actuated joints of its URDF")
        self.size = len(names)
        self.index = np.array([names.index(n) for n in arm.joint_names], dtype=int)

    def config(self, q) -> np.ndarray:
        cfg = np.zeros(self.size)
        cfg[self.index] = q
        return cfg


def base_pose(urdf, base: str):
    """The arm's base link in the URDF root's frame (wxyz, xyz), the joints at zero."""
    import viser.transforms as vtf

    T = urdf.get_transform(base, urdf.base_link)
    return vtf.SO3.from_matrix(T[:3, :3]).wxyz, T[:3, 3].copy()
