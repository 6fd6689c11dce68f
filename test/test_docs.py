"""The documentation: the README stays a newcomer's page (short, no history), its links lead
somewhere, and docs/ builds as `make docs` builds it, with every warning an error (a broken link,
a page left out of the index, a docstring autodoc cannot read)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_the_readme_is_short_and_holds_no_history():
    assert len(README.splitlines()) <= 300
    assert not re.findall(r"\b20\d\d-\d\d-\d\d\b", README), "dates belong in CHANGELOG.rst"
    hashes = [h for h in re.findall(r"\b[0-9a-f]{7,40}\b", README) if re.search(r"[a-f]", h)
              and re.search(r"\d", h)]
    assert not hashes, f"commit hashes belong in CHANGELOG.rst or benchmarks/: {hashes}"


def test_the_readme_links_to_files_that_exist():
    optional = {"docs/calibration.md", "docs/moveit.md", "docs/ros2.md"}  # others' pages
    for target in re.findall(r"\]\(([^)#\s]+)", README):
        if target.startswith("http") or target in optional:
            continue
        assert (ROOT / target).exists(), f"the README links to {target}, which is not there"


def test_the_files_the_readme_commands_name_are_shipped():
    """A newcomer copies the quickstart's commands: every example file they read is in the
    repository (not the model folders they write, nor the measurements of their own arm)."""
    named = set(re.findall(r"--path\s+(\S+)", README))
    named |= set(re.findall(r"\b((?:examples|config|urdf|launch)/[\w./-]+\.\w+)", README))
    assert named, "the pattern found no file in the README's commands"
    for name in named:
        assert (ROOT / name).is_file(), f"the README's commands read {name}, which is not shipped"


def test_the_readme_names_every_extra_of_setup_py():
    extras = re.search(r"extras_require=\{(.*?)\n    \},", (ROOT / "setup.py").read_text(), re.S)
    for name in re.findall(r'^        "(\w+)": ', extras.group(1), re.M):
        if name != "test":
            assert f"pip install .[{name}]" in README, f"the install table lacks .[{name}]"


@pytest.mark.slow
def test_the_docs_build_with_warnings_as_errors(tmp_path):
    # a failure, not a skip: make test installs the [docs] extra
    assert subprocess.run([sys.executable, "-c", "import sphinx, myst_parser, sphinx_rtd_theme"],
                          capture_output=True).returncode == 0, "pip install .[docs]"
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(ROOT / "docs"), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    pages = {p.stem for p in (tmp_path / "html").glob("*.html")}
    mine = {p.stem for p in (ROOT / "docs").glob("*.md")}
    assert mine <= pages, mine - pages
    api = (tmp_path / "html" / "api.html").read_text()
    for name in ("robot_ik_nn.load", "robot_ik_nn.for_arm", "Solver.solve_batch", "IKSettings"):
        assert name in api, f"the API reference lacks {name}"
    # the package docstring's example is code on the page, not a paragraph of run-on text
    first = re.search(r"<pre>(.*?)</pre>", api, re.S)
    assert first and "robot_ik_nn.load" in re.sub(r"<[^>]+>", "", first.group(1)), (
        "the API page's first example does not render as a code block"
    )
    assert (tmp_path / "html" / "quickstart.html").exists(), "no install/quickstart page"
