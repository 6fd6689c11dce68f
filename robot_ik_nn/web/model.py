"""A solver as the JavaScript solver reads it (``web/src/ik.js``): one JSON file,
``model.web.json``.

    write_web_model(Solver.load("models/niryo_one"), "site/model.web.json")

The file holds the solver's own model buffer (layout.pack_model: the chain, the settings, the
network's meta layout and layer sizes; float64) and its network weights (float32, weights then
biases), each base64 of its little-endian bytes, with the SHA-256 of the two decoded buffers one
after the other, so that the page can tell a truncated or altered file. Beside them, the named
indices of that packing (layout.py, network_forward.py) and the policy's constants (policy.py,
candidates.py, kernel.py, verdicts.py), taken from the Python modules when the file is written:
the packing has one home, the JavaScript reads it by these names and hard-codes none of it.

Left out: the collision model (the JavaScript solver does not check collisions; the settings
say whether the Python solver did), and a calibrated arm's compliance (refused: its answers are
joints to command, which the page would not compute).
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import numpy as np

from ..ik import candidates, kernel, layout, network_forward, policy, verdicts

FORMAT = "robot_ik_nn.web/1"
FILE = "model.web.json"

# the header of layout.pack_model's buffer, entry by entry (layout.parts reads the same places)
HEADER = {
    "dof": 0,
    "layers": 1,
    "width": 2,
    "chain": 3,
    "cfg": 4,
    "meta": 5,
    "sizes": 6,
    "heads": 7,
    "end": 8,  # where the sizes end (and the collision model, left out here, would begin)
}
_CHAIN = ("A_", "B_", "C_", "P_", "K_", "AK_", "TYPE", "LO", "HI", "ROW")
_CFG = (
    "POS_TOL",
    "ROT_TOL",
    "ROT_W",
    "ITERS",
    "RESTARTS",
    "RESTART_ITERS",
    "WARM",
    "STOP",
    "OX",
    "OY",
    "OZ",
    "REACH",
    "QTOL",
    "NEEDS_ROT",
    "USE_NET",
    "FREE",
    "FAR_RESTARTS",
    "TOO_FAR",
    "FAR_ITERS",
    "FAR_POLISH",
    "FAR_PATIENCE",
    "RNG_LO",
    "RNG_HI",
    "TRACK_LIMITS",
    "TRACK_SEARCH",
    "CFG",
)
_META = (
    "NM_POSE",
    "NM_TRACK",
    "NM_YAW",
    "NM_J1R",
    "NM_J1P",
    "NM_BASIS",
    "NM_CENTER",
    "NM_SCALE",
    "NM_LIMITS",
)
_VERDICTS = (
    "OK",
    "POSITION_NOT_FINITE",
    "ORIENTATION_NOT_FINITE",
    "NOT_UNIT",
    "TOO_FAR",
    "OUT_OF_REACH",
    "NOT_FOUND",
    "REJECTS",
)


def layout_names() -> dict:
    """The named indices of the packing, read from the modules that define it."""
    return {
        "header": dict(HEADER),
        "chain": {name.rstrip("_"): int(getattr(layout, name)) for name in _CHAIN},
        "joint_type": {
            "revolute": layout.REVOLUTE,
            "continuous": layout.CONTINUOUS,
            "prismatic": layout.PRISMATIC,
        },
        "cfg": {name: int(getattr(layout, name)) for name in _CFG},
        "meta": {name: int(getattr(network_forward, name)) for name in _META},
    }


def policy_constants() -> dict:
    """The solving policy's numbers (the JavaScript port follows the same policy)."""
    return {
        "NEAR_TRIES": int(policy.NEAR_TRIES),
        "NEAR_SPREAD": float(policy.NEAR_SPREAD),
        "NEAR_RUNGS": [float(r) for r in policy.NEAR_RUNGS],
        "CLOSE": float(candidates.CLOSE),
        "LAM_NEAR": float(kernel.LAM_NEAR),
        "LAM_FAR": float(kernel.LAM_FAR),
        "LAM_TRACK": float(kernel.LAM_TRACK),
        "ACCEPT_ITERS": int(kernel.ACCEPT_ITERS),
        # 2**f on [-1/2, 1/2], highest power first: the compiled SiLU's exp (no libm call)
        "EXP2_POLY": [float(getattr(network_forward, f"_E{i}")) for i in range(10, -1, -1)],
        "verdicts": {name: int(getattr(verdicts, name)) for name in _VERDICTS},
    }


def _b64(array: np.ndarray) -> str:
    return base64.b64encode(array.tobytes()).decode("ascii")


def web_model(solver) -> dict:
    """The JSON object of ``model.web.json`` for ``solver`` (an ik.Solver)."""
    from ..calibration.served import CompliantSolver

    if isinstance(solver, CompliantSolver):
        raise ValueError(
            "a calibrated arm with compliant joints cannot be exported for the web: its answers "
            "are joints to command (sag included), which the JavaScript solver does not compute"
        )
    model = np.asarray(solver._model, dtype=np.float64)
    end = int(model[HEADER["end"]])  # the collision model (if any) is left out
    buf = np.ascontiguousarray(model[:end], dtype="<f8")
    netw = np.ascontiguousarray(solver._netw, dtype="<f4")
    arm, s = solver.arm, solver.settings
    digest = hashlib.sha256(buf.tobytes() + netw.tobytes()).hexdigest()
    return {
        "format": FORMAT,
        "robot": arm.name,
        "dof": int(arm.dof),
        "joint_names": list(arm.joint_names),
        "base_link": arm.base,
        "tip_link": arm.tip,
        "lower": [float(x) for x in arm.lower],
        "upper": [float(x) for x in arm.upper],
        "continuous": [bool(x) for x in arm.continuous],
        "reach": float(arm.reach),
        "network": solver.network is not None,
        "mode": solver.mode,  # "pose", "position", or None without a network
        "heads": int(solver.heads),
        "settings": s.to_dict(),
        "collision_check": "left out" if s.collision_check else "off",
        "layout": layout_names(),
        "constants": policy_constants(),
        "model": {"dtype": "float64", "length": int(buf.size), "base64": _b64(buf)},
        "netw": {"dtype": "float32", "length": int(netw.size), "base64": _b64(netw)},
        "sha256": digest,
    }


def write_web_model(solver, path) -> Path:
    """``web_model(solver)`` written to ``path`` atomically (a folder: ``model.web.json`` in
    it). Returns the file's path."""
    from ..model_dir import atomic_write

    path = Path(path)
    if path.is_dir():
        path = path / FILE
    text = json.dumps(web_model(solver), separators=(",", ":"))
    atomic_write(path, text.encode("utf-8"))
    return path
