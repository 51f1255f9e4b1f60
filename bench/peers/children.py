"""How the peers benchmark (bench/peers/) and the other benchmarks run what they measure: each tool a
fresh child process, its wall time and peak RSS taken by a small launcher (LAUNCHER, measure),
Python children written as scripts (python_script) that import xsp_trace from a chosen checkout."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

from .scaled_inputs import DATA

ROOT = Path(__file__).resolve().parents[2]  # the checkout
# The first line of every Python child (its arguments are sys.argv); python_script puts the checkout
# it measures on the child's PYTHONPATH.
PRELUDE = "import sys\n"


# Runs the measured command as its own child and reports (wall seconds, ru_maxrss KiB, user + system
# CPU seconds) on a pipe.
# Linux carries a parent's peak RSS into a child it spawns (the high-water mark of the memory the
# child had before exec), so a command spawned straight from this process, which grows as it
# reads results, could report this process's peak instead of its own (nsys stats: 382 MiB for a
# 46 MiB run); forked from this small launcher, its peak is its own (or the launcher's ~9 MiB).
LAUNCHER = """
import os, sys, time
fd, argv = int(sys.argv[1]), sys.argv[2:]
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
os.write(fd, f"{time.perf_counter() - start} {usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}".encode())
sys.exit(0 if os.waitstatus_to_exitcode(status) == 0 else 1)
"""


def measure(argv: list[str], stdout=subprocess.DEVNULL, timeout: float | None = None) -> dict:
    """Wall seconds, peak RSS (MiB) and CPU seconds (user + system) of one command and its
    descendants (as wait4 counts them), through LAUNCHER; past `timeout` seconds it is stopped and the result says so (`timed_out`:
    the time is then a lower bound, the peak unknown)."""
    import threading

    read_end, write_end = os.pipe()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-S", "-c", LAUNCHER, str(write_end), *map(str, argv)],
        stdout=stdout,
        stderr=subprocess.PIPE,
        pass_fds=(write_end,),
        start_new_session=bool(timeout),
    )
    os.close(write_end)
    timer = threading.Timer(timeout, os.killpg, [proc.pid, 9]) if timeout else None  # the launcher, the tool and its children
    if timer:
        timer.start()
    _, status = os.waitpid(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    seconds = time.perf_counter() - start
    with os.fdopen(read_end) as report:
        measured = report.read().split()
    if timer:
        timer.cancel()
        if not measured:
            return {"seconds": round(seconds, 3), "peak_mib": None, "timed_out": True}
    err = proc.stderr.read().decode(errors="replace")
    if len(measured) != 3 or proc.returncode:
        raise SystemExit(f"failed: {' '.join(map(str, argv[:5]))}...\n{err[-3000:]}")
    result = {"seconds": round(float(measured[0]), 3), "peak_mib": round(int(measured[1]) / 1024, 1), "cpu_seconds": round(float(measured[2]), 3)}
    if stdout == subprocess.PIPE:  # a child that reports one short line (read after it ended: it cannot fill the pipe)
        result["stdout"] = proc.stdout.read().decode(errors="replace")
    return result


def python_script(code: str, *args, checkout: Path = ROOT, python: str = sys.executable) -> list[str]:
    """A child running `code` as __main__ (a file, so the process pool's spawn can re-import it),
    named by its content: the same code reuses one file from run to run instead of adding another.
    Its xsp_trace is `checkout`'s (through `env PYTHONPATH=`, which execs the interpreter in place, so
    the measured process is still the interpreter)."""
    script = DATA / f"_bench_{hashlib.sha256(code.encode()).hexdigest()[:16]}.py"
    DATA.mkdir(parents=True, exist_ok=True)
    if not script.exists() or script.read_text() != code:
        script.write_text(code)
    return ["env", f"PYTHONPATH={checkout}", python, str(script), *map(str, args)]


def module_command(module: str, *args, checkout: Path = ROOT) -> list[str]:
    """`python -m module args` with `checkout` on its PYTHONPATH (its xsp_trace, and bench as a package)."""
    return ["env", f"PYTHONPATH={checkout}", sys.executable, "-m", module, *map(str, args)]


def import_checkout(checkout: Path) -> None:
    """Make `import xsp_trace` in this process read `checkout`'s package (an in-process harness
    measuring another checkout); call it before anything imports xsp_trace."""
    import importlib.util

    if Path(checkout).resolve() == ROOT:
        return
    if "xsp_trace" in sys.modules:
        raise SystemExit("xsp_trace is already imported: choose the checkout first")
    init = Path(checkout).resolve() / "xsp_trace" / "__init__.py"
    spec = importlib.util.spec_from_file_location("xsp_trace", init, submodule_search_locations=[str(init.parent)])
    assert spec is not None and spec.loader is not None, init
    module = importlib.util.module_from_spec(spec)
    sys.modules["xsp_trace"] = module
    spec.loader.exec_module(module)


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
