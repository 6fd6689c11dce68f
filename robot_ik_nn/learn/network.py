"""The IK network: target pose in, one unit quaternion per joint out, joint angles inside limits.

Input: the target position, plus in ``pose`` mode the target orientation as the continuous 6-D
representation (first two columns of the rotation matrix), plus in tracking mode the current
joint values. Output: for each joint a 2-vector, normalised to ``(s, c)``: the unit quaternion
``(axis * s, c)`` about that joint's axis, whose angle is ``phi = 2 atan2(s, c)``.

Conversion to joint angles inside the limits:

- continuous joints: ``theta = phi`` wrapped to (-pi, pi];
- limited joints: ``theta = mid + half * s = mid + half * sin(phi / 2)``, a smooth squash of the
  quaternion's angle into [lower, upper] (no seam; saturating at the limits like tanh).

Several heads (``heads`` > 1): the layers end in one quaternion head per candidate branch (an
arm usually has several solutions for a target: elbow up or down, wrist flipped or not). A
single continuous map cannot jump from branch to branch where one runs into a joint limit; a
head per branch can keep each branch whole. ``candidates`` gives every head's joints;
``forward`` the candidate whose tool lands closest to the target. The gradient learner trains
them winner-takes-most (learners/gradient.py).

Symmetry about the first joint (``yaw_symmetry``): turning a target about the first revolute
joint's axis by ``a`` changes the solution only by ``q1 += a``. So the target is first turned
about that axis into a canonical half-plane (by ``-psi``, ``psi`` being the target's angle about
the axis), the network solves the canonical target, and joint 1 is ``psi + phi_1`` (its
quaternion read as a turn relative to the target's direction), brought into its limits. The
network then learns a 5-D problem instead of a 6-D one. Used when the first joint is revolute
and turns at least half a circle (so that it can face most targets).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn

from ..arm.rotations import matrix_to_rot6d

MODES = ("pose", "position")


@dataclass
class NetConfig:
    dof: int
    mode: str = "pose"
    hidden: list[int] = field(default_factory=lambda: [256, 256, 256])
    tracking: bool = False
    yaw_symmetry: bool = True
    heads: int = 1

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if not self.hidden or any(int(h) < 1 for h in self.hidden):
            raise ValueError(f"hidden layer sizes must be positive, got {self.hidden}")
        if not 1 <= int(self.heads) <= 64:
            raise ValueError(f"heads must be between 1 and 64, got {self.heads}")

    @property
    def in_features(self) -> int:
        return 3 + (6 if self.mode == "pose" else 0) + (self.dof if self.tracking else 0)

    def to_dict(self) -> dict:
        return asdict(self)


def _shape(config: NetConfig) -> str:
    width = " x ".join(str(h) for h in config.hidden)
    return f"{width}, {config.heads} head" + ("s" if config.heads > 1 else "")


def _wrap(x: torch.Tensor) -> torch.Tensor:
    return torch.remainder(x + math.pi, 2 * math.pi) - math.pi


def _perpendicular(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    helper = np.eye(3)[int(np.argmin(np.abs(k)))]
    u = np.cross(k, helper)
    u /= np.linalg.norm(u)
    return u, np.cross(k, u)


class IKNet(nn.Module):
    def __init__(
        self, config: NetConfig, arm, pos_center=(0.0, 0.0, 0.0), pos_scale=(1.0, 1.0, 1.0)
    ):
        super().__init__()
        if config.dof != arm.dof:
            raise ValueError(f"network for {config.dof} joints, arm {arm.name} has {arm.dof}")
        first = arm.joints[0]
        if config.yaw_symmetry and (
            first.type == "prismatic" or first.upper - first.lower < math.pi
        ):
            # nothing to factor out, or a joint too narrow to turn toward most targets
            config.yaw_symmetry = False
        self.config = config
        self.arm = arm
        f = dict(dtype=torch.float32)
        u, v = _perpendicular(first.axis)
        self.register_buffer("lower", torch.tensor(arm.lower, **f))
        self.register_buffer("upper", torch.tensor(arm.upper, **f))
        self.register_buffer("continuous", torch.tensor(arm.continuous, dtype=torch.bool))
        self.register_buffer("axes", torch.tensor(arm.axes, **f))
        self.register_buffer("pos_center", torch.as_tensor(pos_center, **f).clone())
        self.register_buffer("pos_scale", torch.as_tensor(pos_scale, **f).clone())
        # the first joint's frame and a basis (u, v, k) of it, for the symmetry
        self.register_buffer("j1_R", torch.tensor(first.origin[:3, :3], **f))
        self.register_buffer("j1_p", torch.tensor(first.origin[:3, 3], **f))
        self.register_buffer("j1_basis", torch.tensor(np.stack([u, v, first.axis]), **f))
        layers, width = [], config.in_features
        for h in config.hidden:
            layers += [nn.Linear(width, int(h)), nn.SiLU()]
            width = int(h)
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, 2 * config.dof * config.heads)
        with torch.no_grad():  # start near mid-range (and joint 1 facing the target): s ~ 0, c ~ 1
            self.head.weight.mul_(0.1)
            self.head.bias.view(config.heads, config.dof, 2).copy_(torch.tensor([0.0, 1.0]))
            if config.heads > 1:  # heads start apart: each a different turn of every joint
                turns = torch.linspace(-0.6, 0.6, config.heads)[:, None] * torch.ones(config.dof)
                self.head.bias.view(config.heads, config.dof, 2).copy_(
                    torch.stack([torch.sin(turns), torch.cos(turns)], -1)
                )
        self._kinematics = None

    @classmethod
    def for_arm(cls, arm, config: NetConfig, samples: int = 4096, seed: int = 0) -> "IKNet":
        """A fresh network for ``arm``; input scaling from the arm's reachable positions."""
        from ..arm.kinematics import Kinematics

        kin = Kinematics(arm, torch.float64)
        pos, rot = kin.forward(kin.sample(samples, torch.Generator().manual_seed(seed)))
        net = cls(config, arm)
        canon, _, _ = net.canonical(pos.float(), rot.float())
        net.pos_center.copy_(canon.mean(0))
        net.pos_scale.copy_(canon.std(0).clamp_min(1e-3))
        return net

    # -- input ------------------------------------------------------------------------------------
    def canonical(self, pos: torch.Tensor, rot: torch.Tensor | None):
        """Target in the first joint's frame, turned about its axis into the canonical half-plane.

        Returns (position, rotation or None, psi); psi is 0 without ``yaw_symmetry``."""
        pos = pos.to(self.j1_p.dtype)
        local = (pos - self.j1_p) @ self.j1_R  # R^T (p - o), row-vector form
        local_rot = None if rot is None else self.j1_R.T @ rot.to(self.j1_p.dtype)
        if not self.config.yaw_symmetry:
            return (
                local,
                local_rot,
                torch.zeros(pos.shape[:-1], dtype=pos.dtype, device=pos.device),
            )
        coords = local @ self.j1_basis.T  # (u, v, k) components
        psi = torch.atan2(coords[..., 1], coords[..., 0])
        c, s = torch.cos(psi), torch.sin(psi)
        zero = torch.zeros_like(psi)
        # turn by -psi about k, written in the (u, v, k) basis and mapped back
        turn = torch.stack(
            [c, s, zero, -s, c, zero, zero, zero, torch.ones_like(psi)], -1
        ).reshape(*psi.shape, 3, 3)
        M = self.j1_basis.T @ turn @ self.j1_basis
        canon = (M @ local.unsqueeze(-1)).squeeze(-1)
        return canon, None if local_rot is None else M @ local_rot, psi

    def features(self, pos, rot=None, current=None):
        """Network input for targets; also returns psi (the first joint's turn to the target).
        A tracking network given no current joints assumes mid-range."""
        if self.config.mode == "pose" and rot is None:
            raise ValueError("a pose-mode network needs the target orientation")
        canon, canon_rot, psi = self.canonical(pos, rot if self.config.mode == "pose" else None)
        parts = [(canon - self.pos_center) / self.pos_scale]
        if self.config.mode == "pose":
            parts.append(matrix_to_rot6d(canon_rot))
        if self.config.tracking:
            mid, half = (self.upper + self.lower) / 2, (self.upper - self.lower) / 2
            if current is None:
                current = mid.expand(*psi.shape, -1)
            rel = (current.to(psi.dtype) - mid) / half
            if self.config.yaw_symmetry:
                rel = torch.cat(
                    [
                        _wrap(current[..., :1].to(psi.dtype) - psi.unsqueeze(-1)) / math.pi,
                        rel[..., 1:],
                    ],
                    -1,
                )
            parts.append(rel)
        return torch.cat(parts, dim=-1), psi

    # -- output -----------------------------------------------------------------------------------
    def propose(self, pos, rot=None, current=None) -> tuple[torch.Tensor, torch.Tensor]:
        """The head's unit pairs (..., dof, 2) — (..., heads, dof, 2) with several heads — and
        psi (...,)."""
        x, psi = self.features(pos, rot, current)
        raw = self.head(self.body(x))
        shape = (
            (self.config.dof, 2)
            if self.config.heads == 1
            else (self.config.heads, self.config.dof, 2)
        )
        raw = raw.reshape(*raw.shape[:-1], *shape)
        return raw / torch.linalg.norm(raw, dim=-1, keepdim=True).clamp_min(1e-6), psi

    def pairs_to_angles(self, sc: torch.Tensor, psi: torch.Tensor) -> torch.Tensor:
        """Unit pairs (..., dof, 2) -> joint angles (..., dof); ``psi`` may lack the dimensions
        between the batch and the joints (the heads)."""
        while psi.dim() < sc.dim() - 2:
            psi = psi.unsqueeze(-1)
        s, c = sc[..., 0], sc[..., 1]
        mid, half = (self.upper + self.lower) / 2, (self.upper - self.lower) / 2
        phi = _wrap(2.0 * torch.atan2(s, c))
        theta = torch.where(self.continuous, phi, mid + half * s)
        if self.config.yaw_symmetry:
            first = self._into_limits(psi + phi[..., 0])
            theta = torch.cat([first.unsqueeze(-1), theta[..., 1:]], dim=-1)
        return theta

    def _into_limits(self, angle: torch.Tensor) -> torch.Tensor:
        """Joint 1 = psi + turn: the representative (mod 2 pi) inside its limits, else clamped."""
        if bool(self.continuous[0]):
            return _wrap(angle)
        lo, hi = self.lower[0], self.upper[0]
        rep = lo + torch.remainder(angle - lo, 2 * math.pi)
        # past the upper limit: the nearer of the two ends (going round either way)
        past = rep > hi
        nearer_hi = (rep - hi) < (lo + 2 * math.pi - rep)
        return torch.where(past, torch.where(nearer_hi, hi, lo), rep)

    def angles_to_pairs(self, theta: torch.Tensor, psi: torch.Tensor) -> torch.Tensor:
        """The inverse of :meth:`pairs_to_angles` (one preimage: c >= 0 for limited joints)."""
        mid, half = (self.upper + self.lower) / 2, (self.upper - self.lower) / 2
        s_lim = ((theta - mid) / half).clamp(-1.0, 1.0)
        c_lim = torch.sqrt((1.0 - s_lim**2).clamp_min(0.0))
        turn = theta
        if self.config.yaw_symmetry:
            turn = torch.cat([_wrap(theta[..., :1] - psi.unsqueeze(-1)), theta[..., 1:]], dim=-1)
        s_turn, c_turn = torch.sin(turn / 2), torch.cos(turn / 2)
        full = self.continuous.clone()
        if self.config.yaw_symmetry:
            full[0] = True
        return torch.stack(
            [torch.where(full, s_turn, s_lim), torch.where(full, c_turn, c_lim)], dim=-1
        )

    def joint_distance(self, theta: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """A smooth per-row distance in joint space: squared error in units of each limited
        joint's half range, ``1 - cos`` of the difference for continuous joints."""
        half = (self.upper - self.lower) / 2
        limited = ((theta - target) / half) ** 2
        continuous = 1.0 - torch.cos(theta - target)
        return torch.where(self.continuous, continuous, limited).mean(-1)

    def head_quaternions(self, sc: torch.Tensor) -> torch.Tensor:
        """(..., dof, 4): the head's unit quaternions (x y z w) about each joint's axis."""
        return torch.cat([self.axes * sc[..., :1], sc[..., 1:]], dim=-1)

    def candidates(
        self,
        pos: torch.Tensor,
        rot: torch.Tensor | None = None,
        current: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Every head's joint angles (..., heads, dof) inside the limits."""
        sc, psi = self.propose(pos, rot, current)
        q = self.pairs_to_angles(sc, psi)
        return q.unsqueeze(-2) if self.config.heads == 1 else q

    def forward(
        self,
        pos: torch.Tensor,
        rot: torch.Tensor | None = None,
        current: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Joint angles (..., dof) inside the limits for target ``pos`` (..., 3) [and ``rot``]:
        with several heads, the candidate whose tool lands closest to the target."""
        sc, psi = self.propose(pos, rot, current)
        q = self.pairs_to_angles(sc, psi)
        if self.config.heads == 1:
            return q
        return pick_closest(
            self.kinematics(q), q, pos, rot if self.config.mode == "pose" else None
        )

    # -- transfer: start from another network ----------------------------------------------------
    def adopt(self, other: "IKNet") -> list[str]:
        """Copy ``other``'s weights (and its input scaling) wherever the shapes fit; the arm's
        own buffers (limits, axes, the first joint's frame) stay this arm's. With as many joints
        but other heads, the heads both have are copied (named "head.weight (first k heads)").
        Returns the names copied; refuses, naming both shapes, when nothing fits."""
        mine, theirs = self.state_dict(), other.state_dict()
        wanted = {n for n, _ in self.named_parameters()} | {"pos_center", "pos_scale"}
        copied = [
            n for n in mine if n in wanted and n in theirs and theirs[n].shape == mine[n].shape
        ]
        rows = {}  # the output layer: (heads, dof, 2) rows; the first heads of the smaller
        same_joints = other.config.dof == self.config.dof
        for n in ("head.weight", "head.bias"):
            a, b = mine[n].shape, theirs[n].shape
            if n not in copied and same_joints and a[1:] == b[1:]:
                rows[n] = min(a[0], b[0])
        if not any(n in copied for n, _ in self.named_parameters()):
            raise ValueError(
                f"no layer of the starting network ({_shape(other.config)}) fits this "
                f"network's shapes ({_shape(self.config)}); train one of its shape (--hidden "
                + " ".join(str(h) for h in other.config.hidden)
                + ")"
            )
        with torch.no_grad():
            for n in copied:
                mine[n].copy_(theirs[n])
            for n, k in rows.items():
                mine[n][:k].copy_(theirs[n][:k])
        heads = min(self.config.heads, other.config.heads)
        first = f"first {heads} head" + ("s" if heads > 1 else "")
        return copied + [f"{n} ({first})" for n in rows]

    # -- a population of networks of this shape (the evolution learner) --------------------------
    def flat_parameters(self) -> torch.Tensor:
        """Every weight and bias in one vector (the order of ``parameters()``)."""
        return torch.nn.utils.parameters_to_vector(self.parameters()).detach()

    def load_flat(self, flat: torch.Tensor) -> None:
        """Set every weight and bias from one vector (see :meth:`flat_parameters`)."""
        with torch.no_grad():
            torch.nn.utils.vector_to_parameters(flat.to(self.head.weight), self.parameters())

    def population_candidates(
        self, flat: torch.Tensor, pos: torch.Tensor, rot=None, current=None
    ) -> torch.Tensor:
        """Every head's joints (P, B, heads, dof) for P networks of this shape, one per row of
        ``flat`` (P, n_parameters), on the same B targets: one batched pass (baddbmm)."""
        x, psi = self.features(pos, rot, current)
        P, h, at = flat.shape[0], x.expand(flat.shape[0], *x.shape), 0
        linears = [m for m in self.body if isinstance(m, nn.Linear)] + [self.head]
        for i, layer in enumerate(linears):
            n_out, n_in = layer.weight.shape
            w = flat[:, at : at + n_out * n_in].view(P, n_out, n_in)
            b = flat[:, at + n_out * n_in : at + n_out * (n_in + 1)].view(P, 1, n_out)
            at += n_out * (n_in + 1)
            h = torch.baddbmm(b, h, w.transpose(1, 2))
            if i < len(linears) - 1:
                h = torch.nn.functional.silu(h)
        raw = h.reshape(P, x.shape[0], self.config.heads, self.config.dof, 2)
        sc = raw / torch.linalg.norm(raw, dim=-1, keepdim=True).clamp_min(1e-6)
        return self.pairs_to_angles(sc, psi.expand(P, -1))

    def kinematics(self, like: torch.Tensor):
        """Forward kinematics in the dtype and on the device of ``like`` (built once each)."""
        from ..arm.kinematics import Kinematics

        kin = self._kinematics
        if kin is None or kin.dtype != like.dtype or kin.device != like.device:
            kin = self._kinematics = Kinematics(self.arm, like.dtype, like.device)
        return kin


def pick_closest(
    kin, q: torch.Tensor, pos: torch.Tensor, rot: torch.Tensor | None
) -> torch.Tensor:
    """Of candidates ``q`` (..., K, dof), the one whose tool lands closest to each target, by
    the weighted error every solver ranks answers by (IKSettings.score)."""
    from ..arm.rotations import rotation_angle
    from ..ik.settings import IKSettings

    p_q, r_q = kin.forward(q)
    pe = torch.linalg.norm(p_q - pos.to(p_q).unsqueeze(-2), dim=-1)
    re = 0.0 if rot is None else rotation_angle(r_q, rot.to(r_q).unsqueeze(-3))
    score = IKSettings().score(pe, re)
    best = score.argmin(dim=-1)
    return torch.gather(q, -2, best[..., None, None].expand(*best.shape, 1, q.shape[-1])).squeeze(
        -2
    )


def weight_matrices(net: nn.Module) -> list:
    """The weights of every Linear layer of ``net``, in order (the input layer's first), as
    numpy arrays (copies): what view/network_drawing.py draws. Hold the trainer's lock while
    a training step could change them."""
    return [
        m.weight.detach().float().cpu().numpy().copy()
        for m in net.modules()
        if isinstance(m, nn.Linear)
    ]
