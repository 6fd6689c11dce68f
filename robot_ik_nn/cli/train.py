"""The command line's training words: ``train`` (one process, or several under torchrun) and
``merge``. How a run is launched under torchrun and stopped between steps (so a stopped run
resumes bit for bit) is train_run.py's."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import model_dir
from ..arg_types import count, port, positive
from ..arm.model import ArmModel
from ..learn.learners import LEARNERS
from .common import use_threads
from .solve import cmd_eval
from .train_run import stop_between_steps, torchrun, watch_stop_file


def cmd_train(args) -> int:
    from ..learn.distributed import cpu_threads, world_from_env

    if args.nproc and args.nproc > 1 and world_from_env()[1] == 1:
        _check_before_workers(args)  # one plain message here, not one per worker under torchrun
        return torchrun(args.argv, args.nproc)
    world = world_from_env()[1]
    use_threads(args.threads or (cpu_threads() if world > 1 else None), torch=True)
    from ..learn.training import Trainer

    config = _config(args)
    if args.view:  # refused before any training, not after
        from ..view.training import view_missing

        missing = view_missing()
        if missing:
            print(f"robot-ik-nn train: {missing}", file=sys.stderr)
            return 1
    stop = stop_between_steps()
    watch_stop_file(stop)
    trainer = Trainer(
        config, resume=args.resume, force=args.force, progress=not args.quiet, stop=stop
    )
    if args.view and not trainer.rank:  # one page, rank 0's
        from ..view.training import watch

        path = watch(trainer, host=args.view_host, port=args.view_port, stop=stop)
    else:
        path = trainer.run()
    if trainer.rank:
        return 0
    if not trainer.saved:
        print(f"stopped before the first step: nothing saved ({path} keeps what it held)")
    else:
        print(
            f"model saved to {path}"
            + (" (stopped early; resume with --resume)" if trainer.interrupted else "")
        )
    if trainer.interrupted:  # under torchrun the launching process says so (an exit code other
        return 130 if world == 1 else 0  # than 0 here would make torchrun print a traceback)
    if args.eval:
        return cmd_eval(
            argparse.Namespace(
                model=str(path),
                targets=args.eval,
                seed=12345,
                json=False,
                device=args.device if args.device.startswith("cuda") else "cpu",
                batch=None,
                threads=args.threads,
            )
        )
    return 0


def cmd_merge(args) -> int:
    use_threads(args.threads, torch=True)
    from ..learn.merge import merge

    stop = stop_between_steps()
    trainer = merge(
        args.models,
        args.out,
        minutes=_minutes(args, 3.0),
        steps=args.steps,
        seed=args.seed,
        fresh=args.fresh,
        learn=_learn(args),
        force=args.force,
        resume=args.resume,
        progress=not args.quiet,
        stop=stop,
    )
    if not trainer.saved:
        print(f"stopped before the first step: nothing saved ({args.out} keeps what it held)")
    else:
        print(
            f"merged {len(args.models)} networks into {args.out}"
            + (
                " (stopped early: the merge so far is saved; continue it with --resume)"
                if trainer.interrupted
                else ""
            )
        )
    return 130 if trainer.interrupted else 0


def _config(args):
    """The training run the command line asks for (refusing what TrainConfig refuses)."""
    from ..learn.training import TrainConfig

    return TrainConfig(
        robot=args.robot,
        base=args.base,
        tip=args.tip,
        mode=args.mode,
        learner=args.learner,
        minutes=_minutes(args, 5.0),
        steps=args.steps,
        device=args.device,
        out=_out(args),
        seed=args.seed,
        hidden=args.hidden,
        heads=args.heads,
        tracking=args.tracking,
        checkpoint_every=args.checkpoint_every,
        learn=_learn(args),
        init=args.init,
        region=args.region,
    )


def _check_before_workers(args) -> None:
    """What ``train --nproc N`` would refuse in each worker, refused once, before any starts."""
    from ..learn.distributed import check_parallel
    from ..learn.run_state import TrainingError, begin, check, resumed_learn

    config = _config(args)
    check_parallel(args.learner)
    arm = ArmModel.load(args.robot, base=args.base, tip=args.tip)
    out = Path(config.out)
    kind, state = begin(out, args.resume, args.force, "cpu")  # reads, writes nothing
    if kind == "error":
        raise TrainingError(state)
    if kind == "load":  # the checkpoint's arm, shape and learner settings, as a worker checks
        saved = json.loads(state["config"])
        check(out, state, saved, arm.fingerprint, config)
        resumed_learn(saved, config.learn)
    elif args.init:
        model_dir.read(args.init)  # a missing or unreadable starting model


def _learn(args):
    """The learner's settings from ``--learn KEY=VALUE`` and the options that set one of them."""
    from ..learn.learners import LearnConfig

    learn = LearnConfig().update(args.learn)
    if getattr(args, "batch_size", None) is not None:
        learn.set("batch_size", str(args.batch_size))
    if getattr(args, "novelty", None) is not None:
        learn.set("novelty", str(args.novelty))
    return learn


def _minutes(args, default: float):
    """The time budget: ``--minutes`` as given (0 is refused, not the default), none with
    ``--steps`` alone, else ``default``."""
    if args.minutes is not None:
        if not args.minutes > 0:
            raise ValueError(f"--minutes must be more than 0, got {args.minutes:g}")
        return args.minutes
    return None if args.steps else default


def _out(args) -> str:
    return args.out or f"models/{_stem(args.robot)}"


def _stem(robot: str) -> str:
    return Path(robot).stem if robot.endswith(".urdf") else robot


def register(sub) -> None:
    t = sub.add_parser("train", help="train an IK network by reward")
    t.add_argument(
        "--robot",
        default="niryo_one",
        help="niryo_one, inmoov_right_arm, franka_panda, kuka_iiwa or a URDF path",
    )
    t.add_argument("--base", help="base link (default: the URDF's root)")
    t.add_argument(
        "--tip", help="tip link (default: the only leaf; required when the tree branches)"
    )
    t.add_argument(
        "--mode",
        choices=["pose", "position"],
        default="pose",
        help="targets with an orientation (pose) or positions alone",
    )
    t.add_argument(
        "--learner",
        choices=LEARNERS,
        default="gradient",
        help="how the network learns by reward (README: Learners)",
    )
    t.add_argument("--minutes", type=positive, help="time budget (default 5)")
    t.add_argument("--steps", type=count, help="step budget (reproducible with --seed)")
    t.add_argument("--device", default="cpu", help="cpu or cuda")
    t.add_argument("--out", help="model folder (default models/<robot>)")
    t.add_argument(
        "--resume", action="store_true", help="continue the run in --out from its checkpoint"
    )
    t.add_argument("--force", action="store_true", help="start over even if --out holds a run")
    t.add_argument("--seed", type=int, default=0, help="random seed (targets, weights, trials)")
    t.add_argument(
        "--hidden",
        type=count,
        nargs="+",
        default=None,
        help="hidden layer widths (default 128 128; evolution: 32 32)",
    )
    t.add_argument(
        "--heads",
        type=count,
        default=None,
        help="candidate branches the network proposes per target (default 4; explore and "
        "evolution: 1)",
    )
    t.add_argument("--batch-size", type=count, help="targets per step (default: the learner's)")
    t.add_argument(
        "--learn",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="learner hyper-parameters (LearnConfig), e.g. population=128 sigma=0.03",
    )
    t.add_argument(
        "--novelty", type=float, help="evolution: weight of novelty search (default 0: off)"
    )
    t.add_argument("--init", metavar="MODEL_DIR", help="start from this model's weights")
    t.add_argument(
        "--nproc", type=count, help="train in N processes (torchrun, DistributedDataParallel)"
    )
    t.add_argument(
        "--region",
        nargs="+",
        metavar="COND",
        help="keep training targets inside bounds, e.g. --region 'y>0' 'z<0.4' (metres)",
    )
    t.add_argument(
        "--tracking", action="store_true", help="also feed the current joints to the network"
    )
    t.add_argument(
        "--checkpoint-every", type=positive, default=30.0, help="seconds between checkpoints"
    )
    t.add_argument(
        "--eval",
        type=count,
        nargs="?",
        const=10000,
        metavar="N",
        help="evaluate on N held-out targets when training ends",
    )
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.add_argument(
        "--view",
        action="store_true",
        help="watch it learn in the browser (no ROS): the demo attempts as the arm, the error "
        "curve, the network drawn; the page stays up after training until Ctrl-C (needs "
        "pip install .[view])",
    )
    t.add_argument("--view-port", type=port, default=8080, help="the page's port with --view")
    t.add_argument(
        "--view-host", default="127.0.0.1", help="with --view: 0.0.0.0 opens it to the network"
    )
    t.set_defaults(func=cmd_train)

    m = sub.add_parser("merge", help="merge model folders of one arm into one network")
    m.add_argument("models", nargs="+", metavar="MODEL", help="two or more model folders")
    m.add_argument("--out", required=True, help="the merged model folder")
    m.add_argument("--minutes", type=positive, help="time budget (default 3)")
    m.add_argument("--steps", type=count, help="step budget")
    m.add_argument("--seed", type=int, default=0, help="random seed")
    m.add_argument("--fresh", action="store_true", help="start from nothing, not the best")
    m.add_argument(
        "--learn",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="learner hyper-parameters (LearnConfig), as for train",
    )
    m.add_argument("--force", action="store_true", help="overwrite a run in --out")
    m.add_argument("--resume", action="store_true", help="continue the merge in --out")
    m.add_argument("--quiet", action="store_true", help="no progress bar")
    m.set_defaults(func=cmd_merge)
