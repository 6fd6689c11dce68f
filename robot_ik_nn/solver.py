"""Batched IK: network seed -> damped least squares with joint limits -> per-target status.

    solver = Solver(arm, net)
    result = solver.solve(positions, quaternions)      # (B, 3), (B, 4) x y z w, or None
    result.q, result.status, result.pos_err, result.rot_err, result.reason

Refinement is Levenberg-Marquardt in float64 on the pose error (position in metres, rotation
as an axis-angle vector scaled by ``rot_weight`` metres per radian), projected onto the joint
limits after every step. Targets that are not solved from the network's seed are retried from
new seeds (``restarts`` rounds, ``seeds_per_restart`` seeds per target in the first, doubling in
each round after, all solved side by side); each target keeps its best answer. ``refine=0`` returns the
network's answer alone. Bad targets are rejected one by one with a reason; a batch never fails
because of one of them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .kinematics import Kinematics, rotation_angle, rotation_error_vector
from .quaternions import quaternion_to_matrix
from .robot import ArmModel

SOLVED, BEST_EFFORT, REJECTED = "solved", "best_effort", "rejected"


@dataclass
class SolveResult:
    q: torch.Tensor  # (B, dof) float64; NaN rows for rejected targets
    status: list[str]
    pos_err: torch.Tensor  # metres (NaN when rejected)
    rot_err: torch.Tensor  # radians (0 for position-only targets)
    reason: list[str]  # why a target was rejected or not solved ("" when solved)

    @property
    def solved(self) -> torch.Tensor:
        return torch.tensor([s == SOLVED for s in self.status])

    def __len__(self) -> int:
        return len(self.status)


class Solver:
    def __init__(self, arm: ArmModel, net=None, *, device: str = "cpu", pos_tol: float = 1e-3,
                 rot_tol: float = 0.01, iterations: int = 30, restarts: int = 5, seeds_per_restart: int = 4,
                 restart_iterations: int = 15,
                 rot_weight: float = 0.1, generator_seed: int = 0, reach_margin: float = 1.1, margin: float = 0.0):
        self.arm = arm
        self.net = net.to(device).eval() if net is not None else None
        self.device = torch.device(device)
        self.kin = Kinematics(arm, torch.float64, self.device)
        if margin > 0:  # keep answers this far inside every limited joint's range
            keep = torch.tensor(~arm.continuous, device=self.device) * float(margin)
            self.kin.lower, self.kin.upper = self.kin.lower + keep, self.kin.upper - keep
        self.pos_tol, self.rot_tol = float(pos_tol), float(rot_tol)
        self.iterations, self.restarts = int(iterations), int(restarts)
        self.seeds_per_restart = int(seeds_per_restart)
        self.restart_iterations = int(restart_iterations)
        self.rot_weight = float(rot_weight)
        self.generator = torch.Generator(device=self.device).manual_seed(generator_seed)
        self.origin = torch.tensor(arm.joints[0].origin[:3, 3], dtype=torch.float64, device=self.device)
        self.max_reach = reach_margin * arm.reach + 0.01

    # -- input checks ---------------------------------------------------------------------------
    def check_targets(self, pos: torch.Tensor, quat: torch.Tensor | None) -> list[str]:
        """A reason per target ("" when acceptable); vectorised, with text only for the bad ones."""
        reasons = [""] * pos.shape[0]
        finite_pos = torch.isfinite(pos).all(-1)
        dist = torch.linalg.norm(torch.nan_to_num(pos, nan=0.0, posinf=0.0, neginf=0.0) - self.origin, dim=-1)
        far = finite_pos & (dist > self.max_reach)
        bad_quat = torch.zeros_like(finite_pos)
        if quat is not None:
            finite_q = torch.isfinite(quat).all(-1)
            norm = torch.linalg.norm(torch.nan_to_num(quat, nan=0.0, posinf=0.0, neginf=0.0), dim=-1)
            bad_quat = ~finite_q | ((norm - 1.0).abs() > 1e-3)
        for i in torch.nonzero(~finite_pos | far | bad_quat).flatten().tolist():
            if not finite_pos[i]:
                reasons[i] = f"position is not finite: {pos[i].tolist()}"
            elif far[i]:
                reasons[i] = (f"position is {dist[i]:.3f} m from the arm's first joint; "
                              f"{self.arm.name} reaches at most {self.arm.reach:.3f} m")
            elif not torch.isfinite(quat[i]).all():
                reasons[i] = f"orientation is not finite: {quat[i].tolist()}"
            else:
                reasons[i] = f"orientation quaternion is not unit length (norm {norm[i].item():.6g})"
        if quat is None and self.net is not None and self.net.config.mode == "pose":
            reasons = [r or "this model was trained on full poses: give an orientation" for r in reasons]
        return reasons

    # -- solving --------------------------------------------------------------------------------
    def seed(self, pos: torch.Tensor, rot: torch.Tensor | None, current: torch.Tensor | None = None) -> torch.Tensor:
        """The network's answer (or the current joints / mid-range without a network), float64."""
        if self.net is None:
            if current is not None:
                return current.to(self.kin.dtype)
            return ((self.kin.lower + self.kin.upper) / 2).expand(pos.shape[0], -1).clone()
        with torch.no_grad():
            net_rot = rot if self.net.config.mode == "pose" else None
            if self.net.config.tracking and current is None:
                current = ((self.kin.lower + self.kin.upper) / 2).expand(pos.shape[0], -1)
            q = self.net(pos.float(), None if net_rot is None else net_rot.float(),
                         None if current is None else current.float())
        return q.to(self.kin.dtype)

    def solve(self, pos, quat=None, *, current=None, seeds=None, refine: bool | int = True) -> SolveResult:
        """Solve a batch. ``current`` (B, dof): the arm's joints (a tracking network's input, and a
        candidate seed); ``seeds`` (B, S, dof): more candidate seeds, such as the last solution.
        Refinement starts from whichever candidate is already closest to the target."""
        pos = torch.as_tensor(pos, dtype=torch.float64, device=self.device).reshape(-1, 3)
        quat = None if quat is None else torch.as_tensor(quat, dtype=torch.float64, device=self.device).reshape(-1, 4)
        if current is not None:
            current = torch.as_tensor(current, dtype=torch.float64, device=self.device).reshape(-1, self.arm.dof)
        B = pos.shape[0]
        reasons = self.check_targets(pos, quat)
        ok = torch.tensor([not r for r in reasons], device=self.device)
        q_all = torch.full((B, self.arm.dof), math.nan, dtype=torch.float64, device=self.device)
        pe_all = torch.full((B,), math.nan, dtype=torch.float64, device=self.device)
        re_all = torch.zeros(B, dtype=torch.float64, device=self.device)
        idx = torch.nonzero(ok).flatten()
        if len(idx):
            p = pos[idx]
            R = quaternion_to_matrix(quat[idx]) if quat is not None else None
            cur = current[idx] if current is not None else None
            q = self.kin.clamp(self.seed(p, R, cur))
            extra = [] if cur is None else [cur]
            if seeds is not None:
                extra += list(torch.as_tensor(seeds, dtype=torch.float64, device=self.device)
                              .reshape(B, -1, self.arm.dof)[idx].unbind(1))
            if extra and refine:
                q = self._closest(q, extra, p, R)
            if refine:
                q = self.refine(q, p, R, iterations=self.iterations if refine is True else int(refine))
                q = self._restart(q, p, R)
            pe, re = self.errors(q, p, R)
            q_all[idx], pe_all[idx], re_all[idx] = q, pe, re
        solved = (self._solved_mask(pe_all, re_all) & ok
                  & torch.from_numpy(self.arm.within_limits(q_all.cpu().numpy())).to(self.device)).tolist()
        status = []
        for i in range(B):
            if reasons[i]:
                status.append(REJECTED)
            elif solved[i]:
                status.append(SOLVED)
            else:
                status.append(BEST_EFFORT)
                reasons[i] = (f"closest reached: {pe_all[i].item() * 1000:.2f} mm, "
                              f"{math.degrees(re_all[i].item()):.2f} deg")
        return SolveResult(q_all, status, pe_all, re_all, reasons)

    def _closest(self, q, candidates, p, R):
        """Per target, the candidate seed with the smallest weighted pose error."""
        options = torch.stack([q] + [self.kin.clamp(c) for c in candidates], dim=1)  # (B, S, dof)
        B, S, n = options.shape
        flat = options.reshape(B * S, n)
        pe, re = self.errors(flat, p.repeat_interleave(S, 0), None if R is None else R.repeat_interleave(S, 0))
        score = torch.nan_to_num((pe + self.rot_weight * re).reshape(B, S), nan=math.inf)
        return options[torch.arange(B), score.argmin(dim=1)]

    def errors(self, q, p, R):
        p_q, R_q = self.kin.forward(q)
        pe = torch.linalg.norm(p_q - p, dim=-1)
        re = rotation_angle(R_q, R) if R is not None else torch.zeros_like(pe)
        return pe, re

    def _solved_mask(self, pe, re):
        return (pe <= self.pos_tol) & (re <= self.rot_tol)

    def _linearise(self, q, p, R):
        """Residual (target - reached, rotation scaled by rot_weight) and its Jacobian at ``q``."""
        p_q, R_q, J = self.kin.jacobian(q)
        e = p - p_q
        if R is None:
            return e, J[:, :3]
        e = torch.cat([e, self.rot_weight * rotation_error_vector(R_q, R)], dim=-1)
        return e, torch.cat([J[:, :3], self.rot_weight * J[:, 3:]], dim=1)

    def refine(self, q: torch.Tensor, p: torch.Tensor, R: torch.Tensor | None, iterations: int) -> torch.Tensor:
        """Levenberg-Marquardt with per-target damping, projected onto the joint limits.

        Each trial point is linearised once: when the step is accepted its Jacobian is the next
        iteration's. Targets far inside the tolerance stop iterating."""
        q = q.clone()
        e, J = self._linearise(q, p, R)
        cost = (e * e).sum(-1)
        lam = torch.full_like(cost, 1e-3)
        eye = torch.eye(self.arm.dof, dtype=q.dtype, device=q.device)
        active = torch.arange(q.shape[0], device=q.device)
        for _ in range(iterations):
            # done: far inside the tolerance; stuck: the damping has grown until no step helps
            active = active[(cost[active] > (0.01 * self.pos_tol) ** 2) & (lam[active] < 1e3)]
            if len(active) == 0:
                break
            Ja, ea = J[active], e[active]
            JT = Ja.transpose(1, 2)
            step = torch.linalg.solve(JT @ Ja + lam[active, None, None] * eye, JT @ ea.unsqueeze(-1)).squeeze(-1)
            q_new = self.kin.clamp(q[active] + step)
            e_new, J_new = self._linearise(q_new, p[active], None if R is None else R[active])
            c_new = (e_new * e_new).sum(-1)
            better = c_new < cost[active]
            acc, rej = active[better], active[~better]
            q[acc], e[acc], J[acc], cost[acc] = q_new[better], e_new[better], J_new[better], c_new[better]
            lam[acc] = (lam[acc] / 3).clamp_min(1e-9)
            lam[rej] = (lam[rej] * 4).clamp_max(1e4)
        return q

    def _restart_seeds(self, q: torch.Tensor) -> torch.Tensor:
        """Half the seeds uniformly random; half keep the current answer but draw some joints
        anew (each with probability 1/2), always those stuck at a limit. An answer pinned at a
        limit usually has the right arm and the wrong wrist branch: a partial restart keeps the
        arm and tries another wrist."""
        fresh = self.kin.sample(len(q), self.generator)
        at_limit = ((q - self.kin.lower).abs() < 1e-9) | ((q - self.kin.upper).abs() < 1e-9)
        coin = torch.rand(q.shape, generator=self.generator, device=q.device, dtype=q.dtype) < 0.5
        partial = torch.where(at_limit | coin, fresh, q)
        whole = torch.arange(len(q), device=q.device) % 2 == 0
        return torch.where(whole[:, None], fresh, partial)

    def _restart(self, q, p, R):
        """Unsolved targets try again from several seeds at once; each keeps its best answer."""
        pe, re = self.errors(q, p, R)
        best = pe + self.rot_weight * re
        for round_ in range(self.restarts):
            per_round = max(1, self.seeds_per_restart) * 2 ** round_  # fewer targets left: more seeds each
            todo = torch.nonzero(~self._solved_mask(pe, re)).flatten()
            if len(todo) == 0:
                break
            rows = todo.repeat_interleave(per_round)
            seeds = self._restart_seeds(q[rows])
            Rt = R[rows] if R is not None else None
            q_try = self.refine(seeds, p[rows], Rt, self.restart_iterations)
            pe_t, re_t = self.errors(q_try, p[rows], Rt)
            score = (pe_t + self.rot_weight * re_t).reshape(len(todo), per_round)
            pick = score.argmin(dim=1)
            choice = torch.arange(len(todo), device=q.device) * per_round + pick
            win = score[torch.arange(len(todo)), pick] < best[todo]
            w, c = todo[win], choice[win]
            q[w], pe[w], re[w], best[w] = q_try[c], pe_t[c], re_t[c], score.min(dim=1).values[win]
        return q


def summarize(result: SolveResult) -> dict:
    """Counts and error percentiles of a batch (rejected targets excluded from errors)."""
    status = np.array(result.status)
    ok = status != REJECTED
    pe = result.pos_err.cpu().numpy()[ok] * 1000
    re = np.degrees(result.rot_err.cpu().numpy()[ok])
    out = {"targets": len(status), "solved": int((status == SOLVED).sum()),
           "best_effort": int((status == BEST_EFFORT).sum()), "rejected": int((~ok).sum())}
    if ok.any():
        out.update(pos_mm_median=float(np.median(pe)), pos_mm_p99=float(np.percentile(pe, 99)),
                   rot_deg_median=float(np.median(re)), rot_deg_p99=float(np.percentile(re, 99)))
    return out
