"""Batched, differentiable forward kinematics and geometric Jacobian in torch.

    kin = Kinematics(arm, dtype=torch.float64)
    pos, rot = kin.forward(q)            # (B, 3), (B, 3, 3) tip pose in the base frame
    pos, rot, jac = kin.jacobian(q)      # jac (B, 6, dof): rows vx vy vz wx wy wz

Every joint's transform is ``origin @ motion(q)``. For a revolute joint about unit axis k,
``origin_R @ rot(k, q) = A + sin(q) B + (1 - cos(q)) C`` with constant A = origin_R,
B = origin_R K, C = origin_R K^2 (Rodrigues, K the cross-product matrix of k), so one step
of the chain costs three broadcast multiply-adds and one batched 3x3 product.

On CUDA the 3x3 products are written out as broadcast multiply-sums: the batched matrix
product's kernels, built for large matrices, spent most of a batched solve's GPU time on them.
Elsewhere they stay matrix products (the written-out form was measured on CUDA only).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .model import ArmModel


def _mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for (..., 3, 3) matrices, as one multiply and one sum."""
    return (a.unsqueeze(-1) * b.unsqueeze(-3)).sum(-2)


def _mv(a: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``a @ v`` for (..., 3, 3) matrices and (..., 3) vectors."""
    return (a * v.unsqueeze(-2)).sum(-1)


def _skew(k: np.ndarray) -> np.ndarray:
    return np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]], dtype=float)


class Kinematics:
    def __init__(
        self, arm: ArmModel, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"
    ):
        self.arm = arm
        self.dtype = dtype
        self.device = torch.device(device)
        A, B, C, P, axes = [], [], [], [], []
        for j in arm.joints:
            R, K = j.origin[:3, :3], _skew(j.axis)
            A.append(R)
            B.append(R @ K if j.type != "prismatic" else np.zeros((3, 3)))
            C.append(R @ K @ K if j.type != "prismatic" else np.zeros((3, 3)))
            P.append(j.origin[:3, 3])
            axes.append(j.axis)
        t = dict(dtype=dtype, device=self.device)
        self._A = torch.tensor(np.array(A), **t)
        self._B = torch.tensor(np.array(B), **t)
        self._C = torch.tensor(np.array(C), **t)
        self._P = torch.tensor(np.array(P), **t)
        self._axes = torch.tensor(np.array(axes), **t)
        self._axis_in_parent = self._A @ self._axes.unsqueeze(-1)  # origin_R @ axis, (dof, 3, 1)
        self._axis_in_parent = self._axis_in_parent.squeeze(-1)
        self._prismatic = [j.type == "prismatic" for j in arm.joints]
        self._tip_R = torch.tensor(arm.tip_offset[:3, :3], **t)
        self._tip_p = torch.tensor(arm.tip_offset[:3, 3], **t)
        self.lower = torch.tensor(arm.lower, **t)
        self.upper = torch.tensor(arm.upper, **t)
        self.continuous = torch.tensor(arm.continuous, device=self.device)
        on_cuda = self.device.type == "cuda"
        self._mm = _mm if on_cuda else torch.matmul
        self._mv = _mv if on_cuda else torch.matmul

    @property
    def dof(self) -> int:
        return self.arm.dof

    def to(self, dtype: torch.dtype | None = None, device=None) -> "Kinematics":
        """The same kinematics in another dtype or on another device."""
        return Kinematics(self.arm, dtype or self.dtype, device or self.device)

    # -- chain -----------------------------------------------------------------------------------
    def _walk(self, q: torch.Tensor, want_axes: bool):
        if q.shape[-1] != self.dof:
            raise ValueError(
                f"expected {self.dof} joint values per row, got shape {tuple(q.shape)}"
            )
        q = q.to(self.dtype)
        batch = q.shape[:-1]
        q = q.reshape(-1, self.dof)
        s, c1 = torch.sin(q)[..., None, None], (1.0 - torch.cos(q))[..., None, None]
        M = (
            self._A + s * self._B + c1 * self._C
        )  # every joint's origin @ motion at once: (B, dof, 3, 3)
        mm, mv = self._mm, self._mv
        R, p = M[:, 0], self._P[0].expand(q.shape[0], 3)
        origins, axes = [p], [self._axis_in_parent[0].expand(q.shape[0], 3)]
        if self._prismatic[0]:
            p = p + mv(R, self._axes[0]) * q[:, :1]
        for i in range(1, self.dof):
            p = p + mv(R, self._P[i])
            if want_axes:
                origins.append(p)
                axes.append(mv(R, self._axis_in_parent[i]))
            R = mm(R, M[:, i])
            if self._prismatic[i]:
                p = p + mv(R, self._axes[i]) * q[:, i, None]
        return batch, p + mv(R, self._tip_p), mm(R, self._tip_R), origins, axes

    def forward(self, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Tip position (..., 3) and rotation matrix (..., 3, 3) in the base frame."""
        batch, p, R, _, _ = self._walk(q, want_axes=False)
        return p.reshape(*batch, 3), R.reshape(*batch, 3, 3)

    def jacobian(self, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Tip pose and the geometric Jacobian (..., 6, dof) in the base frame."""
        batch, p, R, origins, axes = self._walk(q, want_axes=True)
        cols = []
        for i in range(self.dof):
            z = axes[i]
            if self._prismatic[i]:
                cols.append(torch.cat([z, torch.zeros_like(z)], dim=-1))
            else:
                cols.append(torch.cat([torch.linalg.cross(z, p - origins[i]), z], dim=-1))
        J = torch.stack(cols, dim=-1)
        return p.reshape(*batch, 3), R.reshape(*batch, 3, 3), J.reshape(*batch, 6, self.dof)

    # -- joint space ------------------------------------------------------------------------------
    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """``n`` joint vectors drawn uniformly inside the limits."""
        u = torch.rand(n, self.dof, generator=generator, dtype=self.dtype, device=self.device)
        return self.lower + u * (self.upper - self.lower)

    def clamp(self, q: torch.Tensor) -> torch.Tensor:
        """Limited joints clamped to their range, continuous joints wrapped to (-pi, pi]."""
        wrapped = torch.remainder(q + math.pi, 2 * math.pi) - math.pi
        clamped = torch.minimum(torch.maximum(q, self.lower), self.upper)
        return torch.where(self.continuous, wrapped, clamped)
