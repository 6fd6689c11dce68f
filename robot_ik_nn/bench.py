"""``robot-ik-nn bench``: the performance figures, measured, as one JSON object.

- the network alone, batched (answers per second);
- the batched solver (network seed + refinement + restarts) at several batch sizes;
- the single-target serving solver (what the inference node runs per target): cold targets,
  and tracking targets that move a little from one to the next, as at 200 Hz;
- PyBullet's own calculateInverseKinematics on the same targets, as a reference.

Every target is reachable (forward kinematics of uniformly random joints); every error is
measured with forward kinematics, never taken from a solver's own report.
"""
from __future__ import annotations

import math
import os
import platform
import time

import numpy as np
import torch

from .evaluate import held_out_targets
from .kinematics import Kinematics, rotation_angle
from .quaternions import matrix_to_quaternion
from .serving import ServingSolver
from .solver import SOLVED, Solver


def _machine() -> dict:
    info = {"python": platform.python_version(), "torch": torch.__version__, "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "processor": platform.processor() or platform.machine()}
    if torch.cuda.is_available():
        info["cuda_device"] = torch.cuda.get_device_name(0)
    return info


def _timed(fn, repeat: int = 3):
    fn()  # warm up
    best = math.inf
    for _ in range(repeat):
        started = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - started)
    return best, out


def network_throughput(loaded, pos, rot, device) -> dict:
    net = loaded.net.to(device)
    p, r = pos.float().to(device), rot.float().to(device) if net.config.mode == "pose" else None
    cur = ((net.lower + net.upper) / 2).expand(len(p), -1) if net.config.tracking else None

    def run():
        with torch.no_grad():
            out = net(p, r, cur)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return out

    seconds, _ = _timed(run)
    return {"batch": len(p), "answers_per_s": len(p) / seconds}


def batched_solver(loaded, pos, quat, batches, device) -> list[dict]:
    rows = []
    solver = Solver(loaded.arm, loaded.net, device=device)
    for batch in batches:
        n = min(batch, len(pos))
        runs = max(1, min(len(pos) // n, 200))  # several small batches, so one is not the whole story
        p, q = pos[: n * runs], None if quat is None else quat[: n * runs]

        def run():
            out = [solver.solve(p[i * n:(i + 1) * n], None if q is None else q[i * n:(i + 1) * n])
                   for i in range(runs)]
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            return out

        seconds, results = _timed(run, repeat=2)
        solved = sum(s == SOLVED for r in results for s in r.status)
        rows.append({"batch": n, "targets": n * runs, "solutions_per_s": n * runs / seconds,
                     "solve_rate": solved / (n * runs), "ms_per_call": 1000 * seconds / runs})
    return rows


def serving(loaded, pos, quat, targets: int) -> dict:
    arm = loaded.arm
    solver = ServingSolver(arm, loaded.net)
    out = {}
    # cold: each target alone, no joint state to start from
    lat, ok = [], 0
    for k in range(targets):
        started = time.perf_counter()
        answer = solver.solve(pos[k], None if quat is None else quat[k])
        lat.append(time.perf_counter() - started)
        ok += answer.status == SOLVED
    out["cold"] = _latency(lat, ok)
    # tracking: a smooth joint-space path, the current joints a few targets behind
    kin = Kinematics(arm, torch.float64)
    q0 = kin.sample(1, torch.Generator().manual_seed(1))[0]
    direction = torch.linspace(-1, 1, arm.dof, dtype=torch.float64) * 0.6
    path = kin.clamp(q0 + direction * torch.linspace(0, 1, targets, dtype=torch.float64)[:, None])
    p_path, r_path = kin.forward(path)
    q_path = matrix_to_quaternion(r_path).numpy() if quat is not None else None
    lat, ok, last = [], 0, None
    for k in range(targets):
        started = time.perf_counter()
        answer = solver.solve(p_path[k].numpy(), None if q_path is None else q_path[k],
                              current=path[max(0, k - 5)].numpy(), last=last)
        lat.append(time.perf_counter() - started)
        ok += answer.status == SOLVED
        last = answer.q
    out["tracking"] = _latency(lat, ok)
    return out


def _latency(seconds: list[float], solved: int) -> dict:
    ms = np.array(seconds) * 1000
    return {"targets": len(ms), "solve_rate": solved / len(ms), "ms_median": float(np.median(ms)),
            "ms_p99": float(np.percentile(ms, 99)), "ms_max": float(ms.max())}


def pybullet_reference(loaded, pos, rot, targets: int) -> dict:
    """PyBullet's calculateInverseKinematics from the zero pose, scored by forward kinematics."""
    import pybullet as pb

    from .sim import ArmSim

    arm = loaded.arm
    kin = Kinematics(arm, torch.float64)
    pose = loaded.net.config.mode == "pose"
    with ArmSim(arm) as sim:
        movable = [i for i in range(pb.getNumJoints(sim.body, physicsClientId=sim.client))
                   if pb.getJointInfo(sim.body, i, physicsClientId=sim.client)[2] != pb.JOINT_FIXED]
        column = [movable.index(i) for i in sim.joint_indices]
        answers, started = [], time.perf_counter()
        for k in range(targets):
            sim.set_joints(np.zeros(arm.dof))
            orn = matrix_to_quaternion(rot[k]).tolist() if pose else None
            kwargs = {"targetOrientation": orn} if orn else {}
            sol = pb.calculateInverseKinematics(sim.body, sim.tip_index, pos[k].tolist(), maxNumIterations=100,
                                                residualThreshold=1e-6, physicsClientId=sim.client, **kwargs)
            answers.append([sol[c] for c in column])
        seconds = time.perf_counter() - started
    q = torch.tensor(answers, dtype=torch.float64)
    p, r = kin.forward(q)
    pe = torch.linalg.norm(p - pos[:targets], dim=-1)
    re = rotation_angle(r, rot[:targets]) if pose else torch.zeros_like(pe)
    within = torch.from_numpy(arm.within_limits(q.numpy()))
    solved = ((pe <= 1e-3) & (re <= 0.01) & within).double().mean()
    return {"targets": targets, "solve_rate": float(solved), "pos_mm_median": float(pe.median() * 1000),
            "rot_deg_median": float(torch.rad2deg(re.median())), "ms_per_solve": 1000 * seconds / targets}


def run(loaded, targets: int = 10000, seed: int = 777, device: str = "cpu", serving_targets: int = 1000,
        reference_targets: int = 1000, batches=(1, 100, 1000, 10000)) -> dict:
    _, pos, rot = held_out_targets(loaded.arm, targets, seed)
    pose = loaded.net.config.mode == "pose"
    quat = matrix_to_quaternion(rot) if pose else None
    result = {"robot": loaded.arm.name, "mode": loaded.net.config.mode, "device": device, "seed": seed,
              "machine": _machine(), "network": loaded.net.config.to_dict()}
    result["network_alone"] = network_throughput(loaded, pos, rot, device)
    result["batched_solver"] = batched_solver(loaded, pos, quat, batches, device)
    result["serving"] = serving(loaded, pos.numpy(), None if quat is None else quat.numpy(), serving_targets)
    if reference_targets:
        result["pybullet_ik"] = pybullet_reference(loaded, pos, rot, reference_targets)
    return result


def format_table(result: dict) -> str:
    lines = [f"{result['robot']} ({result['mode']}) on {result['device']}, "
             f"{result['machine']['torch_threads']} torch threads", "",
             f"network alone: {result['network_alone']['answers_per_s']:,.0f} answers/s "
             f"(batch {result['network_alone']['batch']})", "",
             f"{'batched solver':24}{'solutions/s':>14}{'solved':>10}{'ms/call':>10}"]
    for row in result["batched_solver"]:
        lines.append(f"{'  batch ' + str(row['batch']):24}{row['solutions_per_s']:>14,.0f}"
                     f"{row['solve_rate'] * 100:>9.2f}%{row['ms_per_call']:>10.2f}")
    lines += ["", f"{'one target at a time':24}{'median ms':>14}{'p99 ms':>10}{'solved':>10}"]
    for name, row in result["serving"].items():
        lines.append(f"{'  ' + name:24}{row['ms_median']:>14.3f}{row['ms_p99']:>10.3f}{row['solve_rate'] * 100:>9.2f}%")
    if "pybullet_ik" in result:
        ref = result["pybullet_ik"]
        lines += ["", f"PyBullet calculateInverseKinematics (from zeros): {ref['solve_rate'] * 100:.1f}% solved, "
                      f"median {ref['pos_mm_median']:.1f} mm / {ref['rot_deg_median']:.1f} deg, "
                      f"{ref['ms_per_solve']:.2f} ms per solve"]
    return "\n".join(lines)
