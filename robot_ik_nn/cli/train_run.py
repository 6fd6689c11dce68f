"""How a training run runs and stops: ``train --nproc N`` launched under torchrun, and the stop
between steps (SIGTERM, a first Ctrl-C, or the launcher's stop file under torchrun), so a stopped
run saves and resumes bit for bit. The ``train`` command itself is train.py's."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

STOP_FILE = "ROBOT_IK_NN_STOP_FILE"  # train --nproc: the file that asks the workers to stop


def stop_between_steps() -> threading.Event:
    """SIGTERM and a first Ctrl-C end a run after the step in flight: saved, and resumable bit
    for bit with --resume (an interrupt inside a step would save a random state that step had
    already moved on). A second Ctrl-C interrupts at once."""
    stop = threading.Event()

    def first_ctrl_c(*_):
        stop.set()
        print("\nstopping after this step (Ctrl-C again to interrupt at once)", file=sys.stderr)
        signal.signal(signal.SIGINT, signal.default_int_handler)

    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, first_ctrl_c)
    return stop


def torchrun(words: list[str], nproc: int) -> int:
    """``train --nproc N``: the same command (``words``, as typed) in ``nproc`` processes under
    torchrun, on this machine."""
    argv, rest, command = [], iter(words), "train"
    for word in rest:  # the same words less the command and "--nproc N" (or "--nproc=N")
        if word == "--nproc":
            next(rest)
        elif word == command:
            command = None  # only the first "train" is the command
        elif not word.startswith("--nproc="):
            argv.append(word)
    run = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    run += ["--nproc-per-node", str(nproc), "-m", "robot_ik_nn.train", *argv]
    # torchrun in a session of its own (its workers have theirs): a terminal's Ctrl-C reaches
    # this process alone, which tells the workers through a file that rank 0 watches (they stop
    # between steps, save and end as a finished run does; a signal could land while a worker is
    # still importing, and torchrun answers one with a traceback)
    stop_file = Path(tempfile.mkdtemp(prefix="robot_ik_nn_stop_")) / "stop"
    env = {**os.environ, STOP_FILE: str(stop_file)}
    proc = subprocess.Popen(run, start_new_session=True, env=env)
    stopped = False
    handled = (signal.SIGTERM, signal.SIGHUP)  # as a Ctrl-C
    previous = {sig: signal.signal(sig, _interrupt) for sig in handled}
    try:
        while True:
            try:
                code = proc.wait()
                break
            except KeyboardInterrupt:
                if stopped:  # a second one: at once
                    for pid in _children(proc.pid):
                        try:
                            os.killpg(pid, signal.SIGINT)  # each worker leads its own session
                        except OSError:
                            pass
                stopped = True
                stop_file.touch()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        shutil.rmtree(stop_file.parent, ignore_errors=True)
    return 130 if stopped and code == 0 else code


def watch_stop_file(stop: threading.Event) -> None:
    """Under ``train --nproc``: set ``stop`` once the launching process creates its stop file
    (a terminal's Ctrl-C there)."""
    path = os.environ.get(STOP_FILE)
    if not path:
        return

    def watch():
        while not stop.wait(0.2):
            if os.path.exists(path):
                if os.environ.get("RANK", "0") == "0":
                    print("\nstopping after this step", file=sys.stderr)
                stop.set()

    threading.Thread(target=watch, daemon=True, name="stop file").start()


def _interrupt(*_):
    raise KeyboardInterrupt


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux's /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:  # bytes: a process name need not be UTF-8
            fields = stat.read_bytes().rsplit(b")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return found
