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


def test_the_warm_up_line_says_compiling_until_the_cache_holds_the_code(tmp_path, monkeypatch):
    """One line before the compiled functions are made ready: "compiling" while numba's cache
    holds no code of a function for this machine, "loaded ... from cache" once it does."""
    import importlib

    (tmp_path / "warm_up_line_probe.py").write_text(
        "from numba import njit\n\n\n@njit(cache=True)\ndef add_one(x):\n    return x + 1.0\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    probe = importlib.import_module("warm_up_line_probe")
    line = numba_cache.warm_up_line([probe.add_one])
    assert line.startswith("compiling the solver (first run after an install, ~")
    assert numba_cache.uncached([probe.add_one]) == [probe.add_one]
    assert probe.add_one(1.0) == 2.0  # compiled, and written to the cache
    assert numba_cache.uncached([probe.add_one]) == []
    assert numba_cache.warm_up_line([probe.add_one]) == "loaded compiled solver from cache"


def _signatures() -> dict:
    """Every compiled function of the IK core and the argument types it holds code for."""
    import importlib
    import pkgutil

    from numba.core.registry import CPUDispatcher

    import robot_ik_nn.ik as ik

    out = {}
    for info in pkgutil.iter_modules(ik.__path__):
        if info.name == "torch_solver":
            continue
        module = importlib.import_module(f"robot_ik_nn.ik.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, CPUDispatcher) and value.__module__ == module.__name__:
                out[f"{info.name}.{name}"] = set(map(str, value.signatures))
    return out


@pytest.mark.timeout(2400)  # a fresh cache compiles them all: 4 min of CPU, 15 min of wall
def test_after_warm_up_paths_and_their_planners_compile_nothing(panda):  # under a load of 10
    """Solver.warm_up makes ready every compiled call a path can make: afterwards a drawn
    path, both planners run on it directly (whatever the tracking needed), a polish, a batch
    and several answers add no compiled code (no compile on a node's first ~/target_path).
    Not a held joint's planner (``solve_path(joint=)``, which neither the node nor the command
    line asks for): its first use compiles layout.parts."""
    from robot_ik_nn.arm.rotations import matrix_to_quaternion
    from robot_ik_nn.bench.paths import spline_path
    from robot_ik_nn.ik.layers import polished
    from robot_ik_nn.ik.path_planners import SelfMotionPlanner, branches
    from robot_ik_nn.ik.settings import IKSettings
    from robot_ik_nn.ik.solver import Solver

    solver = Solver(panda, settings=IKSettings(collision_check=True))
    said = []
    solver.warm_up(say=said.append)
    assert len(said) == 1 and "solver" in said[0]
    before = _signatures()
    q_path, P, R = spline_path(panda, solver.forward, 1001, targets=40)
    Q = matrix_to_quaternion(R)
    path = solver.solve_path(P, Q, start=q_path[0])
    planner = SelfMotionPlanner(solver, P, Q, None, 0.1, 0.2)
    planner.plan(q_path[0], path.q[:, None], 4)
    branches(solver, P, Q, q_path[0], path.q, 10, 0.2, None, onward=True)
    branches(solver, P, Q, q_path[0], path.q, 10, 0.2, planner)
    polished(solver, P, Q, q_path)
    solver.solve_batch(P, Q, current=q_path)
    solver.solve(P[0], Q[0], solutions=3)
    solver.solve([2.0, 0.0, 0.3], Q[0], current=q_path[0])  # out of reach: refused, with words
    after = _signatures()
    new = {k: after[k] - before.get(k, set()) for k in after}
    assert {k: v for k, v in new.items() if v} == {}
