"""A page in headless chromium that posts its result back: ``bench --web``'s harness page and
its crowd page are opened from a folder served on localhost, and each POSTs its JSON to
/result when done (or ``{"error": ...}``), which :func:`page_result` waits for.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

WEB = Path(__file__).resolve().parents[2] / "web"  # the web/ folder of a source checkout
CHROMIUM_FLAGS = (
    "--headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking "
    "--disable-component-update --disable-sync --disable-background-timer-throttling "
    "--disable-renderer-backgrounding"
).split()

class WebBenchError(RuntimeError):
    """The web bench cannot run here (no node, no chromium, no web/node_modules) or its
    harness failed."""


def chromium_path() -> str:
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    raise WebBenchError("no chromium: apt-get install -y chromium, or set CHROMIUM=/path")


class _Handler(SimpleHTTPRequestHandler):
    """The folder's files; POST /result: the page's JSON, handed to ``received``."""

    received = None  # set per server (partial)

    def do_POST(self):  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        self.send_response(204 if self.path.startswith("/result") else 404)
        self.end_headers()
        if self.path.startswith("/result"):
            self.server.result = body
            self.server.arrived.set()

    def log_message(self, *args):  # quiet
        pass


def page_result(folder: Path, query: str, limit: float, what: str) -> dict:
    """Open ``query`` (a page of ``folder``, served on localhost) in headless chromium and wait,
    at most ``limit`` s, for the JSON the page POSTs to /result; a page that posts an error, or
    a browser that exits, ends it with a WebBenchError naming ``what``."""
    exe = chromium_path()
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, directory=str(folder)))
    server.result, server.arrived = None, threading.Event()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{query}"
    profile = tempfile.mkdtemp(prefix="robot_ik_nn_web_bench_")
    log = open(folder / "chromium.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", url],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        waited = 0.0
        while not server.arrived.wait(1.0):
            waited += 1.0
            if proc.poll() is not None:
                said = (folder / "chromium.log").read_text(errors="replace")[-1500:]
                raise WebBenchError(f"chromium exited ({proc.returncode}) early: {said}")
            if waited > limit:
                raise WebBenchError(f"the {what} page ran past {limit:.0f} s")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # the browser and the processes it started
            proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        log.close()
        server.shutdown()
        server.server_close()
        shutil.rmtree(profile, ignore_errors=True)
    result = json.loads(server.result)
    if "error" in result:
        raise WebBenchError(f"the {what} page failed: {result['error']}")
    return result
