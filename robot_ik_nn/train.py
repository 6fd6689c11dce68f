"""Training in several processes with torchrun (see distributed.py):

    torchrun --nproc-per-node 2 -m robot_ik_nn.train --minutes 5 --out models/niryo_one
    torchrun --nnodes 2 --node-rank 0 --nproc-per-node 16 --rdzv-backend c10d \\
        --rdzv-endpoint HOST:29400 --rdzv-id run1 -m robot_ik_nn.train --out models/m ...

The options are ``robot-ik-nn train``'s (``--threads`` included).
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    from .cli import main as cli_main

    argv = list(sys.argv[1:] if argv is None else argv)
    front = []
    if "--threads" in argv:  # a global option of robot-ik-nn: it goes before the command
        i = argv.index("--threads")
        front, argv = argv[i : i + 2], argv[:i] + argv[i + 2 :]
    return cli_main([*front, "train", *argv])


if __name__ == "__main__":
    code = main()
    # the run is saved and the process group gone: leave now, without the interpreter's
    # teardown, where gloo's threads can abort a process that has finished its work (seen once
    # beside a CPU-heavy process: "terminate called without an active exception")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)
