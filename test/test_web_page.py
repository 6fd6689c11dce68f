"""The exported web folder (``robot-ik-nn export MODEL --web DIR``) in headless chromium, served
from localhost by a Python http.server: the page loads with nothing else reachable and asks for
nothing else, the arm is drawn, the page's answers are judged by PyBullet's forward kinematics
(test/fk_oracle.py) on targets the test makes from random joints, the crowd page runs, and a
missing, truncated or foreign model file gets a message in the page, which stays responsive.

Needs the pages built (make web, or cd web && npm ci && npm run build) and chromium: without
either, these tests skip and say why (the two that write the folder's parts alone need neither).
"""

import functools
import io
import json
import re
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pybullet as pb
import pytest
from browser_helpers import Browser
from fk_oracle import BulletFK, matrix_to_quat, rotation_angle

POS_TOL, ROT_TOL = 1e-3, 0.01  # m, rad: the verdict asked of every answer
TARGETS = 240
# names of XML namespaces (document.createElementNS): identifiers a browser never requests
NAMESPACES = {"http://www.w3.org/1999/xhtml", "http://www.w3.org/2000/svg"}
URL = re.compile(r"https?://[^\s\"'`)<>\\]+")


def chromium_test(f):
    """The tests that export a model and open chromium (out of make test-fast)."""
    return pytest.mark.browser(pytest.mark.slow(f))


class RecordingBrowser(Browser):
    """The suite's Browser keeping the DevTools events that arrive (the network's requests)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.events = []

    def requested(self) -> list[str]:
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e["method"] == "Network.requestWillBeSent"
        ]


@pytest.fixture(scope="module")
def site(niryo_model, tmp_path_factory):
    """The small Niryo One model exported with --web, as the command line does it."""
    from robot_ik_nn.cli import main
    from robot_ik_nn.web.folder import PAGES, default_dist

    dist = default_dist()
    if not all((dist / name).is_file() for name in PAGES):
        pytest.skip(f"the web pages are not built in {dist}: make web (needs node and npm)")
    out = tmp_path_factory.mktemp("web") / "site"
    assert main(["export", str(niryo_model), "--web", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def server(site):
    """The folder's parent served on 127.0.0.1 (site/ and the broken copies beside it)."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(site.parent))
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    with RecordingBrowser.start(width=1000, height=640) as b:
        b.call("Network.enable")
        b.call("Network.setCacheDisabled", cacheDisabled=True)
        yield b


def open_page(browser, url, ready="window.__ik"):
    browser.events = []
    browser.open(url)
    return browser.wait_for(
        f"{ready} && ({ready}.ready || {ready}.error) && JSON.stringify({ready}.error)", 120
    )


def pixels(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float)


def test_meshes_the_urdf_names_are_copied_and_renamed_for_the_page(tmp_path):
    from robot_ik_nn.web.folder import copy_meshes

    (tmp_path / "pkg" / "urdf").mkdir(parents=True)
    (tmp_path / "pkg" / "meshes").mkdir()
    (tmp_path / "pkg" / "meshes" / "link.stl").write_bytes(b"solid link\nendsolid link\n")
    urdf = (
        '<robot name="r"><link name="a"><visual><geometry>'
        '<mesh filename="package://pkg/meshes/link.stl" scale="1 1 1"/></geometry></visual>'
        '<visual><geometry><mesh scale="1 1 1" filename="package://pkg/meshes/gone.stl"/>'
        "</geometry></visual></link></robot>"
    )
    out = tmp_path / "site"
    out.mkdir()
    text, missing = copy_meshes(urdf, [str(tmp_path / "pkg" / "urdf")], out)
    assert missing == ["package://pkg/meshes/gone.stl"]
    names = re.findall(r'filename="([^"]*)"', text)
    assert names[1] == "package://pkg/meshes/gone.stl"  # left as it was
    assert not names[0].startswith(("package:", "/")), names[0]  # relative to the page
    assert (out / names[0]).read_bytes() == b"solid link\nendsolid link\n"


def test_export_without_built_pages_says_how_to_build_them(tmp_path):
    from robot_ik_nn.web.folder import WebFolderError, write_web_folder

    with pytest.raises(WebFolderError, match="make web"):
        write_web_folder("unused", tmp_path / "site", dist=tmp_path / "no_dist")
    assert not (tmp_path / "site").exists()


@chromium_test
def test_export_refuses_a_folder_there_unless_forced(site, niryo_model, capsys):
    from robot_ik_nn.cli import main

    assert main(["export", str(niryo_model), "--web", str(site)]) == 2
    assert "exists already" in capsys.readouterr().err
    assert main(["export", str(niryo_model), "--web", str(site), "--force"]) == 0
    assert not [p for p in site.parent.iterdir() if p.name.startswith(".site.")]  # no leftovers
    text = (site / "model.web.json").read_text()
    assert json.loads(text)["format"] == "robot_ik_nn.web/1"


@chromium_test
def test_page_loads_from_localhost_alone_and_draws_the_arm(site, server, browser):
    # what the page could fetch, read in the folder: no URL but XML namespaces' names
    for path in site.iterdir():
        if path.suffix in (".js", ".html", ".css"):
            found = set(URL.findall(path.read_text(errors="replace"))) - NAMESPACES
            assert not found, f"{path.name} names {sorted(found)[:5]}"
    assert open_page(browser, f"{server}/site/index.html") == "null"
    requested = browser.requested()
    assert any(u.endswith("/site/model.web.json") for u in requested), requested
    elsewhere = [u for u in requested if not u.startswith((server, "data:", "blob:"))]
    assert not elsewhere, f"the page asked for {elsewhere}"

    frame = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
    browser.eval(frame)
    shown = pixels(browser.screenshot())
    view = shown[:, 400:]  # right of the panel: the 3-D view
    assert view.std() > 5, "the 3-D view is blank"
    browser.eval(f"window.__ik.arm.visible = false, {frame}")
    hidden = pixels(browser.screenshot())
    browser.eval(f"window.__ik.arm.visible = true, {frame}")
    changed = np.abs(shown - hidden).sum(axis=2) > 30
    assert changed.mean() > 0.003, f"the arm covers {changed.mean():.4%} of the page"
    assert browser.eval("document.getElementById('error').hidden") is True


@chromium_test
def test_page_answers_are_within_tolerance_by_pybullet(niryo_model, site, server, browser):
    """Targets from random joints within the URDF's limits as PyBullet reads them; the page's
    joints put back through PyBullet's FK."""
    meta = json.loads((niryo_model / "model.json").read_text())
    assert open_page(browser, f"{server}/site/index.html") == "null"
    rng = np.random.default_rng(42)
    with BulletFK(site / "robot.urdf", meta["base"], meta["tip"], meta["joint_names"]) as oracle:
        info = [pb.getJointInfo(oracle.body, i, physicsClientId=oracle.client)
                for i in oracle.joints]
        lower = np.array([i[8] for i in info])
        upper = np.array([i[9] for i in info])
        Q = rng.uniform(lower, upper, size=(TARGETS, len(lower)))
        poses = [oracle.fk(q) for q in Q]
        targets = [[p.tolist(), matrix_to_quat(R).tolist()] for p, R in poses]
        answers = []
        for start in range(0, TARGETS, 40):
            batch = json.dumps(targets[start:start + 40])
            answers += json.loads(browser.eval(
                f"JSON.stringify({batch}.map(([p, q]) => window.__ik.solveAt(p, q)))", 300
            ))
        statuses = [a["status"] for a in answers]
        solved = 0
        for (p, R), a in zip(poses, answers):
            if a["status"] == "rejected":
                continue
            q = np.array(a["q"])
            assert np.all(q >= lower - 1e-9) and np.all(q <= upper + 1e-9), q
            got_p, got_R = oracle.fk(q)
            pos_err = np.linalg.norm(got_p - p)
            rot_err = rotation_angle(got_R, R)
            if a["status"] == "solved":  # the page's verdict, checked by PyBullet
                assert pos_err <= POS_TOL and rot_err <= ROT_TOL, (a, pos_err, rot_err)
                solved += 1
    assert len(answers) == TARGETS
    assert solved >= 0.99 * TARGETS, statuses


@chromium_test
def test_crowd_page_runs_100_arms_and_times_each_frame(site, server, browser):
    assert open_page(browser, f"{server}/site/crowd.html", "window.__crowd") == "null"
    browser.wait_for("window.__crowd.frames >= 60 || window.__crowd.error", 600)
    crowd = browser.eval("JSON.stringify(window.__crowd)")
    crowd = json.loads(crowd)
    assert crowd["error"] is None
    assert crowd["n"] == 100
    ik = np.array(crowd["ikMs"])
    assert len(ik) >= 60 and np.all(np.isfinite(ik)) and np.all(ik > 0), ik
    # each arm's targets are reachable (the tool's pose at joints within the limits)
    assert crowd["notSolved"] <= 0.01 * 100 * crowd["frames"], crowd["notSolved"]
    assert "median" in browser.eval("document.getElementById('summary').textContent")


def _broken(site: Path, kind: str) -> Path:
    """A copy of the folder whose model.web.json is missing, truncated or another file."""
    bad = site.parent / f"bad_{kind}"
    shutil.rmtree(bad, ignore_errors=True)
    shutil.copytree(site, bad)
    model = bad / "model.web.json"
    if kind == "missing":
        model.unlink()
    elif kind == "truncated":
        text = model.read_text()
        model.write_text(text[: len(text) * 2 // 3])
    elif kind == "foreign":  # a JSON file of another kind: the model folder's model.json
        model.write_text(json.dumps({"format": 1, "robot": "niryo_one", "joints": []}))
    return bad


@pytest.mark.parametrize(
    "kind, words",
    [
        ("missing", ["model.web.json", "404"]),
        ("truncated", ["model.web.json", "truncated"]),
        ("foreign", ["model.web.json", "not a robot_ik_nn web model"]),
    ],
)
@pytest.mark.parametrize("page, state", [("index.html", "__ik"), ("crowd.html", "__crowd")])
@chromium_test
def test_a_bad_model_file_is_named_in_the_page(site, server, browser, kind, words, page, state):
    bad = _broken(site, kind)
    error = open_page(browser, f"{server}/{bad.name}/{page}", f"window.{state}")
    assert error != "null"
    shown = browser.eval(
        "(() => { const e = document.getElementById('error');"
        " return e.hidden ? null : e.textContent; })()"
    )
    assert shown is not None, "no message in the page"
    for word in words:
        assert word in shown, shown
    # not frozen: the page still runs scripts
    assert browser.eval("new Promise(r => setTimeout(() => r(6 * 7), 10))", timeout=10) == 42
    assert browser.eval(f"window.{state}.ready") is False
