"""The folders that cache conversions (`.xsp-cache/` beside a trace, else a private temporary folder):
which can be trusted, and how many entries each keeps.

A cache entry is used as a trace's conversion, so its folder and the entry itself must be this
user's own: a folder that is a symbolic link, belongs to another user or is writable by others, and
an entry that is a symbolic link, belongs to another user or is no regular file, are never read or
written; the conversion goes to this user's private folder instead (with one warning line). Each
folder keeps at most MAX_CACHE_ENTRIES entries, the oldest written removed first.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile
from pathlib import Path

from ..errors import one_line
from ..output_files import private_temp_prefix

CACHE_DIR = ".xsp-cache"
MAX_CACHE_ENTRIES = 16  # per cache folder: DuckDB conversions and nsys exports together
PRIVATE_FOLDER_PREFIX = "xsp-trace-cache-"  # + uid, in the temporary directory

# `<trace>.<sha256 prefix>.xsp-<version>-schema<N>.duckdb` (trace_cache) and `<report>.<size>-<mtime_ns>.sqlite`
# (nsys/report): an entry with the same trace and tail as a newer one caches an older content of that trace.
ENTRY_NAMES = (
    re.compile(r"^(?P<trace>.+)\.[0-9a-f]{20}(?P<tail>\.xsp-.+-schema[^.]+\.duckdb)$"),
    re.compile(r"^(?P<trace>.+)\.\d+-\d+(?P<tail>\.sqlite)$"),
)


def warn(path: Path, message: str) -> None:
    """One `warning:` line on stderr naming the cache path and what is done instead."""
    print(f"xsp-trace: warning: {one_line(f'{path}: {message}')}", file=sys.stderr, flush=True)


def folder_problem(folder: Path) -> str | None:
    """Why `folder` cannot hold this user's cache (a link, another owner, writable by others), or None."""
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a folder"
    if info.st_uid != os.getuid():
        return f"belongs to another user (uid {info.st_uid})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "is writable by other users (chmod go-w it to use it)"
    return None


def entry_problem(entry: Path) -> str | None:
    """Why the existing file `entry` cannot be taken as this user's cache entry, or None."""
    info = os.lstat(entry)
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if info.st_uid != os.getuid():
        return f"belongs to another user (uid {info.st_uid})"
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file"
    return None


def _writable(folder: Path) -> bool:
    probe = folder / f".probe-{os.getpid()}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        os.unlink(probe)
        return True
    except OSError:
        return False


def beside_folder(trace: Path) -> Path | None:
    """`.xsp-cache/` beside `trace`, created private if missing; None (and a warning where it is not
    this user's own) when it cannot hold the cache."""
    folder = Path(trace).parent / CACHE_DIR
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError:
        return None  # a read-only folder: silently elsewhere, as nothing is wrong
    try:
        problem = folder_problem(folder)
    except OSError:
        return None
    if problem == "is not a folder":
        return None
    if problem is not None:
        warn(folder, f"{problem}, so it is not used; the conversion is cached in a private folder instead")
        return None
    return folder if _writable(folder) else None


def private_folder() -> Path:
    """This user's private cache folder under the temporary directory (mode 0700); where that name is
    taken by something else, a fresh private folder removed once this process is gone."""
    folder = Path(tempfile.gettempdir()) / f"{PRIVATE_FOLDER_PREFIX}{os.getuid()}"
    try:
        folder.mkdir(mode=0o700)
    except OSError:
        pass
    try:
        usable = folder_problem(folder) is None and (os.lstat(folder).st_mode & 0o077) == 0 and _writable(folder)
    except OSError:
        usable = False
    return folder if usable else Path(tempfile.mkdtemp(prefix=private_temp_prefix("cache")))


def _entries(folder: Path) -> list[tuple[int, str, str, int]]:
    """(mtime, name, trace name and tail, kind) of this user's cache entries in `folder`, newest
    first; the kind is the index of the entry's pattern in ENTRY_NAMES."""
    found = []
    try:
        listing = list(os.scandir(folder))
    except OSError:
        return []
    for item in listing:
        for kind, pattern in enumerate(ENTRY_NAMES):
            match = pattern.match(item.name)
            if match is None:
                continue
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                break
            if stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid():
                found.append((info.st_mtime_ns, item.name, match["trace"] + "\0" + match["tail"], kind))
            break
    return sorted(found, reverse=True)


def evict(folder: Path, keep: Path, superseded: bool = True) -> None:
    """Remove the entries of `folder` past MAX_CACHE_ENTRIES, the oldest written first, and (with
    `superseded`) the entries of older contents of the trace that `keep` caches, written by the same
    xsp-trace version (an entry of another version stays for that version, up to the bound).
    `.xsp-cache/` serves one folder, where a trace name is one trace; the private folder serves
    many, so it passes superseded=False. `keep` itself stays."""
    entries = _entries(folder)
    mine = next(((family, kind) for _, name, family, kind in entries if name == keep.name), None)
    room = MAX_CACHE_ENTRIES - 1
    for _, name, family, kind in entries:
        if name == keep.name:
            continue
        if not (superseded and (family, kind) == mine) and room > 0:
            room -= 1
            continue
        for path in (folder / name, folder / f"{name}.wal"):
            try:
                path.unlink()
            except OSError:
                pass
