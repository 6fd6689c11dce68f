"""A model as a static web folder (``robot-ik-nn export MODEL --web DIR``): the pages built in
``web/dist`` (the arm to drag, the crowd of arms; three.js, urdf-loader and the JavaScript
solver bundled), ``model.web.json``, the arm's ``robot.urdf`` with the meshes it names copied
into ``meshes/``, and a README.txt that says how to serve it. Any static file server will do;
the pages fetch nothing but these files.

    write_web_folder("models/niryo_one", "site")          # then: cd site && python3 -m http.server

Written into a temporary sibling of DIR, then renamed into place: a folder there is either the
old one or the whole new one.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from ..arm.resources import find_mesh
from .model import FILE, write_web_model

# what the pages need of web/dist (build.mjs writes them; a chunk file holds what both share)
PAGES = ("index.html", "app.js", "crowd.html", "crowd.js", "style.css")
URDF = "robot.urdf"
MESHES = "meshes"
BUILD_HINT = "run `make web`, or `cd web && npm ci && npm run build`"
_MESH = re.compile(r'(<mesh\b[^>]*?\bfilename\s*=\s*)(["\'])(.*?)\2', re.S)

README = """\
{robot}: robot_ik_nn's IK solver in a web page, no server behind it.

  index.html   the arm: drag the target (t moves it, r turns it), the answer, its status
               and solve time
  crowd.html   N arms (?n=, default 100) each following its own target every frame, and the
               IK time of each frame

Serve this folder from any static file server and open the page, e.g.

  cd {folder} && python3 -m http.server 8000      # then http://localhost:8000/

(a page opened as a file:// address cannot fetch model.web.json). Nothing is fetched from
elsewhere: three.js, urdf-loader and the solver are bundled in the .js files.
{meshes}"""


class WebFolderError(ValueError):
    """The web folder cannot be written: the pages are not built, or DIR is taken."""


def default_dist() -> Path:
    """Where the pages are built: $ROBOT_IK_NN_WEB_DIST, or the repository's web/dist."""
    given = os.environ.get("ROBOT_IK_NN_WEB_DIST")
    return Path(given) if given else Path(__file__).resolve().parents[2] / "web" / "dist"


def check_dist(dist: Path) -> None:
    missing = [name for name in PAGES if not (dist / name).is_file()]
    if missing:
        raise WebFolderError(
            f"the web pages are not built ({dist} lacks {', '.join(missing)}): {BUILD_HINT}"
        )


def copy_meshes(urdf_text: str, mesh_dirs, out: Path) -> tuple[str, list[str]]:
    """The URDF text with each mesh it names copied into ``out/meshes`` and named there
    (relative to the page); the names that could not be found are returned, left as they were."""
    copied: dict[Path, str] = {}
    missing: list[str] = []

    def put(match):
        name = match.group(3)
        found = find_mesh(name, mesh_dirs)
        if found is None:
            missing.append(name)
            return match.group(0)
        if found not in copied:
            (out / MESHES).mkdir(exist_ok=True)
            copied[found] = f"{MESHES}/{len(copied)}_{found.name}"
            shutil.copy2(found, out / copied[found])
        return f"{match.group(1)}{match.group(2)}{copied[found]}{match.group(2)}"

    return _MESH.sub(put, urdf_text), missing


def write_web_folder(
    model, out, *, force: bool = False, dist: Path | None = None, solver=None
) -> tuple[Path, list[str]]:
    """Writes the web folder of ``model`` (a model folder or .tar.gz) to ``out``; returns its
    path and the mesh names that could not be found. ``force``: replaces a folder already
    there; ``solver``: the loaded solver, if the caller has one."""
    out = Path(out)
    dist = default_dist() if dist is None else Path(dist)
    check_dist(dist)
    if out.exists() and not force:
        raise WebFolderError(f"{out} exists already: choose another folder, or pass --force")
    if out.exists() and not out.is_dir():
        raise WebFolderError(f"{out} is a file, not a folder: the web folder would replace it")
    if solver is None:
        from ..ik.solver import Solver

        solver = Solver.load(model)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for item in dist.iterdir():
            if item.is_file():
                shutil.copy2(item, tmp / item.name)
        write_web_model(solver, tmp / FILE)
        urdf, missing = copy_meshes(solver.arm.urdf_text, list(solver.arm.mesh_dirs), tmp)
        (tmp / URDF).write_text(urdf)
        note = (
            f"\nThe meshes robot.urdf names but were not found when exporting (those links are "
            f"drawn without them): {', '.join(missing)}\n"
            if missing
            else ""
        )
        (tmp / "README.txt").write_text(
            README.format(robot=solver.arm.name or "the arm", folder=out.name, meshes=note)
        )
        tmp.chmod(0o755)
        old = None
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.replace(out, old / out.name)
        try:
            os.replace(tmp, out)
        except OSError:
            if old is not None:  # the old folder back where it was
                os.replace(old / out.name, out)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out, missing
