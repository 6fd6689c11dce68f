"""numba's cache follows every source of the IK core, not only each function's own file."""

import pytest

from robot_ik_nn.ik import numba_cache


def fake_tree(tmp_path):
    folder = tmp_path / "ik"
    folder.mkdir()
    (folder / "kernel.py").write_text("LAM = 1e-4\n")
    (folder / "policy.py").write_text("from .kernel import LAM\n")
    return folder


def cached(place, *names):
    for name in names:
        (place / name).write_text("compiled")


@pytest.fixture
def beside_the_sources(monkeypatch):
    """numba's default place (NUMBA_CACHE_DIR unset; make test's workers set it)."""
    from numba.core import config

    monkeypatch.setattr(config, "CACHE_DIR", "")


def test_a_change_in_any_source_drops_every_compiled_file_and_nothing_else(
    tmp_path, beside_the_sources
):
    folder = fake_tree(tmp_path)
    place = numba_cache.cache_folder(str(folder))
    assert place == folder / "__pycache__"
    assert not numba_cache.keep_in_step(str(folder))  # nothing cached yet: the digest is written
    cached(place, "policy.solve-10.py311.nbi", "policy.solve-10.py311.1.nbc", "policy.pyc")
    assert not numba_cache.keep_in_step(str(folder))  # the same sources: all kept
    assert (place / "policy.solve-10.py311.1.nbc").exists()

    (folder / "kernel.py").write_text("LAM = 1e-9\n")  # policy.py itself is unchanged
    assert numba_cache.keep_in_step(str(folder))
    assert sorted(p.name for p in place.iterdir()) == ["policy.pyc", numba_cache.STAMP]
    cached(place, "policy.solve-10.py311.nbi")  # compiled again from the new sources: kept
    assert not numba_cache.keep_in_step(str(folder))
    assert (place / "policy.solve-10.py311.nbi").exists()


def test_compiled_files_without_a_digest_are_dropped_once(tmp_path, beside_the_sources):
    folder = fake_tree(tmp_path)
    place = folder / "__pycache__"
    place.mkdir()
    cached(place, "kernel.refine-5.py311.nbi")  # written before the digest existed
    assert numba_cache.keep_in_step(str(folder))
    assert not (place / "kernel.refine-5.py311.nbi").exists()


def test_numba_cache_dir_is_followed(tmp_path, monkeypatch):
    from numba.core import config

    folder = fake_tree(tmp_path)
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "cache"))
    place = numba_cache.cache_folder(str(folder))
    assert place.parent == tmp_path / "cache" and place.name.startswith("ik_")
    numba_cache.keep_in_step(str(folder))
    cached(place, "policy.solve-10.py311.nbi")
    (folder / "kernel.py").write_text("LAM = 3e-4\n")
    assert numba_cache.keep_in_step(str(folder))
    assert not (place / "policy.solve-10.py311.nbi").exists()
    assert not (folder / "__pycache__").exists()  # numba would not look there


def test_an_unwritable_numba_cache_dir_falls_back_where_numba_does(tmp_path, monkeypatch):
    """numba tries NUMBA_CACHE_DIR, then __pycache__, then its user-wide folder: the digest must
    guard the folder numba really writes to (a review found the first alone was tried)."""
    from numba.core import config

    folder = fake_tree(tmp_path)
    (tmp_path / "a_file").write_text("")  # a folder below a file: unwritable, even for root
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "a_file" / "cache"))
    assert numba_cache.cache_folder(str(folder)) == folder / "__pycache__"


def test_the_package_sources_have_a_digest_beside_the_cache():
    """The stamp beside the real cache is the digest of every ik/*.py, names and bytes, as
    computed here (not by sources_digest itself)."""
    import hashlib
    from pathlib import Path

    import robot_ik_nn.ik

    digest = hashlib.sha256()
    sources = sorted(Path(robot_ik_nn.ik.__file__).parent.glob("*.py"))
    assert {"kernel.py", "policy.py", "solver.py"} <= {p.name for p in sources}
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    place = numba_cache.cache_folder()
    assert (place / numba_cache.STAMP).read_text() == digest.hexdigest()


def test_compiled_before_says_whether_the_first_solve_compiles(tmp_path):
    folder = fake_tree(tmp_path)
    assert not numba_cache.compiled_before(str(folder))  # a fresh install: nothing cached
    numba_cache.keep_in_step(str(folder))
    place = numba_cache.cache_folder(str(folder))
    cached(place, "policy.pyc")  # bytecode is not compiled machine code
    assert not numba_cache.compiled_before(str(folder))
    cached(place, "policy.solve-10.py311.nbi")
    assert numba_cache.compiled_before(str(folder))
    (folder / "kernel.py").write_text("LAM = 1e-9\n")  # sources changed: dropped, compiles again
    numba_cache.keep_in_step(str(folder))
    assert not numba_cache.compiled_before(str(folder))
