"""numba's on-disk cache kept in step with the IK core's sources.

numba checks a cached function against its own file only (a documented limit of ``cache=True``):
``policy.solve_target`` compiled with ``kernel.py``'s LM stays cached after ``kernel.py``
changes (an edit, a ``git pull`` into an editable or symlinked install), and every later process
runs the old LM without a word. So the package keeps a digest of every source file of this
folder beside numba's cache files, and drops those files (``*.nbi``, ``*.nbc``; nothing else)
when the digest no longer matches. A release installed by pip writes fresh files and compiles
afresh anyway; this guards a working copy.

The folder is the one numba itself picks, by the same rules: the first writable of
``NUMBA_CACHE_DIR`` (when set), ``__pycache__`` beside the sources, and numba's user-wide cache
folder.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))  # as numba names it: not resolved
STAMP = "robot_ik_nn.sources.sha256"


def sources_digest(folder: str = HERE) -> str:
    """One digest of every ``.py`` file in ``folder``, names included."""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_folder(folder: str = HERE) -> Path | None:
    """Where numba caches the functions of ``folder`` (created here, as numba would), or None
    when it cannot cache them at all."""
    from numba.core import config
    from numba.misc.appdirs import AppDirs

    sub = f"{os.path.basename(folder)}_{hashlib.sha1(folder.encode()).hexdigest()}"
    user = AppDirs(appname="numba", appauthor=False).user_cache_dir
    places = [Path(folder) / "__pycache__", Path(user) / sub]
    if config.CACHE_DIR:  # first; numba falls back to the others when it cannot write there
        places.insert(0, Path(config.CACHE_DIR) / sub)
    for place in places:
        try:
            place.mkdir(parents=True, exist_ok=True)
            tempfile.TemporaryFile(dir=place).close()
            return place
        except OSError:
            continue
    return None


def keep_in_step(folder: str = HERE) -> bool:
    """Drop numba's cache files for ``folder`` if its sources changed since they were written
    (or if no digest says which sources wrote them); returns whether anything was dropped."""
    place = cache_folder(folder)
    if place is None:
        return False
    digest, stamp = sources_digest(folder), place / STAMP
    try:
        if stamp.read_text() == digest:
            return False
    except OSError:
        pass
    stale = [p for p in place.iterdir() if p.suffix in (".nbi", ".nbc")]
    try:
        for path in stale:
            path.unlink(missing_ok=True)
        fresh = place / f"{STAMP}.{os.getpid()}"
        fresh.write_text(digest)
        os.replace(fresh, stamp)  # another process starting at once writes the same digest
    except OSError:
        return False
    return bool(stale)


def compiled_before(folder: str = HERE) -> bool:
    """Whether numba's cache holds compiled functions of ``folder`` for these sources (after
    ``keep_in_step`` has dropped stale ones): when it does not, the first solve compiles."""
    place = cache_folder(folder)
    if place is None:
        return False
    try:
        return any(p.suffix == ".nbi" for p in place.iterdir())
    except OSError:
        return False


# About how many seconds each entry takes to compile in a fresh cache, on the 2-core machine this
# package is developed on (numba's compile events of a fresh Solver.warm_up of the Panda: 237 s
# of CPU in all, shared out by the events' lengths; 1,327 s of wall under a load of 10): the
# estimate the line below gives.
COMPILE_S = {
    "solve_one": 120,
    "carried": 2,
    "solve_many": 10,
    "solve_batch": 40,
    "forward_batch": 3,
    "manipulability": 2,
    "sweep": 25,
    "walk": 16,
    "polish": 4,
    "_cheapest": 2,
    "free": 8,
}


def entries() -> list:
    """The compiled functions the package calls from Python on a served target, a path or a
    batch (each holds the compiled functions it calls): what ``Solver.warm_up`` makes ready."""
    from . import collision, layers, policy, selfmotion, several_answers, walk

    return [
        policy.solve_one,
        policy.carried,
        several_answers.solve_many,
        policy.solve_batch,
        policy.forward_batch,
        several_answers.manipulability,
        selfmotion.sweep,
        walk.walk,
        walk.polish,
        layers._cheapest,
        collision.free,
    ]


def uncached(dispatchers=None) -> list:
    """Those of ``dispatchers`` (default :func:`entries`) that numba's cache holds no compiled
    code of for these sources and this machine: the ones a first call compiles. Read through
    numba's own cache index (not public API: where it fails, every one is taken as uncached)."""
    missing = []
    for dispatcher in entries() if dispatchers is None else dispatchers:
        try:
            index = dispatcher._cache._cache_file._load_index()  # {} when the sources changed
            magic = dispatcher.targetctx.codegen().magic_tuple()
            cached = any(key[1] == magic for key in index)
        except Exception:  # noqa: BLE001 (numba's internals moved: assume it compiles)
            cached = False
        if not cached:
            missing.append(dispatcher)
    return missing


def warm_up_line(dispatchers=None) -> str:
    """The one line said before the compiled functions are made ready: compiling (with about
    how long it takes) or loading them from numba's cache."""
    missing = uncached(dispatchers)
    if not missing:
        return "loaded compiled solver from cache"
    seconds = sum(COMPILE_S.get(d.__name__, 5) for d in missing)
    return f"compiling the solver (first run after an install, ~{seconds} s)..."
