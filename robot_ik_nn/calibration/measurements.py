"""Measured tool poses: the joints the arm was at and where a tracker saw its tool.

A CSV file has a header: the arm's joint names (radians, or metres for a prismatic joint), then
``x,y,z,qx,qy,qz,qw``, the measured tool pose in the arm's base frame (metres, a unit
quaternion). ``#`` starts a comment. A bad row is named by its line; a header that does not name
the arm's joints is refused with the names expected.

Poses measured in a tracker's own frame (eye-to-hand, ``calibrate --frame unknown``) are rows of
the same form; a comment line ``# frame: NAME`` before the header may name that frame (the
tracker's ``header.frame_id``), and readers that do not know it skip it as any comment.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

POSE = ["x", "y", "z", "qx", "qy", "qz", "qw"]
QUAT_TOLERANCE = 1e-3  # |norm - 1| beyond this: not a rotation, refused


class MeasurementError(ValueError):
    """Measurements that cannot be used, with the line and the reason."""


@dataclass
class Measurements:
    q: np.ndarray  # (N, dof) joints, in the arm's joint order
    position: np.ndarray  # (N, 3) measured tool positions, base frame
    quaternion: np.ndarray  # (N, 4) measured tool orientations (x, y, z, w), unit
    lines: np.ndarray  # (N,) the file line of each row (0: not from a file)
    frame: str = ""  # the frame the poses are in, when named ("": the arm's base frame)

    def __len__(self) -> int:
        return len(self.q)

    def subset(self, rows) -> "Measurements":
        return Measurements(
            self.q[rows], self.position[rows], self.quaternion[rows], self.lines[rows], self.frame
        )


def read_csv(path_or_text, joint_names) -> Measurements:
    """Measurements from a CSV file (or its text) for an arm with ``joint_names``."""
    text = str(path_or_text)
    where = "measurements"
    if "\n" not in text:
        path = Path(text)
        where = str(path)
        try:
            text = path.read_text()
        except OSError as err:
            raise MeasurementError(f"cannot read the measurements {path}: {err}") from None
    rows = [
        (n, line)
        for n, line in enumerate(text.splitlines(), 1)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    named = [
        line.split(":", 1)[1].strip()
        for line in text.splitlines()
        if line.lstrip().startswith("#") and line.lstrip("# \t").lower().startswith("frame:")
    ]
    if not rows:
        raise MeasurementError(f"{where}: no header and no rows")
    header_line, header = rows[0][0], next(csv.reader([rows[0][1]]))
    header = [h.strip() for h in header]
    expected = list(joint_names) + POSE
    if sorted(header) != sorted(expected) or len(header) != len(expected):
        raise MeasurementError(
            f"{where}:{header_line}: the header must name the arm's joints and then "
            f"{','.join(POSE)}; expected the columns {','.join(expected)}, got {','.join(header)}"
        )
    column = [header.index(name) for name in expected]
    values, lines = [], []
    for n, line in rows[1:]:
        cells = next(csv.reader(io.StringIO(line)))
        if len(cells) != len(header):
            raise MeasurementError(
                f"{where}:{n}: {len(cells)} values where the header has {len(header)}"
            )
        try:
            row = np.array([float(cells[c]) for c in column])
        except ValueError:
            raise MeasurementError(f"{where}:{n}: not a number in {line.strip()!r}") from None
        if not np.all(np.isfinite(row)):
            raise MeasurementError(f"{where}:{n}: a value that is not finite in {line.strip()!r}")
        norm = np.linalg.norm(row[-4:])
        if abs(norm - 1.0) > QUAT_TOLERANCE:
            raise MeasurementError(
                f"{where}:{n}: the quaternion qx,qy,qz,qw has norm {norm:.6f}, not 1"
            )
        row[-4:] /= norm
        values.append(row)
        lines.append(n)
    if not values:
        raise MeasurementError(f"{where}: a header and no rows")
    V, dof = np.array(values), len(joint_names)
    frame = named[0] if named else ""
    return Measurements(V[:, :dof], V[:, dof : dof + 3], V[:, dof + 3 :], np.array(lines), frame)


def to_csv(m: Measurements, joint_names) -> str:
    """The measurements as the CSV ``read_csv`` reads."""
    out = [f"# frame: {m.frame}"] if m.frame else []
    out.append(",".join(list(joint_names) + POSE))
    for q, p, quat in zip(m.q, m.position, m.quaternion):
        out.append(",".join(f"{v:.9g}" for v in [*q, *p, *quat]))
    return "\n".join(out) + "\n"
