"""A headless Chromium driven over its DevTools protocol (a websocket), for the page tests.

with Browser.start() as browser:             # skips the test when no chromium is installed
    browser.open("http://127.0.0.1:8080")
    browser.eval("document.title")
    png = browser.screenshot()
"""

from __future__ import annotations

import atexit
import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

INSTALL = "apt-get install -y chromium (Debian/Ubuntu), or set CHROMIUM=/path/to/chrome"


def chromium_path() -> str | None:
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class Browser:
    def __init__(self, proc, profile, ws):
        self.proc, self.profile, self.ws = proc, profile, ws
        self.ids = itertools.count(1)
        self.events = None  # a list keeps the DevTools events that arrive (None: dropped)
        atexit.register(self.close)  # a test that dies midway leaves no browser running

    @classmethod
    def start(cls, width: int = 1280, height: int = 800, timeout: float = 60.0) -> "Browser":
        exe = chromium_path()
        if exe is None:
            pytest.skip(f"no chromium to open the page in: {INSTALL}")
        try:
            from websockets.sync.client import connect
        except ImportError:
            pytest.skip("the websockets package (a viser dependency) is not installed")
        profile = tempfile.mkdtemp(prefix="robot_ik_nn_chromium_")
        proc = subprocess.Popen(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--use-gl=swiftshader",
                "--enable-unsafe-swiftshader",
                "--ignore-gpu-blocklist",
                "--disable-background-timer-throttling",
                "--disable-renderer-backgrounding",
                "--no-first-run",
                "--disable-gpu-vsync",
                "--disable-frame-rate-limit",
                f"--window-size={width},{height}",
                "--remote-debugging-port=0",
                "--remote-allow-origins=*",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not port_file.is_file() or len(port_file.read_text().split()) < 2:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError(f"chromium did not open its DevTools port ({exe})")
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            pages = [t for t in json.load(r) if t["type"] == "page"]
        ws = connect(pages[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=timeout)
        return cls(proc, profile, ws)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        if self.proc.poll() is not None:
            return
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            shutil.rmtree(self.profile, ignore_errors=True)

    # -- the protocol -----------------------------------------------------------------------------
    def call(self, method: str, timeout: float = 60.0, **params):
        """One DevTools command and its result (events that arrive meanwhile are kept in
        ``events`` when it is a list, else dropped)."""
        mid = next(self.ids)
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{method}: no answer in {timeout} s")
            reply = json.loads(self.ws.recv(timeout=left))
            if reply.get("id") == mid:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            if self.events is not None and "method" in reply:
                self.events.append(reply)

    def open(self, url: str) -> None:
        self.call("Page.enable")
        self.call("Page.navigate", url=url)

    def eval(self, expression: str, timeout: float = 60.0):
        """A JavaScript expression's value (promises awaited), as JSON."""
        result = self.call(
            "Runtime.evaluate",
            timeout=timeout,
            expression=expression,
            awaitPromise=True,
            returnByValue=True,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 60.0):
        """Polls a JavaScript expression until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.1)
        raise TimeoutError(f"still false after {timeout} s: {expression}")

    def type_text(self, text: str) -> None:
        self.call("Input.insertText", text=text)

    def key(self, key: str, code: str | None = None, key_code: int = 0) -> None:
        for kind in ("keyDown", "keyUp"):
            self.call(
                "Input.dispatchKeyEvent",
                type=kind,
                key=key,
                code=code or key,
                windowsVirtualKeyCode=key_code,
            )

    def mouse(self, kind: str, x: float, y: float, buttons: int = 1) -> None:
        self.call(
            "Input.dispatchMouseEvent",
            type=kind,
            x=x,
            y=y,
            button="left",
            buttons=buttons,
            clickCount=1,
        )

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
