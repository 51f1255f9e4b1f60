"""Facts about the outside profilers the runner drives: nsys and ncu command lines, versions.

The one place that knows their options, the NVTX trace set per level, the ncu metric groups,
and the Debian nsys packaging quirk (its QdstrmImporter is not where nsys looks for it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from xsp_trace.formats import ncu_metrics as nm

# nsys --trace per level. M and ML trace NVTX alone: their ranges are their only instrumentation
# (osrt would intercept the program's OS runtime calls in every inference; nsys 2022.4 records
# NVTX without it on a machine without a GPU too). MLG adds the CUDA API/kernel level.
NSYS_TRACE = {
    "M": "nvtx",
    "ML": "nvtx",
    "MLG": "cuda,nvtx,osrt,cublas,cudnn",
}
NSYS_COMMON = ["--sample=none", "--cpuctxsw=none", "--force-overwrite=true", "--export=none"]

# One ncu metric group per metric run (counters replay kernels; groups do not mix). The metric
# names are the ones xsp_trace/formats/ncu_metrics.py derives FLOPs, DRAM bytes and achieved
# occupancy from when the metric runs are converted.
NCU_METRIC_GROUPS = {
    "flops": [name for name in nm.FLOP_COUNTERS if "__" in name],  # ncu names, not nvprof's
    "dram": [nm.DRAM_READ_METRICS[0], nm.DRAM_WRITE_METRICS[0]],
    "occupancy": [next(iter(nm.OCCUPANCY_METRICS))],
}


def find_tool(name: str, explicit: str | None = None, env_var: str | None = None) -> str | None:
    """Path of a profiler binary: the explicit path, then $ENV_VAR, then PATH."""
    for candidate in (explicit, os.environ.get(env_var) if env_var else None):
        if candidate:
            found = shutil.which(candidate) or (candidate if Path(candidate).is_file() else None)
            return found
    return shutil.which(name)


def tool_version(binary: str) -> str | None:
    """`<binary> --version` reduced to its version number, or None."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"(\d+\.\d+(?:\.\d+)*)", out)
    return match.group(1) if match else (out.strip() or None)


def gpu_present() -> bool:
    """Whether an NVIDIA GPU is visible (nvidia-smi lists one), without importing torch."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def nsys_profile_command(nsys: str, level: str, output_base: Path, command: list[str]) -> list[str]:
    return [nsys, "profile", f"--trace={NSYS_TRACE[level]}", *NSYS_COMMON, "-o", str(output_base), *command]


def qdstrm_importer(nsys: str) -> str | None:
    """QdstrmImporter of an nsys install (host-linux-x64 beside target-linux-x64).

    Debian's nsight-systems 2022.4 looks for it under /usr/lib/x86_64-linux-gnu while it is
    installed under /usr/lib/nsight-systems, so `nsys profile` leaves a .qdstrm; we import it.
    """
    real = Path(os.path.realpath(nsys))
    for folder in (real.parent, real.parent.parent):
        for sub in ("host-linux-x64", "."):
            candidate = folder / sub / "QdstrmImporter"
            if candidate.is_file():
                return str(candidate)
    return shutil.which("QdstrmImporter")


def finish_nsys_report(nsys: str, output_base: Path, timeout: float) -> Path | None:
    """The .nsys-rep of a profile; imports a leftover .qdstrm when nsys could not. None if neither."""
    report = output_base.with_name(output_base.name + ".nsys-rep")
    stream = output_base.with_name(output_base.name + ".qdstrm")
    if not report.exists() and stream.exists():
        importer = qdstrm_importer(nsys)
        if importer is None:
            return None
        subprocess.run([importer, "-i", str(stream), "-o", str(report), "-f"], capture_output=True, timeout=timeout)
    if report.exists():
        if stream.exists():
            stream.unlink()
        return report
    return None


def nsys_export_sqlite(nsys: str, report: Path, timeout: float) -> Path | None:
    sqlite = report.with_suffix(".sqlite")
    done = subprocess.run(
        [nsys, "export", "--type=sqlite", "--force-overwrite=true", "-o", str(sqlite), str(report)],
        capture_output=True,
        timeout=timeout,
    )
    return sqlite if done.returncode == 0 and sqlite.exists() else None


def ncu_command(ncu: str, group: str, output_base: Path, command: list[str]) -> list[str]:
    """ncu with one metric group, NVTX context per kernel, all child processes.

    Profiling starts off: the script side brackets its instrumented loop with
    cudaProfilerStart/Stop (torch.cuda.profiler), so warm-up and probe kernels are not replayed.
    """
    return [
        ncu,
        "--target-processes",
        "all",
        "--nvtx",
        "--profile-from-start",
        "off",
        "--metrics",
        ",".join(NCU_METRIC_GROUPS[group]),
        "--export",
        str(output_base),
        "--force-overwrite",
        *command,
    ]


def ncu_export_csv(ncu: str, report: Path, timeout: float) -> Path | None:
    """The raw page of an .ncu-rep as CSV (one row per kernel, NVTX ranges included)."""
    csv = report.with_suffix(".csv")
    done = subprocess.run(
        [ncu, "--import", str(report), "--csv", "--page", "raw"],
        capture_output=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        return None
    csv.write_bytes(done.stdout)
    return csv


def nvtx_range_count(sqlite: Path, prefix: str) -> int:
    """NVTX push/pop and start/end ranges in an nsys SQLite export whose text starts with prefix."""
    import sqlite3

    con = sqlite3.connect(f"file:{sqlite}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "NVTX_EVENTS" not in tables:
            return 0
        has_strings = "StringIds" in tables
        query = (
            "SELECT count(*) FROM NVTX_EVENTS e "
            + ("LEFT JOIN StringIds s ON s.id = e.textId " if has_strings else "")
            + "WHERE e.end IS NOT NULL AND substr(coalesce(e.text, "
            + ("s.value" if has_strings else "NULL")
            + "), 1, ?) = ?"
        )
        return con.execute(query, [len(prefix), prefix]).fetchone()[0]
    finally:
        con.close()
