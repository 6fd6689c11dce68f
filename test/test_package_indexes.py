"""Every module of each package is listed in its package's index: the docstring of its
__init__.py names each ``module.py`` (and each sub-package as ``name/``), and names no file that
is not there. A newcomer reads the index to find where a thing lives."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "robot_ik_nn"

# Packages whose __init__ has no index yet (their docstring names no module file); the test
# fails if one gets an index (delete its line then), and every other package must have one.
KNOWN_WITHOUT_INDEX = [
    "robot_ik_nn",  # the public API's docstring: how to call it, not a list of its files
]

NAMED = re.compile(r"(?<![\w/.])([A-Za-z_]\w*)(\.py\b|/)")


def index(package: Path) -> str:
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text()), clean=False) or ""


def members(package: Path) -> set[str]:
    """The package's modules (``name.py``) and sub-packages (``name/``)."""
    files = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    subs = {p.name + "/" for p in package.iterdir() if (p / "__init__.py").is_file()}
    return files | subs


def named(text: str) -> set[str]:
    return {stem + end for stem, end in NAMED.findall(text)}


def check(package: Path) -> tuple[set[str], set[str]]:
    """(members missing from the index, files the index names that are not members)."""
    have, said = members(package), named(index(package))
    return have - said, {n for n in said if n.endswith(".py")} - have - {"__init__.py"}


def packages():
    return sorted(p.parent for p in ROOT.rglob("__init__.py"))


def dotted(package: Path) -> str:
    return ".".join(package.relative_to(ROOT.parent).parts)


def test_a_missing_or_stale_entry_is_found(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "__init__.py").write_text("")
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.py").write_text("")
    text = '"""a.py  the first\nsub/  more\ngone.py  was here\n"""\n'
    (tmp_path / "__init__.py").write_text(text)
    assert check(tmp_path) == ({"b.py"}, {"gone.py"})
    (tmp_path / "__init__.py").write_text('"""a.py\nb.py (not x/b.py)\nsub/\n"""\n')
    assert check(tmp_path) == (set(), set())


def test_every_module_is_in_its_package_index():
    wrong, without = [], []
    for package in packages():
        if not any(n.endswith(".py") for n in named(index(package))):
            without.append(dotted(package))
            continue
        missing, stale = check(package)
        if missing or stale:
            wrong.append(f"{dotted(package)}: not listed {sorted(missing)}, gone {sorted(stale)}")
    assert not wrong, "package indexes (the __init__ docstrings) drifted:\n" + "\n".join(wrong)
    assert sorted(without) == sorted(KNOWN_WITHOUT_INDEX), (
        "packages without an index (KNOWN_WITHOUT_INDEX lists the known ones): "
        f"{sorted(set(without) - set(KNOWN_WITHOUT_INDEX))} new, "
        f"{sorted(set(KNOWN_WITHOUT_INDEX) - set(without))} have one now"
    )
