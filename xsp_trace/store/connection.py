"""The DuckDB session: the one function that opens DuckDB (threads, progress bar, no extension
downloads, no SQLite file), the thread count of a connection, the memory cap of a convert, and the
deadline of a reading command (interrupt_after). The schema lives in database.py and schema.py,
which both open DuckDB through here."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import duckdb

from ..errors import InputError
from ..formats.file_magic import SQLITE_MAGIC
from .data_only import remove_spill_folders
from .sql import scalar

__all__ = ["duckdb_connect", "duckdb_threads", "interrupt_after", "memory_limit", "thread_count", "usable_cores"]


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity: taskset, a container's cpuset)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def duckdb_threads(con: duckdb.DuckDBPyConnection) -> int:
    """The DuckDB threads of a connection: the usable cores (duckdb_connect), or this process's share
    of them under `convert -j`. Readers that split their input use one part per thread."""
    return max(1, int(scalar(con, "SELECT current_setting('threads')")))


def _refuse_sqlite(path: Path | str) -> None:
    """An SQLite file (an nsys export) is no DuckDB database: opening one makes DuckDB fetch its
    sqlite extension from the internet before any setting of ours applies, so it is refused first."""
    if str(path) == ":memory:":
        return
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError:
        return  # a new file, or one DuckDB will report on
    if head == SQLITE_MAGIC:
        raise InputError(
            path, "is an SQLite file (an nsys export?), not an xsp-trace database", f"convert it first: xsp-trace convert {path} -o run.duckdb"
        )


# The storage format of the database files xsp-trace writes: the oldest that holds its schema, so
# DuckDB clients from 1.0 on open them (DuckDB 2.0 writes its own newer format by default, which no
# 1.x client reads). README, "Opening a database in other DuckDB clients"; BENCHMARKS.md, "Storage version".
STORAGE_VERSION = "v1.0.0"


def duckdb_connect(path: Path | str = ":memory:", read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """The one way xsp-trace opens DuckDB: its threads = the usable cores (DuckDB alone counts every
    core of the machine, so under taskset or a cpuset it would run more threads than it has cores),
    and no DuckDB progress bar (it would print into the caller's output; the CLI draws its own)."""
    _refuse_sqlite(path)
    # Set after connecting, not as connect(config=...): DuckDB refuses a second connection to a file
    # already open in this process (a caller's own duckdb.connect) with a different configuration.
    # The one exception: a new file gets its storage version here, the only moment it can be chosen.
    new_file = not read_only and str(path) != ":memory:" and not Path(path).exists()
    config: dict[str, str | bool | int | float | list[str]] = {"storage_compatibility_version": STORAGE_VERSION} if new_file else {}
    con = duckdb.connect(str(path), read_only=read_only, config=config)
    # Never reach the network: DuckDB would otherwise download an extension a query names.
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute(f"SET threads = {usable_cores()}")
    con.execute("SET enable_progress_bar = false")
    return con


# DuckDB's memory limit while a trace is converted: read, mapped and staged (convert/dispatch.py,
# both converters), then correlated (correlate.correlate_run). Beyond it sorts, joins, aggregates
# and temp tables spill to the temp directory, so the peak no longer grows with the trace, at the
# same speed (BENCHMARKS.md, "Correlation and memory").
CONVERT_MEMORY_LIMIT = "500MB"

# Buffer memory DuckDB's block allocator keeps for the converting database, at most: its blocks are
# reused instead of returned to the OS and faulted in again. What is kept counts in the peak even
# where the convert would not have filled it, so a trace keeps no more than its own size on disk
# (convert_block_memory; figures in BENCHMARKS.md, "Convert: nsys").
CONVERT_BLOCK_MEMORY = 256 << 20


def convert_block_memory(trace_bytes: int) -> int:
    """Block allocator bytes to keep while converting a trace file of `trace_bytes`."""
    return min(CONVERT_BLOCK_MEMORY, trace_bytes)


def keep_block_memory(con: duckdb.DuckDBPyConnection, size_bytes: int) -> None:
    """DuckDB's block allocator keeps at least `size_bytes` for this database until it closes
    (DuckDB refuses to lower the setting: a larger one already set stays)."""
    try:
        con.execute("SET block_allocator_memory = ?", [f"{int(size_bytes)}B"])
    except duckdb.InvalidInputException:
        pass  # already larger


@contextmanager
def thread_count(con: duckdb.DuckDBPyConnection, threads: int) -> Iterator[None]:
    """DuckDB's threads at `threads` for the block, the connection's own afterwards."""
    previous = duckdb_threads(con)
    con.execute(f"SET threads = {int(threads)}")
    try:
        yield
    finally:
        con.execute(f"SET threads = {previous}")


@contextmanager
def memory_limit(con: duckdb.DuckDBPyConnection, value: str) -> Iterator[None]:
    """DuckDB's memory limit at `value` (e.g. "500MB") for the block, the connection's own afterwards.

    Without a limit DuckDB may hold up to 80 % of the machine's memory before spilling, so a
    statement's peak grows with the trace; under one, its sorts, joins and aggregates spill to
    the temp directory instead."""
    previous = scalar(con, "SELECT current_setting('memory_limit')")
    con.execute("SET memory_limit = ?", [value])
    try:
        yield
    finally:
        con.execute("SET memory_limit = ?", [previous])


# How long a stopped query may take to unwind before the console script exits without it: DuckDB
# checks its interrupt between tasks, and a sort's merge runs as long tasks (it can stop many seconds after the interrupt).
STUCK_GRACE_S = 1.0
_REINTERRUPT_S = 0.1  # the interrupt is repeated, so one that lands between statements or fetches is not lost


@contextmanager
def interrupt_after(con: duckdb.DuckDBPyConnection, seconds: float, path: Path, exit_when_stuck: bool = False) -> Iterator[None]:
    """Stop what runs in the block once `seconds` have passed (0 = never), with one InputError line:
    DuckDB's query is interrupted from a watchdog thread, and Python work (the critical path's walk,
    printing) by an alarm signal in the main thread. With `exit_when_stuck` (the console script,
    which owns its process), a block still running STUCK_GRACE_S after the deadline -- DuckDB deep in
    a sort, or stdout blocked -- ends the process: the one line, its spill folder removed, exit code 2."""
    if seconds <= 0:
        yield
        return
    fired = threading.Event()
    left = threading.Event()  # the block has ended

    def stopped() -> InputError:
        return InputError(path, f"stopped after {seconds:g} s (--timeout)", "narrow it (a WHERE, a LIMIT, --run, --iteration), or raise --timeout")

    def watchdog() -> None:
        if left.wait(seconds):
            return
        fired.set()
        deadline = time.monotonic()
        while True:
            try:
                con.interrupt()
            except duckdb.Error:  # pragma: no cover - the connection is closed only after the block
                return
            if left.wait(_REINTERRUPT_S):
                return
            if exit_when_stuck and time.monotonic() - deadline >= STUCK_GRACE_S:
                _exit_stopped(stopped())

    thread = threading.Thread(target=watchdog, name="xsp-timeout", daemon=True)
    in_main = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    previous = None
    if in_main:

        def alarm(signum, frame) -> None:
            # The one line itself: the alarm may arrive while DuckDB's interrupt is already being handled.
            fired.set()
            raise stopped()

        previous = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    thread.start()
    try:
        yield
    except Exception as exc:  # DuckDB's interrupt, the alarm, or the caller's InputError wrapping either
        if fired.is_set():
            raise stopped() from exc
        raise
    finally:
        left.set()
        thread.join()  # no thread of ours may outlive the block: DuckDB aborts if one is alive when it is torn down at exit
        if in_main:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _exit_stopped(error: InputError) -> NoReturn:
    """End the process now, from the watchdog thread (the main thread is inside DuckDB, or blocked
    writing): what was printed is flushed unless stdout is blocked, the one line written, the spill
    folder removed (a kill would leave it for the next reader's remove_stale_temp), exit code 2."""
    flusher = threading.Thread(target=_flush_stdout, daemon=True)
    flusher.start()
    flusher.join(0.5)  # a full pipe holds stdout's lock in the main thread: do not wait for it
    os.write(2, f"xsp-trace: error: {error.line()}\n".encode())  # not sys.stderr: its lock may be held too
    remove_spill_folders()
    os._exit(2)


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # a closed pipe: nothing more can reach the reader
        pass
