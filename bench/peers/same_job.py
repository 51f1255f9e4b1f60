"""The peers benchmark's rows against the peers doing the same job (nsys-ai's cache, the nsys report set,
DuckDB writing Parquet), each a fresh process on the same file in the same run, with the
targets they are judged on.

- nsys-ai `warm` (in a venv of its own: --nsys-ai or XSP_BENCH_NSYS_AI, else the one on PATH): the DuckDB sqlite scan of the export into its Parquet
  cache plus its NVTX kernel map; the cache beside the export is removed before and after every run,
  so each run builds it from nothing.
- the report set: `xsp-trace convert` then one `xsp-trace analyze` process with the analyses
  matching every report `nsys stats` runs by default (those it does not skip for lack of data on
  these exports) and every default `nsys analyze` rule, vs `nsys stats` (default reports) plus
  `nsys analyze` (default rules) on the same export; each side's time is the sum of its processes,
  its peak the largest.
- Perfetto vs Parquet: bench/peers/perfetto_vs_parquet.py's jobs (DuckDB COPY spans to Parquet; the
  export's own query to Parquet, the floor; the export) on the converted database.

Run alone (one export):  python -m bench.peers.same_job bench/data/nsys_h100_x30.sqlite
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from . import floors, perfetto_vs_parquet
from .children import PRELUDE, log, measure, python_script
from .targets import ISSUE_27

# Where the peers are: set from the command line (use) or the environment, else found on PATH.
_PEERS = {"hta_python": os.environ.get("XSP_BENCH_HTA_PYTHON"), "nsys_ai": os.environ.get("XSP_BENCH_NSYS_AI")}
# `nsys stats` reports run by default that find data in these exports, and the analysis of each.
DEFAULT_REPORTS = {
    "nvtxsum": "nvtx_sum",
    "cudaapisum": "cuda_api_sum",
    "gpukernsum": "cuda_gpu_kern_sum",
    "gpumemtimesum": "cuda_gpu_mem_time_sum",
    "gpumemsizesum": "cuda_gpu_mem_size_sum",
}
# The default rules of `nsys analyze` (2022.4) and their analyses.
DEFAULT_RULES = ("cuda_async_memcpy", "cuda_sync_memcpy", "cuda_sync_memset", "cuda_sync_api", "gpu_starvation", "gpu_low_utilization")

NSYS_AI_TIME, NSYS_AI_PEAK = ISSUE_27["nsys_ai_time"], ISSUE_27["nsys_ai_peak"]  # convert vs nsys-ai warm
REPORT_SET_TIME = ISSUE_27["report_set_time"]  # convert + the report set vs nsys doing the same set
PERFETTO_TIME = perfetto_vs_parquet.TIME_TARGET
KINETO_SPEED, KINETO_PEAK = ISSUE_27["kineto_vs_hta_speedup"], ISSUE_27["kineto_vs_hta_peak"]  # Kineto 1 GB vs HTA


def use(hta_python: str | None = None, nsys_ai: str | None = None) -> None:
    """The peers named on the command line (each else from the environment or PATH)."""
    _PEERS.update({k: v for k, v in (("hta_python", hta_python), ("nsys_ai", nsys_ai)) if v})


def hta_python() -> str:
    """The interpreter HTA runs in (HolisticTraceAnalysis installed): named, else this one."""
    return _PEERS["hta_python"] or sys.executable


def nsys_ai_path() -> Path | None:
    """The nsys-ai command: named, else the one on PATH; None when there is none."""
    found = _PEERS["nsys_ai"] or shutil.which("nsys-ai")
    return Path(found) if found and Path(found).exists() else None


def nsys_ai_version() -> str | None:
    """nsys-ai's version and its DuckDB's, from its own venv."""
    if not nsys_ai_path():
        return None
    code = "import importlib.metadata as m; print(m.version('nsys-ai'), '(DuckDB', m.version('duckdb') + ')')"
    return subprocess.run([str(nsys_ai_path().parent / "python"), "-c", code], capture_output=True, text=True).stdout.strip() or None


def _clear_nsys_ai_cache(export: Path) -> None:
    cache = export.with_suffix(".nsys-cache")
    shutil.rmtree(cache, ignore_errors=True)
    Path(f"{cache}.build.lock").unlink(missing_ok=True)


def nsys_ai_warm(export: Path, pin: list[str] = ()) -> dict:
    """nsys-ai `warm` on the export, its cache built from nothing."""
    _clear_nsys_ai_cache(export)
    try:
        return measure([*pin, str(nsys_ai_path()), "warm", str(export)])
    finally:
        _clear_nsys_ai_cache(export)


def report_set(export: Path, database: Path, nsys: str) -> dict:
    """{'xsp': convert + analyses, 'nsys': stats + analyze}, each {'seconds', 'peak_mib', 'parts'}."""
    convert = PRELUDE + (
        "from pathlib import Path\nfrom xsp_trace.convert import ConvertOptions, convert_inputs\n"
        "convert_inputs([Path(sys.argv[1])], Path(sys.argv[2]), ConvertOptions(), overwrite=True)\n"
    )
    analyze = PRELUDE + "from xsp_trace.cli import main\nsys.argv = ['xsp-trace', *sys.argv[1:]]\nmain()\n"
    names = [*DEFAULT_REPORTS.values(), *DEFAULT_RULES]
    log(f"{export.name}: report set, xsp-trace")
    ours = {
        "convert": measure(python_script(convert, export, database)),
        "analyze": measure(python_script(analyze, "analyze", database, "--format", "csv", *(arg for n in names for arg in ("-a", n)))),
    }
    log(f"{export.name}: report set, nsys stats + nsys analyze")
    theirs = {
        "stats": measure([nsys, "stats", "--format", "csv", "--force-export", "false", str(export)]),
        "analyze": measure([nsys, "analyze", "--force-export", "false", str(export)]),
    }
    database.unlink(missing_ok=True)
    return {"xsp": _total(ours), "nsys": _total(theirs)}


def _total(parts: dict[str, dict]) -> dict:
    return {
        "seconds": round(sum(p["seconds"] for p in parts.values()), 3),
        "peak_mib": max(p["peak_mib"] for p in parts.values()),
        "parts": parts,
    }


def perfetto_parquet(database: Path) -> dict:
    """perfetto_vs_parquet's three jobs on the database, in alternating rounds: {job: its median round}."""
    return perfetto_vs_parquet.measure_rounds(["parquet", "parquet_slices", "export"], database, log=log)


def _r(a: float, b: float) -> str:
    return f"{a / b:.2f}x"


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def markdown(nsys_rows: list[dict]) -> list[str]:
    """The peers' tables for the nsys rows that have them."""
    out = []
    ai = [r for r in nsys_rows if r.get("nsys_ai")]
    if ai:
        out += [
            "### nsys export -> DuckDB vs nsys-ai 0.3 `warm` (DuckDB sqlite scan -> Parquet cache + NVTX kernel map)",
            "",
            "| input | kernels | xsp-trace s | nsys-ai warm s | xsp / nsys-ai (time) | xsp-trace peak MiB | nsys-ai peak MiB | xsp / nsys-ai (RSS) |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in ai:
            x, a = r["xsp"], r["nsys_ai"]
            out.append(
                f"| {r['input']} | {r['kernels']:,} | {x['seconds']:.1f} | {a['seconds']:.1f} | {_r(x['seconds'], a['seconds'])} | "
                f"{x['peak_mib']:.0f} | {a['peak_mib']:.0f} | {_r(x['peak_mib'], a['peak_mib'])} |"
            )
        out.append("")
    rs = [r for r in nsys_rows if r.get("report_set")]
    if rs:
        out += [
            "### The same report set: convert + the analyses of every default `nsys stats` report ("
            + ", ".join(DEFAULT_REPORTS)
            + ") and every default `nsys analyze` rule vs `nsys stats` + `nsys analyze` on the export",
            "",
            "| input | xsp-trace convert s | xsp-trace analyze s | xsp-trace total s | nsys stats s | nsys analyze s | nsys total s | "
            "xsp / nsys (time) | xsp-trace peak MiB | nsys peak MiB |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in rs:
            x, n = r["report_set"]["xsp"], r["report_set"]["nsys"]
            out.append(
                f"| {r['input']} | {x['parts']['convert']['seconds']:.1f} | {x['parts']['analyze']['seconds']:.1f} | {x['seconds']:.1f} | "
                f"{n['parts']['stats']['seconds']:.1f} | {n['parts']['analyze']['seconds']:.1f} | {n['seconds']:.1f} | "
                f"{_r(x['seconds'], n['seconds'])} | {x['peak_mib']:.0f} | {n['peak_mib']:.0f} |"
            )
        out.append("")
    pp = [r for r in nsys_rows if r.get("perfetto_parquet")]
    if pp:
        out += [
            "### Perfetto export vs DuckDB writing the same spans as Parquet (bench/peers/perfetto_vs_parquet.py's jobs)",
            "",
            f"The three jobs in {perfetto_vs_parquet.ROUNDS} alternating rounds: seconds = the median round (every round's in brackets), peak = the largest.",
            "",
            "| input | job | rows | seconds | x Parquet peer | peak MiB |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
        ]
        for r in pp:
            jobs = r["perfetto_parquet"]
            for job, m in jobs.items():
                peer = jobs.get("parquet")
                out.append(
                    f"| {r['input']} | {perfetto_vs_parquet.JOBS[job][0]} | {m['slices']:,} | {m['seconds']:.2f} "
                    f"({', '.join(f'{x:.2f}' for x in m.get('rounds_seconds', []))}) | "
                    f"{_r(m['seconds'], peer['seconds']) if peer else '-'} | {m['peak_mib']:.0f} |"
                )
        out.append("")
    return out


FLOOR_PARTS = ("reading", "reading_writing", "without_correlation")  # (floors.PARTS names them)


def _floor_rows(result: dict, input_name: str, what: str, budget: float, parts=FLOOR_PARTS) -> list[tuple[str, str, str]]:
    """bench/peers/floors.py's parts of `input_name` against a target's time budget: a part over it puts
    the target out of reach for a convert that does that part as measured. With the CPU seconds:
    on this machine's cores the part takes at least CPU / cores of wall, however it is overlapped."""
    floor = next((f for f in result.get("floors", []) if f["input"] == input_name), None)
    cores = len(os.sched_getaffinity(0))
    rows = []
    labels = dict(floors.PARTS)
    for part in parts if floor else ():
        m = floor.get(part)
        if m is None:
            continue
        cpu = m.get("cpu_seconds")
        least = f"; CPU {cpu:.1f} s: >= {cpu / cores:.1f} s of wall on {cores} cores" if cpu is not None else ""
        rows.append(
            (
                f"floor, {input_name}: {labels[part]} within {what} ({budget:.1f} s)",
                f"{m['seconds']:.1f} s = {m['seconds'] / budget * 100:.0f} % of the budget{least}",
                "fits" if m["seconds"] <= budget else "over: the target is out of reach without changing this part",
            )
        )
    return rows


def targets(result: dict) -> list[tuple[str, str, str]]:
    """Issue 27's targets, each judged on this run's figures: (target, this run, verdict)."""
    rows = []
    with_hta = [r for r in result["kineto"] if r.get("hta")]
    if with_hta:
        gb = max(with_hta, key=lambda r: r["json_bytes"])
        speed, rss = gb["hta"]["seconds"] / gb["xsp"]["seconds"], gb["xsp"]["peak_mib"] / gb["hta"]["peak_mib"]
        rows.append(
            (
                f"Kineto {gb['input'].split()[-1]}: >= {KINETO_SPEED:g}x faster than HTA at <= {KINETO_PEAK}x its peak",
                f"{speed:.1f}x ({gb['xsp']['seconds']:.1f} s vs {gb['hta']['seconds']:.1f} s); peak {rss:.2f}x",
                f"time {_verdict(speed >= KINETO_SPEED)}; peak {_verdict(rss <= KINETO_PEAK)}",
            )
        )
        rows += _floor_rows(result, gb["input"], "the HTA budget", gb["hta"]["seconds"] / KINETO_SPEED)
    nsys = result["nsys"]
    ai = [r for r in nsys if r.get("nsys_ai")]
    if ai:
        m = max(ai, key=lambda r: r["kernels"])
        t, p = m["xsp"]["seconds"] / m["nsys_ai"]["seconds"], m["xsp"]["peak_mib"] / m["nsys_ai"]["peak_mib"]
        rows.append(
            (
                f"nsys {m['kernels']:,} kernels: convert <= {NSYS_AI_TIME}x nsys-ai warm's time at <= {NSYS_AI_PEAK}x its peak",
                f"time {t:.2f}x ({m['xsp']['seconds']:.1f} s vs {m['nsys_ai']['seconds']:.1f} s); peak {p:.2f}x "
                f"({m['xsp']['peak_mib']:.0f} vs {m['nsys_ai']['peak_mib']:.0f} MiB)",
                f"time {_verdict(t <= NSYS_AI_TIME)}; peak {_verdict(p <= NSYS_AI_PEAK)}",
            )
        )
        rows += _floor_rows(result, m["input"], "the nsys-ai budget", NSYS_AI_TIME * m["nsys_ai"]["seconds"])
    rs = [r for r in nsys if r.get("report_set")]
    if rs:
        m = max(rs, key=lambda r: r["kernels"])
        x, n = m["report_set"]["xsp"]["seconds"], m["report_set"]["nsys"]["seconds"]
        rows.append(
            (
                f"nsys {m['kernels']:,} kernels: convert + report set <= {REPORT_SET_TIME}x nsys stats + nsys analyze",
                f"{x / n:.2f}x ({x:.1f} s vs {n:.1f} s)",
                _verdict(x / n <= REPORT_SET_TIME),
            )
        )
        rows += _floor_rows(result, m["input"], "the report-set budget", REPORT_SET_TIME * n, parts=FLOOR_PARTS[1:2])
    pp = {r["kernels"]: r["perfetto_parquet"] for r in nsys if r.get("perfetto_parquet", {}).get("export")}
    for kernels, jobs in pp.items():
        if "parquet" not in jobs:
            continue
        e, q = jobs["export"], jobs["parquet"]
        floor = jobs.get("parquet_slices")
        rows.append(
            (
                f"Perfetto export, {kernels:,} kernels: <= {PERFETTO_TIME:g}x Parquet, peak <= {perfetto_vs_parquet.PEAK_TARGET_MIB} MiB",
                f"{e['seconds'] / q['seconds']:.2f}x ({e['seconds']:.1f} s vs {q['seconds']:.1f} s)"
                + (f"; floor (its query alone) {floor['seconds'] / q['seconds']:.2f}x" if floor else "")
                + f"; peak {e['peak_mib']:.0f} MiB",
                f"time {_verdict(e['seconds'] / q['seconds'] <= PERFETTO_TIME)}; peak {_verdict(e['peak_mib'] <= perfetto_vs_parquet.PEAK_TARGET_MIB)}",
            )
        )
    if len(pp) > 1:
        small, large = min(pp), max(pp)
        per = [pp[k]["export"]["seconds"] / pp[k]["export"]["slices"] for k in (small, large)]
        rows.append(
            (
                f"Perfetto export linear {small:,} -> {large:,} kernels (s/slice within {perfetto_vs_parquet.LINEAR_TOLERANCE}x)",
                f"{per[1] / per[0]:.2f}x",
                _verdict(per[1] / per[0] <= perfetto_vs_parquet.LINEAR_TOLERANCE),
            )
        )
    return rows


if __name__ == "__main__":
    export = Path(sys.argv[1])
    print({"nsys_ai": nsys_ai_warm(export), "report_set": report_set(export, export.with_suffix(".peers.duckdb"), shutil.which("nsys"))})
