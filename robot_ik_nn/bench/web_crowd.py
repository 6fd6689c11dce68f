"""``bench --web``'s crowd: the exported crowd page (``export --web``'s crowd.html) in headless
chromium, N arms (100) each given a new target every frame, solved one after another from its
own last answers; the page's own clock times each frame's solves (performance.now() around
them, the drawing left out) and the page posts the timings back (bench/web_page.py).

The first WARMUP frames are left out of the figures: the arms start from mid-range, far from
their first targets, and the engine compiles the solver while they catch up.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from .web_page import WEB, WebBenchError, page_result

WARMUP = 20  # frames left out: the arms start from mid-range and the engine compiles
SECONDS_PER_FRAME = 5.0  # the wait allowed per frame (software WebGL draws 100 arms slowly)


def stale_dist(dist: Path, web: Path) -> list[str]:
    """The solver's and the pages' sources (web/src, web/pages) newer than the built crowd page
    in ``dist``: the crowd would measure older code than the checkout's."""
    built = dist / "crowd.js"
    if not built.is_file():
        return []  # write_web_folder says the pages are not built
    since = built.stat().st_mtime
    return sorted(
        str(f.relative_to(web))
        for folder in (web / "src", web / "pages")
        for f in folder.glob("*")
        if f.is_file() and f.stat().st_mtime > since
    )


def run_crowd(model, solver, arms: int = 100, frames: int = 200) -> dict:
    """The crowd page's IK time per frame (ms), median, p99 and largest over the frames after
    WARMUP, with the LM iterations of the slowest frame and the arms not solved. The page is
    the built one (web/dist, ``make web``): one older than the sources is refused."""
    from ..web.folder import default_dist, write_web_folder

    newer = stale_dist(default_dist(), WEB) if (WEB / "src").is_dir() else []
    if newer:
        raise WebBenchError(
            f"the built pages ({default_dist()}) are older than {', '.join(newer[:4])}: the "
            "crowd would measure older code; run `make web`"
        )
    with tempfile.TemporaryDirectory(prefix="robot_ik_nn_web_crowd_") as tmp:
        folder, _ = write_web_folder(model, Path(tmp) / "site", solver=solver)
        query = f"crowd.html?n={arms}&frames={frames + WARMUP}&post=/result"
        got = page_result(folder, query, SECONDS_PER_FRAME * (frames + WARMUP) + 60, "crowd")
    ms = np.asarray(got["ikMs"][WARMUP:], float)
    iterations = np.asarray(got["iterations"][WARMUP:], float)
    slowest = int(np.argmax(ms))
    return {
        "arms": arms,
        "frames": int(len(ms)),
        "warmup_frames_left_out": WARMUP,
        "ik_ms_median": float(np.median(ms)),
        "ik_ms_p99": float(np.percentile(ms, 99)),
        "ik_ms_max": float(ms.max()),
        "frames_over_8_ms": int((ms > 8).sum()),
        "iterations_median": float(np.median(iterations)),
        "iterations_of_slowest_frame": float(iterations[slowest]),
        "not_solved": int(got["notSolved"]),
        "timed_by": "the page's performance.now() around each frame's solves (coarsened to "
        "0.1 ms in a page that is not cross-origin isolated)",
        "browser": got.get("userAgent", ""),
    }


def format_crowd(crowd: dict) -> str:
    """One line for the table's notes."""
    return (
        f"- crowd page, {crowd['arms']} arms, a new target each every frame, {crowd['frames']} "
        f"frames (the first {crowd['warmup_frames_left_out']} left out): IK per frame median "
        f"{crowd['ik_ms_median']:.2f} ms, p99 {crowd['ik_ms_p99']:.2f} ms, largest "
        f"{crowd['ik_ms_max']:.2f} ms ({crowd['frames_over_8_ms']} frames over 8 ms); "
        f"{crowd['not_solved']} answers not solved in all the frames"
    )
