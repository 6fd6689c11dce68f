"""``robot-ik-nn export``: a model folder packed for another machine (or as ONNX)."""

from __future__ import annotations


def cmd_export(args) -> int:
    from .. import model_dir

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



def register(sub) -> None:
    x = sub.add_parser("export", help="pack a model folder into one .tar.gz for another machine")
    x.add_argument("model")
    x.add_argument("--out", help="archive path (default <model>.tar.gz)")
    x.add_argument(
        "--onnx",
        action="store_true",
        help="write model.onnx into the model folder (no archive unless --out is given)",
    )
    x.set_defaults(func=cmd_export)
