"""The watchdog of a local Ray cluster: it outlives the driver and ends every process the cluster started.

Which processes are the cluster's: every one whose environment carries OWNER_VARIABLE=<token>
(the driver sets it before ray.init; the GCS, raylet and the other processes the driver starts
inherit it), and every process descended from one. The mark alone misses some: Ray's Python
processes (the dashboard and runtime-env agents, workers) rename themselves with setproctitle,
which may overwrite the environment /proc/<pid>/environ shows, and a process whose parent dies
is handed to init, out of the tree. So while the driver lives the watchdog re-reads /proc every
SCAN_S and records the pid and start time of each such process. When the driver's pipe closes it
stops (SIGSTOP: none forks a child it would miss) and then SIGKILLs the recorded processes still
alive (same start time: a reused pid is left alone), their descendants and any marked process,
until none has been seen for REAP_QUIET_S. Started by ray_lifetime.ray_session as
`python -m xsp_trace.convert.ray_reaper <token> <driver pid> <output> <Ray's folder> <leftovers...>`.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

from ..output_files import remove_lock_if_free, remove_stale_temp, remove_temp

OWNER_VARIABLE = "XSP_RAY_OWNER"
SCAN_S = 0.2  # while the driver lives: how often the cluster's processes are recorded
REAP_QUIET_S = 1.0  # the watchdog stops once no process of the cluster was seen for this long
REAP_LIMIT_S = 30.0  # and gives up after this long in any case


class Process(NamedTuple):
    parent: int
    start: int  # clock ticks after boot: with the pid, names one process for its whole life
    zombie: bool


def process_table() -> dict[int, Process]:
    """Every process in /proc (any user's: /proc/<pid>/stat is world-readable)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile
        fields = stat[stat.rindex(b")") + 2 :].split()  # after "pid (comm) ": the name may hold spaces
        table[int(entry)] = Process(parent=int(fields[1]), start=int(fields[19]), zombie=fields[0] in (b"Z", b"X"))
    return table


def descendants(table: dict[int, Process], roots: set[int]) -> set[int]:
    """The live processes under `roots` in `table` (the roots left out)."""
    children: dict[int, list[int]] = {}
    for pid, process in table.items():
        children.setdefault(process.parent, []).append(pid)
    found: set[int] = set()
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found and child not in roots:
                found.add(child)
                todo.append(child)
    return {pid for pid in found if not table[pid].zombie}


class Cluster:
    """The processes of the cluster marked by `token`, as far as /proc has shown them so far."""

    def __init__(self, token: str, skip: set[int]):
        self._needle = f"\0{OWNER_VARIABLE}={token}\0".encode()
        self._skip = skip  # the driver and the watchdog: they carry or held the mark, and are not Ray's
        self._known: dict[int, int] = {}  # pid -> start time of every process of the cluster seen
        self._read: dict[int, int] = {}  # pid -> start time of the processes whose environment was read

    def _marked(self, pid: int, process: Process) -> bool:
        """Whether `pid` carries the mark; each process's environment is read once (it cannot gain the mark later)."""
        if self._read.get(pid) == process.start:
            return False
        self._read[pid] = process.start
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                return self._needle in b"\0" + f.read() + b"\0"
        except OSError:
            return False  # gone, or another user's

    def members(self, table: dict[int, Process]) -> set[int]:
        """The live processes of the cluster in `table`, each recorded for later scans."""
        alive = {pid for pid, start in self._known.items() if pid in table and table[pid].start == start and not table[pid].zombie}
        alive |= {pid for pid, process in table.items() if pid not in self._skip and not process.zombie and self._marked(pid, process)}
        alive |= descendants(table, alive) - self._skip
        self._known = {pid: table[pid].start for pid in alive}
        self._read = {pid: start for pid, start in self._read.items() if pid in table}
        return alive


def _signal_all(pids: set[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except OSError:
            pass  # gone, or not ours


def _stopped(cluster: Cluster, deadline: float) -> set[int]:
    """SIGSTOP the cluster's processes until a scan finds none it has not stopped: a process that
    forked between a scan and its SIGKILL would leave a child out of the tree."""
    stopped: set[int] = set()
    while time.monotonic() < deadline:
        found = cluster.members(process_table())
        new = found - stopped
        if not new:
            return found
        _signal_all(new, signal.SIGSTOP)
        stopped |= new
    return stopped


def reap(cluster: Cluster) -> int:
    """SIGKILL the cluster's processes until none has been seen for REAP_QUIET_S; how many were killed."""
    killed: set[int] = set()
    quiet_since = time.monotonic()
    deadline = quiet_since + REAP_LIMIT_S
    while time.monotonic() < deadline:
        found = _stopped(cluster, deadline)
        if found:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= REAP_QUIET_S:
            break
        _signal_all(found, signal.SIGKILL)
        killed |= found
        time.sleep(0.05)
    return len(killed)


def _record_until_closed(fd: int, cluster: Cluster) -> None:
    """Record the cluster's processes every SCAN_S until the pipe on `fd` closes (the driver is done or dead)."""
    while True:
        ready, _, _ = select.select([fd], [], [], SCAN_S)
        if ready and not os.read(fd, 4096):
            return
        cluster.members(process_table())


def start_watchdog(token: str, output: Path, temp_folder: Path, leftovers: list[Path]) -> tuple[subprocess.Popen, int]:
    """Start the watchdog of this process's cluster, before ray.init; returns it and the write end
    of its pipe, which this process alone holds and closes when the cluster must go."""
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", __name__, token, str(os.getpid()), str(output), str(temp_folder), *map(str, leftovers)],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # out of the terminal's reach: a Ctrl-C is the driver's
            env={k: v for k, v in os.environ.items() if k != OWNER_VARIABLE},
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return process, write_end


def watchdog(argv: list[str]) -> None:
    """Wait for the driver's pipe (stdin) to close, then reap its cluster and remove what it left."""
    token, driver, output, temp_folder, *leftovers = argv
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C to the terminal is the driver's to handle
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    cluster = Cluster(token, skip={os.getpid(), int(driver)})
    _record_until_closed(sys.stdin.fileno(), cluster)
    reap(cluster)
    shutil.rmtree(temp_folder, ignore_errors=True)
    remove_stale_temp()  # the $TMPDIR folders of the Ray workers just killed (named by their pids)
    try:
        os.kill(int(driver), 0)
        return  # the driver lives on and removes its own outputs
    except ProcessLookupError:
        pass
    except PermissionError:
        return
    for path in leftovers:
        remove_temp(Path(path))
    remove_lock_if_free(Path(output))


if __name__ == "__main__":
    watchdog(sys.argv[1:])
