"""``robot-ik-nn``: train, evaluate and use IK networks; works without ROS.

robot-ik-nn train --robot niryo_one --minutes 5 --out models/niryo_one [--view]
robot-ik-nn eval models/niryo_one --targets 10000 [--json]
robot-ik-nn solve models/niryo_one --xyz 0.25 0 0.3 --quat 0 0.7071 0 0.7071 [--json]
robot-ik-nn solve models/niryo_one --path poses.csv [--start J1 ... J6]   (a whole path, as CSV)
robot-ik-nn bench models/niryo_one [--peers] [--json] [--out FILE]
robot-ik-nn export models/niryo_one [--out niryo_one.tar.gz] [--onnx]
robot-ik-nn merge models/left models/right --out models/merged [--minutes 3]
robot-ik-nn launch train|inference|display [name:=value ...]     (needs rclpy)
robot-ik-nn view models/niryo_one [--port 8080]    (a web page: needs viser, yourdfpy)
"""

from __future__ import annotations

import faulthandler
import json
import math
import os
import signal
import sys


def _threads(value: int | None, torch: bool = False) -> None:
    """CPU threads for the compiled core's batches (and torch's, for the commands that use it)."""
    count = value or min(os.cpu_count() or 1, 16)
    if value:
        import numba

        numba.set_num_threads(min(count, numba.config.NUMBA_NUM_THREADS))
    if torch:
        import torch as torch_

        torch_.set_num_threads(count)


def cmd_eval(args) -> int:
    from .evaluate import evaluate, format_table

    _threads(args.threads, torch=args.device.startswith("cuda"))
    result = evaluate(
        args.model, targets=args.targets, seed=args.seed, device=args.device, batch=args.batch
    )
    print(json.dumps(result) if args.json else format_table(result))
    return 0


def cmd_solve(args) -> int:
    from .ik.settings import IKSettings
    from .ik.solver import Solver
    from .ik.targets import SOLVED

    _threads(args.threads)
    if args.order is not None and args.solutions is None:
        raise ValueError("--order orders several answers: give --solutions K too")
    args.order = args.order or "nearest"
    try:  # the settings' words name their fields; here the options are what the user gave
        settings = IKSettings(
            **({} if args.refine is None else {"iterations": args.refine}),
            free_axis=args.free_axis,
            collision_check=not args.no_collision_check,
            collision_margin=args.collision_margin,
            collision_pairs=args.collision_pairs,
        )
    except ValueError as error:
        raise ValueError(str(error).replace("IKSettings.iterations", "--refine")) from None
    if args.solutions is not None and args.refine == 0:
        raise ValueError("--solutions needs refinement: --refine 0 is the network alone")
    _say_if_compiling()
    solver = Solver.load(args.model, settings, backend=args.backend)
    if args.path is not None:
        return _solve_path(args, solver)
    if args.start is not None:
        raise ValueError("--start is where a --path begins: give --path FILE too")
    if args.solutions is None:
        answers = [solver.solve(args.xyz, args.quat)]
    else:
        answers = solver.solve(args.xyz, args.quat, solutions=args.solutions, order=args.order)
    outs = [_answer_dict(solver, a) for a in answers]
    if args.json:
        print(json.dumps(outs[0] if args.solutions is None else outs))
    else:
        for k, out in enumerate(outs):
            if args.solutions is not None:
                print(f"answer {k + 1} of {len(outs)} ({args.order} first)")
            _print_answer(out)
    # one rule for every solve: 0 when each answer asked for is solved (within the tolerances),
    # 2 when not (a best effort or a refusal: the answer is printed all the same)
    return 0 if all(out["status"] == SOLVED for out in outs) else 2


def _say_if_compiling() -> None:
    from .ik.numba_cache import compiled_before

    if not compiled_before():
        print(
            "compiling the IK kernel once (about half a minute; later runs load it from numba's "
            "cache)",
            file=sys.stderr,
            flush=True,
        )


def _solve_path(args, solver) -> int:
    """``solve --path FILE``: joints for every target of the file, as CSV."""
    import numpy as np

    from .ik.inputs import near_limits

    if args.quat is not None or args.solutions is not None:
        raise ValueError(
            "--path takes each target's orientation from the file: leave out "
            "--quat and --solutions"
        )
    P, Q = _read_path(args.path)
    if args.start is None:
        first = solver.solve(P[0], None if Q is None else Q[0])
        if first.q is None:
            raise ValueError(f"{args.path}: the first target has no answer ({first.reason})")
        start = first.q
    else:
        start = np.asarray(args.start)
        if start.shape != (solver.arm.dof,):
            raise ValueError(
                f"--start needs {solver.arm.dof} joint values for {solver.arm.name}; "
                f"got {len(start)}"
            )
        near_limits(start, solver.arm, "--start")
    path = solver.solve_path(P, Q, start=start, max_step=args.max_step)
    if args.json:
        print(
            json.dumps(
                {
                    "ok": path.ok,
                    "reason": path.reason,
                    "max_step_rad": path.max_step,
                    "at": path.at,
                    "planned": path.planned,
                    "seconds": path.seconds,
                    "joint_names": solver.arm.joint_names,
                    "solved": path.solved.tolist(),
                    "joints": [None if not np.all(np.isfinite(q)) else q.tolist() for q in path.q],
                }
            )
        )
    else:
        print(
            f"# {len(P)} targets, {int(path.solved.sum())} solved, largest joint step "
            f"{path.max_step:.4f} rad (to target {path.at})"
            + (", planned where tracking would jump" if path.planned else "")
            + f", {path.seconds:.2f} s"
        )
        if path.reason:
            print(f"# {path.reason}")
        print("target,solved," + ",".join(solver.arm.joint_names))
        for k, (q, ok) in enumerate(zip(path.q, path.solved)):
            print(f"{k},{int(ok)}," + ",".join(f"{v:.6f}" for v in q))
    return 0 if path.ok else 2


def _read_path(name: str):
    """(positions (n, 3), quaternions (n, 4) or None) from a path file (see ``--path``)."""
    import numpy as np

    try:
        lines = open(name, encoding="utf-8").read().splitlines()
    except OSError as error:
        raise ValueError(f"--path: cannot read {name}: {error.strerror}") from None
    rows = []
    for number, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].replace(",", " ").split()
        if not line:
            continue
        try:
            values = [float(v) for v in line]
        except ValueError:
            raise ValueError(f"{name}, line {number}: not numbers: {' '.join(line)}") from None
        if len(values) not in (3, 7) or (rows and len(values) != len(rows[0])):
            raise ValueError(
                f"{name}, line {number}: a target is 3 numbers (x y z) or 7 (x y z qx qy qz "
                f"qw), the same on every line; got {len(values)}"
            )
        rows.append(values)
    if not rows:
        raise ValueError(f"--path: {name} holds no targets")
    a = np.array(rows)
    return a[:, :3], (a[:, 3:] if a.shape[1] == 7 else None)


def _answer_dict(solver, answer) -> dict:
    from .arm.rotations import joint_angles_to_quaternions

    q = answer.q
    quats = None if q is None else joint_angles_to_quaternions(q, solver.arm.axes)
    return {
        "status": answer.status,
        "reason": answer.reason,
        "pos_err_mm": None if q is None else answer.pos_err * 1000,
        "rot_err_deg": None if q is None else math.degrees(answer.rot_err),
        "joint_names": solver.arm.joint_names,
        "joints": None if q is None else q.tolist(),
        "joint_quaternions": None if quats is None else quats.tolist(),
        "microseconds": answer.seconds * 1e6,
    }


def _print_answer(out: dict) -> None:
    print(f"{out['status']}" + (f": {out['reason']}" if out["reason"] else ""))
    if out["joints"] is not None:
        print(f"error: {out['pos_err_mm']:.4f} mm, {out['rot_err_deg']:.4f} deg")
        print(f"{'joint':>18} {'angle (rad)':>12}   quaternion (x y z w)")
        for name, a, qq in zip(out["joint_names"], out["joints"], out["joint_quaternions"]):
            print(f"{name:>18} {a:>12.6f}   " + " ".join(f"{v:+.6f}" for v in qq))


def cmd_bench(args) -> int:

    from . import bench

    _threads(args.threads)

    def say(text):
        if not args.json:
            print(f"measuring: {text}", file=sys.stderr, flush=True)

    if args.hardware:
        from .bench import hardware

        result = hardware.measure(args.model, args.hardware, args.hardware_targets, say=say)
        _write(args.out, result, hardware.format_table(result))
        print(json.dumps(result, indent=2) if args.json else hardware.format_table(result))
        return 0 if result["reached"] == result["targets"] else 1
    if args.collisions:
        from .bench import collisions

        result = collisions.measure(args.model, say=say)
        if args.dds:
            from .bench.dds import dds_latency

            say("the inference node over DDS, collision checking on")
            result["dds"] = dds_latency(args.model, targets=args.dds_targets)
        _write(args.out, result, collisions.format_table(result))
        print(json.dumps(result, indent=2) if args.json else collisions.format_table(result))
        return 0
    if args.moveit:
        from .bench import moveit

        try:
            result = moveit.moveit_round_trips(args.model, targets=args.dds_targets)
        except ImportError as err:  # moveit_msgs: a ROS install with MoveIt
            print(f"robot-ik-nn bench --moveit: {err}", file=sys.stderr)
            return 2
        _write(args.out, result, moveit.format_table(result))
        print(json.dumps(result, indent=2) if args.json else moveit.format_table(result))
        return 0
    if args.calibration:
        from pathlib import Path

        from .bench import calibration

        result = calibration.measure(args.model, say=say)
        _write(args.out, result, calibration.format_table(result))
        if args.out:
            calibration.picture(result, Path(args.out).with_suffix(".png"))
        print(json.dumps(result, indent=2) if args.json else calibration.format_table(result))
        return 0
    if args.answers:
        from .bench import answers

        result = answers.measure(args.model, say=say)
        _write(args.out, result, answers.format_table(result))
        print(json.dumps(result, indent=2) if args.json else answers.format_table(result))
        return 0
    if args.tracking:
        from .bench import paths

        result = paths.measure(
            args.model, args.tracking, args.tracking_targets, args.tracking_network, say
        )
        _write(args.out, result, paths.format_table(result))
        print(json.dumps(result, indent=2) if args.json else paths.format_table(result))
        return 0
    if args.cuda:
        from .bench import cuda

        result = cuda.measure(args.model, args.cuda_batches, say=say)
        _write(args.out, result, cuda.markdown(result))
        print(json.dumps(result, indent=2) if args.json else cuda.format_table(result))
        return 0
    if args.solutions:
        from .bench import solutions

        result = solutions.completeness(
            args.model, k=args.solutions, targets=args.solution_targets, say=say
        )
        _write(args.out, result, solutions.format_table(result))
        print(json.dumps(result, indent=2) if args.json else solutions.format_table(result))
        return 0
    result = bench.run(
        args.model,
        targets=args.targets,
        single_targets=args.single_targets,
        peers=args.peers,
        budget_ms=args.budget_ms,
        tracking_targets=args.tracking_targets,
        backends=args.backends,
        torch_batched=not args.no_torch,
        progress=say,
    )
    if args.dds:
        from .bench.dds import dds_latency

        say("the inference node over DDS")
        result["dds"] = dds_latency(args.model, targets=args.dds_targets)
    _write(args.out, result, bench.markdown(result))
    print(json.dumps(result, indent=2) if args.json else bench.format_table(result))
    return 0


def _write(out, result: dict, markdown: str) -> None:
    """The bench's JSON into ``out`` and its markdown beside it (``.md``)."""
    from pathlib import Path

    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(result, indent=2) + "\n")
        Path(out).with_suffix(".md").write_text(markdown + "\n")


def cmd_export(args) -> int:
    from . import model_dir

    if args.onnx:
        path = model_dir.export_onnx(args.model)
        print(
            f"wrote {path} (serve it with backend onnx: robot-ik-nn solve {args.model} "
            "--backend onnx ...)"
        )
        if not args.out:
            return 0
    out = model_dir.export(args.model, args.out)
    print(
        f"exported {args.model} to {out} (load it anywhere: robot-ik-nn eval {out}, or "
        f"model_dir:={out} for the inference node)"
    )
    return 0


def cmd_collisions(args) -> int:
    from pathlib import Path

    from .arm.model import ArmModel
    from .ik.collision import CollisionModel

    if (Path(args.robot) / "model.json").is_file():  # a model folder: the arm it was trained for
        from . import model_dir

        arm = model_dir.read(args.robot).arm
    else:
        arm = ArmModel.load(args.robot, base=args.base, tip=args.tip)
    model = CollisionModel.from_arm(arm, margin=args.margin, srdf=args.pairs)
    srdf = model.to_srdf(arm.name)
    if args.out:
        from .model_dir import atomic_write

        atomic_write(Path(args.out), srdf.encode())
    if args.json:
        print(
            json.dumps(
                {
                    **model.describe(),
                    "checked": sorted(model.enabled_link_pairs),
                    "left_out": [[a, b, why] for (a, b), why in sorted(model.disabled.items())],
                }
            )
        )
        return 0
    print(
        f"{arm.name}: {len(model.shapes)} collision shapes on {len(set(model.shape_links))} "
        f"links, margin {model.margin} m"
    )
    print(f"checked ({len(model.enabled_link_pairs)} link pairs):")
    for a, b in sorted(model.enabled_link_pairs):
        print(f"  {a} - {b}")
    print(f"left out ({len(model.disabled)}; edit the SRDF to change this):")
    for (a, b), why in sorted(model.disabled.items(), key=lambda kv: (kv[1], kv[0])):
        print(f"  {a} - {b}: {why}")
    if args.out:
        print(
            f"written: {args.out} (use it: solve --collision-pairs {args.out}, "
            "IKSettings(collision_pairs=...), or the inference node's collision_pairs)"
        )
    return 0


def cmd_calibrate(args) -> int:
    if args.measurements is None or args.out is None:
        if args.model == "inmoov":
            raise ValueError(
                "the servo calibration template moved: robot-ik-nn servo-template inmoov "
                "[--out FILE.yaml]; calibrate fits measured tool poses: calibrate MODEL "
                "--measurements FILE.csv --out DIR"
            )
        raise ValueError("calibrate needs --measurements FILE.csv and --out DIR")
    from .calibration.folder import calibrate

    def say(text):
        if not args.json:
            print(f"calibrate: {text}", file=sys.stderr, flush=True)

    summary = calibrate(
        args.model,
        args.measurements,
        args.out,
        args.noise_mm,
        args.noise_deg,
        args.force,
        say,
        frame=args.frame,
        sag=not args.rigid,
        payload_kg=args.payload_kg,
    )
    if args.json:
        print(json.dumps(summary))
        return 0
    cv = summary["cross_validation"]
    print(
        f"wrote {args.out}: {summary['poses_used']} of {summary['poses']} poses used "
        f"({len(summary['poses_set_aside'])} set aside as gross outliers); on held-out poses "
        f"the tool is {cv['calibrated_mm_median']:.3f} mm from its measured place (median), "
        f"{cv['nominal_mm_median']:.3f} mm with the nominal URDF. Report: {args.out}/report.md"
    )
    if summary.get("compliance"):
        sags = ", ".join(
            f"{c['joint']} {c['sag_deg_at_largest_load']:.2f} deg"
            for c in summary["compliance"]
            if abs(c["sag_deg_at_largest_load"]) >= 0.01
        )
        print(f"joints that sag under load (at the largest load measured): {sags or 'none'}")
    return 0


def cmd_true_arm(args) -> int:
    import math
    from pathlib import Path

    from .arm.model import ArmModel
    from .calibration.measurements import to_csv
    from .calibration.true_arm import perturb
    from .model_dir import atomic_write

    if args.measure and not args.csv:
        raise ValueError("--measure N writes its rows to --csv FILE: give it")
    arm = ArmModel.load(args.robot)
    text = perturb(
        arm,
        args.seed,
        args.origin_mm / 1000,
        math.radians(args.axis_deg),
        math.radians(args.zero_deg),
    )
    atomic_write(Path(args.out), text.encode())
    print(
        f"wrote {args.out}: {arm.name} with origins {args.origin_mm} mm, axes "
        f"{args.axis_deg} deg, zeros {args.zero_deg} deg off (seed {args.seed})"
    )
    if args.measure:
        import numpy as np

        from .hardware.tracker import measure

        true = ArmModel(text, source=str(Path(args.out).resolve()), base=arm.base, tip=arm.tip)
        true.mesh_dirs += arm.mesh_dirs
        q = np.random.default_rng(args.seed + 1).uniform(
            arm.lower, arm.upper, (args.measure, arm.dof)
        )
        rows = measure(true, q, args.noise_mm, args.noise_deg, args.outliers, seed=args.seed)
        atomic_write(Path(args.csv), to_csv(rows, arm.joint_names).encode())
        print(f"wrote {args.csv}: {args.measure} measured poses of it")
    return 0


def cmd_launch(args) -> int:
    from .session import run_session

    return run_session(args.session, args.arguments)


def parser():
    from . import cli_train
    from .cli_args import parser as build

    commands = {
        "train": cli_train.cmd_train,
        "merge": cli_train.cmd_merge,
        "eval": cmd_eval,
        "solve": cmd_solve,
        "bench": cmd_bench,
        "export": cmd_export,
        "launch": cmd_launch,
        "collisions": cmd_collisions,
        "calibrate": cmd_calibrate,
        "true-arm": cmd_true_arm,
    }
    return build(commands, __doc__.split("\n")[0].replace("``", ""))


def _stacks_on_sigusr1() -> None:
    """`kill -USR1 PID` prints every thread's stack: what a run that will not stop is doing."""
    if not hasattr(signal, "SIGUSR1"):  # Windows
        return
    try:
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    except (AttributeError, ValueError, OSError):  # stderr is no file (captured, embedded)
        pass


def main(argv: list[str] | None = None) -> int:
    code = _main(argv)
    if argv is None and "spatialgeometry" in sys.modules:
        # roboticstoolbox's scene graph (bench --peers) leaks its nanobind objects by design and
        # nanobind lists each one at interpreter exit: dozens of lines after the results. The
        # command is done and its files are written; leave without the teardown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _main(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    _stacks_on_sigusr1()
    args.argv = list(sys.argv[1:] if argv is None else argv)
    from .arm.model import RobotModelError
    from .model_dir import ModelDirError

    # what a user can mend: a bad value, a missing or busy file or port (OSError)
    refusals = (ModelDirError, RobotModelError, ValueError, OSError)
    try:
        return args.func(args)
    except BrokenPipeError:  # the reader went away (| head): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as err:
        # imported only by commands that train
        training = sys.modules.get("robot_ik_nn.learn.training")
        if isinstance(err, refusals) or (
            training is not None and isinstance(err, training.TrainingError)
        ):
            print(f"robot-ik-nn {args.command}: error: {err}", file=sys.stderr)
            return 2
        raise
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
