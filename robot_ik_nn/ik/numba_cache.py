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
