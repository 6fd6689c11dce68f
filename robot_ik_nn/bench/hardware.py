"""``robot-ik-nn bench MODEL --hardware ARM``: the deploy session, dry run, measured from outside.

Each piece in its own process, as beside a real arm: the arm's emulator (its real protocol over
TCP or a pseudo-terminal), arm_node (driver + bridge) and inference_node, started from the
deploy session's own plan (session.py) and config/deploy.yaml; this process publishes targets
over DDS and reads where the emulated arm is from the emulator's state file, judging the tool
pose with the package's forward kinematics. Along the way: nothing moves before ``~/resume``;
``~/stop`` halts; the emulator is killed (SIGKILL) and started again, and the loss must show on
``~/status`` and no goal from before it may reach the arm after the reconnection.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ..arm.rotations import matrix_to_quaternion, rotation_angle


def deploy_run(model, arm_kind: str, targets: int = 200, seed: int = 5, kill_at: int | None = 2,
               step: float = 0.4, timeout: float = 30.0, progress: bool = False) -> dict:
    from ..hardware import arms
    from ..ik.solver import Solver
    from ..nodes.client import SessionClient as Client
    from ..nodes.session import plan

    solver = Solver.load(model).with_settings(collision_check=True)
    arm = solver.arm
    goals = _walk(solver, targets + 1, seed, step)
    P, R = solver.forward(goals)
    work = Path(tempfile.mkdtemp(prefix="robot_ik_nn_deploy_"))
    state = work / "emulator.json"
    entry = arms.by_name(arm_kind)  # an unknown arm: refused by name before anything starts
    serial = entry.serial
    port = str(work / "servo_tty") if serial else str(_free_port())
    planned = plan("deploy", {"arm": arm_kind, "model_dir": str(model), "dry_run": "true",
                              "port": port})
    emulator_cmd = [sys.executable, "-m", "robot_ik_nn.cli", *planned[0].command[1:],
                    "--state", str(state)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    procs = {"emulator": _emulator(emulator_cmd, env)}
    for spec in planned[1:]:
        if not spec.external:
            procs[spec.name] = _node(spec, env, work / f"{spec.name}.log")
    client = Client()
    out = {"arm": arm_kind, "driver": entry.driver, "targets": targets,
           "logs": str(work)}
    try:
        client.wait_for_status(timeout=60)
        client.wait_subscribed(timeout=60)
        # nothing moves before ~/resume; and the inference node's verdict on that target says the
        # pipeline is up (DDS discovery can take seconds on a loaded machine)
        end = time.monotonic() + 60
        while not client.answers and time.monotonic() < end:
            client.send(P[0], matrix_to_quaternion(R[0]), arm.base)
            time.sleep(1.0)
        time.sleep(1.0)
        out["goals_before_resume"] = _read(state)["goals"]
        out["resume"] = client.call("resume")
        out["moved_after_resume_rad"] = _still(state)  # the goal heard before: not replayed
        errors, seconds = [], []
        for i in range(1, targets + 1):
            if i == kill_at:
                procs["emulator"] = _kill_and_restart(procs["emulator"], emulator_cmd, env,
                                                      client, state, out, (P[i], R[i], arm.base))
            if kill_at and i == kill_at + 1:
                _stop_check(client, state, P[i], R[i], arm.base, out)
            t0 = time.monotonic()
            _send(client, P[i], matrix_to_quaternion(R[i]), arm.base, out)
            pe, re = _arrive(solver, state, P[i], R[i], timeout)
            errors.append((pe, re))
            if pe > 1e-3 or re > 0.01:
                out.setdefault("missed", []).append(
                    {"target": i, "pos_mm": pe * 1e3, "rot_rad": re,
                     "verdict": client.answers[-1] if client.answers else None})
            seconds.append(time.monotonic() - t0)
            if progress:
                print(f"\r{arm_kind}: {i}/{targets} targets", end="", file=sys.stderr)
        pe, re = np.array(errors).T
        reached = (pe <= 1e-3) & (re <= 0.01)
        out.update(
            reached=int(reached.sum()),
            pos_mm_max=float(pe.max() * 1e3),
            rot_rad_max=float(re.max()),
            seconds_median=float(np.median(seconds)),
            bad_goals=_read(state)["bad_goals"],
        )
    finally:
        client.close()
        for proc in procs.values():
            _end(proc)
    return out


def _send(client, P, quat, frame: str, out: dict) -> None:
    """Send a target; one refused as stale (a starved CPU delayed it past stale_timeout) is sent
    again, up to three times, and counted."""
    for _ in range(4):
        seen = len(client.answers)
        client.send(P, quat, frame)
        end = time.monotonic() + 5.0
        while len(client.answers) == seen and time.monotonic() < end:
            time.sleep(0.002)
        if len(client.answers) == seen or "stale" not in client.answers[-1]:
            return
        out["resent_stale"] = out.get("resent_stale", 0) + 1


def _walk(solver, n: int, seed: int, step: float) -> np.ndarray:
    """Joints PyBullet finds free of self-contact (the solver's own model never picks them),
    each within ``step`` rad of the last: targets a person would send."""
    from ..hardware.pybullet_arm import ArmSim
    from .collisions import pybullet_contacts

    arm, rng = solver.arm, np.random.default_rng(seed)
    lo, hi = arm.lower + 0.05, arm.upper - 0.05
    q, out = arm.mid_range.copy(), []
    with ArmSim(arm) as sim:
        contacts = pybullet_contacts(sim, solver.collisions)
        while len(out) < n:
            cand = np.clip(q + rng.uniform(-step, step, arm.dof), lo, hi)
            if not contacts(cand)[0]:
                q = cand
                out.append(q)
    return np.array(out)


def _arrive(solver, state: Path, P, R, timeout: float) -> tuple[float, float]:
    """Wait until the emulated tool is on the target (or stops moving); its final errors."""
    end = time.monotonic() + timeout
    last, still = None, 0
    while time.monotonic() < end:
        q = np.array(_read(state)["joints"])
        p, r = solver.forward(q)
        pe = float(np.linalg.norm(p[0] - P))
        re = float(rotation_angle(r[0], R))
        if pe <= 1e-3 and re <= 0.01:
            time.sleep(0.1)  # settle: the stream's last setpoints
            q = np.array(_read(state)["joints"])
            p, r = solver.forward(q)
            return float(np.linalg.norm(p[0] - P)), float(rotation_angle(r[0], R))
        still = still + 1 if last is not None and np.allclose(q, last, atol=1e-6) else 0
        if still > 300:  # 6 s still, longer than the inference node repeats a goal: not coming
            break
        last = q
        time.sleep(0.02)
    return pe, re


def _kill_and_restart(proc, cmd, env, client, state, out, target) -> subprocess.Popen:
    """The arm switched off mid-move (its goal still streamed to it) and on again: the goal
    from before the loss must not reach it after."""
    _on_its_way(client, state, target)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    t0 = time.monotonic()
    out["loss_reported_s"] = client.wait_level(2, timeout=5) - t0
    time.sleep(1.0)  # longer than the watchdog: whatever the bridge held is now stale
    proc = _emulator(cmd, env)  # a new emulator counts the goals that reach it from 0
    t1 = time.monotonic()
    out["reconnected_s"] = client.wait_level_below(2, timeout=20) - t1
    time.sleep(1.0)
    out["stale_goals_after_reconnect"] = _read(state)["goals"]
    return proc


def _on_its_way(client, state, target) -> int:
    """Send ``target`` (P, R, frame) and wait until the arm is moving toward it; returns the
    goals the emulated arm had heard before."""
    P, R, frame = target
    before = _read(state)["goals"]
    client.send(P, matrix_to_quaternion(R), frame)
    end = time.monotonic() + 5
    while _read(state)["goals"] < before + 3 and time.monotonic() < end:
        time.sleep(0.005)
    return before


def _stop_check(client, state, P, R, frame, out) -> None:
    before = _on_its_way(client, state, (P, R, frame))
    out["stop"] = client.call("stop")
    at_stop = _read(state)
    time.sleep(0.5)
    after = _read(state)
    # the goal in flight when the call came, and the hold itself, may still arrive: not motion
    out["goals_after_stop"] = after["goals"] - at_stop["goals"]
    out["moved_after_stop_rad"] = float(np.max(np.abs(np.subtract(after["joints"],
                                                                  at_stop["joints"]))))
    out["goals_moving_before_stop"] = at_stop["goals"] - before
    out["resume_after_stop"] = client.call("resume")
    out["moved_after_stop_and_resume_rad"] = _still(state)  # nor the goal of before ~/stop


def _still(state, seconds: float = 1.0) -> float:
    """How far (rad, the largest joint) the emulated arm moves in ``seconds`` with no new target
    sent: a goal heard before ~/resume must not be replayed after it."""
    at = _read(state)["joints"]
    time.sleep(seconds)
    return float(np.max(np.abs(np.subtract(_read(state)["joints"], at))))


def _read(path: Path) -> dict:
    for _ in range(50):
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            time.sleep(0.01)
    raise RuntimeError(f"the emulator's state file {path} cannot be read")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _emulator(cmd, env) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # its address, once it listens
    if not line:
        raise RuntimeError(f"the emulator did not start: {' '.join(cmd)}")
    return proc


def _node(spec, env, log: Path) -> subprocess.Popen:
    args = [sys.executable, "-m", f"robot_ik_nn.nodes.{spec.executable}", "--ros-args"]
    for key, value in spec.parameters.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, str):
            value = json.dumps(value)  # YAML: a string, even when it looks like a number
        args += ["-p", f"{key}:={value}"]
    for a, b in spec.remappings:
        args += ["-r", f"{a}:={b}"]
    with open(log, "w") as sink:  # the node's log, kept beside the emulator's state
        return subprocess.Popen(args, env=env, stdout=sink, stderr=subprocess.STDOUT)


def _end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def measure(model, arm_kind: str, targets: int = 200, say=print) -> dict:
    """``bench --hardware``: one dry-run deploy session, the emulator killed half way."""
    import platform

    say(f"the {arm_kind} deploy session against its emulator, {targets} targets over DDS")
    result = deploy_run(model, arm_kind, targets=targets, kill_at=targets // 2, progress=True)
    result.update(model=str(model), machine=platform.node(), cpus=os.cpu_count(),
                  measured=time.strftime("%Y-%m-%d %H:%M"))
    return result


def format_table(r: dict) -> str:
    rows = [
        ("targets reaching the emulated arm within 1 mm / 0.01 rad",
         f"{r['reached']} of {r['targets']}"),
        ("largest position / rotation error",
         f"{r['pos_mm_max']:.3f} mm / {r['rot_rad_max']:.4f} rad"),
        ("median time from target to the tool there", f"{r['seconds_median']:.2f} s"),
        ("goals reaching the arm before ~/resume", str(r["goals_before_resume"])),
        ("~/resume, no new target: the arm moved in 1 s (the goal heard before)",
         f"{r.get('moved_after_resume_rad', 0):.4f} rad"),
        ("emulator killed mid-move: loss on ~/status after",
         f"{r.get('loss_reported_s', 0) * 1e3:.0f} ms"),
        ("reconnected after the emulator came back", f"{r.get('reconnected_s', 0):.2f} s"),
        ("goals sent after reconnecting, before a new target",
         str(r.get("stale_goals_after_reconnect", "-"))),
        ("~/stop during a move: arm moved afterwards",
         f"{r.get('moved_after_stop_rad', 0):.4f} rad ({r.get('goals_after_stop', '-')} goals)"),
        ("~/stop then ~/resume, no new target: the arm moved in 1 s",
         f"{r.get('moved_after_stop_and_resume_rad', 0):.4f} rad"),
        ("goals a real controller would refuse", str(r["bad_goals"])),
    ]
    head = f"deploy dry run: {r['arm']} through {r['driver']}\n\n| measure | value |\n|---|---|\n"
    return head + "\n".join(f"| {a} | {b} |" for a, b in rows)
