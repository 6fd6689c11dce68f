"""The explore learner: trial and reward, with the simulator as a black box.

No gradient flows through the kinematics here: PyBullet (sim.py) is asked where the tool ends
up, as a real arm would be. Each step:

1. draw targets the simulator can reach (it places the arm at random joints and reads the tool);
2. for every target make a few attempts: with probability ``epsilon`` random joint quaternions,
   otherwise the network's own quaternions turned by a little noise; ``epsilon`` and the noise
   fade as training goes on, so the network's proposals take over;
3. the simulator scores each attempt by the reward (reward.py);
4. the network learns from the scored attempts: it moves toward the best attempt for each target
   when that attempt beats its own proposal (reward-selected), and toward every attempt's joints
   for the pose that attempt actually reached (hindsight relabelling: a reached pose is a solved
   target). A replay buffer keeps recent hindsight pairs.
"""

from __future__ import annotations

import math

import torch

from ...arm.rotations import quaternion_to_matrix
from ..reward import pose_distances, reward_from_distances
from .base import Learner


class ExploreLearner(Learner):
    name = "explore"

    def __init__(self, arm, net, config, device, seed):
        super().__init__(arm, net, config, device, seed)
        c = config  # hyper-parameters: LearnConfig's explore section
        self.attempts, self.targets_per_step, self.replay = c.attempts, c.explore_targets, c.replay
        self.epsilon = (c.epsilon_start, c.epsilon_end)
        self.noise = (c.noise_start, c.noise_end)
        self.decay_until, self.buffer_size = c.decay_until, c.buffer_size
        if net.config.heads != 1:
            raise ValueError("the explore learner trains one head; use --heads 1")
        # the black box; imported here so the core stays free of pybullet
        from ...hardware.pybullet_arm import ArmSim

        self.sim = ArmSim(arm)
        n_in = 3 + (9 if self.pose_mode else 0)
        self.buffer_x = torch.zeros(self.buffer_size, n_in, device=self.device)
        self.buffer_q = torch.zeros(self.buffer_size, arm.dof, device=self.device)
        self.buffer_len = 0
        self.buffer_next = 0
        self.sim_calls = 0

    # -- the black box ----------------------------------------------------------------------------
    def reach(self, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Where the simulator's tool goes for joints ``q`` (B, dof): position, rotation matrix."""
        pos, quat = self.sim.forward(q.detach().cpu().double().numpy())
        self.sim_calls += len(q)
        pos = torch.as_tensor(pos, dtype=torch.float32, device=self.device)
        rot = quaternion_to_matrix(torch.as_tensor(quat, dtype=torch.float32, device=self.device))
        return pos, rot

    def schedule(self, progress: float) -> tuple[float, float]:
        f = min(1.0, progress / self.decay_until)
        eps = self.epsilon[0] + (self.epsilon[1] - self.epsilon[0]) * f
        sigma = self.noise[0] * (self.noise[1] / self.noise[0]) ** f  # geometric fade
        return eps, sigma

    # -- one step ---------------------------------------------------------------------------------
    def step(self, progress: float) -> dict:
        c, B, K = self.config, self.targets_per_step, self.attempts
        eps, sigma = self.schedule(progress)
        t_pos, t_rot = self.reach(self.sample_joints(B))
        rot_in = t_rot if self.pose_mode else None

        with torch.no_grad():
            sc, psi = self.net.propose(t_pos, rot_in)  # (B, dof, 2), (B,)
            own = self.net.pairs_to_angles(sc, psi)
            turned = self._turn(sc.unsqueeze(1).expand(B, K - 1, -1, -1), sigma)
            tries = self.net.pairs_to_angles(
                turned, psi.unsqueeze(1).expand(B, K - 1)
            )  # (B, K-1, dof)
            random = self.kin.sample(B * (K - 1), self.generator).reshape(B, K - 1, -1)
            pick = torch.rand(B, K - 1, 1, generator=self.generator, device=self.device) < eps
            tries = torch.where(pick, random, tries)
            attempts = torch.cat([own.unsqueeze(1), tries], dim=1)  # attempt 0: the network itself

        flat = attempts.reshape(B * K, -1)
        r_pos, r_rot = self.reach(flat)
        d_pos, d_rot = pose_distances(
            r_pos,
            r_rot if self.pose_mode else None,
            t_pos.repeat_interleave(K, 0),
            None if rot_in is None else rot_in.repeat_interleave(K, 0),
        )
        reward = reward_from_distances(d_pos, d_rot, c.w_pos, c.w_rot).reshape(B, K)

        # reward-selected: targets whose best attempt beat the network's own proposal
        best = reward.argmax(dim=1)
        improved = reward[torch.arange(B), best] > reward[:, 0]
        sel_x = self._inputs(t_pos, t_rot)[improved]
        sel_q = attempts[torch.arange(B), best][improved]
        # hindsight: every attempt solved the pose it reached
        self._remember(self._inputs(r_pos, r_rot), flat)
        rep_x, rep_q = self._sample_buffer(self.replay)

        x = torch.cat([sel_x, rep_x])
        q_goal = torch.cat([sel_q, rep_q])
        pos_in, rot_in_x = x[:, :3], (x[:, 3:].reshape(-1, 3, 3) if self.pose_mode else None)
        q_net = self.net(pos_in, rot_in_x)
        loss = self.net.joint_distance(q_net, q_goal).mean()
        lr = self.apply(loss, progress)
        own_pos, own_rot = d_pos.reshape(B, K)[:, 0], d_rot.reshape(B, K)[:, 0]
        return {
            "loss": float(loss.detach()),
            "reward": float(reward[:, 0].mean()),
            "pos_mm": float(own_pos.median()) * 1000,
            "rot_deg": math.degrees(float(own_rot.median())),
            "lr": lr,
            "epsilon": eps,
            "noise": sigma,
            "improved": float(improved.float().mean()),
        }

    # -- pieces -----------------------------------------------------------------------------------
    def _turn(self, sc: torch.Tensor, sigma: float) -> torch.Tensor:
        """Turn each unit (s, c) pair by a random angle: noise on the joint quaternions."""
        delta = sigma * torch.randn(sc.shape[:-1], generator=self.generator, device=self.device)
        cos, sin = torch.cos(delta), torch.sin(delta)
        s, c = sc[..., 0], sc[..., 1]
        return torch.stack([s * cos + c * sin, c * cos - s * sin], dim=-1)

    def _inputs(self, pos: torch.Tensor, rot: torch.Tensor) -> torch.Tensor:
        return torch.cat([pos, rot.reshape(-1, 9)], dim=-1) if self.pose_mode else pos

    def _remember(self, x: torch.Tensor, q: torch.Tensor) -> None:
        n = len(x)
        idx = (self.buffer_next + torch.arange(n, device=self.device)) % self.buffer_size
        self.buffer_x[idx], self.buffer_q[idx] = x, q
        self.buffer_next = int((self.buffer_next + n) % self.buffer_size)
        self.buffer_len = min(self.buffer_size, self.buffer_len + n)

    def _sample_buffer(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        idx = torch.randint(0, self.buffer_len, (n,), generator=self.generator, device=self.device)
        return self.buffer_x[idx], self.buffer_q[idx]

    # -- checkpoints ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        state = super().state_dict()
        state.update(
            buffer_x=self.buffer_x[: self.buffer_len].clone(),
            buffer_q=self.buffer_q[: self.buffer_len].clone(),
            buffer_next=self.buffer_next,
            sim_calls=self.sim_calls,
        )
        return state

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        n = len(state["buffer_x"])
        self.buffer_x[:n], self.buffer_q[:n] = state["buffer_x"], state["buffer_q"]
        self.buffer_len, self.buffer_next = n, int(state["buffer_next"])
        self.sim_calls = int(state["sim_calls"])

    def close(self) -> None:
        self.sim.close()
