"""The batched torch solver: the same policy as the compiled kernel, written for a GPU (and for
evaluating a network while it trains, where it already lives in torch).

    solver = TorchSolver(arm, net, IKSettings(), device="cuda")
    result = solver.solve(positions, quaternions)      # (B, 3), (B, 4) x y z w, or None
    result.q, result.status, result.pos_err, result.rot_err, result.reason   # numpy, BatchResult

Every target is checked by verdicts.check (the one validation), every setting comes from
IKSettings, and answers come back as the one result type. The network's candidates are ranked
by where their tool lands and the closest one is refined (Levenberg-Marquardt in float64 with
the joints projected onto their limits after each step); targets still unsolved then try
restart seeds side by side, in rounds that double the seeds per target (the same mix as the
kernel's: the best answer with its stuck joints and a random half redrawn, and uniformly
random joints), up to ``restarts`` seeds in all. ``iterations=0`` is the network alone.

On a GPU a round costs about the same whether it refines a thousand seeds or a hundred
thousand (the time goes to launching small kernels), so there a round is widened to at least
``round_rows`` seeds (shared by the targets left), and seeds too few for a doubled last round
join the round before: the few targets the first pass leaves get their seeds in a few wide
rounds instead of eight narrow ones. On a CPU, where every seed costs its arithmetic, rounds
stay narrow.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..arm.kinematics import Kinematics
from ..arm.rotations import quaternion_to_matrix, rotation_angle, rotation_error_vector
from ..learn.network import pick_closest
from . import verdicts
from .kernel import LAM_FAR, LAM_NEAR
from .reasons import batch_reasons, reason_context
from .results import BatchResult
from .settings import IKSettings


class TorchSolver:
    def __init__(
        self,
        arm,
        net=None,
        settings: IKSettings | None = None,
        *,
        device: str = "cpu",
        round_rows: int | None = None,
    ):
        """``round_rows``: a restart round is widened to at least this many seeds (shared by
        the targets left) from the doubling schedule (4, 8, 16, ... per target); default 2**15
        on CUDA, 0 (never widen) elsewhere."""
        self.arm = arm
        self.settings = s = settings or IKSettings()
        self.device = torch.device(device)
        self.net = net.to(self.device).eval() if net is not None else None
        self.kin = Kinematics(arm, torch.float64, self.device)
        if round_rows is None:
            round_rows = 1 << 15 if self.device.type == "cuda" else 0
        if round_rows < 0:
            raise ValueError(f"round_rows {round_rows}: a number of seeds, 0 or more")
        self.round_rows = int(round_rows)
        keep = torch.tensor(~arm.continuous, device=self.device) * float(s.margin)
        self.kin.lower, self.kin.upper = self.kin.lower + keep, self.kin.upper - keep
        self.generator = torch.Generator(device=self.device).manual_seed(s.rng_seed)
        self.origin = arm.joints[0].origin[:3, 3].copy()
        self.max_reach = arm.reach + s.pos_tol
        if s.free_axis or s.collision_check:
            raise ValueError(
                "the batched torch solver aligns the whole orientation and has no collision "
                f"model; free axes (free_axis={s.free_axis!r}) and collision_check "
                f"({s.collision_check}) are solved by the compiled Solver"
            )

    # -- the verdict, shared with every other path ---------------------------------------------
    def check(self, P: np.ndarray, Q: np.ndarray | None) -> np.ndarray:
        codes = np.zeros(len(P), np.int64)
        verdicts.check_all(
            P,
            Q if Q is not None else np.zeros((len(P), 4)),
            Q is not None,
            self.origin,
            self.max_reach,
            self.settings.reach_margin * self.arm.reach,
            self.settings.quat_tolerance,
            codes,
        )
        return codes

    # -- solving --------------------------------------------------------------------------------
    def solve(self, pos, quat=None, *, current=None) -> BatchResult:
        """Solve a batch; ``current`` (B, dof): the arm's joints (a tracking network's input)."""
        P = np.ascontiguousarray(
            torch.as_tensor(pos).detach().cpu().double().numpy().reshape(-1, 3)
        )
        Q = (
            None
            if quat is None
            else np.ascontiguousarray(
                torch.as_tensor(quat).detach().cpu().double().numpy().reshape(-1, 4)
            )
        )
        B, n = len(P), self.arm.dof
        codes = self.check(P, Q)
        rejected = (codes > 0) & (codes < verdicts.REJECTS)
        ok = np.flatnonzero(~rejected)  # outside the reach too: the closest pose
        q_all = np.full((B, n), math.nan)
        pe_all, re_all = np.full(B, math.nan), np.full(B, math.nan)
        if len(ok):
            t = dict(dtype=torch.float64, device=self.device)
            p = torch.as_tensor(P[ok], **t)
            R = None if Q is None else quaternion_to_matrix(torch.as_tensor(Q[ok], **t))
            cur = None if current is None else torch.as_tensor(np.asarray(current)[ok], **t)
            q = self.kin.clamp(self.seed(p, R, cur))
            if self.settings.refines:
                lam0 = LAM_NEAR if self._network_seeds(R) else LAM_FAR
                q = self.refine(q, p, R, self.settings.iterations, lam0)
                q = self._restart(q, p, R)
            pe, re = self.errors(q, p, R)
            q_all[ok], pe_all[ok], re_all[ok] = q.cpu().numpy(), pe.cpu().numpy(), re.cpu().numpy()
        solved = self._reached(pe_all, re_all)
        status = np.where(rejected, 2, np.where(solved, 0, 1)).astype(np.int8)
        why = np.where(codes == verdicts.OK, verdicts.NOT_FOUND, codes)
        said = reason_context(self.arm, self.origin, self.settings.quat_tolerance)
        reasons = batch_reasons(status, why, pe_all, re_all, P, Q, said)
        return BatchResult(q_all, status, pe_all, re_all, reasons)

    def _network_seeds(self, R) -> bool:
        """Whether the network seeds these targets: there is one, and it is not a pose network
        given positions alone (mid-range seeds those)."""
        return self.net is not None and (R is not None or self.net.config.mode != "pose")

    def seed(self, p, R, current=None) -> torch.Tensor:
        """The network's closest candidate (mid-range without a network), float64."""
        if not self._network_seeds(R):
            return (
                torch.as_tensor(self.arm.mid_range, dtype=torch.float64, device=self.device)
                .expand(len(p), -1)
                .clone()
            )
        with torch.no_grad():
            rot = R.float() if self.net.config.mode == "pose" else None
            cands = self.net.candidates(
                p.float(), rot, None if current is None else current.float()
            )
        return pick_closest(self.kin, self.kin.clamp(cands.double()), p, R)

    def errors(self, q, p, R):
        p_q, R_q = self.kin.forward(q)
        pe = torch.linalg.norm(p_q - p, dim=-1)
        re = rotation_angle(R_q, R) if R is not None else torch.zeros_like(pe)
        return pe, re

    def _reached(self, pe, re):
        """verdicts.reached_all with these settings' tolerances (numpy arrays or tensors)."""
        return verdicts.reached_all(pe, re, self.settings.pos_tol, self.settings.rot_tol)

    def _unsolved(self, pe, re):
        return ~self._reached(pe, re)

    def _linearise(self, q, p, R):
        """Residual (target - reached, rotation times rot_weight) and its Jacobian at ``q``."""
        w = self.settings.rot_weight
        p_q, R_q, J = self.kin.jacobian(q)
        e = p - p_q
        if R is None:
            return e, J[:, :3]
        e = torch.cat([e, w * rotation_error_vector(R_q, R)], dim=-1)
        return e, torch.cat([J[:, :3], w * J[:, 3:]], dim=1)

    def refine(self, q: torch.Tensor, p, R, iterations: int, lam0: float) -> torch.Tensor:
        """Levenberg-Marquardt with per-target damping, on the joint limits; the same schedule as
        kernel.refine (first damping ``lam0``, joints that the error pulls beyond a limit held
        out of the step). Targets far inside the tolerance stop iterating."""
        q = q.clone()
        e, J = self._linearise(q, p, R)
        cost = (e * e).sum(-1)
        lam = torch.full_like(cost, lam0)
        limited = ~self.kin.continuous
        eye = torch.eye(self.arm.dof, dtype=q.dtype, device=q.device)
        stop = (self.settings.stop_fraction * self.settings.pos_tol) ** 2
        active = torch.arange(q.shape[0], device=q.device)
        for _ in range(iterations):
            active = active[(cost[active] > stop) & (lam[active] < 1e3)]
            if len(active) == 0:
                break
            Ja, ea, qa = J[active], e[active], q[active]
            g = (Ja.transpose(1, 2) @ ea.unsqueeze(-1)).squeeze(-1)
            held = limited & (
                ((qa <= self.kin.lower) & (g < 0)) | ((qa >= self.kin.upper) & (g > 0))
            )
            Ja = Ja * (~held).unsqueeze(1)
            JT = Ja.transpose(1, 2)
            # solve_ex: the damped matrix is positive definite, and the plain solve's check of
            # that is one more wait for the device per iteration
            step = torch.linalg.solve_ex(
                JT @ Ja + lam[active, None, None] * eye, JT @ ea.unsqueeze(-1)
            )[0].squeeze(-1)
            q_new = self.kin.clamp(qa + step)
            e_new, J_new = self._linearise(q_new, p[active], None if R is None else R[active])
            c_new = (e_new * e_new).sum(-1)
            better = c_new < cost[active]
            acc, rej = active[better], active[~better]
            q[acc], e[acc], J[acc], cost[acc] = (
                q_new[better],
                e_new[better],
                J_new[better],
                c_new[better],
            )
            lam[acc] = (lam[acc] / 3).clamp_min(1e-9)
            lam[rej] = (lam[rej] * 10).clamp_max(1e4)
        return q

    def _restart_seeds(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """Seed ``k`` of each row: even k partial (stuck joints and a random half redrawn), odd k
        uniformly random, as kernel.restart_seed."""
        lo = torch.where(self.kin.continuous, -math.pi, self.kin.lower)
        hi = torch.where(self.kin.continuous, math.pi, self.kin.upper)
        fresh = lo + torch.rand(
            q.shape, generator=self.generator, device=q.device, dtype=q.dtype
        ) * (hi - lo)
        stuck = ((q - lo).abs() < 1e-9) | ((q - hi).abs() < 1e-9)
        coin = torch.rand(q.shape, generator=self.generator, device=q.device, dtype=q.dtype) < 0.5
        partial = torch.where(stuck | coin, fresh, q)
        return torch.where((k % 2 == 0)[:, None], partial, fresh)

    def _restart(self, q, p, R):
        """Unsolved targets try restart seeds side by side; each keeps its best answer."""
        s = self.settings
        pe, re = self.errors(q, p, R)
        best = s.score(pe, re)
        used, per_round = 0, 4
        while used < s.restarts:
            todo = torch.nonzero(self._unsolved(pe, re)).flatten()
            if len(todo) == 0:
                break
            per_round = max(per_round, self.round_rows // len(todo))
            count = min(per_round, s.restarts - used)
            if self.round_rows and s.restarts - used - count < 2 * count:
                count = s.restarts - used  # no small last round: on a GPU it costs a whole one
            rows = todo.repeat_interleave(count)
            k = torch.arange(count, device=q.device).repeat(len(todo)) + used
            Rt = R[rows] if R is not None else None
            seeds_ = self._restart_seeds(q[rows], k)
            q_try = self.refine(seeds_, p[rows], Rt, s.restart_iterations, LAM_FAR)
            pe_t, re_t = self.errors(q_try, p[rows], Rt)
            score = s.score(pe_t, re_t).reshape(len(todo), count)
            pick = score.argmin(dim=1)
            win = score[torch.arange(len(todo)), pick] < best[todo]
            choice = torch.arange(len(todo), device=q.device) * count + pick
            w, c = todo[win], choice[win]
            q[w], pe[w], re[w], best[w] = q_try[c], pe_t[c], re_t[c], score.min(dim=1).values[win]
            used, per_round = used + count, per_round * 2
        return q

