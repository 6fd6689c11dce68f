"""A file or a folder replaced whole: a reader finds the old one or the new one, never neither,
never a mix (:func:`atomic_write` for one file, :func:`replace` for a folder).

:func:`replace` has the new folder written into a temporary sibling (``.NAME.replacing-PID-*``),
carries into it what the old folder holds beside the files being replaced (hard links: a
training run's checkpoint and metrics, a user's notes), and then swaps the two in one step:
``renameat2(RENAME_EXCHANGE)`` on Linux. Where that call is missing the old folder is renamed
aside (``.NAME.old-PID-*``) and the new one renamed in; a kill between the two leaves the old
one aside, and :func:`recover` (called by every writer on start) puts it back. A kill at any
other moment leaves a leftover sibling of a dead process, which :func:`recover` removes.

Used by model_dir.save (train, merge, transfer) and calibrate. numpy-free, torch-free.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import tempfile
from pathlib import Path

_NEW, _OLD = "replacing", "old"
_EXCHANGE = 2  # RENAME_EXCHANGE, linux/fs.h
_AT_FDCWD = -100


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old file or the new one."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:  # named as the user named it, not by the temporary file beside it
        raise OSError(error.errno, f"cannot write {path}: {error.strerror}") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; a model folder is for sharing
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _leftovers(path: Path) -> list[tuple[str, int, Path]]:
    """(kind, pid, path) of the temporary siblings a writer of ``path`` left behind."""
    mark = re.compile(rf"^\.{re.escape(path.name)}\.({_NEW}|{_OLD})-(\d+)-")
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    found = [(mark.match(n), n) for n in names]
    return [(m.group(1), int(m.group(2)), path.parent / n) for m, n in found if m]


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover(path: str | Path) -> list[str]:
    """Mend what a writer of ``path`` killed mid-way left: the old folder set aside and not yet
    replaced is put back; the temporary siblings of dead writers are removed. Returns what was
    done, one line each (nothing: nothing was left)."""
    path = Path(path)
    done = []
    left = [(kind, pid, p) for kind, pid, p in _leftovers(path) if not _alive(pid)]
    for kind, _, p in left:
        if kind == _OLD and not os.path.lexists(path):
            os.rename(p, path)  # the old folder, whole: the new one never took its place
            done.append(f"put back {path} (a replacement was stopped half-way)")
    for _, _, p in left:
        if os.path.lexists(p):
            shutil.rmtree(p, ignore_errors=True)
            done.append(f"removed {p.name} (left by a stopped run)")
    return done


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2); False where the system cannot."""
    try:
        call = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if call(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: a file system without exchange
        return False
    raise OSError(err, f"cannot replace {b}: {os.strerror(err)}")


def _link_or_copy(src, dst) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _carry(old: Path, new: Path, replaced) -> list[str]:
    """Bring what ``old`` holds beside the ``replaced`` names (and what ``new`` has already)
    into ``new``; returns their names."""
    kept = []
    for entry in sorted(old.iterdir()):
        target = new / entry.name
        if entry.name in replaced or os.path.lexists(target):
            continue
        if entry.is_symlink():
            os.symlink(os.readlink(entry), target)
        elif entry.is_dir():
            shutil.copytree(entry, target, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(entry, target)
        kept.append(entry.name)
    return kept


def _sync(folder: Path) -> None:
    """The written files and the folder on disk before the swap (a power cut, not only a kill,
    then leaves the old folder or the complete new one)."""
    for entry in folder.iterdir():
        if entry.is_file() and not entry.is_symlink():
            fd = os.open(entry, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    _sync_dir(folder)


def _sync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def replace(path: str | Path, fill, replaced=()) -> list[str]:
    """Write the folder ``path`` whole: ``fill(work)`` writes the new files into ``work``, a
    temporary sibling; what an existing ``path`` holds beside the names in ``replaced`` (the old
    model's own files) is carried over; then ``work`` takes ``path``'s place in one step and the
    old folder is removed. Any error or kill before the swap leaves ``path`` as it was. Returns
    the names carried over from the old folder."""
    path = Path(path)
    if path.is_symlink():  # the folder the link names is replaced; the link stays a link
        path = path.resolve()
    recover(path)
    if os.path.lexists(path) and not path.is_dir():
        raise FileExistsError(f"{path} is a file, not a folder")
    path.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{path.name}.{_NEW}-{os.getpid()}-", dir=path.parent))
    try:
        fill(work)
        _sync(work)
        kept = _carry(path, work, set(replaced)) if path.is_dir() else []
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(work, 0o777 & ~umask)  # mkdtemp makes 0700; a model folder is for sharing
        _swap_in(work, path)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return kept


def _swap_in(work: Path, path: Path) -> None:
    if not os.path.lexists(path):
        os.rename(work, path)  # nothing to replace: one rename
        _sync_dir(path.parent)
        return
    if _exchange(work, path):  # ``work`` now holds the old folder
        _sync_dir(path.parent)
        shutil.rmtree(work, ignore_errors=True)
        return
    aside = work.with_name(work.name.replace(f".{_NEW}-", f".{_OLD}-", 1))
    os.rename(path, aside)  # a kill from here to the next line: recover() puts it back
    try:
        os.rename(work, path)
    except BaseException:
        os.rename(aside, path)
        raise
    _sync_dir(path.parent)
    shutil.rmtree(aside, ignore_errors=True)
