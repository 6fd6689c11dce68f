"""``robot-ik-nn export``: a model folder packed for another machine (or as ONNX, or as a static
web folder: the pages, the JavaScript solver's model file and the arm)."""

from __future__ import annotations


def cmd_export(args) -> int:
    from .. import model_dir

    if args.force and not args.web:
        raise ValueError("--force replaces a web folder: it goes with --web DIR")
    if args.onnx:
        path = model_dir.export_onnx(args.model)
        print(
            f"wrote {path} (serve it with backend onnx: robot-ik-nn solve {args.model} "
            "--backend onnx ...)"
        )
    if args.web:
        from ..web.folder import write_web_folder

        out, missing = write_web_folder(args.model, args.web, force=args.force)
        print(
            f"wrote the web folder {out} (serve it: cd {out} && python3 -m http.server 8000, "
            "then open http://localhost:8000/; crowd.html: many arms)"
        )
        if missing:
            print(f"meshes not found (those links are drawn without them): {', '.join(missing)}")
    if (args.onnx or args.web) and not args.out:
        return 0
    out = model_dir.export(args.model, args.out)
    print(
        f"exported {args.model} to {out} (load it anywhere: robot-ik-nn eval {out}, or "
        f"model_dir:={out} for the inference node)"
    )
    return 0


def register(sub) -> None:
    x = sub.add_parser(
        "export",
        help="pack a model folder into one .tar.gz for another machine (or ONNX, or a web page)",
    )
    x.add_argument("model")
    x.add_argument("--out", help="archive path (default <model>.tar.gz)")
    x.add_argument(
        "--onnx",
        action="store_true",
        help="write model.onnx into the model folder (no archive unless --out is given)",
    )
    x.add_argument(
        "--web",
        metavar="DIR",
        help="write a static web folder: the arm to drag and a crowd of arms, solved in the "
        "page (needs the pages built: make web); serve it with python3 -m http.server "
        "(no archive unless --out is given)",
    )
    x.add_argument(
        "--force", action="store_true", help="with --web: replace DIR if it exists"
    )
    x.set_defaults(func=cmd_export)
