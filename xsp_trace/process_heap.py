"""glibc's heap kept while a Perfetto export runs, instead of handed back and faulted in again.

The export frees and allocates the arrays of one part after another (numpy, Arrow's system pool,
DuckDB's result chunks). With glibc's defaults the top of the heap goes back to the kernel as soon
as 128 KiB of it are free, and the next part's arrays fault the same pages in again: most pages of each
part's arrays are faulted in afresh. With a top pad the
heap keeps that much above what is in use, and arrays below the mmap threshold come from the heap
rather than from a mapping of their own, unmapped when freed (BENCHMARKS.md,
"Perfetto export").

mallopt is process-wide, so no library call sets it for its caller: `xsp-trace perfetto` runs the
export inside `keep_heap` (its process ends with it), and so may a program of one's own. It
counts nested and concurrent users and puts glibc's default top pad back (then trims) when the
last one leaves. The mmap threshold stays where it was set: after any mallopt call glibc no
longer moves it by itself (up to 32 MiB as large blocks are freed), and its static default
(128 KiB) would map every larger array. Elsewhere (musl, macOS, Windows) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# mallopt's parameter numbers (malloc.h) and the top pad's default (mallopt(3): 128*1024).
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3
DEFAULT_TOP_PAD = 128 * 1024
# A pad of several parts' arrays, and a threshold that keeps them on the heap: the two are set
# together (mallopt fixes the dynamic threshold where it stands). Sizes measured: BENCHMARKS.md,
# "Perfetto export", and its git history.
EXPORT_TOP_PAD = 128 << 20
EXPORT_MMAP_THRESHOLD = 8 << 20

_lock = threading.Lock()
_users = 0


def _glibc() -> ctypes.CDLL | None:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


@contextmanager
def keep_heap(pad_bytes: int = EXPORT_TOP_PAD, mmap_threshold: int = EXPORT_MMAP_THRESHOLD) -> Iterator[bool]:
    """glibc keeps `pad_bytes` of free heap above what is in use, and serves blocks below
    `mmap_threshold` from the heap, while the block runs (yields whether it applies: glibc only)."""
    global _users
    libc = _glibc()
    if libc is None:
        yield False
        return
    with _lock:
        if _users == 0:
            libc.mallopt(M_TOP_PAD, pad_bytes)
            libc.mallopt(M_MMAP_THRESHOLD, mmap_threshold)
        _users += 1
    try:
        yield True
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                libc.mallopt(M_TOP_PAD, DEFAULT_TOP_PAD)
                libc.malloc_trim(0)  # what the pad kept goes back now
