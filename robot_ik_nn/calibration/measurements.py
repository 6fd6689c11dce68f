"""Measured tool poses: the joints the arm was at and where a tracker saw its tool.

A CSV file has a header: the arm's joint names (radians, or metres for a prismatic joint), then
``x,y,z,qx,qy,qz,qw``, the measured tool pose in the arm's base frame (metres, a unit
quaternion). ``#`` starts a comment. A bad row is named by its line; a header that does not name
the arm's joints is refused with the names missing and those not expected.

What spreadsheets write is read as meant: a UTF-8 byte-order mark (or UTF-16), CRLF line ends,
``;`` or tab separators (with ``;``, a decimal comma too). :func:`check` then looks at the values
before any fit, against the nominal arm, and refuses the likely mistakes by name: joints in
degrees (far outside the limits, inside them read as degrees), positions in millimetres (or
centimetres, inches: the tool moving that many times farther between rows than the joints can
move it), poses far outside the arm's reach in the base frame (another frame), and quaternions
w-first under x,y,z,w labels (the turns between rows match the joints only when read w-first).

Poses measured in a tracker's own frame (eye-to-hand, ``calibrate --frame unknown``) are rows of
the same form; a comment line ``# frame: NAME`` before the header may name that frame (the
tracker's ``header.frame_id``), and readers that do not know it skip it as any comment.
"""

from __future__ import annotations

import csv
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
    source: str = "measurements"  # where they were read (messages name it)

    def __len__(self) -> int:
        return len(self.q)

    def subset(self, rows) -> "Measurements":
        return Measurements(
            self.q[rows],
            self.position[rows],
            self.quaternion[rows],
            self.lines[rows],
            self.frame,
            self.source,
        )


def _text(path_or_text) -> tuple[str, str]:
    """(text, where) of a CSV path or of CSV text itself."""
    text = str(path_or_text)
    if "\n" in text or "\r" in text:
        return text.lstrip("\ufeff"), "measurements"
    path = Path(text)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise MeasurementError(f"cannot read the measurements {path}: {err}") from None
    try:
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # a spreadsheet's "Unicode text"
            return data.decode("utf-16"), str(path)
        return data.decode("utf-8-sig"), str(path)  # a byte-order mark, if any, is not text
    except UnicodeDecodeError as err:
        raise MeasurementError(
            f"{path}: not UTF-8 text (byte {err.start}); save it as CSV UTF-8"
        ) from None


def _separator(header: str, expected) -> str:
    """The separator that splits the header into the expected names (",", ";" or a tab)."""
    for sep in (",", ";", "\t"):
        names = [h.strip() for h in next(csv.reader([header], delimiter=sep))]
        if sorted(names) == sorted(expected):
            return sep
    return ","


def read_csv(path_or_text, joint_names) -> Measurements:
    """Measurements from a CSV file (or its text) for an arm with ``joint_names``."""
    text, where = _text(path_or_text)
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
    expected = list(joint_names) + POSE
    header_line, sep = rows[0][0], _separator(rows[0][1], expected)
    header = [h.strip() for h in next(csv.reader([rows[0][1]], delimiter=sep))]
    if sorted(header) != sorted(expected) or len(header) != len(expected):
        missing = [h for h in expected if h not in header]
        unknown = [h for h in header if h not in expected]
        raise MeasurementError(
            f"{where}:{header_line}: the header must name the arm's joints and then "
            f"{','.join(POSE)}; expected the columns {','.join(expected)}, got "
            f"{','.join(header)} (missing: {', '.join(map(repr, missing)) or '-'}; not "
            f"expected: {', '.join(map(repr, unknown)) or '-'})"
        )
    column = [header.index(name) for name in expected]
    values, lines = [], []
    for n, line in rows[1:]:
        cells = next(csv.reader([line], delimiter=sep))
        if len(cells) != len(header):
            other = [s for s in (",", ";", "\t") if s != sep and s in line]
            hint = f" (separated by {other[0]!r} here, {sep!r} in the header)" if other else ""
            raise MeasurementError(
                f"{where}:{n}: {len(cells)} values where the header has {len(header)}{hint}"
            )
        if sep != ",":  # a spreadsheet that separates with ";" writes a decimal comma
            cells = [c.replace(",", ".") for c in cells]
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
    return Measurements(
        V[:, :dof], V[:, dof : dof + 3], V[:, dof + 3 :], np.array(lines), frame, where
    )


def to_csv(m: Measurements, joint_names) -> str:
    """The measurements as the CSV ``read_csv`` reads."""
    out = [f"# frame: {m.frame}"] if m.frame else []
    out.append(",".join(list(joint_names) + POSE))
    for q, p, quat in zip(m.q, m.position, m.quaternion):
        out.append(",".join(f"{v:.9g}" for v in [*q, *p, *quat]))
    return "\n".join(out) + "\n"


FAR_RAD = 0.5  # a revolute joint this far (or a quarter of its range) outside its limits: a unit
SCALE = 3.0  # positions this many times farther apart (or closer) than the joints say: a unit
TURNS_DEG = 10.0  # turns between rows this far (median) from the joints': not x, y, z, w
UNITS = (("millimetres", 1000.0), ("centimetres", 100.0), ("inches", 1 / 0.0254))


def check(m: Measurements, arm, frame: str = "base") -> None:
    """Refuse, by name, values that cannot be what the file format says, before any fit: joints
    in degrees, positions in millimetres (centimetres, inches), poses beyond the arm's reach in
    the base frame, quaternions w-first. Compared with the nominal arm (``arm``, an ArmModel),
    which a real arm differs from by millimetres and degrees, never by these factors."""
    from .chain import chain_of, forward_placed

    _joints(m, arm)
    chain, _ = chain_of(arm)
    tip = None if chain.tip_joint is None else chain.tip_joint[None]
    p, R = forward_placed(chain, chain.xyz[None], chain.R[None], chain.axis[None], tip, m.q)
    p, R = p[0], R[0]
    rng = np.random.default_rng(0)
    i = np.concatenate([np.arange(len(m))] * 3)[:3000]  # pairs of rows: each with a few others
    j = rng.permutation(len(i)) % len(m)
    i, j = i[i != j], j[i != j]
    _scale(m, p, i, j, arm, frame)
    _order(m, R, i, j)


def _joints(m: Measurements, arm) -> None:
    lo, hi, far, as_degrees = arm.lower, arm.upper, [], True
    prismatic = np.array([j.type == "prismatic" for j in arm.joints])
    for k, name in enumerate(arm.joint_names):
        v = m.q[:, k]
        if arm.continuous[k]:
            bad = np.abs(v) > 2 * np.pi + FAR_RAD
            fits = np.abs(np.radians(v)) <= 2 * np.pi
        else:
            margin = (hi[k] - lo[k]) / 4 + (0.0 if prismatic[k] else FAR_RAD)
            bad = (v < lo[k] - margin) | (v > hi[k] + margin)
            scaled = v / 1000 if prismatic[k] else np.radians(v)
            fits = (scaled >= lo[k] - margin) & (scaled <= hi[k] + margin)
        if bad.any():
            at = int(np.argmax(np.abs(v) * bad))
            unit = "m" if prismatic[k] else "rad"
            far.append(
                f"{name} reads {v[at]:.6g} (line {m.lines[at]}) where its limits are "
                f"[{lo[k]:.4g}, {hi[k]:.4g}] {unit}"
            )
            as_degrees &= bool(fits.all())
    if not far:
        return
    said = "; ".join(far)
    if as_degrees:
        raise MeasurementError(
            f"{m.source}: the joints look like degrees (millimetres for a prismatic joint): "
            f"{said}. Read so, every row falls within the limits; the file's joints are radians "
            "(metres for a prismatic joint): convert them; nothing fitted"
        )
    raise MeasurementError(
        f"{m.source}: joints far outside the arm's limits: {said}. The file's joints are "
        "radians (metres for a prismatic joint), in the header's order; nothing fitted"
    )


def _scale(m: Measurements, p, i, j, arm, frame: str) -> None:
    nominal = np.linalg.norm(p[i] - p[j], axis=1)
    measured = np.linalg.norm(m.position[i] - m.position[j], axis=1)
    moved = nominal > 0.02  # pairs of rows whose joints move the tool 2 cm or more
    if moved.sum() >= 3:
        ratio = float(np.median(measured[moved] / nominal[moved]))
        if not 1 / SCALE <= ratio <= SCALE:
            unit = [u for u, f in UNITS if abs(np.log(ratio / f)) < np.log(1.5)]
            guess = (
                f": they look like {unit[0]}; give x, y, z in metres"
                if unit
                else "; x, y, z are metres, the tool's place for the joints on the same row"
            )
            raise MeasurementError(
                f"{m.source}: the measured positions lie {ratio:.3g} times as far apart as the "
                f"joints on their rows can move the tool (median over {int(moved.sum())} pairs "
                f"of rows){guess}; nothing fitted"
            )
    if frame == "base":
        off = float(np.median(np.linalg.norm(m.position - p, axis=1)))
        if off > 2 * arm.reach:
            raise MeasurementError(
                f"{m.source}: the measured tool is {off:.3g} m (median) from where the joints "
                f"put it, farther than the arm reaches ({arm.reach:.3g} m): the poses are not "
                f"in the base frame ({arm.base}); for a tracker's own frame give --frame "
                "unknown; nothing fitted"
            )


def _order(m: Measurements, R, i, j) -> None:
    """The turn from row i's tool orientation to row j's, in the tool's own frame, is the same
    for the measured arm and the nominal one up to its errors (degrees), whatever frame the
    tracker sees it from; quaternions read in the wrong order turn otherwise."""
    from ..arm.rotations import quaternion_to_matrix

    def turns(Rm):  # (pairs,) how far the measured turns are from the joints' (deg)
        M = np.swapaxes(Rm[i], 1, 2) @ Rm[j]
        N = np.swapaxes(R[i], 1, 2) @ R[j]
        cos = (np.trace(np.swapaxes(M, 1, 2) @ N, axis1=1, axis2=2) - 1) / 2
        return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))

    as_labelled = float(np.median(turns(quaternion_to_matrix(m.quaternion))))
    w_first = float(np.median(turns(quaternion_to_matrix(m.quaternion[:, [1, 2, 3, 0]]))))
    if as_labelled > TURNS_DEG and w_first < as_labelled / 3:
        raise MeasurementError(
            f"{m.source}: the quaternions look w-first (w, x, y, z) where the header says "
            f"qx,qy,qz,qw: read in the header's order, the turns between rows are "
            f"{as_labelled:.1f} deg (median) from what their joints say, read w-first "
            f"{w_first:.1f} deg. Name the columns in the order the values come (qw,qx,qy,qz) "
            "or reorder them; nothing fitted"
        )
