"""``robot-ik-nn train --view``: the page of a training run in the same process, without ROS.

    feed = TrainingFeed(LearningView(page), trainer).start()   # before trainer.run()
    path = trainer.run()
    feed.finish(path)                                           # the final word on the page

``watch(trainer, host, port, stop)`` does all of it for the command line: builds the page for
the trainer's arm (no network: the arm is only drawn), feeds it while the trainer runs, and
keeps it up once the budget is spent, until Ctrl-C or SIGTERM.

The feed's thread draws the network every ``period`` seconds (its weights copied under the
trainer's lock, between two training steps) and makes a demo attempt: a random reachable
target (forward kinematics of random joints inside the limits), the network's answer as the
arm, the target as a small frame. The trainer's metric rows (``on_metrics``, chained with any
callback already there) become the error curve. torch is imported here only once a feed is
built: the page itself (``robot-ik-nn view``) never imports it.
"""

from __future__ import annotations

import queue
import sys
import threading
import time

import numpy as np

from .learning import LearningView
from .network_drawing import draw, network_origin

NEEDS = "robot-ik-nn train --view needs viser and yourdfpy: pip install .[view]"


def view_missing() -> str | None:
    """Why the page cannot be shown (viser or yourdfpy not installed), or None."""
    try:
        import viser  # noqa: F401
        import yourdfpy  # noqa: F401
    except ImportError as err:
        return f"{NEEDS} ({err})"
    return None


def _row_message(row: dict, pose: bool) -> str:
    text = f"step {row['step']}: {row['pos_mm']:.2f} mm"
    return text + (f", {row['rot_deg']:.2f} deg" if pose and "rot_deg" in row else "")


class TrainingFeed:
    """Fills a ``LearningView`` from a ``Trainer`` running in this process. ``drawings``,
    ``attempts`` and ``rows`` count what it has shown; ``seconds`` what drawing and demos
    cost (the trainer waits for the lock only while the weights are copied and the network
    answers one target)."""

    def __init__(self, view: LearningView, trainer, period: float = 3.0, seed: int | None = None):
        import torch

        from ..arm.kinematics import Kinematics

        self.view, self.trainer, self.period = view, trainer, float(period)
        self.arm = trainer.arm
        self.origin = network_origin(self.arm.reach)
        self.kin = Kinematics(self.arm, torch.float32)
        seed = trainer.config.seed + 1 if seed is None else seed  # as the learner node's demos
        self.generator = torch.Generator().manual_seed(seed)
        self.drawings = self.attempts = self.rows = 0
        self.seconds = 0.0
        self.errors: list[str] = []  # what went wrong on the feed's thread (training goes on)
        self._rows: queue.SimpleQueue = queue.SimpleQueue()
        self._chained = trainer.on_metrics
        trainer.on_metrics = self._on_metrics
        self._stop = threading.Event()
        self._busy = threading.Lock()  # one drawing or attempt at a time (thread, finish)
        self._finished = False
        self.thread = threading.Thread(target=self._run, name="view_feed", daemon=True)

    def start(self) -> "TrainingFeed":
        self.thread.start()
        return self

    # -- from the trainer -------------------------------------------------------------------------
    def _on_metrics(self, row: dict) -> None:
        """On the trainer's thread: queued, drawn by the feed's (the step is not held up)."""
        if self._chained is not None:
            self._chained(row)
        self._rows.put(dict(row))

    def _drain(self) -> None:
        while True:
            try:
                row = self._rows.get_nowait()
            except queue.Empty:
                return
            if "step" in row and "pos_mm" in row:
                message = _row_message(row, self.trainer.config.mode == "pose")
                self.view.add_metrics(float(row["step"]), float(row["pos_mm"]), message)
                self.rows += 1

    # -- the feed's thread ------------------------------------------------------------------------
    def _run(self) -> None:
        due = time.monotonic()  # the first drawing and attempt at once: the untrained network
        while not self._stop.wait(0.2):
            with self._busy:  # rows in order, even against finish()
                self._guard(self._drain)
            if time.monotonic() >= due and not self._finished:
                self.refresh()
                due = time.monotonic() + self.period

    def _guard(self, job) -> None:
        try:
            job()
        except Exception as err:  # noqa: BLE001 - a page that fails must not stop the training
            if not self.errors:  # said once, on the terminal; training goes on
                print(f"view: the page failed ({err}); training goes on", file=sys.stderr)
            if len(self.errors) < 20:
                self.errors.append(f"{type(err).__name__}: {err}")

    def refresh(self) -> None:
        """One drawing of the network and one demo attempt, now."""
        with self._busy:
            started = time.perf_counter()
            self._guard(self.draw)
            self._guard(self.demo)
            self.seconds += time.perf_counter() - started

    def draw(self) -> None:
        from ..learn.network import weight_matrices

        with self.trainer.lock:  # between two training steps
            weights = weight_matrices(self.trainer.net)
        self.view.show_drawing(draw(weights, origin=self.origin))
        self.drawings += 1

    def demo(self) -> None:
        """The network's answer for a random reachable target, shown as the arm."""
        import torch

        from ..arm.rotations import matrix_to_quaternion, rotation_angle

        trainer = self.trainer
        pos, rot = self.kin.forward(self.kin.sample(1, self.generator))
        current = torch.as_tensor(self.view.page.q, dtype=torch.float32)[None]
        with trainer.lock, torch.no_grad():  # between two training steps
            net = trainer.net
            q = net(
                pos.to(trainer.device),
                rot.to(trainer.device) if net.config.mode == "pose" else None,
                current.to(trainer.device) if net.config.tracking else None,
            )
        q = q.reshape(-1, self.arm.dof)[:1].float().cpu()
        reached_pos, reached_rot = self.kin.forward(q)
        pos_mm = float(torch.linalg.norm(reached_pos - pos)) * 1000
        errors = f"{pos_mm:.1f} mm"
        if net.config.mode == "pose":  # in position mode any orientation will do
            errors += f", {float(rotation_angle(reached_rot, rot)[0]) * 180 / np.pi:.1f} deg"
        x, y, z, w = matrix_to_quaternion(rot)[0].tolist()
        self.attempts += 1
        self.view.show_attempt(
            q[0].double().numpy(),
            pos[0].tolist(),
            (w, x, y, z),
            f"demo attempt {self.attempts} (step {trainer.step})",
            errors,
        )

    # -- the end ----------------------------------------------------------------------------------
    def finish(self, path=None, error: BaseException | None = None) -> None:
        """The trainer is done: the last rows and drawing, and what became of the run."""
        self._finished = True  # the weights change no more: no new drawings or attempts
        with self._busy:
            self._guard(self._drain)
            self._guard(self.draw)
        if error is not None:
            message = f"training failed: {error}"
        else:
            message = f"finished: model saved to {path}" + (
                " (stopped early)" if getattr(self.trainer, "interrupted", False) else ""
            )
        self._guard(lambda: self.view.set_status(message))

    def close(self) -> None:
        self._stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=10)
        if self.trainer.on_metrics == self._on_metrics:
            self.trainer.on_metrics = self._chained


def build_page(arm, host: str = "127.0.0.1", port: int = 8080, title: str = ""):
    """The page for ``arm`` with no network behind it (the trainer's network is shown by the
    feed, not asked by the handle)."""
    from ..ik.settings import IKSettings
    from ..ik.solver import Solver
    from .page import ArmPage

    return ArmPage(Solver(arm, None, IKSettings()), host=host, port=port, title=title)


def watch(trainer, *, host: str = "127.0.0.1", port: int = 8080, stop=None, period: float = 3.0):
    """``train --view``: runs ``trainer`` with its page; returns the model folder. Once the
    budget is spent the page stays up until Ctrl-C or ``stop`` (SIGTERM); a run stopped early
    (Ctrl-C, SIGTERM) closes it at once."""
    stop = stop if stop is not None else trainer.stop
    page = build_page(trainer.arm, host, port, f"{trainer.arm.name}: training")
    feed = None
    try:
        view = LearningView(page, "the network", waiting="waiting for the first metrics")
        feed = TrainingFeed(view, trainer, period).start()
        print(f"view ready: http://{host}:{page.port}", flush=True)
        try:
            path = trainer.run()
        except BaseException as err:
            feed.finish(error=err)
            raise
        feed.finish(path)
        if not trainer.interrupted:
            print(
                f"view: training finished, model saved to {path}; the page stays up at "
                f"http://{host}:{page.port} until Ctrl-C",
                flush=True,
            )
            try:
                while not stop.wait(0.5):
                    pass
            except KeyboardInterrupt:
                pass
        return path
    finally:
        if feed is not None:
            feed.close()
        page.close()
