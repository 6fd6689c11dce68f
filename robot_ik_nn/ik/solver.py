"""The solver people use: an arm, optionally its network, and the compiled kernel.

    solver = Solver.load("models/niryo_one")              # a model folder or an exported .tar.gz
    answer = solver.solve([0.25, 0.0, 0.3], [0, 0.7071068, 0, 0.7071068])
    answer.status, answer.q, answer.pos_err, answer.rot_err, answer.reason
    batch = solver.solve_batch(positions, quaternions)     # (B, 3), (B, 4): all cores
    solver = Solver(ArmModel.load("niryo_one"))           # an arm without a network

One target costs one compiled call (the network included, with the ``compiled`` backend); a batch
is one compiled call that runs every target in parallel over all cores. With the ``numpy`` and
``onnx`` backends the network runs first, outside the kernel (network_backends.py). Nothing
here imports torch.

One solver per thread: a solver keeps its scratch buffers between calls (allocating them per
call would cost more than a tracked answer), so two threads calling one solver at once can mix
their answers. ``solver.copy()`` gives another with buffers of its own; ``solve_batch`` already
runs a batch on every core.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..arm.rotations import matrix_to_quaternion
from . import collision, compiled_batch, layout, network_backends, network_forward, policy
from .inputs import far_norm2, joints, near_limits, vector
from .reasons import reason_context, reason_text
from .results import SOLVED, STATUS, Answer, BatchResult
from .settings import IKSettings
from .variants import Variants
from .verdicts import COLLIDES, FREE_INSTEAD


class Solver(Variants):
    """Inverse kinematics of one arm: settings, a network (or none), the compiled kernel."""

    def __init__(
        self,
        arm,
        network: network_forward.NetArrays | None = None,
        settings: IKSettings | None = None,
        *,
        backend: str = "compiled",
        onnx_path: str | Path | None = None,
        network_config: dict | None = None,
    ):
        if backend not in network_forward.BACKENDS:
            raise ValueError(
                f"unknown backend {backend!r}; choose one of {', '.join(network_forward.BACKENDS)}"
            )
        if isinstance(network, IKSettings):
            raise TypeError(
                "Solver(arm, network, settings): the second argument is the network; give "
                "the settings by name, Solver(arm, settings=IKSettings(...))"
            )
        self.arm = arm
        self.settings = settings or IKSettings()
        self.network = network
        self.network_config = network_config or {}
        self.backend = backend if network is not None else "none"
        self.mode = self.network_config.get("mode", "position") if network is not None else None
        self._onnx = self._torch = None
        if network is not None and backend == "onnx":
            from .onnx_layers import OnnxLayers

            self._onnx = OnnxLayers(onnx_path, network)
        self._build()

    def _build(self) -> None:
        """The kernel's buffers: the constant model and network, and this solver's scratch."""
        s = self.settings
        self.checking = s.collision_check
        if self.checking:
            self.collisions = self._collision_model(s)
        n = self.arm.dof
        net = self.network if self.network is not None else network_forward.empty_network(n)
        self._model = layout.pack_model(
            self.arm, self.settings, self.network, self.collisions if self.checking else None
        )
        self._netw = net.flat
        self.heads = net.heads
        self._scratch = np.zeros(layout.scratch_size(n, net.heads, net.width))
        self._dof = (n,)
        self._quat0 = np.zeros(4)
        self._outside = self.backend in ("numpy", "onnx", "torch")  # the network runs outside
        self._solve_one = None
        self._variants: dict = {}
        self._n, self._seed, self._cur = n, np.zeros((net.heads, n)), np.zeros(n)
        self._far2 = far_norm2(self.arm)  # current= screened against it (inputs.py)
        # the arm's joints matter to the kernel only as a tracking network's input
        self._net_reads_current = self.network is not None and bool(
            net.meta[network_forward.NM_TRACK]
        )
        self._warm = [np.zeros((k, n)) for k in range(4)]
        # a stream's last step is carried on where the arm has no self-motion for the target's
        # kind: its joints no more than the pose's numbers (a position; a pose), see _carry
        on, pose = self.settings.carry_step > 0, 5 if self.settings.free_axis else 6
        self._carries = (on and n <= 3, on and n <= pose)  # [has_quat]
        self._most = float(self.settings.carry_step)
        self.origin = self.arm.joints[0].origin[:3, 3].copy()
        self.max_reach = float(self._model[int(self._model[4]) + layout.REACH])

    def _collision_model(self, s):
        """The collision model for settings ``s``: the one held while its margin and pairs file
        still match, else the arm's (cached per arm), the obstacles kept."""
        old = getattr(self, "collisions", None)
        if old is not None and (old.margin, old.pairs_file) == (
            s.collision_margin,
            s.collision_pairs,
        ):
            return old
        model = collision.for_arm(self.arm, s.collision_margin, s.collision_pairs)
        return model if old is None else model.with_obstacles_of(old)

    # -- construction -----------------------------------------------------------------------------
    @classmethod
    def load(
        cls, path, settings: IKSettings | None = None, *, backend: str = "compiled", arm=None
    ) -> "Solver":
        """A model folder (or an exported ``.tar.gz``), read without torch. ``arm`` (an
        ArmModel, or a name or URDF path): refuses a model trained for another arm."""
        from .. import model_dir

        if settings is not None and not isinstance(settings, IKSettings):
            raise TypeError(
                f"settings must be an IKSettings (IKSettings(pos_tol=...)), got {settings!r}"
            )
        if isinstance(arm, (str, Path)):
            from ..arm.model import ArmModel

            arm = ArmModel.load(arm)
        folder = model_dir.read(path, arm=arm)
        network = network_forward.pack_network(folder.tensors, folder.meta["network"])
        onnx = folder.path / model_dir.ONNX if backend == "onnx" else None
        if onnx is not None:
            model_dir.check_onnx(folder)
        if backend == "torch":  # the only path here that imports torch, and only when asked
            solver = cls(
                folder.arm,
                network,
                settings,
                backend="numpy",
                network_config=folder.meta["network"],
            )
            solver.backend, solver._torch = "torch", model_dir.load(folder.path, folder.arm).net
            solver._outside = True
        else:
            solver = cls(
                folder.arm,
                network,
                settings,
                backend=backend,
                onnx_path=onnx,
                network_config=folder.meta["network"],
            )
        # -- calibration (calibration/served.py): a folder with a fitted joint compliance
        # answers joints TO COMMAND on the sagging arm; without one, the solver as it is
        from ..calibration.served import serving

        return serving(solver, folder.path)

    # with_settings, with_obstacles, with_limits, with_search_time, copy: variants.py; this one
    # here, as it makes a plain Solver whatever the class of this one
    def without_network(self) -> "Solver":
        """The same arm, settings and obstacles, seeded without the network (mid-range and
        restarts)."""
        other = Solver(self.arm, None, self.settings)
        if self.checking:  # the collision model as it is here, obstacles included
            other.collisions = self.collisions
            other._build()
        return other

    # -- one target -------------------------------------------------------------------------------
    def solve(
        self,
        position,
        quaternion=None,
        *,
        current=None,
        last=None,
        previous=None,
        solutions: int | None = None,
        order: str = "nearest",
        patience: int | None = None,
        free_axis: str | None = None,
    ):
        """One target. ``current``: the arm's joints (a warm start and a tracking network's input);
        ``last``: the previous answer (the freshest warm start); ``previous``: the answer before
        ``last`` in a stream: on an arm without self-motion the last step is carried on
        (``IKSettings.carry_step``; settings.py says why).

        With ``solutions=K``: a list of up to K distinct answers (several_answers.py: "distinct"),
        ordered by ``order`` (``nearest`` to ``current``, else to mid-range; ``mid_range``;
        ``manipulability``); a target with no answer gives a one-item list, its best effort or
        its rejection. The search tries at most ``settings.solution_attempts`` seeds and stops
        after ``patience`` seeds in a row without a new answer (default: a quarter of them).

        ``free_axis`` ("x", "y" or "z"; default ``settings.free_axis``): the rotation about that
        axis of the tool is left free; only the axis itself is aligned with the target's."""
        if free_axis is not None and free_axis != self.settings.free_axis:
            return self._variant(free_axis).solve(
                position,
                quaternion,
                current=current,
                last=last,
                previous=previous,
                solutions=solutions,
                order=order,
                patience=patience,
            )
        started = time.perf_counter()
        pt, quat = (
            vector(position, 3),
            self._quat0 if quaternion is None else vector(quaternion, 4),
        )
        if pt is None or quat is None:
            raise ValueError(
                f"a target is a position (3 numbers) and a quaternion (4 numbers, x y z w); "
                f"got {position!r} and {quaternion!r}"
            )
        has_quat = quaternion is not None
        if current is not None:
            checked = joints(current, self._dof, "current")
            if checked @ checked > self._far2:  # only joints far out get the exact check
                near_limits(checked, self.arm, "current")
            last = checked if last is current else last  # one array given for both: one check
            current = checked
        if last is not None and last is not current:
            last = joints(last, self._dof, "last")
        if previous is not None:
            previous = joints(previous, self._dof, "previous")
        if solutions is not None:
            from .several_answers import solve_several

            return solve_several(
                self, pt, quat, has_quat, current, last, solutions, order, started, patience
            )
        first = last if last is not None else current  # the freshest warm start
        if first is None:
            warm = self._warm[0]
        elif current is None or current is last or last is None:  # one warm start
            warm = self._warm[1]
            warm[0] = first
        else:
            warm = self._warm[2]
            warm[0], warm[1] = last, current
        if previous is not None and last is not None and self._carries[has_quat]:
            warm = self._carry(warm, last, previous)
        has_cur = current is not None
        cur = self._cur
        if has_cur and self._net_reads_current:  # else the kernel never reads it
            cur[:] = current
        has_seed = self._outside and network_backends.one_seed(
            self, pt, quat if has_quat else None, current
        )
        q = np.empty(self._n)
        model, netw, seed, scratch = self._model, self._netw, self._seed, self._scratch
        args = (model, netw, pt, quat, has_quat, warm, cur, has_cur, seed, has_seed, scratch, q)
        if self._solve_one is None:  # the first call resolves the types; later ones skip that
            self._solve_one, result = _compiled_entry(policy.solve_one, args)
        else:
            result = self._solve_one(*args)
        status, why, pe, re, its = result
        if status == 0:  # the common case, without words
            return Answer(q, SOLVED, pe, re, "", time.perf_counter() - started, its)
        answer = Answer(None if status == 2 else q, STATUS[status], pe, re, "", 0.0, its)
        answer.collides = self._collides(answer.q)
        answer.reason = self._reason(
            status, why, pt, quat if has_quat else None, pe, re, answer.collides
        )
        answer.seconds = time.perf_counter() - started
        return answer

    def _carry(self, warm, last, previous):
        """The warm starts with ``last`` moved on by its last step ahead of them (policy.carried),
        unless a joint moved more than ``IKSettings.carry_step``. Only where the arm has no
        self-motion (``_carries``): a redundant arm's step would carry its self-motion on with it
        (docs/design_notes.md)."""
        ahead = self._warm[len(warm) + 1]
        return ahead if policy.carried(last, previous, self._most, warm, ahead) else warm

    def _collides(self, q) -> bool:
        """Whether joints ``q`` collide, by this solver's collision model (False without one)."""
        return bool(self.checking and q is not None and self.collisions.in_collision(q))

    def _reason(self, status: int, why, pt, quat, pe, re, collides: bool = True) -> str:
        """The words for an answer's status: why a target was rejected, or why it was missed
        and how close the best effort came (``collides``: whether its joints do)."""
        if int(why) == COLLIDES and not collides:
            why = FREE_INSTEAD
        return reason_text(int(status), int(why), pe, re, pt, quat, **self._reason_context())

    def _reason_context(self) -> dict:
        return reason_context(self.arm, self.origin, self.settings.quat_tolerance)

    # -- many targets -----------------------------------------------------------------------------
    def solve_batch(
        self, positions, quaternions=None, *, current=None, warm=None, free_axis=None
    ) -> BatchResult:
        """A batch over all cores. ``current`` (B, dof): the arm's joints per target;
        ``warm`` (B, S, dof): warm starts per target, the freshest first; ``free_axis`` as in
        :meth:`solve`."""
        if free_axis is not None and free_axis != self.settings.free_axis:
            return self._variant(free_axis).solve_batch(
                positions, quaternions, current=current, warm=warm
            )
        return compiled_batch.solve_batch(self, positions, quaternions, current, warm)

    def solve_path(self, positions, quaternions=None, *, start, max_step=0.2, joint=None):
        """Joints for a whole path of targets known beforehand (a Cartesian path planned
        offline), from the arm's joints ``start``: tracked target by target, and where that
        steps over ``max_step`` (rad), planned instead over the swept self-motion of a
        redundant arm (``joint``: a joint held to sample it instead, default none) or over the
        branches of answers (ik/path.py)."""
        from .path import solve_path

        near_limits(joints(start, self._dof, "start"), self.arm, "start")
        return solve_path(
            self, positions, quaternions, start=start, max_step=max_step, joint=joint
        )

    def network_seeds(self, P, R=None, current=None) -> np.ndarray:
        """The network's candidates for a batch (B, heads, dof), before any refinement."""
        if self.network is None:
            raise ValueError("this solver has no network")
        return network_backends.candidates(self, P, R, current)

    def warm_up(self, say=None) -> float:
        """Compile (or load from numba's cache) every compiled entry a served target, a path or
        a batch can take, before the first one arrives: one answer, a tracked one, with
        refinement several answers and a path whose every planner runs (path.warm_up), on
        poses the arm itself takes; and the collision check of a best effort. ``say``: called
        first with one line saying whether that compiles (about how long) or loads from the
        cache. Returns the seconds spent."""
        from . import path
        from .numba_cache import warm_up_line

        if say is not None:
            say(warm_up_line())
        started = time.perf_counter()
        mid = self.arm.mid_range
        p, R = self.forward(mid)
        quat = matrix_to_quaternion(R[0]) if self.mode == "pose" else None
        self.solve(p[0], quat)
        self.solve(p[0], quat, current=mid, last=mid, previous=mid)  # a stream's step carried
        self._collides(mid)  # a best effort's words say whether it collides
        if self.settings.refines:
            self.solve(p[0], quat, current=mid, solutions=2)
            path.warm_up(self)
        return time.perf_counter() - started

    # -- kinematics -------------------------------------------------------------------------------
    def forward(self, q) -> tuple[np.ndarray, np.ndarray]:
        """Tip positions (B, 3) and rotations (B, 3, 3) for joints (B, dof), compiled."""
        Q = np.asarray(q, dtype=float)
        if Q.size == 0:  # no joints at all (an empty list): no poses
            Q = Q.reshape(0, self.arm.dof)
        if Q.ndim not in (1, 2) or Q.shape[-1] != self.arm.dof:
            raise ValueError(
                f"forward takes joints of shape ({self.arm.dof},) or (B, {self.arm.dof}); "
                f"got shape {Q.shape}"
            )
        Q = np.ascontiguousarray(Q.reshape(-1, self.arm.dof))
        P, R = np.empty((len(Q), 3)), np.empty((len(Q), 3, 3))
        policy.forward_batch(self._model, Q, P, R, compiled_batch.chunks(len(Q)))
        return P, R

    def __repr__(self) -> str:
        return f"Solver({self.arm.name!r}, network={self.backend}, {self.settings})"


def _compiled_entry(dispatcher, args):
    """Call ``dispatcher`` once; return its compiled entry point for these argument types and
    the call's result. Calling the entry point skips the per-call type resolution (about half
    the call's cost). Every later call passes the same types (float64 C arrays, bools), which
    the caller guarantees."""
    from numba import typeof

    result = dispatcher(*args)
    signature = tuple(typeof(a) for a in args)
    compiled = getattr(dispatcher, "overloads", {}).get(signature)  # none: NUMBA_DISABLE_JIT
    return (dispatcher if compiled is None else compiled.entry_point), result


__all__ = ["Solver", "IKSettings", "Answer", "BatchResult"]
